// SPDX-License-Identifier: GPL-2.0-or-later
// The endpoint engine: MPA connection setup (RFC 5044 §7, RFC 6581), transmit side and the
// operations a ULP posts (RFC 5040 §5). Receive-side validation is in session_rx.cpp.
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
  sc.rfc7306 = config_.rfc7306;
  sink_ = rdmap::DataSink(sc);
  set_emss(config_.emss);
}

void Session::set_emss(std::uint32_t emss) {
  config_.emss = emss;
  neg_.mulpdu = std::clamp<std::uint32_t>(wire::mulpdu(emss, neg_.tx_markers), kMinMulpdu, 65535);
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
  if (config_.role == Role::initiator) {
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
      fail("MPA handshake timed out");
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
        sink_.clear_inbound_reads();
        irq_sent_ = 0;
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
  if (neg_.enhanced) {
    const auto& pd = *req.enhanced_pd;
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
  if (config_.mpa.reject) {
    queue_reqrep(true);
    state_ = State::failed;
    deadline_.reset();
    start_teardown_timer();
    want_shutdown_ = true;
    Event e;
    e.kind = EventKind::rejected;
    e.message = "rejected by local configuration";
    const ByteView upd = req.ulp_private_data();
    e.private_data.assign(upd.begin(), upd.end());
    push(std::move(e));
    return false;
  }
  queue_reqrep(false);
  if (neg_.peer_to_peer) {
    state_ = State::wait_rtr;
    sink_.expect_rtr(neg_.rtr);
  } else {
    enter_full_operation();
  }
  return true;
}

bool Session::handle_reply(const wire::MpaReqRep& rep) {
  const auto bad = [&](const Violation& v) {
    fatal(v, nullptr, {});
    return false;
  };
  if (rep.kind != wire::MpaFrameKind::reply) return bad(mpa::frame_invalid("expected an MPA Reply"));
  const auto checks = mpa::check_frame(rep, frame_policy(config_.mpa.revision));
  if (const Violation* v = mpa::first_fatal(checks)) return bad(*v);
  if (rep.reject) {
    state_ = State::failed;
    deadline_.reset();
    start_teardown_timer();
    want_shutdown_ = true;
    Event e;
    e.kind = EventKind::rejected;
    e.message = "peer rejected the connection";
    const ByteView upd = rep.ulp_private_data();
    e.private_data.assign(upd.begin(), upd.end());
    push(std::move(e));
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
  if (neg_.peer_to_peer) send_rtr();
  return true;
}

void Session::enter_full_operation() {
  state_ = State::established;
  deadline_.reset();
  Event e;
  e.kind = EventKind::connected;
  if (peer_frame_) {
    const ByteView upd = peer_frame_->ulp_private_data();
    e.private_data.assign(upd.begin(), upd.end());
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

// --- transmit -------------------------------------------------------------------------------

std::uint32_t Session::payload_room(bool tagged) const {
  return neg_.mulpdu - static_cast<std::uint32_t>(tagged ? wire::kDdpTaggedHeaderSize
                                                         : wire::kDdpUntaggedHeaderSize);
}

// One FPDU holding ULPDU = hdr + payload (RFC 5044 §4.1), CRC and markers as negotiated.
void Session::emit_fpdu_header_and(ByteView hdr, ByteView payload) {
  const std::size_t len = hdr.size() + payload.size();
  if (neg_.tx_markers) {
    Bytes ulpdu;
    ulpdu.reserve(len);
    ulpdu.insert(ulpdu.end(), hdr.begin(), hdr.end());
    ulpdu.insert(ulpdu.end(), payload.begin(), payload.end());
    wire::FpduEncodeOptions o;
    o.crc = neg_.crc;
    o.markers = true;
    o.stream_pos = tx_pos_;
    const Bytes raw = wire::encode_fpdu(ulpdu, o);
    tx_.insert(tx_.end(), raw.begin(), raw.end());
    tx_pos_ += raw.size();
    if (output_size() > peak_.tx_bytes) note_usage();
    return;
  }
  const std::size_t start = tx_.size();
  const std::size_t pad = wire::fpdu_pad(len);
  tx_.resize(start + wire::fpdu_size(len));
  std::uint8_t* p = tx_.data() + start;
  p[0] = static_cast<std::uint8_t>(len >> 8);
  p[1] = static_cast<std::uint8_t>(len);
  if (!hdr.empty()) std::memcpy(p + 2, hdr.data(), hdr.size());
  if (!payload.empty()) std::memcpy(p + 2 + hdr.size(), payload.data(), payload.size());
  std::memset(p + 2 + len, 0, pad + wire::kMpaCrcSize);
  if (neg_.crc) mpa_crc_to_wire(crc32c(ByteView(p, 2 + len + pad)), p + 2 + len + pad);
  tx_pos_ += wire::fpdu_size(len);
  if (output_size() > peak_.tx_bytes) note_usage();
}

void Session::emit_untagged(std::uint8_t opcode, std::uint32_t qn, std::uint32_t rsvd_ulp1,
                            ByteView body, ByteView payload, bool /*last_only*/) {
  Bytes joined;
  ByteView msg = payload;
  if (!body.empty()) {
    joined.assign(body.begin(), body.end());
    joined.insert(joined.end(), payload.begin(), payload.end());
    msg = joined;
  }
  const std::uint32_t msn = tx_msn_[qn < 5 ? qn : 0]++;
  const std::size_t room = payload_room(false);
  std::size_t mo = 0;
  Bytes hdr;
  do {
    const std::size_t n = std::min(room, msg.size() - mo);
    wire::DdpHeader h;
    h.control.tagged = false;
    h.control.last = mo + n == msg.size();
    h.rsvd_ulp0 = wire::RdmapControl{wire::kRdmapVersion, 0, opcode}.byte();
    h.rsvd_ulp1 = rsvd_ulp1;
    h.qn = qn;
    h.msn = msn;
    h.mo = static_cast<std::uint32_t>(mo);
    hdr.clear();
    ByteWriter w(hdr);
    wire::encode_ddp_header(h, w);
    emit_fpdu_header_and(hdr, msg.subspan(mo, n));
    mo += n;
  } while (mo < msg.size());
}

void Session::emit_tagged(std::uint8_t opcode, std::uint32_t stag, std::uint64_t to,
                          ByteView payload) {
  emit_tagged_part(opcode, stag, to, payload, true);
}

void Session::emit_tagged_part(std::uint8_t opcode, std::uint32_t stag, std::uint64_t to,
                               ByteView payload, bool final) {
  const std::size_t room = payload_room(true);
  std::size_t off = 0;
  std::uint8_t hdr[wire::kDdpTaggedHeaderSize];
  do {
    const std::size_t n = std::min(room, payload.size() - off);
    hdr[0] =
        static_cast<std::uint8_t>(wire::kDdpFlagTagged | wire::kDdpVersion |
                                  ((final && off + n == payload.size()) ? wire::kDdpFlagLast : 0));
    hdr[1] = wire::RdmapControl{wire::kRdmapVersion, 0, opcode}.byte();
    const std::uint64_t t = to + off;
    for (int i = 0; i < 4; ++i)
      hdr[2 + i] = static_cast<std::uint8_t>(stag >> (24 - 8 * i));
    for (int i = 0; i < 8; ++i)
      hdr[6 + i] = static_cast<std::uint8_t>(t >> (56 - 8 * i));
    emit_fpdu_header_and(ByteView(hdr, sizeof hdr), payload.subspan(off, n));
    off += n;
  } while (off < payload.size());
}

void Session::send_raw_ulpdu(ByteView ulpdu) {
  emit_fpdu_header_and({}, ulpdu);
}

void Session::consume_output(std::size_t n) {
  tx_head_ += std::min(n, output_size());
  if (tx_head_ == tx_.size()) {
    tx_head_ = 0;
    if (tx_.capacity() > 2 * config_.limits.max_tx_bytes)
      Bytes().swap(tx_);  // after a message far larger than the queue's cap
    else
      tx_.clear();
  } else if (tx_head_ > (1u << 20) && tx_head_ * 2 > tx_.size()) {
    tx_.erase(tx_.begin(), tx_.begin() + static_cast<std::ptrdiff_t>(tx_head_));
    tx_head_ = 0;
  }
  pump_read_responses();
  maybe_finish_close();
}

// --- operations -----------------------------------------------------------------------------

bool Session::can_post() const {
  return state_ == State::established;
}

PostStatus Session::post_recv(std::span<std::uint8_t> buffer, std::uint64_t wr_id) {
  if (state_ == State::terminated || state_ == State::closed || state_ == State::failed)
    return PostStatus::not_connected;
  if (recvs_.size() >= config_.limits.max_recv_buffers) return PostStatus::no_resources;
  recvs_.push_back(RecvBuffer{buffer, wr_id});
  return PostStatus::ok;
}

PostStatus Session::send(ByteView data, const SendOptions& options) {
  if (!can_post()) return PostStatus::not_connected;
  if (data.size() > config_.limits.max_message) return PostStatus::invalid;
  if (output_size() > config_.limits.max_tx_bytes) return PostStatus::would_block;
  std::uint8_t opcode = options.solicited ? op(wire::Opcode::send_se) : op(wire::Opcode::send);
  if (options.invalidate_stag)
    opcode = options.solicited ? op(wire::Opcode::send_se_invalidate)
                               : op(wire::Opcode::send_invalidate);
  emit_untagged(opcode, wire::kQnSend, options.invalidate_stag.value_or(0), {}, data);
  Event e;
  e.kind = EventKind::send_completed;
  e.wr_id = options.wr_id;
  e.opcode = opcode;
  e.length = static_cast<std::uint32_t>(data.size());
  push(std::move(e));
  return PostStatus::ok;
}

PostStatus Session::rdma_write(ByteView data, std::uint32_t remote_stag, std::uint64_t remote_to,
                               std::uint64_t wr_id) {
  if (!can_post()) return PostStatus::not_connected;
  if (data.size() > config_.limits.max_message) return PostStatus::invalid;
  if (output_size() > config_.limits.max_tx_bytes) return PostStatus::would_block;
  emit_tagged(op(wire::Opcode::rdma_write), remote_stag, remote_to, data);
  Event e;
  e.kind = EventKind::send_completed;
  e.wr_id = wr_id;
  e.opcode = op(wire::Opcode::rdma_write);
  e.length = static_cast<std::uint32_t>(data.size());
  e.stag = remote_stag;
  e.to = remote_to;
  push(std::move(e));
  return PostStatus::ok;
}

PostStatus Session::rdma_read(std::uint32_t local_stag, std::uint64_t local_to, std::uint32_t size,
                              std::uint32_t remote_stag, std::uint64_t remote_to,
                              std::uint64_t wr_id) {
  if (!can_post()) return PostStatus::not_connected;
  if (size > config_.limits.max_message) return PostStatus::invalid;
  const Region* r = memory_.find(local_stag);
  if (size > 0 &&
      (!r || !r->valid || !(r->access & access::local_write) || local_to < r->base ||
       local_to - r->base > r->mem.size() || size > r->mem.size() - (local_to - r->base)))
    return PostStatus::invalid;
  if (read_queue_.size() >= config_.limits.max_queued_reads) return PostStatus::no_resources;
  wire::ReadRequest rr;
  rr.sink_stag = local_stag;
  rr.sink_to = local_to;
  rr.size = size;
  rr.source_stag = remote_stag;
  rr.source_to = remote_to;
  read_queue_.push_back(QueuedRead{rr, wr_id});
  pump_reads();
  return PostStatus::ok;
}

void Session::pump_reads() {
  while (!read_queue_.empty() && sink_.orq().size() < neg_.ord &&
         (state_ == State::established || state_ == State::closing)) {
    const QueuedRead q = read_queue_.front();
    read_queue_.pop_front();
    Bytes body;
    ByteWriter w(body);
    wire::encode_read_request(q.req, w);
    rdmap::OutstandingRead o;
    o.req = q.req;
    o.wr_id = q.wr_id;
    sink_.read_requested(o);
    emit_untagged(op(wire::Opcode::read_request), wire::kQnReadRequest, 0, body, {});
  }
}

void Session::pump_read_responses() {
  while (!sink_.irq().empty() && output_size() < config_.limits.tx_low_water &&
         (state_ == State::established || state_ == State::closing || state_ == State::wait_rtr)) {
    const wire::ReadRequest rr = sink_.irq().front();
    const std::uint32_t chunk =
        std::min<std::uint32_t>(rr.size - irq_sent_, static_cast<std::uint32_t>(256u << 10));
    ByteView data;
    if (chunk > 0) {
      const Region* r = memory_.find(rr.source_stag);
      // Validated on arrival; a local deregistration since is a local catastrophic error.
      if (!r || rr.source_to + irq_sent_ < r->base ||
          rr.source_to + irq_sent_ - r->base + chunk > r->mem.size()) {
        fatal(rdmap::local_catastrophic());
        return;
      }
      data = ByteView(r->mem.data() + (rr.source_to + irq_sent_ - r->base), chunk);
    }
    const bool last = irq_sent_ + chunk == rr.size;
    emit_tagged_part(op(wire::Opcode::read_response), rr.sink_stag, rr.sink_to + irq_sent_, data,
                     last);
    irq_sent_ += chunk;
    if (last) {
      sink_.read_answered();
      irq_sent_ = 0;
    }
  }
  if (state_ == State::wait_rtr) return;
  maybe_finish_close();
}

PostStatus Session::send_immediate(std::uint64_t data, bool solicited, std::uint64_t wr_id) {
  if (!can_post()) return PostStatus::not_connected;
  if (output_size() > config_.limits.max_tx_bytes) return PostStatus::would_block;
  Bytes body;
  ByteWriter w(body);
  w.be64(data);
  const std::uint8_t opcode =
      solicited ? op(wire::Opcode::immediate_data_se) : op(wire::Opcode::immediate_data);
  emit_untagged(opcode, wire::kQnSend, 0, body, {});
  Event e;
  e.kind = EventKind::send_completed;
  e.wr_id = wr_id;
  e.opcode = opcode;
  e.length = 8;
  push(std::move(e));
  return PostStatus::ok;
}

PostStatus Session::atomic_fetch_add(std::uint32_t remote_stag, std::uint64_t remote_to,
                                     std::uint64_t add, std::uint64_t wr_id) {
  if (!can_post()) return PostStatus::not_connected;
  if (sink_.atomics().size() >= config_.limits.max_outstanding_atomics)
    return PostStatus::no_resources;
  wire::AtomicRequest a;
  a.atomic_opcode = static_cast<std::uint8_t>(wire::AtomicOp::fetch_add);
  a.request_id = next_atomic_id_++;
  a.remote_stag = remote_stag;
  a.remote_to = remote_to;
  a.add_swap_data = add;
  Bytes body;
  ByteWriter w(body);
  wire::encode_atomic_request(a, w);
  rdmap::PendingAtomic pending;
  pending.request_id = a.request_id;
  pending.wr_id = wr_id;
  sink_.atomic_requested(pending);
  emit_untagged(op(wire::Opcode::atomic_request), wire::kQnAtomicRequest, 0, body, {});
  return PostStatus::ok;
}

PostStatus Session::atomic_compare_swap(std::uint32_t remote_stag, std::uint64_t remote_to,
                                        std::uint64_t compare, std::uint64_t swap,
                                        std::uint64_t wr_id) {
  if (!can_post()) return PostStatus::not_connected;
  if (sink_.atomics().size() >= config_.limits.max_outstanding_atomics)
    return PostStatus::no_resources;
  wire::AtomicRequest a;
  a.atomic_opcode = static_cast<std::uint8_t>(wire::AtomicOp::compare_swap);
  a.request_id = next_atomic_id_++;
  a.remote_stag = remote_stag;
  a.remote_to = remote_to;
  a.add_swap_data = swap;
  a.add_swap_mask = ~std::uint64_t{0};
  a.compare_data = compare;
  a.compare_mask = ~std::uint64_t{0};
  Bytes body;
  ByteWriter w(body);
  wire::encode_atomic_request(a, w);
  rdmap::PendingAtomic pending;
  pending.request_id = a.request_id;
  pending.wr_id = wr_id;
  sink_.atomic_requested(pending);
  emit_untagged(op(wire::Opcode::atomic_request), wire::kQnAtomicRequest, 0, body, {});
  return PostStatus::ok;
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
  sink_.clear_inbound_reads();
  irq_sent_ = 0;
  drop_partial_input();
  tx_.clear();
  tx_head_ = 0;
  want_shutdown_ = true;
}

}  // namespace ddpscope::session
