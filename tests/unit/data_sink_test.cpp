// SPDX-License-Identifier: GPL-2.0-or-later
// The Data Sink model's per-message reporting contract: an STag-level violation repeated by the
// later segments of one tagged message is marked `repeated` (a host reports it once per
// message); a per-segment one (bounds) is not.
#include "ddpscope/rdmap/data_sink.h"

#include <gtest/gtest.h>

#include <map>
#include <utility>
#include <vector>

#include "ddpscope/rdmap/rules.h"

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

// A peer's Terminate that no rule broken in the capture predicts: the region states the capture
// cannot show, each with the rule's own violation (and so its Terminate) for the quoted segment.
TEST(HiddenRegionViolations, ReadRequestSourceUsesRdmapRemoteProtectionCodes) {
  wire::DdpHeader q;
  q.control.tagged = false;
  q.qn = 1;
  const wire::ReadRequest rr{0x10, 0, 4000, 0x12d96b00, 0x1000};
  const auto vs = hidden_region_violations(q, rr, ddp::StreamFacts{3, {}});
  std::vector<std::pair<FindingId, std::uint8_t>> got;
  for (const auto& v : vs) {
    ASSERT_TRUE(v.terminate);
    EXPECT_EQ(v.terminate->layer, 0);  // RDMAP
    EXPECT_EQ(v.terminate->etype, 1);  // Remote Protection
    EXPECT_EQ(v.quote, TerminateQuote::ddp_and_rdmap);
    got.emplace_back(v.id, v.terminate->code);
  }
  const std::vector<std::pair<FindingId, std::uint8_t>> want{
      {FindingId::ddp_tagged_invalid_stag, 0x00},       // not registered
      {FindingId::rdmap_stag_invalidated_use, 0x00},    // invalidated
      {FindingId::ddp_tagged_stag_wrong_stream, 0x03},  // another protection domain
      {FindingId::ddp_tagged_stag_wrong_stream, 0x03},  // another stream
      {FindingId::ddp_tagged_access_rights, 0x02},      // no remote read right
      {FindingId::ddp_tagged_bounds, 0x01},             // smaller than the request
  };
  EXPECT_EQ(got, want);
}

TEST(HiddenRegionViolations, TaggedSegmentUsesDdpTaggedCodesAndUntaggedSendHasNone) {
  const auto vs =
      hidden_region_violations(wire::tagged_header(wire::Opcode::rdma_write, 0x77, 0x2000, true),
                               std::nullopt, ddp::StreamFacts{0, 5});
  ASSERT_EQ(vs.size(), 6u);
  for (const auto& v : vs) {
    ASSERT_TRUE(v.terminate);
    EXPECT_EQ(v.terminate->layer, 1);  // DDP
    EXPECT_EQ(v.terminate->etype, 1);  // Tagged Buffer
  }
  EXPECT_EQ(vs.front().id, FindingId::ddp_tagged_invalid_stag);
  EXPECT_EQ(vs.back().id, FindingId::ddp_tagged_bounds);
  wire::DdpHeader send;
  send.qn = 0;
  EXPECT_TRUE(hidden_region_violations(send, std::nullopt, ddp::StreamFacts{}).empty());
}

}  // namespace
}  // namespace ddpscope::rdmap
