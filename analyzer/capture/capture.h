// SPDX-License-Identifier: GPL-2.0-or-later
// Capture I/O over libpcap: reading pcap / pcapng files, writing pcap files, live capture.
// This header does not include <pcap.h>; only capture.cpp does.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "ddpscope/bytes.h"

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

// Live capture on one interface, with an optional BPF filter.
class LiveCapture {
 public:
  // nullptr and `error` set on failure; lacking root / CAP_NET_RAW, `error` contains
  // "permission" (libpcap's PCAP_ERROR_PERM_DENIED).
  static std::unique_ptr<LiveCapture> open(const std::string& iface, const std::string& bpf,
                                           std::string& error);
  ~LiveCapture();
  LiveCapture(const LiveCapture&) = delete;
  LiveCapture& operator=(const LiveCapture&) = delete;

  // Waits up to timeout_ms for a frame: 1 with `frame` filled (data valid until the next
  // call), 0 on timeout, -1 on error or after stop() (see error()).
  int next(Frame& frame, int timeout_ms);
  // Makes next() return -1 within about 100 ms; callable from another thread.
  void stop() { stopped_ = true; }
  const std::string& error() const { return error_; }
  std::uint32_t link_type() const { return link_type_; }
  // "received N, dropped M, interface dropped K" from pcap_stats.
  std::string stats() const;

 private:
  LiveCapture() = default;
  pcap* handle_ = nullptr;
  int fd_ = -1;
  std::string error_;
  std::uint32_t link_type_ = 0;
  std::uint64_t number_ = 0;
  std::atomic<bool> stopped_{false};
};

}  // namespace ddpscope::capture
