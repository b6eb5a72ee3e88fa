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

// Which case of its rule a violation is, where a Data Sink's answer differs between cases of one
// finding (findings/sink_profile.h). `general` for every other.
enum class SinkCase : std::uint8_t {
  general,
  control_send_tagged,          // rdmap.opcode-invalid: a Send-family opcode with T = 1, its TO's
                                // high word 0 (QN 0 to a sink that takes the model from the opcode)
  control_send_tagged_qn,       // ... the TO's high word not 0 (another QN to such a sink)
  control_read_request_tagged,  // rdmap.opcode-invalid: a Read Request opcode with T = 1
  control_tagged_untagged,      // rdmap.opcode-invalid: a tagged opcode with T = 0
  control_rfc7306,              // rdmap.opcode-invalid: RFC 7306 opcode at a sink without it
  queue_terminate,              // ddp.untagged.invalid-qn: a Terminate not on QN 2
  queue_read_request,           // ddp.untagged.invalid-qn: a Read Request not on QN 1
  fixed_body_long,              // ddp.untagged.message-too-long: a fixed-size body too long
  fixed_body_short,             // rdmap.body-invalid: a fixed-size body too short
  header_too_short,             // mpa.ulpdu-length-invalid: a ULPDU shorter than its DDP header
  ird_first_over,               // rdmap.ird-exceeded: one Read Request more than IRD
  handshake_request,            // mpa.handshake-invalid: the invalid frame is an MPA Request
  handshake_request_revision,   // ... an MPA Request of a revision the responder does not know
  in_terminate,                 // a DDP rule broken by a Terminate (RFC: no Terminate answers it)
  terminate_body_short,         // rdmap.body-invalid: a Terminate shorter than its control word
};

struct Violation {
  FindingId id = FindingId::count_;
  // The triple a compliant Data Sink sends; nullopt when none is sent (a rule broken inside a
  // Terminate: the stream is already ending, RFC 5040 §5.4).
  std::optional<TerminateError> terminate;
  TerminateQuote quote = TerminateQuote::none;
  std::string detail;  // one line with the specifics
  SinkCase rule_case = SinkCase::general;
};

}  // namespace ddpscope
