// SPDX-License-Identifier: GPL-2.0-or-later
// The worker that owns core: lives on a QThread, analyses one capture per request and emits
// immutable snapshots (every ~100 ms while running, and at the end).
#pragma once

#include <QObject>
#include <QString>
#include <atomic>

#include "snapshot.h"

Q_DECLARE_METATYPE(ddpscope::gui::SnapshotPtr)

namespace ddpscope::gui {

class AnalysisWorker : public QObject {
  Q_OBJECT
 public:
  explicit AnalysisWorker(QObject* parent = nullptr);
  // Thread-safe: stops the running analysis soon (it still emits `finished`).
  void requestCancel() { cancel_.store(true); }

 public slots:
  // Applies the regions file `regions` (may be empty) before the first frame.
  void analyze(const QString& path, const QString& regions, quint64 job);

 signals:
  void progress(quint64 job, quint64 bytesRead, quint64 fileSize, quint64 frames);
  void snapshotReady(quint64 job, ddpscope::gui::SnapshotPtr snapshot);
  void finished(quint64 job, ddpscope::gui::SnapshotPtr snapshot);

 private:
  std::atomic<bool> cancel_{false};
};

}  // namespace ddpscope::gui
