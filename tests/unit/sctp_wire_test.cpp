// SPDX-License-Identifier: GPL-2.0-or-later
#include <gtest/gtest.h>

#include <string>

#include "ddpscope/common/crc32c.h"
#include "ddpscope/wire/sctp.h"
#include "ddpscope/wire/terminate_error.h"

namespace ddpscope::wire {
namespace {

Bytes pattern(std::size_t n, std::uint8_t seed = 1) {
  Bytes b(n);
  for (std::size_t i = 0; i < n; ++i)
    b[i] = static_cast<std::uint8_t>(seed + i * 7);
  return b;
}

SctpCommonHeader header(std::uint32_t vtag = 0x11223344) {
  SctpCommonHeader h;
  h.source_port = 5001;
  h.destination_port = 7001;
  h.verification_tag = vtag;
  return h;
}

SctpData data_chunk(std::uint32_t tsn, ByteView payload, bool b = true, bool e = true) {
  SctpData d;
  d.beginning = b;
  d.ending = e;
  d.tsn = tsn;
  d.stream_id = 3;
  d.ssn = 9;
  d.ppid = kPpidDdpSegment;
  d.user_data = payload;
  return d;
}

// ---------------------------------------------------------------------------------------------
// Common header, checksum, chunk walk
// ---------------------------------------------------------------------------------------------

TEST(SctpWire, ConstantsOfRfc5043AndRfc6951) {
  EXPECT_EQ(kIpProtocolSctp, 132);
  EXPECT_EQ(kSctpUdpPort, 9899);
  EXPECT_EQ(kPpidDdpSegment, 16u);
  EXPECT_EQ(kPpidDdpSessionControl, 17u);
  EXPECT_EQ(sctp_param::adaptation_layer_indication, 0xC006);
}

// RFC 5043 §5.1, §12: the Adaptation Code Point 0x00000001 is DDP.
TEST(SctpWire, DdpAdaptationCodePointIsOne) {
  EXPECT_EQ(kAdaptationCodePointDdp, 1u);
}

TEST(SctpWire, PacketRoundTripWithBundledChunks) {
  const Bytes p1 = pattern(5), p2 = pattern(8, 40);
  Bytes chunks;
  encode_sctp_data(data_chunk(100, p1), chunks);
  SctpSack sack;
  sack.cumulative_tsn_ack = 77;
  sack.a_rwnd = 65536;
  sack.gap_blocks = {{2, 3}, {5, 5}};
  sack.duplicate_tsns = {70, 71};
  encode_sctp_sack(sack, chunks);
  encode_sctp_data(data_chunk(101, p2), chunks);
  const Bytes packet = encode_sctp_packet(header(), chunks);

  ASSERT_EQ(packet.size() % 4, 0u);
  EXPECT_TRUE(sctp_checksum_ok(packet));
  const auto r = decode_sctp_packet(packet);
  ASSERT_TRUE(r) << r.error().code;
  EXPECT_EQ(r->header.source_port, 5001);
  EXPECT_EQ(r->header.destination_port, 7001);
  EXPECT_EQ(r->header.verification_tag, 0x11223344u);
  EXPECT_EQ(r->header.checksum, sctp_checksum(packet));
  ASSERT_EQ(r->chunks.size(), 3u);
  EXPECT_FALSE(r->last_chunk_unpadded);

  const auto d1 = decode_sctp_data(r->chunks[0]);
  ASSERT_TRUE(d1);
  EXPECT_EQ(r->chunks[0].length, 16 + 5);  // the length excludes the 3 pad octets
  EXPECT_EQ(d1->tsn, 100u);
  EXPECT_EQ(d1->stream_id, 3);
  EXPECT_EQ(d1->ssn, 9);
  EXPECT_EQ(d1->ppid, kPpidDdpSegment);
  EXPECT_TRUE(d1->beginning && d1->ending && !d1->unordered);
  EXPECT_EQ(Bytes(d1->user_data.begin(), d1->user_data.end()), p1);
  const auto s = decode_sctp_sack(r->chunks[1]);
  ASSERT_TRUE(s);
  EXPECT_EQ(*s, sack);
  const auto d2 = decode_sctp_data(r->chunks[2]);
  ASSERT_TRUE(d2);
  EXPECT_EQ(d2->tsn, 101u);
  EXPECT_EQ(Bytes(d2->user_data.begin(), d2->user_data.end()), p2);
  EXPECT_EQ(r->chunks[2].offset, 12u + 24u + 32u);  // DATA 21 + 3 pad, SACK 32
}

TEST(SctpWire, ChecksumIsCrc32cWithZeroedFieldLeastSignificantOctetFirst) {
  Bytes chunks;
  encode_sctp_cookie_ack(chunks);
  const Bytes packet = encode_sctp_packet(header(), chunks);
  Bytes zeroed = packet;
  for (std::size_t i = 8; i < 12; ++i)
    zeroed[i] = 0;
  const std::uint32_t crc = crc32c(zeroed);
  EXPECT_EQ(sctp_checksum(packet), crc);
  EXPECT_EQ(packet[8], static_cast<std::uint8_t>(crc));
  EXPECT_EQ(packet[11], static_cast<std::uint8_t>(crc >> 24));
}

TEST(SctpWire, BadChecksumIsDetectedAndStillDecodes) {
  Bytes chunks;
  encode_sctp_data(data_chunk(1, pattern(12)), chunks);
  Bytes packet = encode_sctp_packet(header(), chunks);
  packet.back() ^= 0x5A;
  EXPECT_FALSE(sctp_checksum_ok(packet));
  EXPECT_TRUE(decode_sctp_packet(packet));  // verification is the engine's call, not the walk's
  sctp_write_checksum(packet);
  EXPECT_TRUE(sctp_checksum_ok(packet));
  EXPECT_FALSE(sctp_checksum_ok(ByteView{packet}.first(11)));
}

TEST(SctpWire, TruncatedInputIsMalformedEverywhere) {
  Bytes chunks;
  encode_sctp_data(data_chunk(1, pattern(9)), chunks);
  const Bytes packet = encode_sctp_packet(header(), chunks);
  // Every cut short of the last chunk's payload is malformed, never a crash.
  for (std::size_t n = 0; n < 12 + 16 + 9; ++n) {
    const auto r = decode_sctp_packet(ByteView{packet}.first(n));
    EXPECT_FALSE(r) << n;
    const char* want = n < 12 ? "sctp.truncated" : n == 12 ? "sctp.no-chunks" : "sctp.chunk-length";
    EXPECT_EQ(r.error().code, want) << n;
  }
  // The final chunk without its padding is whole.
  const auto r = decode_sctp_packet(ByteView{packet}.first(12 + 16 + 9));
  ASSERT_TRUE(r);
  EXPECT_TRUE(r->last_chunk_unpadded);
}

TEST(SctpWire, ChunkLengthBelowFourIsMalformed) {
  Bytes packet = encode_sctp_packet(header(), Bytes{});
  packet.insert(packet.end(), {0, 0, 0, 2});
  const auto r = decode_sctp_packet(packet);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, "sctp.chunk-length");
  EXPECT_EQ(r.error().offset, 12u);
}

TEST(SctpWire, DataFlagsRoundTrip) {
  const Bytes payload = pattern(1);  // the chunk's user data is a view of it
  SctpData d = data_chunk(0xFFFFFFFF, payload, false, true);
  d.unordered = true;
  d.immediate = true;
  EXPECT_EQ(d.flags(), kSctpDataFlagE | kSctpDataFlagU | kSctpDataFlagI);
  Bytes chunks;
  encode_sctp_data(d, chunks);
  const Bytes r_wire = encode_sctp_packet(header(), chunks);  // kept: the views point into it
  const auto r = decode_sctp_packet(r_wire);
  ASSERT_TRUE(r);
  const auto back = decode_sctp_data(r->chunks[0]);
  ASSERT_TRUE(back);
  EXPECT_TRUE(back->unordered && back->ending && back->immediate && !back->beginning);
  EXPECT_EQ(back->tsn, 0xFFFFFFFFu);
}

TEST(SctpWire, DataShorterThanItsHeaderIsMalformed) {
  Bytes chunks;
  encode_sctp_chunk(sctp_chunk::data, 3, pattern(8), chunks);
  const Bytes r_wire = encode_sctp_packet(header(), chunks);  // kept: the views point into it
  const auto r = decode_sctp_packet(r_wire);
  ASSERT_TRUE(r);
  const auto d = decode_sctp_data(r->chunks[0]);
  ASSERT_FALSE(d);
  EXPECT_EQ(d.error().code, "sctp.data-short");
}

// ---------------------------------------------------------------------------------------------
// INIT / INIT ACK, SACK, SHUTDOWN, ABORT, COOKIE
// ---------------------------------------------------------------------------------------------

TEST(SctpWire, InitWithAdaptationIndicationRoundTrip) {
  SctpInit init;
  init.initiate_tag = 0xCAFEF00D;
  init.a_rwnd = 131072;
  init.outbound_streams = 10;
  init.inbound_streams = 65535;
  init.initial_tsn = 12345;
  init.parameters.push_back({sctp_param::ipv4_address, {127, 0, 0, 1}});
  init.parameters.push_back({sctp_param::supported_address_types, {0, 5}});  // padded to 8
  init.parameters.push_back(sctp_adaptation_parameter(kAdaptationCodePointDdp));
  Bytes chunks;
  encode_sctp_init(init, chunks);
  const Bytes packet = encode_sctp_packet(header(0), chunks);
  const auto r = decode_sctp_packet(packet);
  ASSERT_TRUE(r);
  ASSERT_EQ(r->chunks.size(), 1u);
  EXPECT_EQ(r->chunks[0].type, sctp_chunk::init);
  EXPECT_EQ(r->chunks[0].length, 20 + 8 + 8 + 8);
  const auto back = decode_sctp_init(r->chunks[0]);
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(*back, init);
  EXPECT_EQ(back->adaptation_code_point(), kAdaptationCodePointDdp);
  EXPECT_TRUE(back->state_cookie().empty());
}

TEST(SctpWire, InitAckCarriesStateCookieAndNoAdaptation) {
  SctpInit ack;
  ack.ack = true;
  ack.initiate_tag = 7;
  ack.parameters.push_back({sctp_param::state_cookie, pattern(13)});  // last one: unpadded len
  Bytes chunks;
  encode_sctp_init(ack, chunks);
  const Bytes r_wire = encode_sctp_packet(header(), chunks);  // kept: the views point into it
  const auto r = decode_sctp_packet(r_wire);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->chunks[0].length, 20 + 4 + 13);
  const auto back = decode_sctp_init(r->chunks[0]);
  ASSERT_TRUE(back);
  EXPECT_TRUE(back->ack);
  EXPECT_FALSE(back->adaptation_code_point());
  EXPECT_EQ(Bytes(back->state_cookie().begin(), back->state_cookie().end()), pattern(13));
}

TEST(SctpWire, InitParameterPastTheChunkIsMalformed) {
  SctpInit init;
  init.parameters.push_back(sctp_adaptation_parameter(1));
  Bytes chunks;
  encode_sctp_init(init, chunks);
  chunks[20 + 3] = 40;  // the adaptation parameter's length now runs past the chunk
  const Bytes r_wire = encode_sctp_packet(header(), chunks);  // kept: the views point into it
  const auto r = decode_sctp_packet(r_wire);
  ASSERT_TRUE(r);
  const auto back = decode_sctp_init(r->chunks[0]);
  ASSERT_FALSE(back);
  EXPECT_EQ(back.error().code, "sctp.param-length");
  EXPECT_EQ(back.error().offset, 20u);
  chunks[20 + 3] = 6;  // within the chunk, but an adaptation indication must be 8 octets
  const Bytes r2_wire = encode_sctp_packet(header(), chunks);  // kept: the views point into it
  const auto r2 = decode_sctp_packet(r2_wire);
  ASSERT_TRUE(r2);
  EXPECT_FALSE(decode_sctp_init(r2->chunks[0]));
}

TEST(SctpWire, SackCountsPastTheChunkAreMalformed) {
  SctpSack sack;
  sack.gap_blocks = {{1, 2}};
  Bytes chunks;
  encode_sctp_sack(sack, chunks);
  chunks[4 + 11] = 9;  // nine duplicate TSNs promised, none present
  const Bytes r_wire = encode_sctp_packet(header(), chunks);  // kept: the views point into it
  const auto r = decode_sctp_packet(r_wire);
  ASSERT_TRUE(r);
  const auto s = decode_sctp_sack(r->chunks[0]);
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().code, "sctp.sack-short");
}

TEST(SctpWire, ControlChunksEncodeTheirTypesFlagsAndLengths) {
  Bytes chunks;
  encode_sctp_abort(true, pattern(4), chunks);
  encode_sctp_shutdown(0xABCDEF01, chunks);
  encode_sctp_shutdown_ack(chunks);
  encode_sctp_shutdown_complete(false, chunks);
  encode_sctp_cookie_echo(pattern(6), chunks);
  encode_sctp_cookie_ack(chunks);
  const Bytes r_wire = encode_sctp_packet(header(), chunks);  // kept: the views point into it
  const auto r = decode_sctp_packet(r_wire);
  ASSERT_TRUE(r);
  ASSERT_EQ(r->chunks.size(), 6u);
  EXPECT_EQ(r->chunks[0].type, sctp_chunk::abort);
  EXPECT_EQ(r->chunks[0].flags, kSctpFlagT);
  EXPECT_EQ(r->chunks[0].length, 8);
  const auto cum = decode_sctp_shutdown(r->chunks[1]);
  ASSERT_TRUE(cum);
  EXPECT_EQ(*cum, 0xABCDEF01u);
  EXPECT_EQ(r->chunks[2].type, sctp_chunk::shutdown_ack);
  EXPECT_EQ(r->chunks[3].type, sctp_chunk::shutdown_complete);
  EXPECT_EQ(r->chunks[3].flags, 0);
  EXPECT_EQ(r->chunks[4].type, sctp_chunk::cookie_echo);
  EXPECT_EQ(r->chunks[4].length, 10);
  EXPECT_EQ(r->chunks[5].type, sctp_chunk::cookie_ack);
  EXPECT_EQ(sctp_chunk_name(sctp_chunk::init_ack), "INIT ACK");
  EXPECT_TRUE(sctp_chunk_name(200).empty());
  EXPECT_FALSE(decode_sctp_shutdown(r->chunks[2]));
}

// ---------------------------------------------------------------------------------------------
// DDP Stream Session Control (PPID 17)
// ---------------------------------------------------------------------------------------------

// RFC 5043 §5.2.3 (Initiate 1, Accept 2, Reject 3, Terminate 4) and RFC 6581 §7 (Enhanced
// Initiate 5, Enhanced Accept 6, Enhanced Reject 7); RFC 6580 §3.5 lists them as 16-bit values
// and keeps 0xFFFF for experiments. There is no "legacy mode" code and no enhanced Terminate.
TEST(SctpWire, SessionControlFunctionCodesOfRfc5043AndRfc6581) {
  EXPECT_EQ(ddp_session_fn::initiate, 0x1);
  EXPECT_EQ(ddp_session_fn::accept, 0x2);
  EXPECT_EQ(ddp_session_fn::reject, 0x3);
  EXPECT_EQ(ddp_session_fn::terminate, 0x4);
  EXPECT_EQ(ddp_session_fn::enhanced_initiate, 0x5);
  EXPECT_EQ(ddp_session_fn::enhanced_accept, 0x6);
  EXPECT_EQ(ddp_session_fn::enhanced_reject, 0x7);
  EXPECT_EQ(ddp_session_kind(ddp_session_fn::enhanced_accept), DdpSessionKind::accept);
  EXPECT_EQ(ddp_session_kind(ddp_session_fn::enhanced_reject), DdpSessionKind::reject);
  EXPECT_TRUE(ddp_session_is_enhanced(ddp_session_fn::enhanced_initiate));
  EXPECT_FALSE(ddp_session_is_enhanced(ddp_session_fn::initiate));
  EXPECT_FALSE(ddp_session_is_enhanced(ddp_session_fn::terminate));
  for (std::uint16_t undefined : {0x0000, 0x0008, 0x7777, 0xFFFF})
    EXPECT_EQ(ddp_session_kind(undefined), DdpSessionKind::unknown) << undefined;
  EXPECT_EQ(ddp_session_function_name(ddp_session_fn::reject), "Session Reject");
  EXPECT_EQ(ddp_session_function_name(ddp_session_fn::enhanced_accept), "Enhanced Session Accept");
  EXPECT_TRUE(ddp_session_function_name(0x0008).empty());
}

// RFC 5043 §5.2.3: DDP-SSN (2) | Function Code (2) | Private Data to the end of the message, no
// length field.
TEST(SctpWire, SessionControlLayoutIsSsnFunctionCodeThenPrivateData) {
  DdpSessionControl m;
  m.ddp_ssn = 0x1234;
  m.function_code = ddp_session_fn::initiate;
  m.private_data = pattern(10);
  const Bytes wire = encode_ddp_session_control(m);
  ASSERT_EQ(wire.size(), 14u);
  EXPECT_EQ(be16(wire, 0), 0x1234);
  EXPECT_EQ(be16(wire, 2), ddp_session_fn::initiate);
  EXPECT_EQ(Bytes(wire.begin() + 4, wire.end()), pattern(10));
  const auto back = decode_ddp_session_control(wire);
  ASSERT_TRUE(back);
  EXPECT_EQ(*back, m);
  EXPECT_FALSE(back->enhanced_pd);
  EXPECT_EQ(back->ulp_private_data().size(), 10u);
}

// RFC 6581 §7: the enhanced codes' private data opens with the IRD/ORD word, as in MPA.
TEST(SctpWire, EnhancedSessionControlCarriesTheRfc6581Word) {
  DdpSessionControl m;
  m.function_code = ddp_session_fn::enhanced_accept;
  MpaEnhancedPd pd;
  pd.peer_to_peer = true;
  pd.ird = 16;
  pd.ord = 8;
  pd.zero_length_write_rtr = true;
  m.enhanced_pd = pd;
  m.private_data = pattern(3);
  const Bytes wire = encode_ddp_session_control(m);
  ASSERT_EQ(wire.size(), 4u + 4u + 3u);
  const auto back = decode_ddp_session_control(wire);
  ASSERT_TRUE(back);
  ASSERT_TRUE(back->enhanced_pd);
  EXPECT_EQ(*back->enhanced_pd, pd);
  EXPECT_EQ(back->private_data.size(), 7u);  // the whole PD, word included
  const ByteView ulp = back->ulp_private_data();
  EXPECT_EQ(Bytes(ulp.begin(), ulp.end()), pattern(3));
}

// A message is whole (SCTP delivers messages): short is malformed; the 512-octet limit and a
// Terminate's private data are rules (sctp.private-data-invalid), not decode errors.
TEST(SctpWire, SessionControlShorterThanItsHeaderIsMalformed) {
  DdpSessionControl m;
  m.function_code = ddp_session_fn::terminate;
  m.private_data = pattern(600);
  const Bytes wire = encode_ddp_session_control(m);
  for (std::size_t n = 0; n < kDdpSessionControlHeaderSize; ++n) {
    const auto r = decode_ddp_session_control(ByteView{wire}.first(n));
    ASSERT_FALSE(r) << n;
    EXPECT_EQ(r.error().code, "sctp.session-short");
  }
  const auto r = decode_ddp_session_control(wire);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->private_data.size(), 600u);
}

// RFC 5043 §5.2.1: every PPID 16 message opens with its DDP-SSN; the DDP header is at octet 2.
TEST(SctpWire, DdpSegmentMessageOpensWithItsDdpSsn) {
  const Bytes body = pattern(20);
  const Bytes msg = encode_ddp_sctp_message(0xBEEF, body);
  ASSERT_EQ(msg.size(), 22u);
  EXPECT_EQ(be16(msg, 0), 0xBEEF);
  const auto back = decode_ddp_sctp_message(msg);
  ASSERT_TRUE(back);
  EXPECT_EQ(back->ddp_ssn, 0xBEEF);
  EXPECT_EQ(Bytes(back->body.begin(), back->body.end()), body);
  for (std::size_t n = 0; n < kDdpSsnSize; ++n) {
    const auto r = decode_ddp_sctp_message(ByteView{msg}.first(n));
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().code, "sctp.message-short");
  }
}

// RFC 5043 §10: 16-bit serial arithmetic.
TEST(SctpWire, DdpSsnCompareInSerialArithmetic) {
  EXPECT_TRUE(ddp_ssn_before(1, 2));
  EXPECT_FALSE(ddp_ssn_before(2, 2));
  EXPECT_TRUE(ddp_ssn_before(0xFFFF, 0));
  EXPECT_FALSE(ddp_ssn_before(0, 0xFFFF));
  EXPECT_TRUE(ddp_ssn_before(0x8001, 0));
}

// RFC 6581 §8: RFC 5043 defines no LLP Terminate codes. A Terminate that carries the LLP error
// type earlier ddpscope endpoints used for SCTP is named as not defined by RFC 5043.
TEST(SctpWire, SctpLlpTerminateTypeIsNamedNonStandard) {
  EXPECT_EQ(term_etype_name(0x2, llp_etype::sctp_non_standard), "SCTP (not defined by RFC 5043)");
  EXPECT_TRUE(term_code_name(0x2, llp_etype::sctp_non_standard, 0x02).empty());
}

}  // namespace
}  // namespace ddpscope::wire
