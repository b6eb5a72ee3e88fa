// SPDX-License-Identifier: GPL-2.0-or-later
#include "draw.h"

#include <epan/column-utils.h>
#include <epan/dissectors/packet-iwarp-ddp-rdmap.h>
#include <epan/exceptions.h>
#include <epan/expert.h>
#include <epan/proto.h>
#include <epan/tvbuff.h>

#include "fields.h"

// Everything below calls into Wireshark, which reports errors by longjmp: no function here
// owns a C++ object with a destructor (only PODs, pointers into the stored records and
// wmem-allocated memory).

namespace ddpscope::plugin {

namespace {

// A tvb range that is valid, or no tvb at all (then the item carries only its value).
struct At {
  tvbuff_t* tvb;
  int off;
  int len;
};

// Send payloads waiting to be handed to the upper-layer heuristics (per draw_frame call).
struct UpperCall {
  tvbuff_t* payload;
  rdmap_info_t* info;
};
wmem_list_t* pending_upper = nullptr;

// For items that need some tvb (protocol items, FT_NONE, subtrees): the frame, 0 octets.
tvbuff_t* fallback_tvb = nullptr;
At or_empty(At a) {
  return a.tvb != nullptr ? a : At{fallback_tvb, 0, 0};
}

At at(tvbuff_t* tvb, std::size_t off, std::size_t len) {
  if (tvb != nullptr) {
    const auto have = static_cast<std::size_t>(tvb_captured_length(tvb));
    if (off <= have && len <= have - off) {
      return {tvb, static_cast<int>(off), static_cast<int>(len)};
    }
  }
  return {nullptr, 0, 0};
}
// A field of a header or body that starts at `base` in the tvb, placed by core's codec table.
At at(tvbuff_t* tvb, std::size_t base, wire::FieldSpan f) {
  return at(tvb, base + f.offset, f.size);
}

proto_item* add_uint(proto_tree* t, int hf_id, At a, std::uint32_t v) {
  return proto_tree_add_uint(t, hf_id, a.tvb, a.off, a.len, v);
}
proto_item* add_u64(proto_tree* t, int hf_id, At a, std::uint64_t v) {
  return proto_tree_add_uint64(t, hf_id, a.tvb, a.off, a.len, v);
}
proto_item* add_bool(proto_tree* t, int hf_id, At a, std::uint64_t v) {
  return proto_tree_add_boolean(t, hf_id, a.tvb, a.off, a.len, v);
}

// The RFC 6581 IRD/ORD/RTR words at `pd` (an MPA Request/Reply's or an SCTP session control
// message's private data): one subtree, the same fields over both LLPs.
void draw_enhanced_pd(proto_tree* parent, tvbuff_t* tvb, std::size_t pd,
                      const wire::MpaEnhancedPd& e) {
  const std::uint32_t w1 = e.ird_word();
  const std::uint32_t w2 = e.ord_word();
  const At ea = or_empty(at(tvb, pd, wire::MpaEnhancedPd::kSize));
  proto_tree* et = proto_tree_add_subtree(parent, ea.tvb, ea.off, ea.len, ett.mpa_enhanced, nullptr,
                                          "RFC 6581 enhanced private data");
  const At ia = at(tvb, pd, wire::mpa_enhanced_field::ird_word);
  proto_item* w = add_uint(et, hf.mpa_ird_word, ia, w1);
  proto_tree* wt = proto_item_add_subtree(w, ett.mpa_enhanced);
  add_bool(wt, hf.mpa_a, ia, w1);
  add_bool(wt, hf.mpa_b, ia, w1);
  add_uint(wt, hf.mpa_ird, ia, w1);
  const At oa = at(tvb, pd, wire::mpa_enhanced_field::ord_word);
  w = add_uint(et, hf.mpa_ord_word, oa, w2);
  wt = proto_item_add_subtree(w, ett.mpa_enhanced);
  add_bool(wt, hf.mpa_c, oa, w2);
  add_bool(wt, hf.mpa_d, oa, w2);
  add_uint(wt, hf.mpa_ord, oa, w2);
}
proto_item* add_bytes(proto_tree* t, int hf_id, At a, const std::uint8_t* data, std::size_t n) {
  return proto_tree_add_bytes(t, hf_id, a.tvb, a.off, a.len, n ? data : nullptr);
}
proto_item* generated(proto_item* pi) {
  proto_item_set_generated(pi);
  return pi;
}

// A finding's verdict as the plugin shows it (fields iwarp.mpa.finding.verdict, .rfc_verdict,
// .matching_profiles and the expert info's tail), made in the packet's pool: the strings of core
// die before any Wireshark call, which may longjmp.
struct VerdictText {
  const char* profile = "rfc";
  const char* verdict = nullptr;      // the profile's Data Sink; nullptr: no rule a sink answers
  const char* rfc_verdict = nullptr;  // RFC's, where it differs
  const char* matching = nullptr;     // a peer's Terminate: the profiles that predicted it
  bool matches_profile = false;
  const char* expert_tail = "";  // " [siw sink: ...; RFC: ...]"
};

VerdictText verdict_text(const Finding& f, SinkProfile profile, wmem_allocator_t* pool) {
  VerdictText v;
  const std::string_view pname = to_string(profile);
  v.profile = pname == "siw" ? "siw" : "rfc";
  std::string verdict, rfc, matching, tail;
  if (f.id == FindingId::rdmap_terminate) {
    if (f.matches) {
      for (const SinkProfile p : {SinkProfile::rfc, SinkProfile::siw})
        if (*f.matches & (1u << static_cast<unsigned>(p)))
          matching += (matching.empty() ? "" : ",") + std::string(to_string(p));
      v.matches_profile = (*f.matches & (1u << static_cast<unsigned>(profile))) != 0;
      tail = " [" + std::string(pname) + " sink" +
             (v.matches_profile ? " predicted this Terminate"
                                : " predicted another answer; matches: " +
                                      (matching.empty() ? std::string("no profile") : matching)) +
             "]";
      if (matching.empty()) matching = "none";
    }
  } else if (f.outcome) {
    verdict = *f.outcome == SinkOutcome::terminate && f.terminate
                  ? "Terminate " + terminate_error_name(*f.terminate)
                  : "no Terminate: " + std::string(to_string(*f.outcome));
  } else if (f.terminate) {
    verdict = "Terminate " + terminate_error_name(*f.terminate);
  }
  if (f.rfc_terminate) rfc = "Terminate " + terminate_error_name(*f.rfc_terminate);
  if (!verdict.empty())
    tail = " [" + std::string(pname) + " sink: " + verdict + (rfc.empty() ? "" : "; RFC: " + rfc) +
           "]";
  if (!verdict.empty()) v.verdict = wmem_strdup(pool, verdict.c_str());
  if (!rfc.empty()) v.rfc_verdict = wmem_strdup(pool, rfc.c_str());
  if (!matching.empty()) v.matching = wmem_strdup(pool, matching.c_str());
  v.expert_tail = wmem_strdup(pool, tail.c_str());
  return v;
}

void draw_verdict(proto_tree* ft, const VerdictText& v) {
  if (v.verdict == nullptr && v.matching == nullptr) return;
  generated(proto_tree_add_string(ft, hf.an_finding_profile, nullptr, 0, 0, v.profile));
  if (v.verdict != nullptr)
    generated(proto_tree_add_string(ft, hf.an_finding_verdict, nullptr, 0, 0, v.verdict));
  if (v.rfc_verdict != nullptr)
    generated(proto_tree_add_string(ft, hf.an_finding_rfc_verdict, nullptr, 0, 0, v.rfc_verdict));
  if (v.matching != nullptr) {
    generated(proto_tree_add_boolean(ft, hf.an_finding_matches, nullptr, 0, 0, v.matches_profile));
    generated(proto_tree_add_string(ft, hf.an_finding_matching, nullptr, 0, 0, v.matching));
  }
}

tvbuff_t* child_tvb(const DrawContext& ctx, packet_info* pinfo, const Bytes& bytes,
                    const char* name) {
  if (bytes.empty()) return nullptr;
  tvbuff_t* t =
      tvb_new_child_real_data(ctx.frame_tvb, bytes.data(), static_cast<guint>(bytes.size()),
                              static_cast<gint>(bytes.size()));
  add_new_data_source(pinfo, t, name);
  return t;
}

void draw_reqrep(proto_tree* mt, tvbuff_t* tvb, const wire::MpaReqRep& r) {
  namespace field = wire::mpa_reqrep_field;
  // The keys are string literals: NUL-terminated, as proto_tree_add_string wants.
  const At ka = at(tvb, 0, field::key);
  proto_tree_add_string(
      mt, hf.mpa_key, ka.tvb, ka.off, ka.len,
      (r.kind == wire::MpaFrameKind::request ? wire::kMpaRequestKey : wire::kMpaReplyKey).data());
  const std::uint8_t flags = r.flags_byte();
  const At fa = at(tvb, 0, field::flags);
  proto_item* fi = add_uint(mt, hf.mpa_flags, fa, flags);
  proto_tree* ft = proto_item_add_subtree(fi, ett.mpa_flags);
  add_bool(ft, hf.mpa_flag_m, fa, flags);
  add_bool(ft, hf.mpa_flag_c, fa, flags);
  add_bool(ft, hf.mpa_flag_r, fa, flags);
  add_bool(ft, hf.mpa_flag_enhanced, fa, flags);
  add_uint(ft, hf.mpa_flag_reserved, fa, flags);
  add_uint(mt, hf.mpa_rev, at(tvb, 0, field::revision), r.revision);
  add_uint(mt, hf.mpa_pd_length, at(tvb, 0, field::pd_length),
           static_cast<std::uint32_t>(r.private_data.size()));
  if (r.private_data.empty()) return;
  const std::size_t pd = field::private_data;
  add_bytes(mt, hf.mpa_private_data, at(tvb, pd, r.private_data.size()), r.private_data.data(),
            r.private_data.size());
  if (r.enhanced_pd) {
    const wire::MpaEnhancedPd& e = *r.enhanced_pd;
    draw_enhanced_pd(mt, tvb, pd, e);
    const ByteView ulp = r.ulp_private_data();
    if (!ulp.empty()) {
      add_bytes(mt, hf.mpa_ulp_private_data, at(tvb, pd + wire::MpaEnhancedPd::kSize, ulp.size()),
                ulp.data(), ulp.size());
    }
  }
}

void draw_ddp_header_fields(proto_tree* t, tvbuff_t* tvb, std::size_t base,
                            const wire::DdpHeader& h, bool quoted) {
  namespace field = wire::ddp_field;
  const std::uint8_t ctl = h.control.byte();
  const At ca = at(tvb, base, field::control);
  proto_item* ci = add_uint(t, quoted ? hf.term_ddp_control : hf.ddp_control, ca, ctl);
  proto_tree* ct = proto_item_add_subtree(ci, quoted ? ett.term_ddp_control : ett.ddp_control);
  add_bool(ct, quoted ? hf.term_ddp_t : hf.ddp_t, ca, ctl);
  add_bool(ct, quoted ? hf.term_ddp_l : hf.ddp_l, ca, ctl);
  add_uint(ct, quoted ? hf.term_ddp_rsvd : hf.ddp_rsvd, ca, ctl);
  add_uint(ct, quoted ? hf.term_ddp_dv : hf.ddp_dv, ca, ctl);
  if (quoted) add_uint(t, hf.term_ddp_rsvdulp, at(tvb, base, field::rsvd_ulp), h.rsvd_ulp0);
  if (h.control.tagged) {
    add_uint(t, quoted ? hf.term_ddp_stag : hf.ddp_stag, at(tvb, base, field::stag), h.stag);
    add_u64(t, quoted ? hf.term_ddp_to : hf.ddp_to, at(tvb, base, field::to), h.to);
  } else {
    if (!quoted) add_uint(t, hf.ddp_inval_stag, at(tvb, base, field::rsvd_ulp1), h.rsvd_ulp1);
    add_uint(t, quoted ? hf.term_ddp_qn : hf.ddp_qn, at(tvb, base, field::qn), h.qn);
    add_uint(t, quoted ? hf.term_ddp_msn : hf.ddp_msn, at(tvb, base, field::msn), h.msn);
    add_uint(t, quoted ? hf.term_ddp_mo : hf.ddp_mo, at(tvb, base, field::mo), h.mo);
  }
}

void draw_read_request(proto_tree* t, tvbuff_t* tvb, std::size_t b, const wire::ReadRequest& r,
                       bool quoted) {
  namespace field = wire::read_request_field;
  add_uint(t, quoted ? hf.term_rr_sink_stag : hf.rr_sink_stag, at(tvb, b, field::sink_stag),
           r.sink_stag);
  add_u64(t, quoted ? hf.term_rr_sink_to : hf.rr_sink_to, at(tvb, b, field::sink_to), r.sink_to);
  add_uint(t, quoted ? hf.term_rr_size : hf.rr_size, at(tvb, b, field::size), r.size);
  add_uint(t, quoted ? hf.term_rr_source_stag : hf.rr_source_stag, at(tvb, b, field::source_stag),
           r.source_stag);
  add_u64(t, quoted ? hf.term_rr_source_to : hf.rr_source_to, at(tvb, b, field::source_to),
          r.source_to);
}

void draw_terminate(proto_tree* t, tvbuff_t* tvb, std::size_t b, const PduRecord& p) {
  const PduDetail& d = p.more();
  const wire::Terminate& term = *d.terminate;
  const wire::TerminateControl& c = term.control;
  // The control word as meant, in the RFC layout the fields' masks describe (a siw word is
  // shown as the sender meant it; the layout item says which it was).
  const std::uint32_t word = c.rfc_word();
  const At wa = at(tvb, b, wire::terminate_field::control);
  proto_item* ci = add_uint(t, hf.term_control, wa, word);
  proto_tree* ct = proto_item_add_subtree(ci, ett.term_control);
  add_uint(ct, hf.term_layer, wa, word);
  proto_tree_add_uint_format_value(ct, hf.term_etype, wa.tvb, wa.off, wa.len, word, "%s (0x%x)",
                                   d.term_etype_name.c_str(), c.etype);
  proto_tree_add_uint_format_value(ct, hf.term_code, wa.tvb, wa.off, wa.len, word, "%s (0x%02x)",
                                   d.term_code_name.empty() ? "Unknown" : d.term_code_name.c_str(),
                                   c.code);
  add_bool(ct, hf.term_m, wa, word);
  add_bool(ct, hf.term_d, wa, word);
  add_bool(ct, hf.term_r, wa, word);
  add_uint(ct, hf.term_reserved, wa, word);
  generated(add_uint(ct, hf.term_layout, wa, static_cast<std::uint32_t>(term.layout)));
  generated(proto_tree_add_string(t, hf.term_error, nullptr, 0, 0, d.quoted_term_name.c_str()));
  std::size_t off = b + wire::terminate_field::control.end();
  if (term.ddp_segment_length) {
    const wire::FieldSpan f = wire::terminate_field::ddp_segment_length;
    add_uint(t, hf.term_seg_len, at(tvb, b, f), *term.ddp_segment_length);
    off = b + f.end();
  }
  if (term.ddp_header) {
    const std::size_t n = term.ddp_header->size();
    proto_item* hi =
        proto_tree_add_item(t, hf.term_ddp_header, or_empty(at(tvb, off, n)).tvb,
                            or_empty(at(tvb, off, n)).off, or_empty(at(tvb, off, n)).len, ENC_NA);
    draw_ddp_header_fields(proto_item_add_subtree(hi, ett.term_ddp), tvb, off, *term.ddp_header,
                           true);
    off += n;
  }
  if (!term.rdmap_header.empty()) {
    const std::size_t n = term.rdmap_header.size();
    proto_item* ri =
        add_bytes(t, hf.term_rdmap_header, at(tvb, off, n), term.rdmap_header.data(), n);
    if (term.rdmap_read_request) {
      draw_read_request(proto_item_add_subtree(ri, ett.term_rdmap), tvb, off,
                        *term.rdmap_read_request, true);
    }
  }
  if (p.analysis().quoted_frame) {
    generated(proto_tree_add_uint(t, hf.an_quoted_frame, nullptr, 0, 0,
                                  static_cast<std::uint32_t>(*p.analysis().quoted_frame)));
  }
}

void draw_atomics(proto_tree* t, tvbuff_t* tvb, std::size_t b, const PduRecord& p) {
  const PduDetail& d = p.more();
  if (d.atomic_request) {
    namespace field = wire::atomic_request_field;
    const wire::AtomicRequest& a = *d.atomic_request;
    const std::uint32_t w = a.opcode_word();
    const At wa = at(tvb, b, field::opcode_word);
    add_uint(t, hf.atomic_reserved, wa, w);
    proto_tree_add_uint_format_value(t, hf.atomic_opcode, wa.tvb, wa.off, wa.len, w, "%s (%u)",
                                     wire::atomic_op_name(a.atomic_opcode).data(), a.atomic_opcode);
    add_uint(t, hf.atomic_request_id, at(tvb, b, field::request_id), a.request_id);
    add_uint(t, hf.atomic_remote_stag, at(tvb, b, field::remote_stag), a.remote_stag);
    add_u64(t, hf.atomic_remote_to, at(tvb, b, field::remote_to), a.remote_to);
    add_u64(t, hf.atomic_add_swap_data, at(tvb, b, field::add_swap_data), a.add_swap_data);
    add_u64(t, hf.atomic_add_swap_mask, at(tvb, b, field::add_swap_mask), a.add_swap_mask);
    add_u64(t, hf.atomic_compare_data, at(tvb, b, field::compare_data), a.compare_data);
    add_u64(t, hf.atomic_compare_mask, at(tvb, b, field::compare_mask), a.compare_mask);
  }
  if (d.atomic_response) {
    namespace field = wire::atomic_response_field;
    add_uint(t, hf.atomic_orig_request_id, at(tvb, b, field::request_id),
             d.atomic_response->request_id);
    add_u64(t, hf.atomic_orig_value, at(tvb, b, field::original_value),
            d.atomic_response->original_value);
  }
  if (d.immediate_data) {
    add_u64(t, hf.immediate_data, at(tvb, b, wire::kImmediateDataSize), *d.immediate_data);
  }
}

void draw_segment_analysis(const DrawContext& ctx, proto_tree* dt, const PduRecord& p) {
  const SegmentFacts a = p.analysis();
  proto_tree* at_ = proto_tree_add_subtree(dt, ctx.frame_tvb, 0, 0, ett.ddp_analysis, nullptr,
                                           "[ddpscope analysis]");
  generated(proto_tree_add_boolean(at_, hf.an_placed, nullptr, 0, 0, a.placed));
  if (a.region) {
    generated(proto_tree_add_string(at_, hf.an_region, nullptr, 0, 0,
                                    p.region_text() != nullptr ? p.region_text()->c_str() : ""));
    generated(proto_tree_add_uint(at_, hf.an_region_stag, nullptr, 0, 0, a.region->stag));
    generated(proto_tree_add_uint(at_, hf.an_region_source, nullptr, 0, 0,
                                  static_cast<std::uint32_t>(a.region_source)));
    generated(proto_tree_add_boolean(at_, hf.an_region_bounds_known, nullptr, 0, 0,
                                     a.region_bounds_known));
    generated(
        proto_tree_add_uint64(at_, hf.an_offset_in_region, nullptr, 0, 0, a.offset_in_region));
    generated(proto_tree_add_uint64(at_, hf.an_region_bytes_placed, nullptr, 0, 0,
                                    a.region_bytes_placed));
    if (p.region_ulp() != nullptr)
      generated(
          proto_tree_add_string(at_, hf.an_region_ulp, nullptr, 0, 0, p.region_ulp()->c_str()));
    if (p.region_command() != nullptr) {
      generated(proto_tree_add_string(at_, hf.an_region_command, nullptr, 0, 0,
                                      p.region_command()->c_str()));
    }
  }
  if (a.expected_msn) {
    generated(proto_tree_add_uint(at_, hf.an_expected_msn, nullptr, 0, 0, *a.expected_msn));
  }
  const auto& messages = ctx.state->model().messages;
  if (a.message && *a.message < messages.size()) {
    const MessageRecord& m = messages[*a.message];
    generated(proto_tree_add_uint(at_, hf.an_message, nullptr, 0, 0,
                                  static_cast<std::uint32_t>(*a.message)));
    if (m.placed_frame != 0) {
      generated(proto_tree_add_uint(at_, hf.an_placed_in, nullptr, 0, 0,
                                    static_cast<std::uint32_t>(m.placed_frame)));
    }
    if (m.delivered_frame != 0) {
      generated(proto_tree_add_uint(at_, hf.an_delivered_in, nullptr, 0, 0,
                                    static_cast<std::uint32_t>(m.delivered_frame)));
    }
  }
  for (std::size_t m : p.messages_completed()) {
    generated(proto_tree_add_uint(at_, hf.an_completes_message, nullptr, 0, 0,
                                  static_cast<std::uint32_t>(m)));
  }
  for (std::size_t m : p.messages_delivered()) {
    generated(proto_tree_add_uint(at_, hf.an_delivers_message, nullptr, 0, 0,
                                  static_cast<std::uint32_t>(m)));
  }
}

void draw_rdmap_links(proto_tree* rt, const PduRecord& p) {
  const PduDetail& d = p.more();
  const SegmentFacts a = p.analysis();
  if (a.request_frame) {
    generated(proto_tree_add_uint(rt, hf.an_request_in, nullptr, 0, 0,
                                  static_cast<std::uint32_t>(*a.request_frame)));
  }
  if (a.response_time_ns) {
    nstime_t ns;
    ns.secs = static_cast<time_t>(*a.response_time_ns / 1000000000);
    ns.nsecs = static_cast<int>(*a.response_time_ns % 1000000000);
    generated(proto_tree_add_time(rt, hf.an_response_time, nullptr, 0, 0, &ns));
  }
  if (d.response_frame) {
    generated(proto_tree_add_uint(rt, hf.an_response_in, nullptr, 0, 0,
                                  static_cast<std::uint32_t>(*d.response_frame)));
  }
}

nstime_t to_nstime(std::uint64_t ns) {
  nstime_t t;
  t.secs = static_cast<time_t>(ns / 1000000000);
  t.nsecs = static_cast<int>(ns % 1000000000);
  return t;
}

// Operation response times (issue 42), as core's timing model paired and timed them: on the
// answering PDU the latency and the request's frame; on the request the answer's frame.
void draw_operations(const DrawContext& ctx, proto_tree* rt, const PduRecord& p) {
  bool read_request_drawn = false;
  for (std::uint32_t i : p.operations()) {
    const OperationRecord& o = ctx.state->operation(i);
    const nstime_t t = to_nstime(o.ns);
    const auto req = static_cast<std::uint32_t>(o.request_frame);
    switch (o.kind) {
      case OpKind::rdma_read:
      case OpKind::rdma_read_first:
        generated(proto_tree_add_time(
            rt, o.kind == OpKind::rdma_read ? hf.op_read_rtt : hf.op_read_first_rtt, nullptr, 0, 0,
            &t));
        if (!read_request_drawn)
          generated(proto_tree_add_uint(rt, hf.op_read_request_in, nullptr, 0, 0, req));
        read_request_drawn = true;
        break;
      case OpKind::atomic:
        generated(proto_tree_add_time(rt, hf.op_atomic_time, nullptr, 0, 0, &t));
        generated(proto_tree_add_uint(rt, hf.op_atomic_request_in, nullptr, 0, 0, req));
        break;
      default: {
        // to_string(OpKind) names are string literals: NUL-terminated.
        generated(
            proto_tree_add_string(rt, hf.op_ulp_kind, nullptr, 0, 0, to_string(o.kind).data()));
        if (o.operation)
          generated(
              proto_tree_add_string(rt, hf.op_ulp_operation, nullptr, 0, 0, o.operation->c_str()));
        if (o.command)
          generated(
              proto_tree_add_string(rt, hf.op_ulp_command, nullptr, 0, 0, o.command->c_str()));
        generated(proto_tree_add_time(rt, hf.op_ulp_latency, nullptr, 0, 0, &t));
        generated(proto_tree_add_uint(rt, hf.op_ulp_request_in, nullptr, 0, 0, req));
        break;
      }
    }
  }
  for (std::uint32_t i : p.more().answered_by) {
    const OperationRecord& o = ctx.state->operation(i);
    int field = hf.op_ulp_response_in;
    if (o.kind == OpKind::rdma_read) field = hf.op_read_response_in;
    if (o.kind == OpKind::rdma_read_first) field = hf.op_read_first_response_in;
    if (o.kind == OpKind::atomic) field = hf.op_atomic_response_in;
    generated(proto_tree_add_uint(rt, field, nullptr, 0, 0,
                                  static_cast<std::uint32_t>(o.response_frame)));
  }
}

// Hands a Send payload to the heuristics registered on "iwarp_ddp_rdmap" (SMB Direct,
// RPC-over-RDMA), as Wireshark's own DDP/RDMAP dissector does. A heuristic that throws on a
// payload it does not understand must not turn the frame into a malformed one.
void call_upper(const DrawContext& ctx, tvbuff_t* payload, packet_info* pinfo, proto_tree* tree,
                rdmap_info_t* info) {
  volatile gboolean done = FALSE;
  if (ctx.upper_heuristics != nullptr) {
    TRY {
      heur_dtbl_entry_t* entry = nullptr;
      done = dissector_try_heuristic(ctx.upper_heuristics, payload, pinfo, tree, &entry, info);
    }
    CATCH_NONFATAL_ERRORS {
      done = FALSE;
    }
    ENDTRY;
  }
  if (!done && ctx.data_handle != nullptr) call_dissector(ctx.data_handle, payload, pinfo, tree);
}

proto_item* draw_ddp_rdmap(const DrawContext& ctx, const PduRecord& p, const char* info,
                           tvbuff_t* ulpdu, packet_info* pinfo, proto_tree* tree);

proto_item* draw_fpdu(const DrawContext& ctx, const PduRecord& p, const char* info,
                      tvbuff_t* pdu_tvb, packet_info* pinfo, proto_tree* tree, proto_tree* mt) {
  const PduDetail& d = p.more();
  // The FPDU without markers: the real octets when there were none.
  tvbuff_t* fpdu_tvb = pdu_tvb;
  if (!d.fpdu.empty()) {
    proto_tree_add_boolean(mt, hf.mpa_leading_marker, nullptr, 0, 0, d.leading_marker);
    for (std::size_t i = 0; i < d.markers.size() && i < d.marker_offsets.size(); ++i) {
      const At a = or_empty(at(pdu_tvb, d.marker_offsets[i], wire::kMpaMarkerSize));
      proto_item* mi = proto_tree_add_item(mt, hf.mpa_marker, a.tvb, a.off, a.len, ENC_NA);
      proto_tree* mk = proto_item_add_subtree(mi, ett.mpa_marker);
      add_uint(mk, hf.mpa_marker_reserved,
               at(pdu_tvb, d.marker_offsets[i], wire::marker_field::reserved),
               d.markers[i].reserved);
      add_uint(mk, hf.mpa_marker_fpduptr,
               at(pdu_tvb, d.marker_offsets[i], wire::marker_field::fpduptr), d.markers[i].fpduptr);
      generated(proto_tree_add_uint64(mk, hf.mpa_marker_position, nullptr, 0, 0,
                                      d.markers[i].stream_pos));
    }
    fpdu_tvb = child_tvb(ctx, pinfo, d.fpdu, "FPDU without markers");
  }
  const std::size_t total = p.fpdu_size();
  add_uint(mt, hf.mpa_ulpdu_length, at(fpdu_tvb, 0, wire::fpdu_field::ulpdu_length),
           p.ulpdu_length);
  const std::size_t pad = wire::fpdu_pad(p.ulpdu_length);
  const std::size_t pad_off = wire::fpdu_pad_offset(p.ulpdu_length);
  if (pad != 0 && pad_off + pad <= total) {
    const At a = at(fpdu_tvb, pad_off, pad);
    if (a.tvb != nullptr) proto_tree_add_item(mt, hf.mpa_pad, a.tvb, a.off, a.len, ENC_NA);
  }
  generated(
      proto_tree_add_boolean(mt, hf.mpa_crc_in_use, nullptr, 0, 0, p.crc_expected().has_value()));
  const std::size_t crc_off = wire::fpdu_crc_offset(p.ulpdu_length);
  if (crc_off + wire::kMpaCrcSize <= total &&
      at(fpdu_tvb, crc_off, wire::kMpaCrcSize).tvb != nullptr) {
    proto_tree_add_checksum(mt, fpdu_tvb, static_cast<guint>(crc_off), hf.mpa_crc,
                            hf.mpa_crc_status, nullptr, pinfo, p.crc_expected().value_or(0),
                            ENC_LITTLE_ENDIAN,
                            p.crc_expected() ? PROTO_CHECKSUM_VERIFY : PROTO_CHECKSUM_NO_FLAGS);
  } else {
    add_uint(mt, hf.mpa_crc, at(nullptr, 0, 0), p.crc_field);
  }
  if (d.framing_resumed) {
    // Not carried over from the FPDU before: the framer searched for this boundary.
    proto_item* ri =
        generated(proto_tree_add_boolean(mt, hf.mpa_framing_resumed, nullptr, 0, 0, TRUE));
    proto_item_append_text(ri, d.resumed_after_gap
                                   ? " (framing resumed after capture loss: this FPDU boundary "
                                     "was found by a search, not from the FPDU before)"
                                   : " (this FPDU boundary was found by a search, not from the "
                                     "FPDU before)");
    generated(proto_tree_add_uint64(mt, hf.mpa_resync_skipped, nullptr, 0, 0, d.resync_skipped));
  }
  if (!p.ddp()) return nullptr;
  const std::size_t ulpdu_off = wire::fpdu_field::ulpdu;
  tvbuff_t* ulpdu =
      at(fpdu_tvb, ulpdu_off, p.ulpdu_length).tvb != nullptr
          ? tvb_new_subset_length(fpdu_tvb, static_cast<gint>(ulpdu_off), p.ulpdu_length)
          : nullptr;
  return draw_ddp_rdmap(ctx, p, info, ulpdu, pinfo, tree);
}

// The DDP segment and its RDMAP message from the ULPDU's octets, the same over both LLPs (an
// MPA FPDU's ULPDU, or one SCTP user message on PPID 16). `info`: describe_pdu's text.
proto_item* draw_ddp_rdmap(const DrawContext& ctx, const PduRecord& p, const char* info,
                           tvbuff_t* ulpdu, packet_info* pinfo, proto_tree* tree) {
  // DDP (RFC 5041 §4)
  const wire::DdpHeader h = *p.ddp();
  const std::size_t hs = h.size();
  const At da = or_empty(at(ulpdu, 0, hs));
  proto_item* di = proto_tree_add_item(tree, proto.ddp, da.tvb, da.off, da.len, ENC_NA);
  proto_item_append_text(di, h.control.tagged ? ", Tagged" : ", Untagged");
  if (p.not_placed()) proto_item_append_text(di, ", not placed (MPA CRC mismatch)");
  proto_tree* dt = proto_item_add_subtree(di, ett.ddp);
  draw_ddp_header_fields(dt, ulpdu, 0, h, false);
  generated(proto_tree_add_uint(dt, hf.ddp_payload_length, nullptr, 0, 0,
                                static_cast<std::uint32_t>(p.payload_size)));
  if (p.not_placed()) {
    // The header as received: the CRC says some octet is wrong, and the sink drops the whole
    // FPDU (RFC 5044 §8), so no placement, region or message analysis exists for it.
    generated(proto_tree_add_string(dt, hf.an_not_placed, nullptr, 0, 0,
                                    "MPA CRC mismatch: the Data Sink drops the FPDU (RFC 5044 "
                                    "§8); header as received, not analysed"));
    generated(proto_tree_add_boolean(dt, hf.an_placed, nullptr, 0, 0, FALSE));
  } else if (p.held_missing() == 0) {  // a held FPDU's analysis is core's, where TCP delivers it
    draw_segment_analysis(ctx, dt, p);
  }

  // RDMAP (RFC 5040 §4, RFC 7306)
  // RDMAP's header starts in DDP's first RsvdULP octet (RFC 5040 §4.2).
  const std::uint8_t rctl = h.rsvd_ulp0;
  const std::uint8_t op = wire::RdmapControl::from_byte(rctl).opcode;
  const wire::FieldSpan rf = wire::ddp_field::rsvd_ulp;
  const At ra = at(ulpdu, 0, rf);
  const At rall =
      or_empty(at(ulpdu, rf.offset, p.ulpdu_length > rf.offset ? p.ulpdu_length - rf.offset : 0u));
  proto_item* ri = proto_tree_add_item(tree, proto.rdmap, rall.tvb, rall.off, rall.len, ENC_NA);
  proto_item_append_text(ri, ", %s", info);
  proto_tree* rt = proto_item_add_subtree(ri, ett.rdmap);
  proto_item* rci = add_uint(rt, hf.rdmap_control, ra, rctl);
  proto_tree* rct = proto_item_add_subtree(rci, ett.rdmap_control);
  add_uint(rct, hf.rdmap_rv, ra, rctl);
  add_uint(rct, hf.rdmap_rsv, ra, rctl);
  add_uint(rct, hf.rdmap_opcode, ra, rctl);
  const PduDetail& d = p.more();
  if (d.read_request) draw_read_request(rt, ulpdu, hs, *d.read_request, false);
  if (d.terminate) draw_terminate(rt, ulpdu, hs, p);
  draw_atomics(rt, ulpdu, hs, p);
  draw_rdmap_links(rt, p);
  draw_operations(ctx, rt, p);

  if (p.payload_size != 0 && !d.read_request && !d.terminate && !d.atomic_request &&
      !d.atomic_response && !d.immediate_data) {
    const At pa = at(ulpdu, hs, p.payload_size);
    if (pa.tvb == nullptr) return ri;
    tvbuff_t* payload = tvb_new_subset_length(ulpdu, hs, static_cast<gint>(p.payload_size));
    // Only Sends core could place go up (a Data Sink delivers nothing else to its ULP), and
    // only the segment that starts the message (MO 0), which holds the ULP's header.
    if (!h.control.tagged && wire::opcode_is_send_family(op) && p.analysis().placed && h.mo == 0) {
      rdmap_info_t* info = wmem_new0(pinfo->pool, rdmap_info_t);
      info->opcode = op;
      info->last_flag = h.control.last;
      info->is_tagged = FALSE;
      info->queue_number = h.qn;
      info->message_seq_num = h.msn;
      info->message_offset = h.mo;
      // Called after everything of ours is drawn: an upper layer's exception must not cut
      // our tree or expert infos short.
      UpperCall* call = wmem_new0(pinfo->pool, UpperCall);
      call->payload = payload;
      call->info = info;
      wmem_list_append(pending_upper, call);
    } else {
      proto_tree_add_item(dt, hf.ddp_payload, payload, 0, -1, ENC_NA);
    }
  }
  return ri;
}

// The PDU's octets in this frame's own TCP payload, when it holds all of them (one slice, in
// the frame drawn now, as long as the PDU): no copy needed. Null otherwise.
tvbuff_t* frame_pdu_tvb(const DrawContext& ctx, const PduRecord& p) {
  if (p.reassembled() || ctx.payload_tvb == nullptr) return nullptr;
  const FrameSlice& s = p.slices().front();
  if (s.length != p.raw_size) return nullptr;
  const At a = at(ctx.payload_tvb, s.offset, s.length);
  return a.tvb != nullptr ? tvb_new_subset_length(ctx.payload_tvb, a.off, a.len) : nullptr;
}

// The PDU's raw octets: the stored copy, or else from pdu_tvb (the frame's own payload).
const std::uint8_t* raw_octets(const PduRecord& p, tvbuff_t* pdu_tvb) {
  if (p.raw_stored()) return p.raw().data();
  if (at(pdu_tvb, 0, p.raw_size).tvb == nullptr) return nullptr;
  return tvb_get_ptr(pdu_tvb, 0, static_cast<gint>(p.raw_size));
}

// Draws one PDU completed in this frame (`info`: describe_pdu's text); returns the item
// findings attach to.
proto_item* draw_pdu(const DrawContext& ctx, const PduRecord& p, const char* info,
                     packet_info* pinfo, proto_tree* tree) {
  tvbuff_t* pdu_tvb = frame_pdu_tvb(ctx, p);
  if (p.sctp()) {
    // RFC 5043 §5.2.1: the user message is the DDP-SSN and the DDP segment, no MPA framing.
    if (pdu_tvb == nullptr && p.raw_stored())
      pdu_tvb = child_tvb(ctx, pinfo, p.raw(), "DDP-SSN and DDP segment (SCTP user message)");
    tvbuff_t* segment_tvb = nullptr;
    const At ssn_at = at(pdu_tvb, 0, wire::kDdpSsnSize);
    const std::uint8_t* raw = raw_octets(p, pdu_tvb);
    // Core's codec reads the DDP-SSN (the plugin parses no octets itself).
    const auto msg = raw != nullptr ? wire::decode_ddp_sctp_message(ByteView(raw, p.raw_size))
                                    : wire::decode_ddp_sctp_message(ByteView());
    if (ssn_at.tvb != nullptr && msg) {
      proto_item* si =
          proto_tree_add_item(tree, proto.sctp_session, ssn_at.tvb, ssn_at.off, ssn_at.len, ENC_NA);
      const std::uint16_t ssn = msg->ddp_ssn;
      proto_item_append_text(si, ", DDP-SSN %u", ssn);
      add_uint(proto_item_add_subtree(si, ett.sctp_session), hf.ss_ddp_ssn, ssn_at, ssn);
      segment_tvb = tvb_new_subset_remaining(pdu_tvb, static_cast<gint>(wire::kDdpSsnSize));
    }
    if (!p.ddp()) {
      const At a = segment_tvb != nullptr ? At{segment_tvb, 0, -1} : At{ctx.frame_tvb, 0, 0};
      proto_item* di = proto_tree_add_item(tree, proto.ddp, a.tvb, a.off, a.len, ENC_NA);
      proto_item_append_text(di, ", %s", info);
      return di;
    }
    proto_item* ri = draw_ddp_rdmap(ctx, p, info, segment_tvb, pinfo, tree);
    // As for FPDUs: a message held behind a TSN hole (reordering, loss) that a later frame let
    // go, or one flushed at the end, is drawn in its own last frame and says so.
    if (p.end_of_capture()) {
      generated(proto_tree_add_boolean(tree, hf.an_pdu_end_of_capture, nullptr, 0, 0, TRUE));
    }
    if (p.released_frame() != 0) {
      generated(proto_tree_add_uint(tree, hf.an_pdu_released_in, nullptr, 0, 0,
                                    static_cast<std::uint32_t>(p.released_frame())));
    }
    return ri;
  }
  if (pdu_tvb == nullptr && p.raw_stored()) {
    pdu_tvb = child_tvb(ctx, pinfo, p.raw(),
                        p.kind == PduKind::fpdu ? "Reassembled FPDU" : "Reassembled MPA octets");
  }
  const At ma = pdu_tvb != nullptr ? At{pdu_tvb, 0, -1} : At{ctx.frame_tvb, 0, 0};
  proto_item* mi = proto_tree_add_item(tree, proto.mpa, ma.tvb, ma.off, ma.len, ENC_NA);
  proto_item_append_text(mi, ", %s", info);
  proto_tree* mt = proto_item_add_subtree(mi, ett.mpa);
  generated(proto_tree_add_uint(mt, hf.mpa_stream, nullptr, 0, 0, p.stream));
  generated(proto_tree_add_uint(mt, hf.mpa_direction, nullptr, 0, 0,
                                static_cast<std::uint32_t>(p.direction)));
  generated(proto_tree_add_uint64(mt, hf.mpa_stream_offset, nullptr, 0, 0, p.stream_offset));
  if (p.end_of_capture()) {
    generated(proto_tree_add_boolean(mt, hf.an_pdu_end_of_capture, nullptr, 0, 0, TRUE));
  }
  if (p.released_frame() != 0) {
    generated(proto_tree_add_uint(mt, hf.an_pdu_released_in, nullptr, 0, 0,
                                  static_cast<std::uint32_t>(p.released_frame())));
  }
  if (p.held_missing() != 0) {
    proto_item* hi = generated(
        proto_tree_add_uint64(mt, hf.an_pdu_held_behind, nullptr, 0, 0, p.held_missing()));
    proto_item_append_text(hi,
                           " (TCP holds this segment: decoded from it alone, not analysed "
                           "until TCP delivers it)");
  }
  generated(proto_tree_add_uint(mt, hf.mpa_fpdu_length, nullptr, 0, 0,
                                static_cast<std::uint32_t>(p.raw_size)));
  if (p.reassembled()) {
    proto_tree* ft =
        proto_tree_add_subtree_format(mt, ctx.frame_tvb, 0, 0, ett.mpa_fragments, nullptr,
                                      "[%u slices]", static_cast<unsigned>(p.slices().size()));
    for (const FrameSlice& s : p.slices()) {
      proto_item* fi = proto_tree_add_uint_format_value(
          ft, hf.mpa_fragment, nullptr, 0, 0, static_cast<std::uint32_t>(s.frame),
          "%u, %u octets at payload offset %u", static_cast<unsigned>(s.frame), s.length, s.offset);
      proto_item_set_generated(fi);
    }
    generated(proto_tree_add_uint(mt, hf.mpa_reassembled_length, nullptr, 0, 0,
                                  static_cast<std::uint32_t>(p.raw_size)));
  }
  switch (p.kind) {
    case PduKind::mpa_request:
    case PduKind::mpa_reply:
      if (p.more().reqrep) draw_reqrep(mt, pdu_tvb, *p.more().reqrep);
      return mi;
    case PduKind::unframed:
      add_bytes(mt, hf.mpa_unframed, at(pdu_tvb, 0, p.raw_size), raw_octets(p, pdu_tvb),
                p.raw_size);
      return mi;
    case PduKind::fpdu:
      break;
  }
  proto_item* last = draw_fpdu(ctx, p, info, pdu_tvb, pinfo, tree, mt);
  return last != nullptr ? last : mi;
}

proto_item* draw_continuation(const DrawContext& ctx, const PduRecord& p, std::uint64_t frame,
                              proto_tree* tree) {
  std::size_t raw_off = 0;
  for (const FrameSlice& s : p.slices()) {
    if (s.frame == frame) {
      At a = at(ctx.payload_tvb, s.offset, s.length);
      if (a.tvb == nullptr) a = {ctx.frame_tvb, 0, 0};
      proto_item* ci = proto_tree_add_item(tree, proto.mpa, a.tvb, a.off, a.len, ENC_NA);
      char info[pdu_info_size];
      describe_pdu(p, info, sizeof info);
      proto_item_append_text(ci, ", continuation: octets %u-%u of %u of %s", unsigned(raw_off),
                             unsigned(raw_off + s.length), unsigned(p.raw_size), info);
      proto_tree* ct = proto_item_add_subtree(ci, ett.mpa);
      generated(proto_tree_add_uint(ct, hf.mpa_continuation, nullptr, 0, 0,
                                    static_cast<std::uint32_t>(p.completed_frame())));
      generated(proto_tree_add_uint(ct, hf.mpa_stream, nullptr, 0, 0, p.stream));
      return ci;
    }
    raw_off += s.length;
  }
  return nullptr;
}

bool pdu_has_finding(const PduRecord& p, std::size_t f) {
  for (std::size_t x : p.findings()) {
    if (x == f) return true;
  }
  return false;
}

}  // namespace

void draw_frame(const DrawContext& ctx, const FrameRecord& rec, packet_info* pinfo,
                proto_tree* tree) {
  const std::size_t npdu = rec.pdus_complete.size() + rec.pdus_continued().size();
  // FPDUs TCP held when this frame came are drawn where core completed no PDU: a one-pass run
  // (core has not delivered them yet), or a revisit of a frame whose octets core framed only as
  // part of a PDU completed elsewhere (a reordered segment's continuation).
  const bool held = rec.pdus_complete.empty() && !rec.pdus_held().empty();
  // Findings this frame made known for frames printed before it: only where they were not
  // shown on their own frame, Wireshark's first visit (the output of a one-pass run).
  const bool learnt = ctx.first_visit && !rec.findings_learnt().empty();
  if (npdu == 0 && rec.findings().empty() && !held && !learnt) return;
  fallback_tvb = ctx.frame_tvb;
  pending_upper = wmem_list_new(pinfo->pool);
  col_set_str(pinfo->cinfo, COL_PROTOCOL, "iWARP");
  // The info column: the PDUs completed here, or the one this frame continues.
  // Nobody reads the text without a tree or columns (tshark -q): not built then.
  const bool text_read = tree != nullptr || pinfo->cinfo != nullptr;
  char info[pdu_info_size] = "";
  if (text_read && held && rec.pdus_continued().empty()) {
    for (std::uint32_t idx : rec.pdus_held()) {
      describe_pdu(ctx.state->pdu(idx), info, sizeof info);
      if (idx == rec.pdus_held().front())
        col_add_str(pinfo->cinfo, COL_INFO, info);
      else
        col_append_sep_str(pinfo->cinfo, COL_INFO, ", ", info);
    }
  }
  if (text_read && rec.pdus_complete.empty() && !rec.pdus_continued().empty()) {
    const PduRecord& p = ctx.state->pdu(rec.pdus_continued().front());
    describe_pdu(p, info, sizeof info);
    col_add_fstr(pinfo->cinfo, COL_INFO, "[continuation of %s, completed in frame %u]", info,
                 static_cast<unsigned>(p.completed_frame()));
  }

  // Items findings attach to, parallel to the PDU list (complete ones first).
  auto* items = static_cast<proto_item**>(wmem_alloc0(pinfo->pool, (npdu + 1) * sizeof(void*)));
  std::size_t k = 0;
  // PDUs not stored are drawn from this frame's TCP payload: as found on this visit, or where
  // the first pass found it in the frame's tvb.
  DrawContext pctx = ctx;
  if (pctx.payload_tvb == nullptr && rec.payload_length != 0) {
    pctx.payload_tvb =
        at(ctx.frame_tvb, rec.payload_offset, rec.payload_length).tvb != nullptr
            ? tvb_new_subset_length(ctx.frame_tvb, static_cast<gint>(rec.payload_offset),
                                    static_cast<gint>(rec.payload_length))
            : nullptr;
  }
  for (std::uint32_t idx : rec.pdus_complete) {
    const PduRecord& p = ctx.state->pdu(idx);
    if (text_read) describe_pdu(p, info, sizeof info);
    if (k == 0) {
      col_add_str(pinfo->cinfo, COL_INFO, info);
    } else {
      col_append_str(pinfo->cinfo, COL_INFO, ", ");
      col_append_str(pinfo->cinfo, COL_INFO, info);
    }
    items[k++] = draw_pdu(pctx, p, info, pinfo, tree);
  }
  for (std::uint32_t idx : rec.pdus_continued()) {
    items[k++] = draw_continuation(ctx, ctx.state->pdu(idx), pinfo->num, tree);
  }
  if (held) {
    for (std::uint32_t idx : rec.pdus_held()) {
      const PduRecord& p = ctx.state->pdu(idx);
      if (text_read) describe_pdu(p, info, sizeof info);
      draw_pdu(pctx, p, info, pinfo, tree);
    }
  }

  const auto& findings = ctx.state->model().findings;
  const SinkProfile profile = ctx.state->model().sink_profile.value_or(SinkProfile::rfc);
  proto_item* frame_item = nullptr;
  for (std::size_t f : rec.findings()) {
    if (f >= findings.size()) continue;
    const Finding& finding = findings[f];
    proto_item* target = nullptr;
    for (std::size_t i = 0; i < npdu && target == nullptr; ++i) {
      const std::uint32_t idx = i < rec.pdus_complete.size()
                                    ? rec.pdus_complete[i]
                                    : rec.pdus_continued()[i - rec.pdus_complete.size()];
      if (pdu_has_finding(ctx.state->pdu(idx), f)) target = items[i];
    }
    if (target == nullptr) {
      if (frame_item == nullptr) {
        frame_item = proto_tree_add_item(tree, proto.mpa, ctx.frame_tvb, 0, 0, ENC_NA);
        proto_item_append_text(frame_item, ", ddpscope analysis");
      }
      target = frame_item;
    }
    proto_tree* ft = proto_item_add_subtree(target, ett.analysis);
    generated(proto_tree_add_string(ft, hf.an_finding, nullptr, 0, 0, finding.code().data()));
    const std::uint64_t reported = ctx.state->finding_reported_in(f);
    const char* when = "";
    if (reported == 0) {
      generated(proto_tree_add_boolean(ft, hf.an_finding_end_of_capture, nullptr, 0, 0, TRUE));
      when = " (reported at the end of the capture)";
    } else if (reported != finding.frame) {
      generated(proto_tree_add_uint(ft, hf.an_finding_reported_in, nullptr, 0, 0,
                                    static_cast<std::uint32_t>(reported)));
      when = wmem_strdup_printf(pinfo->pool, " (reported in frame %u)",
                                static_cast<unsigned>(reported));
    }
    const VerdictText verdict = verdict_text(finding, profile, pinfo->pool);
    draw_verdict(ft, verdict);
    expert_add_info_format(pinfo, target, finding_expert(finding.id, finding.consequence_of),
                           "[%s] %s%s%s", finding.code().data(), finding.message.c_str(),
                           verdict.expert_tail, when);
  }
  if (learnt) {
    for (std::size_t f : rec.findings_learnt()) {
      if (f >= findings.size()) continue;
      const Finding& finding = findings[f];
      if (frame_item == nullptr) {
        frame_item = proto_tree_add_item(tree, proto.mpa, ctx.frame_tvb, 0, 0, ENC_NA);
        proto_item_append_text(frame_item, ", ddpscope analysis");
      }
      proto_tree* ft = proto_item_add_subtree(frame_item, ett.analysis);
      generated(proto_tree_add_string(ft, hf.an_finding, nullptr, 0, 0, finding.code().data()));
      generated(proto_tree_add_uint(ft, hf.an_finding_learnt_from, nullptr, 0, 0,
                                    static_cast<std::uint32_t>(finding.frame)));
      const VerdictText verdict = verdict_text(finding, profile, pinfo->pool);
      draw_verdict(ft, verdict);
      expert_add_info_format(pinfo, frame_item, finding_expert(finding.id, finding.consequence_of),
                             "[%s] %s%s (on frame %u, learnt in this one)", finding.code().data(),
                             finding.message.c_str(), verdict.expert_tail,
                             static_cast<unsigned>(finding.frame));
    }
  }

  for (wmem_list_frame_t* it = wmem_list_head(pending_upper); it != nullptr;
       it = wmem_list_frame_next(it)) {
    auto* call = static_cast<UpperCall*>(wmem_list_frame_data(it));
    call_upper(ctx, call->payload, pinfo, tree, call->info);
  }
}

void draw_sctp_session(const SessionControlRecord& r, tvbuff_t* tvb, packet_info* pinfo,
                       proto_tree* tree) {
  fallback_tvb = tvb;
  col_set_str(pinfo->cinfo, COL_PROTOCOL, "iWARP");
  col_add_str(pinfo->cinfo, COL_INFO, r.info.c_str());
  proto_item* si = proto_tree_add_item(tree, proto.sctp_session, tvb, 0, -1, ENC_NA);
  proto_item_append_text(si, ", %s", r.info.c_str());
  proto_tree* st = proto_item_add_subtree(si, ett.sctp_session);
  if (!r.ok) {
    generated(proto_tree_add_string(st, hf.ss_error, nullptr, 0, 0, r.error.c_str()));
    return;
  }
  namespace field = wire::ddp_session_field;
  const wire::DdpSessionControl& m = r.message;
  add_uint(st, hf.ss_ddp_ssn, at(tvb, 0, field::ddp_ssn), m.ddp_ssn);
  proto_tree_add_uint_format_value(st, hf.ss_function,
                                   or_empty(at(tvb, 0, field::function_code)).tvb,
                                   or_empty(at(tvb, 0, field::function_code)).off,
                                   or_empty(at(tvb, 0, field::function_code)).len, m.function_code,
                                   "%s (0x%04x)", r.function_name.c_str(), m.function_code);
  const std::size_t pd = field::private_data;
  if (m.private_data.empty()) return;
  add_bytes(st, hf.ss_private_data, at(tvb, pd, m.private_data.size()), m.private_data.data(),
            m.private_data.size());
  std::size_t ulp_off = pd;
  if (m.enhanced_pd) {
    // RFC 6581: the same IRD/ORD/RTR word as in an enhanced MPA Request/Reply.
    const wire::MpaEnhancedPd& e = *m.enhanced_pd;
    draw_enhanced_pd(st, tvb, pd, e);
    ulp_off += wire::MpaEnhancedPd::kSize;
  }
  const ByteView ulp = m.ulp_private_data();
  if (!ulp.empty())
    add_bytes(st, hf.ss_ulp_private_data, at(tvb, ulp_off, ulp.size()), ulp.data(), ulp.size());
}

}  // namespace ddpscope::plugin
