// SPDX-License-Identifier: GPL-2.0-or-later
// Reading capture files (pcap and pcapng) over libpcap. Writing is file_writer.h, live capture
// live_capture.h, feeding a file to the analysis feed.h.
// This header does not include <pcap.h>; only the library's .cpp files do.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "ddpscope/capture/frame.h"

struct pcap;         // pcap_t
struct bpf_program;  // a compiled BPF filter

namespace ddpscope::capture {

// Reads pcap and pcapng files with nanosecond timestamps, plain or gzip-compressed (as
// Wireshark does: .pcap.gz, .pcapng.gz, recognised by content, through zlib).
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
  // A BPF capture filter (pcap-filter(7), as `live -f` and `tshark -f` take) applied while
  // reading: frames it rejects are skipped but keep their numbers, so frame N is the file's
  // frame N as Wireshark numbers it. False with `error` set when the expression does not compile.
  bool set_filter(const std::string& expression, std::string& error);
  std::uint64_t frames_filtered_out() const { return filtered_out_; }
  const std::string& error() const { return error_; }
  std::uint32_t link_type() const { return link_type_; }
  // libpcap's name and description of a LINKTYPE_* value: "USER0 (User 0, 147)".
  static std::string link_type_name(std::uint32_t link_type);
  std::uint32_t snaplen() const { return snaplen_; }
  std::uint64_t file_size() const { return file_size_; }
  bool gzip() const { return gzip_ != nullptr; }
  // Approximate read position in the file (compressed octets for gzip), for a progress bar.
  std::uint64_t bytes_read() const;

 private:
  CaptureReader() = default;
  std::unique_ptr<char[]> read_buffer_;  // the FILE's stdio buffer: outlives handle_
  pcap* handle_ = nullptr;
  void* gzip_ = nullptr;  // zlib's gzFile under handle_'s FILE (closed with it), or none
  std::string error_;
  std::uint32_t link_type_ = 0;
  std::uint32_t snaplen_ = 0;
  std::uint64_t file_size_ = 0;
  std::uint64_t number_ = 0;
  std::uint64_t filtered_out_ = 0;
  std::unique_ptr<::bpf_program, void (*)(::bpf_program*)> filter_{nullptr, nullptr};
  bool done_ = false;
};

}  // namespace ddpscope::capture
