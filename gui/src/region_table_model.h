// SPDX-License-Identifier: GPL-2.0-or-later
// One row per shadow buffer (owner, STag): the ULP command that advertised it, bounds, extent,
// placed octets, issues. Sorting by the command column groups the regions per ULP.
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
    ColCommand,  // the upper-layer command that advertised the region ("nvme-rdma: NVMe Read …")
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
  // "2 conflicts, 1 bounds violation": what is wrong (a conflict, a violation). Octets placed
  // again with the same content, or after their message was delivered, are not.
  static QString issuesText(const RegionInfo& r);
  static std::uint64_t issueCount(const RegionInfo& r) { return r.conflicts + r.violations; }
  // "reused: 8.0 KiB rewritten by 2 later segments" (buffer reuse, normal), or empty.
  static QString reuseText(const RegionInfo& r);
  // "nvme-rdma: NVMe Read cid 12 nsid 1": the ULP and command that named the region, or empty.
  static QString commandText(const ShadowBuffer& b);
  // Both, for one line.
  static QString placementText(const RegionInfo& r);

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation o, int role = Qt::DisplayRole) const override;

 private:
  SnapshotPtr snap_;
};

}  // namespace ddpscope::gui
