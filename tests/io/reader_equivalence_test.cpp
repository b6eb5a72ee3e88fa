// SPDX-License-Identifier: GPL-2.0-or-later
// Issue 43: the mapped reader (capture/src/mapped_reader.h) against libpcap. Every sample
// capture, as it is and rewritten as pcapng (editcap), byte-swapped, with nanosecond magic and
// gzip-compressed, yields the same records from both (octets, time, lengths, link type), and
// cut short at every few octets both stop after the same record with the same words. Beyond
// libpcap: pcapng with interfaces of several link types and time resolutions, sections of both
// byte orders, every packet block type, blocks it does not know; gzip through a sliding buffer.
#include <gtest/gtest.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "ddpscope/analysis/analyzer.h"
#include "ddpscope/capture/feed.h"
#include "ddpscope/capture/file_reader.h"
#include "ddpscope/net/packet.h"

namespace ddpscope::capture {
namespace {

namespace fs = std::filesystem;

Bytes read_bytes(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return Bytes(std::istreambuf_iterator<char>(in), {});
}

fs::path temp_path(const std::string& suffix) {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  const fs::path dir = fs::path(DDPSCOPE_IO_TMP_DIR) / "tmp";
  fs::create_directories(dir);
  std::string name = std::string(info->test_suite_name()) + "." + info->name() + suffix;
  std::replace(name.begin(), name.end(), '/', '_');
  return dir / name;
}

fs::path write_file(const fs::path& p, ByteView data) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(data.data()), static_cast<std::streamsize>(data.size()));
  return p;
}

Bytes gzip(ByteView data, int level = 6) {
  z_stream s{};
  EXPECT_EQ(deflateInit2(&s, level, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY), Z_OK);
  Bytes out(deflateBound(&s, static_cast<uLong>(data.size())) + 64);
  s.next_in = const_cast<Bytef*>(data.data());
  s.avail_in = static_cast<uInt>(data.size());
  s.next_out = out.data();
  s.avail_out = static_cast<uInt>(out.size());
  EXPECT_EQ(deflate(&s, Z_FINISH), Z_STREAM_END);
  out.resize(s.total_out);
  deflateEnd(&s);
  return out;
}

struct Rec {
  std::uint64_t number;
  std::int64_t ts_ns;
  std::uint32_t link_type;
  std::uint32_t wire_length;
  Bytes data;
  bool operator==(const Rec&) const = default;
};

struct Read {
  bool opened = false;
  std::string open_error;
  std::string backend;
  std::vector<Rec> records;
  std::string error;
  std::uint32_t link_type = 0;
  std::uint32_t snaplen = 0;
};

Read read_all(const fs::path& p, ReaderKind kind) {
  Read r;
  auto reader = CaptureReader::open(p.string(), r.open_error, kind);
  if (!reader) return r;
  r.opened = true;
  r.backend = reader->backend();
  r.link_type = reader->link_type();
  r.snaplen = reader->snaplen();
  Frame f;
  while (reader->next(f))
    r.records.push_back(
        {f.number, f.ts_ns, f.link_type, f.wire_length, Bytes(f.data.begin(), f.data.end())});
  r.error = reader->error();
  EXPECT_FALSE(reader->next(f));  // stays at the end
  EXPECT_EQ(reader->bytes_read(), reader->file_size());
  return r;
}

// Both readers on `p`: the same records and the same end. `mapped_must_read`: the mapped
// reader reads the file itself (no fallback to libpcap).
void expect_same(const fs::path& p, bool mapped_must_read = true) {
  SCOPED_TRACE(p.string());
  const Read lib = read_all(p, ReaderKind::libpcap);
  const Read mapped = read_all(p, mapped_must_read ? ReaderKind::mapped : ReaderKind::automatic);
  ASSERT_EQ(mapped.opened, lib.opened) << mapped.open_error << " / " << lib.open_error;
  if (!lib.opened) return;
  if (mapped_must_read) {
    EXPECT_EQ(mapped.backend, "mapped");
  }
  EXPECT_EQ(lib.backend, "libpcap");
  EXPECT_EQ(mapped.link_type, lib.link_type);
  EXPECT_EQ(mapped.snaplen, lib.snaplen);
  ASSERT_EQ(mapped.records.size(), lib.records.size()) << mapped.error << " / " << lib.error;
  for (std::size_t i = 0; i < lib.records.size(); ++i)
    ASSERT_EQ(mapped.records[i], lib.records[i]) << "record " << i + 1;
  EXPECT_EQ(mapped.error, lib.error);
}

std::vector<fs::path> sample_captures() {
  std::vector<fs::path> out;
  for (const fs::path& dir :
       {fs::path(DDPSCOPE_SOURCE_DIR) / "samples", fs::path(DDPSCOPE_SHARED_DIR) / "captures"}) {
    if (!fs::exists(dir)) continue;
    for (const auto& e : fs::recursive_directory_iterator(dir)) {
      const std::string name = e.path().filename().string();
      if (e.is_regular_file() && (name.ends_with(".pcap") || name.ends_with(".pcapng") ||
                                  name.ends_with(".pcap.gz") || name.ends_with(".pcapng.gz")))
        out.push_back(e.path());
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

// A classic pcap file (this host's byte order) in the other byte order, or with nanosecond
// magic (fractions times 1000).
Bytes pcap_variant(const Bytes& in, bool swap, bool nano) {
  Bytes b = in;
  auto at32 = [&](std::size_t off) {
    std::uint32_t v;
    std::memcpy(&v, b.data() + off, 4);
    return v;
  };
  auto put32 = [&](std::size_t off, std::uint32_t v) {
    if (swap) v = __builtin_bswap32(v);
    std::memcpy(b.data() + off, &v, 4);
  };
  auto put16 = [&](std::size_t off) {
    std::uint16_t v;
    std::memcpy(&v, b.data() + off, 2);
    if (swap) v = __builtin_bswap16(v);
    std::memcpy(b.data() + off, &v, 2);
  };
  if (at32(0) != 0xA1B2C3D4) return {};  // only micro, this byte order, as the samples are
  put32(0, nano ? 0xA1B23C4D : 0xA1B2C3D4);
  put16(4);
  put16(6);
  for (std::size_t off : {8, 12, 16, 20})
    put32(off, at32(off));
  std::size_t pos = 24;
  while (pos + 16 <= b.size()) {
    const std::uint32_t caplen = at32(pos + 8);
    const std::uint32_t frac = at32(pos + 4);
    put32(pos, at32(pos));
    put32(pos + 4, nano ? frac * 1000 : frac);
    put32(pos + 8, caplen);
    put32(pos + 12, at32(pos + 12));
    pos += 16 + caplen;
  }
  return b;
}

bool editcap_pcapng(const fs::path& in, const fs::path& out) {
  if (!fs::exists("/usr/bin/editcap")) return false;
  const std::string cmd = "/usr/bin/editcap -F pcapng '" + in.string() + "' '" + out.string() + "'";
  return std::system(cmd.c_str()) == 0;
}

TEST(ReaderEquivalence, EverySample) {
  const auto samples = sample_captures();
  ASSERT_GT(samples.size(), 100u);
  for (const auto& p : samples)
    expect_same(p);
}

TEST(ReaderEquivalence, EverySampleAsPcapngSwappedNanoAndGzip) {
  if (!fs::exists("/usr/bin/editcap")) GTEST_SKIP() << "editcap is not installed";
  std::size_t n = 0;
  for (const auto& p : sample_captures()) {
    const Bytes original = read_bytes(p);
    const fs::path ng = temp_path("." + std::to_string(n) + ".pcapng");
    ASSERT_TRUE(editcap_pcapng(p, ng)) << p;
    expect_same(ng);
    expect_same(
        write_file(temp_path("." + std::to_string(n) + ".pcapng.gz"), gzip(read_bytes(ng))));
    expect_same(write_file(temp_path("." + std::to_string(n) + ".pcap.gz"), gzip(original)));
    for (bool swap : {false, true})
      for (bool nano : {false, true}) {
        const Bytes v = pcap_variant(original, swap, nano);
        if (v.empty()) continue;
        expect_same(write_file(temp_path(".variant.pcap"), v));
      }
    ++n;
  }
}

// Every prefix at a step of 7 octets (and the last 40 one by one) of a sample, plain, as
// pcapng and compressed: both readers stop after the same record with the same words.
TEST(ReaderEquivalence, TruncatedAtEverySeventhOctet) {
  const fs::path sample = fs::path(DDPSCOPE_SOURCE_DIR) / "samples/synthetic/fault-msn.pcap";
  std::vector<std::pair<std::string, Bytes>> forms{{".pcap", read_bytes(sample)}};
  const fs::path ng = temp_path(".full.pcapng");
  if (editcap_pcapng(sample, ng)) forms.emplace_back(".pcapng", read_bytes(ng));
  for (const auto& [suffix, file] : forms) {
    std::vector<std::size_t> cuts;
    for (std::size_t n = 0; n < file.size(); n += 7)
      cuts.push_back(n);
    for (std::size_t n = file.size() > 40 ? file.size() - 40 : 0; n < file.size(); ++n)
      cuts.push_back(n);
    for (std::size_t n : cuts) {
      SCOPED_TRACE(suffix + " cut at " + std::to_string(n));
      const ByteView prefix = ByteView(file).first(n);
      expect_same(write_file(temp_path(suffix), prefix), /*mapped_must_read=*/false);
      const Read mapped = read_all(temp_path(suffix), ReaderKind::automatic);
      if (n >= 28 && mapped.opened) {
        EXPECT_EQ(mapped.backend, "mapped");
      }
    }
    // Compressed whole, the compressed file cut: the octets inflated before the cut are the file.
    const Bytes gz = gzip(file);
    for (std::size_t n = 0; n < gz.size(); n += 13) {
      SCOPED_TRACE(suffix + ".gz cut at " + std::to_string(n));
      const fs::path p = write_file(temp_path(suffix + ".gz"), ByteView(gz).first(n));
      const Read lib = read_all(p, ReaderKind::libpcap);
      const Read mapped = read_all(p, ReaderKind::automatic);
      ASSERT_EQ(mapped.opened, lib.opened);
      EXPECT_EQ(mapped.records.size(), lib.records.size());
      for (std::size_t i = 0; i < std::min(mapped.records.size(), lib.records.size()); ++i)
        ASSERT_EQ(mapped.records[i], lib.records[i]);
      EXPECT_EQ(mapped.error.empty(), lib.error.empty()) << mapped.error << " / " << lib.error;
    }
  }
}

// ---- pcapng built here ---------------------------------------------------------------------

struct Ng {
  Bytes b;
  bool swap = false;
  void u32(std::uint32_t v) {
    if (swap) v = __builtin_bswap32(v);
    b.insert(b.end(), reinterpret_cast<std::uint8_t*>(&v), reinterpret_cast<std::uint8_t*>(&v) + 4);
  }
  void u16(std::uint16_t v) {
    if (swap) v = __builtin_bswap16(v);
    b.insert(b.end(), reinterpret_cast<std::uint8_t*>(&v), reinterpret_cast<std::uint8_t*>(&v) + 2);
  }
  void pad() {
    while (b.size() % 4)
      b.push_back(0);
  }
  // A block: type, length, body written by `body`, length.
  template <typename F>
  void block(std::uint32_t type, F body) {
    const std::size_t start = b.size();
    u32(type);
    u32(0);
    body();
    pad();
    const auto len = static_cast<std::uint32_t>(b.size() - start + 4);
    u32(len);
    std::uint32_t v = swap ? __builtin_bswap32(len) : len;
    std::memcpy(b.data() + start + 4, &v, 4);
  }
  void shb() {
    block(0x0A0D0D0A, [&] {
      u32(0x1A2B3C4D);
      u16(1);
      u16(0);
      u32(0xFFFFFFFF);
      u32(0xFFFFFFFF);
    });
  }
  // tsresol: the option's octet, or -1 for none (microseconds); tsoffset in seconds.
  void idb(std::uint16_t link, std::uint32_t snaplen, int tsresol = -1,
           std::uint64_t tsoffset = 0) {
    block(1, [&] {
      u16(link);
      u16(0);
      u32(snaplen);
      u16(2);  // if_name
      u16(3);
      b.insert(b.end(), {'e', 't', 'h'});
      pad();
      if (tsresol >= 0) {
        u16(9);
        u16(1);
        b.push_back(static_cast<std::uint8_t>(tsresol));
        pad();
      }
      if (tsoffset) {
        u16(14);
        u16(8);
        std::uint64_t v = swap ? __builtin_bswap64(tsoffset) : tsoffset;
        b.insert(b.end(), reinterpret_cast<std::uint8_t*>(&v),
                 reinterpret_cast<std::uint8_t*>(&v) + 8);
      }
      u16(0);
      u16(0);
    });
  }
  void epb(std::uint32_t iface, std::uint64_t ts, ByteView data, std::uint32_t wire = 0) {
    block(6, [&] {
      u32(iface);
      u32(static_cast<std::uint32_t>(ts >> 32));
      u32(static_cast<std::uint32_t>(ts));
      u32(static_cast<std::uint32_t>(data.size()));
      u32(wire ? wire : static_cast<std::uint32_t>(data.size()));
      b.insert(b.end(), data.begin(), data.end());
      pad();
      u16(1);  // opt_comment
      u16(2);
      b.insert(b.end(), {'h', 'i'});
      pad();
      u16(0);
      u16(0);
    });
  }
  void pb(std::uint16_t iface, std::uint64_t ts, ByteView data) {
    block(2, [&] {
      u16(iface);
      u16(0);
      u32(static_cast<std::uint32_t>(ts >> 32));
      u32(static_cast<std::uint32_t>(ts));
      u32(static_cast<std::uint32_t>(data.size()));
      u32(static_cast<std::uint32_t>(data.size()));
      b.insert(b.end(), data.begin(), data.end());
    });
  }
  void spb(ByteView data) {
    block(3, [&] {
      u32(static_cast<std::uint32_t>(data.size()));
      b.insert(b.end(), data.begin(), data.end());
    });
  }
  void unknown() {
    block(0x00000BAD, [&] { u32(0x12345678); });
    block(5, [&] { u32(0); });  // an Interface Statistics Block, body cut down
  }
};

Bytes tcp_frame(std::uint16_t port) {
  net::TcpFrameSpec s;
  s.src = {net::Address::v4(0x0A000001), port};
  s.dst = {net::Address::v4(0x0A000002), 4791};
  return net::encode_tcp_frame(s, Bytes(20, 0x5A));
}

// Ethernet (µs), raw IP (ns), Linux cooked (2^-20 s, 10 s offset), Ethernet (ms) in a
// little-endian section, then a big-endian section of its own interfaces; EPB, PB, SPB and
// blocks nobody knows.
Bytes mixed_pcapng(bool second_section_swapped) {
  const Bytes eth = tcp_frame(40001);
  const Bytes raw(eth.begin() + 14, eth.end());
  Bytes sll(16, 0);
  sll[14] = 0x08;  // protocol IPv4
  sll.insert(sll.end(), raw.begin(), raw.end());
  Ng ng;
  ng.shb();
  ng.unknown();
  ng.idb(1, 0);
  ng.idb(101, 65535, 9);
  ng.idb(113, 262144, 0x80 | 20, 10);
  ng.idb(1, 128, 3);
  ng.epb(0, 1'700'000'000'123'456ull, eth);
  ng.epb(1, 1'700'000'001'000'000'007ull, raw);
  ng.unknown();
  ng.epb(2, (std::uint64_t{1'700'000'002} << 20) | (1u << 19), sll);
  ng.pb(3, 1'700'000'003'250ull, eth);
  ng.spb(eth);
  ng.epb(0, 1'700'000'004'000'001ull, ByteView(eth).first(30),
         static_cast<std::uint32_t>(eth.size()));
  ng.swap = second_section_swapped;
  ng.shb();
  ng.idb(101, 0, 6);
  ng.epb(0, 1'700'000'005'000'002ull, raw);
  return ng.b;
}

TEST(MappedReader, PcapngWithSeveralInterfacesLinkTypesAndResolutions) {
  const Bytes eth = tcp_frame(40001);
  const Bytes raw(eth.begin() + 14, eth.end());
  for (bool swapped : {false, true}) {
    SCOPED_TRACE(swapped ? "second section big-endian" : "one byte order");
    const fs::path p =
        write_file(temp_path(swapped ? ".be.pcapng" : ".pcapng"), mixed_pcapng(swapped));
    for (const fs::path& file : {p, write_file(temp_path(".pcapng.gz"), gzip(read_bytes(p)))}) {
      const Read r = read_all(file, ReaderKind::mapped);
      ASSERT_TRUE(r.opened) << r.open_error;
      EXPECT_EQ(r.error, "");
      EXPECT_EQ(r.link_type, 1u);
      EXPECT_EQ(r.snaplen, 262144u);  // 0: libpcap's maximum for the link type
      ASSERT_EQ(r.records.size(), 7u);
      const std::vector<std::uint32_t> links{1, 101, 113, 1, 1, 1, 101};
      const std::vector<std::int64_t> times{1'700'000'000'123'456'000LL,
                                            1'700'000'001'000'000'007LL,
                                            1'700'000'012'500'000'000LL,
                                            1'700'000'003'250'000'000LL,
                                            0,
                                            1'700'000'004'000'001'000LL,
                                            1'700'000'005'000'002'000LL};
      for (std::size_t i = 0; i < 7; ++i) {
        SCOPED_TRACE(i);
        EXPECT_EQ(r.records[i].number, i + 1);
        EXPECT_EQ(r.records[i].link_type, links[i]);
        EXPECT_EQ(r.records[i].ts_ns, times[i]);
        const auto d =
            net::decode_frame(r.records[i].link_type, r.records[i].data, r.records[i].wire_length);
        if (i != 5) {  // 5: cut to 30 octets
          EXPECT_EQ(d.status, net::FrameStatus::tcp) << d.detail;
        }
      }
      EXPECT_EQ(r.records[1].data, raw);
      EXPECT_EQ(r.records[5].data, Bytes(eth.begin(), eth.begin() + 30));
      EXPECT_EQ(r.records[5].wire_length, eth.size());
      // libpcap stops at the second interface (another link type), after no frame.
      const Read lib = read_all(file, ReaderKind::libpcap);
      EXPECT_TRUE(lib.records.empty());
      EXPECT_NE(lib.error.find("different from the type of the first interface"), std::string::npos)
          << lib.error;
    }
  }
}

// The mapped reader's pcapng records (MappedReader::next_common_epb) take nanosecond and
// microsecond times without an offset as they are (no division): at and past the largest time
// that fits, beside an offset and other resolutions, they still read as libpcap reads them.
TEST(ReaderEquivalence, PcapngTimesAtTheEdgesOfTheShortcut) {
  const Bytes eth = tcp_frame(40005);
  constexpr std::uint64_t kMax = INT64_MAX;
  Ng ng;
  ng.shb();
  ng.idb(1, 0, 9);          // ns
  ng.idb(1, 0);             // µs (no option)
  ng.idb(1, 0, 6, 1);       // µs, 1 s offset
  ng.idb(1, 0, 9, 1);       // ns, 1 s offset
  ng.idb(1, 0, 0x80 | 10);  // 2^-10 s
  for (std::uint32_t iface = 0; iface < 5; ++iface)
    for (std::uint64_t t :
         std::vector<std::uint64_t>{0, 1, 1'700'000'000'123'456, kMax / 1000 - 1, kMax / 1000,
                                    kMax / 1000 + 1, kMax - 1, kMax, kMax + 1, UINT64_MAX})
      ng.epb(iface, t, eth);
  expect_same(write_file(temp_path(".times.pcapng"), ng.b));
  const Read r = read_all(temp_path(".times.pcapng"), ReaderKind::mapped);
  ASSERT_EQ(r.records.size(), 50u) << r.error;
  EXPECT_EQ(r.records[2].ts_ns, 1'700'000'000'123'456LL);       // ns, as it is
  EXPECT_EQ(r.records[12].ts_ns, 1'700'000'000'123'456'000LL);  // µs, times 1,000
  EXPECT_EQ(r.records[13].ts_ns, static_cast<std::int64_t>(kMax / 1000 - 1) * 1000);
}

// The same shape written by Wireshark's own tools: mergecap of an Ethernet and a raw-IP pcap.
TEST(MappedReader, MergecapOfTwoLinkTypes) {
  if (!fs::exists("/usr/bin/mergecap")) GTEST_SKIP() << "mergecap is not installed";
  const Bytes eth = tcp_frame(40002);
  auto pcap = [](std::uint32_t link, std::uint32_t sec, ByteView frame) {
    Bytes b;
    auto le = [&](std::uint32_t v, int n) {
      for (int i = 0; i < n; ++i)
        b.push_back(static_cast<std::uint8_t>(v >> (8 * i)));
    };
    le(0xA1B2C3D4, 4), le(2, 2), le(4, 2), le(0, 4), le(0, 4), le(262144, 4), le(link, 4);
    le(sec, 4), le(5, 4), le(static_cast<std::uint32_t>(frame.size()), 4);
    le(static_cast<std::uint32_t>(frame.size()), 4);
    b.insert(b.end(), frame.begin(), frame.end());
    return b;
  };
  const fs::path a = write_file(temp_path(".eth.pcap"), pcap(1, 100, eth));
  const fs::path b = write_file(temp_path(".raw.pcap"), pcap(101, 200, ByteView(eth).subspan(14)));
  const fs::path merged = temp_path(".pcapng");
  fs::remove(merged);
  const std::string cmd = "/usr/bin/mergecap -F pcapng -w '" + merged.string() + "' '" +
                          a.string() + "' '" + b.string() + "'";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  const Read r = read_all(merged, ReaderKind::automatic);
  ASSERT_TRUE(r.opened) << r.open_error;
  EXPECT_EQ(r.backend, "mapped");
  EXPECT_EQ(r.error, "");
  ASSERT_EQ(r.records.size(), 2u);
  EXPECT_EQ(r.records[0].link_type, 1u);
  EXPECT_EQ(r.records[0].ts_ns, 100'000'005'000LL);
  EXPECT_EQ(r.records[1].link_type, 101u);
  EXPECT_EQ(r.records[1].ts_ns, 200'000'005'000LL);
}

// Damaged pcapng blocks: both readers stop at the same block with the same words.
TEST(ReaderEquivalence, DamagedPcapngBlocks) {
  const Bytes eth = tcp_frame(40003);
  auto base = [&] {
    Ng ng;
    ng.shb();
    ng.idb(1, 0);
    ng.epb(0, 1, eth);
    return ng;
  };
  std::vector<std::pair<std::string, Bytes>> cases;
  {
    Ng ng = base();
    ng.u32(6);
    ng.u32(8);  // shorter than a block
    cases.emplace_back("length below 12", ng.b);
  }
  {
    Ng ng = base();
    ng.u32(6);
    ng.u32(30);  // not a multiple of 4
    ng.u32(0), ng.u32(0), ng.u32(0), ng.u32(0), ng.u32(0), ng.u32(0);
    cases.emplace_back("length not a multiple of 4", ng.b);
  }
  {
    Ng ng = base();
    ng.u32(6);
    ng.u32(0xFFFFFFF0u);  // absurd: refused before anything is read or allocated
    cases.emplace_back("absurd length", ng.b);
  }
  {
    Ng ng = base();
    ng.epb(0, 2, eth);
    ng.b[ng.b.size() - 1] ^= 0x01;  // trailer differs from the header
    cases.emplace_back("trailer mismatch", ng.b);
  }
  {
    Ng ng = base();
    ng.epb(3, 2, eth);
    cases.emplace_back("unknown interface", ng.b);
  }
  {
    Ng ng = base();
    ng.block(6, [&] { ng.u32(0), ng.u32(0); });
    cases.emplace_back("EPB too short", ng.b);
  }
  {
    Ng ng = base();
    ng.block(6, [&] {
      ng.u32(0), ng.u32(0), ng.u32(0), ng.u32(5000), ng.u32(5000);  // caplen past the block
    });
    cases.emplace_back("caplen past the block", ng.b);
  }
  {
    Ng ng;
    ng.shb();
    ng.idb(1, 64);
    ng.epb(0, 1, eth);  // longer than the snapshot length
    cases.emplace_back("caplen above snaplen", ng.b);
  }
  {
    Ng ng = base();
    ng.block(1, [&] { ng.u16(1), ng.u16(0), ng.u32(0), ng.u16(9), ng.u16(2), ng.u32(0); });
    cases.emplace_back("if_tsresol of length 2", ng.b);
  }
  {
    Ng ng = base();
    ng.block(0x0A0D0D0A, [&] { ng.u32(0x11111111), ng.u16(1), ng.u16(0), ng.u32(0), ng.u32(0); });
    cases.emplace_back("section with bad magic", ng.b);
  }
  for (const auto& [name, file] : cases) {
    SCOPED_TRACE(name);
    const fs::path p = write_file(temp_path(".pcapng"), file);
    expect_same(p);
    const Read r = read_all(p, ReaderKind::mapped);
    EXPECT_NE(r.error, "");
    EXPECT_LE(r.records.size(), 1u);
    expect_same(write_file(temp_path(".pcapng.gz"), gzip(file)));
  }
}

// Records larger than the inflate buffer's first size, and records straddling its refills:
// a gzip'ed pcap of D-Bus records (libpcap allows them up to 128 MiB) of 64 KiB to 3 MiB.
TEST(ReaderEquivalence, GzipRecordsLargerThanTheSlidingBuffer) {
  Bytes b;
  auto le = [&](std::uint32_t v, int n) {
    for (int i = 0; i < n; ++i)
      b.push_back(static_cast<std::uint8_t>(v >> (8 * i)));
  };
  le(0xA1B2C3D4, 4), le(2, 2), le(4, 2), le(0, 4), le(0, 4), le(0, 4), le(231, 4);
  std::uint32_t seed = 1;
  for (std::uint32_t size : {65536u, 3u << 20, 100u, 1u << 20, 999'999u, 70000u, 2u << 20}) {
    le(seed, 4), le(seed * 7, 4), le(size, 4), le(size, 4);
    for (std::uint32_t i = 0; i < size; ++i) {
      seed = seed * 1103515245u + 12345u;
      b.push_back(static_cast<std::uint8_t>(seed >> 16));
    }
  }
  const fs::path plain = write_file(temp_path(".pcap"), b);
  expect_same(plain);
  const fs::path gz = write_file(temp_path(".pcap.gz"), gzip(b, 1));
  expect_same(gz);
  // Two gzip members one after the other: read as one stream (as gzread does).
  Bytes two = gzip(ByteView(b).first(24 + 16 + 65536));
  const Bytes rest = gzip(ByteView(b).subspan(24 + 16 + 65536));
  two.insert(two.end(), rest.begin(), rest.end());
  expect_same(write_file(temp_path(".two.pcap.gz"), two));
  // Damaged compressed data: a clear error after the records before it, never a crash.
  Bytes bad = gzip(b, 1);
  for (std::size_t i = bad.size() / 2; i < bad.size() / 2 + 64; ++i)
    bad[i] ^= 0xA5;
  const Read r = read_all(write_file(temp_path(".bad.pcap.gz"), bad), ReaderKind::mapped);
  ASSERT_TRUE(r.opened);
  EXPECT_NE(r.error.find("error reading dump file: gzip data invalid ("), std::string::npos)
      << r.error;
  EXPECT_LE(r.records.size(), 7u);
}

// Classic pcap damage: both readers, same words (the cases of tests/hostile, and more).
TEST(ReaderEquivalence, DamagedPcapRecords) {
  const Bytes eth = tcp_frame(40004);
  auto file = [&](std::uint32_t snaplen, std::uint32_t link, std::uint32_t caplen,
                  std::uint32_t len) {
    Bytes b;
    auto le = [&](std::uint32_t v, int n) {
      for (int i = 0; i < n; ++i)
        b.push_back(static_cast<std::uint8_t>(v >> (8 * i)));
    };
    le(0xA1B2C3D4, 4), le(2, 2), le(4, 2), le(0, 4), le(0, 4), le(snaplen, 4), le(link, 4);
    le(1, 4), le(2, 4), le(static_cast<std::uint32_t>(eth.size()), 4);
    le(static_cast<std::uint32_t>(eth.size()), 4);
    b.insert(b.end(), eth.begin(), eth.end());
    le(3, 4), le(0x7FFFFFFF, 4), le(caplen, 4), le(len, 4);
    b.insert(b.end(), eth.begin(), eth.end());
    return b;
  };
  const auto n = static_cast<std::uint32_t>(eth.size());
  struct Case {
    std::uint32_t snaplen, link, caplen, len;
  };
  for (const Case c :
       {Case{262144, 1, 0xFFFFFFFFu, n}, Case{262144, 1, 0x7FFFFFFFu, n},
        Case{262144, 1, 263145u, n}, Case{64, 1, n, 10}, Case{64, 1, 300000, n}, Case{0, 1, n, n},
        Case{0xFFFFFFFFu, 1, n, n}, Case{40, 1, 50, n}, Case{40, 1, n, n}, Case{262144, 147, n, n},
        Case{262144, 12, n, n}, Case{262144, 1, n + 1, n}}) {
    SCOPED_TRACE(std::to_string(c.snaplen) + " " + std::to_string(c.link) + " " +
                 std::to_string(c.caplen) + " " + std::to_string(c.len));
    const Bytes b = file(c.snaplen, c.link, c.caplen, c.len);
    expect_same(write_file(temp_path(".pcap"), b), /*mapped_must_read=*/c.link != 12);
    expect_same(write_file(temp_path(".pcap.gz"), gzip(b)), c.link != 12);
  }
}

// What the mapped reader leaves to libpcap, read by it as before.
// A file another process cuts short while it is mapped and read (issue 43): reading a page
// past its new end raised SIGBUS and ended the process. Now the reader stops at the new end with
// an error that says the file was cut short, and every record it handed out is the file's.
struct CutFile {
  Bytes file;
  std::vector<Bytes> records;
};

CutFile records_of_1000_octets(int count) {
  CutFile c;
  auto le = [&](std::uint32_t v, int n) {
    for (int i = 0; i < n; ++i)
      c.file.push_back(static_cast<std::uint8_t>(v >> (8 * i)));
  };
  le(0xA1B2C3D4, 4), le(2, 2), le(4, 2), le(0, 4), le(0, 4), le(65535, 4), le(147, 4);
  for (int n = 0; n < count; ++n) {
    Bytes data(1000);
    for (std::size_t i = 0; i < data.size(); ++i)
      data[i] = static_cast<std::uint8_t>(n * 7 + i * 13 + 1);  // never a page of zeros
    le(n, 4), le(0, 4), le(1000, 4), le(1000, 4);
    c.file.insert(c.file.end(), data.begin(), data.end());
    c.records.push_back(std::move(data));
  }
  return c;
}

TEST(MappedReader, FileCutShortWhileReadStopsWithAnErrorNotSigbus) {
  const CutFile c = records_of_1000_octets(2000);  // 2 MB: many pages past the cut
  for (const bool compressed : {false, true}) {
    SCOPED_TRACE(compressed ? "gzip" : "pcap");
    const Bytes bytes = compressed ? gzip(c.file, 1) : c.file;
    const fs::path p = write_file(temp_path(compressed ? ".pcap.gz" : ".pcap"), bytes);
    std::string error;
    auto reader = CaptureReader::open(p.string(), error, ReaderKind::mapped);
    ASSERT_TRUE(reader) << error;
    Frame f;
    std::size_t n = 0;
    for (; n < 100; ++n) {
      ASSERT_TRUE(reader->next(f));
      ASSERT_TRUE(std::equal(f.data.begin(), f.data.end(), c.records[n].begin()));
    }
    // Cut in the middle of a record, far behind what was read (and what gzip inflated ahead).
    const std::uint64_t cut = bytes.size() / 2 + 500;
    ASSERT_EQ(::truncate(p.c_str(), static_cast<off_t>(cut)), 0);
    const std::size_t whole = (cut - 24) / 1016;  // uncompressed: the records before the cut
    while (reader->next(f)) {
      ASSERT_LT(n, c.records.size());
      // Every record the file still holds is the file's. Uncompressed, the one that crosses the
      // cut reads zeros past it (the kernel's zeros in the file's last page); gzip's inflater
      // stops at the damage the zeros are to it.
      if (compressed || n < whole) {
        EXPECT_TRUE(
            std::equal(f.data.begin(), f.data.end(), c.records[n].begin(), c.records[n].end()))
            << "record " << n << " is not the file's";
      }
      ++n;
    }
    EXPECT_NE(reader->error().find("the capture file was cut short while it was read (" +
                                   std::to_string(cut) + " octets now, " +
                                   std::to_string(bytes.size()) + " when opened)"),
              std::string::npos)
        << reader->error();
    EXPECT_LT(n, c.records.size());
    // Uncompressed, every record wholly before the new end is read, and at most the one that
    // crosses it.
    if (!compressed) {
      EXPECT_GE(n, whole);
      EXPECT_LE(n, whole + 1);
    }
  }
}

// The octets of `file`'s map that are resident in this process (the Rss of its line in
// /proc/self/smaps), or SIZE_MAX when it is not mapped.
std::size_t mapped_rss(const fs::path& file) {
  const std::string name = fs::canonical(file).string();
  std::ifstream smaps("/proc/self/smaps");
  std::string line;
  bool ours = false;
  std::size_t rss = SIZE_MAX;
  while (std::getline(smaps, line)) {
    // A mapping's first line: "start-end perms offset dev inode   path".
    if (!line.empty() && std::isxdigit(static_cast<unsigned char>(line[0])) &&
        line.find('-') < line.find(' ')) {
      ours = line.size() >= name.size() &&
             line.compare(line.size() - name.size(), name.npos, name) == 0;
    } else if (ours && line.rfind("Rss:", 0) == 0) {
      rss = (rss == SIZE_MAX ? 0 : rss) + std::stoull(line.substr(4)) * 1024;
    }
  }
  return rss;
}

constexpr std::size_t kMiB = std::size_t{1} << 20;

// A mapped file read through stayed whole in the process's resident memory (2.2 GB of RSS on a
// 2.2 GB capture). The pages behind the frame in use now leave it every few MiB read, and a
// frame handed out earlier is still the file's when read again.
TEST(MappedReader, PagesBehindTheFrameInUseLeaveTheProcess) {
  const CutFile c = records_of_1000_octets(64 * 1024);  // 66.6 MB
  const fs::path p = write_file(temp_path(".pcap"), c.file);
  std::string error;
  auto reader = CaptureReader::open(p.string(), error, ReaderKind::mapped);
  ASSERT_TRUE(reader) << error;
  Frame f;
  std::size_t n = 0, peak = 0;
  ByteView first;
  while (reader->next(f)) {
    if (n == 0) first = f.data;
    ASSERT_TRUE(std::equal(f.data.begin(), f.data.end(), c.records[n].begin()));
    if (++n % 1024 == 0) peak = std::max(peak, mapped_rss(p));
  }
  EXPECT_TRUE(reader->error().empty()) << reader->error();
  EXPECT_EQ(n, c.records.size());
  ASSERT_NE(peak, SIZE_MAX) << "the file's map is not in /proc/self/smaps";
  EXPECT_GT(peak, 0u);
  EXPECT_LE(peak, 12 * kMiB) << "of a " << c.file.size() << "-octet file";
  // The first frame's pages were given back: read again, from the file.
  EXPECT_TRUE(std::equal(first.begin(), first.end(), c.records[0].begin()));
}

// Held (feed's two-thread pipeline keeps frames in its batches), pages leave only behind the
// frames said to be done.
TEST(MappedReader, HeldFramesStayUntilTheyAreDone) {
  const CutFile c = records_of_1000_octets(32 * 1024);  // 33.3 MB
  const fs::path p = write_file(temp_path(".pcap"), c.file);
  std::string error;
  auto reader = CaptureReader::open(p.string(), error, ReaderKind::mapped);
  ASSERT_TRUE(reader) << error;
  ASSERT_TRUE(reader->frames_stay_valid());
  reader->hold_frames();
  Frame f;
  std::vector<ByteView> frames;
  while (reader->next(f))
    frames.push_back(f.data);
  ASSERT_EQ(frames.size(), c.records.size());
  EXPECT_GE(mapped_rss(p), c.file.size() / 4096 * 4096)
      << "pages left while their frames were held";
  const std::size_t done = 24 * 1024;  // 24.4 MB of the file
  reader->frames_done(frames[done - 1]);
  EXPECT_LE(mapped_rss(p), 10 * kMiB);
  for (const std::size_t i : {std::size_t{0}, done - 1, done, frames.size() - 1})
    EXPECT_TRUE(std::equal(frames[i].begin(), frames[i].end(), c.records[i].begin()))
        << "frame " << i;
}

// The two-thread pipeline holds the frames of its batches; what it holds of the map is bounded
// by its batches (FeedOptions::pipeline_octets), not by the file.
TEST(MappedReader, ThePipelineHoldsOnlyWhatItsBatchesDo) {
  const CutFile c = records_of_1000_octets(64 * 1024);
  const fs::path p = write_file(temp_path(".pcap"), c.file);
  std::string error;
  auto reader = CaptureReader::open(p.string(), error, ReaderKind::mapped);
  ASSERT_TRUE(reader) << error;
  FeedOptions o;
  o.threads = 2;
  std::size_t n = 0, peak = 0;
  bool same = true;
  o.on_frame = [&](const Frame& f) {  // on the engine's thread
    same = same && n < c.records.size() &&
           std::equal(f.data.begin(), f.data.end(), c.records[n].begin(), c.records[n].end());
    if (++n % 1024 == 0) peak = std::max(peak, mapped_rss(p));
  };
  Analyzer an;
  const FeedResult fed = feed(*reader, an, o);
  EXPECT_TRUE(fed.error.empty()) << fed.error;
  EXPECT_EQ(fed.frames, c.records.size());
  EXPECT_TRUE(same);
  ASSERT_NE(peak, SIZE_MAX);
  // pipeline_octets (4 MiB) in the batches, a batch or two handed back and not yet taken up
  // again, and a release every 4 MiB.
  EXPECT_LE(peak, 16 * kMiB) << "of a " << c.file.size() << "-octet file";
}

TEST(ReaderEquivalence, FallsBackToLibpcap) {
  const fs::path sample = fs::path(DDPSCOPE_SOURCE_DIR) / "samples/synthetic/fault-msn.pcap";
  Bytes old = read_bytes(sample);
  old[6] = 3;  // version 2.3: caplen and len may be the other way round, libpcap guesses
  const fs::path p = write_file(temp_path(".pcap"), old);
  std::string error;
  EXPECT_FALSE(CaptureReader::open(p.string(), error, ReaderKind::mapped));
  EXPECT_NE(error.find("not read by the mapped reader"), std::string::npos) << error;
  auto r = CaptureReader::open(p.string(), error);
  ASSERT_TRUE(r) << error;
  EXPECT_STREQ(r->backend(), "libpcap");
  expect_same(p, /*mapped_must_read=*/false);
  // Not a capture: libpcap's words, whichever reader was asked.
  const fs::path text = write_file(temp_path(".txt"), Bytes(64, 'x'));
  std::string e1, e2;
  EXPECT_FALSE(CaptureReader::open(text.string(), e1, ReaderKind::automatic));
  EXPECT_FALSE(CaptureReader::open(text.string(), e2, ReaderKind::libpcap));
  EXPECT_EQ(e1, e2);
  EXPECT_NE(e1, "");
}

}  // namespace
}  // namespace ddpscope::capture
