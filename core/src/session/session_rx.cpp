// SPDX-License-Identifier: GPL-2.0-or-later
// The endpoint engine's receive side: MPA FPDU framing (RFC 5044 §4: markers, CRC) and the
// Data Sink checks of DDP (RFC 5041 §7) and RDMAP (RFC 5040 §5, §7, RFC 7306). Every check runs
// before a single octet of the segment is placed. The (layer, type, code) sent for each
// violation follows Linux siw (siw_qp_rx.c), except that an untagged message longer than its
// buffer draws RFC 5041's own code 0x05 (siw sends 0x02).
#include <algorithm>
#include <cstring>

#include "ddpscope/mpa/fpdu_walker.h"
#include "ddpscope/session/session.h"

namespace ddpscope::session {

namespace {
constexpr std::uint8_t kRdmap = static_cast<std::uint8_t>(TermLayer::rdmap);
constexpr std::uint8_t kDdp = static_cast<std::uint8_t>(TermLayer::ddp);
constexpr std::uint8_t kLlp = static_cast<std::uint8_t>(TermLayer::llp);
constexpr std::uint8_t op(wire::Opcode o) {
  return static_cast<std::uint8_t>(o);
}
TerminateError tagged(std::uint8_t code) {
  return {kDdp, ddp_etype::tagged_buffer, code};
}
TerminateError untagged(std::uint8_t code) {
  return {kDdp, ddp_etype::untagged_buffer, code};
}
TerminateError rdmap_op(std::uint8_t code) {
  return {kRdmap, rdmap_etype::remote_operation, code};
}
TerminateError rdmap_prot(std::uint8_t code) {
  return {kRdmap, rdmap_etype::remote_protection, code};
}
// The 32-bit word accessed by an atomic, in host order (RFC 7306 leaves representation to the
// host; both ends of our tests share one).
std::uint64_t load64(const std::uint8_t* p) {
  std::uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}
void store64(std::uint8_t* p, std::uint64_t v) {
  std::memcpy(p, &v, 8);
}
}  // namespace

bool Session::receiving() const {
  return state_ == State::established || state_ == State::closing || state_ == State::wait_rtr;
}

bool Session::partial_input() const {
  if (rx_head_ < rx_.size() || rx_tagged_.in_progress) return true;
  return std::any_of(std::begin(rx_q_), std::end(rx_q_),
                     [](const UntaggedRx& q) { return q.in_progress; });
}

void Session::receive(ByteView data, std::int64_t now_ns) {
  now_ = std::max(now_, now_ns);
  receive(data);
}

void Session::receive(ByteView data) {
  if (state_ == State::idle || state_ == State::terminated || state_ == State::failed ||
      state_ == State::closed)
    return;
  const std::uint64_t fpdus_before = fpdus_in_;
  if (!rx_full_) {
    // The Request/Reply is buffered (handle_handshake bounds it); what follows it is framed
    // from the same buffer.
    rx_.insert(rx_.end(), data.begin(), data.end());
    handle_handshake();
    if (rx_full_) process_fpdus();
  } else {
    receive_framed(data);
  }
  if (rx_head_ == rx_.size()) {
    rx_head_ = 0;
    if (rx_.capacity() > (256u << 10) && !neg_.rx_markers)
      Bytes().swap(rx_);  // after a paused flood (markers streams always buffer: keep it)
    else
      rx_.clear();
  }
  update_stall_timer(fpdus_in_ != fpdus_before);
  note_usage();
}

// Without markers only a partial FPDU is ever copied: its missing octets complete it, and the
// rest is framed straight from the caller's octets; an incomplete tail (at most one FPDU) is
// kept. With markers, or while paused, the octets are buffered.
void Session::receive_framed(ByteView data) {
  const auto compact = [&] {
    if (rx_head_ == rx_.size()) {
      rx_.clear();
      rx_head_ = 0;
    } else if (rx_head_ > (64u << 10)) {
      rx_.erase(rx_.begin(), rx_.begin() + static_cast<std::ptrdiff_t>(rx_head_));
      rx_head_ = 0;
    }
  };
  if (neg_.rx_markers || input_paused_) {
    compact();
    rx_.insert(rx_.end(), data.begin(), data.end());
    if (!input_paused_) process_fpdus();
    return;
  }
  while (rx_head_ < rx_.size() && !data.empty()) {
    const std::size_t have = rx_.size() - rx_head_;
    const std::size_t want = have < 2 ? 2 : wire::fpdu_size(load_be16(&rx_[rx_head_]));
    const std::size_t take = std::min(want - have, data.size());
    rx_.insert(rx_.end(), data.begin(), data.begin() + static_cast<std::ptrdiff_t>(take));
    data = data.subspan(take);
    if (have + take < want || want == 2) continue;
    process_fpdus();
    if (!receiving()) return;
    if (input_paused_) {
      rx_.insert(rx_.end(), data.begin(), data.end());
      return;
    }
  }
  if (rx_head_ < rx_.size()) return;  // still partial: all of `data` went into it
  rx_.clear();
  rx_head_ = 0;
  if (data.empty()) return;
  direct_ = data;
  direct_mode_ = true;
  process_fpdus();
  direct_mode_ = false;
  if (!direct_.empty() && receiving()) rx_.assign(direct_.begin(), direct_.end());
  direct_ = {};
}

void Session::resume_input() {
  if (!input_paused_ || events_.size() >= config_.limits.max_pending_events) return;
  input_paused_ = false;
  if (!receiving()) return;
  const std::uint64_t fpdus_before = fpdus_in_;
  process_fpdus();
  if (rx_head_ == rx_.size()) {
    rx_.clear();
    rx_head_ = 0;
  }
  update_stall_timer(fpdus_in_ != fpdus_before);
  note_usage();
}

void Session::drop_partial_input() {
  Bytes().swap(rx_);
  rx_head_ = 0;
  input_paused_ = false;
  for (auto& q : rx_q_)
    q.in_progress = false;
  rx_tagged_.in_progress = false;
}

void Session::update_stall_timer(bool progress) {
  if (!receiving() || !partial_input()) {
    stall_deadline_.reset();
    return;
  }
  // Only a complete FPDU counts as progress: a peer trickling one octet at a time into a
  // partial FPDU does not hold the connection forever.
  if (progress || !stall_deadline_) stall_deadline_ = now_ + config_.limits.stall_timeout_ns;
}

void Session::receive_eof() {
  switch (state_) {
    case State::mpa_wait_reply:
    case State::mpa_wait_request:
    case State::wait_rtr:
      fail("peer closed during the MPA handshake");
      return;
    case State::established:
    case State::closing: {
      drop_partial_input();  // a half FPDU or message is never delivered
      state_ = State::closed;
      want_shutdown_ = true;
      Event e;
      e.kind = EventKind::closed;
      e.message = idle() ? "peer closed" : "peer closed with operations outstanding";
      push(std::move(e));
      stall_deadline_.reset();
      start_teardown_timer();
      return;
    }
    default:
      return;
  }
}

void Session::process_fpdus() {
  while (receiving()) {
    if (events_.size() >= config_.limits.max_pending_events) {
      input_paused_ = direct_mode_ ? !direct_.empty() : rx_head_ < rx_.size();
      return;
    }
    ByteView ulpdu;
    std::size_t raw_len = 0;
    bool fatal_error = false;
    if (!next_fpdu(ulpdu, raw_len, fatal_error)) return;
    if (fatal_error) return;
    handle_ulpdu(ulpdu);
    ++fpdus_in_;
    if (direct_mode_)
      direct_ = direct_.subspan(raw_len);
    else
      rx_head_ += raw_len;
    rx_pos_ += raw_len;
  }
}

// Frames the next FPDU at rx_head_ with the FPDU walker (RFC 5044 §4). Markers (§4.3) sit at
// every 512th octet from the peer's S0; both conventions for a marker right in front of a header
// are accepted (the CRC then covers it or not). The returned ULPDU views the received octets
// when no marker falls inside the FPDU, else scratch_.
bool Session::next_fpdu(ByteView& ulpdu, std::size_t& raw_len, bool& fatal_error) {
  const ByteView avail = direct_mode_ ? direct_ : ByteView(rx_).subspan(rx_head_);
  mpa::FpduWalkParams params;
  params.stream_pos = rx_pos_;
  params.markers = neg_.rx_markers;
  params.crc = neg_.crc;
  mpa::FpduWalk w;
  if (mpa::walk_fpdu(avail, params, scratch_, w) == mpa::WalkStatus::need_more) return false;
  raw_len = w.raw_length;
  if (!mpa::fpduptrs_point_at_start(w)) {
    fatal_error = true;
    fatal({TerminateError{kLlp, llp_etype::mpa, mpa_code::marker_mismatch}}, nullptr, {});
    return true;
  }
  if (neg_.crc && !w.crc_matches()) {
    fatal_error = true;
    fatal({TerminateError{kLlp, llp_etype::mpa, mpa_code::crc_error}}, nullptr, {});
    return true;
  }
  ulpdu = w.ulpdu();
  return true;
}

void Session::handle_ulpdu(ByteView ulpdu) {
  auto seg = wire::decode_ddp_segment(ulpdu);
  if (!seg) {
    // Too short for any DDP header.
    fatal({rdmap_op(rdmap_code::unspecified)}, nullptr, ulpdu);
    return;
  }
  const wire::DdpHeader& h = seg->header;
  if (h.control.version != wire::kDdpVersion) {
    fatal({h.control.tagged ? tagged(ddp_tagged_code::invalid_version)
                            : untagged(ddp_untagged_code::invalid_version)},
          nullptr, ulpdu);
    return;
  }
  const auto rc = wire::RdmapControl::from_byte(h.rsvd_ulp0);
  if (rc.version != wire::kRdmapVersion) {
    fatal({rdmap_op(rdmap_code::invalid_version)}, nullptr, ulpdu);
    return;
  }
  const auto& info = wire::opcode_info(rc.opcode);
  if (!info.defined || (info.rfc7306 && !config_.rfc7306) || info.tagged != h.control.tagged) {
    fatal({rdmap_op(rdmap_code::unexpected_opcode)}, nullptr, ulpdu);
    return;
  }
  if (rtr_pending_ && !(rc.opcode == op(wire::Opcode::terminate) && !h.control.tagged)) {
    // RFC 6581 §8: the first FPDU is the negotiated zero-length RTR message.
    bool ok = false;
    if (neg_.rtr == RtrType::write)
      ok = rc.opcode == op(wire::Opcode::rdma_write) && h.control.last && seg->payload.empty();
    else if (neg_.rtr == RtrType::read)
      ok = rc.opcode == op(wire::Opcode::read_request) && h.qn == wire::kQnReadRequest &&
           h.msn == 1 && seg->payload.size() == wire::ReadRequest::kSize &&
           load_be32(&seg->payload[12]) == 0;
    else if (neg_.rtr == RtrType::send)
      ok = rc.opcode == op(wire::Opcode::send) && h.qn == wire::kQnSend && h.msn == 1 &&
           h.mo == 0 && h.control.last && seg->payload.empty();
    if (!ok) {
      fatal({TerminateError{kLlp, llp_etype::mpa, mpa_code::no_matching_rtr}}, nullptr, {});
      return;
    }
    rtr_pending_ = false;
    if (neg_.rtr == RtrType::read) {
      auto rr = wire::decode_read_request(seg->payload);
      irq_.push_back(InboundRead{*rr, 0});
      rx_q_[wire::kQnReadRequest].expected_msn++;
    } else if (neg_.rtr == RtrType::send) {
      rx_q_[wire::kQnSend].expected_msn++;
    }
    enter_full_operation();
    pump_read_responses();
    return;
  }
  std::optional<Violation> v =
      h.control.tagged ? handle_tagged(seg.value()) : handle_untagged(seg.value());
  if (v) fatal(*v, &seg.value(), ulpdu);
}

std::optional<TerminateError> Session::check_region(std::uint32_t stag, std::uint64_t to,
                                                    std::uint64_t len, std::uint8_t need,
                                                    bool rdmap, Region** out) {
  Region* r = memory_.find(stag);
  if (!r || !r->valid)
    return rdmap ? rdmap_prot(rdmap_code::invalid_stag) : tagged(ddp_tagged_code::invalid_stag);
  if (r->pd != config_.pd || (r->stream && *r->stream != stream_id_))
    return rdmap ? rdmap_prot(rdmap_code::stag_not_associated)
                 : tagged(ddp_tagged_code::stag_not_associated);
  if (!(r->access & need))
    // siw: a missing remote-write right draws DDP Invalid STag (no better DDP code exists).
    return rdmap ? rdmap_prot(rdmap_code::access_rights) : tagged(ddp_tagged_code::invalid_stag);
  if (len > 0 && to + len - 1 < to)
    return rdmap ? rdmap_prot(rdmap_code::to_wrap) : tagged(ddp_tagged_code::to_wrap);
  if (to < r->base || to - r->base > r->mem.size() || len > r->mem.size() - (to - r->base))
    return rdmap ? rdmap_prot(rdmap_code::base_bounds) : tagged(ddp_tagged_code::base_bounds);
  *out = r;
  return std::nullopt;
}

std::optional<Session::Violation> Session::handle_tagged(const wire::DdpSegment& seg) {
  const wire::DdpHeader& h = seg.header;
  const std::uint8_t opcode = wire::RdmapControl::from_byte(h.rsvd_ulp0).opcode;
  const std::uint64_t len = seg.payload.size();
  TaggedRx& t = rx_tagged_;
  if (t.in_progress) {
    // RFC 5041 §5.2: one tagged message at a time; STag constant, TO contiguous.
    if (opcode != t.opcode || h.stag != t.stag)
      return Violation{tagged(ddp_tagged_code::invalid_stag), true};
    if (h.to != t.next_to) return Violation{tagged(ddp_tagged_code::base_bounds), true};
  }
  if (opcode == op(wire::Opcode::read_response)) {
    if (orq_.empty())
      return Violation{TerminateError{kDdp, ddp_etype::local_catastrophic, 0}, false};
    OutstandingRead& rd = orq_.front();
    if (h.stag != rd.sink_stag) return Violation{tagged(ddp_tagged_code::invalid_stag), true};
    if (h.to != rd.sink_to + rd.received || rd.received + len > rd.size ||
        (h.control.last && rd.received + len != rd.size))
      return Violation{tagged(ddp_tagged_code::base_bounds), true};
    if (len > 0) {
      Region* r = nullptr;
      if (auto e = check_region(h.stag, h.to, len, access::local_write, false, &r))
        return Violation{*e, true};
      std::memcpy(r->mem.data() + (h.to - r->base), seg.payload.data(), len);
      bytes_placed_ += len;
    }
    rd.received += static_cast<std::uint32_t>(len);
    t.in_progress = !h.control.last;
    t.opcode = opcode;
    t.stag = h.stag;
    t.next_to = h.to + len;
    if (h.control.last) {
      const OutstandingRead done = rd;
      orq_.pop_front();
      if (!done.rtr) {
        Event e;
        e.kind = EventKind::read_completed;
        e.wr_id = done.wr_id;
        e.opcode = opcode;
        e.length = done.size;
        e.stag = done.sink_stag;
        e.to = done.sink_to;
        push(std::move(e));
      }
      pump_reads();
      maybe_finish_close();
    }
    return std::nullopt;
  }
  // RDMA Write. A zero-length Write places nothing and needs no valid STag (RFC 5040 §5.1;
  // siw's Write RTR uses STag 1).
  if (!(len == 0 && !t.in_progress && h.control.last)) {
    Region* r = nullptr;
    if (auto e = check_region(h.stag, h.to, len, access::remote_write, false, &r))
      return Violation{*e, true};
    if (len > 0) std::memcpy(r->mem.data() + (h.to - r->base), seg.payload.data(), len);
    bytes_placed_ += len;
  }
  if (!t.in_progress) {
    t.first_to = h.to;
    t.length = 0;
  }
  t.in_progress = !h.control.last;
  t.opcode = opcode;
  t.stag = h.stag;
  t.next_to = h.to + len;
  t.length += len;
  if (h.control.last) {
    Event e;
    e.kind = EventKind::write_placed;
    e.opcode = opcode;
    e.stag = h.stag;
    e.to = t.first_to;
    e.length = static_cast<std::uint32_t>(t.length);
    push(std::move(e));
  }
  return std::nullopt;
}

std::optional<Session::Violation> Session::handle_untagged(const wire::DdpSegment& seg) {
  const wire::DdpHeader& h = seg.header;
  const std::uint8_t opcode = wire::RdmapControl::from_byte(h.rsvd_ulp0).opcode;
  std::uint32_t want_qn = wire::kQnSend;
  if (opcode == op(wire::Opcode::read_request))
    want_qn = wire::kQnReadRequest;
  else if (opcode == op(wire::Opcode::terminate))
    want_qn = wire::kQnTerminate;
  else if (opcode == op(wire::Opcode::atomic_request))
    want_qn = wire::kQnAtomicRequest;
  else if (opcode == op(wire::Opcode::atomic_response))
    want_qn = wire::kQnAtomicResponse;
  if (h.qn != want_qn) return Violation{untagged(ddp_untagged_code::invalid_qn), true};
  if (opcode == op(wire::Opcode::terminate)) {
    handle_terminate(seg);
    return std::nullopt;
  }
  UntaggedRx& q = rx_q_[h.qn];
  if (h.msn != q.expected_msn)
    return Violation{untagged(ddp_untagged_code::invalid_msn_range), true};
  if (h.mo != (q.in_progress ? q.mo : 0))
    return Violation{untagged(ddp_untagged_code::invalid_mo), true};
  if (wire::opcode_is_send_family(opcode)) return handle_send(seg, q);
  if (opcode == op(wire::Opcode::read_request)) return handle_read_request(seg, q);
  if (opcode == op(wire::Opcode::immediate_data) || opcode == op(wire::Opcode::immediate_data_se))
    return handle_immediate(seg, q);
  return handle_atomic(seg, q);
}

std::optional<Session::Violation> Session::handle_send(const wire::DdpSegment& seg, UntaggedRx& q) {
  const wire::DdpHeader& h = seg.header;
  const std::uint8_t opcode = wire::RdmapControl::from_byte(h.rsvd_ulp0).opcode;
  if (recvs_.empty()) return Violation{untagged(ddp_untagged_code::invalid_msn_no_buffer), true};
  RecvBuffer& buf = recvs_.front();
  if (seg.payload.size() > buf.mem.size() - q.mo)
    return Violation{untagged(ddp_untagged_code::message_too_long), true};
  Region* inv = nullptr;
  if (h.control.last && wire::opcode_invalidates(opcode)) {
    // RFC 5040 §5.3: the STag must be valid and in our protection domain to be invalidated.
    inv = memory_.find(h.rsvd_ulp1);
    if (!inv || !inv->valid || inv->pd != config_.pd || !inv->invalidatable)
      return Violation{rdmap_prot(rdmap_code::stag_cannot_invalidate), true};
  }
  if (!seg.payload.empty())
    std::memcpy(buf.mem.data() + q.mo, seg.payload.data(), seg.payload.size());
  q.mo += static_cast<std::uint32_t>(seg.payload.size());
  q.in_progress = !h.control.last;
  if (!h.control.last) return std::nullopt;
  Event e;
  e.kind = EventKind::recv_completed;
  e.wr_id = buf.wr_id;
  e.opcode = opcode;
  e.length = q.mo;
  e.solicited =
      opcode == op(wire::Opcode::send_se) || opcode == op(wire::Opcode::send_se_invalidate);
  if (inv) {
    inv->valid = false;
    e.invalidated_stag = h.rsvd_ulp1;
  }
  recvs_.pop_front();
  q.mo = 0;
  q.expected_msn++;
  push(std::move(e));
  return std::nullopt;
}

std::optional<Session::Violation> Session::handle_read_request(const wire::DdpSegment& seg,
                                                               UntaggedRx& q) {
  if (!seg.header.control.last || seg.payload.size() != wire::ReadRequest::kSize)
    return Violation{rdmap_op(rdmap_code::unspecified), true};
  auto rr = wire::decode_read_request(seg.payload);
  if (!rr) return Violation{rdmap_op(rdmap_code::unspecified), true};
  // RFC 5040 §6.4 / RFC 6581: at most IRD Read Requests in progress.
  if (irq_.size() >= neg_.ird) return Violation{rdmap_op(rdmap_code::catastrophic_stream), true};
  if (rr->size > 0) {
    Region* r = nullptr;
    if (auto e =
            check_region(rr->source_stag, rr->source_to, rr->size, access::remote_read, true, &r))
      return Violation{*e, true, true};
  }
  irq_.push_back(InboundRead{*rr, 0});
  q.expected_msn++;
  Event e;
  e.kind = EventKind::read_requested;
  e.opcode = static_cast<std::uint8_t>(wire::Opcode::read_request);
  e.stag = rr->source_stag;
  e.to = rr->source_to;
  e.length = rr->size;
  e.value = (std::uint64_t{rr->sink_stag} << 32);
  push(std::move(e));
  pump_read_responses();
  return std::nullopt;
}

std::optional<Session::Violation> Session::handle_immediate(const wire::DdpSegment& seg,
                                                            UntaggedRx& q) {
  if (!seg.header.control.last || seg.payload.size() != wire::kImmediateDataSize)
    return Violation{rdmap_op(rdmap_code::unspecified), true};
  const std::uint8_t opcode = wire::RdmapControl::from_byte(seg.header.rsvd_ulp0).opcode;
  Event e;
  e.kind = EventKind::immediate_received;
  e.opcode = opcode;
  e.value = load_be64(seg.payload.data());
  e.length = 8;
  e.solicited = opcode == op(wire::Opcode::immediate_data_se);
  q.expected_msn++;
  push(std::move(e));
  return std::nullopt;
}

std::optional<Session::Violation> Session::handle_atomic(const wire::DdpSegment& seg,
                                                         UntaggedRx& q) {
  const std::uint8_t opcode = wire::RdmapControl::from_byte(seg.header.rsvd_ulp0).opcode;
  if (opcode == op(wire::Opcode::atomic_response)) {
    auto ar = wire::decode_atomic_response(seg.payload);
    if (!ar || !seg.header.control.last || seg.payload.size() != wire::AtomicResponse::kSize)
      return Violation{rdmap_op(rdmap_code::unspecified), true};
    auto it = std::find_if(atomics_.begin(), atomics_.end(),
                           [&](const PendingAtomic& a) { return a.request_id == ar->request_id; });
    if (it == atomics_.end()) return Violation{rdmap_op(rdmap_code::unexpected_opcode), true};
    Event e;
    e.kind = EventKind::atomic_completed;
    e.wr_id = it->wr_id;
    e.opcode = opcode;
    e.value = ar->original_value;
    e.length = 8;
    atomics_.erase(it);
    q.expected_msn++;
    push(std::move(e));
    maybe_finish_close();
    return std::nullopt;
  }
  auto a = wire::decode_atomic_request(seg.payload);
  if (!a || !seg.header.control.last || seg.payload.size() != wire::AtomicRequest::kSize)
    return Violation{rdmap_op(rdmap_code::unspecified), true};
  if (a->atomic_opcode != static_cast<std::uint8_t>(wire::AtomicOp::fetch_add) &&
      a->atomic_opcode != static_cast<std::uint8_t>(wire::AtomicOp::compare_swap))
    return Violation{rdmap_op(rdmap_code::unexpected_opcode), true};
  // A peer that sends requests but never reads the responses must not grow our queue without
  // bound (RFC 7306 bounds outstanding atomics like Read Requests).
  if (output_size() > config_.limits.max_tx_bytes)
    return Violation{rdmap_op(rdmap_code::catastrophic_stream), true};
  Region* r = nullptr;
  if (auto e = check_region(a->remote_stag, a->remote_to, 8, access::remote_atomic, true, &r))
    return Violation{*e, true};
  if (a->remote_to % 8 != 0) return Violation{rdmap_prot(rdmap_code::base_bounds), true};
  std::uint8_t* p = r->mem.data() + (a->remote_to - r->base);
  const std::uint64_t old = load64(p);
  if (a->atomic_opcode == static_cast<std::uint8_t>(wire::AtomicOp::fetch_add)) {
    store64(p, old + a->add_swap_data);
  } else if (((old ^ a->compare_data) & a->compare_mask) == 0) {
    store64(p, (old & ~a->add_swap_mask) | (a->add_swap_data & a->add_swap_mask));
  }
  q.expected_msn++;
  wire::AtomicResponse resp;
  resp.request_id = a->request_id;
  resp.original_value = old;
  Bytes body;
  ByteWriter w(body);
  wire::encode_atomic_response(resp, w);
  emit_untagged(op(wire::Opcode::atomic_response), wire::kQnAtomicResponse, 0, body, {});
  return std::nullopt;
}

void Session::handle_terminate(const wire::DdpSegment& seg) {
  auto t = wire::decode_terminate(seg.payload);
  Event e;
  e.kind = EventKind::terminate_received;
  if (t) {
    e.terminate = TerminateError{t->control.layer, t->control.etype, t->control.code};
    e.message = terminate_error_name(e.terminate);
  } else {
    e.message = "malformed Terminate";
  }
  term_received_ = e.terminate;
  state_ = State::terminated;
  deadline_.reset();
  stall_deadline_.reset();
  irq_.clear();  // RFC 5040 §5.4: no more Read Responses after the stream is terminated
  start_teardown_timer();
  push(std::move(e));
}

// RFC 5040 §4.8 / §5.4: report the error in a Terminate on QN 2, then stop. Quotes the DDP
// header (M+D) for DDP and RDMAP stream errors, and the Read Request (R) for RDMAP Remote
// Protection errors on it, as siw does.
void Session::fatal(const Violation& v, const wire::DdpSegment* seg, ByteView ulpdu) {
  if (state_ == State::terminated || state_ == State::closed) return;
  wire::Terminate t;
  t.control.layer = v.error.layer;
  t.control.etype = v.error.etype;
  t.control.code = v.error.code;
  if (v.quote_ddp && seg) {
    t.control.m = true;
    t.control.d = true;
    t.ddp_segment_length = static_cast<std::uint16_t>(ulpdu.size());
    t.ddp_header = seg->header;
    if (v.quote_rdmap && seg->payload.size() >= wire::kTerminateRdmapHeaderSize) {
      t.control.r = true;
      t.rdmap_header.assign(seg->payload.begin(),
                            seg->payload.begin() + wire::kTerminateRdmapHeaderSize);
    }
  }
  Bytes body;
  ByteWriter w(body);
  wire::encode_terminate(t, config_.terminate_layout, w);
  if (tx_full_) emit_untagged(op(wire::Opcode::terminate), wire::kQnTerminate, 0, body, {});
  term_sent_ = v.error;
  state_ = State::terminated;
  deadline_.reset();
  stall_deadline_.reset();
  start_teardown_timer();
  irq_.clear();
  Event e;
  e.kind = EventKind::terminate_sent;
  e.terminate = v.error;
  e.message = terminate_error_name(v.error);
  push(std::move(e));
}

}  // namespace ddpscope::session
