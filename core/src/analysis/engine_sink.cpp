// SPDX-License-Identifier: GPL-2.0-or-later
// DDP and RDMAP in the analysis: each DDP segment the LLP hands over goes through the Data Sink
// model of its direction (rdmap/data_sink.h), the same model and rules the endpoint runs. Here
// only what analysis adds: a finding for each Violation (a consequence when capture loss came
// first), placement into shadow buffers (ddp/shadow.h), message records and in-order delivery
// (RFC 5041 §5.3), and what completed RDMAP messages teach about regions (Read Requests,
// advertisements, invalidation) and the other side's Data Sink (ORQ, IRQ, atomics).
#include <algorithm>

#include "ddpscope/common/bytes.h"
#include "engine.h"

namespace ddpscope {

namespace {

constexpr std::size_t kBodyKeep = 4096;  // octets of an untagged message kept for decoding

// What a direction's damaged message lost its octets to (a damaged message always follows a loss;
// gap when none was recorded).
Consequence cause(Consequence last_loss) {
  return last_loss != Consequence::none ? last_loss : Consequence::gap;
}

std::string unseen(Consequence last_loss) {
  return cause(last_loss) == Consequence::crc ? "octets dropped with an FPDU that failed its CRC"
                                              : "octets missing from the capture";
}

std::string plural(std::uint64_t n, const char* one, const char* many) {
  return std::to_string(n) + " " + (n == 1 ? one : many);
}

}  // namespace

// What the Data Sink model asks of the analysis: the shadow buffers of the receiving host, read
// as registrations. With a regions file, an STag only ever seen in segments is no registration.
class Analyzer::Impl::ShadowView final : public rdmap::SinkMemory {
 public:
  ShadowView(Analyzer::Impl& engine, const net::Address& owner, std::uint32_t stream)
      : e_(engine), owner_(owner), stream_(stream), facts_(engine.region_facts) {}
  const ddp::RegionFacts* region(std::uint32_t stag) override {
    const ShadowBuffer* b = e_.find_region(RegionKey{owner_, stag});
    if (b == nullptr || (e_.regions_known && b->source == RegionSource::observed)) return nullptr;
    // A registration learned from an ended stream's traffic ended with it: nothing is known of
    // the STag here (a fact left unknown fails no check).
    if (e_.learned_elsewhere_and_ended(*b, stream_)) {
      facts_ = ddp::RegionFacts{};
      return &facts_;
    }
    // Every field assigned, none reset first: this runs for every tagged segment.
    const bool bounds = b->bounds_enforced && b->base && b->length;
    facts_.valid = !b->invalidated;
    facts_.invalidated_frame = b->invalidated_frame;
    facts_.invalidatable = b->invalidatable;
    facts_.base = bounds ? b->base : std::nullopt;
    facts_.length = bounds ? b->length : std::nullopt;
    const bool scoped = b->stream && b->stream_scoped;
    facts_.stream = scoped ? std::optional<std::uint64_t>(*b->stream) : std::nullopt;
    // A finding may name that stream (ddp.tagged.stag-wrong-stream): its number in the text.
    if (scoped && *b->stream != stream_ && e_.shard) [[unlikely]]
      e_.shard->named_streams.push_back(*b->stream);
    facts_.scope = scoped ? std::string_view(b->origin) : std::string_view();
    facts_.pd = b->pd;
    facts_.access = b->access;
    return &facts_;
  }
  bool regions_known() const override { return e_.regions_known; }
  ddp::UntaggedBuffer send_buffer() override {
    if (!e_.options.send_buffer_size) return {};
    return {ddp::UntaggedBuffer::State::posted, *e_.options.send_buffer_size};
  }

 private:
  Analyzer::Impl& e_;
  net::Address owner_;
  std::uint32_t stream_;
  // The engine's, not built per segment: region() sets every field of what it returns.
  ddp::RegionFacts& facts_;
};

// Which messages are in flight, for the shadow memory's placement rule (ddp/shadow.h): a
// message is until it is delivered in order (RFC 5041 §5.3: complete, every earlier message of
// its direction delivered), abandoned (it will never be), or its stream ended.
class Analyzer::Impl::MessagesInFlight final : public WriterState {
 public:
  explicit MessagesInFlight(const Analyzer::Impl& e) : e_(e) {}
  // A "no" is final, as WriterState asks: a stream does not reopen, delivery_base only grows
  // and an abandoned message stays so.
  bool in_flight(const PlacementWriter& w) const override {
    if (w.stream >= e_.conns.size() || w.direction > 1 || e_.stream_ended(w.stream)) return false;
    const DirectionEngine& ds = e_.conns[w.stream]->ds(w.direction);
    if (w.message < ds.delivery_base || w.message - ds.delivery_base >= ds.delivery.size())
      return false;  // delivered (or past max_pending_messages: taken as delivered)
    return !ds.delivery[w.message - ds.delivery_base].abandoned;
  }

 private:
  const Analyzer::Impl& e_;
};

// A segment put different content over octets a message still in flight had placed (its own
// message's included): ddp.tagged.conflicting-placement at the segment's frame, once per message.
void Analyzer::Impl::conflicting_placement(const Connection& c, const Ctx& ctx,
                                           const ShadowBuffer& buf, const PlacedRange& r,
                                           const PlaceResult& pr) {
  const PlacementWriter& w = pr.conflict_writer;
  std::string msg = plural(pr.conflict_octets, "octet", "octets") + " of STag " +
                    hex_stag(buf.key.stag) + " in [" + hex_number(r.begin) + ", +" +
                    std::to_string(r.end - r.begin) + ")";
  if (buf.base && buf.length)
    msg += " (region [" + hex_number(*buf.base) + ", +" + std::to_string(*buf.length) + "))";
  if (pr.conflict_own) {
    msg += " placed again by their own message with different content (first placed in frame " +
           std::to_string(pr.conflict_frame) + ")";
  } else {
    msg += " overwritten with different content while the message that placed them (frame " +
           std::to_string(pr.conflict_frame) +
           (w.stream == c.stream ? std::string() : ", stream " + std::to_string(w.stream)) +
           ") was not yet delivered";
  }
  if (r.violation)
    msg += "; the segment broke a placement rule, so a compliant sink placed none of it";
  // Whether that message was still in flight is only as good as what the capture showed of its
  // direction: after octets it lost, the message may have been delivered unseen.
  const Consequence loss = w.stream < conns.size() && w.direction <= 1
                               ? conns[w.stream]->ds(w.direction).last_loss
                               : Consequence::none;
  if (w.stream != c.stream && shard) shard->named_streams.push_back(w.stream);
  report(FindingId::ddp_tagged_conflicting_placement, ctx, std::move(msg), loss);
}

void Analyzer::Impl::on_ddp_segment(Connection& c, int dir, PduEvent& ev, const Ctx& ctx) {
  StreamModel& sm = model.streams[c.stream];
  DirectionModel& dm = sm.dirs[dir];
  DirectionEngine& ds = c.ds(dir);
  const wire::DdpSegment& seg = *ev.ddp;
  const wire::DdpHeader& h = seg.header;
  if (h.control.reserved != 0 && once(ds, FindingId::ddp_reserved_nonzero)) {
    report(FindingId::ddp_reserved_nonzero, ctx,
           "DDP control reserved bits " + hex_number(h.control.reserved) + " (reported once)");
  }
  if (!h.control.tagged && h.qn < rdmap::DataSink::kQueues) {
    const auto& q = ds.sink.queue(h.qn);
    ev.analysis.expected_msn = q.synced ? q.expected_msn : h.msn;
  }
  ShadowView view(*this, dm.to.addr, c.stream);
  const rdmap::SegmentStep step = ds.sink.receive(seg, view);
  // An STag-level violation is reported once per tagged message (SegmentStep::repeated).
  if (step.violation && !step.repeated)
    report(*step.violation, ctx, step.after_loss ? step.loss : Consequence::none);
  if (step.limit_hit) limit_reached("max_outstanding_reads", Ctx{c.stream, dir, ctx.frame, {}});
  if (!step.decoded) return;
  auto& oc = dm.opcodes[step.opcode];
  oc.segments++;
  oc.bytes += seg.payload.size();
  const bool is_tagged = step.kind == rdmap::SegmentStep::Kind::tagged;
  if (is_tagged) {
    tagged_segment(c, dir, ev, ctx, step);
    if (c.ulp) ulp_tagged(c, dir, ev, ctx, step);  // engine_ulp.cpp
  } else if (!(step.violation && step.violation->id == FindingId::ddp_untagged_invalid_qn))
    untagged_segment(c, dir, ev, ctx, step);
  if (timing) [[unlikely]]
    timing_placed(c.stream, dir, ev, is_tagged);
}

void Analyzer::Impl::timing_placed(std::uint32_t stream, int dir, const PduEvent& ev,
                                   bool is_tagged) {
  if (!ev.analysis.placed || ev.ddp->payload.empty()) return;
  const auto stag = is_tagged ? std::optional<std::uint32_t>(ev.ddp->header.stag) : std::nullopt;
  timing->placed(stream, dir, stag, ev.ddp->payload.size(), cur_frame, cur_ts);
}

// Folded into on_ddp_segment, its only caller (GCC keeps it out of line otherwise: a call per
// segment).
[[gnu::always_inline]] inline void Analyzer::Impl::tagged_segment(Connection& c, int dir,
                                                                  PduEvent& ev, const Ctx& ctx,
                                                                  const rdmap::SegmentStep& step) {
  StreamModel& sm = model.streams[c.stream];
  DirectionModel& dm = sm.dirs[dir];
  DirectionEngine& ds = c.ds(dir);
  const auto& h = ev.ddp->header;
  const std::uint64_t len = ev.ddp->payload.size();
  MessageTrack& m = ds.tagged;
  if (step.abandoned) abandon(c, dir, m.delivery_id);
  if (step.starts_message) {
    m.conflict_reported = false;
    m.record = new_record(c, dir, step.opcode, true);
    if (m.record != kNoIndex) {
      model.messages[m.record].stag = h.stag;
      model.messages[m.record].to = h.to;
    }
    m.delivery_id = delivery_push(c, dir, m.record);
  }
  if (step.read) {
    ev.analysis.request_frame = step.read->frame;
    // The Read Response's first segment: the requester's first octet of data (RFC 5040 §4.5).
    if (timing && step.starts_message) {
      const LatencySample s =
          timing->completion(OpKind::rdma_read_first, c.stream, 1 - dir, step.read->frame,
                             step.read->ts_ns, cur_frame, cur_ts);
      ev.operations.push_back(
          {OpKind::rdma_read_first, 1 - dir, s.request_frame, step.read->pdu, s.ns, {}, {}});
    }
  }
  if (m.record != kNoIndex) {
    model.messages[m.record].length += len;
    model.messages[m.record].segments++;
    ev.analysis.message = m.record;
  }
  if (len > 0) {
    const RegionKey key{dm.to.addr, h.stag};
    ShadowBuffer* buf = find_region(key);
    if (!buf) buf = region_for(c, dir, key);
    if (buf) {
      PlacedRange r;
      r.begin = h.to;
      r.end = h.to + len < h.to ? UINT64_MAX : h.to + len;
      r.frame = ctx.frame;
      r.opcode = step.opcode;
      r.stream = c.stream;
      r.direction = static_cast<std::uint8_t>(dir);
      r.message = m.delivery_id;
      r.violation = !step.placed;
      // Reuse or conflict: the rule is ShadowMemory's (ddp/shadow.h); what is in flight, ours.
      const MessagesInFlight writers(*this);
      const PlaceResult pr = model.memory.place(*buf, r, ev.ddp->payload, &writers);
      if (pr.capped && !ranges_capped) {
        ranges_capped = true;  // every later segment to a capped region would ask again
        limit_reached("max_ranges_per_region", Ctx{c.stream, dir, ctx.frame, {}});
      }
      if (pr.conflict && !m.conflict_reported) {
        m.conflict_reported = true;
        conflicting_placement(c, ctx, *buf, r, pr);
      }
      dm.bytes_placed += pr.new_bytes;
      ev.analysis.placed = step.placed;
      ev.analysis.region = key;
      ev.analysis.region_source = buf->source;
      ev.analysis.region_bounds_known = buf->base.has_value();
      ev.analysis.offset_in_region = h.to - buf->base.value_or(0);
      ev.analysis.region_bytes_placed = buf->bytes_placed();
    }
  }
  if (!step.ends_message) return;
  dm.opcodes[step.opcode].messages++;
  if (step.read_done) {
    ev.analysis.response_time_ns =
        static_cast<std::int64_t>(operation_latency_ns(step.read->ts_ns, cur_ts));
    if (timing) {
      const LatencySample s =
          timing->completion(OpKind::rdma_read, c.stream, 1 - dir, step.read->frame,
                             step.read->ts_ns, cur_frame, cur_ts);
      ev.operations.push_back(
          {OpKind::rdma_read, 1 - dir, s.request_frame, step.read->pdu, s.ns, {}, {}});
    }
    c.ds(1 - dir).sink.read_answered(step.read->req);  // the responder's IRQ entry is done
  }
  if (step.damaged) {
    report(FindingId::ddp_message_incomplete, ctx,
           "tagged message to STag " + hex_stag(h.stag) + " ended with " + unseen(ds.last_loss) +
               " (not analysed)",
           cause(ds.last_loss));
  }
  complete(c, dir, m.delivery_id, m.record, ev, step.placed);
  m = MessageTrack{};
}

void Analyzer::Impl::untagged_segment(Connection& c, int dir, PduEvent& ev, const Ctx& ctx,
                                      const rdmap::SegmentStep& step) {
  StreamModel& sm = model.streams[c.stream];
  DirectionModel& dm = sm.dirs[dir];
  DirectionEngine& ds = c.ds(dir);
  const auto& h = ev.ddp->header;
  QueueStats& qs = h.qn < ds.queue_stats.size()
                       ? *(ds.queue_stats[h.qn] ? ds.queue_stats[h.qn]
                                                : (ds.queue_stats[h.qn] = &dm.queues[h.qn]))
                       : dm.queues[h.qn];
  qs.qn = h.qn;
  qs.segments++;
  if (step.kind == rdmap::SegmentStep::Kind::ignored) return;  // duplicate, after its last
  MessageTrack& m = ds.queues[h.qn];
  if (step.abandoned) abandon(c, dir, m.delivery_id);
  if (step.starts_message) {
    m.reset();
    m.record = new_record(c, dir, step.opcode, false);
    if (m.record != kNoIndex) {
      model.messages[m.record].qn = h.qn;
      model.messages[m.record].msn = step.msn;
    }
    m.delivery_id = delivery_push(c, dir, m.record);
    if (qs.messages == 0 && qs.segments == 1) qs.first_msn = step.msn;
  }
  if (m.record != kNoIndex) {
    model.messages[m.record].length = step.message_length;
    model.messages[m.record].segments++;
    ev.analysis.message = m.record;
  }
  // The message's first kBodyKeep octets are what the decoders read: a message of one segment
  // is decoded from the segment itself, one of several keeps them until its last segment.
  const ByteView payload = ev.ddp->payload;
  const std::size_t room = kBodyKeep - std::min<std::size_t>(m.body.size(), kBodyKeep);
  const ByteView head = payload.first(std::min<std::size_t>(payload.size(), room));
  const bool whole = step.starts_message && step.ends_message;
  if (!whole) m.body.insert(m.body.end(), head.begin(), head.end());
  ev.analysis.placed = step.placed;
  if (!step.ends_message) return;
  qs.messages++;
  qs.last_msn = step.msn;
  if (qs.messages == 1) qs.first_msn = step.msn;
  dm.opcodes[step.opcode].messages++;
  // Neither reads the queue's track: it is reset after them, its body's storage kept.
  complete(c, dir, m.delivery_id, m.record, ev, true);
  const ByteView body = whole ? head : ByteView(m.body);
  // A plain Send means something beyond its queue only to a ULP decoder that would read it
  // (UlpStreamDecoders::wants, as advertisements() asks): most Sends skip the call.
  const bool plain_send = step.opcode == static_cast<std::uint8_t>(wire::Opcode::send) ||
                          step.opcode == static_cast<std::uint8_t>(wire::Opcode::send_se);
  const bool unread = plain_send && (!options.decode_advertisements ||
                                     (c.ulp && !c.ulp->decoders.wants(body.size(), step.msn)));
  if (!step.damaged && !unread) untagged_message(c, dir, ev, ctx, step, body);
  m.reset();
}

// What a complete untagged message means beyond its queue (RFC 5040 §5, RFC 7306).
void Analyzer::Impl::untagged_message(Connection& c, int dir, PduEvent& ev, const Ctx& ctx,
                                      const rdmap::SegmentStep& step, ByteView body) {
  const DirectionModel& dm = model.streams[c.stream].dirs[dir];
  DirectionEngine& peer = c.ds(1 - dir);  // the sender's own Data Sink
  switch (static_cast<wire::Opcode>(step.opcode)) {
    case wire::Opcode::read_request:
      if (step.read_request) {
        ev.read_request = *step.read_request;
        rdmap::OutstandingRead o;
        o.req = *step.read_request;
        o.frame = ctx.frame;
        o.ts_ns = cur_ts;
        o.pdu = ev.id;
        if (!peer.sink.read_requested(o))
          limit_reached("max_outstanding_reads", Ctx{c.stream, dir, ctx.frame, {}});
        if (timing) {
          timing->request(OpKind::rdma_read, c.stream, dir);
          // The responder (this direction's Data Sink) holds IRD Read Requests in progress.
          const rdmap::DataSink& responder = c.ds(dir).sink;
          if (responder.config().ird && responder.irq().size() >= *responder.config().ird)
            timing->stall(c.stream, dir, StallKind::read_credit, cur_frame, cur_ts);
        }
        learn_from_read_request(c, dir, *step.read_request, ctx);
        if (c.ulp) ulp_read_request(c, dir, *step.read_request, ctx);
      }
      return;
    case wire::Opcode::send_invalidate:
    case wire::Opcode::send_se_invalidate:
      if (step.invalidated) {
        if (ShadowBuffer* b = region_for(c, dir, RegionKey{dm.to.addr, *step.invalidated})) {
          b->invalidated = true;
          b->invalidated_frame = ctx.frame;
        }
      }
      [[fallthrough]];
    case wire::Opcode::send:
    case wire::Opcode::send_se:
      if (options.decode_advertisements)
        advertisements(c, dir, ev, ctx, step.opcode, body, step.message_length, step.msn,
                       ev.ddp->header.rsvd_ulp1, ev.analysis.message.value_or(kNoIndex));
      return;
    case wire::Opcode::terminate:
      terminate(c, dir, ev, ctx, body);
      return;
    case wire::Opcode::atomic_request:
      if (step.atomic_request) {
        ev.atomic_request = *step.atomic_request;
        rdmap::PendingAtomic a;
        a.request_id = step.atomic_request->request_id;
        a.frame = ctx.frame;
        a.ts_ns = cur_ts;
        a.pdu = ev.id;
        if (!peer.sink.atomic_requested(a))
          limit_reached("max_outstanding_atomics", Ctx{c.stream, dir, ctx.frame, {}});
        if (timing) timing->request(OpKind::atomic, c.stream, dir);
      }
      return;
    case wire::Opcode::atomic_response:
      if (step.atomic_response) ev.atomic_response = *step.atomic_response;
      if (step.atomic) {
        ev.analysis.request_frame = step.atomic->frame;
        ev.analysis.response_time_ns =
            static_cast<std::int64_t>(operation_latency_ns(step.atomic->ts_ns, cur_ts));
        if (timing) {
          const LatencySample s =
              timing->completion(OpKind::atomic, c.stream, 1 - dir, step.atomic->frame,
                                 step.atomic->ts_ns, cur_frame, cur_ts);
          ev.operations.push_back(
              {OpKind::atomic, 1 - dir, s.request_frame, step.atomic->pdu, s.ns, {}, {}});
        }
      }
      return;
    case wire::Opcode::immediate_data:
    case wire::Opcode::immediate_data_se:
      if (step.immediate) ev.immediate_data = *step.immediate;
      return;
    default:
      return;
  }
}

// A Read Request names two ranges (RFC 5040 §4.4): the requester's sink, valid for this
// transfer (shown, not enforced), and the responder's source.
void Analyzer::Impl::learn_from_read_request(Connection& c, int dir, const wire::ReadRequest& rr,
                                             const Ctx& ctx) {
  // What a Read Request says of its two ranges is evidence for this stream, not a binding: the
  // same STags may be named by another stream of the same hosts (one protection domain), and
  // what an ended stream taught is learned again.
  const DirectionModel& dm = model.streams[c.stream].dirs[dir];
  const auto learn = [&](ShadowBuffer& b, RegionSource source, const char* what,
                         std::uint64_t base) {
    const bool stale = learned_elsewhere_and_ended(b, c.stream);
    if (!((b.source == RegionSource::observed && !b.base) || stale)) return false;
    b.source = source;
    b.origin = std::string(what) + " (frame " + std::to_string(ctx.frame) + ")";
    b.base = base;
    b.length = rr.size;
    b.bounds_enforced = false;
    b.stream_scoped = false;
    b.stream = c.stream;
    b.learned_frame = ctx.frame;
    return true;
  };
  if (ShadowBuffer* sink = region_for(c, dir, RegionKey{dm.from.addr, rr.sink_stag})) {
    learn(*sink, RegionSource::read_request_sink, "Read Request sink", rr.sink_to);
    if (!sink->stream) sink->stream = c.stream;
    sink->invalidated = false;
  }
  if (ShadowBuffer* src = region_for(c, dir, RegionKey{dm.to.addr, rr.source_stag}))
    learn(*src, RegionSource::read_request_source, "Read Request source", rr.source_to);
}

void Analyzer::Impl::terminate(Connection& c, int dir, PduEvent& ev, const Ctx& ctx,
                               ByteView body) {
  auto t = wire::decode_terminate(body, sink_traits(profile()).siw_terminate_layout);
  if (!t) {
    // RFC 5040 §5.4: a Terminate is answered by none, whatever breaks in it.
    report(Violation{FindingId::rdmap_body_invalid, std::nullopt, TerminateQuote::none,
                     "Terminate: " + t.error().message,
                     body.size() < wire::kTerminateControlSize ? SinkCase::terminate_body_short
                                                               : SinkCase::in_terminate},
           ctx);
    report(FindingId::rdmap_terminate, ctx, "Terminate (undecodable body)");
    return;
  }
  ev.terminate = t.value();
  const auto& tc = t->control;
  const TerminateError err{tc.layer, tc.etype, tc.code};
  std::string msg = "peer sent Terminate: " + terminate_error_name(err);
  if (t->ddp_header) {
    // Link to the segment it quotes: the peer's recent segment with the same DDP header.
    if (const HeaderEcho* e = c.ds(1 - dir).recent.find(*t->ddp_header)) {
      ev.analysis.quoted_frame = e->frame;
      msg += " (quotes the segment in frame " + std::to_string(e->frame) + ")";
    }
  }
  // What the profiles predicted from the first rule broken in the direction it answers.
  const auto& predicted = c.ds(1 - dir).predicted;
  std::uint8_t hidden_matches = 0;
  // Only when the user chose a profile: without one the report names none (and stays as it was).
  if (options.sink_profile && !predicted[0] && !predicted[1] && t->ddp_header) {
    // No rule broken that the capture shows: the Terminate may answer the peer's own regions,
    // which it does not show. Which profiles answer the quoted segment so under such a state.
    const wire::DdpHeader& q = *t->ddp_header;
    const bool read_request = !q.control.tagged && q.qn == 1 && t->rdmap_read_request;
    const auto hidden = rdmap::hidden_region_violations(
        q, read_request ? t->rdmap_read_request : std::nullopt, ddp::StreamFacts{c.stream, {}});
    const Violation* why = nullptr;
    for (const Violation& v : hidden) {
      for (const SinkProfile p : {SinkProfile::rfc, SinkProfile::siw}) {
        const SinkAnswer a = sink_answer(p, v);
        if (a.outcome != SinkOutcome::terminate || a.terminate != err) continue;
        if (why == nullptr) why = &v;
        if (why->id == v.id)
          hidden_matches |= static_cast<std::uint8_t>(1u << static_cast<unsigned>(p));
      }
    }
    if (why != nullptr)
      msg += "; no rule broken in the capture predicts it: it is the answer to " +
             std::string(finding_spec(why->id).code) + " if " + why->detail +
             ", which the capture does not show";
  }
  const std::size_t idx = report(FindingId::rdmap_terminate, ctx, msg, Consequence::none, err);
  if (predicted[0] || predicted[1]) {
    std::uint8_t matches = 0;
    std::string expected;
    for (const SinkProfile p : {SinkProfile::rfc, SinkProfile::siw}) {
      const auto& pr = predicted[static_cast<std::size_t>(p)];
      if (!pr) continue;
      const bool match =
          pr->answer.outcome == SinkOutcome::terminate && pr->answer.terminate == err;
      if (match) matches |= static_cast<std::uint8_t>(1u << static_cast<unsigned>(p));
      expected += std::string(expected.empty() ? "" : "; ") + std::string(to_string(p)) + ": " +
                  (pr->answer.terminate ? terminate_error_name(*pr->answer.terminate)
                                        : std::string(to_string(pr->answer.outcome))) +
                  " for " + std::string(finding_spec(pr->id).code) + " in frame " +
                  std::to_string(pr->frame);
    }
    if (idx != kNoIndex) model.findings[idx].matches = matches;
    if (matches == 0) {
      report(FindingId::rdmap_terminate_unexpected, ctx,
             "peer sent Terminate " + terminate_error_name(err) +
                 ", which no Data Sink profile predicts (" + expected + ")");
    }
  } else if (hidden_matches != 0 && idx != kNoIndex) {
    model.findings[idx].matches = hidden_matches;
  }
  if (t->layout == wire::TerminateLayout::siw_bitfield) {
    report(
        FindingId::rdmap_terminate_nonconformant, ctx,
        "control word in Linux siw's little-endian bit-field layout (" +
            (t->evidence == wire::TerminateLayoutEvidence::rfc_undefined
                 ? std::string("no M/D/R flag; decided because the RFC layout's reading is no "
                               "defined error and siw's is")
             : t->evidence == wire::TerminateLayoutEvidence::siw_expected
                 ? std::string("no M/D/R flag; both readings are defined errors, read as siw's "
                               "because the Data Sink profile is siw")
                 : std::string("decided by M/D/R in siw's bit positions")) +
            "); the RFC layout reads " +
            terminate_error_name(t->rfc_reading.layer, t->rfc_reading.etype, t->rfc_reading.code) +
            " with reserved bits " + hex_number(t->rfc_reading.reserved));
  }
}

// ---- message records and delivery ----------------------------------------------------------

// A message's first segment, tagged or untagged: folded into both paths.
[[gnu::always_inline]] inline std::size_t Analyzer::Impl::new_record(Connection& c, int dir,
                                                                     std::uint8_t opcode,
                                                                     bool is_tagged) {
  if (model.message_count++ >= options.limits.max_message_records) {
    if (!records_capped) {
      records_capped = true;  // every later message asks again
      limit_reached("max_message_records", Ctx{c.stream, dir, cur_frame, {}});
    }
    return kNoIndex;
  }
  if (!options.message_records) return kNoIndex;
  // Address space for every record up to the cap at once, memory only as records are written
  // (common/mapped_array.h): growing by copying would copy the records and fault their pages in
  // twice. A cap set far above the default reserves no more than the default's.
  if (model.messages.capacity() == 0)
    model.messages.reserve(
        std::min(options.limits.max_message_records, Limits{}.max_message_records));
  MessageRecord r;
  r.stream = c.stream;
  r.direction = dir;
  r.opcode = opcode;
  r.tagged = is_tagged;
  r.first_frame = cur_ev && !cur_ev->slices.empty() ? cur_ev->slices.front().frame : cur_frame;
  r.first_ts_ns = cur_ts;
  model.messages.push_back(r);
  return model.messages.size() - 1;
}

[[gnu::always_inline]] inline std::uint64_t Analyzer::Impl::delivery_push(Connection& c, int dir,
                                                                          std::size_t record) {
  DirectionEngine& ds = c.ds(dir);
  if (ds.delivery.size() >= options.limits.max_pending_messages) {
    limit_reached("max_pending_messages", Ctx{c.stream, dir, cur_frame, {}});
    ds.delivery.pop_front();
    ds.delivery_base++;
  }
  ds.delivery.push_back({record, false});
  return ds.delivery_base + ds.delivery.size() - 1;
}

// The message's last segment arrived. `placed` is false when a segment broke a placement rule
// (nothing of it counts as placed); such a message and abandoned ones are never delivered.
// Folded into both paths, as new_record and delivery_push are (a Send runs all three).
[[gnu::always_inline]] inline void Analyzer::Impl::complete(Connection& c, int dir,
                                                            std::uint64_t delivery_id,
                                                            std::size_t record, PduEvent& ev,
                                                            bool placed) {
  DirectionEngine& ds = c.ds(dir);
  if (record != kNoIndex && placed) {
    auto& r = model.messages[record];
    r.complete = true;
    r.placed_frame = cur_frame;
    r.placed_ts_ns = cur_ts;
    ev.analysis.messages_completed.push_back(record);
  }
  if (delivery_id >= ds.delivery_base && delivery_id - ds.delivery_base < ds.delivery.size())
    ds.delivery[delivery_id - ds.delivery_base].complete = true;
  // RFC 5041 §5.3: delivery in order once every earlier message is placed and delivered.
  while (!ds.delivery.empty() && ds.delivery.front().complete) {
    const std::size_t rec = ds.delivery.front().record;
    if (rec != kNoIndex && model.messages[rec].complete) {
      model.messages[rec].delivered_frame = cur_frame;
      model.messages[rec].delivered_ts_ns = cur_ts;
      ev.analysis.messages_delivered.push_back(rec);
    }
    ds.delivery.pop_front();
    ds.delivery_base++;
  }
}

// Drops an unfinished message from the delivery queue (it will never complete).
void Analyzer::Impl::abandon(Connection& c, int dir, std::uint64_t delivery_id) {
  DirectionEngine& ds = c.ds(dir);
  if (delivery_id >= ds.delivery_base && delivery_id - ds.delivery_base < ds.delivery.size()) {
    PendingDelivery& p = ds.delivery[delivery_id - ds.delivery_base];
    p.complete = true;  // let later messages through
    p.abandoned = true;
  }
}

ShadowBuffer* Analyzer::Impl::lookup_region(const RegionKey& key) {
  if (shard) [[unlikely]]
    shard->touched.insert(key);
  ShadowBuffer* b = model.memory.find(key);
  if (b != nullptr) last_region = b;
  return b;
}

bool Analyzer::Impl::stream_ended(std::uint32_t stream) const {
  return stream < model.streams.size() && (model.streams[stream].closed || conns[stream]->replaced);
}

bool Analyzer::Impl::learned_elsewhere_and_ended(const ShadowBuffer& b,
                                                 std::uint32_t stream) const {
  const bool learned = b.source == RegionSource::advertisement ||
                       b.source == RegionSource::read_request_sink ||
                       b.source == RegionSource::read_request_source;
  return learned && b.stream && *b.stream != stream && stream_ended(*b.stream);
}

ShadowBuffer* Analyzer::Impl::region_for(Connection& c, int dir, const RegionKey& key) {
  if (shard) [[unlikely]]
    shard->touched.insert(key);
  ShadowBuffer* b = model.memory.get_or_create(key, options.limits.max_regions);
  if (!b) {
    if (shard) shard->regions_capped = true;
    limit_reached("max_regions", Ctx{c.stream, dir, cur_frame, {}});
  }
  return b;
}

// End of input: messages still open never received their last segment.
void Analyzer::Impl::finish_direction(Connection& c, int dir) {
  const StreamModel& sm = model.streams[c.stream];
  DirectionEngine& ds = c.ds(dir);
  const Ctx ctx{c.stream, dir, sm.last_frame, {}};
  const std::string cut = sm.closed ? "" : " (the capture ends before the connection does)";
  for (std::uint32_t qn = 0; qn < rdmap::DataSink::kQueues; ++qn) {
    const ddp::UntaggedRx& q = ds.sink.queue(qn);
    if (!q.open) continue;
    Ctx mctx = ctx;
    if (ds.queues[qn].record != kNoIndex)
      mctx.frame = model.messages[ds.queues[qn].record].first_frame;
    report(FindingId::ddp_message_incomplete, mctx,
           "MSN " + std::to_string(q.expected_msn) + " on QN " + std::to_string(qn) +
               " never received its last segment" + cut +
               (q.damaged ? " (" + unseen(ds.last_loss) + ")" : std::string()),
           q.damaged   ? cause(ds.last_loss)
           : sm.closed ? Consequence::none
                       : Consequence::gap);
  }
  const ddp::TaggedRx& t = ds.sink.tagged();
  if (t.open) {
    Ctx mctx = ctx;
    if (ds.tagged.record != kNoIndex) mctx.frame = model.messages[ds.tagged.record].first_frame;
    report(FindingId::ddp_message_incomplete, mctx,
           "tagged message to STag " + hex_stag(t.stag) + " never received its last segment" + cut +
               (t.damaged ? " (" + unseen(ds.last_loss) + ")" : std::string()),
           t.damaged   ? cause(ds.last_loss)
           : sm.closed ? Consequence::none
                       : Consequence::gap);
  }
}

}  // namespace ddpscope
