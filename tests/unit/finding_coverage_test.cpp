// SPDX-License-Identifier: GPL-2.0-or-later
// Catalog coverage: every code in finding_catalog() must be produced by something the tests
// check: a bundled sample's golden report or expected findings (samples/*/NAME.golden.json and
// NAME.expected.json, tests/capture/golden/, all verified against the real CLI by the capture
// tests), or a case in kCases below, where a small builder-made input fed to a real Analyzer
// must report the code at the case's frame.
//
// A new catalog entry with no sample showing it needs one row in kCases: the code, the frame,
// and a lambda that feeds the Analyzer (hostile::Wire numbers frames from 1: SYN 1, SYN-ACK 2,
// MPA Request 3, MPA Reply 4, the first FPDU 5).
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "ddpscope/analysis/analyzer.h"
#include "ddpscope/findings/catalog.h"
#include "ddpscope/rdmap/data_sink.h"
#include "hostile/hostile_builders.h"
#include "unit/sctp_builders.h"

namespace ddpscope {
namespace {

using hostile::Wire;
using wire::Opcode;

struct Case {
  std::string_view code;
  std::string_view input;  // what the input breaks, for the test's name and failure messages
  std::uint64_t frame;     // the frame the finding must name
  void (*feed)(Analyzer&, Wire&);
  void (*configure)(AnalyzerOptions&) = nullptr;
};

void PrintTo(const Case& c, std::ostream* os) {
  *os << c.code << " at frame " << c.frame << ": " << c.input;
}

Bytes octets(std::size_t n, std::uint8_t value) {
  return Bytes(n, value);
}

const Case kCases[] = {
    {"sctp.retransmission-conflict",
     "an SCTP DATA chunk retransmitted with one octet changed (RFC 9260 §6.2)", 8,
     [](Analyzer& an, Wire&) {
       sctptest::Association a(an);
       a.setup();          // frames 1-4
       a.session_setup();  // 5-6
       const Bytes c =
           a.data_chunk(0,
                        a.seg(0, sctptest::ulpdu(wire::untagged_header(Opcode::send, 0, 1, 0, true),
                                                 octets(30, 7))),
                        wire::kPpidDdpSegment);
       a.packet(0, c);  // 7
       Bytes altered = c;
       altered[wire::kSctpDataHeaderSize + 20] ^= 0x01;
       a.packet(0, altered);  // 8
     }},
    {"capture.truncated-frame", "an FPDU's TCP segment cut by the snaplen after 10 octets", 5,
     [](Analyzer&, Wire& w) {
       w.handshake();
       const Bytes f =
           w.fpdu_bytes(wire::untagged_header(Opcode::send, 0, 1, 0, true), octets(64, 1));
       w.segment(0, w.seq[0], ByteView(f).first(10), net::tcp_flag::ack,
                 static_cast<std::uint32_t>(f.size()));
     }},
    {"capture.truncated-file", "the capture file ends inside a record", 4,
     [](Analyzer& an, Wire& w) {
       w.handshake();
       an.note_truncated_file(w.frames(), "record header of frame 5 cut");
     }},
    {"mpa.crc-unexpected", "a non-zero CRC field while CRC is not in use", 5,
     [](Analyzer&, Wire& w) {
       w.crc = false;
       w.handshake();
       Bytes f = w.fpdu_bytes(wire::untagged_header(Opcode::send, 0, 1, 0, true), octets(8, 1));
       for (std::size_t i = f.size() - wire::kMpaCrcSize; i < f.size(); ++i)
         f[i] = 0xA5;
       w.send(0, f);
     }},
    {"mpa.private-data-long", "an MPA Request with 300 octets of private data", 3,
     [](Analyzer&, Wire& w) { w.handshake(300); }},
    // Going back within one message is ddp.tagged.bounds (the TO does not continue the message:
    // a compliant sink places nothing of it); the note says the octets it tried to place again
    // differ from those placed.
    {"ddp.tagged.conflicting-placement",
     "an RDMA Write message placing its first 16 octets twice, with different content", 6,
     [](Analyzer&, Wire& w) {
       w.handshake();
       w.fpdu(0, wire::tagged_header(Opcode::rdma_write, 0x100, 0x1000, false), octets(16, 0xAA));
       w.fpdu(0, wire::tagged_header(Opcode::rdma_write, 0x100, 0x1000, true), octets(16, 0xBB));
     }},
    // RFC 7306: an Immediate Data body is 8 octets, an Atomic Response body 12.
    {"rdmap.body-invalid", "an Immediate Data message of 7 octets", 5,
     [](Analyzer&, Wire& w) {
       w.handshake();
       w.fpdu(0, wire::untagged_header(Opcode::immediate_data, wire::kQnSend, 1, 0, true),
              octets(7, 0x42));
     }},
    {"rdmap.body-invalid", "an Atomic Response of 11 octets", 5,
     [](Analyzer&, Wire& w) {
       w.handshake();
       w.fpdu(1,
              wire::untagged_header(Opcode::atomic_response, wire::kQnAtomicResponse, 1, 0, true),
              octets(11, 0));
     }},
    {"ddp.tagged.access-rights",
     "an RDMA Write to a region the regions file grants remote read only", 5,
     [](Analyzer& an, Wire& w) {
       RegionSpec r{0x300, 0x1000, 0x1000, std::nullopt, "read-only"};
       r.access = ddp::access::remote_read;
       an.add_regions({&r, 1});
       w.handshake();
       w.fpdu(0, wire::tagged_header(Opcode::rdma_write, 0x300, 0x1000, true), octets(16, 1));
     }},
    {"rdmap.invalidate-refused", "a Send with Invalidate of an STag the regions file lacks", 5,
     [](Analyzer& an, Wire& w) {
       an.add_regions({});
       w.handshake();
       w.fpdu(0, wire::untagged_header(Opcode::send_invalidate, wire::kQnSend, 1, 0, true, 0x999),
              octets(8, 1));
     }},
    {"rdmap.terminate-unexpected",
     "a Send on QN 1, answered with a Terminate no profile predicts (RDMAP / Remote Operation / "
     "Unspecified)",
     6,
     [](Analyzer&, Wire& w) {
       w.handshake();
       w.fpdu(0, wire::untagged_header(Opcode::send, wire::kQnReadRequest, 1, 0, true),
              octets(8, 1));
       wire::Terminate t;
       t.control.layer = static_cast<std::uint8_t>(TermLayer::rdmap);
       t.control.etype = rdmap_etype::remote_operation;
       t.control.code = rdmap_code::unspecified;
       Bytes body;
       ByteWriter bw(body);
       wire::encode_terminate(t, wire::TerminateLayout::rfc, bw);
       w.fpdu(1, wire::untagged_header(Opcode::terminate, wire::kQnTerminate, 1, 0, true), body);
     }},
    {"engine.limit-reached", "a second STag past max_regions 1", 6,
     [](Analyzer&, Wire& w) {
       w.crc = false;
       w.handshake();
       w.fpdu(0, wire::tagged_header(Opcode::rdma_write, 1, 0, true), octets(4, 1));
       w.fpdu(0, wire::tagged_header(Opcode::rdma_write, 2, 0, true), octets(4, 2));
     },
     [](AnalyzerOptions& o) { o.limits.max_regions = 1; }},
    // Mid-stream (no MPA handshake, a --port hint): SYN 1, SYN-ACK 2, FPDUs from frame 3.
    {"mpa.crc-detected", "a mid-stream CRC-off stream hinted with no CRC setting", 3,
     [](Analyzer&, Wire& w) {
       w.crc = false;
       w.syn();
       for (std::uint32_t msn = 1; msn <= 4; ++msn)
         w.fpdu(0, wire::untagged_header(Opcode::send, wire::kQnSend, msn, 0, true), octets(16, 1));
     },
     [](AnalyzerOptions& o) {
       o.hints.push_back(StreamHint{4791, std::nullopt, std::nullopt});
     }},
    {"mpa.no-fpdu-boundary", "a mid-stream CRC-off stream hinted with CRC on", 5,
     [](Analyzer&, Wire& w) {
       w.crc = false;
       w.syn();
       for (std::uint32_t msn = 1; msn <= 3; ++msn)
         w.fpdu(0, wire::untagged_header(Opcode::send, wire::kQnSend, msn, 0, true), octets(16, 1));
     },
     [](AnalyzerOptions& o) {
       o.hints.push_back(StreamHint{4791, std::nullopt, true});
     }},
};

// Codes only a Data Sink that knows its own posted buffers can produce — an endpoint, never a
// capture: proven on the Data Sink model the endpoint runs (rdmap/data_sink.h).
class EndpointMemory final : public rdmap::SinkMemory {
 public:
  const ddp::RegionFacts* region(std::uint32_t) override { return nullptr; }
  bool regions_known() const override { return true; }
  ddp::UntaggedBuffer send_buffer() override { return {ddp::UntaggedBuffer::State::none, 0}; }
};

struct SinkCase {
  std::string_view code;
  std::string_view input;
  wire::DdpHeader header;
  std::size_t payload;
};

const SinkCase kSinkCases[] = {
    {"ddp.untagged.no-buffer", "a Send while no receive buffer is posted",
     wire::untagged_header(Opcode::send, wire::kQnSend, 1, 0, true), 8},
};

std::string_view sink_case_code(const SinkCase& c) {
  rdmap::DataSink sink;
  EndpointMemory memory;
  const Bytes payload = octets(c.payload, 7);
  const auto step = sink.receive(wire::DdpSegment{c.header, payload}, memory);
  return step.violation ? finding_spec(step.violation->id).code : std::string_view();
}

TEST(FindingCoverage, DataSinkCasesProduceTheirCodes) {
  for (const SinkCase& c : kSinkCases)
    EXPECT_EQ(sink_case_code(c), c.code) << c.input;
}

std::unique_ptr<Analyzer> run(const Case& c) {
  AnalyzerOptions o;
  if (c.configure) c.configure(o);
  auto an = std::make_unique<Analyzer>(o);
  Wire w(*an);
  c.feed(*an, w);
  an->finish();
  return an;
}

bool reports(const Model& m, const Case& c) {
  for (const auto& f : m.findings)
    if (f.code() == c.code && f.frame == c.frame) return true;
  return false;
}

std::string listing(const Model& m) {
  std::string s;
  for (const auto& f : m.findings)
    s += "\n  frame " + std::to_string(f.frame) + ": " + std::string(f.code()) + " (" + f.message +
         ")";
  return s.empty() ? " none" : s;
}

// Codes in the findings of every bundled golden report and expected-findings file.
std::map<std::string, std::string> golden_codes() {
  namespace fs = std::filesystem;
  const fs::path root(DDPSCOPE_SOURCE_DIR);
  std::vector<fs::path> dirs{root / "tests" / "capture" / "golden"};
  for (const auto& d : fs::directory_iterator(root / "samples"))
    if (d.is_directory()) dirs.push_back(d.path());
  std::map<std::string, std::string> codes;  // code -> the first file showing it
  for (const auto& dir : dirs) {
    std::vector<fs::path> files;
    for (const auto& e : fs::directory_iterator(dir)) {
      const std::string name = e.path().filename().string();
      if (name.ends_with(".golden.json") || name.ends_with(".expected.json"))
        files.push_back(e.path());
    }
    std::sort(files.begin(), files.end());
    for (const auto& p : files) {
      std::ifstream in(p);
      const auto doc = nlohmann::json::parse(in, nullptr, false);
      EXPECT_FALSE(doc.is_discarded()) << p << " is not JSON";
      if (doc.is_discarded()) continue;
      for (const char* list : {"findings", "expected"})
        if (doc.contains(list))
          for (const auto& f : doc[list])
            codes.emplace(f.at("code").get<std::string>(), p.filename().string());
    }
  }
  return codes;
}

class FindingCoverageCase : public ::testing::TestWithParam<Case> {};

TEST_P(FindingCoverageCase, ReportsItsCodeAtItsFrame) {
  const Case& c = GetParam();
  ASSERT_TRUE(finding_by_code(c.code)) << c.code << " is not in the catalog";
  const auto an = run(c);
  EXPECT_TRUE(reports(an->model(), c)) << c.input << ": no " << c.code << " at frame " << c.frame
                                       << "; findings:" << listing(an->model());
}

INSTANTIATE_TEST_SUITE_P(Table, FindingCoverageCase, ::testing::ValuesIn(kCases),
                         [](const ::testing::TestParamInfo<Case>& info) {
                           std::string name = std::to_string(info.index) + "_";
                           for (char ch : info.param.code)
                             name += std::isalnum(static_cast<unsigned char>(ch)) ? ch : '_';
                           return name;
                         });

TEST(FindingCoverage, EveryCatalogCodeIsProduced) {
  const auto from_goldens = golden_codes();
  std::set<std::string_view> from_cases;
  for (const Case& c : kCases) {
    const auto an = run(c);
    if (reports(an->model(), c)) from_cases.insert(c.code);  // a broken case covers nothing
  }
  for (const SinkCase& c : kSinkCases)
    if (sink_case_code(c) == c.code) from_cases.insert(c.code);
  std::vector<std::string_view> unproduced;
  for (const FindingSpec& spec : finding_catalog())
    if (!from_goldens.count(std::string(spec.code)) && !from_cases.count(spec.code))
      unproduced.push_back(spec.code);
  std::string list;
  for (auto code : unproduced)
    list += "\n  " + std::string(code);
  EXPECT_TRUE(unproduced.empty()) << unproduced.size()
                                  << " catalog codes produced by no sample golden and no case in "
                                  << "tests/unit/finding_coverage_test.cpp:" << list;
  // A golden naming a code the catalog does not have was written by another engine.
  for (const auto& [code, file] : from_goldens)
    EXPECT_TRUE(finding_by_code(code)) << file << " shows " << code << ", not in the catalog";
}

}  // namespace
}  // namespace ddpscope
