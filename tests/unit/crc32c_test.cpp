// SPDX-License-Identifier: GPL-2.0-or-later
#include "ddpscope/common/crc32c.h"

#include <gtest/gtest.h>

#include <string_view>

namespace ddpscope {
namespace {

ByteView view(std::string_view s) {
  return {reinterpret_cast<const std::uint8_t*>(s.data()), s.size()};
}

// RFC 3720 §B.4 test patterns (the iSCSI CRC32C vectors).
TEST(Crc32c, CheckValue) {
  EXPECT_EQ(crc32c(view("123456789")), 0xE3069283u);
}

TEST(Crc32c, Iscsi32ZeroOctets) {
  Bytes zeros(32, 0x00);
  EXPECT_EQ(crc32c(zeros), 0x8A9136AAu);
}

TEST(Crc32c, Iscsi32OnesOctets) {
  Bytes ones(32, 0xFF);
  EXPECT_EQ(crc32c(ones), 0x62A8AB43u);
}

TEST(Crc32c, Iscsi32IncrementingOctets) {
  Bytes inc(32);
  for (std::size_t i = 0; i < inc.size(); ++i)
    inc[i] = static_cast<std::uint8_t>(i);
  EXPECT_EQ(crc32c(inc), 0x46DD794Eu);
}

TEST(Crc32c, Iscsi32DecrementingOctets) {
  Bytes dec(32);
  for (std::size_t i = 0; i < dec.size(); ++i)
    dec[i] = static_cast<std::uint8_t>(31 - i);
  EXPECT_EQ(crc32c(dec), 0x113FDB5Cu);
}

TEST(Crc32c, IncrementalEqualsOneShot) {
  Bytes data(1000);
  for (std::size_t i = 0; i < data.size(); ++i)
    data[i] = static_cast<std::uint8_t>(i * 7);
  Crc32c c;
  c.update(ByteView(data).subspan(0, 3));
  c.update(ByteView(data).subspan(3, 500));
  c.update(ByteView(data).subspan(503));
  EXPECT_EQ(c.value(), crc32c(data));
}

TEST(Crc32c, WireOrderIsLeastSignificantOctetFirst) {
  std::uint8_t out[4];
  mpa_crc_to_wire(0xE3069283u, out);
  EXPECT_EQ(out[0], 0x83);
  EXPECT_EQ(out[3], 0xE3);
  EXPECT_EQ(mpa_crc_from_wire(out), 0xE3069283u);
}

}  // namespace
}  // namespace ddpscope
