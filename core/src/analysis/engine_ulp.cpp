// SPDX-License-Identifier: GPL-2.0-or-later
// Upper layers in the analysis: what the advertisement decoders (ulp/advert.h) find in a
// stream's Sends becomes regions with bounds (as a regions file's are enforced), named by the
// ULP and the command that advertised them, valid until the command's completion; and the
// checks every ULP shares, made here once:
//   ulp.access-mismatch      an RDMA Write into a buffer advertised for remote read only, or a
//                            Read Request of one advertised for remote write only;
//   ulp.incomplete-transfer  a successful completion before the command's data was all
//                            written into (read from) its buffers;
//   ulp.length-mismatch      the octets transferred differ from the command's own length, or
//                            exceed what its completion says (a residual underflow);
//   ulp.invalidate-mismatch  a completion in a Send with Invalidate naming another STag;
// and a key the completion ended (invalidated remotely, or by the host itself for a key the
// command asked to be invalidated) is invalid afterwards: rdmap.stag-invalidated-use.
// Capture loss on the stream while a command is outstanding makes what its completion finds a
// note (consequence_of gap/crc): the missing octets may have carried its data, or the
// completion and a newer command that advertised the same STag for the other direction.
#include <algorithm>

#include "ddpscope/common/bytes.h"
#include "ddpscope/ddp/rules.h"
#include "engine.h"

namespace ddpscope {

namespace {

std::string access_name(std::uint8_t a) {
  const bool r = a & ddp::access::remote_read;
  const bool w = a & ddp::access::remote_write;
  if (r && w) return "remote read and write";
  if (r) return "remote read only";
  if (w) return "remote write only";
  return "no remote access";
}

}  // namespace

void UlpRegionTrack::add(std::uint64_t to, std::uint64_t len) {
  if (capped || len == 0) return;
  const std::uint64_t end_r = base + length < base ? UINT64_MAX : base + length;
  const std::uint64_t end_s = to + len < to ? UINT64_MAX : to + len;
  std::uint64_t b = std::max(to, base);
  std::uint64_t e = std::min(end_s, end_r);
  if (b >= e) return;
  // Merge with every extent [x, y) that touches [b, e).
  auto it = done.upper_bound(b);
  if (it != done.begin() && std::prev(it)->second >= b) --it;
  while (it != done.end() && it->first <= e) {
    b = std::min(b, it->first);
    e = std::max(e, it->second);
    covered -= it->second - it->first;
    it = done.erase(it);
  }
  if (done.size() >= kMaxExtents) {
    capped = true;
    return;
  }
  done.emplace(b, e);
  covered += e - b;
}

UlpStream& Analyzer::Impl::new_ulp(Connection& c) {
  c.ulp = std::make_unique<UlpStream>(advertisers);
  return *c.ulp;
}

void Analyzer::Impl::ulp_setup(Connection& c) {
  const StreamModel& sm = model.streams[c.stream];
  std::optional<ByteView> request, reply;
  if (sm.dirs[0].mpa_frame) request = sm.dirs[0].mpa_frame->ulp_private_data();
  if (sm.dirs[1].mpa_frame) reply = sm.dirs[1].mpa_frame->ulp_private_data();
  ulp_setup(c, request, reply);
}

// The stream's set-up (an MPA Request/Reply, or SCTP's Session Initiate/Accept): the ULP part
// of each side's private data, i.e. the RDMA CM private data.
void Analyzer::Impl::ulp_setup(Connection& c, std::optional<ByteView> request_pd,
                               std::optional<ByteView> reply_pd) {
  if (!options.decode_advertisements) return;
  StreamModel& sm = model.streams[c.stream];
  UlpSetup s;
  if (request_pd) s.request = Bytes(request_pd->begin(), request_pd->end());
  if (reply_pd) s.reply = Bytes(reply_pd->begin(), reply_pd->end());
  s.initiator = sm.client;
  s.responder = sm.server;
  UlpStream& u = ulp_of(c);
  u.decoders.setup(s);
  if (const auto i = u.decoders.claimed()) {
    sm.ulp = std::string(u.decoders.decoder(*i).name());
    sm.ulp_detail = u.decoders.state(*i)->describe();
  }
}

void Analyzer::Impl::advertisements(Connection& c, int dir, PduEvent& ev, const Ctx& ctx,
                                    std::uint8_t opcode, ByteView body, std::uint64_t length,
                                    std::uint32_t msn, std::uint32_t invalidate_stag,
                                    std::size_t record) {
  UlpStream& u = ulp_of(c);
  // No decoder would read it (none claimed the stream, those asked read other sizes) and the
  // opening is not judged on it: nothing to build a context for.
  if (!u.decoders.wants(body.size(), msn)) return;
  StreamModel& sm = model.streams[c.stream];
  AdvertContext actx;
  actx.opcode = opcode;
  actx.sender = sm.dirs[dir].from;
  actx.receiver = sm.dirs[dir].to;
  actx.stream = c.stream;
  actx.length = length;
  actx.msn = msn;
  const bool with_invalidate =
      opcode == static_cast<std::uint8_t>(wire::Opcode::send_invalidate) ||
      opcode == static_cast<std::uint8_t>(wire::Opcode::send_se_invalidate);
  actx.invalidate_stag = with_invalidate ? invalidate_stag : 0;
  if (!sm.mid_stream) actx.from_initiator = dir == 0;
  auto found = u.decoders.decode(actx, body);
  if (const auto i = u.decoders.claimed()) {
    // Named (again) while decoding: a Connect's in-capsule data adds to what the set-up said.
    if (sm.ulp.empty()) sm.ulp = std::string(u.decoders.decoder(*i).name());
    if (!u.detail_stale) {
      u.detail_stale = true;
      ulp_stale.push_back(&c);
    }
  }
  if (record != kNoIndex && record < model.messages.size())
    name_message(u, model.messages[record], found);
  for (auto& d : found) {
    for (const auto& a : d.events.regions)
      ulp_learn(c, dir, ctx, d.decoder, a, std::string());
    for (auto& cmd : d.events.commands)
      ulp_command(c, dir, ctx, d.decoder, cmd);
    for (const auto& done : d.events.completions)
      ulp_complete(c, dir, ev, ctx, d.decoder, done, opcode, invalidate_stag);
  }
}

// The message's name for views (Model::ulp_name): what its decoder found, a completion named
// by its command while that is still outstanding.
void Analyzer::Impl::name_message(const UlpStream& u, MessageRecord& m,
                                  const std::vector<UlpStreamDecoders::Decoded>& found) {
  std::string name;
  for (const auto& d : found) {
    const auto command = [&](std::uint64_t id) {
      auto it = u.outstanding.find({d.decoder, id});
      return it == u.outstanding.end() ? std::string() : it->second.name;
    };
    const std::string part = ulp_message_name(advertisers[d.decoder]->name(), d.events, command);
    if (part.empty()) continue;
    name += (name.empty() ? "" : "; ") + part;
  }
  if (name.empty()) return;
  if (name.size() > kMaxMessageName) name = name.substr(0, kMaxMessageName);
  if (model.message_names.size() + name.size() + 1 >= UINT32_MAX) return;
  m.ulp_name = static_cast<std::uint32_t>(model.message_names.size() + 1);
  model.message_names += name;
  model.message_names += '\0';
}

void Analyzer::Impl::refresh_ulp_details() {
  for (Connection* c : ulp_stale) {
    UlpStream& u = *c->ulp;
    u.detail_stale = false;
    if (const auto i = u.decoders.claimed())
      model.streams[c->stream].ulp_detail = u.decoders.state(*i)->describe();
  }
  ulp_stale.clear();
}

// A region an advertisement names becomes the region of its STag at its owner, replacing what
// was known of it (a regions file excepted: the user's word wins).
void Analyzer::Impl::ulp_learn(Connection& c, int dir, const Ctx& ctx, std::size_t decoder,
                               const AdvertisedRegion& a, const std::string& command) {
  ShadowBuffer* b = region_for(c, dir, RegionKey{a.owner, a.stag});
  if (!b) return;
  const std::string_view ulp = advertisers[decoder]->name();
  if (b->source != RegionSource::regions_file) {
    b->source = RegionSource::advertisement;
    b->origin = std::string(ulp) + " advertisement (frame " + std::to_string(ctx.frame) + ")";
    b->base = a.base;
    b->length = a.length;
    b->bounds_enforced = true;
    b->stream = c.stream;
    b->stream_scoped = a.per_connection;
    b->learned_frame = ctx.frame;
    b->invalidated = false;
    b->invalidated_frame = 0;
  }
  if (!command.empty()) {
    b->ulp = std::string(ulp);
    b->command = command;
    b->ulp_access = a.access;
    b->completed_frame = 0;
  }
}

void Analyzer::Impl::ulp_command(Connection& c, int dir, const Ctx& ctx, std::size_t decoder,
                                 UlpCommand& cmd) {
  UlpStream& u = ulp_of(c);
  const UlpStream::CommandKey key{decoder, cmd.id};
  // A command id in use again: the earlier command's completion was not seen (lost, or before
  // a capture that starts late); it is forgotten unchecked.
  if (u.outstanding.count(key)) ulp_forget(u, key);
  const std::size_t need = 1 + cmd.regions.size();
  const bool track = u.tracked + need <= options.limits.max_ulp_outstanding;
  if (!track) limit_reached("max_ulp_outstanding", Ctx{c.stream, dir, ctx.frame, {}});
  UlpCommandTrack t;
  t.decoder = decoder;
  t.id = cmd.id;
  t.name = cmd.name;
  t.operation = cmd.operation.empty() ? cmd.name : cmd.operation;
  t.frame = ctx.frame;
  t.ts_ns = cur_ts;
  t.pdu = cur_ev ? cur_ev->id : 0;
  t.direction = dir;
  t.transfer_length = cmd.transfer_length;
  t.partial = cmd.partial;
  for (AdvertisedRegion& a : cmd.regions) {
    const RegionKey rk{a.owner, a.stag};
    // Other outstanding commands with the same key (one registration for several buffers, as
    // a global rkey): the region is what they advertise together, so none of them is judged
    // by another's bounds.
    AdvertisedRegion merged = a;
    if (auto it = u.by_key.find(rk); it != u.by_key.end()) {
      for (const auto& other : it->second) {
        auto o = u.outstanding.find(other);
        if (o == u.outstanding.end()) continue;
        for (const auto& r : o->second.regions) {
          if (!(r.key == rk)) continue;
          const std::uint64_t lo = std::min(merged.base, r.base);
          const std::uint64_t hi = std::max(merged.base + merged.length, r.base + r.length);
          merged.base = lo;
          merged.length = hi - lo;
          if (merged.access && r.access)
            merged.access = *merged.access | *r.access;
          else
            merged.access.reset();
          merged.invalidate = false;
        }
      }
    }
    ulp_learn(c, dir, ctx, decoder, merged, cmd.name);
    if (!track) continue;
    UlpRegionTrack r;
    r.key = rk;
    r.base = a.base;
    r.length = a.length;
    r.access = a.access;
    r.invalidate = a.invalidate;
    t.regions.push_back(std::move(r));
    auto& list = u.by_key[rk];
    if (std::find(list.begin(), list.end(), key) == list.end()) list.push_back(key);
  }
  if (track) {
    if (timing) timing->request(op_kind_of_ulp(advertisers[decoder]->name()), c.stream, dir);
    u.tracked += need;
    u.outstanding.emplace(key, std::move(t));
  }
}

void Analyzer::Impl::ulp_forget(UlpStream& u, const UlpStream::CommandKey& k) {
  auto it = u.outstanding.find(k);
  if (it == u.outstanding.end()) return;
  for (const auto& r : it->second.regions) {
    auto bk = u.by_key.find(r.key);
    if (bk == u.by_key.end()) continue;
    auto& list = bk->second;
    list.erase(std::remove(list.begin(), list.end(), k), list.end());
    if (list.empty()) u.by_key.erase(bk);
  }
  u.tracked -= 1 + it->second.regions.size();
  u.outstanding.erase(it);
}

void Analyzer::Impl::ulp_complete(Connection& c, int /*dir*/, PduEvent& ev, const Ctx& ctx,
                                  std::size_t decoder, const UlpCompletion& done,
                                  std::uint8_t opcode, std::uint32_t invalidate_stag) {
  UlpStream& u = ulp_of(c);
  const UlpStream::CommandKey key{decoder, done.id};
  auto it = u.outstanding.find(key);
  if (it == u.outstanding.end()) return;  // its command was not seen (or not tracked)
  UlpCommandTrack& t = it->second;
  if (timing) {
    const OpKind kind = op_kind_of_ulp(advertisers[decoder]->name());
    const LatencySample s =
        timing->completion(kind, c.stream, t.direction, t.frame, t.ts_ns, cur_frame, cur_ts);
    ev.operations.push_back({kind, t.direction, s.request_frame, t.pdu, s.ns, t.operation, t.name});
  }
  const Consequence lost = t.lost;
  const bool with_invalidate =
      opcode == static_cast<std::uint8_t>(wire::Opcode::send_invalidate) ||
      opcode == static_cast<std::uint8_t>(wire::Opcode::send_se_invalidate);
  if (with_invalidate) {
    const bool own = std::any_of(t.regions.begin(), t.regions.end(), [&](const UlpRegionTrack& r) {
      return r.key.stag == invalidate_stag;
    });
    if (!own) {
      std::string keys;
      for (const auto& r : t.regions)
        keys += (keys.empty() ? "" : ", ") + hex_stag(r.key.stag);
      report(FindingId::ulp_invalidate_mismatch, ctx,
             "completion of " + t.name + " (frame " + std::to_string(t.frame) +
                 ") invalidates STag " + hex_stag(invalidate_stag) + "; the command advertised " +
                 (keys.empty() ? "no STag" : keys));
    }
  }
  // The transfer: every advertised octet written (read), at a completion that says the command
  // succeeded. A command whose descriptors were not all read, or whose coverage was capped, is
  // not judged.
  bool judged = done.success && !t.partial && !t.regions.empty();
  std::uint64_t advertised = 0, covered = 0;
  for (const auto& r : t.regions) {
    judged = judged && !r.capped;
    advertised += r.length;
    covered += r.covered;
  }
  if (judged) {
    std::uint64_t want = t.transfer_length ? std::min(*t.transfer_length, advertised) : advertised;
    want -= std::min(done.residual, want);
    if (done.transferred) want = std::min(want, *done.transferred);
    const bool said = done.residual > 0 || done.transferred;
    const std::string what = t.name + " (frame " + std::to_string(t.frame) + ")";
    const std::string after =
        lost != Consequence::none
            ? std::string(" (octets of the stream went unseen while it was outstanding)")
            : std::string();
    if (covered < want) {
      report(FindingId::ulp_incomplete_transfer, ctx,
             "completion of " + what + " after " + std::to_string(covered) + " of " +
                 std::to_string(want) + " octets of its data were transferred" + after,
             lost);
    } else if (said && covered > want) {
      const std::string how =
          done.transferred ? std::string() : " (residual " + std::to_string(done.residual) + ")";
      report(FindingId::ulp_length_mismatch, ctx,
             "completion of " + what + " says " + std::to_string(want) +
                 " octets were transferred" + how + "; its buffers received " +
                 std::to_string(covered) + after,
             lost);
    } else if (t.transfer_length && covered != *t.transfer_length) {
      report(FindingId::ulp_length_mismatch, ctx,
             what + " transfers " + std::to_string(*t.transfer_length) + " octets; its buffers (" +
                 std::to_string(advertised) + " octets) received " + std::to_string(covered) +
                 after,
             lost);
    }
  }
  // The command's lifetime ends: its keys are ended by the completion, and those it asked to
  // be invalidated are invalid now (remotely by a Send with Invalidate, or by the host itself
  // once it has the response, as Linux nvme-rdma does).
  const std::string name = t.name;
  const auto regions = t.regions;
  ulp_forget(u, key);
  for (const auto& r : regions) {
    ShadowBuffer* b = find_region(r.key);
    if (!b || b->command != name) continue;
    b->completed_frame = ctx.frame;
    const bool shared = u.by_key.count(r.key) > 0;
    if (r.invalidate && !shared && !b->invalidated) {
      b->invalidated = true;
      b->invalidated_frame = ctx.frame;
    }
  }
}

void Analyzer::Impl::ulp_tagged(Connection& c, int dir, const PduEvent& ev, const Ctx& ctx,
                                const rdmap::SegmentStep& step) {
  if (!c.ulp || c.ulp->by_key.empty()) return;
  if (step.opcode != static_cast<std::uint8_t>(wire::Opcode::rdma_write)) return;
  UlpStream& u = *c.ulp;
  const auto& h = ev.ddp->header;
  const RegionKey rk{model.streams[c.stream].dirs[dir].to.addr, h.stag};
  auto bk = u.by_key.find(rk);
  if (bk == u.by_key.end()) return;
  const std::uint64_t len = ev.ddp->payload.size();
  for (const auto& k : bk->second) {
    auto it = u.outstanding.find(k);
    if (it == u.outstanding.end()) continue;
    for (auto& r : it->second.regions) {
      if (!(r.key == rk)) continue;
      if (r.access && !(*r.access & ddp::access::remote_write) && !r.access_reported) {
        r.access_reported = true;
        report(FindingId::ulp_access_mismatch, ctx,
               "RDMA Write to STag " + hex_stag(h.stag) + ", which " + it->second.name +
                   " (frame " + std::to_string(it->second.frame) + ") advertised for " +
                   access_name(*r.access),
               it->second.lost, finding_spec(FindingId::ulp_access_mismatch).terminate);
      }
      if (step.placed) r.add(h.to, len);
    }
  }
}

void Analyzer::Impl::ulp_read_request(Connection& c, int dir, const wire::ReadRequest& rr,
                                      const Ctx& ctx) {
  if (!c.ulp || c.ulp->by_key.empty()) return;
  UlpStream& u = *c.ulp;
  const DirectionModel& dm = model.streams[c.stream].dirs[dir];
  const RegionKey rk{dm.to.addr, rr.source_stag};
  auto bk = u.by_key.find(rk);
  if (bk == u.by_key.end()) return;
  std::string command;
  for (const auto& k : bk->second) {
    auto it = u.outstanding.find(k);
    if (it == u.outstanding.end()) continue;
    for (auto& r : it->second.regions) {
      if (!(r.key == rk)) continue;
      if (r.access && !(*r.access & ddp::access::remote_read) && !r.access_reported) {
        r.access_reported = true;
        report(FindingId::ulp_access_mismatch, ctx,
               "Read Request of STag " + hex_stag(rr.source_stag) + ", which " + it->second.name +
                   " (frame " + std::to_string(it->second.frame) + ") advertised for " +
                   access_name(*r.access),
               it->second.lost, finding_spec(FindingId::ulp_access_mismatch).terminate);
      }
      r.add(rr.source_to, rr.size);
      command = it->second.name;
    }
  }
  // The requester's own sink buffer is no advertisement, but it serves the same command.
  if (command.empty()) return;
  if (ShadowBuffer* sink = find_region(RegionKey{dm.from.addr, rr.sink_stag})) {
    if (sink->source == RegionSource::read_request_sink) {
      sink->ulp = std::string(advertisers[bk->second.front().first]->name());
      sink->command = command + ": the Read's sink";
    }
  }
}

void Analyzer::Impl::ulp_lost(Connection& c, Consequence cause) {
  if (!c.ulp) return;
  for (auto& [k, t] : c.ulp->outstanding)
    if (t.lost == Consequence::none) t.lost = cause;
}

}  // namespace ddpscope
