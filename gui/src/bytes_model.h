// SPDX-License-Identifier: GPL-2.0-or-later
// Hex view of one region's placed content (ShadowBuffer::read) laid out like Wireshark's bytes
// pane: offset from the region's origin (base when known) | 16 octet columns | ASCII | frames.
// Rows are aligned to 16 octets from the origin; each octet is coloured by the segment whose
// placement is visible (the last writer wins), octets never placed read "..", octets placed
// over earlier ones are underlined, and a run of whole rows never placed is one hole row.
#pragma once

#include <QAbstractTableModel>
#include <map>
#include <optional>
#include <vector>

#include "snapshot.h"

namespace ddpscope::gui {

class BytesModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Column { ColOffset, ColOctet0, ColAscii = ColOctet0 + 16, ColFrames, ColumnCount };
  enum Role { FrameRole = Qt::UserRole + 1, OffsetRole, HoleRole, PlacedRole };
  static constexpr std::uint32_t kRowOctets = 16;
  static constexpr std::size_t kMaxRows = 1u << 18;  // 4 MiB shown; export has it all

  explicit BytesModel(QObject* parent = nullptr);
  void setRegion(SnapshotPtr snap, int region);
  int region() const { return region_; }
  const ShadowBuffer* buffer() const;
  bool truncated() const { return truncated_; }
  // Row showing the first octet placed by `frame`, or -1.
  int rowForFrame(std::uint64_t frame) const;
  // Row (and octet column) showing TO `to`, or -1 when it is outside every row.
  int rowForTo(std::uint64_t to) const;
  // TO of the octet at (row, column); nullopt for the offset/ASCII/frames columns, hole rows.
  std::optional<std::uint64_t> octetAt(int row, int column) const;
  // TO every offset is counted from: the base when known (and not above the first octet).
  std::uint64_t origin() const { return origin_; }
  // Frames whose placement is visible in [begin, end), in TO order, each once.
  std::vector<std::uint64_t> framesIn(std::uint64_t begin, std::uint64_t end) const;

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation o, int role = Qt::DisplayRole) const override;

  // Writes the placed content [min TO, max end) as raw octets (never-placed or not retained
  // octets as 0), or as a hex dump with frame attribution when `path` ends in ".txt".
  static bool exportRegion(const ShadowBuffer& buf, const QString& path, QString* error);

  // Last writer of each octet: non-overlapping [begin, end) -> frame, opcode.
  struct Writer {
    std::uint64_t end = 0;
    std::uint64_t frame = 0;
    std::uint8_t opcode = 0;
    // This placement wrote other content over octets of a message in flight (a conflict; a
    // buffer reused after delivery is normal and not marked).
    bool overlap = false;
  };
  static std::map<std::uint64_t, Writer> lastWriters(std::span<const PlacedRange> ranges);

 private:
  struct Row {
    std::uint64_t to = 0;   // first TO of the row (aligned to 16 from the origin)
    std::uint64_t len = 0;  // kRowOctets (hole rows: the hole's size)
    bool hole = false;
  };
  const Writer* writerAt(std::uint64_t to, std::uint64_t* begin = nullptr) const;
  QString offsetText(std::uint64_t to) const;

  SnapshotPtr snap_;
  int region_ = -1;
  std::vector<Row> rows_;
  std::map<std::uint64_t, Writer> writers_;
  bool truncated_ = false;
  std::uint64_t origin_ = 0;
};

}  // namespace ddpscope::gui
