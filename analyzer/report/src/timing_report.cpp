// SPDX-License-Identifier: GPL-2.0-or-later
// The timing model (core's analysis/timing.h) as the CLI shows it: the report's "timing" object,
// the text report's timing section, and the tables of `ddpscope timing`.
#include <algorithm>
#include <cstdio>
#include <map>
#include <ostream>
#include <sstream>

#include "ddpscope/report/report.h"

namespace ddpscope::report {

using nlohmann::json;

namespace {

const char* direction_name(int d) {
  return d == 0 ? "client-to-server" : "server-to-client";
}

// One row of latency figures: one OperationStats, or several merged (--by ulp).
struct LatencyRow {
  OpKind kind = OpKind::rdma_read;
  std::optional<std::uint32_t> stream;
  std::optional<int> direction;
  std::uint64_t requests = 0;
  LatencyHistogram histogram;
  std::vector<std::uint64_t> exact;
  bool estimated = false;
  std::uint64_t stalled = 0;
  std::array<std::uint64_t, kStallKinds> stalled_by{};
  std::vector<LatencySample> slowest;
  std::uint64_t count() const { return histogram.count(); }
  std::uint64_t unanswered() const { return requests > count() ? requests - count() : 0; }
  std::uint64_t quantile(double q) const {
    OperationStats s;
    s.histogram = histogram;
    s.exact = exact;
    s.estimated = estimated;
    return s.quantile(q);
  }
};

LatencyRow row_of(const OperationStats& s) {
  LatencyRow r;
  r.kind = s.kind;
  r.stream = s.stream;
  r.direction = s.direction;
  r.requests = s.requests;
  r.histogram = s.histogram;
  r.exact = s.exact;
  r.estimated = s.estimated;
  r.stalled = s.stalled;
  r.stalled_by = s.stalled_by;
  r.slowest = s.slowest;
  return r;
}

void merge_into(LatencyRow& r, const OperationStats& s, std::size_t top) {
  r.requests += s.requests;
  r.histogram.merge(s.histogram);
  r.estimated = r.estimated || s.estimated;
  if (r.estimated)
    r.exact.clear();
  else
    r.exact.insert(r.exact.end(), s.exact.begin(), s.exact.end());
  r.stalled += s.stalled;
  for (std::size_t k = 0; k < kStallKinds; ++k)
    r.stalled_by[k] += s.stalled_by[k];
  r.slowest.insert(r.slowest.end(), s.slowest.begin(), s.slowest.end());
  std::stable_sort(r.slowest.begin(), r.slowest.end(),
                   [](const LatencySample& a, const LatencySample& b) { return a.ns > b.ns; });
  if (r.slowest.size() > top) r.slowest.resize(top);
}

std::vector<LatencyRow> rows(const Timing& t, TimingBy by) {
  std::vector<LatencyRow> out;
  if (by == TimingBy::ulp) {
    std::map<OpKind, LatencyRow> merged;
    for (const auto& [key, s] : t.operations()) {
      auto [it, fresh] = merged.try_emplace(s.kind);
      if (fresh) it->second.kind = s.kind;
      merge_into(it->second, s, t.options().top);
    }
    for (auto& [k, r] : merged)
      out.push_back(std::move(r));
    return out;
  }
  for (const auto& [key, s] : t.operations())
    out.push_back(row_of(s));
  return out;
}

json stalls_json(const std::array<std::uint32_t, kStallKinds>& n) {
  json a = json::array();
  for (std::size_t k = 0; k < kStallKinds; ++k)
    if (n[k]) a.push_back({{"kind", to_string(static_cast<StallKind>(k))}, {"events", n[k]}});
  return a;
}

json stalls_json(const std::array<std::uint64_t, kStallKinds>& n, const char* what) {
  json a = json::array();
  for (std::size_t k = 0; k < kStallKinds; ++k)
    if (n[k]) a.push_back({{"kind", to_string(static_cast<StallKind>(k))}, {what, n[k]}});
  return a;
}

// The first stall events of an operation, with their frames.
json stall_events_json(const StallCounts& s) {
  json a = json::array();
  for (std::size_t i = 0; i < s.kept; ++i)
    a.push_back({{"kind", to_string(s.first[i].kind)}, {"frame", s.first[i].frame}});
  return a;
}

// "850 ns", "12.3 us", "4.56 ms", "1.20 s": three significant digits.
std::string human_ns(std::uint64_t ns) {
  char b[32];
  const double v = static_cast<double>(ns);
  if (ns < 1000)
    std::snprintf(b, sizeof b, "%llu ns", static_cast<unsigned long long>(ns));
  else if (ns < 1000000)
    std::snprintf(b, sizeof b, "%.3g us", v / 1e3);
  else if (ns < 1000000000)
    std::snprintf(b, sizeof b, "%.3g ms", v / 1e6);
  else
    std::snprintf(b, sizeof b, "%.3g s", v / 1e9);
  return b;
}

std::string stall_text(const StallCounts& s) {
  std::string out;
  for (std::size_t k = 0; k < kStallKinds; ++k) {
    if (!s.events[k]) continue;
    out += (out.empty() ? "" : ", ") + std::string(to_string(static_cast<StallKind>(k))) + " " +
           std::to_string(s.events[k]);
    std::string frames;  // the kept ones of this kind
    for (std::size_t i = 0; i < s.kept; ++i)
      if (s.first[i].kind == static_cast<StallKind>(k))
        frames += (frames.empty() ? "" : ", ") + std::to_string(s.first[i].frame);
    if (!frames.empty())
      out += " (frame" + std::string(frames.find(',') != std::string::npos ? "s " : " ") + frames +
             ")";
  }
  if (s.incomplete) out += (out.empty() ? "" : ", ") + std::string("older events not kept");
  return out;
}

// Octets per second over [first, last] (0 when the span is empty).
std::uint64_t rate(std::uint64_t octets, std::int64_t first, std::int64_t last) {
  if (last <= first) return 0;
  return static_cast<std::uint64_t>(static_cast<double>(octets) * 1e9 /
                                    static_cast<double>(last - first));
}

}  // namespace

json timing_json(const Timing& t) {
  json j;
  j["max_samples"] = t.max_samples();
  j["samples_kept"] = t.samples_kept();
  json ops = json::array();
  for (const auto& [key, s] : t.operations()) {
    json o;
    o["kind"] = to_string(s.kind);
    o["stream"] = s.stream;
    o["direction"] = direction_name(s.direction);
    o["requests"] = s.requests;
    o["count"] = s.completions();
    o["unanswered"] = s.unanswered();
    o["min_ns"] = s.histogram.min();
    o["median_ns"] = s.quantile(0.5);
    o["p99_ns"] = s.quantile(0.99);
    o["max_ns"] = s.histogram.max();
    o["estimated"] = s.estimated;
    json h = json::array();
    for (std::size_t i = 0; i < LatencyHistogram::kBuckets; ++i)
      if (s.histogram.bucket(i))
        h.push_back({{"lower_ns", LatencyHistogram::lower(i)},
                     {"upper_ns", LatencyHistogram::lower(i + 1)},
                     {"count", s.histogram.bucket(i)}});
    o["histogram"] = std::move(h);
    o["stalled"] = s.stalled;
    o["stalled_by"] = stalls_json(s.stalled_by, "operations");
    json slow = json::array();
    for (const auto& x : s.slowest) {
      json e{{"request_frame", x.request_frame},
             {"completion_frame", x.completion_frame},
             {"ns", x.ns},
             {"stalls", stalls_json(x.stalls.events)},
             {"stall_events", stall_events_json(x.stalls)},
             {"stalls_incomplete", x.stalls.incomplete}};
      slow.push_back(std::move(e));
    }
    o["slowest"] = std::move(slow);
    ops.push_back(std::move(o));
  }
  j["operations"] = std::move(ops);
  json series = json::array();
  for (const ThroughputSeries* s : t.series()) {
    json idle = json::array();
    for (const auto& g : s->longest_idle)
      idle.push_back({{"start_ns", g.start_ns - t.origin_ns()},
                      {"ns", g.ns},
                      {"frame_before", g.frame_before},
                      {"frame_after", g.frame_after}});
    series.push_back({{"stream", s->stream},
                      {"direction", direction_name(s->direction)},
                      {"interval_ns", s->interval_ns},
                      {"octets", s->octets},
                      {"total_octets", s->total},
                      {"segments", s->segments},
                      {"idle_gaps", s->idle_count},
                      {"idle_ns", s->idle_ns},
                      {"longest_idle", std::move(idle)}});
  }
  j["throughput"] = std::move(series);
  j["origin_ns"] = t.origin_ns();
  j["idle_threshold_ns"] = t.options().idle_threshold_ns;
  json stags = json::array();
  for (const auto& s : t.stags())
    stags.push_back({{"stream", s.stream},
                     {"direction", direction_name(s.direction)},
                     {"stag", "0x" +
                                  [&] {
                                    char b[16];
                                    std::snprintf(b, sizeof b, "%08x", s.stag);
                                    return std::string(b);
                                  }()},
                     {"total_octets", s.octets},
                     {"segments", s.segments},
                     {"first_frame", s.first_frame},
                     {"last_frame", s.last_frame},
                     {"ns", static_cast<std::uint64_t>(s.last_ns - s.first_ns)}});
  j["stags"] = std::move(stags);
  j["stags_untracked_octets"] = t.stags_untracked_octets();
  json stalls = json::array();
  std::uint32_t max_stream = 0;
  for (const auto& [key, s] : t.operations())
    max_stream = std::max(max_stream, s.stream);
  for (const ThroughputSeries* s : t.series())
    max_stream = std::max(max_stream, s->stream);
  for (std::uint32_t id = 0; id <= max_stream; ++id) {
    const auto n = t.stall_totals(id);
    json e = stalls_json(n, "events");
    if (!e.empty()) stalls.push_back({{"stream", id}, {"by_kind", std::move(e)}});
  }
  j["stalls"] = std::move(stalls);
  return j;
}

void write_timing_text(std::ostream& out, const Model& /*model*/, const Timing& t) {
  out << "\nTiming (capture time, from the frame that completed a request to the one that "
         "completed its answer):\n";
  if (t.operations().empty()) out << "  no operation paired\n";
  for (const auto& [key, s] : t.operations()) {
    out << "  stream " << s.stream << " " << direction_name(s.direction) << "  "
        << to_string(s.kind) << ": " << s.completions() << " of " << s.requests << " answered; min "
        << human_ns(s.histogram.min()) << ", median " << human_ns(s.quantile(0.5)) << ", p99 "
        << human_ns(s.quantile(0.99)) << ", max " << human_ns(s.histogram.max())
        << (s.estimated ? " (median, p99 estimated)" : "");
    if (s.stalled) out << "; " << s.stalled << " stalled";
    out << "\n";
    for (const auto& x : s.slowest) {
      out << "    frame " << x.request_frame << " -> " << x.completion_frame << "  "
          << human_ns(x.ns);
      const std::string st = stall_text(x.stalls);
      if (!st.empty()) out << "  (during it: " << st << ")";
      out << "\n";
    }
  }
  for (const ThroughputSeries* s : t.series()) {
    out << "  stream " << s->stream << " " << direction_name(s->direction) << " placed " << s->total
        << " octets in " << s->segments << " segments";
    const std::uint64_t r = rate(s->total, s->first_ns, s->last_ns);
    if (r) out << " (" << r / 1000 << " kB/s over " << human_ns(s->last_ns - s->first_ns) << ")";
    std::uint64_t peak = 0;
    for (auto o : s->octets)
      peak = std::max(peak, o);
    out << ", peak " << peak << " octets per " << human_ns(s->interval_ns);
    if (s->idle_count)
      out << "; idle " << s->idle_count << " times for " << human_ns(s->idle_ns) << " (longest "
          << human_ns(s->longest_idle.front().ns) << " after frame "
          << s->longest_idle.front().frame_before << ")";
    out << "\n";
  }
  std::uint32_t max_stream = 0;
  for (const ThroughputSeries* s : t.series())
    max_stream = std::max(max_stream, s->stream);
  for (const auto& [key, s] : t.operations())
    max_stream = std::max(max_stream, s.stream);
  for (std::uint32_t id = 0; id <= max_stream; ++id) {
    const auto n = t.stall_totals(id);
    std::string line;
    for (std::size_t k = 0; k < kStallKinds; ++k)
      if (n[k])
        line += (line.empty() ? "" : ", ") + std::string(to_string(static_cast<StallKind>(k))) +
                " " + std::to_string(n[k]);
    if (!line.empty()) out << "  stream " << id << " stall events: " << line << "\n";
  }
}

void write_timing_tables(std::ostream& out, const Model& /*model*/, const Timing& t, TimingBy by,
                         bool csv) {
  if (by == TimingBy::stag) {
    if (csv) {
      out << "stream,direction,stag,octets,segments,first_frame,last_frame,ns,octets_per_s\n";
    } else {
      char b[160];
      std::snprintf(b, sizeof b, "%-6s %-16s %-10s %14s %9s %10s %10s %12s %14s\n", "stream",
                    "direction", "stag", "octets", "segments", "first", "last", "duration",
                    "octets/s");
      out << b;
    }
    for (const auto& s : t.stags()) {
      char stag[16];
      std::snprintf(stag, sizeof stag, "0x%08x", s.stag);
      const auto ns = static_cast<std::uint64_t>(s.last_ns - s.first_ns);
      const std::uint64_t r = rate(s.octets, s.first_ns, s.last_ns);
      if (csv) {
        out << s.stream << "," << direction_name(s.direction) << "," << stag << "," << s.octets
            << "," << s.segments << "," << s.first_frame << "," << s.last_frame << "," << ns << ","
            << r << "\n";
      } else {
        char b[200];
        std::snprintf(b, sizeof b, "%-6u %-16s %-10s %14llu %9llu %10llu %10llu %12s %14llu\n",
                      s.stream, direction_name(s.direction), stag,
                      static_cast<unsigned long long>(s.octets),
                      static_cast<unsigned long long>(s.segments),
                      static_cast<unsigned long long>(s.first_frame),
                      static_cast<unsigned long long>(s.last_frame), human_ns(ns).c_str(),
                      static_cast<unsigned long long>(r));
        out << b;
      }
    }
    if (t.stags_untracked_octets())
      out << (csv ? "# " : "") << t.stags_untracked_octets()
          << " octets placed into STags past the table's cap\n";
    return;
  }
  const auto table = rows(t, by);
  if (csv) {
    out << "stream,direction,kind,requests,count,unanswered,min_ns,median_ns,p99_ns,max_ns,"
           "estimated,stalled,slowest\n";
  } else {
    char b[200];
    std::snprintf(b, sizeof b, "%-6s %-16s %-16s %8s %8s %10s %10s %10s %10s %10s %8s\n", "stream",
                  "direction", "kind", "requests", "count", "unanswered", "min", "median", "p99",
                  "max", "stalled");
    out << b;
  }
  for (const auto& r : table) {
    const std::string stream = r.stream ? std::to_string(*r.stream) : "all";
    const std::string dir = r.direction ? direction_name(*r.direction) : "both";
    if (csv) {
      std::string slow;
      for (const auto& x : r.slowest)
        slow += (slow.empty() ? "" : " ") + std::to_string(x.request_frame) + "-" +
                std::to_string(x.completion_frame) + ":" + std::to_string(x.ns);
      out << stream << "," << dir << "," << to_string(r.kind) << "," << r.requests << ","
          << r.count() << "," << r.unanswered() << "," << r.histogram.min() << ","
          << r.quantile(0.5) << "," << r.quantile(0.99) << "," << r.histogram.max() << ","
          << (r.estimated ? "yes" : "no") << "," << r.stalled << "," << slow << "\n";
      continue;
    }
    char b[240];
    std::snprintf(b, sizeof b, "%-6s %-16s %-16s %8llu %8llu %10llu %10s %10s %10s %10s %8llu%s\n",
                  stream.c_str(), dir.c_str(), std::string(to_string(r.kind)).c_str(),
                  static_cast<unsigned long long>(r.requests),
                  static_cast<unsigned long long>(r.count()),
                  static_cast<unsigned long long>(r.unanswered()),
                  human_ns(r.histogram.min()).c_str(), human_ns(r.quantile(0.5)).c_str(),
                  human_ns(r.quantile(0.99)).c_str(), human_ns(r.histogram.max()).c_str(),
                  static_cast<unsigned long long>(r.stalled), r.estimated ? "  (estimated)" : "");
    out << b;
    for (const auto& x : r.slowest) {
      out << "         slow: frame " << x.request_frame << " -> " << x.completion_frame << "  "
          << human_ns(x.ns);
      const std::string st = stall_text(x.stalls);
      if (!st.empty()) out << "  (during it: " << st << ")";
      out << "\n";
    }
  }
  if (csv || by == TimingBy::ulp) return;
  out << "\n";
  char b[200];
  std::snprintf(b, sizeof b, "%-6s %-16s %14s %9s %12s %14s %10s %12s\n", "stream", "direction",
                "octets", "segments", "duration", "octets/s", "idle_gaps", "idle");
  out << b;
  for (const ThroughputSeries* s : t.series()) {
    std::snprintf(b, sizeof b, "%-6u %-16s %14llu %9llu %12s %14llu %10llu %12s\n", s->stream,
                  direction_name(s->direction), static_cast<unsigned long long>(s->total),
                  static_cast<unsigned long long>(s->segments),
                  human_ns(static_cast<std::uint64_t>(s->last_ns - s->first_ns)).c_str(),
                  static_cast<unsigned long long>(rate(s->total, s->first_ns, s->last_ns)),
                  static_cast<unsigned long long>(s->idle_count), human_ns(s->idle_ns).c_str());
    out << b;
  }
}

}  // namespace ddpscope::report
