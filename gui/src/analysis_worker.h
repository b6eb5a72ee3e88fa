// SPDX-License-Identifier: GPL-2.0-or-later
// The worker that owns core: lives on a QThread, analyses one capture file or one live capture
// per request and emits immutable snapshots (every ~100 ms while running, and at the end).
#pragma once

#include <QObject>
#include <QString>
#include <atomic>

#include "live_analysis.h"
#include "snapshot.h"

Q_DECLARE_METATYPE(ddpscope::gui::SnapshotPtr)
Q_DECLARE_METATYPE(ddpscope::gui::FileHints)

namespace ddpscope::gui {

class AnalysisWorker : public QObject {
  Q_OBJECT
 public:
  explicit AnalysisWorker(QObject* parent = nullptr);
  // Thread-safe: stops job `job` and every earlier one soon, even when it has not started yet
  // (it still emits `finished`). A live capture stops and its analysis is finished as at the
  // end of a file.
  void requestCancel(quint64 job) {
    quint64 seen = cancel_up_to_.load();
    while (seen < job && !cancel_up_to_.compare_exchange_weak(seen, job)) {
    }
    cancel_.store(true);
  }

 public slots:
  // Applies the regions file `regions` (may be empty) before the first frame.
  void analyze(const QString& path, const QString& regions, quint64 job,
               const ddpscope::gui::FileHints& hints = {});
  // Captures live until requestCancel(job).
  void capture(const ddpscope::gui::CaptureRequest& request, quint64 job);

 signals:
  void progress(quint64 job, quint64 bytesRead, quint64 fileSize, quint64 frames);
  void snapshotReady(quint64 job, ddpscope::gui::SnapshotPtr snapshot);
  void finished(quint64 job, ddpscope::gui::SnapshotPtr snapshot);
  void liveStatus(quint64 job, const ddpscope::gui::LiveStatus& status);

 private:
  // Clears the cancel flag for a starting job unless it was cancelled before it started.
  void begin(quint64 job) {
    cancel_.store(false);
    if (cancel_up_to_.load() >= job) cancel_.store(true);
  }
  std::atomic<bool> cancel_{false};
  std::atomic<quint64> cancel_up_to_{0};
};

}  // namespace ddpscope::gui
