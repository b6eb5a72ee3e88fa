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
  // Wireshark's first, sequential visit of the frame (what a one-pass run prints).
  bool first_visit = false;
};

// Draws everything stored for the frame. Safe against Wireshark exceptions: holds no C++
// objects with destructors while calling into Wireshark.
void draw_frame(const DrawContext& ctx, const FrameRecord& rec, packet_info* pinfo,
                proto_tree* tree);

// One PPID 17 user message as DDP Stream Session Control (RFC 5043), decode only. (PPID 16
// messages are PDUs of the analysis, drawn by draw_frame without an MPA item.)
void draw_sctp_session(const SessionControlRecord& r, tvbuff_t* tvb, packet_info* pinfo,
                       proto_tree* tree);

}  // namespace ddpscope::plugin
