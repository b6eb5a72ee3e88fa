// SPDX-License-Identifier: GPL-2.0-or-later
#include "msn_chart_widget.h"

#include <QImage>
#include <QKeyEvent>
#include <QMouseEvent>
#include <QPainter>
#include <QPainterPath>
#include <QToolTip>
#include <QWheelEvent>
#include <algorithm>
#include <climits>
#include <cmath>

#include "labels.h"
#include "zoom_pan_keys.h"

namespace ddpscope::gui {
namespace {
constexpr int kLeft = 92, kRight = 16, kTop = 48, kBottom = 40;
constexpr double kMaxRowHeight = 26;  // a few messages stay rows, not full-height slabs
constexpr double kMinDetailRow = 4;   // below this a row is aggregated
constexpr double kHalfFrame = 0.4;    // a bar covers its frames' slots +-0.4 frame

// A 1/2/5 x 10^k integer step giving at most `max_ticks` ticks over `span`.
double niceStep(double span, int max_ticks) {
  const double raw = std::max(1.0, span / std::max(1, max_ticks));
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (m * mag >= raw) return m * mag;
  return 10 * mag;
}

std::uint64_t endFrame(const MessageRecord& r) {
  return r.placed_frame ? std::max(r.placed_frame, r.first_frame) : r.first_frame;
}

QPainterPath diamond(QPointF c, double s) {
  QPainterPath d;
  d.moveTo(c.x(), c.y() - s);
  d.lineTo(c.x() + s, c.y());
  d.lineTo(c.x(), c.y() + s);
  d.lineTo(c.x() - s, c.y());
  d.closeSubpath();
  return d;
}

// The gap marker: a downward red triangle over a red stem.
void gapMarker(QPainter& p, const QRectF& r) {
  QPainterPath t;
  t.moveTo(r.left(), r.top());
  t.lineTo(r.right(), r.top());
  t.lineTo(r.center().x(), r.bottom());
  t.closeSubpath();
  p.fillPath(t, MsnChartWidget::missingColor());
}

QString missingText(const MsnRow& row) {
  return row.count == 1 ? QObject::tr("MSN %1 missing").arg(row.msn)
                        : QObject::tr("MSN %1–%2 missing (%3)")
                              .arg(row.msn)
                              .arg(std::uint32_t(row.msn + row.count - 1))
                              .arg(row.count);
}
}  // namespace

QColor MsnChartWidget::missingColor() {
  return severityColor(Severity::error);
}
QColor MsnChartWidget::duplicateColor() {
  return severityColor(Severity::warning);
}
QColor MsnChartWidget::deliveredColor() {
  return QColor(0x1b, 0x5e, 0x20);
}

MsnChartWidget::MsnChartWidget(QWidget* parent) : QWidget(parent) {
  setFocusPolicy(Qt::StrongFocus);
  setMouseTracking(true);
  setAccessibleName(tr("MSN chart"));
}

const MsnSeries* MsnChartWidget::currentSeries() const {
  if (!snap_ || !snap_->model || series_ < 0 || std::size_t(series_) >= snap_->series.size())
    return nullptr;
  return &snap_->series[std::size_t(series_)];
}

QColor MsnChartWidget::seriesColor() const {
  const MsnSeries* s = currentSeries();
  if (!s || s->messages.empty()) return opcodeColor(int(wire::Opcode::send));
  return opcodeColor(snap_->model->messages[s->messages.front()].opcode);
}

bool MsnChartWidget::otherQueueStartsAt(const MsnSeries& s, std::uint64_t frame) const {
  const Model& m = *snap_->model;
  for (std::size_t i : s.messages)
    if (m.messages[i].first_frame == frame) return false;
  for (const MsnSeries& o : snap_->series) {
    if (&o == &s || o.stream != s.stream || o.direction != s.direction) continue;
    if (frame < o.first_frame || frame > o.last_frame) continue;
    for (std::size_t i : o.messages)
      if (m.messages[i].first_frame == frame) return true;
  }
  return false;
}

void MsnChartWidget::setSeries(SnapshotPtr snap, int series) {
  const bool same = snap_ && series == series_;
  snap_ = std::move(snap);
  series_ = series;
  markers_.clear();
  loose_markers_.clear();
  fmin_ = 0, fmax_ = 1;
  if (const MsnSeries* s = currentSeries()) {
    const Model& m = *snap_->model;
    const double f0 = s->messages.empty() ? 1e300 : double(s->first_frame);
    const double f1 = s->messages.empty() ? -1e300 : double(s->last_frame);
    // Frames where a row shows a gap (missing rows) or a duplicate (second records).
    std::vector<std::uint64_t> gap_frames, dup_frames;
    for (const MsnRow& row : s->rows) {
      if (row.missing) gap_frames.push_back(row.frame);
      for (std::uint32_t k = row.begin + 1; k < row.end; ++k)
        dup_frames.push_back(m.messages[s->by_msn[k]].first_frame);
    }
    placed_ = delivered_ = 0;
    for (std::size_t i : s->messages) {
      placed_ += m.messages[i].placed_frame != 0 && m.messages[i].complete;
      delivered_ += m.messages[i].delivered_frame != 0;
    }
    std::sort(gap_frames.begin(), gap_frames.end());
    std::sort(dup_frames.begin(), dup_frames.end());
    for (const Finding& f : m.findings) {
      if (f.id != FindingId::ddp_untagged_msn_gap && f.id != FindingId::ddp_untagged_msn_duplicate)
        continue;
      if (f.stream != s->stream || f.direction != s->direction) continue;
      const bool dup = f.id == FindingId::ddp_untagged_msn_duplicate;
      // Outside this queue's frames: another queue's. A duplicate after the queue's last
      // message (it began no record) is this queue's when it names this QN.
      const bool late_dup =
          dup && f.frame > s->last_frame &&
          f.message.find(" on QN " + std::to_string(s->qn) + " ") != std::string::npos;
      if ((f.frame < s->first_frame || f.frame > s->last_frame) && !late_dup) continue;
      // A gap is raised by the message that arrived: when that message is another queue's
      // (same stream and direction, another QN), the gap is that queue's.
      if (!dup && !std::binary_search(gap_frames.begin(), gap_frames.end(), f.frame) &&
          otherQueueStartsAt(*s, f.frame))
        continue;
      markers_.emplace_back(f.frame, dup);
      // On a row: the missing row the gap opened before, or the duplicate's second bar.
      const auto& on = dup ? dup_frames : gap_frames;
      if (!std::binary_search(on.begin(), on.end(), f.frame))
        loose_markers_.emplace_back(f.frame, dup);
    }
    if (f0 <= f1) {
      // Room for the first bar's left half and the last delivery mark.
      const double pad = std::max(1.0, (f1 - f0) * 0.02);
      fmin_ = f0 - pad;
      fmax_ = f1 + pad;
    }
  }
  if (!same) {
    resetView();
  } else {
    clampView();
  }
  update();
}

void MsnChartWidget::resetView() {
  xb_ = fmin_;
  xe_ = fmax_;
  const MsnSeries* s = currentSeries();
  rb_ = 0;
  re_ = s ? std::max<double>(1, double(s->rows.size())) : 1;
  update();
}

void MsnChartWidget::clampView() {
  const MsnSeries* s = currentSeries();
  const double nrows = s ? std::max<double>(1, double(s->rows.size())) : 1;
  const double fspan = std::clamp(xe_ - xb_, std::min(4.0, fmax_ - fmin_), fmax_ - fmin_);
  xb_ = std::clamp(xb_, fmin_, fmax_ - fspan);
  xe_ = xb_ + fspan;
  const double rspan = std::clamp(re_ - rb_, std::min(3.0, nrows), nrows);
  rb_ = std::clamp(rb_, 0.0, nrows - rspan);
  re_ = rb_ + rspan;
}

void MsnChartWidget::zoomFrames(double factor, double anchor) {
  const double span = xe_ - xb_;
  const double ns = span / factor;
  const double a = xb_ + span * anchor;
  xb_ = a - ns * anchor;
  xe_ = xb_ + ns;
  clampView();
  update();
}

void MsnChartWidget::zoomRows(double factor, double anchor) {
  const double span = re_ - rb_;
  const double ns = span / factor;
  const double a = rb_ + span * anchor;
  rb_ = a - ns * anchor;
  re_ = rb_ + ns;
  clampView();
  update();
}

void MsnChartWidget::zoom(double factor, double anchor) {
  zoomFrames(factor, anchor);
  zoomRows(factor, anchor);
}

void MsnChartWidget::pan(double fraction) {
  const double span = xe_ - xb_;
  xb_ += span * fraction;
  xe_ = xb_ + span;
  clampView();
  update();
}

void MsnChartWidget::panRows(double fraction) {
  const double span = re_ - rb_;
  rb_ += span * fraction;
  re_ = rb_ + span;
  clampView();
  update();
}

void MsnChartWidget::setHighlightFrame(std::uint64_t frame) {
  highlight_frame_ = frame;
  const MsnSeries* s = currentSeries();
  if (frame && s) {
    if (double(frame) < xb_ || double(frame) > xe_) {
      const double span = xe_ - xb_;
      xb_ = double(frame) - span / 2;
      xe_ = xb_ + span;
    }
    // Bring the row of the message (or gap) at that frame into view.
    const Model& m = *snap_->model;
    for (std::size_t r = 0; r < s->rows.size(); ++r) {
      const MsnRow& row = s->rows[r];
      bool hit = row.missing && row.frame == frame;
      for (std::uint32_t k = row.begin; k < row.end && !hit; ++k) {
        const MessageRecord& rec = m.messages[s->by_msn[k]];
        hit = rec.first_frame == frame || rec.placed_frame == frame || rec.delivered_frame == frame;
      }
      if (!hit) continue;
      if (double(r) < rb_ || double(r) + 1 > re_) {
        const double span = re_ - rb_;
        rb_ = double(r) + 0.5 - span / 2;
        re_ = rb_ + span;
      }
      break;
    }
    clampView();
  }
  update();
}

QRect MsnChartWidget::availRect() const {
  return QRect(kLeft, kTop, std::max(10, width() - kLeft - kRight),
               std::max(10, height() - kTop - kBottom));
}

QRect MsnChartWidget::plotRect() const {
  // As tall as the rows in view (a few rows do not stretch over the whole widget).
  QRect a = availRect();
  const double rows = (re_ - rb_) * rowHeight();
  a.setHeight(std::clamp(int(std::ceil(rows)), 10, a.height()));
  return a;
}

double MsnChartWidget::xOf(double frame) const {
  const QRect r = plotRect();
  return r.left() + (frame - xb_) / (xe_ - xb_) * r.width();
}

double MsnChartWidget::rowHeight() const {
  return std::min(kMaxRowHeight, availRect().height() / std::max(1e-9, re_ - rb_));
}

double MsnChartWidget::yOf(double row) const {
  return plotRect().top() + (row - rb_) * rowHeight();
}

bool MsnChartWidget::aggregated() const {
  return rowHeight() < kMinDetailRow;
}

QRect MsnChartWidget::rowRect(int row) const {
  const MsnSeries* s = currentSeries();
  if (!s || row < 0 || std::size_t(row) >= s->rows.size()) return {};
  const QRect pr = plotRect();
  const double y = yOf(row);
  const double h = std::max(aggregated() ? 2.0 : 1.0, rowHeight());
  const QRect r(pr.left(), int(std::floor(y)), pr.width(), int(std::ceil(h)));
  return r.intersected(pr);
}

QRect MsnChartWidget::missingMarkerRect(int row) const {
  const MsnSeries* s = currentSeries();
  if (!s || row < 0 || std::size_t(row) >= s->rows.size() || !s->rows[std::size_t(row)].missing)
    return {};
  const QRect band = rowRect(row);
  if (band.isEmpty()) return {};
  const double x = xOf(double(s->rows[std::size_t(row)].frame));
  const double size = std::clamp(rowHeight(), 10.0, 16.0);
  const double cy = band.center().y();
  QRectF r(x - size / 2, cy - size / 2, size, size);
  return r.toAlignedRect().intersected(plotRect());
}

void MsnChartWidget::drawLegend(QPainter& p, int y) {
  const QPalette& pal = palette();
  const QFontMetrics fm = p.fontMetrics();
  int x = kLeft;
  auto text = [&](const QString& t) {
    p.setPen(pal.color(QPalette::Text));
    p.drawText(x, y + fm.ascent(), t);
    x += fm.horizontalAdvance(t) + 18;
  };
  const QRectF sw(0, y + 2, 18, fm.height() - 4);
  const QColor bar = seriesColor();
  // Placement span.
  p.fillRect(sw.translated(x, 0), bar);
  x += 22;
  text(tr("placement span (first segment → last octet)"));
  // The rest only when the series has such a mark: the legend names what is drawn.
  const MsnSeries* s = currentSeries();
  const std::size_t n = s ? s->messages.size() : 0;
  const bool any_dup =
      (s && s->duplicates) ||
      std::any_of(markers_.begin(), markers_.end(), [](const auto& mk) { return mk.second; });
  if (placed_ < n) {
    p.setPen(QPen(missingColor(), 1));
    p.setBrush(QBrush(bar, Qt::BDiagPattern));
    p.drawRect(sw.translated(x, 0));
    x += 22;
    text(tr("not fully placed"));
  }
  const double cy = y + fm.height() / 2.0;
  if (delivered_ > 0) {
    p.fillPath(diamond(QPointF(x + 6, cy), 5), deliveredColor());
    x += 16;
    text(aggregated() ? tr("delivered (where later than placed)") : tr("delivered"));
  }
  if (delivered_ < n) {
    p.setPen(QPen(missingColor(), 1.5));
    p.setBrush(Qt::NoBrush);
    p.drawPath(diamond(QPointF(x + 6, cy), 5));
    x += 16;
    text(tr("never delivered"));
  }
  if ((s && s->missing) ||
      std::any_of(markers_.begin(), markers_.end(), [](const auto& mk) { return !mk.second; })) {
    p.fillRect(sw.translated(x, 0), QBrush(missingColor(), Qt::BDiagPattern));
    gapMarker(p, QRectF(x + 4, y + 2, 10, fm.height() - 4));
    x += 22;
    text(tr("missing MSN"));
  }
  if (any_dup) {
    p.setPen(QPen(duplicateColor(), 2));
    p.setBrush(Qt::NoBrush);
    p.drawEllipse(QPointF(x + 6, cy), 5, 5);
    x += 16;
    text(s && s->duplicates ? tr("duplicate MSN") : tr("duplicate MSN (no record of its own)"));
  }
}

void MsnChartWidget::drawMissing(QPainter& p, const QRect& pr, int row, double y, double h) {
  const MsnRow& r = currentSeries()->rows[std::size_t(row)];
  QColor band = missingColor();
  band.setAlpha(150);
  const QRectF rr(pr.left(), y, pr.width(), std::max(2.0, h));
  p.fillRect(rr, QBrush(band, Qt::BDiagPattern));
  QColor edge = missingColor();
  edge.setAlpha(90);
  p.fillRect(QRectF(pr.left(), y, pr.width(), std::max(1.0, std::min(2.0, h))), edge);
  gapMarker(p, missingMarkerRect(row));
  if (h >= p.fontMetrics().height() - 2) {
    const QRect m = missingMarkerRect(row);
    p.setPen(missingColor());
    p.drawText(QRect(m.right() + 4, int(y), 400, int(h)), Qt::AlignLeft | Qt::AlignVCenter,
               missingText(r));
  }
}

void MsnChartWidget::drawRows(QPainter& p, const QRect& pr) {
  const MsnSeries& s = *currentSeries();
  const Model& m = *snap_->model;
  const double h = rowHeight();
  const int r0 = std::max(0, int(std::floor(rb_)));
  const int r1 = std::min(int(s.rows.size()), int(std::ceil(re_)));
  const double bar_h = std::max(2.0, h * 0.56);
  const bool labels = h >= p.fontMetrics().height() - 2;
  for (int ri = r0; ri < r1; ++ri) {
    const MsnRow& row = s.rows[std::size_t(ri)];
    const double y = yOf(ri);
    if (row.missing) {
      drawMissing(p, pr, ri, y, h);
      continue;
    }
    const double cy = y + h / 2;
    for (std::uint32_t k = row.begin; k < row.end; ++k) {
      const MessageRecord& r = m.messages[s.by_msn[k]];
      const bool dup = k > row.begin;
      const double x0 = xOf(double(r.first_frame) - kHalfFrame);
      double x1 = xOf(double(endFrame(r)) + kHalfFrame);
      if (x1 - x0 < 6) x1 = x0 + 6;
      const QRectF bar(x0, cy - bar_h / 2, x1 - x0, bar_h);
      const QColor c = opcodeColor(r.opcode);
      const bool placed = r.placed_frame && r.complete;
      if (placed) {
        p.fillRect(bar, c);
      } else {
        p.setPen(QPen(missingColor(), 1));
        p.setBrush(QBrush(c, Qt::BDiagPattern));
        p.drawRect(bar);
      }
      if (dup) {
        p.setPen(QPen(duplicateColor(), 2));
        p.setBrush(Qt::NoBrush);
        p.drawRect(bar.adjusted(-1, -1, 1, 1));
        const double rad = std::clamp(h * 0.42, 3.0, 8.0);
        p.drawEllipse(QPointF(x0, cy), rad, rad);
      }
      const double ds = std::clamp(h * 0.32, 2.5, 7.0);
      if (r.delivered_frame) {
        const double xd = xOf(double(r.delivered_frame));
        if (xd > x1 + 1) {
          p.setPen(QPen(deliveredColor(), 1, Qt::DotLine));
          p.drawLine(QPointF(x1, cy), QPointF(xd, cy));
        }
        // Delivered with the last octet: just after the bar, not over it.
        p.fillPath(diamond(QPointF(std::max(xd, x1 + ds + 1), cy), ds), deliveredColor());
      } else {
        p.setPen(QPen(missingColor(), 1.5));
        p.setBrush(Qt::NoBrush);
        p.drawPath(diamond(QPointF(x1 + ds + 1, cy), ds));
      }
      if (highlight_frame_ &&
          (r.first_frame == highlight_frame_ || r.placed_frame == highlight_frame_ ||
           r.delivered_frame == highlight_frame_)) {
        p.setPen(QPen(palette().color(QPalette::Highlight), 2));
        p.setBrush(Qt::NoBrush);
        p.drawRect(bar.adjusted(-3, -3, 3, 3));
      }
      if (labels && k + 1 == row.end && h >= 18) {
        p.setPen(palette().color(QPalette::Text));
        const QString t = rowLabel(ri);
        const double right = std::max(x1, r.delivered_frame ? xOf(double(r.delivered_frame)) : x1);
        const double tw = p.fontMetrics().horizontalAdvance(t);
        const double tx = right + 2 * ds + 6 + tw <= pr.right() ? right + 2 * ds + 6 : x0 - 6 - tw;
        p.drawText(QRectF(tx, y, tw + 2, h), Qt::AlignLeft | Qt::AlignVCenter, t);
      }
    }
  }
}

void MsnChartWidget::drawAggregated(QPainter& p, const QRect& pr) {
  const MsnSeries& s = *currentSeries();
  const Model& m = *snap_->model;
  const int W = pr.width(), H = pr.height();
  // Per pixel row: how many bars cover each column (difference array), and deliveries.
  std::vector<std::int32_t> cover(std::size_t(W + 1) * std::size_t(H), 0);
  std::vector<std::uint16_t> delivered(std::size_t(W) * std::size_t(H), 0);
  std::vector<std::uint8_t> undelivered(std::size_t(W) * std::size_t(H), 0);
  std::vector<int> missing_rows, dup_rows;
  const int r0 = std::max(0, int(std::floor(rb_)));
  const int r1 = std::min(int(s.rows.size()), int(std::ceil(re_)));
  const double h = rowHeight();
  // xOf without recomputing the geometry per message (pixel columns from the plot's left).
  const double sx = W / (xe_ - xb_);
  auto col = [&](double frame) { return (frame - xb_) * sx; };
  for (int ri = r0; ri < r1; ++ri) {
    const MsnRow& row = s.rows[std::size_t(ri)];
    if (row.missing) {
      missing_rows.push_back(ri);
      continue;
    }
    if (row.copies() > 1) dup_rows.push_back(ri);
    const int py = std::clamp(int((ri - rb_) * h), 0, H - 1);
    for (std::uint32_t k = row.begin; k < row.end; ++k) {
      const MessageRecord& r = m.messages[s.by_msn[k]];
      const int x0 = std::clamp(int(std::floor(col(double(r.first_frame) - kHalfFrame))), 0, W);
      const int x1 = std::clamp(int(std::ceil(col(double(endFrame(r)) + kHalfFrame))), x0 + 1, W);
      if (x0 >= W) continue;
      // Each bar 2 px tall, so that a diagonal of single-segment messages stays visible.
      for (const int y : {py, std::min(py + 1, H - 1)}) {
        cover[std::size_t(y) * std::size_t(W + 1) + std::size_t(x0)] += 1;
        cover[std::size_t(y) * std::size_t(W + 1) + std::size_t(x1)] -= 1;
      }
      if (r.delivered_frame) {
        // Delivery shows where it lags behind the placement at this scale.
        const int xd = int(col(double(r.delivered_frame)));
        if (xd >= x1 && xd < W) {
          auto& d = delivered[std::size_t(py) * std::size_t(W) + std::size_t(xd)];
          if (d < 0xffff) ++d;
        }
      } else {
        undelivered[std::size_t(py) * std::size_t(W) + std::size_t(std::min(x1, W - 1))] = 1;
      }
    }
  }
  QImage img(W, H, QImage::Format_ARGB32_Premultiplied);
  img.fill(Qt::transparent);
  const QRgb bar_rgb = seriesColor().rgb();
  const QRgb dlv_rgb = deliveredColor().rgb();
  const QRgb bad_rgb = missingColor().rgb();
  for (int y = 0; y < H; ++y) {
    auto* line = reinterpret_cast<QRgb*>(img.scanLine(y));
    std::int32_t run = 0;
    for (int x = 0; x < W; ++x) {
      run += cover[std::size_t(y) * std::size_t(W + 1) + std::size_t(x)];
      const std::size_t i = std::size_t(y) * std::size_t(W) + std::size_t(x);
      if (undelivered[i])
        line[x] = bad_rgb;
      else if (delivered[i])
        line[x] = dlv_rgb;
      else if (run > 0)
        line[x] = bar_rgb;
    }
  }
  p.drawImage(pr.topLeft(), img);
  for (int ri : dup_rows) {
    const double y = yOf(ri);
    p.fillRect(QRectF(pr.left() - 8, y, 6, std::max(2.0, h)), duplicateColor());
  }
  // Gaps: marked at any scale, named where their labels do not collide.
  const int fh = p.fontMetrics().height();
  double last_label = -1e9;
  QRect last_marker;
  int last_band = INT_MIN;
  for (int ri : missing_rows) {
    // Many gaps share a pixel row at this scale: one band and one marker per position.
    const QRect m = missingMarkerRect(ri);
    const int band = int(yOf(ri));
    if (band == last_band && std::abs(m.center().x() - last_marker.center().x()) < 3) continue;
    if (band != last_band)
      drawMissing(p, pr, ri, yOf(ri), h);
    else
      gapMarker(p, m);
    last_band = band;
    last_marker = m;
    if (m.isEmpty() || m.center().y() - last_label < fh) continue;
    last_label = m.center().y();
    p.setPen(missingColor());
    p.drawText(QRect(m.right() + 4, m.center().y() - fh / 2, 400, fh),
               Qt::AlignLeft | Qt::AlignVCenter,
               missingText(currentSeries()->rows[std::size_t(ri)]));
  }
}

void MsnChartWidget::paintEvent(QPaintEvent*) {
  QPainter p(this);
  const QPalette& pal = palette();
  p.fillRect(rect(), pal.color(QPalette::Base));
  p.setPen(pal.color(QPalette::Text));
  const MsnSeries* sp = currentSeries();
  if (!sp || sp->rows.empty()) {
    p.drawText(rect(), Qt::AlignCenter, tr("No untagged messages (Send, Read Request, Terminate)"));
    return;
  }
  const MsnSeries& s = *sp;
  const Model& m = *snap_->model;
  const QRect pr = plotRect();
  QString title =
      tr("Stream %1, %2, QN %3: %4")
          .arg(s.stream)
          .arg(s.stream < m.streams.size() ? directionText(m.streams[s.stream], s.direction)
                                           : QString())
          .arg(s.qn)
          .arg(s.messages.size() == 1 ? tr("1 message") : tr("%1 messages").arg(s.messages.size()));
  if (s.missing) title += tr(", %1 MSN missing").arg(s.missing);
  if (s.duplicates) title += tr(", %1 duplicate").arg(s.duplicates);
  if (aggregated()) title += tr(" (aggregated: %1 rows per pixel)").arg(1 / rowHeight(), 0, 'f', 1);
  p.drawText(QRect(kLeft, 4, width() - kLeft, 18), Qt::AlignLeft | Qt::AlignVCenter, title);
  drawLegend(p, 24);

  // Frame axis.
  p.setPen(pal.color(QPalette::Mid));
  p.setBrush(Qt::NoBrush);
  const double h = rowHeight();
  const double used = pr.height();
  p.drawRect(pr);
  const double xstep = niceStep(xe_ - xb_, std::max(2, pr.width() / 90));
  for (double f = std::ceil(xb_ / xstep) * xstep; f <= xe_; f += xstep) {
    const int x = int(xOf(f));
    p.setPen(pal.color(QPalette::Midlight));
    p.drawLine(x, pr.top() + 1, x, pr.top() + int(used));
    p.setPen(pal.color(QPalette::Mid));
    p.drawLine(x, pr.bottom(), x, pr.bottom() + 4);
    p.setPen(pal.color(QPalette::Text));
    p.drawText(x - 40, pr.bottom() + 6, 80, 16, Qt::AlignHCenter | Qt::AlignTop,
               QString::number(qint64(std::llround(f))));
  }
  p.drawText(QRect(pr.left(), pr.bottom() + 20, pr.width(), 16), Qt::AlignHCenter, tr("frame"));

  // MSN axis: every row's MSN when there is room, else ticks on rows.
  const int r0 = std::max(0, int(std::floor(rb_)));
  const int r1 = std::min(int(s.rows.size()), int(std::ceil(re_)));
  const int fh = p.fontMetrics().height();
  const int rstep = h >= fh ? 1 : int(niceStep(std::ceil(fh * 1.6 / h), 1));
  for (int ri = (r0 + rstep - 1) / rstep * rstep; ri < r1; ri += rstep) {
    const MsnRow& row = s.rows[std::size_t(ri)];
    const double yc = yOf(ri) + std::max(1.0, h) / 2;
    p.setPen(pal.color(QPalette::Mid));
    p.drawLine(QPointF(pr.left() - 4, yc), QPointF(pr.left(), yc));
    p.setPen(row.missing ? missingColor() : pal.color(QPalette::Text));
    const QString label = row.missing && row.count > 1
                              ? QStringLiteral("%1–%2").arg(row.msn).arg(row.msn + row.count - 1)
                              : QString::number(row.msn);
    p.drawText(QRectF(0, yc - fh / 2.0, kLeft - 10, fh), Qt::AlignRight | Qt::AlignVCenter, label);
  }
  p.save();
  p.translate(12, pr.top() + std::min<double>(pr.height(), used) / 2);
  p.rotate(-90);
  p.setPen(pal.color(QPalette::Text));
  p.drawText(QRect(-30, -10, 60, 20), Qt::AlignCenter, tr("MSN"));
  p.restore();

  p.setRenderHint(QPainter::Antialiasing, !aggregated());
  p.setClipRect(QRect(pr.left() - 10, pr.top() + 1, pr.width() + 10, pr.height() - 1));
  // Findings that sit on no row (a gap before the first MSN seen, a duplicate the analysis
  // keeps no record of): dashed verticals in their colour, ringed / flagged at the top.
  p.setRenderHint(QPainter::Antialiasing, false);
  for (const auto& [frame, dup] : loose_markers_) {
    const int x = int(std::lround(xOf(double(frame))));
    const QColor c = dup ? duplicateColor() : missingColor();
    p.setPen(QPen(c, 2, Qt::DashLine));
    p.drawLine(x, pr.top(), x, pr.bottom());
    p.setPen(QPen(c, 2));
    p.setBrush(Qt::NoBrush);
    if (dup)
      p.drawEllipse(QPoint(x, pr.top() + 6), 5, 5);
    else
      gapMarker(p, QRectF(x - 5, pr.top() + 1, 10, 10));
  }
  p.setRenderHint(QPainter::Antialiasing, !aggregated());
  if (aggregated())
    drawAggregated(p, pr);
  else
    drawRows(p, pr);
  if (highlight_frame_) {
    const double x = xOf(double(highlight_frame_));
    p.setPen(QPen(pal.color(QPalette::Highlight), 1));
    p.drawLine(QPointF(x, pr.top()), QPointF(x, pr.bottom()));
  }
  p.setClipping(false);
  // Below the axis, when the rows leave room: what the queue amounts to, and the controls.
  const int sy = pr.bottom() + 44;
  if (height() - sy >= 4 * fh) {
    QStringList lines;
    const MsnRow& first = s.rows.front();
    const MsnRow& last = s.rows.back();
    lines << tr("MSN %1–%2: %3 seen, %4 MSN missing, %5 duplicate records")
                 .arg(first.msn)
                 .arg(last.msn)
                 .arg(s.messages.size() == 1 ? tr("1 message")
                                             : tr("%1 messages").arg(s.messages.size()))
                 .arg(s.missing)
                 .arg(s.duplicates);
    lines << tr("fully placed: %1 of %2; delivered: %3 of %2")
                 .arg(placed_)
                 .arg(s.messages.size())
                 .arg(delivered_);
    if (!markers_.empty()) {
      QStringList at;
      for (std::size_t i = 0; i < markers_.size() && i < 8; ++i)
        at << (markers_[i].second ? tr("duplicate in frame %1") : tr("gap in frame %1"))
                  .arg(markers_[i].first);
      if (markers_.size() > 8) at << tr("… (%1 in all)").arg(markers_.size());
      lines << tr("MSN findings: %1").arg(at.join(QStringLiteral(", ")));
    }
    lines << tr(
        "Wheel: zoom (Shift: frames only, Ctrl: rows only) · drag or arrows: pan · "
        "Home: reset · click a bar or marker: select its frame in every view");
    p.setPen(pal.color(QPalette::Text));
    int y = sy;
    for (const QString& l : lines) {
      if (y + fh > height()) break;
      p.drawText(QRect(kLeft, y, width() - kLeft - kRight, fh), Qt::AlignLeft | Qt::AlignVCenter,
                 l);
      y += fh + 2;
    }
  }
  if (hasFocus()) {
    p.setPen(QPen(pal.color(QPalette::Highlight), 1, Qt::DotLine));
    p.setBrush(Qt::NoBrush);
    p.drawRect(rect().adjusted(0, 0, -1, -1));
  }
}

std::optional<MsnChartWidget::Hit> MsnChartWidget::hitAt(QPoint pos) const {
  const MsnSeries* s = currentSeries();
  const QRect pr = plotRect();
  if (!s || !pr.adjusted(-4, -4, 4, 4).contains(pos)) return std::nullopt;
  const double h = rowHeight();
  const Model& m = *snap_->model;
  // Rows within 3 px; the bar (or gap marker) nearest in x within 6 px.
  const double row_f = rb_ + (pos.y() - pr.top()) / h;
  const int lo = std::max(0, int(std::floor(row_f - 3 / h)));
  const int hi = std::min(int(s->rows.size()) - 1, int(std::floor(row_f + 3 / h)));
  std::optional<Hit> best;
  double best_d = 6;
  for (int ri = lo; ri <= hi; ++ri) {
    const MsnRow& row = s->rows[std::size_t(ri)];
    const double dy = std::abs(yOf(ri) + h / 2 - pos.y());
    if (row.missing) {
      const double d = std::max(std::abs(xOf(double(row.frame)) - pos.x()), dy - h / 2);
      if (d < best_d) best_d = d, best = Hit{ri, nullptr, row.frame};
      continue;
    }
    for (std::uint32_t k = row.begin; k < row.end; ++k) {
      const MessageRecord& r = m.messages[s->by_msn[k]];
      const double x0 = xOf(double(r.first_frame) - kHalfFrame);
      const double x1 = std::max(x0 + 6, xOf(double(endFrame(r)) + kHalfFrame));
      const double xd = r.delivered_frame ? xOf(double(r.delivered_frame)) : x1;
      const double dx = pos.x() < x0                 ? x0 - pos.x()
                        : pos.x() > std::max(x1, xd) ? pos.x() - std::max(x1, xd)
                                                     : 0;
      const double d = std::max(dx, dy - h / 2);
      if (d < best_d) best_d = d, best = Hit{ri, &r, r.first_frame};
    }
  }
  return best;
}

QString MsnChartWidget::rowLabel(int ri) const {
  const MsnSeries* s = currentSeries();
  if (!s || ri < 0 || std::size_t(ri) >= s->rows.size()) return {};
  const MsnRow& row = s->rows[std::size_t(ri)];
  if (row.missing || row.end == row.begin) return {};
  const Model& m = *snap_->model;
  QString t = messageText(m, m.messages[s->by_msn[row.end - 1]]);
  if (row.copies() > 1) t += tr(" — MSN seen %1×").arg(row.copies());
  return t;
}

QString MsnChartWidget::tooltip(const Hit& hit) const {
  const MsnRow& row = currentSeries()->rows[std::size_t(hit.row)];
  if (!hit.record)
    return tr("%1\nthe next MSN arrived in frame %2").arg(missingText(row)).arg(row.frame);
  const MessageRecord* r = hit.record;
  QString t = tr("MSN %1 (%2): %3 octets in %4 segments\nfirst segment frame %5")
                  .arg(r->msn)
                  .arg(opcodeName(r->opcode))
                  .arg(r->length)
                  .arg(r->segments)
                  .arg(r->first_frame);
  const std::string_view ulp = snap_->model->ulp_name(*r);
  if (!ulp.empty()) t = qstr(ulp) + QLatin1Char('\n') + t;
  t += r->placed_frame ? tr("\nplaced in frame %1").arg(r->placed_frame)
                       : tr("\nnever fully placed");
  t += r->delivered_frame ? tr("\ndelivered in frame %1").arg(r->delivered_frame)
                          : tr("\nnever delivered");
  if (row.copies() > 1) t += tr("\nthis MSN was seen %1 times (duplicate)").arg(row.copies());
  if (r->damaged_by_gap) t += tr("\ndamaged by capture loss");
  return t;
}

void MsnChartWidget::wheelEvent(QWheelEvent* ev) {
  const QRect pr = plotRect();
  const double ax = std::clamp((ev->position().x() - pr.left()) / pr.width(), 0.0, 1.0);
  const double used = std::min<double>(pr.height(), (re_ - rb_) * rowHeight());
  const double ay = std::clamp((ev->position().y() - pr.top()) / std::max(1.0, used), 0.0, 1.0);
  const double steps = ev->angleDelta().y() / 120.0;
  if (steps != 0) {
    const double f = std::pow(1.5, steps);
    if (!(ev->modifiers() & Qt::ControlModifier)) zoomFrames(f, ax);
    if (!(ev->modifiers() & Qt::ShiftModifier)) zoomRows(f, ay);
  }
  ev->accept();
}

void MsnChartWidget::mousePressEvent(QMouseEvent* ev) {
  setFocus(Qt::MouseFocusReason);
  press_pos_ = ev->position().toPoint();
  press_xb_ = xb_;
  press_rb_ = rb_;
  dragging_ = false;
}

void MsnChartWidget::mouseMoveEvent(QMouseEvent* ev) {
  const QPoint pos = ev->position().toPoint();
  if (ev->buttons() & Qt::LeftButton) {
    const QPoint d = pos - press_pos_;
    if (d.manhattanLength() > 3) dragging_ = true;
    if (dragging_) {
      const double span = xe_ - xb_;
      xb_ = press_xb_ - d.x() * span / plotRect().width();
      xe_ = xb_ + span;
      const double rspan = re_ - rb_;
      rb_ = press_rb_ - d.y() / rowHeight();
      re_ = rb_ + rspan;
      clampView();
      update();
    }
    return;
  }
  if (auto hit = hitAt(pos))
    QToolTip::showText(ev->globalPosition().toPoint(), tooltip(*hit), this);
  else
    QToolTip::hideText();
}

void MsnChartWidget::mouseReleaseEvent(QMouseEvent* ev) {
  if (dragging_) {
    dragging_ = false;
    return;
  }
  if (auto hit = hitAt(ev->position().toPoint())) {
    highlight_frame_ = hit->frame;
    update();
    emit messageClicked(hit->frame);
  }
}

void MsnChartWidget::keyPressEvent(QKeyEvent* ev) {
  if (ev->key() == Qt::Key_Up || ev->key() == Qt::Key_Down) {
    panRows(ev->key() == Qt::Key_Up ? -0.25 : 0.25);
    ev->accept();
    return;
  }
  if (!handleZoomPanKey(*this, ev)) QWidget::keyPressEvent(ev);
}

}  // namespace ddpscope::gui
