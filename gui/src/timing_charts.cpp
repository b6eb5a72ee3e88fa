// SPDX-License-Identifier: GPL-2.0-or-later
#include "timing_charts.h"

#include <QHelpEvent>
#include <QMouseEvent>
#include <QPainter>
#include <QToolTip>
#include <algorithm>
#include <array>
#include <cmath>
#include <map>

#include "labels.h"

namespace ddpscope::gui {
namespace {
constexpr int kLeft = 70, kRight = 16, kTop = 8, kBottom = 34;
constexpr int kTitle = 18;  // a panel's title line
constexpr int kPanelGap = 6;

// The x of a latency on the histogram's axis, in buckets: bucket i starts at 2^(i/4) ns.
double bucketPos(double ns) {
  return ns <= 1 ? 0.0 : std::log2(ns) * double(LatencyHistogram::kPerOctave);
}
}  // namespace

QString latencyText(std::uint64_t ns) {
  if (ns < 1000) return QStringLiteral("%1 ns").arg(ns);
  const double v = double(ns);
  auto fmt = [](double x, const char* unit) {
    return QStringLiteral("%1 %2").arg(x, 0, 'g', 3).arg(QString::fromUtf8(unit));
  };
  // Three significant digits: 999.6 µs reads "1 ms", not "1e+03 µs".
  if (ns < 999500) return fmt(v / 1e3, "µs");
  if (ns < 999500000) return fmt(v / 1e6, "ms");
  return fmt(v / 1e9, "s");
}

QColor stallColor(StallKind k) {
  switch (k) {
    case StallKind::retransmission:
      return QColor(0xe6, 0x8a, 0x00);
    case StallKind::out_of_order:
      return QColor(0x8e, 0x24, 0xaa);
    case StallKind::capture_loss:
    case StallKind::sctp_gap:
      return QColor(0xd3, 0x2f, 0x2f);
    case StallKind::zero_window:
      return QColor(0x00, 0x79, 0x6b);
    case StallKind::crc_drop:
      return QColor(0xc2, 0x18, 0x5b);
    case StallKind::read_credit:
      return QColor(0x54, 0x6e, 0x7a);
  }
  return Qt::gray;
}

std::vector<TimedOperation> slowestOperations(const Timing& t, std::optional<OpKind> kind,
                                              std::optional<std::uint32_t> stream) {
  std::vector<TimedOperation> out;
  for (const auto& [key, op] : t.operations()) {
    if (kind && op.kind != *kind) continue;
    if (stream && op.stream != *stream) continue;
    for (const LatencySample& s : op.slowest)
      out.push_back({op.kind, op.stream, op.direction, s});
  }
  std::stable_sort(out.begin(), out.end(), [](const TimedOperation& a, const TimedOperation& b) {
    return a.sample.ns > b.sample.ns;
  });
  return out;
}

// ---- LatencyHistogramWidget ----------------------------------------------------------------

LatencyHistogramWidget::LatencyHistogramWidget(QWidget* parent) : QWidget(parent) {
  setMouseTracking(true);
  setAccessibleName(tr("Latency histograms"));
  setBackgroundRole(QPalette::Base);
  setAutoFillBackground(true);
}

QColor LatencyHistogramWidget::barColor() {
  return QColor(0x1e, 0x88, 0xe5);
}

QColor LatencyHistogramWidget::slowestColor() {
  return QColor(0xd8, 0x1b, 0x60);
}

void LatencyHistogramWidget::setData(SnapshotPtr snap, std::optional<std::uint32_t> stream) {
  snap_ = std::move(snap);
  panels_.clear();
  if (snap_ && snap_->timing) {
    const Timing& t = *snap_->timing;
    std::vector<std::uint64_t> exact[kOpKinds];
    bool estimated[kOpKinds] = {};
    for (const auto& [key, op] : t.operations()) {
      if (stream && op.stream != *stream) continue;
      if (op.completions() == 0) continue;
      auto it = std::find_if(panels_.begin(), panels_.end(),
                             [&](const Panel& p) { return p.kind == op.kind; });
      if (it == panels_.end()) {
        panels_.push_back(Panel{op.kind, {}, 0, 0, {}});
        it = panels_.end() - 1;
      }
      it->histogram.merge(op.histogram);
      const auto k = static_cast<std::size_t>(op.kind);
      estimated[k] = estimated[k] || op.estimated;
      exact[k].insert(exact[k].end(), op.exact.begin(), op.exact.end());
    }
    std::sort(panels_.begin(), panels_.end(),
              [](const Panel& a, const Panel& b) { return a.kind < b.kind; });
    for (Panel& p : panels_) {
      const auto k = static_cast<std::size_t>(p.kind);
      // Nearest rank over every exact sample, as core's OperationStats::quantile; the merged
      // histogram's estimate once any of them was past the cap.
      auto rank = [&](double q) -> std::uint64_t {
        auto& v = exact[k];
        if (estimated[k] || v.empty()) return p.histogram.quantile(q);
        const std::size_t r =
            std::max<std::size_t>(1, std::size_t(std::ceil(q * double(v.size()))));
        std::nth_element(v.begin(), v.begin() + std::ptrdiff_t(r - 1), v.end());
        return v[r - 1];
      };
      p.median = rank(0.5);
      p.p99 = rank(0.99);
      p.slowest = slowestOperations(t, p.kind, stream);
    }
  }
  // The buckets in view: every panel's, a bucket of room either side.
  std::size_t lo = LatencyHistogram::kBuckets, hi = 0;
  for (const Panel& p : panels_)
    for (std::size_t b = 0; b < LatencyHistogram::kBuckets; ++b)
      if (p.histogram.bucket(b)) lo = std::min(lo, b), hi = std::max(hi, b + 1);
  if (lo >= hi) lo = 40, hi = 100;  // 1 µs .. 32 ms: an empty axis
  lo_ = lo > 0 ? lo - 1 : 0;
  hi_ = std::min(LatencyHistogram::kBuckets, hi + 1);
  // At least two octaves, so that the axis has ticks.
  while (hi_ - lo_ < 2 * LatencyHistogram::kPerOctave) {
    if (lo_ > 0) --lo_;
    if (hi_ < LatencyHistogram::kBuckets) ++hi_;
  }
  update();
}

QRectF LatencyHistogramWidget::plotRect(int p) const {
  if (p < 0 || std::size_t(p) >= panels_.size()) return {};
  const int n = int(panels_.size());
  const double avail = height() - kTop - kBottom;
  const double ph = (avail - kPanelGap * (n - 1)) / n;
  const double top = kTop + p * (ph + kPanelGap) + kTitle;
  return QRectF(kLeft, top, width() - kLeft - kRight, std::max(4.0, ph - kTitle));
}

double LatencyHistogramWidget::xOf(double ns) const {
  const QRectF pr = plotRect(0);
  const double pos = bucketPos(ns);
  return pr.left() + (pos - double(lo_)) / double(hi_ - lo_) * pr.width();
}

QRectF LatencyHistogramWidget::barRect(int p, std::size_t b) const {
  if (p < 0 || std::size_t(p) >= panels_.size() || b < lo_ || b >= hi_) return {};
  const Panel& panel = panels_[std::size_t(p)];
  const std::uint64_t n = panel.histogram.bucket(b);
  if (!n) return {};
  std::uint64_t max = 1;
  for (std::size_t i = lo_; i < hi_; ++i)
    max = std::max(max, panel.histogram.bucket(i));
  const QRectF pr = plotRect(p);
  const double w = pr.width() / double(hi_ - lo_);
  const double x = pr.left() + double(b - lo_) * w;
  // At least 2 px: a bucket of one operation among thousands still shows.
  const double h = std::max(2.0, pr.height() * double(n) / double(max));
  return QRectF(x + 0.5, pr.bottom() - h, std::max(1.0, w - 1.0), h);
}

const TimedOperation* LatencyHistogramWidget::operationIn(int p, std::size_t b) const {
  if (p < 0 || std::size_t(p) >= panels_.size()) return nullptr;
  for (const TimedOperation& op : panels_[std::size_t(p)].slowest)  // slowest first
    if (LatencyHistogram::bucket_of(op.sample.ns) == b) return &op;
  return nullptr;
}

void LatencyHistogramWidget::paintEvent(QPaintEvent*) {
  QPainter p(this);
  p.setRenderHint(QPainter::Antialiasing, false);
  const QColor text = palette().color(QPalette::Text);
  const QColor grid = palette().color(QPalette::Mid);
  if (panels_.empty()) {
    p.setPen(text);
    p.drawText(rect(), Qt::AlignCenter,
               snap_ && snap_->timing ? tr("No operation completed (Read, Atomic or ULP command)")
                                      : tr("No timing model"));
    return;
  }
  const QFontMetrics fm = p.fontMetrics();
  for (int pi = 0; pi < int(panels_.size()); ++pi) {
    const Panel& panel = panels_[std::size_t(pi)];
    const QRectF pr = plotRect(pi);
    p.setPen(text);
    const QString title = tr("%1: %2 completed, median %3, p99 %4, max %5")
                              .arg(qstr(to_string(panel.kind)))
                              .arg(panel.histogram.count())
                              .arg(latencyText(panel.median), latencyText(panel.p99),
                                   latencyText(panel.histogram.max()));
    p.drawText(QRectF(pr.left(), pr.top() - kTitle, pr.width(), kTitle),
               Qt::AlignLeft | Qt::AlignVCenter, title);
    p.setPen(grid);
    p.drawLine(pr.bottomLeft(), pr.bottomRight());
    // Count axis: the tallest bar's count.
    std::uint64_t max = 1;
    for (std::size_t i = lo_; i < hi_; ++i)
      max = std::max(max, panel.histogram.bucket(i));
    p.setPen(text);
    p.drawText(QRectF(0, pr.top() - fm.height() / 2.0, kLeft - 6, fm.height()),
               Qt::AlignRight | Qt::AlignVCenter, QString::number(max));
    p.drawText(QRectF(0, pr.bottom() - fm.height(), kLeft - 6, fm.height()),
               Qt::AlignRight | Qt::AlignBottom, QStringLiteral("0"));
    std::optional<std::size_t> slowest_bucket;
    if (!panel.slowest.empty())
      slowest_bucket = LatencyHistogram::bucket_of(panel.slowest[0].sample.ns);
    // Median and p99, under the bars (which keep their colour).
    p.setRenderHint(QPainter::Antialiasing, true);
    const std::pair<std::uint64_t, QString> marks[] = {{panel.median, tr("median")},
                                                       {panel.p99, tr("p99")}};
    for (const auto& [v, name] : marks) {
      const double x = xOf(double(v));
      if (x < pr.left() || x > pr.right()) continue;
      p.setPen(QPen(text, 1, Qt::DashLine));
      p.drawLine(QPointF(x, pr.top()), QPointF(x, pr.bottom()));
    }
    p.setRenderHint(QPainter::Antialiasing, false);
    for (std::size_t b = lo_; b < hi_; ++b) {
      const QRectF bar = barRect(pi, b);
      if (bar.isEmpty()) continue;
      const bool slowest = slowest_bucket && *slowest_bucket == b;
      p.fillRect(bar, slowest ? slowestColor() : barColor());
      if (!slowest && operationIn(pi, b)) {
        // A kept operation in it: clicking selects it.
        p.setPen(Qt::NoPen);
        p.setBrush(slowestColor());
        p.drawEllipse(QPointF(bar.center().x(), bar.top() - 4), 2.5, 2.5);
      }
    }
    // The marks' names beside their lines, over the bars.
    p.setPen(text);
    for (const auto& [v, name] : marks) {
      const double x = xOf(double(v));
      if (x < pr.left() || x > pr.right()) continue;
      p.drawText(QRectF(x + 3, pr.top(), 80, fm.height()), Qt::AlignLeft | Qt::AlignTop, name);
    }
  }
  // Latency axis: decades of ns, the scale logarithmic.
  const QRectF last = plotRect(int(panels_.size()) - 1);
  p.setPen(text);
  for (double ns = 1; ns < 1e13; ns *= 10) {
    const double x = xOf(ns);
    if (x < last.left() - 1 || x > last.right() + 1) continue;
    p.setPen(grid);
    for (int pi = 0; pi < int(panels_.size()); ++pi) {
      const QRectF pr = plotRect(pi);
      p.drawLine(QPointF(x, pr.bottom()), QPointF(x, pr.bottom() + 4));
    }
    p.setPen(text);
    p.drawText(QRectF(x - 40, last.bottom() + 5, 80, fm.height()), Qt::AlignHCenter | Qt::AlignTop,
               latencyText(std::uint64_t(ns)));
  }
  p.drawText(QRectF(last.left(), last.bottom() + 5 + fm.height(), last.width(), fm.height()),
             Qt::AlignHCenter | Qt::AlignTop, tr("latency (log scale, quarter-octave bins)"));
}

std::optional<std::pair<int, std::size_t>> LatencyHistogramWidget::hitAt(QPointF pos) const {
  for (int pi = 0; pi < int(panels_.size()); ++pi) {
    const QRectF pr = plotRect(pi);
    if (pos.y() < pr.top() - 8 || pos.y() > pr.bottom() || pos.x() < pr.left() ||
        pos.x() >= pr.right())
      continue;
    const double w = pr.width() / double(hi_ - lo_);
    const std::size_t b = lo_ + std::size_t((pos.x() - pr.left()) / w);
    if (b < hi_) return std::pair{pi, b};
  }
  return std::nullopt;
}

void LatencyHistogramWidget::mousePressEvent(QMouseEvent* ev) {
  const auto hit = hitAt(ev->position());
  if (!hit) return;
  if (const TimedOperation* op = operationIn(hit->first, hit->second))
    emit operationClicked(op->sample.request_frame, int(op->stream), op->direction);
}

bool LatencyHistogramWidget::event(QEvent* ev) {
  if (ev->type() != QEvent::ToolTip) return QWidget::event(ev);
  auto* he = static_cast<QHelpEvent*>(ev);
  const auto hit = hitAt(he->pos());
  if (!hit) {
    QToolTip::hideText();
    return true;
  }
  const Panel& panel = panels_[std::size_t(hit->first)];
  const std::size_t b = hit->second;
  QString t = tr("%1: %2 operations of [%3, %4)")
                  .arg(qstr(to_string(panel.kind)))
                  .arg(panel.histogram.bucket(b))
                  .arg(latencyText(LatencyHistogram::lower(b)),
                       latencyText(LatencyHistogram::lower(b + 1)));
  if (const TimedOperation* op = operationIn(hit->first, b))
    t += tr("\nclick: stream %1, frame %2 → %3, %4")
             .arg(op->stream)
             .arg(op->sample.request_frame)
             .arg(op->sample.completion_frame)
             .arg(latencyText(op->sample.ns));
  QToolTip::showText(he->globalPos(), t, this);
  return true;
}

// ---- ThroughputWidget ----------------------------------------------------------------------

ThroughputWidget::ThroughputWidget(QWidget* parent) : QWidget(parent) {
  setMouseTracking(true);
  setAccessibleName(tr("Throughput and stalls"));
  setBackgroundRole(QPalette::Base);
  setAutoFillBackground(true);
}

void ThroughputWidget::setData(SnapshotPtr snap, std::optional<std::uint32_t> stream) {
  snap_ = std::move(snap);
  series_.clear();
  stalls_.clear();
  stream_.reset();
  if (snap_ && snap_->timing) {
    const Timing& t = *snap_->timing;
    const auto all = t.series();
    // No stream chosen: the one that placed the most octets.
    if (!stream) {
      std::uint64_t best = 0;
      std::map<std::uint32_t, std::uint64_t> per;
      for (const ThroughputSeries* s : all)
        per[s->stream] += s->total;
      for (const auto& [id, total] : per)
        if (!stream || total > best) stream = id, best = total;
    }
    if (stream) {
      stream_ = stream;
      for (const ThroughputSeries* s : all)
        if (s->stream == *stream) series_.push_back(s);
      stalls_ = t.stall_events(*stream);
    }
  }
  // Time in view: the series' intervals and the stalls.
  t0_ = INT64_MAX;
  t1_ = INT64_MIN;
  max_rate_ = 1;
  if (snap_ && snap_->timing) {
    const std::int64_t origin = snap_->timing->origin_ns();
    for (const ThroughputSeries* s : series_) {
      t0_ = std::min(t0_, origin);
      t1_ = std::max(t1_, origin + std::int64_t(s->interval_ns * s->octets.size()));
      for (std::uint64_t o : s->octets)
        max_rate_ = std::max(max_rate_, double(o) * 1e9 / double(s->interval_ns));
    }
    for (const StallEvent& e : stalls_)
      t0_ = std::min(t0_, e.ns), t1_ = std::max(t1_, e.ns);
  }
  if (t0_ >= t1_) {
    if (t0_ == INT64_MAX) t0_ = 0;
    t1_ = t0_ + 1000000;
  }
  update();
}

QRectF ThroughputWidget::plotRect() const {
  return QRectF(kLeft + 20, kTop + kTitle + 4, width() - kLeft - 20 - kRight,
                std::max(10, height() - kTop - kTitle - 4 - kBottom - 18));
}

double ThroughputWidget::xOf(std::int64_t ns) const {
  const QRectF pr = plotRect();
  return pr.left() + double(ns - t0_) / double(t1_ - t0_) * pr.width();
}

QRectF ThroughputWidget::stallRect(std::size_t i) const {
  if (i >= stalls_.size()) return {};
  const QRectF pr = plotRect();
  const double x = xOf(stalls_[i].ns);
  if (x < pr.left() - 1 || x > pr.right() + 1) return {};
  // Marks above the plot, one lane per kind so that kinds at one time stay apart.
  const double lane = double(static_cast<int>(stalls_[i].kind) % 3) * 5;
  return QRectF(x - 4, pr.top() - 8 - lane + 5, 8, 8);
}

void ThroughputWidget::paintEvent(QPaintEvent*) {
  QPainter p(this);
  const QColor text = palette().color(QPalette::Text);
  const QColor grid = palette().color(QPalette::Mid);
  const QFontMetrics fm = p.fontMetrics();
  if (!stream_) {
    p.setPen(text);
    p.drawText(rect(), Qt::AlignCenter,
               snap_ && snap_->timing ? tr("No placed octets") : tr("No timing model"));
    return;
  }
  const QRectF pr = plotRect();
  std::uint64_t events = 0;
  const auto totals = snap_->timing->stall_totals(*stream_);
  for (auto n : totals)
    events += n;
  QString title = tr("Stream %1: placed octets per interval, stalls above").arg(*stream_);
  if (events > stalls_.size())
    title += tr(" (the last %1 of %2 stall events)").arg(stalls_.size()).arg(events);
  p.setPen(text);
  p.drawText(QRectF(kLeft, kTop, width() - kLeft - kRight, kTitle),
             Qt::AlignLeft | Qt::AlignVCenter, title);
  p.setPen(grid);
  p.drawLine(pr.bottomLeft(), pr.bottomRight());
  p.drawLine(pr.bottomLeft(), pr.topLeft());
  p.setPen(text);
  p.drawText(QRectF(0, pr.top() - fm.height() / 2.0, pr.left() - 6, fm.height()),
             Qt::AlignRight | Qt::AlignVCenter,
             tr("%1/s").arg(bytesText(std::uint64_t(max_rate_))));
  p.drawText(QRectF(0, pr.bottom() - fm.height(), pr.left() - 6, fm.height()),
             Qt::AlignRight | Qt::AlignBottom, QStringLiteral("0"));
  // Directions as stepped areas, the second drawn over the first half-transparent.
  const QColor dir_colors[2] = {QColor(0x1e, 0x88, 0xe5), QColor(0x43, 0xa0, 0x47)};
  const std::int64_t origin = snap_->timing->origin_ns();
  int legend_x = int(pr.left());
  for (const ThroughputSeries* s : series_) {
    QColor c = dir_colors[s->direction & 1];
    c.setAlpha(170);
    for (std::size_t i = 0; i < s->octets.size(); ++i) {
      if (!s->octets[i]) continue;
      const std::int64_t a = origin + std::int64_t(i * s->interval_ns);
      const double x0 = xOf(a), x1 = std::max(x0 + 1, xOf(a + std::int64_t(s->interval_ns)));
      const double rate = double(s->octets[i]) * 1e9 / double(s->interval_ns);
      const double h = std::max(1.0, pr.height() * rate / max_rate_);
      p.fillRect(QRectF(x0, pr.bottom() - h, x1 - x0, h), c);
    }
    const StreamModel* sm =
        s->stream < snap_->model->streams.size() ? &snap_->model->streams[s->stream] : nullptr;
    const QString name =
        (sm ? directionText(*sm, s->direction) : tr("direction %1").arg(s->direction)) +
        tr(": %1").arg(bytesText(s->total));
    p.fillRect(QRectF(legend_x, pr.bottom() + 22, 10, 10), c);
    p.setPen(text);
    p.drawText(QPointF(legend_x + 14, pr.bottom() + 31), name);
    legend_x += 24 + fm.horizontalAdvance(name);
  }
  // Stall marks: a line through the plot and a marker above it.
  std::array<bool, kStallKinds> seen{};
  for (std::size_t i = 0; i < stalls_.size(); ++i) {
    const QRectF m = stallRect(i);
    if (m.isEmpty()) continue;
    const QColor c = stallColor(stalls_[i].kind);
    seen[static_cast<std::size_t>(stalls_[i].kind)] = true;
    QColor line = c;
    line.setAlpha(110);
    p.setPen(QPen(line, 1));
    p.drawLine(QPointF(m.center().x(), m.bottom()), QPointF(m.center().x(), pr.bottom()));
    p.fillRect(m, c);
  }
  for (std::size_t k = 0; k < kStallKinds; ++k) {
    if (!seen[k]) continue;
    const QString name = qstr(to_string(static_cast<StallKind>(k)));
    p.fillRect(QRectF(legend_x, pr.bottom() + 22, 10, 10), stallColor(static_cast<StallKind>(k)));
    p.setPen(text);
    p.drawText(QPointF(legend_x + 14, pr.bottom() + 31), name);
    legend_x += 24 + fm.horizontalAdvance(name);
  }
  // Time axis: seconds since the timing model's origin.
  p.setPen(text);
  const double span_s = double(t1_ - t0_) / 1e9;
  const double step = std::pow(10.0, std::floor(std::log10(std::max(span_s, 1e-9) / 4)));
  const double first = std::ceil(double(t0_ - origin) / 1e9 / step) * step;
  for (double s = first; s * 1e9 + double(origin) <= double(t1_); s += step) {
    const double x = xOf(origin + std::int64_t(s * 1e9));
    p.drawLine(QPointF(x, pr.bottom()), QPointF(x, pr.bottom() + 3));
    p.drawText(QRectF(x - 40, pr.bottom() + 4, 80, fm.height()), Qt::AlignHCenter,
               QStringLiteral("%1 s").arg(s, 0, 'g', 4));
  }
}

void ThroughputWidget::mousePressEvent(QMouseEvent* ev) {
  for (std::size_t i = 0; i < stalls_.size(); ++i)
    if (stallRect(i).adjusted(-2, -2, 2, 2).contains(ev->position())) {
      emit stallClicked(stalls_[i].frame);
      return;
    }
}

bool ThroughputWidget::event(QEvent* ev) {
  if (ev->type() != QEvent::ToolTip) return QWidget::event(ev);
  auto* he = static_cast<QHelpEvent*>(ev);
  for (std::size_t i = 0; i < stalls_.size(); ++i)
    if (stallRect(i).adjusted(-2, -2, 2, 2).contains(he->pos())) {
      QToolTip::showText(he->globalPos(),
                         tr("%1 in frame %2 (click to select it)")
                             .arg(qstr(to_string(stalls_[i].kind)))
                             .arg(stalls_[i].frame),
                         this);
      return true;
    }
  QToolTip::hideText();
  return true;
}

}  // namespace ddpscope::gui
