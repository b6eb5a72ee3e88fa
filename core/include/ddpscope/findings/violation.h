// SPDX-License-Identifier: GPL-2.0-or-later
// A rule broken, as the rule layer (ddp/rules.h, rdmap/rules.h, mpa/negotiate.h) decides it:
// the finding an analysis reports and the Terminate a compliant Data Sink sends. The analyzer
// turns a Violation into a Finding; the endpoint sends its Terminate. Both read the same one, so
// they cannot disagree.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "ddpscope/findings/catalog.h"
#include "ddpscope/wire/terminate_error.h"

namespace ddpscope {

// What a Terminate quotes of the segment it reports (RFC 5040 §4.8).
enum class TerminateQuote : std::uint8_t {
  none,
  ddp_header,     // M + D: the DDP Segment Length and the DDP header
  ddp_and_rdmap,  // ... and R: the RDMAP header (a Read Request's)
};

struct Violation {
  FindingId id = FindingId::count_;
  // The triple a compliant Data Sink sends; nullopt when none is sent (a rule broken inside a
  // Terminate: the stream is already ending, RFC 5040 §5.4).
  std::optional<TerminateError> terminate;
  TerminateQuote quote = TerminateQuote::none;
  std::string detail;  // one line with the specifics
};

}  // namespace ddpscope
