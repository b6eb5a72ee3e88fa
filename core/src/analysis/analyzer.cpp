// SPDX-License-Identifier: GPL-2.0-or-later
// The analysis engine. Per TCP connection: two directions, each with a reassembler and an MPA
// framer; each framed FPDU goes through DDP (placement, MSN/MO, delivery) and RDMAP (opcode
// rules, Read/Atomic matching, invalidation, Terminate) checks. The Data Sink of a segment is
// the receiver of its direction.
#include "ddpscope/analysis/analyzer.h"

#include <algorithm>
#include <cstring>
#include <deque>
#include <set>
#include <string_view>

#include "ddpscope/mpa/fpdu_walker.h"
#include "ddpscope/mpa/framer.h"
#include "ddpscope/tcp/reassembly.h"
#include "ddpscope/ulp/advert.h"

namespace ddpscope {

std::string_view to_string(StreamState s) {
  switch (s) {
    case StreamState::unknown:
      return "unknown";
    case StreamState::handshake:
      return "handshake";
    case StreamState::full:
      return "full-operation";
    case StreamState::rejected:
      return "rejected";
    case StreamState::failed:
      return "failed";
    case StreamState::not_iwarp:
      return "not-iwarp";
  }
  return "?";
}

namespace {

constexpr std::size_t kNone = static_cast<std::size_t>(-1);
constexpr std::size_t kBodyKeep = 4096;  // octets of an untagged message kept for decoding
constexpr std::size_t kRecentHeaders = 256;

bool serial_lt(std::uint32_t a, std::uint32_t b) {
  return static_cast<std::int32_t>(a - b) < 0;
}

struct OpenUntagged {
  std::uint32_t msn = 0;
  std::uint32_t next_mo = 0;
  std::uint8_t opcode = 0;
  std::uint32_t invalidate_stag = 0;
  std::size_t record = kNone;
  std::uint64_t fifo_id = 0;
  Bytes body;
  bool damaged = false;   // part of it was lost in a capture gap
  bool too_long = false;  // reported already
};

struct QueueState {
  bool init = false;
  std::uint32_t next_msn = 1;
  std::optional<OpenUntagged> open;
  bool after_gap = false;
};

struct OpenTagged {
  std::uint32_t stag = 0;
  std::uint64_t start_to = 0;
  std::uint64_t next_to = 0;
  std::uint8_t opcode = 0;
  std::size_t record = kNone;
  std::uint64_t fifo_id = 0;
  bool damaged = false;
  bool read_matched = false;
  bool size_reported = false;
  bool violated = false;  // a segment broke a placement rule: a compliant sink places nothing
};

struct OutstandingRead {
  wire::ReadRequest req;
  std::uint64_t frame = 0;
  std::int64_t ts_ns = 0;
  std::uint64_t received = 0;
};

struct FifoEntry {
  std::size_t record = kNone;
  bool complete = false;
};

struct HeaderEcho {
  wire::DdpHeader header;
  std::uint64_t frame = 0;
};

struct DirState {
  DirState(const Limits& l, HistoryBudget* budget)
      : reasm(l.reassembly_window, l.retransmission_history, budget), framer(l) {}
  TcpReassembler reasm;
  MpaFramer framer;
  std::map<std::uint32_t, QueueState> queues;
  std::optional<OpenTagged> tagged;
  std::deque<OutstandingRead> reads;  // Read Requests this side sent, awaiting responses
  std::map<std::uint32_t, std::pair<std::uint64_t, std::int64_t>> atomics;  // by request id
  std::deque<FifoEntry> fifo;   // messages in arrival order, awaiting delivery
  std::uint64_t fifo_base = 0;  // id of fifo.front()
  std::deque<HeaderEcho> recent;
  std::set<FindingId> once;  // noisy findings reported once per direction
  bool truncated_reported = false;
};

struct Conn {
  Conn(const Limits& l, HistoryBudget* budget)
      : d{std::make_unique<DirState>(l, budget), std::make_unique<DirState>(l, budget)} {}
  // Direction states live behind pointers: swapping sides (once MPA tells which side is the
  // initiator) may happen while one of them is framing, and must not move it.
  DirState& ds(int i) { return *d[i]; }
  int index_of(const DirState* s) const { return d[0].get() == s ? 0 : 1; }
  std::uint32_t stream = 0;
  std::array<std::unique_ptr<DirState>, 2> d;
  bool provisional = true;  // client side guessed, not yet proven by SYN or MPA Request
  std::optional<StreamHint> hint;
  std::uint64_t reply_frame = 0;  // the MPA Reply's frame (0: none seen)
};

struct ConnKey {
  net::Endpoint a, b;
  auto operator<=>(const ConnKey&) const = default;
};

// Endpoint equality for the per-segment path: a fixed-size compare the compiler inlines (the
// defaulted operators go through a lexicographic memcmp call).
bool same_address(const net::Address& x, const net::Address& y) {
  return x.v6 == y.v6 && std::memcmp(x.bytes.data(), y.bytes.data(), x.bytes.size()) == 0;
}
bool same_endpoint(const net::Endpoint& x, const net::Endpoint& y) {
  return x.port == y.port && same_address(x.addr, y.addr);
}

}  // namespace

struct Analyzer::Impl {
  explicit Impl(AnalyzerOptions o)
      : options(std::move(o)), advertisers(default_advertisement_decoders()) {
    model.memory.set_retention_cap(options.limits.payload_retention);
    model.memory.set_range_cap(options.limits.max_ranges_per_region);
  }

  AnalyzerOptions options;
  std::vector<std::unique_ptr<AdvertisementDecoder>> advertisers;
  Model model;
  AnalysisObserver* observer = nullptr;
  // Shared by every connection's reassemblers: declared before `conns`, which return their
  // history to it when destroyed.
  HistoryBudget history_budget{options.limits.max_history_total};
  std::map<ConnKey, std::size_t> conn_index;
  std::vector<std::unique_ptr<Conn>> conns;
  std::vector<RegionSpec> user_regions;
  bool have_regions_file = false;
  std::set<std::string, std::less<>> limits_reported;
  // The connection of the previous segment: captures are runs of one connection's segments.
  ConnKey last_key;
  std::size_t last_conn = kNone;
  ShadowBuffer* last_region = nullptr;  // see find_region()
  bool ranges_capped = false;           // max_ranges_per_region reported
  bool history_capped = false;          // max_history_total reported
  std::uint64_t pending_total = 0;      // out-of-order octets held by all reassemblers
  std::uint64_t resync_total = 0;       // octets held by all framers looking for a boundary

  // The frame being processed and the PDU being built (findings attach to it).
  std::uint64_t cur_frame = 0;
  std::int64_t cur_ts = 0;
  PduEvent* cur_ev = nullptr;

  // ---- findings -------------------------------------------------------------------------
  struct Ctx {
    std::uint32_t stream = UINT32_MAX;
    int dir = -1;
    std::uint64_t frame = 0;
    const std::vector<FrameSlice>* slices = nullptr;  // the PDU's octets, when there is one
  };

  std::size_t report(FindingId id, const Ctx& ctx, std::string message, bool consequence = false,
                     std::optional<TerminateError> term = std::nullopt) {
    const auto& spec = finding_spec(id);
    model.finding_counts[static_cast<std::size_t>(id)]++;
    if (model.findings.size() >= options.limits.max_findings) {
      model.findings_dropped++;
      return kNone;
    }
    Finding f;
    f.id = id;
    f.severity = consequence ? Severity::note : spec.severity;
    f.frame = ctx.frame;
    if (ctx.slices) {
      for (const auto& sl : *ctx.slices)
        if (f.frames.empty() || f.frames.back() != sl.frame) f.frames.push_back(sl.frame);
    }
    if (f.frames.empty()) f.frames.push_back(ctx.frame);
    f.stream = ctx.stream;
    f.direction = ctx.dir;
    f.message = std::move(message);
    f.terminate = term ? term : spec.terminate;
    f.consequence_of_gap = consequence;
    model.findings.push_back(std::move(f));
    const std::size_t idx = model.findings.size() - 1;
    if (cur_ev) {
      cur_ev->findings.push_back(idx);
    } else if (observer) {
      observer->on_finding(idx);
    }
    return idx;
  }

  // Reported once per limit. Called for every item past a cap, so the repeat costs a lookup.
  void limit_reached(std::string_view what, const Ctx& ctx) {
    if (limits_reported.find(what) != limits_reported.end()) return;
    limits_reported.emplace(what);
    report(FindingId::engine_limit_reached, ctx, "limit reached: " + std::string(what));
  }

  // ---- input ----------------------------------------------------------------------------
  void feed_tcp(std::uint64_t frame, std::int64_t ts, const net::TcpSegment& seg) {
    cur_frame = frame;
    cur_ts = ts;
    const bool pure_syn = (seg.flags & net::tcp_flag::syn) && !(seg.flags & net::tcp_flag::ack);
    std::size_t conn_at = kNone;
    if (last_conn != kNone && !pure_syn &&
        ((same_endpoint(seg.src, last_key.a) && same_endpoint(seg.dst, last_key.b)) ||
         (same_endpoint(seg.src, last_key.b) && same_endpoint(seg.dst, last_key.a))))
      conn_at = last_conn;
    ConnKey key;
    auto it = conn_index.end();
    if (conn_at == kNone) {
      key = seg.src < seg.dst ? ConnKey{seg.src, seg.dst} : ConnKey{seg.dst, seg.src};
      it = conn_index.find(key);
    }
    if (conn_at == kNone && it != conn_index.end() && pure_syn) {
      // A new connection on a reused 4-tuple once the old one carried data.
      const auto& sm = model.streams[conns[it->second]->stream];
      if (sm.dirs[0].tcp_bytes + sm.dirs[1].tcp_bytes > 0 || sm.closed) {
        conn_index.erase(it);
        it = conn_index.end();
      }
    }
    if (conn_at == kNone && it == conn_index.end()) {
      if (conns.size() >= options.limits.max_streams) {
        limit_reached("max_streams", Ctx{UINT32_MAX, -1, frame, {}});
        return;
      }
      auto c = std::make_unique<Conn>(options.limits, &history_budget);
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
      model.streams.push_back(std::move(sm));
      conns.push_back(std::move(c));
      it = conn_index.emplace(key, conns.size() - 1).first;
    }
    if (conn_at == kNone) {
      conn_at = it->second;
      last_key = key;
      last_conn = conn_at;
    }
    Conn& c = *conns[conn_at];
    StreamModel& sm = model.streams[c.stream];
    if (sm.state == StreamState::not_iwarp) return;
    sm.last_frame = frame;
    sm.last_ts_ns = ts;
    const int dir = same_endpoint(seg.src, sm.client) ? 0 : 1;
    DirectionModel& dm = sm.dirs[dir];
    DirState& ds = c.ds(dir);
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
    Glue glue{*this, c, dir};
    // Callbacks may swap the connection's sides: count both directions' pending octets.
    auto held = [&c] { return c.ds(0).reasm.held_bytes() + c.ds(1).reasm.held_bytes(); };
    auto resyncing = [&c] { return resync_held(c.ds(0)) + resync_held(c.ds(1)); };
    pending_total -= held();
    resync_total -= resyncing();
    ds.reasm.segment(seq, seg.payload, frame, lost_tail, glue);
    if (!history_capped && ds.reasm.history_limited()) {
      history_capped = true;
      limit_reached("max_history_total", Ctx{c.stream, dir, frame, {}});
    }
    if (pending_total + held() > options.limits.max_pending_total) {
      // Every direction may hold a window: past the global cap, this one stops waiting for
      // its holes (they become gaps).
      limit_reached("max_pending_total", Ctx{c.stream, dir, frame, {}});
      for (int d = 0; d < 2; ++d) {
        Glue g{*this, c, d};
        c.ds(d).reasm.flush(g);
      }
    }
    pending_total += held();
    if (resync_total + resyncing() > options.limits.max_resync_total) {
      // Past the budget, this connection's directions that are still looking for a boundary
      // give up framing: what they hold, and what follows, is reported unframed.
      limit_reached("max_resync_total", Ctx{c.stream, dir, frame, {}});
      for (int d = 0; d < 2; ++d) {
        if (resync_held(c.ds(d)) == 0) continue;
        Glue g{*this, c, d};
        c.ds(d).framer.stop(g, "not framed: max_resync_total reached while looking for a boundary");
      }
    }
    resync_total += resyncing();
  }

  // Octets a direction's framer holds while it looks for an FPDU boundary or waits for the
  // MPA Reply (a partial FPDU in order is bounded by the FPDU size, not counted).
  static std::size_t resync_held(DirState& ds) {
    const auto st = ds.framer.state();
    return st == MpaFramer::State::resync || st == MpaFramer::State::wait_params
               ? ds.framer.buffered()
               : 0;
  }

  // Adapts reassembly and framing callbacks to one connection direction.
  // The direction is looked up from the state object on every call: sides may be swapped
  // while a callback chain is running.
  struct Glue : ReassemblyListener, MpaFramerListener {
    Glue(Impl& i, Conn& c, int d) : impl(i), conn(c), state(&c.ds(d)) {}
    Impl& impl;
    Conn& conn;
    const DirState* state;
    int dir() const { return conn.index_of(state); }
    void on_data(std::uint64_t offset, ByteView data, std::uint64_t frame,
                 std::uint32_t offset_in_frame) override {
      impl.on_data(conn, dir(), offset, data, frame, offset_in_frame);
    }
    void on_gap(std::uint64_t offset, std::uint64_t length, std::uint64_t next_frame) override {
      impl.on_gap(conn, dir(), offset, length, next_frame);
    }
    void on_conflict(std::uint64_t offset, std::uint64_t length, std::uint64_t frame) override {
      impl.report(FindingId::tcp_retransmission_conflict, Ctx{conn.stream, dir(), frame, {}},
                  std::to_string(length) + " octets at stream offset " + std::to_string(offset) +
                      " differ from the copy seen first (first copy kept)");
    }
    void on_raw_pdu(RawPdu& pdu) override { impl.on_raw_pdu(conn, dir(), pdu); }
  };

  void on_data(Conn& c, int dir, std::uint64_t offset, ByteView data, std::uint64_t frame,
               std::uint32_t offset_in_frame) {
    StreamModel& sm = model.streams[c.stream];
    if (sm.state == StreamState::not_iwarp) return;
    Glue glue{*this, c, dir};
    c.ds(dir).framer.feed(offset, data, frame, offset_in_frame, glue);
  }

  void on_gap(Conn& c, int dir, std::uint64_t offset, std::uint64_t length,
              std::uint64_t next_frame) {
    StreamModel& sm = model.streams[c.stream];
    if (sm.state == StreamState::not_iwarp) return;
    sm.dirs[dir].bytes_lost += length;
    report(FindingId::tcp_gap, Ctx{c.stream, dir, next_frame, {}},
           std::to_string(length) + " octets missing from the capture at stream offset " +
               std::to_string(offset));
    DirState& ds = c.ds(dir);
    mark_damaged(ds);
    Glue glue{*this, c, dir};
    ds.framer.gap(offset, length, glue);
  }

  // Octets of this direction were lost (capture gap) or dropped (CRC): open messages are
  // damaged and the next MSN on each queue may jump.
  static void mark_damaged(DirState& ds) {
    for (auto& [qn, q] : ds.queues) {
      q.after_gap = true;
      if (q.open) q.open->damaged = true;
    }
    for (std::uint32_t qn : {wire::kQnSend, wire::kQnReadRequest, wire::kQnTerminate})
      if (!ds.queues.count(qn)) ds.queues[qn].after_gap = true;
    if (ds.tagged) ds.tagged->damaged = true;
  }

  // ---- MPA ------------------------------------------------------------------------------
  static Ctx ctx_of(const Conn& c, int dir, const std::vector<FrameSlice>& slices,
                    std::uint64_t fallback) {
    Ctx ctx{c.stream, dir, fallback, &slices};
    if (!slices.empty()) ctx.frame = slices.front().frame;
    return ctx;
  }

  void swap_sides(Conn& c) {
    StreamModel& sm = model.streams[c.stream];
    std::swap(sm.client, sm.server);
    std::swap(sm.dirs[0], sm.dirs[1]);
    std::swap(c.d[0], c.d[1]);
  }

  void on_raw_pdu(Conn& c, int dir, RawPdu& p) {
    StreamModel& sm = model.streams[c.stream];
    PduEvent ev;
    ev.stream = c.stream;
    ev.direction = dir;
    ev.stream_offset = p.stream_offset;
    ev.raw = p.raw;
    ev.slices = std::move(p.slices);
    const Ctx ctx = ctx_of(c, dir, ev.slices, cur_frame);
    // Framing one direction can complete the handshake and frame the other: keep the outer
    // event's place.
    PduEvent* const outer = cur_ev;
    cur_ev = &ev;
    switch (p.kind) {
      case RawPdu::Kind::not_mpa:
        on_not_mpa(c, dir, ctx);
        cur_ev = outer;
        p.slices = std::move(ev.slices);
        return;  // nothing consumed: no event
      case RawPdu::Kind::reqrep:
        ev.kind = p.reqrep->kind == wire::MpaFrameKind::request ? PduKind::mpa_request
                                                                : PduKind::mpa_reply;
        dir = on_reqrep(c, dir, *p.reqrep, ctx);
        ev.direction = dir;
        ev.reqrep = &*p.reqrep;
        break;
      case RawPdu::Kind::unframed:
        ev.kind = PduKind::unframed;
        sm.dirs[dir].bytes_unframed += p.raw.size();
        if (p.error && p.error->code == "mpa.ulpdu-length-invalid") {
          report(FindingId::mpa_ulpdu_length_invalid, ctx, p.error->message,
                 any_after_gap(c.ds(dir)));
        }
        // Octets that could not be framed are lost to the analysis: what they held is missing.
        if (sm.state == StreamState::full && !p.raw.empty()) mark_damaged(c.ds(dir));
        break;
      case RawPdu::Kind::fpdu:
        ev.kind = PduKind::fpdu;
        on_fpdu(c, dir, p, ev, ctx);
        break;
    }
    cur_ev = outer;
    if (observer) observer->on_pdu(ev);
    p.slices = std::move(ev.slices);  // the framer reuses the storage
  }

  static bool any_after_gap(const DirState& ds) {
    for (const auto& [qn, q] : ds.queues)
      if (q.after_gap) return true;
    return false;
  }

  void on_not_mpa(Conn& c, int dir, const Ctx& ctx) {
    StreamModel& sm = model.streams[c.stream];
    Glue glue{*this, c, dir};
    if (c.hint) {
      sm.mid_stream = true;
      sm.state = StreamState::full;
      c.ds(dir).framer.start_mid_stream(c.hint->markers, c.hint->crc, glue);
      sm.dirs[dir].mpa.crc = c.hint->crc;
      sm.dirs[dir].mpa.markers = c.hint->markers;
      return;
    }
    if (sm.state == StreamState::unknown) {
      sm.state = StreamState::not_iwarp;
      return;
    }
    if (sm.state == StreamState::full) {
      // The peer's Request/Reply came before the capture: frame from the first FPDU found.
      c.ds(dir).framer.start_mid_stream(false, sm.dirs[dir].mpa.crc, glue);
      return;
    }
    if (sm.state == StreamState::handshake) {
      report(FindingId::mpa_handshake_invalid, ctx,
             "the responder's first octets are not an MPA Reply");
      sm.state = StreamState::failed;
      c.ds(0).framer.stop(glue);
      c.ds(1).framer.stop(glue);
    }
  }

  // Returns the (possibly swapped) direction index of the frame's sender.
  int on_reqrep(Conn& c, int dir, const wire::MpaReqRep& f, const Ctx& ctx_in) {
    StreamModel& sm = model.streams[c.stream];
    const bool is_request = f.kind == wire::MpaFrameKind::request;
    if (sm.state == StreamState::unknown) {
      // The Request's sender is the initiator; a lone Reply's sender the responder.
      if ((is_request && dir == 1) || (!is_request && dir == 0)) {
        if (c.provisional) {
          swap_sides(c);
          dir = 1 - dir;
        }
      }
      c.provisional = false;
      sm.state = StreamState::handshake;
    }
    Ctx ctx = ctx_in;
    ctx.dir = dir;
    DirectionModel& dm = sm.dirs[dir];
    dm.mpa_frame = f;
    dm.mpa_frame_number = ctx.frame;
    Glue glue{*this, c, dir};
    if ((is_request && dir != 0) || (!is_request && dir != 1)) {
      report(FindingId::mpa_handshake_invalid, ctx,
             std::string("MPA ") +
                 (is_request ? "Request from the responder" : "Reply from the initiator"));
      sm.state = StreamState::failed;
      c.ds(0).framer.stop(glue);
      c.ds(1).framer.stop(glue);
      return dir;
    }
    if (f.revision > 2) {
      report(FindingId::mpa_handshake_invalid, ctx,
             "MPA revision " + std::to_string(f.revision) + " (known: 0, 1, 2)");
    }
    if (is_request && f.reject) {
      report(FindingId::mpa_handshake_invalid, ctx, "R (reject) set in an MPA Request");
    }
    if (f.reserved != 0) {
      report(FindingId::mpa_reserved_bits, ctx,
             "reserved MPA flag bits 0x" + hex8(f.reserved) +
                 ((f.reserved & wire::kMpaFlagSiwGsoExp) ? " (Linux siw GSO experiment bit)" : ""));
    }
    if (f.private_data.size() > wire::kMpaMaxPrivateDataRfc) {
      report(FindingId::mpa_handshake_invalid, ctx,
             "private data of " + std::to_string(f.private_data.size()) + " octets (max 512)");
    } else if (f.private_data.size() > wire::kMpaMaxPrivateDataSiw) {
      report(FindingId::mpa_private_data_long, ctx,
             std::to_string(f.private_data.size()) + " octets of private data");
    }
    if (f.revision == 2 && f.enhanced && f.private_data.size() < wire::MpaEnhancedPd::kSize) {
      report(FindingId::mpa_handshake_invalid, ctx,
             "Enhanced (RFC 6581) frame without the 4-octet IRD/ORD private data");
    }
    if (is_request) {
      if (sm.state == StreamState::full) {
        report(FindingId::mpa_handshake_invalid, ctx, "second MPA Request on the stream");
      }
      return dir;
    }
    // Reply: the handshake is complete.
    c.reply_frame = ctx.frame;
    const auto& req = sm.dirs[0].mpa_frame;
    if (f.reject) {
      report(FindingId::mpa_rejected, ctx,
             f.private_data.empty()
                 ? "connection rejected"
                 : "connection rejected (" + std::to_string(f.private_data.size()) +
                       " octets of private data)");
      sm.state = StreamState::rejected;
      c.ds(0).framer.stop(glue);
      c.ds(1).framer.stop(glue);
      return dir;
    }
    if (req && f.revision > req->revision) {
      report(FindingId::mpa_handshake_invalid, ctx,
             "Reply revision " + std::to_string(f.revision) + " above the Request's " +
                 std::to_string(req->revision));
    }
    if (req && req->enhanced_pd && f.enhanced_pd) {
      const auto& rq = *req->enhanced_pd;
      const auto& rp = *f.enhanced_pd;
      sm.enhanced = true;
      sm.peer_to_peer = rq.peer_to_peer && rp.peer_to_peer;
      if (rp.zero_length_write_rtr)
        sm.rtr = "write";
      else if (rp.zero_length_read_rtr)
        sm.rtr = "read";
      else if (rp.zero_length_send_rtr)
        sm.rtr = "send";
      if (rq.peer_to_peer) {
        const bool offered = (rp.zero_length_write_rtr && rq.zero_length_write_rtr) ||
                             (rp.zero_length_read_rtr && rq.zero_length_read_rtr) ||
                             (rp.zero_length_send_rtr && rq.zero_length_send_rtr);
        const bool any_offered =
            rq.zero_length_write_rtr || rq.zero_length_read_rtr || rq.zero_length_send_rtr;
        if (any_offered && !offered) {
          report(FindingId::mpa_handshake_invalid, ctx,
                 "the Reply picks no RTR type the Request offered", false,
                 TerminateError{static_cast<std::uint8_t>(TermLayer::llp), llp_etype::mpa,
                                mpa_code::no_matching_rtr});
        }
      }
      // RFC 6581: the responder's ORD must not exceed the initiator's IRD (0x3FFF: no value).
      constexpr std::uint16_t none = wire::MpaEnhancedPd::kNoValue;
      if (rp.ord != none && rq.ird != none && rp.ord > rq.ird) {
        report(FindingId::mpa_handshake_invalid, ctx,
               "the Reply's ORD " + std::to_string(rp.ord) + " exceeds the Request's IRD " +
                   std::to_string(rq.ird),
               false,
               TerminateError{static_cast<std::uint8_t>(TermLayer::llp), llp_etype::mpa,
                              mpa_code::insufficient_ird});
      }
    }
    sm.revision = f.revision;
    const bool crc = (req && req->crc) || f.crc;
    // M asks the *peer* to send markers: the Reply's M governs client->server.
    const bool markers_c2s = f.markers;
    const bool markers_s2c = req && req->markers;
    sm.dirs[0].mpa.crc = crc;
    sm.dirs[1].mpa.crc = crc;
    sm.dirs[0].mpa.markers = markers_c2s;
    sm.dirs[1].mpa.markers = markers_s2c;
    sm.state = StreamState::full;
    Glue g0{*this, c, 0};
    Glue g1{*this, c, 1};
    sm.dirs[1].mpa.s0 = c.ds(1).framer.s0().value_or(0);
    c.ds(0).framer.set_params(markers_c2s, crc, g0);
    c.ds(1).framer.set_params(markers_s2c, crc, g1);
    if (c.ds(0).framer.s0()) sm.dirs[0].mpa.s0 = *c.ds(0).framer.s0();
    return dir;
  }

  static std::string hex8(std::uint64_t v) {
    static const char* d = "0123456789abcdef";
    std::string s;
    do {
      s.insert(s.begin(), d[v & 15]);
      v >>= 4;
    } while (v);
    return s;
  }
  static std::string hex(std::uint64_t v) { return "0x" + hex8(v); }

  bool once(DirState& ds, FindingId id) { return ds.once.insert(id).second; }

  void on_fpdu(Conn& c, int dir, RawPdu& p, PduEvent& ev, const Ctx& ctx) {
    StreamModel& sm = model.streams[c.stream];
    DirectionModel& dm = sm.dirs[dir];
    DirState& ds = c.ds(dir);
    dm.fpdus++;
    const std::uint16_t len = load_be16(p.plain.data());
    ev.ulpdu_length = len;
    ev.plain = p.plain;
    ev.ulpdu = p.plain.subspan(2, len);
    ev.crc_field = p.crc_field;
    ev.markers = p.markers;
    ev.marker_offsets = p.marker_offsets;
    ev.leading_marker = p.leading_marker;

    if (p.after_resync) {
      const bool benign = p.resync_after_gap || p.resync_mid_stream;
      if (p.resync_skipped > 0 || !benign) {
        report(FindingId::mpa_resync, ctx,
               "FPDU framing found again after " + std::to_string(p.resync_skipped) + " octets" +
                   (p.resync_after_gap ? " (after capture loss)" : ""),
               benign);
      }
    }

    // CRC (RFC 5044 §4.2)
    bool crc_ok = true;
    if (dm.mpa.crc && options.check_crc) {
      const bool ok_all = p.crc_field == p.crc_all;
      const bool ok_lit = p.crc_field == p.crc_no_lead;
      crc_ok = ok_all || ok_lit;
      ev.crc_expected = p.leading_marker && !ok_all && ok_lit ? p.crc_no_lead : p.crc_all;
      if (!crc_ok) {
        dm.crc_errors++;
        report(FindingId::mpa_crc_mismatch, ctx,
               "CRC field " + hex(p.crc_field) + ", computed " + hex(p.crc_all));
        // The FPDU is dropped: what it leaves missing is a consequence, like capture loss.
        mark_damaged(ds);
      }
    } else if (!dm.mpa.crc && p.crc_field != 0 && once(ds, FindingId::mpa_crc_unexpected)) {
      report(FindingId::mpa_crc_unexpected, ctx,
             "CRC field " + hex(p.crc_field) + " while CRC is not in use (reported once)");
    }
    ev.crc_ok = crc_ok;

    // Markers (RFC 5044 §4.3)
    if (!p.markers.empty()) check_markers(c, dir, p, ctx);

    // MULPDU against the receiver's MSS (RFC 5044 §8). Linux siw sizes FPDUs by the MSS
    // without TCP options, so the MSS itself is the EMSS here.
    const auto& peer_mss = sm.dirs[1 - dir].mss;
    if (peer_mss) {
      const std::uint32_t m = wire::mulpdu(*peer_mss, dm.mpa.markers);
      if (m > 0 && len > m && once(ds, FindingId::mpa_fpdu_exceeds_mulpdu)) {
        report(FindingId::mpa_fpdu_exceeds_mulpdu, ctx,
               "ULPDU of " + std::to_string(len) + " octets; MULPDU for MSS " +
                   std::to_string(*peer_mss) + " is " + std::to_string(m) + " (reported once)");
      }
    }
    if (!crc_ok) return;  // a compliant sink drops the FPDU: nothing is placed

    auto seg = wire::decode_ddp_segment(ev.ulpdu);
    if (!seg) {
      report(FindingId::mpa_ulpdu_length_invalid, ctx,
             "ULPDU of " + std::to_string(len) + " octets cannot hold its DDP header");
      return;
    }
    ev.ddp = seg.value();
    if (dm.fpdus == 1) check_setup_order(c, dir, ev, ctx);
    analyze_ddp(c, dir, ev, ctx);
    if (ds.recent.size() >= kRecentHeaders) ds.recent.pop_front();
    ds.recent.push_back({seg->header, ctx.frame});
  }

  // The first FPDU of each direction against the connection setup order: the initiator sends
  // none before the MPA Reply arrives (RFC 5044 §7.1); in peer-to-peer mode (RFC 6581) its
  // first is the zero-length RTR the Reply chose, and the responder sends none before it. A
  // capture shows an order the endpoints saw too: an FPDU captured before the Reply that
  // enables it was sent before that Reply arrived.
  void check_setup_order(Conn& c, int dir, const PduEvent& ev, const Ctx& ctx) {
    const StreamModel& sm = model.streams[c.stream];
    if (sm.mid_stream || c.reply_frame == 0) return;
    if (dir == 0 && ctx.frame < c.reply_frame) {
      report(FindingId::mpa_handshake_invalid, ctx,
             "the initiator's first FPDU precedes the MPA Reply (frame " +
                 std::to_string(c.reply_frame) + ")");
    }
    if (!sm.peer_to_peer || sm.rtr.empty()) return;
    if (dir == 1) {
      if (sm.dirs[0].fpdus == 0) {
        report(FindingId::mpa_handshake_invalid, ctx,
               "peer-to-peer: the responder's first FPDU precedes the initiator's RTR");
      }
      return;
    }
    const wire::DdpSegment& seg = *ev.ddp;
    const auto& h = seg.header;
    const auto opcode =
        static_cast<wire::Opcode>(wire::RdmapControl::from_byte(h.rsvd_ulp0).opcode);
    bool rtr = false;
    if (sm.rtr == "write") {
      rtr = h.control.tagged && opcode == wire::Opcode::rdma_write && seg.payload.empty();
    } else if (sm.rtr == "read") {
      const auto rr = wire::decode_read_request(seg.payload);
      rtr = !h.control.tagged && opcode == wire::Opcode::read_request && rr && rr->size == 0;
    } else if (sm.rtr == "send") {
      rtr = !h.control.tagged && opcode == wire::Opcode::send && seg.payload.empty();
    }
    if (!rtr) {
      report(FindingId::mpa_handshake_invalid, ctx,
             "peer-to-peer: the initiator's first FPDU is " +
                 std::string(wire::opcode_info(static_cast<std::uint8_t>(opcode)).name) +
                 (seg.payload.empty() ? "" : " with payload") + ", not the zero-length " + sm.rtr +
                 " RTR the Reply chose");
    }
  }

  void check_markers(Conn& c, int dir, const RawPdu& p, const Ctx& ctx) {
    StreamModel& sm = model.streams[c.stream];
    DirectionModel& dm = sm.dirs[dir];
    const std::uint64_t s0 = c.ds(dir).framer.s0().value_or(0);
    const std::uint64_t start = p.stream_offset - s0;  // FPDU start incl. a leading marker
    const std::uint64_t header = start + (p.leading_marker ? wire::kMpaMarkerSize : 0);
    bool fits_all = true, fits_lit = true;
    std::string bad;
    for (std::size_t i = 0; i < p.markers.size(); ++i) {
      const auto& m = p.markers[i];
      if (m.reserved != 0) bad = "marker reserved field " + hex(m.reserved);
      if (p.leading_marker && i == 0) {
        if (m.fpduptr != 0)
          bad = "marker in front of an FPDU has FPDUPTR " + std::to_string(m.fpduptr);
        continue;
      }
      const mpa::FpduptrFit fit = mpa::fpduptr_fit(m, start, p.leading_marker);
      if (!fit.leading_marker_in_fpdu) fits_all = false;
      if (!fit.literal) fits_lit = false;
      if (!fit.any()) {
        bad = "marker at stream position " + std::to_string(m.stream_pos) + " has FPDUPTR " +
              std::to_string(m.fpduptr) + ", FPDU starts " + std::to_string(m.stream_pos - header) +
              " octets back";
      }
    }
    if (dm.mpa.crc && p.leading_marker) {
      if (p.crc_field != p.crc_all) fits_all = false;
      if (p.crc_field != p.crc_no_lead) fits_lit = false;
    }
    if (!bad.empty()) {
      report(FindingId::mpa_marker_invalid, ctx, bad);
      return;
    }
    if (p.leading_marker && fits_all != fits_lit && !dm.mpa.convention) {
      dm.mpa.convention = fits_all ? wire::MarkerConvention::leading_marker_in_fpdu
                                   : wire::MarkerConvention::literal;
      report(FindingId::mpa_marker_convention, ctx,
             std::string("sender counts a marker in front of an FPDU ") +
                 (fits_all ? "as the FPDU's first octet (Wireshark/OSC convention)"
                           : "outside the FPDU (literal RFC 5044 reading)"));
    }
  }

  // ---- DDP / RDMAP ----------------------------------------------------------------------
  void analyze_ddp(Conn& c, int dir, PduEvent& ev, const Ctx& ctx) {
    StreamModel& sm = model.streams[c.stream];
    DirectionModel& dm = sm.dirs[dir];
    DirState& ds = c.ds(dir);
    const wire::DdpHeader& h = ev.ddp->header;
    if (h.control.version != wire::kDdpVersion) {
      report(
          FindingId::ddp_version_invalid, ctx, "DDP version " + std::to_string(h.control.version),
          false,
          h.control.tagged
              ? TerminateError{1, ddp_etype::tagged_buffer, ddp_tagged_code::invalid_version}
              : TerminateError{1, ddp_etype::untagged_buffer, ddp_untagged_code::invalid_version});
      return;
    }
    if (h.control.reserved != 0 && once(ds, FindingId::ddp_reserved_nonzero)) {
      report(FindingId::ddp_reserved_nonzero, ctx,
             "DDP control reserved bits " + hex(h.control.reserved) + " (reported once)");
    }
    const auto rc = wire::RdmapControl::from_byte(h.rsvd_ulp0);
    if (rc.version != wire::kRdmapVersion) {
      report(FindingId::rdmap_version_invalid, ctx, "RDMAP version " + std::to_string(rc.version));
      return;
    }
    const auto& info = wire::opcode_info(rc.opcode);
    if (!info.defined) {
      report(FindingId::rdmap_opcode_invalid, ctx, std::string(info.name));
      return;
    }
    if (info.tagged != h.control.tagged) {
      report(FindingId::rdmap_opcode_invalid, ctx,
             std::string(info.name) + " on the " + (h.control.tagged ? "tagged" : "untagged") +
                 " buffer model");
      return;
    }
    auto& oc = dm.opcodes[rc.opcode];
    oc.segments++;
    oc.bytes += ev.ddp->payload.size();
    if (h.control.tagged) {
      tagged(c, dir, ev, ctx, rc.opcode);
    } else {
      untagged(c, dir, ev, ctx, rc.opcode);
    }
  }

  std::size_t new_record(Conn& c, int dir, std::uint8_t opcode, bool is_tagged) {
    if (model.messages.size() >= options.limits.max_message_records) {
      limit_reached("max_message_records", Ctx{c.stream, dir, cur_frame, {}});
      return kNone;
    }
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

  std::uint64_t fifo_push(Conn& c, int dir, std::size_t record) {
    DirState& ds = c.ds(dir);
    if (ds.fifo.size() >= options.limits.max_pending_messages) {
      limit_reached("max_pending_messages", Ctx{c.stream, dir, cur_frame, {}});
      ds.fifo.pop_front();
      ds.fifo_base++;
    }
    ds.fifo.push_back({record, false});
    return ds.fifo_base + ds.fifo.size() - 1;
  }

  // The message's last segment arrived. `placed` is false when a segment broke a placement rule
  // (nothing of it counts as placed); such a message and abandoned ones are never delivered.
  void complete(Conn& c, int dir, std::uint64_t fifo_id, std::size_t record, PduEvent& ev,
                bool placed = true) {
    DirState& ds = c.ds(dir);
    if (record != kNone && placed) {
      auto& r = model.messages[record];
      r.complete = true;
      r.placed_frame = cur_frame;
      r.placed_ts_ns = cur_ts;
      ev.analysis.messages_completed.push_back(record);
    }
    if (fifo_id >= ds.fifo_base && fifo_id - ds.fifo_base < ds.fifo.size())
      ds.fifo[fifo_id - ds.fifo_base].complete = true;
    // RFC 5041 §5.3: delivery in order once every earlier message is placed and delivered.
    while (!ds.fifo.empty() && ds.fifo.front().complete) {
      const std::size_t rec = ds.fifo.front().record;
      if (rec != kNone && model.messages[rec].complete) {
        model.messages[rec].delivered_frame = cur_frame;
        model.messages[rec].delivered_ts_ns = cur_ts;
        ev.analysis.messages_delivered.push_back(rec);
      }
      ds.fifo.pop_front();
      ds.fifo_base++;
    }
  }

  // Drops an unfinished message from the delivery queue (it will never complete).
  void abandon(Conn& c, int dir, std::uint64_t fifo_id) {
    DirState& ds = c.ds(dir);
    if (fifo_id >= ds.fifo_base && fifo_id - ds.fifo_base < ds.fifo.size())
      ds.fifo[fifo_id - ds.fifo_base].complete = true;  // let later messages through
  }

  // ShadowMemory::find with the previous answer kept: a message's segments all go to one region.
  // Buffers are never removed from the model, so a found buffer's address stays valid.
  ShadowBuffer* find_region(const RegionKey& key) {
    if (last_region != nullptr && last_region->key.stag == key.stag &&
        same_address(last_region->key.owner, key.owner))
      return last_region;
    ShadowBuffer* b = model.memory.find(key);
    if (b != nullptr) last_region = b;
    return b;
  }

  ShadowBuffer* region_for(Conn& c, int dir, const RegionKey& key) {
    ShadowBuffer* b = model.memory.get_or_create(key, options.limits.max_regions);
    if (!b) limit_reached("max_regions", Ctx{c.stream, dir, cur_frame, {}});
    return b;
  }

  void tagged(Conn& c, int dir, PduEvent& ev, const Ctx& ctx, std::uint8_t op) {
    StreamModel& sm = model.streams[c.stream];
    DirectionModel& dm = sm.dirs[dir];
    DirState& ds = c.ds(dir);
    const auto& h = ev.ddp->header;
    const std::uint64_t len = ev.ddp->payload.size();
    const bool last = h.control.last;
    const bool is_response = op == static_cast<std::uint8_t>(wire::Opcode::read_response);
    auto& reads = c.ds(1 - dir).reads;

    // Continuation of an open tagged message (RFC 5041 §4.2: same STag, TO advancing).
    bool new_message = !ds.tagged.has_value();
    if (ds.tagged) {
      auto& o = *ds.tagged;
      const bool gap = o.damaged;
      if (o.opcode != op || o.stag != h.stag) {
        if (!gap)
          report(FindingId::ddp_message_incomplete, ctx,
                 "tagged message to STag " + hex(o.stag) + " ended without its last segment");
        abandon(c, dir, o.fifo_id);
        ds.tagged.reset();
        new_message = true;
      } else if (o.next_to != h.to) {
        if (!gap)
          report(FindingId::ddp_tagged_bounds, ctx,
                 "TO " + hex(h.to) + " does not continue the message (expected " + hex(o.next_to) +
                     ")");
      }
    }
    if (new_message) {
      OpenTagged o;
      o.stag = h.stag;
      o.start_to = h.to;
      o.next_to = h.to;
      o.opcode = op;
      o.record = new_record(c, dir, op, true);
      if (o.record != kNone) {
        model.messages[o.record].stag = h.stag;
        model.messages[o.record].to = h.to;
      }
      o.fifo_id = fifo_push(c, dir, o.record);
      ds.tagged = o;
      if (is_response) {
        if (reads.empty()) {
          report(FindingId::rdmap_read_response_unmatched, ctx,
                 "Read Response to STag " + hex(h.stag) + " with no Read Request outstanding");
        } else {
          const auto& rq = reads.front();
          ds.tagged->read_matched = true;
          ev.analysis.request_frame = rq.frame;
          if (len > 0 || !last) {
            if (h.stag != rq.req.sink_stag) {
              report(FindingId::ddp_tagged_invalid_stag, ctx,
                     "Read Response to STag " + hex(h.stag) + ", the Read Request (frame " +
                         std::to_string(rq.frame) + ") named sink STag " + hex(rq.req.sink_stag));
            } else if (h.to != rq.req.sink_to) {
              report(FindingId::ddp_tagged_bounds, ctx,
                     "Read Response starts at TO " + hex(h.to) + ", requested sink TO " +
                         hex(rq.req.sink_to));
            }
          }
        }
      }
    }
    OpenTagged& o = *ds.tagged;
    if (o.record != kNone) {
      model.messages[o.record].length += len;
      model.messages[o.record].segments++;
      ev.analysis.message = o.record;
    }
    // Octets this message already placed, placed again: worth a note when the content differs
    // (buffer reuse across messages is normal RDMA practice and is not reported).
    const bool replaces_own = !new_message && h.to < o.next_to && h.to + len > o.start_to;
    o.next_to = h.to + len;

    bool violation = false;
    if (len > 0) {
      if (h.to + len < h.to && h.to + len != 0) {
        report(FindingId::ddp_tagged_to_wrap, ctx,
               "TO " + hex(h.to) + " + " + std::to_string(len) + " octets wraps past 2^64");
        violation = true;
      }
      if (is_response && o.read_matched && !reads.empty()) {
        auto& rq = reads.front();
        rq.received += len;
        if (rq.received > rq.req.size && !o.size_reported) {
          o.size_reported = true;
          report(FindingId::rdmap_read_response_size_mismatch, ctx,
                 "Read Response carries more than the " + std::to_string(rq.req.size) +
                     " octets requested");
        }
      }
      const RegionKey key{dm.to.addr, h.stag};
      ShadowBuffer* buf = find_region(key);
      if (buf && buf->invalidated) {
        report(FindingId::rdmap_stag_invalidated_use, ctx,
               "STag " + hex(h.stag) + " was invalidated in frame " +
                   std::to_string(buf->invalidated_frame));
        violation = true;
      } else if (!buf && have_regions_file && !(is_response && o.read_matched)) {
        report(FindingId::ddp_tagged_invalid_stag, ctx,
               "STag " + hex(h.stag) + " is not a known region of " + key.owner.to_string());
        violation = true;
      }
      if (!buf) buf = region_for(c, dir, key);
      if (buf) {
        if (buf->stream && *buf->stream != c.stream && buf->source != RegionSource::regions_file) {
          report(FindingId::ddp_tagged_stag_wrong_stream, ctx,
                 "STag " + hex(h.stag) + " belongs to stream " + std::to_string(*buf->stream));
          violation = true;
        }
        if (buf->bounds_enforced && !buf->contains(h.to, len)) {
          report(FindingId::ddp_tagged_bounds, ctx,
                 "[" + hex(h.to) + ", +" + std::to_string(len) + ") outside region [" +
                     hex(*buf->base) + ", +" + std::to_string(*buf->length) + ")");
          violation = true;
        }
        PlacedRange r;
        r.begin = h.to;
        r.end = h.to + len < h.to ? UINT64_MAX : h.to + len;
        r.frame = ctx.frame;
        r.opcode = op;
        r.stream = c.stream;
        r.violation = violation;
        if (violation) o.violated = true;
        const PlaceResult pr = model.memory.place(*buf, r, ev.ddp->payload);
        if (pr.capped && !ranges_capped) {
          ranges_capped = true;  // every later segment to a capped region would ask again
          limit_reached("max_ranges_per_region", Ctx{c.stream, dir, ctx.frame, {}});
        }
        if (pr.conflict && replaces_own && once(ds, FindingId::ddp_tagged_conflicting_placement)) {
          report(FindingId::ddp_tagged_conflicting_placement, ctx,
                 "octets of STag " + hex(h.stag) +
                     " placed again with different content (reported once)");
        }
        dm.bytes_placed += pr.new_bytes;
        ev.analysis.placed = !violation;
        ev.analysis.region = key;
        ev.analysis.region_source = buf->source;
        ev.analysis.region_bounds_known = buf->base.has_value();
        ev.analysis.offset_in_region = h.to - buf->base.value_or(0);
        ev.analysis.region_bytes_placed = buf->bytes_placed();
      }
    }
    if (!last) return;
    // Last segment: the message is placed.
    dm.opcodes[op].messages++;
    if (is_response && o.read_matched && !reads.empty()) {
      const auto rq = reads.front();
      reads.pop_front();
      ev.analysis.request_frame = rq.frame;
      ev.analysis.response_time_ns = cur_ts - rq.ts_ns;
      if (rq.received != rq.req.size && !o.size_reported) {
        report(FindingId::rdmap_read_response_size_mismatch, ctx,
               "Read Response carried " + std::to_string(rq.received) + " octets, " +
                   std::to_string(rq.req.size) + " were requested in frame " +
                   std::to_string(rq.frame));
      }
    }
    if (o.damaged) {
      report(FindingId::ddp_message_incomplete, ctx,
             "tagged message to STag " + hex(o.stag) +
                 " ended with octets missing from the capture (not analysed)",
             true);
    }
    complete(c, dir, o.fifo_id, o.record, ev, !o.violated);
    ds.tagged.reset();
  }

  void untagged(Conn& c, int dir, PduEvent& ev, const Ctx& ctx, std::uint8_t op) {
    StreamModel& sm = model.streams[c.stream];
    DirectionModel& dm = sm.dirs[dir];
    DirState& ds = c.ds(dir);
    const auto& h = ev.ddp->header;
    const auto& info = wire::opcode_info(op);
    const std::uint64_t len = ev.ddp->payload.size();
    if (!info.qn || h.qn != *info.qn) {
      report(FindingId::ddp_untagged_invalid_qn, ctx,
             std::string(info.name) + " on QN " + std::to_string(h.qn) + " (expected " +
                 std::to_string(info.qn.value_or(0)) + ")");
      return;
    }
    QueueState& q = ds.queues[h.qn];
    QueueStats& qs = dm.queues[h.qn];
    qs.qn = h.qn;
    qs.segments++;
    ev.analysis.expected_msn = q.open ? q.open->msn : q.next_msn;
    const bool gap_before = q.after_gap;

    if (!q.init) {
      q.init = true;
      if (sm.mid_stream || gap_before) {
        q.next_msn = h.msn;
      } else if (h.msn != 1) {
        report(FindingId::ddp_untagged_msn_gap, ctx,
               "first MSN on QN " + std::to_string(h.qn) + " is " + std::to_string(h.msn) +
                   ", expected 1");
        q.next_msn = h.msn;
      }
    }
    if (q.open && h.msn == q.open->msn) {
      if (h.mo != q.open->next_mo) {
        report(FindingId::ddp_untagged_invalid_mo, ctx,
               "MO " + std::to_string(h.mo) + ", expected " + std::to_string(q.open->next_mo) +
                   " for MSN " + std::to_string(h.msn),
               q.open->damaged);
        q.open->damaged = true;
      }
    } else {
      if (serial_lt(h.msn, q.next_msn)) {
        if (h.mo > 0) {
          report(FindingId::ddp_segment_after_last, ctx,
                 "MSN " + std::to_string(h.msn) + " MO " + std::to_string(h.mo) +
                     " after that message's last segment",
                 gap_before);
        } else {
          report(FindingId::ddp_untagged_msn_duplicate, ctx,
                 "MSN " + std::to_string(h.msn) + " on QN " + std::to_string(h.qn) +
                     " was already received (next expected " + std::to_string(q.next_msn) + ")",
                 gap_before);
        }
        return;
      }
      if (h.msn != q.next_msn) {
        report(FindingId::ddp_untagged_msn_gap, ctx,
               "MSN " + std::to_string(h.msn) + " on QN " + std::to_string(h.qn) + ", expected " +
                   std::to_string(q.next_msn),
               gap_before);
      }
      if (q.open) {
        report(FindingId::ddp_message_incomplete, ctx,
               "MSN " + std::to_string(q.open->msn) + " on QN " + std::to_string(h.qn) +
                   " ended without its last segment",
               q.open->damaged);
        abandon(c, dir, q.open->fifo_id);
        q.open.reset();
      }
      q.next_msn = h.msn;
      OpenUntagged o;
      o.msn = h.msn;
      o.opcode = op;
      o.invalidate_stag = h.rsvd_ulp1;
      o.record = new_record(c, dir, op, false);
      if (o.record != kNone) {
        model.messages[o.record].qn = h.qn;
        model.messages[o.record].msn = h.msn;
      }
      o.fifo_id = fifo_push(c, dir, o.record);
      if (h.mo != 0) {
        report(FindingId::ddp_untagged_invalid_mo, ctx,
               "first segment of MSN " + std::to_string(h.msn) + " has MO " + std::to_string(h.mo),
               gap_before);
        o.damaged = true;
      }
      q.open = o;
      if (qs.messages == 0 && qs.segments == 1) qs.first_msn = h.msn;
    }
    OpenUntagged& o = *q.open;
    o.next_mo = h.mo + static_cast<std::uint32_t>(len);
    if (o.record != kNone) {
      model.messages[o.record].length = o.next_mo;
      model.messages[o.record].segments++;
      ev.analysis.message = o.record;
    }
    if (o.body.size() < kBodyKeep) {
      const std::size_t n = std::min<std::size_t>(len, kBodyKeep - o.body.size());
      o.body.insert(o.body.end(), ev.ddp->payload.begin(), ev.ddp->payload.begin() + n);
    }
    ev.analysis.placed = true;
    // Receive buffers: Read Requests and Atomic Requests have fixed sizes.
    std::optional<std::uint64_t> buffer;
    if (h.qn == wire::kQnReadRequest) buffer = wire::ReadRequest::kSize;
    if (op == static_cast<std::uint8_t>(wire::Opcode::atomic_request))
      buffer = wire::AtomicRequest::kSize;
    if (h.qn == wire::kQnSend && options.send_buffer_size) buffer = *options.send_buffer_size;
    if (buffer && o.next_mo > *buffer && !o.too_long) {
      o.too_long = true;
      report(FindingId::ddp_untagged_message_too_long, ctx,
             std::string(info.name) + " of at least " + std::to_string(o.next_mo) +
                 " octets for a " + std::to_string(*buffer) + "-octet buffer");
    }
    if (!h.control.last) return;

    // Message complete.
    OpenUntagged done = std::move(o);
    q.open.reset();
    q.next_msn = done.msn + 1;
    if (!done.damaged) q.after_gap = false;
    qs.messages++;
    qs.last_msn = done.msn;
    if (qs.messages == 1) qs.first_msn = done.msn;
    dm.opcodes[op].messages++;
    complete(c, dir, done.fifo_id, done.record, ev);
    if (done.damaged) return;
    rdmap_message(c, dir, ev, ctx, op, done);
  }

  void rdmap_message(Conn& c, int dir, PduEvent& ev, const Ctx& ctx, std::uint8_t op,
                     const OpenUntagged& m) {
    StreamModel& sm = model.streams[c.stream];
    DirectionModel& dm = sm.dirs[dir];
    DirState& ds = c.ds(dir);
    const ByteView body = m.body;
    using wire::Opcode;
    switch (static_cast<Opcode>(op)) {
      case Opcode::read_request: {
        auto rr = wire::decode_read_request(body);
        if (!rr || body.size() < wire::ReadRequest::kSize) {
          report(FindingId::rdmap_body_invalid, ctx,
                 "Read Request of " + std::to_string(body.size()) + " octets (needs 28)");
          return;
        }
        ev.read_request = rr.value();
        read_request(c, dir, ev, ctx, *rr);
        return;
      }
      case Opcode::send_invalidate:
      case Opcode::send_se_invalidate: {
        const RegionKey key{dm.to.addr, m.invalidate_stag};
        if (ShadowBuffer* b = region_for(c, dir, key)) {
          b->invalidated = true;
          b->invalidated_frame = ctx.frame;
        }
        [[fallthrough]];
      }
      case Opcode::send:
      case Opcode::send_se:
        if (options.decode_advertisements) advertisements(c, dir, ctx, op, body);
        return;
      case Opcode::terminate:
        terminate(c, dir, ev, ctx, body);
        return;
      case Opcode::atomic_request: {
        auto a = wire::decode_atomic_request(body);
        if (!a) {
          report(FindingId::rdmap_body_invalid, ctx,
                 "Atomic Request of " + std::to_string(body.size()) + " octets (needs 52)");
          return;
        }
        ev.atomic_request = a.value();
        if (ds.atomics.size() >= options.limits.max_outstanding_atomics &&
            !ds.atomics.count(a->request_id)) {
          limit_reached("max_outstanding_atomics", Ctx{c.stream, dir, ctx.frame, {}});
          ds.atomics.erase(ds.atomics.begin());
        }
        ds.atomics[a->request_id] = {ctx.frame, cur_ts};
        return;
      }
      case Opcode::atomic_response: {
        auto a = wire::decode_atomic_response(body);
        if (!a || body.size() != wire::AtomicResponse::kSize) {
          report(FindingId::rdmap_body_invalid, ctx,
                 "Atomic Response of " + std::to_string(body.size()) + " octets (needs 12)");
          return;
        }
        ev.atomic_response = a.value();
        auto& pending = c.ds(1 - dir).atomics;
        auto it = pending.find(a->request_id);
        if (it == pending.end()) {
          report(FindingId::rdmap_atomic_response_unmatched, ctx,
                 "Atomic Response for request id " + std::to_string(a->request_id));
        } else {
          ev.analysis.request_frame = it->second.first;
          ev.analysis.response_time_ns = cur_ts - it->second.second;
          pending.erase(it);
        }
        return;
      }
      case Opcode::immediate_data:
      case Opcode::immediate_data_se: {
        auto v = wire::decode_immediate_data(body);
        if (!v || body.size() != wire::kImmediateDataSize) {
          report(FindingId::rdmap_body_invalid, ctx,
                 "Immediate Data of " + std::to_string(body.size()) + " octets (needs 8)");
          return;
        }
        ev.immediate_data = v.value();
        return;
      }
      default:
        return;
    }
  }

  void read_request(Conn& c, int dir, PduEvent& ev, const Ctx& ctx, const wire::ReadRequest& rr) {
    StreamModel& sm = model.streams[c.stream];
    DirectionModel& dm = sm.dirs[dir];
    DirState& ds = c.ds(dir);
    (void)ev;
    if (ds.reads.size() >= options.limits.max_outstanding_reads) {
      limit_reached("max_outstanding_reads", Ctx{c.stream, dir, ctx.frame, {}});
      ds.reads.pop_front();
    }
    ds.reads.push_back({rr, ctx.frame, cur_ts, 0});
    // IRD of the responder (RFC 6581): the receiver of this request advertised it.
    const auto& responder_frame = sm.dirs[1 - dir].mpa_frame;
    if (responder_frame && responder_frame->enhanced_pd && sm.enhanced) {
      const std::uint16_t ird = responder_frame->enhanced_pd->ird;
      if (ird != wire::MpaEnhancedPd::kNoValue && ds.reads.size() > ird) {
        report(FindingId::rdmap_ird_exceeded, ctx,
               std::to_string(ds.reads.size()) + " Read Requests outstanding, responder IRD " +
                   std::to_string(ird));
      }
    }
    // Sink range at the requester: valid for this transfer (shown, not enforced).
    if (ShadowBuffer* sink = region_for(c, dir, RegionKey{dm.from.addr, rr.sink_stag})) {
      if (sink->source == RegionSource::observed && !sink->base) {
        sink->source = RegionSource::read_request_sink;
        sink->origin = "Read Request sink (frame " + std::to_string(ctx.frame) + ")";
        sink->base = rr.sink_to;
        sink->length = rr.size;
        sink->learned_frame = ctx.frame;
      }
      if (!sink->stream) sink->stream = c.stream;
      sink->invalidated = false;
    }
    // Source range at the responder: the responder validates it before reading.
    const RegionKey skey{dm.to.addr, rr.source_stag};
    ShadowBuffer* src = model.memory.find(skey);
    const std::uint8_t rp = static_cast<std::uint8_t>(TermLayer::rdmap);
    if (rr.size > 0) {
      if (src && src->invalidated) {
        report(FindingId::rdmap_stag_invalidated_use, ctx,
               "Read Request source STag " + hex(rr.source_stag) + " was invalidated in frame " +
                   std::to_string(src->invalidated_frame),
               false, TerminateError{rp, rdmap_etype::remote_protection, rdmap_code::invalid_stag});
      } else if (!src && have_regions_file) {
        report(FindingId::ddp_tagged_invalid_stag, ctx,
               "Read Request source STag " + hex(rr.source_stag) + " is not a known region of " +
                   skey.owner.to_string(),
               false, TerminateError{rp, rdmap_etype::remote_protection, rdmap_code::invalid_stag});
      } else if (src && src->bounds_enforced && !src->contains(rr.source_to, rr.size)) {
        report(FindingId::ddp_tagged_bounds, ctx,
               "Read Request source [" + hex(rr.source_to) + ", +" + std::to_string(rr.size) +
                   ") outside region [" + hex(*src->base) + ", +" + std::to_string(*src->length) +
                   ")",
               false, TerminateError{rp, rdmap_etype::remote_protection, rdmap_code::base_bounds});
      } else if (src && src->stream && *src->stream != c.stream &&
                 src->source != RegionSource::regions_file) {
        report(FindingId::ddp_tagged_stag_wrong_stream, ctx,
               "Read Request source STag " + hex(rr.source_stag) + " belongs to stream " +
                   std::to_string(*src->stream),
               false,
               TerminateError{rp, rdmap_etype::remote_protection, rdmap_code::stag_not_associated});
      }
    }
    if (!src) src = region_for(c, dir, skey);
    if (src && src->source == RegionSource::observed && !src->base) {
      src->source = RegionSource::read_request_source;
      src->origin = "Read Request source (frame " + std::to_string(ctx.frame) + ")";
      src->base = rr.source_to;
      src->length = rr.size;
      src->learned_frame = ctx.frame;
      if (!src->stream) src->stream = c.stream;
    }
  }

  void advertisements(Conn& c, int dir, const Ctx& ctx, std::uint8_t op, ByteView body) {
    StreamModel& sm = model.streams[c.stream];
    AdvertContext actx{op, sm.dirs[dir].from, sm.dirs[dir].to, c.stream};
    std::vector<AdvertisedRegion> found;
    for (const auto& d : advertisers)
      d->decode(actx, body, found);
    for (const auto& a : found) {
      ShadowBuffer* b = region_for(c, dir, RegionKey{a.owner, a.stag});
      if (!b || b->source == RegionSource::regions_file) continue;
      b->source = RegionSource::advertisement;
      b->origin = std::string(advertisers.front()->name()) + " advertisement (frame " +
                  std::to_string(ctx.frame) + ")";
      b->base = a.base;
      b->length = a.length;
      b->bounds_enforced = true;
      b->stream = c.stream;
      b->learned_frame = ctx.frame;
      b->invalidated = false;
    }
  }

  void terminate(Conn& c, int dir, PduEvent& ev, const Ctx& ctx, ByteView body) {
    auto t = wire::decode_terminate(body);
    if (!t) {
      report(FindingId::rdmap_body_invalid, ctx, "Terminate: " + t.error().message);
      report(FindingId::rdmap_terminate, ctx, "Terminate (undecodable body)");
      return;
    }
    ev.terminate = t.value();
    const auto& tc = t->control;
    const TerminateError err{tc.layer, tc.etype, tc.code};
    std::string msg = "peer sent Terminate: " + terminate_error_name(err);
    if (t->ddp_header) {
      // Link to the segment it quotes: the peer's recent segment with the same DDP header.
      const auto& recent = c.ds(1 - dir).recent;
      for (auto it = recent.rbegin(); it != recent.rend(); ++it) {
        if (it->header == *t->ddp_header) {
          ev.analysis.quoted_frame = it->frame;
          msg += " (quotes the segment in frame " + std::to_string(it->frame) + ")";
          break;
        }
      }
    }
    report(FindingId::rdmap_terminate, ctx, msg, false, err);
    if (t->layout == wire::TerminateLayout::siw_bitfield) {
      report(FindingId::rdmap_terminate_nonconformant, ctx,
             "control word in Linux siw's little-endian bit-field layout; the RFC layout reads " +
                 terminate_error_name(t->rfc_reading.layer, t->rfc_reading.etype,
                                      t->rfc_reading.code) +
                 " with reserved bits " + hex(t->rfc_reading.reserved));
    }
  }

  // ---- end of input ---------------------------------------------------------------------
  void finish() {
    for (auto& cp : conns) {
      Conn& c = *cp;
      StreamModel& sm = model.streams[c.stream];
      if (sm.state == StreamState::not_iwarp || sm.state == StreamState::unknown) continue;
      for (int dir = 0; dir < 2; ++dir) {
        Glue glue{*this, c, dir};
        c.ds(dir).reasm.flush(glue);
        c.ds(dir).framer.finish(glue);
      }
      for (int dir = 0; dir < 2; ++dir) {
        DirState& ds = c.ds(dir);
        const Ctx ctx{c.stream, dir, sm.last_frame, {}};
        for (auto& [qn, q] : ds.queues) {
          if (!q.open) continue;
          Ctx mctx = ctx;
          if (q.open->record != kNone) mctx.frame = model.messages[q.open->record].first_frame;
          report(FindingId::ddp_message_incomplete, mctx,
                 "MSN " + std::to_string(q.open->msn) + " on QN " + std::to_string(qn) +
                     " never received its last segment" +
                     (sm.closed ? "" : " (the capture ends before the connection does)"),
                 q.open->damaged || !sm.closed);
        }
        if (ds.tagged) {
          Ctx mctx = ctx;
          if (ds.tagged->record != kNone)
            mctx.frame = model.messages[ds.tagged->record].first_frame;
          report(FindingId::ddp_message_incomplete, mctx,
                 "tagged message to STag " + hex(ds.tagged->stag) +
                     " never received its last segment" +
                     (sm.closed ? "" : " (the capture ends before the connection does)"),
                 ds.tagged->damaged || !sm.closed);
        }
      }
    }
  }

  void add_region(const RegionSpec& r) {
    have_regions_file = true;
    user_regions.push_back(r);
    // Without an owner the region applies to every host: it is created lazily per host.
    if (r.owner) install_region(r, *r.owner);
  }

  void install_region(const RegionSpec& r, const net::Address& owner) {
    ShadowBuffer* b =
        model.memory.get_or_create(RegionKey{owner, r.stag}, options.limits.max_regions);
    if (!b) return;
    b->source = RegionSource::regions_file;
    b->origin = r.origin.empty() ? "regions file" : r.origin;
    b->base = r.base;
    b->length = r.length;
    b->bounds_enforced = true;
  }

  // Regions without an owner: installed for a host the first time that host is seen.
  void ensure_ownerless_regions(const net::Address& host) {
    for (const auto& r : user_regions) {
      if (r.owner) continue;
      if (!model.memory.find(RegionKey{host, r.stag})) install_region(r, host);
    }
  }
};

Analyzer::Analyzer(AnalyzerOptions options) : impl_(std::make_unique<Impl>(std::move(options))) {}
Analyzer::~Analyzer() = default;

void Analyzer::set_observer(AnalysisObserver* observer) {
  impl_->observer = observer;
}
void Analyzer::add_region(const RegionSpec& region) {
  impl_->add_region(region);
}

void Analyzer::feed_frame(std::uint64_t frame, std::int64_t ts_ns, std::uint32_t link_type,
                          ByteView data, std::uint32_t wire_length) {
  Model& m = impl_->model;
  m.frames++;
  m.bytes += data.size();
  const auto d = net::decode_frame(link_type, data, wire_length);
  switch (d.status) {
    case net::FrameStatus::tcp:
      feed_tcp(frame, ts_ns, d.tcp);
      break;
    case net::FrameStatus::not_tcp:
      m.frames_not_tcp++;
      break;
    case net::FrameStatus::unsupported:
      m.frames_unsupported++;
      break;
    case net::FrameStatus::malformed:
      m.frames_malformed++;
      break;
  }
}

void Analyzer::feed_tcp(std::uint64_t frame, std::int64_t ts_ns, const net::TcpSegment& segment) {
  if (!impl_->user_regions.empty()) {
    impl_->ensure_ownerless_regions(segment.src.addr);
    impl_->ensure_ownerless_regions(segment.dst.addr);
  }
  impl_->feed_tcp(frame, ts_ns, segment);
}

void Analyzer::note_truncated_file(std::uint64_t last_frame, const std::string& detail) {
  impl_->report(FindingId::capture_truncated_file, Impl::Ctx{UINT32_MAX, -1, last_frame, {}},
                detail);
}

void Analyzer::finish() {
  impl_->finish();
}
const Model& Analyzer::model() const {
  return impl_->model;
}
const AnalyzerOptions& Analyzer::options() const {
  return impl_->options;
}

}  // namespace ddpscope
