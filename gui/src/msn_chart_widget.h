// SPDX-License-Identifier: GPL-2.0-or-later
// The MSN chart of one (stream, direction, QN) queue: one row per message in MSN order, x =
// frame. A message's placement span (its first segment's frame to the frame that placed its
// last missing octet) is a bar in its opcode's colour, hatched when never fully placed; its
// delivery a diamond (hollow red when never delivered), joined to the bar when delivery waited.
// A run of MSNs never seen is a row of its own with a red gap marker at the frame where the next
// MSN arrived; a duplicate MSN is a second bar in the same row with a ring. Above ~4 rows per
// pixel the rows are aggregated into a coverage image, and missing / duplicate rows stay marked
// at least 2 px tall at any scale. Wheel zooms both axes (Shift: frames, Ctrl: rows), drag pans,
// arrows pan, Home resets; clicking a bar or a gap marker emits its frame.
#pragma once

#include <QWidget>
#include <optional>

#include "snapshot.h"

namespace ddpscope::gui {

class MsnChartWidget : public QWidget {
  Q_OBJECT
 public:
  explicit MsnChartWidget(QWidget* parent = nullptr);
  void setSeries(SnapshotPtr snap, int series);
  int series() const { return series_; }
  void setHighlightFrame(std::uint64_t frame);
  std::uint64_t highlightFrame() const { return highlight_frame_; }
  // Frames of the MSN gap / duplicate findings of the series (frame, duplicate?).
  const std::vector<std::pair<std::uint64_t, bool>>& markers() const { return markers_; }
  std::pair<double, double> frameView() const { return {xb_, xe_}; }
  std::pair<double, double> rowView() const { return {rb_, re_}; }
  void zoom(double factor, double anchor = 0.5);  // both axes
  void zoomFrames(double factor, double anchor = 0.5);
  void zoomRows(double factor, double anchor = 0.5);
  void pan(double fraction);  // frames
  void panRows(double fraction);
  void resetView();

  // Geometry, for hit tests and tests: the plot area; the band drawn for row `row` of the
  // series (empty when out of view); the gap marker of a missing row (empty when not missing
  // or out of view); whether the rows are aggregated at the current scale.
  QRect plotRect() const;
  QRect rowRect(int row) const;
  QRect missingMarkerRect(int row) const;
  bool aggregated() const;
  const MsnSeries* currentSeries() const;
  // The label drawn beside row `row` when rows are tall enough (its last record: its ULP
  // command when a decoder named one, its opcode and size); empty for a missing row.
  QString rowLabel(int row) const;

  // The colours drawn (and shown in the legend).
  static QColor missingColor();
  static QColor duplicateColor();
  static QColor deliveredColor();

  QSize sizeHint() const override { return {800, 400}; }
  QSize minimumSizeHint() const override { return {240, 160}; }

 signals:
  void messageClicked(quint64 frame);

 protected:
  void paintEvent(QPaintEvent*) override;
  void wheelEvent(QWheelEvent*) override;
  void mousePressEvent(QMouseEvent*) override;
  void mouseMoveEvent(QMouseEvent*) override;
  void mouseReleaseEvent(QMouseEvent*) override;
  void keyPressEvent(QKeyEvent*) override;

 private:
  struct Hit {
    int row = -1;
    const MessageRecord* record = nullptr;  // null for a missing row
    std::uint64_t frame = 0;
  };
  QRect availRect() const;  // room for the rows
  double xOf(double frame) const;
  double rowHeight() const;
  double yOf(double row) const;  // top of row `row`
  std::optional<Hit> hitAt(QPoint pos) const;
  QString tooltip(const Hit& h) const;
  void drawLegend(QPainter& p, int y);
  void drawRows(QPainter& p, const QRect& pr);
  void drawAggregated(QPainter& p, const QRect& pr);
  void drawMissing(QPainter& p, const QRect& pr, int row, double y, double h);
  void clampView();
  QColor seriesColor() const;
  // Whether a message starting at `frame` belongs to another queue of s's stream and direction.
  bool otherQueueStartsAt(const MsnSeries& s, std::uint64_t frame)
      const;  // the bars' colour when aggregated: the queue's first opcode

  SnapshotPtr snap_;
  int series_ = -1;
  std::uint64_t highlight_frame_ = 0;
  std::vector<std::pair<std::uint64_t, bool>> markers_;        // (frame, duplicate?)
  std::vector<std::pair<std::uint64_t, bool>> loose_markers_;  // not on a row: drawn as lines
  std::uint64_t placed_ = 0, delivered_ = 0;                   // messages of the series
  double fmin_ = 0, fmax_ = 1;
  double xb_ = 0, xe_ = 1;  // frames in view
  double rb_ = 0, re_ = 1;  // rows in view
  QPoint press_pos_;
  double press_xb_ = 0, press_rb_ = 0;
  bool dragging_ = false;
};

}  // namespace ddpscope::gui
