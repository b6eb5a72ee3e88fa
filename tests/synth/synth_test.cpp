// SPDX-License-Identifier: GPL-2.0-or-later
#include "ddpscope/synth/synth.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "ddpscope/analysis/analyzer.h"
#include "ddpscope/analysis/regions_file.h"
#include "ddpscope/capture/feed.h"
#include "ddpscope/capture/file_reader.h"
#include "ddpscope/common/crc32c.h"
#include "ddpscope/net/packet.h"
#include "ddpscope/wire/mpa.h"
#include "ddpscope/wire/rdmap.h"
#include "ddpscope/wire/sctp.h"

namespace ddpscope::synth {
namespace {

using json = nlohmann::json;

std::string tmp(const std::string& name) {
  return std::string(DDPSCOPE_SYNTH_TMP_DIR) + "/" + name;
}

struct Captured {
  std::uint64_t number = 0;
  net::TcpSegment seg;
  Bytes payload;
};

// Reads a capture back through libpcap and decodes every frame to TCP.
std::vector<Captured> read_back(const std::string& path) {
  std::string error;
  auto reader = capture::CaptureReader::open(path, error);
  EXPECT_TRUE(reader) << error;
  std::vector<Captured> out;
  if (!reader) return out;
  capture::Frame f;
  while (reader->next(f)) {
    auto d = net::decode_frame(f.link_type, f.data, f.wire_length);
    EXPECT_EQ(d.status, net::FrameStatus::tcp) << d.detail;
    Captured c;
    c.number = f.number;
    c.seg = d.tcp;
    c.payload.assign(d.tcp.payload.begin(), d.tcp.payload.end());
    out.push_back(std::move(c));
  }
  EXPECT_TRUE(reader->error().empty()) << reader->error();
  return out;
}

// The byte stream one endpoint sent, rebuilt from sequence numbers (first copy wins), and the
// frame that carried each octet.
struct Stream {
  Bytes bytes;
  std::vector<std::uint64_t> frame_of;
};
Stream reassemble(const std::vector<Captured>& frames, const net::Endpoint& from) {
  std::optional<std::uint32_t> isn;
  std::map<std::uint32_t, const Captured*> by_offset;
  for (const auto& c : frames) {
    if (c.seg.src != from) continue;
    if (c.seg.flags & net::tcp_flag::syn) isn = c.seg.seq;
  }
  EXPECT_TRUE(isn);
  for (const auto& c : frames) {
    if (c.seg.src != from || c.payload.empty()) continue;
    by_offset.emplace(c.seg.seq - *isn - 1, &c);
  }
  Stream s;
  for (const auto& [off, c] : by_offset) {
    if (off > s.bytes.size()) ADD_FAILURE() << "hole in the stream at " << s.bytes.size();
    for (std::size_t i = 0; i < c->payload.size(); ++i) {
      if (off + i < s.bytes.size()) continue;
      s.bytes.push_back(c->payload[i]);
      s.frame_of.push_back(c->number);
    }
  }
  return s;
}

// Decodes the Request/Reply and every FPDU of one direction with the wire decoders.
struct DecodedFpdu {
  std::size_t offset = 0;
  wire::DdpSegment seg;
  Bytes payload;
  bool crc_ok = false;
};
std::vector<DecodedFpdu> decode_direction(const Stream& s, bool markers, bool crc) {
  std::vector<DecodedFpdu> out;
  auto rr = wire::decode_mpa_reqrep(s.bytes);
  EXPECT_TRUE(rr);
  if (!rr) return out;
  const std::size_t s0 = rr.value().wire_size();
  Bytes plain;
  std::vector<std::size_t> origin;  // stream offset of each marker-free octet
  if (markers) {
    ByteView rest = ByteView(s.bytes).subspan(s0);
    auto split = wire::strip_markers(rest, 0);
    plain = split.payload;
    for (std::size_t i = 0, k = 0; i < rest.size(); ++i)
      if (i % wire::kMpaMarkerInterval >= wire::kMpaMarkerSize && k < plain.size()) {
        origin.push_back(s0 + i);
        ++k;
      }
    EXPECT_FALSE(split.markers.empty());
    for (const auto& m : split.markers)
      EXPECT_EQ(m.fpduptr % 4, 0);
  } else {
    plain.assign(s.bytes.begin() + static_cast<std::ptrdiff_t>(s0), s.bytes.end());
    for (std::size_t i = 0; i < plain.size(); ++i)
      origin.push_back(s0 + i);
  }
  std::size_t pos = 0;
  while (pos < plain.size()) {
    auto f = wire::decode_fpdu(ByteView(plain).subspan(pos));
    EXPECT_TRUE(f) << "FPDU at " << pos;
    if (!f) break;
    DecodedFpdu d;
    d.offset = origin[pos];
    if (markers && crc) {
      // The CRC covers the octets as sent, markers inside the FPDU included (a marker right
      // in front of the header counts as the FPDU's first octet: RFC 5044 §4.3 as Wireshark
      // reads it).
      std::size_t begin = origin[pos];
      if ((begin - s0) % wire::kMpaMarkerInterval == wire::kMpaMarkerSize) begin -= 4;
      const std::size_t crc_at = origin[pos + f.value().size() - wire::kMpaCrcSize];
      const auto raw = ByteView(s.bytes).subspan(begin, crc_at - begin);
      d.crc_ok = f.value().crc_field == crc32c(raw);
    } else {
      d.crc_ok = crc ? f.value().crc_field == f.value().crc_computed : f.value().crc_field == 0;
    }
    auto seg = wire::decode_ddp_segment(f.value().ulpdu);
    EXPECT_TRUE(seg);
    if (seg) {
      d.seg = seg.value();
      d.payload.assign(seg.value().payload.begin(), seg.value().payload.end());
    }
    out.push_back(d);
    pos += f.value().size();
  }
  return out;
}

json base_scenario() {
  return json::parse(R"({
    "name": "unit",
    "connections": [{"client": {"ip": "10.1.0.1", "port": 5000},
                     "server": {"ip": "10.1.0.2", "port": 6000},
                     "mpa": {"crc": true}}],
    "operations": []
  })");
}

// The analyzer's findings of warning or error severity on a generated capture, as (code, frame),
// by frame (as the expected list is).
std::vector<std::pair<std::string, std::uint64_t>> analyze(const SynthResult& r,
                                                           const std::string& pcap) {
  Analyzer an;
  if (!r.regions_path.empty()) {
    std::vector<RegionSpec> regions;
    std::string err;
    EXPECT_TRUE(load_regions_file(r.regions_path, regions, err)) << err;
    an.add_regions(regions);
  }
  std::string err;
  auto reader = capture::CaptureReader::open(pcap, err);
  EXPECT_TRUE(reader) << err;
  if (!reader) return {};
  capture::feed(*reader, an);
  std::vector<std::pair<std::string, std::uint64_t>> out;
  for (const Finding& x : an.model().findings)
    if (x.severity != Severity::note) out.emplace_back(std::string(x.code()), x.frame);
  std::stable_sort(out.begin(), out.end(),
                   [](const auto& a, const auto& b) { return a.second < b.second; });
  return out;
}

TEST(SynthScenario, ParseErrorsNameThePath) {
  SynthResult r;
  std::string err;
  json j = base_scenario();
  j["operations"] = json::parse(R"([{"op": "send", "from": "client", "txt": "typo"}])");
  EXPECT_FALSE(synthesize_json(j, tmp("e1.pcap"), r, err));
  EXPECT_NE(err.find("scenario.operations[0]"), std::string::npos) << err;
  EXPECT_NE(err.find("unknown key \"txt\""), std::string::npos) << err;

  j["operations"] = json::parse(R"([{"op": "jump", "from": "client"}])");
  EXPECT_FALSE(synthesize_json(j, tmp("e2.pcap"), r, err));
  EXPECT_NE(err.find("unknown operation \"jump\""), std::string::npos) << err;

  j = base_scenario();
  j["connections"][0]["client"]["ip"] = "10.1.0.300";
  EXPECT_FALSE(synthesize_json(j, tmp("e3.pcap"), r, err));
  EXPECT_NE(err.find("scenario.connections[0].client.ip"), std::string::npos) << err;

  j = base_scenario();
  j["operations"] = json::parse(R"([{"op": "send", "from": "middle", "text": "x"}])");
  EXPECT_FALSE(synthesize_json(j, tmp("e4.pcap"), r, err));
  EXPECT_NE(err.find(".from"), std::string::npos) << err;

  j = base_scenario();
  j["operations"] = json::parse(R"([{"op": "send", "from": "client", "hex": "abc"}])");
  EXPECT_FALSE(synthesize_json(j, tmp("e5.pcap"), r, err));
  EXPECT_NE(err.find("odd number of hex digits"), std::string::npos) << err;

  // Well-formed JSON that cannot be generated: a CRC fault without CRC.
  j = base_scenario();
  j["connections"][0]["mpa"]["crc"] = false;
  j["operations"] = json::parse(
      R"([{"op": "send", "from": "client", "text": "x", "fault": {"corrupt_crc": true}}])");
  EXPECT_FALSE(synthesize_json(j, tmp("e6.pcap"), r, err));
  EXPECT_NE(err.find("needs CRC"), std::string::npos) << err;

  EXPECT_FALSE(synthesize(tmp("missing.json"), tmp("e7.pcap"), r, err));
  EXPECT_NE(err.find("cannot open"), std::string::npos) << err;
}

TEST(SynthCapture, ReadsBackAndEveryFpduDecodes) {
  json j = base_scenario();
  j["connections"][0]["mpa"]["client_requests_markers"] = true;  // server -> client markers
  j["connections"][0]["tcp_segment_size"] = 700;                 // FPDUs straddle TCP segments
  j["operations"] = json::parse(R"([
    {"op": "send", "from": "client", "text": "hello"},
    {"op": "write", "from": "server", "stag": "0x1234", "to": "0x10000", "size": 3000},
    {"op": "read", "from": "client", "sink_stag": "0x55", "sink_to": 0, "source_stag": "0x1234",
     "source_to": "0x10000", "size": 2000},
    {"op": "send", "from": "server", "size": 100}
  ])");
  SynthResult r;
  std::string err;
  ASSERT_TRUE(synthesize_json(j, tmp("fpdus.pcap"), r, err)) << err;
  const auto frames = read_back(tmp("fpdus.pcap"));
  ASSERT_EQ(frames.size(), r.frames);
  EXPECT_EQ(frames.front().seg.flags, net::tcp_flag::syn);
  EXPECT_EQ(frames.front().seg.mss, 1460);
  EXPECT_TRUE(r.expected.empty());

  const auto client = *net::Address::parse("10.1.0.1");
  const auto server = *net::Address::parse("10.1.0.2");
  const Stream c2s = reassemble(frames, {client, 5000});
  const Stream s2c = reassemble(frames, {server, 6000});
  const auto up = decode_direction(c2s, false, true);
  const auto down = decode_direction(s2c, true, true);
  for (const auto& d : up)
    EXPECT_TRUE(d.crc_ok);
  for (const auto& d : down)
    EXPECT_TRUE(d.crc_ok);

  // Client: Send, Read Request.
  ASSERT_EQ(up.size(), 2u);
  EXPECT_EQ(wire::RdmapControl::from_byte(up[0].seg.header.rsvd_ulp0).opcode, 0x3);
  EXPECT_EQ(up[0].seg.header.msn, 1u);
  EXPECT_EQ(std::string(up[0].payload.begin(), up[0].payload.end()), "hello");
  auto rr = wire::decode_read_request(up[1].payload);
  ASSERT_TRUE(rr);
  EXPECT_EQ(rr.value().size, 2000u);
  EXPECT_EQ(up[1].seg.header.qn, wire::kQnReadRequest);

  // Server: Write segments (TO advancing), Read Response segments, Send.
  std::uint64_t write_bytes = 0, resp_bytes = 0, next_to = 0x10000;
  bool saw_send = false;
  for (const auto& d : down) {
    const auto op = wire::RdmapControl::from_byte(d.seg.header.rsvd_ulp0).opcode;
    if (op == 0x0) {
      EXPECT_EQ(d.seg.header.to, next_to);
      next_to += d.payload.size();
      write_bytes += d.payload.size();
      EXPECT_LE(d.seg.payload.size() + wire::kDdpTaggedHeaderSize, wire::mulpdu(1460, true));
    } else if (op == 0x2) {
      EXPECT_EQ(d.seg.header.stag, 0x55u);
      resp_bytes += d.payload.size();
    } else if (op == 0x3) {
      saw_send = true;
      EXPECT_TRUE(d.seg.header.control.last);
    }
  }
  EXPECT_EQ(write_bytes, 3000u);
  EXPECT_EQ(resp_bytes, 2000u);
  EXPECT_TRUE(saw_send);
  // Some FPDU starts in one TCP segment and ends in another.
  bool straddles = false;
  for (std::size_t i = 0; i + 1 < down.size(); ++i)
    if (s2c.frame_of[down[i].offset] != s2c.frame_of[down[i + 1].offset - 1]) straddles = true;
  EXPECT_TRUE(straddles);
}

TEST(SynthExpected, FaultsAreListedWithTheirFrames) {
  json j = base_scenario();
  j["operations"] = json::parse(R"([
    {"op": "send", "from": "client", "text": "one"},
    {"op": "send", "from": "client", "text": "three", "fault": {"msn": "skip"}},
    {"op": "send", "from": "client", "text": "bad crc", "fault": {"corrupt_crc": true}},
    {"op": "terminate", "from": "server", "layer": "rdmap", "etype": 2, "code": 6,
     "siw_layout": true}
  ])");
  SynthResult r;
  std::string err;
  ASSERT_TRUE(synthesize_json(j, tmp("expected.pcap"), r, err)) << err;
  // This control word in siw's layout reads as a valid RFC one (LLP / MPA / 0x06): core's
  // decoder takes it as written, so no rdmap.terminate-nonconformant.
  ASSERT_EQ(r.expected.size(), 3u);
  EXPECT_EQ(r.expected[0].code, "ddp.untagged.msn-gap");
  EXPECT_EQ(r.expected[0].op, 1);
  EXPECT_EQ(r.expected[1].code, "mpa.crc-mismatch");
  EXPECT_EQ(r.expected[2].code, "rdmap.terminate");
  EXPECT_FALSE(r.exhaustive);  // a dropped-by-CRC FPDU has engine-dependent consequences
  std::vector<std::pair<std::string, std::uint64_t>> predicted;
  for (const auto& e : r.expected)
    predicted.emplace_back(e.code, e.frame);
  EXPECT_EQ(analyze(r, tmp("expected.pcap")), predicted);

  // Each frame holds the first octet of its FPDU: an MSN 3 Send header.
  const auto frames = read_back(tmp("expected.pcap"));
  const auto& f = frames.at(r.expected[0].frame - 1);
  ASSERT_GE(f.payload.size(), 20u);
  EXPECT_EQ(load_be32(f.payload.data() + 2 + 10), 3u);  // MSN after length, ctrl, ulp, QN

  std::ifstream in(r.expected_path);
  const json doc = json::parse(in);
  EXPECT_EQ(doc["frames"], r.frames);
  EXPECT_EQ(doc["expected"].size(), 3u);
  EXPECT_EQ(doc["expected"][0]["code"], "ddp.untagged.msn-gap");
  EXPECT_EQ(doc["expected"][0]["frame"], r.expected[0].frame);
  EXPECT_EQ(doc["expected"][0]["severity"], "error");
  EXPECT_EQ(doc["exhaustive"], false);
}

// fault.to_delta: a tagged segment moved back over its message's octets. The oracle predicts the
// Data Sink's ddp.tagged.bounds; the conflicting placement (an analysis finding, not a Data Sink
// rule) is the scenario's to declare, and the analyzer reports both at that segment's frame.
TEST(SynthExpected, TaggedToDeltaGoesBackOverTheMessage) {
  json j = base_scenario();
  j["operations"] = json::parse(R"([
    {"op": "write", "from": "client", "stag": "0x77", "to": "0x1000", "size": 200,
     "segment_size": 100, "pattern": "random", "fault": {"segment": "last", "to_delta": -100}}
  ])");
  j["expect"] = json::parse(R"([{"code": "ddp.tagged.conflicting-placement", "op": 0,
                                  "segment": 1}])");
  SynthResult r;
  std::string err;
  ASSERT_TRUE(synthesize_json(j, tmp("to-delta.pcap"), r, err)) << err;
  ASSERT_EQ(r.expected.size(), 2u);
  EXPECT_EQ(r.expected[0].frame, r.expected[1].frame);
  std::vector<std::pair<std::string, std::uint64_t>> predicted;
  for (const auto& e : r.expected)
    predicted.emplace_back(e.code, e.frame);
  std::sort(predicted.begin(), predicted.end());
  auto got = analyze(r, tmp("to-delta.pcap"));
  std::sort(got.begin(), got.end());
  EXPECT_EQ(got, predicted);
  EXPECT_EQ(got[0].first, "ddp.tagged.bounds");
  EXPECT_EQ(got[1].first, "ddp.tagged.conflicting-placement");
  // Untagged messages have no TO.
  j["operations"][0] = json::parse(R"({"op": "send", "from": "client", "text": "x",
                                        "fault": {"to_delta": 4}})");
  j.erase("expect");
  EXPECT_FALSE(synthesize_json(j, tmp("to-delta-bad.pcap"), r, err));
  EXPECT_NE(err.find("to_delta applies to tagged messages"), std::string::npos) << err;
}

TEST(SynthExpected, TcpFaults) {
  json j = base_scenario();
  j["operations"] = json::parse(R"([
    {"op": "write", "from": "client", "stag": 7, "to": 0, "size": 5000,
     "tcp_fault": [{"kind": "duplicate", "segment": 0}, {"kind": "reorder", "segment": 1}]}
  ])");
  SynthResult clean;
  std::string err;
  ASSERT_TRUE(synthesize_json(j, tmp("dup.pcap"), clean, err)) << err;
  EXPECT_TRUE(clean.expected.empty());  // exact retransmission and reordering are legal
  EXPECT_TRUE(clean.exhaustive);

  j["operations"][0]["tcp_fault"] = json::parse(R"([{"kind": "drop", "segment": 1}])");
  SynthResult drop;
  ASSERT_TRUE(synthesize_json(j, tmp("drop.pcap"), drop, err)) << err;
  EXPECT_EQ(drop.frames, clean.frames - 2);  // one fewer segment and no duplicate
  ASSERT_EQ(drop.expected.size(), 1u);
  EXPECT_EQ(drop.expected[0].code, "tcp.gap");
  EXPECT_FALSE(drop.exhaustive);
  // The gap shows at the next client data segment, whose sequence number is past the hole.
  const auto frames = read_back(tmp("drop.pcap"));
  const auto& at = frames.at(drop.expected[0].frame - 1);
  EXPECT_EQ(at.seg.src.port, 5000);
  EXPECT_FALSE(at.payload.empty());

  j["operations"][0]["tcp_fault"] = json::parse(R"([{"kind": "conflict", "segment": 0}])");
  SynthResult conflict;
  ASSERT_TRUE(synthesize_json(j, tmp("conflict.pcap"), conflict, err)) << err;
  ASSERT_EQ(conflict.expected.size(), 1u);
  EXPECT_EQ(conflict.expected[0].code, "tcp.retransmission-conflict");
}

// Many copies of segments (each pushed onto the generator's packet list, which then moves) and
// a drop of a packet an earlier fault expected its finding at: the generator once read a moved
// packet (a segfault under duplicate and conflict) and stopped with "internal error: map::at".
TEST(SynthExpected, ManyCopiesAndADropOfAnExpectedPacket) {
  json j = base_scenario();
  j["operations"] = json::parse(R"([
    {"op": "write", "from": "client", "stag": 7, "to": 0, "size": 60000}
  ])");
  json faults = json::array();
  for (int i = 0; i < 24; ++i)
    faults.push_back({{"kind", i % 2 ? "duplicate" : "conflict"}, {"index", i}, {"after", 3}});
  j["tcp_faults"] = faults;
  SynthResult many;
  std::string err;
  ASSERT_TRUE(synthesize_json(j, tmp("many-copies.pcap"), many, err)) << err;
  EXPECT_EQ(many.expected.size(), 12u);  // one conflict each; exact duplicates are legal
  // The conflicting copy of data segment 0 is itself the 2nd data packet: drop it.
  j["tcp_faults"] = json::parse(R"([{"kind": "conflict", "index": 0, "after": 0},
                                    {"kind": "drop", "index": 1}])");
  SynthResult dropped;
  ASSERT_TRUE(synthesize_json(j, tmp("dropped-copy.pcap"), dropped, err)) << err;
  for (const auto& e : dropped.expected)
    EXPECT_NE(e.code, "tcp.retransmission-conflict") << "frame " << e.frame;
  EXPECT_FALSE(dropped.exhaustive);
}

// A receiver_drop (issue 39): the packet stays in the capture with its ESP ICV broken, the
// receiver's ACKs do not pass it, and TCP's retransmission follows `after` packets later. The
// only finding is esp.icv-mismatch at the packet; without an esp block it is refused.
TEST(SynthExpected, ReceiverDropIsAnIcvFailureAndARetransmission) {
  json j = base_scenario();
  j["operations"] = json::parse(R"([
    {"op": "write", "from": "client", "stag": 7, "to": 0, "size": 5000,
     "tcp_fault": [{"kind": "receiver_drop", "segment": 1, "after": 2}]}
  ])");
  SynthResult r;
  std::string err;
  EXPECT_FALSE(synthesize_json(j, tmp("rdrop-clear.pcap"), r, err));
  EXPECT_NE(err.find("receiver_drop needs an esp block"), std::string::npos) << err;

  j["operations"][0].erase("tcp_fault");
  SynthResult clear;
  ASSERT_TRUE(synthesize_json(j, tmp("rdrop-base.pcap"), clear, err)) << err;
  j["operations"][0]["tcp_fault"] =
      json::parse(R"([{"kind": "receiver_drop", "segment": 1, "after": 2}])");
  j["esp"] = json::parse(R"({"mode": "transport"})");
  SynthResult esp;
  ASSERT_TRUE(synthesize_json(j, tmp("rdrop.pcap"), esp, err)) << err;
  EXPECT_EQ(esp.frames, clear.frames + 1);  // the retransmission
  ASSERT_EQ(esp.expected.size(), 1u);
  EXPECT_EQ(esp.expected[0].code, "esp.icv-mismatch");
  EXPECT_TRUE(esp.exhaustive);
}

TEST(SynthRegions, RegionsWrittenMatchTheOperations) {
  json j = base_scenario();
  j["regions"] = json::parse(R"([{"stag": "0x99", "base": "0x1000", "length": 64,
                                   "sink": "10.1.0.2"}])");
  j["operations"] = json::parse(R"([
    {"op": "write", "from": "client", "stag": "0x99", "to": "0x1000", "hex": "0102030405"},
    {"op": "write", "from": "client", "stag": "0x99", "to": "0x1008", "text": "abc"},
    {"op": "write", "from": "client", "label": "out of bounds: not recorded",
     "stag": "0x99", "to": "0x1040", "text": "zz"},
    {"op": "read", "from": "server", "sink_stag": "0x77", "sink_to": "0x2000",
     "source_stag": "0x88", "source_to": 0, "hex": "aabbcc"}
  ])");
  j["regions"].push_back(json::parse(R"({"stag": "0x77", "base": "0x2000", "length": 16})"));
  j["regions"].push_back(json::parse(R"({"stag": "0x88", "base": "0", "length": 16})"));
  SynthResult r;
  std::string err;
  ASSERT_TRUE(synthesize_json(j, tmp("regions.pcap"), r, err)) << err;
  ASSERT_EQ(r.expected.size(), 1u);
  EXPECT_EQ(r.expected[0].code, "ddp.tagged.bounds");
  ASSERT_EQ(r.regions_written.size(), 2u);
  const auto& w = r.regions_written[0].stag == 0x99 ? r.regions_written[0] : r.regions_written[1];
  const auto& rd = r.regions_written[0].stag == 0x99 ? r.regions_written[1] : r.regions_written[0];
  EXPECT_EQ(w.owner, "10.1.0.2");
  EXPECT_EQ(w.base, 0x1000u);
  EXPECT_EQ(w.bytes, (Bytes{1, 2, 3, 4, 5, 0, 0, 0, 'a', 'b', 'c'}));
  EXPECT_EQ(rd.owner, "10.1.0.2");  // the Read's requester is the Data Sink
  EXPECT_EQ(rd.base, 0x2000u);
  EXPECT_EQ(rd.bytes, (Bytes{0xAA, 0xBB, 0xCC}));

  ASSERT_FALSE(r.regions_path.empty());
  std::ifstream in(r.regions_path);
  const json regions = json::parse(in);
  ASSERT_EQ(regions.size(), 3u);
  EXPECT_EQ(regions[0]["stag"], "0x00000099");
  EXPECT_EQ(regions[0]["length"], 64);
  EXPECT_EQ(regions[0]["sink"], "10.1.0.2");
  std::ifstream ein(r.expected_path);
  const json doc = json::parse(ein);
  bool found = false;
  for (const auto& x : doc["regions_written"])
    if (x["stag"] == "0x00000099") {
      found = true;
      EXPECT_EQ(x["length"], 11);
      EXPECT_EQ(x["hex"], to_hex(w.bytes));
      char crc[16];
      std::snprintf(crc, sizeof crc, "0x%08x", crc32c(w.bytes));
      EXPECT_EQ(x["crc32c"], crc);
    }
  EXPECT_TRUE(found);
}

TEST(SynthRegions, OverlappingWritesLaterOneWins) {
  json j = base_scenario();
  j["regions"] = json::parse(R"([{"stag": "0x99", "base": "0x1000", "length": 64,
                                   "sink": "10.1.0.2"}])");
  // Out of order, adjacent, inside, straddling an end, and after a gap.
  j["operations"] = json::parse(R"([
    {"op": "write", "from": "client", "stag": "0x99", "to": "0x1010", "text": "WXYZ"},
    {"op": "write", "from": "client", "stag": "0x99", "to": "0x1000", "text": "0123456789abcdef"},
    {"op": "write", "from": "client", "stag": "0x99", "to": "0x1008", "text": "zz"},
    {"op": "write", "from": "client", "stag": "0x99", "to": "0x1012", "text": "qqqq"},
    {"op": "write", "from": "client", "stag": "0x99", "to": "0x1020", "text": "E"},
    {"op": "write", "from": "client", "stag": "0x99", "to": "0x1001", "text": "!"}
  ])");
  SynthResult r;
  std::string err;
  ASSERT_TRUE(synthesize_json(j, tmp("overlap.pcap"), r, err)) << err;
  EXPECT_TRUE(r.expected.empty());
  ASSERT_EQ(r.regions_written.size(), 1u);
  EXPECT_EQ(r.regions_written[0].base, 0x1000u);
  const std::string want = std::string("0!234567zzabcdefWXqqqq") + std::string(10, '\0') + "E";
  EXPECT_EQ(r.regions_written[0].bytes, Bytes(want.begin(), want.end()));
}

TEST(SynthSamples, EveryScenarioInSamplesGenerates) {
  const std::string dir = std::string(DDPSCOPE_SOURCE_DIR) + "/samples/synthetic/";
  for (const char* name : {"clean-rping", "clean-crc-markers", "clean-tricky", "fault-msn"}) {
    SynthResult r;
    std::string err;
    ASSERT_TRUE(synthesize(dir + name + ".json", tmp(std::string(name) + ".pcap"), r, err))
        << name << ": " << err;
    // Regenerating gives the committed capture, byte for byte.
    std::ifstream a(dir + name + ".pcap", std::ios::binary);
    std::ifstream b(tmp(std::string(name) + ".pcap"), std::ios::binary);
    const std::string sa((std::istreambuf_iterator<char>(a)), {});
    const std::string sb((std::istreambuf_iterator<char>(b)), {});
    EXPECT_EQ(sa, sb) << name << ": run samples/regenerate.sh";
  }
}

// The generator predicts what the analyzer learns from an advertisement with core's own
// decoder rule (ulp/rping.h): a Send on NVMe-oF's port or naming a buffer outside user space is
// no advertisement, so with a regions file its STag stays unknown.
TEST(SynthAdvertisements, PredictedWithCoresDecoderRule) {
  json j = base_scenario();
  j["connections"][0]["server"]["port"] = 4420;
  j["connections"].push_back(j["connections"][0]);
  j["connections"][1]["server"]["port"] = 7174;
  j["connections"][1]["client"]["port"] = 5001;
  j["connections"].push_back(j["connections"][1]);
  j["connections"][2]["client"]["port"] = 5002;
  j["regions"] = json::parse(R"([{"stag": "0x99", "base": "0x1000", "length": 64,
                                   "sink": "10.1.0.2"}])");
  j["operations"] = json::parse(R"([
    {"op": "advertise_rping", "connection": 0, "from": "client", "label": "on port 4420",
     "buf": "0x55d0c0a01000", "rkey": "0xab", "size": 64},
    {"op": "write", "connection": 0, "from": "server", "stag": "0xab", "to": "0x55d0c0a01000",
     "text": "abc"},
    {"op": "advertise_rping", "connection": 1, "from": "client", "label": "above 2^47",
     "buf": "0x800000000000", "rkey": "0xac", "size": 64},
    {"op": "write", "connection": 1, "from": "server", "stag": "0xac", "to": "0x800000000000",
     "text": "abc"},
    {"op": "advertise_rping", "connection": 2, "from": "client", "label": "learned",
     "buf": "0x7ffffffff000", "rkey": "0xad", "size": 64},
    {"op": "write", "connection": 2, "from": "server", "stag": "0xad", "to": "0x7ffffffff03f",
     "text": "abc"}
  ])");
  SynthResult r;
  std::string err;
  ASSERT_TRUE(synthesize_json(j, tmp("adverts.pcap"), r, err)) << err;
  ASSERT_EQ(r.expected.size(), 3u);
  EXPECT_EQ(r.expected[0].code, "ddp.tagged.invalid-stag");
  EXPECT_EQ(r.expected[0].op, 1);
  EXPECT_EQ(r.expected[1].code, "ddp.tagged.invalid-stag");
  EXPECT_EQ(r.expected[1].op, 3);
  EXPECT_EQ(r.expected[2].code, "ddp.tagged.bounds");
  EXPECT_EQ(r.expected[2].op, 5);
  std::vector<std::pair<std::string, std::uint64_t>> predicted;
  for (const auto& e : r.expected)
    predicted.emplace_back(e.code, e.frame);
  EXPECT_EQ(analyze(r, tmp("adverts.pcap")), predicted);
}

// The oracle runs core's Data Sink model on each segment in the order the analyzer receives it:
// an STag-level violation once per message, a Read Request reordered in the capture behind its
// responses leaves them unmatched, a Terminate in an FPDU dropped for its CRC is no Terminate
// received; notes for what follows capture loss.
TEST(SynthOracle, PredictsWhatTheAnalyzersDataSinkReports) {
  json j = base_scenario();
  j["regions"] = json::parse(R"([{"stag": "0x99", "base": "0x1000", "length": 64,
                                   "sink": "10.1.0.2"}])");
  j["operations"] = json::parse(R"([
    {"op": "write", "from": "client", "label": "unknown STag, 4 segments",
     "stag": "0x55", "to": 0, "size": 5000},
    {"op": "read", "from": "client", "sink_stag": "0x99", "sink_to": "0x1000",
     "source_stag": "0x99", "source_to": "0x1000", "size": 16,
     "tcp_fault": {"kind": "reorder", "segment": 0}},
    {"op": "send", "from": "client", "text": "one"},
    {"op": "send", "from": "client", "text": "lost", "fault": {"corrupt_crc": true}},
    {"op": "send", "from": "client", "text": "after the loss"},
    {"op": "terminate", "from": "server", "layer": "rdmap", "etype": 1, "code": 0,
     "fault": {"corrupt_crc": true}}
  ])");
  SynthResult r;
  std::string err;
  ASSERT_TRUE(synthesize_json(j, tmp("oracle.pcap"), r, err)) << err;
  std::vector<std::string> codes;
  for (const auto& e : r.expected)
    codes.push_back(e.code + (e.consequence ? " (note)" : ""));
  EXPECT_EQ(codes, (std::vector<std::string>{"ddp.tagged.invalid-stag",
                                             "rdmap.read-response-unmatched", "mpa.crc-mismatch",
                                             "ddp.untagged.msn-gap (note)", "mpa.crc-mismatch"}));
  std::vector<std::pair<std::string, std::uint64_t>> predicted;
  for (const auto& e : r.expected)
    if (!e.consequence) predicted.emplace_back(e.code, e.frame);
  EXPECT_EQ(analyze(r, tmp("oracle.pcap")), predicted);
  std::ifstream in(r.expected_path);
  const json doc = json::parse(in);
  EXPECT_EQ(doc["expected"][3]["severity"], "note");
}

// "llp": "sctp": the same operations and DDP/RDMAP faults as RFC 5043 messages over one SCTP
// association find what they find over MPA, and nothing else (no sctp.* finding); every frame is
// SCTP (IPv4, IPv6, in UDP), every DATA chunk unordered, whole, PPID 16 or 17, with DDP-SSNs
// from 0 without gaps per direction.
TEST(SynthSctp, SameDdpFindingsAsOverMpa) {
  const std::string dir = std::string(DDPSCOPE_SOURCE_DIR) + "/samples/synthetic/";
  for (const char* name : {"clean-rping", "fault-headers", "fault-msn", "fault-read-response",
                           "fault-atomic", "fault-terminate", "clean-ulp", "fault-ird"}) {
    std::ifstream in(dir + name + ".json");
    json j = json::parse(in);
    for (auto& c : j["connections"])
      if (c.contains("mpa")) c["mpa"].erase("crc");
    SynthResult mpa;
    std::string err;
    ASSERT_TRUE(synthesize_json(j, tmp("llp-mpa.pcap"), mpa, err)) << name << ": " << err;
    const auto over_mpa = analyze(mpa, tmp("llp-mpa.pcap"));
    for (const char* variant : {"v4", "v6-udp"}) {
      json s = j;
      s["llp"] = "sctp";
      if (std::string(variant) == "v6-udp") {
        s["sctp"] = {{"udp", true}};
        for (auto& c : s["connections"]) {
          c["client"]["ip"] = "2001:db8::1";
          c["server"]["ip"] = "2001:db8::2";
        }
      }
      SynthResult r;
      ASSERT_TRUE(synthesize_json(s, tmp("llp-sctp.pcap"), r, err)) << name << ": " << err;
      const auto over_sctp = analyze(r, tmp("llp-sctp.pcap"));
      std::vector<std::string> a, b;
      for (const auto& x : over_mpa)
        a.push_back(x.first);
      for (const auto& x : over_sctp)
        b.push_back(x.first);
      EXPECT_EQ(a, b) << name << " " << variant;
      std::vector<std::pair<std::string, std::uint64_t>> predicted;
      for (const auto& e : r.expected)
        if (!e.consequence) predicted.emplace_back(e.code, e.frame);
      EXPECT_EQ(over_sctp, predicted) << name << " " << variant;

      auto reader = capture::CaptureReader::open(tmp("llp-sctp.pcap"), err);
      ASSERT_TRUE(reader) << err;
      capture::Frame f;
      std::map<std::pair<std::string, std::uint16_t>, std::uint16_t> next_ssn;
      while (reader->next(f)) {
        auto d = net::decode_frame(f.link_type, f.data, f.wire_length);
        ASSERT_EQ(d.status, net::FrameStatus::sctp) << name << " frame " << f.number;
        auto p = wire::decode_sctp_packet(d.sctp.packet);
        ASSERT_TRUE(p) << name << " frame " << f.number;
        EXPECT_TRUE(wire::sctp_checksum_ok(d.sctp.packet));
        for (const auto& c : p.value().chunks) {
          if (c.type != wire::sctp_chunk::data) continue;
          auto data = wire::decode_sctp_data(c);
          ASSERT_TRUE(data);
          EXPECT_TRUE(data.value().unordered && data.value().beginning && data.value().ending);
          EXPECT_TRUE(data.value().ppid == wire::kPpidDdpSegment ||
                      data.value().ppid == wire::kPpidDdpSessionControl);
          auto m = wire::decode_ddp_sctp_message(data.value().user_data);
          ASSERT_TRUE(m);
          const auto key = std::make_pair(
              d.sctp.src.to_string() + ":" + std::to_string(p.value().header.source_port),
              data.value().stream_id);
          EXPECT_EQ(m.value().ddp_ssn, next_ssn[key]++) << name << " frame " << f.number;
        }
      }
    }
  }
}

// Every SCTP fault lands on the finding it aims at, at the predicted frame; the legal oddities
// (DDP-SSNs in reversed TSN order, a fragmented Initiate, a segment after the Initiate's SACK and
// before the Accept) add none.
TEST(SynthSctp, FaultsFindWhatTheyAimAt) {
  const json j = json::parse(R"({"name": "f", "llp": "sctp",
 "connections": [
  {"client": {"ip": "10.0.0.1", "port": 5001}, "server": {"ip": "10.0.0.2", "port": 7001}},
  {"client": {"ip": "10.0.0.1", "port": 5002}, "server": {"ip": "10.0.0.2", "port": 7002}, "sctp": {"adaptation": false}},
  {"client": {"ip": "10.0.0.1", "port": 5003}, "server": {"ip": "10.0.0.2", "port": 7003}, "sctp": {"initiate_function_code": 9}},
  {"client": {"ip": "10.0.0.1", "port": 5004}, "server": {"ip": "10.0.0.2", "port": 7004}, "sctp": {"terminate": false}},
  {"client": {"ip": "10.0.0.1", "port": 5005}, "server": {"ip": "10.0.0.2", "port": 7005}, "sctp": {"terminate_private_data": 4}},
  {"client": {"ip": "10.0.0.1", "port": 5006}, "server": {"ip": "10.0.0.2", "port": 7006}, "mpa": {"client_private_data": {"size": 600}}},
  {"client": {"ip": "10.0.0.1", "port": 5007}, "server": {"ip": "10.0.0.2", "port": 7007}, "sctp": {"early": "unacked"}},
  {"client": {"ip": "10.0.0.1", "port": 5008}, "server": {"ip": "10.0.0.2", "port": 7008}, "sctp": {"early": "after_sack", "initiate_fragments": 2}}
 ],
 "operations": [
  {"op": "send", "from": "client", "connection": 0, "size": 100},
  {"op": "send", "from": "client", "connection": 0, "size": 100, "fault": {"ddp_ssn": "reuse"}},
  {"op": "send", "from": "server", "connection": 0, "size": 100, "fault": {"ordered": true}},
  {"op": "send", "from": "server", "connection": 0, "size": 100, "fault": {"fragments": 3}},
  {"op": "write", "from": "client", "connection": 0, "stag": "0x10", "to": 0, "size": 3000, "fault": {"reverse_tsn": true}},
  {"op": "send", "from": "client", "connection": 1, "size": 10},
  {"op": "send", "from": "client", "connection": 2, "size": 10},
  {"op": "send", "from": "client", "connection": 3, "size": 10},
  {"op": "send", "from": "client", "connection": 4, "size": 10},
  {"op": "send", "from": "client", "connection": 5, "size": 10},
  {"op": "send", "from": "client", "connection": 6, "size": 10},
  {"op": "send", "from": "client", "connection": 7, "size": 10},
  {"op": "send", "from": "client", "connection": 7, "size": 10, "fault": {"ddp_ssn": "skip"}}
 ]})");
  SynthResult r;
  std::string err;
  ASSERT_TRUE(synthesize_json(j, tmp("sctp-faults.pcap"), r, err)) << err;
  EXPECT_FALSE(r.exhaustive);  // function code 9 leaves the session to the analyzer's policy
  std::vector<std::pair<std::string, std::uint64_t>> predicted;
  for (const auto& e : r.expected)
    predicted.emplace_back(e.code, e.frame);
  EXPECT_EQ(predicted, (std::vector<std::pair<std::string, std::uint64_t>>{
                           {"sctp.adaptation-missing", 13},
                           {"sctp.function-code-invalid", 21},
                           {"sctp.private-data-invalid", 45},
                           {"sctp.ssn-invalid", 62},
                           {"sctp.chunk-ordered", 64},
                           {"sctp.segment-too-large", 66},
                           {"sctp.session-unterminated", 74},
                           {"sctp.segment-early", 80},
                           {"sctp.ssn-invalid", 88},
                           {"sctp.private-data-invalid", 114}}));
  // What the analyzer finds besides: the function code 9 session's Accept and Terminates
  // (sctp.session-invalid) and its segment (sctp.segment-early), nothing else.
  auto got = analyze(r, tmp("sctp-faults.pcap"));
  std::vector<std::pair<std::string, std::uint64_t>> rest;
  for (const auto& g : got)
    if (std::find(predicted.begin(), predicted.end(), g) == predicted.end()) rest.push_back(g);
  EXPECT_EQ(rest,
            (std::vector<std::pair<std::string, std::uint64_t>>{{"sctp.session-invalid", 23},
                                                                {"sctp.segment-early", 72},
                                                                {"sctp.session-invalid", 104},
                                                                {"sctp.session-invalid", 106}}));
  for (const auto& p : predicted)
    EXPECT_NE(std::find(got.begin(), got.end(), p), got.end()) << p.first << " " << p.second;
}

TEST(SynthSctp, RefusesWhatSctpCannotCarry) {
  json j = base_scenario();  // CRC asked for
  j["llp"] = "sctp";
  SynthResult r;
  std::string err;
  EXPECT_FALSE(synthesize_json(j, tmp("refused.pcap"), r, err));
  EXPECT_NE(err.find("connections[0]"), std::string::npos) << err;
  json m = base_scenario();
  m["connections"][0]["sctp"] = {{"terminate", false}};
  EXPECT_FALSE(synthesize_json(m, tmp("refused.pcap"), r, err));
  EXPECT_NE(err.find("needs \"llp\": \"sctp\""), std::string::npos) << err;
}

}  // namespace
}  // namespace ddpscope::synth
