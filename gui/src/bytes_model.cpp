// SPDX-License-Identifier: GPL-2.0-or-later
#include "bytes_model.h"

#include <QColor>
#include <QFile>
#include <QFontDatabase>
#include <QStringList>
#include <algorithm>

#include "labels.h"

namespace ddpscope::gui {

BytesModel::BytesModel(QObject* parent) : QAbstractTableModel(parent) {}

std::map<std::uint64_t, BytesModel::Writer> BytesModel::lastWriters(
    std::span<const PlacedRange> ranges) {
  std::map<std::uint64_t, Writer> m;
  for (const PlacedRange& r : ranges) {
    if (r.end <= r.begin) continue;
    const std::uint64_t a = r.begin, b = r.end;
    auto it = m.lower_bound(a);
    if (it != m.begin()) {
      auto p = std::prev(it);
      if (p->second.end > a) {  // split the writer that straddles a
        const Writer tail = p->second;
        p->second.end = a;
        if (tail.end > b) m.emplace(b, tail);
        it = m.lower_bound(a);
      }
    }
    while (it != m.end() && it->first < b) {
      if (it->second.end > b) {  // keep the part after b
        const Writer rest = it->second;
        m.erase(it);
        m.emplace(b, rest);
        break;
      }
      it = m.erase(it);
    }
    m.emplace(a, Writer{b, r.frame, r.opcode, r.conflict});
  }
  return m;
}

const ShadowBuffer* BytesModel::buffer() const {
  if (!snap_ || region_ < 0 || std::size_t(region_) >= snap_->regions.size()) return nullptr;
  return snap_->regions[std::size_t(region_)].buffer;
}

void BytesModel::setRegion(SnapshotPtr snap, int region) {
  beginResetModel();
  snap_ = std::move(snap);
  region_ = region;
  rows_.clear();
  writers_.clear();
  truncated_ = false;
  origin_ = 0;
  if (const ShadowBuffer* b = buffer()) {
    writers_ = lastWriters(b->ranges());
    const auto& ext = b->extents();
    if (!ext.empty()) origin_ = ext.begin()->first;
    if (b->base && (ext.empty() || *b->base <= origin_)) origin_ = *b->base;
    const auto align = [this](std::uint64_t to) {
      return origin_ + (to - origin_) / kRowOctets * kRowOctets;
    };
    std::uint64_t next_row = 0;  // first TO after the last row
    bool first = true;
    for (const auto& [begin, end] : ext) {
      if (rows_.size() >= kMaxRows) {
        truncated_ = true;
        break;
      }
      std::uint64_t to = align(begin);
      if (!first && to < next_row) to = next_row;  // shares the last row
      if (!first && to > next_row) rows_.push_back({next_row, to - next_row, true});
      first = false;
      for (; to < end; to += kRowOctets) {
        if (rows_.size() >= kMaxRows) {
          truncated_ = true;
          break;
        }
        rows_.push_back({to, kRowOctets, false});
      }
      next_row = std::max(next_row, to);
    }
  }
  endResetModel();
}

const BytesModel::Writer* BytesModel::writerAt(std::uint64_t to, std::uint64_t* begin) const {
  auto it = writers_.upper_bound(to);
  if (it == writers_.begin()) return nullptr;
  --it;
  if (it->second.end <= to) return nullptr;
  if (begin) *begin = it->first;
  return &it->second;
}

std::vector<std::uint64_t> BytesModel::framesIn(std::uint64_t begin, std::uint64_t end) const {
  std::vector<std::uint64_t> out;
  auto it = writers_.upper_bound(begin);
  if (it != writers_.begin()) --it;
  for (; it != writers_.end() && it->first < end; ++it) {
    if (it->second.end <= begin) continue;
    if (std::find(out.begin(), out.end(), it->second.frame) == out.end())
      out.push_back(it->second.frame);
  }
  return out;
}

int BytesModel::rowForTo(std::uint64_t to) const {
  auto it = std::upper_bound(rows_.begin(), rows_.end(), to,
                             [](std::uint64_t v, const Row& r) { return v < r.to; });
  if (it == rows_.begin()) return -1;
  --it;
  if (to >= it->to + it->len) return -1;
  return static_cast<int>(it - rows_.begin());
}

int BytesModel::rowForFrame(std::uint64_t frame) const {
  for (const auto& [begin, w] : writers_)
    if (w.frame == frame) return rowForTo(begin);
  return -1;
}

std::optional<std::uint64_t> BytesModel::octetAt(int row, int column) const {
  if (row < 0 || std::size_t(row) >= rows_.size()) return std::nullopt;
  if (column < ColOctet0 || column >= ColOctet0 + int(kRowOctets)) return std::nullopt;
  const Row& r = rows_[std::size_t(row)];
  if (r.hole) return std::nullopt;
  return r.to + std::uint64_t(column - ColOctet0);
}

QString BytesModel::offsetText(std::uint64_t to) const {
  return QStringLiteral("%1").arg(to - origin_, 8, 16, QLatin1Char('0'));
}

int BytesModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(rows_.size());
}

int BytesModel::columnCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : ColumnCount;
}

QVariant BytesModel::data(const QModelIndex& index, int role) const {
  if (!checkIndex(index, CheckIndexOption::IndexIsValid)) return {};
  const Row& row = rows_[std::size_t(index.row())];
  const int col = index.column();
  const bool octet_col = col >= ColOctet0 && col < ColOctet0 + int(kRowOctets);
  if (role == OffsetRole) return quint64(row.to);
  if (role == HoleRole) return row.hole;
  if (role == Qt::FontRole) return QFontDatabase::systemFont(QFontDatabase::FixedFont);
  if (row.hole) {
    if (role == Qt::DisplayRole) {
      if (col == ColOffset) return offsetText(row.to);
      if (octet_col) return QStringLiteral("..");
      if (col == ColFrames) return tr("hole: %1 never placed").arg(bytesText(row.len));
      return QString();
    }
    if (role == Qt::ForegroundRole) return QColor(0x90, 0x90, 0x90);
    if (role == Qt::ToolTipRole)
      return tr("TO [0x%1, 0x%2): never placed").arg(row.to, 0, 16).arg(row.to + row.len, 0, 16);
    if (role == FrameRole) return quint64(0);
    return {};
  }
  const ShadowBuffer* b = buffer();
  if (role == Qt::DisplayRole || role == PlacedRole) {
    if (col == ColOffset) return role == PlacedRole ? QVariant() : QVariant(offsetText(row.to));
    if (col == ColFrames) {
      if (role == PlacedRole) return {};
      QStringList l;
      for (auto f : framesIn(row.to, row.to + row.len))
        l << QString::number(f);
      return l.join(QStringLiteral(", "));
    }
    std::vector<bool> known;
    if (octet_col) {
      const std::uint64_t to = row.to + std::uint64_t(col - ColOctet0);
      const auto& ext = b->extents();
      auto e = ext.upper_bound(to);
      const bool placed = e != ext.begin() && std::prev(e)->second > to;
      if (role == PlacedRole) return placed;
      if (!placed) return QStringLiteral("..");
      const Bytes bytes = b->read(to, 1, &known);
      // Placed but its content not retained (memory cap): "??".
      return !known.empty() && known[0]
                 ? QStringLiteral("%1").arg(bytes[0], 2, 16, QLatin1Char('0'))
                 : QStringLiteral("??");
    }
    if (col == ColAscii) {
      if (role == PlacedRole) return {};
      const Bytes bytes = b->read(row.to, std::size_t(row.len), &known);
      QString s;
      for (std::size_t i = 0; i < bytes.size(); ++i) {
        const bool k = i < known.size() && known[i];
        const char c = static_cast<char>(bytes[i]);
        s += !k ? QLatin1Char(' ') : (c >= 0x20 && c < 0x7f ? QLatin1Char(c) : QLatin1Char('.'));
      }
      return s;
    }
    return {};
  }
  if (role == Qt::BackgroundRole && octet_col) {
    const Writer* w = writerAt(row.to + std::uint64_t(col - ColOctet0));
    if (!w) return {};
    QColor c = opcodeColor(w->opcode);
    c.setAlpha(w->frame % 2 ? 50 : 100);  // neighbouring frames alternate
    return c;
  }
  if (role == Qt::ForegroundRole && octet_col) {
    const Writer* w = writerAt(row.to + std::uint64_t(col - ColOctet0));
    if (w && w->overlap) return QColor(0xc0, 0x20, 0x20);  // a conflicting placement
    return {};
  }
  if (role == FrameRole) {
    if (octet_col)
      if (const Writer* w = writerAt(row.to + std::uint64_t(col - ColOctet0)))
        return quint64(w->frame);
    auto f = framesIn(row.to, row.to + row.len);
    return f.empty() ? quint64(0) : quint64(f.front());
  }
  if (role == Qt::ToolTipRole) {
    if (octet_col) {
      const std::uint64_t to = row.to + std::uint64_t(col - ColOctet0);
      std::uint64_t wb = 0;
      const Writer* w = writerAt(to, &wb);
      QString t = tr("TO 0x%1 (offset 0x%2)").arg(to, 0, 16).arg(to - origin_, 0, 16);
      if (w)
        t += tr("\nplaced by frame %1 (%2) in [0x%3, 0x%4)%5")
                 .arg(w->frame)
                 .arg(opcodeName(w->opcode))
                 .arg(wb, 0, 16)
                 .arg(w->end, 0, 16)
                 .arg(w->overlap ? tr(", conflicting with a message in flight") : QString());
      else
        t += tr("\nnever placed");
      return t;
    }
    if (col == ColOffset)
      return tr("TO 0x%1 (offset 0x%2 from 0x%3)")
          .arg(row.to, 0, 16)
          .arg(row.to - origin_, 0, 16)
          .arg(origin_, 0, 16);
    return {};
  }
  return {};
}

QVariant BytesModel::headerData(int section, Qt::Orientation o, int role) const {
  if (o != Qt::Horizontal) return {};
  if (role == Qt::FontRole) return QFontDatabase::systemFont(QFontDatabase::FixedFont);
  if (role == Qt::ToolTipRole && section == ColOffset)
    return tr("Offset from 0x%1 (the region's base when known)").arg(origin_, 0, 16);
  if (role != Qt::DisplayRole) return {};
  if (section >= ColOctet0 && section < ColOctet0 + int(kRowOctets))
    return QStringLiteral("%1").arg(section - ColOctet0, 2, 16, QLatin1Char('0'));
  switch (section) {
    case ColOffset:
      return tr("Offset");
    case ColAscii:
      return tr("ASCII");
    case ColFrames:
      return tr("Frames");
    default:
      return {};
  }
}

bool BytesModel::exportRegion(const ShadowBuffer& buf, const QString& path, QString* error) {
  QFile f(path);
  if (!f.open(QIODevice::WriteOnly | QIODevice::Truncate)) {
    if (error) *error = f.errorString();
    return false;
  }
  if (buf.max_end() <= buf.min_to()) return true;  // nothing placed
  const bool text = path.endsWith(QLatin1String(".txt"), Qt::CaseInsensitive);
  if (text) {
    const auto writers = lastWriters(buf.ranges());
    for (const auto& [begin, end] : buf.extents()) {
      for (std::uint64_t to = begin; to < end; to += kRowOctets) {
        const std::uint64_t n = std::min<std::uint64_t>(kRowOctets, end - to);
        std::vector<bool> known;
        const Bytes bytes = buf.read(to, std::size_t(n), &known);
        QString line = QStringLiteral("%1 ").arg(to, 16, 16, QLatin1Char('0'));
        for (std::size_t i = 0; i < bytes.size(); ++i)
          line += known[i] ? QStringLiteral(" %1").arg(bytes[i], 2, 16, QLatin1Char('0'))
                           : QStringLiteral(" ..");
        auto it = writers.upper_bound(to);
        if (it != writers.begin()) --it;
        if (it != writers.end() && it->first <= to && it->second.end > to)
          line += QStringLiteral("  frame %1").arg(it->second.frame);
        line += QLatin1Char('\n');
        f.write(line.toUtf8());
      }
    }
  } else {
    const std::uint64_t total = buf.max_end() - buf.min_to();
    if (total > (std::uint64_t{1} << 30)) {
      if (error) *error = tr("region extent %1 is too large to export raw").arg(bytesText(total));
      return false;
    }
    for (std::uint64_t to = buf.min_to(); to < buf.max_end();) {
      const std::uint64_t n = std::min<std::uint64_t>(1u << 20, buf.max_end() - to);
      const Bytes bytes = buf.read(to, std::size_t(n));
      f.write(reinterpret_cast<const char*>(bytes.data()), qint64(bytes.size()));
      to += n;
    }
  }
  if (!f.flush()) {
    if (error) *error = f.errorString();
    return false;
  }
  return true;
}

}  // namespace ddpscope::gui
