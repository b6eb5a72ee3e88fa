// SPDX-License-Identifier: GPL-2.0-or-later
#include "ddpscope/ulp/rping.h"

#include <gtest/gtest.h>

#include "ddpscope/wire/rdmap.h"

namespace ddpscope::ulp {
namespace {

constexpr std::uint8_t op(wire::Opcode o) {
  return static_cast<std::uint8_t>(o);
}

TEST(RpingInfo, EncodesRpingsStructInNetworkOrder) {
  const Bytes b = encode_rping_info({0x0102030405060708, 0x090a0b0c, 0x0d0e0f10});
  const Bytes want = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};
  EXPECT_EQ(b, want);
  Bytes appended = {0xff};
  ByteWriter w(appended);
  encode_rping_info({1, 2, 3}, w);
  EXPECT_EQ(appended.size(), 1 + RpingInfo::kSize);
}

TEST(RpingInfo, RoundTrips) {
  for (const RpingInfo& x :
       {RpingInfo{}, RpingInfo{0x55d0c0a01000, 0xc01, 4000}, RpingInfo{~0ull, ~0u, ~0u}}) {
    const auto back = decode_rping_info(encode_rping_info(x));
    ASSERT_TRUE(back.has_value());
    EXPECT_EQ(*back, x);
  }
}

TEST(RpingInfo, DecodesOnlyExactlySixteenOctets) {
  Bytes b = encode_rping_info({0x55d0c0a01000, 0xc01, 4000});
  b.push_back(0);
  EXPECT_FALSE(decode_rping_info(b).has_value());
  b.resize(15);
  EXPECT_FALSE(decode_rping_info(b).has_value());
  EXPECT_FALSE(decode_rping_info({}).has_value());
}

TEST(RpingPlausibility, AddressEdges) {
  EXPECT_FALSE(rping_info_plausible({0, 1, 64}));
  EXPECT_TRUE(rping_info_plausible({1, 1, 64}));
  // The buffer must end at or below 2^47.
  EXPECT_TRUE(rping_info_plausible({kRpingUserSpaceEnd - 64, 1, 64}));
  EXPECT_FALSE(rping_info_plausible({kRpingUserSpaceEnd - 63, 1, 64}));
  EXPECT_FALSE(rping_info_plausible({kRpingUserSpaceEnd, 1, 1}));
  // Seen in a real siw NVMe-oF capture: a completion that reads as a kernel-looking address.
  EXPECT_FALSE(rping_info_plausible({0x7f00000f20080000, 0x2000000, 1 << 24}));
}

TEST(RpingPlausibility, SizeEdges) {
  EXPECT_FALSE(rping_info_plausible({0x1000, 1, 0}));
  EXPECT_TRUE(rping_info_plausible({0x1000, 1, 1}));
  EXPECT_TRUE(rping_info_plausible({0x1000, 1, kRpingMaxSize}));
  EXPECT_FALSE(rping_info_plausible({0x1000, 1, kRpingMaxSize + 1}));
}

TEST(RpingPlausibility, NvmeOfPortOnEitherEnd) {
  EXPECT_TRUE(rping_ports_plausible(40000, 7174));
  EXPECT_TRUE(rping_ports_plausible(0, 0));
  EXPECT_FALSE(rping_ports_plausible(kNvmeOfPort, 7174));
  EXPECT_FALSE(rping_ports_plausible(40000, kNvmeOfPort));
  EXPECT_TRUE(rping_ports_plausible(kNvmeOfPort - 1, kNvmeOfPort + 1));
}

TEST(RpingAdvertisementRule, EverySendOpcodeAndNothingElse) {
  const Bytes b = encode_rping_info({0x55d0c0a01000, 0xc01, 4000});
  for (std::uint8_t o = 0; o < wire::kOpcodeCount; ++o) {
    const bool send = o == op(wire::Opcode::send) || o == op(wire::Opcode::send_se) ||
                      o == op(wire::Opcode::send_invalidate) ||
                      o == op(wire::Opcode::send_se_invalidate);
    EXPECT_EQ(rping_advertisement(o, 40000, 7174, b).has_value(), send) << int(o);
  }
}

TEST(RpingAdvertisementRule, EachRuleRejectsOnItsOwn) {
  const auto send = op(wire::Opcode::send);
  const RpingInfo good{0x55d0c0a01000, 0xc01, 4000};
  ASSERT_EQ(rping_advertisement(send, 40000, 7174, encode_rping_info(good)), good);
  EXPECT_FALSE(rping_advertisement(send, 40000, kNvmeOfPort, encode_rping_info(good)));
  EXPECT_FALSE(rping_advertisement(send, 40000, 7174, encode_rping_info({0, 0xc01, 4000})));
  EXPECT_FALSE(rping_advertisement(send, 40000, 7174, encode_rping_info({good.buf, 0xc01, 0})));
  Bytes longer = encode_rping_info(good);
  longer.push_back(0);
  EXPECT_FALSE(rping_advertisement(send, 40000, 7174, longer));
}

}  // namespace
}  // namespace ddpscope::ulp
