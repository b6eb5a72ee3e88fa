// SPDX-License-Identifier: GPL-2.0-or-later
// The SCTP LLP (RFC 5043): associations by their two endpoints, each direction's DATA chunks in
// TSN order (RFC 9260 §6.5) with duplicates compared and dropped and holes declared capture loss
// (when the peer's SACK or SHUTDOWN acknowledges past them, when the held chunks reach the
// window, or at the end of input), user messages put together from their fragments (B ... E,
// per SCTP stream and U flag), the packet checksum (RFC 9260 §6.8). One SCTP stream that
// carries DDP is one DDP stream (a Connection with llp sctp). Its user messages open with a
// DDP-SSN (RFC 5043 §5.2.1) and travel unordered, so each stream direction's messages are put in
// DDP-SSN order (sctp::SsnOrder) before anything judges them: DDP Stream Session Control on
// PPID 17 sets the stream up the way the MPA Request/Reply does (sctp::StreamSession holds the
// rules), and each PPID 16 message's DDP segment, from octet 2, is handed to on_ddp_segment, the
// same LLP boundary MPA's FPDUs cross.
#include <algorithm>

#include "ddpscope/common/crc32c.h"
#include "ddpscope/ddp/rules.h"
#include "ddpscope/mpa/negotiate.h"
#include "engine.h"

namespace ddpscope {
namespace {

// RFC 9260 §1.6: TSNs compare in serial number arithmetic (RFC 1982) over 32 bits.
bool tsn_before(std::uint32_t a, std::uint32_t b) {
  return static_cast<std::int32_t>(a - b) < 0;
}

std::uint32_t key_of(std::uint16_t stream_id, bool unordered) {
  return std::uint32_t{stream_id} | (unordered ? 0x10000u : 0u);
}

// The lowest held TSN in serial order: every held TSN is ahead of next_tsn by less than 2^31.
std::map<std::uint32_t, SctpHeldChunk>::iterator lowest_ahead(SctpDirection& sd) {
  auto it = sd.ahead.lower_bound(sd.next_tsn);
  return it != sd.ahead.end() ? it : sd.ahead.begin();
}

}  // namespace

std::string_view to_string(Llp llp) {
  return llp == Llp::sctp ? "sctp" : "mpa";
}

// ---- packets and associations --------------------------------------------------------------

std::size_t Analyzer::Impl::association_for(std::uint64_t frame, const net::SctpDatagram& dg,
                                            const wire::SctpCommonHeader& h, int& dir) {
  const net::Endpoint src{dg.src, h.source_port};
  const net::Endpoint dst{dg.dst, h.destination_port};
  const ConnectionKey key = src < dst ? ConnectionKey{src, dst} : ConnectionKey{dst, src};
  auto it = assoc_index.find(key);
  if (it == assoc_index.end()) {
    if (assocs.size() >= options.limits.max_streams) {
      limit_reached("max_streams", Ctx{UINT32_MAX, -1, frame, {}});
      return kNoIndex;
    }
    auto a = std::make_unique<SctpAssociation>();
    a->ep = {src, dst};
    a->over_udp = dg.over_udp;
    assocs.push_back(std::move(a));
    if (shard) shard->assoc_stamps.push_back(shard->stamp);
    it = assoc_index.emplace(key, assocs.size() - 1).first;
  }
  dir = same_endpoint(src, assocs[it->second]->ep[0]) ? 0 : 1;
  return it->second;
}

void Analyzer::Impl::feed_sctp(std::uint64_t frame, std::int64_t ts, const net::SctpDatagram& dg) {
  cur_frame = frame;
  cur_ts = ts;
  model.frames_sctp++;
  auto pk = wire::decode_sctp_packet(dg.packet);
  if (!pk && pk.error().code == "sctp.chunk-length" && pk.error().offset > 12) {
    // The chunks before the one that does not fit (a snaplen cut, or a bad length) are whole.
    pk = wire::decode_sctp_packet(dg.packet.first(pk.error().offset));
  }
  if (!pk) {
    model.frames_malformed++;
    return;
  }
  int dir = 0;
  const std::size_t index = association_for(frame, dg, pk->header, dir);
  if (index == kNoIndex) return;
  SctpAssociation& a = *assocs[index];

  // The DDP stream a packet-level finding belongs to: its first DATA chunk's, else the
  // association's first.
  auto packet_ctx = [&]() {
    Ctx ctx{UINT32_MAX, -1, frame, {}};
    std::optional<std::uint16_t> sid;
    for (const auto& ch : pk->chunks) {
      if (ch.type != wire::sctp_chunk::data) continue;
      if (auto d = wire::decode_sctp_data(ch)) sid = d->stream_id;
      break;
    }
    auto it = sid ? a.streams.find(*sid) : a.streams.begin();
    if (it == a.streams.end()) it = a.streams.begin();
    if (it != a.streams.end()) {
      const Connection& c = *conns[it->second];
      ctx.stream = c.stream;
      ctx.dir = dir ^ (c.flipped ? 1 : 0);
    }
    return ctx;
  };

  if (dg.truncated()) {
    if (!a.d[dir].truncated_reported) {
      a.d[dir].truncated_reported = true;
      report(FindingId::capture_truncated_frame, packet_ctx(),
             std::to_string(dg.packet_length - dg.packet.size()) +
                 " octets of this SCTP packet were not captured (snaplen); its cut chunks are "
                 "treated as lost (later truncated packets of this direction are not reported)");
    }
  } else if (options.check_crc && pk->header.checksum == 0 && !wire::sctp_checksum_ok(dg.packet)) {
    // A zero CRC32c is what a capture on the sending host shows when the NIC (or veth) fills
    // the checksum in later: taken as not filled in, not as corruption (that would discard
    // every packet of the direction). Said once per direction; the packet is analysed.
    if (!a.d[dir].zero_checksum_reported) {
      a.d[dir].zero_checksum_reported = true;
      report(FindingId::sctp_checksum_unfilled, packet_ctx(),
             "checksum 0 (computed " + hex_word(wire::sctp_checksum(dg.packet)) +
                 "): checksum offload on the capturing host, most likely; packets of this "
                 "direction with a zero checksum are analysed without checking it");
    }
  } else if (options.check_crc && !wire::sctp_checksum_ok(dg.packet)) {
    // RFC 9260 §6.8: the receiver discards the packet; the sender retransmits what it held.
    report(FindingId::sctp_checksum_mismatch, packet_ctx(),
           "checksum " + hex_word(pk->header.checksum) + ", computed " +
               hex_word(wire::sctp_checksum(dg.packet)) + "; the packet is discarded");
    return;
  }

  for (const wire::SctpChunkView& ch : pk->chunks) {
    switch (ch.type) {
      case wire::sctp_chunk::data: {
        const auto d = wire::decode_sctp_data(ch);
        if (!d) break;
        // Only a U = 0 chunk builds the detail (a string per chunk would be on the hot path).
        if (!d->unordered && !a.d[dir].ordered_reported) {
          if (auto v = sctp::check_unordered(d->unordered, d->ppid,
                                             "DATA chunk TSN " + std::to_string(d->tsn) +
                                                 ", stream " + std::to_string(d->stream_id))) {
            a.d[dir].ordered_reported = true;
            v->detail += " (reported once per direction)";
            report(*v, packet_ctx());
          }
        }
        const std::size_t at = ch.offset + wire::sctp_data_field::user_data;
        sctp_data(a, index, dir, *d,
                  FrameSlice{frame, static_cast<std::uint32_t>(at),
                             static_cast<std::uint32_t>(d->user_data.size())});
        break;
      }
      case wire::sctp_chunk::init:
      case wire::sctp_chunk::init_ack: {
        const auto init = wire::decode_sctp_init(ch);
        if (!init) break;
        const bool is_init = ch.type == wire::sctp_chunk::init;
        // The INIT's sender is the association's initiator (ep[0]).
        if (a.provisional && ((is_init && dir == 1) || (!is_init && dir == 0))) {
          std::swap(a.ep[0], a.ep[1]);
          std::swap(a.vtag[0], a.vtag[1]);
          std::swap(a.adaptation[0], a.adaptation[1]);
          std::swap(a.d[0], a.d[1]);
          for (auto& [sid, ci] : a.streams)
            conns[ci]->flipped = !conns[ci]->flipped;
          dir = 1 - dir;
        }
        a.provisional = false;
        a.setup_seen = true;
        a.init_seen[dir] = true;
        a.adaptation[dir] = init->adaptation_code_point();
        // Packets to the sender of an INIT / INIT ACK carry its Initiate Tag (RFC 9260 §8.5).
        a.vtag[1 - dir] = init->initiate_tag;
        SctpDirection& sd = a.d[dir];
        // An INIT repeated after data flowed does not move the order back.
        if (!sd.tsn_known || (sd.ahead.empty() && sd.recent.empty())) {
          sd.tsn_known = true;
          sd.next_tsn = init->initial_tsn;
        }
        break;
      }
      case wire::sctp_chunk::sack: {
        const auto s = wire::decode_sctp_sack(ch);
        if (s) sctp_acked(a, index, 1 - dir, s->cumulative_tsn_ack);
        break;
      }
      case wire::sctp_chunk::shutdown: {
        a.shutdown = true;
        const auto cum = wire::decode_sctp_shutdown(ch);
        if (cum) sctp_acked(a, index, 1 - dir, *cum);
        break;
      }
      case wire::sctp_chunk::abort:
      case wire::sctp_chunk::shutdown_complete:
        a.closed = true;
        for (auto& [sid, ci] : a.streams)
          model.streams[conns[ci]->stream].closed = true;
        break;
      default:
        break;
    }
  }
  if (pk->header.verification_tag != 0) a.vtag[dir] = pk->header.verification_tag;
  for (auto& [sid, ci] : a.streams) {
    StreamModel& sm = model.streams[conns[ci]->stream];
    if (!sm.sctp) continue;
    const bool f = conns[ci]->flipped;
    sm.sctp->vtags = {a.vtag[f ? 1 : 0], a.vtag[f ? 0 : 1]};
    sm.sctp->adaptation = a.adaptation[0] == wire::kAdaptationCodePointDdp &&
                          a.adaptation[1] == wire::kAdaptationCodePointDdp;
  }
}

// ---- TSN order -----------------------------------------------------------------------------

void Analyzer::Impl::sctp_data(SctpAssociation& a, std::size_t ai, int dir, const wire::SctpData& d,
                               FrameSlice slice) {
  SctpDirection& sd = a.d[dir];
  if (d.user_data.empty()) return;  // RFC 9260 §6.2: a protocol violation the peer ABORTs on
  if (!sd.tsn_known) {
    // The association began before the capture: its first DATA chunk seen starts the order.
    sd.tsn_known = true;
    sd.next_tsn = d.tsn;
  }
  const std::uint32_t ahead = d.tsn - sd.next_tsn;
  if (ahead >= 0x80000000u) {
    // Behind: a retransmission of a chunk already delivered (RFC 9260 §6.3.3), dropped. What it
    // carries is compared with the first copy while that is remembered.
    if (timing) {
      if (auto it = a.streams.find(d.stream_id); it != a.streams.end()) {
        const Connection& sc = *conns[it->second];
        timing->stall(sc.stream, dir ^ (sc.flipped ? 1 : 0), StallKind::retransmission, slice.frame,
                      cur_ts);
      }
    }
    const std::uint32_t crc = crc32c(d.user_data);
    for (const auto& [tsn, first] : sd.recent) {
      if (tsn != d.tsn) continue;
      if (first != crc) {
        Ctx ctx{UINT32_MAX, -1, slice.frame, {}};
        if (auto it = a.streams.find(d.stream_id); it != a.streams.end()) {
          ctx.stream = conns[it->second]->stream;
          ctx.dir = dir ^ (conns[it->second]->flipped ? 1 : 0);
        }
        report(FindingId::sctp_retransmission_conflict, ctx,
               "TSN " + std::to_string(d.tsn) + " retransmitted with different user data");
      }
      break;
    }
    return;
  }
  if (ahead == 0) {
    sd.next_tsn++;
    if (sd.recent.size() >= SctpDirection::kRecent) sd.recent.pop_front();
    sd.recent.emplace_back(d.tsn, crc32c(d.user_data));
    SctpHeldChunk chunk{d.tsn, d.flags(), d.stream_id,
                        d.ssn, d.ppid,    Bytes(d.user_data.begin(), d.user_data.end()),
                        slice};
    sctp_deliver(a, ai, dir, chunk);
    sctp_drain(a, ai, dir);
    return;
  }
  auto [it, inserted] = sd.ahead.try_emplace(d.tsn);
  if (!inserted) {
    if (!std::equal(it->second.data.begin(), it->second.data.end(), d.user_data.begin(),
                    d.user_data.end())) {
      Ctx ctx{UINT32_MAX, -1, slice.frame, {}};
      if (auto s = a.streams.find(d.stream_id); s != a.streams.end()) {
        ctx.stream = conns[s->second]->stream;
        ctx.dir = dir ^ (conns[s->second]->flipped ? 1 : 0);
      }
      report(FindingId::sctp_retransmission_conflict, ctx,
             "TSN " + std::to_string(d.tsn) + " retransmitted with different user data");
    }
    return;
  }
  SctpHeldChunk& h = it->second;
  h.flags = d.flags();
  h.stream_id = d.stream_id;
  h.ssn = d.ssn;
  h.ppid = d.ppid;
  h.data.assign(d.user_data.begin(), d.user_data.end());
  h.slice = slice;
  const std::size_t cost = h.data.size() + SctpDirection::kHeldOverhead;
  sd.ahead_bytes += cost;
  sctp_held_total += cost;
  if (shard) shard->sctp_held_peak = std::max(shard->sctp_held_peak, sctp_held_total);
  if (sd.ahead_bytes > options.limits.reassembly_window) {
    // The hole is not filled within the window: capture loss.
    sctp_gap_to(a, dir, lowest_ahead(sd)->first, slice.frame);
    sctp_drain(a, ai, dir);
  }
  if (sctp_held_total > options.limits.max_pending_total) {
    limit_reached("max_pending_total", Ctx{UINT32_MAX, -1, slice.frame, {}});
    while (!sd.ahead.empty()) {
      sctp_gap_to(a, dir, lowest_ahead(sd)->first, slice.frame);
      sctp_drain(a, ai, dir);
    }
  }
}

void Analyzer::Impl::sctp_drain(SctpAssociation& a, std::size_t ai, int dir) {
  SctpDirection& sd = a.d[dir];
  for (auto it = sd.ahead.find(sd.next_tsn); it != sd.ahead.end();
       it = sd.ahead.find(sd.next_tsn)) {
    SctpHeldChunk chunk = std::move(it->second);
    const std::uint32_t tsn = it->first;
    chunk.tsn = tsn;
    sd.ahead.erase(it);
    const std::size_t cost = chunk.data.size() + SctpDirection::kHeldOverhead;
    sd.ahead_bytes -= cost;
    sctp_held_total -= cost;
    sd.next_tsn++;
    if (sd.recent.size() >= SctpDirection::kRecent) sd.recent.pop_front();
    sd.recent.emplace_back(tsn, crc32c(chunk.data));
    sctp_deliver(a, ai, dir, chunk);
  }
}

// The peer acknowledged every TSN up to `cum_ack` of direction `dir` (SACK or SHUTDOWN): the
// ones the capture does not hold were sent and are capture loss.
void Analyzer::Impl::sctp_acked(SctpAssociation& a, std::size_t ai, int dir,
                                std::uint32_t cum_ack) {
  SctpDirection& sd = a.d[dir];
  if (!sd.peer_cum_ack || tsn_before(*sd.peer_cum_ack, cum_ack)) sd.peer_cum_ack = cum_ack;
  if (!sd.tsn_known) return;
  while (!tsn_before(cum_ack, sd.next_tsn)) {
    const std::uint32_t end = cum_ack + 1;
    std::uint32_t to = end;
    if (!sd.ahead.empty()) {
      const std::uint32_t low = lowest_ahead(sd)->first;
      if (tsn_before(low, end)) to = low;
    }
    if (to != sd.next_tsn) sctp_gap_to(a, dir, to, cur_frame);
    sctp_drain(a, ai, dir);
  }
}

void Analyzer::Impl::sctp_gap_to(SctpAssociation& a, int dir, std::uint32_t tsn,
                                 std::uint64_t frame) {
  SctpDirection& sd = a.d[dir];
  const std::uint32_t lost = tsn - sd.next_tsn;
  if (lost == 0) return;
  // Reported at the first frame past the hole when the capture has it, as tcp.gap is.
  if (auto held = sd.ahead.find(tsn); held != sd.ahead.end()) frame = held->second.slice.frame;
  const std::string msg = std::to_string(lost) + (lost == 1 ? " DATA chunk" : " DATA chunks") +
                          " (TSN " + std::to_string(sd.next_tsn) +
                          (lost == 1 ? "" : ".." + std::to_string(tsn - 1)) +
                          ") missing from the capture; what they carried is unknown";
  sd.next_tsn = tsn;
  // Messages being put together lose the fragments in the hole.
  for (auto& [key, m] : sd.building) {
    sd.ahead_bytes -= std::min(sd.ahead_bytes, m.data.size());
    sctp_held_total -= std::min(sctp_held_total, m.data.size());
  }
  sd.building.clear();
  if (a.streams.empty()) {
    report(FindingId::sctp_gap, Ctx{UINT32_MAX, -1, frame, {}}, msg);
    return;
  }
  // Which DDP stream the lost chunks belonged to is unknown: each of the association's is told.
  for (auto& [sid, ci] : a.streams) {
    Connection& c = *conns[ci];
    const int sdir = dir ^ (c.flipped ? 1 : 0);
    report(FindingId::sctp_gap, Ctx{c.stream, sdir, frame, {}}, msg);
    lost_input(c, sdir, Consequence::gap);
    // The lost chunks may have carried any of the stream's DDP-SSNs: a hole in its order is now
    // capture loss, given up at once when later messages wait behind it.
    if (c.sctp) {
      c.sctp->d[sdir].loss_pending = true;
      if (c.sctp->d[sdir].order.holding()) sctp_skip_hole(c, sdir, false);
    }
  }
}

// ---- user messages -------------------------------------------------------------------------

void Analyzer::Impl::sctp_deliver(SctpAssociation& a, std::size_t ai, int dir,
                                  SctpHeldChunk& chunk) {
  SctpDirection& sd = a.d[dir];
  const bool b = (chunk.flags & wire::kSctpDataFlagB) != 0;
  const bool e = (chunk.flags & wire::kSctpDataFlagE) != 0;
  const bool u = (chunk.flags & wire::kSctpDataFlagU) != 0;
  const std::uint32_t key = key_of(chunk.stream_id, u);
  auto drop = [&](std::map<std::uint32_t, SctpMessageBuild>::iterator it) {
    sd.ahead_bytes -= std::min(sd.ahead_bytes, it->second.data.size());
    sctp_held_total -= std::min(sctp_held_total, it->second.data.size());
    sd.building.erase(it);
  };
  auto it = sd.building.find(key);
  if (b && e) {
    // The common case: a whole message in one chunk.
    if (it != sd.building.end()) drop(it);  // an unfinished message before it is abandoned
    SctpMessageBuild m;
    m.ppid = chunk.ppid;
    m.first_tsn = chunk.tsn;
    m.data = std::move(chunk.data);
    m.slices.push_back(chunk.slice);
    m.chunks = 1;
    sctp_message(a, ai, dir, chunk.stream_id, m);
    return;
  }
  if (b) {
    if (it != sd.building.end()) drop(it);
    it = sd.building.try_emplace(key).first;
    it->second.ppid = chunk.ppid;
    it->second.first_tsn = chunk.tsn;
  } else if (it == sd.building.end()) {
    return;  // a later fragment whose beginning was lost (reported as sctp.gap)
  }
  SctpMessageBuild& m = it->second;
  m.chunks++;
  if (!m.oversize) {
    if (m.data.size() + chunk.data.size() > options.limits.reassembly_window) {
      // One user message larger than the window: not put together (bounded memory).
      limit_reached("reassembly_window", Ctx{UINT32_MAX, -1, chunk.slice.frame, {}});
      sd.ahead_bytes -= std::min(sd.ahead_bytes, m.data.size());
      sctp_held_total -= std::min(sctp_held_total, m.data.size());
      m.data = Bytes();
      m.slices.clear();
      m.oversize = true;
    } else {
      m.data.insert(m.data.end(), chunk.data.begin(), chunk.data.end());
      sd.ahead_bytes += chunk.data.size();
      sctp_held_total += chunk.data.size();
      if (shard) shard->sctp_held_peak = std::max(shard->sctp_held_peak, sctp_held_total);
      if (m.slices.size() < 4096) m.slices.push_back(chunk.slice);
    }
  }
  if (!e) return;
  if (!m.oversize) {
    sd.ahead_bytes -= std::min(sd.ahead_bytes, m.data.size());
    sctp_held_total -= std::min(sctp_held_total, m.data.size());
    SctpMessageBuild done = std::move(m);
    sd.building.erase(it);
    sctp_message(a, ai, dir, chunk.stream_id, done);
    return;
  }
  sd.building.erase(it);
}

Connection* Analyzer::Impl::sctp_stream(SctpAssociation& a, std::size_t ai, std::uint16_t stream_id,
                                        int client_dir, bool from_start) {
  if (auto it = a.streams.find(stream_id); it != a.streams.end()) return conns[it->second].get();
  if (conns.size() >= options.limits.max_streams) {
    limit_reached("max_streams", Ctx{UINT32_MAX, -1, cur_frame, {}});
    return nullptr;
  }
  auto c = std::make_unique<Connection>(options.limits, &history_budget);
  c->stream = static_cast<std::uint32_t>(model.streams.size());
  c->llp = Llp::sctp;
  c->assoc = ai;
  c->flipped = client_dir == 1;
  c->provisional = false;
  c->sctp = std::make_unique<SctpStreamState>();
  if (from_start || a.setup_seen) {
    // The session starts in the capture: each side's first message carries DDP-SSN 0
    // (RFC 5043 §5.2.1 says the DDP-SSN is reset to zero with each session).
    for (auto& d : c->sctp->d)
      d.order.start_at(0);
  } else {
    // The session was set up before the capture: its phase is unknown and each direction's
    // order starts at the first DDP-SSN seen.
    c->sctp->session = sctp::StreamSession(sctp::StreamSession::Phase::unknown);
  }
  StreamModel sm;
  sm.id = c->stream;
  sm.llp = Llp::sctp;
  sm.client = a.ep[client_dir];
  sm.server = a.ep[1 - client_dir];
  sm.dirs[0].from = sm.client;
  sm.dirs[0].to = sm.server;
  sm.dirs[1].from = sm.server;
  sm.dirs[1].to = sm.client;
  sm.first_frame = cur_frame;
  sm.first_ts_ns = cur_ts;
  SctpStreamInfo info;
  info.stream_id = stream_id;
  info.ports = {sm.client.port, sm.server.port};
  info.over_udp = a.over_udp;
  info.vtags = {a.vtag[client_dir], a.vtag[1 - client_dir]};
  info.adaptation = a.adaptation[0] == wire::kAdaptationCodePointDdp &&
                    a.adaptation[1] == wire::kAdaptationCodePointDdp;
  sm.sctp = std::move(info);
  for (int d = 0; d < 2; ++d) {
    c->ds(d).sink.set_stream(ddp::StreamFacts{c->stream, protection_domain_of(sm.dirs[d].to)});
    c->ds(d).sink.set_profile(profile());
  }
  model.streams.push_back(std::move(sm));
  conns.push_back(std::move(c));
  if (shard) shard->stream_stamps.push_back(shard->stamp);
  a.streams.emplace(stream_id, conns.size() - 1);
  return conns.back().get();
}

// A whole user message in TSN order. Its DDP-SSN decides when it is judged: it waits in its
// stream direction's SsnOrder until every message before it was (RFC 5043 §6.1, §10).
void Analyzer::Impl::sctp_message(SctpAssociation& a, std::size_t ai, int dir,
                                  std::uint16_t stream_id, SctpMessageBuild& m) {
  const bool ddp = m.ppid == wire::kPpidDdpSegment;
  const bool session = m.ppid == wire::kPpidDdpSessionControl;
  std::optional<wire::DdpSessionControl> sc;
  std::string sc_error;
  if (session) {
    auto r = wire::decode_ddp_session_control(m.data);
    if (r)
      sc = std::move(r.value());
    else
      sc_error = r.error().message;
  }
  if (!ddp && !session) {
    // Another protocol's message: DDP-looking data (after a DDP-SSN) on the wrong PPID is worth
    // a finding (RFC 5043 §5.2: DDP segments travel on PPID 16 only), anything else is ignored.
    bool looks_ddp = false;
    if (const auto msg = wire::decode_ddp_sctp_message(m.data)) {
      const auto seg = wire::decode_ddp_segment(msg->body);
      looks_ddp =
          seg && seg->header.control.version == wire::kDdpVersion &&
          (a.streams.count(stream_id) != 0 || a.adaptation[0] == wire::kAdaptationCodePointDdp ||
           a.adaptation[1] == wire::kAdaptationCodePointDdp);
    }
    if (!looks_ddp || a.d[dir].ppid_reported) return;
    a.d[dir].ppid_reported = true;
  }
  // The stream's client (the active side): the Initiate's sender; the Accept's or Reject's
  // receiver; else the association's initiator.
  const auto kind = sc ? sc->kind() : wire::DdpSessionKind::unknown;
  const bool placing = kind == wire::DdpSessionKind::initiate ||
                       kind == wire::DdpSessionKind::accept || kind == wire::DdpSessionKind::reject;
  int client_dir = 0;
  if (kind == wire::DdpSessionKind::initiate) client_dir = dir;
  if (kind == wire::DdpSessionKind::accept || kind == wire::DdpSessionKind::reject)
    client_dir = 1 - dir;
  Connection* cp = sctp_stream(a, ai, stream_id, client_dir, placing);
  if (cp == nullptr) return;
  Connection& c = *cp;
  SctpStreamState& st = *c.sctp;
  int sdir = dir ^ (c.flipped ? 1 : 0);
  if (placing && !st.sides_known) {
    // The first Initiate, Accept or Reject places the sides: the Initiate's sender is the
    // active side (RFC 5043 §6.1).
    const int want = kind == wire::DdpSessionKind::initiate ? 0 : 1;
    if (sdir != want) {
      swap_sides(c);
      c.flipped = !c.flipped;
      std::swap(st.d[0], st.d[1]);
      sdir = want;
    }
  }
  if (placing) st.sides_known = true;
  StreamModel& sm = model.streams[c.stream];
  sm.last_frame = cur_frame;
  sm.last_ts_ns = cur_ts;
  DirectionModel& dm = sm.dirs[sdir];
  dm.sctp_chunks += m.chunks;
  dm.sctp_messages++;
  const Ctx ctx = ctx_of(c, sdir, m.slices, cur_frame);
  if (!ddp && !session) {
    report(sctp::violation(FindingId::sctp_ppid_invalid,
                           "a DDP segment on PPID " + std::to_string(m.ppid) +
                               " (DDP segments are PPID 16; reported once per direction)"),
           ctx);
    return;
  }
  // RFC 5043 §5.1, §11.1: judged once, when the capture holds both INIT and INIT ACK.
  if (!a.adaptation_reported && a.init_seen[0] && a.init_seen[1]) {
    a.adaptation_reported = true;
    if (auto v = sctp::check_adaptation(a.adaptation[0], a.adaptation[1])) report(*v, ctx);
  }
  if (session && !sc) {
    report(sctp::violation(FindingId::sctp_session_invalid,
                           "DDP Stream Session Control message: " + sc_error),
           ctx);
    return;
  }
  std::uint16_t ssn = 0;
  if (sc) {
    ssn = sc->ddp_ssn;
  } else {
    const auto msg = wire::decode_ddp_sctp_message(m.data);
    if (!msg) {
      report(sctp::violation(FindingId::sctp_ppid_invalid,
                             "PPID 16 user message: " + msg.error().message),
             ctx);
      return;
    }
    ssn = msg->ddp_ssn;
    // RFC 5043 §9: a DDP segment fits one DATA chunk; SCTP fragmented this one.
    if (m.chunks > 1 && !st.d[sdir].too_large_reported) {
      st.d[sdir].too_large_reported = true;
      auto v = sctp::check_fragmented(msg->body.size(), m.chunks);
      if (v) {
        v->detail += " (reported once per direction)";
        report(*v, ctx);
      }
    }
  }
  // What the active side knew when it sent this (RFC 5043 §6.6), judged as it arrives: an
  // answer to its Initiate, or the passive side's SACK of the Initiate's TSN.
  if (sc && sdir == 0 && kind == wire::DdpSessionKind::initiate && !st.initiate_tsn)
    st.initiate_tsn = m.first_tsn;
  if (sc && sdir == 1 && kind != wire::DdpSessionKind::unknown) st.answer_arrived = true;
  bool allowed_early = st.answer_arrived;
  if (!allowed_early && st.initiate_tsn) {
    const int active_adir = c.flipped ? 1 : 0;
    const auto& ack = a.d[active_adir].peer_cum_ack;
    allowed_early = ack && !tsn_before(*ack, *st.initiate_tsn);
  }
  const std::size_t cost = m.data.size() + SctpDirection::kHeldOverhead;
  st.d[sdir].held_bytes += cost;
  sctp_held_total += cost;
  if (shard) shard->sctp_held_peak = std::max(shard->sctp_held_peak, sctp_held_total);
  const std::uint64_t first_frame = m.slices.empty() ? cur_frame : m.slices.front().frame;
  SctpOrderedMessage om{std::move(m), std::move(sc), allowed_early, first_frame};
  const auto verdict = st.d[sdir].order.push(
      ssn, std::move(om),
      [&](std::uint16_t s, SctpOrderedMessage&& x) { sctp_in_order(c, sdir, s, std::move(x)); });
  using V = sctp::SsnOrder<SctpOrderedMessage>::Verdict;
  if (verdict == V::behind || verdict == V::duplicate) {
    st.d[sdir].held_bytes -= std::min(st.d[sdir].held_bytes, cost);
    sctp_held_total -= std::min(sctp_held_total, cost);
    const auto [from, to] = st.d[sdir].given_up;
    const bool given_up = verdict == V::behind && from != to && !wire::ddp_ssn_before(ssn, from) &&
                          wire::ddp_ssn_before(ssn, to);
    if (given_up) {
      report(sctp::violation(FindingId::sctp_ssn_invalid,
                             "DDP-SSN " + std::to_string(ssn) +
                                 " arrived after the analysis gave it up for lost; not analysed"),
             ctx, Consequence::gap);
    } else {
      report(sctp::violation(FindingId::sctp_ssn_invalid,
                             "DDP-SSN " + std::to_string(ssn) +
                                 (verdict == V::duplicate
                                      ? " used twice (another message with it waits in order)"
                                      : " used again (the stream is at " +
                                            std::to_string(st.d[sdir].order.next()) + ")") +
                                 "; this message is not analysed"),
             ctx);
    }
    return;
  }
  if (verdict != V::held) return;
  if (st.d[sdir].loss_pending) {
    sctp_skip_hole(c, sdir, false);
  } else if (st.d[sdir].held_bytes > options.limits.reassembly_window ||
             sctp_held_total > options.limits.max_pending_total) {
    limit_reached(st.d[sdir].held_bytes > options.limits.reassembly_window ? "reassembly_window"
                                                                           : "max_pending_total",
                  ctx);
    sctp_skip_hole(c, sdir, false);
  }
}

// Gives up the hole in stream direction `dir`'s DDP-SSN order and hands on what waited behind
// it. Capture loss explains the hole when TSNs of the direction were lost, or when the capture
// ended before the association did; otherwise the sender skipped DDP-SSNs (§5.2.1: no gaps).
void Analyzer::Impl::sctp_skip_hole(Connection& c, int dir, bool end_of_input) {
  SctpStreamState& st = *c.sctp;
  auto& order = st.d[dir].order;
  if (!order.holding()) return;
  const SctpAssociation& a = *assocs[c.assoc];
  Consequence why = Consequence::gap;
  std::string cause = "TSNs of this direction are missing from the capture";
  if (!st.d[dir].loss_pending) {
    if (end_of_input && !a.shutdown && !a.closed) {
      cause = "the capture ended before the association did";
    } else {
      why = Consequence::none;
      cause = end_of_input ? "the association ended with every TSN acknowledged"
                           : "later messages filled the reassembly window";
    }
  }
  const SctpOrderedMessage* first = order.first_held_message();
  const std::uint16_t from = order.next(), to = order.first_held();
  const std::uint16_t n = static_cast<std::uint16_t>(to - from);
  report(sctp::violation(FindingId::sctp_ssn_invalid,
                         (n == 1 ? "DDP-SSN " + std::to_string(from)
                                 : "DDP-SSNs " + std::to_string(from) + ".." +
                                       std::to_string(static_cast<std::uint16_t>(to - 1))) +
                             " never arrived (" + cause + "); " +
                             std::to_string(order.held_messages()) +
                             (order.held_messages() == 1 ? " later message" : " later messages") +
                             " analysed without " + (n == 1 ? "it" : "them")),
         Ctx{c.stream, dir, first ? first->frame : cur_frame, {}}, why);
  if (why == Consequence::gap && !st.d[dir].loss_pending) lost_input(c, dir, Consequence::gap);
  st.d[dir].loss_pending = false;
  st.d[dir].given_up = {from, to};
  order.skip_hole(
      [&](std::uint16_t s, SctpOrderedMessage&& x) { sctp_in_order(c, dir, s, std::move(x)); });
}

// One message in its stream direction's DDP-SSN order.
void Analyzer::Impl::sctp_in_order(Connection& c, int dir, std::uint16_t /*ssn*/,
                                   SctpOrderedMessage&& om) {
  SctpStreamState& st = *c.sctp;
  const std::size_t cost = om.m.data.size() + SctpDirection::kHeldOverhead;
  st.d[dir].held_bytes -= std::min(st.d[dir].held_bytes, cost);
  sctp_held_total -= std::min(sctp_held_total, cost);
  const Ctx ctx = ctx_of(c, dir, om.m.slices, om.frame);
  if (om.control)
    sctp_session(c, dir, *om.control, ctx);
  else
    sctp_segment(c, dir, om, ctx);
}

// ---- DDP Stream Session Control (RFC 5043 §5.2.3, §6; RFC 6581 §7) -------------------------

void Analyzer::Impl::sctp_session(Connection& c, int dir, const wire::DdpSessionControl& m,
                                  const Ctx& ctx) {
  StreamModel& sm = model.streams[c.stream];
  SctpStreamState& st = *c.sctp;
  auto& rec = sm.sctp->session;
  if (rec.size() < SctpStreamInfo::kMaxSessionRecords)
    rec.push_back(SctpSessionRecord{ctx.frame, dir, m});
  using Phase = sctp::StreamSession::Phase;
  const Phase before = st.session.phase();
  const bool terminated_before = st.session.terminated(dir);
  const std::vector<Violation> vs = st.session.on_control(dir, m);
  for (const Violation& v : vs)
    report(v, ctx);
  const Phase after = st.session.phase();
  if (after == Phase::initiated && before != Phase::initiated) sm.state = StreamState::handshake;
  if (after == Phase::rejected && before != Phase::rejected) {
    const bool by_terminate = m.kind() == wire::DdpSessionKind::terminate;
    report(FindingId::sctp_session_rejected, ctx,
           by_terminate ? "DDP stream rejected by a Session Terminate (the non-ULP reject, "
                          "RFC 5043 §6.3)"
           : m.ulp_private_data().empty()
               ? "DDP stream rejected"
               : "DDP stream rejected (" + std::to_string(m.ulp_private_data().size()) +
                     " octets of private data)");
    sm.state = StreamState::rejected;
  }
  if (st.session.terminated(dir) && !terminated_before) sm.closed = true;
  if (after != Phase::accepted || before == Phase::accepted) return;
  // The Initiate this Accept answers, when the capture has it.
  const wire::DdpSessionControl* req = nullptr;
  for (const auto& r : rec)
    if (r.direction == 0 && r.message.kind() == wire::DdpSessionKind::initiate) req = &r.message;
  if (req && req->enhanced_pd && m.enhanced_pd) {
    // RFC 6581 §7: the same IRD/ORD/RTR negotiation as the MPA frames', settled by the same
    // rule (mpa::settle) on frames that carry these words.
    wire::MpaReqRep rq, rp;
    rq.kind = wire::MpaFrameKind::request;
    rp.kind = wire::MpaFrameKind::reply;
    for (wire::MpaReqRep* f : {&rq, &rp}) {
      f->revision = 2;
      f->enhanced = true;
    }
    rq.private_data = req->private_data;
    rq.enhanced_pd = req->enhanced_pd;
    rp.private_data = m.private_data;
    rp.enhanced_pd = m.enhanced_pd;
    const mpa::Settlement s = mpa::settle(rq, rp);
    for (const Violation& v : s.violations)
      report(sctp::violation(FindingId::sctp_session_invalid, "RFC 6581 negotiation: " + v.detail),
             ctx);
    const mpa::Parameters& p = s.parameters;
    sm.revision.reset();
    sm.enhanced = p.enhanced;
    sm.peer_to_peer = p.peer_to_peer;
    sm.rtr = p.rtr == llp::RtrType::none ? std::string() : std::string(llp::to_string(p.rtr));
    c.ds(0).sink.set_ird(p.responder_ird);
    c.ds(1).sink.set_ird(p.initiator_ird);
    if (p.peer_to_peer) c.ds(0).sink.expect_rtr(p.rtr);
  }
  sm.state = StreamState::full;
  std::optional<ByteView> request_pd;
  if (req) request_pd = req->ulp_private_data();
  ulp_setup(c, request_pd, m.ulp_private_data());
}

// ---- DDP segments (PPID 16, from octet 2) --------------------------------------------------

void Analyzer::Impl::sctp_segment(Connection& c, int dir, SctpOrderedMessage& om,
                                  const Ctx& ctx_in) {
  StreamModel& sm = model.streams[c.stream];
  DirectionEngine& ds = c.ds(dir);
  SctpStreamState& st = *c.sctp;
  SctpMessageBuild& m = om.m;
  if (auto v = st.session.on_segment(dir, om.allowed_early)) {
    if (once(ds, FindingId::sctp_segment_early)) {
      v->detail += " (reported once per direction)";
      report(*v, ctx_in);
    }
  }
  if (sm.state == StreamState::unknown) {
    // No session control seen on this SCTP stream: its setup came before the capture.
    sm.state = StreamState::full;
    sm.mid_stream = st.session.phase() == sctp::StreamSession::Phase::unknown;
    if (sm.mid_stream) ds.sink.start_mid_stream();
  }
  const ByteView segment = ByteView(m.data).subspan(wire::kDdpSsnSize);
  PduEvent& ev = take_event();
  ev.stream = c.stream;
  ev.direction = dir;
  ev.kind = PduKind::fpdu;
  ev.id = next_pdu_id++;
  ev.llp = Llp::sctp;
  ev.sctp_stream_id = sm.sctp->stream_id;
  ev.raw = m.data;
  ev.slices = std::move(m.slices);
  ev.ulpdu_length = static_cast<std::uint16_t>(std::min<std::size_t>(segment.size(), 0xFFFF));
  ev.plain = m.data;
  ev.ulpdu = segment;
  const Ctx ctx = ctx_of(c, dir, ev.slices, ctx_in.frame);
  PduEvent* const outer = cur_ev;
  cur_ev = &ev;
  auto seg = wire::decode_ddp_segment(ev.ulpdu);
  if (!seg) {
    report(sctp::violation(FindingId::sctp_ppid_invalid,
                           "PPID 16 user message of " + std::to_string(m.data.size()) +
                               " octets is not a DDP segment after its DDP-SSN (" +
                               seg.error().message + ")"),
           ctx);
  } else {
    ev.ddp = seg.value();
    on_ddp_segment(c, dir, ev, ctx);  // the LLP boundary
    ds.recent.push(seg->header, ctx.frame);
  }
  cur_ev = outer;
  if (observer) observer->on_pdu(ev);
  give_back_event(ev);
}

// ---- end of input --------------------------------------------------------------------------

void Analyzer::Impl::sctp_finish() {
  for (std::size_t ai = 0; ai < assocs.size(); ++ai) {
    SctpAssociation& a = *assocs[ai];
    if (shard) shard->stamp = Stamp{kFinishSctp, shard->finish_assoc[ai]};
    for (int dir = 0; dir < 2; ++dir) {
      SctpDirection& sd = a.d[dir];
      while (!sd.ahead.empty()) {
        sctp_gap_to(a, dir, lowest_ahead(sd)->first, cur_frame);
        sctp_drain(a, ai, dir);
      }
      sd.building.clear();
    }
    for (auto& [sid, ci] : a.streams) {
      Connection& c = *conns[ci];
      if (!c.sctp) continue;
      for (int dir = 0; dir < 2; ++dir)
        while (c.sctp->d[dir].order.holding())
          sctp_skip_hole(c, dir, true);
      // RFC 5043 §6.1: an accepted session ends with a Terminate from at least one side.
      if (a.shutdown) {
        if (auto v = c.sctp->session.on_association_shutdown()) {
          const StreamModel& sm = model.streams[c.stream];
          report(*v, Ctx{c.stream, -1, sm.last_frame, {}});
        }
      }
    }
  }
}

}  // namespace ddpscope
