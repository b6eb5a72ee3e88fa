// SPDX-License-Identifier: GPL-2.0-or-later
// Turns a parsed Scenario into frames plus the findings the analyzer must report. No I/O.
//
// How a scenario becomes a capture: every connection first gets its TCP handshake and MPA
// Request/Reply (and RTR); then each operation appends FPDUs to its side's byte stream, the
// stream is cut into TCP segments (by tcp_segment_size, or N whole FPDUs per segment), and
// the peer answers with a pure ACK (and, for Reads and Atomics, with the responses). FINs
// close every connection at the end. TCP faults (drop, duplicate, reorder, conflict) are then
// applied to the segment list. Over SCTP ("llp": "sctp") the same plan becomes an association:
// INIT to COOKIE ACK, a DDP Session Initiate/Accept for the MPA Request/Reply, each DDP segment
// one PPID 16 message with its DDP-SSN, SACKs for ACKs, Session Terminates and SHUTDOWN.
//
// Three parts, one job each: the planner (generator.cpp) decides what each connection and
// operation sends; the emitter (emitter.h) turns that into octets, TCP segments and frames,
// and expects what it injects below the Data Sink (CRC, markers, ULPDU_Length, TCP loss); the
// oracle (oracle.h) runs every DDP segment through core's Data Sink model to predict the rest.
// The MPA setup findings are core's mpa::check_frame and mpa::settle on the frames sent.
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
  // A TCP fault `receiver_drop`: the receiver never takes this frame; esp_wrap seals it with a
  // flipped ICV bit (esp.icv-mismatch).
  bool receiver_drop = false;
};

struct Generated {
  std::vector<GeneratedFrame> frames;
  std::vector<ExpectedFinding> expected;
  bool exhaustive = true;
  std::vector<SynthResult::RegionData> regions_written;
};

bool generate(const Scenario& scenario, Generated& out, std::string& error);

}  // namespace ddpscope::synth
