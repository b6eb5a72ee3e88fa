// SPDX-License-Identifier: GPL-2.0-or-later
// The timing model alone (analysis/timing.h): its histogram and the percentiles estimated from
// it, the exact-sample cap, the slowest list, stall attribution and throughput intervals. The
// engine's pairing is tested through the Analyzer in analyzer_test.cpp (AnalyzerTiming).
#include "ddpscope/analysis/timing.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

namespace ddpscope {
namespace {

TEST(LatencyHistogram, BucketsAreQuarterOctaves) {
  EXPECT_EQ(LatencyHistogram::bucket_of(0), 0u);
  EXPECT_EQ(LatencyHistogram::bucket_of(1), 0u);
  // 2^(i/4) rounded up: every power of two starts a bucket.
  for (std::size_t k = 1; k < 63; ++k) {
    const std::uint64_t p = std::uint64_t{1} << k;
    EXPECT_EQ(LatencyHistogram::bucket_of(p), 4 * k) << k;
    EXPECT_EQ(LatencyHistogram::lower(4 * k), p) << k;
    EXPECT_LT(LatencyHistogram::bucket_of(p - 1), 4 * k) << k;
  }
  // 1000 ns: 2^9.97; bucket 39 is [2^9.75, 2^10) = [862, 1024).
  EXPECT_EQ(LatencyHistogram::bucket_of(1000), 39u);
  EXPECT_EQ(LatencyHistogram::lower(39), 862u);
  EXPECT_EQ(LatencyHistogram::bucket_of(UINT64_MAX), LatencyHistogram::kBuckets - 1);
  for (std::size_t i = 1; i < LatencyHistogram::kBuckets; ++i)
    EXPECT_LE(LatencyHistogram::lower(i - 1), LatencyHistogram::lower(i));
}

TEST(LatencyHistogram, EstimatesAreWithinAnEighthOctaveOfTheExactRank) {
  std::mt19937_64 rng(42);
  std::lognormal_distribution<double> d(std::log(50'000.0), 1.0);  // around 50 us
  LatencyHistogram h;
  std::vector<std::uint64_t> v;
  for (int i = 0; i < 20000; ++i) {
    const auto ns = static_cast<std::uint64_t>(d(rng)) + 1;
    h.add(ns);
    v.push_back(ns);
  }
  std::sort(v.begin(), v.end());
  EXPECT_EQ(h.count(), v.size());
  EXPECT_EQ(h.min(), v.front());
  EXPECT_EQ(h.max(), v.back());
  for (double q : {0.01, 0.25, 0.5, 0.9, 0.99, 0.999}) {
    const auto rank = static_cast<std::size_t>(std::ceil(q * static_cast<double>(v.size())));
    const double exact = static_cast<double>(v[rank - 1]);
    const double est = static_cast<double>(h.quantile(q));
    EXPECT_LE(std::abs(std::log2(est / exact)), 0.125 + 1e-9) << q << " " << exact << " " << est;
  }
  EXPECT_EQ(h.quantile(1.0), v.back());
  EXPECT_EQ(h.quantile(0.0), v.front());  // rank 1, kept within [min, max]
}

TEST(LatencyHistogram, EmptyAndMerged) {
  LatencyHistogram a, b;
  EXPECT_EQ(a.quantile(0.5), 0u);
  EXPECT_EQ(a.min(), 0u);
  a.add(100);
  b.add(7);
  b.add(5000);
  a.merge(b);
  EXPECT_EQ(a.count(), 3u);
  EXPECT_EQ(a.min(), 7u);
  EXPECT_EQ(a.max(), 5000u);
}

TEST(Timing, ExactNearestRankUntilTheCapThenEstimated) {
  Timing t(TimingOptions{}, 10);
  for (std::uint64_t i = 1; i <= 10; ++i) {
    t.request(OpKind::atomic, 0, 0);
    t.completion(OpKind::atomic, 0, 0, i, 0, i + 100, static_cast<std::int64_t>(i * 1000));
  }
  const OperationStats& s = t.operations().at({0, OpKind::atomic, 0});
  EXPECT_FALSE(s.estimated);
  EXPECT_EQ(s.quantile(0.5), 5000u);  // rank ceil(5) of 1000..10000
  EXPECT_EQ(s.quantile(0.99), 10000u);
  EXPECT_EQ(s.quantile(0.1), 1000u);
  EXPECT_EQ(t.samples_kept(), 10u);
  // The eleventh cannot be kept: the kind goes over to its histogram, its samples freed.
  t.request(OpKind::atomic, 0, 0);
  t.completion(OpKind::atomic, 0, 0, 11, 0, 111, 11000);
  EXPECT_TRUE(s.estimated);
  EXPECT_TRUE(s.exact.empty());
  EXPECT_EQ(t.samples_kept(), 0u);
  EXPECT_EQ(s.completions(), 11u);
  EXPECT_EQ(s.histogram.min(), 1000u);
  EXPECT_EQ(s.histogram.max(), 11000u);
  const double median = static_cast<double>(s.quantile(0.5));
  EXPECT_LE(std::abs(std::log2(median / 6000.0)), 0.125 + 1e-9) << median;
}

TEST(Timing, SlowestAreKeptWithTheirFramesAndUnansweredCounted) {
  TimingOptions o;
  o.top = 3;
  Timing t(o, 1000);
  const std::uint64_t ns[] = {50, 900, 10, 900, 300, 700};
  for (std::size_t i = 0; i < std::size(ns); ++i) {
    t.request(OpKind::rdma_read, 2, 1);
    t.completion(OpKind::rdma_read, 2, 1, 10 + i, 0, 20 + i, static_cast<std::int64_t>(ns[i]));
  }
  t.request(OpKind::rdma_read, 2, 1);  // never answered
  const OperationStats& s = t.operations().at({2, OpKind::rdma_read, 1});
  ASSERT_EQ(s.slowest.size(), 3u);
  EXPECT_EQ(s.slowest[0].ns, 900u);
  EXPECT_EQ(s.slowest[0].request_frame, 11u);  // the first of two equal ones stays first
  EXPECT_EQ(s.slowest[1].request_frame, 13u);
  EXPECT_EQ(s.slowest[2].ns, 700u);
  EXPECT_EQ(s.slowest[2].completion_frame, 25u);
  EXPECT_EQ(s.requests, 7u);
  EXPECT_EQ(s.unanswered(), 1u);
  // A Read Request counts for its first octet too.
  EXPECT_EQ(t.operations().at({2, OpKind::rdma_read_first, 1}).unanswered(), 7u);
}

TEST(Timing, StallsBetweenRequestAndAnswerAreNamedOnTheOperation) {
  Timing t(TimingOptions{}, 1000);
  t.stall(0, 1, StallKind::retransmission, 3, 1000);  // before the request: not counted
  t.stall(0, 0, StallKind::capture_loss, 6, 2500);
  t.stall(0, 1, StallKind::retransmission, 7, 2600);
  t.stall(1, 0, StallKind::retransmission, 7, 2600);  // another stream
  t.window(0, 1, true, 8, 2700);                      // a zero window: one event...
  t.window(0, 1, true, 9, 2800);                      // ...until it opens again
  t.window(0, 1, false, 10, 2900);
  t.completion(OpKind::rdma_read, 0, 0, 5, 2000, 11, 3000);
  t.stall(0, 1, StallKind::out_of_order, 12, 3100);  // after: not counted
  t.completion(OpKind::rdma_read, 0, 0, 13, 3200, 14, 3300);
  const OperationStats& s = t.operations().at({0, OpKind::rdma_read, 0});
  EXPECT_EQ(s.stalled, 1u);
  EXPECT_EQ(s.stalled_by[static_cast<std::size_t>(StallKind::retransmission)], 1u);
  EXPECT_EQ(s.stalled_by[static_cast<std::size_t>(StallKind::capture_loss)], 1u);
  EXPECT_EQ(s.stalled_by[static_cast<std::size_t>(StallKind::zero_window)], 1u);
  const LatencySample& slow = s.slowest.front();
  EXPECT_EQ(slow.request_frame, 5u);
  EXPECT_EQ(slow.stalls.events[static_cast<std::size_t>(StallKind::retransmission)], 1u);
  EXPECT_EQ(slow.stalls.events[static_cast<std::size_t>(StallKind::zero_window)], 1u);
  EXPECT_FALSE(slow.stalls.incomplete);
  // Named with their frames, oldest first: the capture loss (6), the retransmission (7), the
  // zero window (8).
  ASSERT_EQ(slow.stalls.kept, 3u);
  EXPECT_EQ(slow.stalls.first[0].frame, 6u);
  EXPECT_EQ(slow.stalls.first[0].kind, StallKind::capture_loss);
  EXPECT_EQ(slow.stalls.first[1].frame, 7u);
  EXPECT_EQ(slow.stalls.first[1].kind, StallKind::retransmission);
  EXPECT_EQ(slow.stalls.first[2].frame, 8u);
  EXPECT_FALSE(s.slowest.back().stalls.any());
  EXPECT_EQ(s.slowest.back().stalls.kept, 0u);
  EXPECT_EQ(t.stall_totals(0)[static_cast<std::size_t>(StallKind::retransmission)], 2u);
  EXPECT_EQ(t.stall_totals(0)[static_cast<std::size_t>(StallKind::zero_window)], 1u);
}

TEST(Timing, AStallRingThatOverflowedSaysSo) {
  Timing t(TimingOptions{}, 1000);
  for (std::size_t i = 0; i < TimingOptions::kStallRing + 10; ++i)
    t.stall(0, 0, StallKind::retransmission, i, static_cast<std::int64_t>(100 + i));
  t.completion(OpKind::atomic, 0, 0, 1, 0, 999, 100000);
  const LatencySample& s = t.operations().at({0, OpKind::atomic, 0}).slowest.front();
  EXPECT_EQ(s.stalls.events[0], TimingOptions::kStallRing);
  EXPECT_TRUE(s.stalls.incomplete);
  // The oldest kept are the oldest the ring still held: frames 10..13.
  ASSERT_EQ(s.stalls.kept, StallCounts::kFirst);
  for (std::size_t i = 0; i < StallCounts::kFirst; ++i)
    EXPECT_EQ(s.stalls.first[i].frame, 10 + i);
}

TEST(Timing, StallEventsAreTheRingOldestFirst) {
  Timing t(TimingOptions{}, 1000);
  EXPECT_TRUE(t.stall_events(0).empty());
  t.stall(0, 0, StallKind::crc_drop, 5, 50);
  t.stall(0, 1, StallKind::out_of_order, 6, 60);
  auto e = t.stall_events(0);
  ASSERT_EQ(e.size(), 2u);
  EXPECT_EQ(e[0].frame, 5u);
  EXPECT_EQ(e[0].kind, StallKind::crc_drop);
  EXPECT_EQ(e[1].ns, 60);
  for (std::size_t i = 0; i < TimingOptions::kStallRing; ++i)
    t.stall(0, 0, StallKind::retransmission, 100 + i, static_cast<std::int64_t>(100 + i));
  e = t.stall_events(0);
  ASSERT_EQ(e.size(), TimingOptions::kStallRing);
  EXPECT_EQ(e.front().frame, 100u);  // the two first (frames 5 and 6) left the ring
  EXPECT_EQ(e.back().frame, 100u + TimingOptions::kStallRing - 1);
  EXPECT_TRUE(t.stall_events(7).empty());
}

TEST(Timing, ThroughputIntervalsDoubleToStayBounded) {
  TimingOptions o;
  o.interval_ns = 1000;
  o.max_intervals = 4;
  o.idle_threshold_ns = 2500;
  Timing t(o, 1000);
  t.placed(0, 0, 0x10u, 100, 1, 0);          // origin
  t.placed(0, 0, 0x10u, 10, 2, 1500);        // interval 1
  t.placed(0, 0, std::nullopt, 1, 3, 3999);  // interval 3
  const ThroughputSeries* s = t.series().front();
  EXPECT_EQ(s->interval_ns, 1000u);
  EXPECT_EQ(s->octets, (std::vector<std::uint64_t>{100, 10, 0, 1}));
  t.placed(0, 0, 0x20u, 5, 4, 9000);  // interval 9 at 1000: twice doubled, 2 at 4000
  EXPECT_EQ(s->interval_ns, 4000u);
  EXPECT_EQ(s->octets, (std::vector<std::uint64_t>{111, 0, 5}));
  EXPECT_EQ(s->total, 116u);
  EXPECT_EQ(s->segments, 4u);
  EXPECT_EQ(s->idle_count, 1u);  // 3999 -> 9000; 1500 -> 3999 is under the threshold
  ASSERT_EQ(s->longest_idle.size(), 1u);
  EXPECT_EQ(s->longest_idle[0].ns, 5001u);
  EXPECT_EQ(s->longest_idle[0].frame_before, 3u);
  EXPECT_EQ(s->longest_idle[0].frame_after, 4u);
  ASSERT_EQ(t.stags().size(), 2u);
  EXPECT_EQ(t.stags()[0].octets, 110u);
  EXPECT_EQ(t.stags()[0].last_frame, 2u);
}

TEST(Timing, SwappedSidesFlipDirections) {
  Timing t(TimingOptions{}, 1000);
  t.request(OpKind::rdma_read, 0, 0);
  t.placed(0, 1, 0x10u, 10, 1, 0);
  t.swap_sides(0);
  EXPECT_EQ(t.operations().count({0, OpKind::rdma_read, 1}), 1u);
  EXPECT_EQ(t.operations().count({0, OpKind::rdma_read, 0}), 0u);
  EXPECT_EQ(t.series().front()->direction, 0);
  EXPECT_EQ(t.stags().front().direction, 0);
}

}  // namespace
}  // namespace ddpscope
