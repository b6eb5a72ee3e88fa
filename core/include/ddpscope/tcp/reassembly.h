// SPDX-License-Identifier: GPL-2.0-or-later
// TCP reassembly for one direction: turns segments in capture order into the byte stream in
// sequence order. Out-of-order segments wait (up to a window); exact retransmissions are
// dropped; overlapping copies keep the first; conflicting ones are reported; holes that never
// fill are declared capture loss (a gap) so framing can resynchronise after them.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <vector>

#include "ddpscope/common/bytes.h"

namespace ddpscope {

class ReassemblyListener {
 public:
  virtual ~ReassemblyListener() = default;
  // In-order octets at `offset` (relative to the first octet of the stream), from `frame`,
  // where they sat at `offset_in_frame` in that frame's TCP payload.
  virtual void on_data(std::uint64_t offset, ByteView data, std::uint64_t frame,
                       std::uint32_t offset_in_frame) = 0;
  // Octets [offset, offset+length) are not in the capture; `next_frame` holds what follows.
  virtual void on_gap(std::uint64_t offset, std::uint64_t length, std::uint64_t next_frame) = 0;
  // A retransmission at `offset` carried different octets than the copy already used.
  virtual void on_conflict(std::uint64_t offset, std::uint64_t length, std::uint64_t frame) = 0;
};

// Retransmission history octets that all reassemblers sharing it may hold together.
struct HistoryBudget {
  std::size_t cap = 0;
  std::size_t used = 0;
};

class TcpReassembler {
 public:
  // `history` caps this direction's retransmission history; `budget`, when given, caps all
  // histories sharing it (a history that cannot grow compares fewer retransmitted octets).
  TcpReassembler(std::size_t window, std::size_t history, HistoryBudget* budget = nullptr);
  ~TcpReassembler();
  TcpReassembler(const TcpReassembler&) = delete;
  TcpReassembler& operator=(const TcpReassembler&) = delete;

  // The SYN's sequence number: data starts at isn + 1.
  void syn(std::uint32_t isn);
  bool started() const { return base_.has_value(); }
  // A segment's captured payload. `lost_tail` octets after it were sent but not captured
  // (snaplen, or a hostile length); they become a gap. A lost tail is held by its length only;
  // at most a window's worth of it (window + 1 octets) is taken, the rest of the claim is a
  // hole like any other.
  void segment(std::uint32_t seq, ByteView payload, std::uint64_t frame, std::uint32_t lost_tail,
               ReassemblyListener& out);
  // The sender's FIN: its sequence number ends the stream. Octets before it that never showed
  // up are capture loss, declared at flush().
  void fin(std::uint32_t seq, std::uint64_t frame);
  // The receiver's cumulative ACK (from the other direction's segments): it has every octet
  // before `ack`, so a hole followed by held data that starts at or before `ack` will not be
  // retransmitted. It is capture loss: declared a gap now (not at flush), and what follows it
  // is delivered. Holes after `ack` keep waiting (they may be reordering).
  void acked(std::uint32_t ack, ReassemblyListener& out);
  // End of input: declare remaining holes (up to the FIN, when seen), deliver the rest.
  void flush(ReassemblyListener& out);

  std::uint64_t next_offset() const { return next_; }
  // The stream offset sequence number `seq` stands for (negative: before offset 0), relative
  // to the next octet expected (sequence numbers wrap). Only once started().
  std::int64_t stream_offset_of(std::uint32_t seq) const { return relative(seq); }
  // Octets waiting out of order, lost ranges included: what the window bounds.
  std::uint64_t pending_bytes() const { return pending_bytes_; }
  // Octets of payload actually buffered (lost ranges cost no memory): at most the window.
  std::uint64_t held_bytes() const { return held_bytes_; }
  std::uint64_t retransmitted_bytes() const { return retransmitted_; }
  // The shared budget kept this direction's history below `history` (reported once).
  bool history_limited() const { return history_limited_; }

 private:
  // An out-of-order range: captured octets, or (lost) a known loss held by its length only.
  struct Pending {
    Bytes data;  // empty when lost
    std::uint64_t length = 0;
    std::uint64_t frame = 0;
    std::uint32_t offset_in_frame = 0;
    bool lost = false;
  };
  std::int64_t relative(std::uint32_t seq) const;
  void deliver(std::uint64_t offset, ByteView data, std::uint64_t frame,
               std::uint32_t offset_in_frame, ReassemblyListener& out);
  void grow_history(std::size_t wanted);
  void compare_history(std::uint64_t offset, ByteView data, std::uint64_t frame,
                       ReassemblyListener& out);
  // Inserts [offset, offset + length): `data` holds its octets, or is empty for a lost range.
  void insert_pending(std::uint64_t offset, std::uint64_t length, ByteView data,
                      std::uint64_t frame, std::uint32_t offset_in_frame, ReassemblyListener& out);
  void drain(ReassemblyListener& out);
  void declare_gap(ReassemblyListener& out);

  std::size_t window_;
  std::size_t history_cap_;
  HistoryBudget* budget_;
  bool history_limited_ = false;
  std::optional<std::uint32_t> base_;  // sequence number of stream offset 0
  std::uint64_t next_ = 0;             // next in-order offset
  std::map<std::uint64_t, Pending> pending_;
  std::optional<std::uint64_t> fin_offset_;
  std::uint64_t fin_frame_ = 0;
  std::uint64_t pending_bytes_ = 0;
  std::uint64_t held_bytes_ = 0;
  std::uint64_t retransmitted_ = 0;
  // Ring of the last delivered octets (grows up to the cap). Left uninitialised when allocated:
  // only the history_size_ octets before history_end_ are ever read, and each was written first.
  std::unique_ptr<std::uint8_t[]> history_;
  std::size_t history_ring_ = 0;    // the ring's size
  std::uint64_t history_end_ = 0;   // stream offset one past history's newest octet
  std::uint64_t history_size_ = 0;  // valid octets in the ring (offset o sits at o % size)
};

}  // namespace ddpscope
