// SPDX-License-Identifier: GPL-2.0-or-later
// A sharded Analyzer (analyzer.h: Analyzer(options, shards)) fed from one thread must build the
// model one engine builds: the merge on its own, without the host's threads (cli.shards runs the
// threads). Every sample capture (classic pcap) at 1..7 shards, model field by field.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "ddpscope/analysis/analyzer.h"

namespace ddpscope {
namespace {

// The records of a classic pcap file (either byte order, micro- or nanosecond); empty when the
// file is not one.
struct Record {
  std::int64_t ts_ns;
  std::uint32_t wire_length;
  Bytes data;
};
bool read_pcap(const std::filesystem::path& path, std::uint32_t& link_type,
               std::vector<Record>& out) {
  std::ifstream in(path, std::ios::binary);
  const std::vector<std::uint8_t> f((std::istreambuf_iterator<char>(in)),
                                    std::istreambuf_iterator<char>());
  if (f.size() < 24) return false;
  auto u32 = [&f](std::size_t at, bool swap) {
    std::uint32_t v;
    std::memcpy(&v, f.data() + at, 4);
    return swap ? __builtin_bswap32(v) : v;
  };
  const std::uint32_t magic = u32(0, false);
  bool swap = false, nano = false;
  if (magic == 0xa1b2c3d4 || magic == 0xa1b23c4d) {
    nano = magic == 0xa1b23c4d;
  } else if (magic == 0xd4c3b2a1 || magic == 0x4d3cb2a1) {
    swap = true;
    nano = magic == 0x4d3cb2a1;
  } else {
    return false;
  }
  link_type = u32(20, swap) & 0xFFFF;
  for (std::size_t at = 24; at + 16 <= f.size();) {
    const std::uint32_t caplen = u32(at + 8, swap);
    if (at + 16 + caplen > f.size()) break;
    const std::int64_t ts = std::int64_t{u32(at, swap)} * 1000000000 +
                            std::int64_t{u32(at + 4, swap)} * (nano ? 1 : 1000);
    out.push_back({ts, u32(at + 12, swap),
                   Bytes(f.begin() + static_cast<std::ptrdiff_t>(at + 16),
                         f.begin() + static_cast<std::ptrdiff_t>(at + 16 + caplen))});
    at += 16 + caplen;
  }
  return true;
}

void analyse(Analyzer& a, std::uint32_t link_type, const std::vector<Record>& records) {
  std::uint64_t n = 0;
  for (const Record& r : records)
    a.feed_frame(++n, r.ts_ns, link_type, r.data, r.wire_length);
  a.finish();
}

void expect_same(const Model& x, const Model& y, const std::string& what) {
  SCOPED_TRACE(what);
  EXPECT_EQ(x.frames, y.frames);
  EXPECT_EQ(x.bytes, y.bytes);
  EXPECT_EQ(x.frames_not_tcp, y.frames_not_tcp);
  EXPECT_EQ(x.frames_sctp, y.frames_sctp);
  EXPECT_EQ(x.frames_malformed, y.frames_malformed);
  EXPECT_EQ(x.message_count, y.message_count);
  EXPECT_EQ(x.finding_counts, y.finding_counts);
  EXPECT_EQ(x.severity_counts, y.severity_counts);
  EXPECT_EQ(x.findings_dropped, y.findings_dropped);
  ASSERT_EQ(x.streams.size(), y.streams.size());
  for (std::size_t i = 0; i < x.streams.size(); ++i) {
    const StreamModel& s = x.streams[i];
    const StreamModel& t = y.streams[i];
    EXPECT_EQ(s.id, t.id);
    EXPECT_EQ(s.client, t.client);
    EXPECT_EQ(s.server, t.server);
    EXPECT_EQ(s.state, t.state);
    EXPECT_EQ(s.first_frame, t.first_frame);
    EXPECT_EQ(s.last_frame, t.last_frame);
    EXPECT_EQ(s.ulp_detail, t.ulp_detail);
    for (int d = 0; d < 2; ++d) {
      EXPECT_EQ(s.dirs[d].tcp_bytes, t.dirs[d].tcp_bytes);
      EXPECT_EQ(s.dirs[d].fpdus, t.dirs[d].fpdus);
      EXPECT_EQ(s.dirs[d].bytes_placed, t.dirs[d].bytes_placed);
      EXPECT_EQ(s.dirs[d].bytes_lost, t.dirs[d].bytes_lost);
    }
  }
  ASSERT_EQ(x.findings.size(), y.findings.size());
  for (std::size_t i = 0; i < x.findings.size(); ++i) {
    const Finding& f = x.findings[i];
    const Finding& g = y.findings[i];
    EXPECT_EQ(f.id, g.id) << "finding " << i;
    EXPECT_EQ(f.frame, g.frame) << "finding " << i;
    EXPECT_EQ(f.frames, g.frames) << "finding " << i;
    EXPECT_EQ(f.stream, g.stream) << "finding " << i;
    EXPECT_EQ(f.direction, g.direction) << "finding " << i;
    EXPECT_EQ(f.severity, g.severity) << "finding " << i;
    EXPECT_EQ(f.message, g.message) << "finding " << i;
  }
  ASSERT_EQ(x.memory.buffers().size(), y.memory.buffers().size());
  EXPECT_EQ(x.memory.bytes_retained(), y.memory.bytes_retained());
  for (auto i = x.memory.buffers().begin(), j = y.memory.buffers().begin();
       i != x.memory.buffers().end(); ++i, ++j) {
    EXPECT_EQ(i->first, j->first);
    EXPECT_EQ(i->second.stream, j->second.stream);
    EXPECT_EQ(i->second.extents(), j->second.extents());
    EXPECT_EQ(i->second.bytes_retained(), j->second.bytes_retained());
    EXPECT_EQ(i->second.overwrites(), j->second.overwrites());
    EXPECT_EQ(i->second.conflicts(), j->second.conflicts());
    ASSERT_EQ(i->second.ranges().size(), j->second.ranges().size());
    for (std::size_t k = 0; k < i->second.ranges().size(); ++k)
      EXPECT_EQ(i->second.ranges()[k].stream, j->second.ranges()[k].stream);
  }
}

TEST(Shards, EverySampleMergesIntoTheOneEnginesModelOrSaysItCannot) {
  std::vector<std::filesystem::path> files;
  for (const auto& e :
       std::filesystem::recursive_directory_iterator(DDPSCOPE_SOURCE_DIR "/samples"))
    if (e.path().extension() == ".pcap") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  ASSERT_GT(files.size(), 50u);
  std::size_t exact = 0, merged = 0;
  AnalyzerOptions opt;
  opt.message_records = false;  // what a sharded analysis needs
  for (const auto& path : files) {
    std::uint32_t link_type = 0;
    std::vector<Record> records;
    if (!read_pcap(path, link_type, records)) continue;
    Analyzer one(opt);
    analyse(one, link_type, records);
    for (unsigned shards = 1; shards <= 7; ++shards) {
      Analyzer a(opt, shards);
      EXPECT_EQ(a.shards(), shards);
      analyse(a, link_type, records);
      ++merged;
      if (!a.exact()) continue;  // the host analyses it again with one engine
      ++exact;
      expect_same(one.model(), a.model(),
                  path.filename().string() + " at " + std::to_string(shards) + " shards");
    }
  }
  // Only captures whose streams share an STag across shards may fall back.
  EXPECT_GT(exact, merged * 9 / 10);
}

TEST(Shards, NotShardedWhereOneEngineIsNeeded) {
  AnalyzerOptions opt;  // message records on
  Analyzer a(opt, 4);
  EXPECT_EQ(a.shards(), 1u);
  EXPECT_FALSE(a.unsharded_reason().empty());
  opt.message_records = false;
  opt.timing = TimingOptions{};
  Analyzer b(opt, 4);
  EXPECT_EQ(b.shards(), 1u);
}

TEST(Shards, BothDirectionsOfAConnectionGoToOneShard) {
  const net::Endpoint c{*net::Address::parse("10.0.0.1"), 40001};
  const net::Endpoint s{*net::Address::parse("10.0.0.2"), 4791};
  for (unsigned n = 2; n <= 64; ++n)
    EXPECT_EQ(Analyzer::shard_of(c, s, n), Analyzer::shard_of(s, c, n));
}

}  // namespace
}  // namespace ddpscope
