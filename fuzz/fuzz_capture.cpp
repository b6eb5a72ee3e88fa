// SPDX-License-Identifier: GPL-2.0-or-later
// pcap / pcapng files (plain or gzip'ed) through CaptureReader and capture::feed into the engine,
// as every host reads them: frames until the end or the first error, a cut file reported as such.
// The input is handed over as a file through an anonymous memory file (memfd), no disk I/O; the
// default reader maps it (issue 43). Then the mapped reader and libpcap read it again, side by
// side: the same frames and the same end, except where libpcap gives up on a pcapng file the
// mapped reader reads on (another link type or snapshot length, another byte order) and on
// damaged gzip data (zlib's error against libpcap's I/O error).
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>

#include "ddpscope/analysis/analyzer.h"
#include "ddpscope/capture/feed.h"
#include "fuzz_input.h"

using namespace ddpscope;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const int fd = fuzz::input_as_file("ddpscope-fuzz-capture", data, size);
  DDPSCOPE_FUZZ_CHECK(fd >= 0);
  std::string error;
  auto reader = capture::CaptureReader::open("/proc/self/fd/" + std::to_string(fd), error);
  if (!reader) {
    DDPSCOPE_FUZZ_CHECK(!error.empty());
    return 0;
  }
  AnalyzerOptions o;
  o.limits.max_findings = 1000;
  Analyzer an(o);
  // The frames come out numbered 1, 2, ... in order, each fed once.
  std::uint64_t seen = 0;
  capture::FeedOptions feed_options;
  feed_options.on_frame = [&seen](const capture::Frame& f) {
    DDPSCOPE_FUZZ_CHECK(f.number == seen + 1);
    seen = f.number;
    fuzz::touch(f.data);
  };
  const capture::FeedResult fed = capture::feed(*reader, an, feed_options);
  DDPSCOPE_FUZZ_CHECK(fed.last_frame == seen && fed.frames == seen);
  DDPSCOPE_FUZZ_CHECK(an.model().frames == seen);
  DDPSCOPE_FUZZ_CHECK(fed.error == reader->error());

  // Differential: mapped against libpcap, frame by frame.
  const std::string path = "/proc/self/fd/" + std::to_string(fd);
  std::string e1, e2;
  auto mapped = capture::CaptureReader::open(path, e1, capture::ReaderKind::automatic);
  auto lib = capture::CaptureReader::open(path, e2, capture::ReaderKind::libpcap);
  // Damaged deflate data may stop the two at different points, the file's header included
  // (zlib's error against gzread's): a gzip file may open with one and not the other.
  const bool gzip = size >= 2 && data[0] == 0x1f && data[1] == 0x8b;
  DDPSCOPE_FUZZ_CHECK(gzip || static_cast<bool>(mapped) == static_cast<bool>(lib));
  if (!mapped || !lib) return 0;
  capture::Frame a, b;
  for (;;) {
    const bool got_a = mapped->next(a);
    const bool got_b = lib->next(b);
    if (!got_b) break;  // libpcap's end or error: compared below
    if (!got_a) {
      // Damaged deflate data: zlib's error may come before gzread's.
      DDPSCOPE_FUZZ_CHECK(mapped->gzip() &&
                          mapped->error().find("gzip data invalid") != std::string::npos);
      return 0;
    }
    DDPSCOPE_FUZZ_CHECK(a.number == b.number && a.ts_ns == b.ts_ns && a.link_type == b.link_type &&
                        a.wire_length == b.wire_length && a.data.size() == b.data.size());
    DDPSCOPE_FUZZ_CHECK(std::equal(a.data.begin(), a.data.end(), b.data.begin()));
  }
  const std::string& why = lib->error();
  const bool libpcap_gives_up = why.find("different from the") != std::string::npos ||
                                why.find("different byte orders") != std::string::npos;
  if (!libpcap_gives_up && !mapped->gzip()) {
    capture::Frame c;
    DDPSCOPE_FUZZ_CHECK(!mapped->next(c));
    DDPSCOPE_FUZZ_CHECK(mapped->error() == why);
  }
  return 0;
}
