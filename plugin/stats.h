// SPDX-License-Identifier: GPL-2.0-or-later
// "tshark -q -z ddpscope,stat": per stream and direction, messages and octets per opcode, MSN
// ranges per queue, STag regions and findings by code, printed from core's Model at draw time.
#pragma once

#include <epan/packet.h>

#include "capture_state.h"

namespace ddpscope::plugin {

void register_stats(int tap_id);
void set_stats_state(CaptureState* state);
// The capture being analysed, or null (stats_table.cpp reads its model).
const CaptureState* current_stats_state();
// Statistics › iWARP (ddpscope): opcodes per stream and findings as stat-tap tables
// (stats_table.cpp; also tshark -z ddpscope,opcodes and -z ddpscope,findings).
void register_stats_tables();
// The service response time table of operation response times (srt.cpp): tshark -z
// ddpscope,srt, Statistics › Service Response Time › ddpscope. `proto_id`: the protocol whose
// filter name ("ddpscope") names it.
void register_srt(int proto_id);
// Hands the frame's operations to the table's tap, if one listens (any visit).
void queue_srt(packet_info* pinfo, const CaptureState* state, const FrameRecord* frame);

}  // namespace ddpscope::plugin
