// SPDX-License-Identifier: GPL-2.0-or-later
#include "findings_page.h"

#include <QComboBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QItemSelectionModel>
#include <QLabel>
#include <QLineEdit>
#include <QSignalBlocker>
#include <QSplitter>
#include <QTableView>
#include <QTextBrowser>
#include <QVBoxLayout>
#include <map>
#include <set>

#include "findings_model.h"
#include "labels.h"

namespace ddpscope::gui {
FindingsPage::FindingsPage(QWidget* parent) : QWidget(parent) {
  auto* layout = new QVBoxLayout(this);
  auto* bar = new QHBoxLayout;
  filter_ = new QLineEdit;
  filter_->setPlaceholderText(tr("Filter (code, message, frame, STag…)"));
  filter_->setClearButtonEnabled(true);
  auto* filter_label = new QLabel(tr("&Filter:"));
  filter_label->setBuddy(filter_);
  severity_ = new QComboBox;
  severity_->setAccessibleName(tr("Severity"));
  severity_->addItem(tr("All severities"), int(Severity::note));
  severity_->addItem(tr("Warnings and errors"), int(Severity::warning));
  severity_->addItem(tr("Errors only"), int(Severity::error));
  code_ = new QComboBox;
  code_->setAccessibleName(tr("Code"));
  code_->setSizeAdjustPolicy(QComboBox::AdjustToContents);
  stream_ = new QComboBox;
  stream_->setAccessibleName(tr("Stream"));
  stream_->setSizeAdjustPolicy(QComboBox::AdjustToContents);
  count_ = new QLabel;
  bar->addWidget(filter_label);
  bar->addWidget(filter_, 1);
  bar->addWidget(severity_);
  bar->addWidget(code_);
  bar->addWidget(stream_);
  bar->addWidget(count_);
  layout->addLayout(bar);

  model_ = new FindingsModel(this);
  proxy_ = new FindingsFilterProxy(this);
  proxy_->setSourceModel(model_);
  view_ = new QTableView;
  view_->setModel(proxy_);
  view_->setSortingEnabled(true);
  view_->sortByColumn(FindingsModel::ColFrame, Qt::AscendingOrder);
  view_->setSelectionBehavior(QAbstractItemView::SelectRows);
  view_->setSelectionMode(QAbstractItemView::SingleSelection);
  view_->verticalHeader()->hide();
  view_->horizontalHeader()->setStretchLastSection(true);
  view_->horizontalHeader()->setResizeContentsPrecision(kResizeContentsRows);
  view_->setWordWrap(false);
  view_->setTextElideMode(Qt::ElideRight);
  view_->setAccessibleName(tr("Findings"));
  detail_ = new QTextBrowser;
  detail_->setAccessibleName(tr("Finding details"));
  detail_->setLineWrapMode(QTextEdit::WidgetWidth);
  detail_->setPlaceholderText(tr("Select a finding to read its whole explanation."));
  auto* split = new QSplitter(Qt::Vertical);
  split->addWidget(view_);
  split->addWidget(detail_);
  split->setStretchFactor(0, 3);
  split->setStretchFactor(1, 1);
  split->setChildrenCollapsible(false);
  layout->addWidget(split, 1);
  populateFilters();

  connect(filter_, &QLineEdit::textChanged, this, [this](const QString& t) {
    proxy_->setFilterFixedString(t);
    updateCount();
  });
  connect(severity_, &QComboBox::currentIndexChanged, this, [this](int) {
    proxy_->setMinimumSeverity(severity_->currentData().toInt());
    updateCount();
  });
  connect(code_, &QComboBox::currentIndexChanged, this, [this](int) {
    proxy_->setCode(code_->currentData().toString());
    updateCount();
  });
  connect(stream_, &QComboBox::currentIndexChanged, this, [this](int) {
    proxy_->setStream(stream_->currentData().toInt());
    updateCount();
  });
  connect(proxy_, &QAbstractItemModel::modelReset, this, [this] { updateCount(); });
  connect(view_->selectionModel(), &QItemSelectionModel::currentRowChanged, this, [this] {
    updateDetail();
    if (quiet_) return;
    const QModelIndex idx = view_->currentIndex();
    if (!idx.isValid()) return;
    emit findingSelected(idx.data(FindingsModel::FrameRole).toULongLong(),
                         idx.data(FindingsModel::StreamRole).toInt(),
                         idx.data(FindingsModel::DirectionRole).toInt());
  });
  connect(view_, &QTableView::activated, this, &FindingsPage::findingActivated);
}

void FindingsPage::setSnapshot(SnapshotPtr snap) {
  snap_ = snap;
  model_->setSnapshot(std::move(snap));
  populateFilters();
  // Sized to contents, but for the message: the last column stretches to what is left.
  if (snap_ && snap_->final)
    for (int c = 0; c < FindingsModel::ColMessage; ++c)
      view_->resizeColumnToContents(c);
  updateCount();
  updateDetail();
}

QString FindingsPage::detailText(int findingRow) const {
  const Finding* f = model_->finding(findingRow);
  if (!f) return {};
  const auto& spec = finding_spec(f->id);
  QStringList lines;
  QString where =
      tr("%1 %2 in frame %3").arg(severityText(f->severity), qstr(spec.code)).arg(f->frame);
  if (f->stream != UINT32_MAX && snap_ && f->stream < snap_->model->streams.size())
    where += tr(", stream %1 (%2)")
                 .arg(f->stream)
                 .arg(directionText(snap_->model->streams[f->stream], f->direction));
  lines << where << QString::fromStdString(f->message);
  lines << tr("%1 (%2)").arg(qstr(spec.summary), qstr(spec.rfc));
  if (f->terminate)
    lines << tr("Terminate a compliant Data Sink sends: %1").arg(terminateLongText(*f->terminate));
  return lines.join(QLatin1Char('\n'));
}

void FindingsPage::updateDetail() {
  const QModelIndex idx = view_->currentIndex();
  if (!idx.isValid()) {
    detail_->clear();
    return;
  }
  const int row = idx.data(FindingsModel::FindingRole).toInt();
  const QString text = detailText(row);
  if (detail_->toPlainText() != text) detail_->setPlainText(text);
}

void FindingsPage::populateFilters() {
  // Codes and streams that occur, with counts; the current choice kept when it still occurs.
  const QString code = code_->currentData().toString();
  const int stream = stream_->count() ? stream_->currentData().toInt() : -1;
  const QSignalBlocker b1(code_);
  const QSignalBlocker b2(stream_);
  code_->clear();
  stream_->clear();
  code_->addItem(tr("All codes"), QString());
  stream_->addItem(tr("All streams"), -1);
  std::map<QString, std::uint64_t> codes;
  std::map<std::uint32_t, std::uint64_t> streams;
  if (snap_ && snap_->model)
    for (const Finding& f : snap_->model->findings) {
      ++codes[qstr(f.code())];
      if (f.stream != UINT32_MAX) ++streams[f.stream];
    }
  for (const auto& [c, n] : codes)
    code_->addItem(tr("%1 (%2)").arg(c).arg(n), c);
  for (const auto& [s, n] : streams)
    stream_->addItem(tr("Stream %1 (%2)").arg(s).arg(n), int(s));
  const int ci = code_->findData(code);
  code_->setCurrentIndex(ci >= 0 ? ci : 0);
  const int si = stream_->findData(stream);
  stream_->setCurrentIndex(si >= 0 ? si : 0);
  proxy_->setCode(code_->currentData().toString());
  proxy_->setStream(stream_->currentData().toInt());
}

void FindingsPage::setCodeFilter(const QString& code) {
  const int i = code_->findData(code);
  code_->setCurrentIndex(i >= 0 ? i : 0);
}

void FindingsPage::setStreamFilter(int stream) {
  const int i = stream_->findData(stream);
  stream_->setCurrentIndex(i >= 0 ? i : 0);
}

QString FindingsPage::countText() const {
  return count_->text();
}

void FindingsPage::updateCount() {
  count_->setText(tr("%1 of %2").arg(proxy_->rowCount()).arg(model_->rowCount()));
}

void FindingsPage::selectFinding(int findingRow) {
  const QModelIndex idx = proxy_->mapFromSource(model_->index(findingRow, 0));
  if (!idx.isValid()) return;
  view_->selectionModel()->setCurrentIndex(
      idx, QItemSelectionModel::ClearAndSelect | QItemSelectionModel::Rows);
  view_->scrollTo(idx);
}

void FindingsPage::showFrame(std::uint64_t frame) {
  const QModelIndex cur = view_->currentIndex();
  if (cur.isValid() && cur.data(FindingsModel::FrameRole).toULongLong() == frame) return;
  for (int r = 0; r < proxy_->rowCount(); ++r) {
    const QModelIndex i = proxy_->index(r, 0);
    if (i.data(FindingsModel::FrameRole).toULongLong() != frame) continue;
    quiet_ = true;
    view_->selectionModel()->setCurrentIndex(
        i, QItemSelectionModel::ClearAndSelect | QItemSelectionModel::Rows);
    quiet_ = false;
    view_->scrollTo(i);
    return;
  }
}

void FindingsPage::focusFilter() {
  filter_->setFocus();
  filter_->selectAll();
}

}  // namespace ddpscope::gui
