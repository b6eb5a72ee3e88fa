// SPDX-License-Identifier: GPL-2.0-or-later
#include "ddpscope/analysis/regions_file.h"

#include <gtest/gtest.h>

#include "ddpscope/analysis/analyzer.h"
#include "ddpscope/ddp/rules.h"
#include "hostile/hostile_builders.h"

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

TEST(RegionsFile, RegistrationFactsAndProtectionDomains) {
  RegionsFile f;
  std::string err;
  ASSERT_TRUE(parse_regions_file(
      R"({"regions": [{"stag": 1, "base": 0, "length": 8, "sink": "10.0.0.2", "pd": "0x2",
                       "access": ["remote_read", "local_write"], "valid": false,
                       "invalidatable": false},
                      {"stag": 2, "base": 0, "length": 8, "access": []},
                      {"stag": 3, "base": 0, "length": 8}],
          "protection_domains": [{"endpoint": "127.0.0.1:7174", "pd": 1},
                                 {"endpoint": "[2001:db8::1]:4791", "pd": "7"},
                                 {"endpoint": "10.0.0.2", "pd": 4294967295}]})",
      f, err))
      << err;
  ASSERT_EQ(f.regions.size(), 3u);
  EXPECT_EQ(f.regions[0].pd, 2u);
  EXPECT_EQ(f.regions[0].access, ddp::access::remote_read | ddp::access::local_write);
  EXPECT_FALSE(f.regions[0].valid);
  EXPECT_FALSE(f.regions[0].invalidatable);
  EXPECT_EQ(f.regions[1].access, 0u);  // no rights at all: known, and every check fails
  // Left out: unknown (pd, access) or the default (valid, invalidatable).
  EXPECT_FALSE(f.regions[2].pd);
  EXPECT_FALSE(f.regions[2].access);
  EXPECT_TRUE(f.regions[2].valid);
  EXPECT_TRUE(f.regions[2].invalidatable);
  ASSERT_EQ(f.protection_domains.size(), 3u);
  EXPECT_EQ(f.protection_domains[0].endpoint.to_string(), "127.0.0.1:7174");
  EXPECT_FALSE(f.protection_domains[0].any_port);
  EXPECT_EQ(f.protection_domains[0].pd, 1u);
  EXPECT_EQ(f.protection_domains[1].endpoint.to_string(), "[2001:db8::1]:4791");
  EXPECT_EQ(f.protection_domains[1].pd, 7u);
  EXPECT_EQ(f.protection_domains[2].endpoint.addr.to_string(), "10.0.0.2");
  EXPECT_TRUE(f.protection_domains[2].any_port);
  EXPECT_EQ(f.protection_domains[2].pd, 0xFFFFFFFFu);
}

TEST(RegionsFile, BadRegistrationFactsAreErrorsNamingTheEntry) {
  const struct {
    const char* text;
    const char* names;  // what the error must mention
  } cases[] = {
      {R"([{"stag": 1, "base": 0, "length": 1}, {"stag": 2, "base": 0, "length": 1,
            "access": ["remote_write", "remote_exec"]}])",
       "region 1: unknown access right \"remote_exec\""},
      {R"([{"stag": 1, "base": 0, "length": 1, "access": "rw"}])", "region 0: \"access\""},
      {R"([{"stag": 1, "base": 0, "length": 1, "access": [4]}])", "region 0: unknown access"},
      {R"([{"stag": 1, "base": 0, "length": 1, "pd": "0x100000000"}])", "region 0: invalid \"pd\""},
      {R"([{"stag": 1, "base": 0, "length": 1, "pd": -1}])", "region 0: invalid \"pd\""},
      {R"([{"stag": 1, "base": 0, "length": 1, "pd": "one"}])", "region 0: invalid \"pd\""},
      {R"([{"stag": 1, "base": 0, "length": 1, "valid": "no"}])", "region 0: \"valid\""},
      {R"([{"stag": 1, "base": 0, "length": 1, "invalidatable": 0}])",
       "region 0: \"invalidatable\""},
      {R"({"regions": [], "protection_domains": [{"endpoint": "127.0.0.1:1", "pd": 1},
                                                  {"endpoint": "127.0.0.1:0", "pd": 1}]})",
       "protection domain 1: missing or invalid \"endpoint\""},
      {R"({"regions": [], "protection_domains": [{"endpoint": "127.0.0.1:70000", "pd": 1}]})",
       "protection domain 0: missing or invalid \"endpoint\""},
      {R"({"regions": [], "protection_domains": [{"endpoint": "host:80", "pd": 1}]})",
       "protection domain 0: missing or invalid \"endpoint\""},
      {R"({"regions": [], "protection_domains": [{"endpoint": "127.0.0.1:80"}]})",
       "protection domain 0: missing or invalid \"pd\""},
      {R"({"regions": [], "protection_domains": [7]})", "protection domain 0: not an object"},
      {R"({"regions": [], "protection_domains": {"endpoint": "127.0.0.1:80", "pd": 1}})",
       "\"protection_domains\" must be an array"},
      {R"({"protection_domains": []})", "needs a \"regions\" array"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.text);
    RegionsFile f;
    f.regions.resize(1);
    std::string err;
    EXPECT_FALSE(parse_regions_file(c.text, f, err));
    EXPECT_NE(err.find(c.names), std::string::npos) << err;
    EXPECT_EQ(f.regions.size(), 1u);  // unchanged
    EXPECT_TRUE(f.protection_domains.empty());
  }
}

// The stream's PD from "protection_domains" reaches the Data Sink of the named endpoint (an
// exact IP:PORT, or every port of a host): a region of another PD is then not associated with
// the stream (RFC 5041 §7.2), and only then.
TEST(RegionsFile, ProtectionDomainsReachTheDataSinks) {
  const auto findings = [](const char* pds) {
    RegionsFile f;
    std::string err;
    const std::string text = std::string(R"({"regions": [{"stag": "0x10", "base": 0, "length": 64,
                                 "sink": "10.0.0.254", "pd": 2}], "protection_domains": )") +
                             pds + "}";
    EXPECT_TRUE(parse_regions_file(text, f, err)) << err;
    AnalyzerOptions o;
    o.protection_domains = f.protection_domains;
    Analyzer an(o);
    an.add_regions(f.regions);
    hostile::Wire w(an);
    w.handshake();
    w.fpdu(0, wire::tagged_header(wire::Opcode::rdma_write, 0x10, 0, true), Bytes(8, 1));
    an.finish();
    std::vector<Finding> out;
    for (const auto& x : an.model().findings)
      if (x.terminate) out.push_back(x);
    return out;
  };
  for (const char* same :
       {R"([{"endpoint": "10.0.0.254:4791", "pd": 1}])", R"([{"endpoint": "10.0.0.254", "pd": 1}])",
        R"([{"endpoint": "10.0.0.254", "pd": 2},
                               {"endpoint": "10.0.0.254:4791", "pd": 1}])"}) {
    SCOPED_TRACE(same);
    const auto f = findings(same);
    ASSERT_EQ(f.size(), 1u);
    EXPECT_EQ(f[0].id, FindingId::ddp_tagged_stag_wrong_stream);
    EXPECT_EQ(f[0].terminate, (TerminateError{1, 1, 2}));
  }
  // Another port, another host, the region's own PD, or none given: nothing to refuse.
  for (const char* other :
       {R"([{"endpoint": "10.0.0.254:4792", "pd": 1}])", R"([{"endpoint": "10.0.0.1", "pd": 1}])",
        R"([{"endpoint": "10.0.0.254", "pd": 2}])", "[]"}) {
    SCOPED_TRACE(other);
    EXPECT_TRUE(findings(other).empty());
  }
}

// Issue 16: a regions file is checked as strictly as a synth scenario; each error names the
// entry and the key, and nothing of the file is taken.
TEST(RegionsFile, UnknownKeysAreErrorsNamingEntryAndKey) {
  std::vector<RegionSpec> r;
  std::string err;
  EXPECT_FALSE(parse_regions(
      R"([{"stag": 1, "base": 0, "length": 8}, {"stag": 2, "base": 0, "length": 8, "sinkk": "10.0.0.2"}])",
      r, err));
  EXPECT_NE(err.find("region 1"), std::string::npos) << err;
  EXPECT_NE(err.find("unknown key \"sinkk\""), std::string::npos) << err;
  EXPECT_TRUE(r.empty());
  RegionsFile f;
  EXPECT_FALSE(parse_regions_file(R"({"regions": [], "protection_domain": []})", f, err));
  EXPECT_NE(err.find("\"protection_domain\""), std::string::npos) << err;
  EXPECT_FALSE(parse_regions_file(
      R"({"regions": [], "protection_domains": [{"endpoint": "10.0.0.2", "pd": 1, "pdd": 2}]})", f,
      err));
  EXPECT_NE(err.find("protection domain 0"), std::string::npos) << err;
  EXPECT_NE(err.find("\"pdd\""), std::string::npos) << err;
}

TEST(RegionsFile, LengthsOutsideTheAddressSpaceAreErrors) {
  std::vector<RegionSpec> r;
  std::string err;
  EXPECT_FALSE(parse_regions(R"([{"stag": 1, "base": 0, "length": -1}])", r, err));
  EXPECT_NE(err.find("\"length\""), std::string::npos) << err;
  // 2^64: not a 64-bit length.
  EXPECT_FALSE(
      parse_regions(R"([{"stag": 1, "base": 0, "length": 18446744073709551616}])", r, err));
  EXPECT_FALSE(
      parse_regions(R"([{"stag": 1, "base": 0, "length": "0x10000000000000000"}])", r, err));
  // base + length past 2^64 (the last octet would be at 2^64).
  EXPECT_FALSE(
      parse_regions(R"([{"stag": 1, "base": "0xfffffffffffffff0", "length": 17}])", r, err));
  EXPECT_NE(err.find("region 0"), std::string::npos) << err;
  EXPECT_NE(err.find("past 2^64"), std::string::npos) << err;
  EXPECT_TRUE(r.empty());
  // Ending exactly at 2^64, the whole space, and an empty region at the top are regions.
  ASSERT_TRUE(parse_regions(R"([{"stag": 1, "base": "0xfffffffffffffff0", "length": 16},
                        {"stag": 2, "base": 0, "length": "0xffffffffffffffff"},
                        {"stag": 3, "base": "0xffffffffffffffff", "length": 0}])",
                            r, err))
      << err;
  EXPECT_EQ(r.size(), 3u);
}

TEST(RegionsFile, DuplicateStagForTheSameSinkIsAnError) {
  std::vector<RegionSpec> r;
  std::string err;
  EXPECT_FALSE(parse_regions(R"([{"stag": "0x10", "base": 0, "length": 8, "sink": "10.0.0.2"},
                                 {"stag": 16, "base": 64, "length": 8, "sink": "10.0.0.2"}])",
                             r, err));
  EXPECT_NE(err.find("region 1"), std::string::npos) << err;
  EXPECT_NE(err.find("region 0"), std::string::npos) << err;
  // A region without a sink stands for every host: it clashes with one that names a sink.
  EXPECT_FALSE(parse_regions(R"([{"stag": 16, "base": 0, "length": 8},
                                 {"stag": 16, "base": 0, "length": 8, "sink": "10.0.0.1"}])",
                             r, err));
  EXPECT_TRUE(r.empty());
  // The same STag at two different sinks is two registrations.
  ASSERT_TRUE(parse_regions(R"([{"stag": 16, "base": 0, "length": 8, "sink": "10.0.0.1"},
                                {"stag": 16, "base": 0, "length": 8, "sink": "10.0.0.2"}])",
                            r, err))
      << err;
  EXPECT_EQ(r.size(), 2u);
}

}  // namespace
}  // namespace ddpscope
