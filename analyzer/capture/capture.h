// SPDX-License-Identifier: GPL-2.0-or-later
// Capture I/O over libpcap: reading pcap / pcapng files, writing pcap files. Live capture is in
// live_capture.h.
// This header does not include <pcap.h>; only capture.cpp does.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "ddpscope/common/bytes.h"

struct pcap;         // pcap_t
struct pcap_dumper;  // pcap_dumper_t

namespace ddpscope::capture {

// One captured frame. `data` points into the reader's buffer and stays valid until the next
// call to next() on the same reader (or its destruction).
struct Frame {
  std::uint64_t number = 0;       // 1-based, as Wireshark numbers frames
  std::int64_t ts_ns = 0;         // nanoseconds since the Unix epoch
  std::uint32_t link_type = 0;    // LINKTYPE_* of the frame's interface
  ByteView data;                  // the captured octets (caplen)
  std::uint32_t wire_length = 0;  // the frame's original length
  // Always 0: libpcap (1.10) does not expose the pcapng interface of a packet. It also
  // presents one link type per file: when a pcapng file holds an interface description block
  // whose link type differs from the first one's, next() fails at that block with libpcap's
  // message ("an interface has a type N different from the type of the first interface").
  // Tools such as mergecap write all interface blocks first, so such files yield no frames.
  std::uint32_t interface_id = 0;
};

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
