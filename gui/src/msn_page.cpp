// SPDX-License-Identifier: GPL-2.0-or-later
#include "msn_page.h"

#include <QComboBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QSignalBlocker>
#include <QVBoxLayout>

#include "labels.h"
#include "msn_chart_widget.h"

namespace ddpscope::gui {

MsnPage::MsnPage(QWidget* parent) : QWidget(parent) {
  auto* layout = new QVBoxLayout(this);
  auto* bar = new QHBoxLayout;
  combo_ = new QComboBox;
  combo_->setAccessibleName(tr("Queue"));
  auto* label = new QLabel(tr("&Queue:"));
  label->setBuddy(combo_);
  bar->addWidget(label);
  bar->addWidget(combo_, 1);
  layout->addLayout(bar);
  chart_ = new MsnChartWidget;
  layout->addWidget(chart_, 1);
  connect(combo_, &QComboBox::currentIndexChanged, this,
          [this](int i) { chart_->setSeries(snap_, i); });
  connect(chart_, &MsnChartWidget::messageClicked, this, &MsnPage::frameClicked);
}

void MsnPage::setSnapshot(SnapshotPtr snap) {
  snap_ = std::move(snap);
  const int previous = combo_->currentIndex();
  {
    const QSignalBlocker block(combo_);
    combo_->clear();
    if (snap_ && snap_->model) {
      const Model& m = *snap_->model;
      for (const MsnSeries& s : snap_->series) {
        const QString dir = s.stream < m.streams.size()
                                ? directionText(m.streams[s.stream], s.direction)
                                : QString();
        QString text = tr("Stream %1  %2  QN %3  (%4")
                           .arg(s.stream)
                           .arg(dir)
                           .arg(s.qn)
                           .arg(s.messages.size() == 1 ? tr("1 message")
                                                       : tr("%1 messages").arg(s.messages.size()));
        if (s.missing) text += tr(", %1 MSN missing").arg(s.missing);
        if (s.duplicates) text += tr(", %1 duplicate").arg(s.duplicates);
        combo_->addItem(text + QLatin1Char(')'));
      }
    }
    const int n = combo_->count();
    combo_->setCurrentIndex(previous >= 0 && previous < n ? previous : (n ? 0 : -1));
  }
  chart_->setSeries(snap_, combo_->currentIndex());
}

void MsnPage::showFrame(std::uint64_t frame, std::optional<std::uint32_t> stream, int direction) {
  if (snap_)
    if (auto s = snap_->series_of_frame(frame, stream, direction))
      if (combo_->currentIndex() != int(*s)) combo_->setCurrentIndex(int(*s));
  chart_->setHighlightFrame(frame);
}

}  // namespace ddpscope::gui
