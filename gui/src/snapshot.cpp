// SPDX-License-Identifier: GPL-2.0-or-later
#include "snapshot.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <tuple>

#include "ddpscope/capture/feed.h"

namespace ddpscope::gui {

void Snapshot::build_index() {
  regions.clear();
  series.clear();
  frame_regions.clear();
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
    std::uint64_t lo = UINT64_MAX, hi = 0;
    for (std::size_t i : ser.messages) {
      const auto& m = model->messages[i];
      if (m.first_frame == frame || m.placed_frame == frame || m.delivered_frame == frame) return s;
      lo = std::min(lo, m.first_frame);
      hi = std::max({hi, m.first_frame, m.placed_frame, m.delivered_frame});
    }
    if (!spanning && stream && frame >= lo && frame <= hi) spanning = s;
  }
  return spanning;
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
  capture::FeedOptions feed_options;
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
