// SPDX-License-Identifier: GPL-2.0-or-later
// The endpoint's SCTP setup violations (RFC 5043): the catalog's findings with the LLP Terminate
// RFC 5043 names for them. Internal to core/src/session.
#pragma once

#include <string>

#include "ddpscope/findings/violation.h"

namespace ddpscope::session::sctp {

// Malformed or out-of-order DDP Stream Session Control; a DDP segment before the Accept.
inline Violation session_invalid(std::string detail) {
  return Violation{FindingId::mpa_handshake_invalid, TerminateError{2, 1, 2}, TerminateQuote::none,
                   std::move(detail)};
}
// A user message on a PPID that is neither DDP's segment (16) nor session control (17).
inline Violation ppid_invalid(std::string detail) {
  return Violation{FindingId::mpa_handshake_invalid, TerminateError{2, 1, 3}, TerminateQuote::none,
                   std::move(detail)};
}

}  // namespace ddpscope::session::sctp
