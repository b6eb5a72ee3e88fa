// SPDX-License-Identifier: GPL-2.0-or-later
#include "region_map_widget.h"

#include <QKeyEvent>
#include <QMouseEvent>
#include <QPainter>
#include <QStringList>
#include <QToolTip>
#include <QWheelEvent>
#include <algorithm>
#include <cmath>
#include <set>

#include "labels.h"
#include "region_table_model.h"
#include "zoom_pan_keys.h"

namespace ddpscope::gui {
namespace {
constexpr int kMargin = 12;
constexpr int kHeader = 58;
constexpr int kBarHeight = 64;
constexpr int kIssueLane = 8;
constexpr int kMinViolationPx = 4;      // a violation is never narrower
constexpr std::uint64_t kMinSpan = 16;  // octets across the whole bar at most zoom

// Tick step: the power of two nearest above span / max_ticks (hex offsets read round).
std::uint64_t tickStep(std::uint64_t span, int max_ticks) {
  const std::uint64_t raw =
      std::max<std::uint64_t>(1, span / std::uint64_t(std::max(1, max_ticks)));
  std::uint64_t step = 1;
  while (step < raw && step < (std::uint64_t{1} << 62))
    step <<= 1;
  return step;
}

QString offsetLabel(std::uint64_t off) {
  // Round values in the largest unit that divides them.
  if (off && off % (std::uint64_t{1} << 30) == 0) return QStringLiteral("+%1 GiB").arg(off >> 30);
  if (off && off % (std::uint64_t{1} << 20) == 0) return QStringLiteral("+%1 MiB").arg(off >> 20);
  if (off && off % 1024 == 0) return QStringLiteral("+%1 KiB").arg(off >> 10);
  return QStringLiteral("+0x%1").arg(off, 0, 16);
}
}  // namespace

RegionMapWidget::RegionMapWidget(QWidget* parent) : QWidget(parent) {
  setFocusPolicy(Qt::StrongFocus);
  setMouseTracking(true);
  setAccessibleName(tr("Region map"));
}

const ShadowBuffer* RegionMapWidget::buffer() const {
  if (!snap_ || region_ < 0 || std::size_t(region_) >= snap_->regions.size()) return nullptr;
  return snap_->regions[std::size_t(region_)].buffer;
}

void RegionMapWidget::setRegion(SnapshotPtr snap, int region) {
  const bool same = snap_ && region == region_ && buffer() && snap && region >= 0 &&
                    std::size_t(region) < snap->regions.size() &&
                    snap->regions[std::size_t(region)].buffer->key == buffer()->key;
  snap_ = std::move(snap);
  region_ = region;
  selected_range_.reset();
  const auto old_domain = domain_;
  domain_ = {0, 0};
  if (const ShadowBuffer* b = buffer()) domain_ = region_domain(geometry_input(*b));
  // Keep the zoom when the same region grows in a live update, unless fully zoomed out.
  if (!same || (vb_ == old_domain.first && ve_ == old_domain.second))
    resetView();
  else
    setView(vb_, ve_);
  invalidateLayout();
  update();
}

void RegionMapWidget::setView(std::uint64_t begin, std::uint64_t end) {
  const auto [lo, hi] = domain_;
  if (hi <= lo) {
    vb_ = ve_ = 0;
  } else {
    std::uint64_t span = std::clamp<std::uint64_t>(end > begin ? end - begin : 1,
                                                   std::min(kMinSpan, hi - lo), hi - lo);
    begin = std::clamp<std::uint64_t>(begin, lo, hi - span);
    vb_ = begin;
    ve_ = begin + span;
  }
  invalidateLayout();
  update();
}

void RegionMapWidget::resetView() {
  vb_ = domain_.first;
  ve_ = domain_.second;
  invalidateLayout();
  update();
}

void RegionMapWidget::zoom(double factor, double anchor) {
  if (ve_ <= vb_) return;
  const long double span = ve_ - vb_;
  const long double new_span = std::max<long double>(1, span / factor);
  const long double anchor_to = vb_ + span * anchor;
  const long double nb = std::max<long double>(0, anchor_to - new_span * anchor);
  setView(static_cast<std::uint64_t>(nb), static_cast<std::uint64_t>(nb + new_span));
}

void RegionMapWidget::pan(double fraction) {
  if (ve_ <= vb_) return;
  const long double span = ve_ - vb_;
  const long double nb = std::max<long double>(0, vb_ + span * fraction);
  setView(static_cast<std::uint64_t>(nb), static_cast<std::uint64_t>(nb + span));
}

void RegionMapWidget::setHighlightFrame(std::uint64_t frame) {
  highlight_frame_ = frame;
  if (const ShadowBuffer* b = buffer(); b && frame) {
    // Bring the frame's ranges into view.
    for (const auto& r : b->ranges()) {
      if (r.frame != frame) continue;
      if (r.end <= vb_ || r.begin >= ve_) {
        const std::uint64_t span = ve_ - vb_;
        const std::uint64_t mid = r.begin + (r.end - r.begin) / 2;
        setView(mid > span / 2 ? mid - span / 2 : 0, (mid > span / 2 ? mid - span / 2 : 0) + span);
      }
      break;
    }
  }
  update();
}

QRect RegionMapWidget::barRect() const {
  return QRect(kMargin, kHeader, std::max(1, width() - 2 * kMargin), kBarHeight);
}

const std::vector<MapSpan>& RegionMapWidget::spans() const {
  const int w = barRect().width();
  if (!layout_valid_ || layout_width_ != w) {
    spans_.clear();
    if (const ShadowBuffer* b = buffer(); b && ve_ > vb_) {
      RegionGeometryInput in = geometry_input(*b);
      in.min_violation_px = kMinViolationPx;
      spans_ = layout_region(in, vb_, ve_, w);
    }
    layout_valid_ = true;
    layout_width_ = w;
  }
  return spans_;
}

void RegionMapWidget::resizeEvent(QResizeEvent*) {
  invalidateLayout();
}

void RegionMapWidget::paintEvent(QPaintEvent*) {
  QPainter p(this);
  const QPalette& pal = palette();
  p.fillRect(rect(), pal.color(QPalette::Base));
  p.setPen(pal.color(QPalette::Text));
  const ShadowBuffer* b = buffer();
  if (!b) {
    p.drawText(rect(), Qt::AlignCenter, tr("Select a region (STag) to see its map"));
    return;
  }
  const QRect bar = barRect();
  const RegionInfo& info = snap_->regions[std::size_t(region_)];
  QString title = regionLabel(*b);
  if (b->base && b->length)
    title += tr("   bounds [0x%1, 0x%2)").arg(*b->base, 0, 16).arg(*b->base + *b->length, 0, 16);
  else
    title += tr("   bounds unknown: observed extent");
  title +=
      tr("   %1 placed in %2 ranges").arg(bytesText(b->bytes_placed())).arg(b->ranges().size());
  if (b->ranges_dropped()) title += tr(" (+%1 not kept)").arg(b->ranges_dropped());
  if (RegionTableModel::issueCount(info))
    title += tr("   issues: %1").arg(RegionTableModel::issuesText(info));
  if (info.overwrites) title += QStringLiteral("   ") + RegionTableModel::reuseText(info);
  p.drawText(QRect(kMargin, 4, width() - 2 * kMargin, 18), Qt::AlignLeft | Qt::AlignVCenter, title);
  p.drawText(
      QRect(kMargin, 20, width() - 2 * kMargin, 18), Qt::AlignLeft | Qt::AlignVCenter,
      tr("view [0x%1, 0x%2)  %3 per pixel   axis: offset from 0x%4")
          .arg(vb_, 0, 16)
          .arg(ve_, 0, 16)
          .arg(bytesText(std::max<std::uint64_t>(1, (ve_ - vb_) / std::uint64_t(bar.width()))))
          .arg(b->base ? *b->base : domain_.first, 0, 16));

  // Hole background (only inside the known bounds: nothing exists before the base or after
  // the end), then spans.
  QColor hole = pal.color(QPalette::AlternateBase);
  QColor hatch = pal.color(QPalette::Mid);
  QRect hole_rect = bar;
  if (b->base && b->length) {
    const double x0 = octet_to_x(vb_, ve_, bar.width(), *b->base);
    const double x1 = octet_to_x(vb_, ve_, bar.width(), *b->base + *b->length);
    const int l = bar.left() + int(std::clamp(x0, 0.0, double(bar.width())));
    const int r = bar.left() + int(std::clamp(std::ceil(x1), 0.0, double(bar.width())));
    hole_rect = QRect(l, bar.top(), std::max(0, r - l), bar.height());
  }
  p.fillRect(hole_rect, hole);
  p.fillRect(hole_rect, QBrush(hatch, Qt::BDiagPattern));
  const QRect lane(bar.left(), bar.bottom() + 2, bar.width(), kIssueLane);
  for (const MapSpan& s : spans()) {
    const QRect r(bar.left() + s.x0, bar.top(), s.x1 - s.x0, bar.height());
    if (s.kind == SpanKind::hole) continue;
    QColor c = opcodeColor(s.opcode);
    if (s.kind == SpanKind::partial) {
      // Part of the column is a hole: lighter, with a hole stripe on top.
      p.fillRect(r, c.lighter(130));
      p.fillRect(QRect(r.left(), r.top(), r.width(), r.height() / 4),
                 QBrush(hatch, Qt::Dense4Pattern));
    } else {
      p.fillRect(r, c);
    }
    if (s.kind == SpanKind::overlap || s.kind == SpanKind::conflict ||
        s.kind == SpanKind::violation) {
      const QColor w = spanColor(s.kind);
      // Issue colour over the upper half (the opcode stays visible below) and in the lane.
      p.fillRect(QRect(r.left(), lane.top(), std::max(2, r.width()), lane.height()), w);
      p.fillRect(QRect(r.left(), r.top(), std::max(2, r.width()), r.height() / 2), w);
    } else if (s.kind == SpanKind::rewritten) {
      // Normal reuse: its colour in the lane and a thin top stripe only.
      const QColor w = spanColor(s.kind);
      p.fillRect(QRect(r.left(), lane.top(), std::max(2, r.width()), lane.height()), w);
      p.fillRect(QRect(r.left(), r.top(), std::max(2, r.width()), std::max(2, r.height() / 6)), w);
    }
  }
  // Violations: a marker and a label above the bar at any scale.
  {
    const QColor vc = spanColor(SpanKind::violation);
    int last_label_right = -1000;
    for (const MapSpan& s : spans()) {
      if (s.kind != SpanKind::violation) continue;
      const int cx = bar.left() + (s.x0 + s.x1) / 2;
      const QPoint tri[3] = {{cx - 5, bar.top() - 9}, {cx + 5, bar.top() - 9}, {cx, bar.top() - 2}};
      p.setPen(Qt::NoPen);
      p.setBrush(vc);
      p.drawPolygon(tri, 3);
      p.setBrush(Qt::NoBrush);
      const QString label = tr("out of bounds");
      const int tw = p.fontMetrics().horizontalAdvance(label);
      const int tx = std::clamp(cx + 7, bar.left(), bar.right() - tw);
      if (tx > last_label_right + 8) {
        p.setPen(vc.darker(130));
        p.drawText(tx, bar.top() - 3, label);
        last_label_right = tx + tw;
      }
    }
  }
  // Known bounds: a frame around the part of the bar inside them.
  p.setBrush(Qt::NoBrush);
  if (b->base && b->length) {
    const double x0 = octet_to_x(vb_, ve_, bar.width(), *b->base);
    const double x1 = octet_to_x(vb_, ve_, bar.width(), *b->base + *b->length);
    QPen pen(pal.color(QPalette::Text), 2);
    p.setPen(pen);
    const int l = bar.left() + int(std::clamp(x0, -2.0, double(bar.width() + 2)));
    const int r = bar.left() + int(std::clamp(x1, -2.0, double(bar.width() + 2)));
    p.drawRect(QRect(QPoint(l, bar.top() - 2), QPoint(r - 1, bar.bottom() + 2)));
  } else {
    p.setPen(QPen(pal.color(QPalette::Mid), 1, Qt::DashLine));
    p.drawRect(bar.adjusted(0, 0, -1, -1));
  }
  // Violations stay on top of the bounds frame (they sit right at its edges).
  for (const MapSpan& s : spans()) {
    if (s.kind != SpanKind::violation) continue;
    const QColor w = spanColor(s.kind);
    p.fillRect(QRect(bar.left() + s.x0, lane.top(), s.x1 - s.x0, lane.height()), w);
    p.fillRect(QRect(bar.left() + s.x0, bar.top(), s.x1 - s.x0, bar.height() / 2), w);
  }
  // Highlighted frame / selected range.
  auto outline = [&](const PlacedRange& r, const QColor& c) {
    const double x0 = octet_to_x(vb_, ve_, bar.width(), r.begin);
    const double x1 = octet_to_x(vb_, ve_, bar.width(), r.end);
    if (x1 < 0 || x0 > bar.width()) return;
    const int l = bar.left() + int(std::max(0.0, x0));
    const int w = std::max(3, int(std::min<double>(bar.width(), x1) - std::max(0.0, x0)));
    p.setPen(QPen(c, 2));
    p.drawRect(QRect(l, bar.top() - 4, w, bar.height() + 8));
  };
  const auto& ranges = b->ranges();
  if (highlight_frame_)
    for (const auto& r : ranges)
      if (r.frame == highlight_frame_) outline(r, pal.color(QPalette::Highlight));
  if (selected_range_ && *selected_range_ < ranges.size())
    outline(ranges[*selected_range_], pal.color(QPalette::Highlight).darker(140));

  // Axis: offsets relative to the domain start.
  p.setPen(pal.color(QPalette::Text));
  const int axis_y = lane.bottom() + 4;
  // Ticks on round offsets (multiples of a power of two) from the origin (base when known).
  const std::uint64_t origin = b->base ? *b->base : domain_.first;
  const std::uint64_t step = tickStep(ve_ - vb_, std::max(2, bar.width() / 110));
  const std::uint64_t from_origin = vb_ > origin ? vb_ - origin : 0;
  int last_right = -1000;
  for (std::uint64_t off = (from_origin + step - 1) / step * step; origin + off <= ve_;
       off += step) {
    const std::uint64_t to = origin + off;
    if (to < vb_) continue;
    const int x = bar.left() + int(std::lround(octet_to_x(vb_, ve_, bar.width(), to)));
    if (x > bar.right() + 1) break;
    p.drawLine(x, axis_y, x, axis_y + 4);
    const QString label = offsetLabel(off);
    const int tw = p.fontMetrics().horizontalAdvance(label);
    const int tx = std::clamp(x - tw / 2, bar.left(), bar.right() - tw);
    if (tx <= last_right + 6) continue;
    p.drawText(tx, axis_y + 6 + p.fontMetrics().ascent(), label);
    last_right = tx + tw;
    if (step > UINT64_MAX - off) break;
  }
  // Legend: opcodes present, then issue kinds.
  std::set<int> ops;
  for (const auto& r : ranges)
    ops.insert(r.opcode);
  int lx = kMargin;
  const int ly = axis_y + 12 + p.fontMetrics().height();
  auto legend = [&](const QColor& c, const QString& text, Qt::BrushStyle style = Qt::SolidPattern) {
    p.fillRect(QRect(lx, ly, 12, 12), QBrush(c, style));
    p.setPen(pal.color(QPalette::Text));
    p.drawText(lx + 16, ly + p.fontMetrics().ascent() - 1, text);
    lx += 28 + p.fontMetrics().horizontalAdvance(text);
  };
  for (int o : ops)
    legend(opcodeColor(o), opcodeName(o));
  legend(hatch, tr("hole"), Qt::BDiagPattern);
  legend(spanColor(SpanKind::rewritten), tr("rewritten after delivery (reuse)"));
  legend(spanColor(SpanKind::overlap), tr("same content again"));
  legend(spanColor(SpanKind::conflict), tr("conflict (in flight)"));
  legend(spanColor(SpanKind::violation), tr("bounds violation"));
  if (hasFocus()) {
    p.setPen(QPen(pal.color(QPalette::Highlight), 1, Qt::DotLine));
    p.drawRect(rect().adjusted(0, 0, -1, -1));
  }
}

QString RegionMapWidget::describeColumn(int x) const {
  const ShadowBuffer* b = buffer();
  const QRect bar = barRect();
  if (!b || x < 0 || x >= bar.width() || ve_ <= vb_) return {};
  const auto [a, e] = column_octets(vb_, ve_, bar.width(), x);
  QStringList lines;
  lines << tr("TO [0x%1, 0x%2)").arg(a, 0, 16).arg(e, 0, 16);
  const auto hits = ranges_at(b->ranges(), a, e, 9);
  for (std::size_t i = 0; i < std::min<std::size_t>(hits.size(), 8); ++i) {
    const PlacedRange& r = b->ranges()[hits[i]];
    QString flags;
    if (r.overlap) flags += tr(" overlap");
    if (r.conflict) flags += tr(" conflict");
    if (r.reused) flags += tr(" reused");
    if (r.violation) flags += tr(" out of bounds");
    lines << tr("frame %1: %2 [0x%3, 0x%4) %5 octets%6")
                 .arg(r.frame)
                 .arg(opcodeName(r.opcode))
                 .arg(r.begin, 0, 16)
                 .arg(r.end, 0, 16)
                 .arg(r.end - r.begin)
                 .arg(flags);
  }
  if (hits.size() > 8) lines << tr("…");
  if (hits.empty()) {
    // Name the hole around the column.
    const auto& ext = b->extents();
    auto it = ext.upper_bound(a);
    const std::uint64_t hole_end = it == ext.end() ? domain_.second : it->first;
    std::uint64_t hole_begin = domain_.first;
    if (it != ext.begin()) hole_begin = std::prev(it)->second;
    lines << tr("hole [0x%1, 0x%2): %3 never placed")
                 .arg(hole_begin, 0, 16)
                 .arg(hole_end, 0, 16)
                 .arg(bytesText(hole_end - hole_begin));
  }
  return lines.join(QLatin1Char('\n'));
}

void RegionMapWidget::wheelEvent(QWheelEvent* ev) {
  const QRect bar = barRect();
  const double anchor = std::clamp((ev->position().x() - bar.left()) / bar.width(), 0.0, 1.0);
  const double steps = ev->angleDelta().y() / 120.0;
  if (steps != 0) zoom(std::pow(1.5, steps), anchor);
  ev->accept();
}

void RegionMapWidget::mousePressEvent(QMouseEvent* ev) {
  setFocus(Qt::MouseFocusReason);
  press_pos_ = ev->position().toPoint();
  press_vb_ = vb_;
  dragging_ = false;
}

void RegionMapWidget::mouseMoveEvent(QMouseEvent* ev) {
  const QRect bar = barRect();
  const QPoint pos = ev->position().toPoint();
  if (ev->buttons() & Qt::LeftButton) {
    const int dx = pos.x() - press_pos_.x();
    if (std::abs(dx) > 3) dragging_ = true;
    if (dragging_ && ve_ > vb_) {
      const long double per_px = static_cast<long double>(ve_ - vb_) / bar.width();
      const long double nb = std::max<long double>(0, press_vb_ - dx * per_px);
      const std::uint64_t span = ve_ - vb_;
      setView(static_cast<std::uint64_t>(nb), static_cast<std::uint64_t>(nb) + span);
    }
    return;
  }
  if (bar.adjusted(0, 0, 0, kIssueLane + 2).contains(pos))
    QToolTip::showText(ev->globalPosition().toPoint(), describeColumn(pos.x() - bar.left()), this);
  else
    QToolTip::hideText();
}

void RegionMapWidget::mouseReleaseEvent(QMouseEvent* ev) {
  if (dragging_) {
    dragging_ = false;
    return;
  }
  const ShadowBuffer* b = buffer();
  const QRect bar = barRect();
  const QPoint pos = ev->position().toPoint();
  if (!b || !bar.adjusted(0, -4, 0, kIssueLane + 4).contains(pos)) return;
  const auto [a, e] = column_octets(vb_, ve_, bar.width(), pos.x() - bar.left());
  const auto hits = ranges_at(b->ranges(), a, e, SIZE_MAX);
  if (hits.empty()) {
    selected_range_.reset();
    update();
    return;
  }
  selected_range_ = hits.back();  // the latest placement is the visible one
  const std::uint64_t frame = b->ranges()[hits.back()].frame;
  highlight_frame_ = frame;
  update();
  emit rangeClicked(frame);
}

void RegionMapWidget::keyPressEvent(QKeyEvent* ev) {
  if (!handleZoomPanKey(*this, ev)) QWidget::keyPressEvent(ev);
}

}  // namespace ddpscope::gui
