// SPDX-License-Identifier: GPL-2.0-or-later
// The endpoint's SCTP setup violations (RFC 5043): the catalog's sctp.* findings with the
// Terminate the catalog names for them (RFC 5043's LLP codes, unverified values in
// wire/terminate_error.h), as the analyzer reports them. Internal to core/src/session.
#pragma once

#include <string>

#include "ddpscope/findings/violation.h"

namespace ddpscope::session::sctp {

inline Violation from_catalog(FindingId id, std::string detail) {
  return Violation{id, finding_spec(id).terminate, TerminateQuote::none, std::move(detail)};
}
// Malformed or out-of-order DDP Stream Session Control; a DDP segment before the Accept.
inline Violation session_invalid(std::string detail) {
  return from_catalog(FindingId::sctp_session_invalid, std::move(detail));
}
// A user message on a PPID that is neither DDP's segment (16) nor session control (17).
inline Violation ppid_invalid(std::string detail) {
  return from_catalog(FindingId::sctp_ppid_invalid, std::move(detail));
}

}  // namespace ddpscope::session::sctp
