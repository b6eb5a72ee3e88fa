// SPDX-License-Identifier: GPL-2.0-or-later
// Reading capture files (pcap and pcapng) over libpcap. Writing is file_writer.h, live capture
// live_capture.h, feeding a file to the analysis feed.h.
// This header does not include <pcap.h>; only the library's .cpp files do.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "ddpscope/capture/frame.h"

struct pcap;  // pcap_t

namespace ddpscope::capture {

// Reads pcap and pcapng files with nanosecond timestamps.
class CaptureReader {
 public:
  // nullptr and `error` set when the file is missing, unreadable or not a capture.
  static std::unique_ptr<CaptureReader> open(const std::string& path, std::string& error);
  ~CaptureReader();
  CaptureReader(const CaptureReader&) = delete;
  CaptureReader& operator=(const CaptureReader&) = delete;

  // The next frame; false at the end of the file or on error. After false, error() is
  // non-empty when the file did not end cleanly (a record cut short: "truncated dump file;
  // ..." from libpcap) or could not be read.
  bool next(Frame& frame);
  const std::string& error() const { return error_; }
  std::uint32_t link_type() const { return link_type_; }
  // libpcap's name and description of a LINKTYPE_* value: "USER0 (User 0, 147)".
  static std::string link_type_name(std::uint32_t link_type);
  std::uint32_t snaplen() const { return snaplen_; }
  std::uint64_t file_size() const { return file_size_; }
  // Approximate read position in the file, for a progress bar.
  std::uint64_t bytes_read() const;

 private:
  CaptureReader() = default;
  std::unique_ptr<char[]> read_buffer_;  // the FILE's stdio buffer: outlives handle_
  pcap* handle_ = nullptr;
  std::string error_;
  std::uint32_t link_type_ = 0;
  std::uint32_t snaplen_ = 0;
  std::uint64_t file_size_ = 0;
  std::uint64_t number_ = 0;
  bool done_ = false;
};

}  // namespace ddpscope::capture
