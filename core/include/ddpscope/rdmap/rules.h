// SPDX-License-Identifier: GPL-2.0-or-later
// The RDMAP Data Sink rules (RFC 5040 §4, §5, §7; RFC 7306), written once: pure checks over one
// segment or one complete message, each returning the Violation a compliant Data Sink reports.
// rdmap::DataSink (data_sink.h) calls them, with the DDP rules (ddp/rules.h), in the one fixed
// order documented there. Where Linux siw sends another triple, the comment says so.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "ddpscope/ddp/rules.h"
#include "ddpscope/findings/violation.h"
#include "ddpscope/wire/rdmap.h"

namespace ddpscope::rdmap {

namespace detail {
// check_control's rules, in its order; the Violation is built in rules.cpp.
enum class ControlRule : std::uint8_t { none, version, undefined, rfc7306, buffer_model };
[[gnu::cold]] std::optional<Violation> control_violation(ControlRule broken,
                                                         const wire::DdpHeader& h,
                                                         const wire::RdmapControl& rc,
                                                         const wire::OpcodeInfo& info);
}  // namespace detail

// RDMAP version (RFC 5040 §4.2, Remote Operation 0x05) and opcode (§4.3, 0x06): reserved
// opcodes, RFC 7306 opcodes at a sink that does not support them (siw: 0x06 too), and an opcode
// on the other buffer model (siw instead takes the model from the opcode: a Send opcode in a
// tagged segment fails its MSN check, DDP Untagged 0x03). Inline: it runs for every segment.
inline std::optional<Violation> check_control(const wire::DdpHeader& h, bool rfc7306) {
  using detail::ControlRule;
  const auto rc = wire::RdmapControl::from_byte(h.rsvd_ulp0);
  const auto& info = wire::opcode_info(rc.opcode);
  ControlRule broken = ControlRule::none;
  if (rc.version != wire::kRdmapVersion)
    broken = ControlRule::version;
  else if (!info.defined)
    broken = ControlRule::undefined;
  else if (info.rfc7306 && !rfc7306)
    broken = ControlRule::rfc7306;
  else if (info.tagged != h.control.tagged)
    broken = ControlRule::buffer_model;
  if (broken == ControlRule::none) [[likely]]
    return std::nullopt;
  return detail::control_violation(broken, h, rc, info);
}

// The queue an untagged opcode uses (RFC 5040 §5.1; RFC 7306 for immediate data and atomics,
// see wire/rdmap.h): DDP Untagged 0x01.
std::optional<Violation> check_queue(const wire::DdpHeader& h, std::uint8_t opcode);

// The fixed-size bodies: Read Request (28 octets), Atomic Request (52), Atomic Response (12),
// Immediate Data (8). nullopt for opcodes whose body has no fixed size.
std::optional<std::size_t> fixed_body_size(std::uint8_t opcode);
// A message longer than its fixed body does not fit the queue's buffers (DDP Untagged 0x05,
// RFC 5041 §7.2: DDP sees it before RDMAP does); a last segment that leaves it shorter is an
// RDMAP error (Remote Operation 0xFF). siw sends nothing for either (a longer Read Request is
// closed with FIN; a shorter one waits for octets that never come).
std::optional<Violation> check_fixed_body(std::uint8_t opcode, std::uint32_t mo, std::uint64_t len,
                                          bool last);

// A Read Request this side sent, awaiting its Read Response (RFC 5040 §5.2: answered in order).
struct OutstandingRead {
  wire::ReadRequest req;
  std::uint64_t received = 0;
  // What the host keeps with it.
  std::uint64_t frame = 0;  // analysis: the request's frame
  std::int64_t ts_ns = 0;   // analysis: the request's time
  std::uint64_t pdu = 0;    // analysis: the request's PduEvent::id
  std::uint64_t wr_id = 0;  // endpoint: the work request
  bool rtr = false;         // endpoint: the zero-length Read RTR (no completion)
};

// A Read Response segment against the ORQ head (RFC 5040 §5.2, siw_rresp_check_ntoh): one must
// be outstanding (DDP Local Catastrophic, as our endpoint sends), the STag is the requested sink
// STag (DDP Tagged 0x00), the TO continues the sink TO (0x01), and the data neither exceed nor,
// at the last segment, fall short of the requested size (0x01).
std::optional<Violation> check_read_response(const OutstandingRead* head, const wire::DdpHeader& h,
                                             std::uint64_t len);

// A complete Read Request (RFC 5040 §5.2, §6.4; RFC 6581): at most IRD in progress (Remote
// Operation 0x07, as siw_init_rresp), then its source region with Remote Protection codes (the
// Terminate quotes the Read Request, R).
std::optional<Violation> check_read_request(const wire::ReadRequest& rr, std::size_t in_progress,
                                            std::optional<std::uint16_t> ird,
                                            const ddp::RegionFacts* source, bool regions_known,
                                            const ddp::StreamFacts& stream);

// Send with Invalidate (RFC 5040 §5.3, §7.1): the STag must be a valid region of the stream's
// protection domain that allows remote invalidation (Remote Protection 0x09).
std::optional<Violation> check_invalidate(std::uint32_t stag, const ddp::RegionFacts* facts,
                                          bool regions_known, const ddp::StreamFacts& stream);

// A complete Atomic Request (RFC 7306): a defined atomic opcode (Remote Operation 0x06), the
// target region with Remote Protection codes (8 octets, remote atomic right), an 8-aligned TO
// (0x01, verify RFC 7306).
std::optional<Violation> check_atomic_request(const wire::AtomicRequest& a,
                                              const ddp::RegionFacts* target, bool regions_known,
                                              const ddp::StreamFacts& stream);

// An Atomic Response must answer an outstanding request (RFC 7306; Remote Operation 0x06).
std::optional<Violation> check_atomic_response(const wire::AtomicResponse& a, bool outstanding);

// A peer's Terminate that no rule predicted from the capture may answer state the capture
// cannot show: the peer's own regions (an STag it never registered or has invalidated since, one
// of another protection domain or stream, one without the access right, bounds the
// advertisement did not state). For the segment the Terminate quotes (its DDP header and, for a
// Read Request, its RDMAP header) these are the violations the region rules above draw under
// each such state, in check_region's order; the analyzer compares each one's answer under a
// Data Sink profile with the Terminate. Empty when the quoted segment names no STag.
std::vector<Violation> hidden_region_violations(const wire::DdpHeader& quoted,
                                                const std::optional<wire::ReadRequest>& request,
                                                const ddp::StreamFacts& stream);

// Failures of the sink's own that end the stream (no rule of the peer's broken): a local error
// such as memory deregistered under an accepted Read Request (RDMAP Local Catastrophic), and
// resources the peer exhausted by not reading what we send (Remote Operation 0x07).
TerminateError local_catastrophic();
TerminateError resources_exhausted();

}  // namespace ddpscope::rdmap
