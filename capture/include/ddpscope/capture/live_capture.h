// SPDX-License-Identifier: GPL-2.0-or-later
// Live capture over libpcap: one interface, an optional BPF filter, an optional savefile, the
// kernel's drop counts. `ddpscope live` and the GUI's File › Capture both run LiveSession, so
// a frame is fed to the analysis exactly when it is written to the savefile: the saved file
// analyses to what was seen live.
// This header does not include <pcap.h>; only the .cpp files of this library do.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "ddpscope/capture/frame.h"

struct pcap;         // pcap_t
struct pcap_dumper;  // pcap_dumper_t
struct pcap_pkthdr;

namespace ddpscope::capture {

// Why opening a live capture failed (libpcap's pcap_activate / pcap_compile status).
enum class LiveFailure {
  none,
  permission,      // PCAP_ERROR_PERM_DENIED: root or CAP_NET_RAW is needed
  no_such_device,  // PCAP_ERROR_NO_SUCH_DEVICE
  bad_filter,      // the BPF filter does not compile
  other,
};

// Live capture on one interface, with an optional BPF filter.
class LiveCapture {
 public:
  // nullptr and `error` set on failure; lacking root / CAP_NET_RAW, `error` contains
  // "permission" and `failure` (when given) is LiveFailure::permission.
  static std::unique_ptr<LiveCapture> open(const std::string& iface, const std::string& bpf,
                                           std::string& error, LiveFailure* failure = nullptr);
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

  struct KernelStats {
    std::uint64_t received = 0;
    std::uint64_t dropped = 0;            // no room in the capture buffer
    std::uint64_t interface_dropped = 0;  // dropped by the interface or its driver
  };
  // pcap_stats; false when the platform has none.
  bool kernel_stats(KernelStats& out) const;
  // "received N, dropped M, interface dropped K" from pcap_stats.
  std::string stats() const;

 private:
  friend class LiveSession;  // saves frames with pcap_dump on this handle
  LiveCapture() = default;
  pcap* handle_ = nullptr;
  const pcap_pkthdr* last_header_ = nullptr;  // of the frame next() returned last
  const std::uint8_t* last_data_ = nullptr;
  int fd_ = -1;
  std::string error_;
  std::uint32_t link_type_ = 0;
  std::uint64_t number_ = 0;
  std::atomic<bool> stopped_{false};
};

struct LiveInterface {
  std::string name;
  std::string description;
  bool loopback = false;
  bool up = false;
};
// The interfaces libpcap can capture on (pcap_findalldevs); empty and `error` set on failure.
std::vector<LiveInterface> list_interfaces(std::string& error);

// Whether `bpf` compiles for frames of `link_type` (LINKTYPE_*; 1 = Ethernet, which is also
// what Linux's "lo" presents). Empty filters are valid. Needs no privileges.
bool check_filter(const std::string& bpf, std::uint32_t link_type, std::string& error);

struct LiveOptions {
  std::string interface;
  std::string filter;      // BPF; empty: everything
  std::string write_path;  // pcap savefile; empty: not saved
};

// Counters of a running capture.
struct LiveCounters {
  std::uint64_t frames = 0;  // frames delivered (and saved)
  std::uint64_t bytes = 0;   // their captured octets
  bool have_kernel_stats = false;
  LiveCapture::KernelStats kernel;
};

struct LiveRunLimits {
  // Set by another thread or a signal handler to stop (as stop() does).
  const std::atomic<bool>* stop = nullptr;
  std::uint64_t max_frames = 0;  // 0: no limit
  std::int64_t duration_ns = 0;  // 0: no limit
  int tick_ms = 100;             // `tick` is called at least this often, frames or not
};

// A live capture with its savefile: each frame is written to the savefile (pcap_dump, headers
// as captured, flushed at every tick so that a reader of the file or FIFO keeps up), then
// handed to the caller's sink, in capture order.
class LiveSession {
 public:
  static std::unique_ptr<LiveSession> open(const LiveOptions& options, std::string& error,
                                           LiveFailure* failure = nullptr);
  ~LiveSession();
  LiveSession(const LiveSession&) = delete;
  LiveSession& operator=(const LiveSession&) = delete;

  // Captures until stopped, a limit is reached or the capture fails. After a stop, frames the
  // kernel already holds are still delivered (for at most ~200 ms), as the end of a file is.
  // false and error() set on a capture error (frames delivered until then stay valid).
  bool run(const std::function<void(const Frame&)>& sink,
           const std::function<void(const LiveCounters&)>& tick = {},
           const LiveRunLimits& limits = {});
  // Thread-safe; run() returns within about 100 ms.
  void stop() { stop_ = true; }
  // Closes the savefile (if any); false and `error` set when it could not be written.
  bool close(std::string& error);

  LiveCounters counters() const;
  const std::string& error() const { return error_; }
  std::uint32_t link_type() const { return capture_->link_type(); }
  const LiveCapture& capture() const { return *capture_; }

 private:
  LiveSession() = default;
  std::unique_ptr<LiveCapture> capture_;
  pcap_dumper* dumper_ = nullptr;
  bool unflushed_ = false;
  std::atomic<bool> stop_{false};
  std::uint64_t frames_ = 0;
  std::uint64_t bytes_ = 0;
  std::string error_;
};

}  // namespace ddpscope::capture
