// SPDX-License-Identifier: GPL-2.0-or-later
#include "live_analysis.h"

#include <chrono>

#include "ddpscope/capture/feed.h"
#include "ddpscope/capture/live_capture.h"

namespace ddpscope::gui {
namespace {

constexpr std::uint32_t kLinkTypeEthernet = 1;

LiveStatus statusOf(const capture::LiveCounters& c) {
  LiveStatus s;
  s.frames = c.frames;
  s.bytes = c.bytes;
  s.have_kernel_stats = c.have_kernel_stats;
  s.kernel_received = c.kernel.received;
  s.kernel_dropped = c.kernel.dropped;
  s.interface_dropped = c.kernel.interface_dropped;
  return s;
}

}  // namespace

QString filterError(const QString& filter) {
  std::string err;
  if (capture::check_filter(filter.trimmed().toStdString(), kLinkTypeEthernet, err))
    return QString();
  return QString::fromStdString(err);
}

SnapshotPtr analyze_live(const CaptureRequest& request, const AnalysisCallbacks& cb,
                         const std::optional<RegionsFile>& regions) {
  using clock = std::chrono::steady_clock;
  const auto start = clock::now();
  capture::LiveOptions lo;
  lo.interface = request.interface.toStdString();
  lo.filter = request.filter.trimmed().toStdString();
  lo.write_path = request.writePath.toStdString();
  AnalyzerOptions options;
  for (quint16 p : request.ports)
    options.hints.push_back(StreamHint{p, std::nullopt, request.crc, request.markers});
  for (const net::Endpoint& e : request.streams)
    options.hints.push_back(StreamHint{std::nullopt, e, request.crc, request.markers});
  if (regions) options.protection_domains = regions->protection_domains;
  options.sink_profile = request.sinkProfile;
  options.timing = gui_timing_options();

  auto make = [&](const Analyzer* an, const LiveStatus& status) {
    auto snap = std::make_shared<Snapshot>();
    snap->path = lo.write_path;
    snap->live_interface = lo.interface;
    snap->live = status;
    snap->frames_read = status.frames;
    snap->bytes_read = status.bytes;
    snap->model = an ? std::make_shared<const Model>(an->model()) : std::make_shared<const Model>();
    if (an && an->timing()) snap->timing = std::make_shared<const Timing>(*an->timing());
    snap->elapsed_s = std::chrono::duration<double>(clock::now() - start).count();
    return snap;
  };

  std::string err;
  auto live = capture::LiveSession::open(lo, err);
  if (!live) {
    auto snap = make(nullptr, {});
    snap->final = true;
    snap->error = err;
    return snap;
  }
  Analyzer analyzer(options);
  if (regions) analyzer.add_regions(regions->regions);

  const auto base = std::chrono::milliseconds(std::max(cb.snapshot_interval_ms, 1));
  auto interval = base;
  auto last_snapshot = clock::now();
  std::uint64_t snapshot_frames = 0;
  capture::LiveRunLimits limits;
  limits.stop = cb.cancel;
  limits.tick_ms = 100;
  const bool ok = live->run(
      [&](const capture::Frame& f) { capture::feed_frame(analyzer, f); },
      [&](const capture::LiveCounters& c) {
        const LiveStatus status = statusOf(c);
        if (cb.live_status) cb.live_status(status);
        const auto now = clock::now();
        if (!cb.snapshot || c.frames == snapshot_frames || now - last_snapshot < interval) return;
        auto snap = make(&analyzer, status);
        snap->build_index();
        // Keep copying below ~20% of the time, as for files.
        interval = std::max(
            std::chrono::duration_cast<std::chrono::milliseconds>((clock::now() - now) * 5),
            std::chrono::duration_cast<std::chrono::milliseconds>(base));
        snapshot_frames = c.frames;
        cb.snapshot(std::move(snap));
        last_snapshot = clock::now();
      },
      limits);
  // Stopping ends the input as the end of a file does.
  analyzer.finish();
  auto snap = make(&analyzer, statusOf(live->counters()));
  snap->final = true;
  if (!ok) snap->error = live->error();
  if (!live->close(err)) snap->error = err;
  snap->build_index();
  if (cb.live_status) cb.live_status(snap->live);
  return snap;
}

}  // namespace ddpscope::gui
