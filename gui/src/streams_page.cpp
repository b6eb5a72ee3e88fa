// SPDX-License-Identifier: GPL-2.0-or-later
#include "streams_page.h"

#include <QAction>
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
  replay_action_ = new QAction(tr("Replay Against a Live Peer…"), this);
  addAction(replay_action_);
  setContextMenuPolicy(Qt::ActionsContextMenu);
  connect(replay_action_, &QAction::triggered, this, [this] {
    const int stream = currentIndex().data(StreamTreeModel::StreamRole).toInt();
    if (stream >= 0) emit replayRequested(stream);
  });
  connect(selectionModel(), &QItemSelectionModel::currentChanged, this, [this] {
    replay_action_->setEnabled(currentIndex().data(StreamTreeModel::StreamRole).toInt() >= 0);
  });
  replay_action_->setEnabled(false);
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
