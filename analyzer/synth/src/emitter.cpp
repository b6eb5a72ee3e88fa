// SPDX-License-Identifier: GPL-2.0-or-later
#include "emitter.h"

#include <algorithm>

#include "ddpscope/net/packet.h"
#include "ddpscope/sctp/ddp_session.h"
#include "ddpscope/wire/mpa.h"
#include "ddpscope/wire/sctp.h"

namespace ddpscope::synth {

using wire::DdpHeader;

Emitter::Emitter(const Scenario& s) : s_(s) {
  conns_.resize(s_.connections.size());
  for (std::size_t i = 0; i < conns_.size(); ++i) {
    Conn& c = conns_[i];
    const ConnectionSpec& sp = s_.connections[i];
    c.spec = &sp;
    c.ep = {sp.client, sp.server};
    c.dirs[0].isn = sp.client_isn;
    c.dirs[1].isn = sp.server_isn;
    for (int d = 0; d < 2; ++d) {
      c.dirs[d].peer_mss = d == 0 ? sp.server_mss : sp.client_mss;
      c.dirs[d].tcp_segment = sp.tcp_segment_size.value_or(c.dirs[d].peer_mss);
      // SCTP: the TSNs start at the ISNs; each association its own Initiate Tags.
      c.dirs[d].tag = (d == 0 ? 0xA1A10000u : 0xB2B20000u) + static_cast<std::uint32_t>(i);
      c.dirs[d].tsn = c.dirs[d].isn;
    }
  }
  op_ranges_.resize(s_.ops.size());
  op_units_.resize(s_.ops.size());
}

void Emitter::fail(int op, const std::string& what) const {
  throw GenerateError((op >= 0 ? s_.ops[op].where : std::string("scenario")) + ": " + what);
}

// ------------------------------------------------------------------ expectations
void Emitter::expect(const std::string& code, int ci, int dir, std::uint64_t offset, int op,
                     std::string detail, bool consequence) {
  if (!finding_by_code(code)) throw GenerateError("internal: unknown finding code " + code);
  expects_.push_back({code, ci, dir, offset, std::nullopt, op, consequence, std::move(detail)});
}

void Emitter::expect_packet(const std::string& code, int ci, int dir, int packet, int op,
                            std::string detail) {
  expects_.push_back({code, ci, dir, 0, packet, op, false, std::move(detail)});
}

// ------------------------------------------------------------------ packets
int Emitter::add_packet(int ci, int dir, std::uint8_t flags, Bytes payload, std::uint64_t offset,
                        std::optional<std::uint16_t> mss) {
  Conn& c = conns_[ci];
  Dir& d = c.dirs[dir];
  Dir& p = c.dirs[1 - dir];
  Packet pk;
  pk.id = static_cast<int>(packets_.size());
  pk.conn = ci;
  pk.dir = dir;
  pk.flags = flags;
  pk.mss = mss;
  pk.offset = offset;
  pk.seq = d.isn + 1 + static_cast<std::uint32_t>(offset);
  if (flags & net::tcp_flag::syn) pk.seq = d.isn;
  if (flags & net::tcp_flag::ack) pk.ack = p.isn + 1 + static_cast<std::uint32_t>(p.flushed);
  pk.payload = std::move(payload);
  packets_.push_back(std::move(pk));
  return packets_.back().id;
}

void Emitter::pure_ack(int ci, int dir) {
  add_packet(ci, dir, net::tcp_flag::ack, {}, conns_[ci].dirs[dir].flushed);
}

void Emitter::open_tcp(int ci) {
  if (sctp(ci)) return open_sctp(ci);
  const ConnectionSpec& sp = *conns_[ci].spec;
  add_packet(ci, 0, net::tcp_flag::syn, {}, 0, sp.client_mss);
  add_packet(ci, 1, net::tcp_flag::syn | net::tcp_flag::ack, {}, 0, sp.server_mss);
  add_packet(ci, 0, net::tcp_flag::ack, {}, 0);
}

std::uint64_t Emitter::append(int ci, int dir, Bytes wire, int op) {
  Dir& d = conns_[ci].dirs[dir];
  const std::uint64_t off = d.len;
  d.len += wire.size();
  if (op >= 0) {
    OpRange& r = op_ranges_[op];
    if (r.conn < 0) r = {ci, dir, off, off};
    if (r.conn == ci && r.dir == dir) r.end = d.len;
    op_units_[op].push_back(off);
  }
  d.pending.push_back({std::move(wire), off});
  return off;
}

void Emitter::flush(int ci, int dir, bool ack) {
  Conn& c = conns_[ci];
  Dir& d = c.dirs[dir];
  if (d.pending.empty()) return;
  if (sctp(ci)) return flush_sctp(ci, dir, ack);
  const std::uint32_t per = c.spec->fpdus_per_segment;
  if (per > 0) {
    for (std::size_t i = 0; i < d.pending.size(); i += per) {
      Bytes chunk;
      const std::uint64_t off = d.pending[i].offset;
      for (std::size_t k = i; k < std::min<std::size_t>(d.pending.size(), i + per); ++k)
        chunk.insert(chunk.end(), d.pending[k].wire.begin(), d.pending[k].wire.end());
      add_packet(ci, dir, net::tcp_flag::ack | net::tcp_flag::psh, std::move(chunk), off);
      d.flushed = off + packets_.back().payload.size();
    }
  } else {
    Bytes all;
    const std::uint64_t base = d.pending.front().offset;
    for (auto& u : d.pending)
      all.insert(all.end(), u.wire.begin(), u.wire.end());
    const std::size_t seg = std::max<std::uint32_t>(1, d.tcp_segment);
    for (std::size_t pos = 0; pos < all.size(); pos += seg) {
      const std::size_t n = std::min(seg, all.size() - pos);
      Bytes chunk(all.begin() + static_cast<std::ptrdiff_t>(pos),
                  all.begin() + static_cast<std::ptrdiff_t>(pos + n));
      const bool last = pos + n == all.size();
      add_packet(ci, dir, net::tcp_flag::ack | (last ? net::tcp_flag::psh : 0), std::move(chunk),
                 base + pos);
      d.flushed = base + pos + n;
    }
  }
  d.pending.clear();
  if (ack) pure_ack(ci, 1 - dir);
}

void Emitter::close(int ci) {
  Conn& c = conns_[ci];
  if (!c.spec->fin) return;
  if (sctp(ci)) return close_sctp(ci);
  add_packet(ci, 0, net::tcp_flag::fin | net::tcp_flag::ack, {}, c.dirs[0].flushed);
  c.dirs[0].flushed += 1;  // the FIN consumes a sequence number
  add_packet(ci, 1, net::tcp_flag::fin | net::tcp_flag::ack, {}, c.dirs[1].flushed);
  c.dirs[1].flushed += 1;
  add_packet(ci, 0, net::tcp_flag::ack, {}, c.dirs[0].flushed);
}

void Emitter::start_fpdus(int ci, const mpa::Parameters& p) {
  Conn& c = conns_[ci];
  c.params = p;
  for (int d = 0; d < 2; ++d) {
    Dir& dir = c.dirs[d];
    dir.s0 = dir.len;
    dir.crc = p.crc;
    dir.markers = d == 0 ? p.markers_to_responder : p.markers_to_initiator;
    dir.mulpdu = wire::mulpdu(dir.peer_mss, dir.markers);
    if (sctp(ci)) {
      // One DDP segment a DATA chunk in one packet (RFC 5043 §9): core's MULPDU for the path MTU
      // the peer's MSS implies (MSS + the TCP and IP headers).
      const bool v6 = c.ep[0].addr.v6;
      const std::uint32_t pmtu = dir.peer_mss + 20u + (v6 ? 40u : 20u);
      dir.mulpdu = sctp::mulpdu_for_path(pmtu, v6, s_.sctp->over_udp);
    }
    if (dir.mulpdu < wire::kDdpUntaggedHeaderSize + wire::AtomicRequest::kSize)
      fail(-1, "connection " + std::to_string(ci) + ": MSS too small for iWARP");
  }
}

// ------------------------------------------------------------------ SCTP (RFC 5043)
int Emitter::add_sctp_packet(int ci, int dir, Bytes chunks, Bytes payload, std::uint64_t offset) {
  Packet pk;
  pk.id = static_cast<int>(packets_.size());
  pk.conn = ci;
  pk.dir = dir;
  pk.offset = offset;
  pk.payload = std::move(payload);
  pk.chunks = std::move(chunks);
  packets_.push_back(std::move(pk));
  return packets_.back().id;
}

// INIT and INIT ACK, both with the DDP adaptation indication (RFC 5043 §5.1), COOKIE ECHO,
// COOKIE ACK.
void Emitter::open_sctp(int ci) {
  Conn& c = conns_[ci];
  const Bytes cookie(8, static_cast<std::uint8_t>(0xC0 + ci));
  for (int d = 0; d < 2; ++d) {
    wire::SctpInit init;
    init.ack = d == 1;
    init.initiate_tag = c.dirs[d].tag;
    init.a_rwnd = 1 << 20;
    init.outbound_streams = 16;
    init.inbound_streams = 16;
    init.initial_tsn = c.dirs[d].tsn;
    if (c.spec->sctp.adaptation)
      init.parameters.push_back(wire::sctp_adaptation_parameter(wire::kAdaptationCodePointDdp));
    if (d == 1) init.parameters.push_back({wire::sctp_param::state_cookie, cookie});
    Bytes chunk;
    wire::encode_sctp_init(init, chunk);
    add_sctp_packet(ci, d, std::move(chunk));
  }
  Bytes echo;
  wire::encode_sctp_cookie_echo(cookie, echo);
  add_sctp_packet(ci, 0, std::move(echo));
  Bytes ack;
  wire::encode_sctp_cookie_ack(ack);
  add_sctp_packet(ci, 1, std::move(ack));
}

std::uint64_t Emitter::session_control(int ci, int dir, std::uint16_t function_code,
                                       Bytes private_data,
                                       std::optional<wire::MpaEnhancedPd> enhanced, int op) {
  Dir& d = conns_[ci].dirs[dir];
  wire::DdpSessionControl m;
  m.ddp_ssn = d.ddp_ssn++;
  m.function_code = function_code;
  m.private_data = std::move(private_data);
  m.enhanced_pd = enhanced;
  const std::uint64_t off = append(ci, dir, wire::encode_ddp_session_control(m), op);
  d.pending.back().ppid = wire::kPpidDdpSessionControl;
  return off;
}

// Each pending user message one unfragmented, unordered DATA chunk (RFC 5043 §4), in a packet of
// its own or N to a packet (fpdus_per_segment); the peer SACKs them.
void Emitter::flush_sctp(int ci, int dir, bool ack) {
  Conn& c = conns_[ci];
  Dir& d = c.dirs[dir];
  std::size_t per = std::max<std::uint32_t>(1, c.spec->fpdus_per_segment);
  const bool reverse =
      std::any_of(d.pending.begin(), d.pending.end(), [](const Unit& u) { return u.reverse; });
  if (reverse) per = d.pending.size();
  for (std::size_t i = 0; i < d.pending.size(); i += per) {
    Bytes chunks, payload;
    const std::uint64_t off = d.pending[i].offset;
    const std::size_t n = std::min(d.pending.size(), i + per) - i;
    for (std::size_t k = 0; k < n; ++k) {
      data_chunks(d, d.pending[reverse ? i + n - 1 - k : i + k], chunks);
      const Unit& in_order = d.pending[i + k];
      payload.insert(payload.end(), in_order.wire.begin(), in_order.wire.end());
    }
    const std::uint64_t end = off + payload.size();
    const auto has = [&](bool Unit::*flag) {
      return std::any_of(d.pending.begin() + static_cast<std::ptrdiff_t>(i),
                         d.pending.begin() + static_cast<std::ptrdiff_t>(i + n),
                         [&](const Unit& u) { return u.*flag; });
    };
    if (has(&Unit::bad_checksum)) {
      const int bad = add_sctp_packet(ci, dir, chunks, payload, off);
      packets_[bad].bad_checksum = true;
      expect_packet("sctp.checksum-mismatch", ci, dir, bad, -1, "CRC32c altered");
    }
    const int id = add_sctp_packet(ci, dir, std::move(chunks), std::move(payload), off);
    if (has(&Unit::lost)) {
      packets_[id].dropped = true;
      lost_.emplace_back(id, -1);
    }
    d.flushed = end;
  }
  d.pending.clear();
  if (ack) sack(ci, 1 - dir);
}

// One user message as DATA chunks: unordered unless the fault says otherwise, cut into
// `fragments` pieces (B on the first, E on the last), TSNs consecutive.
void Emitter::data_chunks(Dir& d, const Unit& u, Bytes& chunks) const {
  const std::size_t size = u.wire.size();
  for (std::uint32_t i = 0; i < u.fragments; ++i) {
    const std::size_t a = size * i / u.fragments, b = size * (i + 1) / u.fragments;
    wire::SctpData data;
    data.unordered = !u.ordered;
    data.beginning = i == 0;
    data.ending = i + 1 == u.fragments;
    data.tsn = d.tsn++;
    data.stream_id = s_.sctp->stream_id;
    data.ppid = u.ppid;
    data.user_data = ByteView(u.wire).subspan(a, b - a);
    wire::encode_sctp_data(data, chunks);
  }
}

// A SACK from `dir` of everything the peer sent so far.
void Emitter::sack(int ci, int dir) {
  wire::SctpSack s;
  s.cumulative_tsn_ack = conns_[ci].dirs[1 - dir].tsn - 1;
  s.a_rwnd = 1 << 20;
  Bytes chunk;
  wire::encode_sctp_sack(s, chunk);
  add_sctp_packet(ci, dir, std::move(chunk));
}

// A Session Terminate from each side (RFC 5043 §6.5), then SHUTDOWN, SHUTDOWN ACK and SHUTDOWN
// COMPLETE.
void Emitter::close_sctp(int ci) {
  Conn& c = conns_[ci];
  const ConnectionSpec::Sctp& x = c.spec->sctp;
  for (int d = 0; d < 2 && !c.rejected && x.terminate; ++d) {
    const Bytes pd(d == 0 ? x.terminate_private_data : 0, 0x7E);
    const std::uint64_t off =
        session_control(ci, d, wire::ddp_session_fn::terminate, pd, std::nullopt, -1);
    if (!pd.empty())
      expect("sctp.private-data-invalid", ci, d, off, -1,
             std::to_string(pd.size()) + " octets of private data in a Session Terminate");
    flush_sctp(ci, d, true);
  }
  Bytes shutdown;
  wire::encode_sctp_shutdown(c.dirs[1].tsn - 1, shutdown);
  if (!x.terminate && !c.rejected) {
    // Reported when the association shuts down, at the stream's last DDP message.
    for (auto it = packets_.rbegin(); it != packets_.rend(); ++it) {
      if (it->conn != ci || it->payload.empty()) continue;
      expect_packet("sctp.session-unterminated", ci, it->dir, it->id, -1,
                    "SHUTDOWN with no Session Terminate");
      break;
    }
  }
  add_sctp_packet(ci, 0, std::move(shutdown));
  Bytes shutdown_ack;
  wire::encode_sctp_shutdown_ack(shutdown_ack);
  add_sctp_packet(ci, 1, std::move(shutdown_ack));
  Bytes complete;
  wire::encode_sctp_shutdown_complete(false, complete);
  add_sctp_packet(ci, 0, std::move(complete));
}

// ------------------------------------------------------------------ FPDU emission
std::uint32_t Emitter::max_payload(int ci, int dir, int op, bool tagged) const {
  const Conn& c = conns_[ci];
  if (op >= 0 && s_.ops[op].segment_size) return *s_.ops[op].segment_size;
  if (c.spec->segment_size) return *c.spec->segment_size;
  const std::size_t header = tagged ? wire::kDdpTaggedHeaderSize : wire::kDdpUntaggedHeaderSize;
  return static_cast<std::uint32_t>(c.dirs[dir].mulpdu - header);
}

std::uint64_t Emitter::emit_fpdu(int ci, int dir, int op, SegmentDraft seg, const OpFault* f,
                                 bool selected, bool scenario_data) {
  Conn& c = conns_[ci];
  Dir& d = c.dirs[dir];
  Bytes ulpdu;
  ByteWriter w(ulpdu);
  wire::encode_ddp_header(seg.header, w);
  w.bytes(seg.body);
  wire::FpduEncodeOptions o;
  o.crc = d.crc;
  o.markers = d.markers;
  o.stream_pos = d.len - d.s0;
  // SCTP: the "FPDU" is the PPID 16 user message, the direction's DDP-SSN before the segment.
  std::uint16_t ddp_ssn = d.ddp_ssn;
  if (sctp(ci) && f && selected && f->ddp_ssn == "skip") ddp_ssn = ++d.ddp_ssn;
  if (sctp(ci) && f && selected && f->ddp_ssn == "reuse") {
    if (d.ddp_ssn == 0) fail(op, "fault.ddp_ssn reuse needs an earlier message");
    ddp_ssn = static_cast<std::uint16_t>(d.ddp_ssn - 1);
  } else if (sctp(ci) && !(f && selected && f->ppid)) {
    ++d.ddp_ssn;  // a message on another PPID is no DDP message: the next one has its DDP-SSN
  }
  Bytes fpdu =
      sctp(ci) ? wire::encode_ddp_sctp_message(ddp_ssn, ulpdu) : wire::encode_fpdu(ulpdu, o);
  const std::uint64_t off = d.len;
  const bool leading = d.markers && wire::is_marker_position(o.stream_pos);
  EmittedSegment rec;
  rec.conn = ci;
  rec.dir = dir;
  rec.op = op;
  rec.begin = off;
  rec.scenario_data = scenario_data;
  if (sctp(ci) && ulpdu.size() > d.mulpdu)
    fail(op, "a DDP segment of " + std::to_string(ulpdu.size()) +
                 " octets does not fit one SCTP packet (at most " + std::to_string(d.mulpdu) +
                 "): a smaller segment_size");
  if (ulpdu.size() > d.mulpdu && !d.mulpdu_reported) {
    d.mulpdu_reported = true;
    expect("mpa.fpdu-exceeds-mulpdu", ci, dir, off, op,
           "ULPDU of " + std::to_string(ulpdu.size()) + " octets > MULPDU " +
               std::to_string(d.mulpdu));
    cascading();  // reported once per direction or per FPDU: engine policy
  }
  if (f && selected) {
    if (f->corrupt_crc) {
      if (!d.crc) fail(op, "fault.corrupt_crc needs CRC on the connection");
      fpdu.back() ^= 0x5A;
      rec.fate = EmittedSegment::Fate::crc_dropped;
      expect("mpa.crc-mismatch", ci, dir, off, op, "CRC field altered");
      cascading();
    }
    if (f->ulpdu_length) {
      const std::size_t at = leading ? wire::kMpaMarkerSize : 0;
      fpdu[at] = static_cast<std::uint8_t>(*f->ulpdu_length >> 8);
      fpdu[at + 1] = static_cast<std::uint8_t>(*f->ulpdu_length);
      rec.fate = EmittedSegment::Fate::unframed;
      expect("mpa.ulpdu-length-invalid", ci, dir, off, op,
             "ULPDU_Length set to " + std::to_string(*f->ulpdu_length));
      cascading();
    }
    if (f->corrupt_marker) {
      if (!d.markers) fail(op, "fault.corrupt_marker needs markers in this direction");
      const std::uint64_t into = o.stream_pos % wire::kMpaMarkerInterval;
      const std::size_t first = into == 0 ? 0 : wire::kMpaMarkerInterval - into;
      // Skip a leading marker: corrupting a later one keeps the FPDU findable.
      std::size_t at = leading ? first + wire::kMpaMarkerInterval : first;
      if (at + wire::kMpaMarkerSize > fpdu.size())
        fail(op, "fault.corrupt_marker: this FPDU holds no marker after its header");
      fpdu[at + 3] = static_cast<std::uint8_t>(fpdu[at + 3] + 8);
      expect("mpa.marker-invalid", ci, dir, off, op, "marker FPDUPTR moved by 8");
      cascading();
    }
  }
  if (seg.header.control.reserved != 0) {
    // Not a Data Sink rule (a receiver ignores them, RFC 5041 §4.1): the analysis notes them.
    expect("ddp.reserved-nonzero", ci, dir, off, op, "DDP reserved bits set");
  }
  rec.end = off + fpdu.size();
  append(ci, dir, std::move(fpdu), op);
  if (sctp(ci) && f) {
    Unit& u = d.pending.back();
    u.reverse = f->reverse_tsn;
    if (selected) {
      if (f->ddp_ssn == "skip") {
        expect("sctp.ssn-invalid", ci, dir, off, op,
               "DDP-SSN " + std::to_string(ddp_ssn) + ", one left out before it");
        cascading();
      } else if (f->ddp_ssn == "reuse") {
        expect("sctp.ssn-invalid", ci, dir, off, op,
               "DDP-SSN " + std::to_string(ddp_ssn) + " again");
        cascading();
      }
      u.ordered = f->ordered;
      if (f->ordered) expect("sctp.chunk-ordered", ci, dir, off, op, "DATA chunk with U = 0");
      u.fragments = f->fragments;
      if (f->fragments > 1)
        expect("sctp.segment-too-large", ci, dir, off, op,
               "DDP segment in " + std::to_string(f->fragments) + " DATA chunks");
      u.bad_checksum = f->bad_checksum;
      u.lost = f->lost;
      if (f->lost) cascading();
      if (f->ppid) {
        u.ppid = *f->ppid;
        expect("sctp.ppid-invalid", ci, dir, off, op,
               "DDP segment on PPID " + std::to_string(*f->ppid));
        cascading();
      }
    }
  }
  d.last_header = seg.header;
  d.last_ulpdu_length = static_cast<std::uint16_t>(ulpdu.size());
  d.last_rdmap_body = seg.body;
  rec.ulpdu = std::move(ulpdu);
  rec.intents = std::move(seg.intents);
  segments_.push_back(std::move(rec));
  return off;
}

// The header faults of `f`, applied to the selected segment. Each names the finding it aims at;
// whether the analyzer reports that one is the oracle's to say (a segment breaks one rule).
void Emitter::apply_header_faults(int op, SegmentDraft& seg, const OpFault& f) {
  wire::RdmapControl rc = wire::RdmapControl::from_byte(seg.header.rsvd_ulp0);
  if (f.ddp_version) {
    seg.header.control.version = *f.ddp_version;
    seg.intents.push_back(
        {FindingId::ddp_version_invalid, "DDP version " + std::to_string(*f.ddp_version)});
    cascading();
  }
  if (f.ddp_reserved) seg.header.control.reserved = *f.ddp_reserved;  // expected by emit_fpdu
  if (f.rdmap_version) {
    rc.version = *f.rdmap_version;
    seg.intents.push_back(
        {FindingId::rdmap_version_invalid, "RDMAP version " + std::to_string(*f.rdmap_version)});
    cascading();
  }
  if (f.opcode) {
    rc.opcode = *f.opcode;
    seg.intents.push_back({FindingId::rdmap_opcode_invalid, "opcode " + std::to_string(*f.opcode)});
    cascading();
  }
  if (f.mo_delta != 0) {
    if (seg.header.control.tagged) fail(op, "fault.mo_delta applies to untagged messages");
    seg.header.mo = static_cast<std::uint32_t>(seg.header.mo + f.mo_delta);
    seg.intents.push_back(
        {FindingId::ddp_untagged_invalid_mo, "MO off by " + std::to_string(f.mo_delta)});
    cascading();
  }
  if (f.to_delta != 0) {
    // A tagged segment that does not continue its message's TOs (going back: over octets the
    // message placed, a conflicting placement when the content differs).
    if (!seg.header.control.tagged) fail(op, "fault.to_delta applies to tagged messages");
    seg.header.to += static_cast<std::uint64_t>(f.to_delta);  // modulo 2^64
    seg.intents.push_back(
        {FindingId::ddp_tagged_bounds, "TO off by " + std::to_string(f.to_delta)});
  }
  seg.header.rsvd_ulp0 = rc.byte();
}

int Emitter::selected_segment(int op, const OpFault* f, std::size_t n) const {
  if (!f) return -2;
  const int sel = f->segment < 0 ? static_cast<int>(n) - 1 : f->segment;
  if (sel >= static_cast<int>(n))
    fail(op, "fault.segment " + std::to_string(sel) + " but the message has " + std::to_string(n) +
                 " segment(s)");
  return sel;
}

std::vector<std::uint64_t> Emitter::untagged(int ci, int dir, int op, wire::Opcode opcode,
                                             std::uint32_t qn, std::uint32_t rsvd1,
                                             const Bytes& payload, const OpFault* f,
                                             const std::vector<Intent>& intents) {
  Dir& d = conns_[ci].dirs[dir];
  const auto opc = static_cast<std::uint8_t>(opcode);
  if (f && f->tagged) {
    // An untagged opcode on the tagged model (RFC 5040 §4.2 table): one tagged segment.
    SegmentDraft seg;
    seg.header.control.tagged = true;
    seg.header.control.last = true;
    seg.header.rsvd_ulp0 = wire::RdmapControl{1, 0, opc}.byte();
    seg.header.stag = 0x100;
    seg.body = payload;
    seg.intents = intents;
    seg.intents.push_back({FindingId::rdmap_opcode_invalid, "untagged opcode in a tagged segment"});
    cascading();
    return {emit_fpdu(ci, dir, op, std::move(seg), f, true, false)};
  }
  const std::uint32_t q = f && f->qn ? *f->qn : qn;
  std::uint32_t msn = d.msn(q);
  std::optional<Intent> msn_intent;
  if (f && f->msn == "skip") {
    msn += 1;
    msn_intent = Intent{FindingId::ddp_untagged_msn_gap, {}};
  } else if (f && f->msn == "duplicate") {
    if (msn <= 1) fail(op, "fault.msn duplicate needs an earlier message on this queue");
    msn -= 1;
    msn_intent = Intent{FindingId::ddp_untagged_msn_duplicate, {}};
  }
  if (msn_intent) msn_intent->detail = "MSN " + std::to_string(msn) + " on QN " + std::to_string(q);
  if (!(f && f->msn == "duplicate")) d.next_msn[q] = msn + 1;
  if (f && f->qn && *f->qn != qn) cascading();
  const std::uint32_t max = max_payload(ci, dir, op, false);
  const std::size_t n = payload.empty() ? 1 : (payload.size() + max - 1) / max;
  const int sel = selected_segment(op, f, n);
  std::vector<std::uint64_t> offs;
  for (std::size_t i = 0; i < n; ++i) {
    SegmentDraft seg;
    seg.header.control.tagged = false;
    seg.header.control.last = i + 1 == n;
    seg.header.rsvd_ulp0 = wire::RdmapControl{1, 0, opc}.byte();
    seg.header.rsvd_ulp1 = rsvd1;
    seg.header.qn = q;
    seg.header.msn = msn;
    seg.header.mo = static_cast<std::uint32_t>(i * max);
    const std::size_t b = i * max;
    const std::size_t e = std::min<std::size_t>(payload.size(), b + max);
    seg.body.assign(payload.begin() + static_cast<std::ptrdiff_t>(b),
                    payload.begin() + static_cast<std::ptrdiff_t>(e));
    seg.intents = intents;
    if (i == 0 && msn_intent) seg.intents.push_back(*msn_intent);
    if (i == 0 && f && f->qn) {
      seg.intents.push_back(
          {FindingId::ddp_untagged_invalid_qn,
           "QN " + std::to_string(*f->qn) + " for opcode " + std::to_string(opc)});
    }
    const bool selected = static_cast<int>(i) == sel;
    if (f && selected) apply_header_faults(op, seg, *f);
    offs.push_back(emit_fpdu(ci, dir, op, std::move(seg), f, selected, false));
  }
  if (f && f->segment_after_last) {
    // RFC 5041 §5.3: nothing may follow the L segment of a message.
    SegmentDraft seg;
    seg.header.control.last = true;
    seg.header.rsvd_ulp0 = wire::RdmapControl{1, 0, opc}.byte();
    seg.header.rsvd_ulp1 = rsvd1;
    seg.header.qn = q;
    seg.header.msn = msn;
    seg.header.mo = static_cast<std::uint32_t>(std::max<std::size_t>(payload.size(), 4));
    seg.body = {0xAF, 0xAF, 0xAF, 0xAF};
    seg.intents.push_back(
        {FindingId::ddp_segment_after_last,
         "segment with MO " + std::to_string(seg.header.mo) + " after the L segment"});
    emit_fpdu(ci, dir, op, std::move(seg), nullptr, false, false);
  }
  return offs;
}

std::vector<std::uint64_t> Emitter::tagged(int ci, int dir, int op, wire::Opcode opcode,
                                           std::uint32_t stag, std::uint64_t to,
                                           const Bytes& payload, const OpFault* f,
                                           const std::vector<Intent>& intents, bool scenario_data) {
  const auto opc = static_cast<std::uint8_t>(opcode);
  const std::uint32_t max = max_payload(ci, dir, op, true);
  const std::size_t n = payload.empty() ? 1 : (payload.size() + max - 1) / max;
  const int sel = selected_segment(op, f, n);
  std::vector<std::uint64_t> offs;
  for (std::size_t i = 0; i < n; ++i) {
    SegmentDraft seg;
    seg.header.control.tagged = true;
    seg.header.control.last = i + 1 == n;
    seg.header.rsvd_ulp0 = wire::RdmapControl{1, 0, opc}.byte();
    seg.header.stag = stag;
    seg.header.to = to + i * max;  // wraps modulo 2^64 like a buggy sender would
    const std::size_t b = i * max;
    const std::size_t e = std::min<std::size_t>(payload.size(), b + max);
    seg.body.assign(payload.begin() + static_cast<std::ptrdiff_t>(b),
                    payload.begin() + static_cast<std::ptrdiff_t>(e));
    seg.intents = intents;
    const bool selected = static_cast<int>(i) == sel;
    if (f && selected) apply_header_faults(op, seg, *f);
    offs.push_back(emit_fpdu(ci, dir, op, std::move(seg), f, selected, scenario_data));
  }
  return offs;
}

// ------------------------------------------------------------------ TCP faults
void Emitter::ensure_order() {
  if (order_.empty())
    for (const auto& p : packets_)
      order_.push_back(p.id);
}

// Position in order_ of the packet a fault names.
std::size_t Emitter::locate(const TcpFault& f) const {
  if (f.index) {
    int n = 0;
    for (std::size_t i = 0; i < order_.size(); ++i) {
      const Packet& p = packets_[order_[i]];
      if (p.payload.empty()) continue;
      if (n++ == *f.index) return i;
    }
    throw GenerateError(f.where + ": no data segment with index " + std::to_string(*f.index));
  }
  const OpRange& r = op_ranges_[*f.op];
  if (r.conn < 0) throw GenerateError(f.where + ": the operation produced no octets");
  int n = 0;
  for (std::size_t i = 0; i < order_.size(); ++i) {
    const Packet& p = packets_[order_[i]];
    if (p.conn != r.conn || p.dir != r.dir || p.payload.empty() || p.dropped) continue;
    if (p.offset + p.payload.size() <= r.begin || p.offset >= r.end) continue;
    if (n++ == f.op_segment) return i;
  }
  throw GenerateError(f.where + ": operation " + std::to_string(*f.op) + " spans fewer than " +
                      std::to_string(f.op_segment + 1) + " TCP segment(s)");
}

// Index in order_ `after` packets of the same connection later than `pos` (or the end).
std::size_t Emitter::later(std::size_t pos, int conn, int after) const {
  std::size_t i = pos + 1;
  int seen = 0;
  for (; i < order_.size() && seen < after; ++i)
    if (packets_[order_[i]].conn == conn) ++seen;
  return i;
}

void Emitter::apply_tcp_fault(const TcpFault& f) {
  ensure_order();
  const std::size_t pos = locate(f);
  Packet& p = packets_[order_[pos]];
  const int op = f.op.value_or(-1);
  switch (f.kind) {
    case TcpFaultKind::drop: {
      p.dropped = true;
      // The analyzer notices the hole at the first later segment of that direction.
      const std::uint64_t hole_end = p.offset + p.payload.size();
      std::optional<int> next;
      for (std::size_t i = pos + 1; i < order_.size(); ++i) {
        const Packet& q = packets_[order_[i]];
        if (q.conn != p.conn || q.dir != p.dir || q.dropped) continue;
        if (q.payload.empty() && !(q.flags & net::tcp_flag::fin)) continue;
        if (q.offset >= hole_end) {
          next = q.id;
          break;
        }
      }
      if (!next) throw GenerateError(f.where + ": nothing follows the dropped segment");
      expect_packet("tcp.gap", p.conn, p.dir, *next, op,
                    std::to_string(p.payload.size()) + " octets dropped from the capture");
      cascading();
      break;
    }
    case TcpFaultKind::duplicate: {
      // `p` is not used past the push_back: it may move packets_ (and did: a use-after-free).
      Packet copy = p;
      copy.id = static_cast<int>(packets_.size());
      packets_.push_back(copy);
      order_.insert(order_.begin() + static_cast<std::ptrdiff_t>(later(pos, copy.conn, f.after)),
                    copy.id);
      break;
    }
    case TcpFaultKind::reorder: {
      // Move the segment behind the next data segment of the same direction.
      std::size_t j = pos + 1;
      for (; j < order_.size(); ++j) {
        const Packet& q = packets_[order_[j]];
        if (q.conn == p.conn && q.dir == p.dir && !q.payload.empty()) break;
      }
      if (j == order_.size()) throw GenerateError(f.where + ": no later segment to swap with");
      const int id = order_[pos];
      order_.erase(order_.begin() + static_cast<std::ptrdiff_t>(pos));
      order_.insert(order_.begin() + static_cast<std::ptrdiff_t>(j), id);
      break;
    }
    case TcpFaultKind::receiver_drop: {
      // The packet is on the wire (the capture has it) but never reaches its receiver's TCP: it
      // sends no ACK for it, so every ACK of the connection's other direction until the
      // sender's retransmission stays at the segment's first octet (RFC 9293 §3.10.7.4: the
      // receiver acknowledges only in-order octets), and the sender retransmits it `after`
      // packets later. Nothing is missing from the capture: no finding at the TCP level.
      if (p.payload.empty()) throw GenerateError(f.where + ": segment has no payload");
      p.receiver_dropped = true;
      Packet copy = p;
      copy.id = static_cast<int>(packets_.size());
      copy.receiver_dropped = false;
      const std::size_t at = later(pos, p.conn, f.after);
      const std::uint32_t hole = p.seq;
      for (std::size_t i = pos + 1; i < at; ++i) {
        Packet& q = packets_[order_[i]];
        if (q.conn == p.conn && q.dir != p.dir && (q.flags & net::tcp_flag::ack) &&
            static_cast<std::int32_t>(q.ack - hole) > 0)
          q.ack = hole;
      }
      packets_.push_back(copy);
      order_.insert(order_.begin() + static_cast<std::ptrdiff_t>(at), copy.id);
      break;
    }
    case TcpFaultKind::conflict: {
      Packet copy = p;
      copy.id = static_cast<int>(packets_.size());
      // Same sequence number, different octets in the middle of the payload.
      if (copy.payload.empty()) throw GenerateError(f.where + ": segment has no payload");
      copy.payload[copy.payload.size() / 2] ^= 0xFF;
      packets_.push_back(copy);  // `p` may dangle from here on
      order_.insert(order_.begin() + static_cast<std::ptrdiff_t>(later(pos, copy.conn, f.after)),
                    copy.id);
      expect_packet("tcp.retransmission-conflict", copy.conn, copy.dir, copy.id, op,
                    "retransmission with one octet changed");
      break;
    }
  }
}

// ------------------------------------------------------------------ output
void Emitter::finalize(std::vector<GeneratedFrame>& frames) {
  ensure_order();
  std::uint64_t n = 0;
  for (int id : order_) {
    const Packet& p = packets_[id];
    if (p.dropped) continue;
    frame_of_[id] = ++n;
    const Conn& c = conns_[p.conn];
    GeneratedFrame fr;
    fr.ts_ns = s_.start_ns + static_cast<std::int64_t>(n) * s_.step_ns;
    if (p.chunks) {
      wire::SctpCommonHeader h;
      h.source_port = c.ep[p.dir].port;
      h.destination_port = c.ep[1 - p.dir].port;
      // The INIT alone carries tag 0 (RFC 9260 §8.5.1); every other packet the peer's tag.
      const bool init = !p.chunks->empty() && (*p.chunks)[0] == wire::sctp_chunk::init;
      h.verification_tag = init ? 0 : c.dirs[1 - p.dir].tag;
      net::SctpFrameSpec spec;
      spec.src = c.ep[p.dir].addr;
      spec.dst = c.ep[1 - p.dir].addr;
      spec.over_udp = s_.sctp->over_udp;
      spec.src_mac = {
          0x02, 0, 0, 0, static_cast<std::uint8_t>(p.conn), static_cast<std::uint8_t>(1 + p.dir)};
      spec.dst_mac = {
          0x02, 0, 0, 0, static_cast<std::uint8_t>(p.conn), static_cast<std::uint8_t>(2 - p.dir)};
      Bytes packet = wire::encode_sctp_packet(h, *p.chunks);
      if (p.bad_checksum) packet[wire::sctp_header_field::checksum.offset] ^= 0x40;
      fr.data = net::encode_sctp_frame(spec, packet);
      frames.push_back(std::move(fr));
      continue;
    }
    net::TcpFrameSpec spec;
    spec.src = c.ep[p.dir];
    spec.dst = c.ep[1 - p.dir];
    spec.seq = p.seq;
    spec.ack = p.ack;
    spec.flags = p.flags;
    spec.mss = p.mss;
    spec.vlan = c.spec->vlan;
    // One MAC pair per connection and side.
    spec.src_mac = {
        0x02, 0, 0, 0, static_cast<std::uint8_t>(p.conn), static_cast<std::uint8_t>(1 + p.dir)};
    spec.dst_mac = {
        0x02, 0, 0, 0, static_cast<std::uint8_t>(p.conn), static_cast<std::uint8_t>(2 - p.dir)};
    fr.data = net::encode_tcp_frame(spec, p.payload);
    fr.receiver_drop = p.receiver_dropped;
    frames.push_back(std::move(fr));
  }
}

std::uint64_t Emitter::frame_at(int conn, int dir, std::uint64_t offset) const {
  for (int id : order_) {
    const Packet& p = packets_[id];
    if (p.dropped || p.conn != conn || p.dir != dir || p.payload.empty()) continue;
    if (offset >= p.offset && offset < p.offset + p.payload.size()) return frame_of_.at(id);
  }
  return 0;
}

std::vector<ExpectedFinding> Emitter::expected() {
  // SCTP: a lost packet's hole is seen at the association's next packet (the peer's SACK of the
  // lost TSN, or a later TSN).
  for (const auto& [id, op] : lost_) {
    const Packet& p = packets_[id];
    for (std::size_t k = static_cast<std::size_t>(id) + 1; k < packets_.size(); ++k) {
      const Packet& q = packets_[k];
      if (q.conn != p.conn || q.dropped) continue;
      expect_packet("sctp.gap", p.conn, p.dir, q.id, op, "a DATA packet missing from the capture");
      break;
    }
  }
  lost_.clear();
  std::vector<ExpectedFinding> out;
  for (const auto& e : expects_) {
    std::uint64_t frame = 0;
    if (!e.packet) {
      frame = frame_at(e.conn, e.dir, e.offset);
    } else if (const auto it = frame_of_.find(*e.packet); it != frame_of_.end()) {
      frame = it->second;  // not there: a later fault dropped the packet (a copy, the next one)
    }
    if (frame == 0) {
      // The offending PDU starts in a dropped segment, or the packet the finding was expected
      // at is itself dropped: the analyzer cannot see it there.
      exhaustive_ = false;
      continue;
    }
    out.push_back({e.code, frame, e.consequence, e.op, e.detail});
  }
  return out;
}

}  // namespace ddpscope::synth
