// SPDX-License-Identifier: GPL-2.0-or-later
#include "streams_page.h"

#include <QHeaderView>
#include <QItemSelectionModel>

#include "labels.h"
#include "stream_tree_model.h"

namespace ddpscope::gui {
StreamsPage::StreamsPage(QWidget* parent) : QTreeView(parent) {
  model_ = new StreamTreeModel(this);
  setModel(model_);
  setUniformRowHeights(true);
  setAlternatingRowColors(true);
  header()->setSectionResizeMode(QHeaderView::Interactive);
  header()->setResizeContentsPrecision(kResizeContentsRows);
  setAccessibleName(tr("Streams"));
  connect(selectionModel(), &QItemSelectionModel::currentChanged, this, [this] {
    if (quiet_) return;
    const QModelIndex idx = currentIndex();
    if (!idx.isValid()) return;
    emit itemChosen(idx.data(StreamTreeModel::RegionRole).toInt(),
                    idx.data(StreamTreeModel::FrameRole).toULongLong());
  });
}

void StreamsPage::setSnapshot(SnapshotPtr snap) {
  const bool small = snap && snap->model && snap->model->streams.size() <= 64;
  model_->setSnapshot(std::move(snap));
  if (small)
    expandAll();
  else
    expandToDepth(0);
  for (int c = 0; c < StreamTreeModel::ColumnCount - 1; ++c)
    resizeColumnToContents(c);
}

void StreamsPage::showFrame(std::optional<std::size_t> region, std::optional<std::uint32_t> stream,
                            int direction, std::uint64_t frame) {
  QModelIndex idx;
  if (region) idx = model_->indexForRegion(*region);
  if (!idx.isValid() && frame) idx = model_->indexForMessageAt(frame, stream, direction);
  if (!idx.isValid() && stream) idx = model_->indexForStream(*stream, direction);
  if (!idx.isValid() && stream) idx = model_->indexForStream(*stream);
  if (!idx.isValid()) return;
  quiet_ = true;
  selectionModel()->setCurrentIndex(
      idx, QItemSelectionModel::ClearAndSelect | QItemSelectionModel::Rows);
  quiet_ = false;
  scrollTo(idx);
}

}  // namespace ddpscope::gui
