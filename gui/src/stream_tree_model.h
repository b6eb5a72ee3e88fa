// SPDX-License-Identifier: GPL-2.0-or-later
// Streams → directions → queues (QN, MSN first/last/count) → messages in MSN order (each named
// by its ULP command when a decoder named one; fetched in batches as the view asks), and STag
// regions.
#pragma once

#include <QAbstractItemModel>
#include <optional>
#include <vector>

#include "snapshot.h"

namespace ddpscope::gui {

class StreamTreeModel : public QAbstractItemModel {
  Q_OBJECT
 public:
  enum Column { ColItem, ColDetails, ColFrames, ColCount, ColumnCount };
  enum Kind { KindStream, KindDirection, KindQueue, KindRegion, KindGroup, KindMessage };
  enum Role {
    KindRole = Qt::UserRole + 1,
    StreamRole,     // stream id, or -1
    DirectionRole,  // 0/1, or -1
    RegionRole,     // index into Snapshot::regions, or -1
    FrameRole,      // first frame of the item
    MessageRole,    // index into Model::messages, or -1
  };

  explicit StreamTreeModel(QObject* parent = nullptr);
  void setSnapshot(SnapshotPtr snap);

  QModelIndex index(int row, int column, const QModelIndex& parent = {}) const override;
  QModelIndex parent(const QModelIndex& child) const override;
  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation o, int role = Qt::DisplayRole) const override;
  bool hasChildren(const QModelIndex& parent = {}) const override;
  bool canFetchMore(const QModelIndex& parent) const override;
  void fetchMore(const QModelIndex& parent) override;
  static constexpr std::size_t kFetchBatch = 256;
  // Loaded with the snapshot (inside the reset, no insertion signals). Qt 6.4's
  // QAbstractItemModelTester fetches more from its modelReset handler before it marks the reset
  // done, and reports that insertion as nested; so the first load is large enough for queues
  // of realistic captures, and only longer ones are fetched lazily.
  static constexpr std::size_t kFirstBatch = 4096;

  // Deepest item for a stream / direction / region (invalid when absent).
  QModelIndex indexForStream(std::uint32_t stream, int direction = -1) const;
  QModelIndex indexForRegion(std::size_t region) const;
  // The item of the untagged message of `stream` (and `direction`, when >= 0) that starts, is
  // placed or delivered at `frame`, fetching its queue's items up to it (invalid when none).
  QModelIndex indexForMessageAt(std::uint64_t frame, std::optional<std::uint32_t> stream,
                                int direction);

 private:
  struct Node {
    Kind kind = KindGroup;
    int parent = -1;  // node index, -1 = root
    int row = 0;
    std::vector<int> children;
    int stream = -1;
    int direction = -1;
    int region = -1;
    quint64 frame = 0;
    long long message = -1;  // KindMessage: index into Model::messages (-1: a missing run)
    // KindQueue: its series (Snapshot::series), its items (a message, or a run of missing
    // MSNs) and where fetching stopped: row of the series and record within it.
    int series = -1;
    std::size_t items = 0, fetched = 0;
    std::uint32_t next_row = 0, next_record = 0;
    QString text[ColumnCount];
    QString tooltip;
  };
  int addNode(int parent, Node n);
  Node messageNode(const Node& queue, const MsnRow& row, std::uint32_t k) const;
  // Adds the next `max` items of queue node `qi` (the caller signals the insertion).
  void fetchBatch(int qi, std::size_t max = kFetchBatch);
  void build();
  QModelIndex indexOfNode(int node) const;

  SnapshotPtr snap_;
  std::vector<Node> nodes_;
  std::vector<int> roots_;
};

}  // namespace ddpscope::gui
