// SPDX-License-Identifier: GPL-2.0-or-later
// pcap / pcapng files through CaptureReader (libpcap) and capture::feed into the engine, as
// every host reads them: frames until the end or the first error, a cut file reported as such.
// The input is handed to libpcap as a file through an anonymous memory file (memfd), no disk I/O.
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <string>

#include "ddpscope/analysis/analyzer.h"
#include "ddpscope/capture/feed.h"
#include "fuzz_input.h"

namespace {

using namespace ddpscope;

int memory_file() {
  static const int fd = memfd_create("ddpscope-fuzz-capture", 0);
  return fd;
}

bool write_all(int fd, const std::uint8_t* data, std::size_t size) {
  if (ftruncate(fd, 0) != 0 || lseek(fd, 0, SEEK_SET) != 0) return false;
  while (size > 0) {
    const ssize_t n = write(fd, data, size);
    if (n <= 0) return false;
    data += n;
    size -= static_cast<std::size_t>(n);
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const int fd = memory_file();
  DDPSCOPE_FUZZ_CHECK(fd >= 0);
  DDPSCOPE_FUZZ_CHECK(write_all(fd, data, size));
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
  return 0;
}
