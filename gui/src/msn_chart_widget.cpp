// SPDX-License-Identifier: GPL-2.0-or-later
#include "msn_chart_widget.h"

#include <QKeyEvent>
#include <QMouseEvent>
#include <QPainter>
#include <QPainterPath>
#include <QToolTip>
#include <QWheelEvent>
#include <algorithm>
#include <cmath>

#include "labels.h"
#include "zoom_pan_keys.h"

namespace ddpscope::gui {
namespace {
constexpr int kLeft = 64, kRight = 16, kTop = 44, kBottom = 40;

// A 1/2/5 x 10^k integer step giving at most `max_ticks` ticks over `span`.
double niceStep(double span, int max_ticks) {
  const double raw = std::max(1.0, span / std::max(1, max_ticks));
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (m * mag >= raw) return m * mag;
  return 10 * mag;
}
}  // namespace

MsnChartWidget::MsnChartWidget(QWidget* parent) : QWidget(parent) {
  setFocusPolicy(Qt::StrongFocus);
  setMouseTracking(true);
  setAccessibleName(tr("MSN chart"));
}

void MsnChartWidget::setSeries(SnapshotPtr snap, int series) {
  const bool same = snap_ && series == series_;
  snap_ = std::move(snap);
  series_ = series;
  markers_.clear();
  fmin_ = 0, fmax_ = 1, mmin_ = 0, mmax_ = 1;
  if (snap_ && snap_->model && series_ >= 0 && std::size_t(series_) < snap_->series.size()) {
    const MsnSeries& s = snap_->series[std::size_t(series_)];
    const Model& m = *snap_->model;
    double f0 = 1e300, f1 = -1e300, m0 = 1e300, m1 = -1e300;
    for (std::size_t i : s.messages) {
      const MessageRecord& r = m.messages[i];
      f0 = std::min(f0, double(r.first_frame));
      f1 = std::max({f1, double(r.first_frame), double(r.placed_frame), double(r.delivered_frame)});
      m0 = std::min(m0, double(r.msn));
      m1 = std::max(m1, double(r.msn));
    }
    for (const Finding& f : m.findings) {
      if (f.id != FindingId::ddp_untagged_msn_gap && f.id != FindingId::ddp_untagged_msn_duplicate)
        continue;
      if (f.stream != s.stream || f.direction != s.direction) continue;
      markers_.emplace_back(f.frame, f.id == FindingId::ddp_untagged_msn_duplicate);
      f0 = std::min(f0, double(f.frame));
      f1 = std::max(f1, double(f.frame));
    }
    if (f0 <= f1) {
      fmin_ = f0 - 0.5;
      fmax_ = f1 + 0.5;
      mmin_ = m0 - 0.5;
      mmax_ = m1 + 0.5;
    }
  }
  if (!same) resetView();
  update();
}

void MsnChartWidget::resetView() {
  xb_ = fmin_;
  xe_ = fmax_;
  update();
}

void MsnChartWidget::zoom(double factor, double anchor) {
  const double span = xe_ - xb_;
  const double ns = std::clamp(span / factor, 4.0, fmax_ - fmin_ + 1);
  const double a = xb_ + span * anchor;
  xb_ = std::clamp(a - ns * anchor, fmin_, std::max(fmin_, fmax_ - ns));
  xe_ = xb_ + ns;
  update();
}

void MsnChartWidget::pan(double fraction) {
  const double span = xe_ - xb_;
  xb_ = std::clamp(xb_ + span * fraction, fmin_, std::max(fmin_, fmax_ - span));
  xe_ = xb_ + span;
  update();
}

void MsnChartWidget::setHighlightFrame(std::uint64_t frame) {
  highlight_frame_ = frame;
  if (frame && (double(frame) < xb_ || double(frame) > xe_)) {
    const double span = xe_ - xb_;
    xb_ = std::clamp(double(frame) - span / 2, fmin_, std::max(fmin_, fmax_ - span));
    xe_ = xb_ + span;
  }
  update();
}

QRect MsnChartWidget::plotRect() const {
  return QRect(kLeft, kTop, std::max(10, width() - kLeft - kRight),
               std::max(10, height() - kTop - kBottom));
}

double MsnChartWidget::xOf(double frame) const {
  const QRect r = plotRect();
  return r.left() + (frame - xb_) / (xe_ - xb_) * r.width();
}

double MsnChartWidget::yOf(double msn) const {
  const QRect r = plotRect();
  return r.bottom() - (msn - mmin_) / (mmax_ - mmin_) * r.height();
}

void MsnChartWidget::paintEvent(QPaintEvent*) {
  QPainter p(this);
  p.setRenderHint(QPainter::Antialiasing, true);
  const QPalette& pal = palette();
  p.fillRect(rect(), pal.color(QPalette::Base));
  p.setPen(pal.color(QPalette::Text));
  if (!snap_ || !snap_->model || series_ < 0 || std::size_t(series_) >= snap_->series.size()) {
    p.drawText(rect(), Qt::AlignCenter, tr("No untagged messages (Send, Read Request, Terminate)"));
    return;
  }
  const MsnSeries& s = snap_->series[std::size_t(series_)];
  const Model& m = *snap_->model;
  const QRect pr = plotRect();
  QString title =
      tr("Stream %1, %2, QN %3: %4 messages")
          .arg(s.stream)
          .arg(s.stream < m.streams.size() ? directionText(m.streams[s.stream], s.direction)
                                           : QString())
          .arg(s.qn)
          .arg(s.messages.size());
  p.drawText(QRect(kLeft, 4, width() - kLeft, 18), Qt::AlignLeft | Qt::AlignVCenter, title);

  // Legend.
  int lx = kLeft;
  const int ly = 24;
  const QColor first_c = pal.color(QPalette::Text);
  const QColor placed_c(0x2e, 0x7d, 0x32);
  const QColor delivered_c = pal.color(QPalette::Highlight);
  const QColor gap_c = severityColor(Severity::error);
  const QColor dup_c = severityColor(Severity::warning);
  auto legend = [&](const QColor& c, const QString& text) {
    p.setBrush(c);
    p.setPen(Qt::NoPen);
    p.drawEllipse(QRectF(lx, ly + 3, 9, 9));
    p.setPen(pal.color(QPalette::Text));
    p.drawText(lx + 13, ly + p.fontMetrics().ascent(), text);
    lx += 30 + p.fontMetrics().horizontalAdvance(text);
  };
  legend(first_c, tr("first segment"));
  legend(placed_c, tr("placed"));
  legend(delivered_c, tr("delivered"));
  legend(gap_c, tr("MSN gap"));
  legend(dup_c, tr("MSN duplicate"));

  // Axes and grid.
  p.setPen(pal.color(QPalette::Mid));
  p.setBrush(Qt::NoBrush);
  p.drawRect(pr);
  const double xstep = niceStep(xe_ - xb_, std::max(2, pr.width() / 90));
  for (double f = std::ceil(xb_ / xstep) * xstep; f <= xe_; f += xstep) {
    const int x = int(xOf(f));
    p.setPen(pal.color(QPalette::Mid));
    p.drawLine(x, pr.bottom(), x, pr.bottom() + 4);
    p.setPen(pal.color(QPalette::Text));
    p.drawText(x - 40, pr.bottom() + 6, 80, 16, Qt::AlignHCenter | Qt::AlignTop,
               QString::number(qint64(std::llround(f))));
  }
  p.drawText(QRect(pr.left(), pr.bottom() + 20, pr.width(), 16), Qt::AlignHCenter, tr("frame"));
  const double ystep = niceStep(mmax_ - mmin_, std::max(2, pr.height() / 40));
  for (double v = std::ceil(mmin_ / ystep) * ystep; v <= mmax_; v += ystep) {
    const int y = int(yOf(v));
    p.setPen(pal.color(QPalette::Mid));
    p.drawLine(pr.left() - 4, y, pr.left(), y);
    p.setPen(pal.color(QPalette::Text));
    p.drawText(0, y - 8, kLeft - 8, 16, Qt::AlignRight | Qt::AlignVCenter,
               QString::number(qint64(std::llround(v))));
  }
  p.save();
  p.translate(12, pr.center().y());
  p.rotate(-90);
  p.drawText(QRect(-30, -10, 60, 20), Qt::AlignCenter, tr("MSN"));
  p.restore();

  p.setClipRect(pr.adjusted(1, 1, 0, 0));
  // Gap / duplicate markers.
  for (const auto& [frame, dup] : markers_) {
    const double x = xOf(double(frame));
    p.setPen(QPen(dup ? dup_c : gap_c, 2, Qt::DashLine));
    p.drawLine(QPointF(x, pr.top()), QPointF(x, pr.bottom()));
  }
  // Messages; level of detail: above ~3 per pixel column draw per-column MSN min..max.
  std::size_t visible = 0;
  for (std::size_t i : s.messages) {
    const double f = double(m.messages[i].first_frame);
    if (f >= xb_ && f <= xe_) ++visible;
  }
  if (visible > std::size_t(pr.width()) * 3) {
    std::vector<std::pair<double, double>> col(std::size_t(pr.width()), {1e300, -1e300});
    for (std::size_t i : s.messages) {
      const MessageRecord& r = m.messages[i];
      const int c = int(xOf(double(r.first_frame))) - pr.left();
      if (c < 0 || c >= pr.width()) continue;
      col[std::size_t(c)].first = std::min(col[std::size_t(c)].first, double(r.msn));
      col[std::size_t(c)].second = std::max(col[std::size_t(c)].second, double(r.msn));
    }
    p.setPen(QPen(first_c, 1));
    for (int c = 0; c < pr.width(); ++c) {
      if (col[std::size_t(c)].first > col[std::size_t(c)].second) continue;
      const double x = pr.left() + c + 0.5;
      p.drawLine(QPointF(x, yOf(col[std::size_t(c)].first) + 1),
                 QPointF(x, yOf(col[std::size_t(c)].second) - 1));
    }
  } else {
    for (std::size_t i : s.messages) {
      const MessageRecord& r = m.messages[i];
      const double y = yOf(double(r.msn));
      const double x0 = xOf(double(r.first_frame));
      const std::uint64_t end_frame = std::max(r.placed_frame, r.delivered_frame);
      if (end_frame > r.first_frame) {
        p.setPen(QPen(pal.color(QPalette::Mid), 1));
        p.drawLine(QPointF(x0, y), QPointF(xOf(double(end_frame)), y));
      }
      // Delivered (diamond) behind placed (bar) behind the first segment (dot), so that all
      // stay visible when they fall in the same frame.
      if (r.delivered_frame) {
        const double x = xOf(double(r.delivered_frame));
        QPainterPath d;
        d.moveTo(x, y - 8);
        d.lineTo(x + 8, y);
        d.lineTo(x, y + 8);
        d.lineTo(x - 8, y);
        d.closeSubpath();
        p.fillPath(d, delivered_c);
      }
      if (r.placed_frame) {
        p.setPen(QPen(placed_c, 3));
        const double x = xOf(double(r.placed_frame));
        p.drawLine(QPointF(x, y - 11), QPointF(x, y + 11));
      }
      const bool bad = !r.complete || r.damaged_by_gap || !r.delivered_frame;
      p.setPen(QPen(bad ? gap_c : first_c, 1.5));
      p.setBrush(bad ? QBrush(Qt::NoBrush) : QBrush(first_c));
      p.drawEllipse(QPointF(x0, y), 3.0, 3.0);
    }
  }
  if (highlight_frame_) {
    const double x = xOf(double(highlight_frame_));
    p.setPen(QPen(pal.color(QPalette::Highlight), 2));
    p.drawLine(QPointF(x, pr.top()), QPointF(x, pr.bottom()));
  }
  p.setClipping(false);
  if (hasFocus()) {
    p.setPen(QPen(pal.color(QPalette::Highlight), 1, Qt::DotLine));
    p.setBrush(Qt::NoBrush);
    p.drawRect(rect().adjusted(0, 0, -1, -1));
  }
}

const MessageRecord* MsnChartWidget::nearest(QPoint pos, double max_px) const {
  if (!snap_ || !snap_->model || series_ < 0 || std::size_t(series_) >= snap_->series.size())
    return nullptr;
  const MessageRecord* best = nullptr;
  double best_d = max_px * max_px;
  for (std::size_t i : snap_->series[std::size_t(series_)].messages) {
    const MessageRecord& r = snap_->model->messages[i];
    const double dx = xOf(double(r.first_frame)) - pos.x();
    const double dy = yOf(double(r.msn)) - pos.y();
    if (dx * dx + dy * dy < best_d) {
      best_d = dx * dx + dy * dy;
      best = &r;
    }
  }
  return best;
}

void MsnChartWidget::wheelEvent(QWheelEvent* ev) {
  const QRect pr = plotRect();
  const double anchor = std::clamp((ev->position().x() - pr.left()) / pr.width(), 0.0, 1.0);
  const double steps = ev->angleDelta().y() / 120.0;
  if (steps != 0) zoom(std::pow(1.5, steps), anchor);
  ev->accept();
}

void MsnChartWidget::mousePressEvent(QMouseEvent* ev) {
  setFocus(Qt::MouseFocusReason);
  press_pos_ = ev->position().toPoint();
  press_xb_ = xb_;
  dragging_ = false;
}

void MsnChartWidget::mouseMoveEvent(QMouseEvent* ev) {
  const QPoint pos = ev->position().toPoint();
  if (ev->buttons() & Qt::LeftButton) {
    const int dx = pos.x() - press_pos_.x();
    if (std::abs(dx) > 3) dragging_ = true;
    if (dragging_) {
      const double span = xe_ - xb_;
      xb_ = std::clamp(press_xb_ - dx * span / plotRect().width(), fmin_,
                       std::max(fmin_, fmax_ - span));
      xe_ = xb_ + span;
      update();
    }
    return;
  }
  if (const MessageRecord* r = nearest(pos, 8)) {
    QString t = tr("MSN %1 (%2): %3 octets in %4 segments\nfirst segment frame %5")
                    .arg(r->msn)
                    .arg(opcodeName(r->opcode))
                    .arg(r->length)
                    .arg(r->segments)
                    .arg(r->first_frame);
    t += r->placed_frame ? tr("\nplaced in frame %1").arg(r->placed_frame)
                         : tr("\nnever fully placed");
    t += r->delivered_frame ? tr("\ndelivered in frame %1").arg(r->delivered_frame)
                            : tr("\nnever delivered");
    if (r->damaged_by_gap) t += tr("\ndamaged by capture loss");
    QToolTip::showText(ev->globalPosition().toPoint(), t, this);
  } else {
    QToolTip::hideText();
  }
}

void MsnChartWidget::mouseReleaseEvent(QMouseEvent* ev) {
  if (dragging_) {
    dragging_ = false;
    return;
  }
  if (const MessageRecord* r = nearest(ev->position().toPoint(), 10)) {
    highlight_frame_ = r->first_frame;
    update();
    emit messageClicked(r->first_frame);
  }
}

void MsnChartWidget::keyPressEvent(QKeyEvent* ev) {
  if (!handleZoomPanKey(*this, ev)) QWidget::keyPressEvent(ev);
}

}  // namespace ddpscope::gui
