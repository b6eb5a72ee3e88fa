// SPDX-License-Identifier: GPL-2.0-or-later
// Drawing: builds the protocol trees, columns and expert infos of one frame from what the first
// pass stored. Reads no protocol bytes: every value comes from core's decoded structs; tvbs are
// only there so that items highlight their octets.
#pragma once

#include <epan/packet.h>

#include "capture_state.h"

namespace ddpscope::plugin {

struct DrawContext {
  const CaptureState* state = nullptr;
  tvbuff_t* frame_tvb = nullptr;    // the frame (parent of reassembled data sources)
  tvbuff_t* payload_tvb = nullptr;  // this frame's TCP payload, when it has one
  heur_dissector_list_t upper_heuristics = nullptr;  // "iwarp_ddp_rdmap" (SMB Direct, ...)
  dissector_handle_t data_handle = nullptr;
};

// Draws everything stored for the frame. Safe against Wireshark exceptions: holds no C++
// objects with destructors while calling into Wireshark.
void draw_frame(const DrawContext& ctx, const FrameRecord& rec, packet_info* pinfo,
                proto_tree* tree);

// DDP over SCTP, decode only (RFC 5043): one PPID 16 user message (the tvb Wireshark's SCTP
// dissector hands on) as a DDP segment and its RDMAP message, with the same iwarp.ddp.* and
// iwarp.rdmap.* fields as over MPA; one PPID 17 message as DDP Stream Session Control.
void draw_sctp_segment(const DrawContext& ctx, const PduRecord& p, tvbuff_t* message,
                       packet_info* pinfo, proto_tree* tree);
void draw_sctp_session(const SessionControlRecord& r, tvbuff_t* tvb, packet_info* pinfo,
                       proto_tree* tree);

}  // namespace ddpscope::plugin
