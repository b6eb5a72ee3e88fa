// SPDX-License-Identifier: GPL-2.0-or-later
// The MPA LLP of the analysis (RFC 5044, RFC 6581): the connection setup through
// mpa/negotiate.h, FPDU framing (mpa/framer.h), CRC and markers through mpa/rules.h, MULPDU, and
// the setup order. Each FPDU that holds a DDP segment crosses the LLP boundary into
// on_ddp_segment (engine_sink.cpp), which knows nothing of MPA.
#include "ddpscope/common/bytes.h"
#include "ddpscope/ddp/rules.h"
#include "ddpscope/mpa/fpdu_walker.h"
#include "ddpscope/mpa/negotiate.h"
#include "ddpscope/mpa/rules.h"
#include "engine.h"

namespace ddpscope {

namespace {

// What an analysis accepts of a frame: all the RFCs allow, and revision 0 as siw does.
const mpa::Policy kAnalysisPolicy{};

// The DDP header and RDMAP body of an FPDU dropped for its CRC, decoded as received with the
// wire codecs (for the hosts to show what was corrupted; nothing of it is analysed).
void decode_as_received(PduEvent& ev) {
  auto seg = wire::decode_ddp_segment(ev.ulpdu);
  if (!seg) return;
  ev.ddp = seg.value();
  const wire::DdpHeader& h = seg->header;
  if (h.control.tagged || h.mo != 0) return;  // bodies start their (one-segment) messages
  const ByteView body = seg->payload;
  switch (static_cast<wire::Opcode>(wire::RdmapControl::from_byte(h.rsvd_ulp0).opcode)) {
    case wire::Opcode::read_request:
      if (auto r = wire::decode_read_request(body)) ev.read_request = r.value();
      break;
    case wire::Opcode::terminate:
      if (auto t = wire::decode_terminate(body)) ev.terminate = t.value();
      break;
    case wire::Opcode::atomic_request:
      if (auto a = wire::decode_atomic_request(body)) ev.atomic_request = a.value();
      break;
    case wire::Opcode::atomic_response:
      if (auto a = wire::decode_atomic_response(body)) ev.atomic_response = a.value();
      break;
    case wire::Opcode::immediate_data:
    case wire::Opcode::immediate_data_se:
      if (auto d = wire::decode_immediate_data(body)) ev.immediate_data = d.value();
      break;
    default:
      break;
  }
}

// "RDMA Write STag 0x00001a01 TO 0x7f0000100b40 L, 1440 octets": a dropped FPDU's header in a
// finding's detail, so that a text or JSON report names what the corruption hit.
std::string describe_as_received(const wire::DdpSegment& seg) {
  const wire::DdpHeader& h = seg.header;
  const std::uint8_t op = wire::RdmapControl::from_byte(h.rsvd_ulp0).opcode;
  const wire::OpcodeInfo& info = wire::opcode_info(op);
  std::string s = info.defined ? std::string(info.name) : "reserved opcode " + hex_number(op);
  if (h.control.tagged) {
    s += " STag " + hex_stag(h.stag) + " TO " + hex_number(h.to);
  } else {
    s += " QN " + std::to_string(h.qn) + " MSN " + std::to_string(h.msn) + " MO " +
         std::to_string(h.mo);
  }
  if (h.control.last) s += " L";
  return s + ", " + std::to_string(seg.payload.size()) + " octets";
}

}  // namespace

Analyzer::Impl::Ctx Analyzer::Impl::ctx_of(const Connection& c, int dir,
                                           const std::vector<FrameSlice>& slices,
                                           std::uint64_t fallback) {
  Ctx ctx{c.stream, dir, fallback, &slices};
  if (!slices.empty()) ctx.frame = slices.front().frame;
  return ctx;
}

void Analyzer::Impl::swap_sides(Connection& c) {
  StreamModel& sm = model.streams[c.stream];
  std::swap(sm.client, sm.server);
  std::swap(sm.dirs[0], sm.dirs[1]);
  std::swap(c.d[0], c.d[1]);
  if (timing) timing->swap_sides(c.stream);
}

void Analyzer::Impl::lost_input(Connection& c, int dir, Consequence cause) {
  c.ds(dir).last_loss = cause;
  if (timing && cause != Consequence::none)
    timing->stall(c.stream, dir,
                  cause == Consequence::crc ? StallKind::crc_drop
                  : c.llp == Llp::sctp      ? StallKind::sctp_gap
                                            : StallKind::capture_loss,
                  cur_frame, cur_ts);
  c.ds(dir).sink.lost_input(cause);
  c.ds(1 - dir).sink.own_side_lost(cause);
  ulp_lost(c, cause);
}

void Analyzer::Impl::start_mid_stream(Connection& c, int dir, bool markers,
                                      std::optional<bool> crc) {
  StreamModel& sm = model.streams[c.stream];
  DirectionCallbacks callbacks{*this, c, dir};
  c.ds(dir).sink.start_mid_stream();
  // Until the framer finds the setting, CRC is not known to be in use.
  sm.dirs[dir].mpa.crc = crc.value_or(false);
  sm.dirs[dir].mpa.markers = markers;
  c.ds(dir).framer.start_mid_stream(markers, crc, callbacks);
}

// A framer still looking for an FPDU boundary at the end of input, having framed none or spent
// its resync budget: say where it gave up, how much went unanalysed, and (mid-stream, where the
// user supplied what the handshake would have said) which setting to try.
void Analyzer::Impl::report_lost_framing(Connection& c, int dir) {
  const MpaFramer& f = c.ds(dir).framer;
  const std::optional<LostFraming> lost = f.lost_framing();
  if (!lost) return;
  const StreamModel& sm = model.streams[c.stream];
  std::string msg = lost->never_framed ? "no FPDU boundary found" : "FPDU framing lost for good";
  if (sm.mid_stream) {
    const bool detecting = f.detecting_crc();
    msg += std::string(" (mid-stream, ") +
           (detecting ? "CRC on and off tried"
            : f.crc() ? "CRC on"
                      : "CRC off") +
           ")";
  }
  msg += ": " + std::to_string(lost->octets) + " octets unframed";
  if (lost->gave_up)
    msg +=
        ", gave up after " + std::to_string(options.limits.resync_buffer) + " octets without one";
  else
    msg += " to the end of the capture";
  if (lost->after_gap) msg += " (after capture loss)";
  if (sm.mid_stream) {
    std::string tries;
    if (!f.detecting_crc())
      tries = std::string("--mid-stream-crc ") + (f.crc() ? "false" : "true") +
              (f.crc() ? " (Linux siw's default is CRC off)" : "");
    if (!tries.empty()) msg += "; try " + tries;
    // Not --mid-stream-markers: the framer never learns the marker position S0 mid-stream.
    msg += "; a connection with MPA markers is framed only from its handshake";
  }
  report(FindingId::mpa_no_fpdu_boundary, Ctx{c.stream, dir, lost->frame, nullptr}, msg,
         lost->after_gap ? Consequence::gap : Consequence::none);
}

void Analyzer::Impl::on_raw_pdu(Connection& c, int dir, RawPdu& p) {
  StreamModel& sm = model.streams[c.stream];
  PduEvent& ev = take_event();
  if (p.kind != RawPdu::Kind::not_mpa) ev.id = next_pdu_id++;
  ev.stream = c.stream;
  ev.direction = dir;
  ev.stream_offset = p.stream_offset;
  ev.raw = p.raw;
  // Swapped in and out (the event's own list is empty after reset()): each keeps its storage.
  ev.slices.swap(p.slices);
  const Ctx ctx = ctx_of(c, dir, ev.slices, cur_frame);
  // Framing one direction can complete the handshake and frame the other: keep the outer
  // event's place.
  PduEvent* const outer = cur_ev;
  cur_ev = &ev;
  switch (p.kind) {
    case RawPdu::Kind::not_mpa:
      on_not_mpa(c, dir, ctx);
      cur_ev = outer;
      p.slices.swap(ev.slices);
      give_back_event(ev);
      return;  // nothing consumed: no event
    case RawPdu::Kind::reqrep:
      ev.kind =
          p.reqrep->kind == wire::MpaFrameKind::request ? PduKind::mpa_request : PduKind::mpa_reply;
      dir = on_reqrep(c, dir, *p.reqrep, ctx);
      ev.direction = dir;
      ev.reqrep = &*p.reqrep;
      break;
    case RawPdu::Kind::unframed:
      ev.kind = PduKind::unframed;
      sm.dirs[dir].bytes_unframed += p.raw.size();
      if (p.error && p.error->code == "mpa.ulpdu-length-invalid") {
        const std::uint16_t len = p.raw.size() >= 2 ? load_be16(p.raw.data()) : 0;
        report(ddp::header_too_short(len), ctx, c.ds(dir).sink.any_after_loss());
      }
      // Octets that could not be framed are lost to the analysis: what they held is missing,
      // for the reason the framer lost its boundary (capture loss, or a dropped FPDU).
      if (sm.state == StreamState::full && !p.raw.empty()) {
        const Consequence why = c.ds(dir).last_loss;
        lost_input(c, dir, why != Consequence::none ? why : Consequence::gap);
      }
      break;
    case RawPdu::Kind::fpdu:
      ev.kind = PduKind::fpdu;
      on_fpdu(c, dir, p, ev, ctx);
      break;
  }
  cur_ev = outer;
  if (observer) observer->on_pdu(ev);
  p.slices.swap(ev.slices);  // the framer reuses the storage
  give_back_event(ev);
}

void Analyzer::Impl::on_not_mpa(Connection& c, int dir, const Ctx& ctx) {
  StreamModel& sm = model.streams[c.stream];
  DirectionCallbacks callbacks{*this, c, dir};
  if (c.hint) {
    sm.mid_stream = true;
    sm.state = StreamState::full;
    start_mid_stream(c, dir, c.hint->markers, c.hint->crc);
    return;
  }
  if (sm.state == StreamState::unknown) {
    sm.state = StreamState::not_iwarp;
    return;
  }
  if (sm.state == StreamState::full) {
    // The peer's Request/Reply came before the capture: frame from the first FPDU found.
    start_mid_stream(c, dir, false, sm.dirs[dir].mpa.crc);
    return;
  }
  if (sm.state == StreamState::handshake) {
    report(mpa::frame_invalid("the responder's first octets are not an MPA Reply"), ctx);
    sm.state = StreamState::failed;
    c.ds(0).framer.stop(callbacks);
    c.ds(1).framer.stop(callbacks);
  }
}

// Returns the (possibly swapped) direction index of the frame's sender.
int Analyzer::Impl::on_reqrep(Connection& c, int dir, const wire::MpaReqRep& f, const Ctx& ctx_in) {
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
  DirectionCallbacks callbacks{*this, c, dir};
  if ((is_request && dir != 0) || (!is_request && dir != 1)) {
    report(mpa::frame_invalid(std::string("MPA ") + (is_request ? "Request from the responder"
                                                                : "Reply from the initiator")),
           ctx);
    sm.state = StreamState::failed;
    c.ds(0).framer.stop(callbacks);
    c.ds(1).framer.stop(callbacks);
    return dir;
  }
  for (const auto& v : mpa::check_frame(f, kAnalysisPolicy))
    report(v, ctx);
  if (is_request) {
    if (sm.state == StreamState::full)
      report(mpa::frame_invalid("second MPA Request on the stream"), ctx);
    return dir;
  }
  settle(c, f, ctx);
  return dir;
}

// The Reply completes the handshake: the parameters both frames settle, checked once
// (mpa::settle), configure framing and both Data Sinks.
void Analyzer::Impl::settle(Connection& c, const wire::MpaReqRep& f, const Ctx& ctx) {
  StreamModel& sm = model.streams[c.stream];
  DirectionCallbacks callbacks{*this, c, 1};
  c.reply_frame = ctx.frame;
  if (f.reject) {
    report(FindingId::mpa_rejected, ctx,
           f.private_data.empty()
               ? "connection rejected"
               : "connection rejected (" + std::to_string(f.private_data.size()) +
                     " octets of private data)");
    sm.state = StreamState::rejected;
    c.ds(0).framer.stop(callbacks);
    c.ds(1).framer.stop(callbacks);
    return;
  }
  const auto& req = sm.dirs[0].mpa_frame;
  mpa::Parameters p;
  if (req) {
    const mpa::Settlement s = mpa::settle(*req, f);
    for (const auto& v : s.violations)
      report(v, ctx);
    p = s.parameters;
  } else {
    // The Request came before the capture: what the Reply alone tells.
    p.revision = f.revision;
    p.crc = f.crc;
    p.markers_to_responder = f.markers;
  }
  sm.revision = p.revision;
  sm.enhanced = p.enhanced;
  sm.peer_to_peer = p.peer_to_peer;
  sm.rtr = p.rtr == llp::RtrType::none ? std::string() : std::string(llp::to_string(p.rtr));
  sm.dirs[0].mpa.crc = p.crc;
  sm.dirs[1].mpa.crc = p.crc;
  sm.dirs[0].mpa.markers = p.markers_to_responder;
  sm.dirs[1].mpa.markers = p.markers_to_initiator;
  sm.state = StreamState::full;
  // Each Data Sink accepts its own side's IRD in Read Requests (RFC 6581 §9.1).
  c.ds(0).sink.set_ird(p.responder_ird);
  c.ds(1).sink.set_ird(p.initiator_ird);
  if (p.peer_to_peer && !sm.mid_stream) c.ds(0).sink.expect_rtr(p.rtr);
  DirectionCallbacks g0{*this, c, 0};
  DirectionCallbacks g1{*this, c, 1};
  sm.dirs[1].mpa.s0 = c.ds(1).framer.s0().value_or(0);
  c.ds(0).framer.set_params(p.markers_to_responder, p.crc, g0);
  c.ds(1).framer.set_params(p.markers_to_initiator, p.crc, g1);
  if (c.ds(0).framer.s0()) sm.dirs[0].mpa.s0 = *c.ds(0).framer.s0();
  ulp_setup(c);  // the RDMA CM private data (engine_ulp.cpp)
}

// Folded into on_raw_pdu, its only caller (GCC keeps it out of line otherwise: a call per FPDU).
[[gnu::always_inline]] inline void Analyzer::Impl::on_fpdu(Connection& c, int dir, RawPdu& p,
                                                           PduEvent& ev, const Ctx& ctx) {
  StreamModel& sm = model.streams[c.stream];
  DirectionModel& dm = sm.dirs[dir];
  DirectionEngine& ds = c.ds(dir);
  dm.fpdus++;
  const std::uint16_t len = load_be16(p.plain.data());
  ev.ulpdu_length = len;
  ev.plain = p.plain;
  ev.ulpdu = p.plain.subspan(2, len);
  ev.crc_field = p.crc_field;
  if (!p.markers.empty()) {  // most streams have none: no copy then
    ev.markers = p.markers;
    ev.marker_offsets = p.marker_offsets;
  }
  ev.leading_marker = p.leading_marker;

  if (p.crc_detected) {
    // Set before the CRC rules below read it.
    dm.mpa.crc = *p.crc_detected;
    DirectionCallbacks other{*this, c, 1 - dir};
    c.ds(1 - dir).framer.adopt_crc(*p.crc_detected, other);
    report(FindingId::mpa_crc_detected, ctx,
           p.crc_detected_by_peer
               ? std::string("mid-stream, no CRC setting given: framed with CRC ") +
                     (*p.crc_detected ? "on" : "off") +
                     ", as the other direction found (one setting per connection, RFC 5044 "
                     "§7.1.2)"
           : *p.crc_detected
               ? "mid-stream, no CRC setting given: framed with CRC on (the CRC matched)"
               : "mid-stream, no CRC setting given: framed with CRC off (no CRC matched; FPDUs "
                 "with zero CRC fields chain by their lengths, three or filling TCP segments)");
  }
  if (p.after_resync) {
    ev.framing_resumed = true;
    ev.resumed_after_gap = p.resync_after_gap;
    ev.resync_skipped = p.resync_skipped;
    const bool benign = p.resync_after_gap || p.resync_mid_stream;
    if (p.resync_skipped > 0 || !benign) {
      report(FindingId::mpa_resync, ctx,
             "FPDU framing found again after " + std::to_string(p.resync_skipped) + " octets" +
                 (p.resync_after_gap ? " (after capture loss)" : ""),
             benign ? Consequence::gap : Consequence::none);
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
      decode_as_received(ev);
      Violation v = mpa::crc_mismatch(p.crc_field, p.crc_all);
      if (ev.ddp)
        v.detail += "; FPDU dropped, its header as received: " + describe_as_received(*ev.ddp);
      report(v, ctx);
      // The FPDU is dropped: what it leaves missing is a consequence, like capture loss.
      lost_input(c, dir, Consequence::crc);
    }
  } else if (!dm.mpa.crc && p.crc_field != 0 && once(ds, FindingId::mpa_crc_unexpected)) {
    report(FindingId::mpa_crc_unexpected, ctx,
           "CRC field " + hex_word(p.crc_field) + " while CRC is not in use (reported once)");
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

  // Decoded straight into the event (no Result, no copy): this is every FPDU's path.
  wire::DdpSegment& seg = ev.ddp.emplace();
  if (!wire::read_ddp_segment(ev.ulpdu, seg)) {
    ev.ddp.reset();
    report(ddp::header_too_short(len), ctx);
    return;
  }
  if (dm.fpdus == 1) check_setup_order(c, dir, seg.header, ctx);
  on_ddp_segment(c, dir, ev, ctx);  // the LLP boundary
  ds.recent.push(ev.ddp->header, ctx.frame);
}

// The first FPDU of each direction against the connection setup order: the initiator sends
// none before the MPA Reply arrives (RFC 5044 §7.1); in peer-to-peer mode (RFC 6581) the
// responder sends none before the initiator's RTR (which its Data Sink checks). A capture shows
// an order the endpoints saw too: an FPDU captured before the Reply that enables it was sent
// before that Reply arrived.
void Analyzer::Impl::check_setup_order(Connection& c, int dir, const wire::DdpHeader& first,
                                       const Ctx& ctx) {
  const StreamModel& sm = model.streams[c.stream];
  if (sm.mid_stream || c.reply_frame == 0) return;
  std::optional<Violation> v;
  if (dir == 0) {
    v = mpa::check_setup_order(mpa::Sender::initiator, ctx.frame >= c.reply_frame, first,
                               " (frame " + std::to_string(c.reply_frame) + ")");
  } else if (sm.peer_to_peer && !sm.rtr.empty()) {
    v = mpa::check_setup_order(mpa::Sender::responder, sm.dirs[0].fpdus > 0, first);
  }
  if (v) report(*v, ctx);
}

void Analyzer::Impl::check_markers(Connection& c, int dir, const RawPdu& p, const Ctx& ctx) {
  StreamModel& sm = model.streams[c.stream];
  DirectionModel& dm = sm.dirs[dir];
  const std::uint64_t s0 = c.ds(dir).framer.s0().value_or(0);
  const std::uint64_t start = p.stream_offset - s0;  // FPDU start incl. a leading marker
  const std::uint64_t header = start + (p.leading_marker ? wire::kMpaMarkerSize : 0);
  bool fits_all = true, fits_lit = true;
  std::string bad;
  for (std::size_t i = 0; i < p.markers.size(); ++i) {
    const auto& m = p.markers[i];
    if (m.reserved != 0) bad = "marker reserved field " + hex_number(m.reserved);
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
    report(mpa::marker_mismatch(bad), ctx);
    return;
  }
  if (p.leading_marker && fits_all != fits_lit && !dm.mpa.convention) {
    dm.mpa.convention =
        fits_all ? wire::MarkerConvention::leading_marker_in_fpdu : wire::MarkerConvention::literal;
    report(FindingId::mpa_marker_convention, ctx,
           std::string("sender counts a marker in front of an FPDU ") +
               (fits_all ? "as the FPDU's first octet (Wireshark/OSC convention)"
                         : "outside the FPDU (literal RFC 5044 reading)"));
  }
}

}  // namespace ddpscope
