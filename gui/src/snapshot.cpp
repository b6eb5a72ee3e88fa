// SPDX-License-Identifier: GPL-2.0-or-later
#include "snapshot.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <tuple>

#include "ddpscope/capture/feed.h"
#include "ddpscope/esp/layer.h"

namespace ddpscope::gui {

void Snapshot::build_index() {
  regions.clear();
  series.clear();
  frame_regions.clear();
  finding_stags.clear();
  if (!model) return;
  for (const auto& [key, buf] : model->memory.buffers()) {
    RegionInfo info;
    info.buffer = &buf;
    info.stream = buf.stream;
    const auto& ranges = buf.ranges();
    if (!info.stream && !ranges.empty()) info.stream = ranges.front().stream;
    if (!ranges.empty()) info.first_frame = ranges.front().frame;
    info.overwrites = buf.overwrites();
    info.reused_octets = buf.reused_octets();
    for (const auto& r : ranges) {
      info.overlaps += r.overlap;
      info.conflicts += r.conflict;
      info.violations += r.violation;
      frame_regions.emplace_back(r.frame, static_cast<std::uint32_t>(regions.size()));
    }
    if (info.stream && *info.stream < model->streams.size()) {
      const auto& s = model->streams[*info.stream];
      for (int d = 0; d < 2; ++d)
        if (s.dirs[d].to.addr == key.owner) info.direction = d;
    }
    regions.push_back(info);
  }
  std::sort(frame_regions.begin(), frame_regions.end());

  std::map<std::tuple<std::uint32_t, int, std::uint32_t>, std::size_t> where;
  for (std::size_t i = 0; i < model->messages.size(); ++i) {
    const auto& m = model->messages[i];
    if (m.tagged) continue;
    auto key = std::make_tuple(m.stream, m.direction, m.qn);
    auto it = where.find(key);
    if (it == where.end()) {
      it = where.emplace(key, series.size()).first;
      series.push_back({m.stream, m.direction, m.qn, {}});
    }
    series[it->second].messages.push_back(i);
  }
  std::sort(series.begin(), series.end(), [](const MsnSeries& a, const MsnSeries& b) {
    return std::tie(a.stream, a.direction, a.qn) < std::tie(b.stream, b.direction, b.qn);
  });
  for (MsnSeries& s : series)
    build_rows(s);

  // Finding -> STag: a placed range of the finding's frame on its stream (region key), else a
  // tagged message whose first segment is in that frame.
  std::vector<std::pair<std::uint64_t, std::size_t>> tagged_first;
  for (std::size_t i = 0; i < model->messages.size(); ++i)
    if (model->messages[i].tagged) tagged_first.emplace_back(model->messages[i].first_frame, i);
  std::sort(tagged_first.begin(), tagged_first.end());
  finding_stags.assign(model->findings.size(), std::nullopt);
  for (std::size_t fi = 0; fi < model->findings.size(); ++fi) {
    const Finding& f = model->findings[fi];
    std::optional<std::uint32_t> stag;
    for (auto it = std::lower_bound(frame_regions.begin(), frame_regions.end(),
                                    std::make_pair(f.frame, std::uint32_t{0}));
         it != frame_regions.end() && it->first == f.frame && !stag; ++it) {
      const RegionInfo& r = regions[it->second];
      if (f.stream == UINT32_MAX || !r.stream || *r.stream == f.stream) stag = r.buffer->key.stag;
    }
    for (auto it = std::lower_bound(tagged_first.begin(), tagged_first.end(),
                                    std::make_pair(f.frame, std::size_t{0}));
         it != tagged_first.end() && it->first == f.frame && !stag; ++it) {
      const MessageRecord& m = model->messages[it->second];
      if (m.stream == f.stream && (f.direction < 0 || m.direction == f.direction)) stag = m.stag;
    }
    finding_stags[fi] = stag;
  }
}

void Snapshot::build_rows(MsnSeries& s) const {
  s.rows.clear();
  s.by_msn.clear();
  s.missing = s.duplicates = 0;
  if (s.messages.empty()) return;
  const auto& msgs = model->messages;
  // Serial distance from the first record's MSN, so that a queue wrapping past 2^32 stays in
  // order; a record before it (reordered) gets a negative key.
  const std::uint32_t base = msgs[s.messages.front()].msn;
  auto key = [&](std::size_t i) { return std::int64_t(std::int32_t(msgs[i].msn - base)); };
  s.by_msn = s.messages;
  std::stable_sort(s.by_msn.begin(), s.by_msn.end(),
                   [&](std::size_t a, std::size_t b) { return key(a) < key(b); });
  s.first_frame = UINT64_MAX;
  s.last_frame = 0;
  for (std::size_t i : s.messages) {
    const auto& m = msgs[i];
    s.first_frame = std::min(s.first_frame, m.first_frame);
    s.last_frame = std::max({s.last_frame, m.first_frame, m.placed_frame, m.delivered_frame});
  }
  for (std::uint32_t i = 0; i < s.by_msn.size();) {
    std::uint32_t j = i + 1;
    while (j < s.by_msn.size() && key(s.by_msn[j]) == key(s.by_msn[i]))
      ++j;
    if (!s.rows.empty()) {
      const std::int64_t prev = key(s.by_msn[s.rows.back().begin]);
      const std::int64_t missing = key(s.by_msn[i]) - prev - 1;
      if (missing > 0) {
        MsnRow gap;
        gap.missing = true;
        gap.msn = msgs[s.by_msn[s.rows.back().begin]].msn + 1;
        gap.count = std::uint32_t(missing);
        gap.begin = gap.end = i;
        gap.frame = msgs[s.by_msn[i]].first_frame;
        s.rows.push_back(gap);
        s.missing += std::uint64_t(missing);
      }
    }
    MsnRow row;
    row.msn = msgs[s.by_msn[i]].msn;
    row.begin = i;
    row.end = j;
    s.duplicates += j - i - 1;
    s.rows.push_back(row);
    i = j;
  }
}

std::optional<std::size_t> Snapshot::region_of_frame(std::uint64_t frame) const {
  auto it = std::lower_bound(frame_regions.begin(), frame_regions.end(),
                             std::make_pair(frame, std::uint32_t{0}));
  if (it != frame_regions.end() && it->first == frame) return it->second;
  return std::nullopt;
}

std::optional<std::size_t> Snapshot::series_of_frame(std::uint64_t frame,
                                                     std::optional<std::uint32_t> stream,
                                                     int direction) const {
  if (!model) return std::nullopt;
  std::optional<std::size_t> spanning;
  for (std::size_t s = 0; s < series.size(); ++s) {
    const auto& ser = series[s];
    if (stream && ser.stream != *stream) continue;
    if (direction >= 0 && ser.direction != direction) continue;
    if (frame < ser.first_frame || frame > ser.last_frame) continue;
    for (std::size_t i : ser.messages) {
      const auto& m = model->messages[i];
      if (m.first_frame == frame || m.placed_frame == frame || m.delivered_frame == frame) return s;
    }
    if (!spanning && stream) spanning = s;
  }
  return spanning;
}

TimingOptions gui_timing_options() {
  TimingOptions t;
  t.top = 32;
  return t;
}

SnapshotPtr analyze_capture(const std::string& path, const AnalysisCallbacks& cb,
                            const AnalyzerOptions& options,
                            const std::optional<std::vector<RegionSpec>>& regions) {
  using clock = std::chrono::steady_clock;
  const auto start = clock::now();
  auto finish = [&](Analyzer* an, capture::CaptureReader* reader, std::uint64_t frames) {
    auto snap = std::make_shared<Snapshot>();
    snap->path = path;
    snap->final = true;
    snap->frames_read = frames;
    if (reader) {
      snap->bytes_read = reader->bytes_read();
      snap->file_size = reader->file_size();
    }
    if (an) snap->model = std::make_shared<const Model>(an->model());
    if (an && an->timing()) snap->timing = std::make_shared<const Timing>(*an->timing());
    snap->elapsed_s = std::chrono::duration<double>(clock::now() - start).count();
    return snap;
  };

  std::string err;
  auto reader = capture::CaptureReader::open(path, err);
  if (!reader) {
    auto snap = finish(nullptr, nullptr, 0);
    snap->error = err.empty() ? "cannot open " + path : err;
    snap->model = std::make_shared<const Model>();
    return snap;
  }
  Analyzer analyzer(options);
  if (regions) analyzer.add_regions(*regions);
  auto last_progress = clock::now();
  auto last_snapshot = clock::now();
  auto interval = std::chrono::milliseconds(std::max(cb.snapshot_interval_ms, 1));
  // The ESP layer, as `ddpscope analyze` always runs it: without keys (the GUI takes none
  // yet) ESP traffic is reported as esp.unknown-spi, so both show the same findings.
  esp::EspLayer esp_layer{esp::EspOptions{}};
  capture::FeedOptions feed_options;
  feed_options.layer = &esp_layer;
  // Cancel is checked every 64 frames.
  feed_options.progress_every = 64;
  feed_options.progress = [&](const capture::FeedProgress& at) {
    if (cb.cancel && cb.cancel->load(std::memory_order_relaxed)) return false;
    const auto now = clock::now();
    if (cb.progress && now - last_progress >= std::chrono::milliseconds(50)) {
      cb.progress(at.bytes_read, at.file_size, at.frames);
      last_progress = now;
    }
    if (cb.snapshot && now - last_snapshot >= interval) {
      auto snap = std::make_shared<Snapshot>();
      snap->path = path;
      snap->model = std::make_shared<const Model>(analyzer.model());
      if (analyzer.timing()) snap->timing = std::make_shared<const Timing>(*analyzer.timing());
      snap->bytes_read = at.bytes_read;
      snap->file_size = at.file_size;
      snap->frames_read = at.frames;
      snap->elapsed_s = std::chrono::duration<double>(now - start).count();
      snap->build_index();
      const auto cost = clock::now() - now;
      // Keep copying below ~20% of the time.
      interval = std::max(std::chrono::duration_cast<std::chrono::milliseconds>(cost * 5),
                          std::chrono::milliseconds(std::max(cb.snapshot_interval_ms, 1)));
      cb.snapshot(std::move(snap));
      last_snapshot = clock::now();
    }
    return true;
  };
  const capture::FeedResult fed = capture::feed(*reader, analyzer, feed_options);
  auto snap = finish(&analyzer, reader.get(), fed.frames);
  snap->cancelled = fed.cancelled;
  if (fed.frames == 0 && !fed.error.empty()) snap->error = fed.error;
  snap->build_index();
  if (cb.progress) cb.progress(snap->bytes_read, snap->file_size, fed.frames);
  return snap;
}

}  // namespace ddpscope::gui
