// SPDX-License-Identifier: GPL-2.0-or-later
// The endpoint engine's transmit side: FPDUs sized to MULPDU with CRC and markers as negotiated
// (RFC 5044 §4, §8), and the operations a ULP posts (RFC 5040 §5, RFC 7306): Send, RDMA Write,
// RDMA Read within ORD, Read Responses from the IRQ, Immediate Data, atomics.
#include <algorithm>
#include <cstring>

#include "ddpscope/common/crc32c.h"
#include "ddpscope/session/session.h"
#include "ddpscope/wire/sctp.h"

namespace ddpscope::session {

namespace {
constexpr std::uint8_t op(wire::Opcode o) {
  return static_cast<std::uint8_t>(o);
}
}  // namespace

// --- transmit -------------------------------------------------------------------------------

std::uint32_t Session::payload_room(bool tagged) const {
  return neg_.mulpdu - static_cast<std::uint32_t>(tagged ? wire::kDdpTaggedHeaderSize
                                                         : wire::kDdpUntaggedHeaderSize);
}

void Session::note_tx_message(std::size_t start, std::uint32_t ppid) {
  tx_msgs_.push_back(TxMessage{tx_.size() - start, ppid});
  if (output_size() > peak_.tx_bytes) note_usage();
}

std::optional<OutMessage> Session::next_message() const {
  if (tx_msgs_.empty()) return std::nullopt;
  const TxMessage& m = tx_msgs_.front();
  return OutMessage{output().first(m.length - tx_msg_taken_), m.ppid, config_.sctp_stream};
}

// One FPDU holding ULPDU = hdr + payload (RFC 5044 §4.1), CRC and markers as negotiated. SCTP:
// the DDP-SSN and the ULPDU are one user message on PPID 16 (RFC 5043 §5.2: SCTP frames it and
// its CRC32c covers the packet).
void Session::emit_fpdu_header_and(ByteView hdr, ByteView payload) {
  const std::size_t len = hdr.size() + payload.size();
  if (config_.llp == Llp::sctp) {
    // RFC 5043 §5.2.1: the DDP-SSN, then the DDP segment.
    const std::size_t start = tx_.size();
    tx_.push_back(static_cast<std::uint8_t>(tx_ssn_ >> 8));
    tx_.push_back(static_cast<std::uint8_t>(tx_ssn_));
    ++tx_ssn_;
    tx_.insert(tx_.end(), hdr.begin(), hdr.end());
    tx_.insert(tx_.end(), payload.begin(), payload.end());
    note_tx_message(start, wire::kPpidDdpSegment);
    return;
  }
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
  const std::size_t taken = std::min(n, output_size());
  tx_head_ += taken;
  tx_taken_ += taken;
  for (std::size_t left = taken; left > 0 && !tx_msgs_.empty();) {
    const std::size_t rest = tx_msgs_.front().length - tx_msg_taken_;
    if (left < rest) {
      tx_msg_taken_ += left;
      break;
    }
    left -= rest;
    tx_msgs_.pop_front();
    tx_msg_taken_ = 0;
  }
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
  retire_answered_reads();
  pump_read_responses();
  maybe_finish_close();
}

void Session::retire_answered_reads() {
  while (!irq_queued_end_.empty() && irq_queued_end_.front() <= tx_taken_) {
    irq_queued_end_.pop_front();
    --irq_queued_;
    sink_.read_answered();
  }
}

void Session::drop_inbound_reads() {
  sink_.clear_inbound_reads();
  irq_queued_ = 0;
  irq_queued_end_.clear();
  irq_sent_ = 0;
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
  while (irq_queued_ < sink_.irq().size() && output_size() < config_.limits.tx_low_water &&
         (state_ == State::established || state_ == State::closing || state_ == State::wait_rtr)) {
    const wire::ReadRequest rr = sink_.irq()[irq_queued_];
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
      irq_queued_end_.push_back(tx_taken_ + output_size());
      ++irq_queued_;
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

}  // namespace ddpscope::session
