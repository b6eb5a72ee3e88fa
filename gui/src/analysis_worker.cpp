// SPDX-License-Identifier: GPL-2.0-or-later
#include "analysis_worker.h"

namespace ddpscope::gui {

AnalysisWorker::AnalysisWorker(QObject* parent) : QObject(parent) {
  qRegisterMetaType<SnapshotPtr>("ddpscope::gui::SnapshotPtr");
}

void AnalysisWorker::analyze(const QString& path, quint64 job) {
  cancel_.store(false);
  AnalysisCallbacks cb;
  cb.cancel = &cancel_;
  cb.progress = [this, job](std::uint64_t done, std::uint64_t total, std::uint64_t frames) {
    emit progress(job, done, total, frames);
  };
  cb.snapshot = [this, job](SnapshotPtr snap) { emit snapshotReady(job, std::move(snap)); };
  SnapshotPtr snap = analyze_capture(path.toStdString(), cb);
  emit finished(job, std::move(snap));
}

}  // namespace ddpscope::gui
