// SPDX-License-Identifier: GPL-2.0-or-later
// Streams → directions → queues (QN, MSN first/last/count) and STag regions.
#pragma once

#include <QAbstractItemModel>
#include <vector>

#include "snapshot.h"

namespace ddpscope::gui {

class StreamTreeModel : public QAbstractItemModel {
  Q_OBJECT
 public:
  enum Column { ColItem, ColDetails, ColFrames, ColCount, ColumnCount };
  enum Kind { KindStream, KindDirection, KindQueue, KindRegion, KindGroup };
  enum Role {
    KindRole = Qt::UserRole + 1,
    StreamRole,     // stream id, or -1
    DirectionRole,  // 0/1, or -1
    RegionRole,     // index into Snapshot::regions, or -1
    FrameRole,      // first frame of the item
  };

  explicit StreamTreeModel(QObject* parent = nullptr);
  void setSnapshot(SnapshotPtr snap);

  QModelIndex index(int row, int column, const QModelIndex& parent = {}) const override;
  QModelIndex parent(const QModelIndex& child) const override;
  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation o, int role = Qt::DisplayRole) const override;

  // Deepest item for a stream / direction / region (invalid when absent).
  QModelIndex indexForStream(std::uint32_t stream, int direction = -1) const;
  QModelIndex indexForRegion(std::size_t region) const;

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
    QString text[ColumnCount];
    QString tooltip;
  };
  int addNode(int parent, Node n);
  void build();
  QModelIndex indexOfNode(int node) const;

  SnapshotPtr snap_;
  std::vector<Node> nodes_;
  std::vector<int> roots_;
};

}  // namespace ddpscope::gui
