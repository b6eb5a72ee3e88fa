// SPDX-License-Identifier: GPL-2.0-or-later
#include "ddpscope/tcp/reassembly.h"

#include <algorithm>
#include <cstring>

namespace ddpscope {

TcpReassembler::TcpReassembler(std::size_t window, std::size_t history, HistoryBudget* budget)
    : window_(window), history_cap_(history), budget_(budget) {}

TcpReassembler::~TcpReassembler() {
  if (budget_) budget_->used -= history_ring_;
}

void TcpReassembler::syn(std::uint32_t isn) {
  if (!base_) base_ = isn + 1;
}

// Sequence numbers wrap at 2^32; a segment is placed relative to the next expected octet.
std::int64_t TcpReassembler::relative(std::uint32_t seq) const {
  const std::uint32_t next_seq = *base_ + static_cast<std::uint32_t>(next_);
  const auto diff = static_cast<std::int32_t>(seq - next_seq);
  return static_cast<std::int64_t>(next_) + diff;
}

void TcpReassembler::segment(std::uint32_t seq, ByteView payload, std::uint64_t frame,
                             std::uint32_t lost_tail, ReassemblyListener& out,
                             bool payload_stays_valid) {
  if (payload.empty() && lost_tail == 0) return;
  if (!base_) base_ = seq;  // capture started mid-connection: first octet seen is offset 0
  std::int64_t rel = relative(seq);
  std::uint32_t offset_in_frame = 0;
  if (rel < static_cast<std::int64_t>(next_)) {
    // Retransmission of octets already delivered (wholly or partly).
    const std::uint64_t old = std::min<std::uint64_t>(next_ - rel, payload.size());
    compare_history(static_cast<std::uint64_t>(rel), payload.first(old), frame, out);
    retransmitted_ += old;
    payload = payload.subspan(old);
    offset_in_frame = static_cast<std::uint32_t>(old);
    rel += static_cast<std::int64_t>(old);
    if (payload.empty()) {
      if (lost_tail == 0 || rel + lost_tail <= static_cast<std::int64_t>(next_)) return;
    }
  }
  const auto off = static_cast<std::uint64_t>(rel);
  if (off == next_ && pending_.empty()) {
    deliver(off, payload, frame, offset_in_frame, payload_stays_valid, out);
  } else {
    insert_pending(off, payload.size(), payload, frame, offset_in_frame, out);
  }
  if (lost_tail > 0) {
    // A hostile header may claim up to 2^32 octets: take at most a window's worth of the loss
    // (the rest becomes a hole, declared a gap like any other). Held by length: no memory.
    const std::uint64_t lost = std::min<std::uint64_t>(lost_tail, window_ + 1);
    insert_pending(off + payload.size(), lost, {}, frame,
                   offset_in_frame + static_cast<std::uint32_t>(payload.size()), out);
  }
  if (!pending_.empty()) drain(out);  // an in-order segment with nothing held: no call
  while (pending_bytes_ > window_ && !pending_.empty()) {
    declare_gap(out);
    drain(out);
  }
}

void TcpReassembler::insert_pending(std::uint64_t offset, std::uint64_t length, ByteView data,
                                    std::uint64_t frame, std::uint32_t offset_in_frame,
                                    ReassemblyListener& out) {
  const bool lost = data.empty();
  // First copy wins: cut the new range around what is already pending.
  std::uint64_t pos = offset;
  const std::uint64_t end = offset + length;
  auto it = pending_.upper_bound(pos);
  if (it != pending_.begin()) --it;
  while (pos < end) {
    // Find the first pending entry overlapping or after pos.
    while (it != pending_.end() && it->first + it->second.length <= pos)
      ++it;
    const std::uint64_t chunk_end = (it == pending_.end()) ? end : std::min(end, it->first);
    if (pos < chunk_end) {
      Pending p;
      const std::uint64_t from = pos - offset;
      p.length = chunk_end - pos;
      if (!lost) p.data.assign(data.begin() + from, data.begin() + (chunk_end - offset));
      p.frame = frame;
      p.offset_in_frame = offset_in_frame + static_cast<std::uint32_t>(from);
      p.lost = lost;
      pending_bytes_ += p.length;
      held_bytes_ += p.data.size();
      it = pending_.emplace(pos, std::move(p)).first;
      ++it;
      pos = chunk_end;
      continue;
    }
    if (it == pending_.end()) break;
    // Overlap with an existing pending entry.
    const std::uint64_t ov_end = std::min(end, it->first + it->second.length);
    if (!lost && !it->second.lost) {
      const std::size_t a = pos - offset;
      const std::size_t b = pos - it->first;
      if (std::memcmp(data.data() + a, it->second.data.data() + b, ov_end - pos) != 0)
        out.on_conflict(pos, ov_end - pos, frame);
    }
    retransmitted_ += ov_end - pos;
    pos = ov_end;
  }
}

void TcpReassembler::drain(ReassemblyListener& out) {
  while (!pending_.empty()) {
    auto it = pending_.begin();
    if (it->first > next_) return;
    Pending p = std::move(it->second);
    const std::uint64_t off = it->first;
    pending_.erase(it);
    pending_bytes_ -= p.length;
    held_bytes_ -= p.data.size();
    if (off + p.length <= next_) continue;  // already delivered
    const std::uint64_t skip = next_ - off;
    if (p.lost) {
      out.on_gap(next_, p.length - skip, p.frame);
      next_ = off + p.length;
      continue;
    }
    // Octets of the reassembler's own storage, gone after this: the history copies them.
    deliver(next_, ByteView(p.data).subspan(skip), p.frame,
            p.offset_in_frame + static_cast<std::uint32_t>(skip), false, out);
  }
}

void TcpReassembler::declare_gap(ReassemblyListener& out) {
  auto it = pending_.begin();
  if (it == pending_.end() || it->first <= next_) return;
  out.on_gap(next_, it->first - next_, it->second.frame);
  next_ = it->first;
}

void TcpReassembler::fin(std::uint32_t seq, std::uint64_t frame) {
  if (!base_) base_ = seq;
  const std::int64_t rel = relative(seq);
  if (rel < static_cast<std::int64_t>(next_)) return;
  if (!fin_offset_ || static_cast<std::uint64_t>(rel) > *fin_offset_) {
    fin_offset_ = static_cast<std::uint64_t>(rel);
    fin_frame_ = frame;
  }
}

void TcpReassembler::acked(std::uint32_t ack, ReassemblyListener& out) {
  if (!base_ || pending_.empty()) return;
  const std::int64_t rel = relative(ack);
  while (!pending_.empty() && pending_.begin()->first > next_ &&
         static_cast<std::int64_t>(pending_.begin()->first) <= rel) {
    declare_gap(out);
    drain(out);
  }
}

void TcpReassembler::flush(ReassemblyListener& out) {
  drain(out);
  while (!pending_.empty()) {
    declare_gap(out);
    drain(out);
  }
  if (fin_offset_ && *fin_offset_ > next_) {
    out.on_gap(next_, *fin_offset_ - next_, fin_frame_);
    next_ = *fin_offset_;
  }
}

// The index (from the oldest) of the first span that ends after stream offset `at`.
std::size_t TcpReassembler::first_span_after(std::uint64_t at) const {
  std::size_t lo = 0, hi = spans_count_;
  while (lo < hi) {
    const std::size_t mid = lo + (hi - lo) / 2;
    const Span& s = span(mid);
    if (s.offset + s.length <= at)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

template <class F>
bool TcpReassembler::visit_history(std::uint64_t begin, std::uint64_t end, F&& f) const {
  // The spans are in offset order: the first that ends after `begin`, then each in turn; the
  // octets before, between and after them are in the ring.
  std::size_t i = first_span_after(begin);
  for (std::uint64_t pos = begin; pos < end;) {
    const Span* next = i < spans_count_ ? &span(i) : nullptr;
    if (next && next->offset <= pos) {
      const std::uint64_t stop = std::min(end, next->offset + next->length);
      if (!f(pos, next->data + (pos - next->offset), static_cast<std::size_t>(stop - pos), false))
        return false;
      pos = stop;
      ++i;
      continue;
    }
    const std::uint64_t stop = next ? std::min(end, next->offset) : end;
    while (pos < stop) {
      const std::size_t at = static_cast<std::size_t>(pos % history_ring_);
      const std::size_t n =
          static_cast<std::size_t>(std::min<std::uint64_t>(stop - pos, history_ring_ - at));
      if (!f(pos, history_.get() + at, n, true)) return false;
      pos += n;
    }
  }
  return true;
}

[[gnu::always_inline]] inline void TcpReassembler::copy_to_history(ByteView keep) {
  const std::size_t ring = history_ring_;
  // No octet of the history is in the ring until this one: nothing to lay out first.
  if (!history_) history_ = std::make_unique_for_overwrite<std::uint8_t[]>(ring);
  std::uint64_t pos = history_end_ - keep.size();
  for (ByteView rest = keep; !rest.empty();) {
    const std::size_t at = static_cast<std::size_t>(pos % ring);
    const std::size_t n = std::min(rest.size(), ring - at);
    std::memcpy(history_.get() + at, rest.data(), n);
    rest = rest.subspan(n);
    pos += n;
  }
  copied_end_ = history_end_;
}

void TcpReassembler::deliver(std::uint64_t offset, ByteView data, std::uint64_t frame,
                             std::uint32_t offset_in_frame, bool stays_valid,
                             ReassemblyListener& out) {
  if (data.empty()) return;
  out.on_data(offset, data, frame, offset_in_frame);
  next_ = offset + data.size();
  if (history_cap_ == 0) return;
  if (history_end_ != offset) {  // a gap: older octets are not contiguous
    history_size_ = 0;
    spans_count_ = 0;
  }
  // Keep the newest history_cap_ octets, indexed by stream offset. The history grows with what
  // was delivered (a stream that carries little costs little), up to the cap.
  const std::uint64_t wanted = std::min<std::uint64_t>(history_size_ + data.size(), history_cap_);
  if (history_ring_ < wanted) grow_history(static_cast<std::size_t>(wanted));
  const std::size_t ring = history_ring_;
  if (ring == 0) {  // the shared budget left no room
    history_end_ = next_;
    history_size_ = 0;
    return;
  }
  const ByteView keep = data.size() > ring ? data.last(ring) : data;
  history_end_ = next_;
  history_size_ = std::min<std::uint64_t>(history_size_ + data.size(), ring);
  if (stays_valid && keep.size() >= kMinSpan) {
    if (spans_count_ == spans_size_) drop_old_spans();
    spans_[(spans_first_ + spans_count_++) & (spans_size_ - 1)] =
        Span{next_ - keep.size(), keep.data(), keep.size()};
  } else {
    copy_to_history(keep);
  }
}

// Spans wholly before the history are dropped only when their records fill the ring of records,
// all at once (a test per delivery costs more); the ring doubles when more than 3/4 of it is
// left. It then holds at most 8/3 of the records of the spans the history holds (each of
// kMinSpan octets or more, 24 octets a record): about as many octets as the history holds.
void TcpReassembler::drop_old_spans() {
  const std::uint64_t begin = history_end_ - history_size_;
  // The copies that made the ring necessary (an MPA handshake's, a reordered segment's) may all
  // be behind the history now: it holds spans only, and needs no ring until it copies again.
  if (copied_end_ <= begin) history_.reset();
  const std::size_t old = first_span_after(begin);
  spans_first_ = (spans_first_ + old) & (spans_size_ - 1);
  spans_count_ -= old;
  if (4 * spans_count_ <= 3 * spans_size_ && spans_size_ != 0) return;
  const std::size_t size = std::max<std::size_t>(2 * spans_size_, 16);
  auto grown = std::make_unique_for_overwrite<Span[]>(size);
  for (std::size_t k = 0; k < spans_count_; ++k)
    grown[k] = span(k);
  spans_ = std::move(grown);
  spans_size_ = size;
  spans_first_ = 0;
}

void TcpReassembler::grow_history(std::size_t wanted) {
  std::size_t size = std::max<std::size_t>(history_ring_, 4096);
  while (size < wanted)
    size *= 2;
  size = std::min(size, history_cap_);
  const std::size_t old_size = history_ring_;
  if (budget_) {
    const std::size_t room = budget_->cap > budget_->used ? budget_->cap - budget_->used : 0;
    if (size - old_size > room) {
      history_limited_ = true;
      size = old_size + room;
      if (size == old_size) return;
    }
    budget_->used += size - old_size;
  }
  const std::uint64_t begin = history_end_ - history_size_;
  if (history_ && copied_end_ <= begin) {
    history_.reset();  // every octet the history holds is referred to: the ring can go
  } else if (history_) {
    // Not zero-filled (a memset of the whole ring, each time it doubles, for octets that are
    // written before they are read). The octets in the ring are re-laid at their offsets modulo
    // the new size: runs that wrap in neither ring. Referred spans stay where they are.
    auto grown = std::make_unique_for_overwrite<std::uint8_t[]>(size);
    visit_history(begin, copied_end_,
                  [&](std::uint64_t pos, const std::uint8_t* kept, std::size_t n, bool in_ring) {
                    while (in_ring && n > 0) {
                      const std::size_t to = static_cast<std::size_t>(pos % size);
                      const std::size_t m = std::min(n, size - to);
                      std::memcpy(grown.get() + to, kept, m);
                      kept += m;
                      pos += m;
                      n -= m;
                    }
                    return true;
                  });
    history_ = std::move(grown);
  }
  history_ring_ = size;
}

void TcpReassembler::compare_history(std::uint64_t offset, ByteView data, std::uint64_t frame,
                                     ReassemblyListener& out) {
  const std::uint64_t hist_begin = history_end_ - history_size_;
  const std::uint64_t begin = std::max(offset, hist_begin);
  const std::uint64_t end = std::min<std::uint64_t>(offset + data.size(), history_end_);
  if (begin >= end) return;
  const bool same = visit_history(
      begin, end, [&](std::uint64_t pos, const std::uint8_t* kept, std::size_t n, bool) {
        return std::memcmp(data.data() + (pos - offset), kept, n) == 0;
      });
  if (!same) out.on_conflict(begin, end - begin, frame);
}

}  // namespace ddpscope
