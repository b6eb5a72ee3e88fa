// SPDX-License-Identifier: GPL-2.0-or-later
// STag region map: one bar scaled to the region (known bounds, else the observed extent),
// placed ranges coloured by opcode, holes, overlaps, conflicts and bounds violations in
// warning colours. Zoom (wheel, +/-), pan (drag, arrows), Home resets; hover names ranges
// and frames; click selects a range. Geometry comes from layout_region (level of detail).
#pragma once

#include <QWidget>
#include <optional>

#include "region_geometry.h"
#include "snapshot.h"

namespace ddpscope::gui {

class RegionMapWidget : public QWidget {
  Q_OBJECT
 public:
  explicit RegionMapWidget(QWidget* parent = nullptr);
  void setRegion(SnapshotPtr snap, int region);
  int region() const { return region_; }

  void setView(std::uint64_t begin, std::uint64_t end);
  std::pair<std::uint64_t, std::uint64_t> view() const { return {vb_, ve_}; }
  std::pair<std::uint64_t, std::uint64_t> domain() const { return domain_; }
  void zoom(double factor, double anchor_fraction = 0.5);
  void pan(double fraction);
  void resetView();

  // Outlines the ranges placed by `frame` (0 clears) and brings them into view.
  void setHighlightFrame(std::uint64_t frame);
  std::uint64_t highlightFrame() const { return highlight_frame_; }
  // Spans of the current layout (for tests and the tooltip).
  const std::vector<MapSpan>& spans() const;
  QRect barRect() const;

  QSize sizeHint() const override { return {800, 200}; }
  QSize minimumSizeHint() const override { return {200, 120}; }

 signals:
  void rangeClicked(quint64 frame);

 protected:
  void paintEvent(QPaintEvent*) override;
  void wheelEvent(QWheelEvent*) override;
  void mousePressEvent(QMouseEvent*) override;
  void mouseMoveEvent(QMouseEvent*) override;
  void mouseReleaseEvent(QMouseEvent*) override;
  void keyPressEvent(QKeyEvent*) override;
  void resizeEvent(QResizeEvent*) override;

 private:
  const ShadowBuffer* buffer() const;
  QString describeColumn(int x) const;
  void invalidateLayout() { layout_valid_ = false; }

  SnapshotPtr snap_;
  int region_ = -1;
  std::pair<std::uint64_t, std::uint64_t> domain_{0, 0};
  std::uint64_t vb_ = 0, ve_ = 0;
  std::uint64_t highlight_frame_ = 0;
  std::optional<std::size_t> selected_range_;
  mutable std::vector<MapSpan> spans_;
  mutable bool layout_valid_ = false;
  mutable int layout_width_ = 0;
  QPoint press_pos_;
  std::uint64_t press_vb_ = 0;
  bool dragging_ = false;
};

}  // namespace ddpscope::gui
