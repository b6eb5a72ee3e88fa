// SPDX-License-Identifier: GPL-2.0-or-later
// Turns a parsed Scenario into frames plus the findings the analyzer must report. No I/O.
//
// How a scenario becomes a capture: every connection first gets its TCP handshake and MPA
// Request/Reply (and RTR); then each operation appends FPDUs to its side's byte stream, the
// stream is cut into TCP segments (by tcp_segment_size, or N whole FPDUs per segment), and
// the peer answers with a pure ACK (and, for Reads and Atomics, with the responses). FINs
// close every connection at the end. TCP faults (drop, duplicate, reorder, conflict) are then
// applied to the segment list, and each expectation, recorded as (connection, direction,
// stream offset of the offending PDU's first octet), is resolved to a frame number.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ddpscope/synth/synth.h"
#include "scenario.h"

namespace ddpscope::synth {

struct GeneratedFrame {
  std::int64_t ts_ns = 0;
  Bytes data;  // Ethernet frame
};

struct Generated {
  std::vector<GeneratedFrame> frames;
  std::vector<ExpectedFinding> expected;
  bool exhaustive = true;
  std::vector<SynthResult::RegionData> regions_written;
};

bool generate(const Scenario& scenario, Generated& out, std::string& error);

}  // namespace ddpscope::synth
