// SPDX-License-Identifier: GPL-2.0-or-later
// Replay's plan from a capture: message assembly, the side's SessionConfig, regions, fills and
// the live/captured comparison (see replay_plan.h).
#include "ddpscope/session/replay_plan.h"

#include <algorithm>

#include "ddpscope/ulp/iser.h"
#include "ddpscope/ulp/nvmeof.h"
#include "ddpscope/ulp/rpcrdma.h"
#include "ddpscope/ulp/rping.h"
#include "ddpscope/ulp/smbdirect.h"

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

// "data differs at offset 0x200 of 4096": the first octet where `live` leaves `captured`.
std::string data_difference(const Bytes& captured, const Bytes& live) {
  std::size_t at = 0;
  while (at < live.size() && at < captured.size() && live[at] == captured[at])
    ++at;
  return "data differs at offset " + hex_number(at) + " of " + std::to_string(captured.size());
}

// Zeroes the octets [b, e) of each range in both messages (same size), so that they compare
// equal there.
void blank_ranges(Bytes& cap, Bytes& live,
                  const std::vector<std::pair<std::size_t, std::size_t>>& ranges) {
  for (const auto& [b, e] : ranges) {
    std::fill(cap.begin() + static_cast<std::ptrdiff_t>(b),
              cap.begin() + static_cast<std::ptrdiff_t>(e), 0);
    std::fill(live.begin() + static_cast<std::ptrdiff_t>(b),
              live.begin() + static_cast<std::ptrdiff_t>(e), 0);
  }
}

// A command names its sender's buffers, and a live peer's buffers are its own: where the
// captured message holds a captured region's STag or base (in either byte order, as the ULP
// lays it out) and the live one holds the live region's in the same place, neither is compared.
// Descriptors sit in a command's first octets (SMB Direct keeps kSmbdMaxReassembly of a
// message): only those are searched, one pass whatever the number of regions.
void mask_buffers(Bytes& cap, Bytes& live, const std::vector<AdvertisedRegion>& cap_regions,
                  const std::vector<AdvertisedRegion>& live_regions) {
  const std::size_t n = std::min(cap_regions.size(), live_regions.size());
  if (n == 0) return;
  std::map<std::uint64_t, std::uint64_t> stags, bases;  // captured -> live
  for (std::size_t j = 0; j < n; ++j) {
    stags.emplace(cap_regions[j].stag, live_regions[j].stag);
    bases.emplace(cap_regions[j].base, live_regions[j].base);
  }
  const auto load = [](const Bytes& b, std::size_t at, std::size_t width, bool big) {
    std::uint64_t v = 0;
    for (std::size_t k = 0; k < width; ++k)
      v |= std::uint64_t{b[at + (big ? width - 1 - k : k)]} << (8 * k);
    return v;
  };
  const std::size_t end =
      std::min({cap.size(), live.size(), static_cast<std::size_t>(ulp::kSmbdMaxReassembly)});
  std::vector<std::pair<std::size_t, std::size_t>> hits;
  for (std::size_t at = 0; at < end; ++at) {
    for (const auto& [width, table] :
         {std::pair{std::size_t{4}, &stags}, {std::size_t{8}, &bases}}) {
      if (at + width > end) continue;
      for (const bool big : {false, true}) {
        const auto it = table->find(load(cap, at, width, big));
        if (it != table->end() && load(live, at, width, big) == it->second)
          hits.emplace_back(at, width);
      }
    }
  }
  for (const auto& [at, width] : hits) {
    std::fill_n(cap.begin() + static_cast<std::ptrdiff_t>(at), width, 0);
    std::fill_n(live.begin() + static_cast<std::ptrdiff_t>(at), width, 0);
  }
}

std::string status_text(const UlpCompletion& c) {
  if (!c.status.empty()) return c.status;
  return c.success ? "success" : "failure";
}

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

std::optional<CapturedSetup> captured_setup(const StreamModel& stream, ReplaySide side) {
  const int d = static_cast<int>(side);
  CapturedSetup s;
  if (stream.llp == ddpscope::Llp::sctp) {
    // The side's first Initiate (client) or Accept (server) among the stream's session control
    // messages; a Reject opens no session to replay.
    if (!stream.sctp) return std::nullopt;
    const auto want =
        side == ReplaySide::client ? wire::DdpSessionKind::initiate : wire::DdpSessionKind::accept;
    for (const SctpSessionRecord& r : stream.sctp->session) {
      if (r.direction != d || r.message.kind() != want) continue;
      s.llp = Llp::sctp;
      s.enhanced = r.message.enhanced_pd;
      s.ulp_private_data = r.message.ulp_private_data();
      return s;
    }
    return std::nullopt;
  }
  const auto& frame = stream.dirs[d].mpa_frame;
  if (!frame) return std::nullopt;
  s.revision = frame->revision;
  s.crc = frame->crc;
  s.markers = frame->markers;
  s.enhanced = frame->enhanced_pd;
  s.ulp_private_data = frame->ulp_private_data();
  return s;
}

std::optional<SessionConfig> replay_session_config(const StreamModel& stream, ReplaySide side,
                                                   Llp llp) {
  const auto setup = captured_setup(stream, side);
  if (!setup) return std::nullopt;
  SessionConfig cfg;
  cfg.llp = llp;
  cfg.role = side == ReplaySide::client ? Role::initiator : Role::responder;
  const bool mpa = llp == Llp::mpa;
  // RFC 6581 §5: the enhanced word needs revision 2, the revision an SCTP capture's replay
  // over MPA takes.
  cfg.mpa.revision = setup->revision.value_or(2);
  cfg.mpa.crc = mpa && setup->crc;
  cfg.mpa.markers = mpa && setup->markers;
  cfg.mpa.enhanced = setup->enhanced.has_value();
  cfg.mpa.private_data.assign(setup->ulp_private_data.begin(), setup->ulp_private_data.end());
  if (setup->enhanced) {
    const wire::MpaEnhancedPd& e = *setup->enhanced;
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

std::vector<std::string> replay_setup_notes(const StreamModel& stream, ReplaySide side, Llp llp) {
  std::vector<std::string> notes;
  const auto setup = captured_setup(stream, side);
  if (!setup || setup->llp == llp) return notes;
  const bool client = side == ReplaySide::client;
  const bool enhanced = setup->enhanced.has_value();
  std::string pd = std::to_string(setup->ulp_private_data.size()) + " octets of private data";
  if (enhanced) pd += " and the IRD/ORD/RTR word";
  if (llp == Llp::sctp) {
    notes.push_back(std::string("the captured MPA ") + (client ? "Request" : "Reply") +
                    " becomes a DDP Stream " + (enhanced ? "Enhanced " : "") + "Session " +
                    (client ? "Initiate" : "Accept") + " with its " + pd +
                    " (RFC 5043 §6, RFC 6581 §8)");
    if (setup->crc) notes.emplace_back("no MPA CRC over SCTP: SCTP's CRC32c covers each message");
    if (setup->markers) notes.emplace_back("no MPA markers over SCTP");
    notes.emplace_back("the MPA revision is not compared: SCTP has none");
  } else {
    notes.push_back(std::string("the captured DDP Stream ") + (enhanced ? "Enhanced " : "") +
                    "Session " + (client ? "Initiate" : "Accept") + " becomes an MPA rev 2 " +
                    (client ? "Request" : "Reply") + " with its " + pd +
                    ", without CRC or markers (RFC 5044 §7.1, RFC 6581 §5)");
  }
  return notes;
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
                                           std::string& error, std::uint64_t max_regions) {
  ReplayPlan plan;
  plan.side = side;
  plan.ports_ = {stream.dirs[0].from.port, stream.dirs[0].to.port};
  plan.ends_ = {stream.dirs[0].from, stream.dirs[1].from};
  const int us = plan.us();
  for (const VaryingField& f : replay_varying_fields())
    if (f.by_default) plan.ignored.emplace_back(f.name);
  // The ULP decoders, once over the captured stream and, as the replay goes, over the live one.
  plan.decoders_ = std::make_shared<const std::vector<std::unique_ptr<AdvertisementDecoder>>>(
      default_advertisement_decoders());
  UlpStreamDecoders captured(*plan.decoders_);
  plan.live_decoders_ = std::make_shared<UlpStreamDecoders>(*plan.decoders_);
  if (!stream.mid_stream) {
    // The RDMA CM private data of the MPA Request and Reply, or of SCTP's Session Initiate and
    // Accept: whichever LLP the capture used, the ULP reads the same octets.
    UlpSetup setup;
    if (const auto c = captured_setup(stream, ReplaySide::client))
      setup.request = Bytes(c->ulp_private_data.begin(), c->ulp_private_data.end());
    if (const auto r = captured_setup(stream, ReplaySide::server))
      setup.reply = Bytes(r->ulp_private_data.begin(), r->ulp_private_data.end());
    setup.initiator = stream.client;
    setup.responder = stream.server;
    captured.setup(setup);
    plan.live_decoders_->setup(setup);
  }
  std::map<std::pair<bool, std::uint64_t>, std::uint32_t> seen;
  std::map<std::uint64_t, std::string> command_names[2];  // by the direction that sent them
  std::map<std::uint32_t, std::size_t> first_use;
  const auto use = [&](std::uint32_t stag) { first_use.try_emplace(stag, plan.script.size()); };
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
    UlpMessageInfo info =
        plan.decode_ulp(captured, seen, m.direction, m.opcode, m.rsvd_ulp1, m.data);
    if (info.key) {
      auto& names = command_names[m.direction];
      if (!info.key->completion) names[info.key->id] = info.name;
      const auto& asked = command_names[1 - m.direction];
      if (auto it = asked.find(info.key->id); info.key->completion && it != asked.end())
        info.name = it->second;
      if (m.direction != us) {
        plan.by_key_[*info.key] = plan.script.size();
        if (!info.key->completion && info.signature)
          plan.by_signature_[info.signature].push_back(plan.script.size());
      }
      for (const AdvertisedRegion& r : info.regions)
        plan.stag_owner_[r.stag] = info.name;
    }
    if (m.direction == us) {
      if (const auto adv = advertisement(m.opcode, stream, us, m.data)) {
        extents[adv->rkey].cover(adv->buf, adv->size);
        use(adv->rkey);
      }
      // Every buffer our side's commands advertised, whether or not the peer reached it.
      for (const AdvertisedRegion& r : info.regions) {
        if (!r.length) continue;
        extents[r.stag].cover(r.base, r.length);
        use(r.stag);
      }
      if (rr && rr->size) {
        extents[rr->sink_stag].cover(rr->sink_to, rr->size);
        use(rr->sink_stag);
      }
    } else {
      if (rr && rr->size) {
        extents[rr->source_stag].cover(rr->source_to, rr->size);
        use(rr->source_stag);
      }
      if (m.tagged && !m.data.empty()) {
        extents[m.stag].cover(m.to, m.data.size());
        use(m.stag);
      }
      if (m.atomic_request) {
        extents[m.atomic_request->remote_stag].cover(m.atomic_request->remote_to, 8);
        use(m.atomic_request->remote_stag);
      }
    }
    plan.ulp_info.push_back(std::move(info));
    plan.script.push_back(std::move(m));
  }
  std::uint64_t total = 0;
  for (const auto& [stag, e] : extents) {
    if (e.hi <= e.lo || e.hi - e.lo > kReplayMaxRegion ||
        (total += e.hi - e.lo) > std::min(max_regions, kReplayMaxRegions)) {
      error = "region of STag " + std::to_string(stag) + " too large";
      return std::nullopt;
    }
    plan.regions[stag] =
        ReplayRegion{e.lo, Bytes(static_cast<std::size_t>(e.hi - e.lo), 0), first_use[stag]};
  }
  if (const auto i = captured.claimed()) plan.ulp = std::string(captured.decoder(*i).name());
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
  if (l.data != m.data) return data_difference(m.data, l.data);
  return "";
}

std::string ReplayPlan::compare(std::size_t i, const LiveMessage& l) {
  const CapturedMessage& m = script[i];
  const UlpMessageInfo& u = ulp_info[i];
  if (l.opcode == m.opcode && !ulp.empty() && l.data.size() == m.data.size() &&
      (is_opcode(m.opcode, wire::Opcode::rdma_write) ||
       is_opcode(m.opcode, wire::Opcode::read_response))) {
    // A command's data: its fields that differ between runs are left out as in a Send.
    const auto ranges = varying_ranges(ulp, ignored, label(i), m.data);
    if (!ranges.empty()) {
      Bytes cap = m.data, live = l.data;
      blank_ranges(cap, live, ranges);
      return cap == live ? "" : data_difference(cap, live);
    }
  }
  if (l.opcode != m.opcode || ulp.empty() || !wire::opcode_is_send_family(m.opcode))
    return compare(m, l);
  // A completion's status first: it says more than the octets that carry it.
  if (u.completion && l.ulp.completion) {
    const std::string live = status_text(*l.ulp.completion), cap = status_text(*u.completion);
    if (live != cap) return live + " live vs " + cap + " captured";
  }
  if (l.data.size() != m.data.size())
    return "size " + std::to_string(l.data.size()) + " octets, captured " +
           std::to_string(m.data.size());
  // Fields that legitimately differ between runs are left out of the comparison.
  Bytes cap = m.data, live = l.data;
  blank_ranges(cap, live, varying_ranges(ulp, ignored, u.name, cap));
  mask_buffers(cap, live, u.regions, l.ulp.regions);
  // A live command that stands for this one under another identifier (observe_live): the
  // identifier is the live peer's choice (NVMe: the SQE's CID, octets 2..3).
  if (u.key && !u.completion && ulp == "nvme-rdma" && live_id_.count(*u.key) &&
      cap.size() >= ulp::kNvmeSqeSize) {
    cap[2] = cap[3] = live[2] = live[3] = 0;
  }
  return cap == live ? "" : data_difference(cap, live);
}

// ---------------------------------------------------------------------------------------------
// ULP identity
// ---------------------------------------------------------------------------------------------

UlpMessageInfo ReplayPlan::decode_ulp(UlpStreamDecoders& d,
                                      std::map<std::pair<bool, std::uint64_t>, std::uint32_t>& seen,
                                      int direction, std::uint8_t opcode,
                                      std::uint32_t invalidate_stag, ByteView data) const {
  UlpMessageInfo info;
  if (!wire::opcode_is_send_family(opcode) || direction < 0 || direction > 1) return info;
  AdvertContext ctx;
  ctx.opcode = opcode;
  ctx.sender = ends_[direction];
  ctx.receiver = ends_[1 - direction];
  ctx.length = data.size();
  ctx.invalidate_stag = wire::opcode_invalidates(opcode) ? invalidate_stag : 0;
  ctx.from_initiator = direction == 0;
  for (auto& found : d.decode(ctx, data)) {
    UlpEvents& e = found.events;
    if (!info.key && !e.commands.empty()) {
      UlpCommand& c = e.commands.front();
      info.key = UlpKey{false, c.id, 0};
      info.name = std::move(c.name);
      info.regions = std::move(c.regions);
      info.signature = d.decoder(found.decoder).command_signature(data);
    } else if (!info.key && !e.completions.empty()) {
      info.key = UlpKey{true, e.completions.front().id, 0};
      info.completion = e.completions.front();
    }
  }
  if (info.key) info.key->occurrence = seen[{info.key->completion, info.key->id}]++;
  return info;
}

std::string ReplayPlan::label(std::size_t i) const {
  if (i >= script.size()) return {};
  const CapturedMessage& m = script[i];
  const UlpMessageInfo& u = ulp_info[i];
  if (u.key) {
    if (u.name.empty()) return ulp + " id " + std::to_string(u.key->id) + " (response)";
    return u.completion ? u.name + " (response)" : u.name;
  }
  std::uint32_t stag = m.stag;
  if (m.read_request) stag = m.read_request->source_stag;
  if (m.atomic_request) stag = m.atomic_request->remote_stag;
  if (is_opcode(m.opcode, wire::Opcode::read_response)) {
    // A Read Response is named by the buffer it was read from: its request's source.
    for (std::size_t j = i; j-- > 0;) {
      const CapturedMessage& r = script[j];
      if (r.direction != m.direction && r.read_request && r.read_request->sink_stag == m.stag) {
        stag = r.read_request->source_stag;
        break;
      }
    }
  }
  if (m.tagged || m.read_request || m.atomic_request ||
      is_opcode(m.opcode, wire::Opcode::read_response)) {
    if (auto it = stag_owner_.find(stag); it != stag_owner_.end())
      return std::string(wire::opcode_info(m.opcode).name) + " for " + it->second;
  }
  return describe(m);
}

void ReplayPlan::observe_sent(std::size_t i) {
  if (i >= script.size() || !live_decoders_) return;
  const CapturedMessage& m = script[i];
  // What goes on the wire (a response given the live command's identifier).
  decode_ulp(*live_decoders_, live_seen_, m.direction, m.opcode, m.rsvd_ulp1, outgoing(i));
}

void ReplayPlan::observe_live(LiveMessage& l) {
  if (!live_decoders_) return;
  l.ulp = decode_ulp(*live_decoders_, live_seen_, 1 - us(), l.opcode, 0, l.data);
  if (!l.ulp.key) return;
  auto it = by_key_.find(*l.ulp.key);
  const auto asks_the_same = [&](std::size_t i) {
    const std::uint64_t sig = ulp_info[i].signature;
    return !sig || !l.ulp.signature || sig == l.ulp.signature;
  };
  if (it != by_key_.end() && (matched_.count(it->first) || !asks_the_same(it->second)))
    it = by_key_.end();
  if (it == by_key_.end() && !l.ulp.key->completion && l.ulp.signature) {
    // Another identifier: the first captured command not matched yet that asks the same.
    if (auto s = by_signature_.find(l.ulp.signature); s != by_signature_.end()) {
      auto& q = s->second;
      while (!q.empty() && matched_.count(*ulp_info[q.front()].key))
        q.pop_front();
      if (!q.empty()) {
        const UlpKey captured = *ulp_info[q.front()].key;
        live_id_[captured] = l.ulp.key->id;
        l.ulp.key = captured;
        l.ulp.name.clear();
        it = by_key_.find(captured);
      }
    }
  }
  if (it == by_key_.end()) return;
  matched_.insert(it->first);
  l.matched = true;
  const UlpMessageInfo& cap = ulp_info[it->second];
  if (l.ulp.name.empty()) l.ulp.name = cap.name;
  // An admin Connect's response gives the controller ID in DW0 (NVMe-oF 1.1 §3.3).
  if (ulp == "nvme-rdma" && l.ulp.completion && l.ulp.completion->success &&
      l.data.size() == ulp::kNvmeCqeSize && cap.name.find("Connect") != std::string::npos &&
      cap.name.find("qid 0") != std::string::npos)
    learned_cntlid = le16(l.data, 0);
  // The live command's buffers stand for the captured command's, in the order it lists them.
  const std::size_t n = std::min(cap.regions.size(), l.ulp.regions.size());
  for (std::size_t j = 0; j < n; ++j) {
    live_[cap.regions[j].stag] =
        LiveBuffer{l.ulp.regions[j].stag, cap.regions[j].base, l.ulp.regions[j].base};
    unreachable_.erase(cap.regions[j].stag);
  }
}

std::optional<std::size_t> ReplayPlan::pick(std::size_t i,
                                            const std::deque<LiveMessage>& live) const {
  if (i >= script.size()) return std::nullopt;
  const CapturedMessage& m = script[i];
  const UlpMessageInfo& u = ulp_info[i];
  if (u.key) {
    for (std::size_t k = 0; k < live.size(); ++k)
      if (live[k].matched && live[k].ulp.key == u.key) return k;
    return std::nullopt;
  }
  // A transfer of the peer's reaches a region of ours, registered under the captured STag: the
  // first live one of the same opcode into the same region (a Write into another buffer is
  // not this one, which is then missing, and that one extra).
  if ((m.tagged && !is_opcode(m.opcode, wire::Opcode::read_response)) || m.read_request) {
    const std::uint32_t stag = m.read_request ? m.read_request->source_stag : m.stag;
    for (std::size_t k = 0; k < live.size(); ++k)
      if (!live[k].ulp.key && live[k].opcode == m.opcode && live[k].stag == stag) return k;
    return std::nullopt;
  }
  for (std::size_t k = 0; k < live.size(); ++k)
    if (!live[k].ulp.key) return k;
  return std::nullopt;
}

std::string ReplayPlan::missing(std::size_t i) {
  if (i >= script.size()) return {};
  const std::string name = label(i);
  for (const AdvertisedRegion& r : ulp_info[i].regions)
    unreachable_[r.stag] = name;
  return name + ": the live peer did not send it";
}

std::string ReplayPlan::blocked_by(std::size_t i) const {
  if (i >= script.size() || unreachable_.empty()) return {};
  const CapturedMessage& m = script[i];
  std::uint32_t stag = 0;
  if (m.tagged) stag = m.stag;
  if (m.read_request) stag = m.read_request->source_stag;
  if (m.atomic_request) stag = m.atomic_request->remote_stag;
  if (wire::opcode_invalidates(m.opcode)) stag = m.rsvd_ulp1;
  if (auto it = unreachable_.find(stag); stag && it != unreachable_.end()) return it->second;
  return {};
}

std::string ReplayPlan::extra(const LiveMessage& l) const {
  if (!l.ulp.key) return "the live peer sent " + describe(l) + ", not in the capture";
  std::string name = l.ulp.name;
  if (name.empty()) name = ulp + " id " + std::to_string(l.ulp.key->id);
  return name + (l.ulp.completion ? " (response)" : "") +
         ": the live peer sent it, the capture has no such " +
         (l.ulp.completion ? "response" : "command");
}

Bytes ReplayPlan::outgoing(std::size_t i) const {
  if (i >= script.size()) return {};
  const CapturedMessage& m = script[i];
  if (!wire::opcode_is_send_family(m.opcode)) return m.data;
  if (const auto& u = ulp_info[i]; ulp == "nvme-rdma" && u.completion && u.key) {
    // Our response to a live command of another CID carries the live one.
    const auto it = live_id_.find(UlpKey{false, u.key->id, u.key->occurrence});
    if (it != live_id_.end() && m.data.size() == ulp::kNvmeCqeSize)
      return ulp::nvme_cqe_with_cid(m.data, static_cast<std::uint16_t>(it->second));
    return m.data;
  }
  constexpr std::size_t kConnectCntlid = ulp::kNvmeSqeSize + 16;
  if (ulp == "nvme-rdma" && nvme_cntlid && !ulp_info[i].completion &&
      ulp_info[i].name.find("Connect") != std::string::npos &&
      m.data.size() >= ulp::kNvmeSqeSize + ulp::kNvmeConnectDataSize &&
      le16(m.data, kConnectCntlid) != 0xFFFF) {
    // An I/O queue's Connect names the controller the admin queue's Connect was given
    // (0xFFFF: the admin Connect, which asks for any).
    Bytes out = m.data;
    out[kConnectCntlid] = static_cast<std::uint8_t>(*nvme_cntlid);
    out[kConnectCntlid + 1] = static_cast<std::uint8_t>(*nvme_cntlid >> 8);
    return out;
  }
  if (ulp != "rpc-rdma" || live_.empty()) return m.data;
  // RFC 8166 §3.4: the responder's Reply returns the Call's write list and reply chunk; their
  // handles are the live requester's. Re-encoded only when a handle changes.
  auto h = ulp::decode_rpcrdma_header(m.data);
  if (!h || h->truncated || h->proc == ulp::rpcrdma_proc::msgp) return m.data;
  bool changed = false;
  const auto remap = [&](ulp::RdmaSegment& seg) {
    const auto [stag, to] = live_stag_to(seg.handle, seg.offset);
    changed = changed || stag != seg.handle || to != seg.offset;
    seg.handle = stag;
    seg.offset = to;
  };
  for (auto& chunk : h->writes)
    for (auto& seg : chunk)
      remap(seg);
  if (h->reply)
    for (auto& seg : *h->reply)
      remap(seg);
  if (!changed) return m.data;
  Bytes out = ulp::encode_rpcrdma_header(*h);
  out.insert(out.end(), m.data.begin() + static_cast<std::ptrdiff_t>(h->size), m.data.end());
  return out;
}

// ---------------------------------------------------------------------------------------------
// Fields that differ between runs
// ---------------------------------------------------------------------------------------------

const std::vector<VaryingField>& replay_varying_fields() {
  static const std::vector<VaryingField> fields = {
      {"nvme.cntlid", "NVMe-oF controller ID (Connect data, Connect response DW0)", true},
      {"nvme.hostid", "NVMe-oF Host Identifier in the Connect data", true},
      {"nvme.hostnqn", "NVMe-oF Host NQN in the Connect data", true},
      {"nvme.sqhd", "NVMe SQ Head Pointer of a completion", false},
      {"iser.ttt", "iSCSI Target Transfer Tag the target chose (NOP-In, Text Response)", true},
      {"iscsi.sn", "iSCSI CmdSN/StatSN/ExpCmdSN/MaxCmdSN", false},
      {"rpc.verifier", "RPC reply verifier", true},
      {"rpcrdma.credit", "RPC-over-RDMA credit value", false},
      {"smb2.session_id", "SMB2 SessionId", true},
      {"smb2.credits", "SMB2 CreditRequest/CreditResponse", false},
      {"smbd.credits", "SMB Direct CreditsRequested/CreditsGranted", false},
  };
  return fields;
}

std::vector<std::pair<std::size_t, std::size_t>> varying_ranges(
    std::string_view ulp, const std::vector<std::string>& fields, std::string_view command,
    ByteView message) {
  std::vector<std::pair<std::size_t, std::size_t>> out;
  const auto want = [&](std::string_view f) {
    return std::find(fields.begin(), fields.end(), f) != fields.end();
  };
  const auto add = [&](std::size_t b, std::size_t e) {
    if (b < e && e <= message.size()) out.emplace_back(b, e);
  };
  const std::size_t n = message.size();
  if (ulp == "nvme-rdma") {
    const bool connect = command.find("Connect") != std::string_view::npos;
    constexpr std::size_t sqe = ulp::kNvmeSqeSize;
    if (n == ulp::kNvmeCqeSize) {
      if (connect && want("nvme.cntlid")) add(0, 2);  // Connect response DW0: CNTLID
      if (want("nvme.sqhd")) add(8, 10);
    } else if (connect &&
               (n == ulp::kNvmeConnectDataSize || n >= sqe + ulp::kNvmeConnectDataSize)) {
      // Connect data (NVMe-oF 1.1 §3.3): HOSTID 0..15, CNTLID 16..17, HOSTNQN 512..767; in
      // the capsule after the SQE, or alone (the RDMA Read Response of a Connect whose data
      // is not in the capsule, as Linux's host sends it).
      const std::size_t d = n == ulp::kNvmeConnectDataSize ? 0 : sqe;
      if (want("nvme.hostid")) add(d, d + 16);
      if (want("nvme.cntlid")) add(d + 16, d + 18);
      if (want("nvme.hostnqn")) add(d + 512, d + 768);
    }
  } else if (ulp == "iser") {
    constexpr std::size_t bhs = ulp::kIserHeaderSize;
    if (n < bhs + ulp::kIscsiBhsSize) return out;
    const std::uint8_t op = message[bhs] & 0x3F;
    if (want("iser.ttt") &&
        (op == ulp::iscsi_opcode::nop_in || op == ulp::iscsi_opcode::text_response))
      add(bhs + 20, bhs + 24);
    if (want("iscsi.sn")) add(bhs + 24, bhs + ((op & 0x20) ? 36 : 32));
  } else if (ulp == "rpc-rdma") {
    if (want("rpcrdma.credit")) add(8, 12);
    const auto h = ulp::decode_rpcrdma_header(message);
    if (!want("rpc.verifier") || !h || h->proc != ulp::rpcrdma_proc::msg) return out;
    // RFC 5531 §9: xid, msg_type REPLY (1), reply_stat MSG_ACCEPTED (0), verf {flavor, opaque}.
    const std::size_t r = h->size;
    if (n < r + 20 || be32(message, r + 4) != 1 || be32(message, r + 8) != 0) return out;
    const std::uint64_t len = be32(message, r + 16);
    if (len > 400) return out;  // RFC 5531: MAX_AUTH_BYTES
    add(r + 12, r + 20 + static_cast<std::size_t>((len + 3) & ~std::uint64_t{3}));
  } else if (ulp == "smb-direct") {
    if (want("smbd.credits")) add(0, 4);
    const auto d = ulp::decode_smbd_data_header(message, n);
    if (!d || d->data_length < ulp::kSmb2HeaderSize || d->data_offset > n ||
        n - d->data_offset < ulp::kSmb2HeaderSize)
      return out;
    const std::size_t o = d->data_offset;
    if (message[o] != 0xFE || message[o + 1] != 'S') return out;
    if (want("smb2.credits")) add(o + 14, o + 16);
    if (want("smb2.session_id")) add(o + 40, o + 48);
  }
  return out;
}

}  // namespace ddpscope::session
