// SPDX-License-Identifier: GPL-2.0-or-later
#include "ddpscope/rdmap/data_sink.h"

#include <algorithm>
#include <cstring>

namespace ddpscope::rdmap {

namespace {

constexpr std::uint8_t op(wire::Opcode o) {
  return static_cast<std::uint8_t>(o);
}

// Keeps the first violation of a segment: a compliant sink stops at the first rule broken.
bool keep(SegmentStep& step, std::optional<Violation> v) {
  if (!v) return false;
  if (!step.violation) step.violation = std::move(v);
  return true;
}

// The facts of an STag (RFC 5040 §5.3: valid, its stream and protection domain, its rights) do
// not change within a message.
bool stag_level(FindingId id) {
  return id == FindingId::ddp_tagged_invalid_stag || id == FindingId::rdmap_stag_invalidated_use ||
         id == FindingId::ddp_tagged_stag_wrong_stream || id == FindingId::ddp_tagged_access_rights;
}

// The opcodes whose last segment complete_untagged() reads (a rule or a body); for every other
// it returns true, so the call is skipped (a Send's last segment: every Send).
constexpr bool completes(std::uint8_t opcode) {
  switch (static_cast<wire::Opcode>(opcode)) {
    case wire::Opcode::send_invalidate:
    case wire::Opcode::send_se_invalidate:
    case wire::Opcode::read_request:
    case wire::Opcode::atomic_request:
    case wire::Opcode::atomic_response:
    case wire::Opcode::immediate_data:
    case wire::Opcode::immediate_data_se:
      return true;
    default:
      return false;
  }
}

}  // namespace

std::optional<Violation> check_rtr(llp::RtrType expected, const wire::DdpSegment& seg) {
  const auto& h = seg.header;
  const std::uint8_t opcode = wire::RdmapControl::from_byte(h.rsvd_ulp0).opcode;
  bool ok = false;
  switch (expected) {
    case llp::RtrType::none:
      return std::nullopt;
    case llp::RtrType::write:
      ok = h.control.tagged && opcode == op(wire::Opcode::rdma_write) && h.control.last &&
           seg.payload.empty();
      break;
    case llp::RtrType::read: {
      const auto rr = wire::decode_read_request(seg.payload);
      ok = !h.control.tagged && opcode == op(wire::Opcode::read_request) &&
           h.qn == wire::kQnReadRequest && h.msn == 1 && h.mo == 0 && h.control.last &&
           seg.payload.size() == wire::ReadRequest::kSize && rr && rr->size == 0;
      break;
    }
    case llp::RtrType::send:
      ok = !h.control.tagged && opcode == op(wire::Opcode::send) && h.qn == wire::kQnSend &&
           h.msn == 1 && h.mo == 0 && h.control.last && seg.payload.empty();
      break;
  }
  if (ok) return std::nullopt;
  return Violation{
      FindingId::mpa_handshake_invalid, term::mpa(mpa_code::no_matching_rtr), TerminateQuote::none,
      "peer-to-peer: the first FPDU is " + std::string(wire::opcode_info(opcode).name) +
          (seg.payload.empty() ? "" : " with payload") + ", not the zero-length " +
          std::string(llp::to_string(expected)) + " RTR the Reply chose"};
}

DataSink::DataSink(SinkConfig config) : config_(std::move(config)) {
  if (config_.mid_stream)
    for (auto& q : queues_)
      q.rx.synced = false;
}

SegmentStep DataSink::receive(const wire::DdpSegment& seg, SinkMemory& memory) {
  SegmentStep step;
  const bool tagged_open = tagged_.open;
  checks(seg, memory, step);
  if (!seg.header.control.tagged) return step;
  if (step.violation) {
    const FindingId id = step.violation->id;
    step.repeated =
        tagged_open && !step.starts_message && stag_level(id) && tagged_violation_ == id;
    tagged_violation_ = id;
  } else if (step.starts_message) {
    tagged_violation_ = FindingId::count_;
  }
  return step;
}

// checks() and tagged_segment() run for every segment and have one caller each: folded into it
// (GCC keeps them out of line otherwise: two calls per segment).
[[gnu::always_inline]] inline void DataSink::checks(const wire::DdpSegment& seg, SinkMemory& memory,
                                                    SegmentStep& step) {
  const auto& h = seg.header;
  step.opcode = wire::RdmapControl::from_byte(h.rsvd_ulp0).opcode;
  if (keep(step, ddp::check_version(h))) return;
  if (keep(step, check_control(h, config_.rfc7306))) return;
  step.decoded = true;
  if (config_.expect_rtr != llp::RtrType::none &&
      !(step.opcode == op(wire::Opcode::terminate) && !h.control.tagged)) {
    const llp::RtrType expected = config_.expect_rtr;
    config_.expect_rtr = llp::RtrType::none;
    step.rtr = !keep(step, check_rtr(expected, seg));
  }
  if (h.control.tagged)
    tagged_segment(seg, memory, step);
  else
    untagged_segment(seg, memory, step);
}

[[gnu::always_inline]] inline void DataSink::tagged_segment(const wire::DdpSegment& seg,
                                                            SinkMemory& memory, SegmentStep& step) {
  const auto& h = seg.header;
  const std::uint8_t opcode = step.opcode;
  const std::uint64_t len = seg.payload.size();
  const bool response = opcode == op(wire::Opcode::read_response);
  step.kind = SegmentStep::Kind::tagged;
  bool bad = step.violation.has_value();  // this segment broke a rule (not a predecessor's)

  ddp::TaggedRx& t = tagged_;
  if (t.open) {
    auto v = ddp::check_tagged_continuation(t, h, opcode);
    const bool ends_open = t.opcode != opcode || t.stag != h.stag;
    if (v && v->id != FindingId::ddp_message_incomplete) bad = true;
    keep(step, std::move(v));
    if (ends_open) {
      step.abandoned = true;
      t.open = false;
    }
  }
  if (!t.open) {
    t = ddp::TaggedRx{};
    t.open = true;
    t.opcode = opcode;
    t.stag = h.stag;
    t.first_to = h.to;
    t.next_to = h.to;
    step.starts_message = true;
    tagged_read_matched_ = response && !orq_.empty();
    tagged_violated_ = false;
  }
  // After loss the checks that count a response's octets against its request count octets
  // the capture lost: the segment is first matched to the request it answers by STag and TO,
  // and what still fails is a consequence.
  const Consequence unsure = !response                          ? Consequence::none
                             : orq_unsure_ != Consequence::none ? orq_unsure_
                             : t.damaged ? (loss_ != Consequence::none ? loss_ : Consequence::gap)
                                         : Consequence::none;
  Consequence unsure_after = unsure;
  if (unsure != Consequence::none) {
    // Matched by its own STag and TO, the count is sure again: what fails then is the peer's.
    if (resync_orq(h, step.starts_message)) {
      unsure_after = Consequence::none;
      orq_unsure_ = Consequence::none;
    }
    if (step.starts_message) tagged_read_matched_ = !orq_.empty();
  }
  if (response && (step.starts_message || tagged_read_matched_)) {
    const OutstandingRead* head = tagged_read_matched_ ? &orq_.front() : nullptr;
    if (auto v = check_read_response(head, h, len)) {
      bad = true;
      if (!step.violation && unsure_after != Consequence::none) {
        step.after_loss = true;
        step.loss = unsure_after;
      }
      keep(step, std::move(v));
    }
    if (head != nullptr) {
      step.read = *head;
      orq_.front().received += len;
    }
  }
  // A lone zero-length RDMA Write places nothing and needs no valid STag (RFC 5040 §5.1: siw's
  // Write RTR names STag 1); a Read Response is checked where it places octets.
  const bool check = response ? len > 0 : !(len == 0 && step.starts_message && h.control.last);
  if (check && !step.rtr) {
    const ddp::RegionFacts* r = memory.region(h.stag);
    if (keep(step,
             ddp::check_region(h.stag, r, memory.regions_known(), config_.stream, h.to, len,
                               response ? ddp::access::local_write : ddp::access::remote_write,
                               ddp::ErrorTable::ddp_tagged)))
      bad = true;
  }
  if (bad) tagged_violated_ = true;
  step.placed = !bad;
  t.next_to = h.to + len;
  t.length += len;
  step.message_to = t.first_to;
  step.message_length = t.length;
  step.damaged = t.damaged;
  if (!h.control.last) return;
  step.ends_message = true;
  step.placed = step.placed && !tagged_violated_;
  if (response && tagged_read_matched_ && !orq_.empty()) {
    step.read = orq_.front();
    step.read_done = true;
    orq_.pop_front();
    if (!tagged_violated_) orq_unsure_ = Consequence::none;  // answered as requested: in step
  }
  t.open = false;
}

bool DataSink::resync_orq(const wire::DdpHeader& h, bool first) {
  // RFC 5040 §5.2: responses come in request order, each to the sink STag and TO its request
  // named. The entry whose sink range holds this TO is the one answered; the entries before it
  // were answered by responses the capture lost, and a response that had begun is over when
  // another begins (its last segment was lost).
  const auto answers = [&h](const OutstandingRead& o) {
    return h.stag == o.req.sink_stag && h.to >= o.req.sink_to &&
           h.to - o.req.sink_to < std::max<std::uint64_t>(o.req.size, 1);
  };
  std::size_t i = first && !orq_.empty() && orq_.front().received > 0 ? 1 : 0;
  while (i < orq_.size() && !answers(orq_[i]))
    ++i;
  if (i == orq_.size()) return false;  // none: the checks report it, as a consequence
  orq_.erase(orq_.begin(), orq_.begin() + static_cast<std::ptrdiff_t>(i));
  orq_.front().received = h.to - orq_.front().req.sink_to;  // octets before it were lost
  return true;
}

void DataSink::untagged_segment(const wire::DdpSegment& seg, SinkMemory& memory,
                                SegmentStep& step) {
  const auto& h = seg.header;
  const std::uint8_t opcode = step.opcode;
  const std::uint64_t len = seg.payload.size();
  step.kind = SegmentStep::Kind::untagged;
  std::uint32_t qn = h.qn;
  if (auto v = check_queue(h, opcode)) {
    // A sink that accepts it (siw) takes the queue from the opcode.
    const bool accepted = sink_answer(config_.profile, *v).outcome == SinkOutcome::accept;
    keep(step, std::move(v));
    const auto& info = wire::opcode_info(opcode);
    if (!accepted || !info.qn || *info.qn >= kQueues) {
      step.kind = SegmentStep::Kind::ignored;
      return;
    }
    qn = *info.qn;
  }
  if (opcode == op(wire::Opcode::terminate)) step.kind = SegmentStep::Kind::terminate;
  bool bad = step.violation.has_value() &&
             sink_answer(config_.profile, *step.violation).outcome != SinkOutcome::accept;
  Queue& q = queues_[qn];
  ddp::UntaggedRx& rx = q.rx;
  step.qn = qn;
  step.after_loss = rx.after_loss;
  if (!rx.synced) {
    // Mid-stream start or loss before the queue's first message: its first MSN is as given.
    rx.expected_msn = h.msn;
    rx.synced = true;
  }
  q.seen = true;
  const bool terminate = step.kind == SegmentStep::Kind::terminate;
  if (auto v = ddp::check_untagged_sequence(rx, h)) {
    switch (v->id) {
      case FindingId::ddp_untagged_msn_duplicate:
      case FindingId::ddp_segment_after_last:
        keep(step, std::move(v));
        if (!terminate) {
          step.kind = SegmentStep::Kind::ignored;
          return;
        }
        rx.open = false;  // a Terminate is read whatever its MSN: follow it
        rx.expected_msn = h.msn;
        break;
      case FindingId::ddp_message_incomplete:
        step.after_loss = step.after_loss || rx.damaged;
        step.abandoned = true;
        rx.open = false;
        rx.expected_msn = h.msn;
        keep(step, std::move(v));
        break;
      case FindingId::ddp_untagged_msn_gap:
        rx.expected_msn = h.msn;
        bad = true;
        keep(step, std::move(v));
        break;
      default:  // MO: after octets lost to the capture, a consequence
        step.after_loss = step.after_loss || (rx.open && rx.damaged);
        rx.damaged = rx.open;
        bad = true;
        keep(step, std::move(v));
        break;
    }
  }
  if (!rx.open) {
    rx.open = true;
    rx.damaged = h.mo != 0;
    rx.opcode = opcode;
    q.too_long = false;
    q.invalidate_stag = h.rsvd_ulp1;
    step.starts_message = true;
  }
  // The body: a fixed size, or room in the posted receive buffer (Send family).
  if (fixed_body_size(opcode)) {
    if (auto v = check_fixed_body(opcode, h.mo, len, h.control.last)) {
      bad = true;
      const bool too_long = v->id == FindingId::ddp_untagged_message_too_long;
      if (!(too_long && q.too_long)) keep(step, std::move(v));
      q.too_long = q.too_long || too_long;
    } else if (!bad && !rx.damaged && len > 0) {
      std::memcpy(q.body.data() + h.mo, seg.payload.data(), len);
    }
  } else if (wire::opcode_is_send_family(opcode) && !step.rtr && !q.too_long) {
    if (keep(step, ddp::check_untagged_room(memory.send_buffer(), h.mo, len,
                                            wire::opcode_info(opcode).name)))
      q.too_long = true;
  }
  if (q.too_long) bad = true;
  rx.mo = h.mo + static_cast<std::uint32_t>(len);
  step.msn = rx.expected_msn;
  step.mo = h.mo;
  step.message_length = rx.mo;
  if (h.control.last) {
    step.ends_message = true;
    if (!bad && completes(rx.opcode) && !complete_untagged(q, memory, step)) bad = true;
    step.damaged = rx.damaged;
    if (!rx.damaged) rx.after_loss = false;
    rx.open = false;
    rx.expected_msn = rx.expected_msn + 1;
  } else {
    step.damaged = rx.damaged;
  }
  step.placed = !bad;
  if (step.after_loss && step.loss == Consequence::none)
    step.loss = loss_ != Consequence::none ? loss_ : Consequence::gap;
  if (step.kind == SegmentStep::Kind::terminate && step.violation) {
    // A Terminate is accepted whatever breaks in it: the stream is ending (RFC 5040 §5.4).
    step.violation->terminate.reset();
    step.violation->rule_case = SinkCase::in_terminate;
  }
}

// Its cases are the opcodes completes() names: one added here must be added there.
bool DataSink::complete_untagged(Queue& q, SinkMemory& memory, SegmentStep& step) {
  const ddp::UntaggedRx& rx = q.rx;
  if (rx.damaged) return true;
  // Asked only where a rule reads it: a Send's last segment (most of them) asks nothing.
  const auto known = [&memory] { return memory.regions_known(); };
  switch (static_cast<wire::Opcode>(rx.opcode)) {
    case wire::Opcode::send_invalidate:
    case wire::Opcode::send_se_invalidate: {
      if (keep(step, check_invalidate(q.invalidate_stag, memory.region(q.invalidate_stag), known(),
                                      config_.stream)))
        return false;
      step.invalidated = q.invalidate_stag;
      return true;
    }
    case wire::Opcode::read_request: {
      auto rr = wire::decode_read_request(ByteView(q.body.data(), wire::ReadRequest::kSize));
      if (!rr) return true;
      step.read_request = *rr;
      if (!step.rtr) {
        if (auto v = check_read_request(*rr, irq_.size(), config_.ird,
                                        memory.region(rr->source_stag), known(), config_.stream)) {
          // The IRQ may still hold requests whose last response segment the capture lost.
          if (v->id == FindingId::rdmap_ird_exceeded && irq_unsure_ != Consequence::none &&
              !step.violation) {
            step.after_loss = true;
            step.loss = irq_unsure_;
          }
          const bool accepted = sink_answer(config_.profile, *v).outcome == SinkOutcome::accept;
          keep(step, std::move(v));
          if (!accepted) return false;
        }
      }
      if (irq_.size() >= config_.max_reads) {
        irq_.pop_front();
        step.limit_hit = true;
      }
      irq_.push_back(*rr);
      return true;
    }
    case wire::Opcode::atomic_request: {
      auto a = wire::decode_atomic_request(ByteView(q.body.data(), wire::AtomicRequest::kSize));
      if (!a) return true;
      step.atomic_request = *a;
      return !keep(
          step, check_atomic_request(*a, memory.region(a->remote_stag), known(), config_.stream));
    }
    case wire::Opcode::atomic_response: {
      auto a = wire::decode_atomic_response(ByteView(q.body.data(), wire::AtomicResponse::kSize));
      if (!a) return true;
      step.atomic_response = *a;
      auto it = std::find_if(atomics_.begin(), atomics_.end(),
                             [&](const PendingAtomic& p) { return p.request_id == a->request_id; });
      if (auto v = check_atomic_response(*a, it != atomics_.end())) {
        // Its request may be one the capture lost.
        if (atomics_unsure_ != Consequence::none && !step.violation) {
          step.after_loss = true;
          step.loss = atomics_unsure_;
        }
        keep(step, std::move(v));
        return false;
      }
      step.atomic = *it;
      atomics_.erase(it);
      atomics_unsure_ = Consequence::none;
      return true;
    }
    case wire::Opcode::immediate_data:
    case wire::Opcode::immediate_data_se: {
      auto v = wire::decode_immediate_data(ByteView(q.body.data(), wire::kImmediateDataSize));
      if (v) step.immediate = *v;
      return true;
    }
    default:
      return true;
  }
}

bool DataSink::read_requested(const OutstandingRead& read) {
  bool kept = true;
  if (orq_.size() >= config_.max_reads) {
    orq_.pop_front();
    kept = false;
  }
  orq_.push_back(read);
  return kept;
}

bool DataSink::atomic_requested(const PendingAtomic& atomic) {
  auto it = std::find_if(atomics_.begin(), atomics_.end(),
                         [&](const PendingAtomic& p) { return p.request_id == atomic.request_id; });
  if (it != atomics_.end()) {
    *it = atomic;
    return true;
  }
  bool kept = true;
  if (atomics_.size() >= config_.max_atomics) {
    atomics_.pop_front();
    kept = false;
  }
  atomics_.push_back(atomic);
  return kept;
}

void DataSink::read_answered() {
  if (!irq_.empty()) irq_.pop_front();
}

void DataSink::read_answered(const wire::ReadRequest& answered) {
  if (irq_unsure_ != Consequence::none) {
    // The requests before it were answered by responses the capture lost.
    const auto it = std::find_if(irq_.begin(), irq_.end(), [&](const wire::ReadRequest& r) {
      return r.sink_stag == answered.sink_stag && r.sink_to == answered.sink_to &&
             r.size == answered.size;
    });
    if (it != irq_.end()) {
      irq_.erase(irq_.begin(), it + 1);
      irq_unsure_ = Consequence::none;
      return;
    }
  }
  read_answered();
  if (irq_.empty()) irq_unsure_ = Consequence::none;  // no entry left that a loss could keep
}

void DataSink::start_mid_stream() {
  for (auto& q : queues_)
    if (!q.seen) q.rx.synced = false;
}

Consequence DataSink::any_after_loss() const {
  for (const auto& q : queues_)
    if (q.rx.after_loss) return loss_ != Consequence::none ? loss_ : Consequence::gap;
  return Consequence::none;
}

bool DataSink::has_open_message() const {
  if (tagged_.open) return true;
  for (const auto& q : queues_)
    if (q.rx.open) return true;
  return false;
}

void DataSink::drop_open_messages() {
  tagged_.open = false;
  for (auto& q : queues_)
    q.rx.open = false;
}

void DataSink::lost_input(Consequence cause) {
  loss_ = cause;
  orq_unsure_ = cause;  // a Read Response to this sink may be what was lost
  for (auto& q : queues_) {
    q.rx.after_loss = true;
    if (!q.seen) q.rx.synced = false;
    if (q.rx.open) q.rx.damaged = true;
  }
  if (tagged_.open) tagged_.damaged = true;
}

void DataSink::own_side_lost(Consequence cause) {
  orq_unsure_ = cause;
  irq_unsure_ = cause;
  atomics_unsure_ = cause;
}

}  // namespace ddpscope::rdmap
