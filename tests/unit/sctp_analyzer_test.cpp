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
  a.send(0, 2, body(1000));
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
  EXPECT_EQ(send.bytes, 1100u);
  EXPECT_EQ(s.dirs[0].sctp_messages, 3u);  // Initiate and two DDP segments
  EXPECT_EQ(s.dirs[0].sctp_chunks, 3u);
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
  const Bytes c1 = a.data_chunk(0, a.seg(0, m1), wire::kPpidDdpSegment);
  const Bytes c2 = a.data_chunk(0, a.seg(0, m2), wire::kPpidDdpSegment);
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
  const Bytes c1 = a.data_chunk(0, a.seg(0, m1), wire::kPpidDdpSegment);
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
  a.data_chunk(0, a.seg(0, body(8)), wire::kPpidDdpSegment);  // TSN never captured
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
  a.data_chunk(0, a.seg(0, body(8)), wire::kPpidDdpSegment);
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
  const std::uint64_t at = a.packet(0, a.data_chunk(0, a.seg(0, m1), wire::kPpidDdpSegment));
  const Bytes m2 = sctptest::ulpdu(wire::untagged_header(Opcode::send, 0, 2, 0, true), body(20));
  a.packet(0, a.data_chunk(0, a.seg(0, m2), wire::kPpidDdpSegment));
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
  const Bytes c1 = a.data_chunk(0, a.seg(0, m1), wire::kPpidDdpSegment);
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
  const std::uint64_t wrong = a.raw_message(
      0, a.seg(0, sctptest::ulpdu(wire::untagged_header(Opcode::send, 0, 1, 0, true), body(8))),
      51);
  const std::uint64_t junk = a.message(0, Bytes(5, 0xEE));
  an.finish();
  const Model& m = an.model();
  ASSERT_EQ(count(m, FindingId::sctp_ppid_invalid), 2u) << ::testing::PrintToString(codes(m));
  EXPECT_EQ(m.findings[0].frame, wrong);
  EXPECT_EQ(m.findings[1].frame, junk);
  // RFC 5043 defines no LLP Terminate codes (RFC 6581 §8): the sink ends the stream with a
  // Session Terminate instead (§11.3).
  EXPECT_FALSE(m.findings[0].terminate);
  EXPECT_EQ(finding_spec(FindingId::sctp_ppid_invalid).llp_action, LlpAction::session_terminate);
}

TEST(SctpAnalyzer, SegmentBeforeAcceptAndRejectedStream) {
  Analyzer an;
  Association a(an);
  a.setup();
  a.session(0, wire::ddp_session_fn::initiate);
  const std::uint64_t early = a.send(0, 1, body(8));
  const std::uint64_t rej = a.session(1, wire::ddp_session_fn::reject);
  an.finish();
  const Model& m = an.model();
  // RFC 5043 §6.6: neither acknowledged nor answered when the segment was sent.
  ASSERT_NE(first(m, FindingId::sctp_segment_early), nullptr) << ::testing::PrintToString(codes(m));
  EXPECT_EQ(first(m, FindingId::sctp_segment_early)->frame, early);
  ASSERT_NE(first(m, FindingId::sctp_session_rejected), nullptr);
  EXPECT_EQ(first(m, FindingId::sctp_session_rejected)->frame, rej);
  EXPECT_EQ(m.streams[0].state, StreamState::rejected);
}

TEST(SctpAnalyzer, MalformedAndOutOfOrderSessionControl) {
  Analyzer an;
  Association a(an);
  a.setup();
  // Shorter than the DDP-SSN and the function code (RFC 5043 §5.2.3).
  const std::uint64_t bad = a.raw_message(0, Bytes{0, 0, 1}, wire::kPpidDdpSessionControl);
  const std::uint64_t wrong_side = [&] {
    a.stream_id = 2;
    a.session(0, wire::ddp_session_fn::initiate);
    return a.session(0, wire::ddp_session_fn::accept);
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
  a.session(0, wire::ddp_session_fn::enhanced_initiate, {}, offer);
  a.session(1, wire::ddp_session_fn::enhanced_accept, {}, offer);
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

// ---- RFC 5043's rules over the DDP-SSN order ----------------------------------------------

// RFC 5043 §10: a receiver must not infer DDP order from the TSN. DDP-SSN 2 in a lower TSN than
// DDP-SSN 1 is legal; the Data Sink sees MSN 1 then MSN 2.
TEST(SctpAnalyzer, DdpSsnNotTsnIsTheOrder) {
  Analyzer an;
  Association a(an);
  a.setup();
  a.session_setup();
  const Bytes s1 =
      a.seg(0, sctptest::ulpdu(wire::untagged_header(Opcode::send, 0, 1, 0, true), body(20)));
  const Bytes s2 =
      a.seg(0, sctptest::ulpdu(wire::untagged_header(Opcode::send, 0, 2, 0, true), body(20)));
  a.packet(0, a.data_chunk(0, s2, wire::kPpidDdpSegment));  // lower TSN
  a.packet(0, a.data_chunk(0, s1, wire::kPpidDdpSegment));
  a.terminate(0);
  a.sack(1);
  an.finish();
  const Model& m = an.model();
  EXPECT_TRUE(m.findings.empty()) << ::testing::PrintToString(codes(m));
  EXPECT_EQ(m.streams[0].dirs[0].opcodes[static_cast<std::size_t>(Opcode::send)].messages, 2u);
}

// RFC 5043 §5.2.1: no gaps within a session. With every TSN captured and the association shut
// down (all data acknowledged), a missing DDP-SSN was never sent: the sender's fault.
TEST(SctpAnalyzer, SkippedDdpSsnIsTheSendersFaultWhenNoTsnWasLost) {
  Analyzer an;
  Association a(an);
  a.setup();
  a.session_setup();
  a.next_ssn(0);  // DDP-SSN 1 never sent
  const std::uint64_t held = a.send(0, 1, body(20));
  a.terminate(0);
  a.sack(1);
  Bytes sd;
  wire::encode_sctp_shutdown(a.tsn[1] - 1, sd);
  a.packet(0, sd);
  an.finish();
  const Model& m = an.model();
  const Finding* f = first(m, FindingId::sctp_ssn_invalid);
  ASSERT_NE(f, nullptr) << ::testing::PrintToString(codes(m));
  EXPECT_EQ(f->frame, held);
  EXPECT_FALSE(f->consequence());
  EXPECT_EQ(f->severity, Severity::error);
  // Its messages are still analysed, after the hole.
  EXPECT_EQ(m.streams[0].dirs[0].opcodes[static_cast<std::size_t>(Opcode::send)].messages, 1u);
}

// The same hole explained by a TSN the capture lacks is capture loss: a note, not the sender's.
TEST(SctpAnalyzer, DdpSsnHoleAfterLostTsnsIsCaptureLoss) {
  Analyzer an;
  Association a(an);
  a.setup();
  a.session_setup();
  a.data_chunk(0, a.seg(0, body(8)), wire::kPpidDdpSegment);  // TSN (and DDP-SSN 1) lost
  a.send(0, 2, body(20));
  a.sack(1);
  an.finish();
  const Model& m = an.model();
  for (const auto& f : m.findings)
    EXPECT_TRUE(f.id == FindingId::sctp_gap || f.consequence()) << f.code() << ": " << f.message;
  EXPECT_NE(first(m, FindingId::sctp_gap), nullptr);
}

// A capture that ends before the association did: the missing DDP-SSN may still come.
TEST(SctpAnalyzer, DdpSsnHoleAtTheEndOfACaptureIsANote) {
  Analyzer an;
  Association a(an);
  a.setup();
  a.session_setup();
  a.next_ssn(0);
  a.send(0, 1, body(20));
  an.finish();
  const Finding* f = first(an.model(), FindingId::sctp_ssn_invalid);
  ASSERT_NE(f, nullptr);
  EXPECT_TRUE(f->consequence());
  EXPECT_EQ(f->severity, Severity::note);
}

// RFC 5043 §6.6: the active side may send once its Initiate was acknowledged by SCTP, before the
// Accept arrives; not before.
TEST(SctpAnalyzer, ActiveSideMaySendOnceItsInitiateIsSacked) {
  for (bool sacked : {true, false}) {
    Analyzer an;
    Association a(an);
    a.setup();
    a.session(0, wire::ddp_session_fn::initiate);
    if (sacked) a.sack(1);
    const std::uint64_t seg = a.send(0, 1, body(20));
    a.session(1, wire::ddp_session_fn::accept);
    an.finish();
    const Finding* f = first(an.model(), FindingId::sctp_segment_early);
    if (sacked) {
      EXPECT_EQ(f, nullptr) << ::testing::PrintToString(codes(an.model()));
    } else {
      ASSERT_NE(f, nullptr);
      EXPECT_EQ(f->frame, seg);
    }
  }
}

// RFC 5043 §6.1: an accepted session ends with a Terminate from at least one side.
TEST(SctpAnalyzer, ShutdownWithoutSessionTerminateIsAWarning) {
  for (bool terminated : {false, true}) {
    Analyzer an;
    Association a(an);
    a.setup();
    a.session_setup();
    a.send(0, 1, body(20));
    if (terminated) a.terminate(1);
    a.sack(1);
    Bytes sd;
    wire::encode_sctp_shutdown(a.tsn[1] - 1, sd);
    a.packet(0, sd);
    an.finish();
    EXPECT_EQ(count(an.model(), FindingId::sctp_session_unterminated), terminated ? 0u : 1u);
  }
}

// RFC 5043 §4, §10 (U = 1), §5.1 (the adaptation indication), §9 (no fragmented segments).
TEST(SctpAnalyzer, OrderedChunksMissingAdaptationAndFragmentedSegments) {
  Analyzer an;
  Association a(an);
  a.setup(false);
  a.session_setup();
  a.unordered = false;
  const std::uint64_t ordered = a.send(0, 1, body(20));
  a.unordered = true;
  const std::uint64_t fragmented = a.send(0, 2, body(2000), 2);
  an.finish();
  const Model& m = an.model();
  ASSERT_NE(first(m, FindingId::sctp_adaptation_missing), nullptr);
  EXPECT_EQ(first(m, FindingId::sctp_adaptation_missing)->frame, 5u);  // the Initiate
  EXPECT_EQ(finding_spec(FindingId::sctp_adaptation_missing).llp_action, LlpAction::abort);
  ASSERT_NE(first(m, FindingId::sctp_chunk_ordered), nullptr);
  EXPECT_EQ(first(m, FindingId::sctp_chunk_ordered)->frame, ordered);
  ASSERT_NE(first(m, FindingId::sctp_segment_too_large), nullptr);
  EXPECT_EQ(first(m, FindingId::sctp_segment_too_large)->frame, fragmented);
}

// RFC 5043 §5.2.3.
TEST(SctpAnalyzer, FunctionCodesAndPrivateDataRules) {
  Analyzer an;
  Association a(an);
  a.setup();
  a.session(0, wire::ddp_session_fn::initiate, body(513));
  a.session(1, wire::ddp_session_fn::accept);
  a.session(0, wire::ddp_session_fn::experimental);
  a.session(1, wire::ddp_session_fn::terminate, body(1));
  an.finish();
  const Model& m = an.model();
  EXPECT_EQ(count(m, FindingId::sctp_private_data_invalid), 2u)
      << ::testing::PrintToString(codes(m));
  EXPECT_EQ(count(m, FindingId::sctp_function_code_invalid), 1u);
}

}  // namespace
}  // namespace ddpscope
