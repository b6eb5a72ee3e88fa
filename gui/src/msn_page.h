// SPDX-License-Identifier: GPL-2.0-or-later
// The MSN view: a queue selector (stream, direction, QN, with its message, missing and
// duplicate counts) above the MSN chart (msn_chart_widget.h). Clicking a message emits its frame.
#pragma once

#include <QWidget>

#include "snapshot.h"

class QComboBox;

namespace ddpscope::gui {

class MsnChartWidget;

class MsnPage : public QWidget {
  Q_OBJECT
 public:
  explicit MsnPage(QWidget* parent = nullptr);
  // Keeps the queue chosen when it still exists; else the first one.
  void setSnapshot(SnapshotPtr snap);
  // Shows the queue that holds `frame` (Snapshot::series_of_frame) and highlights the frame.
  void showFrame(std::uint64_t frame, std::optional<std::uint32_t> stream, int direction);

  MsnChartWidget* chart() const { return chart_; }
  QComboBox* seriesCombo() const { return combo_; }

 signals:
  void frameClicked(quint64 frame);

 private:
  SnapshotPtr snap_;
  QComboBox* combo_ = nullptr;
  MsnChartWidget* chart_ = nullptr;
};

}  // namespace ddpscope::gui
