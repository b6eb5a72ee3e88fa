// SPDX-License-Identifier: GPL-2.0-or-later
// The LLP boundary (RFC 5041 §2.4, §5): DDP and RDMAP code (rdmap::DataSink::receive) sees one
// DDP segment at a time and knows nothing of the LLP that framed it — MPA over TCP (RFC 5044)
// today, SCTP (RFC 5043) next. What an LLP's connection setup settles for DDP is named here.
#pragma once

#include <cstdint>
#include <string_view>

namespace ddpscope::llp {

// The zero-length RDMAP message that must open a peer-to-peer connection (RFC 6581 §9.2 —
// "Ready To Receive"): negotiated by the LLP's connection setup, checked by the Data Sink.
enum class RtrType : std::uint8_t { none, send, write, read };
std::string_view to_string(RtrType t);

}  // namespace ddpscope::llp
