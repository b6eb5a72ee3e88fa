// SPDX-License-Identifier: GPL-2.0-or-later
// Scenario planning: what each connection and operation puts on the wire, in which order, and
// which findings that must draw. The octets are the Emitter's (emitter.h); the Data Sink
// findings the oracle's (oracle.h), which asks core's rule layer; the MPA setup findings come
// from core's mpa::check_frame and mpa::settle, run on the frames as the analyzer decodes them.
#include "generator.h"

#include <algorithm>
#include <cstdio>
#include <set>

#include "ddpscope/findings/catalog.h"
#include "ddpscope/mpa/negotiate.h"
#include "ddpscope/ulp/rping.h"
#include "ddpscope/wire/mpa.h"
#include "ddpscope/wire/rdmap.h"
#include "ddpscope/wire/sctp.h"
#include "emitter.h"
#include "oracle.h"

namespace ddpscope::synth {
namespace {

std::string hex32(std::uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%08x", v);
  return buf;
}

class Planner {
 public:
  Planner(const Scenario& s, Emitter& e) : s_(s), e_(e) {}

  void run() {
    for (std::size_t i = 0; i < s_.connections.size(); ++i)
      open_connection(static_cast<int>(i));
    for (std::size_t i = 0; i < s_.ops.size(); ++i) {
      const int ci = s_.ops[i].connection;
      const bool early = early_.count(ci) != 0;
      if (early && s_.connections[ci].sctp.early == "unacked") {
        e_.expect("sctp.segment-early", ci, dir_of(s_.ops[i].side),
                  e_.conn(ci).dirs[dir_of(s_.ops[i].side)].len, static_cast<int>(i),
                  "a DDP segment before the Initiate was acknowledged");
        e_.cascading();
      }
      run_op(static_cast<int>(i));
      if (early) accept(ci);
    }
    while (!early_.empty())
      accept(*early_.begin());
    for (std::size_t i = 0; i < s_.connections.size(); ++i) {
      e_.flush(static_cast<int>(i), 0, false);
      e_.flush(static_cast<int>(i), 1, false);
    }
    for (std::size_t i = 0; i < s_.connections.size(); ++i)
      e_.close(static_cast<int>(i));
    for (const auto& m : s_.expect)
      manual_expect(m);
    std::vector<TcpFault> faults = s_.tcp_faults;
    for (const auto& op : s_.ops)
      faults.insert(faults.end(), op.tcp_faults.begin(), op.tcp_faults.end());
    for (const auto& f : faults)
      e_.apply_tcp_fault(f);
  }

 private:
  // ------------------------------------------------------------------ connection set-up
  wire::MpaReqRep mpa_frame(const ConnectionSpec& sp, bool request) const {
    wire::MpaReqRep f;
    f.kind = request ? wire::MpaFrameKind::request : wire::MpaFrameKind::reply;
    f.markers = request ? sp.client_requests_markers : sp.server_requests_markers;
    f.crc = request ? sp.client_crc : sp.server_crc;
    f.reject = !request && sp.reject;
    f.revision = request ? sp.request_revision : sp.reply_revision;
    f.reserved = request ? sp.client_reserved_flags : sp.server_reserved_flags;
    f.private_data = request ? sp.client_private_data : sp.server_private_data;
    if (sp.enhanced && f.revision == 2) {
      f.enhanced = true;
      wire::MpaEnhancedPd pd;
      pd.peer_to_peer = sp.peer_to_peer;
      pd.ird = request ? sp.client_ird : sp.server_ird;
      pd.ord = request ? sp.client_ord : sp.server_ord;
      // The initiator offers the RTR type, the responder picks it (RFC 6581 §9.2).
      pd.zero_length_send_rtr = sp.rtr == "send";
      pd.zero_length_write_rtr = sp.rtr == "write";
      pd.zero_length_read_rtr = sp.rtr == "read";
      f.enhanced_pd = pd;
    }
    return f;
  }

  // Sends one MPA Request or Reply and expects what mpa::check_frame finds in it, as the
  // analysis policy reads it. Returns the frame as the analyzer decodes it.
  wire::MpaReqRep send_frame(int ci, bool request) {
    const ConnectionSpec& sp = *e_.conn(ci).spec;
    const wire::MpaReqRep built = mpa_frame(sp, request);
    Bytes octets = wire::encode_mpa_reqrep(built);
    auto decoded = wire::decode_mpa_reqrep(octets);
    const int dir = request ? 0 : 1;
    const std::uint64_t off = e_.append(ci, dir, std::move(octets), -1);
    if (!decoded) {
      e_.cascading();  // no frame the analysis reads as one: what follows is its policy
      return built;
    }
    const std::uint8_t reserved = request ? sp.client_reserved_flags : sp.server_reserved_flags;
    for (const Violation& v : mpa::check_frame(decoded.value(), mpa::Policy{})) {
      std::string detail = v.detail;
      if (v.id == FindingId::mpa_reserved_bits && reserved)
        detail = std::string("reserved flag bits set in the MPA ") +
                 (request ? "Request" : "Reply") + " (vendor extension)";
      e_.expect(std::string(finding_spec(v.id).code), ci, dir, off, -1, detail);
      if (v.terminate) e_.cascading();  // the connection setup failed: engine policy follows
    }
    e_.flush(ci, dir);
    return decoded.value();
  }

  // "llp": "sctp": the association's setup, then the (Enhanced) DDP Session Initiate and Accept
  // or Reject (RFC 5043 §6, RFC 6581 §7) with the scenario's private data and IRD/ORD, and the
  // connection's "sctp" faults on them.
  void open_session(int ci) {
    const ConnectionSpec& sp = *e_.conn(ci).spec;
    const ConnectionSpec::Sctp& x = sp.sctp;
    namespace fn = wire::ddp_session_fn;
    e_.open_tcp(ci);
    const wire::MpaReqRep req = mpa_frame(sp, true);
    const std::uint16_t initiate =
        x.initiate_function_code.value_or(sp.enhanced ? fn::enhanced_initiate : fn::initiate);
    const std::uint64_t off =
        e_.session_control(ci, 0, initiate, sp.client_private_data, req.enhanced_pd, -1);
    e_.last_unit(ci, 0).fragments = x.initiate_fragments;
    if (!x.adaptation) {
      e_.expect("sctp.adaptation-missing", ci, 0, off, -1,
                "INIT and INIT ACK without the DDP adaptation indication");
      e_.cascading();
    }
    if (wire::ddp_session_kind(initiate) == wire::DdpSessionKind::unknown) {
      e_.expect("sctp.function-code-invalid", ci, 0, off, -1,
                "function code " + std::to_string(initiate) + " for the Initiate");
      e_.cascading();
    }
    const std::size_t pd = sp.client_private_data.size() + (req.enhanced_pd ? 4 : 0);
    if (pd > wire::kDdpSessionMaxPrivateData) {
      e_.expect("sctp.private-data-invalid", ci, 0, off, -1,
                std::to_string(pd) + " octets of private data in the Initiate");
      e_.cascading();
    }
    // "early": the Accept waits until the first operation was sent (its Initiate SACKed, or not).
    e_.flush(ci, 0, x.early != "unacked");
    if (x.early.empty()) {
      accept(ci);
    } else {
      early_.insert(ci);
      // The active side may send once its Initiate is acknowledged: framing is settled already.
      e_.start_fpdus(ci, mpa::settle(req, mpa_frame(sp, false)).parameters);
    }
  }

  // The passive side's Accept or Reject; then the RTR, when the scenario asks for one.
  void accept(int ci) {
    Conn& c = e_.conn(ci);
    const ConnectionSpec& sp = *c.spec;
    namespace fn = wire::ddp_session_fn;
    const wire::MpaReqRep req = mpa_frame(sp, true);
    const wire::MpaReqRep rep = mpa_frame(sp, false);
    const std::uint16_t answer = sp.reject ? (sp.enhanced ? fn::enhanced_reject : fn::reject)
                                           : (sp.enhanced ? fn::enhanced_accept : fn::accept);
    const bool was_early = early_.erase(ci) != 0;
    const std::uint64_t off =
        e_.session_control(ci, 1, answer, sp.server_private_data, rep.enhanced_pd, -1);
    e_.flush(ci, 1);
    if (sp.reject) {
      e_.expect("sctp.session-rejected", ci, 1, off, -1, "DDP Session Reject");
      c.rejected = true;
      return;
    }
    if (was_early) return;  // framing settled before the first operation
    e_.start_fpdus(ci, mpa::settle(req, rep).parameters);
    if (sp.peer_to_peer && !sp.rtr.empty()) send_rtr(ci);
  }

  void open_connection(int ci) {
    Conn& c = e_.conn(ci);
    const ConnectionSpec& sp = *c.spec;
    if (e_.sctp(ci)) return open_session(ci);
    e_.open_tcp(ci);
    const wire::MpaReqRep req = send_frame(ci, true);
    const std::uint64_t rep_off = c.dirs[1].len;
    const wire::MpaReqRep rep = send_frame(ci, false);
    if (rep.reject) {
      e_.expect("mpa.rejected", ci, 1, rep_off, -1, "MPA Reply with R set");
      c.rejected = true;
      return;
    }
    const mpa::Settlement settled = mpa::settle(req, rep);
    for (const Violation& v : settled.violations) {
      e_.expect(std::string(finding_spec(v.id).code), ci, 1, rep_off, -1, v.detail);
      if (v.terminate) e_.cascading();
    }
    e_.start_fpdus(ci, settled.parameters);
    if (sp.peer_to_peer && !sp.rtr.empty()) send_rtr(ci);
  }

  // RFC 6581 §9: the initiator's first FPDU is the negotiated zero-length RTR message.
  void send_rtr(int ci) {
    const ConnectionSpec& sp = *e_.conn(ci).spec;
    if (sp.rtr == "write") {
      // siw sends its Write RTR to STag 1, TO 0 (STag 0 is special to some hardware).
      e_.tagged(ci, 0, -1, wire::Opcode::rdma_write, 1, 0, {}, nullptr);
    } else if (sp.rtr == "read") {
      Bytes body;
      ByteWriter w(body);
      wire::encode_read_request(wire::ReadRequest{}, w);
      e_.untagged(ci, 0, -1, wire::Opcode::read_request, wire::kQnReadRequest, 0, body, nullptr);
      e_.flush(ci, 0);
      e_.tagged(ci, 1, -1, wire::Opcode::read_response, 0, 0, {}, nullptr);
      e_.flush(ci, 1);
      return;
    } else {
      e_.untagged(ci, 0, -1, wire::Opcode::send, wire::kQnSend, 0, {}, nullptr);
    }
    e_.flush(ci, 0);
  }

  // ------------------------------------------------------------------ operations
  void run_op(int oi) {
    const OpSpec& op = s_.ops[oi];
    const int ci = op.connection;
    Conn& c = e_.conn(ci);
    if (c.rejected) e_.fail(oi, "the connection was rejected: no operations possible");
    const int dir = dir_of(op.side);
    const int peer = peer_of(op.side);
    const OpFault* f = op.fault.any() ? &op.fault : nullptr;
    switch (op.type) {
      case OpType::send: {
        wire::Opcode opc = op.solicited ? wire::Opcode::send_se : wire::Opcode::send;
        if (op.invalidate_stag)
          opc = op.solicited ? wire::Opcode::send_se_invalidate : wire::Opcode::send_invalidate;
        e_.untagged(ci, dir, oi, opc, wire::kQnSend, op.invalidate_stag.value_or(0), op.data, f);
        break;
      }
      case OpType::advertise_rping: {
        const Bytes body = ulp::encode_rping_info({op.adv_base, op.adv_stag, op.adv_length});
        e_.untagged(ci, dir, oi, wire::Opcode::send, wire::kQnSend, 0, body, f);
        break;
      }
      case OpType::immediate: {
        Bytes body;
        ByteWriter w(body);
        w.be64(op.immediate);
        e_.untagged(ci, dir, oi,
                    op.solicited ? wire::Opcode::immediate_data_se : wire::Opcode::immediate_data,
                    wire::kQnSend, 0, body, f);
        break;
      }
      case OpType::write:
        e_.tagged(ci, dir, oi, wire::Opcode::rdma_write, op.stag, op.to, op.data, f, {}, !f);
        break;
      case OpType::read:
        run_read(oi, ci, dir, peer, f);
        return;  // flushes itself
      case OpType::read_response: {
        if (c.dirs[peer].outstanding_reads != 0)
          e_.fail(oi, "read_response while a Read Request is outstanding is not supported");
        e_.tagged(ci, dir, oi, wire::Opcode::read_response, op.stag, op.to, op.data, f,
                  {{FindingId::rdmap_read_response_unmatched,
                    "Read Response with no Read Request outstanding"}});
        break;
      }
      case OpType::atomic:
        run_atomic(oi, ci, dir, peer, f);
        return;
      case OpType::atomic_response: {
        Bytes body;
        ByteWriter w(body);
        wire::encode_atomic_response({op.request_id, op.original_value}, w);
        e_.untagged(ci, dir, oi, wire::Opcode::atomic_response, wire::kQnAtomicResponse, 0, body, f,
                    {{FindingId::rdmap_atomic_response_unmatched,
                      "Atomic Response for request id " + std::to_string(op.request_id)}});
        break;
      }
      case OpType::terminate:
        run_terminate(oi, ci, dir, peer, f);
        break;
    }
    if (!op.hold) e_.flush(ci, dir);
  }

  void run_read(int oi, int ci, int dir, int peer, const OpFault* f) {
    const OpSpec& op = s_.ops[oi];
    Conn& c = e_.conn(ci);
    Dir& d = c.dirs[dir];
    std::vector<wire::ReadRequest> reqs;
    for (int k = 0; k < op.count; ++k) {
      wire::ReadRequest rr = op.read;
      rr.sink_to += static_cast<std::uint64_t>(k) * rr.size;
      rr.source_to += static_cast<std::uint64_t>(k) * rr.size;
      Bytes body;
      ByteWriter w(body);
      wire::encode_read_request(rr, w);
      const std::uint32_t extra = f && k == 0 ? f->read_request_extra : 0;
      w.zeros(extra);
      std::vector<Intent> intents;
      if (extra) {
        intents.push_back(
            {FindingId::ddp_untagged_message_too_long,
             "Read Request body of " + std::to_string(body.size()) + " octets (28 allowed)"});
        e_.cascading();
      }
      // Only the first request carries the op's header/FPDU faults.
      e_.untagged(ci, dir, oi, wire::Opcode::read_request, wire::kQnReadRequest, 0, body,
                  k == 0 ? f : nullptr, intents);
      d.outstanding_reads += 1;
      reqs.push_back(rr);
    }
    e_.flush(ci, dir);
    // A peer that received a malformed Read Request does not answer it.
    if ((f && f->read_request_extra) || !op.respond) return;
    for (std::size_t k = 0; k < reqs.size(); ++k) {
      const wire::ReadRequest& rr = reqs[k];
      Bytes data = op.data;
      const bool last = k + 1 == reqs.size();
      const bool size_fault = f && last && f->response_size_delta != 0;
      if (size_fault) {
        const std::int64_t n = static_cast<std::int64_t>(data.size()) + f->response_size_delta;
        if (n < 0) e_.fail(oi, "fault.response_size_delta makes the response negative");
        data.resize(static_cast<std::size_t>(n), 0xEE);
      }
      const bool stag_fault = f && last && f->response_sink_stag;
      const std::uint32_t stag = stag_fault ? *f->response_sink_stag : rr.sink_stag;
      std::vector<Intent> intents;
      if (stag_fault) {
        intents.push_back(
            {FindingId::ddp_tagged_invalid_stag,
             "Read Response to sink STag " + hex32(stag) + ", requested " + hex32(rr.sink_stag)});
      }
      if (size_fault) {
        intents.push_back({FindingId::rdmap_read_response_size_mismatch,
                           "Read Response of " + std::to_string(data.size()) +
                               " octets, requested " + std::to_string(rr.size)});
      }
      // The Read Response carries no faults of its own: header faults were on the request.
      e_.tagged(ci, peer, oi, wire::Opcode::read_response, stag, rr.sink_to, data, nullptr, intents,
                !stag_fault && !size_fault);
      d.outstanding_reads -= 1;
    }
    e_.flush(ci, peer);
  }

  void run_atomic(int oi, int ci, int dir, int peer, const OpFault* f) {
    const OpSpec& op = s_.ops[oi];
    Bytes body;
    ByteWriter w(body);
    wire::encode_atomic_request(op.atomic, w);
    e_.untagged(ci, dir, oi, wire::Opcode::atomic_request, wire::kQnAtomicRequest, 0, body, f);
    e_.flush(ci, dir);
    Bytes resp;
    ByteWriter rw(resp);
    const std::uint32_t id =
        f && f->response_request_id ? *f->response_request_id : op.atomic.request_id;
    wire::encode_atomic_response({id, op.original_value}, rw);
    std::vector<Intent> intents;
    if (id != op.atomic.request_id) {
      intents.push_back({FindingId::rdmap_atomic_response_unmatched,
                         "Atomic Response for request id " + std::to_string(id) + ", sent " +
                             std::to_string(op.atomic.request_id)});
    }
    e_.untagged(ci, peer, oi, wire::Opcode::atomic_response, wire::kQnAtomicResponse, 0, resp,
                nullptr, intents);
    e_.flush(ci, peer);
  }

  void run_terminate(int oi, int ci, int dir, int peer, const OpFault* f) {
    const OpSpec& op = s_.ops[oi];
    const Dir& from_peer = e_.conn(ci).dirs[peer];
    wire::Terminate t;
    t.control = op.term;
    if (t.control.d) {
      // Quote the last DDP segment received from the peer (siw does this).
      wire::DdpHeader h;
      if (from_peer.last_header) {
        h = *from_peer.last_header;
      } else {
        h.control.last = true;
        h.rsvd_ulp0 = wire::RdmapControl{1, 0, 3}.byte();
        h.msn = 1;
      }
      t.ddp_header = h;
      t.ddp_segment_length = from_peer.last_ulpdu_length;
    }
    if (t.control.r) {
      t.rdmap_header = from_peer.last_rdmap_body;
      t.rdmap_header.resize(wire::kTerminateRdmapHeaderSize, 0);
    }
    Bytes body;
    ByteWriter w(body);
    wire::encode_terminate(
        t, op.siw_layout ? wire::TerminateLayout::siw_bitfield : wire::TerminateLayout::rfc, w);
    e_.untagged(ci, dir, oi, wire::Opcode::terminate, wire::kQnTerminate, 0, body, f);
  }

  void manual_expect(const ManualExpectation& m) {
    const auto& units = e_.op_units(m.op);
    if (static_cast<std::size_t>(m.segment) >= units.size())
      e_.fail(m.op, "expect: the operation has " + std::to_string(units.size()) + " FPDU(s)");
    if (!finding_by_code(m.code)) e_.fail(m.op, "expect: unknown finding code \"" + m.code + "\"");
    const auto [conn, dir] = e_.op_direction(m.op);
    e_.expect(m.code, conn, dir, units[m.segment], m.op, "declared in the scenario", m.consequence);
  }

  const Scenario& s_;
  Emitter& e_;
  std::set<int> early_;  // SCTP connections whose Accept follows their first operation
};

}  // namespace

bool generate(const Scenario& scenario, Generated& out, std::string& error) {
  try {
    Emitter emitter(scenario);
    Planner(scenario, emitter).run();
    Generated result;
    emitter.finalize(result.frames);
    result.expected = emitter.expected();
    Prediction p = predict(scenario, emitter);
    result.expected.insert(result.expected.end(), p.expected.begin(), p.expected.end());
    std::stable_sort(
        result.expected.begin(), result.expected.end(),
        [](const ExpectedFinding& a, const ExpectedFinding& b) { return a.frame < b.frame; });
    result.exhaustive = scenario.exhaustive.value_or(emitter.exhaustive());
    result.regions_written = std::move(p.regions_written);
    out = std::move(result);
    return true;
  } catch (const GenerateError& e) {
    error = e.what();
  } catch (const std::out_of_range& e) {
    error = std::string("internal error: ") + e.what();
  }
  return false;
}

}  // namespace ddpscope::synth
