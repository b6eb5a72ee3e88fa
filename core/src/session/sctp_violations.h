// SPDX-License-Identifier: GPL-2.0-or-later
// The endpoint's SCTP setup violations (RFC 5043) with the LLP Terminate RFC 5043 names for them
// (wire/terminate_error.h: the SCTP LLP codes are unverified). Internal to core/src/session.
// The finding is still mpa.handshake-invalid: the catalog has no sctp.* findings yet (branch
// sctp adds sctp.session-invalid and sctp.ppid-invalid; then these name them).
#pragma once

#include <string>

#include "ddpscope/findings/violation.h"

namespace ddpscope::session::sctp {

// Malformed or out-of-order DDP Stream Session Control; a DDP segment before the Accept.
inline Violation session_invalid(std::string detail) {
  return Violation{FindingId::mpa_handshake_invalid,
                   term::sctp_llp(sctp_llp_code::invalid_session_control_unverified),
                   TerminateQuote::none, std::move(detail)};
}
// A user message on a PPID that is neither DDP's segment (16) nor session control (17).
inline Violation ppid_invalid(std::string detail) {
  return Violation{FindingId::mpa_handshake_invalid,
                   term::sctp_llp(sctp_llp_code::invalid_ppid_unverified), TerminateQuote::none,
                   std::move(detail)};
}

}  // namespace ddpscope::session::sctp
