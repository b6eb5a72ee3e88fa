// SPDX-License-Identifier: GPL-2.0-or-later
// GUI loading benchmark (issue: GUI, "Performance"): opens a capture in ddpscope-gui's main
// window the way the app does (MainWindow::openFile: worker thread, live snapshots), with the
// Regions view shown, and measures
//   * time to a fully drawn region map: openFile until the worker has finished, the final
//     snapshot is applied and the region map has painted it (QWidget::grab);
//   * event-loop stalls while loading: a 1 ms precise QTimer on the GUI thread; a stall is the
//     gap between two ticks. Besides the wall-clock gap, the GUI thread's own CPU time within
//     the gap is reported: on a loaded machine a gap can also be time the thread was not
//     scheduled, which the CPU figure excludes.
// With --profile it also times, on the final snapshot and on the GUI thread, what applying a
// snapshot costs, view by view (stream tree, region table, findings, bytes, region map paint,
// MSN chart paint) and the whole MainWindow::applySnapshot, to find where a stall comes from.
//
//   gui_load_bench CAPTURE [--regions FILE] [--profile] [--target-ms N] [--view VIEW]
// --view shows that view while loading (default: regions), e.g. msn: its paints count.
// Exit code: 0 (timings are reported, not gated), 1 if loading failed, 2 for usage errors.
#include <time.h>

#include <QApplication>
#include <QComboBox>
#include <QElapsedTimer>
#include <QFileInfo>
#include <QPixmap>
#include <QSettings>
#include <QTableView>
#include <QTemporaryDir>
#include <QTimer>
#include <QTreeView>
#include <algorithm>
#include <cstdio>
#include <functional>
#include <vector>

#include "bytes_model.h"
#include "findings_model.h"
#include "findings_page.h"
#include "labels.h"
#include "main_window.h"
#include "msn_chart_widget.h"
#include "msn_page.h"
#include "region_map_widget.h"
#include "region_table_model.h"
#include "stream_tree_model.h"

using namespace ddpscope;
using namespace ddpscope::gui;

namespace {

double threadCpuMs() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return double(ts.tv_sec) * 1e3 + double(ts.tv_nsec) / 1e6;
}

// Gaps between ticks of a 1 ms timer on the GUI thread.
class StallMeter {
 public:
  explicit StallMeter(const QElapsedTimer& clock) : clock_(clock) {
    timer_.setTimerType(Qt::PreciseTimer);
    timer_.setInterval(1);
    QObject::connect(&timer_, &QTimer::timeout, [this] { tick(); });
  }
  void start() {
    last_ms_ = now();
    last_cpu_ = threadCpuMs();
    timer_.start();
  }
  void stop() {
    tick();
    timer_.stop();
  }
  // Counts the time since the last tick as a gap (e.g. around synchronous work).
  void tick() {
    const double t = now(), cpu = threadCpuMs();
    const double gap = t - last_ms_, busy = cpu - last_cpu_;
    ++ticks_;
    if (gap > max_gap_) max_gap_ = gap, max_gap_at_ = last_ms_, max_gap_cpu_ = busy;
    if (busy > max_busy_) max_busy_ = busy, max_busy_at_ = last_ms_;
    if (gap > 16) ++over16_;
    if (gap > 50) ++over50_;
    if (gap > 100) ++over100_;
    if (busy > 100) ++busy_over100_;
    last_ms_ = t;
    last_cpu_ = cpu;
  }
  void print(double target) const {
    std::printf("event loop: %llu ticks; gaps > 16 ms: %d, > 50 ms: %d, > 100 ms: %d\n",
                static_cast<unsigned long long>(ticks_), over16_, over50_, over100_);
    std::printf("longest stall (wall): %8.1f ms at t=%.0f ms (GUI thread CPU in it: %.1f ms)%s\n",
                max_gap_, max_gap_at_, max_gap_cpu_, max_gap_ < target ? "" : "  > target");
    std::printf("longest stall (GUI thread CPU): %8.1f ms at t=%.0f ms%s\n", max_busy_,
                max_busy_at_, max_busy_ < target ? "" : "  > target");
  }
  double maxBusy() const { return max_busy_; }

 private:
  double now() const { return double(clock_.nsecsElapsed()) / 1e6; }
  const QElapsedTimer& clock_;
  QTimer timer_;
  double last_ms_ = 0, last_cpu_ = 0;
  double max_gap_ = 0, max_gap_at_ = 0, max_gap_cpu_ = 0;
  double max_busy_ = 0, max_busy_at_ = 0;
  unsigned long long ticks_ = 0;
  int over16_ = 0, over50_ = 0, over100_ = 0, busy_over100_ = 0;
};

// GUI thread CPU time of f (wall clock on this shared machine also counts other processes).
double timeMs(const std::function<void()>& f) {
  const double c0 = threadCpuMs();
  f();
  return threadCpuMs() - c0;
}

void profile(MainWindow& w) {
  const SnapshotPtr snap = w.snapshot();
  const int region = w.regionMap()->region();
  std::printf("\nprofile (final snapshot, GUI thread CPU time):\n");
  std::printf("  %-34s %8.1f ms\n", "StreamTreeModel::setSnapshot", timeMs([&] {
                StreamTreeModel m;
                m.setSnapshot(snap);
              }));
  std::printf("  %-34s %8.1f ms\n", "RegionTableModel::setSnapshot", timeMs([&] {
                RegionTableModel m;
                m.setSnapshot(snap);
              }));
  std::printf("  %-34s %8.1f ms\n", "FindingsModel::setSnapshot", timeMs([&] {
                FindingsModel m;
                m.setSnapshot(snap);
              }));
  std::printf("  %-34s %8.1f ms\n", "BytesModel::setRegion", timeMs([&] {
                BytesModel m;
                m.setRegion(snap, region);
              }));
  RegionMapWidget map;
  map.resize(1200, 300);
  std::printf("  %-34s %8.1f ms\n", "RegionMapWidget setRegion + grab", timeMs([&] {
                map.setRegion(snap, region);
                (void)map.grab();
              }));
  MsnChartWidget chart;
  chart.resize(1200, 500);
  std::printf("  %-34s %8.1f ms\n", "MsnChartWidget setSeries + grab", timeMs([&] {
                chart.setSeries(snap, snap->series.empty() ? -1 : 0);
                (void)chart.grab();
              }));
  // The view work MainWindow::applySnapshot does besides the models.
  std::printf("  %-34s %8.1f ms\n", "streams: expand + resize columns", timeMs([&] {
                QTreeView* v = w.streamsView();
                if (snap->model->streams.size() <= 64)
                  v->expandAll();
                else
                  v->expandToDepth(0);
                for (int c = 0; c < StreamTreeModel::ColumnCount - 1; ++c)
                  v->resizeColumnToContents(c);
              }));
  std::printf("  %-34s %8.1f ms\n", "findings: resizeColumnsToContents",
              timeMs([&] { w.findingsView()->resizeColumnsToContents(); }));
  std::printf("  %-34s %8.1f ms\n", "regions: resizeColumnsToContents",
              timeMs([&] { w.regionsView()->resizeColumnsToContents(); }));
  std::printf("  %-34s %8.1f ms\n", "series combo: fill", timeMs([&] {
                QComboBox c;
                for (std::size_t i = 0; i < snap->series.size(); ++i)
                  c.addItem(QString::number(i));
              }));
  std::printf("  %-34s %8.1f ms\n", "region combo: fill", timeMs([&] {
                QComboBox c;
                for (const RegionInfo& r : snap->regions)
                  c.addItem(QStringLiteral("%1  (%2 placed)")
                                .arg(regionLabel(*r.buffer), bytesText(r.buffer->bytes_placed())));
              }));
  std::printf("  %-34s %8.1f ms\n", "FindingsPage::setSnapshot",
              timeMs([&] { w.findingsPage()->setSnapshot(snap); }));
  std::printf("  %-34s %8.1f ms\n", "MsnPage::setSnapshot",
              timeMs([&] { w.msnPage()->setSnapshot(snap); }));
  std::printf("  %-34s %8.1f ms\n", "MsnPage grab", timeMs([&] { (void)w.msnPage()->grab(); }));
  std::printf("  %-34s %8.1f ms\n", "MainWindow::applySnapshot",
              timeMs([&] { w.applySnapshot(snap); }));
  std::printf("  %-34s %8.1f ms\n", "MainWindow grab (all visible)",
              timeMs([&] { (void)w.grab(); }));
}

}  // namespace

int main(int argc, char** argv) {
  if (!qEnvironmentVariableIsSet("QT_QPA_PLATFORM")) qputenv("QT_QPA_PLATFORM", "offscreen");
  QApplication app(argc, argv);
  QString capture, regions;
  MainWindow::View view = MainWindow::ViewRegions;
  bool do_profile = false;
  double target = 100;
  const QStringList args = app.arguments();
  for (int i = 1; i < args.size(); ++i) {
    if (args[i] == QLatin1String("--regions") && i + 1 < args.size())
      regions = args[++i];
    else if (args[i] == QLatin1String("--profile"))
      do_profile = true;
    else if (args[i] == QLatin1String("--target-ms") && i + 1 < args.size())
      target = args[++i].toDouble();
    else if (args[i] == QLatin1String("--view") && i + 1 < args.size() &&
             MainWindow::parseView(args[i + 1]))
      view = *MainWindow::parseView(args[++i]);
    else if (capture.isEmpty() && !args[i].startsWith(QLatin1Char('-')))
      capture = args[i];
    else {
      std::fprintf(stderr,
                   "usage: gui_load_bench CAPTURE [--regions FILE] [--profile] [--target-ms N] "
                   "[--view VIEW]\n");
      return 2;
    }
  }
  if (capture.isEmpty() || !QFileInfo::exists(capture)) {
    std::fprintf(stderr,
                 "usage: gui_load_bench CAPTURE [--regions FILE] [--profile] [--target-ms N] "
                 "[--view VIEW]\n");
    return 2;
  }
  // Keep the recent-files list out of the user's settings.
  QTemporaryDir settings_dir;
  QSettings::setPath(QSettings::NativeFormat, QSettings::UserScope, settings_dir.path());
  QCoreApplication::setOrganizationName(QStringLiteral("ddpscope-bench"));

  MainWindow w;
  w.resize(1280, 800);
  w.show();
  w.showView(view);
  QApplication::processEvents();

  QElapsedTimer clock;
  StallMeter meter(clock);
  int snapshots = 0;
  double t_finished = 0, t_drawn = 0, grab_ms = 0;
  bool ok = false;
  QObject::connect(&w, &MainWindow::analysisFinished, [&] {
    t_finished = double(clock.nsecsElapsed()) / 1e6;
    meter.tick();
    // Let pending paints run, then make sure the region map is drawn with the final snapshot.
    QTimer::singleShot(0, [&] {
      QElapsedTimer g;
      g.start();
      const QPixmap pm = w.regionMap()->grab();
      grab_ms = double(g.nsecsElapsed()) / 1e6;
      t_drawn = double(clock.nsecsElapsed()) / 1e6;
      meter.stop();
      ok = !pm.isNull() && w.snapshot() && w.snapshot()->final && w.snapshot()->error.empty() &&
           w.regionMap()->region() >= 0 && !w.regionMap()->spans().empty();
      QApplication::quit();
    });
  });
  // Count live snapshots applied (status text changes with each).
  QTimer poll;
  const Snapshot* last = nullptr;
  QObject::connect(&poll, &QTimer::timeout, [&] {
    if (w.snapshot() && w.snapshot().get() != last) ++snapshots, last = w.snapshot().get();
  });
  poll.start(5);

  const qint64 size = QFileInfo(capture).size();
  clock.start();
  meter.start();
  w.openFile(capture, regions);
  meter.tick();  // openFile's own synchronous work
  QApplication::exec();
  poll.stop();

  const SnapshotPtr snap = w.snapshot();
  std::printf("capture: %s, %lld octets (%.0f MiB)\n", qPrintable(QFileInfo(capture).fileName()),
              static_cast<long long>(size), double(size) / 1048576.0);
  if (snap && snap->model)
    std::printf("result: %llu frames, %zu streams, %zu regions, %zu findings, %zu messages\n",
                static_cast<unsigned long long>(snap->model->frames), snap->model->streams.size(),
                snap->regions.size(), snap->model->findings.size(), snap->model->messages.size());
  std::printf("worker analysis: %8.0f ms (snapshot elapsed_s)\n", snap ? snap->elapsed_s * 1e3 : 0);
  std::printf("worker finished, final snapshot applied: %8.0f ms after openFile\n", t_finished);
  std::printf("region map fully drawn: %8.0f ms after openFile (grab %.1f ms)\n", t_drawn, grab_ms);
  std::printf("live snapshots seen by the GUI: %d\n", snapshots);
  meter.print(target);
  if (!ok) {
    std::fprintf(stderr, "loading failed or the region map is empty\n");
    return 1;
  }
  if (do_profile) profile(w);
  return 0;
}
