// SPDX-License-Identifier: GPL-2.0-or-later
// The oracle of the synthetic capture generator: which Data Sink findings the analyzer must
// report for the DDP segments a scenario produced, asked of core's rule layer rather than
// written again here. It holds one rdmap::DataSink per direction of every connection — the model
// the analyzer and the endpoint run — configured as the connection's MPA frames settled it
// (mpa::settle: IRD, RTR), and answers its questions about memory (rdmap::SinkMemory) from what
// the generator knows of the regions at each host, learned the way the analyzer learns it: the
// regions file, rping advertisements (core's decoders), Read Requests, Send with Invalidate.
//
// The segments go through their sinks in the order the analyzer receives them: the capture
// order after TCP faults, a segment arriving once TCP has delivered all of its FPDU in order.
// An FPDU with a bad CRC is dropped (the sink is told octets were lost, RFC 5044 §4.2); after
// loss the generator cannot follow (a dropped TCP segment, an FPDU that cannot be framed) the
// connection's later segments are not predicted. Each Violation is one expected finding at the
// frame holding the segment's first octet (a note when capture loss came first), worded as the
// generator's Intent when it aimed at that finding, else as the rule layer words it.
#pragma once

#include <vector>

#include "ddpscope/synth/synth.h"
#include "emitter.h"
#include "scenario.h"

namespace ddpscope::synth {

struct Prediction {
  std::vector<ExpectedFinding> expected;
  // Tagged data the scenario wrote that the Data Sinks placed, per (Data Sink, STag).
  std::vector<SynthResult::RegionData> regions_written;
};

// After Emitter::finalize().
Prediction predict(const Scenario& scenario, const Emitter& emitted);

}  // namespace ddpscope::synth
