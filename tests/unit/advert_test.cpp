// SPDX-License-Identifier: GPL-2.0-or-later
#include "ddpscope/ulp/advert.h"

#include <gtest/gtest.h>

#include "ddpscope/wire/mpa.h"
#include "ddpscope/wire/rdmap.h"

namespace ddpscope {
namespace {

Bytes rping_info(std::uint64_t buf, std::uint32_t rkey, std::uint32_t size) {
  Bytes b;
  ByteWriter w(b);
  w.be64(buf);
  w.be32(rkey);
  w.be32(size);
  return b;
}

AdvertContext ctx(std::uint16_t port) {
  AdvertContext c;
  c.opcode = static_cast<std::uint8_t>(wire::Opcode::send);
  c.sender = {*net::Address::parse("10.0.0.1"), 40000};
  c.receiver = {*net::Address::parse("10.0.0.2"), port};
  return c;
}

TEST(UlpMessageName, CommandsCompletionsAndAdvertisements) {
  UlpEvents ev;
  EXPECT_EQ(ulp_message_name("iser", ev, nullptr), "");
  UlpCommand cmd;
  cmd.name = "SCSI READ(10) ITT 0x1";
  ev.commands.push_back(cmd);
  UlpCompletion done;
  done.id = 7;
  ev.completions.push_back(done);
  const auto known = [](std::uint64_t id) { return id == 7 ? std::string("SCSI X") : ""; };
  EXPECT_EQ(ulp_message_name("iser", ev, known), "SCSI READ(10) ITT 0x1; completion of SCSI X");
  ev.commands.clear();
  ev.completions[0].id = 8;
  EXPECT_EQ(ulp_message_name("iser", ev, known), "completion of iser id 8");
  ev.completions.clear();
  AdvertisedRegion r;
  r.stag = 0xab;
  r.length = 64;
  ev.regions.push_back(r);
  EXPECT_EQ(ulp_message_name("rping", ev, nullptr),
            "rping advertisement STag 0x000000ab, 64 octets");
  ev.regions.clear();
  cmd.name = std::string(300, 'x');
  ev.commands.push_back(cmd);
  const std::string cut = ulp_message_name("iser", ev, nullptr);
  EXPECT_EQ(cut.size(), kMaxMessageName);
  EXPECT_EQ(cut.substr(cut.size() - 3), "\xE2\x80\xA6");
}

TEST(RpingAdvertisement, UserSpaceBufferIsARegionOfTheSender) {
  UlpEvents ev;
  auto& out = ev.regions;
  RpingAdvertisementDecoder().decode(ctx(7174), nullptr, rping_info(0x55d0c0a01000, 0xc01, 4000),
                                     ev);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].stag, 0xc01u);
  EXPECT_EQ(out[0].base, 0x55d0c0a01000u);
  EXPECT_EQ(out[0].length, 4000u);
  EXPECT_EQ(out[0].owner.to_string(), "10.0.0.1");
}

// Seen in a real siw NVMe-oF capture: 16-octet completions that parse as nonsense regions.
TEST(RpingAdvertisement, NonCanonicalAddressesAndNvmeOfPortAreNotAdvertisements) {
  UlpEvents ev;
  auto& out = ev.regions;
  RpingAdvertisementDecoder().decode(ctx(7174), nullptr,
                                     rping_info(0x7f00000f20080000, 0x2000000, 1 << 24), ev);
  RpingAdvertisementDecoder().decode(ctx(4420), nullptr, rping_info(0x55d0c0a01000, 0xc01, 4000),
                                     ev);
  RpingAdvertisementDecoder().decode(ctx(7174), nullptr, rping_info(0x55d0c0a01000, 0xc01, 0), ev);
  EXPECT_TRUE(out.empty());
}

TEST(RpingAdvertisement, OnlySendsOfSixteenOctets) {
  UlpEvents ev;
  auto& out = ev.regions;
  Bytes longer = rping_info(0x55d0c0a01000, 0xc01, 4000);
  longer.push_back(0);
  RpingAdvertisementDecoder().decode(ctx(7174), nullptr, longer, ev);
  AdvertContext write = ctx(7174);
  write.opcode = static_cast<std::uint8_t>(wire::Opcode::rdma_write);
  RpingAdvertisementDecoder().decode(write, nullptr, rping_info(0x55d0c0a01000, 0xc01, 4000), ev);
  EXPECT_TRUE(out.empty());
}

}  // namespace
}  // namespace ddpscope
