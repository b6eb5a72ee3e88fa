// SPDX-License-Identifier: GPL-2.0-or-later
// The Timing view (issue 42), over core's timing model: a stream choice, the latency
// histograms per operation kind, the chosen stream's throughput with its stall events, and the
// slowest operations as a table. Clicking an operation (a row, or a histogram bar holding a
// kept one) or a stall emits its frame; the main window selects that frame in every view.
#pragma once

#include <QWidget>
#include <optional>

#include "snapshot.h"
#include "timing_charts.h"

class QComboBox;
class QLabel;
class QTableWidget;

namespace ddpscope::gui {

class TimingPage : public QWidget {
  Q_OBJECT
 public:
  enum Column { ColKind, ColStream, ColLatency, ColRequest, ColCompletion, ColStalls, ColumnCount };
  explicit TimingPage(QWidget* parent = nullptr);
  void setSnapshot(SnapshotPtr snap);
  // Selects the slowest operation whose request or completion is `frame` (no signal).
  void showFrame(std::uint64_t frame);
  // Shows one stream (nullopt: all; the throughput chart then shows the busiest).
  void setStream(std::optional<std::uint32_t> stream);

  LatencyHistogramWidget* histograms() const { return histograms_; }
  ThroughputWidget* throughput() const { return throughput_; }
  QTableWidget* slowestTable() const { return table_; }
  QComboBox* streamCombo() const { return stream_; }
  const std::vector<TimedOperation>& rows() const { return rows_; }

 signals:
  void frameChosen(quint64 frame, int stream, int direction);

 private:
  void refresh();
  SnapshotPtr snap_;
  QComboBox* stream_ = nullptr;
  QLabel* summary_ = nullptr;
  LatencyHistogramWidget* histograms_ = nullptr;
  ThroughputWidget* throughput_ = nullptr;
  QTableWidget* table_ = nullptr;
  std::vector<TimedOperation> rows_;  // the table's, slowest first
  bool quiet_ = false;
};

}  // namespace ddpscope::gui
