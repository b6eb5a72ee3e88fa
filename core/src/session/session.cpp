// SPDX-License-Identifier: GPL-2.0-or-later
// The endpoint engine: its state machine, timers, MPA connection setup (RFC 5044 §7, RFC 6581,
// the rules in mpa/negotiate.h) and close. Receive is in session_rx.cpp, transmit and the
// operations a ULP posts in session_tx.cpp.
#include <algorithm>
#include <cstring>

#include "ddpscope/common/crc32c.h"
#include "ddpscope/session/session.h"

namespace ddpscope::session {

namespace {
constexpr std::uint8_t op(wire::Opcode o) {
  return static_cast<std::uint8_t>(o);
}
constexpr std::uint32_t kRtrStag = 1;  // siw's zero-length RTR STag (STag 0 is special to HW)
constexpr std::uint32_t kMinMulpdu = 128;
}  // namespace

std::string_view to_string(Llp l) {
  return l == Llp::sctp ? "sctp" : "mpa";
}

std::string_view to_string(EventKind k) {
  switch (k) {
    case EventKind::connected:
      return "connected";
    case EventKind::rejected:
      return "rejected";
    case EventKind::recv_completed:
      return "recv_completed";
    case EventKind::immediate_received:
      return "immediate_received";
    case EventKind::write_placed:
      return "write_placed";
    case EventKind::read_completed:
      return "read_completed";
    case EventKind::read_requested:
      return "read_requested";
    case EventKind::atomic_completed:
      return "atomic_completed";
    case EventKind::send_completed:
      return "send_completed";
    case EventKind::terminate_received:
      return "terminate_received";
    case EventKind::terminate_sent:
      return "terminate_sent";
    case EventKind::session_terminate_sent:
      return "session_terminate_sent";
    case EventKind::violation_closed:
      return "violation_closed";
    case EventKind::violation_waiting:
      return "violation_waiting";
    case EventKind::error:
      return "error";
    case EventKind::closed:
      return "closed";
  }
  return "?";
}

std::string_view to_string(PostStatus s) {
  switch (s) {
    case PostStatus::ok:
      return "ok";
    case PostStatus::would_block:
      return "would_block";
    case PostStatus::not_connected:
      return "not_connected";
    case PostStatus::no_resources:
      return "no_resources";
    case PostStatus::invalid:
      return "invalid";
  }
  return "?";
}

std::string_view Session::state_name(State s) {
  switch (s) {
    case State::idle:
      return "idle";
    case State::mpa_wait_request:
      return "mpa_wait_request";
    case State::mpa_wait_reply:
      return "mpa_wait_reply";
    case State::wait_rtr:
      return "wait_rtr";
    case State::established:
      return "established";
    case State::closing:
      return "closing";
    case State::terminated:
      return "terminated";
    case State::failed:
      return "failed";
    case State::closed:
      return "closed";
  }
  return "?";
}

Session::Session(MemoryTable& memory, SessionConfig config)
    : memory_(memory), config_(std::move(config)) {
  stream_id_ = memory_.new_stream_id();
  rdmap::SinkConfig sc;
  sc.stream = ddp::StreamFacts{stream_id_, config_.pd};
  sc.profile = config_.sink_profile;
  sc.rfc7306 = config_.rfc7306 && sink_traits(config_.sink_profile).rfc7306;
  sink_ = rdmap::DataSink(sc);
  set_emss(config_.emss);
  set_path_mtu(1500);  // SCTP until the host knows the association's path MTU
}

void Session::set_emss(std::uint32_t emss) {
  config_.emss = emss;
  if (config_.llp == Llp::sctp) return;  // SCTP: set_path_mtu
  neg_.mulpdu = std::clamp<std::uint32_t>(wire::mulpdu(emss, neg_.tx_markers), kMinMulpdu, 65535);
}

void Session::set_path_mtu(std::uint32_t pmtu, bool ipv6, bool over_udp) {
  if (config_.llp != Llp::sctp) return;
  // RFC 5043 §9: what one DATA chunk of one packet leaves, the DDP-SSN taken off too.
  neg_.mulpdu =
      std::clamp<std::uint32_t>(sctp::mulpdu_for_path(pmtu, ipv6, over_udp), kMinMulpdu, 65535);
}

void Session::push(Event e) {
  events_.push_back(std::move(e));
  if (events_.size() > peak_.events) note_usage();
}

SessionUsage Session::usage() const {
  SessionUsage u;
  u.rx_bytes = rx_.size() - rx_head_;
  u.tx_bytes = output_size();
  u.events = events_.size();
  u.inbound_reads = sink_.irq().size();
  u.outbound_reads = sink_.orq().size() + read_queue_.size();
  u.posted_recvs = recvs_.size();
  u.held_bytes = rx_.capacity() + scratch_.capacity() + tx_.capacity() +
                 events_.size() * sizeof(Event) + sink_.irq().size() * sizeof(wire::ReadRequest) +
                 sink_.orq().size() * sizeof(rdmap::OutstandingRead) +
                 read_queue_.size() * sizeof(QueuedRead) + recvs_.size() * sizeof(RecvBuffer) +
                 sink_.atomics().size() * sizeof(rdmap::PendingAtomic);
  return u;
}

void Session::note_usage() {
  const SessionUsage u = usage();
  peak_.rx_bytes = std::max(peak_.rx_bytes, u.rx_bytes);
  peak_.tx_bytes = std::max(peak_.tx_bytes, u.tx_bytes);
  peak_.events = std::max(peak_.events, u.events);
  peak_.inbound_reads = std::max(peak_.inbound_reads, u.inbound_reads);
  peak_.outbound_reads = std::max(peak_.outbound_reads, u.outbound_reads);
  peak_.posted_recvs = std::max(peak_.posted_recvs, u.posted_recvs);
  peak_.held_bytes = std::max(peak_.held_bytes, u.held_bytes);
}

std::optional<std::int64_t> Session::deadline() const {
  std::optional<std::int64_t> d = deadline_;
  for (const auto& t : {stall_deadline_, teardown_deadline_})
    if (t && (!d || *t < *d)) d = t;
  return d;
}

void Session::start_teardown_timer() {
  teardown_deadline_ = now_ + config_.limits.teardown_timeout_ns;
}

bool Session::poll_event(Event& e) {
  if (events_.empty()) return false;
  e = std::move(events_.front());
  events_.pop_front();
  return true;
}

void Session::start(std::int64_t now_ns) {
  if (state_ != State::idle) return;
  now_ = now_ns;
  deadline_ = now_ns + config_.limits.handshake_timeout_ns;
  rx_order_.start_at(0);  // RFC 5043 §5.2.1: each side's session starts at DDP-SSN 0
  if (config_.role == Role::initiator) {
    if (config_.llp == Llp::sctp)
      queue_session_control(false);
    else
      queue_reqrep(false);
    state_ = State::mpa_wait_reply;
  } else {
    state_ = State::mpa_wait_request;
  }
}

void Session::on_timer(std::int64_t now_ns) {
  now_ = std::max(now_, now_ns);
  if (deadline_ && now_ >= *deadline_) {
    deadline_.reset();
    if (state_ == State::mpa_wait_request || state_ == State::mpa_wait_reply ||
        state_ == State::wait_rtr)
      fail(config_.llp == Llp::sctp ? "DDP Stream session setup timed out"
                                    : "MPA handshake timed out");
  }
  if (stall_deadline_ && now_ >= *stall_deadline_) {
    stall_deadline_.reset();
    if (receiving() && partial_input()) {
      if (input_paused_ || output_size() > config_.limits.max_tx_bytes) {
        // We hold the input back ourselves: not the peer's stall.
        stall_deadline_ = now_ + config_.limits.stall_timeout_ns;
      } else {
        // The half FPDU or message is dropped, never delivered; the peer is taken as gone.
        drop_partial_input();
        drop_inbound_reads();
        state_ = State::closed;
        want_shutdown_ = true;
        want_abort_ = true;
        Event e;
        e.kind = EventKind::error;
        e.message = "peer stalled in the middle of an FPDU or message";
        push(std::move(e));
      }
    }
  }
  if (teardown_deadline_ && now_ >= *teardown_deadline_) {
    teardown_deadline_.reset();
    if (state_ == State::terminated || state_ == State::failed || state_ == State::closed)
      want_abort_ = true;
  }
}

void Session::fail(std::string message) {
  state_ = State::failed;
  deadline_.reset();
  start_teardown_timer();
  want_shutdown_ = true;
  Event e;
  e.kind = EventKind::error;
  e.message = std::move(message);
  push(std::move(e));
}

// --- MPA Request / Reply --------------------------------------------------------------------

void Session::queue_reqrep(bool reject) {
  const bool initiator = config_.role == Role::initiator;
  wire::MpaReqRep f;
  f.kind = initiator ? wire::MpaFrameKind::request : wire::MpaFrameKind::reply;
  f.markers = config_.mpa.markers;
  f.crc = initiator ? config_.mpa.crc : neg_.crc;
  f.reject = reject;
  f.revision = initiator ? config_.mpa.revision : neg_.revision;
  f.private_data = config_.mpa.private_data;
  const bool enhanced =
      initiator ? (config_.mpa.revision == 2 && config_.mpa.enhanced) : neg_.enhanced;
  if (enhanced) {
    f.enhanced = true;
    wire::MpaEnhancedPd pd;
    if (initiator) {
      pd.peer_to_peer = config_.mpa.peer_to_peer;
      if (pd.peer_to_peer) {
        pd.zero_length_send_rtr = config_.mpa.rtr_types & rtr_offer::send;
        pd.zero_length_write_rtr = config_.mpa.rtr_types & rtr_offer::write;
        pd.zero_length_read_rtr = config_.mpa.rtr_types & rtr_offer::read;
      }
      pd.ird = static_cast<std::uint16_t>(std::min<std::uint16_t>(config_.mpa.ird, 0x3FFF));
      pd.ord = static_cast<std::uint16_t>(std::min<std::uint16_t>(config_.mpa.ord, 0x3FFF));
    } else {
      pd.peer_to_peer = neg_.peer_to_peer;
      pd.zero_length_send_rtr = neg_.rtr == RtrType::send;
      pd.zero_length_write_rtr = neg_.rtr == RtrType::write;
      pd.zero_length_read_rtr = neg_.rtr == RtrType::read;
      pd.ird = neg_.ird;
      pd.ord = neg_.ord;
    }
    f.enhanced_pd = pd;
  }
  const Bytes raw = wire::encode_mpa_reqrep(f);
  tx_.insert(tx_.end(), raw.begin(), raw.end());
  own_frame_ = f;
  tx_full_ = true;  // S0: the next octet we send is the first of Full Operation Phase
  tx_pos_ = 0;
}

void Session::handle_handshake() {
  const ByteView avail = ByteView(rx_).subspan(rx_head_);
  const auto bad_frame = [&](const std::string& why) {
    // RFC 5044 §7.1: the initiator reports a bad Reply in a Terminate; the responder closes.
    if (config_.role == Role::initiator)
      fatal(mpa::frame_invalid(why), nullptr, {});
    else
      fail(why);
  };
  if (!wire::could_be_mpa_key(avail.first(std::min<std::size_t>(avail.size(), 16)))) {
    bad_frame(config_.role == Role::initiator ? "not an MPA Reply" : "not an MPA Request");
    return;
  }
  // Bound what we buffer: header + the largest private data we accept.
  if (avail.size() >= wire::kMpaReqRepHeaderSize) {
    const std::size_t pd_len = load_be16(&avail[18]);
    if (pd_len > config_.mpa.max_private_data) {
      if (config_.role == Role::responder) {
        neg_.revision = std::min<std::uint8_t>(config_.mpa.revision, 2);
        queue_reqrep(true);
      }
      bad_frame("MPA private data of " + std::to_string(pd_len) + " octets (max " +
                std::to_string(config_.mpa.max_private_data) + ")");
      return;
    }
  }
  auto r = wire::decode_mpa_reqrep(avail);
  if (r.status() == DecodeStatus::need_more) return;
  if (!r) {
    bad_frame("malformed MPA frame: " + r.error().message);
    return;
  }
  rx_head_ += r.consumed();
  rx_full_ = true;
  rx_pos_ = 0;
  peer_frame_ = r.value();
  if (config_.role == Role::responder)
    handle_request(*r);
  else
    handle_reply(*r);
}

mpa::Policy Session::frame_policy(std::uint8_t max_revision) const {
  mpa::Policy p;
  p.min_revision = 1;
  p.max_revision = max_revision;
  p.max_private_data = config_.mpa.max_private_data;
  p.accept_markers = config_.mpa.accept_markers;
  return p;
}

bool Session::handle_request(const wire::MpaReqRep& req) {
  const auto refuse = [&](const std::string& why) {
    neg_.revision = std::clamp<std::uint8_t>(req.revision, 1, 2);
    neg_.enhanced = false;
    queue_reqrep(true);
    fail(why);
    return false;
  };
  if (req.kind != wire::MpaFrameKind::request) return refuse("expected an MPA Request");
  // We answer any revision we know with ours or lower (RFC 5044 §7.1).
  const auto checks = mpa::check_frame(req, frame_policy(2));
  if (const Violation* v = mpa::first_fatal(checks)) return refuse(v->detail);

  neg_.revision = std::min(req.revision, config_.mpa.revision);
  neg_.enhanced = neg_.revision == 2 && req.enhanced && req.enhanced_pd && config_.mpa.enhanced;
  neg_.crc = req.crc || config_.mpa.crc;
  neg_.tx_markers = req.markers;
  neg_.rx_markers = config_.mpa.markers;
  set_emss(config_.emss);
  settle_as_responder(neg_.enhanced ? req.enhanced_pd : std::nullopt);
  if (config_.mpa.reject) {
    queue_reqrep(true);
    reject_locally(req.ulp_private_data());
    return false;
  }
  queue_reqrep(false);
  setup_gate_ = tx_taken_ + output_size();
  accept_peer();
  return true;
}

// The responder's half of the RFC 6581 settlement, the same over both LLPs: IRD/ORD and the RTR
// from the initiator's enhanced word (nullopt: not enhanced).
void Session::settle_as_responder(const std::optional<wire::MpaEnhancedPd>& peer) {
  if (peer) {
    const auto& pd = *peer;
    neg_.peer_enhanced = pd;
    // RFC 6581 §9.1: our IRD serves the peer's ORD and our ORD may not exceed its IRD.
    neg_.ird = std::min<std::uint16_t>(pd.ord, config_.mpa.ird);
    neg_.ord = std::min<std::uint16_t>(pd.ird, config_.mpa.ord);
    if (pd.peer_to_peer) {
      neg_.peer_to_peer = true;  // A must be echoed (RFC 6581 §9.2)
      const std::uint8_t ok = config_.mpa.rtr_types;
      if (pd.zero_length_write_rtr && (ok & rtr_offer::write))
        neg_.rtr = RtrType::write;
      else if (pd.zero_length_read_rtr && (ok & rtr_offer::read))
        neg_.rtr = RtrType::read;
      else if (pd.zero_length_send_rtr && (ok & rtr_offer::send))
        neg_.rtr = RtrType::send;
      else
        neg_.rtr = RtrType::write;  // as siw: propose Write; the initiator terminates (0x07)
    }
  } else {
    neg_.ird = config_.mpa.ird;
    neg_.ord = config_.mpa.ord;
  }
  sink_.set_ird(neg_.ird);
}

void Session::reject_locally(ByteView peer_private_data) {
  state_ = State::failed;
  deadline_.reset();
  start_teardown_timer();
  want_shutdown_ = true;
  Event e;
  e.kind = EventKind::rejected;
  e.message = "rejected by local configuration";
  e.private_data.assign(peer_private_data.begin(), peer_private_data.end());
  push(std::move(e));
}

// The responder accepted: peer-to-peer waits for the RTR (RFC 6581 §9.2), else Full Operation.
void Session::accept_peer() {
  if (neg_.peer_to_peer) {
    state_ = State::wait_rtr;
    sink_.expect_rtr(neg_.rtr);
  } else {
    enter_full_operation();
  }
}

bool Session::handle_reply(const wire::MpaReqRep& rep) {
  const auto bad = [&](const Violation& v) {
    fatal(v, nullptr, {});
    return false;
  };
  if (rep.kind != wire::MpaFrameKind::reply)
    return bad(mpa::frame_invalid("expected an MPA Reply"));
  const auto checks = mpa::check_frame(rep, frame_policy(config_.mpa.revision));
  if (const Violation* v = mpa::first_fatal(checks)) return bad(*v);
  if (rep.reject) {
    rejected_by_peer(rep.ulp_private_data());
    return false;
  }
  const mpa::Settlement s = mpa::settle(own_frame_, rep);
  if (const Violation* v = mpa::first_fatal(s.violations)) return bad(*v);
  const mpa::Parameters& p = s.parameters;
  neg_.revision = p.revision;
  neg_.enhanced = p.enhanced;
  neg_.crc = p.crc;
  neg_.tx_markers = p.markers_to_responder;
  neg_.rx_markers = p.markers_to_initiator;
  neg_.peer_to_peer = p.peer_to_peer;
  neg_.rtr = p.rtr;
  set_emss(config_.emss);
  neg_.ird = config_.mpa.ird;
  neg_.ord = config_.mpa.ord;
  if (neg_.enhanced) {
    neg_.peer_enhanced = *rep.enhanced_pd;
    neg_.ord = std::min<std::uint16_t>(config_.mpa.ord, rep.enhanced_pd->ird);
  }
  sink_.set_ird(neg_.ird);
  enter_full_operation();
  if (neg_.peer_to_peer && neg_.rtr != RtrType::none) {
    send_rtr();
    setup_gate_ = tx_taken_ + output_size();
  }
  return true;
}

void Session::rejected_by_peer(ByteView peer_private_data) {
  state_ = State::failed;
  deadline_.reset();
  start_teardown_timer();
  want_shutdown_ = true;
  Event e;
  e.kind = EventKind::rejected;
  e.message = "peer rejected the connection";
  e.private_data.assign(peer_private_data.begin(), peer_private_data.end());
  push(std::move(e));
}

void Session::enter_full_operation() {
  state_ = State::established;
  deadline_.reset();
  Event e;
  e.kind = EventKind::connected;
  if (peer_frame_) {
    const ByteView upd = peer_frame_->ulp_private_data();
    e.private_data.assign(upd.begin(), upd.end());
  } else if (config_.llp == Llp::sctp) {
    e.private_data = peer_private_data_;
  }
  push(std::move(e));
}

void Session::send_rtr() {
  switch (neg_.rtr) {
    case RtrType::write:
      emit_tagged(op(wire::Opcode::rdma_write), kRtrStag, 0, {});
      break;
    case RtrType::read: {
      wire::ReadRequest rr;
      rr.sink_stag = kRtrStag;
      rr.source_stag = kRtrStag;
      Bytes body;
      ByteWriter w(body);
      wire::encode_read_request(rr, w);
      rdmap::OutstandingRead o;
      o.req = rr;
      o.rtr = true;
      sink_.read_requested(o);
      emit_untagged(op(wire::Opcode::read_request), wire::kQnReadRequest, 0, body, {});
      break;
    }
    case RtrType::send:
      emit_untagged(op(wire::Opcode::send), wire::kQnSend, 0, {}, {});
      break;
    case RtrType::none:
      break;
  }
}

void Session::terminate(const TerminateError& error) {
  if (state_ != State::established && state_ != State::closing && state_ != State::wait_rtr) return;
  fatal(error);
}

bool Session::idle() const {
  return output_size() == 0 && sink_.orq().empty() && read_queue_.empty() && sink_.irq().empty() &&
         sink_.atomics().empty();
}

void Session::close() {
  if (state_ == State::established || state_ == State::wait_rtr) {
    state_ = State::closing;
    maybe_finish_close();
  } else if (state_ == State::idle || state_ == State::mpa_wait_reply ||
             state_ == State::mpa_wait_request) {
    state_ = State::closed;
    want_shutdown_ = true;
  }
}

void Session::maybe_finish_close() {
  if (state_ != State::closing) return;
  if (!sink_.orq().empty() || !read_queue_.empty() || !sink_.irq().empty() ||
      !sink_.atomics().empty())
    return;
  state_ = State::closed;
  // RFC 5043 §6.1: an accepted session ends with a Session Terminate from at least one side.
  if (config_.llp == Llp::sctp) queue_session_terminate();
  want_shutdown_ = true;
  stall_deadline_.reset();
  start_teardown_timer();
  Event e;
  e.kind = EventKind::closed;
  e.message = "closed gracefully";
  push(std::move(e));
}

void Session::abort() {
  state_ = State::closed;
  deadline_.reset();
  stall_deadline_.reset();
  teardown_deadline_.reset();
  drop_inbound_reads();
  drop_partial_input();
  tx_.clear();
  tx_head_ = 0;
  tx_msgs_.clear();
  tx_msg_taken_ = 0;
  want_shutdown_ = true;
}

}  // namespace ddpscope::session
