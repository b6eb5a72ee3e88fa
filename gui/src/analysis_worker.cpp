// SPDX-License-Identifier: GPL-2.0-or-later
#include "analysis_worker.h"

#include "regions_file.h"

namespace ddpscope::gui {

AnalysisWorker::AnalysisWorker(QObject* parent) : QObject(parent) {
  qRegisterMetaType<SnapshotPtr>("ddpscope::gui::SnapshotPtr");
  qRegisterMetaType<CaptureRequest>("ddpscope::gui::CaptureRequest");
  qRegisterMetaType<LiveStatus>("ddpscope::gui::LiveStatus");
  qRegisterMetaType<FileHints>("ddpscope::gui::FileHints");
}

namespace {
SnapshotPtr failedSnapshot(const std::string& path, const QString& err) {
  auto failed = std::make_shared<Snapshot>();
  failed->path = path;
  failed->final = true;
  failed->error = err.toStdString();
  failed->model = std::make_shared<const Model>();
  return failed;
}
}  // namespace

void AnalysisWorker::analyze(const QString& path, const QString& regions, quint64 job,
                             const FileHints& hints) {
  begin(job);
  AnalysisCallbacks cb;
  cb.cancel = &cancel_;
  cb.progress = [this, job](std::uint64_t done, std::uint64_t total, std::uint64_t frames) {
    emit progress(job, done, total, frames);
  };
  cb.snapshot = [this, job](SnapshotPtr snap) { emit snapshotReady(job, std::move(snap)); };
  RegionsFile file;
  QString err;
  if (!regions.isEmpty() && !loadRegionsFile(regions, file, &err)) {
    emit finished(job, failedSnapshot(path.toStdString(), err));
    return;
  }
  std::optional<std::vector<RegionSpec>> given;
  if (!regions.isEmpty()) given = std::move(file.regions);
  AnalyzerOptions options;
  options.protection_domains = std::move(file.protection_domains);
  options.hints = hints.hints;
  options.sink_profile = hints.sink_profile;
  options.timing = gui_timing_options();
  auto snap =
      std::const_pointer_cast<Snapshot>(analyze_capture(path.toStdString(), cb, options, given));
  snap->regions_file = regions.toStdString();
  emit finished(job, SnapshotPtr(std::move(snap)));
}

void AnalysisWorker::capture(const CaptureRequest& request, quint64 job) {
  begin(job);
  AnalysisCallbacks cb;
  cb.cancel = &cancel_;
  cb.snapshot = [this, job](SnapshotPtr snap) { emit snapshotReady(job, std::move(snap)); };
  cb.live_status = [this, job](const LiveStatus& s) { emit liveStatus(job, s); };
  std::optional<RegionsFile> regions;
  if (!request.regionsPath.isEmpty()) {
    RegionsFile file;
    QString err;
    if (!loadRegionsFile(request.regionsPath, file, &err)) {
      auto failed = std::const_pointer_cast<Snapshot>(failedSnapshot(std::string(), err));
      failed->live_interface = request.interface.toStdString();
      emit finished(job, SnapshotPtr(std::move(failed)));
      return;
    }
    regions = std::move(file);
  }
  auto snap = std::const_pointer_cast<Snapshot>(analyze_live(request, cb, regions));
  snap->regions_file = request.regionsPath.toStdString();
  emit finished(job, SnapshotPtr(std::move(snap)));
}

}  // namespace ddpscope::gui
