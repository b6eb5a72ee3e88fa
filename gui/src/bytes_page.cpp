// SPDX-License-Identifier: GPL-2.0-or-later
#include "bytes_page.h"

#include <QComboBox>
#include <QFontDatabase>
#include <QFontMetrics>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QItemSelectionModel>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QStringList>
#include <QTableView>
#include <QVBoxLayout>
#include <algorithm>

#include "labels.h"

namespace ddpscope::gui {

BytesPage::BytesPage(QWidget* parent) : QWidget(parent) {
  auto* layout = new QVBoxLayout(this);
  auto* bar = new QHBoxLayout;
  combo_ = new QComboBox;
  auto* region_label = new QLabel(tr("R&egion:"));
  region_label->setBuddy(combo_);
  goto_ = new QLineEdit;
  goto_->setPlaceholderText(tr("Go to TO (0x…)"));
  goto_->setAccessibleName(tr("Go to TO"));
  goto_->setMaximumWidth(180);
  auto* export_button = new QPushButton(tr("E&xport…"));
  info_ = new QLabel;
  bar->addWidget(region_label);
  bar->addWidget(combo_, 1);
  bar->addWidget(goto_);
  bar->addWidget(info_);
  bar->addWidget(export_button);
  layout->addLayout(bar);
  model_ = new BytesModel(this);
  view_ = new QTableView;
  view_->setModel(model_);
  view_->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
  view_->verticalHeader()->hide();
  view_->verticalHeader()->setSectionResizeMode(QHeaderView::Fixed);
  view_->horizontalHeader()->setStretchLastSection(true);
  view_->horizontalHeader()->setMinimumSectionSize(8);
  view_->setShowGrid(false);
  view_->setSelectionMode(QAbstractItemView::ContiguousSelection);
  view_->setWordWrap(false);
  view_->setAccessibleName(tr("Shadow buffer bytes"));
  layout->addWidget(view_, 1);
  selection_ = new QLabel;
  selection_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  layout->addWidget(selection_);
  sizeColumns();

  connect(combo_, &QComboBox::currentIndexChanged, this, &BytesPage::regionChosen);
  connect(export_button, &QPushButton::clicked, this, &BytesPage::exportRequested);
  connect(view_, &QTableView::activated, this, [this](const QModelIndex& idx) {
    const quint64 f = idx.data(BytesModel::FrameRole).toULongLong();
    if (f) emit frameActivated(f);
  });
  connect(view_->selectionModel(), &QItemSelectionModel::selectionChanged, this,
          &BytesPage::updateSelection);
  connect(goto_, &QLineEdit::returnPressed, this, [this] {
    bool ok = false;
    const QString t = goto_->text().trimmed();
    const quint64 to = t.startsWith(QLatin1String("0x"), Qt::CaseInsensitive)
                           ? t.mid(2).toULongLong(&ok, 16)
                           : t.toULongLong(&ok, 0);
    if (!ok || !goToTo(to)) info_->setText(tr("TO %1 is not in this region's rows").arg(t));
  });
}

void BytesPage::sizeColumns() {
  // Widths from the monospaced font: the columns hold exactly their content.
  const QFontMetrics fm(view_->font());
  const int pad = 2 * fm.horizontalAdvance(QLatin1Char(' '));
  view_->setColumnWidth(BytesModel::ColOffset,
                        fm.horizontalAdvance(QStringLiteral("00000000")) + 2 * pad);
  for (int i = 0; i < int(BytesModel::kRowOctets); ++i)
    view_->setColumnWidth(BytesModel::ColOctet0 + i,
                          fm.horizontalAdvance(QStringLiteral("00")) + pad + (i == 7 ? pad : 0));
  view_->setColumnWidth(BytesModel::ColAscii,
                        fm.horizontalAdvance(QString(16, QLatin1Char('W'))) + 2 * pad);
  view_->verticalHeader()->setDefaultSectionSize(fm.height() + 4);
}

void BytesPage::setRegion(SnapshotPtr snap, int region) {
  if (combo_->currentIndex() != region) {
    const QSignalBlocker block(combo_);
    combo_->setCurrentIndex(region);
  }
  model_->setRegion(std::move(snap), region);
  sizeColumns();
  info_->setText(model_->truncated()
                     ? tr("(first %1 shown; export has all)")
                           .arg(bytesText(BytesModel::kMaxRows * BytesModel::kRowOctets))
                     : QString());
  updateSelection();
}

void BytesPage::showFrame(std::uint64_t frame) {
  const int row = model_->rowForFrame(frame);
  if (row < 0) return;
  const QModelIndex idx = model_->index(row, BytesModel::ColOffset);
  view_->selectionModel()->setCurrentIndex(
      idx, QItemSelectionModel::ClearAndSelect | QItemSelectionModel::Rows);
  view_->scrollTo(idx, QAbstractItemView::PositionAtCenter);
}

bool BytesPage::goToTo(std::uint64_t to) {
  const int row = model_->rowForTo(to);
  if (row < 0) return false;
  const auto* buf = model_->buffer();
  const std::uint64_t first = model_->index(row, 0).data(BytesModel::OffsetRole).toULongLong();
  const int col = BytesModel::ColOctet0 + int(std::min<std::uint64_t>(to - first, 15));
  const QModelIndex idx =
      model_->index(row, buf && !model_->index(row, 0).data(BytesModel::HoleRole).toBool()
                             ? col
                             : BytesModel::ColOffset);
  view_->selectionModel()->setCurrentIndex(idx, QItemSelectionModel::ClearAndSelect);
  view_->scrollTo(idx, QAbstractItemView::PositionAtCenter);
  return true;
}

void BytesPage::updateSelection() {
  std::uint64_t lo = UINT64_MAX, hi = 0;
  for (const QModelIndex& i : view_->selectionModel()->selectedIndexes()) {
    if (auto to = model_->octetAt(i.row(), i.column())) {
      lo = std::min(lo, *to);
      hi = std::max(hi, *to + 1);
    } else if (i.column() == BytesModel::ColOffset || i.column() == BytesModel::ColAscii ||
               i.column() == BytesModel::ColFrames) {
      if (i.data(BytesModel::HoleRole).toBool()) continue;
      const std::uint64_t r = i.data(BytesModel::OffsetRole).toULongLong();
      lo = std::min(lo, r);
      hi = std::max(hi, r + BytesModel::kRowOctets);
    }
  }
  if (hi <= lo) {
    selectionText_.clear();
  } else {
    QStringList frames;
    for (auto f : model_->framesIn(lo, hi))
      frames << QString::number(f);
    selectionText_ = frames.isEmpty()
                         ? tr("TO [0x%1, 0x%2): never placed").arg(lo, 0, 16).arg(hi, 0, 16)
                         : tr("TO [0x%1, 0x%2) (%3) placed by frame%4 %5")
                               .arg(lo, 0, 16)
                               .arg(hi, 0, 16)
                               .arg(bytesText(hi - lo))
                               .arg(frames.size() > 1 ? QStringLiteral("s") : QString())
                               .arg(frames.join(QStringLiteral(", ")));
  }
  selection_->setText(selectionText_);
}

}  // namespace ddpscope::gui
