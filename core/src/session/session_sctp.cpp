// SPDX-License-Identifier: GPL-2.0-or-later
// The endpoint engine's SCTP connection setup (RFC 5043; RFC 6581's enhanced mode): the DDP
// Stream Session Control messages on PPID 17 that stand where MPA's Request and Reply stand. The
// initiator sends Session Initiate with its private data and (enhanced) the IRD/ORD/RTR word;
// the responder answers Accept or Reject; either ends the session with a Session Terminate. Both
// sides' messages go through sctp::StreamSession, the rules the analyzer applies; the RFC 6581
// settlement of the word is the same rule as over MPA (mpa::settle). A broken rule ends the
// stream with a Session Terminate (RFC 5043 §11.3: it defines no LLP Terminate codes).
#include <algorithm>

#include "ddpscope/session/session.h"
#include "ddpscope/wire/sctp.h"

namespace ddpscope::session {

namespace {
using Kind = wire::DdpSessionKind;
namespace fn = wire::ddp_session_fn;

// The enhanced words as the MPA frames RFC 6581's rules are written for (revision 2, Enhanced):
// mpa::settle then checks RTR, IRD and ORD the same way over both LLPs.
wire::MpaReqRep as_mpa_frame(wire::MpaFrameKind kind,
                             const std::optional<wire::MpaEnhancedPd>& pd) {
  wire::MpaReqRep f;
  f.kind = kind;
  f.revision = 2;
  f.enhanced = pd.has_value();
  f.enhanced_pd = pd;
  return f;
}
}  // namespace

void Session::queue_session_control(bool reject) {
  const bool initiator = config_.role == Role::initiator;
  wire::DdpSessionControl m;
  const bool enhanced = initiator ? config_.mpa.enhanced : neg_.enhanced;
  // RFC 6581 §8: the enhanced function codes carry the IRD/ORD/RTR word.
  if (initiator)
    m.function_code = enhanced ? fn::enhanced_initiate : fn::initiate;
  else if (reject)
    m.function_code = enhanced ? fn::enhanced_reject : fn::reject;
  else
    m.function_code = enhanced ? fn::enhanced_accept : fn::accept;
  m.ddp_ssn = tx_ssn_++;
  m.private_data = config_.mpa.private_data;
  if (enhanced) {
    wire::MpaEnhancedPd pd;
    if (initiator) {
      pd.peer_to_peer = config_.mpa.peer_to_peer;
      if (pd.peer_to_peer) {
        pd.zero_length_send_rtr = config_.mpa.rtr_types & rtr_offer::send;
        pd.zero_length_write_rtr = config_.mpa.rtr_types & rtr_offer::write;
        pd.zero_length_read_rtr = config_.mpa.rtr_types & rtr_offer::read;
      }
      pd.ird = std::min<std::uint16_t>(config_.mpa.ird, 0x3FFF);
      pd.ord = std::min<std::uint16_t>(config_.mpa.ord, 0x3FFF);
    } else {
      pd.peer_to_peer = neg_.peer_to_peer;
      pd.zero_length_send_rtr = neg_.rtr == RtrType::send;
      pd.zero_length_write_rtr = neg_.rtr == RtrType::write;
      pd.zero_length_read_rtr = neg_.rtr == RtrType::read;
      pd.ird = neg_.ird;
      pd.ord = neg_.ord;
    }
    m.enhanced_pd = pd;
  }
  if (initiator) own_frame_ = as_mpa_frame(wire::MpaFrameKind::request, m.enhanced_pd);
  // Our own messages move the session's phase as the peer's do (they break no rule).
  (void)sctp_rules_.on_control(own_side(), m);
  const std::size_t start = tx_.size();
  const Bytes raw = wire::encode_ddp_session_control(m);
  tx_.insert(tx_.end(), raw.begin(), raw.end());
  note_tx_message(start, wire::kPpidDdpSessionControl);
  tx_full_ = true;  // DDP segments (a Terminate) may follow on the association
}

void Session::queue_session_terminate() {
  if (session_terminate_queued_ || !tx_full_) return;
  session_terminate_queued_ = true;
  wire::DdpSessionControl m;
  m.ddp_ssn = tx_ssn_++;
  m.function_code = fn::terminate;
  (void)sctp_rules_.on_control(own_side(), m);
  const std::size_t start = tx_.size();
  const Bytes raw = wire::encode_ddp_session_control(m);
  tx_.insert(tx_.end(), raw.begin(), raw.end());
  note_tx_message(start, wire::kPpidDdpSessionControl);
}

// RFC 5043 §11.3: an SCTP-level violation ends the DDP stream with a Session Terminate (a
// responder still waiting for the Initiate has no session to end: it closes).
void Session::end_stream(const Violation& v) {
  if (state_ == State::terminated || state_ == State::closed || state_ == State::failed) return;
  const std::string what = std::string(finding_spec(v.id).code) + ": " + v.detail;
  if (state_ == State::mpa_wait_request) {
    fail(what);
    return;
  }
  queue_session_terminate();
  session_terminate_sent_ = v.id;
  enter_terminated();
  want_shutdown_ = true;
  Event e;
  e.kind = EventKind::session_terminate_sent;
  e.message = "Session Terminate (" + what + ")";
  push(std::move(e));
}

void Session::handle_session_control(ByteView msg) {
  auto r = wire::decode_ddp_session_control(msg);
  if (!r) {
    end_stream(
        sctp::violation(FindingId::sctp_session_invalid,
                        "malformed DDP Stream Session Control message: " + r.error().message));
    return;
  }
  const wire::DdpSessionControl& m = r.value();
  const std::vector<Violation> vs = sctp_rules_.on_control(1 - own_side(), m);
  if (!vs.empty()) {
    end_stream(vs.front());
    return;
  }
  const ByteView upd = m.ulp_private_data();
  const auto bad = [&](const std::string& why) {
    end_stream(sctp::violation(FindingId::sctp_session_invalid, why));
  };
  if (state_ == State::mpa_wait_request) {
    if (m.kind() != Kind::initiate) {
      bad("expected a DDP Stream Session Initiate");
      return;
    }
    if (upd.size() > config_.mpa.max_private_data) {
      neg_.enhanced = false;
      queue_session_control(true);
      fail("private data of " + std::to_string(upd.size()) + " octets (max " +
           std::to_string(config_.mpa.max_private_data) + ")");
      return;
    }
    peer_private_data_.assign(upd.begin(), upd.end());
    neg_.revision = 2;
    // RFC 6581 §7: an enhanced Initiate is answered with the enhanced codes (this endpoint
    // speaks RFC 6581 over SCTP whatever its MPA setting).
    neg_.enhanced = m.enhanced_pd.has_value();
    settle_as_responder(neg_.enhanced ? m.enhanced_pd : std::nullopt);
    rx_full_ = true;
    if (config_.mpa.reject) {
      queue_session_control(true);
      reject_locally(upd);
      return;
    }
    queue_session_control(false);
    accept_peer();
    return;
  }
  if (state_ == State::mpa_wait_reply) {
    if (m.kind() == Kind::reject || m.kind() == Kind::terminate) {
      // A Terminate in answer to the Initiate is the non-ULP reject (RFC 5043 §6.3).
      rejected_by_peer(upd);
      return;
    }
    if (m.kind() != Kind::accept) {
      bad("expected a DDP Stream Session Accept or Reject");
      return;
    }
    peer_private_data_.assign(upd.begin(), upd.end());
    const mpa::Settlement s =
        mpa::settle(own_frame_, as_mpa_frame(wire::MpaFrameKind::reply, m.enhanced_pd));
    if (const Violation* v = mpa::first_fatal(s.violations)) {
      bad("RFC 6581 negotiation: " + v->detail);
      return;
    }
    neg_.revision = 2;
    neg_.enhanced = s.parameters.enhanced;
    neg_.peer_to_peer = s.parameters.peer_to_peer;
    neg_.rtr = s.parameters.rtr;
    neg_.ird = config_.mpa.ird;
    neg_.ord = config_.mpa.ord;
    if (neg_.enhanced) {
      neg_.peer_enhanced = *m.enhanced_pd;
      neg_.ord = std::min<std::uint16_t>(config_.mpa.ord, m.enhanced_pd->ird);
    }
    sink_.set_ird(neg_.ird);
    rx_full_ = true;
    enter_full_operation();
    if (neg_.peer_to_peer && neg_.rtr != RtrType::none) send_rtr();
    return;
  }
  // After setup (RFC 5043 §6.1): the peer ends the DDP Stream (the rules passed nothing else).
  if (m.kind() == Kind::terminate) {
    receive_eof();
    return;
  }
  bad("DDP Stream Session Control message after the session was set up");
}

}  // namespace ddpscope::session
