// SPDX-License-Identifier: GPL-2.0-or-later
// Writing classic pcap files over libpcap (the synthetic generator's output, test captures).
// This header does not include <pcap.h>; only the library's .cpp files do.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "ddpscope/common/bytes.h"

struct pcap;         // pcap_t
struct pcap_dumper;  // pcap_dumper_t

namespace ddpscope::capture {

// Writes classic pcap files with nanosecond timestamps.
class CaptureWriter {
 public:
  static std::unique_ptr<CaptureWriter> open(const std::string& path, std::uint32_t link_type,
                                             std::string& error, std::uint32_t snaplen = 262144);
  ~CaptureWriter();  // closes, ignoring errors: call close() to see them
  CaptureWriter(const CaptureWriter&) = delete;
  CaptureWriter& operator=(const CaptureWriter&) = delete;

  // Frames longer than the snaplen are cut to it; wire_length 0 means data.size().
  void write(std::int64_t ts_ns, ByteView data, std::uint32_t wire_length = 0);
  // Flushes and closes; false and `error` set when the data could not be written.
  bool close(std::string& error);

 private:
  CaptureWriter() = default;
  pcap* handle_ = nullptr;
  pcap_dumper* dumper_ = nullptr;
  std::uint32_t snaplen_ = 0;
};

}  // namespace ddpscope::capture
