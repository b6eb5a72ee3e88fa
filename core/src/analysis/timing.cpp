// SPDX-License-Identifier: GPL-2.0-or-later
#include "ddpscope/analysis/timing.h"

#include <algorithm>
#include <cmath>

namespace ddpscope {

std::string_view to_string(OpKind k) {
  switch (k) {
    case OpKind::rdma_read:
      return "rdma-read";
    case OpKind::rdma_read_first:
      return "rdma-read-first";
    case OpKind::atomic:
      return "atomic";
    case OpKind::nvme_command:
      return "nvme-command";
    case OpKind::iser_command:
      return "iser-command";
    case OpKind::rpc_call:
      return "rpc-call";
    case OpKind::smb_request:
      return "smb-request";
    case OpKind::ulp_command:
      return "ulp-command";
  }
  return "?";
}

OpKind op_kind_of_ulp(std::string_view decoder) {
  if (decoder == "nvme-rdma") return OpKind::nvme_command;
  if (decoder == "iser") return OpKind::iser_command;
  if (decoder == "rpc-rdma") return OpKind::rpc_call;
  if (decoder == "smb-direct") return OpKind::smb_request;
  return OpKind::ulp_command;
}

std::string_view to_string(StallKind k) {
  switch (k) {
    case StallKind::retransmission:
      return "retransmission";
    case StallKind::out_of_order:
      return "out-of-order";
    case StallKind::capture_loss:
      return "capture-loss";
    case StallKind::sctp_gap:
      return "sctp-gap";
    case StallKind::zero_window:
      return "zero-window";
    case StallKind::crc_drop:
      return "crc-drop";
    case StallKind::read_credit:
      return "read-credit-full";
  }
  return "?";
}

// ---- LatencyHistogram ----------------------------------------------------------------------

namespace {

// lower(i) = ceil(2^(i / 4)), nondecreasing; computed once.
const std::array<std::uint64_t, LatencyHistogram::kBuckets>& lower_bounds() {
  static const auto table = [] {
    std::array<std::uint64_t, LatencyHistogram::kBuckets> t{};
    for (std::size_t i = 0; i < t.size(); ++i) {
      const double v =
          std::ldexp(std::pow(2.0, static_cast<double>(i % 4) / 4.0), static_cast<int>(i / 4));
      t[i] = static_cast<std::uint64_t>(std::ceil(v));
      if (i > 0) t[i] = std::max(t[i], t[i - 1]);
    }
    return t;
  }();
  return table;
}

}  // namespace

std::uint64_t LatencyHistogram::lower(std::size_t i) {
  return i < kBuckets ? lower_bounds()[i] : UINT64_MAX;
}

std::size_t LatencyHistogram::bucket_of(std::uint64_t ns) {
  const auto& t = lower_bounds();
  const auto it = std::upper_bound(t.begin(), t.end(), ns);
  return it == t.begin() ? 0 : static_cast<std::size_t>(it - t.begin()) - 1;
}

void LatencyHistogram::add(std::uint64_t ns) {
  buckets_[bucket_of(ns)]++;
  count_++;
  min_ = std::min(min_, ns);
  max_ = std::max(max_, ns);
}

void LatencyHistogram::merge(const LatencyHistogram& other) {
  for (std::size_t i = 0; i < kBuckets; ++i)
    buckets_[i] += other.buckets_[i];
  count_ += other.count_;
  min_ = std::min(min_, other.min_);
  max_ = std::max(max_, other.max_);
}

namespace {

// Nearest rank of quantile q among n (1-based, within [1, n]).
std::uint64_t nearest_rank(double q, std::uint64_t n) {
  const double r = std::ceil(q * static_cast<double>(n));
  if (r < 1) return 1;
  if (r > static_cast<double>(n)) return n;
  return static_cast<std::uint64_t>(r);
}

}  // namespace

std::uint64_t LatencyHistogram::quantile(double q) const {
  if (count_ == 0) return 0;
  const std::uint64_t rank = nearest_rank(q, count_);
  if (rank == 1) return min_;  // the extremes are kept exactly
  if (rank == count_) return max_;
  std::uint64_t seen = 0;
  for (std::size_t i = 0; i < kBuckets; ++i) {
    seen += buckets_[i];
    if (seen < rank) continue;
    const double mid = std::ldexp(std::pow(2.0, (static_cast<double>(i % 4) + 0.5) / 4.0),
                                  static_cast<int>(i / 4));
    const auto v = mid >= 1.8e19 ? UINT64_MAX : static_cast<std::uint64_t>(std::llround(mid));
    return std::clamp(v, min(), max());
  }
  return max_;
}

std::uint64_t OperationStats::quantile(double q) const {
  if (estimated || exact.empty()) return histogram.quantile(q);
  std::vector<std::uint64_t> v = exact;
  const std::uint64_t rank = nearest_rank(q, v.size());
  auto nth = v.begin() + static_cast<std::ptrdiff_t>(rank - 1);
  std::nth_element(v.begin(), nth, v.end());
  return *nth;
}

// ---- Timing ----------------------------------------------------------------------------------

Timing::Timing(TimingOptions options, std::size_t max_samples)
    : options_(options), max_samples_(max_samples) {
  options_.top = std::max<std::size_t>(options_.top, 1);
  options_.interval_ns = std::max<std::uint64_t>(options_.interval_ns, 1);
  options_.max_intervals = std::max<std::size_t>(options_.max_intervals, 2);
}

Timing::StreamState& Timing::grow(std::uint32_t stream) {
  streams_.resize(stream + 1);
  return streams_[stream];
}

OperationStats& Timing::op(OpKind kind, std::uint32_t stream, int direction) {
  auto [it, fresh] = ops_.try_emplace({stream, kind, direction});
  if (fresh) {
    it->second.kind = kind;
    it->second.stream = stream;
    it->second.direction = direction;
  }
  return it->second;
}

void Timing::request(OpKind kind, std::uint32_t stream, int direction) {
  op(kind, stream, direction).requests++;
  if (kind == OpKind::rdma_read) op(OpKind::rdma_read_first, stream, direction).requests++;
}

void Timing::add_sample(OperationStats& s, const LatencySample& sample) {
  s.histogram.add(sample.ns);
  if (!s.estimated) {
    if (samples_ < max_samples_) {
      s.exact.push_back(sample.ns);
      samples_++;
    } else {
      // Past the shared cap: this kind's figures come from its histogram from now on, and its
      // samples go back to the budget.
      s.estimated = true;
      samples_ -= s.exact.size();
      std::vector<std::uint64_t>().swap(s.exact);
    }
  }
  if (sample.stalls.any()) {
    s.stalled++;
    for (std::size_t k = 0; k < kStallKinds; ++k)
      if (sample.stalls.events[k]) s.stalled_by[k]++;
  }
  auto& top = s.slowest;
  if (top.size() < options_.top || sample.ns > top.back().ns) {
    auto at = std::upper_bound(top.begin(), top.end(), sample.ns,
                               [](std::uint64_t ns, const LatencySample& x) { return ns > x.ns; });
    top.insert(at, sample);
    if (top.size() > options_.top) top.pop_back();
  }
}

LatencySample Timing::completion(OpKind kind, std::uint32_t stream, int direction,
                                 std::uint64_t request_frame, std::int64_t request_ns,
                                 std::uint64_t frame, std::int64_t ns) {
  LatencySample sample;
  sample.ns = operation_latency_ns(request_ns, ns);
  sample.request_frame = request_frame;
  sample.completion_frame = frame;
  sample.stalls = stalls_between(stream, request_ns, ns);
  add_sample(op(kind, stream, direction), sample);
  return sample;
}

StallCounts Timing::stalls_between(std::uint32_t stream, std::int64_t from, std::int64_t to) const {
  StallCounts out;
  if (stream >= streams_.size()) return out;
  const StreamState& st = streams_[stream];
  const std::size_t n = st.ring.size();
  if (n == 0) return out;
  // Newest first; events are in capture order.
  const std::size_t newest = st.next == 0 ? n - 1 : st.next - 1;
  // Walking newest first, the last kFirst events counted are the oldest: kept in a small ring.
  std::array<StallCounts::Event, StallCounts::kFirst> oldest{};
  std::size_t counted = 0;
  std::size_t k = 0;
  for (; k < n; ++k) {
    const StallEvent& e = st.ring[(newest + n - k) % n];
    if (e.ns < from) break;
    if (e.ns > to) continue;
    out.events[static_cast<std::size_t>(e.kind)]++;
    oldest[counted++ % StallCounts::kFirst] = StallCounts::Event{e.kind, e.frame};
  }
  out.incomplete = k == n && st.events > n;
  out.kept = static_cast<std::uint8_t>(std::min(counted, StallCounts::kFirst));
  for (std::size_t i = 0; i < out.kept; ++i)  // oldest first: the last written, backwards
    out.first[i] = oldest[(counted - 1 - i) % StallCounts::kFirst];
  return out;
}

void Timing::stall(std::uint32_t stream, int /*direction*/, StallKind kind, std::uint64_t frame,
                   std::int64_t ns) {
  StreamState& st = state(stream);
  const StallEvent e{ns, frame, kind};
  if (st.ring.size() < TimingOptions::kStallRing) {
    st.ring.push_back(e);
  } else {
    st.ring[st.next] = e;
    st.next = (st.next + 1) % TimingOptions::kStallRing;
  }
  st.events++;
  st.totals[static_cast<std::size_t>(kind)]++;
}

void Timing::window_change(std::uint32_t stream, int receiver_direction, bool zero,
                           std::uint64_t frame, std::int64_t ns) {
  StreamState& st = state(stream);
  bool& was = st.zero_window[receiver_direction & 1];
  if (zero && !was) {
    stall(stream, receiver_direction, StallKind::zero_window, frame, ns);
    zero_windows_++;
  } else if (!zero && was) {
    zero_windows_--;
  }
  was = zero;
}

void Timing::placed(std::uint32_t stream, int direction, std::optional<std::uint32_t> stag,
                    std::uint64_t octets, std::uint64_t frame, std::int64_t ns) {
  if (!origin_set_) {
    origin_set_ = true;
    origin_ = ns;
  }
  StreamState& st = state(stream);
  const int d = direction & 1;
  if (!st.series[d]) {
    st.series[d] = series_.size();
    ThroughputSeries s;
    s.stream = stream;
    s.direction = d;
    s.interval_ns = options_.interval_ns;
    s.first_ns = ns;
    series_.push_back(std::move(s));
  }
  ThroughputSeries& s = series_[*st.series[d]];
  std::uint64_t at = ns > origin_ ? static_cast<std::uint64_t>(ns - origin_) : 0;
  std::uint64_t i = at / s.interval_ns;
  while (i >= options_.max_intervals) {
    // Twice the interval: neighbours merged (the origin is shared, so pairs line up).
    for (std::size_t j = 0; j < s.octets.size(); ++j)
      s.octets[j / 2] = (j % 2 ? s.octets[j / 2] : 0) + s.octets[j];
    s.octets.resize((s.octets.size() + 1) / 2);
    s.interval_ns *= 2;
    i = at / s.interval_ns;
  }
  if (s.octets.size() <= i) s.octets.resize(i + 1);
  s.octets[i] += octets;
  if (s.segments > 0 && ns > s.last_ns) {
    const auto gap = static_cast<std::uint64_t>(ns - s.last_ns);
    if (gap >= options_.idle_threshold_ns) {
      s.idle_count++;
      s.idle_ns += gap;
      auto& top = s.longest_idle;
      if (top.size() < options_.top || gap > top.back().ns) {
        auto pos = std::upper_bound(top.begin(), top.end(), gap,
                                    [](std::uint64_t g, const IdleGap& x) { return g > x.ns; });
        top.insert(pos, IdleGap{s.last_ns, gap, s.last_frame, frame});
        if (top.size() > options_.top) top.pop_back();
      }
    }
  }
  s.total += octets;
  s.segments++;
  s.last_ns = ns;
  s.last_frame = frame;
  if (!stag) return;
  auto row = st.stag_rows[d].find(*stag);
  if (row == st.stag_rows[d].end()) {
    if (stags_.size() >= options_.max_stags) {
      stags_other_ += octets;
      return;
    }
    row = st.stag_rows[d].emplace(*stag, stags_.size()).first;
    StagTraffic t;
    t.stream = stream;
    t.direction = d;
    t.stag = *stag;
    t.first_ns = ns;
    t.first_frame = frame;
    stags_.push_back(t);
  }
  StagTraffic& t = stags_[row->second];
  t.octets += octets;
  t.segments++;
  t.last_ns = ns;
  t.last_frame = frame;
}

void Timing::swap_sides(std::uint32_t stream) {
  if (stream >= streams_.size() && ops_.empty()) return;
  StreamState& st = state(stream);
  std::swap(st.series[0], st.series[1]);
  std::swap(st.zero_window[0], st.zero_window[1]);
  std::swap(st.stag_rows[0], st.stag_rows[1]);
  for (int d = 0; d < 2; ++d) {
    if (st.series[d]) series_[*st.series[d]].direction = d;
    for (const auto& [stag, i] : st.stag_rows[d])
      stags_[i].direction = d;
  }
  std::vector<OperationStats> moved;
  for (auto it = ops_.lower_bound({stream, OpKind::rdma_read, 0});
       it != ops_.end() && std::get<0>(it->first) == stream;) {
    moved.push_back(std::move(it->second));
    it = ops_.erase(it);
  }
  for (auto& s : moved) {
    s.direction = 1 - s.direction;
    ops_.emplace(std::make_tuple(stream, s.kind, s.direction), std::move(s));
  }
}

std::vector<const ThroughputSeries*> Timing::series() const {
  std::vector<const ThroughputSeries*> out;
  for (const auto& s : series_)
    out.push_back(&s);
  std::sort(out.begin(), out.end(), [](const ThroughputSeries* a, const ThroughputSeries* b) {
    return std::tie(a->stream, a->direction) < std::tie(b->stream, b->direction);
  });
  return out;
}

std::vector<StallEvent> Timing::stall_events(std::uint32_t stream) const {
  std::vector<StallEvent> out;
  if (stream >= streams_.size()) return out;
  const StreamState& st = streams_[stream];
  out.reserve(st.ring.size());
  // Once full, the oldest is at `next`.
  for (std::size_t k = 0; k < st.ring.size(); ++k)
    out.push_back(st.ring[(st.next + k) % st.ring.size()]);
  return out;
}

std::array<std::uint64_t, kStallKinds> Timing::stall_totals(std::uint32_t stream) const {
  if (stream >= streams_.size()) return {};
  return streams_[stream].totals;
}

}  // namespace ddpscope
