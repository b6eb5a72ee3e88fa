// SPDX-License-Identifier: GPL-2.0-or-later
// A sharded analysis (analyzer.h, the constructor with `shards`): N engines, each on the streams
// Analyzer::shard_of gives it, and the merge of their models into the one engine's. No thread
// here: the host runs each shard's feed on its own thread (capture/feed.cpp); the shards share
// only their PageLogs (engine.h), written by one and read by the others through an atomic size.
//
// What is shared by streams, and how the merge keeps it as one engine has it:
//   * stream numbers: a stream's Stamp of creation orders the streams of all shards (one event,
//     one shard: ties are within a shard, in its own order). Every stream number in the model is
//     renumbered (streams, findings, shadow buffers and their placements).
//   * findings: in Stamp order (one engine reports them in the order of the events that caused
//     them, and finish() in the order of associations, then streams); the engine.limit-reached
//     finding of a limit two shards reached kept once; the cap (max_findings) applied to the
//     merged list. finish() runs per shard with the global indices of its associations and
//     streams, and with the last frame one engine saw (cur_frame: what the end of input is
//     reported at).
//   * frame counters, the notes of layers tied to no stream: the facade's engine (the host's
//     reading thread), with their events' Stamps.
//   * shadow buffers (owner host, STag): a buffer looked up by the streams of one shard only is
//     that shard's; one looked up by two shards makes the merge inexact (one engine would have
//     had one buffer for both: stag-wrong-stream, conflicting placements, learned regions). A
//     capture whose connections share STags on one host (a ULP session over several
//     connections whose regions cross them, reconnections advertising the same STag on another
//     4-tuple) is therefore analysed again by one engine: routing such connections to one shard
//     would need to know the STags before the frames that use them. A reconnection on the same
//     4-tuple goes to the same shard (shard_of hashes the endpoints).
//   * the payload retention cap: PageLogs (engine.h).
//   * the budgets of all streams (max_streams, max_regions, max_message_records,
//     max_pending_total, max_history_total, max_resync_total): exact while the shards' sum of
//     what each asked at most stays within the cap (then one engine never reached it either);
//     otherwise inexact.
#include <algorithm>
#include <numeric>

#include "engine.h"

namespace ddpscope {

namespace {

std::uint64_t fnv(std::uint64_t h, const net::Endpoint& e) {
  auto mix = [&h](std::uint8_t b) {
    h ^= b;
    h *= 1099511628211ull;
  };
  mix(e.addr.v6 ? 6 : 4);
  for (std::uint8_t b : e.addr.bytes)
    mix(b);
  mix(static_cast<std::uint8_t>(e.port >> 8));
  mix(static_cast<std::uint8_t>(e.port));
  return h;
}

// Limits whose budget all streams share: reached in a shard, the merge cannot tell where one
// engine would have reached it.
bool shared_budget(std::string_view limit) {
  return limit == "max_streams" || limit == "max_regions" || limit == "max_message_records" ||
         limit == "max_pending_total" || limit == "max_history_total" ||
         limit == "max_resync_total";
}

}  // namespace

unsigned Analyzer::shard_of(const net::Endpoint& a, const net::Endpoint& b, unsigned shards) {
  if (shards <= 1) return 0;
  const bool ab = a < b;
  const std::uint64_t h = fnv(fnv(14695981039346656037ull, ab ? a : b), ab ? b : a);
  return static_cast<unsigned>((h ^ (h >> 29)) % shards);
}

unsigned Analyzer::shard_of(const net::FrameDecode& d, unsigned shards) {
  switch (d.status) {
    case net::FrameStatus::tcp:
      return shard_of(d.tcp.src, d.tcp.dst, shards);
    case net::FrameStatus::sctp: {
      // The association's endpoints, as the engine keys it (engine_sctp.cpp: association_for).
      const ByteView p = d.sctp.packet;
      if (p.size() < 4) return 0;  // malformed: counted by whichever shard
      const net::Endpoint src{d.sctp.src, static_cast<std::uint16_t>(p[0] << 8 | p[1])};
      const net::Endpoint dst{d.sctp.dst, static_cast<std::uint16_t>(p[2] << 8 | p[3])};
      return shard_of(src, dst, shards);
    }
    default:
      return kNoShard;
  }
}

void Analyzer::Impl::make_shards(unsigned n) {
  if (n <= 1) return;
  if (options.timing) {
    unsharded_reason = "the timing model is built by one engine";
    return;
  }
  if (options.message_records) {
    unsharded_reason = "message records are kept by one engine";
    return;
  }
  if (observer) {
    unsharded_reason = "an observer sees one engine";
    return;
  }
  const std::size_t page_cap = options.limits.payload_retention / ShadowBuffer::kPageSize;
  if (page_cap > (std::size_t{1} << 26)) {
    unsharded_reason = "payload_retention past 256 GiB";
    return;
  }
  shard = std::make_unique<ShardState>(0, page_logs);
  for (unsigned i = 0; i < n; ++i) {
    auto e = std::make_unique<Impl>(options);
    e->shard = std::make_unique<ShardState>(page_cap, page_logs);
    e->model.memory.set_page_gate(&e->shard->gate);
    page_logs.push_back(&e->shard->log);
    shards.push_back(std::move(e));
  }
}

void Analyzer::Impl::finish_shards() {
  const unsigned n = static_cast<unsigned>(shards.size());
  struct Ref {
    Stamp stamp;
    unsigned shard;
    std::uint32_t local;
    auto operator<=>(const Ref&) const = default;
  };
  auto order = [&](auto stamps_of) {
    std::vector<Ref> refs;
    for (unsigned i = 0; i < n; ++i) {
      const std::vector<Stamp>& st = stamps_of(*shards[i]);
      for (std::uint32_t j = 0; j < st.size(); ++j)
        refs.push_back({st[j], i, j});
    }
    std::sort(refs.begin(), refs.end());
    return refs;
  };
  const auto streams =
      order([](Impl& e) -> const std::vector<Stamp>& { return e.shard->stream_stamps; });
  const auto assocs_order =
      order([](Impl& e) -> const std::vector<Stamp>& { return e.shard->assoc_stamps; });
  for (auto& e : shards) {
    e->shard->finish_conn.assign(e->shard->stream_stamps.size(), 0);
    e->shard->finish_assoc.assign(e->shard->assoc_stamps.size(), 0);
  }
  for (std::size_t g = 0; g < streams.size(); ++g)
    shards[streams[g].shard]->shard->finish_conn[streams[g].local] = g;
  for (std::size_t g = 0; g < assocs_order.size(); ++g)
    shards[assocs_order[g].shard]->shard->finish_assoc[assocs_order[g].local] = g;
  // The end of input is where one engine's last TCP or SCTP frame left it.
  const Impl* last = nullptr;
  for (auto& e : shards)
    if (e->shard->last_seq && (!last || e->shard->last_seq > last->shard->last_seq)) last = e.get();
  for (auto& e : shards) {
    if (last) {
      e->cur_frame = last->cur_frame;
      e->cur_ts = last->cur_ts;
    }
    e->finish();
    e->refresh_ulp_details();
  }
  // A stream begun by finish() would be numbered after all others by one engine.
  std::vector<std::vector<std::uint32_t>> to_global(n);
  for (unsigned i = 0; i < n; ++i)
    to_global[i].assign(shards[i]->model.streams.size(), UINT32_MAX);
  for (std::size_t g = 0; g < streams.size(); ++g)
    to_global[streams[g].shard][streams[g].local] = static_cast<std::uint32_t>(g);
  for (unsigned i = 0; i < n; ++i)
    if (shards[i]->model.streams.size() != shards[i]->shard->stream_stamps.size()) {
      exact = false;
      inexact_reason = "a stream began at the end of input";
    }
  merge_shards_with(streams.size(), to_global);
}

void Analyzer::Impl::merge_shards_with(std::size_t stream_count,
                                       const std::vector<std::vector<std::uint32_t>>& to_global) {
  const unsigned n = static_cast<unsigned>(shards.size());
  const Limits& lim = options.limits;
  auto inexact = [this](std::string why) {
    if (exact) inexact_reason = std::move(why);
    exact = false;
  };
  auto map_of = [&](unsigned i) {
    return [&to_global, i](std::uint32_t s) {
      return s < to_global[i].size() && to_global[i][s] != UINT32_MAX ? to_global[i][s] : s;
    };
  };

  Model m;
  m.sink_profile = model.sink_profile;
  m.frames = model.frames;
  m.bytes = model.bytes;
  m.frames_not_tcp = model.frames_not_tcp;
  m.frames_unsupported = model.frames_unsupported;
  m.frames_malformed = model.frames_malformed;
  m.frames_sctp = model.frames_sctp;
  m.esp_analysed = model.esp_analysed;
  m.message_count = model.message_count;
  m.finding_counts = model.finding_counts;
  m.severity_counts = model.severity_counts;
  std::size_t conns_total = 0, assocs_total = 0, history = 0, pending = 0, resync = 0,
              sctp_held = 0;
  for (auto& e : shards) {
    const Model& s = e->model;
    m.frames_malformed += s.frames_malformed;
    m.frames_sctp += s.frames_sctp;
    m.esp_analysed = m.esp_analysed || s.esp_analysed;
    m.message_count += s.message_count;
    for (std::size_t k = 0; k < kFindingCount; ++k)
      m.finding_counts[k] += s.finding_counts[k];
    for (std::size_t k = 0; k < m.severity_counts.size(); ++k)
      m.severity_counts[k] += s.severity_counts[k];
    conns_total += e->conns.size();
    assocs_total += e->assocs.size();
    history += e->history_budget.used;
    pending += e->shard->pending_peak;
    resync += e->shard->resync_peak;
    sctp_held += e->shard->sctp_held_peak;
    for (const auto& l : e->limits_reported)
      if (shared_budget(l)) inexact("a shard reached " + l);
  }
  if (conns_total > lim.max_streams || assocs_total > lim.max_streams)
    inexact("the shards' streams pass max_streams");
  if (m.message_count > lim.max_message_records)
    inexact("the shards' messages pass max_message_records");
  if (history + lim.retransmission_history > lim.max_history_total)
    inexact("the shards' retransmission histories may pass max_history_total");
  if (pending > lim.max_pending_total)
    inexact("the shards' held octets may pass max_pending_total");
  if (resync > lim.max_resync_total) inexact("the shards' resync octets may pass max_resync_total");
  if (sctp_held > lim.max_pending_total)
    inexact("the shards' held SCTP octets may pass max_pending_total");

  // Streams, by their global number.
  m.streams.resize(stream_count);
  for (unsigned i = 0; i < n; ++i) {
    auto& ss = shards[i]->model.streams;
    for (std::uint32_t j = 0; j < ss.size() && j < to_global[i].size(); ++j) {
      const std::uint32_t g = to_global[i][j];
      if (g == UINT32_MAX) continue;
      m.streams[g] = std::move(ss[j]);
      m.streams[g].id = g;
    }
    for (std::uint32_t named : shards[i]->shard->named_streams)
      if (map_of(i)(named) != named)
        inexact("a finding names stream " + std::to_string(named) + ", renumbered by the merge");
  }

  // Findings in Stamp order; a limit reached in two shards once; the cap on the merged list.
  struct Ref {
    Stamp stamp;
    unsigned src;  // 0: the facade's, 1 + i: shard i's
    std::size_t idx;
    auto operator<=>(const Ref&) const = default;
  };
  auto engine_of = [&](unsigned src) -> Impl& { return src == 0 ? *this : *shards[src - 1]; };
  std::vector<Ref> refs;
  bool any_dropped = false;
  for (unsigned src = 0; src <= n; ++src) {
    Impl& e = engine_of(src);
    for (std::size_t k = 0; k < e.model.findings.size(); ++k)
      refs.push_back({e.shard->finding_stamps[k], src, k});
    any_dropped = any_dropped || e.model.findings_dropped > 0;
  }
  std::sort(refs.begin(), refs.end());
  std::map<std::string, unsigned, std::less<>> limit_shards;
  for (auto& e : shards)
    for (const auto& l : e->limits_reported)
      limit_shards[l]++;
  const Severity limit_severity = finding_spec(FindingId::engine_limit_reached).severity;
  bool twice = false;
  for (const auto& [l, count] : limit_shards)
    if (count > 1) {
      twice = true;
      m.finding_counts[static_cast<std::size_t>(FindingId::engine_limit_reached)] -= count - 1;
      m.severity_counts[static_cast<std::size_t>(limit_severity)] -= count - 1;
    }
  if (twice && any_dropped) inexact("a limit reached in two shards, past max_findings");
  std::set<std::string, std::less<>> limits_seen;
  std::vector<Ref> kept;
  for (const Ref& r : refs) {
    const Finding& f = engine_of(r.src).model.findings[r.idx];
    if (f.id == FindingId::engine_limit_reached && r.src > 0 &&
        !limits_seen.insert(f.message).second)
      continue;
    kept.push_back(r);
  }
  if (kept.size() > lim.max_findings) kept.resize(lim.max_findings);
  if (any_dropped) {
    // Each source kept its first max_findings; the merged list needs, of a source that dropped
    // some, none past the last it kept.
    for (unsigned src = 0; src <= n; ++src) {
      Impl& e = engine_of(src);
      if (e.model.findings_dropped == 0) continue;
      if (kept.size() < lim.max_findings || e.model.findings.empty() ||
          Ref{e.shard->finding_stamps.back(), src, e.model.findings.size() - 1} < kept.back())
        inexact("findings past max_findings in a shard");
    }
  }
  m.findings.reserve(kept.size());
  for (const Ref& r : kept) {
    Finding f = std::move(engine_of(r.src).model.findings[r.idx]);
    if (r.src > 0 && f.stream != UINT32_MAX) f.stream = map_of(r.src - 1)(f.stream);
    m.findings.push_back(std::move(f));
  }
  const std::uint64_t reported =
      std::accumulate(m.severity_counts.begin(), m.severity_counts.end(), std::uint64_t{0});
  m.findings_dropped = reported - m.findings.size();

  // Shadow buffers: each from the one shard that used it (else any: as the regions file made
  // it); past the retention cap in capture order, pages dropped.
  std::map<RegionKey, unsigned> user;
  for (unsigned i = 0; i < n; ++i)
    for (const RegionKey& k : shards[i]->shard->touched) {
      auto [it, fresh] = user.emplace(k, i);
      if (!fresh && it->second != i)
        inexact("STag " + hex_stag(k.stag) + " of " + k.owner.to_string() +
                " is used by the streams of two shards");
    }
  // The regions file's regions without an owner are made for a host when one engine first sees
  // it: a shard that looked up such an STag of a host it never saw (an owner named by an
  // advertisement, not an endpoint) would miss the one another shard made.
  if (std::any_of(user_regions.begin(), user_regions.end(),
                  [](const RegionSpec& r) { return !r.owner; }))
    for (unsigned i = 0; i < n; ++i)
      for (const RegionKey& k : shards[i]->shard->touched)
        if (!shards[i]->shard->ensured.count(k.owner))
          inexact("STag " + hex_stag(k.stag) + " of " + k.owner.to_string() +
                  ", a host whose regions the regions file gives, used before its shard saw it");
  const std::size_t page_cap = lim.payload_retention / ShadowBuffer::kPageSize;
  std::vector<std::uint32_t> pages_kept(n);
  {
    std::vector<std::pair<Stamp, unsigned>> all;
    for (unsigned i = 0; i < n; ++i) {
      const PageLog& log = shards[i]->shard->log;
      for (std::size_t k = 0; k < log.size(); ++k)
        all.emplace_back(log.at(k), i);
    }
    std::stable_sort(all.begin(), all.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    for (std::size_t k = 0; k < all.size() && k < page_cap; ++k)
      pages_kept[all[k].second]++;
  }
  for (unsigned i = 0; i < n; ++i) {
    if (shards[i]->shard->gate.compared_max > pages_kept[i])
      inexact("content compared with a page retained past payload_retention");
    if (shards[i]->shard->regions_capped) inexact("a shard reached max_regions");
  }
  m.memory.set_retention_cap(lim.payload_retention);
  m.memory.set_range_cap(lim.max_ranges_per_region);
  m.memory.set_keep_ranges(options.placement_ranges);
  for (unsigned i = 0; i < n; ++i) {
    auto buffers = shards[i]->model.memory.release_buffers();
    for (auto& [key, b] : buffers) {
      const auto it = user.find(key);
      if (it != user.end() && it->second != i) continue;
      b.drop_pages_after(pages_kept[i]);
      b.renumber_streams(map_of(i));
      m.memory.adopt(std::move(b));  // false: another shard's copy of a regions file region
    }
  }
  if (m.memory.size() > lim.max_regions) inexact("the shards' regions pass max_regions");
  model = std::move(m);
}

}  // namespace ddpscope
