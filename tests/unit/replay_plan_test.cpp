// SPDX-License-Identifier: GPL-2.0-or-later
// Replay's plan from captures built here: a connection fed segment by segment into an Analyzer
// (the hostile tests' builder), its PDUs assembled into messages, the side's SessionConfig from
// the captured MPA frames, and the plan's regions, fills and comparisons.
#include "ddpscope/session/replay_plan.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>

#include "ddpscope/analysis/analyzer.h"
#include "ddpscope/ulp/iser.h"
#include "ddpscope/ulp/nvmeof.h"
#include "ddpscope/ulp/rpcrdma.h"
#include "ddpscope/ulp/rping.h"
#include "ddpscope/ulp/smbdirect.h"
#include "hostile/hostile_builders.h"
#include "unit/sctp_builders.h"

namespace ddpscope::session {
namespace {

using hostile::Wire;
using wire::Opcode;

constexpr auto u8 = [](Opcode o) { return static_cast<std::uint8_t>(o); };

Bytes text(const std::string& s) {
  return Bytes(s.begin(), s.end());
}

Bytes read_request_body(const wire::ReadRequest& rr) {
  Bytes b;
  ByteWriter w(b);
  wire::encode_read_request(rr, w);
  return b;
}

// One captured connection: the Analyzer, the assembler watching stream 0, and a Wire that
// tells the assembler each frame's time (frame N at N microseconds, as Wire stamps it).
struct Capture {
  explicit Capture(std::uint16_t client_port = 40000) : wire(an, client_port) {
    an.set_observer(&assembler);
    wire.frame_counter = &frames;
  }
  Analyzer an;
  MessageAssembler assembler{0};
  Wire wire;
  std::uint64_t frames = 0;

  void next_frame() { assembler.set_frame_time(static_cast<std::int64_t>(frames + 1) * 1000); }
  void handshake(const wire::MpaReqRep& req, const wire::MpaReqRep& rep) {
    next_frame();
    wire.segment(0, wire.seq[0]++, {}, net::tcp_flag::syn);
    next_frame();
    wire.segment(1, wire.seq[1]++, {}, net::tcp_flag::syn | net::tcp_flag::ack);
    next_frame();
    wire.send(0, wire::encode_mpa_reqrep(req));
    next_frame();
    wire.send(1, wire::encode_mpa_reqrep(rep));
  }
  void fpdu(int dir, const wire::DdpHeader& h, ByteView body = {}) {
    next_frame();
    wire.fpdu(dir, h, body);
  }
  void send(int dir, std::uint32_t msn, ByteView body, Opcode op = Opcode::send) {
    fpdu(dir, wire::untagged_header(op, wire::kQnSend, msn, 0, true), body);
  }
  const Model& finish() {
    an.finish();
    return an.model();
  }
};

wire::MpaReqRep frame(wire::MpaFrameKind kind, std::optional<wire::MpaEnhancedPd> pd,
                      Bytes ulp_pd = {}) {
  wire::MpaReqRep f;
  f.kind = kind;
  f.crc = true;
  f.revision = pd ? 2 : 1;
  f.enhanced = pd.has_value();
  f.enhanced_pd = pd;
  f.private_data = std::move(ulp_pd);
  return f;
}

// RFC 6581 peer-to-peer with a zero-length Write RTR.
void p2p_write_handshake(Capture& c) {
  c.handshake(frame(wire::MpaFrameKind::request,
                    wire::MpaEnhancedPd{true, false, 8, true, false, 4}, text("hello")),
              frame(wire::MpaFrameKind::reply, wire::MpaEnhancedPd{true, false, 4, true, false, 8},
                    text("hi")));
  c.fpdu(0, wire::tagged_header(Opcode::rdma_write, 0, 0, true));  // the RTR
}

// ------------------------------------------------------------------ message assembly

TEST(MessageAssembler, SegmentsJoinTheirMessageInOrderOfTheLastSegment) {
  Capture c;
  p2p_write_handshake(c);
  const Bytes a = text("0123456789"), b = text("abcdefghij");
  // The client's Send in two segments (MO 0 and 10), and the server's RDMA Write in two
  // (TO 0x1000, 0x1005) completing in between.
  c.fpdu(0, wire::untagged_header(Opcode::send, wire::kQnSend, 1, 0, false), a);
  c.fpdu(1, wire::tagged_header(Opcode::rdma_write, 0x77, 0x1000, false), ByteView(b).first(5));
  c.fpdu(1, wire::tagged_header(Opcode::rdma_write, 0x77, 0x1005, true), ByteView(b).subspan(5));
  c.fpdu(0, wire::untagged_header(Opcode::send, wire::kQnSend, 1, 10, true), b);
  c.fpdu(0, wire::untagged_header(Opcode::read_request, wire::kQnReadRequest, 1, 0, true),
         read_request_body({0x10, 0x2000, 64, 0x20, 0x3000}));
  c.fpdu(1, wire::untagged_header(Opcode::terminate, wire::kQnTerminate, 1, 0, true),
         Bytes{0x12, 0x05, 0, 0});
  c.finish();
  const auto& m = c.assembler.messages();
  ASSERT_EQ(m.size(), 5u);
  EXPECT_EQ(m[0].opcode, u8(Opcode::rdma_write));  // the RTR
  EXPECT_TRUE(m[0].data.empty());
  EXPECT_EQ(m[1].direction, 1);
  EXPECT_EQ(m[1].opcode, u8(Opcode::rdma_write));
  EXPECT_EQ(m[1].stag, 0x77u);
  EXPECT_EQ(m[1].to, 0x1000u);
  EXPECT_EQ(m[1].data, b);
  EXPECT_EQ(m[1].frame, 7u);    // first segment
  EXPECT_EQ(m[1].ts_ns, 8000);  // last segment
  EXPECT_EQ(m[2].direction, 0);
  EXPECT_EQ(m[2].msn, 1u);
  Bytes ab = a;
  ab.insert(ab.end(), b.begin(), b.end());
  EXPECT_EQ(m[2].data, ab);
  EXPECT_EQ(m[2].frame, 6u);
  EXPECT_EQ(m[2].ts_ns, 9000);
  ASSERT_TRUE(m[3].read_request);
  EXPECT_EQ(m[3].read_request->size, 64u);
  EXPECT_EQ(m[3].qn, wire::kQnReadRequest);
  ASSERT_TRUE(m[4].terminate);
  EXPECT_EQ(*m[4].terminate, (TerminateError{1, 2, 5}));
  EXPECT_EQ(describe(m[3]), "RDMA Read Request of 64 octets");
  EXPECT_EQ(describe(m[2]), "Send, 20 octets");
}

TEST(MessageAssembler, OnlyItsStreamAndOnlyGoodCrc) {
  Capture c;
  p2p_write_handshake(c);
  // Another connection's Send, on stream 1.
  Wire other(c.an, 40001, 2);
  other.frame_counter = &c.frames;
  other.handshake();
  other.fpdu(0, wire::untagged_header(Opcode::send, wire::kQnSend, 1, 0, true), text("other"));
  // A Send whose CRC does not hold is not the sender's message.
  Bytes bad = c.wire.fpdu_bytes(wire::untagged_header(Opcode::send, wire::kQnSend, 1, 0, true),
                                text("broken"));
  bad.back() ^= 1;
  c.wire.send(0, bad);
  c.send(0, 2, text("good"));
  const Model& model = c.finish();
  ASSERT_EQ(model.streams.size(), 2u);
  const auto& m = c.assembler.messages();
  ASSERT_EQ(m.size(), 2u);  // the RTR and "good"
  EXPECT_EQ(m[1].data, text("good"));
}

TEST(MessageAssembler, PayloadBeyondTheCapIsDropped) {
  Capture c;
  p2p_write_handshake(c);
  // A tagged continuation far past the first TO (and one below it, which wraps).
  c.fpdu(1, wire::tagged_header(Opcode::rdma_write, 0x77, 0x1000, false), text("a"));
  c.fpdu(1, wire::tagged_header(Opcode::rdma_write, 0x77, 0x0fff, false), text("b"));
  c.fpdu(1,
         wire::tagged_header(Opcode::rdma_write, 0x77, 0x1000 + MessageAssembler::kMaxMessageOctets,
                             true),
         text("c"));
  c.finish();
  const auto& m = c.assembler.messages();
  ASSERT_EQ(m.size(), 2u);
  EXPECT_EQ(m[1].data, text("a"));
}

// ------------------------------------------------------------------ session configuration

TEST(ReplaySessionConfig, EachSideRepeatsItsOwnFrame) {
  Capture c;
  p2p_write_handshake(c);
  const Model& model = c.finish();
  const auto client = replay_session_config(model.streams[0], ReplaySide::client);
  ASSERT_TRUE(client);
  EXPECT_EQ(client->role, Role::initiator);
  EXPECT_EQ(client->mpa.revision, 2);
  EXPECT_TRUE(client->mpa.enhanced);
  EXPECT_TRUE(client->mpa.crc);
  EXPECT_FALSE(client->mpa.markers);
  EXPECT_TRUE(client->mpa.peer_to_peer);
  EXPECT_EQ(client->mpa.ird, 8);
  EXPECT_EQ(client->mpa.ord, 4);
  EXPECT_EQ(client->mpa.rtr_types, rtr_offer::write);
  EXPECT_EQ(client->mpa.private_data, text("hello"));  // the ULP's, without the word
  EXPECT_EQ(client->pd, 0u);
  const auto server = replay_session_config(model.streams[0], ReplaySide::server);
  ASSERT_TRUE(server);
  EXPECT_EQ(server->role, Role::responder);
  EXPECT_EQ(server->mpa.ird, 4);
  EXPECT_EQ(server->mpa.ord, 8);
  EXPECT_EQ(server->mpa.private_data, text("hi"));
}

TEST(ReplaySessionConfig, RtrTypesMarkersAndRevisionOne) {
  Capture c;
  auto req = frame(wire::MpaFrameKind::request, wire::MpaEnhancedPd{true, true, 1, false, true, 2});
  req.markers = true;
  c.handshake(
      req, frame(wire::MpaFrameKind::reply, wire::MpaEnhancedPd{false, false, 3, false, false, 4}));
  Capture v1;
  v1.handshake(frame(wire::MpaFrameKind::request, std::nullopt, text("pd")),
               frame(wire::MpaFrameKind::reply, std::nullopt));
  const Model& m = c.finish();
  const auto client = replay_session_config(m.streams[0], ReplaySide::client);
  ASSERT_TRUE(client);
  EXPECT_TRUE(client->mpa.markers);
  EXPECT_EQ(client->mpa.rtr_types, rtr_offer::send | rtr_offer::read);
  // A responder whose word names no RTR type accepts a zero-length Write.
  const auto server = replay_session_config(m.streams[0], ReplaySide::server);
  ASSERT_TRUE(server);
  EXPECT_FALSE(server->mpa.peer_to_peer);
  EXPECT_EQ(server->mpa.rtr_types, rtr_offer::write);

  const Model& m1 = v1.finish();
  const auto old = replay_session_config(m1.streams[0], ReplaySide::client);
  ASSERT_TRUE(old);
  EXPECT_EQ(old->mpa.revision, 1);
  EXPECT_FALSE(old->mpa.enhanced);
  EXPECT_FALSE(old->mpa.peer_to_peer);
  EXPECT_EQ(old->mpa.private_data, text("pd"));
}

TEST(ReplaySessionConfig, NoFrameNoConfig) {
  Capture c;
  c.next_frame();
  c.wire.syn();
  c.wire.send(0, wire::encode_mpa_reqrep(frame(wire::MpaFrameKind::request, std::nullopt)));
  const Model& m = c.finish();
  ASSERT_EQ(m.streams.size(), 1u);
  EXPECT_TRUE(replay_session_config(m.streams[0], ReplaySide::client));
  EXPECT_FALSE(replay_session_config(m.streams[0], ReplaySide::server));
}

// Over the other LLP (issue 41): the DDP/RDMAP plan is the same, only the setup message changes.
TEST(ReplaySessionConfig, MpaCaptureOverSctpKeepsPrivateDataAndWordDropsCrcAndMarkers) {
  Capture c;
  auto req = frame(wire::MpaFrameKind::request, wire::MpaEnhancedPd{true, false, 8, true, false, 4},
                   text("hello"));
  req.markers = true;
  c.handshake(req, frame(wire::MpaFrameKind::reply,
                         wire::MpaEnhancedPd{true, false, 4, true, false, 8}, text("hi")));
  const Model& m = c.finish();
  const auto client = replay_session_config(m.streams[0], ReplaySide::client, Llp::sctp);
  ASSERT_TRUE(client);
  EXPECT_EQ(client->llp, Llp::sctp);
  EXPECT_FALSE(client->mpa.crc);
  EXPECT_FALSE(client->mpa.markers);
  EXPECT_TRUE(client->mpa.enhanced);
  EXPECT_TRUE(client->mpa.peer_to_peer);
  EXPECT_EQ(client->mpa.ird, 8);
  EXPECT_EQ(client->mpa.ord, 4);
  EXPECT_EQ(client->mpa.rtr_types, rtr_offer::write);
  EXPECT_EQ(client->mpa.private_data, text("hello"));
  const auto notes = replay_setup_notes(m.streams[0], ReplaySide::client, Llp::sctp);
  ASSERT_EQ(notes.size(), 4u);
  EXPECT_EQ(notes[0],
            "the captured MPA Request becomes a DDP Stream Enhanced Session Initiate with its 5 "
            "octets of private data and the IRD/ORD/RTR word (RFC 5043 §6, RFC 6581 §8)");
  EXPECT_NE(notes[1].find("no MPA CRC"), std::string::npos);
  EXPECT_NE(notes[2].find("no MPA markers"), std::string::npos);
  EXPECT_NE(notes[3].find("revision is not compared"), std::string::npos);
  const auto server = replay_session_config(m.streams[0], ReplaySide::server, Llp::sctp);
  ASSERT_TRUE(server);
  EXPECT_EQ(server->role, Role::responder);
  EXPECT_EQ(server->mpa.private_data, text("hi"));
  // Over MPA, as captured: nothing to say.
  EXPECT_TRUE(replay_setup_notes(m.streams[0], ReplaySide::client, Llp::mpa).empty());
  EXPECT_TRUE(replay_session_config(m.streams[0], ReplaySide::client)->mpa.crc);
}

// An SCTP capture: Enhanced Session Initiate / Accept with private data, the Write RTR, a Send.
struct SctpCapture {
  SctpCapture() : assoc(an) {
    an.set_observer(&assembler);
    assoc.setup();
    wire::MpaEnhancedPd offer;
    offer.peer_to_peer = true;
    offer.ird = 8;
    offer.ord = 4;
    offer.zero_length_write_rtr = true;
    assoc.session(0, wire::ddp_session_fn::enhanced_initiate, text("hello"), offer);
    wire::MpaEnhancedPd answer = offer;
    std::swap(answer.ird, answer.ord);
    assoc.session(1, wire::ddp_session_fn::enhanced_accept, text("hi"), answer);
    assoc.message(0, sctptest::ulpdu(wire::tagged_header(Opcode::rdma_write, 0, 0, true), {}));
    assoc.send(0, 1, text("first"));
    an.finish();
  }
  Analyzer an;
  MessageAssembler assembler{0};
  sctptest::Association assoc;
};

TEST(ReplaySessionConfig, SctpCaptureOverEitherLlp) {
  SctpCapture c;
  const StreamModel& sm = c.an.model().streams.at(0);
  ASSERT_EQ(sm.llp, ddpscope::Llp::sctp);
  const auto setup = captured_setup(sm, ReplaySide::client);
  ASSERT_TRUE(setup);
  EXPECT_EQ(setup->llp, Llp::sctp);
  EXPECT_FALSE(setup->revision);
  EXPECT_EQ(Bytes(setup->ulp_private_data.begin(), setup->ulp_private_data.end()), text("hello"));
  for (const Llp llp : {Llp::sctp, Llp::mpa}) {
    const auto client = replay_session_config(sm, ReplaySide::client, llp);
    ASSERT_TRUE(client);
    EXPECT_EQ(client->llp, llp);
    EXPECT_EQ(client->mpa.revision, 2);  // the enhanced word's
    EXPECT_FALSE(client->mpa.crc);
    EXPECT_TRUE(client->mpa.enhanced);
    EXPECT_TRUE(client->mpa.peer_to_peer);
    EXPECT_EQ(client->mpa.ird, 8);
    EXPECT_EQ(client->mpa.ord, 4);
    EXPECT_EQ(client->mpa.rtr_types, rtr_offer::write);
    EXPECT_EQ(client->mpa.private_data, text("hello"));
    const auto server = replay_session_config(sm, ReplaySide::server, llp);
    ASSERT_TRUE(server);
    EXPECT_EQ(server->mpa.private_data, text("hi"));
    EXPECT_EQ(server->mpa.ird, 4);
  }
  EXPECT_TRUE(replay_setup_notes(sm, ReplaySide::client, Llp::sctp).empty());
  const auto notes = replay_setup_notes(sm, ReplaySide::server, Llp::mpa);
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_EQ(notes[0],
            "the captured DDP Stream Enhanced Session Accept becomes an MPA rev 2 Reply with its 2 "
            "octets of private data and the IRD/ORD/RTR word, without CRC or markers (RFC 5044 "
            "§7.1, RFC 6581 §5)");
  // The plan: the RTR belongs to the setup, the Send is the script.
  std::string err;
  auto plan = make_replay_plan(sm, ReplaySide::client, c.assembler.take_messages(), err);
  ASSERT_TRUE(plan) << err;
  ASSERT_EQ(plan->script.size(), 1u);
  EXPECT_EQ(plan->script[0].data, text("first"));
}

TEST(ReplaySessionConfig, SctpStreamWithoutItsSetupHasNoConfig) {
  Analyzer an;
  sctptest::Association a(an);
  a.send(0, 7, text("mid"));
  an.finish();
  const StreamModel& sm = an.model().streams.at(0);
  EXPECT_FALSE(captured_setup(sm, ReplaySide::client));
  EXPECT_FALSE(replay_session_config(sm, ReplaySide::client, Llp::sctp));
  EXPECT_FALSE(replay_session_config(sm, ReplaySide::server, Llp::mpa));
}

// ------------------------------------------------------------------ the plan

std::optional<ReplayPlan> plan_of(Capture& c, ReplaySide side, std::string& error) {
  const Model& m = c.finish();
  return make_replay_plan(m.streams.at(0), side, c.assembler.take_messages(), error);
}

// The client advertises a buffer, the server reads it and writes into another, the client
// reads the server's; an atomic of the server on a third.
void rping_like(Capture& c) {
  p2p_write_handshake(c);
  c.send(0, 1, ulp::encode_rping_info({0x5000, 0xa1, 16}));
  c.fpdu(1, wire::untagged_header(Opcode::read_request, wire::kQnReadRequest, 1, 0, true),
         read_request_body({0xb1, 0x9000, 16, 0xa1, 0x5000}));
  c.fpdu(0, wire::tagged_header(Opcode::read_response, 0xb1, 0x9000, true),
         text("start buffer 001"));
  c.send(1, 1, text("go"));
  c.fpdu(1, wire::tagged_header(Opcode::rdma_write, 0xa2, 0x6000, true), text("written"));
  Bytes atomic;
  ByteWriter w(atomic);
  wire::encode_atomic_request({0, 0, 7, 0xa3, 0x7008, 1, 0, 0, 0}, w);
  c.fpdu(1, wire::untagged_header(Opcode::atomic_request, wire::kQnAtomicRequest, 1, 0, true),
         atomic);
  c.fpdu(0, wire::untagged_header(Opcode::read_request, wire::kQnReadRequest, 1, 0, true),
         read_request_body({0xa4, 0x8000, 32, 0xb2, 0x1000}));
}

TEST(ReplayPlan, ScriptRegionsAndFillsOfTheClient) {
  Capture c;
  rping_like(c);
  std::string err;
  auto plan = plan_of(c, ReplaySide::client, err);
  ASSERT_TRUE(plan) << err;
  EXPECT_EQ(plan->us(), 0);
  // The RTR belongs to the handshake.
  ASSERT_EQ(plan->script.size(), 7u);
  EXPECT_EQ(plan->script[0].opcode, u8(Opcode::send));
  EXPECT_TRUE(plan->ours_to_send(plan->script[0]));
  EXPECT_FALSE(plan->ours_to_send(plan->script[1]));  // the peer's
  EXPECT_FALSE(plan->ours_to_send(plan->script[2]));  // our Read Response: the session's job
  // Regions: our advertised buffer (read by the peer), what the peer wrote and used
  // atomically, and the sink of our own Read; not the peer's source (0xb2) nor sink (0xb1).
  ASSERT_EQ(plan->regions.size(), 4u);
  EXPECT_EQ(plan->regions.at(0xa1).base, 0x5000u);
  EXPECT_EQ(plan->regions.at(0xa1).mem.size(), 16u);
  EXPECT_EQ(plan->regions.at(0xa2).base, 0x6000u);
  EXPECT_EQ(plan->regions.at(0xa2).mem.size(), 7u);
  EXPECT_EQ(plan->regions.at(0xa3).base, 0x7008u);
  EXPECT_EQ(plan->regions.at(0xa3).mem.size(), 8u);
  EXPECT_EQ(plan->regions.at(0xa4).mem.size(), 32u);
  // The peer's Read (script[1]) finds what our Read Response carried once our Send before it
  // (script[0]) is due.
  EXPECT_EQ(plan->region_bytes(0xa1, 0x5000, 16), Bytes(16, 0));
  plan->apply_fills(1);
  EXPECT_EQ(plan->region_bytes(0xa1, 0x5000, 16), text("start buffer 001"));
  EXPECT_EQ(plan->region_bytes(0xa1, 0x5008, 8), text("ffer 001"));
  EXPECT_TRUE(plan->region_bytes(0xa1, 0x5008, 9).empty());
  EXPECT_TRUE(plan->region_bytes(0xa1, 0x4fff, 1).empty());
  EXPECT_TRUE(plan->region_bytes(0x99, 0, 0).empty());
  EXPECT_EQ(plan->max_send, 4096u);
}

TEST(ReplayPlan, FillsWaitForThePeersReadRequest) {
  Capture c;
  p2p_write_handshake(c);
  // Two rounds: the peer reads our buffer twice, seeing other data each time.
  c.send(0, 1, ulp::encode_rping_info({0x5000, 0xa1, 4}));
  for (std::uint32_t i = 1; i <= 2; ++i) {
    c.fpdu(1, wire::untagged_header(Opcode::read_request, wire::kQnReadRequest, i, 0, true),
           read_request_body({0xb1, 0x9000, 4, 0xa1, 0x5000}));
    c.fpdu(0, wire::tagged_header(Opcode::read_response, 0xb1, 0x9000, true),
           text(i == 1 ? "one." : "two."));
    c.send(0, 1 + i, text("next"));
  }
  std::string err;
  auto plan = plan_of(c, ReplaySide::client, err);
  ASSERT_TRUE(plan) << err;
  ASSERT_EQ(plan->script.size(), 7u);
  EXPECT_EQ(plan->region_bytes(0xa1, 0x5000, 4), Bytes(4, 0));
  plan->apply_fills(1);  // due with our advertisement: the first Read, up to our Send at [3]
  EXPECT_EQ(plan->region_bytes(0xa1, 0x5000, 4), text("one."));
  plan->apply_fills(4);  // due with our Send at [3]: the second
  EXPECT_EQ(plan->region_bytes(0xa1, 0x5000, 4), text("two."));
}

TEST(ReplayPlan, ReadRtrAndItsResponseBelongToTheHandshake) {
  Capture c;
  c.handshake(
      frame(wire::MpaFrameKind::request, wire::MpaEnhancedPd{true, false, 8, false, true, 4}),
      frame(wire::MpaFrameKind::reply, wire::MpaEnhancedPd{true, false, 4, false, true, 8}));
  c.fpdu(0, wire::untagged_header(Opcode::read_request, wire::kQnReadRequest, 1, 0, true),
         read_request_body({0x1, 0, 0, 0x2, 0}));
  c.fpdu(1, wire::tagged_header(Opcode::read_response, 0x1, 0, true));
  c.send(1, 1, text("first"));
  std::string err;
  auto plan = plan_of(c, ReplaySide::server, err);
  ASSERT_TRUE(plan) << err;
  ASSERT_EQ(plan->script.size(), 1u);
  EXPECT_EQ(plan->script[0].data, text("first"));
  EXPECT_TRUE(plan->ours_to_send(plan->script[0]));
}

TEST(ReplayPlan, RegionsOverTheCapAreRefused) {
  Capture c;
  p2p_write_handshake(c);
  c.fpdu(1, wire::untagged_header(Opcode::read_request, wire::kQnReadRequest, 1, 0, true),
         read_request_body({0xb1, 0, 16, 0xa1, 0}));
  c.fpdu(1, wire::untagged_header(Opcode::read_request, wire::kQnReadRequest, 2, 0, true),
         read_request_body({0xb1, 0, 16, 0xa1, kReplayMaxRegion}));
  std::string err;
  EXPECT_FALSE(plan_of(c, ReplaySide::client, err));
  EXPECT_EQ(err, "region of STag 161 too large");
}

TEST(ReplayPlan, ComparesAndLearnsTheLivePeersBuffers) {
  Capture c;
  rping_like(c);
  std::string err;
  auto plan = plan_of(c, ReplaySide::server, err);
  ASSERT_TRUE(plan) << err;
  const CapturedMessage& adv = plan->script[0];  // the client's advertisement
  LiveMessage live;
  live.opcode = adv.opcode;
  live.data = ulp::encode_rping_info({0x7f0000001000, 0xc1, 16});
  live.length = 16;
  EXPECT_EQ(plan->live_stag_to(0xa1, 0x5004), std::make_pair(0xa1u, std::uint64_t{0x5004}));
  EXPECT_EQ(plan->compare(adv, live), "");
  EXPECT_EQ(plan->live_stag_to(0xa1, 0x5004), std::make_pair(0xc1u, std::uint64_t{0x7f0000001004}));
  live.data = ulp::encode_rping_info({0x7f0000001000, 0xc1, 32});
  EXPECT_EQ(plan->compare(adv, live), "advertised length 32, captured 16");

  const CapturedMessage& response = plan->script[2];  // the Read Response, 16 octets
  LiveMessage r;
  r.opcode = response.opcode;
  r.data = text("start buffer 001");
  EXPECT_EQ(plan->compare(response, r), "");
  r.data[6] = 'B';
  EXPECT_EQ(plan->compare(response, r), "data differs at offset 0x6 of 16");
  r.data.pop_back();
  EXPECT_EQ(plan->compare(response, r), "size 15 octets");
  r.opcode = u8(Opcode::send);
  r.length = 15;
  EXPECT_EQ(plan->compare(response, r), "the live peer sent Send, 15 octets");

  const CapturedMessage& read = plan->script[6];
  LiveMessage lr;
  lr.opcode = read.opcode;
  lr.length = 32;
  EXPECT_EQ(plan->compare(read, lr), "");
  lr.length = 31;
  EXPECT_EQ(plan->compare(read, lr), "Read of 31 octets");
}

// On NVMe-oF's port a 16-octet Send is no advertisement (the analyzer's rule): no region for
// it, and it is compared as data.
TEST(ReplayPlan, AdvertisementsJudgedByTheAnalyzersRule) {
  Capture c(ulp::kNvmeOfPort);
  p2p_write_handshake(c);
  c.send(0, 1, ulp::encode_rping_info({0x5000, 0xa1, 16}));
  std::string err;
  auto plan = plan_of(c, ReplaySide::client, err);
  ASSERT_TRUE(plan) << err;
  EXPECT_TRUE(plan->regions.empty());
  LiveMessage live;
  live.opcode = u8(Opcode::send);
  live.data = ulp::encode_rping_info({0x5000, 0xc1, 16});
  EXPECT_EQ(plan->compare(plan->script[0], live), "data differs at offset 0xb of 16");
  EXPECT_EQ(plan->live_stag_to(0xa1, 0x5000), std::make_pair(0xa1u, std::uint64_t{0x5000}));
}

TEST(ReplayPlan, TerminatesCompareByTheirTriple) {
  Capture c;
  p2p_write_handshake(c);
  c.fpdu(1, wire::untagged_header(Opcode::terminate, wire::kQnTerminate, 1, 0, true),
         Bytes{0x12, 0x05, 0, 0});
  std::string err;
  auto plan = plan_of(c, ReplaySide::client, err);
  ASSERT_TRUE(plan) << err;
  ASSERT_EQ(plan->script.size(), 1u);
  LiveMessage t;
  t.opcode = u8(Opcode::terminate);
  t.terminate = TerminateError{1, 2, 5};
  EXPECT_EQ(plan->compare(plan->script[0], t), "");
  t.terminate = TerminateError{1, 2, 6};
  EXPECT_NE(plan->compare(plan->script[0], t).find("Terminate "), std::string::npos);
  EXPECT_NE(describe(t).find("Terminate"), std::string::npos);
}

// ------------------------------------------------------------------ upper layers
// The same exchange in each ULP: the client's set-up, then commands that name one buffer of
// the client's each (a read: the server RDMA-Writes into it) and their completions.

Bytes cat(Bytes a, const Bytes& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

struct UlpCase {
  std::string name;  // the decoder's
  Bytes request_pd, reply_pd;
  std::vector<Bytes> prelude;  // client Sends before the commands
  std::function<Bytes(std::uint32_t id, std::uint32_t stag, std::uint64_t base, std::uint32_t len)>
      command;
  std::function<Bytes(std::uint32_t id, bool ok, std::uint32_t stag)> completion;
  std::string command_name;  // of command(97, ...)
};

Bytes nvme_read(std::uint32_t cid, std::uint32_t stag, std::uint64_t base, std::uint32_t len) {
  ulp::NvmeSqe sqe;
  sqe.opcode = 0x02;
  sqe.flags = 0x40;  // PSDT 01b: SGL
  sqe.cid = static_cast<std::uint16_t>(cid);
  sqe.nsid = 1;
  sqe.sgl1 = {base, len, stag, ulp::sgl_type::keyed_data_block, ulp::sgl_subtype::address};
  sqe.cdw[2] = len / 512 - 1;
  return ulp::encode_nvme_sqe(sqe);
}
Bytes nvme_cqe(std::uint32_t cid, bool ok, std::uint32_t) {
  ulp::NvmeCqe c;
  c.cid = static_cast<std::uint16_t>(cid);
  c.status = ok ? 0 : 0x0004;  // status field 0x0002, phase 0
  return ulp::encode_nvme_cqe(c);
}

Bytes iser_read(std::uint32_t itt, std::uint32_t stag, std::uint64_t base, std::uint32_t len) {
  ulp::IserHeader h;
  h.read_valid = true;
  h.read_stag = stag;
  h.read_base = base;
  ulp::IscsiBhs b;
  b.opcode = ulp::iscsi_opcode::scsi_command;
  b.flags = ulp::IscsiBhs::kFinal | ulp::IscsiBhs::kRead | 0x01;
  b.itt = itt;
  b.word20 = len;
  b.cdb[0] = 0x28;
  return cat(ulp::encode_iser_header(h), ulp::encode_iscsi_bhs(b));
}
Bytes iser_response(std::uint32_t itt, bool ok, std::uint32_t) {
  ulp::IscsiBhs b;
  b.opcode = ulp::iscsi_opcode::scsi_response;
  b.flags = 0x80;
  b.status = ok ? 0 : 0x02;
  b.itt = itt;
  return cat(ulp::encode_iser_header(ulp::IserHeader{}), ulp::encode_iscsi_bhs(b));
}
Bytes iser_login() {
  ulp::IscsiBhs b;
  b.opcode = ulp::iscsi_opcode::login_request;
  b.immediate = true;
  b.flags = 0x87;
  const std::string t =
      std::string("InitiatorName=iqn.x:host") + '\0' + "TargetName=iqn.x:disk" + '\0';
  b.data_length = static_cast<std::uint32_t>(t.size());
  return cat(cat(ulp::encode_iser_header(ulp::IserHeader{}), ulp::encode_iscsi_bhs(b)),
             Bytes(t.begin(), t.end()));
}

Bytes nfs_read(std::uint32_t xid, std::uint32_t stag, std::uint64_t base, std::uint32_t len) {
  ulp::RpcRdmaHeader h;
  h.xid = xid;
  h.credit = 32;
  h.writes = {{ulp::RdmaSegment{stag, len, base}}};
  return cat(ulp::encode_rpcrdma_header(h), ulp::encode_rpc_call({xid, 100003, 3, 6}));
}
Bytes nfs_reply(std::uint32_t xid, bool ok, std::uint32_t stag) {
  ulp::RpcRdmaHeader h;
  h.xid = xid;
  h.credit = 32;
  h.writes = {{ulp::RdmaSegment{stag, 4096, 0x10000}}};
  return cat(ulp::encode_rpcrdma_header(h), ulp::encode_rpc_reply({xid, false, 0, ok ? 0u : 5u}));
}

Bytes smbd(const Bytes& smb2) {
  ulp::SmbdDataHeader h;
  h.credits_requested = 1;
  h.credits_granted = 1;
  return ulp::encode_smbd_data(h, smb2);
}
Bytes smb_read(std::uint32_t mid, std::uint32_t stag, std::uint64_t base, std::uint32_t len) {
  return smbd(ulp::encode_smb2_read_request(mid, len, 1, {{base, stag, len}}));
}
Bytes smb_response(std::uint32_t mid, bool ok, std::uint32_t) {
  return smbd(ulp::encode_smb2_response(ulp::smb2_command::read, mid, ok ? 0 : 0xC0000022u, 0));
}

std::vector<UlpCase> ulp_cases() {
  std::vector<UlpCase> v;
  v.push_back({"nvme-rdma",
               ulp::encode_nvme_cm_request({0, 1, 32, 31, 0}),
               ulp::encode_nvme_cm_reply({0, 32}),
               {},
               nvme_read,
               nvme_cqe,
               "NVMe Read cid 97 nsid 1"});
  v.push_back({"iser",
               Bytes{0x40, 0, 0, 0},
               {},
               {iser_login()},
               iser_read,
               iser_response,
               "SCSI READ(10) ITT 0x61 LUN 0"});
  v.push_back({"rpc-rdma",
               ulp::encode_rpcrdma_cm({1, true, 7, 7}),
               ulp::encode_rpcrdma_cm({1, true, 7, 7}),
               {},
               nfs_read,
               nfs_reply,
               "NFSv3 READ xid 0x61"});
  ulp::SmbdNegotiateRequest rq;
  rq.credits_requested = 255;
  rq.preferred_send_size = 1364;
  rq.max_receive_size = 8192;
  rq.max_fragmented_size = 1 << 20;
  v.push_back({"smb-direct",
               {},
               {},
               {ulp::encode_smbd_negotiate_request(rq)},
               smb_read,
               smb_response,
               "SMB2 READ mid 97"});
  return v;
}

// Commands 97 and 98, each answered by 4096 octets Written into its buffer and a completion;
// the buffers' STags share an index (a fast registration's new key, as Linux's hosts do).
void ulp_exchange(Capture& c, const UlpCase& u) {
  c.handshake(frame(wire::MpaFrameKind::request,
                    wire::MpaEnhancedPd{true, false, 8, true, false, 4}, u.request_pd),
              frame(wire::MpaFrameKind::reply, wire::MpaEnhancedPd{true, false, 4, true, false, 8},
                    u.reply_pd));
  c.fpdu(0, wire::tagged_header(Opcode::rdma_write, 0, 0, true));  // the RTR
  std::uint32_t msn[2] = {1, 1};
  for (const Bytes& p : u.prelude)
    c.send(0, msn[0]++, p);
  c.send(0, msn[0]++, u.command(97, 0x1201, 0x10000, 4096));
  c.send(0, msn[0]++, u.command(98, 0x1202, 0x20000, 4096));
  c.fpdu(1, wire::tagged_header(Opcode::rdma_write, 0x1201, 0x10000, true), Bytes(4096, 0x61));
  c.send(1, msn[1]++, u.completion(97, true, 0x1201));
  c.fpdu(1, wire::tagged_header(Opcode::rdma_write, 0x1202, 0x20000, true), Bytes(4096, 0x62));
  c.send(1, msn[1]++, u.completion(98, true, 0x1202));
}

std::size_t index_of(const ReplayPlan& p, const std::string& label) {
  for (std::size_t i = 0; i < p.script.size(); ++i)
    if (p.label(i) == label) return i;
  return p.script.size();
}

LiveMessage live_send(Bytes data) {
  LiveMessage l;
  l.opcode = u8(Opcode::send);
  l.length = static_cast<std::uint32_t>(data.size());
  l.data = std::move(data);
  return l;
}

class ReplayUlp : public ::testing::TestWithParam<UlpCase> {};

// The advertising side registers each buffer its commands named, under the captured STag,
// from the command that names it; transfers and completions are named by their command.
TEST_P(ReplayUlp, AdvertisingSideRegistersEveryAdvertisedBuffer) {
  const UlpCase& u = GetParam();
  Capture c;
  ulp_exchange(c, u);
  std::string err;
  auto plan = plan_of(c, ReplaySide::client, err);
  ASSERT_TRUE(plan) << err;
  EXPECT_EQ(plan->ulp, u.name);
  ASSERT_EQ(plan->regions.size(), 2u);
  const ReplayRegion& r = plan->regions.at(0x1201);
  EXPECT_EQ(r.base, 0x10000u);
  EXPECT_EQ(r.mem.size(), 4096u);
  const std::size_t cmd = index_of(*plan, u.command_name);
  ASSERT_LT(cmd, plan->script.size());
  EXPECT_EQ(r.first_use, cmd);
  EXPECT_EQ(plan->regions.at(0x1202).first_use, cmd + 1);
  EXPECT_EQ(plan->label(cmd + 2), "RDMA Write for " + u.command_name);
  EXPECT_EQ(plan->label(cmd + 3), u.command_name + " (response)");
  // What the live peer placed is compared with the capture, naming the command.
  LiveMessage w;
  w.opcode = u8(Opcode::rdma_write);
  w.stag = 0x1201;
  w.to = 0x10000;
  w.data = Bytes(4096, 0x61);
  w.data[0x200] = 0;
  EXPECT_EQ(plan->compare(cmd + 2, w), "data differs at offset 0x200 of 4096");
  // A completion's status comes before its octets.
  LiveMessage bad = live_send(u.completion(97, false, 0x1201));
  plan->observe_live(bad);
  ASSERT_TRUE(bad.ulp.completion);
  const std::string why = plan->compare(cmd + 3, bad);
  EXPECT_NE(why.find(" live vs success captured"), std::string::npos) << why;
}

// The using side learns the live buffers from the live commands, matched by the ULP's identity
// whatever their order; a command the live peer did not send is named, and so is one the
// capture lacks.
TEST_P(ReplayUlp, UsingSideMatchesCommandsByIdentity) {
  const UlpCase& u = GetParam();
  Capture c;
  ulp_exchange(c, u);
  std::string err;
  auto plan = plan_of(c, ReplaySide::server, err);
  ASSERT_TRUE(plan) << err;
  const std::size_t c97 = index_of(*plan, u.command_name);
  ASSERT_LT(c97, plan->script.size());
  const std::size_t c98 = c97 + 1;
  EXPECT_EQ(plan->live_stag_to(0x1201, 0x10010), std::make_pair(0x1201u, std::uint64_t{0x10010}));
  // The live client sends 98 first, then 97, then 99, with buffers of its own.
  std::deque<LiveMessage> live;
  for (const std::uint32_t id : {98u, 97u, 99u}) {
    LiveMessage l = live_send(u.command(id, 0x7700 + id, 0x900000 + id * 0x10000, 4096));
    plan->observe_live(l);
    live.push_back(std::move(l));
  }
  EXPECT_EQ(plan->pick(c97, live), std::optional<std::size_t>(1));
  EXPECT_EQ(plan->pick(c98, live), std::optional<std::size_t>(0));
  EXPECT_EQ(plan->compare(c97, live[1]), "");
  EXPECT_EQ(plan->live_stag_to(0x1201, 0x10010),
            std::make_pair(0x7700u + 97, std::uint64_t{0x900000 + 97 * 0x10000 + 0x10}));
  EXPECT_EQ(plan->live_stag_to(0x1202, 0x20000),
            std::make_pair(0x7700u + 98, std::uint64_t{0x900000 + 98 * 0x10000}));
  // 99 is in no captured command.
  const std::string extra = plan->extra(live[2]);
  EXPECT_NE(extra.find(": the live peer sent it, the capture has no such command"),
            std::string::npos)
      << extra;
  EXPECT_NE(extra.find("99") == std::string::npos ? extra.find("0x63") : 0, std::string::npos)
      << extra;
}

TEST_P(ReplayUlp, AMissingCommandBlocksItsTransfers) {
  const UlpCase& u = GetParam();
  Capture c;
  ulp_exchange(c, u);
  std::string err;
  auto plan = plan_of(c, ReplaySide::server, err);
  ASSERT_TRUE(plan) << err;
  const std::size_t c97 = index_of(*plan, u.command_name);
  ASSERT_LT(c97, plan->script.size());
  std::deque<LiveMessage> live;
  LiveMessage l = live_send(u.command(98, 0x7762, 0x40000, 4096));
  plan->observe_live(l);
  live.push_back(std::move(l));
  EXPECT_FALSE(plan->pick(c97, live));
  EXPECT_EQ(plan->missing(c97), u.command_name + ": the live peer did not send it");
  EXPECT_EQ(plan->blocked_by(c97 + 2), u.command_name);  // its RDMA Write
  EXPECT_EQ(plan->blocked_by(c97 + 4), "");              // 98's
}

INSTANTIATE_TEST_SUITE_P(EveryDecoder, ReplayUlp, ::testing::ValuesIn(ulp_cases()),
                         [](const auto& info) {
                           std::string n = info.param.name;
                           std::replace(n.begin(), n.end(), '-', '_');
                           return n;
                         });

// A live NVMe host picks its CIDs anew (Linux: from its block layer's tags, which start at a
// random per-CPU hint): each live command stands for the first captured one not matched yet
// that asks the same (opcode, NSID, CDW10-15), our completion carries the live CID, and a live
// command whose CID is a captured one's but asks something else is not taken for it.
TEST(ReplayPlan, NvmeHostThatPicksOtherCidsIsMatchedByWhatItAsks) {
  const UlpCase u = ulp_cases().front();
  ASSERT_EQ(u.name, "nvme-rdma");
  Capture c;
  ulp_exchange(c, u);
  std::string err;
  auto plan = plan_of(c, ReplaySide::server, err);
  ASSERT_TRUE(plan) << err;
  const std::size_t c97 = index_of(*plan, "NVMe Read cid 97 nsid 1");
  const std::size_t c98 = index_of(*plan, "NVMe Read cid 98 nsid 1");
  ASSERT_LT(c98, plan->script.size());
  std::deque<LiveMessage> live;
  // cid 98, but a Write (opcode 01h): not captured command 98.
  Bytes write = nvme_read(98, 0x5500, 0x500000, 4096);
  write[0] = 0x01;
  for (Bytes cmd : {write, nvme_read(0x1005, 0x7701, 0x910000, 4096),
                    nvme_read(0x2006, 0x7702, 0x920000, 4096)}) {
    LiveMessage l = live_send(std::move(cmd));
    plan->observe_live(l);
    live.push_back(std::move(l));
  }
  EXPECT_EQ(plan->pick(c97, live), std::optional<std::size_t>(1));
  EXPECT_EQ(plan->pick(c98, live), std::optional<std::size_t>(2));
  EXPECT_EQ(plan->compare(c97, live[1]), "");  // the CID is the live host's choice
  EXPECT_EQ(plan->live_stag_to(0x1201, 0x10000), std::make_pair(0x7701u, std::uint64_t{0x910000}));
  EXPECT_EQ(plan->live_stag_to(0x1202, 0x20000), std::make_pair(0x7702u, std::uint64_t{0x920000}));
  EXPECT_NE(plan->extra(live[0]).find("the capture has no such command"), std::string::npos)
      << plan->extra(live[0]);
  // Our completions answer the live CIDs: octets 12..13 of the CQE.
  const std::size_t r97 = index_of(*plan, "NVMe Read cid 97 nsid 1 (response)");
  const std::size_t r98 = index_of(*plan, "NVMe Read cid 98 nsid 1 (response)");
  ASSERT_LT(r98, plan->script.size());
  EXPECT_EQ(plan->outgoing(r97), nvme_cqe(0x1005, true, 0));
  EXPECT_EQ(plan->outgoing(r98), nvme_cqe(0x2006, true, 0));
}

// Linux's host sends the Connect data apart from the capsule: the target RDMA-Reads it, and
// the Read Response carries HOSTID (a new one at each connect), CNTLID and HOSTNQN at the
// data's own offsets (NVMe-oF 1.1 §3.3, Figure 20). Seen against the kernel host in the lab.
TEST(ReplayPlan, NvmeConnectDataReadByTheTargetHasTheSameVaryingFields) {
  const std::vector<std::string> all = {"nvme.hostid", "nvme.cntlid", "nvme.hostnqn"};
  using Ranges = std::vector<std::pair<std::size_t, std::size_t>>;
  EXPECT_EQ(varying_ranges("nvme-rdma", all, "RDMA Read Response for NVMe-oF Connect cid 0 qid 0",
                           Bytes(1024)),
            (Ranges{{0, 16}, {16, 18}, {512, 768}}));
  EXPECT_EQ(
      varying_ranges("nvme-rdma", {"nvme.hostid"}, "NVMe-oF Connect cid 0 qid 0", Bytes(64 + 1024)),
      (Ranges{{64, 80}}));
  // Not a Connect's: nothing left out.
  EXPECT_TRUE(varying_ranges("nvme-rdma", all, "RDMA Write for NVMe Read cid 4 nsid 1", Bytes(1024))
                  .empty());
}

// NVMe-oF: the controller ID and host identity of a Connect differ between runs and are not
// compared; a later queue's Connect carries the controller ID the live admin queue was given.
TEST(ReplayPlan, NvmeConnectFieldsThatDifferBetweenRuns) {
  Capture c;
  c.handshake(
      frame(wire::MpaFrameKind::request, wire::MpaEnhancedPd{true, false, 8, true, false, 4},
            ulp::encode_nvme_cm_request({0, 0, 32, 31, 0})),
      frame(wire::MpaFrameKind::reply, wire::MpaEnhancedPd{true, false, 4, true, false, 8},
            ulp::encode_nvme_cm_reply({0, 32})));
  c.fpdu(0, wire::tagged_header(Opcode::rdma_write, 0, 0, true));
  ulp::NvmeSqe sqe;
  sqe.opcode = ulp::kNvmeFabricsOpcode;
  sqe.flags = 0x40;
  sqe.cid = 1;
  sqe.nsid = 0x01;  // fctype Connect
  sqe.sgl1 = {0, 1024, 0, ulp::sgl_type::data_block, ulp::sgl_subtype::offset};
  sqe.cdw[0] = 0;  // qid 0
  Bytes connect = cat(ulp::encode_nvme_sqe(sqe), Bytes(1024, 0));
  connect[64 + 16] = 0x01;  // CNTLID 0x0001 (an I/O queue's Connect names one)
  connect[64 + 512] = 'h';
  c.send(0, 1, connect);
  ulp::NvmeCqe cqe;
  cqe.cid = 1;
  cqe.dw0 = 0x0005;  // the controller ID given
  c.send(1, 1, ulp::encode_nvme_cqe(cqe));
  std::string err;
  auto plan = plan_of(c, ReplaySide::client, err);
  ASSERT_TRUE(plan) << err;
  ASSERT_EQ(plan->script.size(), 2u);
  EXPECT_EQ(plan->label(0), "NVMe-oF Connect cid 1 qid 0");
  LiveMessage reply = live_send(plan->script[1].data);
  reply.data[0] = 0x09;  // another controller ID
  plan->observe_live(reply);
  EXPECT_EQ(plan->compare(1, reply), "");
  EXPECT_EQ(plan->learned_cntlid, std::optional<std::uint16_t>(9));
  reply.data[8] = 0x07;  // SQHD: compared unless ignored
  EXPECT_EQ(plan->compare(1, reply), "data differs at offset 0x8 of 16");
  plan->ignored.push_back("nvme.sqhd");
  EXPECT_EQ(plan->compare(1, reply), "");
  // Our Connect goes with the live controller ID when one was carried over.
  EXPECT_EQ(plan->outgoing(0), connect);
  plan->nvme_cntlid = 0x0009;
  const Bytes out = plan->outgoing(0);
  EXPECT_EQ(out[64 + 16], 0x09);
  EXPECT_EQ(out[64 + 17], 0x00);
}

// RPC-over-RDMA: the responder's Reply returns the requester's write chunk, rewritten onto the
// live requester's handle.
TEST(ReplayPlan, RpcReplyChunksGoToTheLiveHandles) {
  Capture c;
  const UlpCase u = ulp_cases()[2];
  ulp_exchange(c, u);
  std::string err;
  auto plan = plan_of(c, ReplaySide::server, err);
  ASSERT_TRUE(plan) << err;
  const std::size_t c97 = index_of(*plan, u.command_name);
  LiveMessage l = live_send(nfs_read(97, 0x5501, 0x70000, 4096));
  plan->observe_live(l);
  const std::size_t reply = c97 + 3;
  ASSERT_EQ(plan->label(reply), u.command_name + " (response)");
  const auto h = ulp::decode_rpcrdma_header(plan->outgoing(reply));
  ASSERT_TRUE(h);
  ASSERT_EQ(h->writes.size(), 1u);
  EXPECT_EQ(h->writes[0][0].handle, 0x5501u);
  EXPECT_EQ(h->writes[0][0].offset, 0x70000u);
}

}  // namespace
}  // namespace ddpscope::session
