// SPDX-License-Identifier: GPL-2.0-or-later
// The endpoint engine's receive side: MPA FPDU framing (RFC 5044 §4: markers, CRC), then each
// DDP segment through the Data Sink model (rdmap/data_sink.h), which runs every DDP and RDMAP
// rule before a single octet is placed and names the Terminate a violation draws; here only the
// placement into registered memory and posted buffers, and the ULP's events.
#include <algorithm>
#include <cstring>

#include "ddpscope/mpa/fpdu_walker.h"
#include "ddpscope/mpa/rules.h"
#include "ddpscope/session/session.h"
#include "ddpscope/wire/sctp.h"

namespace ddpscope::session {

namespace {
constexpr std::uint8_t op(wire::Opcode o) {
  return static_cast<std::uint8_t>(o);
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
  if (waiting_forever_) return false;
  return state_ == State::established || state_ == State::closing || state_ == State::wait_rtr;
}

bool Session::partial_input() const {
  return rx_head_ < rx_.size() || sink_.has_open_message();
}

void Session::receive(ByteView data, std::int64_t now_ns) {
  now_ = std::max(now_, now_ns);
  receive(data);
}

void Session::receive(ByteView data) {
  if (config_.llp == Llp::sctp) return;  // receive_message
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

// SCTP (RFC 5043): the association delivers whole user messages, unordered (§4, §10): they are
// put in DDP-SSN order (sctp::SsnOrder) and then judged. Session control (PPID 17) sets the DDP
// Stream up; after that every PPID 16 message's DDP segment (from octet 2) goes to the Data Sink
// model, exactly as an MPA FPDU's ULPDU. SCTP-level rules end the stream with a Session
// Terminate (end_stream), DDP and RDMAP rules with an RDMAP Terminate (fatal), as over MPA.
void Session::receive_message(std::uint32_t ppid, std::uint16_t stream_id, ByteView data,
                              std::int64_t now_ns, bool unordered) {
  now_ = std::max(now_, now_ns);
  if (config_.llp != Llp::sctp || state_ == State::idle || state_ == State::terminated ||
      state_ == State::failed || state_ == State::closed)
    return;
  const std::uint64_t before = fpdus_in_;
  if (stream_id != config_.sctp_stream) {
    // One DDP Stream per SCTP stream (RFC 5043 §6): another stream is not ours to read.
    end_stream(sctp::violation(FindingId::sctp_session_invalid,
                               "a DDP segment or session control message on SCTP stream " +
                                   std::to_string(stream_id) + ", not this DDP Stream's " +
                                   std::to_string(config_.sctp_stream)));
  } else if (ppid != wire::kPpidDdpSessionControl && ppid != wire::kPpidDdpSegment) {
    end_stream(sctp::violation(FindingId::sctp_ppid_invalid,
                               "a user message with PPID " + std::to_string(ppid) +
                                   " on a DDP Stream (RFC 5043: 16 or 17)"));
  } else if (auto ordered = sctp::check_unordered(unordered, ppid, "a user message")) {
    end_stream(*ordered);
  } else if (const auto msg = wire::decode_ddp_sctp_message(data); !msg) {
    end_stream(sctp::violation(ppid == wire::kPpidDdpSegment ? FindingId::sctp_ppid_invalid
                                                             : FindingId::sctp_session_invalid,
                               msg.error().message));
  } else {
    using V = sctp::SsnOrder<HeldMessage>::Verdict;
    const auto deliver = [&](std::uint16_t, HeldMessage&& m) { receive_in_order(m.ppid, m.data); };
    // In order (the common case): judged where it lies; only a message ahead of a hole is copied.
    V v = V::delivered;
    if (rx_order_.take_if_next(msg->ddp_ssn)) {
      receive_in_order(ppid, data);
      rx_order_.release(deliver);
    } else {
      v = rx_order_.push(msg->ddp_ssn, HeldMessage{ppid, Bytes(data.begin(), data.end())}, deliver);
    }
    if (v == V::behind || v == V::duplicate) {
      end_stream(
          sctp::violation(FindingId::sctp_ssn_invalid, "DDP-SSN " + std::to_string(msg->ddp_ssn) +
                                                           " used again (expected " +
                                                           std::to_string(rx_order_.next()) + ")"));
    } else if (v == V::held && rx_order_.held_messages() > kMaxHeldMessages) {
      end_stream(sctp::violation(
          FindingId::sctp_ssn_invalid,
          "DDP-SSN " + std::to_string(rx_order_.next()) + " never arrived while " +
              std::to_string(rx_order_.held_messages()) + " later messages waited"));
    }
  }
  if (receiving() && events_.size() >= config_.limits.max_pending_events) input_paused_ = true;
  update_stall_timer(fpdus_in_ != before);
  note_usage();
}

// One message of the peer's in DDP-SSN order.
void Session::receive_in_order(std::uint32_t ppid, ByteView msg) {
  if (state_ == State::idle || state_ == State::terminated || state_ == State::failed ||
      state_ == State::closed)
    return;
  if (ppid == wire::kPpidDdpSessionControl) {
    handle_session_control(msg);
    return;
  }
  // RFC 5043 §6.6: the responder reads the active side's segments once it has its Initiate (it
  // was acknowledged when it arrived); the initiator reads the passive side's after its Accept.
  if (auto v = sctp_rules_.on_segment(1 - own_side(), config_.role == Role::responder)) {
    end_stream(*v);
    return;
  }
  if (!rx_full_) {
    // Accepted, but not yet Full Operation on our side (the RTR pending): as over MPA.
    end_stream(sctp::violation(FindingId::sctp_segment_early,
                               "a DDP segment before the DDP Stream Session was set up"));
    return;
  }
  handle_ulpdu(msg.subspan(wire::kDdpSsnSize));
  ++fpdus_in_;
}

void Session::resume_input() {
  if (!input_paused_ || events_.size() >= config_.limits.max_pending_events) return;
  input_paused_ = false;
  if (!receiving() || config_.llp == Llp::sctp) return;
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
  sink_.drop_open_messages();
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
      fail(config_.llp == Llp::sctp ? "peer closed during the DDP Stream session setup"
                                    : "peer closed during the MPA handshake");
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
    fatal(mpa::marker_mismatch("a marker's FPDUPTR does not point at its FPDU's start"), nullptr,
          {});
    return true;
  }
  if (neg_.crc && !w.crc_matches()) {
    fatal_error = true;
    fatal(mpa::crc_mismatch(w.crc_field, w.crc_all), nullptr, {});
    return true;
  }
  ulpdu = w.ulpdu();
  return true;
}

void Session::handle_ulpdu(ByteView ulpdu) {
  auto seg = wire::decode_ddp_segment(ulpdu);
  if (!seg) {
    fatal(ddp::header_too_short(ulpdu.size()), nullptr, ulpdu);
    return;
  }
  if (setup_gate_ && config_.llp == Llp::sctp) setup_gate_.reset();
  if (setup_gate_) {
    const auto from =
        config_.role == Role::responder ? mpa::Sender::initiator : mpa::Sender::responder;
    const auto v = mpa::check_setup_order(from, tx_taken_ >= *setup_gate_, seg->header);
    setup_gate_.reset();
    if (v) {
      fatal(*v, nullptr, ulpdu);
      return;
    }
  }
  SinkView view(*this);
  const rdmap::SegmentStep step = sink_.receive(*seg, view);
  if (step.violation) {
    const SinkAnswer answer = sink_answer(config_.sink_profile, *step.violation);
    if (answer.applies && answer.outcome != SinkOutcome::accept) {
      fatal(*step.violation, &seg.value(), ulpdu);
      return;
    }
  }
  if (step.rtr) {
    // RFC 6581 §9.2: the negotiated RTR opened the connection; it completes nothing for the ULP
    // (a Read RTR is answered with a zero-length Read Response from the IRQ).
    enter_full_operation();
    pump_read_responses();
    return;
  }
  switch (step.kind) {
    case rdmap::SegmentStep::Kind::ignored:
      return;
    case rdmap::SegmentStep::Kind::terminate:
      handle_terminate(seg.value());
      return;
    case rdmap::SegmentStep::Kind::tagged:
      place_tagged(seg.value(), step);
      return;
    case rdmap::SegmentStep::Kind::untagged:
      place_untagged(seg.value(), step);
      return;
  }
}

const ddp::RegionFacts* Session::SinkView::region(std::uint32_t stag) {
  const Region* r = s_.memory_.find(stag);
  if (r == nullptr) return nullptr;
  facts_ = ddp::RegionFacts{};
  facts_.valid = r->valid;
  facts_.invalidatable = r->invalidatable;
  facts_.base = r->base;
  facts_.length = r->mem.size();
  facts_.pd = r->pd;
  facts_.stream = r->stream;
  facts_.access = r->access;
  return &facts_;
}

ddp::UntaggedBuffer Session::SinkView::send_buffer() {
  if (s_.recvs_.empty()) return {ddp::UntaggedBuffer::State::none, 0};
  return {ddp::UntaggedBuffer::State::posted, s_.recvs_.front().mem.size()};
}

void Session::place_tagged(const wire::DdpSegment& seg, const rdmap::SegmentStep& step) {
  const wire::DdpHeader& h = seg.header;
  const std::uint64_t len = seg.payload.size();
  if (len > 0) {
    Region* r = memory_.find(h.stag);
    if (r == nullptr) {  // accepted by the rules: only a local change since could do this
      fatal(rdmap::local_catastrophic());
      return;
    }
    std::memcpy(r->mem.data() + (h.to - r->base), seg.payload.data(), len);
    bytes_placed_ += len;
  }
  if (!step.ends_message) return;
  if (step.opcode == op(wire::Opcode::read_response)) {
    if (step.read_done && !step.read->rtr) {
      Event e;
      e.kind = EventKind::read_completed;
      e.wr_id = step.read->wr_id;
      e.opcode = step.opcode;
      e.length = step.read->req.size;
      e.stag = step.read->req.sink_stag;
      e.to = step.read->req.sink_to;
      push(std::move(e));
    }
    pump_reads();
    maybe_finish_close();
    return;
  }
  Event e;
  e.kind = EventKind::write_placed;
  e.opcode = step.opcode;
  e.stag = h.stag;
  e.to = step.message_to;
  e.length = static_cast<std::uint32_t>(step.message_length);
  push(std::move(e));
}

void Session::place_untagged(const wire::DdpSegment& seg, const rdmap::SegmentStep& step) {
  const std::uint8_t opcode = step.opcode;
  if (wire::opcode_is_send_family(opcode)) {
    RecvBuffer& buf = recvs_.front();  // the rules saw it posted, with room
    if (!seg.payload.empty())
      std::memcpy(buf.mem.data() + step.mo, seg.payload.data(), seg.payload.size());
    if (!step.ends_message) return;
    Event e;
    e.kind = EventKind::recv_completed;
    e.wr_id = buf.wr_id;
    e.opcode = opcode;
    e.length = static_cast<std::uint32_t>(step.message_length);
    e.solicited =
        opcode == op(wire::Opcode::send_se) || opcode == op(wire::Opcode::send_se_invalidate);
    if (step.invalidated) {
      memory_.invalidate(*step.invalidated);
      e.invalidated_stag = step.invalidated;
    }
    recvs_.pop_front();
    push(std::move(e));
    return;
  }
  if (!step.ends_message) return;
  if (step.read_request) {
    const wire::ReadRequest& rr = *step.read_request;
    Event e;
    e.kind = EventKind::read_requested;
    e.opcode = opcode;
    e.stag = rr.source_stag;
    e.to = rr.source_to;
    e.length = rr.size;
    e.value = (std::uint64_t{rr.sink_stag} << 32);
    push(std::move(e));
    pump_read_responses();
    return;
  }
  if (step.immediate) {
    Event e;
    e.kind = EventKind::immediate_received;
    e.opcode = opcode;
    e.value = *step.immediate;
    e.length = 8;
    e.solicited = opcode == op(wire::Opcode::immediate_data_se);
    push(std::move(e));
    return;
  }
  if (step.atomic) {
    Event e;
    e.kind = EventKind::atomic_completed;
    e.wr_id = step.atomic->wr_id;
    e.opcode = opcode;
    e.value = step.atomic_response->original_value;
    e.length = 8;
    push(std::move(e));
    maybe_finish_close();
    return;
  }
  if (step.atomic_request) {
    // A peer that sends requests but never reads the responses must not grow our queue without
    // bound (RFC 7306 bounds outstanding atomics like Read Requests).
    if (output_size() > config_.limits.max_tx_bytes) {
      fatal(rdmap::resources_exhausted());
      return;
    }
    const wire::AtomicRequest& a = *step.atomic_request;
    Region* r = memory_.find(a.remote_stag);
    if (r == nullptr) {
      fatal(rdmap::local_catastrophic());
      return;
    }
    std::uint8_t* p = r->mem.data() + (a.remote_to - r->base);
    const std::uint64_t old = load64(p);
    if (a.atomic_opcode == static_cast<std::uint8_t>(wire::AtomicOp::fetch_add)) {
      store64(p, old + a.add_swap_data);
    } else if (((old ^ a.compare_data) & a.compare_mask) == 0) {
      store64(p, (old & ~a.add_swap_mask) | (a.add_swap_data & a.add_swap_mask));
    }
    wire::AtomicResponse resp;
    resp.request_id = a.request_id;
    resp.original_value = old;
    Bytes body;
    ByteWriter w(body);
    wire::encode_atomic_response(resp, w);
    emit_untagged(op(wire::Opcode::atomic_response), wire::kQnAtomicResponse, 0, body, {});
  }
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
  // RFC 5040 §5.4: no more Read Responses after the stream is terminated.
  drop_inbound_reads();
  start_teardown_timer();
  push(std::move(e));
}

void Session::fatal(const TerminateError& error) {
  fatal(Violation{FindingId::count_, error, TerminateQuote::none, {}}, nullptr, {});
}

// After our Terminate (RDMAP's, or SCTP's Session Terminate): nothing more is read or answered;
// the teardown timer runs.
void Session::enter_terminated() {
  state_ = State::terminated;
  deadline_.reset();
  stall_deadline_.reset();
  start_teardown_timer();
  drop_inbound_reads();
}

// RFC 5040 §4.8 / §5.4: report the error in a Terminate on QN 2, then stop. Quotes what the
// Violation says: the DDP header (M+D), and for Read Request protection errors the RDMAP header
// (R), as siw does.
void Session::fatal(const Violation& v, const wire::DdpSegment* seg, ByteView ulpdu) {
  if (state_ == State::terminated || state_ == State::closed || waiting_forever_) return;
  // A rule the peer broke: what our sink profile does about it (the analyzer reports the same
  // answer for the same Violation). Our own failures (id count_) always end in a Terminate.
  std::optional<TerminateError> chosen = v.terminate;
  const SinkAnswer answer = sink_answer(config_.sink_profile, v);
  if (v.id != FindingId::count_ && answer.applies) {
    violation_outcome_ = answer.outcome;
    chosen = answer.terminate;
    if (answer.outcome == SinkOutcome::close || answer.outcome == SinkOutcome::wait ||
        answer.outcome == SinkOutcome::reject) {
      Event e;
      e.kind = answer.outcome == SinkOutcome::wait ? EventKind::violation_waiting
                                                   : EventKind::violation_closed;
      e.message = std::string(finding_spec(v.id).code) + (v.detail.empty() ? "" : ": " + v.detail);
      if (answer.outcome == SinkOutcome::wait) {
        waiting_forever_ = true;  // as the sink does: nothing more is read or answered
        drop_inbound_reads();
      } else {
        // RFC 5040 §5.4 does not apply (no Terminate): the connection just ends (FIN).
        state_ = State::closed;
        deadline_.reset();
        stall_deadline_.reset();
        drop_inbound_reads();
        want_shutdown_ = true;
        start_teardown_timer();
      }
      push(std::move(e));
      return;
    }
  }
  const TerminateError error = chosen.value_or(rdmap::local_catastrophic());
  wire::Terminate t;
  t.control.layer = error.layer;
  t.control.etype = error.etype;
  t.control.code = error.code;
  if (v.quote != TerminateQuote::none && seg) {
    t.control.m = true;
    t.control.d = true;
    t.ddp_segment_length = static_cast<std::uint16_t>(ulpdu.size());
    t.ddp_header = seg->header;
    if (v.quote == TerminateQuote::ddp_and_rdmap &&
        seg->payload.size() >= wire::kTerminateRdmapHeaderSize) {
      t.control.r = true;
      t.rdmap_header.assign(seg->payload.begin(),
                            seg->payload.begin() + wire::kTerminateRdmapHeaderSize);
    }
  }
  Bytes body;
  ByteWriter w(body);
  wire::encode_terminate(t, config_.terminate_layout, w);
  if (tx_full_) emit_untagged(op(wire::Opcode::terminate), wire::kQnTerminate, 0, body, {});
  // RFC 5043 §6.1: after the RDMAP Terminate, the DDP Stream Session's own.
  if (config_.llp == Llp::sctp) queue_session_terminate();
  term_sent_ = error;
  enter_terminated();
  Event e;
  e.kind = EventKind::terminate_sent;
  e.terminate = error;
  e.message = terminate_error_name(error) + (v.detail.empty() ? "" : ": " + v.detail);
  push(std::move(e));
}

}  // namespace ddpscope::session
