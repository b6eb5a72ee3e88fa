// SPDX-License-Identifier: GPL-2.0-or-later
#include "ddpscope/capture/file_writer.h"

#include <algorithm>
#include <cstdio>

#include "dump_error.h"
#include "link_type.h"

namespace ddpscope::capture {
namespace {

using detail::linktype_to_dlt;

constexpr std::int64_t ns_per_s = 1'000'000'000;

}  // namespace

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
    error = detail::dump_open_error(path, pcap_geterr(p));
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
