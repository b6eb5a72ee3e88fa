// SPDX-License-Identifier: GPL-2.0-or-later
#include "ddpscope/ddp/rules.h"

#include <string>

#include "ddpscope/common/bytes.h"

namespace ddpscope::ddp {

namespace {

Violation make(FindingId id, TerminateError t, std::string detail,
               TerminateQuote quote = TerminateQuote::ddp_header) {
  return Violation{id, t, quote, std::move(detail)};
}

std::string range(std::uint64_t to, std::uint64_t len) {
  return "[" + hex_number(to) + ", +" + std::to_string(len) + ")";
}

bool serial_lt(std::uint32_t a, std::uint32_t b) {
  return static_cast<std::int32_t>(a - b) < 0;
}

}  // namespace

// ---- the Violations of the checks inline in rules.h, built for a segment that breaks one ----

namespace detail {

[[gnu::cold]] std::optional<Violation> version_violation(const wire::DdpHeader& h) {
  return make(FindingId::ddp_version_invalid,
              h.control.tagged ? term::ddp_tagged(ddp_tagged_code::invalid_version)
                               : term::ddp_untagged(ddp_untagged_code::invalid_version),
              "DDP version " + std::to_string(h.control.version), TerminateQuote::none);
}

[[gnu::cold]] std::optional<Violation> region_violation(RegionRule broken, std::uint32_t stag,
                                                        const RegionFacts* r,
                                                        const StreamFacts& stream, std::uint64_t to,
                                                        std::uint64_t len, std::uint8_t need,
                                                        ErrorTable table) {
  const bool rdmap = table == ErrorTable::rdmap_protection;
  const auto code = [rdmap](std::uint8_t rdmap_code, std::uint8_t ddp_code) {
    return rdmap ? term::rdmap_protection(rdmap_code) : term::ddp_tagged(ddp_code);
  };
  // Every message names the STag, and the region's bounds when the sink knows them.
  const std::string what = (rdmap ? "source or target STag " : "STag ") + hex_stag(stag);
  const bool bounded = r != nullptr && r->base && r->length;
  const std::string region = bounded ? " (region " + range(*r->base, *r->length) + ")" : "";
  switch (broken) {
    case RegionRule::none:
      break;
    case RegionRule::unknown_stag:
      return make(FindingId::ddp_tagged_invalid_stag,
                  code(rdmap_code::invalid_stag, ddp_tagged_code::invalid_stag),
                  what + " is not a region of the Data Sink (access " + range(to, len) + ")");
    case RegionRule::invalidated:
      return make(FindingId::rdmap_stag_invalidated_use,
                  code(rdmap_code::invalid_stag, ddp_tagged_code::invalid_stag),
                  what + region + " was invalidated" +
                      (r->invalidated_frame ? " in frame " + std::to_string(r->invalidated_frame)
                                            : std::string()));
    case RegionRule::protection_domain:
      return make(FindingId::ddp_tagged_stag_wrong_stream,
                  code(rdmap_code::stag_not_associated, ddp_tagged_code::stag_not_associated),
                  what + region + " is in protection domain " + std::to_string(*r->pd) +
                      ", the stream's is " + std::to_string(*stream.pd));
    case RegionRule::stream:
      return make(FindingId::ddp_tagged_stag_wrong_stream,
                  code(rdmap_code::stag_not_associated, ddp_tagged_code::stag_not_associated),
                  what + region + " belongs to stream " + std::to_string(*r->stream) +
                      (r->scope.empty() ? std::string() : ", per its " + std::string(r->scope)));
    case RegionRule::access:
      return make(FindingId::ddp_tagged_access_rights,
                  code(rdmap_code::access_rights, ddp_tagged_code::invalid_stag),
                  what + region + " does not grant the " +
                      (need & access::remote_read     ? "remote read"
                       : need & access::remote_atomic ? "remote atomic"
                       : need & access::remote_write  ? "remote write"
                                                      : "local write") +
                      " right");
    case RegionRule::to_wrap:
      return make(FindingId::ddp_tagged_to_wrap,
                  code(rdmap_code::to_wrap, ddp_tagged_code::to_wrap),
                  "TO " + hex_number(to) + " + " + std::to_string(len) + " octets at " + what +
                      region + " wraps past 2^64");
    case RegionRule::bounds: {
      const std::uint64_t end = *r->base + *r->length;
      std::string how;
      if (to < *r->base)
        how = std::to_string(*r->base - to) + " octets before the base";
      else
        how = std::to_string(to + len - end) + " octets past the end";
      return make(FindingId::ddp_tagged_bounds,
                  code(rdmap_code::base_bounds, ddp_tagged_code::base_bounds),
                  range(to, len) + " outside region " + range(*r->base, *r->length) + " of " +
                      what + " (" + how + ")");
    }
  }
  return std::nullopt;
}

[[gnu::cold]] std::optional<Violation> message_cut(const TaggedRx& rx, const wire::DdpHeader& h) {
  return make(FindingId::ddp_message_incomplete, term::ddp_tagged(ddp_tagged_code::invalid_stag),
              "tagged message to STag " + hex_stag(rx.stag) +
                  " ended without its last segment (next segment names STag " + hex_stag(h.stag) +
                  ")");
}

[[gnu::cold]] std::optional<Violation> to_discontinuous(const TaggedRx& rx,
                                                        const wire::DdpHeader& h) {
  const std::string how = h.to > rx.next_to
                              ? std::to_string(h.to - rx.next_to) + " octets past it"
                              : std::to_string(rx.next_to - h.to) + " octets before it";
  return make(FindingId::ddp_tagged_bounds, term::ddp_tagged(ddp_tagged_code::base_bounds),
              "TO " + hex_number(h.to) + " of STag " + hex_stag(h.stag) +
                  " does not continue the message " + range(rx.first_to, rx.length) +
                  " (expected TO " + hex_number(rx.next_to) + ", " + how + ")");
}

}  // namespace detail

Violation header_too_short(std::size_t ulpdu_length) {
  auto v = make(FindingId::mpa_ulpdu_length_invalid, term::rdmap_operation(rdmap_code::unspecified),
                "ULPDU of " + std::to_string(ulpdu_length) + " octets cannot hold its DDP header",
                TerminateQuote::none);
  v.rule_case = SinkCase::header_too_short;
  return v;
}

std::optional<Violation> check_untagged_sequence(const UntaggedRx& q, const wire::DdpHeader& h) {
  const auto range_error = term::ddp_untagged(ddp_untagged_code::invalid_msn_range);
  if (q.synced && h.msn != q.expected_msn) {
    const std::string qn = " on QN " + std::to_string(h.qn);
    if (serial_lt(h.msn, q.expected_msn)) {
      if (h.mo > 0) {
        return make(FindingId::ddp_segment_after_last, range_error,
                    "MSN " + std::to_string(h.msn) + " MO " + std::to_string(h.mo) +
                        " after that message's last segment");
      }
      return make(FindingId::ddp_untagged_msn_duplicate, range_error,
                  "MSN " + std::to_string(h.msn) + qn + " was already received (next expected " +
                      std::to_string(q.expected_msn) + ")");
    }
    if (q.open) {
      return make(FindingId::ddp_message_incomplete, range_error,
                  "MSN " + std::to_string(q.expected_msn) + qn +
                      " ended without its last segment (next segment has MSN " +
                      std::to_string(h.msn) + ")");
    }
    return make(FindingId::ddp_untagged_msn_gap, range_error,
                (q.expected_msn == 1 ? "first MSN" + qn + " is " + std::to_string(h.msn)
                                     : "MSN " + std::to_string(h.msn) + qn) +
                    ", expected " + std::to_string(q.expected_msn));
  }
  const bool continues = q.open && (!q.synced || h.msn == q.expected_msn);
  const std::uint32_t want_mo = continues ? q.mo : 0;
  if (h.mo != want_mo) {
    return make(
        FindingId::ddp_untagged_invalid_mo, term::ddp_untagged(ddp_untagged_code::invalid_mo),
        continues
            ? "MO " + std::to_string(h.mo) + ", expected " + std::to_string(want_mo) + " for MSN " +
                  std::to_string(h.msn)
            : "first segment of MSN " + std::to_string(h.msn) + " has MO " + std::to_string(h.mo));
  }
  return std::nullopt;
}

std::optional<Violation> check_untagged_room(const UntaggedBuffer& buffer, std::uint32_t mo,
                                             std::uint64_t len, std::string_view what) {
  switch (buffer.state) {
    case UntaggedBuffer::State::unknown:
      return std::nullopt;
    case UntaggedBuffer::State::none:
      return make(FindingId::ddp_untagged_no_buffer,
                  term::ddp_untagged(ddp_untagged_code::invalid_msn_no_buffer),
                  std::string(what) + " with no receive buffer posted");
    case UntaggedBuffer::State::posted:
      break;
  }
  if (std::uint64_t{mo} + len <= buffer.size) return std::nullopt;
  return make(FindingId::ddp_untagged_message_too_long,
              term::ddp_untagged(ddp_untagged_code::message_too_long),
              std::string(what) + " of at least " + std::to_string(std::uint64_t{mo} + len) +
                  " octets for a " + std::to_string(buffer.size) + "-octet buffer");
}

}  // namespace ddpscope::ddp
