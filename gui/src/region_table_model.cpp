// SPDX-License-Identifier: GPL-2.0-or-later
#include "region_table_model.h"

#include <QStringList>

#include "labels.h"

namespace ddpscope::gui {

QString RegionTableModel::issuesText(const RegionInfo& r) {
  QStringList parts;
  auto add = [&](std::uint64_t n, const QString& one, const QString& many) {
    if (n) parts << QStringLiteral("%1 %2").arg(n).arg(n == 1 ? one : many);
  };
  add(r.conflicts, tr("conflict"), tr("conflicts"));
  add(r.violations, tr("bounds violation"), tr("bounds violations"));
  return parts.join(QStringLiteral(", "));
}

QString RegionTableModel::reuseText(const RegionInfo& r) {
  if (!r.overwrites) return {};
  return tr("reused: %1 rewritten by %2")
      .arg(bytesText(r.reused_octets))
      .arg(r.overwrites == 1 ? tr("1 later segment") : tr("%1 later segments").arg(r.overwrites));
}

QString RegionTableModel::placementText(const RegionInfo& r) {
  QStringList parts;
  if (issueCount(r)) parts << issuesText(r);
  if (r.overwrites) parts << reuseText(r);
  return parts.join(QStringLiteral(", "));
}

QString RegionTableModel::commandText(const ShadowBuffer& b) {
  if (b.ulp.empty()) return QString::fromStdString(b.command);
  if (b.command.empty()) return QString::fromStdString(b.ulp);
  return QStringLiteral("%1: %2").arg(QString::fromStdString(b.ulp),
                                      QString::fromStdString(b.command));
}

RegionTableModel::RegionTableModel(QObject* parent) : QAbstractTableModel(parent) {}

void RegionTableModel::setSnapshot(SnapshotPtr snap) {
  beginResetModel();
  snap_ = std::move(snap);
  endResetModel();
}

int RegionTableModel::rowCount(const QModelIndex& parent) const {
  if (parent.isValid() || !snap_) return 0;
  return static_cast<int>(snap_->regions.size());
}

int RegionTableModel::columnCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : ColumnCount;
}

QVariant RegionTableModel::data(const QModelIndex& index, int role) const {
  if (!checkIndex(index, CheckIndexOption::IndexIsValid)) return {};
  const RegionInfo& r = snap_->regions[std::size_t(index.row())];
  const ShadowBuffer& b = *r.buffer;
  const std::uint64_t issues = issueCount(r);
  if (role == Qt::DisplayRole) {
    switch (index.column()) {
      case ColRegion:
        return regionLabel(b);
      case ColStream:
        return r.stream ? QVariant(*r.stream) : QVariant(QString());
      case ColSource:
        return qstr(to_string(b.source));
      case ColCommand:
        return commandText(b);
      case ColBounds:
        if (b.base && b.length)
          return QStringLiteral("[0x%1, +%2)").arg(*b.base, 0, 16).arg(*b.length);
        if (b.max_end() > b.min_to())
          return tr("observed [0x%1, 0x%2)").arg(b.min_to(), 0, 16).arg(b.max_end(), 0, 16);
        return tr("unknown");
      case ColPlaced:
        return bytesText(b.bytes_placed());
      case ColRanges:
        return quint64(b.segments());
      case ColIssues:
        return placementText(r);
    }
    return {};
  }
  if (role == SortRole) {
    switch (index.column()) {
      case ColStream:
        return r.stream ? qint64(*r.stream) : qint64(-1);
      case ColPlaced:
        return quint64(b.bytes_placed());
      case ColRanges:
        return quint64(b.segments());
      case ColIssues:
        return quint64(issues);
      case ColCommand:
        // Per ULP, then by the frame that advertised the region: each ULP's regions together,
        // in the order their commands came; regions no ULP named last.
        return QStringLiteral("%1 %2")
            .arg(b.ulp.empty() ? QStringLiteral("~") : QString::fromStdString(b.ulp))
            .arg(b.learned_frame, 12, 10, QLatin1Char('0'));
      default:
        return data(index, Qt::DisplayRole);
    }
  }
  if (role == Qt::ForegroundRole && index.column() == ColIssues && issues)
    return spanColor(r.violations ? SpanKind::violation : SpanKind::conflict);
  if (role == RegionRole) return index.row();
  if (role == FrameRole) return quint64(r.first_frame);
  if (role == Qt::ToolTipRole && index.column() == ColCommand && !b.command.empty())
    return commandText(b);
  if (role == Qt::ToolTipRole && index.column() == ColRegion)
    return tr("origin: %1\nlearned in frame %2")
        .arg(QString::fromStdString(b.origin))
        .arg(b.learned_frame);
  return {};
}

QVariant RegionTableModel::headerData(int section, Qt::Orientation o, int role) const {
  if (o != Qt::Horizontal || role != Qt::DisplayRole) return {};
  switch (section) {
    case ColRegion:
      return tr("Region");
    case ColStream:
      return tr("Stream");
    case ColSource:
      return tr("Source");
    case ColCommand:
      return tr("Upper layer");
    case ColBounds:
      return tr("Bounds");
    case ColPlaced:
      return tr("Placed");
    case ColRanges:
      return tr("Ranges");
    case ColIssues:
      return tr("Issues");
    default:
      return {};
  }
}

}  // namespace ddpscope::gui
