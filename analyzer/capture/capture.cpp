// SPDX-License-Identifier: GPL-2.0-or-later
#include "capture/capture.h"

#include <fcntl.h>
#include <pcap/pcap.h>
#include <poll.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>

namespace ddpscope::capture {
namespace {

constexpr std::uint32_t linktype_raw = 101;
constexpr std::int64_t ns_per_s = 1'000'000'000;
// stdio buffer of a capture file being read. libpcap reads every record with two fread()s; with
// the default buffer (st_blksize, 4 KiB) that is a read() system call per 4 KiB, about a third
// of the analyzer's time on a page-cached file. 256 KiB stays within a core's L2 cache.
constexpr std::size_t kReadBuffer = 256u << 10;

// libpcap speaks DLT_* values, which equal LINKTYPE_* values except for a few historical
// ones; of those we handle, only raw IP differs (DLT_RAW is 12, or 14 on OpenBSD).
std::uint32_t dlt_to_linktype(int dlt) {
  if (dlt == DLT_RAW) return linktype_raw;
  return static_cast<std::uint32_t>(dlt);
}
int linktype_to_dlt(std::uint32_t linktype) {
  if (linktype == linktype_raw) return DLT_RAW;
  return static_cast<int>(linktype);
}

// pcapng timestamps are 64-bit: a hostile file's seconds may not fit in int64 nanoseconds.
// Such times saturate at the int64 range instead of overflowing.
std::int64_t to_ns(const struct timeval& ts, bool nano) {
  std::int64_t sec_ns = 0;
  std::int64_t ns = 0;
  const std::int64_t frac = static_cast<std::int64_t>(ts.tv_usec) * (nano ? 1 : 1000);
  if (__builtin_mul_overflow(static_cast<std::int64_t>(ts.tv_sec), ns_per_s, &sec_ns) ||
      __builtin_add_overflow(sec_ns, frac, &ns)) {
    return ts.tv_sec < 0 ? INT64_MIN : INT64_MAX;
  }
  return ns;
}

void fill(Frame& frame, std::uint64_t number, std::uint32_t link_type, const pcap_pkthdr* hdr,
          const u_char* data, bool nano) {
  frame.number = number;
  frame.ts_ns = to_ns(hdr->ts, nano);
  frame.link_type = link_type;
  frame.data = ByteView(data, hdr->caplen);
  frame.wire_length = hdr->len;
  frame.interface_id = 0;
}

}  // namespace

// ---- CaptureReader -------------------------------------------------------------------------

std::unique_ptr<CaptureReader> CaptureReader::open(const std::string& path, std::string& error) {
  char errbuf[PCAP_ERRBUF_SIZE] = {};
  std::unique_ptr<CaptureReader> r(new CaptureReader());
  pcap_t* p = nullptr;
  if (path == "-") {
    // libpcap's name for the standard input.
    p = pcap_open_offline_with_tstamp_precision(path.c_str(), PCAP_TSTAMP_PRECISION_NANO, errbuf);
  } else {
    // Opened here rather than by libpcap so that the FILE gets a large buffer (kReadBuffer).
    std::FILE* f = std::fopen(path.c_str(), "rb");
    if (f == nullptr) {
      error = path + ": " + std::strerror(errno);
      return nullptr;
    }
    r->read_buffer_.reset(new char[kReadBuffer]);
    std::setvbuf(f, r->read_buffer_.get(), _IOFBF, kReadBuffer);
    ::posix_fadvise(::fileno(f), 0, 0, POSIX_FADV_SEQUENTIAL);
    p = pcap_fopen_offline_with_tstamp_precision(f, PCAP_TSTAMP_PRECISION_NANO, errbuf);
    if (p == nullptr) std::fclose(f);  // on success pcap_close() closes it
  }
  if (p == nullptr) {
    error = path + ": " + errbuf;
    return nullptr;
  }
  r->handle_ = p;
  r->link_type_ = dlt_to_linktype(pcap_datalink(p));
  r->snaplen_ = static_cast<std::uint32_t>(std::max(pcap_snapshot(p), 0));
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0) r->file_size_ = static_cast<std::uint64_t>(st.st_size);
  return r;
}

CaptureReader::~CaptureReader() {
  if (handle_ != nullptr) pcap_close(handle_);
}

bool CaptureReader::next(Frame& frame) {
  if (done_) return false;
  pcap_pkthdr* hdr = nullptr;
  const u_char* data = nullptr;
  int rc = pcap_next_ex(handle_, &hdr, &data);
  if (rc == 1) {
    fill(frame, ++number_, link_type_, hdr, data, true);
    return true;
  }
  done_ = true;
  if (rc == PCAP_ERROR_BREAK) return false;  // clean end of file
  error_ = pcap_geterr(handle_);
  if (error_.empty()) error_ = "read error (pcap_next_ex returned " + std::to_string(rc) + ")";
  return false;
}

std::uint64_t CaptureReader::bytes_read() const {
  if (done_) return file_size_;
  std::FILE* f = pcap_file(handle_);
  if (f == nullptr) return 0;
  long pos = std::ftell(f);
  return pos < 0 ? 0 : std::min(static_cast<std::uint64_t>(pos), file_size_);
}

// ---- CaptureWriter -------------------------------------------------------------------------

std::unique_ptr<CaptureWriter> CaptureWriter::open(const std::string& path, std::uint32_t link_type,
                                                   std::string& error, std::uint32_t snaplen) {
  pcap_t* p = pcap_open_dead_with_tstamp_precision(
      linktype_to_dlt(link_type), static_cast<int>(snaplen), PCAP_TSTAMP_PRECISION_NANO);
  if (p == nullptr) {
    error = "pcap_open_dead failed for link type " + std::to_string(link_type);
    return nullptr;
  }
  pcap_dumper_t* d = pcap_dump_open(p, path.c_str());
  if (d == nullptr) {
    error = path + ": " + pcap_geterr(p);
    pcap_close(p);
    return nullptr;
  }
  std::unique_ptr<CaptureWriter> w(new CaptureWriter());
  w->handle_ = p;
  w->dumper_ = d;
  w->snaplen_ = snaplen;
  return w;
}

CaptureWriter::~CaptureWriter() {
  std::string ignored;
  close(ignored);
}

void CaptureWriter::write(std::int64_t ts_ns, ByteView data, std::uint32_t wire_length) {
  if (dumper_ == nullptr) return;
  pcap_pkthdr hdr{};
  // Floor division, so that times before the epoch keep a non-negative fraction.
  std::int64_t sec = ts_ns / ns_per_s;
  std::int64_t frac = ts_ns % ns_per_s;
  if (frac < 0) {
    frac += ns_per_s;
    --sec;
  }
  hdr.ts.tv_sec = static_cast<time_t>(sec);
  hdr.ts.tv_usec = static_cast<suseconds_t>(frac);  // nanoseconds: the handle is nano
  hdr.caplen = static_cast<bpf_u_int32>(std::min<std::size_t>(data.size(), snaplen_));
  hdr.len = wire_length != 0 ? wire_length : static_cast<bpf_u_int32>(data.size());
  hdr.len = std::max(hdr.len, hdr.caplen);
  pcap_dump(reinterpret_cast<u_char*>(dumper_), &hdr, data.data());
}

bool CaptureWriter::close(std::string& error) {
  if (dumper_ == nullptr) return true;
  bool ok = true;
  if (pcap_dump_flush(dumper_) != 0 || std::ferror(pcap_dump_file(dumper_)) != 0) {
    error = "write error on the capture file";
    ok = false;
  }
  pcap_dump_close(dumper_);  // fclose: its error is not reported by libpcap
  pcap_close(handle_);
  dumper_ = nullptr;
  handle_ = nullptr;
  return ok;
}

}  // namespace ddpscope::capture
