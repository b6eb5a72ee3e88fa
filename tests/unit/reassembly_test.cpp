// SPDX-License-Identifier: GPL-2.0-or-later
// TcpReassembler: lost tails (octets a segment claims but the capture lacks) are held by their
// length only, become gaps at their place in sequence order, and let delivery resume after. The
// retransmission history compares the same octets whether it copies what was delivered or
// refers to it where it lies (segment's payload_stays_valid): its tests run both ways.
#include "ddpscope/tcp/reassembly.h"

#include <gtest/gtest.h>

#include <deque>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

namespace ddpscope {
namespace {

struct Recorder : ReassemblyListener {
  struct Event {
    char kind;  // 'd' data, 'g' gap, 'c' conflict
    std::uint64_t offset;
    std::uint64_t length;
    std::uint64_t frame;
  };
  std::vector<Event> events;
  std::string data;
  void on_data(std::uint64_t offset, ByteView d, std::uint64_t frame, std::uint32_t) override {
    events.push_back({'d', offset, d.size(), frame});
    data.append(d.begin(), d.end());
  }
  void on_gap(std::uint64_t offset, std::uint64_t length, std::uint64_t frame) override {
    events.push_back({'g', offset, length, frame});
  }
  void on_conflict(std::uint64_t offset, std::uint64_t length, std::uint64_t frame) override {
    events.push_back({'c', offset, length, frame});
  }
};

Bytes octets(std::size_t n, std::uint8_t v) {
  return Bytes(n, v);
}

constexpr std::size_t kWindow = 4u << 20;

TEST(Reassembly, LostTailClaiming2To32OctetsHoldsNoBuffer) {
  TcpReassembler r(kWindow, 1024);
  Recorder rec;
  r.syn(999);
  // A later segment arrives first, then one whose header claims 2^32-1 octets (10 captured).
  const Bytes later = octets(100, 0xBB);
  r.segment(1000 + 50, later, 1, 0, rec);
  EXPECT_EQ(r.held_bytes(), 100u);
  const Bytes head = octets(10, 0xAA);
  r.segment(1000, head, 2, UINT32_MAX - 10, rec);
  // The claim overlaps the pending segment (which wins where they meet); nothing of the claim
  // is buffered: held octets are still the pending segment's only.
  EXPECT_LE(r.held_bytes(), 100u);
  ASSERT_FALSE(rec.events.empty());
  EXPECT_EQ(rec.events[0].kind, 'd');
  EXPECT_EQ(rec.events[0].length, 10u);
  ASSERT_GE(rec.events.size(), 2u);
  EXPECT_EQ(rec.events[1].kind, 'g');
  EXPECT_EQ(rec.events[1].offset, 10u);
  EXPECT_EQ(rec.events[1].frame, 2u);
  r.flush(rec);
  EXPECT_EQ(r.held_bytes(), 0u);
  EXPECT_EQ(r.pending_bytes(), 0u);
}

TEST(Reassembly, OutOfOrderLostTailWaitsByLengthThenResyncsAfterIt) {
  TcpReassembler r(kWindow, 1024);
  Recorder rec;
  r.syn(999);
  // Frame 1: octets [100, 110) captured, [110, 1110) lost (snaplen), arriving before [0, 100).
  r.segment(1000 + 100, octets(10, 0x11), 1, 1000, rec);
  EXPECT_EQ(r.held_bytes(), 10u);
  EXPECT_EQ(r.pending_bytes(), 1010u);  // the lost range counts against the window...
  EXPECT_TRUE(rec.events.empty());
  // Frame 2: what follows the loss.
  r.segment(1000 + 1110, octets(5, 0x22), 2, 0, rec);
  EXPECT_EQ(r.held_bytes(), 15u);  // ...but holds no octets
  // Frame 3 fills the front: everything drains, the loss as one gap from frame 1.
  r.segment(1000, octets(100, 0x33), 3, 0, rec);
  ASSERT_EQ(rec.events.size(), 4u);
  EXPECT_EQ(rec.events[0].kind, 'd');
  EXPECT_EQ(rec.events[1].kind, 'd');
  EXPECT_EQ(rec.events[1].offset, 100u);
  EXPECT_EQ(rec.events[2].kind, 'g');
  EXPECT_EQ(rec.events[2].offset, 110u);
  EXPECT_EQ(rec.events[2].length, 1000u);
  EXPECT_EQ(rec.events[2].frame, 1u);
  EXPECT_EQ(rec.events[3].kind, 'd');
  EXPECT_EQ(rec.events[3].offset, 1110u);
  EXPECT_EQ(rec.events[3].frame, 2u);
  EXPECT_EQ(r.next_offset(), 1115u);
  EXPECT_EQ(r.held_bytes(), 0u);
  EXPECT_EQ(r.pending_bytes(), 0u);
}

TEST(Reassembly, ManyTruncatedSegmentsHoldOnlyTheirCapturedOctets) {
  TcpReassembler r(kWindow, 0);
  Recorder rec;
  r.syn(0);
  // Each out of order, 16 captured octets, claiming 60000 in all: held is 16 per segment.
  std::uint32_t seq = 1 + 1;  // leave octet 0 missing so nothing drains
  for (int i = 0; i < 50; ++i) {
    r.segment(seq, octets(16, 0x44), 10 + i, 60000 - 16, rec);
    seq += 60000;
  }
  EXPECT_EQ(r.held_bytes(), 50u * 16);
  EXPECT_TRUE(rec.events.empty());
  r.flush(rec);
  EXPECT_EQ(r.held_bytes(), 0u);
  std::uint64_t gap = 0, data = 0;
  for (const auto& e : rec.events)
    (e.kind == 'g' ? gap : data) += e.length;
  EXPECT_EQ(data, 50u * 16);
  EXPECT_EQ(gap + data, 1u + 50u * 60000);
}

// The history tests, with the history copying what it keeps (false) and referring to it where
// it lies (true): every segment's octets below stay valid for the reassembler's life.
class ReassemblyHistory : public ::testing::TestWithParam<bool> {};
INSTANTIATE_TEST_SUITE_P(CopiedAndReferred, ReassemblyHistory, ::testing::Bool(),
                         [](const auto& info) { return info.param ? "referred" : "copied"; });

TEST_P(ReassemblyHistory, RetransmissionsAreComparedWhileTheHistoryGrows) {
  const bool refer = GetParam();
  // The history ring starts small and grows with what was delivered; retransmissions of any
  // octet still within the cap are compared, across growth.
  constexpr std::size_t kHistory = 64u << 10;
  TcpReassembler r(kWindow, kHistory);
  Recorder rec;
  r.syn(0);
  Bytes stream(100000);
  for (std::size_t i = 0; i < stream.size(); ++i)
    stream[i] = static_cast<std::uint8_t>(i * 7 + i / 251);
  for (std::size_t off = 0; off < stream.size(); off += 1000) {
    r.segment(static_cast<std::uint32_t>(1 + off), ByteView(stream).subspan(off, 1000), off, 0, rec,
              refer);
    // Exact retransmission of the segment 3 back, then a conflicting one of the previous.
    if (off >= 3000)
      r.segment(static_cast<std::uint32_t>(1 + off - 3000),
                ByteView(stream).subspan(off - 3000, 1000), 1, 0, rec, refer);
  }
  for (const auto& e : rec.events)
    ASSERT_EQ(e.kind, 'd');
  const std::uint64_t old = stream.size() - kHistory + 100;  // oldest octets still kept
  Bytes changed(ByteView(stream).subspan(old, 50).begin(), ByteView(stream).subspan(old, 50).end());
  changed[10] ^= 1;
  r.segment(static_cast<std::uint32_t>(1 + old), changed, 7, 0, rec, refer);
  ASSERT_EQ(rec.events.back().kind, 'c');
  EXPECT_EQ(rec.events.back().offset, old);
  EXPECT_EQ(rec.events.back().frame, 7u);
  // Older than the history: not comparable, so no conflict.
  const std::size_t before = rec.events.size();
  Bytes ancient(50, 0xEE);
  r.segment(static_cast<std::uint32_t>(1 + stream.size() - kHistory - 200), ancient, 8, 0, rec,
            refer);
  EXPECT_EQ(rec.events.size(), before);
}

TEST_P(ReassemblyHistory, SharedHistoryBudgetBoundsAllHistories) {
  const bool refer = GetParam();
  // Two directions share 6000 octets of history: the first takes 4096 as it grows, the second
  // gets the remaining 1904 and says it was limited; both still compare what they keep, and
  // each gives its history back when it goes.
  HistoryBudget budget{6000};
  Bytes stream(20000);
  for (std::size_t i = 0; i < stream.size(); ++i)
    stream[i] = static_cast<std::uint8_t>(i * 5 + 1);
  {
    TcpReassembler a(kWindow, 4096, &budget);
    Recorder ra;
    a.syn(0);
    a.segment(1, ByteView(stream).first(10000), 1, 0, ra, refer);
    EXPECT_EQ(budget.used, 4096u);
    EXPECT_FALSE(a.history_limited());
    {
      TcpReassembler b(kWindow, 4096, &budget);
      Recorder rb;
      b.syn(0);
      b.segment(1, ByteView(stream).first(10000), 1, 0, rb, refer);
      EXPECT_TRUE(b.history_limited());
      EXPECT_EQ(budget.used, 6000u);
      // Within b's 1904 newest octets a conflicting retransmission is still caught...
      Bytes changed(stream.begin() + 9000, stream.begin() + 9100);
      changed[5] ^= 1;
      b.segment(1 + 9000, changed, 2, 0, rb, refer);
      ASSERT_EQ(rb.events.back().kind, 'c');
      EXPECT_EQ(rb.events.back().offset, 9000u);
      // ...older ones are not comparable (no conflict), where a's larger history catches them.
      Bytes older(stream.begin() + 7000, stream.begin() + 7100);
      older[5] ^= 1;
      const std::size_t before = rb.events.size();
      b.segment(1 + 7000, older, 3, 0, rb, refer);
      EXPECT_EQ(rb.events.size(), before);
      a.segment(1 + 7000, older, 3, 0, ra, refer);
      ASSERT_EQ(ra.events.back().kind, 'c');
    }
    EXPECT_EQ(budget.used, 4096u);
  }
  EXPECT_EQ(budget.used, 0u);
  // A budget already spent: no history at all, and delivery goes on.
  HistoryBudget none{0};
  TcpReassembler c(kWindow, 4096, &none);
  Recorder rc;
  c.syn(0);
  c.segment(1, ByteView(stream).first(3000), 1, 0, rc, refer);
  c.segment(1 + 3000, ByteView(stream).subspan(3000, 3000), 2, 0, rc, refer);
  EXPECT_TRUE(c.history_limited());
  EXPECT_EQ(c.next_offset(), 6000u);
  EXPECT_EQ(none.used, 0u);
}

TEST_P(ReassemblyHistory, HistoryThatWrappedIsRelaidWhenItGrows) {
  const bool refer = GetParam();
  // A history the shared budget held to 1904 octets wraps; once the budget is given back it
  // grows to its cap, and the octets it kept are found at their new places: an exact
  // retransmission of them is no conflict, a changed one is.
  HistoryBudget budget{6000};
  Bytes stream(12000);
  for (std::size_t i = 0; i < stream.size(); ++i)
    stream[i] = static_cast<std::uint8_t>(i * 11 + i / 253 + 3);
  auto a = std::make_unique<TcpReassembler>(kWindow, 4096, &budget);
  Recorder ra;
  a->syn(0);
  a->segment(1, ByteView(stream).first(10000), 1, 0, ra, refer);
  TcpReassembler b(kWindow, 4096, &budget);
  Recorder rb;
  b.syn(0);
  for (std::size_t off = 0; off < 10000; off += 700)  // 10000 octets through a 1904-octet ring
    b.segment(static_cast<std::uint32_t>(1 + off),
              ByteView(stream).subspan(off, std::min<std::size_t>(700, 10000 - off)), 1, 0, rb,
              refer);
  ASSERT_TRUE(b.history_limited());
  a.reset();
  EXPECT_EQ(budget.used, 1904u);
  b.segment(1 + 10000, ByteView(stream).subspan(10000, 100), 2, 0, rb, refer);  // grows to 4096
  EXPECT_EQ(budget.used, 4096u);
  b.segment(1 + 8200, ByteView(stream).subspan(8200, 1900), 3, 0, rb, refer);  // kept before growth
  for (const auto& e : rb.events)
    ASSERT_NE(e.kind, 'c') << "exact retransmission at " << e.offset;
  for (const std::size_t at : {8200u, 8999u, 9950u}) {
    Bytes changed(stream.begin() + static_cast<std::ptrdiff_t>(at),
                  stream.begin() + static_cast<std::ptrdiff_t>(at) + 40);
    changed[7] ^= 0x80;
    b.segment(static_cast<std::uint32_t>(1 + at), changed, 4, 0, rb, refer);
    ASSERT_EQ(rb.events.back().kind, 'c') << at;
    EXPECT_EQ(rb.events.back().offset, at);
  }
}

TEST(Reassembly, AckPastAHoleDeclaresItCaptureLossBeforeFlush) {
  TcpReassembler r(kWindow, 1024);
  Recorder rec;
  r.syn(999);
  r.segment(1000, octets(10, 0xAA), 1, 0, rec);  // offsets 0..9
  r.segment(1030, octets(10, 0xBB), 3, 0, rec);  // 30..39: octets 10..29 not captured
  r.segment(1060, octets(10, 0xCC), 5, 0, rec);  // 60..69: another hole, 40..59
  ASSERT_EQ(rec.events.size(), 1u);
  // An ACK short of the held data proves nothing: it waits.
  r.acked(1020, rec);
  EXPECT_EQ(rec.events.size(), 1u);
  // The receiver acknowledged up to offset 50: it has 10..29, so they are capture loss; the
  // segment at 30 is delivered. The second hole is before offset 60, which is not acknowledged
  // yet: still waiting (could be reordering).
  r.acked(1050, rec);
  ASSERT_EQ(rec.events.size(), 3u);
  EXPECT_EQ(rec.events[1].kind, 'g');
  EXPECT_EQ(rec.events[1].offset, 10u);
  EXPECT_EQ(rec.events[1].length, 20u);
  EXPECT_EQ(rec.events[1].frame, 3u);
  EXPECT_EQ(rec.events[2].kind, 'd');
  EXPECT_EQ(rec.events[2].offset, 30u);
  EXPECT_EQ(r.held_bytes(), 10u);
  // The late hole's octets arriving now are delivered in order, no gap.
  r.segment(1040, octets(20, 0xDD), 6, 0, rec);
  ASSERT_EQ(rec.events.size(), 5u);
  EXPECT_EQ(rec.events[3].kind, 'd');
  EXPECT_EQ(rec.events[3].offset, 40u);
  EXPECT_EQ(rec.events[4].offset, 60u);
  // An ACK from before the stream (or wrapped far behind) changes nothing.
  r.acked(500, rec);
  EXPECT_EQ(rec.events.size(), 5u);
}

TEST(Reassembly, HistoryRefersToOctetsThatStayValidAndCopiesTheRest) {
  // Where the history reads, seen by breaking the promise on purpose: the caller's octets are
  // changed after delivery, then the original octets are retransmitted. A history that refers
  // to the caller's octets sees a conflict; one that copied them sees none.
  Bytes stream(3000);
  for (std::size_t i = 0; i < stream.size(); ++i)
    stream[i] = static_cast<std::uint8_t>(i * 13 + i / 241 + 5);
  const Bytes original = stream;
  auto run = [&](bool stays_valid, std::size_t at, std::size_t length, bool out_of_order) {
    stream = original;
    TcpReassembler r(kWindow, 64u << 10);
    Recorder rec;
    r.syn(0);
    const ByteView s(stream);
    if (out_of_order) {
      // [at, at + length) waits behind a hole, then drains from the reassembler's own storage.
      r.segment(static_cast<std::uint32_t>(1 + at), s.subspan(at, length), 1, 0, rec, stays_valid);
      r.segment(1, s.first(at), 2, 0, rec, stays_valid);
    } else {
      r.segment(1, s.first(at), 1, 0, rec, stays_valid);
      r.segment(static_cast<std::uint32_t>(1 + at), s.subspan(at, length), 2, 0, rec, stays_valid);
    }
    EXPECT_EQ(r.next_offset(), at + length);
    stream[at + length / 2] ^= 0x5A;  // what a frame that does not stay valid may do
    r.segment(static_cast<std::uint32_t>(1 + at), ByteView(original).subspan(at, length), 3, 0,
              rec);
    return !rec.events.empty() && rec.events.back().kind == 'c';
  };
  EXPECT_TRUE(run(true, 1000, 1500, false)) << "a delivery that stays valid is referred to";
  EXPECT_FALSE(run(false, 1000, 1500, false)) << "one that does not is copied";
  EXPECT_FALSE(run(true, 1000, TcpReassembler::kMinSpan - 1, false)) << "a short one is copied";
  EXPECT_TRUE(run(true, 1000, TcpReassembler::kMinSpan, false));
  EXPECT_FALSE(run(true, 1000, 1500, true)) << "out-of-order storage is copied";
}

TEST(Reassembly, MixedHistoryIsComparedAndRelaidAroundItsSpans) {
  // Octets referred to and octets copied (not valid past the call, too short, drained from
  // out-of-order storage) side by side in a history the budget held to 1904 octets, which
  // wraps and then grows: retransmissions are compared across every boundary between them.
  HistoryBudget budget{6000};
  Bytes stream(12000);
  for (std::size_t i = 0; i < stream.size(); ++i)
    stream[i] = static_cast<std::uint8_t>(i * 29 + i / 199 + 1);
  const ByteView s(stream);
  auto hog = std::make_unique<TcpReassembler>(kWindow, 4096, &budget);
  Recorder rh;
  hog->syn(0);
  hog->segment(1, s.first(10000), 1, 0, rh);
  TcpReassembler b(kWindow, 4096, &budget);
  Recorder rb;
  b.syn(0);
  std::uint64_t frame = 10;
  for (std::size_t off = 0; off < 10000;) {
    const std::size_t n = std::min<std::size_t>((frame % 4 == 3) ? 40 : 600, 10000 - off);
    if (frame % 5 == 4 && off + 2 * n <= 10000) {
      // The next two swapped: the later waits, then drains from the reassembler's storage.
      b.segment(static_cast<std::uint32_t>(1 + off + n), s.subspan(off + n, n), ++frame, 0, rb,
                true);
      b.segment(static_cast<std::uint32_t>(1 + off), s.subspan(off, n), ++frame, 0, rb, true);
      off += 2 * n;
      continue;
    }
    const bool stays_valid = frame % 3 != 0;
    b.segment(static_cast<std::uint32_t>(1 + off), s.subspan(off, n), ++frame, 0, rb, stays_valid);
    off += n;
  }
  ASSERT_TRUE(b.history_limited());
  ASSERT_EQ(b.next_offset(), 10000u);
  auto check_all = [&](std::uint64_t from, std::uint64_t to) {
    // An exact retransmission of what is kept: no conflict.
    const std::size_t before = rb.events.size();
    b.segment(static_cast<std::uint32_t>(1 + from), s.subspan(from, to - from), 50, 0, rb);
    for (std::size_t i = before; i < rb.events.size(); ++i)
      ASSERT_NE(rb.events[i].kind, 'c') << "exact retransmission at " << rb.events[i].offset;
    // One octet changed at each kept offset in turn (every 7th): a conflict every time.
    for (std::uint64_t at = from; at < to; at += 7) {
      Bytes changed(s.begin() + static_cast<std::ptrdiff_t>(at),
                    s.begin() + static_cast<std::ptrdiff_t>(std::min<std::uint64_t>(at + 3, to)));
      changed[0] ^= 0x01;
      b.segment(static_cast<std::uint32_t>(1 + at), changed, 51, 0, rb);
      ASSERT_EQ(rb.events.back().kind, 'c') << at;
      ASSERT_EQ(rb.events.back().offset, at);
      rb.events.pop_back();
    }
  };
  check_all(10000 - 1904, 10000);
  hog.reset();  // the budget given back: b grows to 4096 and re-lays what it copied
  b.segment(1 + 10000, s.subspan(10000, 100), 60, 0, rb, true);
  EXPECT_EQ(budget.used, 4096u);
  b.segment(1 + 10100, s.subspan(10100, 50), 61, 0, rb);
  check_all(10000 - 1904, 10150);
}

TEST_P(ReassemblyHistory, SpansOfChangingSizesAreAllFound) {
  // Long deliveries, then short ones: the history holds a few spans, then many more, so the
  // records of those it refers to are dropped and re-laid as their number grows. Every octet
  // kept is still found: an exact retransmission of the whole history is no conflict, one
  // octet changed anywhere in it is one.
  const bool refer = GetParam();
  constexpr std::size_t kHistory = 8192;
  Bytes stream(200000);
  for (std::size_t i = 0; i < stream.size(); ++i)
    stream[i] = static_cast<std::uint8_t>(i * 31 + i / 257 + 7);
  const ByteView s(stream);
  TcpReassembler r(kWindow, kHistory);
  Recorder rec;
  r.syn(0);
  std::uint64_t off = 0, frame = 1;
  auto deliver = [&](std::size_t n) {
    ASSERT_LE(off + n, stream.size());
    r.segment(static_cast<std::uint32_t>(1 + off), s.subspan(off, n), frame++, 0, rec, refer);
    off += n;
  };
  auto check = [&] {
    const std::uint64_t from = off - kHistory;
    const std::size_t before = rec.events.size();
    r.segment(static_cast<std::uint32_t>(1 + from), s.subspan(from, kHistory), 90, 0, rec);
    ASSERT_EQ(rec.events.size(), before) << "exact retransmission up to " << off;
    for (std::uint64_t at = from; at < off; at += 61) {
      Bytes changed(s.begin() + static_cast<std::ptrdiff_t>(at),
                    s.begin() + static_cast<std::ptrdiff_t>(at) + 2);
      changed[1] ^= 0x08;
      r.segment(static_cast<std::uint32_t>(1 + at), changed, 91, 0, rec);
      ASSERT_EQ(rec.events.back().kind, 'c') << at << ", " << off;
      rec.events.pop_back();
    }
  };
  for (int i = 0; i < 40; ++i)
    deliver(1000);
  check();
  for (std::size_t n : {64u, 100u, 64u, 300u, 64u}) {
    for (int i = 0; i < 150; ++i)
      deliver(n);
    check();
  }
  for (int i = 0; i < 30; ++i)
    deliver(1000);
  check();
}

TEST_P(ReassemblyHistory, TheOldestOctetIsComparedWhereverItLies) {
  // Deliveries whose size divides 4095: a 4096-octet history then begins at the last octet of a
  // delivery after every one of them. That octet is still compared, whenever the history is
  // looked at (and the records of spans that ended before it are dropped, now and then).
  const bool refer = GetParam();
  constexpr std::size_t kHistory = 4096;
  for (const std::size_t n : {65u, 91u, 105u, 315u}) {
    Bytes stream(400 * n);
    for (std::size_t i = 0; i < stream.size(); ++i)
      stream[i] = static_cast<std::uint8_t>(i * 37 + i / 263 + 11);
    const ByteView s(stream);
    TcpReassembler r(kWindow, kHistory);
    Recorder rec;
    r.syn(0);
    for (std::size_t off = 0; off < stream.size(); off += n) {
      r.segment(static_cast<std::uint32_t>(1 + off), s.subspan(off, n), 1, 0, rec, refer);
      if (off + n < kHistory) continue;
      const std::uint64_t oldest = off + n - kHistory;
      ASSERT_EQ((oldest + 1) % n, 0u);
      r.segment(static_cast<std::uint32_t>(1 + oldest), s.subspan(oldest, 2), 2, 0, rec);
      ASSERT_EQ(rec.events.back().kind, 'd') << n << " " << oldest;
      Bytes changed(s.begin() + static_cast<std::ptrdiff_t>(oldest),
                    s.begin() + static_cast<std::ptrdiff_t>(oldest) + 1);
      changed[0] ^= 0x20;
      r.segment(static_cast<std::uint32_t>(1 + oldest), changed, 3, 0, rec);
      ASSERT_EQ(rec.events.back().kind, 'c') << n << " " << oldest;
      ASSERT_EQ(rec.events.back().offset, oldest);
      // One octet before: older than the history, not compared.
      r.segment(static_cast<std::uint32_t>(oldest), Bytes(1, 0), 4, 0, rec);
      ASSERT_EQ(rec.events.back().frame, 3u) << n << " " << oldest;
    }
  }
}

// One direction's sender as a capture shows it, at random: mostly in order, in segments short
// and long, with reordering, holes (declared by ACKs, the window or the end), lost tails, exact
// and changed retransmissions reaching back past the history. Every segment's octets are kept
// for the run, so they may be fed as staying valid.
struct Script {
  struct Op {
    int dir = 0;
    char kind = 's';  // 's' segment, 'a' the other side's ACK, 'x' the direction ends
    std::uint32_t seq = 0;
    std::size_t octets = 0;  // index into `segments`
    std::uint32_t lost_tail = 0;
  };
  std::size_t window = 0;
  std::size_t history = 0;
  std::optional<std::size_t> budget;
  std::uint32_t isn[2] = {0, 0};
  std::vector<Bytes> segments;
  std::vector<Op> ops;

  explicit Script(std::uint32_t seed) {
    std::mt19937 rng(seed);
    auto pick = [&](std::uint32_t lo, std::uint32_t hi) {
      return std::uniform_int_distribution<std::uint32_t>(lo, hi)(rng);
    };
    const std::size_t histories[] = {0, 50, 4096, 4097, 10000, 65536};
    history = histories[pick(0, 5)];
    window = pick(0, 3) == 0 ? 20000 : kWindow;
    const std::size_t budgets[] = {0, 3000, 6000, 9000, 1u << 20};
    if (pick(0, 3) != 0) budget = budgets[pick(0, 4)];
    std::uint64_t sent[2] = {0, 0};
    for (int d = 0; d < 2; ++d)  // sequence numbers that wrap early, or not
      isn[d] = pick(0, 1) ? 0xFFFFFFFFu - pick(0, 100000) : pick(0, 1u << 30);
    auto seq_of = [&](int d, std::uint64_t off) {
      return static_cast<std::uint32_t>(isn[d] + 1 + off);
    };
    // The streams' octets: no period, so an octet taken from elsewhere in them differs.
    auto octet = [seed](int d, std::uint64_t off) {
      std::uint64_t z = (off + 1) * 0x9E3779B97F4A7C15ull + seed * 0xBF58476D1CE4E5B9ull + d;
      z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
      z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
      return static_cast<std::uint8_t>(z ^ (z >> 31));
    };
    auto add = [&](int d, std::uint64_t off, std::size_t n, std::uint32_t lost_tail, bool flip) {
      Bytes b(n);
      for (std::size_t i = 0; i < n; ++i)
        b[i] = octet(d, off + i);
      if (flip && !b.empty()) b[pick(0, static_cast<std::uint32_t>(b.size() - 1))] ^= 0x10;
      segments.push_back(std::move(b));
      ops.push_back({d, 's', seq_of(d, off), segments.size() - 1, lost_tail});
    };
    auto length = [&] {
      const std::uint32_t k = pick(0, 9);
      return static_cast<std::size_t>(k < 2   ? pick(1, 63)
                                      : k < 8 ? pick(64, 1500)
                                              : pick(1501, 6000));
    };
    const int ended = pick(0, 2) == 0 ? static_cast<int>(pick(0, 1)) : -1;
    const std::uint32_t steps = pick(100, 400);
    for (std::uint32_t i = 0; i < steps; ++i) {
      const int d = static_cast<int>(pick(0, 1));
      if (d == ended && i == steps / 2) {
        ops.push_back({d, 'x', 0, 0, 0});
        continue;
      }
      std::uint64_t& pos = sent[d];
      const std::uint32_t what = pick(0, 99);
      const std::size_t n = length();
      if (what < 55) {
        add(d, pos, n, 0, false);
        pos += n;
      } else if (what < 63) {  // the next two swapped
        const std::size_t m = length();
        add(d, pos + n, m, 0, false);
        add(d, pos, n, 0, false);
        pos += n + m;
      } else if (what < 67) {  // a hole: never sent
        pos += n;
      } else if (what < 70) {  // a lost tail: the frame's end not captured
        const std::size_t captured = pick(0, static_cast<std::uint32_t>(n));
        add(d, pos, captured, static_cast<std::uint32_t>(n - captured), false);
        pos += n;
      } else if (what < 94) {  // a retransmission of octets sent before, maybe with new ones
        const std::uint64_t back = pick(1, static_cast<std::uint32_t>(2 * history + 3000));
        const std::uint64_t from = pos > back ? pos - back : 0;
        add(d, from, n, 0, what >= 85);
        pos = std::max<std::uint64_t>(pos, from + n);
      } else {  // the other side acknowledges up to here (or a little before)
        ops.push_back(
            {1 - d, 'a', seq_of(d, pos - std::min<std::uint64_t>(pos, pick(0, 2000))), 0, 0});
      }
    }
  }

  struct Result {
    std::vector<Recorder::Event> events[2];
    bool limited[2] = {false, false};
    std::uint64_t retransmitted[2] = {0, 0};
    std::vector<std::size_t> budget_used;
  };
  Result run(bool refer) const {
    Result out;
    HistoryBudget shared{budget.value_or(0)};
    HistoryBudget* b = budget ? &shared : nullptr;
    std::unique_ptr<TcpReassembler> r[2];
    Recorder rec[2];
    for (int d = 0; d < 2; ++d) {
      r[d] = std::make_unique<TcpReassembler>(window, history, b);
      r[d]->syn(isn[d]);
    }
    auto done = [&](int d) {
      r[d]->flush(rec[d]);
      out.limited[d] = r[d]->history_limited();
      out.retransmitted[d] = r[d]->retransmitted_bytes();
      out.events[d] = rec[d].events;
      r[d].reset();
    };
    for (std::size_t i = 0; i < ops.size(); ++i) {
      const Op& op = ops[i];
      const int d = op.kind == 'a' ? 1 - op.dir : op.dir;  // an ACK is for the other direction
      if (!r[d]) continue;
      if (op.kind == 'x')
        done(d);
      else if (op.kind == 'a')
        r[d]->acked(op.seq, rec[d]);
      else
        r[d]->segment(op.seq, segments[op.octets], 100 + i, op.lost_tail, rec[d], refer);
      out.budget_used.push_back(shared.used);
    }
    for (int d = 0; d < 2; ++d)
      if (r[d]) done(d);
    return out;
  }
};

bool operator==(const Recorder::Event& a, const Recorder::Event& b) {
  return a.kind == b.kind && a.offset == b.offset && a.length == b.length && a.frame == b.frame;
}

TEST(Reassembly, ReferredHistoryFindsWhatACopyingOneFinds) {
  // The same scripts fed twice: the history copying what it keeps, and referring to it where
  // it lies. Every event (data, gaps, conflicts), the budget after every step and the history
  // limit agree. A span that pointed at other octets than those it stands for would turn an
  // exact retransmission into a conflict, or hide a changed one.
  std::size_t conflicts = 0, data = 0, gaps = 0;
  for (std::uint32_t seed = 1; seed <= 300; ++seed) {
    const Script script(seed);
    const Script::Result copied = script.run(false);
    const Script::Result referred = script.run(true);
    for (int d = 0; d < 2; ++d) {
      ASSERT_EQ(copied.events[d].size(), referred.events[d].size()) << "seed " << seed;
      for (std::size_t i = 0; i < copied.events[d].size(); ++i)
        ASSERT_TRUE(copied.events[d][i] == referred.events[d][i])
            << "seed " << seed << " direction " << d << " event " << i << ": "
            << copied.events[d][i].kind << "@" << copied.events[d][i].offset << " vs "
            << referred.events[d][i].kind << "@" << referred.events[d][i].offset;
      EXPECT_EQ(copied.limited[d], referred.limited[d]) << "seed " << seed;
      EXPECT_EQ(copied.retransmitted[d], referred.retransmitted[d]) << "seed " << seed;
      for (const auto& e : copied.events[d])
        (e.kind == 'c' ? conflicts : e.kind == 'g' ? gaps : data)++;
    }
    ASSERT_EQ(copied.budget_used, referred.budget_used) << "seed " << seed;
  }
  // The scripts did what they are for.
  EXPECT_GT(conflicts, 1000u);
  EXPECT_GT(gaps, 500u);
  EXPECT_GT(data, 10000u);
}

}  // namespace
}  // namespace ddpscope
