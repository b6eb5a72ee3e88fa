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

// Retransmission history that all reassemblers sharing it may keep together, in octets of stream
// the histories can compare. A history is charged the same whether it copied those octets or
// refers to them where they lie (TcpReassembler::segment's payload_stays_valid), so which
// retransmissions are compared, and where the budget runs out, do not depend on how the host
// keeps its frames. What it costs: a history that had to copy octets (delivered out of order,
// short, or not staying valid) has a ring of the size charged; the spans it refers to cost
// 24-octet records, at worst about as many octets as the history holds (deliveries of
// TcpReassembler::kMinSpan octets), a few per cent of it for MSS-sized ones.
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
  // `payload_stays_valid`: the caller promises that the payload's octets stay where they are,
  // unchanged, until its last call of segment() on this reassembler (a mapped capture file's
  // frames): the retransmission history then refers to the octets it keeps of them instead of
  // copying them. Octets delivered later from the reassembler's own out-of-order storage are
  // copied either way. What is compared, and every finding, is the same with or without.
  void segment(std::uint32_t seq, ByteView payload, std::uint64_t frame, std::uint32_t lost_tail,
               ReassemblyListener& out, bool payload_stays_valid = false);
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
  // Deliveries shorter than this are copied even when their octets stay valid: their copy costs
  // little, and a span's 24-octet record would cost more than 3/8 of what it refers to.
  static constexpr std::size_t kMinSpan = 64;

 private:
  // An out-of-order range: captured octets, or (lost) a known loss held by its length only.
  struct Pending {
    Bytes data;  // empty when lost
    std::uint64_t length = 0;
    std::uint64_t frame = 0;
    std::uint32_t offset_in_frame = 0;
    bool lost = false;
  };
  // A run of delivered octets the history refers to where they lie (in a frame whose octets the
  // host keeps valid) instead of copying them.
  struct Span {
    std::uint64_t offset;  // stream offset of data[0]
    const std::uint8_t* data;
    std::size_t length;
  };
  std::int64_t relative(std::uint32_t seq) const;
  // `stays_valid`: `data` is the payload of the segment being fed, which the caller keeps valid.
  void deliver(std::uint64_t offset, ByteView data, std::uint64_t frame,
               std::uint32_t offset_in_frame, bool stays_valid, ReassemblyListener& out);
  void grow_history(std::size_t wanted);
  void copy_to_history(ByteView keep);
  [[gnu::noinline]] void drop_old_spans();
  // The i-th referred span from the oldest; the index of the first that ends after `at`.
  const Span& span(std::size_t i) const { return spans_[(spans_first_ + i) & (spans_size_ - 1)]; }
  std::size_t first_span_after(std::uint64_t at) const;
  // Calls f(offset, octets, n, in_ring) for the pieces of history [begin, end) in offset
  // order (each wholly in one span or in one unwrapped run of the ring) until f returns false.
  template <class F>
  bool visit_history(std::uint64_t begin, std::uint64_t end, F&& f) const;
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
  // The retransmission history: the newest history_size_ delivered octets before history_end_
  // (at most history_ring_: it grows with what was delivered, up to the cap, as the budget
  // allows). Each is either referred to where it lies (a span) or copied into the ring, where
  // offset o sits at o % history_ring_. Either way history_ring_ grows, and is charged to the
  // budget, alike: the octets compared are those a history that copied everything would keep.
  // The ring is allocated only once an octet has to be copied (a history fed from a mapped file
  // in order may never need it), freed when no copied octet is left in the history (looked at
  // when it grows and when span records are dropped), and left uninitialised: only octets
  // written are read.
  std::unique_ptr<std::uint8_t[]> history_;
  std::size_t history_ring_ = 0;    // the ring's size: what the history may keep
  std::uint64_t history_end_ = 0;   // stream offset one past history's newest octet
  std::uint64_t history_size_ = 0;  // octets the history holds
  std::uint64_t copied_end_ = 0;    // stream offset one past the newest octet copied to the ring
  // Referred spans in offset order, none overlapping another, in a ring of spans_size_ records
  // (a power of two, or none): spans_count_ of them from spans_first_. Those that end before the
  // history begins are dropped in bulk (drop_old_spans).
  std::unique_ptr<Span[]> spans_;
  std::size_t spans_size_ = 0;
  std::size_t spans_first_ = 0;
  std::size_t spans_count_ = 0;
};

}  // namespace ddpscope
