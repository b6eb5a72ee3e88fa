// SPDX-License-Identifier: GPL-2.0-or-later
#include "ddpscope/rdmap/rules.h"

#include <string>

#include "ddpscope/common/bytes.h"

namespace ddpscope::rdmap {

namespace {

Violation make(FindingId id, TerminateError t, std::string detail,
               TerminateQuote quote = TerminateQuote::ddp_header,
               SinkCase rule_case = SinkCase::general) {
  return Violation{id, t, quote, std::move(detail), rule_case};
}

}  // namespace

namespace detail {

// check_control's Violation (rules.h tests the rules inline).
[[gnu::cold]] std::optional<Violation> control_violation(ControlRule broken,
                                                         const wire::DdpHeader& h,
                                                         const wire::RdmapControl& rc,
                                                         const wire::OpcodeInfo& info) {
  switch (broken) {
    case ControlRule::none:
      break;
    case ControlRule::version:
      return make(FindingId::rdmap_version_invalid,
                  term::rdmap_operation(rdmap_code::invalid_version),
                  "RDMAP version " + std::to_string(rc.version), TerminateQuote::none);
    case ControlRule::undefined:
      return make(FindingId::rdmap_opcode_invalid,
                  term::rdmap_operation(rdmap_code::unexpected_opcode), std::string(info.name),
                  TerminateQuote::none);
    case ControlRule::rfc7306:
      return make(FindingId::rdmap_opcode_invalid,
                  term::rdmap_operation(rdmap_code::unexpected_opcode),
                  std::string(info.name) + " (RFC 7306) at a Data Sink without RFC 7306",
                  TerminateQuote::none, SinkCase::control_rfc7306);
    case ControlRule::buffer_model:
      return make(FindingId::rdmap_opcode_invalid,
                  term::rdmap_operation(rdmap_code::unexpected_opcode),
                  std::string(info.name) + " on the " + (h.control.tagged ? "tagged" : "untagged") +
                      " buffer model",
                  TerminateQuote::none,
                  !h.control.tagged ? SinkCase::control_tagged_untagged
                  : rc.opcode == static_cast<std::uint8_t>(wire::Opcode::read_request)
                      ? SinkCase::control_read_request_tagged
                  : (h.to >> 32) != 0 ? SinkCase::control_send_tagged_qn
                                      : SinkCase::control_send_tagged);
  }
  return std::nullopt;
}

}  // namespace detail

std::optional<Violation> check_queue(const wire::DdpHeader& h, std::uint8_t opcode) {
  const auto& info = wire::opcode_info(opcode);
  if (info.qn && h.qn == *info.qn) return std::nullopt;
  const SinkCase rule_case = opcode == static_cast<std::uint8_t>(wire::Opcode::terminate)
                                 ? SinkCase::queue_terminate
                             : opcode == static_cast<std::uint8_t>(wire::Opcode::read_request)
                                 ? SinkCase::queue_read_request
                                 : SinkCase::general;
  return make(FindingId::ddp_untagged_invalid_qn, term::ddp_untagged(ddp_untagged_code::invalid_qn),
              std::string(info.name) + " on QN " + std::to_string(h.qn) + " (expected " +
                  std::to_string(info.qn.value_or(0)) + ")",
              TerminateQuote::ddp_header, rule_case);
}

std::optional<std::size_t> fixed_body_size(std::uint8_t opcode) {
  switch (static_cast<wire::Opcode>(opcode)) {
    case wire::Opcode::read_request:
      return wire::ReadRequest::kSize;
    case wire::Opcode::atomic_request:
      return wire::AtomicRequest::kSize;
    case wire::Opcode::atomic_response:
      return wire::AtomicResponse::kSize;
    case wire::Opcode::immediate_data:
    case wire::Opcode::immediate_data_se:
      return wire::kImmediateDataSize;
    default:
      return std::nullopt;
  }
}

std::optional<Violation> check_fixed_body(std::uint8_t opcode, std::uint32_t mo, std::uint64_t len,
                                          bool last) {
  const auto size = fixed_body_size(opcode);
  if (!size) return std::nullopt;
  const std::uint64_t have = std::uint64_t{mo} + len;
  const std::string name(wire::opcode_info(opcode).name);
  if (have > *size) {
    return make(FindingId::ddp_untagged_message_too_long,
                term::ddp_untagged(ddp_untagged_code::message_too_long),
                name + " of at least " + std::to_string(have) + " octets (its body has " +
                    std::to_string(*size) + ")",
                TerminateQuote::ddp_header, SinkCase::fixed_body_long);
  }
  if (last && have < *size) {
    return make(
        FindingId::rdmap_body_invalid, term::rdmap_operation(rdmap_code::unspecified),
        name + " of " + std::to_string(have) + " octets (needs " + std::to_string(*size) + ")",
        TerminateQuote::ddp_header, SinkCase::fixed_body_short);
  }
  return std::nullopt;
}

std::optional<Violation> check_read_response(const OutstandingRead* head, const wire::DdpHeader& h,
                                             std::uint64_t len) {
  if (head == nullptr) {
    return make(FindingId::rdmap_read_response_unmatched, term::ddp_local_catastrophic(),
                "Read Response to STag " + hex_stag(h.stag) + " with no Read Request outstanding",
                TerminateQuote::none);
  }
  const auto& rq = head->req;
  // The Read Request's sink range is the region the response may fill (RFC 5040 §4.4).
  const std::string sink = "sink range [" + hex_number(rq.sink_to) + ", +" +
                           std::to_string(rq.size) + ") of STag " + hex_stag(rq.sink_stag);
  const std::string in =
      head->frame ? " (Read Request in frame " + std::to_string(head->frame) + ")" : std::string();
  if (h.stag != rq.sink_stag) {
    return make(FindingId::ddp_tagged_invalid_stag, term::ddp_tagged(ddp_tagged_code::invalid_stag),
                "Read Response to STag " + hex_stag(h.stag) +
                    ", the Read Request named sink STag " + hex_stag(rq.sink_stag) + in);
  }
  const std::uint64_t expect = rq.sink_to + head->received;
  if (h.to != expect) {
    const std::string how = h.to > expect ? std::to_string(h.to - expect) + " octets past it"
                                          : std::to_string(expect - h.to) + " octets before it";
    return make(FindingId::ddp_tagged_bounds, term::ddp_tagged(ddp_tagged_code::base_bounds),
                "Read Response at TO " + hex_number(h.to) + ", expected sink TO " +
                    hex_number(expect) + " (" + how + ") in the " + sink + in);
  }
  const std::uint64_t total = head->received + len;
  if (total > rq.size) {
    return make(FindingId::rdmap_read_response_size_mismatch,
                term::ddp_tagged(ddp_tagged_code::base_bounds),
                "Read Response carries " + std::to_string(total) + " octets, " +
                    std::to_string(total - rq.size) + " octets past the end of the " + sink + in);
  }
  if (h.control.last && total != rq.size) {
    return make(FindingId::rdmap_read_response_size_mismatch,
                term::ddp_tagged(ddp_tagged_code::base_bounds),
                "Read Response carried " + std::to_string(total) + " octets, " +
                    std::to_string(rq.size - total) + " short of the " + sink + in);
  }
  return std::nullopt;
}

std::optional<Violation> check_read_request(const wire::ReadRequest& rr, std::size_t in_progress,
                                            std::optional<std::uint16_t> ird,
                                            const ddp::RegionFacts* source, bool regions_known,
                                            const ddp::StreamFacts& stream) {
  if (ird && in_progress >= *ird) {
    return make(FindingId::rdmap_ird_exceeded,
                term::rdmap_operation(rdmap_code::catastrophic_stream),
                std::to_string(in_progress + 1) +
                    " Read Requests in progress, the responder's IRD is " + std::to_string(*ird),
                TerminateQuote::ddp_header,
                in_progress == *ird ? SinkCase::ird_first_over : SinkCase::general);
  }
  if (rr.size == 0) return std::nullopt;
  auto v = ddp::check_region(rr.source_stag, source, regions_known, stream, rr.source_to, rr.size,
                             ddp::access::remote_read, ddp::ErrorTable::rdmap_protection);
  if (v) {
    v->quote = TerminateQuote::ddp_and_rdmap;
    v->detail = "Read Request: " + v->detail;
  }
  return v;
}

std::optional<Violation> check_invalidate(std::uint32_t stag, const ddp::RegionFacts* r,
                                          bool regions_known, const ddp::StreamFacts& stream) {
  std::string why;
  if (r == nullptr) {
    if (!regions_known) return std::nullopt;
    why = "is not a region of the Data Sink";
  } else if (!r->valid) {
    why = "is not valid (invalidated" +
          (r->invalidated_frame ? " in frame " + std::to_string(r->invalidated_frame) : "") + ")";
  } else if (r->pd && stream.pd && *r->pd != *stream.pd) {
    why = "is in another protection domain (" + std::to_string(*r->pd) + ")";
  } else if (!r->invalidatable) {
    why = "may not be invalidated remotely";
  } else {
    return std::nullopt;
  }
  return make(FindingId::rdmap_invalidate_refused,
              term::rdmap_protection(rdmap_code::stag_cannot_invalidate),
              "Send with Invalidate of STag " + hex_stag(stag) + ", which " + why);
}

std::optional<Violation> check_atomic_request(const wire::AtomicRequest& a,
                                              const ddp::RegionFacts* target, bool regions_known,
                                              const ddp::StreamFacts& stream) {
  if (a.atomic_opcode != static_cast<std::uint8_t>(wire::AtomicOp::fetch_add) &&
      a.atomic_opcode != static_cast<std::uint8_t>(wire::AtomicOp::compare_swap)) {
    return make(FindingId::rdmap_opcode_invalid,
                term::rdmap_operation(rdmap_code::unexpected_opcode),
                "Atomic Request with atomic opcode " + std::to_string(a.atomic_opcode) + " (" +
                    std::string(wire::atomic_op_name(a.atomic_opcode)) + ")");
  }
  if (auto v = ddp::check_region(a.remote_stag, target, regions_known, stream, a.remote_to, 8,
                                 ddp::access::remote_atomic, ddp::ErrorTable::rdmap_protection)) {
    v->detail = "Atomic Request: " + v->detail;
    return v;
  }
  if (a.remote_to % 8 != 0) {
    return make(FindingId::ddp_tagged_bounds, term::rdmap_protection(rdmap_code::base_bounds),
                "Atomic Request: remote TO " + hex_number(a.remote_to) + " of STag " +
                    hex_stag(a.remote_stag) + " is not 8-aligned (" +
                    std::to_string(a.remote_to % 8) + " octets past an 8-octet boundary)");
  }
  return std::nullopt;
}

std::optional<Violation> check_atomic_response(const wire::AtomicResponse& a, bool outstanding) {
  if (outstanding) return std::nullopt;
  return make(FindingId::rdmap_atomic_response_unmatched,
              term::rdmap_operation(rdmap_code::unexpected_opcode),
              "Atomic Response for request id " + std::to_string(a.request_id) +
                  ", which is not outstanding");
}

TerminateError local_catastrophic() {
  return term::rdmap_local_catastrophic();
}
TerminateError resources_exhausted() {
  return term::rdmap_operation(rdmap_code::catastrophic_stream);
}

std::vector<Violation> hidden_region_violations(const wire::DdpHeader& quoted,
                                                const std::optional<wire::ReadRequest>& request,
                                                const ddp::StreamFacts& stream) {
  std::uint32_t stag = 0;
  std::uint64_t to = 0, len = 1;
  std::uint8_t need = ddp::access::remote_write;
  ddp::ErrorTable table = ddp::ErrorTable::ddp_tagged;
  if (request) {  // the Data Source's check of the region it is asked to read
    stag = request->source_stag;
    to = request->source_to;
    len = request->size == 0 ? 1 : request->size;
    need = ddp::access::remote_read;
    table = ddp::ErrorTable::rdmap_protection;
  } else if (quoted.control.tagged) {
    stag = quoted.stag;
    to = quoted.to;
  } else {
    return {};
  }
  // One region state per rule of check_region (TO wrap is visible in the capture: left out).
  ddp::StreamFacts in_pd = stream;
  if (!in_pd.pd) in_pd.pd = 1;
  ddp::RegionFacts invalidated;
  invalidated.valid = false;
  ddp::RegionFacts other_pd;
  other_pd.pd = *in_pd.pd + 1;
  ddp::RegionFacts other_stream;
  other_stream.stream = stream.stream + 1;
  ddp::RegionFacts no_right;
  no_right.access = static_cast<std::uint8_t>(ddp::access::all & ~need);
  ddp::RegionFacts too_small;
  too_small.base = to;
  too_small.length = 0;
  std::vector<Violation> out;
  // The detail names the state supposed, not the made-up facts that stand for it.
  const std::string what = (request ? "the Read Request's source STag " : "STag ") + hex_stag(stag);
  const auto add = [&](const ddp::RegionFacts* r, const ddp::StreamFacts& s, const char* state) {
    if (auto v = ddp::check_region(stag, r, true, s, to, len, need, table)) {
      if (request) v->quote = TerminateQuote::ddp_and_rdmap;
      v->detail = what + " " + state;
      out.push_back(std::move(*v));
    }
  };
  add(nullptr, stream, "not registered at the peer");
  add(&invalidated, stream, "invalidated at the peer");
  add(&other_pd, in_pd, "in another protection domain than the stream's");
  add(&other_stream, stream, "bound to another stream");
  add(&no_right, stream,
      request ? "registered without the remote read right"
              : "registered without the remote write right");
  add(&too_small, stream, "registered smaller than the access");
  return out;
}

}  // namespace ddpscope::rdmap
