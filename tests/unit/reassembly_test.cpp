// SPDX-License-Identifier: GPL-2.0-or-later
// TcpReassembler: lost tails (octets a segment claims but the capture lacks) are held by their
// length only, become gaps at their place in sequence order, and let delivery resume after.
#include "ddpscope/tcp/reassembly.h"

#include <gtest/gtest.h>

#include <memory>
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

TEST(Reassembly, RetransmissionsAreComparedWhileTheHistoryGrows) {
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
    r.segment(static_cast<std::uint32_t>(1 + off), ByteView(stream).subspan(off, 1000), off, 0,
              rec);
    // Exact retransmission of the segment 3 back, then a conflicting one of the previous.
    if (off >= 3000)
      r.segment(static_cast<std::uint32_t>(1 + off - 3000),
                ByteView(stream).subspan(off - 3000, 1000), 1, 0, rec);
  }
  for (const auto& e : rec.events)
    ASSERT_EQ(e.kind, 'd');
  const std::uint64_t old = stream.size() - kHistory + 100;  // oldest octets still kept
  Bytes changed(ByteView(stream).subspan(old, 50).begin(), ByteView(stream).subspan(old, 50).end());
  changed[10] ^= 1;
  r.segment(static_cast<std::uint32_t>(1 + old), changed, 7, 0, rec);
  ASSERT_EQ(rec.events.back().kind, 'c');
  EXPECT_EQ(rec.events.back().offset, old);
  EXPECT_EQ(rec.events.back().frame, 7u);
  // Older than the history: not comparable, so no conflict.
  const std::size_t before = rec.events.size();
  Bytes ancient(50, 0xEE);
  r.segment(static_cast<std::uint32_t>(1 + stream.size() - kHistory - 200), ancient, 8, 0, rec);
  EXPECT_EQ(rec.events.size(), before);
}

TEST(Reassembly, SharedHistoryBudgetBoundsAllHistories) {
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
    a.segment(1, ByteView(stream).first(10000), 1, 0, ra);
    EXPECT_EQ(budget.used, 4096u);
    EXPECT_FALSE(a.history_limited());
    {
      TcpReassembler b(kWindow, 4096, &budget);
      Recorder rb;
      b.syn(0);
      b.segment(1, ByteView(stream).first(10000), 1, 0, rb);
      EXPECT_TRUE(b.history_limited());
      EXPECT_EQ(budget.used, 6000u);
      // Within b's 1904 newest octets a conflicting retransmission is still caught...
      Bytes changed(stream.begin() + 9000, stream.begin() + 9100);
      changed[5] ^= 1;
      b.segment(1 + 9000, changed, 2, 0, rb);
      ASSERT_EQ(rb.events.back().kind, 'c');
      EXPECT_EQ(rb.events.back().offset, 9000u);
      // ...older ones are not comparable (no conflict), where a's larger history catches them.
      Bytes older(stream.begin() + 7000, stream.begin() + 7100);
      older[5] ^= 1;
      const std::size_t before = rb.events.size();
      b.segment(1 + 7000, older, 3, 0, rb);
      EXPECT_EQ(rb.events.size(), before);
      a.segment(1 + 7000, older, 3, 0, ra);
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
  c.segment(1, ByteView(stream).first(3000), 1, 0, rc);
  c.segment(1 + 3000, ByteView(stream).subspan(3000, 3000), 2, 0, rc);
  EXPECT_TRUE(c.history_limited());
  EXPECT_EQ(c.next_offset(), 6000u);
  EXPECT_EQ(none.used, 0u);
}

TEST(Reassembly, HistoryThatWrappedIsRelaidWhenItGrows) {
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
  a->segment(1, ByteView(stream).first(10000), 1, 0, ra);
  TcpReassembler b(kWindow, 4096, &budget);
  Recorder rb;
  b.syn(0);
  for (std::size_t off = 0; off < 10000; off += 700)  // 10000 octets through a 1904-octet ring
    b.segment(static_cast<std::uint32_t>(1 + off),
              ByteView(stream).subspan(off, std::min<std::size_t>(700, 10000 - off)), 1, 0, rb);
  ASSERT_TRUE(b.history_limited());
  a.reset();
  EXPECT_EQ(budget.used, 1904u);
  b.segment(1 + 10000, ByteView(stream).subspan(10000, 100), 2, 0, rb);  // grows to 4096
  EXPECT_EQ(budget.used, 4096u);
  b.segment(1 + 8200, ByteView(stream).subspan(8200, 1900), 3, 0, rb);  // kept before growth
  for (const auto& e : rb.events)
    ASSERT_NE(e.kind, 'c') << "exact retransmission at " << e.offset;
  for (const std::size_t at : {8200u, 8999u, 9950u}) {
    Bytes changed(stream.begin() + static_cast<std::ptrdiff_t>(at),
                  stream.begin() + static_cast<std::ptrdiff_t>(at) + 40);
    changed[7] ^= 0x80;
    b.segment(static_cast<std::uint32_t>(1 + at), changed, 4, 0, rb);
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

}  // namespace
}  // namespace ddpscope
