// SPDX-License-Identifier: GPL-2.0-or-later
#include "ddpscope/capture/live_capture.h"

#include <poll.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>

#include "dump_error.h"
#include "link_type.h"

namespace ddpscope::capture {
namespace {

using detail::dlt_to_linktype;
using detail::linktype_to_dlt;

constexpr int live_snaplen = 262144;

LiveFailure failure_of(int status) {
  switch (status) {
    case PCAP_ERROR_PERM_DENIED:
    case PCAP_ERROR_PROMISC_PERM_DENIED:
      return LiveFailure::permission;
    case PCAP_ERROR_NO_SUCH_DEVICE:
      return LiveFailure::no_such_device;
    default:
      return LiveFailure::other;
  }
}

}  // namespace

// ---- LiveCapture ---------------------------------------------------------------------------

std::unique_ptr<LiveCapture> LiveCapture::open(const std::string& iface, const std::string& bpf,
                                               std::string& error, LiveFailure* failure) {
  LiveFailure ignored = LiveFailure::none;
  LiveFailure& why = failure ? *failure : ignored;
  why = LiveFailure::none;
  char errbuf[PCAP_ERRBUF_SIZE] = {};
  pcap_t* p = pcap_create(iface.c_str(), errbuf);
  if (p == nullptr) {
    error = iface + ": " + errbuf;
    why = LiveFailure::other;
    return nullptr;
  }
  std::unique_ptr<LiveCapture> c(new LiveCapture());
  c->handle_ = p;  // closed by the destructor on any failure below
  pcap_set_snaplen(p, live_snaplen);
  pcap_set_promisc(p, 0);
  pcap_set_immediate_mode(p, 1);  // deliver each frame as it arrives
  pcap_set_timeout(p, 100);
  // Loopback frames reach 64 KiB: the 2 MiB default ring holds only a few of them.
  pcap_set_buffer_size(p, 64 << 20);
  pcap_set_tstamp_precision(p, PCAP_TSTAMP_PRECISION_NANO);  // best effort
  const int rc = pcap_activate(p);
  if (rc < 0) {
    why = failure_of(rc);
    error = iface + ": " + pcap_statustostr(rc);
    const std::string detail = pcap_geterr(p);
    if (!detail.empty() && detail != pcap_statustostr(rc)) error += " (" + detail + ")";
    if (why == LiveFailure::permission) error += "; root or CAP_NET_RAW is needed";
    return nullptr;
  }
  if (!bpf.empty()) {
    bpf_program program{};
    if (pcap_compile(p, &program, bpf.c_str(), 1, PCAP_NETMASK_UNKNOWN) != 0) {
      error = "filter \"" + bpf + "\": " + pcap_geterr(p);
      why = LiveFailure::bad_filter;
      return nullptr;
    }
    const int set = pcap_setfilter(p, &program);
    pcap_freecode(&program);
    if (set != 0) {
      error = "filter \"" + bpf + "\": " + pcap_geterr(p);
      why = LiveFailure::bad_filter;
      return nullptr;
    }
  }
  if (pcap_setnonblock(p, 1, errbuf) != 0) {
    error = iface + ": " + errbuf;
    why = LiveFailure::other;
    return nullptr;
  }
  c->fd_ = pcap_get_selectable_fd(p);
  if (c->fd_ < 0) {
    error = iface + ": no selectable file descriptor for this interface";
    why = LiveFailure::other;
    return nullptr;
  }
  c->link_type_ = dlt_to_linktype(pcap_datalink(p));
  return c;
}

LiveCapture::~LiveCapture() {
  if (handle_ != nullptr) pcap_close(handle_);
}

int LiveCapture::next(Frame& frame, int timeout_ms) {
  using clock = std::chrono::steady_clock;
  const auto deadline = clock::now() + std::chrono::milliseconds(std::max(timeout_ms, 0));
  const bool nano = pcap_get_tstamp_precision(handle_) == PCAP_TSTAMP_PRECISION_NANO;
  for (;;) {
    if (stopped_) {
      error_ = "capture stopped";
      return -1;
    }
    pcap_pkthdr* hdr = nullptr;
    const u_char* data = nullptr;
    const int rc = pcap_next_ex(handle_, &hdr, &data);
    if (rc == 1) {
      last_header_ = hdr;
      last_data_ = data;
      frame.number = ++number_;
      // Live timestamps are the current time: no overflow to guard against.
      frame.ts_ns = static_cast<std::int64_t>(hdr->ts.tv_sec) * 1'000'000'000 +
                    static_cast<std::int64_t>(hdr->ts.tv_usec) * (nano ? 1 : 1000);
      frame.link_type = link_type_;
      frame.data = ByteView(data, hdr->caplen);
      frame.wire_length = hdr->len;
      frame.interface_id = 0;
      return 1;
    }
    if (rc < 0) {
      error_ = pcap_geterr(handle_);
      if (error_.empty())
        error_ = "capture ended (pcap_next_ex returned " + std::to_string(rc) + ")";
      return -1;
    }
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - clock::now());
    if (left.count() <= 0) return 0;
    // Wait in slices so that stop() is honoured promptly.
    pollfd pfd{fd_, POLLIN, 0};
    const int waited = ::poll(&pfd, 1, static_cast<int>(std::min<std::int64_t>(left.count(), 100)));
    if (waited < 0 && errno != EINTR) {
      error_ = std::string("poll: ") + std::strerror(errno);
      return -1;
    }
  }
}

bool LiveCapture::kernel_stats(KernelStats& out) const {
  pcap_stat st{};
  if (pcap_stats(handle_, &st) != 0) return false;
  out.received = st.ps_recv;
  out.dropped = st.ps_drop;
  out.interface_dropped = st.ps_ifdrop;
  return true;
}

std::string LiveCapture::stats() const {
  KernelStats st;
  if (!kernel_stats(st)) return std::string("statistics unavailable: ") + pcap_geterr(handle_);
  return "received " + std::to_string(st.received) + ", dropped " + std::to_string(st.dropped) +
         ", interface dropped " + std::to_string(st.interface_dropped);
}

// ---- interfaces and filters ----------------------------------------------------------------

std::vector<LiveInterface> list_interfaces(std::string& error) {
  std::vector<LiveInterface> out;
  char errbuf[PCAP_ERRBUF_SIZE] = {};
  pcap_if_t* all = nullptr;
  if (pcap_findalldevs(&all, errbuf) != 0) {
    error = errbuf;
    return out;
  }
  for (pcap_if_t* d = all; d != nullptr; d = d->next) {
    LiveInterface i;
    i.name = d->name;
    if (d->description != nullptr) i.description = d->description;
    i.loopback = (d->flags & PCAP_IF_LOOPBACK) != 0;
    i.up = (d->flags & PCAP_IF_UP) != 0;
    out.push_back(std::move(i));
  }
  pcap_freealldevs(all);
  return out;
}

bool check_filter(const std::string& bpf, std::uint32_t link_type, std::string& error) {
  if (bpf.empty()) return true;
  pcap_t* p = pcap_open_dead(linktype_to_dlt(link_type), live_snaplen);
  if (p == nullptr) {
    error = "cannot check filters for link type " + std::to_string(link_type);
    return false;
  }
  bpf_program program{};
  const bool ok = pcap_compile(p, &program, bpf.c_str(), 1, PCAP_NETMASK_UNKNOWN) == 0;
  if (ok)
    pcap_freecode(&program);
  else
    error = "filter \"" + bpf + "\": " + pcap_geterr(p);
  pcap_close(p);
  return ok;
}

// ---- LiveSession ---------------------------------------------------------------------------

std::unique_ptr<LiveSession> LiveSession::open(const LiveOptions& options, std::string& error,
                                               LiveFailure* failure) {
  std::unique_ptr<LiveSession> s(new LiveSession());
  s->capture_ = LiveCapture::open(options.interface, options.filter, error, failure);
  if (!s->capture_) return nullptr;
  if (!options.write_path.empty()) {
    // A FIFO (Wireshark's extcap) opens once its reader has opened it.
    s->dumper_ = pcap_dump_open(s->capture_->handle_, options.write_path.c_str());
    if (s->dumper_ == nullptr) {
      error = detail::dump_open_error(options.write_path, pcap_geterr(s->capture_->handle_));
      if (failure) *failure = LiveFailure::other;
      return nullptr;
    }
    s->unflushed_ = true;  // the file header, for a reader waiting on a FIFO
  }
  return s;
}

LiveSession::~LiveSession() {
  std::string ignored;
  close(ignored);
}

bool LiveSession::run(const std::function<void(const Frame&)>& sink,
                      const std::function<void(const LiveCounters&)>& tick,
                      const LiveRunLimits& limits) {
  using clock = std::chrono::steady_clock;
  const auto start = clock::now();
  const auto tick_every = std::chrono::milliseconds(std::max(limits.tick_ms, 1));
  auto last_tick = start;
  auto stopping = [&] {
    if (stop_ || (limits.stop && limits.stop->load(std::memory_order_relaxed))) return true;
    if (limits.duration_ns > 0 &&
        clock::now() - start >= std::chrono::nanoseconds(limits.duration_ns))
      return true;
    return limits.max_frames != 0 && frames_ >= limits.max_frames;
  };
  auto deliver = [&](const Frame& f) {
    if (dumper_ != nullptr) {
      pcap_dump(reinterpret_cast<u_char*>(dumper_), capture_->last_header_, capture_->last_data_);
      unflushed_ = true;
    }
    ++frames_;
    bytes_ += f.data.size();
    sink(f);
  };
  Frame f;
  bool ok = true;
  while (!stopping()) {
    const int rc = capture_->next(f, std::max(limits.tick_ms, 1));
    if (rc < 0) {
      error_ = capture_->error();
      ok = false;
      break;
    }
    if (rc == 1) deliver(f);
    const auto now = clock::now();
    if (now - last_tick >= tick_every) {
      if (unflushed_ && pcap_dump_flush(dumper_) == 0) unflushed_ = false;
      if (tick) tick(counters());
      last_tick = now;
    }
  }
  // What the kernel already holds belongs to the capture, as the rest of a file would.
  const bool by_count = limits.max_frames != 0 && frames_ >= limits.max_frames;
  if (ok && !by_count) {
    const auto drain_end = clock::now() + std::chrono::milliseconds(200);
    while (clock::now() < drain_end && capture_->next(f, 0) == 1)
      deliver(f);
  }
  if (tick) tick(counters());
  return ok;
}

bool LiveSession::close(std::string& error) {
  if (dumper_ == nullptr) return true;
  bool ok = true;
  if (pcap_dump_flush(dumper_) != 0 || std::ferror(pcap_dump_file(dumper_)) != 0) {
    error = "write error on the capture file";
    ok = false;
  }
  pcap_dump_close(dumper_);
  dumper_ = nullptr;
  return ok;
}

LiveCounters LiveSession::counters() const {
  LiveCounters c;
  c.frames = frames_;
  c.bytes = bytes_;
  c.have_kernel_stats = capture_->kernel_stats(c.kernel);
  return c;
}

}  // namespace ddpscope::capture
