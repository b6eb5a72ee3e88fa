// SPDX-License-Identifier: GPL-2.0-or-later
// Limits by name: the table every host shows (CLI flags, plugin preferences), values with K/M/G.
#include "ddpscope/common/limits.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

namespace ddpscope {
namespace {

TEST(Limits, ValuesTakeBinarySuffixes) {
  EXPECT_EQ(parse_limit_value("0"), 0u);
  EXPECT_EQ(parse_limit_value("123"), 123u);
  EXPECT_EQ(parse_limit_value("64K"), 65536u);
  EXPECT_EQ(parse_limit_value("4M"), 4u << 20);
  EXPECT_EQ(parse_limit_value("4MiB"), 4u << 20);
  EXPECT_EQ(parse_limit_value("2g"), std::size_t{2} << 30);
  EXPECT_EQ(parse_limit_value("1KB"), 1024u);
  for (const char* bad :
       {"", "K", "-1", "1.5M", "4 M", "4T", "4MB2", "0x10", "99999999999999999999", "17179869184G"})
    EXPECT_FALSE(parse_limit_value(bad).has_value()) << bad;
}

TEST(Limits, EveryFieldIsNamedOnceAndRoundTrips) {
  const Limits defaults;
  std::set<std::string_view> names;
  for (const auto& f : limit_fields()) {
    EXPECT_TRUE(names.insert(f.name).second) << f.name;
    EXPECT_FALSE(f.meaning.empty()) << f.name;
    const std::string text = format_limit_value(f, defaults.*(f.member));
    EXPECT_EQ(parse_limit_value(text), defaults.*(f.member)) << f.name << " " << text;
    EXPECT_EQ(find_limit_field(f.name), &f);
  }
  EXPECT_EQ(names.size(), sizeof(Limits) / sizeof(std::size_t));
  EXPECT_EQ(find_limit_field("nope"), nullptr);
}

TEST(Limits, SetByAssignment) {
  Limits l;
  std::string err;
  ASSERT_TRUE(set_limit(l, "max_regions=1K", err)) << err;
  EXPECT_EQ(l.max_regions, 1024u);
  ASSERT_TRUE(set_limit(l, "payload_retention=0", err)) << err;
  EXPECT_EQ(l.payload_retention, 0u);
  const Limits before = l;
  EXPECT_FALSE(set_limit(l, "max_region=5", err));
  EXPECT_NE(err.find("unknown limit 'max_region'"), std::string::npos) << err;
  EXPECT_FALSE(set_limit(l, "max_regions=lots", err));
  EXPECT_NE(err.find("bad value 'lots'"), std::string::npos) << err;
  EXPECT_FALSE(set_limit(l, "max_regions", err));
  EXPECT_NE(err.find("NAME=VALUE"), std::string::npos) << err;
  EXPECT_EQ(l.max_regions, before.max_regions);
}

}  // namespace
}  // namespace ddpscope
