// SPDX-License-Identifier: GPL-2.0-or-later
// The endpoint engine's SCTP connection setup (RFC 5043; RFC 6581's enhanced mode): the DDP
// Stream Session Control messages on PPID 17 that stand where MPA's Request and Reply stand. The
// initiator sends Session Initiate with its private data and (enhanced) the IRD/ORD/RTR word;
// the responder answers Accept or Reject. The RFC 6581 settlement of that word is the same rule
// as over MPA (mpa::settle on the two words); a violation of it, or a malformed or out-of-order
// control message, is sctp.session-invalid with RFC 5043's LLP Terminate.
#include <algorithm>

#include "ddpscope/session/session.h"
#include "ddpscope/wire/sctp.h"
#include "sctp_violations.h"

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
    m.function_code = enhanced ? fn::enhanced_initiate_unverified : fn::initiate_unverified;
  else if (reject)
    m.function_code = enhanced ? fn::enhanced_reject_unverified : fn::reject_unverified;
  else
    m.function_code = enhanced ? fn::enhanced_accept_unverified : fn::accept_unverified;
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
  const std::size_t start = tx_.size();
  const Bytes raw = wire::encode_ddp_session_control(m);
  tx_.insert(tx_.end(), raw.begin(), raw.end());
  note_tx_message(start, wire::kPpidDdpSessionControl);
  tx_full_ = true;  // DDP segments (a Terminate) may follow on the association
}

void Session::handle_session_control(ByteView msg) {
  const bool initiator = config_.role == Role::initiator;
  const auto bad = [&](const std::string& why) {
    // As over MPA: the initiator reports a bad answer in a Terminate; the responder closes.
    if (initiator)
      fatal(sctp::session_invalid(why), nullptr, {});
    else
      fail(why);
  };
  auto r = wire::decode_ddp_session_control(msg);
  if (!r) {
    bad("malformed DDP Stream Session Control message: " + r.error().message);
    return;
  }
  const wire::DdpSessionControl& m = r.value();
  const ByteView upd = m.ulp_private_data();
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
    neg_.enhanced = m.enhanced_pd.has_value() && config_.mpa.enhanced;
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
    if (m.kind() == Kind::reject) {
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
      fatal(sctp::session_invalid(v->detail), nullptr, {});
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
  // After setup (RFC 5043): the peer ends the DDP Stream, or breaks the setup order.
  if (m.kind() == Kind::terminate) {
    receive_eof();
    return;
  }
  fatal(sctp::session_invalid("DDP Stream Session Control message after the session was set up"),
        nullptr, {});
}

}  // namespace ddpscope::session
