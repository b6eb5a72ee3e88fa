// SPDX-License-Identifier: GPL-2.0-or-later
#include "findings_model.h"

#include "labels.h"

namespace ddpscope::gui {

FindingsModel::FindingsModel(QObject* parent) : QAbstractTableModel(parent) {}

void FindingsModel::setSnapshot(SnapshotPtr snap) {
  beginResetModel();
  snap_ = std::move(snap);
  endResetModel();
}

const Finding* FindingsModel::finding(int row) const {
  if (!snap_ || !snap_->model || row < 0 || std::size_t(row) >= snap_->model->findings.size())
    return nullptr;
  return &snap_->model->findings[std::size_t(row)];
}

std::optional<std::uint32_t> FindingsModel::stag(int row) const {
  if (!snap_ || row < 0 || std::size_t(row) >= snap_->finding_stags.size()) return std::nullopt;
  return snap_->finding_stags[std::size_t(row)];
}

int FindingsModel::rowCount(const QModelIndex& parent) const {
  if (parent.isValid() || !snap_ || !snap_->model) return 0;
  return static_cast<int>(snap_->model->findings.size());
}

int FindingsModel::columnCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : ColumnCount;
}

QVariant FindingsModel::data(const QModelIndex& index, int role) const {
  if (!checkIndex(index, CheckIndexOption::IndexIsValid)) return {};
  const Finding& f = *finding(index.row());
  const bool has_stream = f.stream != UINT32_MAX;
  switch (role) {
    case Qt::DisplayRole:
      switch (index.column()) {
        case ColSeverity:
          return f.consequence_of == Consequence::gap   ? severityText(f.severity) + tr(" (gap)")
                 : f.consequence_of == Consequence::crc ? severityText(f.severity) + tr(" (CRC)")
                                                        : severityText(f.severity);
        case ColCode:
          return qstr(f.code());
        case ColStream:
          return has_stream ? QVariant(f.stream) : QVariant(QString());
        case ColDirection:
          if (has_stream && f.direction >= 0 && snap_->model->streams.size() > f.stream)
            return directionText(snap_->model->streams[f.stream], f.direction);
          return QString();
        case ColStag:
          if (auto st = stag(index.row())) return stagText(*st);
          return QString();
        case ColFrame:
          return quint64(f.frame);
        case ColMessage:
          return QString::fromStdString(f.message);
        case ColTerminate: {
          // A sink that answers with no Terminate says what it does instead; where the chosen
          // profile's answer differs from RFC's, RFC's follows.
          QString text = !f.terminate && f.outcome && *f.outcome != SinkOutcome::terminate
                             ? QStringLiteral("(none: %1)").arg(qstr(to_string(*f.outcome)))
                             : terminateText(f.terminate);
          if (f.rfc_terminate) text += tr("  [RFC: %1]").arg(terminateText(f.rfc_terminate));
          return text;
        }
      }
      return {};
    case SortRole:
      switch (index.column()) {
        case ColSeverity:
          return int(f.severity);
        case ColStream:
          return has_stream ? qint64(f.stream) : qint64(-1);
        case ColDirection:
          return f.direction;
        case ColStag:
          if (auto st = stag(index.row())) return qint64(*st);
          return qint64(-1);
        case ColFrame:
          return quint64(f.frame);
        default:
          return data(index, Qt::DisplayRole);
      }
    case Qt::ForegroundRole:
      if (index.column() == ColSeverity) return severityColor(f.severity);
      return {};
    case Qt::ToolTipRole: {
      const auto& spec = finding_spec(f.id);
      QString t = QStringLiteral("%1 (%2)\n%3\n%4")
                      .arg(qstr(spec.code), qstr(spec.rfc), qstr(spec.summary),
                           QString::fromStdString(f.message));
      const QString sink =
          snap_->model->sink_profile
              ? tr("the %1 Data Sink").arg(qstr(to_string(*snap_->model->sink_profile)))
              : tr("a compliant Data Sink");
      if (f.terminate && f.id != FindingId::rdmap_terminate)
        t += tr("\nTerminate %1 sends: %2").arg(sink, terminateLongText(*f.terminate));
      else if (f.terminate)
        t += tr("\nTerminate the peer sent: %1").arg(terminateLongText(*f.terminate));
      if (f.outcome && *f.outcome != SinkOutcome::terminate)
        t += tr("\nWhat %1 does: %2 (no Terminate)").arg(sink, qstr(to_string(*f.outcome)));
      if (f.rfc_terminate)
        t += tr("\nTerminate an RFC Data Sink sends instead: %1")
                 .arg(terminateLongText(*f.rfc_terminate));
      if (f.matches) {
        QStringList names;
        for (const SinkProfile p : {SinkProfile::rfc, SinkProfile::siw})
          if (*f.matches & (1u << static_cast<unsigned>(p))) names << qstr(to_string(p));
        t += names.isEmpty()
                 ? tr("\nMatches no Data Sink profile's prediction")
                 : tr("\nMatches the prediction of: %1").arg(names.join(QStringLiteral(", ")));
      }
      return t;
    }
    case CodeRole:
      return qstr(f.code());
    case FrameRole:
      return quint64(f.frame);
    case StreamRole:
      return has_stream ? int(f.stream) : -1;
    case DirectionRole:
      return f.direction;
    case SeverityRole:
      return int(f.severity);
    case FindingRole:
      return index.row();
    default:
      return {};
  }
}

QVariant FindingsModel::headerData(int section, Qt::Orientation o, int role) const {
  if (o != Qt::Horizontal || role != Qt::DisplayRole) return {};
  switch (section) {
    case ColSeverity:
      return tr("Severity");
    case ColCode:
      return tr("Code");
    case ColStream:
      return tr("Stream");
    case ColDirection:
      return tr("Direction");
    case ColStag:
      return tr("STag");
    case ColFrame:
      return tr("Frame");
    case ColMessage:
      return tr("Message");
    case ColTerminate:
      return tr("Terminate (layer/type/code)");
    default:
      return {};
  }
}

FindingsFilterProxy::FindingsFilterProxy(QObject* parent) : QSortFilterProxyModel(parent) {
  setSortRole(FindingsModel::SortRole);
  setFilterKeyColumn(-1);
  setFilterCaseSensitivity(Qt::CaseInsensitive);
}

void FindingsFilterProxy::setMinimumSeverity(int severity) {
  if (severity == min_severity_) return;
  min_severity_ = severity;
  invalidateRowsFilter();
}

void FindingsFilterProxy::setCode(const QString& code) {
  if (code == code_) return;
  code_ = code;
  invalidateRowsFilter();
}

void FindingsFilterProxy::setStream(int stream) {
  if (stream == stream_) return;
  stream_ = stream;
  invalidateRowsFilter();
}

bool FindingsFilterProxy::filterAcceptsRow(int row, const QModelIndex& parent) const {
  const QModelIndex idx = sourceModel()->index(row, 0, parent);
  if (idx.data(FindingsModel::SeverityRole).toInt() < min_severity_) return false;
  if (!code_.isEmpty() && idx.data(FindingsModel::CodeRole).toString() != code_) return false;
  if (stream_ >= 0 && idx.data(FindingsModel::StreamRole).toInt() != stream_) return false;
  return QSortFilterProxyModel::filterAcceptsRow(row, parent);
}

}  // namespace ddpscope::gui
