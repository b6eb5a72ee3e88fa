// SPDX-License-Identifier: GPL-2.0-or-later
#include "timing_page.h"

#include <QComboBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QSignalBlocker>
#include <QSplitter>
#include <QTableWidget>
#include <QVBoxLayout>
#include <set>

#include "labels.h"

namespace ddpscope::gui {
namespace {
QString stallsText(const StallCounts& c) {
  QStringList parts;
  for (std::size_t k = 0; k < kStallKinds; ++k)
    if (c.events[k])
      parts << QStringLiteral("%1 %2").arg(c.events[k]).arg(qstr(to_string(StallKind(k))));
  QString t = parts.join(QStringLiteral(", "));
  if (c.incomplete) t += QStringLiteral(" (or more)");
  return t;
}
}  // namespace

TimingPage::TimingPage(QWidget* parent) : QWidget(parent) {
  auto* layout = new QVBoxLayout(this);
  auto* bar = new QHBoxLayout;
  stream_ = new QComboBox;
  stream_->setAccessibleName(tr("Stream"));
  stream_->setSizeAdjustPolicy(QComboBox::AdjustToContents);
  auto* label = new QLabel(tr("S&tream:"));
  label->setBuddy(stream_);
  summary_ = new QLabel;
  bar->addWidget(label);
  bar->addWidget(stream_);
  bar->addWidget(summary_, 1);
  layout->addLayout(bar);

  histograms_ = new LatencyHistogramWidget;
  throughput_ = new ThroughputWidget;
  table_ = new QTableWidget(0, ColumnCount);
  table_->setAccessibleName(tr("Slowest operations"));
  table_->setHorizontalHeaderLabels({tr("Operation"), tr("Stream"), tr("Latency"),
                                     tr("Request frame"), tr("Answer frame"),
                                     tr("Stalls between")});
  table_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  table_->setSelectionBehavior(QAbstractItemView::SelectRows);
  table_->setSelectionMode(QAbstractItemView::SingleSelection);
  table_->verticalHeader()->hide();
  table_->horizontalHeader()->setStretchLastSection(true);
  auto* split = new QSplitter(Qt::Vertical);
  split->addWidget(histograms_);
  split->addWidget(throughput_);
  split->addWidget(table_);
  split->setStretchFactor(0, 3);
  split->setStretchFactor(1, 2);
  split->setStretchFactor(2, 2);
  split->setChildrenCollapsible(false);
  layout->addWidget(split, 1);

  connect(stream_, &QComboBox::currentIndexChanged, this, [this](int) { refresh(); });
  connect(histograms_, &LatencyHistogramWidget::operationClicked, this,
          [this](quint64 frame, int stream, int direction) {
            showFrame(frame);
            emit frameChosen(frame, stream, direction);
          });
  connect(throughput_, &ThroughputWidget::stallClicked, this, [this](quint64 frame) {
    emit frameChosen(frame, throughput_->stream() ? int(*throughput_->stream()) : -1, -1);
  });
  connect(table_, &QTableWidget::currentCellChanged, this, [this](int row, int, int, int) {
    if (quiet_ || row < 0 || std::size_t(row) >= rows_.size()) return;
    const TimedOperation& op = rows_[std::size_t(row)];
    emit frameChosen(op.sample.request_frame, int(op.stream), op.direction);
  });
}

void TimingPage::setSnapshot(SnapshotPtr snap) {
  snap_ = std::move(snap);
  const int cur = stream_->count() ? stream_->currentData().toInt() : -1;
  {
    const QSignalBlocker block(stream_);
    stream_->clear();
    stream_->addItem(tr("All streams"), -1);
    if (snap_ && snap_->timing) {
      std::set<std::uint32_t> ids;
      for (const auto& [key, op] : snap_->timing->operations())
        ids.insert(op.stream);
      for (const ThroughputSeries* s : snap_->timing->series())
        ids.insert(s->stream);
      for (std::uint32_t id : ids) {
        const bool known = snap_->model && id < snap_->model->streams.size();
        stream_->addItem(known ? tr("Stream %1: %2 ↔ %3")
                                     .arg(id)
                                     .arg(endpointText(snap_->model->streams[id].client),
                                          endpointText(snap_->model->streams[id].server))
                               : tr("Stream %1").arg(id),
                         int(id));
      }
    }
    const int i = stream_->findData(cur);
    stream_->setCurrentIndex(i >= 0 ? i : 0);
  }
  refresh();
}

void TimingPage::setStream(std::optional<std::uint32_t> stream) {
  const int i = stream_->findData(stream ? int(*stream) : -1);
  if (i >= 0) stream_->setCurrentIndex(i);
}

void TimingPage::refresh() {
  const int sid = stream_->currentData().toInt();
  const std::optional<std::uint32_t> stream =
      sid >= 0 ? std::optional<std::uint32_t>(std::uint32_t(sid)) : std::nullopt;
  histograms_->setData(snap_, stream);
  throughput_->setData(snap_, stream);
  rows_.clear();
  if (snap_ && snap_->timing) rows_ = slowestOperations(*snap_->timing, std::nullopt, stream);
  // The same operation kept twice (rdma-read and rdma-read-first share a request) is listed
  // under each kind: they are different latencies.
  const QSignalBlocker block(table_);
  quiet_ = true;
  table_->clearContents();
  table_->setRowCount(int(rows_.size()));
  for (int r = 0; r < int(rows_.size()); ++r) {
    const TimedOperation& op = rows_[std::size_t(r)];
    const StreamModel* sm = snap_->model && op.stream < snap_->model->streams.size()
                                ? &snap_->model->streams[op.stream]
                                : nullptr;
    const QString cells[ColumnCount] = {
        qstr(to_string(op.kind)),
        sm ? tr("%1 (%2)").arg(op.stream).arg(directionText(*sm, op.direction))
           : QString::number(op.stream),
        latencyText(op.sample.ns),
        QString::number(op.sample.request_frame),
        QString::number(op.sample.completion_frame),
        stallsText(op.sample.stalls)};
    for (int c = 0; c < ColumnCount; ++c) {
      auto* item = new QTableWidgetItem(cells[c]);
      if (c == ColLatency || c == ColRequest || c == ColCompletion)
        item->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
      table_->setItem(r, c, item);
    }
  }
  quiet_ = false;
  table_->resizeColumnsToContents();
  QString sum;
  if (!snap_ || !snap_->timing) {
    sum = tr("No timing model");
  } else {
    std::uint64_t done = 0, open = 0;
    for (const auto& [key, op] : snap_->timing->operations()) {
      if (stream && op.stream != *stream) continue;
      done += op.completions();
      open += op.unanswered();
    }
    sum = tr("%1 operations timed, %2 unanswered; the %3 slowest kept per kind and stream below")
              .arg(done)
              .arg(open)
              .arg(snap_->timing->options().top);
  }
  summary_->setText(sum);
}

void TimingPage::showFrame(std::uint64_t frame) {
  const int cur = table_->currentRow();
  if (cur >= 0 && std::size_t(cur) < rows_.size() &&
      (rows_[std::size_t(cur)].sample.request_frame == frame ||
       rows_[std::size_t(cur)].sample.completion_frame == frame))
    return;
  for (int r = 0; r < int(rows_.size()); ++r) {
    const LatencySample& s = rows_[std::size_t(r)].sample;
    if (s.request_frame != frame && s.completion_frame != frame) continue;
    quiet_ = true;
    table_->setCurrentCell(r, 0);
    quiet_ = false;
    table_->scrollToItem(table_->item(r, 0));
    return;
  }
}

}  // namespace ddpscope::gui
