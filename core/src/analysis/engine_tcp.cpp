// SPDX-License-Identifier: GPL-2.0-or-later
// The engine's input side: connections by 4-tuple (a SYN on a reused one starts a new stream),
// TCP reassembly per direction, capture loss, the budgets shared by all streams, and findings.
#include "engine.h"

namespace ddpscope {

DirectionEngine::DirectionEngine(const Limits& l, HistoryBudget* budget)
    : reasm(l.reassembly_window, l.retransmission_history, budget), framer(l) {
  rdmap::SinkConfig sc;
  sc.max_reads = l.max_outstanding_reads;
  sc.max_atomics = l.max_outstanding_atomics;
  sink = rdmap::DataSink(sc);
}

Analyzer::Impl::Impl(AnalyzerOptions o)
    : options(std::move(o)), advertisers(default_advertisement_decoders()) {
  model.memory.set_retention_cap(options.limits.payload_retention);
  model.sink_profile = options.sink_profile;
  model.memory.set_range_cap(options.limits.max_ranges_per_region);
  model.memory.set_keep_ranges(options.placement_ranges);
  if (options.timing) {
    timing_model = std::make_unique<Timing>(*options.timing, options.limits.max_timing_samples);
    timing = timing_model.get();
  }
}

// ---- findings ------------------------------------------------------------------------------

std::size_t Analyzer::Impl::report(FindingId id, const Ctx& ctx, std::string message,
                                   Consequence consequence, std::optional<TerminateError> term) {
  const auto& spec = finding_spec(id);
  model.finding_counts[static_cast<std::size_t>(id)]++;
  const Severity severity = consequence != Consequence::none ? Severity::note : spec.severity;
  model.severity_counts[static_cast<std::size_t>(severity)]++;
  if (model.findings.size() >= options.limits.max_findings) {
    model.findings_dropped++;
    return kNoIndex;
  }
  Finding f;
  f.id = id;
  f.severity = severity;
  f.frame = ctx.frame;
  if (ctx.slices) {
    for (const auto& sl : *ctx.slices)
      if (f.frames.empty() || f.frames.back() != sl.frame) f.frames.push_back(sl.frame);
  }
  if (f.frames.empty()) f.frames.push_back(ctx.frame);
  f.stream = ctx.stream;
  f.direction = ctx.dir;
  f.message = std::move(message);
  f.terminate = term;
  f.consequence_of = consequence;
  model.findings.push_back(std::move(f));
  if (shard) shard->finding_stamps.push_back(shard->stamp);
  const std::size_t idx = model.findings.size() - 1;
  if (cur_ev) {
    cur_ev->findings.push_back(idx);
  } else if (observer) {
    observer->on_finding(idx);
  }
  return idx;
}

std::size_t Analyzer::Impl::report(const Violation& v, const Ctx& ctx, Consequence consequence) {
  const SinkAnswer answer = sink_answer(profile(), v);
  if (!answer.applies) return report(v.id, ctx, v.detail, consequence, std::nullopt);
  if (consequence == Consequence::none && ctx.dir >= 0 && ctx.stream < conns.size()) {
    auto& predicted = conns[ctx.stream]->ds(ctx.dir).predicted;
    for (const SinkProfile p : {SinkProfile::rfc, SinkProfile::siw}) {
      auto& slot = predicted[static_cast<std::size_t>(p)];
      const SinkAnswer a = sink_answer(p, v);
      if (!slot && a.applies && a.outcome != SinkOutcome::accept)
        slot = DirectionEngine::Prediction{a, v.id, ctx.frame};
    }
  }
  const std::size_t idx = report(v.id, ctx, v.detail, consequence, answer.terminate);
  if (idx != kNoIndex) {
    Finding& f = model.findings[idx];
    f.outcome = answer.outcome;
    const SinkAnswer rfc = sink_answer(SinkProfile::rfc, v);
    if (rfc.terminate && answer.terminate != rfc.terminate) f.rfc_terminate = rfc.terminate;
  }
  return idx;
}

void Analyzer::Impl::limit_reached(std::string_view what, const Ctx& ctx) {
  if (limits_reported.find(what) != limits_reported.end()) return;
  limits_reported.emplace(what);
  report(FindingId::engine_limit_reached, ctx, "limit reached: " + std::string(what));
}

// ---- connections and TCP -------------------------------------------------------------------

Connection* Analyzer::Impl::lookup_connection(std::uint64_t frame, std::int64_t ts,
                                              const net::TcpSegment& seg) {
  const bool pure_syn = (seg.flags & net::tcp_flag::syn) && !(seg.flags & net::tcp_flag::ack);
  const ConnectionKey key =
      seg.src < seg.dst ? ConnectionKey{seg.src, seg.dst} : ConnectionKey{seg.dst, seg.src};
  auto it = conn_index.find(key);
  if (it != conn_index.end() && pure_syn) {
    // A new connection on a reused 4-tuple once the old one carried data.
    const auto& sm = model.streams[conns[it->second]->stream];
    if (sm.dirs[0].tcp_bytes + sm.dirs[1].tcp_bytes > 0 || sm.closed) {
      conns[it->second]->replaced = true;
      conn_index.erase(it);
      it = conn_index.end();
    }
  }
  if (it == conn_index.end()) {
    if (conns.size() >= options.limits.max_streams) {
      limit_reached("max_streams", Ctx{UINT32_MAX, -1, frame, {}});
      return nullptr;
    }
    auto c = std::make_unique<Connection>(options.limits, &history_budget);
    c->stream = static_cast<std::uint32_t>(model.streams.size());
    StreamModel sm;
    sm.id = c->stream;
    // The SYN's sender is the client; otherwise guess the first sender until MPA tells.
    const bool from_server = (seg.flags & net::tcp_flag::syn) && (seg.flags & net::tcp_flag::ack);
    sm.client = from_server ? seg.dst : seg.src;
    sm.server = from_server ? seg.src : seg.dst;
    c->provisional = !(seg.flags & net::tcp_flag::syn);
    sm.dirs[0].from = sm.client;
    sm.dirs[0].to = sm.server;
    sm.dirs[1].from = sm.server;
    sm.dirs[1].to = sm.client;
    sm.first_frame = frame;
    sm.first_ts_ns = ts;
    for (const auto& h : options.hints) {
      if (h.port && (*h.port == seg.src.port || *h.port == seg.dst.port)) c->hint = h;
      if (h.endpoint && (*h.endpoint == seg.src || *h.endpoint == seg.dst)) c->hint = h;
    }
    // Each direction's Data Sink is its receiver (its sides swap with the direction).
    for (int d = 0; d < 2; ++d) {
      c->ds(d).sink.set_stream(ddp::StreamFacts{c->stream, protection_domain_of(sm.dirs[d].to)});
      c->ds(d).sink.set_profile(profile());
    }
    model.streams.push_back(std::move(sm));
    conns.push_back(std::move(c));
    if (shard) shard->stream_stamps.push_back(shard->stamp);
    it = conn_index.emplace(key, conns.size() - 1).first;
  }
  last_key = key;
  last_conn = it->second;
  return conns[last_conn].get();
}

void Analyzer::Impl::note_receiver_drop(const net::Endpoint& from, const net::Endpoint& to) {
  const ConnectionKey key = from < to ? ConnectionKey{from, to} : ConnectionKey{to, from};
  const auto it = conn_index.find(key);
  if (it == conn_index.end()) return;
  Connection& c = *conns[it->second];
  const StreamModel& sm = model.streams[c.stream];
  c.ds(same_endpoint(from, sm.client) ? 0 : 1).receiver_dropped = true;
}

void Analyzer::Impl::report_held(Connection& c, int dir, std::uint64_t frame, ByteView payload,
                                 std::uint64_t offset) {
  const DirectionEngine& ds = c.ds(dir);
  mpa::FpduWalkParams params;
  params.crc = ds.framer.crc();
  Bytes scratch;
  mpa::FpduWalk w;
  for (std::size_t at = 0; at < payload.size();) {
    const ByteView raw = payload.subspan(at);
    if (mpa::fpdu_candidate(raw, params, scratch, w) != mpa::Candidate::yes) return;
    auto ddp = wire::decode_ddp_segment(w.ulpdu());
    if (!ddp) return;
    HeldFpdu h;
    h.frame = frame;
    h.stream = c.stream;
    h.direction = dir;
    h.stream_offset = offset + at;
    h.missing_before = offset - ds.reasm.next_offset();
    h.slice =
        FrameSlice{frame, static_cast<std::uint32_t>(at), static_cast<std::uint32_t>(w.raw_length)};
    h.raw = raw.first(w.raw_length);
    h.ulpdu_length = *w.ulpdu_length;
    h.crc_field = w.crc_field;
    if (params.crc) h.crc_expected = w.crc_field;
    h.ddp = ddp.value();
    observer->on_held_fpdu(h);
    at += w.raw_length;
  }
}

// The sender's receive window: zero holds the other direction up (RFC 9293 §3.8.6.1).
void Analyzer::Impl::timing_window(std::uint32_t stream, int dir, const net::TcpSegment& seg,
                                   std::uint64_t frame, std::int64_t ts) {
  if (!(seg.flags & (net::tcp_flag::syn | net::tcp_flag::rst)))
    timing->window(stream, 1 - dir, seg.window == 0, frame, ts);
}

std::uint64_t Analyzer::Impl::timing_segment(std::uint32_t stream, int dir,
                                             const DirectionEngine& ds, std::uint32_t seq,
                                             bool empty, std::uint64_t frame, std::int64_t ts) {
  if (ds.reasm.started() && !empty) {
    const std::int64_t at = ds.reasm.stream_offset_of(seq);
    const auto next = static_cast<std::int64_t>(ds.reasm.next_offset());
    if (at > next)
      timing->stall(stream, dir, StallKind::out_of_order, frame, ts);
    else if (at == next && ds.reasm.pending_bytes() > 0)
      // It fills a hole that later octets had passed: the sender's retransmission of a segment
      // lost before the capture point (tshark's tcp.analysis.retransmission), or the late one of
      // a reordered pair; the out-of-order event before it is on the operation too.
      timing->stall(stream, dir, StallKind::retransmission, frame, ts);
  }
  return ds.reasm.retransmitted_bytes();
}

void Analyzer::Impl::feed_tcp(std::uint64_t frame, std::int64_t ts, const net::TcpSegment& seg,
                              bool stays_valid) {
  cur_frame = frame;
  cur_ts = ts;
  Connection* cp = connection_for(frame, ts, seg);
  if (cp == nullptr) return;
  Connection& c = *cp;
  StreamModel& sm = model.streams[c.stream];
  if (sm.state == StreamState::not_iwarp) return;
  sm.last_frame = frame;
  sm.last_ts_ns = ts;
  bool from_client = same_endpoint(seg.src, sm.client);
  if (seg.flags & net::tcp_flag::ack) {
    // This segment acknowledges the other direction's octets: that direction's holes before
    // the ACK are capture loss, declared now rather than when its window fills or the capture
    // ends. (Delivery may swap the sides: the sender's direction is looked up again after it.)
    // Not after a packet of that direction was dropped before its receiver (ESP): the hole may
    // be that packet, whose retransmission is still to come, and an ACK covering octets the
    // receiver dropped proves nothing about the capture.
    const int acked = from_client ? 1 : 0;
    if (c.ds(acked).reasm.pending_bytes() > 0 && !c.ds(acked).receiver_dropped) {
      DirectionCallbacks g{*this, c, acked};
      pending_total -= c.held_share;
      resync_total -= c.resync_share;
      c.ds(acked).reasm.acked(seg.ack, g);
      c.held_share = held_now(c);
      c.resync_share = resync_now(c);
      pending_total += c.held_share;
      resync_total += c.resync_share;
      from_client = same_endpoint(seg.src, sm.client);
    }
  }
  const int dir = from_client ? 0 : 1;
  DirectionModel& dm = sm.dirs[dir];
  DirectionEngine& ds = c.ds(dir);
  if (timing) [[unlikely]]
    timing_window(c.stream, dir, seg, frame, ts);
  if (seg.flags & net::tcp_flag::syn) {
    ds.reasm.syn(seg.seq);
    if (seg.mss) dm.mss = seg.mss;
  }
  if (seg.flags & (net::tcp_flag::fin | net::tcp_flag::rst)) sm.closed = true;
  if (seg.flags & net::tcp_flag::fin) {
    const std::uint32_t data_seq = (seg.flags & net::tcp_flag::syn) ? seg.seq + 1 : seg.seq;
    ds.reasm.fin(data_seq + seg.payload_length, frame);
  }
  const std::uint32_t lost_tail =
      seg.payload_length > seg.payload.size()
          ? seg.payload_length - static_cast<std::uint32_t>(seg.payload.size())
          : 0;
  if (seg.payload.empty() && lost_tail == 0) return;
  dm.tcp_bytes += seg.payload.size();
  if (lost_tail > 0 && !ds.truncated_reported) {
    ds.truncated_reported = true;
    report(FindingId::capture_truncated_frame, Ctx{c.stream, dir, frame, {}},
           std::to_string(lost_tail) +
               " octets of this frame's TCP payload were not captured "
               "(snaplen); later truncated frames of this direction are not reported again");
  }
  const std::uint32_t seq = (seg.flags & net::tcp_flag::syn) ? seg.seq + 1 : seg.seq;
  DirectionCallbacks callbacks{*this, c, dir};
  // The totals without this connection's share (as the last call left it), which is added back
  // as it is after the segment, both directions counted (callbacks may swap the sides).
  const std::size_t held_before = c.held_share, resync_before = c.resync_share;
  // For an observer that shows frames as they come: where this segment starts, to tell whether
  // reassembly holds it behind a hole (HeldFpdu), on a direction framing FPDUs whose boundaries
  // a segment can show by itself (no markers, the CRC setting known).
  std::optional<std::int64_t> seg_offset;
  if (observer != nullptr && !seg.payload.empty() && ds.reasm.started() &&
      ds.framer.state() == MpaFramer::State::fpdu && !ds.framer.markers() &&
      !ds.framer.detecting_crc())
    seg_offset = ds.reasm.stream_offset_of(seq);
  // The timing model: a segment past a hole, and octets seen again (out of line: off, one test).
  const std::uint64_t retransmitted =
      timing ? timing_segment(c.stream, dir, ds, seq, seg.payload.empty(), frame, ts) : 0;
  ds.reasm.segment(seq, seg.payload, frame, lost_tail, callbacks,
                   stays_valid && options.frames_stay_valid);
  if (timing && ds.reasm.retransmitted_bytes() > retransmitted) [[unlikely]]
    timing->stall(c.stream, c.index_of(&ds), StallKind::retransmission, frame, ts);
  if (seg_offset && *seg_offset > static_cast<std::int64_t>(ds.reasm.next_offset()))
    report_held(c, &c.ds(0) == &ds ? 0 : 1, frame, seg.payload,
                static_cast<std::uint64_t>(*seg_offset));
  // No hole left (the dropped packet's retransmission came, or it opened none): ACKs are
  // evidence again. (A swap of the sides moves `ds` with them: still this direction's engine.)
  if (ds.reasm.pending_bytes() == 0) ds.receiver_dropped = false;
  if (!history_capped && ds.reasm.history_limited()) {
    history_capped = true;
    limit_reached("max_history_total", Ctx{c.stream, dir, frame, {}});
  }
  const std::size_t pending_others = pending_total - held_before;
  const std::size_t resync_others = resync_total - resync_before;
  std::size_t held_after = held_now(c), resync_after = resync_now(c);
  if (shard) [[unlikely]] {
    shard->pending_peak = std::max<std::size_t>(shard->pending_peak, pending_others + held_after);
    shard->resync_peak = std::max<std::size_t>(shard->resync_peak, resync_others + resync_after);
  }
  if (pending_others + held_after > options.limits.max_pending_total) {
    // Every direction may hold a window: past the global cap, this one stops waiting for
    // its holes (they become gaps).
    limit_reached("max_pending_total", Ctx{c.stream, dir, frame, {}});
    for (int d = 0; d < 2; ++d) {
      DirectionCallbacks g{*this, c, d};
      c.ds(d).reasm.flush(g);
    }
    held_after = held_now(c);
    resync_after = resync_now(c);  // what the flush delivered may have changed framing
  }
  pending_total = pending_others + held_after;
  if (resync_others + resync_after > options.limits.max_resync_total) {
    // Past the budget, this connection's directions that are still looking for a boundary
    // give up framing: what they hold, and what follows, is reported unframed.
    limit_reached("max_resync_total", Ctx{c.stream, dir, frame, {}});
    for (int d = 0; d < 2; ++d) {
      if (resync_held(c.ds(d)) == 0) continue;
      DirectionCallbacks g{*this, c, d};
      c.ds(d).framer.stop(g, "not framed: max_resync_total reached while looking for a boundary");
    }
    resync_after = resync_now(c);
  }
  resync_total = resync_others + resync_after;
  c.held_share = held_after;
  c.resync_share = resync_after;
}

void Analyzer::Impl::DirectionCallbacks::on_data(std::uint64_t offset, ByteView data,
                                                 std::uint64_t frame,
                                                 std::uint32_t offset_in_frame) {
  impl.on_data(conn, dir(), offset, data, frame, offset_in_frame);
}
void Analyzer::Impl::DirectionCallbacks::on_gap(std::uint64_t offset, std::uint64_t length,
                                                std::uint64_t next_frame) {
  impl.on_gap(conn, dir(), offset, length, next_frame);
}
void Analyzer::Impl::DirectionCallbacks::on_conflict(std::uint64_t offset, std::uint64_t length,
                                                     std::uint64_t frame) {
  impl.report(FindingId::tcp_retransmission_conflict, Ctx{conn.stream, dir(), frame, {}},
              std::to_string(length) + " octets at stream offset " + std::to_string(offset) +
                  " differ from the copy seen first (first copy kept)");
}
void Analyzer::Impl::DirectionCallbacks::on_raw_pdu(RawPdu& pdu) {
  impl.on_raw_pdu(conn, dir(), pdu);
}

void Analyzer::Impl::on_data(Connection& c, int dir, std::uint64_t offset, ByteView data,
                             std::uint64_t frame, std::uint32_t offset_in_frame) {
  if (model.streams[c.stream].state == StreamState::not_iwarp) return;
  DirectionCallbacks callbacks{*this, c, dir};
  c.ds(dir).framer.feed(offset, data, frame, offset_in_frame, callbacks);
}

void Analyzer::Impl::on_gap(Connection& c, int dir, std::uint64_t offset, std::uint64_t length,
                            std::uint64_t next_frame) {
  StreamModel& sm = model.streams[c.stream];
  if (sm.state == StreamState::not_iwarp) return;
  sm.dirs[dir].bytes_lost += length;
  report(FindingId::tcp_gap, Ctx{c.stream, dir, next_frame, {}},
         std::to_string(length) + " octets missing from the capture at stream offset " +
             std::to_string(offset));
  lost_input(c, dir, Consequence::gap);
  DirectionCallbacks callbacks{*this, c, dir};
  c.ds(dir).framer.gap(offset, length, callbacks);
}

// ---- end of input and the user's regions ---------------------------------------------------

void Analyzer::Impl::finish() {
  sctp_finish();  // chunks still held past a hole: gaps, then delivered (engine_sctp.cpp)
  for (auto& cp : conns) {
    Connection& c = *cp;
    if (shard) shard->stamp = Stamp{kFinishConns, shard->finish_conn[c.stream]};
    const StreamModel& sm = model.streams[c.stream];
    if (sm.state == StreamState::not_iwarp || sm.state == StreamState::unknown) continue;
    if (c.llp == Llp::sctp) {
      for (int dir = 0; dir < 2; ++dir)
        finish_direction(c, dir);
      continue;
    }
    for (int dir = 0; dir < 2; ++dir) {
      DirectionCallbacks callbacks{*this, c, dir};
      c.ds(dir).reasm.flush(callbacks);
      c.ds(dir).framer.finish(callbacks);
    }
    for (int dir = 0; dir < 2; ++dir) {
      report_lost_framing(c, dir);
      finish_direction(c, dir);
    }
  }
}

void Analyzer::Impl::add_regions(std::span<const RegionSpec> regions) {
  regions_known = true;
  for (const auto& r : regions) {
    user_regions.push_back(r);
    // Without an owner the region applies to every host: it is created lazily per host.
    if (r.owner) install_region(r, *r.owner);
  }
}

void Analyzer::Impl::install_region(const RegionSpec& r, const net::Address& owner) {
  ShadowBuffer* b =
      model.memory.get_or_create(RegionKey{owner, r.stag}, options.limits.max_regions);
  if (!b) {
    if (shard) shard->regions_capped = true;
    return;
  }
  b->source = RegionSource::regions_file;
  b->origin = r.origin.empty() ? "regions file" : r.origin;
  b->base = r.base;
  b->length = r.length;
  b->bounds_enforced = true;
  b->pd = r.pd;
  b->access = r.access;
  b->invalidated = !r.valid;
  b->invalidatable = r.invalidatable;
}

std::optional<std::uint32_t> Analyzer::Impl::protection_domain_of(const net::Endpoint& sink) const {
  std::optional<std::uint32_t> host_pd;
  for (const auto& p : options.protection_domains) {
    if (!same_address(p.endpoint.addr, sink.addr)) continue;
    if (!p.any_port && p.endpoint.port == sink.port) return p.pd;
    if (p.any_port && !host_pd) host_pd = p.pd;
  }
  return host_pd;
}

// Regions without an owner: installed for a host the first time that host is seen.
void Analyzer::Impl::ensure_ownerless_regions(const net::Address& host) {
  if (shard) [[unlikely]]
    shard->ensured.insert(host);
  for (const auto& r : user_regions) {
    if (r.owner) continue;
    if (!model.memory.find(RegionKey{host, r.stag})) install_region(r, host);
  }
}

}  // namespace ddpscope
