// SPDX-License-Identifier: GPL-2.0-or-later
#include "placement_trace_widget.h"

#include <QKeyEvent>
#include <QMouseEvent>
#include <QPainter>
#include <QToolTip>
#include <QWheelEvent>
#include <algorithm>
#include <cmath>
#include <set>

#include "labels.h"
#include "region_geometry.h"
#include "zoom_pan_keys.h"

namespace ddpscope::gui {
namespace {
constexpr int kLeft = 92;  // offset labels
constexpr int kRight = 16;
constexpr int kTop = 30;
constexpr int kBottom = 48;  // frame labels and legend

// A round step (1, 2, 5 x 10^n) giving at most `n` ticks over `span`.
double niceStep(double span, int n) {
  const double raw = span / std::max(1, n);
  const double p = std::pow(10.0, std::floor(std::log10(std::max(raw, 1e-9))));
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (m * p >= raw) return m * p;
  return 10 * p;
}
// Offsets step on powers of two.
double pow2Step(double span, int n) {
  double s = 1;
  while (s < span / std::max(1, n) && s < 1e18)
    s *= 2;
  return s;
}
QString offsetLabel(double off) {
  const auto o = static_cast<std::uint64_t>(off);
  if (o && o % (1u << 20) == 0) return QStringLiteral("+%1 MiB").arg(o >> 20);
  if (o && o % 1024 == 0) return QStringLiteral("+%1 KiB").arg(o >> 10);
  return QStringLiteral("+0x%1").arg(o, 0, 16);
}
}  // namespace

PlacementTraceWidget::PlacementTraceWidget(QWidget* parent) : QWidget(parent) {
  setFocusPolicy(Qt::StrongFocus);
  setMouseTracking(true);
  setAccessibleName(tr("Placement trace"));
}

const ShadowBuffer* PlacementTraceWidget::buffer() const {
  if (!snap_ || region_ < 0 || std::size_t(region_) >= snap_->regions.size()) return nullptr;
  return snap_->regions[std::size_t(region_)].buffer;
}

void PlacementTraceWidget::setRegion(SnapshotPtr snap, int region) {
  const bool same = snap_ && snap && region == region_;
  snap_ = std::move(snap);
  region_ = region;
  df0_ = 0, df1_ = 1, do0_ = 0, do1_ = 1;
  if (const ShadowBuffer* b = buffer()) {
    const auto [lo, hi] = region_domain(geometry_input(*b));
    const std::uint64_t origin = b->base ? std::min(*b->base, lo) : lo;
    do0_ = double(origin);
    do1_ = double(std::max(hi, origin + 1));
    std::uint64_t f0 = UINT64_MAX, f1 = 0;
    for (const auto& r : b->ranges()) {
      f0 = std::min(f0, r.frame);
      f1 = std::max(f1, r.frame);
    }
    if (f0 <= f1) {
      df0_ = double(f0) - 0.5;
      df1_ = double(f1) + 0.5;
    }
  }
  if (!same) resetView();
  clampView();
  update();
}

void PlacementTraceWidget::resetView() {
  vf0_ = df0_, vf1_ = df1_, vo0_ = do0_, vo1_ = do1_;
  update();
}

void PlacementTraceWidget::clampView() {
  auto clamp_axis = [](double& a, double& b, double lo, double hi, double min_span) {
    double span = std::clamp(b - a, std::min(min_span, hi - lo), hi - lo);
    a = std::clamp(a, lo, hi - span);
    b = a + span;
  };
  clamp_axis(vf0_, vf1_, df0_, df1_, 2.0);
  clamp_axis(vo0_, vo1_, do0_, do1_, 16.0);
}

void PlacementTraceWidget::zoom(double factor, double anchor) {
  const double span = vf1_ - vf0_, a = vf0_ + span * anchor, ns = span / factor;
  vf0_ = a - ns * anchor;
  vf1_ = vf0_ + ns;
  clampView();
  update();
}

void PlacementTraceWidget::zoomOffsets(double factor, double anchor) {
  const double span = vo1_ - vo0_, a = vo0_ + span * anchor, ns = span / factor;
  vo0_ = a - ns * anchor;
  vo1_ = vo0_ + ns;
  clampView();
  update();
}

void PlacementTraceWidget::pan(double fraction) {
  const double d = (vf1_ - vf0_) * fraction;
  vf0_ += d;
  vf1_ += d;
  clampView();
  update();
}

void PlacementTraceWidget::setHighlightFrame(std::uint64_t frame) {
  highlight_frame_ = frame;
  if (frame && (double(frame) < vf0_ || double(frame) > vf1_)) {
    const double span = vf1_ - vf0_;
    vf0_ = double(frame) - span / 2;
    vf1_ = vf0_ + span;
    clampView();
  }
  update();
}

QRect PlacementTraceWidget::plotRect() const {
  return QRect(kLeft, kTop, std::max(1, width() - kLeft - kRight),
               std::max(1, height() - kTop - kBottom));
}

double PlacementTraceWidget::xOf(double frame) const {
  const QRect p = plotRect();
  return p.left() + (frame - vf0_) * p.width() / std::max(1e-9, vf1_ - vf0_);
}

double PlacementTraceWidget::yOf(double offset) const {
  const QRect p = plotRect();  // offsets grow upwards
  return p.bottom() + 1 - (offset - vo0_) * p.height() / std::max(1e-9, vo1_ - vo0_);
}

QRect PlacementTraceWidget::barRect(std::size_t i) const {
  const ShadowBuffer* b = buffer();
  if (!b || i >= b->ranges().size()) return {};
  const PlacedRange& r = b->ranges()[i];
  const QRect plot = plotRect();
  const double px_per_frame = plot.width() / std::max(1e-9, vf1_ - vf0_);
  const int w = std::clamp(int(px_per_frame * 0.6), 2, 10) + (r.violation ? 2 : 0);
  const double x = xOf(double(r.frame));
  double y0 = yOf(double(r.end)), y1 = yOf(double(r.begin));
  const int min_h = r.violation ? 6 : 2;  // a violation is never a sliver
  if (y1 - y0 < min_h) {
    const double mid = (y0 + y1) / 2;
    y0 = mid - min_h / 2.0;
    y1 = mid + min_h / 2.0;
  }
  QRect rect(int(std::lround(x - w / 2.0)), int(std::floor(y0)), w,
             std::max(min_h, int(std::ceil(y1 - y0))));
  return rect.intersected(plot);
}

std::optional<std::size_t> PlacementTraceWidget::rangeAt(QPoint pos) const {
  const ShadowBuffer* b = buffer();
  if (!b) return std::nullopt;
  std::optional<std::size_t> best;
  int best_d = 6;
  for (std::size_t i = 0; i < b->ranges().size(); ++i) {
    const QRect r = barRect(i);
    if (r.isEmpty()) continue;
    const int dx = pos.x() < r.left() ? r.left() - pos.x() : std::max(0, pos.x() - r.right());
    const int dy = pos.y() < r.top() ? r.top() - pos.y() : std::max(0, pos.y() - r.bottom());
    const int d = dx + dy;
    if (d < best_d || (d == best_d && best)) {
      best_d = d;
      best = i;
    }
  }
  return best;
}

void PlacementTraceWidget::paintEvent(QPaintEvent*) {
  QPainter p(this);
  const QPalette& pal = palette();
  p.fillRect(rect(), pal.color(QPalette::Base));
  p.setPen(pal.color(QPalette::Text));
  const ShadowBuffer* b = buffer();
  if (!b || b->ranges().empty()) {
    p.drawText(rect(), Qt::AlignCenter,
               b ? tr("No placements recorded for this region")
                 : tr("Select a region (STag) to see its placement trace"));
    return;
  }
  const QRect plot = plotRect();
  const auto& ranges = b->ranges();
  QString title = tr("%1   %2 placements   x: frame   y: offset from 0x%3")
                      .arg(regionLabel(*b))
                      .arg(ranges.size())
                      .arg(b->base ? *b->base : static_cast<std::uint64_t>(do0_), 0, 16);
  p.drawText(QRect(kLeft, 4, width() - kLeft - kRight, 20), Qt::AlignLeft | Qt::AlignVCenter,
             title);
  p.setPen(pal.color(QPalette::Mid));
  p.drawRect(plot.adjusted(0, 0, -1, -1));

  // Grid and axes.
  const QFontMetrics fm = p.fontMetrics();
  const double fstep = std::max(1.0, niceStep(vf1_ - vf0_, std::max(2, plot.width() / 90)));
  for (double f = std::ceil(vf0_ / fstep) * fstep; f <= vf1_; f += fstep) {
    const int x = int(std::lround(xOf(f)));
    p.setPen(pal.color(QPalette::Midlight));
    p.drawLine(x, plot.top(), x, plot.bottom());
    p.setPen(pal.color(QPalette::Text));
    const QString l = QString::number(static_cast<qint64>(f));
    p.drawText(x - fm.horizontalAdvance(l) / 2, plot.bottom() + 4 + fm.ascent(), l);
  }
  const double ostep = pow2Step(vo1_ - vo0_, std::max(2, plot.height() / 40));
  // Offsets from the base when known (a violation before it sits below +0x0, unlabelled).
  const double origin = b->base ? double(*b->base) : do0_;
  const double rel0 = std::max(0.0, vo0_ - origin);
  for (double o = std::ceil(rel0 / ostep) * ostep; origin + o <= vo1_; o += ostep) {
    const int y = int(std::lround(yOf(origin + o)));
    p.setPen(pal.color(QPalette::Midlight));
    p.drawLine(plot.left(), y, plot.right(), y);
    p.setPen(pal.color(QPalette::Text));
    const QString l = offsetLabel(o);
    p.drawText(plot.left() - 6 - fm.horizontalAdvance(l), y + fm.ascent() / 2, l);
  }
  // Advertised bounds.
  if (b->base && b->length) {
    QPen pen(pal.color(QPalette::Text), 1, Qt::DashLine);
    p.setPen(pen);
    for (double o : {double(*b->base), double(*b->base + *b->length)}) {
      const int y = int(std::lround(yOf(o)));
      if (y < plot.top() || y > plot.bottom() + 1) continue;
      p.drawLine(plot.left(), y, plot.right(), y);
      p.drawText(plot.right() - fm.horizontalAdvance(tr("end")) - 2, y - 2,
                 o == double(*b->base) ? tr("base") : tr("end"));
    }
  }
  p.setClipRect(plot);
  // Bars: normal first, then placements over earlier octets (outlined in the colour of core's
  // class: rewritten after delivery, the same content again, conflict), violations on top.
  const QColor overlap_c = spanColor(SpanKind::overlap);
  const QColor rewritten_c = spanColor(SpanKind::rewritten);
  const QColor conflict_c = spanColor(SpanKind::conflict);
  const QColor violation_c = spanColor(SpanKind::violation);
  for (int pass = 0; pass < 3; ++pass) {
    for (std::size_t i = 0; i < ranges.size(); ++i) {
      const PlacedRange& r = ranges[i];
      const int kind = r.violation ? 2 : (r.overlap || r.conflict) ? 1 : 0;
      if (kind != pass) continue;
      const double x = xOf(double(r.frame));
      if (x < plot.left() - 12 || x > plot.right() + 12) continue;
      const QRect br = barRect(i);
      if (br.isEmpty()) continue;
      if (kind == 0) {
        p.fillRect(br, opcodeColor(r.opcode));
      } else if (kind == 1) {
        p.fillRect(br, opcodeColor(r.opcode));
        p.setPen(QPen(r.conflict ? conflict_c : r.reused ? rewritten_c : overlap_c, 2));
        p.drawRect(br.adjusted(-1, -1, 0, 0));
      } else {
        p.fillRect(br, violation_c);
      }
    }
  }
  p.setClipping(false);
  // Violation labels.
  int last_right = -1000;
  for (std::size_t i = 0; i < ranges.size(); ++i) {
    const PlacedRange& r = ranges[i];
    if (!r.violation) continue;
    const QRect br = barRect(i);
    if (br.isEmpty()) continue;
    const QString l = tr("frame %1 out of bounds").arg(r.frame);
    const int tw = fm.horizontalAdvance(l);
    int tx = br.right() + 4;
    if (tx + tw > plot.right()) tx = br.left() - 4 - tw;
    if (tx <= last_right) continue;
    p.setPen(violation_c.darker(120));
    p.drawText(
        tx, std::clamp(br.center().y() + fm.ascent() / 2, plot.top() + fm.ascent(), plot.bottom()),
        l);
    last_right = tx + tw;
  }
  // Highlighted frame.
  if (highlight_frame_) {
    const int x = int(std::lround(xOf(double(highlight_frame_))));
    if (x >= plot.left() && x <= plot.right()) {
      p.setPen(QPen(pal.color(QPalette::Highlight), 1, Qt::DotLine));
      p.drawLine(x, plot.top(), x, plot.bottom());
    }
  }
  // Legend.
  std::set<int> ops;
  for (const auto& r : ranges)
    ops.insert(r.opcode);
  int lx = kLeft;
  const int ly = height() - 18;
  auto legend = [&](const QColor& c, const QString& text) {
    p.fillRect(QRect(lx, ly, 12, 12), c);
    p.setPen(pal.color(QPalette::Text));
    p.drawText(lx + 16, ly + fm.ascent() - 1, text);
    lx += 28 + fm.horizontalAdvance(text);
  };
  for (int o : ops)
    legend(opcodeColor(o), opcodeName(o));
  legend(rewritten_c, tr("rewritten after delivery (outline)"));
  legend(overlap_c, tr("same content again (outline)"));
  legend(conflict_c, tr("conflict (outline)"));
  legend(violation_c, tr("bounds violation"));
  if (hasFocus()) {
    p.setPen(QPen(pal.color(QPalette::Highlight), 1, Qt::DotLine));
    p.drawRect(rect().adjusted(0, 0, -1, -1));
  }
}

void PlacementTraceWidget::wheelEvent(QWheelEvent* ev) {
  const QRect plot = plotRect();
  const double steps = ev->angleDelta().y() / 120.0;
  if (steps != 0) {
    if (ev->modifiers() & Qt::ControlModifier)
      zoomOffsets(std::pow(1.5, steps),
                  std::clamp(double(plot.bottom() - ev->position().y()) / plot.height(), 0.0, 1.0));
    else
      zoom(std::pow(1.5, steps),
           std::clamp((ev->position().x() - plot.left()) / plot.width(), 0.0, 1.0));
  }
  ev->accept();
}

void PlacementTraceWidget::mousePressEvent(QMouseEvent* ev) {
  setFocus(Qt::MouseFocusReason);
  press_pos_ = ev->position().toPoint();
  press_vf0_ = vf0_;
  press_vo0_ = vo0_;
  dragging_ = false;
}

void PlacementTraceWidget::mouseMoveEvent(QMouseEvent* ev) {
  const QPoint pos = ev->position().toPoint();
  const QRect plot = plotRect();
  if (ev->buttons() & Qt::LeftButton) {
    const QPoint d = pos - press_pos_;
    if (d.manhattanLength() > 3) dragging_ = true;
    if (dragging_) {
      const double fs = vf1_ - vf0_, os = vo1_ - vo0_;
      vf0_ = press_vf0_ - d.x() * fs / plot.width();
      vf1_ = vf0_ + fs;
      vo0_ = press_vo0_ + d.y() * os / plot.height();
      vo1_ = vo0_ + os;
      clampView();
      update();
    }
    return;
  }
  const ShadowBuffer* b = buffer();
  if (auto i = rangeAt(pos); b && i) {
    const PlacedRange& r = b->ranges()[*i];
    QString flags;
    if (r.overlap) flags += tr(" overlap");
    if (r.conflict) flags += tr(" conflict");
    if (r.reused) flags += tr(" rewritten after delivery");
    if (r.reused) flags += tr(" reused");
    if (r.violation) flags += tr(" out of bounds");
    QToolTip::showText(ev->globalPosition().toPoint(),
                       tr("frame %1: %2 TO [0x%3, 0x%4) %5 octets%6")
                           .arg(r.frame)
                           .arg(opcodeName(r.opcode))
                           .arg(r.begin, 0, 16)
                           .arg(r.end, 0, 16)
                           .arg(r.end - r.begin)
                           .arg(flags),
                       this);
  } else {
    QToolTip::hideText();
  }
}

void PlacementTraceWidget::mouseReleaseEvent(QMouseEvent* ev) {
  if (dragging_) {
    dragging_ = false;
    return;
  }
  const ShadowBuffer* b = buffer();
  if (auto i = rangeAt(ev->position().toPoint()); b && i) {
    highlight_frame_ = b->ranges()[*i].frame;
    update();
    emit rangeClicked(quint64(highlight_frame_));
  }
}

void PlacementTraceWidget::keyPressEvent(QKeyEvent* ev) {
  if (!handleZoomPanKey(*this, ev)) QWidget::keyPressEvent(ev);
}

}  // namespace ddpscope::gui
