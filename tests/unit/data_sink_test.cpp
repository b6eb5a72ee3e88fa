// SPDX-License-Identifier: GPL-2.0-or-later
// The Data Sink model's per-message reporting contract: an STag-level violation repeated by the
// later segments of one tagged message is marked `repeated` (a host reports it once per
// message); a per-segment one (bounds) is not.
#include "ddpscope/rdmap/data_sink.h"

#include <gtest/gtest.h>

#include <map>

namespace ddpscope::rdmap {
namespace {

// A sink whose regions are exactly `regions`: every other STag is invalid.
class Regions final : public SinkMemory {
 public:
  std::map<std::uint32_t, ddp::RegionFacts> regions;
  const ddp::RegionFacts* region(std::uint32_t stag) override {
    auto it = regions.find(stag);
    return it == regions.end() ? nullptr : &it->second;
  }
  bool regions_known() const override { return true; }
  ddp::UntaggedBuffer send_buffer() override { return {}; }
};

SegmentStep write_segment(DataSink& sink, Regions& memory, std::uint32_t stag, std::uint64_t to,
                          std::size_t len, bool last) {
  const Bytes payload(len, 0xAB);
  const wire::DdpSegment seg{wire::tagged_header(wire::Opcode::rdma_write, stag, to, last),
                             payload};
  return sink.receive(seg, memory);
}

TEST(DataSink, StagLevelViolationIsRepeatedWithinItsMessage) {
  DataSink sink;
  Regions memory;
  const auto a = write_segment(sink, memory, 0x99, 0, 100, false);
  const auto b = write_segment(sink, memory, 0x99, 100, 100, false);
  const auto c = write_segment(sink, memory, 0x99, 200, 100, true);
  for (const auto* s : {&a, &b, &c}) {
    ASSERT_TRUE(s->violation);
    EXPECT_EQ(s->violation->id, FindingId::ddp_tagged_invalid_stag);
  }
  EXPECT_FALSE(a.repeated);
  EXPECT_TRUE(b.repeated);
  EXPECT_TRUE(c.repeated);
  // The next message to the same STag is reported again.
  const auto d = write_segment(sink, memory, 0x99, 0, 10, true);
  ASSERT_TRUE(d.violation);
  EXPECT_TRUE(d.starts_message);
  EXPECT_FALSE(d.repeated);
}

TEST(DataSink, BoundsViolationIsPerSegment) {
  DataSink sink;
  Regions memory;
  ddp::RegionFacts r;
  r.base = 0x1000;
  r.length = 64;
  memory.regions[0x99] = r;
  const auto a = write_segment(sink, memory, 0x99, 0x1030, 32, false);  // 16 octets past the end
  const auto b = write_segment(sink, memory, 0x99, 0x1050, 32, true);
  ASSERT_TRUE(a.violation);
  ASSERT_TRUE(b.violation);
  EXPECT_EQ(a.violation->id, FindingId::ddp_tagged_bounds);
  EXPECT_EQ(b.violation->id, FindingId::ddp_tagged_bounds);
  EXPECT_FALSE(a.repeated);
  EXPECT_FALSE(b.repeated);
}

TEST(DataSink, AnotherViolationBetweenEndsTheRepeat) {
  DataSink sink;
  Regions memory;
  const auto a = write_segment(sink, memory, 0x99, 0, 100, false);
  const auto b = write_segment(sink, memory, 0x99, 150, 100, false);  // TO does not continue
  const auto c = write_segment(sink, memory, 0x99, 250, 100, true);
  ASSERT_TRUE(a.violation && b.violation && c.violation);
  EXPECT_EQ(b.violation->id, FindingId::ddp_tagged_bounds);
  EXPECT_EQ(c.violation->id, FindingId::ddp_tagged_invalid_stag);
  EXPECT_FALSE(c.repeated);  // the message's last violation was another one
}

}  // namespace
}  // namespace ddpscope::rdmap
