// SPDX-License-Identifier: GPL-2.0-or-later
// The DDP Data Sink rules (RFC 5041 §4, §5, §7.2), written once: pure checks over one segment
// and what the sink knows, each returning the Violation a compliant Data Sink reports (finding
// and Terminate). rdmap::DataSink (rdmap/data_sink.h) calls them in the one fixed order; the
// analyzer and the endpoint both go through it. Where Linux siw sends another triple, the
// comment says so.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "ddpscope/findings/violation.h"
#include "ddpscope/wire/ddp.h"

namespace ddpscope::ddp {

// Access rights of a region (RFC 5040 §5.3 names remote read and write; RFC 7306 atomics).
namespace access {
inline constexpr std::uint8_t local_write = 0x01;
inline constexpr std::uint8_t remote_read = 0x02;
inline constexpr std::uint8_t remote_write = 0x04;
inline constexpr std::uint8_t remote_atomic = 0x08;
inline constexpr std::uint8_t all = 0x0F;
}  // namespace access

// What the Data Sink knows of the region an STag names. An endpoint knows all of it; an analysis
// knows what the capture and the user told it. A fact left unknown (nullopt) never fails a check:
// a false error costs a user more than a missed one.
struct RegionFacts {
  bool valid = true;                    // false once invalidated (RFC 5040 §5.3)
  std::uint64_t invalidated_frame = 0;  // analysis: the frame that invalidated it (0: unknown)
  bool invalidatable = true;            // remote invalidation allowed (Send with Invalidate)
  std::optional<std::uint64_t> base;    // bounds, when known (and, in analysis, enforced)
  std::optional<std::uint64_t> length;
  std::optional<std::uint32_t> pd;      // protection domain
  std::optional<std::uint64_t> stream;  // the one stream it may be used on (RFC 5041 §8)
  std::string_view scope;               // why it is bound to that stream (for the message)
  std::optional<std::uint8_t> access;   // access:: rights
};

// The stream a segment arrived on, as its Data Sink sees it.
struct StreamFacts {
  std::uint64_t stream = 0;
  std::optional<std::uint32_t> pd;  // the stream's protection domain, when known
};

// Which table a region check reports in: DDP's Tagged Buffer codes for a tagged segment
// (RFC 5041 §7.2), RDMAP's Remote Protection codes for an STag an RDMAP request names (a Read
// Request's source, an atomic's target: RFC 5040 §7.1).
enum class ErrorTable : std::uint8_t { ddp_tagged, rdmap_protection };

// A ULPDU too short for the DDP header its control byte announces (RFC 5041 §4, RFC 5044 §4.1).
// No table has a code for it: our endpoint sends RDMAP Remote Operation 0xFF (Unspecified);
// siw sends nothing (it waits for octets that belong to the next FPDU).
Violation header_too_short(std::size_t ulpdu_length);

// The checks that run for every segment (check_version, check_region,
// check_tagged_continuation, rdmap::check_control) test their rules here, inline; the Violation
// and its text are built out of line, in rules.cpp, only for a segment that breaks one.
namespace detail {
[[gnu::cold]] std::optional<Violation> version_violation(const wire::DdpHeader& h);
// check_region's rules, in its order.
enum class RegionRule : std::uint8_t {
  none,
  unknown_stag,
  invalidated,
  protection_domain,
  stream,
  access,
  to_wrap,
  bounds,
};
[[gnu::cold]] std::optional<Violation> region_violation(RegionRule broken, std::uint32_t stag,
                                                        const RegionFacts* r,
                                                        const StreamFacts& stream, std::uint64_t to,
                                                        std::uint64_t len, std::uint8_t need,
                                                        ErrorTable table);
}  // namespace detail

// DDP version (RFC 5041 §4.1): DDP Tagged 0x04 / Untagged 0x06.
inline std::optional<Violation> check_version(const wire::DdpHeader& h) {
  if (h.control.version == wire::kDdpVersion) [[likely]]
    return std::nullopt;
  return detail::version_violation(h);
}

// The region check, in siw's order (siw_check_mem): STag valid, PD and stream, access rights,
// TO wrap, base and bounds. `r` is null when the sink has no region with this STag; that is
// a violation only when `regions_known` (the endpoint always knows; an analysis when the user
// gave a regions file, even an empty one); otherwise only the TO wrap is checked. DDP table: a
// missing access right draws Invalid STag (RFC 5041 has no access code; siw does the same).
inline std::optional<Violation> check_region(std::uint32_t stag, const RegionFacts* r,
                                             bool regions_known, const StreamFacts& stream,
                                             std::uint64_t to, std::uint64_t len, std::uint8_t need,
                                             ErrorTable table) {
  using detail::RegionRule;
  RegionRule broken = RegionRule::none;
  if (r == nullptr && regions_known)
    broken = RegionRule::unknown_stag;
  else if (r != nullptr && !r->valid)
    broken = RegionRule::invalidated;
  else if (r != nullptr && r->pd && stream.pd && *r->pd != *stream.pd)
    broken = RegionRule::protection_domain;
  else if (r != nullptr && r->stream && *r->stream != stream.stream)
    broken = RegionRule::stream;
  else if (r != nullptr && r->access && (*r->access & need) != need)
    broken = RegionRule::access;
  else if (len > 0 && to + (len - 1) < to)
    broken = RegionRule::to_wrap;
  else if (r != nullptr && r->base && r->length &&
           (to < *r->base || to - *r->base > *r->length || len > *r->length - (to - *r->base)))
    broken = RegionRule::bounds;
  if (broken == RegionRule::none) [[likely]]
    return std::nullopt;
  return detail::region_violation(broken, stag, r, stream, to, len, need, table);
}

// The tagged message a sink is receiving (RFC 5041 §4.2): one at a time per stream on an LLP
// that delivers in order (MPA/TCP); each segment continues the previous one's STag and TO.
struct TaggedRx {
  bool open = false;
  bool damaged = false;  // analysis: capture loss hid some of it
  std::uint8_t opcode = 0;
  std::uint32_t stag = 0;
  std::uint64_t first_to = 0;
  std::uint64_t next_to = 0;
  std::uint64_t length = 0;
};

namespace detail {
[[gnu::cold]] std::optional<Violation> message_cut(const TaggedRx& rx, const wire::DdpHeader& h);
[[gnu::cold]] std::optional<Violation> to_discontinuous(const TaggedRx& rx,
                                                        const wire::DdpHeader& h);
}  // namespace detail

// A new segment while a tagged message is open: a change of opcode or STag ends the open one
// without its L segment (DDP Tagged 0x00 Invalid STag, as siw_write_check_ntoh); a TO that does
// not continue it is a bounds violation (0x01). Nothing when the open message was damaged.
inline std::optional<Violation> check_tagged_continuation(const TaggedRx& rx,
                                                          const wire::DdpHeader& h,
                                                          std::uint8_t opcode) {
  if (!rx.open || rx.damaged) return std::nullopt;
  if (rx.opcode != opcode || rx.stag != h.stag) [[unlikely]]
    return detail::message_cut(rx, h);
  if (rx.next_to != h.to) [[unlikely]]
    return detail::to_discontinuous(rx, h);
  return std::nullopt;
}

// One untagged queue (RFC 5041 §5.3): the MSN it expects and the message in progress.
struct UntaggedRx {
  std::uint32_t expected_msn = 1;  // of the open message, or of the next one
  bool synced = true;       // false: the next MSN is unknown (capture loss, mid-stream start)
  bool after_loss = false;  // analysis: capture loss came before, findings are consequences
  bool open = false;
  bool damaged = false;  // analysis: part of the open message was lost
  std::uint32_t mo = 0;  // octets of the open message so far
  std::uint8_t opcode = 0;
};

// MSN and MO (RFC 5041 §5.3, §7.2): MSN = expected (else DDP Untagged 0x03: a gap, a duplicate,
// or a segment after its message's last one), MO = octets so far (else 0x04).
std::optional<Violation> check_untagged_sequence(const UntaggedRx& q, const wire::DdpHeader& h);

// The buffer an untagged message lands in (RFC 5041 §5.3).
struct UntaggedBuffer {
  enum class State : std::uint8_t { unknown, none, posted };
  State state = State::unknown;
  std::uint64_t size = 0;
};
// A message needs a buffer (DDP Untagged 0x02 "no buffer available") with room for it (0x05).
// siw sends 0x02 for a message too long for its buffer too.
std::optional<Violation> check_untagged_room(const UntaggedBuffer& buffer, std::uint32_t mo,
                                             std::uint64_t len, std::string_view what);

}  // namespace ddpscope::ddp
