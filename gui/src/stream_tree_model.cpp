// SPDX-License-Identifier: GPL-2.0-or-later
#include "stream_tree_model.h"

#include <QStringList>
#include <algorithm>

#include "labels.h"
#include "region_table_model.h"

namespace ddpscope::gui {

StreamTreeModel::StreamTreeModel(QObject* parent) : QAbstractItemModel(parent) {}

void StreamTreeModel::setSnapshot(SnapshotPtr snap) {
  beginResetModel();
  snap_ = std::move(snap);
  build();
  endResetModel();
}

int StreamTreeModel::addNode(int parent, Node n) {
  const int id = static_cast<int>(nodes_.size());
  n.parent = parent;
  auto& siblings = parent < 0 ? roots_ : nodes_[static_cast<std::size_t>(parent)].children;
  n.row = static_cast<int>(siblings.size());
  siblings.push_back(id);
  nodes_.push_back(std::move(n));
  return id;
}

static QString regionDetails(const RegionInfo& r) {
  const ShadowBuffer& b = *r.buffer;
  QStringList parts;
  if (b.base && b.length)
    parts << QStringLiteral("bounds [0x%1, +%2)").arg(*b.base, 0, 16).arg(*b.length);
  else if (b.max_end() > b.min_to())
    parts << QStringLiteral("observed [0x%1, 0x%2)").arg(b.min_to(), 0, 16).arg(b.max_end(), 0, 16);
  parts << QStringLiteral("source: %1").arg(qstr(to_string(b.source)));
  if (RegionTableModel::issueCount(r) || r.overwrites) parts << RegionTableModel::placementText(r);
  if (b.invalidated) parts << QStringLiteral("invalidated in frame %1").arg(b.invalidated_frame);
  return parts.join(QStringLiteral(" · "));
}

void StreamTreeModel::build() {
  nodes_.clear();
  roots_.clear();
  if (!snap_ || !snap_->model) return;
  const Model& m = *snap_->model;
  std::vector<std::vector<int>> dir_nodes(m.streams.size(), std::vector<int>(2, -1));
  for (std::size_t si = 0; si < m.streams.size(); ++si) {
    const StreamModel& s = m.streams[si];
    // Like the analyzer's report: TCP streams that are not (yet) iWARP are not shown.
    if (s.state == StreamState::not_iwarp || s.state == StreamState::unknown) continue;
    Node n;
    n.kind = KindStream;
    n.stream = static_cast<int>(si);
    n.frame = s.first_frame;
    n.text[ColItem] = QStringLiteral("Stream %1: %2 ↔ %3")
                          .arg(s.id)
                          .arg(endpointText(s.client), endpointText(s.server));
    QStringList det;
    det << qstr(to_string(s.state));
    if (s.mid_stream) det << QStringLiteral("mid-stream");
    if (s.revision) det << QStringLiteral("MPA rev %1").arg(*s.revision);
    if (s.enhanced) det << QStringLiteral("enhanced");
    if (s.peer_to_peer) det << QStringLiteral("peer-to-peer");
    if (!s.rtr.empty()) det << QStringLiteral("RTR %1").arg(QString::fromStdString(s.rtr));
    if (s.closed) det << QStringLiteral("closed");
    n.text[ColDetails] = det.join(QStringLiteral(" · "));
    n.text[ColFrames] = QStringLiteral("%1–%2").arg(s.first_frame).arg(s.last_frame);
    n.text[ColCount] = QStringLiteral("%1 FPDUs").arg(s.dirs[0].fpdus + s.dirs[1].fpdus);
    const int sn = addNode(-1, std::move(n));

    for (int d = 0; d < 2; ++d) {
      const DirectionModel& dm = s.dirs[static_cast<std::size_t>(d)];
      Node dn;
      dn.kind = KindDirection;
      dn.stream = static_cast<int>(si);
      dn.direction = d;
      dn.frame = dm.mpa_frame_number ? dm.mpa_frame_number : s.first_frame;
      dn.text[ColItem] = directionText(s, d);
      QStringList p;
      p << QStringLiteral("CRC %1").arg(dm.mpa.crc ? QStringLiteral("on") : QStringLiteral("off"));
      p << QStringLiteral("markers %1")
               .arg(dm.mpa.markers ? QStringLiteral("on") : QStringLiteral("off"));
      p << QStringLiteral("S0 %1").arg(dm.mpa.s0);
      if (dm.mss) p << QStringLiteral("MSS %1").arg(*dm.mss);
      if (dm.mpa_frame_number) p << QStringLiteral("MPA frame %1").arg(dm.mpa_frame_number);
      if (dm.crc_errors) p << QStringLiteral("%1 CRC errors").arg(dm.crc_errors);
      if (dm.bytes_lost) p << QStringLiteral("%1 lost").arg(bytesText(dm.bytes_lost));
      if (dm.bytes_unframed) p << QStringLiteral("%1 unframed").arg(bytesText(dm.bytes_unframed));
      dn.text[ColDetails] = p.join(QStringLiteral(" · "));
      dn.text[ColCount] = QStringLiteral("%1 FPDUs, %2").arg(dm.fpdus).arg(bytesText(dm.tcp_bytes));
      QStringList ops;
      for (std::size_t o = 0; o < dm.opcodes.size(); ++o) {
        const auto& c = dm.opcodes[o];
        if (!c.segments) continue;
        ops << QStringLiteral("%1: %2 segments, %3 messages, %4")
                   .arg(opcodeName(int(o)))
                   .arg(c.segments)
                   .arg(c.messages)
                   .arg(bytesText(c.bytes));
      }
      dn.tooltip = ops.join(QLatin1Char('\n'));
      const int dnode = addNode(sn, std::move(dn));
      dir_nodes[si][static_cast<std::size_t>(d)] = dnode;

      for (const auto& [qn, q] : dm.queues) {
        Node qnode;
        for (std::size_t i = 0; i < snap_->series.size(); ++i) {
          const MsnSeries& ser = snap_->series[i];
          if (ser.stream != si || ser.direction != d || ser.qn != qn) continue;
          qnode.series = int(i);
          for (const MsnRow& row : ser.rows)
            qnode.items += row.missing ? 1 : row.copies();
        }
        qnode.kind = KindQueue;
        qnode.stream = static_cast<int>(si);
        qnode.direction = d;
        qnode.text[ColItem] = QStringLiteral("QN %1").arg(qn);
        qnode.text[ColDetails] = QStringLiteral("MSN %1–%2").arg(q.first_msn).arg(q.last_msn);
        qnode.text[ColCount] =
            QStringLiteral("%1 messages, %2 segments").arg(q.messages).arg(q.segments);
        const int qi = addNode(dnode, std::move(qnode));
        // The first batch now, inside the reset (no insertion signals): a view expanding the
        // queue needs nothing more unless it has more messages.
        fetchBatch(qi, kFirstBatch);
      }
    }
  }

  int orphans = -1;
  for (std::size_t ri = 0; ri < snap_->regions.size(); ++ri) {
    const RegionInfo& r = snap_->regions[ri];
    Node n;
    n.kind = KindRegion;
    n.region = static_cast<int>(ri);
    n.frame = r.first_frame;
    n.text[ColItem] = regionLabel(*r.buffer);
    n.text[ColDetails] = regionDetails(r);
    n.text[ColFrames] = r.first_frame ? QString::number(r.first_frame) : QString();
    n.text[ColCount] = QStringLiteral("%1 placed, %2 ranges")
                           .arg(bytesText(r.buffer->bytes_placed()))
                           .arg(r.buffer->segments());
    int parent = -1;
    if (r.stream && *r.stream < m.streams.size() && dir_nodes[*r.stream][0] >= 0) {
      n.stream = static_cast<int>(*r.stream);
      n.direction = r.direction;
      parent = dir_nodes[*r.stream][static_cast<std::size_t>(r.direction >= 0 ? r.direction : 0)];
    } else {
      if (orphans < 0) {
        Node g;
        g.kind = KindGroup;
        g.text[ColItem] = tr("Regions without a stream");
        orphans = addNode(-1, std::move(g));
      }
      parent = orphans;
    }
    addNode(parent, std::move(n));
  }
}

StreamTreeModel::Node StreamTreeModel::messageNode(const Node& queue, const MsnRow& row,
                                                   std::uint32_t k) const {
  const Model& m = *snap_->model;
  const MsnSeries& ser = snap_->series[std::size_t(queue.series)];
  Node n;
  n.kind = KindMessage;
  n.stream = queue.stream;
  n.direction = queue.direction;
  if (row.missing) {
    n.frame = row.frame;
    n.text[ColItem] = row.count > 1 ? tr("MSN %1–%2").arg(row.msn).arg(row.msn + row.count - 1)
                                    : tr("MSN %1").arg(row.msn);
    n.text[ColDetails] = tr("never seen: the next MSN arrived in frame %1").arg(row.frame);
    n.text[ColFrames] = QString::number(row.frame);
    return n;
  }
  const std::size_t idx = ser.by_msn[k];
  const MessageRecord& r = m.messages[idx];
  n.message = static_cast<long long>(idx);
  n.frame = r.first_frame;
  n.text[ColItem] = tr("MSN %1").arg(r.msn);
  n.text[ColDetails] = messageText(m, r);
  if (k > row.begin) n.text[ColDetails] += tr(" — duplicate MSN");
  const std::uint64_t last = std::max({r.first_frame, r.placed_frame, r.delivered_frame});
  n.text[ColFrames] = last > r.first_frame ? QStringLiteral("%1–%2").arg(r.first_frame).arg(last)
                                           : QString::number(r.first_frame);
  n.text[ColCount] = r.delivered_frame ? tr("delivered in %1").arg(r.delivered_frame)
                     : r.placed_frame  ? tr("placed, not delivered")
                                       : tr("not fully placed");
  return n;
}

bool StreamTreeModel::hasChildren(const QModelIndex& parent) const {
  if (parent.isValid() && parent.column() == 0) {
    const Node& n = nodes_[parent.internalId()];
    if (n.kind == KindQueue) return n.items > 0;
  }
  return QAbstractItemModel::hasChildren(parent);
}

bool StreamTreeModel::canFetchMore(const QModelIndex& parent) const {
  if (!parent.isValid() || parent.column() != 0) return false;
  const Node& n = nodes_[parent.internalId()];
  return n.kind == KindQueue && n.fetched < n.items;
}

void StreamTreeModel::fetchMore(const QModelIndex& parent) {
  if (!canFetchMore(parent)) return;
  const Node& queue = nodes_[parent.internalId()];
  const std::size_t count = std::min(kFetchBatch, queue.items - queue.fetched);
  beginInsertRows(parent, int(queue.fetched), int(queue.fetched + count - 1));
  fetchBatch(int(parent.internalId()));
  endInsertRows();
}

void StreamTreeModel::fetchBatch(int qi, std::size_t max) {
  const Node queue = nodes_[std::size_t(qi)];
  if (queue.kind != KindQueue || queue.series < 0 || queue.fetched >= queue.items) return;
  const MsnSeries& ser = snap_->series[std::size_t(queue.series)];
  const std::size_t count = std::min(max, queue.items - queue.fetched);
  std::uint32_t row = queue.next_row, k = queue.next_record;
  for (std::size_t i = 0; i < count && row < ser.rows.size(); ++i) {
    const MsnRow& r = ser.rows[row];
    if (r.missing) {
      addNode(qi, messageNode(queue, r, 0));
      ++row;
      continue;
    }
    if (k < r.begin) k = r.begin;
    addNode(qi, messageNode(queue, r, k));
    if (++k >= r.end) ++row, k = 0;
  }
  Node& q = nodes_[std::size_t(qi)];
  q.fetched += count;
  q.next_row = row;
  q.next_record = k;
}

QModelIndex StreamTreeModel::indexForMessageAt(std::uint64_t frame,
                                               std::optional<std::uint32_t> stream, int direction) {
  if (!snap_ || !snap_->model) return {};
  const Model& m = *snap_->model;
  for (std::size_t qi = 0; qi < nodes_.size(); ++qi) {
    const Node& q = nodes_[qi];
    if (q.kind != KindQueue || q.series < 0) continue;
    if (stream && q.stream != int(*stream)) continue;
    if (direction >= 0 && q.direction != direction) continue;
    const MsnSeries& ser = snap_->series[std::size_t(q.series)];
    if (frame < ser.first_frame || frame > ser.last_frame) continue;
    // The item's position: rows before it, missing runs counting one.
    std::size_t pos = 0;
    for (const MsnRow& row : ser.rows) {
      if (row.missing) {
        ++pos;
        continue;
      }
      for (std::uint32_t k = row.begin; k < row.end; ++k, ++pos) {
        const MessageRecord& r = m.messages[ser.by_msn[k]];
        if (r.first_frame != frame && r.placed_frame != frame && r.delivered_frame != frame)
          continue;
        const QModelIndex parent = indexOfNode(int(qi));
        while (nodes_[qi].fetched <= pos && canFetchMore(parent))
          fetchMore(parent);
        return index(int(pos), 0, parent);
      }
    }
  }
  return {};
}

QModelIndex StreamTreeModel::indexOfNode(int node) const {
  if (node < 0) return {};
  return createIndex(nodes_[static_cast<std::size_t>(node)].row, 0, quintptr(node));
}

QModelIndex StreamTreeModel::index(int row, int column, const QModelIndex& parent) const {
  if (!hasIndex(row, column, parent)) return {};
  const auto& siblings = parent.isValid() ? nodes_[parent.internalId()].children : roots_;
  return createIndex(row, column, quintptr(siblings[static_cast<std::size_t>(row)]));
}

QModelIndex StreamTreeModel::parent(const QModelIndex& child) const {
  if (!child.isValid()) return {};
  return indexOfNode(nodes_[child.internalId()].parent);
}

int StreamTreeModel::rowCount(const QModelIndex& parent) const {
  if (!parent.isValid()) return static_cast<int>(roots_.size());
  if (parent.column() != 0) return 0;
  return static_cast<int>(nodes_[parent.internalId()].children.size());
}

int StreamTreeModel::columnCount(const QModelIndex&) const {
  return ColumnCount;
}

QVariant StreamTreeModel::data(const QModelIndex& index, int role) const {
  if (!checkIndex(index, CheckIndexOption::IndexIsValid)) return {};
  const Node& n = nodes_[index.internalId()];
  switch (role) {
    case Qt::DisplayRole:
      return n.text[index.column()];
    case Qt::ToolTipRole:
      return n.tooltip.isEmpty() ? (index.column() == ColDetails ? n.text[ColDetails] : QVariant())
                                 : QVariant(n.tooltip);
    case KindRole:
      return int(n.kind);
    case StreamRole:
      return n.stream;
    case DirectionRole:
      return n.direction;
    case RegionRole:
      return n.region;
    case FrameRole:
      return quint64(n.frame);
    case MessageRole:
      return n.message;
    default:
      return {};
  }
}

QVariant StreamTreeModel::headerData(int section, Qt::Orientation o, int role) const {
  if (o != Qt::Horizontal || role != Qt::DisplayRole) return {};
  switch (section) {
    case ColItem:
      return tr("Item");
    case ColDetails:
      return tr("Details");
    case ColFrames:
      return tr("Frames");
    case ColCount:
      return tr("Count");
    default:
      return {};
  }
}

QModelIndex StreamTreeModel::indexForStream(std::uint32_t stream, int direction) const {
  for (std::size_t i = 0; i < nodes_.size(); ++i) {
    const Node& n = nodes_[i];
    if (n.stream != int(stream)) continue;
    if (direction < 0 && n.kind == KindStream) return indexOfNode(int(i));
    if (direction >= 0 && n.kind == KindDirection && n.direction == direction)
      return indexOfNode(int(i));
  }
  return {};
}

QModelIndex StreamTreeModel::indexForRegion(std::size_t region) const {
  for (std::size_t i = 0; i < nodes_.size(); ++i)
    if (nodes_[i].kind == KindRegion && nodes_[i].region == int(region)) return indexOfNode(int(i));
  return {};
}

}  // namespace ddpscope::gui
