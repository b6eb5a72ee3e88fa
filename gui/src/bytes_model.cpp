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
    m.emplace(a, Writer{b, r.frame, r.opcode});
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
  if (const ShadowBuffer* b = buffer()) {
    writers_ = lastWriters(b->ranges());
    std::uint64_t prev_end = 0;
    bool first = true;
    for (const auto& [begin, end] : b->extents()) {
      if (rows_.size() >= kMaxRows) {
        truncated_ = true;
        break;
      }
      if (!first && begin > prev_end) rows_.push_back({prev_end, begin - prev_end, true});
      first = false;
      for (std::uint64_t to = begin; to < end && rows_.size() < kMaxRows;) {
        // Align rows to 16-octet boundaries after the first.
        const std::uint64_t next = std::min<std::uint64_t>(end, (to / kRowOctets + 1) * kRowOctets);
        rows_.push_back({to, next - to, false});
        to = next;
        if (rows_.size() >= kMaxRows && to < end) truncated_ = true;
      }
      prev_end = end;
    }
  }
  endResetModel();
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

int BytesModel::rowForFrame(std::uint64_t frame) const {
  for (const auto& [begin, w] : writers_) {
    if (w.frame != frame) continue;
    auto it = std::upper_bound(rows_.begin(), rows_.end(), begin,
                               [](std::uint64_t v, const Row& r) { return v < r.to; });
    if (it == rows_.begin()) return -1;
    return static_cast<int>(std::prev(it) - rows_.begin());
  }
  return -1;
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
  const ShadowBuffer* b = buffer();
  if (role == Qt::DisplayRole) {
    if (row.hole) {
      if (index.column() == ColOffset)
        return QStringLiteral("0x%1").arg(row.to, 12, 16, QLatin1Char('0'));
      if (index.column() == ColHex) return tr("— hole: %1 never placed —").arg(bytesText(row.len));
      return QString();
    }
    switch (index.column()) {
      case ColOffset:
        return QStringLiteral("0x%1").arg(row.to, 12, 16, QLatin1Char('0'));
      case ColHex:
      case ColAscii: {
        std::vector<bool> known;
        const Bytes bytes = b->read(row.to, std::size_t(row.len), &known);
        // Rows not starting on a boundary are indented so columns line up.
        const int indent = int(row.to % kRowOctets);
        QString s;
        if (index.column() == ColHex) {
          s.fill(QLatin1Char(' '), indent * 3);
          for (std::size_t i = 0; i < bytes.size(); ++i) {
            if (i < known.size() && known[i])
              s += QStringLiteral("%1 ").arg(bytes[i], 2, 16, QLatin1Char('0'));
            else
              s += QStringLiteral("·· ");
          }
          return s.trimmed();
        }
        s.fill(QLatin1Char(' '), indent);
        for (std::size_t i = 0; i < bytes.size(); ++i) {
          const bool k = i < known.size() && known[i];
          const char c = static_cast<char>(bytes[i]);
          s += !k ? QChar(0xb7) : (c >= 0x20 && c < 0x7f ? QLatin1Char(c) : QLatin1Char('.'));
        }
        return s;
      }
      case ColFrames: {
        QStringList l;
        for (auto f : framesIn(row.to, row.to + row.len))
          l << QString::number(f);
        return l.join(QStringLiteral(", "));
      }
    }
    return {};
  }
  if (role == Qt::FontRole &&
      (index.column() == ColHex || index.column() == ColAscii || index.column() == ColOffset))
    return QFontDatabase::systemFont(QFontDatabase::FixedFont);
  if (role == Qt::BackgroundRole && !row.hole && index.column() != ColOffset) {
    auto it = writers_.upper_bound(row.to);
    if (it == writers_.begin()) return {};
    --it;
    if (it->second.end <= row.to) return {};
    QColor c = opcodeColor(it->second.opcode);
    c.setAlpha(it->second.frame % 2 ? 40 : 80);  // neighbouring frames alternate
    return c;
  }
  if (role == Qt::ForegroundRole && row.hole) return QColor(0x90, 0x90, 0x90);
  if (role == FrameRole) {
    if (row.hole) return quint64(0);
    auto f = framesIn(row.to, row.to + row.len);
    return f.empty() ? quint64(0) : quint64(f.front());
  }
  if (role == OffsetRole) return quint64(row.to);
  if (role == HoleRole) return row.hole;
  if (role == Qt::ToolTipRole && !row.hole) {
    QStringList l;
    auto it = writers_.upper_bound(row.to);
    if (it != writers_.begin()) --it;
    for (; it != writers_.end() && it->first < row.to + row.len; ++it) {
      if (it->second.end <= row.to) continue;
      l << tr("[0x%1, 0x%2) placed by frame %3 (%4)")
               .arg(it->first, 0, 16)
               .arg(it->second.end, 0, 16)
               .arg(it->second.frame)
               .arg(opcodeName(it->second.opcode));
    }
    return l.join(QLatin1Char('\n'));
  }
  return {};
}

QVariant BytesModel::headerData(int section, Qt::Orientation o, int role) const {
  if (o != Qt::Horizontal || role != Qt::DisplayRole) return {};
  switch (section) {
    case ColOffset:
      return tr("TO");
    case ColHex:
      return tr("Octets");
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
