// SPDX-License-Identifier: GPL-2.0-or-later
// The Streams view: the stream tree (stream_tree_model.h: streams, directions, MPA
// parameters, queues with their messages, and regions). Selecting an item emits its region and
// frame, if any.
#pragma once

#include <QTreeView>

class QAction;
#include <optional>

#include "snapshot.h"

namespace ddpscope::gui {

class StreamTreeModel;

class StreamsPage : public QTreeView {
  Q_OBJECT
 public:
  explicit StreamsPage(QWidget* parent = nullptr);
  // Small trees open fully; big ones show streams and directions.
  void setSnapshot(SnapshotPtr snap);
  // Selects the region's item, else the untagged message at `frame` (0: none), else the
  // stream's direction, else the stream (no signal).
  void showFrame(std::optional<std::size_t> region, std::optional<std::uint32_t> stream,
                 int direction, std::uint64_t frame = 0);
  StreamTreeModel* model() const { return model_; }
  // The context menu's "Replay Against a Live Peer…", for the current item's stream.
  QAction* replayAction() const { return replay_action_; }

 signals:
  void itemChosen(int region, quint64 frame);  // region -1 / frame 0 when the item has none
  void replayRequested(int stream);

 private:
  StreamTreeModel* model_ = nullptr;
  QAction* replay_action_ = nullptr;
  bool quiet_ = false;
};

}  // namespace ddpscope::gui
