// SPDX-License-Identifier: GPL-2.0-or-later
// The Timing view's charts, drawn from core's timing model (analysis/timing.h), no numbers of
// their own:
//  * LatencyHistogramWidget: one panel per operation kind (rdma-read, nvme-command, ...), its
//    histogram's quarter-octave buckets as bars over a log-scale latency axis shared by the
//    panels, merged over the streams shown; the median and p99 as lines; the bar holding the
//    slowest operation in the accent colour, bars holding other kept slowest operations
//    dotted. Clicking a bar that holds a kept operation emits the slowest of them.
//  * ThroughputWidget: one stream's placed octets per interval (core's throughput series, both
//    directions) as a rate over capture time, with the stream's stall events (the last
//    TimingOptions::kStallRing) as marks in their kind's colour. Clicking a mark emits its frame.
#pragma once

#include <QWidget>
#include <optional>
#include <vector>

#include "snapshot.h"

namespace ddpscope::gui {

// A kept slowest operation with where it ran.
struct TimedOperation {
  OpKind kind = OpKind::rdma_read;
  std::uint32_t stream = 0;
  int direction = 0;  // the requester's
  LatencySample sample;
};

// The slowest operations kept of `kind` (every kind when nullopt) on `stream` (all when
// nullopt), slowest first.
std::vector<TimedOperation> slowestOperations(const Timing& t, std::optional<OpKind> kind,
                                              std::optional<std::uint32_t> stream);
QString latencyText(std::uint64_t ns);  // "975 µs", "11.4 ms"
QColor stallColor(StallKind k);

class LatencyHistogramWidget : public QWidget {
  Q_OBJECT
 public:
  explicit LatencyHistogramWidget(QWidget* parent = nullptr);
  void setData(SnapshotPtr snap, std::optional<std::uint32_t> stream);

  struct Panel {
    OpKind kind = OpKind::rdma_read;
    LatencyHistogram histogram;  // merged over the streams and directions shown
    std::uint64_t median = 0, p99 = 0;
    std::vector<TimedOperation> slowest;  // kept ones, slowest first
  };
  const std::vector<Panel>& panels() const { return panels_; }
  // Geometry (for hit tests and tests): the plot area of panel `p`; the bar of bucket `b`
  // (empty when the bucket is empty or out of view); the x of a latency.
  QRectF plotRect(int p) const;
  QRectF barRect(int p, std::size_t b) const;
  double xOf(double ns) const;
  // The kept operation a click on bucket `b` of panel `p` selects (the slowest in it).
  const TimedOperation* operationIn(int p, std::size_t b) const;
  static QColor barColor();
  static QColor slowestColor();

  QSize sizeHint() const override { return {800, 320}; }
  QSize minimumSizeHint() const override { return {240, 120}; }

 signals:
  void operationClicked(quint64 frame, int stream, int direction);

 protected:
  void paintEvent(QPaintEvent*) override;
  void mousePressEvent(QMouseEvent*) override;
  bool event(QEvent*) override;

 private:
  std::optional<std::pair<int, std::size_t>> hitAt(QPointF pos) const;
  SnapshotPtr snap_;
  std::vector<Panel> panels_;
  std::size_t lo_ = 0, hi_ = 1;  // buckets in view [lo_, hi_)
};

class ThroughputWidget : public QWidget {
  Q_OBJECT
 public:
  explicit ThroughputWidget(QWidget* parent = nullptr);
  void setData(SnapshotPtr snap, std::optional<std::uint32_t> stream);
  std::optional<std::uint32_t> stream() const { return stream_; }
  const std::vector<const ThroughputSeries*>& series() const { return series_; }
  const std::vector<StallEvent>& stalls() const { return stalls_; }
  QRectF plotRect() const;
  // The mark drawn for stalls()[i] (empty when out of view).
  QRectF stallRect(std::size_t i) const;
  double xOf(std::int64_t ns) const;  // capture time (ns) -> x

  QSize sizeHint() const override { return {800, 240}; }
  QSize minimumSizeHint() const override { return {240, 120}; }

 signals:
  void stallClicked(quint64 frame);

 protected:
  void paintEvent(QPaintEvent*) override;
  void mousePressEvent(QMouseEvent*) override;
  bool event(QEvent*) override;

 private:
  SnapshotPtr snap_;
  std::optional<std::uint32_t> stream_;
  std::vector<const ThroughputSeries*> series_;
  std::vector<StallEvent> stalls_;
  std::int64_t t0_ = 0, t1_ = 1;  // capture times in view
  double max_rate_ = 1;           // octets/s
};

}  // namespace ddpscope::gui
