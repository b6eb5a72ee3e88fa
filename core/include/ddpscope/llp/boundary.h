// SPDX-License-Identifier: GPL-2.0-or-later
// The LLP boundary (RFC 5041 §2.4, §5): what a lower layer protocol hands DDP. DDP and RDMAP
// code sees one DDP segment at a time with this context and knows nothing of the LLP that framed
// it: MPA over TCP (RFC 5044) today, SCTP (RFC 5043) next.
#pragma once

#include <cstdint>
#include <string_view>

#include "ddpscope/common/bytes.h"

namespace ddpscope::llp {

// The zero-length RDMAP message that must open a peer-to-peer connection (RFC 6581 §9.2 —
// "Ready To Receive"): negotiated by the LLP's connection setup, checked by the Data Sink.
enum class RtrType : std::uint8_t { none, send, write, read };
std::string_view to_string(RtrType t);

// One DDP segment from the LLP.
struct Segment {
  ByteView ulpdu;              // the DDP segment: header and payload
  std::uint64_t frame = 0;     // capture frame holding its first octet (0 at an endpoint)
  std::uint32_t mulpdu = 0;    // largest ULPDU the LLP allows the sender (0: unknown)
};

}  // namespace ddpscope::llp
