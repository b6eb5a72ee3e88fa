// SPDX-License-Identifier: GPL-2.0-or-later
// One row per shadow buffer (owner, STag): bounds, extent, placed octets, issues.
#pragma once

#include <QAbstractTableModel>

#include "snapshot.h"

namespace ddpscope::gui {

class RegionTableModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Column {
    ColRegion,
    ColStream,
    ColSource,
    ColBounds,
    ColPlaced,
    ColRanges,
    ColIssues,
    ColumnCount
  };
  enum Role { SortRole = Qt::UserRole + 1, RegionRole, FrameRole };

  explicit RegionTableModel(QObject* parent = nullptr);
  void setSnapshot(SnapshotPtr snap);
  const SnapshotPtr& snapshot() const { return snap_; }
  static QString issuesText(const RegionInfo& r);  // "1 overlap, 2 conflicts"

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation o, int role = Qt::DisplayRole) const override;

 private:
  SnapshotPtr snap_;
};

}  // namespace ddpscope::gui
