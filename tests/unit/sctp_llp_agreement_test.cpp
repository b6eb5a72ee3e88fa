// SPDX-License-Identifier: GPL-2.0-or-later
// The DDP and RDMAP rules do not depend on the LLP: the same DDP segments, carried once in MPA
// FPDUs over TCP and once in SCTP user messages on PPID 16, give the same findings (code,
// severity, Terminate) at the same segment. Faults: bounds against a regions file, an invalid
// STag, an MSN gap, a Read Response with no Read Request.
#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "ddpscope/analysis/analyzer.h"
#include "hostile/hostile_builders.h"
#include "sctp_builders.h"

namespace ddpscope {
namespace {

using wire::Opcode;

// A finding by the index of the DDP segment whose frame it names (-1: no segment's frame).
using Seen = std::tuple<std::string, Severity, int, std::optional<TerminateError>>;
using Sender = std::function<std::uint64_t(int dir, const Bytes& ulpdu)>;
using Script = std::function<void(const Sender&)>;

std::vector<Seen> summarise(const Model& m, const std::vector<std::uint64_t>& frames) {
  std::vector<Seen> out;
  for (const auto& f : m.findings) {
    int index = -1;
    for (std::size_t i = 0; i < frames.size(); ++i)
      if (frames[i] == f.frame) index = static_cast<int>(i);
    out.emplace_back(std::string(f.code()), f.severity, index, f.terminate);
  }
  return out;
}

std::vector<Seen> over_mpa(const Script& script, const std::vector<RegionSpec>& regions) {
  Analyzer an;
  if (!regions.empty()) an.add_regions(regions);
  hostile::Wire w(an);
  w.crc = true;
  w.handshake();
  std::vector<std::uint64_t> frames;
  script([&](int dir, const Bytes& u) {
    w.send(dir, wire::encode_fpdu(u, wire::FpduEncodeOptions{}));
    frames.push_back(w.frames());
    return w.frames();
  });
  an.finish();
  return summarise(an.model(), frames);
}

std::vector<Seen> over_sctp(const Script& script, const std::vector<RegionSpec>& regions) {
  Analyzer an;
  if (!regions.empty()) an.add_regions(regions);
  sctptest::Association a(an);
  a.setup();
  a.session_setup();
  std::vector<std::uint64_t> frames;
  script([&](int dir, const Bytes& u) {
    frames.push_back(a.message(dir, u));
    return frames.back();
  });
  a.sack(0);
  a.sack(1);
  an.finish();
  return summarise(an.model(), frames);
}

Bytes ulpdu(const wire::DdpHeader& h, std::size_t n = 64) {
  return sctptest::ulpdu(h, Bytes(n, 0x5A));
}

struct Fault {
  const char* name;
  std::string code;  // the finding it must produce
  std::vector<RegionSpec> regions;
  Script script;
};

std::vector<Fault> faults() {
  RegionSpec r;
  r.stag = 0x100;
  r.base = 0x1000;
  r.length = 256;
  return {
      {"bounds",
       "ddp.tagged.bounds",
       {r},
       [](const Sender& s) {
         s(0, ulpdu(wire::tagged_header(Opcode::rdma_write, 0x100, 0x1000, true), 128));
         s(0, ulpdu(wire::tagged_header(Opcode::rdma_write, 0x100, 0x1080, true), 512));
       }},
      {"invalid-stag",
       "ddp.tagged.invalid-stag",
       {r},
       [](const Sender& s) {
         s(0, ulpdu(wire::tagged_header(Opcode::rdma_write, 0x999, 0, true), 64));
       }},
      {"msn-gap",
       "ddp.untagged.msn-gap",
       {},
       [](const Sender& s) {
         s(0, ulpdu(wire::untagged_header(Opcode::send, 0, 1, 0, true)));
         s(0, ulpdu(wire::untagged_header(Opcode::send, 0, 3, 0, true)));
       }},
      {"read-response-unmatched",
       "rdmap.read-response-unmatched",
       {},
       [](const Sender& s) {
         s(1, ulpdu(wire::tagged_header(Opcode::read_response, 0x55, 0, true), 32));
       }},
  };
}

TEST(SctpLlpAgreement, DdpAndRdmapFaultsAreTheSameOverMpaAndSctp) {
  for (const Fault& f : faults()) {
    const auto mpa = over_mpa(f.script, f.regions);
    const auto sctp = over_sctp(f.script, f.regions);
    EXPECT_EQ(mpa, sctp) << f.name;
    bool found = false;
    for (const auto& s : sctp)
      found |= std::get<0>(s) == f.code && std::get<2>(s) >= 0;
    EXPECT_TRUE(found) << f.name << ": " << f.code << " not reported at a segment";
  }
}

}  // namespace
}  // namespace ddpscope
