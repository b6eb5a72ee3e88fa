// SPDX-License-Identifier: GPL-2.0-or-later
// Placement trace of one region (a Stevens graph for DDP): x = frame, y = offset in the
// region; each placed segment is a vertical bar from TO to TO+len coloured by opcode,
// placements over earlier octets in the overlap colour, bounds violations red and labelled,
// the advertised bounds as horizontal lines. Out-of-order placement and holes show as steps
// and gaps. Wheel zooms frames (Ctrl+wheel: offsets), drag pans both axes, Home resets;
// clicking a bar emits its frame.
#pragma once

#include <QWidget>
#include <optional>

#include "snapshot.h"

namespace ddpscope::gui {

class PlacementTraceWidget : public QWidget {
  Q_OBJECT
 public:
  explicit PlacementTraceWidget(QWidget* parent = nullptr);
  void setRegion(SnapshotPtr snap, int region);
  int region() const { return region_; }
  void setHighlightFrame(std::uint64_t frame);
  std::uint64_t highlightFrame() const { return highlight_frame_; }

  void zoom(double factor, double anchor = 0.5);  // frames axis
  void zoomOffsets(double factor, double anchor = 0.5);
  void pan(double fraction);
  void resetView();

  // The plot area, and the rectangle drawn for range `i` of the region (empty when out of view).
  QRect plotRect() const;
  QRect barRect(std::size_t i) const;
  // The range whose bar is nearest `pos` (within a few pixels), if any.
  std::optional<std::size_t> rangeAt(QPoint pos) const;

  QSize sizeHint() const override { return {800, 400}; }
  QSize minimumSizeHint() const override { return {240, 160}; }

 signals:
  void rangeClicked(quint64 frame);

 protected:
  void paintEvent(QPaintEvent*) override;
  void wheelEvent(QWheelEvent*) override;
  void mousePressEvent(QMouseEvent*) override;
  void mouseMoveEvent(QMouseEvent*) override;
  void mouseReleaseEvent(QMouseEvent*) override;
  void keyPressEvent(QKeyEvent*) override;

 private:
  const ShadowBuffer* buffer() const;
  double xOf(double frame) const;
  double yOf(double offset) const;
  void clampView();

  SnapshotPtr snap_;
  int region_ = -1;
  // Domain and view: frames [f0, f1], octets [o0, o1).
  double df0_ = 0, df1_ = 1, do0_ = 0, do1_ = 1;
  double vf0_ = 0, vf1_ = 1, vo0_ = 0, vo1_ = 1;
  std::uint64_t highlight_frame_ = 0;
  QPoint press_pos_;
  double press_vf0_ = 0, press_vo0_ = 0;
  bool dragging_ = false;
};

}  // namespace ddpscope::gui
