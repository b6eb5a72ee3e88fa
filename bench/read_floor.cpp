// SPDX-License-Identifier: GPL-2.0-or-later
// Lower bound of `ddpscope analyze` on a capture file: the same reader (CaptureReader over
// libpcap, the same stdio buffer) with no analysis, and optionally CRC32C (the same ISA-L call)
// over every frame past its Ethernet + IPv4 + TCP headers (54 octets: the benchmark capture's
// frames carry no TCP options), i.e. the part of the engine's per-octet work that no change to
// the engine can remove. Used by bench/run_bench.sh.
//   ddpscope_read_floor FILE [crc]
#include <cstdio>
#include <cstring>
#include <string>

#include "ddpscope/capture/file_reader.h"
#include "ddpscope/common/crc32c.h"

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: ddpscope_read_floor FILE [crc]\n");
    return 2;
  }
  const bool crc = argc > 2 && std::strcmp(argv[2], "crc") == 0;
  std::string error;
  auto reader = ddpscope::capture::CaptureReader::open(argv[1], error);
  if (!reader) {
    std::fprintf(stderr, "%s\n", error.c_str());
    return 1;
  }
  constexpr std::size_t kHeaders = 14 + 20 + 20;
  ddpscope::capture::Frame frame;
  std::uint64_t frames = 0;
  std::uint64_t octets = 0;
  std::uint32_t folded = 0;
  while (reader->next(frame)) {
    ++frames;
    octets += frame.data.size();
    if (crc && frame.data.size() > kHeaders)
      folded ^= ddpscope::crc32c(frame.data.subspan(kHeaders));
  }
  if (!reader->error().empty()) {
    std::fprintf(stderr, "%s\n", reader->error().c_str());
    return 1;
  }
  std::printf("%llu frames, %llu octets, CRC32C folded %08x\n",
              static_cast<unsigned long long>(frames), static_cast<unsigned long long>(octets),
              folded);
  return 0;
}
