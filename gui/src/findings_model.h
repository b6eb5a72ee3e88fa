// SPDX-License-Identifier: GPL-2.0-or-later
// Findings table: severity, code, stream, direction, STag, frame, the Terminate a compliant
// Data Sink sends (layer/type/code and its name), message; a filter proxy by text, minimum
// severity, code and stream.
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
    ColStag,
    ColFrame,
    ColTerminate,
    ColMessage,
    ColumnCount
  };
  enum Role {
    SortRole = Qt::UserRole + 1,  // numeric where it matters
    FrameRole,
    StreamRole,     // -1 when none
    DirectionRole,  // -1 when none
    SeverityRole,   // int(Severity)
    FindingRole,    // index into Model::findings
    CodeRole,       // the stable code, "ddp.tagged.bounds"
  };

  explicit FindingsModel(QObject* parent = nullptr);
  void setSnapshot(SnapshotPtr snap);
  const Finding* finding(int row) const;
  // The STag of the finding's segment, when it has one (Snapshot::finding_stags).
  std::optional<std::uint32_t> stag(int row) const;

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation o, int role = Qt::DisplayRole) const override;

 private:
  SnapshotPtr snap_;
};

// Text filter over every column, a minimum severity, one code and one stream.
class FindingsFilterProxy : public QSortFilterProxyModel {
  Q_OBJECT
 public:
  explicit FindingsFilterProxy(QObject* parent = nullptr);
  void setMinimumSeverity(int severity);
  int minimumSeverity() const { return min_severity_; }
  void setCode(const QString& code);  // empty: every code
  const QString& code() const { return code_; }
  void setStream(int stream);  // -1: every stream (and findings of none)
  int stream() const { return stream_; }

 protected:
  bool filterAcceptsRow(int row, const QModelIndex& parent) const override;

 private:
  int min_severity_ = 0;
  QString code_;
  int stream_ = -1;
};

}  // namespace ddpscope::gui
