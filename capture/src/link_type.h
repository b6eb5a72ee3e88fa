// SPDX-License-Identifier: GPL-2.0-or-later
// libpcap's DLT_* values and the LINKTYPE_* values of capture files and of core's frame decoder
// (net::decode_frame). Private to the capture library: includes <pcap/pcap.h>.
#pragma once

#include <pcap/pcap.h>

#include <cstdint>

namespace ddpscope::capture::detail {

constexpr std::uint32_t linktype_raw = 101;

// DLT_* equals LINKTYPE_* except for a few historical values; of those the analyzer decodes,
// only raw IP differs (DLT_RAW is 12, or 14 on OpenBSD).
inline std::uint32_t dlt_to_linktype(int dlt) {
  return dlt == DLT_RAW ? linktype_raw : static_cast<std::uint32_t>(dlt);
}
inline int linktype_to_dlt(std::uint32_t linktype) {
  return linktype == linktype_raw ? DLT_RAW : static_cast<int>(linktype);
}

}  // namespace ddpscope::capture::detail
