// SPDX-License-Identifier: GPL-2.0-or-later
// MSN vs frame number for one (stream, direction, QN) series: each message's first segment,
// the frame it was fully placed and the frame it was delivered; MSN gaps and duplicates
// (the findings ddp.untagged.msn-gap / msn-duplicate) as marked verticals. Wheel/± zoom the
// frame axis, drag/arrows pan, Home resets; click selects the nearest message's frame.
#pragma once

#include <QWidget>

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
  // Frames of the gap/duplicate markers shown for the series.
  const std::vector<std::pair<std::uint64_t, bool>>& markers() const { return markers_; }
  std::pair<double, double> frameView() const { return {xb_, xe_}; }
  void zoom(double factor, double anchor = 0.5);
  void pan(double fraction);
  void resetView();

  QSize sizeHint() const override { return {800, 400}; }
  QSize minimumSizeHint() const override { return {200, 150}; }

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
  QRect plotRect() const;
  double xOf(double frame) const;
  double yOf(double msn) const;
  const MessageRecord* nearest(QPoint pos, double max_px) const;

  SnapshotPtr snap_;
  int series_ = -1;
  std::uint64_t highlight_frame_ = 0;
  std::vector<std::pair<std::uint64_t, bool>> markers_;  // (frame, duplicate?)
  double fmin_ = 0, fmax_ = 1, mmin_ = 0, mmax_ = 1;
  double xb_ = 0, xe_ = 1;
  QPoint press_pos_;
  double press_xb_ = 0;
  bool dragging_ = false;
};

}  // namespace ddpscope::gui
