// SPDX-License-Identifier: GPL-2.0-or-later
// Synthetic capture generator: a scenario (JSON, see docs/synth-scenarios.md) becomes a pcap
// holding complete iWARP connections (TCP handshake, MPA Request/Reply, FPDUs, FIN teardown; or,
// with "llp": "sctp", an SCTP association carrying RFC 5043's messages), with optional fault
// injections, plus the findings the analyzer must report for them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "ddpscope/common/bytes.h"

namespace ddpscope::synth {

// A finding the analyzer must report: its catalog code and the 1-based frame that holds the
// first octet of the offending PDU (for tcp.gap: the first frame after the hole).
struct ExpectedFinding {
  std::string code;
  std::uint64_t frame = 0;
  bool consequence = false;  // raised only as a consequence of capture loss (severity note)
  int op = -1;               // scenario operation that caused it, -1 for connection level
  std::string detail;        // what was injected, for humans
};

struct SynthResult {
  std::uint64_t frames = 0;
  std::vector<ExpectedFinding> expected;
  // True when `expected` is the complete list of warning/error findings; false when the
  // scenario injects faults whose consequences the generator does not predict (capture loss,
  // broken headers): then `expected` is a lower bound.
  bool exhaustive = true;
  // Tagged data the scenario placed (RDMA Write, Read Response) without a fault, per Data
  // Sink region: `bytes` covers [base, base + bytes.size()), zero where nothing was written.
  struct RegionData {
    std::string owner;  // Data Sink address, e.g. "10.0.0.2"
    std::uint32_t stag = 0;
    std::uint64_t base = 0;
    Bytes bytes;
  };
  std::vector<RegionData> regions_written;
  std::string expected_path;  // OUT.expected.json
  std::string regions_path;   // OUT.regions.json, empty when the scenario has no regions
  // With an `esp` block: the SAs as Wireshark's esp_sa table (OUT.esp_sa) and as ip -s xfrm
  // state output (OUT.xfrm); the analysis reads the xfrm one when the SAs use ESN or another
  // anti-replay window than 64 (an esp_sa table of Wireshark 4.0 can say neither).
  std::string esp_sa_path;
  std::string xfrm_path;
  bool use_xfrm = false;
  bool keys_given = true;  // false: the analysis is given no SA file
  bool require_esp = false;
  bool require_confidentiality = false;
};

// Parses the scenario file and writes the pcap at out_path, OUT.expected.json next to it (the
// expected findings and regions_written) and, when the scenario lists regions, OUT.regions.json
// in the analyzer's --regions format. ("OUT" is out_path without a trailing ".pcap".)
// Returns false with a one-line `error` naming the offending JSON path on a bad scenario.
bool synthesize(const std::string& scenario_path, const std::string& out_path, SynthResult& result,
                std::string& error);
bool synthesize_json(const nlohmann::json& scenario, const std::string& out_path,
                     SynthResult& result, std::string& error);

// The expected.json document for a result (also what synthesize writes).
nlohmann::json expected_json(const SynthResult& result, const std::string& scenario_name,
                             const std::string& description, const std::string& pcap_name);

}  // namespace ddpscope::synth
