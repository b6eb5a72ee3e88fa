// SPDX-License-Identifier: GPL-2.0-or-later
// Findings table: severity, code, stream, direction, frame, message, Terminate triple.
#pragma once

#include <QAbstractTableModel>
#include <QSortFilterProxyModel>

#include "snapshot.h"

namespace ddpscope::gui {

class FindingsModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Column {
    ColSeverity,
    ColCode,
    ColStream,
    ColDirection,
    ColFrame,
    ColMessage,
    ColTerminate,
    ColumnCount
  };
  enum Role {
    SortRole = Qt::UserRole + 1,  // numeric where it matters
    FrameRole,
    StreamRole,     // -1 when none
    DirectionRole,  // -1 when none
    SeverityRole,   // int(Severity)
    FindingRole,    // index into Model::findings
  };

  explicit FindingsModel(QObject* parent = nullptr);
  void setSnapshot(SnapshotPtr snap);
  const Finding* finding(int row) const;

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation o, int role = Qt::DisplayRole) const override;

 private:
  SnapshotPtr snap_;
};

// Text filter over every column plus a minimum severity.
class FindingsFilterProxy : public QSortFilterProxyModel {
  Q_OBJECT
 public:
  explicit FindingsFilterProxy(QObject* parent = nullptr);
  void setMinimumSeverity(int severity);
  int minimumSeverity() const { return min_severity_; }

 protected:
  bool filterAcceptsRow(int row, const QModelIndex& parent) const override;

 private:
  int min_severity_ = 0;
};

}  // namespace ddpscope::gui
