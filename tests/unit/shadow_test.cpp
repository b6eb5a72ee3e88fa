// SPDX-License-Identifier: GPL-2.0-or-later
// Shadow memory: the model of a Data Sink's tagged buffers (RFC 5041 §5.1 placement): extents,
// overlap, reuse after delivery and conflict while in flight (the rule in ddp/shadow.h), content
// retention and its cap, the range cap, bounds, reads.
#include "ddpscope/ddp/shadow.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <map>
#include <memory_resource>

namespace ddpscope {
namespace {

using Extents = std::map<std::uint64_t, std::uint64_t>;

constexpr std::uint64_t kTop = UINT64_MAX;  // 2^64 - 1, the last TO there is

Bytes pattern(std::size_t n, std::uint8_t seed = 1) {
  Bytes b(n);
  for (std::size_t i = 0; i < n; ++i)
    b[i] = static_cast<std::uint8_t>(seed + i * 7);
  return b;
}

RegionKey key(std::uint32_t stag) {
  return RegionKey{*net::Address::parse("10.0.0.2"), stag};
}

PlacedRange range(std::uint64_t begin, std::uint64_t end, std::uint64_t frame = 1) {
  PlacedRange r;
  r.begin = begin;
  r.end = end;
  r.frame = frame;
  return r;
}

struct Shadow : testing::Test {
  ShadowMemory mem;
  ShadowBuffer* buf = nullptr;
  void SetUp() override { buf = mem.get_or_create(key(0x100), 16); }
  // Places `content` at TO `to`, as one tagged segment.
  PlaceResult put(std::uint64_t to, const Bytes& content, std::uint64_t frame = 1) {
    return mem.place(*buf, range(to, to + content.size(), frame), content);
  }
  bool all_known(std::uint64_t to, std::size_t len) const {
    std::vector<bool> known;
    buf->read(to, len, &known);
    for (bool k : known)
      if (!k) return false;
    return true;
  }
};

TEST_F(Shadow, InOrderPlacementsCoalesceIntoOneExtent) {
  const Bytes a = pattern(100, 1), b = pattern(50, 2), c = pattern(10, 3);
  const PlaceResult ra = put(1000, a, 1);
  const PlaceResult rb = put(1100, b, 2);
  const PlaceResult rc = put(1150, c, 3);
  EXPECT_EQ(ra.new_bytes, 100u);
  EXPECT_EQ(rb.new_bytes, 50u);
  EXPECT_EQ(rc.new_bytes, 10u);
  for (const PlaceResult& r : {ra, rb, rc}) {
    EXPECT_FALSE(r.overlap);
    EXPECT_FALSE(r.conflict);
    EXPECT_FALSE(r.content_dropped);
    EXPECT_FALSE(r.capped);
  }
  EXPECT_EQ(buf->extents(), (Extents{{1000, 1160}}));
  EXPECT_EQ(buf->bytes_placed(), 160u);
  EXPECT_EQ(buf->min_to(), 1000u);
  EXPECT_EQ(buf->max_end(), 1160u);
  ASSERT_EQ(buf->ranges().size(), 3u);
  EXPECT_EQ(buf->ranges()[1].begin, 1100u);
  EXPECT_EQ(buf->ranges()[1].frame, 2u);
  Bytes want = a;
  want.insert(want.end(), b.begin(), b.end());
  want.insert(want.end(), c.begin(), c.end());
  EXPECT_EQ(buf->read(1000, 160), want);
  EXPECT_TRUE(all_known(1000, 160));
}

TEST_F(Shadow, OutOfOrderPlacementsCoalesce) {
  put(200, pattern(100, 3), 3);
  put(0, pattern(100, 1), 1);
  EXPECT_EQ(buf->extents(), (Extents{{0, 100}, {200, 300}}));
  const PlaceResult r = put(100, pattern(100, 2), 2);  // fills the hole, touching both sides
  EXPECT_EQ(r.new_bytes, 100u);
  EXPECT_FALSE(r.overlap);
  EXPECT_EQ(buf->extents(), (Extents{{0, 300}}));
  EXPECT_EQ(buf->bytes_placed(), 300u);
  ASSERT_EQ(buf->ranges().size(), 3u);  // in arrival order
  EXPECT_EQ(buf->ranges()[0].frame, 3u);
  EXPECT_EQ(buf->ranges()[1].frame, 1u);
  EXPECT_EQ(buf->ranges()[2].frame, 2u);
  EXPECT_EQ(buf->min_to(), 0u);
  EXPECT_EQ(buf->max_end(), 300u);
  EXPECT_TRUE(all_known(0, 300));
}

TEST_F(Shadow, APlacementBridgingExtentsCountsOnlyNewOctets) {
  put(0, pattern(10));
  put(20, pattern(10));
  put(40, pattern(10));
  const PlaceResult r = put(5, pattern(40, 5));  // [5, 45): 5 + 10 + 5 octets were placed
  EXPECT_TRUE(r.overlap);
  EXPECT_EQ(r.new_bytes, 20u);
  EXPECT_EQ(buf->extents(), (Extents{{0, 50}}));
  EXPECT_EQ(buf->bytes_placed(), 50u);
}

TEST_F(Shadow, OverlapWithTheSameContentIsNoConflict) {
  const Bytes a = pattern(100);
  put(0, a);
  const PlaceResult r =
      mem.place(*buf, range(50, 150), pattern(100, static_cast<std::uint8_t>(1 + 50 * 7)));
  EXPECT_TRUE(r.overlap);
  EXPECT_FALSE(r.conflict);
  EXPECT_EQ(r.new_bytes, 50u);
  EXPECT_TRUE(buf->ranges().back().overlap);
  EXPECT_FALSE(buf->ranges().back().conflict);
}

TEST_F(Shadow, OverlapWithDifferentContentAndNothingInFlightIsReuseAndTheLatestWins) {
  put(0, Bytes(100, 0xAA));
  const PlaceResult r = put(90, Bytes(20, 0xBB));  // no WriterState: nothing is in flight
  EXPECT_TRUE(r.overlap);
  EXPECT_FALSE(r.conflict);
  EXPECT_TRUE(r.reused);
  EXPECT_EQ(r.reused_octets, 10u);
  EXPECT_EQ(r.new_bytes, 10u);
  EXPECT_TRUE(buf->ranges().back().reused);
  EXPECT_FALSE(buf->ranges().back().conflict);
  EXPECT_EQ(buf->overwrites(), 1u);
  EXPECT_EQ(buf->reused_octets(), 10u);
  const Bytes got = buf->read(85, 10);
  EXPECT_EQ(got, (Bytes{0xAA, 0xAA, 0xAA, 0xAA, 0xAA, 0xBB, 0xBB, 0xBB, 0xBB, 0xBB}));
}

// The caller's delivery state, as the analysis keeps it: messages in flight until delivered.
struct FakeWriters final : WriterState {
  std::vector<PlacementWriter> flying;
  mutable int asked = 0;
  bool in_flight(const PlacementWriter& w) const override {
    ++asked;
    return std::find(flying.begin(), flying.end(), w) != flying.end();
  }
  void deliver(const PlacementWriter& w) {
    flying.erase(std::remove(flying.begin(), flying.end(), w), flying.end());
  }
};

struct ShadowInFlight : Shadow {
  FakeWriters writers;
  const PlacementWriter a{0, 1, 7}, b{0, 1, 8}, other_stream{3, 0, 1};
  PlaceResult put_as(const PlacementWriter& w, std::uint64_t to, const Bytes& content,
                     std::uint64_t frame, bool violation = false) {
    PlacedRange r = range(to, to + content.size(), frame);
    r.stream = w.stream;
    r.direction = w.direction;
    r.message = w.message;
    r.violation = violation;
    return mem.place(*buf, r, content, &writers);
  }
};

TEST_F(ShadowInFlight, ReuseAfterDeliveryIsNoConflictAndIsCounted) {
  writers.flying = {a};
  put_as(a, 0, Bytes(64, 0xAA), 10);
  writers.deliver(a);  // e.g. rping's Write, delivered before its go-ahead Send
  writers.flying.push_back(b);
  const PlaceResult r = put_as(b, 0, Bytes(64, 0xBB), 20);  // the next iteration's pattern
  EXPECT_TRUE(r.overlap);
  EXPECT_FALSE(r.conflict);
  EXPECT_TRUE(r.reused);
  EXPECT_EQ(r.reused_octets, 64u);
  EXPECT_EQ(buf->overwrites(), 1u);
  EXPECT_EQ(buf->reused_octets(), 64u);
  EXPECT_EQ(buf->conflicts(), 0u);
  EXPECT_TRUE(buf->ranges().back().reused);
  EXPECT_EQ(buf->read(0, 64), Bytes(64, 0xBB));
}

TEST_F(ShadowInFlight, DifferentContentOverAMessageInFlightIsAConflict) {
  writers.flying = {other_stream, b};
  put_as(other_stream, 100, Bytes(50, 0xAA), 5);
  put_as(other_stream, 150, Bytes(50, 0xAA), 6);  // the same message grows its extent
  // Another message writes 20 octets into the first one's before it is delivered.
  const PlaceResult r = put_as(b, 140, Bytes(20, 0xBB), 9);
  EXPECT_TRUE(r.overlap);
  EXPECT_TRUE(r.conflict);
  EXPECT_FALSE(r.conflict_own);
  EXPECT_EQ(r.conflict_octets, 20u);
  EXPECT_EQ(r.conflict_frame, 5u);
  EXPECT_EQ(r.conflict_writer, other_stream);
  EXPECT_FALSE(r.reused);
  EXPECT_TRUE(buf->ranges().back().conflict);
  EXPECT_EQ(buf->conflicts(), 1u);
  EXPECT_EQ(buf->conflict_octets(), 20u);
  EXPECT_EQ(buf->overwrites(), 0u);
  EXPECT_EQ(buf->read(140, 20), Bytes(20, 0xBB));  // memory holds the latest, as the sink's
  // Once the first is delivered the same write is reuse.
  writers.deliver(other_stream);
  const PlaceResult again = put_as(b, 100, Bytes(10, 0xCC), 11);
  EXPECT_FALSE(again.conflict);
  EXPECT_TRUE(again.reused);
}

TEST_F(ShadowInFlight, IdenticalContentOverAMessageInFlightIsOnlyAnOverlap) {
  writers.flying = {a, b};
  put_as(a, 0, pattern(100), 1);
  const PlaceResult r = put_as(b, 0, pattern(100), 2);  // a retransmission of the same octets
  EXPECT_TRUE(r.overlap);
  EXPECT_FALSE(r.conflict);
  EXPECT_FALSE(r.reused);
  EXPECT_EQ(buf->conflicts(), 0u);
  EXPECT_EQ(buf->overwrites(), 0u);
}

TEST_F(ShadowInFlight, AMessageRewritingItsOwnOctetsIsAConflictEvenWhenNotPlaced) {
  writers.flying = {a};
  put_as(a, 0, Bytes(32, 0x11), 3);
  // Its next segment goes back 16 octets (a placement rule broken: nothing of it is placed) with
  // other content: what it tried to place is compared.
  const PlaceResult r = put_as(a, 16, Bytes(32, 0x22), 4, /*violation=*/true);
  EXPECT_TRUE(r.conflict);
  EXPECT_TRUE(r.conflict_own);
  EXPECT_EQ(r.conflict_octets, 16u);
  EXPECT_EQ(r.conflict_frame, 3u);
  EXPECT_EQ(r.new_bytes, 0u);
  EXPECT_EQ(buf->read(16, 16), Bytes(16, 0x11));  // unchanged
  EXPECT_EQ(buf->extents(), (Extents{{0, 32}}));
  EXPECT_TRUE(buf->ranges().back().conflict);
  EXPECT_TRUE(buf->ranges().back().violation);
}

TEST_F(ShadowInFlight, OnePlacementOverInFlightAndDeliveredOctetsSplitsTheCount) {
  writers.flying = {a};
  put_as(a, 0, Bytes(10, 0xAA), 1);
  writers.deliver(a);
  writers.flying = {other_stream, b};
  put_as(other_stream, 10, Bytes(10, 0xAA), 2);
  const PlaceResult r = put_as(b, 5, Bytes(10, 0xBB), 3);  // 5 of a (delivered), 5 in flight
  EXPECT_TRUE(r.conflict);
  EXPECT_EQ(r.conflict_octets, 5u);
  EXPECT_TRUE(r.reused);
  EXPECT_EQ(r.reused_octets, 5u);
  EXPECT_EQ(r.conflict_writer, other_stream);
}

// The next segments of the message that placed a buffer's extents meet none of them: nothing is
// compared, and nothing asked. Another message's segment asks.
TEST_F(ShadowInFlight, TheNextSegmentsOfAMessageAskNothing) {
  writers.flying = {a, b};
  put_as(a, 0, pattern(100), 1);
  writers.asked = 0;
  for (std::uint64_t to = 100; to < 1000; to += 100)
    put_as(a, to, pattern(100), 2);
  EXPECT_EQ(writers.asked, 0);
  EXPECT_FALSE(put_as(b, 2000, pattern(100), 3).conflict);
  EXPECT_EQ(writers.asked, 1);
  // Its own octets again are asked about and compared.
  const PlaceResult r = put_as(a, 50, Bytes(10, 0xEE), 4);
  EXPECT_TRUE(r.conflict);
  EXPECT_TRUE(r.conflict_own);
  EXPECT_EQ(r.conflict_frame, 1u);
}

// A message no longer in flight (its stream ended) that goes on placing keeps extents nobody
// asked about: the next message's placement over them is reuse, not a conflict.
TEST_F(ShadowInFlight, AMessageNoLongerInFlightThatGoesOnPlacingConflictsWithNothing) {
  writers.flying = {a};
  put_as(a, 0, Bytes(64, 0xAA), 1);
  writers.deliver(a);
  put_as(a, 64, Bytes(64, 0xAA), 2);
  writers.flying = {b};
  const PlaceResult r = put_as(b, 0, Bytes(128, 0xBB), 3);
  EXPECT_FALSE(r.conflict);
  EXPECT_TRUE(r.reused);
  EXPECT_EQ(r.reused_octets, 128u);
  // b's own extent is all that is left: a rewrite of it is b's own conflict.
  const PlaceResult own = put_as(b, 10, Bytes(4, 0xCC), 4);
  EXPECT_TRUE(own.conflict_own);
  EXPECT_EQ(own.conflict_frame, 3u);
}

TEST_F(ShadowInFlight, WithoutRetainedContentNothingIsAConflict) {
  mem.set_retention_cap(0);
  writers.flying = {a, b};
  put_as(a, 0, Bytes(10, 0xAA), 1);
  const PlaceResult r = put_as(b, 0, Bytes(10, 0xBB), 2);
  EXPECT_TRUE(r.overlap);
  EXPECT_FALSE(r.conflict);  // unknown content never conflicts
  EXPECT_FALSE(r.reused);
}

TEST_F(Shadow, WithoutRetentionOverlapIsSeenButConflictIsNot) {
  mem.set_retention_cap(0);
  const PlaceResult first = put(0, Bytes(100, 0xAA));
  EXPECT_TRUE(first.content_dropped);
  const PlaceResult r = put(50, Bytes(100, 0xBB));
  EXPECT_TRUE(r.overlap);
  EXPECT_FALSE(r.conflict);  // nothing to compare with
  EXPECT_TRUE(r.content_dropped);
  EXPECT_EQ(buf->bytes_placed(), 150u);
  EXPECT_EQ(buf->bytes_retained(), 0u);
  EXPECT_EQ(mem.bytes_retained(), 0u);
  std::vector<bool> known;
  EXPECT_EQ(buf->read(0, 150, &known), Bytes(150, 0));
  EXPECT_EQ(known, std::vector<bool>(150, false));
}

TEST_F(Shadow, RetentionCapKeepsWholePagesAndDropsTheRest) {
  mem.set_retention_cap(2 * 4096);
  // Three pages' worth from TO 0: the first two are kept, the third is not.
  const PlaceResult r = put(0, pattern(3 * 4096));
  EXPECT_TRUE(r.content_dropped);
  EXPECT_EQ(r.new_bytes, 3u * 4096u);  // placed all the same
  EXPECT_EQ(mem.bytes_retained(), 2u * 4096u);
  EXPECT_EQ(buf->bytes_retained(), 2u * 4096u);
  EXPECT_TRUE(all_known(0, 2 * 4096));
  std::vector<bool> known;
  buf->read(2 * 4096 - 1, 2, &known);
  EXPECT_EQ(known, (std::vector<bool>{true, false}));
  // Octets in pages already kept are still retained and compared.
  const PlaceResult again = put(100, Bytes(10, 0x00));
  EXPECT_TRUE(again.reused);
  EXPECT_FALSE(again.content_dropped);
  // The cap is shared: another region retains nothing now.
  ShadowBuffer* other = mem.get_or_create(key(0x200), 16);
  ASSERT_NE(other, nullptr);
  const PlaceResult o = mem.place(*other, range(0, 10), pattern(10));
  EXPECT_TRUE(o.content_dropped);
  EXPECT_EQ(other->bytes_retained(), 0u);
  EXPECT_EQ(other->bytes_placed(), 10u);
}

TEST_F(Shadow, ReadMarksKnownAndUnknownOctets) {
  put(4090, pattern(4, 9));   // the end of page 0
  put(4096, pattern(4, 20));  // the next page
  std::vector<bool> known;
  const Bytes got = buf->read(4088, 14, &known);
  EXPECT_EQ(known, (std::vector<bool>{false, false, true, true, true, true, false, false, true,
                                      true, true, true, false, false}));
  const Bytes a = pattern(4, 9), b = pattern(4, 20);
  EXPECT_EQ(got, (Bytes{0, 0, a[0], a[1], a[2], a[3], 0, 0, b[0], b[1], b[2], b[3], 0, 0}));
  // Never placed at all.
  EXPECT_EQ(buf->read(1u << 30, 3, &known), Bytes(3, 0));
  EXPECT_EQ(known, std::vector<bool>(3, false));
  EXPECT_TRUE(buf->read(0, 0, &known).empty());
  EXPECT_TRUE(known.empty());
}

TEST_F(Shadow, PlacementsShorterContentKeepOnlyWhatCame) {
  // A range longer than its content: the octets without content are placed, not known.
  const PlaceResult r = mem.place(*buf, range(0, 10), pattern(4));
  EXPECT_EQ(r.new_bytes, 10u);
  std::vector<bool> known;
  buf->read(0, 10, &known);
  EXPECT_EQ(known,
            (std::vector<bool>{true, true, true, true, false, false, false, false, false, false}));
}

TEST_F(Shadow, RangeCapStopsRecordingButNotCounting) {
  mem.set_range_cap(2);
  EXPECT_FALSE(put(0, pattern(10)).capped);
  EXPECT_FALSE(put(100, pattern(10)).capped);
  // A third island past the highest extent (the in-order fast path): not remembered.
  const PlaceResult third = put(200, pattern(10));
  EXPECT_TRUE(third.capped);
  EXPECT_EQ(third.new_bytes, 10u);
  EXPECT_EQ(buf->extents(), (Extents{{0, 10}, {100, 110}}));
  EXPECT_EQ(buf->ranges().size(), 2u);
  EXPECT_EQ(buf->ranges_dropped(), 1u);
  EXPECT_EQ(buf->bytes_placed(), 30u);
  // An island between extents (the general path): not remembered either.
  const PlaceResult between = put(50, pattern(10));
  EXPECT_TRUE(between.capped);
  EXPECT_EQ(buf->extents().size(), 2u);
  EXPECT_EQ(buf->ranges_dropped(), 2u);
  // Growing a known extent is still recorded in the extents; its range is dropped.
  const PlaceResult grow = put(10, pattern(10));
  EXPECT_TRUE(grow.capped);
  EXPECT_EQ(buf->extents(), (Extents{{0, 20}, {100, 110}}));
  EXPECT_EQ(buf->ranges_dropped(), 3u);
  // The unremembered island at 200 is unseen by a later overlap (documented degradation).
  const PlaceResult over = put(200, pattern(10));
  EXPECT_FALSE(over.overlap);
  EXPECT_EQ(buf->bytes_placed(), 60u);
  // Content is kept regardless of the range cap: read() still knows the island.
  EXPECT_TRUE(all_known(200, 10));
}

// `ddpscope analyze` keeps no placements (AnalyzerOptions::placement_ranges): what it reports of
// them, their counts, and when the range cap is reached, must be what a memory keeping them has.
TEST(ShadowRanges, CountsAndTheCapAreTheSameWithoutKeepingThePlacements) {
  ShadowMemory kept, counted;
  kept.set_range_cap(3);
  counted.set_range_cap(3);
  counted.set_keep_ranges(false);
  ShadowBuffer* a = kept.get_or_create(key(0x100), 16);
  ShadowBuffer* b = counted.get_or_create(key(0x100), 16);
  struct Step {
    std::uint64_t to;
    std::size_t len;
    std::uint32_t stream;
    bool violation;
  };
  const Step steps[] = {{0, 10, 4, false}, {5, 10, 2, false},   {100, 4, 4, true},
                        {8, 4, 7, false},  {200, 10, 2, false}, {0, 30, 9, true}};
  for (const Step& st : steps) {
    PlacedRange r = range(st.to, st.to + st.len);
    r.stream = st.stream;
    r.violation = st.violation;
    const PlaceResult pa = kept.place(*a, r, pattern(st.len));
    const PlaceResult pb = counted.place(*b, r, pattern(st.len));
    EXPECT_EQ(pa.capped, pb.capped) << "at TO " << st.to;
    EXPECT_EQ(pa.overlap, pb.overlap) << "at TO " << st.to;
  }
  EXPECT_EQ(a->ranges().size(), 3u);
  EXPECT_TRUE(b->ranges().empty());
  for (const ShadowBuffer* x : {a, b}) {
    EXPECT_EQ(x->segments(), 6u);
    EXPECT_EQ(x->ranges_dropped(), 3u);
    EXPECT_EQ(x->violations(), 2u);  // counted past the cap too (the last one was dropped)
    EXPECT_EQ(x->overlaps(), 2u);    // TO 5 over [0, 10), TO 8 over [0, 15)
    EXPECT_EQ(x->placing_streams(), (std::vector<std::uint32_t>{4, 2, 7, 9}));
    EXPECT_EQ(x->extents(), a->extents());
  }
}

TEST_F(Shadow, AViolatingSegmentIsRecordedButPlacesNothing) {
  PlacedRange r = range(0, 10);
  r.violation = true;
  const PlaceResult res = mem.place(*buf, r, pattern(10));
  EXPECT_EQ(res.new_bytes, 0u);
  EXPECT_TRUE(buf->extents().empty());
  EXPECT_EQ(buf->bytes_placed(), 0u);
  ASSERT_EQ(buf->ranges().size(), 1u);
  EXPECT_TRUE(buf->ranges()[0].violation);
  std::vector<bool> known;
  buf->read(0, 10, &known);
  EXPECT_EQ(known, std::vector<bool>(10, false));
}

TEST_F(Shadow, AnEmptyRangeIsIgnored) {
  EXPECT_EQ(mem.place(*buf, range(10, 10), {}).new_bytes, 0u);
  EXPECT_EQ(mem.place(*buf, range(10, 5), pattern(3)).new_bytes, 0u);
  EXPECT_TRUE(buf->ranges().empty());
  EXPECT_TRUE(buf->extents().empty());
}

TEST(ShadowBuffer, ContainsAtTheEdges) {
  ShadowBuffer b;
  EXPECT_TRUE(b.contains(0, kTop));  // no bounds known: anything goes
  b.base = 100;
  EXPECT_TRUE(b.contains(0, kTop));  // a base alone is not a bound
  b.length = 50;
  EXPECT_TRUE(b.contains(100, 50));
  EXPECT_TRUE(b.contains(149, 1));
  EXPECT_TRUE(b.contains(150, 0));
  EXPECT_TRUE(b.contains(100, 0));
  EXPECT_FALSE(b.contains(100, 51));
  EXPECT_FALSE(b.contains(99, 1));
  EXPECT_FALSE(b.contains(99, 0));
  EXPECT_FALSE(b.contains(150, 1));
  EXPECT_FALSE(b.contains(151, 0));
  EXPECT_FALSE(b.contains(120, kTop));  // no overflow in to + len
  // A region reaching the top of the TO space.
  b.base = kTop - 9;
  b.length = 10;
  EXPECT_TRUE(b.contains(kTop - 9, 10));
  EXPECT_TRUE(b.contains(kTop, 1));
  EXPECT_FALSE(b.contains(kTop, 2));
}

TEST(ShadowMemoryTest, GetOrCreateHonoursItsMaximum) {
  ShadowMemory mem;
  ShadowBuffer* a = mem.get_or_create(key(1), 2);
  ShadowBuffer* b = mem.get_or_create(key(2), 2);
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(mem.get_or_create(key(3), 2), nullptr);
  EXPECT_EQ(mem.get_or_create(key(1), 2), a);  // an existing one is always found
  EXPECT_EQ(a->key.stag, 1u);
  EXPECT_EQ(mem.find(key(2)), b);
  EXPECT_EQ(mem.find(key(3)), nullptr);
  EXPECT_EQ(mem.buffers().size(), 2u);
}

// The GUI keeps copies of the model while the analysis goes on: a copy's content is its own.
TEST(ShadowMemoryTest, ACopyKeepsItsContentWhenTheOriginalIsPlacedAgain) {
  ShadowMemory mem;
  ShadowBuffer* b = mem.get_or_create(key(1), 4);
  const Bytes first = pattern(3 * 4096, 1);
  mem.place(*b, range(0, first.size()), first);
  const ShadowMemory copy = mem;
  const Bytes second = pattern(3 * 4096, 9);
  const PlaceResult r = mem.place(*b, range(0, second.size()), second);
  EXPECT_EQ(r.reused_octets, 3 * 4096u);
  EXPECT_EQ(b->read(0, second.size()), second);
  const ShadowBuffer* c = copy.find(key(1));
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->read(0, first.size()), first);
  EXPECT_EQ(c->bytes_retained(), 3 * 4096u);
  EXPECT_EQ(copy.bytes_retained(), 3 * 4096u);
}

// A model moved or assigned (hosts hand it on) keeps its buffers, their content and the room
// left under the retention cap; new pages still come from its arena.
TEST(ShadowMemoryTest, MovedAndAssignedMemoriesKeepTheirContent) {
  ShadowMemory mem;
  mem.set_retention_cap(4 * 4096);
  ShadowBuffer* b = mem.get_or_create(key(1), 4);
  const Bytes a = pattern(2 * 4096, 3);
  mem.place(*b, range(0, a.size()), a);
  ShadowMemory moved(std::move(mem));
  ShadowMemory assigned;
  assigned = std::move(moved);
  ShadowMemory copied;
  copied = assigned;
  for (ShadowMemory* m : {&assigned, &copied}) {
    ShadowBuffer* got = m->find(key(1));
    ASSERT_NE(got, nullptr);
    EXPECT_EQ(got->read(0, a.size()), a);
    // Two more pages fit under the cap, a third does not.
    const Bytes more = pattern(3 * 4096, 5);
    const PlaceResult r = m->place(*got, range(1u << 20, (1u << 20) + more.size()), more);
    EXPECT_TRUE(r.content_dropped);
    EXPECT_EQ(got->bytes_retained(), 4 * 4096u);
    EXPECT_EQ(got->read(1u << 20, 2 * 4096), Bytes(more.begin(), more.begin() + 2 * 4096));
  }
  // A buffer made after the copy (its pages from the copy's own arena).
  ShadowBuffer* fresh = copied.get_or_create(key(2), 4);
  ASSERT_NE(fresh, nullptr);
  EXPECT_TRUE(copied.place(*fresh, range(0, 10), pattern(10)).content_dropped);  // cap reached
}

TEST_F(Shadow, PlacementJustBelowTheTopOfTheToSpace) {
  const Bytes a = pattern(8);
  put(kTop - 15, a);  // [2^64 - 16, 2^64 - 8)
  EXPECT_EQ(buf->bytes_placed(), 8u);
  EXPECT_EQ(buf->extents(), (Extents{{kTop - 15, kTop - 7}}));
  EXPECT_EQ(buf->read(kTop - 15, 8), a);
  EXPECT_TRUE(all_known(kTop - 15, 8));
  // A read running past 2^64 stops there: what lies beyond stays unknown.
  std::vector<bool> known;
  buf->read(kTop - 15, 32, &known);
  EXPECT_EQ(std::count(known.begin(), known.end(), true), 8);
}

// Known issue: a tagged segment ending exactly at TO 2^64 loses its last octet. PlacedRange
// and the extents use an exclusive end in 64 bits, which cannot say 2^64, so the analyzer
// clamps the end to 2^64 - 1 (analysis/analyzer.cpp, tagged placement): the octet at TO
// 2^64 - 1 is neither counted as placed nor retained. Fixing it changes what `end` means for
// every reader of extents() and ranges() (GUI region views, reports), not only shadow.{h,cpp}.
// This test pins today's behaviour; when it fails, the issue is fixed: assert 8 octets below.
TEST_F(Shadow, SegmentEndingAtTwoToTheSixtyFour_KnownIssue) {
  const Bytes a = pattern(8);
  PlacedRange r = range(kTop - 7, kTop);  // what the analyzer passes for TO 2^64 - 8, 8 octets
  const PlaceResult res = mem.place(*buf, r, a);
  EXPECT_EQ(res.new_bytes, 7u);        // should be 8
  EXPECT_EQ(buf->bytes_placed(), 7u);  // should be 8
  EXPECT_EQ(buf->max_end(), kTop);     // should be 2^64
  std::vector<bool> known;
  const Bytes got = buf->read(kTop - 7, 8, &known);
  EXPECT_EQ(known, (std::vector<bool>{true, true, true, true, true, true, true, false}));
  EXPECT_EQ(Bytes(got.begin(), got.begin() + 7), Bytes(a.begin(), a.begin() + 7));
  EXPECT_EQ(got[7], 0);  // should be a[7]
}

// The page store compares and copies a word, a 64-octet block, a page at a time: its counts and
// content must be exactly what an octet-by-octet model of the sink's memory gives, for
// placements at any alignment over pages whole, partly placed and new, with content partly equal
// to what is there (a changed octet every few, runs of equal ones).
// A page filled by in-order segments is one run of placed octets; a placement apart from the
// run turns it into a bitmap page. Either way read() knows exactly the placed octets.
TEST_F(Shadow, OneRunAndBitmapPagesKnowTheirPlacedOctets) {
  const Bytes a = pattern(1000, 1), b = pattern(1000, 2), c = pattern(100, 3), d = pattern(96, 4);
  put(4096 + 100, a);   // run [100, 1100)
  put(4096 + 1100, b);  // touches it: run [100, 2100)
  EXPECT_TRUE(all_known(4096 + 100, 2000));
  EXPECT_FALSE(all_known(4096 + 99, 1));
  EXPECT_FALSE(all_known(4096 + 2100, 1));
  put(4096 + 3000, c);  // apart: the page now has a bitmap
  EXPECT_TRUE(all_known(4096 + 100, 2000));
  EXPECT_TRUE(all_known(4096 + 3000, 100));
  EXPECT_FALSE(all_known(4096 + 2100, 900));
  EXPECT_FALSE(all_known(4096 + 3100, 1));
  // Changed octets over both: the run's and the bitmap's.
  const Bytes again = pattern(96, 9);
  EXPECT_EQ(put(4096 + 2050, again).reused_octets, 50u);  // 2050..2100 placed, 2100.. not
  put(4096, d);                                           // [0, 96): still short of the run
  EXPECT_FALSE(all_known(4096 + 96, 4));
  Bytes back = buf->read(4096, 96);
  EXPECT_EQ(back, d);
}

// Places random content over kSpan octets at kBase, pages whole, partly placed and new, and
// checks every placement's changed octets and the final content against an octet-by-octet
// model of the sink's memory.
void match_octet_model(ShadowMemory& mem, ShadowBuffer& buf) {
  constexpr std::uint64_t kSpan = 5 * 4096 + 123;  // spans pages, starts mid-page
  constexpr std::uint64_t kBase = 4096 * 7 + 1000;
  std::vector<int> model(kSpan, -1);  // -1: never placed
  std::uint64_t seed = 12345;
  auto next = [&] {
    seed = seed * 6364136223846793005ull + 1442695040888963407ull;
    return seed >> 33;
  };
  std::uint64_t total_changed = 0;
  for (int round = 0; round < 400; ++round) {
    const std::uint64_t off = next() % kSpan;
    const std::uint64_t len =
        1 + next() % std::min<std::uint64_t>(kSpan - off, round % 3 ? 300 : 9000);
    Bytes content(len);
    const unsigned every = 1 + next() % 97;  // 1: every octet may change
    for (std::uint64_t i = 0; i < len; ++i) {
      const int had = model[off + i];
      content[i] = had >= 0 && (i % every) != 0 ? static_cast<std::uint8_t>(had)
                                                : static_cast<std::uint8_t>(next());
    }
    std::uint64_t expect = 0;
    for (std::uint64_t i = 0; i < len; ++i) {
      if (model[off + i] >= 0 && model[off + i] != content[i]) ++expect;
      model[off + i] = content[i];
    }
    const PlaceResult r = mem.place(buf, range(kBase + off, kBase + off + len), content);
    ASSERT_EQ(r.reused_octets, expect) << "round " << round << " at " << off << " len " << len;
    ASSERT_EQ(r.reused, expect > 0);
    total_changed += expect;
  }
  EXPECT_GT(total_changed, 0u);
  EXPECT_EQ(buf.reused_octets(), total_changed);
  std::vector<bool> known;
  const Bytes got = buf.read(kBase, kSpan, &known);
  const Bytes got_alone = buf.read(kBase, kSpan);
  for (std::uint64_t i = 0; i < kSpan; ++i) {
    ASSERT_EQ(known[i], model[i] >= 0) << i;
    ASSERT_EQ(got[i], model[i] >= 0 ? model[i] : 0) << i;
    ASSERT_EQ(got_alone[i], got[i]) << i;
  }
}

TEST_F(Shadow, ChangedOctetsAndContentMatchAnOctetByOctetModel) {
  match_octet_model(mem, *buf);
}

// Page memory that is never zero where nothing was written: a new page is written only where
// placed, so octets never placed read as 0 (and count as unknown) because read() masks them,
// whatever the memory under them held.
class DirtyPages final : public std::pmr::memory_resource {
  void* do_allocate(std::size_t bytes, std::size_t alignment) override {
    void* p = std::pmr::new_delete_resource()->allocate(bytes, alignment);
    std::memset(p, 0xA5, bytes);
    return p;
  }
  void do_deallocate(void* p, std::size_t bytes, std::size_t alignment) override {
    std::pmr::new_delete_resource()->deallocate(p, bytes, alignment);
  }
  bool do_is_equal(const std::pmr::memory_resource& o) const noexcept override {
    return this == &o;
  }
};

struct ShadowOverDirtyPages : ShadowInFlight {
  DirtyPages pages;  // outlives dirty_mem's buffers, as adopt() asks
  ShadowMemory dirty_mem;
  void SetUp() override {
    ShadowBuffer b(&pages);
    b.key = key(0x200);
    ASSERT_TRUE(dirty_mem.adopt(std::move(b)));
    buf = dirty_mem.find(key(0x200));
    ASSERT_NE(buf, nullptr);
  }
  PlaceResult put_dirty(std::uint64_t to, const Bytes& content,
                        const PlacementWriter& w = PlacementWriter{}) {
    PlacedRange r = range(to, to + content.size());
    r.stream = w.stream;
    r.direction = w.direction;
    r.message = w.message;
    return dirty_mem.place(*buf, r, content, &writers);
  }
};

TEST_F(ShadowOverDirtyPages, OctetsNeverPlacedReadAsZeroAndUnknown) {
  const Bytes run = pattern(1000, 1), apart = pattern(100, 2), whole = pattern(4096, 3);
  put_dirty(4096 + 100, run);     // page 1: one run [100, 1100)
  put_dirty(2 * 4096 + 10, run);  // page 2: a run, then a bitmap
  put_dirty(2 * 4096 + 3000, apart);
  put_dirty(3 * 4096, whole);                                                 // page 3: whole
  dirty_mem.place(*buf, range(4 * 4096 + 5, 4 * 4096 + 50), pattern(20, 4));  // content short
  Bytes want(5 * 4096, 0);
  std::vector<bool> want_known(5 * 4096, false);
  const auto expect = [&](std::uint64_t to, const Bytes& b) {
    std::copy(b.begin(), b.end(), want.begin() + static_cast<std::ptrdiff_t>(to));
    std::fill_n(want_known.begin() + static_cast<std::ptrdiff_t>(to), b.size(), true);
  };
  expect(4096 + 100, run);
  expect(2 * 4096 + 10, run);
  expect(2 * 4096 + 3000, apart);
  expect(3 * 4096, whole);
  expect(4 * 4096 + 5, pattern(20, 4));
  std::vector<bool> known;
  EXPECT_EQ(buf->read(0, 5 * 4096, &known), want);
  EXPECT_EQ(known, want_known);
  EXPECT_EQ(buf->read(0, 5 * 4096), want);
  // Reads starting and ending inside a page, across runs and gaps.
  for (const std::uint64_t to : {4096u + 50, 2 * 4096u + 1000, 3 * 4096u - 7, 4 * 4096u + 1}) {
    const Bytes got = buf->read(to, 3000, &known);
    EXPECT_EQ(got, Bytes(want.begin() + static_cast<std::ptrdiff_t>(to),
                         want.begin() + static_cast<std::ptrdiff_t>(to + 3000)))
        << to;
    EXPECT_EQ(known, std::vector<bool>(want_known.begin() + static_cast<std::ptrdiff_t>(to),
                                       want_known.begin() + static_cast<std::ptrdiff_t>(to + 3000)))
        << to;
  }
}

TEST_F(ShadowOverDirtyPages, ChangedOctetsAndContentMatchAnOctetByOctetModel) {
  match_octet_model(dirty_mem, *buf);
}

// Compare and replace over a message in flight counts only octets it placed: the octets around
// them, never placed, are neither conflict nor reuse whatever the page memory held.
TEST_F(ShadowOverDirtyPages, ConflictAndReuseCountOnlyPlacedOctets) {
  writers.flying = {a, b};
  put_dirty(100, Bytes(50, 0xA5), a);  // the same value as the memory under the page
  put_dirty(300, Bytes(50, 0x11), a);
  const PlaceResult r = put_dirty(90, Bytes(280, 0xBB), b);
  EXPECT_TRUE(r.conflict);
  EXPECT_EQ(r.conflict_octets, 100u);
  EXPECT_EQ(r.conflict_writer, a);
  EXPECT_FALSE(r.reused);
  EXPECT_EQ(r.new_bytes, 180u);
  EXPECT_EQ(buf->read(90, 280), Bytes(280, 0xBB));
  // Delivered, the same octets again are reuse, counted over what was placed.
  writers.deliver(a);
  writers.deliver(b);
  const PlaceResult again = put_dirty(0, Bytes(400, 0xCC));
  EXPECT_FALSE(again.conflict);
  EXPECT_EQ(again.reused_octets, 280u);
  EXPECT_EQ(again.new_bytes, 120u);
  std::vector<bool> known;
  EXPECT_EQ(buf->read(0, 500, &known), [] {
    Bytes b(500, 0);
    std::fill_n(b.begin(), 400, 0xCC);
    return b;
  }());
  EXPECT_EQ(std::count(known.begin(), known.end(), true), 400);
}

}  // namespace
}  // namespace ddpscope
