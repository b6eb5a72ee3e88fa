// SPDX-License-Identifier: GPL-2.0-or-later
// Agreement of the two hosts of the rule layer (issue 12), under each Data Sink profile (issue
// 40): a real session::Session configured with profile P is the victim of a crafting peer (in
// memory); every octet the victim received and sent is kept as one TCP segment, in order, and
// fed to a real Analyzer run with profile P and a regions file built from both hosts'
// registrations (regions, PDs, access rights, validity) and the stream's PDs. For each hostile
// injection the session tests use (session_test.cpp, loopback_test.cpp, hostile_peer_test.cpp):
//   - the analyzer reports finding F of the expected code at the injected segment's frame, with
//     P's outcome (findings/sink_profile.h) and, for a Terminate, P's triple (and RFC's beside it
//     where they differ), and no other finding that says the sink does something about a rule;
//   - the victim did that: sent Terminate T (Session::terminate_sent(), decoded by the analyzer
//     in the capture, quoting the injected segment when it quotes one, and matching P's
//     prediction), or closed without one, or stopped reading (wait), or went on (accept).
// Every case runs under rfc and siw; what each profile does is written in the case (so a changed
// row of either profile fails it), and a case where siw's answer differs from RFC's names siw's
// answer in its name (..._SiwNoBuffer, ..._SiwCloses, ...).
// Where the analyzer cannot know what the endpoint knows (posted receive buffers, RFC 7306
// support, a region bound to a stream the capture does not name), the test is named
// ..._AnalyzerCannotKnow and asserts what each host does.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "ddpscope/analysis/analyzer.h"
#include "ddpscope/analysis/regions_file.h"
#include "ddpscope/common/crc32c.h"
#include "ddpscope/findings/sink_profile.h"
#include "ddpscope/session/session.h"
#include "hostile/hostile_builders.h"

namespace ddpscope {
namespace {

using session::MemoryTable;
using session::Role;
using session::Session;
using session::SessionConfig;
using wire::Opcode;
using State = Session::State;

constexpr TerminateError T(std::uint8_t l, std::uint8_t t, std::uint8_t c) {
  return {l, t, c};
}

constexpr std::uint8_t op(Opcode o) {
  return static_cast<std::uint8_t>(o);
}

// What the victim's Data Sink does about the rule broken, as a case states it for one profile.
struct Answer {
  SinkOutcome outcome = SinkOutcome::terminate;
  std::optional<TerminateError> terminate;
  Answer(TerminateError t) : terminate(t) {}  // NOLINT(google-explicit-constructor): T(...)
  explicit Answer(SinkOutcome o) : outcome(o) {}
};
const Answer kClose{SinkOutcome::close};
const Answer kWait{SinkOutcome::wait};
const Answer kAccept{SinkOutcome::accept};

// The finding and the answer a case expects under one profile.
struct Verdict {
  FindingId id;
  Answer answer;
};
// siw implements no RFC 7306 (sink_traits): its opcodes are refused before any other rule.
const Verdict kNoRfc7306{FindingId::rdmap_opcode_invalid, T(0, 2, 6)};

// The two hosts as hostile::Wire names them: the peer is the client (direction 0, 10.0.0.1:40000),
// the victim the server (direction 1, 10.0.0.254:4791).
constexpr int kToVictim = 0;
constexpr int kFromVictim = 1;
const char* const kVictimHost = "10.0.0.254";
const char* const kVictimEndpoint = "10.0.0.254:4791";
const char* const kPeerHost = "10.0.0.1";
const char* const kPeerEndpoint = "10.0.0.1:40000";

struct Options {
  bool crc = true;
  bool markers = false;  // the victim asks for markers: what it receives carries them
  std::uint16_t ird = 1;
  std::size_t low_water = 256u << 10;  // 0: the victim never answers a Read Request
  bool rfc7306 = true;
  bool send_rtr = true;    // false: the peer's RTR is dropped, the test sends its own first FPDU
  bool early_rtr = false;  // the peer's RTR rides with its MPA Request, before the Reply
};

nlohmann::json access_names(std::uint8_t a) {
  nlohmann::json j = nlohmann::json::array();
  if (a & ddp::access::local_write) j.push_back("local_write");
  if (a & ddp::access::remote_read) j.push_back("remote_read");
  if (a & ddp::access::remote_write) j.push_back("remote_write");
  if (a & ddp::access::remote_atomic) j.push_back("remote_atomic");
  return j;
}

class Hosts {
 public:
  MemoryTable vmem;                                               // the victim's registrations
  MemoryTable pmem{session::MemoryLimits{.first_index = 0x100}};  // the peer's
  std::uint32_t pd = vmem.alloc_pd();
  std::uint32_t other_pd = vmem.alloc_pd();
  static constexpr std::uint64_t kBase = 0x1000;
  Bytes region_mem = Bytes(256 + 64, 0xA5);  // 32 guard octets on each side
  std::span<std::uint8_t> region = std::span<std::uint8_t>(region_mem).subspan(32, 256);
  Bytes recv = Bytes(64, 0);       // the victim's one posted receive buffer
  std::uint32_t stag = 0;          // every right
  std::uint32_t ro_stag = 0;       // remote read only
  std::uint32_t wo_stag = 0;       // remote write only
  std::uint32_t foreign_stag = 0;  // another PD
  std::uint32_t bound_stag = 0;    // bound to another stream
  std::uint32_t fixed_stag = 0;    // not remotely invalidatable
  std::uint32_t unknown_stag = 0;  // registered by nobody
  Bytes big = Bytes(2048, 0);      // room for FPDUs that hold markers
  std::uint32_t big_stag = 0;
  Bytes peer_mem = Bytes(4096, 0x5A);
  std::uint32_t peer_stag = 0;
  std::unique_ptr<Session> victim;
  std::unique_ptr<Session> peer;
  bool to_peer = true;  // the victim's octets reach the peer (false: it never answers them)

  explicit Hosts(SinkProfile profile, Options o = {}) : profile_(profile), opt_(o) {
    SessionConfig vc;
    vc.role = Role::responder;
    vc.pd = pd;
    vc.sink_profile = profile;
    if (profile == SinkProfile::siw)  // as `ddpscope endpoint --sink-profile siw` configures it
      vc.terminate_layout = wire::TerminateLayout::siw_bitfield;
    vc.rfc7306 = o.rfc7306;
    vc.mpa.revision = 2;
    vc.mpa.markers = o.markers;
    vc.mpa.peer_to_peer = true;
    vc.mpa.rtr_types =
        session::rtr_offer::write | session::rtr_offer::read | session::rtr_offer::send;
    vc.mpa.ird = o.ird;
    vc.limits.tx_low_water = o.low_water;
    victim = std::make_unique<Session>(vmem, vc);
    SessionConfig pc;
    pc.role = Role::initiator;
    pc.pd = pmem.alloc_pd();
    pc.mpa.revision = 2;
    pc.mpa.crc = o.crc;
    pc.mpa.peer_to_peer = true;
    pc.mpa.rtr_types = session::rtr_offer::write;
    peer = std::make_unique<Session>(pmem, pc);
    stag = reg(vmem, pd, region, kBase, ddp::access::all);
    ro_stag = reg(vmem, pd, region, kBase, ddp::access::remote_read);
    wo_stag = reg(vmem, pd, region, kBase, ddp::access::remote_write);
    foreign_stag = reg(vmem, other_pd, region, kBase, ddp::access::all);
    bound_stag = reg(vmem, pd, region, kBase, ddp::access::all, victim->stream_id() + 1000);
    fixed_stag = reg(vmem, pd, region, kBase, ddp::access::all);
    vmem.find(fixed_stag)->invalidatable = false;
    big_stag = reg(vmem, pd, big, 0x10000, ddp::access::all);
    unknown_stag = stag + 0x1000;  // an index nobody registered
    peer_stag = reg(pmem, pc.pd, peer_mem, 0x900000, ddp::access::all);
    victim->post_recv(recv, 1);
    victim->start();
    peer->start();
    if (o.early_rtr) {
      // The RTR (a zero-length Write, RFC 6581 §9.2) in the Request's segment: sent before the
      // Reply could have arrived.
      Bytes b(peer->output().begin(), peer->output().end());
      peer->consume_output(b.size());
      request_size_ = b.size();
      wire::FpduEncodeOptions fo;
      fo.crc = o.crc;
      const Bytes rtr = wire::encode_fpdu(tagged(1, 0, 0), fo);
      b.insert(b.end(), rtr.begin(), rtr.end());
      injected_ = chunks_.size();
      victim->receive(b);
      chunks_.push_back({kToVictim, std::move(b)});
    } else {
      move(*peer, kToVictim);  // the MPA Request
      request_size_ = chunks_.back().bytes.size();
    }
    move(*victim, kFromVictim);  // the MPA Reply
    if (!o.send_rtr || o.early_rtr) {
      // The peer's RTR never reaches the wire: the test's own first FPDU takes its place.
      Bytes rtr(peer->output().begin(), peer->output().end());
      peer->consume_output(rtr.size());
      dropped_ = rtr.size();
    }
    pump();
  }

  // Moves octets both ways until nothing moves; each move is one TCP segment.
  void pump() {
    for (int i = 0; i < 100; ++i) {
      const bool a = move(*peer, kToVictim);
      const bool b = move(*victim, kFromVictim);
      if (!a && !b) return;
    }
  }

  // ---- ULPDUs (RFC 5041 §4) ----
  static Bytes tagged(std::uint32_t s, std::uint64_t to, std::size_t len, bool last = true,
                      std::uint8_t opcode = 0) {
    wire::DdpHeader h;
    h.control.tagged = true;
    h.control.last = last;
    h.rsvd_ulp0 = wire::RdmapControl{1, 0, opcode}.byte();
    h.stag = s;
    h.to = to;
    return hostile::ulpdu(h, Bytes(len, 0x42));
  }
  static Bytes untagged(std::uint8_t opcode, std::uint32_t qn, std::uint32_t msn, std::uint32_t mo,
                        ByteView body, bool last = true, std::uint32_t inv = 0) {
    wire::DdpHeader h;
    h.control.last = last;
    h.rsvd_ulp0 = wire::RdmapControl{1, 0, opcode}.byte();
    h.rsvd_ulp1 = inv;
    h.qn = qn;
    h.msn = msn;
    h.mo = mo;
    return hostile::ulpdu(h, body);
  }
  static Bytes read_request(std::uint32_t src, std::uint64_t to, std::uint32_t size,
                            std::uint32_t sink = 0x777) {
    wire::ReadRequest r;
    r.sink_stag = sink;
    r.sink_to = 0x5000;
    r.size = size;
    r.source_stag = src;
    r.source_to = to;
    Bytes b;
    ByteWriter w(b);
    wire::encode_read_request(r, w);
    return b;
  }
  static Bytes atomic_request(
      std::uint32_t s, std::uint64_t to,
      std::uint8_t atomic_op = static_cast<std::uint8_t>(wire::AtomicOp::fetch_add)) {
    wire::AtomicRequest a;
    a.atomic_opcode = atomic_op;
    a.request_id = 9;
    a.remote_stag = s;
    a.remote_to = to;
    a.add_swap_data = 1;
    Bytes b;
    ByteWriter w(b);
    wire::encode_atomic_request(a, w);
    return b;
  }

  // The peer sends `ulpdu` as one FPDU (its CRC and markers); the segment is the injection.
  void inject(ByteView ulpdu) {
    peer->send_raw_ulpdu(ulpdu);
    injected_ = chunks_.size();
    pump();
  }
  // Octets written to the victim as they are (an FPDU the test framed itself).
  void inject_octets(Bytes raw) {
    injected_ = chunks_.size();
    victim->receive(raw);
    chunks_.push_back({kToVictim, std::move(raw)});
    pump();
  }
  // The peer's stream position from its S0 (RFC 5044 §4.3), where its next FPDU starts.
  std::uint64_t peer_stream_pos() const {
    std::uint64_t n = dropped_;
    for (const auto& c : chunks_)
      if (c.dir == kToVictim) n += c.bytes.size();
    return n - request_size_;
  }

  // ---- the analysis of what crossed the wire ----
  // A regions file built from both hosts' registrations (as they stand now) and their PDs,
  // through the real parser.
  std::string regions_file(bool with_pds = true) const {
    nlohmann::json regions = nlohmann::json::array();
    const auto add = [&](const MemoryTable& mem, std::uint32_t s, const char* host) {
      const session::Region* r = mem.find(s);
      if (r == nullptr) return;
      regions.push_back({{"stag", s},
                         {"base", r->base},
                         {"length", r->mem.size()},
                         {"sink", host},
                         {"pd", r->pd},
                         {"access", access_names(r->access)},
                         {"valid", r->valid},
                         {"invalidatable", r->invalidatable}});
    };
    for (std::uint32_t s : {stag, ro_stag, wo_stag, foreign_stag, bound_stag, fixed_stag, big_stag})
      add(vmem, s, kVictimHost);
    add(pmem, peer_stag, kPeerHost);
    nlohmann::json file = {{"regions", regions}};
    if (with_pds) {
      file["protection_domains"] = {{{"endpoint", kVictimEndpoint}, {"pd", victim->pd()}},
                                    {{"endpoint", kPeerEndpoint}, {"pd", peer->pd()}}};
    }
    return file.dump(2);
  }

  const Model& analyze(bool with_pds = true) {
    RegionsFile file;
    std::string err;
    EXPECT_TRUE(parse_regions_file(regions_file(with_pds), file, err)) << err;
    AnalyzerOptions o;
    o.sink_profile = profile_;
    o.protection_domains = file.protection_domains;
    o.send_buffer_size = static_cast<std::uint32_t>(recv.size());
    analyzer_ = std::make_unique<Analyzer>(o);
    analyzer_->add_regions(file.regions);
    hostile::Wire w(*analyzer_);
    w.syn();
    frames_.clear();
    for (const auto& c : chunks_) {
      w.send(c.dir, c.bytes);
      frames_.push_back(w.frames());
    }
    analyzer_->finish();
    return analyzer_->model();
  }
  std::uint64_t injected_frame() const { return frames_.at(injected_); }

  SinkProfile profile() const { return profile_; }
  bool siw() const { return profile_ == SinkProfile::siw; }

  // Findings that say what the profile's Data Sink does about a rule broken (its outcome, or a
  // Terminate where no outcome is given): all but the decoded Terminate.
  static std::vector<const Finding*> verdicts(const Model& m, int dir) {
    std::vector<const Finding*> v;
    for (const auto& f : m.findings)
      if (f.direction == dir && (f.outcome || f.terminate) && f.id != FindingId::rdmap_terminate)
        v.push_back(&f);
    return v;
  }
  static std::vector<const Finding*> decoded_terminates(const Model& m, int dir) {
    std::vector<const Finding*> v;
    for (const auto& f : m.findings)
      if (f.direction == dir && f.id == FindingId::rdmap_terminate) v.push_back(&f);
    return v;
  }
  static std::string dump(const Model& m) {
    std::string s;
    for (const auto& f : m.findings)
      s += "  frame " + std::to_string(f.frame) + " dir " + std::to_string(f.direction) + " " +
           std::string(f.code()) +
           (f.outcome ? " <" + std::string(to_string(*f.outcome)) + ">" : "") +
           (f.terminate ? " [" + terminate_error_name(*f.terminate) + "]" : "") + ": " + f.message +
           "\n";
    return s;
  }

  // The victim sent `t`; the analyzer's capture shows it (decoded, quoting the injection, the
  // profile's prediction).
  void expect_victim_terminated(TerminateError t, const Model& m) {
    EXPECT_EQ(victim->state(), State::terminated);
    ASSERT_TRUE(victim->terminate_sent());
    EXPECT_EQ(*victim->terminate_sent(), t) << terminate_error_name(*victim->terminate_sent());
    if (to_peer) {
      ASSERT_TRUE(peer->terminate_received());
      // The crafting peer reads RFC's layout; a siw Terminate without M/D/R reads as either
      // (wire/rdmap.h), and the analyzer run with the siw profile reads it as siw's (below).
      if (!siw()) {
        EXPECT_EQ(*peer->terminate_received(), t);
      }
    }
    const auto decoded = decoded_terminates(m, kFromVictim);
    ASSERT_EQ(decoded.size(), 1u) << dump(m);
    ASSERT_TRUE(decoded[0]->terminate);
    EXPECT_EQ(*decoded[0]->terminate, t) << terminate_error_name(*decoded[0]->terminate);
    EXPECT_GT(decoded[0]->frame, injected_frame());
    const std::string quotes = "quotes the segment in frame ";
    const auto at = decoded[0]->message.find(quotes);
    if (at != std::string::npos) {
      // The frame, then (where no rule the capture shows predicts the Terminate, e.g. a region
      // state it cannot show) the rule the Terminate answers under such a state.
      EXPECT_EQ(decoded[0]
                    ->message.substr(at + quotes.size())
                    .substr(0, 1 + std::to_string(injected_frame()).size()),
                std::to_string(injected_frame()) + ")")
          << decoded[0]->message;
    }
    EXPECT_TRUE(verdicts(m, kFromVictim).empty()) << dump(m);
    expect_region_untouched();
  }
  void expect_region_untouched() {
    EXPECT_TRUE(std::all_of(region_mem.begin(), region_mem.end(), [](auto b) { return b == 0xA5; }))
        << "the victim placed octets of a segment it refused";
  }

  // Both hosts agree: the analyzer's one verdict is `id` at the injected frame with the profile's
  // answer `want` (RFC's being `rfc`), and the victim did just that.
  void expect_answer(FindingId id, const Answer& want, const Answer& rfc) {
    const Model& m = analyze();
    const auto v = verdicts(m, kToVictim);
    ASSERT_EQ(v.size(), 1u) << "frame " << injected_frame() << " injected\n" << dump(m);
    const Finding& f = *v[0];
    EXPECT_EQ(f.id, id) << dump(m);
    EXPECT_EQ(f.frame, injected_frame()) << dump(m);
    EXPECT_EQ(f.severity, finding_spec(id).severity);
    EXPECT_FALSE(f.consequence());
    ASSERT_TRUE(f.outcome) << dump(m);
    EXPECT_EQ(*f.outcome, want.outcome) << dump(m);
    EXPECT_EQ(f.terminate, want.terminate) << dump(m);
    // RFC's triple beside the profile's, where they differ (a Terminate RFC sends).
    if (rfc.terminate && want.terminate != rfc.terminate)
      EXPECT_EQ(f.rfc_terminate, rfc.terminate) << dump(m);
    else
      EXPECT_FALSE(f.rfc_terminate) << dump(m);
    const bool stopped = want.outcome != SinkOutcome::accept;
    EXPECT_EQ(victim->violation_outcome(),
              stopped ? std::optional<SinkOutcome>(want.outcome) : std::nullopt);
    switch (want.outcome) {
      case SinkOutcome::terminate: {
        ASSERT_TRUE(want.terminate);
        expect_victim_terminated(*want.terminate, m);
        // The analyzer holds the victim's Terminate to the profile's prediction.
        const auto decoded = decoded_terminates(m, kFromVictim);
        ASSERT_EQ(decoded.size(), 1u);
        ASSERT_TRUE(decoded[0]->matches) << dump(m);
        EXPECT_TRUE(*decoded[0]->matches & (1u << static_cast<unsigned>(profile_))) << dump(m);
        break;
      }
      case SinkOutcome::reject:  // an MPA Reply with R = 1: the handshake, which no case breaks
        ADD_FAILURE() << "no case here breaks the MPA handshake's Request";
        break;
      case SinkOutcome::close:
        EXPECT_EQ(victim->state(), State::closed);
        EXPECT_TRUE(victim->want_shutdown()) << "closed without a FIN";
        EXPECT_FALSE(victim->terminate_sent());
        EXPECT_TRUE(decoded_terminates(m, kFromVictim).empty()) << dump(m);
        expect_region_untouched();
        break;
      case SinkOutcome::wait:
        EXPECT_FALSE(victim->terminate_sent());
        EXPECT_FALSE(victim->want_shutdown());
        EXPECT_TRUE(decoded_terminates(m, kFromVictim).empty()) << dump(m);
        expect_nothing_more_read();
        break;
      case SinkOutcome::accept:
        EXPECT_EQ(victim->state(), State::established);
        EXPECT_FALSE(victim->terminate_sent());
        EXPECT_TRUE(decoded_terminates(m, kFromVictim).empty()) << dump(m);
        break;
    }
  }
  // The same answer under every profile.
  void expect_agreement(FindingId id, TerminateError t) { expect_answer(id, t, t); }
  // RFC's Terminate `rfc`; siw answers `siw_answer`.
  void expect_agreement(FindingId id, TerminateError rfc, const Answer& siw_answer) {
    expect_answer(id, siw() ? siw_answer : Answer(rfc), rfc);
  }
  // A different rule is the first broken under each profile (siw has no RFC 7306).
  void expect_agreement(const Verdict& rfc, const Verdict& siw_verdict) {
    if (siw())
      expect_answer(siw_verdict.id, siw_verdict.answer, siw_verdict.answer);
    else
      expect_answer(rfc.id, rfc.answer, rfc.answer);
  }

  // A wait: the victim reads nothing more, so a valid Write that follows is neither placed nor
  // answered.
  void expect_nothing_more_read() {
    std::fill(region_mem.begin(), region_mem.end(), 0xA5);
    const std::size_t out = victim->output_size();
    wire::FpduEncodeOptions fo;
    victim->receive(wire::encode_fpdu(tagged(stag, kBase, 8), fo));
    expect_region_untouched();
    EXPECT_EQ(victim->output_size(), out);
    EXPECT_FALSE(victim->terminate_sent());
  }

  // The victim sent `t`; the analyzer, lacking what the victim knows, finds nothing to refuse.
  void expect_analyzer_cannot_know(TerminateError t) {
    const Model& m = analyze();
    expect_victim_terminated(t, m);
    EXPECT_TRUE(verdicts(m, kToVictim).empty()) << dump(m);
  }

 private:
  static std::uint32_t reg(MemoryTable& mem, std::uint32_t pd, std::span<std::uint8_t> m,
                           std::uint64_t base, std::uint8_t access,
                           std::optional<std::uint64_t> stream = {}) {
    const auto s = mem.register_region(pd, m, base, access, stream);
    EXPECT_TRUE(s);
    return s.value_or(0);
  }
  bool move(Session& from, int dir) {
    if (from.output_size() == 0) return false;
    Bytes b(from.output().begin(), from.output().end());
    from.consume_output(b.size());
    if (dir == kToVictim)
      victim->receive(b);
    else if (to_peer)
      peer->receive(b);
    chunks_.push_back({dir, std::move(b)});
    return true;
  }

  struct Chunk {
    int dir;
    Bytes bytes;
  };
  SinkProfile profile_;
  Options opt_;
  std::vector<Chunk> chunks_;
  std::vector<std::uint64_t> frames_;
  std::size_t injected_ = 0;
  std::size_t request_size_ = 0;
  std::size_t dropped_ = 0;
  std::unique_ptr<Analyzer> analyzer_;
};

// Each case runs under both Data Sink profiles.
class Agreement : public ::testing::TestWithParam<SinkProfile> {};

// ---- the setup is clean -------------------------------------------------------------------

TEST_P(Agreement, CleanTrafficDrawsNoVerdict) {
  Hosts a(GetParam());
  ASSERT_EQ(a.victim->state(), State::established);
  a.inject(a.tagged(a.stag, Hosts::kBase + 10, 20));
  a.inject(a.untagged(op(Opcode::send), 0, 1, 0, Bytes(16, 1)));
  a.to_peer = false;  // the crafting peer has no Read Request outstanding for the response
  a.inject(a.untagged(op(Opcode::read_request), 1, 1, 0, a.read_request(a.stag, a.kBase, 8)));
  EXPECT_EQ(a.victim->state(), State::established);
  EXPECT_FALSE(a.victim->terminate_sent());
  const Model& m = a.analyze();
  for (const auto& f : m.findings)
    EXPECT_FALSE(f.terminate) << Hosts::dump(m);
  EXPECT_EQ(a.region[10], 0x42);
}

// ---- MPA (RFC 5044 §4, RFC 6581) ---------------------------------------------------------

TEST_P(Agreement, CrcError) {
  Hosts a(GetParam());
  wire::FpduEncodeOptions o;
  Bytes fpdu = wire::encode_fpdu(a.tagged(a.stag, a.kBase, 8), o);
  fpdu[5] ^= 0x10;
  a.inject_octets(fpdu);
  a.expect_agreement(FindingId::mpa_crc_mismatch, T(2, 0, 2));
}

// A marker inside an FPDU whose FPDUPTR fits neither convention (RFC 5044 §4.3); the CRC is
// good over the tampered octets.
TEST_P(Agreement, MarkerFpduptrWrong) {
  Hosts a(GetParam(), {.markers = true});
  ASSERT_EQ(a.victim->state(), State::established);
  const std::uint64_t pos = a.peer_stream_pos();
  wire::FpduEncodeOptions o;
  o.markers = true;
  o.stream_pos = pos;
  Bytes raw = wire::encode_fpdu(a.tagged(a.big_stag, 0x10000, 200 + 512), o);
  std::size_t at =
      (wire::kMpaMarkerInterval - pos % wire::kMpaMarkerInterval) % wire::kMpaMarkerInterval;
  if (at == 0) at = wire::kMpaMarkerInterval;  // not the leading marker: the one inside
  ASSERT_LT(at + 4, raw.size() - 4);
  const std::uint16_t bad = static_cast<std::uint16_t>(load_be16(&raw[at + 2]) + 100);
  raw[at + 2] = static_cast<std::uint8_t>(bad >> 8);
  raw[at + 3] = static_cast<std::uint8_t>(bad);
  mpa_crc_to_wire(crc32c(ByteView(raw).first(raw.size() - 4)), &raw[raw.size() - 4]);
  a.inject_octets(raw);
  a.expect_agreement(FindingId::mpa_marker_invalid, T(2, 0, 3));
}

TEST_P(Agreement, CrcErrorWithMarkers) {
  Hosts a(GetParam(), {.markers = true});
  wire::FpduEncodeOptions o;
  o.markers = true;
  o.stream_pos = a.peer_stream_pos();
  Bytes raw = wire::encode_fpdu(a.tagged(a.big_stag, 0x10000, 700), o);
  raw[600] ^= 0x01;
  a.inject_octets(raw);
  a.expect_agreement(FindingId::mpa_crc_mismatch, T(2, 0, 2));
}

// RFC 6581 §9.2: the Reply chose a zero-length Write RTR; the first FPDU is a Write with data.
TEST_P(Agreement, WrongRtr) {
  Hosts a(GetParam(), {.send_rtr = false});
  ASSERT_EQ(a.victim->state(), State::wait_rtr);
  a.inject(a.tagged(a.stag, a.kBase, 8));
  a.expect_agreement(FindingId::mpa_handshake_invalid, T(2, 0, 7));
}

TEST_P(Agreement, WrongRtrType) {
  Hosts a(GetParam(), {.send_rtr = false});
  a.inject(a.untagged(op(Opcode::send), 0, 1, 0, {}));  // a Send RTR: not the Write chosen
  a.expect_agreement(FindingId::mpa_handshake_invalid, T(2, 0, 7));
}

TEST_P(Agreement, TooShortUlpdu_SiwWaits) {
  Hosts a(GetParam());
  Bytes u = a.tagged(a.stag, a.kBase, 0);
  u.resize(10);  // a tagged DDP header needs 14 octets (RFC 5041 §4.3)
  a.inject(u);
  a.expect_agreement(FindingId::mpa_ulpdu_length_invalid, T(0, 2, 0xFF), kWait);
}

// ---- DDP and RDMAP control (RFC 5041 §4.1, RFC 5040 §4.2-4.3) -----------------------------

TEST_P(Agreement, DdpVersion) {
  Hosts a(GetParam());
  Bytes u = a.tagged(a.stag, a.kBase, 8);
  u[0] = static_cast<std::uint8_t>((u[0] & ~0x03) | 0x02);
  a.inject(u);
  a.expect_agreement(FindingId::ddp_version_invalid, T(1, 1, 4));
}

TEST_P(Agreement, DdpVersionUntagged) {
  Hosts a(GetParam());
  Bytes u = a.untagged(op(Opcode::send), 0, 1, 0, Bytes(8));
  u[0] = static_cast<std::uint8_t>((u[0] & ~0x03) | 0x00);
  a.inject(u);
  a.expect_agreement(FindingId::ddp_version_invalid, T(1, 2, 6));
}

TEST_P(Agreement, RdmapVersion) {
  Hosts a(GetParam());
  Bytes u = a.tagged(a.stag, a.kBase, 8);
  u[1] = 0x80;  // RV 2
  a.inject(u);
  a.expect_agreement(FindingId::rdmap_version_invalid, T(0, 2, 5));
}

TEST_P(Agreement, ReservedOpcode) {
  Hosts a(GetParam());
  a.inject(a.untagged(0xC, 0, 1, 0, Bytes(8)));
  a.expect_agreement(FindingId::rdmap_opcode_invalid, T(0, 2, 6));
}

TEST_P(Agreement, SendOnTheTaggedModel_SiwMsnRange) {
  Hosts a(GetParam());
  a.inject(a.tagged(a.stag, a.kBase, 8, true, op(Opcode::send)));
  // siw takes the buffer model from the opcode: QN 0 (the TO's high word), MSN its low word.
  a.expect_agreement(FindingId::rdmap_opcode_invalid, T(0, 2, 6), T(1, 2, 3));
}

// RFC 7306 is negotiated by no frame the capture shows: the analysis takes every RFC Data Sink
// to support it. A siw sink never does, and the analysis run with that profile knows it.
TEST_P(Agreement, Rfc7306OpcodeAtASinkWithoutIt_AnalyzerCannotKnowUnlessSiw) {
  Hosts a(GetParam(), {.rfc7306 = false});
  a.inject(a.untagged(op(Opcode::immediate_data), 0, 1, 0, Bytes(8, 1)));
  if (a.siw())
    a.expect_agreement(FindingId::rdmap_opcode_invalid, T(0, 2, 6));
  else
    a.expect_analyzer_cannot_know(T(0, 2, 6));
}

// ---- tagged (RFC 5041 §7.2, RFC 5040 §5.3) ------------------------------------------------

TEST_P(Agreement, StagUnknown) {
  Hosts a(GetParam());
  a.inject(a.tagged(a.unknown_stag, a.kBase, 8));
  a.expect_agreement(FindingId::ddp_tagged_invalid_stag, T(1, 1, 0));
}

TEST_P(Agreement, StagKeyMismatch) {
  Hosts a(GetParam());
  a.inject(a.tagged(a.stag ^ 0x01, a.kBase, 8));
  a.expect_agreement(FindingId::ddp_tagged_invalid_stag, T(1, 1, 0));
}

TEST_P(Agreement, StagInvalidated) {
  Hosts a(GetParam());
  ASSERT_TRUE(a.vmem.invalidate(a.stag));
  a.inject(a.tagged(a.stag, a.kBase, 8));
  a.expect_agreement(FindingId::rdmap_stag_invalidated_use, T(1, 1, 0));
}

TEST_P(Agreement, StagOfAnotherPd) {
  Hosts a(GetParam());
  a.inject(a.tagged(a.foreign_stag, a.kBase, 8));
  a.expect_agreement(FindingId::ddp_tagged_stag_wrong_stream, T(1, 1, 2));
  // The stream's PD comes from the regions file's "protection_domains": without it the analysis
  // does not know the two PDs differ.
  const Model& m = a.analyze(false);
  EXPECT_TRUE(Hosts::verdicts(m, kToVictim).empty()) << Hosts::dump(m);
}

// The region is bound to one of the victim's streams that no frame names; a regions file has no
// way to say which stream of a capture that is.
TEST_P(Agreement, StagOfAnotherStream_AnalyzerCannotKnow) {
  Hosts a(GetParam());
  a.inject(a.tagged(a.bound_stag, a.kBase, 8));
  a.expect_analyzer_cannot_know(T(1, 1, 2));
}

TEST_P(Agreement, AccessRightMissing) {
  Hosts a(GetParam());
  a.inject(a.tagged(a.ro_stag, a.kBase, 8));
  a.expect_agreement(FindingId::ddp_tagged_access_rights, T(1, 1, 0));
}

TEST_P(Agreement, BoundsBeforeBase) {
  Hosts a(GetParam());
  a.inject(a.tagged(a.stag, a.kBase - 4, 8));
  a.expect_agreement(FindingId::ddp_tagged_bounds, T(1, 1, 1));
}

TEST_P(Agreement, BoundsPastEnd) {
  Hosts a(GetParam());
  a.inject(a.tagged(a.stag, a.kBase + 250, 8));
  a.expect_agreement(FindingId::ddp_tagged_bounds, T(1, 1, 1));
}

TEST_P(Agreement, ToWrap_SiwCatastrophic) {
  Hosts a(GetParam());
  a.inject(a.tagged(a.stag, ~std::uint64_t{0} - 3, 8));
  a.expect_agreement(FindingId::ddp_tagged_to_wrap, T(1, 1, 3), T(1, 0, 0));
}

// A zero-length segment places nothing, but one that is not the last of its message names the
// STag the message goes on with (RFC 5041 §4.2): it is checked.
TEST_P(Agreement, ZeroLengthTaggedNotLastToUnknownStag) {
  Hosts a(GetParam());
  a.inject(a.tagged(a.unknown_stag, a.kBase, 0, false));
  a.expect_agreement(FindingId::ddp_tagged_invalid_stag, T(1, 1, 0));
}

TEST_P(Agreement, TaggedContinuationTo) {
  Hosts a(GetParam());
  a.inject(a.tagged(a.stag, a.kBase, 8, false));
  std::fill(a.region_mem.begin(), a.region_mem.end(), 0xA5);  // the first segment was placed
  a.inject(a.tagged(a.stag, a.kBase + 9, 8));
  a.expect_agreement(FindingId::ddp_tagged_bounds, T(1, 1, 1));
}

// ---- Read Responses against the victim's own Read Request (RFC 5040 §5.2) -----------------

struct ReadPending : Hosts {
  explicit ReadPending(SinkProfile p) : Hosts(p) {
    to_peer = false;  // the peer never answers; the test does
    EXPECT_EQ(victim->rdma_read(stag, kBase + 16, 32, peer_stag, 0x900000, 5),
              session::PostStatus::ok);
    pump();
  }
};

TEST_P(Agreement, ReadResponseUnmatched) {
  Hosts a(GetParam());
  a.inject(a.tagged(a.stag, a.kBase, 8, true, op(Opcode::read_response)));
  a.expect_agreement(FindingId::rdmap_read_response_unmatched, T(1, 0, 0));
}

TEST_P(Agreement, ReadResponseWrongStag) {
  ReadPending a(GetParam());
  a.inject(a.tagged(a.ro_stag, a.kBase + 16, 32, true, op(Opcode::read_response)));
  a.expect_agreement(FindingId::ddp_tagged_invalid_stag, T(1, 1, 0));
}

TEST_P(Agreement, ReadResponseWrongTo) {
  ReadPending a(GetParam());
  a.inject(a.tagged(a.stag, a.kBase + 20, 32, true, op(Opcode::read_response)));
  a.expect_agreement(FindingId::ddp_tagged_bounds, T(1, 1, 1));
}

TEST_P(Agreement, ReadResponseTooLong) {
  ReadPending a(GetParam());
  a.inject(a.tagged(a.stag, a.kBase + 16, 40, true, op(Opcode::read_response)));
  a.expect_agreement(FindingId::rdmap_read_response_size_mismatch, T(1, 1, 1));
}

TEST_P(Agreement, ReadResponseTooShort) {
  ReadPending a(GetParam());
  a.inject(a.tagged(a.stag, a.kBase + 16, 24, true, op(Opcode::read_response)));
  a.expect_agreement(FindingId::rdmap_read_response_size_mismatch, T(1, 1, 1));
}

// ---- untagged queues (RFC 5040 §5.1, RFC 5041 §5.3) ---------------------------------------

TEST_P(Agreement, BadQn) {
  Hosts a(GetParam());
  a.inject(a.untagged(op(Opcode::send), 5, 1, 0, Bytes(8)));
  a.expect_agreement(FindingId::ddp_untagged_invalid_qn, T(1, 2, 1));
}

TEST_P(Agreement, QnOfAnotherOpcode) {
  Hosts a(GetParam());
  a.inject(a.untagged(op(Opcode::send), 1, 1, 0, Bytes(8)));  // a Send on the Read Request queue
  a.expect_agreement(FindingId::ddp_untagged_invalid_qn, T(1, 2, 1));
}

// siw sequences a Read Request by its opcode, not its QN: it answers one sent on QN 0.
TEST_P(Agreement, ReadRequestOnTheSendQueue_SiwAnswers) {
  Hosts a(GetParam());
  a.to_peer = false;  // the crafting peer has no Read Request outstanding for the response
  a.inject(a.untagged(op(Opcode::read_request), 0, 1, 0, a.read_request(a.stag, a.kBase, 8)));
  a.expect_agreement(FindingId::ddp_untagged_invalid_qn, T(1, 2, 1), kAccept);
}

// siw handles a Terminate only on QN 2: one on QN 0 ends the connection with a FIN.
TEST_P(Agreement, TerminateOnTheSendQueue_SiwCloses) {
  Hosts a(GetParam());
  wire::Terminate t;
  t.control.layer = 0;
  t.control.etype = rdmap_etype::remote_operation;
  t.control.code = rdmap_code::unspecified;
  Bytes body;
  ByteWriter w(body);
  wire::encode_terminate(t, wire::TerminateLayout::rfc, w);
  a.inject(a.untagged(op(Opcode::terminate), 0, 1, 0, body));
  a.expect_agreement(FindingId::ddp_untagged_invalid_qn, T(1, 2, 1), kClose);
}

TEST_P(Agreement, MsnGap) {
  Hosts a(GetParam());
  a.inject(a.untagged(op(Opcode::send), 0, 2, 0, Bytes(8)));
  a.expect_agreement(FindingId::ddp_untagged_msn_gap, T(1, 2, 3));
  EXPECT_TRUE(std::all_of(a.recv.begin(), a.recv.end(), [](auto b) { return b == 0; }));
}

TEST_P(Agreement, MsnDuplicate) {
  Hosts a(GetParam());
  Bytes second_buffer(64, 0);
  a.victim->post_recv(second_buffer, 2);
  a.inject(a.untagged(op(Opcode::send), 0, 1, 0, Bytes(8, 1)));
  ASSERT_EQ(a.victim->state(), State::established);
  a.inject(a.untagged(op(Opcode::send), 0, 1, 0, Bytes(8, 2)));
  a.expect_agreement(FindingId::ddp_untagged_msn_duplicate, T(1, 2, 3));
  EXPECT_TRUE(
      std::all_of(second_buffer.begin(), second_buffer.end(), [](auto b) { return b == 0; }));
}

TEST_P(Agreement, MoWrong) {
  Hosts a(GetParam());
  a.inject(a.untagged(op(Opcode::send), 0, 1, 4, Bytes(8)));
  a.expect_agreement(FindingId::ddp_untagged_invalid_mo, T(1, 2, 4));
}

TEST_P(Agreement, SendTooLongForThePostedBuffer_SiwNoBuffer) {
  Hosts a(GetParam());  // the analysis is told the buffers' size (--send-buffer)
  a.inject(a.untagged(op(Opcode::send), 0, 1, 0, Bytes(65, 1)));
  // RFC: DDP / Untagged / Message too long (0x05); siw finds no buffer for it (0x02).
  a.expect_agreement(FindingId::ddp_untagged_message_too_long, T(1, 2, 5), T(1, 2, 2));
  EXPECT_TRUE(std::all_of(a.recv.begin(), a.recv.end(), [](auto b) { return b == 0; }));
}

// A capture never shows which receive buffers are posted.
TEST_P(Agreement, NoReceiveBufferPosted_AnalyzerCannotKnow) {
  Hosts a(GetParam());
  a.inject(a.untagged(op(Opcode::send), 0, 1, 0, Bytes(8, 1)));
  ASSERT_EQ(a.victim->state(), State::established);
  a.inject(a.untagged(op(Opcode::send), 0, 2, 0, Bytes(8, 1)));
  a.expect_analyzer_cannot_know(T(1, 2, 2));
}

// ---- Read Requests (RFC 5040 §4.4, §5.2) ---------------------------------------------------

TEST_P(Agreement, ReadRequestTooLong_SiwCloses) {
  Hosts a(GetParam());
  Bytes body = a.read_request(a.stag, a.kBase, 8);
  body.push_back(0);  // 29 octets
  a.inject(a.untagged(op(Opcode::read_request), 1, 1, 0, body));
  // siw reads the fixed header and then the extra octet as the next FPDU: it closes (FIN).
  a.expect_agreement(FindingId::ddp_untagged_message_too_long, T(1, 2, 5), kClose);
}

TEST_P(Agreement, ReadRequestTooShort_SiwWaits) {
  Hosts a(GetParam());
  a.inject(a.untagged(op(Opcode::read_request), 1, 1, 0, Bytes(20)));
  a.expect_agreement(FindingId::rdmap_body_invalid, T(0, 2, 0xFF), kWait);
}

TEST_P(Agreement, ReadRequestSourceUnknown) {
  Hosts a(GetParam());
  a.inject(a.untagged(op(Opcode::read_request), 1, 1, 0, a.read_request(a.unknown_stag, 0, 8)));
  a.expect_agreement(FindingId::ddp_tagged_invalid_stag, T(0, 1, 0));
}

TEST_P(Agreement, ReadRequestSourceOutOfBounds) {
  Hosts a(GetParam());
  a.inject(
      a.untagged(op(Opcode::read_request), 1, 1, 0, a.read_request(a.stag, a.kBase + 200, 100)));
  a.expect_agreement(FindingId::ddp_tagged_bounds, T(0, 1, 1));
}

TEST_P(Agreement, ReadRequestSourceOfAnotherPd) {
  Hosts a(GetParam());
  a.inject(
      a.untagged(op(Opcode::read_request), 1, 1, 0, a.read_request(a.foreign_stag, a.kBase, 8)));
  a.expect_agreement(FindingId::ddp_tagged_stag_wrong_stream, T(0, 1, 3));
}

TEST_P(Agreement, ReadRequestSourceNotReadable) {
  Hosts a(GetParam());
  a.inject(a.untagged(op(Opcode::read_request), 1, 1, 0, a.read_request(a.wo_stag, a.kBase, 8)));
  a.expect_agreement(FindingId::ddp_tagged_access_rights, T(0, 1, 2));
}

TEST_P(Agreement, IrdExceeded_SiwAccepts) {
  Hosts a(GetParam(), {.low_water = 0});  // the victim never answers: both stay in progress
  const Bytes rr = a.read_request(a.stag, a.kBase, 200);
  a.inject(a.untagged(op(Opcode::read_request), 1, 1, 0, rr));
  ASSERT_EQ(a.victim->state(), State::established);
  a.inject(a.untagged(op(Opcode::read_request), 1, 2, 0, rr));
  a.expect_agreement(FindingId::rdmap_ird_exceeded, T(0, 2, 7), kAccept);
}

// ---- Send with Invalidate (RFC 5040 §5.3) --------------------------------------------------

TEST_P(Agreement, SendWithInvalidateOfUnknownStag_SiwRemoteOperation) {
  Hosts a(GetParam());
  a.inject(a.untagged(op(Opcode::send_invalidate), 0, 1, 0, Bytes(8), true, a.unknown_stag));
  a.expect_agreement(FindingId::rdmap_invalidate_refused, T(0, 1, 9), T(0, 2, 9));
}

TEST_P(Agreement, SendWithInvalidateOfAnotherPd_SiwRemoteOperation) {
  Hosts a(GetParam());
  a.inject(a.untagged(op(Opcode::send_invalidate), 0, 1, 0, Bytes(8), true, a.foreign_stag));
  a.expect_agreement(FindingId::rdmap_invalidate_refused, T(0, 1, 9), T(0, 2, 9));
}

TEST_P(Agreement, SendWithInvalidateOfInvalidatedStag_SiwRemoteOperation) {
  Hosts a(GetParam());
  ASSERT_TRUE(a.vmem.invalidate(a.stag));
  a.inject(a.untagged(op(Opcode::send_se_invalidate), 0, 1, 0, Bytes(8), true, a.stag));
  a.expect_agreement(FindingId::rdmap_invalidate_refused, T(0, 1, 9), T(0, 2, 9));
}

TEST_P(Agreement, SendWithInvalidateOfNonInvalidatableStag_SiwRemoteOperation) {
  Hosts a(GetParam());
  a.inject(a.untagged(op(Opcode::send_invalidate), 0, 1, 0, Bytes(8), true, a.fixed_stag));
  a.expect_agreement(FindingId::rdmap_invalidate_refused, T(0, 1, 9), T(0, 2, 9));
}

// ---- atomics (RFC 7306) --------------------------------------------------------------------

TEST_P(Agreement, AtomicRequestToUnknownStag_SiwHasNoRfc7306) {
  Hosts a(GetParam());
  a.inject(a.untagged(op(Opcode::atomic_request), wire::kQnAtomicRequest, 1, 0,
                      a.atomic_request(a.unknown_stag, a.kBase)));
  a.expect_agreement({FindingId::ddp_tagged_invalid_stag, T(0, 1, 0)}, kNoRfc7306);
}

TEST_P(Agreement, AtomicRequestOutOfBounds_SiwHasNoRfc7306) {
  Hosts a(GetParam());
  a.inject(a.untagged(op(Opcode::atomic_request), wire::kQnAtomicRequest, 1, 0,
                      a.atomic_request(a.stag, a.kBase + 256)));
  a.expect_agreement({FindingId::ddp_tagged_bounds, T(0, 1, 1)}, kNoRfc7306);
}

TEST_P(Agreement, AtomicRequestMisaligned_SiwHasNoRfc7306) {
  Hosts a(GetParam());
  a.inject(a.untagged(op(Opcode::atomic_request), wire::kQnAtomicRequest, 1, 0,
                      a.atomic_request(a.stag, a.kBase + 4)));
  a.expect_agreement({FindingId::ddp_tagged_bounds, T(0, 1, 1)}, kNoRfc7306);
}

TEST_P(Agreement, AtomicRequestWithoutTheAtomicRight_SiwHasNoRfc7306) {
  Hosts a(GetParam());
  a.inject(a.untagged(op(Opcode::atomic_request), wire::kQnAtomicRequest, 1, 0,
                      a.atomic_request(a.wo_stag, a.kBase)));
  a.expect_agreement({FindingId::ddp_tagged_access_rights, T(0, 1, 2)}, kNoRfc7306);
}

TEST_P(Agreement, UnknownAtomicOpcode_SiwHasNoRfc7306) {
  Hosts a(GetParam());
  a.inject(a.untagged(op(Opcode::atomic_request), wire::kQnAtomicRequest, 1, 0,
                      a.atomic_request(a.stag, a.kBase, 5)));
  a.expect_agreement({FindingId::rdmap_opcode_invalid, T(0, 2, 6)}, kNoRfc7306);
}

TEST_P(Agreement, AtomicResponseUnmatched_SiwHasNoRfc7306) {
  Hosts a(GetParam());
  wire::AtomicResponse r;
  r.request_id = 77;
  Bytes body;
  ByteWriter w(body);
  wire::encode_atomic_response(r, w);
  a.inject(a.untagged(op(Opcode::atomic_response), wire::kQnAtomicResponse, 1, 0, body));
  a.expect_agreement({FindingId::rdmap_atomic_response_unmatched, T(0, 2, 6)}, kNoRfc7306);
}

// ---- a Terminate from the peer is answered by none (RFC 5040 §5.4) -------------------------

TEST_P(Agreement, InboundTerminateIsAnsweredByNone) {
  Hosts a(GetParam());
  wire::Terminate t;
  t.control.layer = 0;
  t.control.etype = rdmap_etype::remote_operation;
  t.control.code = rdmap_code::unspecified;
  Bytes body;
  ByteWriter w(body);
  wire::encode_terminate(t, wire::TerminateLayout::rfc, w);
  a.inject(a.untagged(op(Opcode::terminate), wire::kQnTerminate, 1, 0, body));
  EXPECT_EQ(a.victim->state(), State::terminated);
  EXPECT_FALSE(a.victim->terminate_sent());
  ASSERT_TRUE(a.victim->terminate_received());
  EXPECT_EQ(*a.victim->terminate_received(), T(0, 2, 0xFF));
  const Model& m = a.analyze();
  EXPECT_TRUE(Hosts::verdicts(m, kToVictim).empty()) << Hosts::dump(m);
  EXPECT_TRUE(Hosts::verdicts(m, kFromVictim).empty()) << Hosts::dump(m);
  EXPECT_TRUE(Hosts::decoded_terminates(m, kFromVictim).empty()) << Hosts::dump(m);
  const auto peer_term = Hosts::decoded_terminates(m, kToVictim);
  ASSERT_EQ(peer_term.size(), 1u) << Hosts::dump(m);
  EXPECT_EQ(peer_term[0]->frame, a.injected_frame());
  EXPECT_EQ(peer_term[0]->terminate, T(0, 2, 0xFF));
}

// ---- edges of one message and of the setup ------------------------------------------------

TEST_P(Agreement, TaggedMessageAbandonedForAnotherStag) {
  Hosts a(GetParam());
  a.inject(a.tagged(a.stag, a.kBase, 8, false));
  std::fill(a.region_mem.begin(), a.region_mem.end(), 0xA5);  // the first segment was placed
  a.inject(a.tagged(a.big_stag, 0x10000, 8));
  a.expect_agreement(FindingId::ddp_message_incomplete, T(1, 1, 0));
}

TEST_P(Agreement, UntaggedMessageAbandonedForTheNextMsn) {
  Hosts a(GetParam());
  a.inject(a.untagged(op(Opcode::send), 0, 1, 0, Bytes(8, 1), false));
  a.inject(a.untagged(op(Opcode::send), 0, 2, 0, Bytes(8, 1)));
  a.expect_agreement(FindingId::ddp_message_incomplete, T(1, 2, 3));
}

TEST_P(Agreement, SegmentAfterTheLast_SiwNoBuffer) {
  Hosts a(GetParam());
  Bytes second_buffer(64, 0);
  a.victim->post_recv(second_buffer, 2);
  a.inject(a.untagged(op(Opcode::send), 0, 1, 0, Bytes(8, 1)));
  a.inject(a.untagged(op(Opcode::send), 0, 1, 8, Bytes(8, 1)));
  a.expect_agreement(FindingId::ddp_segment_after_last, T(1, 2, 3), T(1, 2, 2));
}

TEST_P(Agreement, SendSpanningSegmentsTooLongForTheBuffer_SiwNoBuffer) {
  Hosts a(GetParam());
  a.inject(a.untagged(op(Opcode::send), 0, 1, 0, Bytes(40, 1), false));
  ASSERT_EQ(a.victim->state(), State::established);
  a.inject(a.untagged(op(Opcode::send), 0, 1, 40, Bytes(40, 1)));
  a.expect_agreement(FindingId::ddp_untagged_message_too_long, T(1, 2, 5), T(1, 2, 2));
}

TEST_P(Agreement, TaggedMessageRunningPastTheEnd) {
  Hosts a(GetParam());
  a.inject(a.tagged(a.stag, a.kBase + 200, 40, false));
  std::fill(a.region_mem.begin(), a.region_mem.end(), 0xA5);  // the first segment was placed
  a.inject(a.tagged(a.stag, a.kBase + 240, 40));
  a.expect_agreement(FindingId::ddp_tagged_bounds, T(1, 1, 1));
}

TEST_P(Agreement, ImmediateDataTooShort_SiwHasNoRfc7306) {
  Hosts a(GetParam());
  a.inject(a.untagged(op(Opcode::immediate_data), 0, 1, 0, Bytes(4, 1)));
  a.expect_agreement({FindingId::rdmap_body_invalid, T(0, 2, 0xFF)}, kNoRfc7306);
}

TEST_P(Agreement, AtomicRequestTooLong_SiwHasNoRfc7306) {
  Hosts a(GetParam());
  Bytes body = a.atomic_request(a.stag, a.kBase);
  body.resize(body.size() + 8);
  a.inject(a.untagged(op(Opcode::atomic_request), wire::kQnAtomicRequest, 1, 0, body));
  a.expect_agreement({FindingId::ddp_untagged_message_too_long, T(1, 2, 5)}, kNoRfc7306);
}

// Two Read Requests in one segment at IRD 1: the second comes before the victim could answer
// the first (the requester exceeded its ORD, RFC 5040 §5.2).
TEST_P(Agreement, IrdExceededInOneSegment_SiwAccepts) {
  Hosts a(GetParam());
  const Bytes rr = a.read_request(a.stag, a.kBase, 16);
  wire::FpduEncodeOptions fo;
  Bytes both = wire::encode_fpdu(a.untagged(op(Opcode::read_request), 1, 1, 0, rr), fo);
  const Bytes second = wire::encode_fpdu(a.untagged(op(Opcode::read_request), 1, 2, 0, rr), fo);
  both.insert(both.end(), second.begin(), second.end());
  a.to_peer = false;
  a.inject_octets(both);
  a.expect_agreement(FindingId::rdmap_ird_exceeded, T(0, 2, 7), kAccept);
}

// RFC 5044 §7.1: the initiator sends no FPDU before it received the Reply; this one's RTR came
// in its Request's segment.
TEST_P(Agreement, FpduBeforeTheReply) {
  Hosts a(GetParam(), {.early_rtr = true});
  a.expect_agreement(FindingId::mpa_handshake_invalid, T(2, 0, 4));
}

TEST_P(Agreement, MarkersInBothConventionsDrawNoVerdict) {
  Hosts a(GetParam(), {.markers = true});
  for (const auto c :
       {wire::MarkerConvention::leading_marker_in_fpdu, wire::MarkerConvention::literal}) {
    wire::FpduEncodeOptions o;
    o.markers = true;
    o.stream_pos = a.peer_stream_pos();
    o.convention = c;
    a.inject_octets(wire::encode_fpdu(a.tagged(a.big_stag, 0x10000, 1200), o));
  }
  EXPECT_EQ(a.victim->state(), State::established);
  const Model& m = a.analyze();
  EXPECT_TRUE(Hosts::verdicts(m, kToVictim).empty()) << Hosts::dump(m);
}

INSTANTIATE_TEST_SUITE_P(Profile, Agreement, ::testing::Values(SinkProfile::rfc, SinkProfile::siw),
                         [](const ::testing::TestParamInfo<SinkProfile>& i) {
                           return std::string(to_string(i.param));
                         });

}  // namespace
}  // namespace ddpscope
