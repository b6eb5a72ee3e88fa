// SPDX-License-Identifier: GPL-2.0-or-later
#include "ddpscope/analysis/regions_file.h"

#include <gtest/gtest.h>

namespace ddpscope {
namespace {

TEST(RegionsFile, ArrayOrObjectNumbersOrStrings) {
  for (const char* text :
       {R"([{"stag": "0x3c03", "base": "0x7f0000300000", "length": 4096, "sink": "10.0.0.2"},
            {"stag": 7, "base": "4096", "length": "16", "origin": "mine"}])",
        R"({"regions": [{"stag": "0x3c03", "base": "0x7f0000300000", "length": 4096,
            "sink": "10.0.0.2"}, {"stag": 7, "base": "4096", "length": "16", "origin": "mine"}]})"}) {
    std::vector<RegionSpec> r;
    std::string err;
    ASSERT_TRUE(parse_regions(text, r, err)) << err;
    ASSERT_EQ(r.size(), 2u);
    EXPECT_EQ(r[0].stag, 0x3c03u);
    EXPECT_EQ(r[0].base, 0x7f0000300000u);
    EXPECT_EQ(r[0].owner->to_string(), "10.0.0.2");
    EXPECT_EQ(r[0].origin, "regions file");
    EXPECT_EQ(r[1].length, 16u);
    EXPECT_FALSE(r[1].owner);
    EXPECT_EQ(r[1].origin, "mine");
  }
}

TEST(RegionsFile, ErrorsNameTheEntryAndLeaveOutputUnchanged) {
  std::vector<RegionSpec> r(1);
  std::string err;
  EXPECT_FALSE(
      parse_regions(R"([{"stag": 1, "base": 0, "length": 1}, {"base": 1, "length": 2}])", r, err));
  EXPECT_NE(err.find("region 1"), std::string::npos) << err;
  EXPECT_NE(err.find("stag"), std::string::npos) << err;
  EXPECT_EQ(r.size(), 1u);
  EXPECT_FALSE(parse_regions("not json", r, err));
  EXPECT_FALSE(parse_regions(R"([{"stag": "0x100000000", "base": 0, "length": 1}])", r, err));
  EXPECT_FALSE(
      parse_regions(R"([{"stag": 1, "base": 0, "length": 1, "sink": "nowhere"}])", r, err));
  EXPECT_FALSE(load_regions_file("/nonexistent/regions.json", r, err));
}

}  // namespace
}  // namespace ddpscope
