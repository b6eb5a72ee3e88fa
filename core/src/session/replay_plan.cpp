// SPDX-License-Identifier: GPL-2.0-or-later
// Replay's plan from a capture: message assembly, the side's SessionConfig, regions, fills and
// the live/captured comparison (see replay_plan.h).
#include "ddpscope/session/replay_plan.h"

#include <algorithm>

#include "ddpscope/ulp/rping.h"

namespace ddpscope::session {

namespace {

bool is_opcode(std::uint8_t op, wire::Opcode o) {
  return op == static_cast<std::uint8_t>(o);
}

// [lo, hi) of captured TOs our side's region must cover.
struct Extent {
  std::uint64_t lo = UINT64_MAX, hi = 0;
  void cover(std::uint64_t to, std::uint64_t len) {
    lo = std::min(lo, to);
    hi = std::max(hi, to + len < to ? UINT64_MAX : to + len);
  }
};

}  // namespace

std::string describe(const CapturedMessage& m) {
  std::string s(wire::opcode_info(m.opcode).name);
  if (m.read_request) return s + " of " + std::to_string(m.read_request->size) + " octets";
  if (m.terminate) return s + " " + terminate_error_name(*m.terminate);
  return s + ", " + std::to_string(m.data.size()) + " octets";
}

std::string describe(const LiveMessage& m) {
  std::string s(wire::opcode_info(m.opcode).name);
  if (is_opcode(m.opcode, wire::Opcode::terminate))
    return s + " " + terminate_error_name(m.terminate);
  return s + ", " + std::to_string(m.length) + " octets";
}

// ---------------------------------------------------------------------------------------------
// Message assembly
// ---------------------------------------------------------------------------------------------

void MessageAssembler::on_pdu(const PduEvent& p) {
  if (p.stream != stream_ || p.kind != PduKind::fpdu || !p.ddp || !p.crc_ok) return;
  if (p.direction < 0 || p.direction > 1) return;
  const wire::DdpHeader& h = p.ddp->header;
  const int d = p.direction;
  const std::uint32_t key = h.control.tagged ? kTaggedKey : h.qn;
  auto [it, fresh] = open_[d].try_emplace(key);
  CapturedMessage& m = it->second;
  if (fresh) {
    m.direction = d;
    m.opcode = wire::RdmapControl::from_byte(h.rsvd_ulp0).opcode;
    m.tagged = h.control.tagged;
    m.qn = h.qn;
    m.msn = h.msn;
    m.rsvd_ulp1 = h.rsvd_ulp1;
    m.stag = h.stag;
    m.to = h.to;
    m.frame = p.slices.empty() ? 0 : p.slices.front().frame;
  }
  // A tagged segment below the message's first TO wraps to a huge offset and is dropped.
  const std::uint64_t off = h.control.tagged ? h.to - m.to : h.mo;
  const ByteView payload = p.ddp->payload;
  if (off <= kMaxMessageOctets && payload.size() <= kMaxMessageOctets - off) {
    const std::size_t end = static_cast<std::size_t>(off) + payload.size();
    if (m.data.size() < end) m.data.resize(end);
    std::copy(payload.begin(), payload.end(), m.data.begin() + static_cast<std::ptrdiff_t>(off));
  }
  if (p.read_request) m.read_request = p.read_request;
  if (p.atomic_request) m.atomic_request = p.atomic_request;
  if (p.atomic_response) m.atomic_response = p.atomic_response;
  if (p.immediate_data) m.immediate = p.immediate_data;
  if (p.terminate) {
    const wire::TerminateControl& c = p.terminate->control;
    m.terminate = TerminateError{c.layer, c.etype, c.code};
  }
  if (h.control.last) {
    m.ts_ns = now_ns_;
    messages_.push_back(std::move(m));
    open_[d].erase(it);
  }
}

// ---------------------------------------------------------------------------------------------
// Session configuration
// ---------------------------------------------------------------------------------------------

std::optional<SessionConfig> replay_session_config(const StreamModel& stream, ReplaySide side) {
  const auto& frame = stream.dirs[static_cast<int>(side)].mpa_frame;
  if (!frame) return std::nullopt;
  SessionConfig cfg;
  cfg.role = side == ReplaySide::client ? Role::initiator : Role::responder;
  cfg.mpa.revision = frame->revision;
  cfg.mpa.crc = frame->crc;
  cfg.mpa.markers = frame->markers;
  cfg.mpa.enhanced = frame->enhanced_pd.has_value();
  const ByteView upd = frame->ulp_private_data();
  cfg.mpa.private_data.assign(upd.begin(), upd.end());
  if (frame->enhanced_pd) {
    const wire::MpaEnhancedPd& e = *frame->enhanced_pd;
    cfg.mpa.ird = e.ird;
    cfg.mpa.ord = e.ord;
    cfg.mpa.peer_to_peer = e.peer_to_peer;
    cfg.mpa.rtr_types = static_cast<std::uint8_t>((e.zero_length_send_rtr ? rtr_offer::send : 0) |
                                                  (e.zero_length_write_rtr ? rtr_offer::write : 0) |
                                                  (e.zero_length_read_rtr ? rtr_offer::read : 0));
    if (side == ReplaySide::server && cfg.mpa.rtr_types == 0) cfg.mpa.rtr_types = rtr_offer::write;
  } else {
    cfg.mpa.peer_to_peer = false;
  }
  return cfg;
}

// ---------------------------------------------------------------------------------------------
// The plan
// ---------------------------------------------------------------------------------------------

namespace {

// The rping advertisement a message carries, judged as the analyzer judges it (ulp/rping.h).
std::optional<ulp::RpingInfo> advertisement(std::uint8_t opcode, const StreamModel& stream,
                                            int direction, ByteView data) {
  return ulp::rping_advertisement(opcode, stream.dirs[direction].from.port,
                                  stream.dirs[direction].to.port, data);
}

}  // namespace

std::optional<ReplayPlan> make_replay_plan(const StreamModel& stream, ReplaySide side,
                                           std::vector<CapturedMessage> messages,
                                           std::string& error) {
  ReplayPlan plan;
  plan.side = side;
  plan.ports_ = {stream.dirs[0].from.port, stream.dirs[0].to.port};
  const int us = plan.us();
  // RFC 6581 §7: in peer-to-peer mode the initiator's first message is the RTR; a Read RTR is
  // answered by the responder with a zero-length Read Response. Both are the handshake's.
  bool skipped_rtr[2] = {!stream.peer_to_peer, !(stream.peer_to_peer && stream.rtr == "read")};
  std::map<std::uint32_t, Extent> extents;
  for (CapturedMessage& m : messages) {
    if (!skipped_rtr[0] && m.direction == 0) {
      skipped_rtr[0] = true;
      continue;
    }
    if (!skipped_rtr[1] && m.direction == 1 && is_opcode(m.opcode, wire::Opcode::read_response)) {
      skipped_rtr[1] = true;
      continue;
    }
    const auto& rr = m.read_request;
    if (m.direction == us) {
      if (const auto adv = advertisement(m.opcode, stream, us, m.data))
        extents[adv->rkey].cover(adv->buf, adv->size);
      if (rr && rr->size) extents[rr->sink_stag].cover(rr->sink_to, rr->size);
    } else {
      if (rr && rr->size) extents[rr->source_stag].cover(rr->source_to, rr->size);
      if (m.tagged && !m.data.empty()) extents[m.stag].cover(m.to, m.data.size());
      if (m.atomic_request)
        extents[m.atomic_request->remote_stag].cover(m.atomic_request->remote_to, 8);
    }
    plan.script.push_back(std::move(m));
  }
  std::uint64_t total = 0;
  for (const auto& [stag, e] : extents) {
    if (e.hi <= e.lo || e.hi - e.lo > kReplayMaxRegion ||
        (total += e.hi - e.lo) > kReplayMaxRegions) {
      error = "region of STag " + std::to_string(stag) + " too large";
      return std::nullopt;
    }
    plan.regions[stag] = ReplayRegion{e.lo, Bytes(static_cast<std::size_t>(e.hi - e.lo), 0)};
  }
  // Each Read Request of the peer is answered by our next Read Response to its sink.
  for (std::size_t i = 0; i < plan.script.size(); ++i) {
    const CapturedMessage& m = plan.script[i];
    if (m.direction == us || !m.read_request || !m.read_request->size) continue;
    const wire::ReadRequest& rr = *m.read_request;
    for (std::size_t j = i + 1; j < plan.script.size(); ++j) {
      const CapturedMessage& r = plan.script[j];
      if (r.direction != us || !is_opcode(r.opcode, wire::Opcode::read_response) ||
          r.stag != rr.sink_stag || r.to != rr.sink_to)
        continue;
      plan.fills_.push_back({i, rr.source_stag, rr.source_to, j});
      break;
    }
  }
  for (const CapturedMessage& m : plan.script)
    if (m.direction != us && wire::opcode_is_send_family(m.opcode))
      plan.max_send = std::max(plan.max_send, m.data.size());
  plan.apply_fills(0);
  return plan;
}

bool ReplayPlan::ours_to_send(const CapturedMessage& m) const {
  return m.direction == us() && !is_opcode(m.opcode, wire::Opcode::read_response) &&
         !is_opcode(m.opcode, wire::Opcode::atomic_response);
}

void ReplayPlan::apply_fills(std::size_t from) {
  std::size_t until = from;
  while (until < script.size() && !ours_to_send(script[until]))
    ++until;
  for (const Fill& f : fills_) {
    if (f.at < from || f.at >= until) continue;
    auto it = regions.find(f.stag);
    if (it == regions.end() || f.to < it->second.base) continue;
    Bytes& mem = it->second.mem;
    const std::uint64_t off = f.to - it->second.base;
    if (off >= mem.size()) continue;
    const Bytes& data = script[f.response].data;
    std::copy_n(data.begin(), std::min<std::size_t>(data.size(), mem.size() - off),
                mem.begin() + static_cast<std::ptrdiff_t>(off));
  }
}

Bytes ReplayPlan::region_bytes(std::uint32_t stag, std::uint64_t to, std::size_t len) const {
  auto it = regions.find(stag);
  if (it == regions.end()) return {};
  const ReplayRegion& r = it->second;
  if (to < r.base || to - r.base > r.mem.size() || len > r.mem.size() - (to - r.base)) return {};
  const auto b = r.mem.begin() + static_cast<std::ptrdiff_t>(to - r.base);
  return Bytes(b, b + static_cast<std::ptrdiff_t>(len));
}

std::pair<std::uint32_t, std::uint64_t> ReplayPlan::live_stag_to(std::uint32_t stag,
                                                                 std::uint64_t to) const {
  auto it = live_.find(stag);
  if (it == live_.end()) return {stag, to};
  return {it->second.stag, it->second.live_base + (to - it->second.captured_base)};
}

std::string ReplayPlan::compare(const CapturedMessage& m, const LiveMessage& l) {
  if (l.opcode != m.opcode) return "the live peer sent " + describe(l);
  if (m.terminate) {
    return l.terminate == *m.terminate ? "" : "Terminate " + terminate_error_name(l.terminate);
  }
  if (m.read_request) {
    return l.length == m.read_request->size ? ""
                                            : "Read of " + std::to_string(l.length) + " octets";
  }
  if (m.immediate || m.atomic_response) {
    const std::uint64_t want = m.immediate ? *m.immediate : m.atomic_response->original_value;
    return l.value == want ? "" : "value " + std::to_string(l.value);
  }
  if (l.data.size() != m.data.size()) return "size " + std::to_string(l.data.size()) + " octets";
  // The same rule judges both: the live peer replays the captured one's stream.
  const std::uint16_t from = ports_[m.direction], to = ports_[1 - m.direction];
  const auto cap = ulp::rping_advertisement(m.opcode, from, to, m.data);
  const auto live = ulp::rping_advertisement(l.opcode, from, to, l.data);
  if (cap && live) {
    // An advertisement at the same position: the live buffer stands for the captured one.
    live_[cap->rkey] = LiveBuffer{live->rkey, cap->buf, live->buf};
    if (cap->size != live->size) {
      return "advertised length " + std::to_string(live->size) + ", captured " +
             std::to_string(cap->size);
    }
    return "";
  }
  if (l.data != m.data) {
    std::size_t at = 0;
    while (at < l.data.size() && l.data[at] == m.data[at])
      ++at;
    return "data differs from octet " + std::to_string(at);
  }
  return "";
}

}  // namespace ddpscope::session
