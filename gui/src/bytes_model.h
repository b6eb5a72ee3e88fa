// SPDX-License-Identifier: GPL-2.0-or-later
// Hex view of one region's placed content (ShadowBuffer::read), 16 octets a row, each row
// attributed to the frames whose placement is the one visible (the last writer wins).
#pragma once

#include <QAbstractTableModel>
#include <map>
#include <vector>

#include "snapshot.h"

namespace ddpscope::gui {

class BytesModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Column { ColOffset, ColHex, ColAscii, ColFrames, ColumnCount };
  enum Role { FrameRole = Qt::UserRole + 1, OffsetRole, HoleRole };
  static constexpr std::uint32_t kRowOctets = 16;
  static constexpr std::size_t kMaxRows = 1u << 18;  // 4 MiB shown; export has it all

  explicit BytesModel(QObject* parent = nullptr);
  void setRegion(SnapshotPtr snap, int region);
  int region() const { return region_; }
  const ShadowBuffer* buffer() const;
  bool truncated() const { return truncated_; }
  // Row showing the first octet placed by `frame`, or -1.
  int rowForFrame(std::uint64_t frame) const;

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
  };
  static std::map<std::uint64_t, Writer> lastWriters(std::span<const PlacedRange> ranges);

 private:
  struct Row {
    std::uint64_t to = 0;
    std::uint64_t len = 0;  // octets (hole rows: the hole's size)
    bool hole = false;
  };
  std::vector<std::uint64_t> framesIn(std::uint64_t begin, std::uint64_t end) const;

  SnapshotPtr snap_;
  int region_ = -1;
  std::vector<Row> rows_;
  std::map<std::uint64_t, Writer> writers_;
  bool truncated_ = false;
};

}  // namespace ddpscope::gui
