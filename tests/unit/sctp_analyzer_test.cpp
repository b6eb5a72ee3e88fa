// SPDX-License-Identifier: GPL-2.0-or-later
// The SCTP LLP of the Analyzer (engine_sctp.cpp) on real frames built by sctp_builders.h: the
// association, TSN order, fragments, capture loss, checksums, session control, and DDP segments
// through the same Data Sink model as MPA's.
#include <gtest/gtest.h>

#include <algorithm>

#include "ddpscope/analysis/analyzer.h"
#include "sctp_builders.h"

namespace ddpscope {
namespace {

using sctptest::Association;
using sctptest::codes;
using wire::Opcode;

std::uint64_t count(const Model& m, FindingId id) {
  return m.finding_counts[static_cast<std::size_t>(id)];
}

const Finding* first(const Model& m, FindingId id) {
  for (const auto& f : m.findings)
    if (f.id == id) return &f;
  return nullptr;
}

Bytes body(std::size_t n, std::uint8_t seed = 3) {
  Bytes b(n);
  for (std::size_t i = 0; i < n; ++i)
    b[i] = static_cast<std::uint8_t>(seed + i);
  return b;
}

TEST(SctpAnalyzer, CleanAssociationIsOneSctpStreamWithoutFindings) {
  Analyzer an;
  Association a(an);
  a.setup();
  a.session_setup();
  a.send(0, 1, body(100));
  a.send(1, 1, body(40));
  a.send(0, 2, body(3000), 3);  // one user message in three fragments
  a.sack(1);
  a.sack(0);
  an.finish();
  const Model& m = an.model();
  EXPECT_TRUE(m.findings.empty()) << ::testing::PrintToString(codes(m));
  ASSERT_EQ(m.streams.size(), 1u);
  const StreamModel& s = m.streams[0];
  EXPECT_EQ(s.llp, Llp::sctp);
  EXPECT_EQ(s.state, StreamState::full);
  EXPECT_FALSE(s.mid_stream);
  ASSERT_TRUE(s.sctp);
  EXPECT_EQ(s.sctp->stream_id, 1);
  EXPECT_TRUE(s.sctp->adaptation);
  EXPECT_EQ(s.sctp->ports[0], 5000);
  EXPECT_EQ(s.sctp->ports[1], 7000);
  EXPECT_EQ(s.sctp->vtags[0], a.tag[1]);  // client -> server packets carry the server's tag
  EXPECT_EQ(s.sctp->vtags[1], a.tag[0]);
  ASSERT_EQ(s.sctp->session.size(), 2u);
  EXPECT_EQ(s.sctp->session[0].frame, 5u);
  EXPECT_EQ(s.client.port, 5000);
  const auto& send = s.dirs[0].opcodes[static_cast<std::size_t>(Opcode::send)];
  EXPECT_EQ(send.segments, 2u);
  EXPECT_EQ(send.messages, 2u);
  EXPECT_EQ(send.bytes, 3100u);
  EXPECT_EQ(s.dirs[0].sctp_messages, 3u);  // Initiate and two DDP segments
  EXPECT_EQ(s.dirs[0].sctp_chunks, 1u + 1u + 3u);
  EXPECT_EQ(s.dirs[1].opcodes[static_cast<std::size_t>(Opcode::send)].segments, 1u);
  EXPECT_EQ(m.frames_sctp, m.frames);
}

TEST(SctpAnalyzer, Ipv6AndUdpEncapsulation) {
  for (bool v6 : {false, true}) {
    for (bool udp : {false, true}) {
      Analyzer an;
      Association a(an, v6, udp);
      a.setup();
      a.session_setup();
      a.send(0, 1, body(64));
      an.finish();
      const Model& m = an.model();
      ASSERT_EQ(m.streams.size(), 1u) << v6 << udp;
      EXPECT_EQ(m.streams[0].sctp->over_udp, udp);
      EXPECT_EQ(m.streams[0].client.addr.v6, v6);
      EXPECT_EQ(m.streams[0].dirs[0].opcodes[static_cast<std::size_t>(Opcode::send)].segments, 1u);
      EXPECT_TRUE(m.findings.empty()) << ::testing::PrintToString(codes(m));
    }
  }
}

TEST(SctpAnalyzer, ReorderedAndRetransmittedChunksAreDeliveredOnceInTsnOrder) {
  Analyzer an;
  Association a(an);
  a.setup();
  a.session_setup();
  const Bytes m1 = sctptest::ulpdu(wire::untagged_header(Opcode::send, 0, 1, 0, true), body(20));
  const Bytes m2 = sctptest::ulpdu(wire::untagged_header(Opcode::send, 0, 2, 0, true), body(30));
  const Bytes c1 = a.data_chunk(0, m1, wire::kPpidDdpSegment);
  const Bytes c2 = a.data_chunk(0, m2, wire::kPpidDdpSegment);
  a.packet(0, c2);  // TSN order: c1 first
  a.packet(0, c1);
  a.packet(0, c1);  // a retransmission
  a.packet(0, c2);
  a.sack(1);
  an.finish();
  const Model& m = an.model();
  EXPECT_TRUE(m.findings.empty()) << ::testing::PrintToString(codes(m));
  EXPECT_EQ(m.streams[0].dirs[0].opcodes[static_cast<std::size_t>(Opcode::send)].messages, 2u);
}

TEST(SctpAnalyzer, RetransmissionWithOtherOctetsIsAConflict) {
  Analyzer an;
  Association a(an);
  a.setup();
  a.session_setup();
  const Bytes m1 = sctptest::ulpdu(wire::untagged_header(Opcode::send, 0, 1, 0, true), body(20));
  const Bytes c1 = a.data_chunk(0, m1, wire::kPpidDdpSegment);
  a.packet(0, c1);
  Bytes altered = c1;
  altered[wire::kSctpDataHeaderSize + 20] ^= 1;  // a payload octet, not the padding
  const std::uint64_t f = a.packet(0, altered);
  an.finish();
  const Finding* x = first(an.model(), FindingId::sctp_retransmission_conflict);
  ASSERT_NE(x, nullptr);
  EXPECT_EQ(x->frame, f);
}

TEST(SctpAnalyzer, LostChunkIsAGapWhenTheSackCoversIt) {
  Analyzer an;
  Association a(an);
  a.setup();
  a.session_setup();
  a.send(0, 1, body(20));
  a.data_chunk(0, body(8), wire::kPpidDdpSegment);  // TSN never captured
  const std::uint64_t after = a.send(0, 3, body(20));
  a.sack(1);
  an.finish();
  const Model& m = an.model();
  ASSERT_EQ(count(m, FindingId::sctp_gap), 1u) << ::testing::PrintToString(codes(m));
  const Finding* g = first(m, FindingId::sctp_gap);
  EXPECT_EQ(g->frame, after);  // the first frame past the hole, as tcp.gap
  EXPECT_EQ(g->stream, 0u);
  // What follows the hole is judged knowing it: the MSN jump is a note, not the peer's fault.
  for (const auto& f : m.findings) {
    EXPECT_TRUE(f.id == FindingId::sctp_gap || f.consequence()) << f.code();
  }
}

TEST(SctpAnalyzer, HoleNeverFilledIsAGapAtTheEnd) {
  Analyzer an;
  Association a(an);
  a.setup();
  a.session_setup();
  a.data_chunk(0, body(8), wire::kPpidDdpSegment);
  a.send(0, 2, body(20));
  an.finish();
  EXPECT_EQ(count(an.model(), FindingId::sctp_gap), 1u);
}

// A capture on the sending host under checksum offload (the lab's veth did this) shows every
// packet with CRC32c 0: one note per direction, every packet analysed, no error.
TEST(SctpAnalyzer, ZeroChecksumIsOffloadNotCorruption) {
  Analyzer an;
  Association a(an);
  a.setup();
  a.session_setup();
  a.zero_checksum = true;
  const Bytes m1 = sctptest::ulpdu(wire::untagged_header(Opcode::send, 0, 1, 0, true), body(20));
  const std::uint64_t at = a.packet(0, a.data_chunk(0, m1, wire::kPpidDdpSegment));
  const Bytes m2 = sctptest::ulpdu(wire::untagged_header(Opcode::send, 0, 2, 0, true), body(20));
  a.packet(0, a.data_chunk(0, m2, wire::kPpidDdpSegment));
  a.sack(1);
  an.finish();
  const Model& m = an.model();
  // Once per direction (the SACKs of direction 1 are zero too), the first at its packet.
  ASSERT_EQ(count(m, FindingId::sctp_checksum_unfilled), 2u) << ::testing::PrintToString(codes(m));
  EXPECT_EQ(first(m, FindingId::sctp_checksum_unfilled)->frame, at);
  EXPECT_EQ(count(m, FindingId::sctp_checksum_mismatch), 0u);
  EXPECT_EQ(m.findings.size(), 2u) << ::testing::PrintToString(codes(m));
  EXPECT_EQ(m.streams[0].dirs[0].opcodes[static_cast<std::size_t>(Opcode::send)].messages, 2u);
}

TEST(SctpAnalyzer, BadChecksumDiscardsThePacket) {
  Analyzer an;
  Association a(an);
  a.setup();
  a.session_setup();
  a.corrupt_next = true;
  const Bytes m1 = sctptest::ulpdu(wire::untagged_header(Opcode::send, 0, 1, 0, true), body(20));
  const Bytes c1 = a.data_chunk(0, m1, wire::kPpidDdpSegment);
  const std::uint64_t bad = a.packet(0, c1);
  a.packet(0, c1);  // the retransmission delivers it
  a.sack(1);
  an.finish();
  const Model& m = an.model();
  ASSERT_EQ(count(m, FindingId::sctp_checksum_mismatch), 1u);
  EXPECT_EQ(first(m, FindingId::sctp_checksum_mismatch)->frame, bad);
  EXPECT_EQ(m.findings.size(), 1u) << ::testing::PrintToString(codes(m));
  EXPECT_EQ(m.streams[0].dirs[0].opcodes[static_cast<std::size_t>(Opcode::send)].messages, 1u);
}

TEST(SctpAnalyzer, DdpOnAnotherPpidAndNonDdpOnPpid16) {
  Analyzer an;
  Association a(an);
  a.setup();
  a.session_setup();
  const std::uint64_t wrong = a.message(
      0, sctptest::ulpdu(wire::untagged_header(Opcode::send, 0, 1, 0, true), body(8)), 51);
  const std::uint64_t junk = a.message(0, Bytes(5, 0xEE), wire::kPpidDdpSegment);
  an.finish();
  const Model& m = an.model();
  ASSERT_EQ(count(m, FindingId::sctp_ppid_invalid), 2u) << ::testing::PrintToString(codes(m));
  EXPECT_EQ(m.findings[0].frame, wrong);
  EXPECT_EQ(m.findings[1].frame, junk);
  ASSERT_TRUE(m.findings[0].terminate);
  EXPECT_EQ(m.findings[0].terminate->layer, 2);
}

TEST(SctpAnalyzer, SegmentBeforeAcceptAndRejectedStream) {
  Analyzer an;
  Association a(an);
  a.setup();
  a.session(0, wire::ddp_session_fn::initiate_unverified);
  const std::uint64_t early = a.send(0, 1, body(8));
  const std::uint64_t rej = a.session(1, wire::ddp_session_fn::reject_unverified);
  an.finish();
  const Model& m = an.model();
  ASSERT_NE(first(m, FindingId::sctp_session_invalid), nullptr);
  EXPECT_EQ(first(m, FindingId::sctp_session_invalid)->frame, early);
  ASSERT_NE(first(m, FindingId::sctp_session_rejected), nullptr);
  EXPECT_EQ(first(m, FindingId::sctp_session_rejected)->frame, rej);
  EXPECT_EQ(m.streams[0].state, StreamState::rejected);
}

TEST(SctpAnalyzer, MalformedAndOutOfOrderSessionControl) {
  Analyzer an;
  Association a(an);
  a.setup();
  const std::uint64_t bad = a.message(0, Bytes{0, 2, 0, 9, 1}, wire::kPpidDdpSessionControl);
  const std::uint64_t wrong_side = [&] {
    a.stream_id = 2;
    a.session(0, wire::ddp_session_fn::initiate_unverified);
    return a.session(0, wire::ddp_session_fn::accept_unverified);
  }();
  an.finish();
  const Model& m = an.model();
  ASSERT_EQ(count(m, FindingId::sctp_session_invalid), 2u) << ::testing::PrintToString(codes(m));
  EXPECT_EQ(m.findings[0].frame, bad);
  EXPECT_EQ(m.findings[1].frame, wrong_side);
}

TEST(SctpAnalyzer, EnhancedSessionNegotiatesRtrChecked) {
  Analyzer an;
  Association a(an);
  a.setup();
  wire::MpaEnhancedPd offer;
  offer.peer_to_peer = true;
  offer.ird = offer.ord = 8;
  offer.zero_length_write_rtr = true;
  a.session(0, wire::ddp_session_fn::enhanced_initiate_unverified, {}, offer);
  a.session(1, wire::ddp_session_fn::enhanced_accept_unverified, {}, offer);
  // The initiator's first DDP segment must be the zero-length Write RTR: a Send is not.
  a.send(0, 1, body(8));
  an.finish();
  const Model& m = an.model();
  EXPECT_TRUE(m.streams[0].peer_to_peer);
  EXPECT_EQ(m.streams[0].rtr, "write");
  EXPECT_FALSE(m.findings.empty());
}

TEST(SctpAnalyzer, MidAssociationCaptureStartsFromTheFirstTsn) {
  Analyzer an;
  Association a(an);
  a.send(0, 7, body(20));
  a.send(0, 8, body(20));
  an.finish();
  const Model& m = an.model();
  ASSERT_EQ(m.streams.size(), 1u);
  EXPECT_TRUE(m.streams[0].mid_stream);
  EXPECT_FALSE(m.streams[0].sctp->adaptation);
  EXPECT_TRUE(m.findings.empty()) << ::testing::PrintToString(codes(m));
}

TEST(SctpAnalyzer, TsnStormAndEndlessGapsStayWithinTheWindow) {
  AnalyzerOptions o;
  o.limits.reassembly_window = 64u << 10;
  Analyzer an(o);
  Association a(an);
  a.setup();
  a.session_setup();
  // Every second TSN missing, 20000 times, each chunk 100 octets: the held chunks never reach
  // the window for long, every hole is reported.
  for (int i = 0; i < 20000; ++i) {
    a.data_chunk(0, body(100), wire::kPpidDdpSegment);
    a.packet(0, a.data_chunk(0, body(100), wire::kPpidDdpSegment, true, false));
  }
  an.finish();
  const Model& m = an.model();
  EXPECT_GE(count(m, FindingId::sctp_gap), 1u);
  EXPECT_LE(m.findings.size(), o.limits.max_findings);
}

TEST(SctpAnalyzer, HugeFragmentedMessageIsCappedByTheWindow) {
  AnalyzerOptions o;
  o.limits.reassembly_window = 64u << 10;
  Analyzer an(o);
  Association a(an);
  a.setup();
  a.session_setup();
  a.packet(0, a.data_chunk(0, body(1000), wire::kPpidDdpSegment, true, false));
  for (int i = 0; i < 200; ++i)
    a.packet(0, a.data_chunk(0, body(1000), wire::kPpidDdpSegment, false, false));
  a.packet(0, a.data_chunk(0, body(1000), wire::kPpidDdpSegment, false, true));
  an.finish();
  const Model& m = an.model();
  bool limit = false;
  for (const auto& f : m.findings)
    limit |= f.id == FindingId::engine_limit_reached &&
             f.message.find("reassembly_window") != std::string::npos;
  EXPECT_TRUE(limit) << ::testing::PrintToString(codes(m));
  EXPECT_EQ(m.streams[0].dirs[0].opcodes[static_cast<std::size_t>(Opcode::send)].segments, 0u);
}

}  // namespace
}  // namespace ddpscope
