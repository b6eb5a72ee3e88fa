// SPDX-License-Identifier: GPL-2.0-or-later
// What a Data Sink does about a rule broken: the profiles (issue 40). The rules are written once
// (ddp/rules.h, rdmap/rules.h, mpa/) and each returns the Violation with RFC's answer, a
// Terminate triple. A profile is a table of outcomes on top of them, row by row: send a Terminate
// (which triple), close the connection without one, wait for octets that never come, or accept
// the segment and go on. `rfc` is the RFCs' Data Sink (every row as the rule says); `siw` is
// Linux siw 6.1 as observed in the lab (tests/interop/siw_oracle.py, docs/siw-sink-oracle.md)
// and as its source reads (drivers/infiniband/sw/siw/siw_qp_rx.c).
//
// The analyzer reports the finding (the rule broken) under every profile, with the chosen
// profile's outcome; the endpoint acts on it. Both call sink_answer() on the same Violation, so
// they agree under either profile.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

#include "ddpscope/findings/violation.h"

namespace ddpscope {

enum class SinkProfile : std::uint8_t { rfc, siw };
std::string_view to_string(SinkProfile p);  // "rfc", "siw"
std::optional<SinkProfile> sink_profile_by_name(std::string_view name);
std::string_view sink_profile_description(SinkProfile p);

// SinkOutcome (what the sink does) is in findings/catalog.h, with the Finding that carries it.

struct SinkAnswer {
  SinkOutcome outcome = SinkOutcome::terminate;
  std::optional<TerminateError> terminate;  // with outcome terminate
  std::string_view source;                  // why: the RFC rule, or the siw source / lab case
  // False when no Terminate names the rule and the profile has no row for it (a note, a rule
  // broken inside a Terminate at an RFC sink): the sink does nothing about it.
  bool applies = true;
};

// One row of a profile: where it differs from the rule's own (RFC) answer.
struct ProfileRow {
  FindingId id;
  SinkCase rule_case;
  SinkAnswer answer;
};

// The rows of a profile that differ from RFC (empty for rfc).
std::span<const ProfileRow> profile_rows(SinkProfile p);

// The answer of a Data Sink of profile `p` to a violation. A violation with no Terminate (one
// inside a Terminate, an SCTP-level rule) and no row is answered with nothing (`applies` false).
SinkAnswer sink_answer(SinkProfile p, const Violation& v);

// The profile's knobs that are not one rule's outcome.
struct SinkTraits {
  bool rfc7306 = true;  // atomics and immediate data accepted (siw: opcode 0x06)
  // A Terminate's control word is read in this layout when neither layout's flags tell.
  bool siw_terminate_layout = false;
};
SinkTraits sink_traits(SinkProfile p);

}  // namespace ddpscope
