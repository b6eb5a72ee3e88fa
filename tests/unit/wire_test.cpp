// SPDX-License-Identifier: GPL-2.0-or-later
#include "ddpscope/wire/mpa.h"
#include "ddpscope/wire/rdmap.h"

#include <gtest/gtest.h>

#include <string>

#include "ddpscope/common/crc32c.h"

namespace ddpscope::wire {
namespace {

// ---------------------------------------------------------------------------------------------
// Builders
// ---------------------------------------------------------------------------------------------

Bytes pattern(std::size_t n, std::uint8_t seed = 1) {
  Bytes b(n);
  for (std::size_t i = 0; i < n; ++i)
    b[i] = static_cast<std::uint8_t>(seed + i * 7);
  return b;
}

std::uint8_t rdmap_byte(Opcode op) {
  return RdmapControl{kRdmapVersion, 0, static_cast<std::uint8_t>(op)}.byte();
}

DdpHeader tagged_header(std::uint8_t rdmap, std::uint32_t stag, std::uint64_t to, bool last) {
  DdpHeader h;
  h.control.tagged = true;
  h.control.last = last;
  h.rsvd_ulp0 = rdmap;
  h.stag = stag;
  h.to = to;
  return h;
}

DdpHeader untagged_header(std::uint8_t rdmap, std::uint32_t qn, std::uint32_t msn, std::uint32_t mo,
                          bool last, std::uint32_t rsvd_ulp1 = 0) {
  DdpHeader h;
  h.control.last = last;
  h.rsvd_ulp0 = rdmap;
  h.rsvd_ulp1 = rsvd_ulp1;
  h.qn = qn;
  h.msn = msn;
  h.mo = mo;
  return h;
}

// The header an opcode must use, per the opcode table.
DdpHeader header_for(std::uint8_t opcode) {
  const OpcodeInfo& info = opcode_info(opcode);
  const std::uint8_t rdmap = RdmapControl{kRdmapVersion, 0, opcode}.byte();
  if (info.tagged)
    return tagged_header(rdmap, 0x1234'5601u + opcode, 0x0000'7F00'0000'1000ull, true);
  return untagged_header(rdmap, info.qn.value_or(0), 1 + opcode, 0, true,
                         opcode_invalidates(opcode) ? 0xCAFE'0001u : 0);
}

Bytes encode(const DdpHeader& h, ByteView payload = {}) {
  Bytes out;
  ByteWriter w(out);
  encode_ddp_header(h, w);
  w.bytes(payload);
  return out;
}

ReadRequest sample_read_request() {
  return ReadRequest{0x0000'1101u, 0x1000'2000'3000'4000ull, 65536, 0x0000'2202u,
                     0x5000'6000'7000'8008ull};
}

MpaReqRep reqrep(MpaFrameKind kind, std::uint8_t rev, std::size_t pd_size) {
  MpaReqRep f;
  f.kind = kind;
  f.revision = rev;
  f.crc = true;
  f.private_data = pattern(pd_size);
  return f;
}

// Every proper prefix of `full` must be need_more or malformed, never ok (and never crash).
template <class Decode>
void expect_every_prefix_incomplete(const Bytes& full, Decode decode) {
  for (std::size_t n = 0; n < full.size(); ++n) {
    const auto r = decode(ByteView{full.data(), n});
    EXPECT_NE(r.status(), DecodeStatus::ok) << "prefix length " << n;
    if (r.status() == DecodeStatus::need_more) {
      EXPECT_GT(r.needed(), n) << "prefix length " << n;
    }
  }
  const auto whole = decode(ByteView{full});
  ASSERT_TRUE(whole.is_ok());
  EXPECT_EQ(whole.consumed(), full.size());
}

// ---------------------------------------------------------------------------------------------
// MPA Request / Reply
// ---------------------------------------------------------------------------------------------

TEST(MpaReqRep, RoundTripsRevisionsKindsAndFlags) {
  for (auto kind : {MpaFrameKind::request, MpaFrameKind::reply}) {
    for (std::uint8_t rev : {0, 1, 2}) {
      for (std::uint8_t flags = 0; flags < 0x20; ++flags) {  // every M/C/R/Enhanced combination
        MpaReqRep f = reqrep(kind, rev, 3);
        f.markers = flags & 0x01;
        f.crc = flags & 0x02;
        f.reject = flags & 0x04;
        f.enhanced = false;  // enhanced frames are covered below
        f.reserved = (flags & 0x08) ? kMpaFlagSiwGsoExp : 0;
        const Bytes wire = encode_mpa_reqrep(f);
        ASSERT_EQ(wire.size(), f.wire_size());
        const auto r = decode_mpa_reqrep(wire);
        ASSERT_TRUE(r.is_ok());
        EXPECT_EQ(r.consumed(), wire.size());
        EXPECT_EQ(r.value(), f);
      }
    }
  }
}

TEST(MpaReqRep, KnownBytes) {
  MpaReqRep f = reqrep(MpaFrameKind::reply, 1, 2);
  f.markers = true;
  f.reject = true;
  const Bytes wire = encode_mpa_reqrep(f);
  EXPECT_EQ(std::string(wire.begin(), wire.begin() + 16), "MPA ID Rep Frame");
  EXPECT_EQ(wire[16], 0x80 | 0x40 | 0x20);
  EXPECT_EQ(wire[17], 1);
  EXPECT_EQ(wire[18], 0);
  EXPECT_EQ(wire[19], 2);
}

TEST(MpaReqRep, VendorReservedBitIsDecodedNotRejected) {
  MpaReqRep f = reqrep(MpaFrameKind::request, 2, 0);
  f.reserved = kMpaFlagSiwGsoExp;
  Bytes wire = encode_mpa_reqrep(f);
  EXPECT_EQ(wire[16], 0x40 | 0x08);
  const auto r = decode_mpa_reqrep(wire);
  ASSERT_TRUE(r.is_ok());
  EXPECT_EQ(r->reserved, 0x08);
  EXPECT_FALSE(r->enhanced);
}

TEST(MpaReqRep, PrivateDataLengths) {
  for (std::size_t n : {std::size_t{0}, std::size_t{256}, kMpaMaxPrivateDataRfc, std::size_t{513},
                        std::size_t{4000}}) {
    const MpaReqRep f = reqrep(MpaFrameKind::request, 1, n);
    const Bytes wire = encode_mpa_reqrep(f);
    const auto r = decode_mpa_reqrep(wire);
    ASSERT_TRUE(r.is_ok()) << n;
    EXPECT_EQ(r->private_data.size(), n);
    EXPECT_EQ(r.consumed(), 20 + n);
  }
}

TEST(MpaReqRep, EnhancedEveryRtrCombination) {
  for (int abcd = 0; abcd < 16; ++abcd) {
    MpaReqRep f = reqrep(MpaFrameKind::request, 2, 5);
    f.enhanced = true;
    MpaEnhancedPd pd;
    pd.peer_to_peer = abcd & 8;
    pd.zero_length_send_rtr = abcd & 4;
    pd.zero_length_write_rtr = abcd & 2;
    pd.zero_length_read_rtr = abcd & 1;
    pd.ird = static_cast<std::uint16_t>(0x0123 + abcd);
    pd.ord = MpaEnhancedPd::kNoValue;
    f.enhanced_pd = pd;
    const Bytes wire = encode_mpa_reqrep(f);
    ASSERT_EQ(wire.size(), 20u + 4 + 5);
    EXPECT_EQ(load_be16(&wire[18]), 9);
    EXPECT_EQ(wire[20] & 0x80, (abcd & 8) ? 0x80 : 0);
    EXPECT_EQ(wire[20] & 0x40, (abcd & 4) ? 0x40 : 0);
    EXPECT_EQ(wire[22] & 0x80, (abcd & 2) ? 0x80 : 0);
    EXPECT_EQ(wire[22] & 0x40, (abcd & 1) ? 0x40 : 0);
    const auto r = decode_mpa_reqrep(wire);
    ASSERT_TRUE(r.is_ok());
    ASSERT_TRUE(r->enhanced_pd.has_value());
    EXPECT_EQ(*r->enhanced_pd, pd);
    // Documented asymmetry: decode keeps the word in private_data; ulp_private_data skips it.
    EXPECT_EQ(r->private_data.size(), 9u);
    EXPECT_TRUE(
        std::equal(r->private_data.begin(), r->private_data.begin() + 4, wire.begin() + 20));
    const ByteView ulp = r->ulp_private_data();
    EXPECT_EQ(Bytes(ulp.begin(), ulp.end()), f.private_data);
    EXPECT_NE(r.value(), f);
    // Re-encoding the decoded frame without its parsed word reproduces the wire octets.
    MpaReqRep again = r.value();
    again.enhanced_pd.reset();
    EXPECT_EQ(encode_mpa_reqrep(again), wire);
  }
}

TEST(MpaReqRep, EnhancedWordOnlyForRevisionTwoWithEnhancedBitAndFourOctets) {
  MpaReqRep f = reqrep(MpaFrameKind::reply, 1, 8);
  f.enhanced = true;
  EXPECT_FALSE(decode_mpa_reqrep(encode_mpa_reqrep(f))->enhanced_pd.has_value());
  f.revision = 2;
  f.enhanced = false;
  EXPECT_FALSE(decode_mpa_reqrep(encode_mpa_reqrep(f))->enhanced_pd.has_value());
  f.enhanced = true;
  f.private_data = pattern(3);  // too short for the word: siw would reject, we just decode
  const auto r = decode_mpa_reqrep(encode_mpa_reqrep(f));
  ASSERT_TRUE(r.is_ok());
  EXPECT_FALSE(r->enhanced_pd.has_value());
  EXPECT_EQ(r->ulp_private_data().size(), 3u);
}

TEST(MpaReqRep, InvalidKeyIsMalformedEarly) {
  Bytes wire = encode_mpa_reqrep(reqrep(MpaFrameKind::request, 1, 0));
  wire[4] = 'X';
  const auto r = decode_mpa_reqrep(wire);
  EXPECT_EQ(r.status(), DecodeStatus::malformed);
  EXPECT_EQ(r.error().code, "mpa.key-invalid");
  // Known as soon as the first differing octet is present.
  EXPECT_EQ(decode_mpa_reqrep(ByteView{wire.data(), 5}).status(), DecodeStatus::malformed);
  EXPECT_EQ(decode_mpa_reqrep(ByteView{wire.data(), 4}).status(), DecodeStatus::need_more);
  EXPECT_TRUE(could_be_mpa_key(ByteView{wire.data(), 4}));
  EXPECT_FALSE(could_be_mpa_key(ByteView{wire.data(), 5}));
  const Bytes http = {'G', 'E', 'T', ' '};
  EXPECT_FALSE(could_be_mpa_key(http));
}

TEST(MpaReqRep, EveryTruncation) {
  MpaReqRep f = reqrep(MpaFrameKind::reply, 2, 10);
  f.enhanced = true;
  f.enhanced_pd = MpaEnhancedPd{true, false, 16, true, false, 16};
  expect_every_prefix_incomplete(encode_mpa_reqrep(f),
                                 [](ByteView v) { return decode_mpa_reqrep(v); });
  const auto r = decode_mpa_reqrep(ByteView{encode_mpa_reqrep(f).data(), 20});
  EXPECT_EQ(r.status(), DecodeStatus::need_more);
  EXPECT_EQ(r.needed(), 34u);
}

// ---------------------------------------------------------------------------------------------
// FPDU
// ---------------------------------------------------------------------------------------------

TEST(Fpdu, PadAndSize) {
  EXPECT_EQ(fpdu_pad(18), 0u);
  EXPECT_EQ(fpdu_pad(14), 0u);
  EXPECT_EQ(fpdu_pad(15), 3u);
  EXPECT_EQ(fpdu_pad(16), 2u);
  EXPECT_EQ(fpdu_pad(17), 1u);
  EXPECT_EQ(fpdu_size(14), 20u);  // minimum tagged FPDU
  EXPECT_EQ(fpdu_size(18), 24u);  // minimum untagged FPDU
}

TEST(Fpdu, RoundTripWithoutMarkers) {
  for (std::size_t len = 0; len < 40; ++len) {
    const Bytes ulpdu = pattern(len, static_cast<std::uint8_t>(len));
    const Bytes wire = encode_fpdu(ulpdu, {});
    ASSERT_EQ(wire.size(), fpdu_size(len));
    EXPECT_EQ(load_be16(wire.data()), len);
    const auto r = decode_fpdu(wire);
    ASSERT_TRUE(r.is_ok());
    EXPECT_EQ(r.consumed(), wire.size());
    EXPECT_EQ(Bytes(r->ulpdu.begin(), r->ulpdu.end()), ulpdu);
    EXPECT_EQ(r->pad.size(), fpdu_pad(len));
    EXPECT_EQ(r->crc_field, r->crc_computed);
    EXPECT_EQ(r->crc_computed, crc32c(ByteView{wire.data(), wire.size() - 4}));
    // The CRC travels least significant octet first.
    EXPECT_EQ(wire[wire.size() - 4], static_cast<std::uint8_t>(r->crc_computed));
  }
}

TEST(Fpdu, NoCrcWritesZeroField) {
  FpduEncodeOptions o;
  o.crc = false;
  const Bytes wire = encode_fpdu(pattern(18), o);
  const auto r = decode_fpdu(wire);
  ASSERT_TRUE(r.is_ok());
  EXPECT_EQ(r->crc_field, 0u);
  EXPECT_NE(r->crc_computed, 0u);
}

TEST(Fpdu, EveryTruncation) {
  expect_every_prefix_incomplete(encode_fpdu(pattern(23), {}),
                                 [](ByteView v) { return decode_fpdu(v); });
}

// ---------------------------------------------------------------------------------------------
// Markers (RFC 5044 §4.3)
// ---------------------------------------------------------------------------------------------

FpduEncodeOptions with_markers(std::uint64_t stream_pos, MarkerConvention c) {
  FpduEncodeOptions o;
  o.markers = true;
  o.stream_pos = stream_pos;
  o.convention = c;
  return o;
}

// Strips the markers from an encoded FPDU and decodes it.
void expect_recovers(const Bytes& wire, std::uint64_t stream_pos, const Bytes& ulpdu) {
  const MarkerSplit s = strip_markers(wire, stream_pos);
  EXPECT_EQ(s.cut_marker_octets, 0u);
  const auto r = decode_fpdu(s.payload);
  ASSERT_TRUE(r.is_ok());
  EXPECT_EQ(r.consumed(), s.payload.size());
  EXPECT_EQ(Bytes(r->ulpdu.begin(), r->ulpdu.end()), ulpdu);
}

TEST(Markers, InsideLengthField) {
  const Bytes ulpdu = pattern(30);
  for (auto c : {MarkerConvention::leading_marker_in_fpdu, MarkerConvention::literal}) {
    const Bytes wire = encode_fpdu(ulpdu, with_markers(511, c));
    ASSERT_EQ(wire.size(), fpdu_size(30) + 4);
    EXPECT_EQ(wire[0], 0x00);            // ULPDU_Length high octet at 511
    EXPECT_EQ(load_be32(&wire[1]), 1u);  // marker at 512: reserved 0, FPDUPTR 1
    EXPECT_EQ(wire[5], 30);              // ULPDU_Length low octet
    const MarkerSplit s = strip_markers(wire, 511);
    ASSERT_EQ(s.markers.size(), 1u);
    EXPECT_EQ(s.markers[0].stream_pos, 512u);
    EXPECT_EQ(s.markers[0].fpduptr, 1);
    expect_recovers(wire, 511, ulpdu);
    // The CRC covers the marker: the stripped FPDU's own CRC differs, the wire one matches.
    const auto r = decode_fpdu(s.payload);
    EXPECT_EQ(r->crc_field, crc32c(ByteView{wire.data(), wire.size() - 4}));
    EXPECT_NE(r->crc_field, r->crc_computed);
  }
}

TEST(Markers, InsidePayload) {
  const Bytes ulpdu = pattern(100);
  const Bytes wire = encode_fpdu(ulpdu, with_markers(1000, MarkerConvention::literal));
  ASSERT_EQ(wire.size(), fpdu_size(100) + 4);
  EXPECT_EQ(load_be32(&wire[24]), 24u);  // marker at 1024, 24 octets after the FPDU header
  const MarkerSplit s = strip_markers(wire, 1000);
  ASSERT_EQ(s.markers.size(), 1u);
  EXPECT_EQ(s.markers[0].stream_pos, 1024u);
  EXPECT_EQ(s.markers[0].fpduptr, 24);
  expect_recovers(wire, 1000, ulpdu);
  EXPECT_EQ(encode_fpdu(ulpdu, with_markers(1000, MarkerConvention::leading_marker_in_fpdu)),
            wire);  // without a leading marker the conventions agree
  EXPECT_EQ(decode_fpdu(s.payload)->crc_field, crc32c(ByteView{wire.data(), wire.size() - 4}));
}

TEST(Markers, AtFpduStartLeadingConvention) {
  const Bytes ulpdu = pattern(1000);  // 1004 + 4 CRC + 2 markers = 1016 octets from 1024
  const Bytes wire =
      encode_fpdu(ulpdu, with_markers(1024, MarkerConvention::leading_marker_in_fpdu));
  ASSERT_EQ(wire.size(), fpdu_size(1000) + 8);
  EXPECT_EQ(load_be32(&wire[0]), 0u);      // leading marker at 1024, FPDUPTR 0
  EXPECT_EQ(load_be16(&wire[4]), 1000);    // header right after it
  EXPECT_EQ(load_be32(&wire[512]), 512u);  // marker at 1536 points back to the leading marker
  const MarkerSplit s = strip_markers(wire, 1024);
  ASSERT_EQ(s.markers.size(), 2u);
  EXPECT_EQ(s.markers[0].stream_pos, 1024u);
  EXPECT_EQ(s.markers[0].fpduptr, 0);
  EXPECT_EQ(s.markers[1].stream_pos, 1536u);
  EXPECT_EQ(s.markers[1].fpduptr, 512);
  expect_recovers(wire, 1024, ulpdu);
  // CRC covers every transmitted octet before the CRC field, leading marker included.
  const std::uint32_t expected = crc32c(ByteView{wire.data(), wire.size() - 4});
  EXPECT_EQ(mpa_crc_from_wire(&wire[wire.size() - 4]), expected);
}

TEST(Markers, AtFpduStartLiteralConvention) {
  const Bytes ulpdu = pattern(1000);
  const Bytes wire = encode_fpdu(ulpdu, with_markers(1024, MarkerConvention::literal));
  ASSERT_EQ(wire.size(), fpdu_size(1000) + 8);
  EXPECT_EQ(load_be32(&wire[0]), 0u);
  EXPECT_EQ(load_be32(&wire[512]), 508u);  // counted from the ULPDU_Length field
  const MarkerSplit s = strip_markers(wire, 1024);
  ASSERT_EQ(s.markers.size(), 2u);
  EXPECT_EQ(s.markers[1].fpduptr, 508);
  expect_recovers(wire, 1024, ulpdu);
  // CRC leaves the leading marker out but covers the one inside.
  const std::uint32_t expected = crc32c(ByteView{wire.data() + 4, wire.size() - 8});
  EXPECT_EQ(mpa_crc_from_wire(&wire[wire.size() - 4]), expected);
  const Bytes leading =
      encode_fpdu(ulpdu, with_markers(1024, MarkerConvention::leading_marker_in_fpdu));
  EXPECT_NE(mpa_crc_from_wire(&leading[leading.size() - 4]), expected);
}

TEST(Markers, StreamStartHasLeadingMarker) {
  const Bytes wire = encode_fpdu(pattern(18), with_markers(0, {}));
  ASSERT_EQ(wire.size(), 4 + fpdu_size(18));
  EXPECT_EQ(load_be32(&wire[0]), 0u);
}

TEST(Markers, BetweenPadAndCrc) {
  const Bytes ulpdu = pattern(409);  // 2 + 409 + pad 1 = 412 octets from 100: ends at 512
  ASSERT_EQ(fpdu_pad(409), 1u);
  const Bytes wire = encode_fpdu(ulpdu, with_markers(100, {}));
  ASSERT_EQ(wire.size(), fpdu_size(409) + 4);
  EXPECT_EQ(load_be32(&wire[412]), 412u);
  EXPECT_EQ(mpa_crc_from_wire(&wire[416]), crc32c(ByteView{wire.data(), 416}));
  const MarkerSplit s = strip_markers(wire, 100);
  ASSERT_EQ(s.markers.size(), 1u);
  EXPECT_EQ(s.markers[0].stream_pos, 512u);
  expect_recovers(wire, 100, ulpdu);
}

TEST(Markers, InsideCrcFieldIsNotCovered) {
  const Bytes ulpdu = pattern(406);  // 408 octets from 102: CRC at 510..511, marker, 516..517
  const Bytes wire = encode_fpdu(ulpdu, with_markers(102, {}));
  ASSERT_EQ(wire.size(), fpdu_size(406) + 4);
  EXPECT_EQ(load_be32(&wire[410]), 410u);
  Bytes crc_octets = {wire[408], wire[409], wire[414], wire[415]};
  EXPECT_EQ(mpa_crc_from_wire(crc_octets.data()), crc32c(ByteView{wire.data(), 408}));
  expect_recovers(wire, 102, ulpdu);
}

TEST(Markers, MarkerRightAfterFpduBelongsToNextFpdu) {
  const Bytes ulpdu = pattern(406);  // 412 octets from 100 end exactly at 512
  const Bytes wire = encode_fpdu(ulpdu, with_markers(100, {}));
  EXPECT_EQ(wire.size(), fpdu_size(406));
  const Bytes next = encode_fpdu(ulpdu, with_markers(512, {}));
  EXPECT_EQ(next.size(), fpdu_size(406) + 4);
}

TEST(Markers, StripCutAndSkipped) {
  const Bytes data = {1, 2, 0, 0};  // positions 510..513: marker at 512 cut after 2 octets
  MarkerSplit s = strip_markers(data, 510);
  EXPECT_EQ(s.payload, (Bytes{1, 2}));
  EXPECT_TRUE(s.markers.empty());
  EXPECT_EQ(s.cut_marker_octets, 2u);
  const Bytes tail = {0, 5, 9, 8};  // positions 514..517: last 2 octets of that marker
  s = strip_markers(tail, 514);
  EXPECT_EQ(s.skipped_marker_octets, 2u);
  EXPECT_EQ(s.payload, (Bytes{9, 8}));
  s = strip_markers({}, 512);
  EXPECT_TRUE(s.payload.empty());
  EXPECT_EQ(s.cut_marker_octets, 0u);
}

TEST(Markers, ManyMarkersAcrossALargeFpdu) {
  const Bytes ulpdu = pattern(3000);
  const Bytes wire = encode_fpdu(ulpdu, with_markers(300, {}));
  const MarkerSplit s = strip_markers(wire, 300);
  ASSERT_EQ(s.markers.size(), 6u);  // 512, 1024, ..., 3072
  for (std::size_t i = 0; i < s.markers.size(); ++i) {
    EXPECT_EQ(s.markers[i].stream_pos, 512u * (i + 1));
    EXPECT_EQ(s.markers[i].fpduptr, 512u * (i + 1) - 300);
  }
  expect_recovers(wire, 300, ulpdu);
}

TEST(Markers, ConventionNames) {
  EXPECT_EQ(to_string(MarkerConvention::leading_marker_in_fpdu), "leading_marker_in_fpdu");
  EXPECT_EQ(to_string(MarkerConvention::literal), "literal");
}

// ---------------------------------------------------------------------------------------------
// MULPDU (RFC 5044 §8, formula (verify))
// ---------------------------------------------------------------------------------------------

TEST(Mulpdu, KnownValues) {
  EXPECT_EQ(mulpdu(1460, false), 1454u);
  EXPECT_EQ(mulpdu(1460, true), 1442u);  // 1460 - (6 + 4*3 + 0)
  EXPECT_EQ(mulpdu(1448, false), 1442u);
  EXPECT_EQ(mulpdu(1448, true), 1430u);
  EXPECT_EQ(mulpdu(9000, false), 8994u);
  EXPECT_EQ(mulpdu(9000, true), 8922u);   // 9000 - (6 + 72 + 0)
  EXPECT_EQ(mulpdu(1461, false), 1454u);  // 1461 - (6 + 1)
  EXPECT_EQ(mulpdu(1461, true), 1442u);   // 1461 - (6 + 12 + 1)
  EXPECT_EQ(mulpdu(512, true), 502u);
  EXPECT_EQ(mulpdu(513, true), 498u);  // ceil(513/512) = 2
}

TEST(Mulpdu, TooSmallIsZero) {
  EXPECT_EQ(mulpdu(0, false), 0u);
  EXPECT_EQ(mulpdu(6, false), 0u);
  EXPECT_EQ(mulpdu(7, false), 0u);
  EXPECT_EQ(mulpdu(8, false), 2u);
  EXPECT_EQ(mulpdu(10, true), 0u);
  EXPECT_EQ(mulpdu(12, true), 2u);
}

// ---------------------------------------------------------------------------------------------
// DDP
// ---------------------------------------------------------------------------------------------

TEST(Ddp, ControlByte) {
  EXPECT_EQ((DdpControl{true, true, 0, 1}.byte()), 0xC1);
  EXPECT_EQ((DdpControl{false, false, 0, 1}.byte()), 0x01);
  const DdpControl c = DdpControl::from_byte(0xBE);
  EXPECT_TRUE(c.tagged);
  EXPECT_FALSE(c.last);
  EXPECT_EQ(c.reserved, 0xF);
  EXPECT_EQ(c.version, 2);
  EXPECT_EQ(c.byte(), 0xBE);
}

TEST(Ddp, HeaderRoundTripForEveryOpcode) {
  for (std::uint8_t op = 0; op <= 0xB; ++op) {
    const DdpHeader h = header_for(op);
    const Bytes payload = pattern(op);
    const Bytes wire = encode(h, payload);
    ASSERT_EQ(wire.size(), (opcode_info(op).tagged ? 14u : 18u) + op) << int(op);
    EXPECT_EQ(wire[1], (0x40 | op));
    const auto r = decode_ddp_header(wire);
    ASSERT_TRUE(r.is_ok());
    EXPECT_EQ(r.value(), h);
    EXPECT_EQ(r.consumed(), h.size());
    const auto seg = decode_ddp_segment(wire);
    ASSERT_TRUE(seg.is_ok());
    EXPECT_EQ(seg->header, h);
    EXPECT_EQ(Bytes(seg->payload.begin(), seg->payload.end()), payload);
    EXPECT_EQ(RdmapControl::from_byte(seg->header.rsvd_ulp0).opcode, op);
    if (!h.control.tagged) {
      EXPECT_EQ(seg->header.qn, *opcode_info(op).qn);
    }
  }
}

TEST(Ddp, KnownUntaggedLayout) {
  const Bytes wire =
      encode(untagged_header(rdmap_byte(Opcode::send_invalidate), 0, 7, 0x100, false, 0xAABBCCDD));
  const Bytes expected = {0x01, 0x44, 0xAA, 0xBB, 0xCC, 0xDD, 0, 0, 0, 0, 0, 0, 0, 7, 0, 0, 1, 0};
  EXPECT_EQ(wire, expected);
}

TEST(Ddp, EveryTruncation) {
  for (std::uint8_t op : {0, 3}) {
    const Bytes wire = encode(header_for(op));
    expect_every_prefix_incomplete(wire, [](ByteView v) { return decode_ddp_header(v); });
    for (std::size_t n = 0; n < wire.size(); ++n) {
      const auto r = decode_ddp_segment(ByteView{wire.data(), n});
      EXPECT_EQ(r.status(), DecodeStatus::malformed);
      EXPECT_EQ(r.error().code, "ddp.truncated");
    }
  }
}

// ---------------------------------------------------------------------------------------------
// RDMAP
// ---------------------------------------------------------------------------------------------

TEST(Rdmap, ControlByte) {
  EXPECT_EQ(rdmap_byte(Opcode::read_request), 0x41);
  const RdmapControl c = RdmapControl::from_byte(0xB7);
  EXPECT_EQ(c.version, 2);
  EXPECT_EQ(c.reserved, 3);
  EXPECT_EQ(c.opcode, 7);
  EXPECT_EQ(c.byte(), 0xB7);
}

TEST(Rdmap, OpcodeTable) {
  EXPECT_EQ(opcode_info(0x0).name, "RDMA Write");
  EXPECT_EQ(opcode_info(0x0).key, "rdma_write");
  EXPECT_TRUE(opcode_info(0x0).tagged);
  EXPECT_FALSE(opcode_info(0x0).qn.has_value());
  EXPECT_EQ(opcode_info(0x1).qn, kQnReadRequest);
  EXPECT_TRUE(opcode_info(0x2).tagged);
  EXPECT_EQ(opcode_info(0x2).name, "RDMA Read Response");
  EXPECT_EQ(opcode_info(0x6).name, "Send with SE and Invalidate");
  EXPECT_EQ(opcode_info(0x7).qn, kQnTerminate);
  EXPECT_EQ(opcode_info(0x8).qn, 0u);
  EXPECT_TRUE(opcode_info(0x8).rfc7306);
  EXPECT_EQ(opcode_info(0x9).key, "immediate_data_se");
  EXPECT_EQ(opcode_info(0xA).qn, kQnAtomicRequest);
  EXPECT_EQ(opcode_info(0xB).qn, kQnAtomicResponse);
  EXPECT_EQ(opcode_info(0xC).name, "Reserved (0xC)");
  EXPECT_FALSE(opcode_info(0xF).defined);
  EXPECT_FALSE(opcode_info(0x10).defined);
  for (std::uint8_t op = 0; op < 12; ++op) {
    EXPECT_TRUE(opcode_info(op).defined);
    EXPECT_EQ(opcode_info(op).tagged, op == 0 || op == 2);
    EXPECT_EQ(opcode_info(op).qn.has_value(), !opcode_info(op).tagged);
    EXPECT_EQ(opcode_is_send_family(op), op >= 3 && op <= 6);
    EXPECT_EQ(opcode_invalidates(op), op == 4 || op == 6);
  }
  for (std::uint8_t op = 3; op <= 6; ++op)
    EXPECT_EQ(opcode_info(op).qn, kQnSend);
}

TEST(Rdmap, ReadRequestRoundTripAndTruncation) {
  Bytes wire;
  ByteWriter w(wire);
  encode_read_request(sample_read_request(), w);
  ASSERT_EQ(wire.size(), 28u);
  EXPECT_EQ(load_be32(&wire[12]), 65536u);
  const auto r = decode_read_request(wire);
  ASSERT_TRUE(r.is_ok());
  EXPECT_EQ(r.value(), sample_read_request());
  expect_every_prefix_incomplete(wire, [](ByteView v) { return decode_read_request(v); });
  // A full Read Request ULPDU is 46 octets.
  Bytes ulpdu = encode(header_for(1), wire);
  EXPECT_EQ(ulpdu.size(), 46u);
}

TEST(Rdmap, AtomicRequestRoundTripAndOpcodePlacement) {
  AtomicRequest a;
  a.reserved = 0x0ABCDEF;
  a.atomic_opcode = static_cast<std::uint8_t>(AtomicOp::compare_swap);
  a.request_id = 77;
  a.remote_stag = 0x1000'0001u;
  a.remote_to = 0x8000;
  a.add_swap_data = 1;
  a.add_swap_mask = ~0ull;
  a.compare_data = 2;
  a.compare_mask = 0xFFFF;
  Bytes wire;
  ByteWriter w(wire);
  encode_atomic_request(a, w);
  ASSERT_EQ(wire.size(), 52u);
  // (verify) opcode in the low 4 bits of the first big-endian word.
  EXPECT_EQ(wire[3] & 0x0F, 2);
  EXPECT_EQ(load_be32(wire.data()), (0x0ABCDEFu << 4) | 2);
  const auto r = decode_atomic_request(wire);
  ASSERT_TRUE(r.is_ok());
  EXPECT_EQ(r.value(), a);
  expect_every_prefix_incomplete(wire, [](ByteView v) { return decode_atomic_request(v); });
  EXPECT_EQ(atomic_op_name(0), "FetchAdd");
  EXPECT_EQ(atomic_op_name(2), "CompareSwap");
  EXPECT_EQ(atomic_op_name(1), "Reserved");
}

TEST(Rdmap, AtomicResponseRoundTrip) {
  const AtomicResponse a{0xDEAD, 0x0102'0304'0506'0708ull};
  Bytes wire;
  ByteWriter w(wire);
  encode_atomic_response(a, w);
  ASSERT_EQ(wire.size(), 12u);
  EXPECT_EQ(decode_atomic_response(wire).value(), a);
  expect_every_prefix_incomplete(wire, [](ByteView v) { return decode_atomic_response(v); });
}

TEST(Rdmap, ImmediateData) {
  Bytes wire;
  ByteWriter w(wire);
  w.be64(0x1122'3344'5566'7788ull);
  EXPECT_EQ(decode_immediate_data(wire).value(), 0x1122'3344'5566'7788ull);
  expect_every_prefix_incomplete(wire, [](ByteView v) { return decode_immediate_data(v); });
}

// ---------------------------------------------------------------------------------------------
// Terminate
// ---------------------------------------------------------------------------------------------

Terminate terminate_for_read_request() {
  Terminate t;
  t.control = TerminateControl{0, 1, 0, true, true, true, 0};  // RDMAP Remote Protection
  t.ddp_segment_length = 46;
  t.ddp_header = untagged_header(rdmap_byte(Opcode::read_request), kQnReadRequest, 3, 0, true);
  Bytes rr;
  ByteWriter w(rr);
  encode_read_request(sample_read_request(), w);
  t.rdmap_header = rr;
  return t;
}

TEST(Terminate, RfcRoundTripWithDdpAndRdmapHeaders) {
  const Terminate t = terminate_for_read_request();
  Bytes wire;
  ByteWriter w(wire);
  encode_terminate(t, TerminateLayout::rfc, w);
  ASSERT_EQ(wire.size(), 4u + 2 + 18 + 28);
  EXPECT_EQ(load_be32(wire.data()), 0x0100E000u);
  const auto r = decode_terminate(wire);
  ASSERT_TRUE(r.is_ok());
  EXPECT_EQ(r->layout, TerminateLayout::rfc);
  EXPECT_EQ(r->control, t.control);
  EXPECT_EQ(r->rfc_reading, t.control);
  EXPECT_EQ(r->ddp_segment_length, 46);
  EXPECT_EQ(r->ddp_header, t.ddp_header);
  EXPECT_EQ(r->rdmap_header, t.rdmap_header);
  ASSERT_TRUE(r->rdmap_read_request.has_value());
  EXPECT_EQ(*r->rdmap_read_request, sample_read_request());
  EXPECT_EQ(r->body_size, wire.size());
  for (std::size_t n = 0; n < wire.size(); ++n) {
    const auto p = decode_terminate(ByteView{wire.data(), n});
    EXPECT_EQ(p.status(), DecodeStatus::malformed) << n;
    EXPECT_EQ(p.error().code, "rdmap.terminate-truncated");
  }
}

TEST(Terminate, TaggedQuotedHeader) {
  Terminate t;
  t.control = TerminateControl{1, 1, 1, true, true, false, 0};  // DDP Tagged base/bounds
  t.ddp_segment_length = 1000;
  t.ddp_header = tagged_header(rdmap_byte(Opcode::rdma_write), 0x100, 0x2000, false);
  Bytes wire;
  ByteWriter w(wire);
  encode_terminate(t, TerminateLayout::rfc, w);
  ASSERT_EQ(wire.size(), 4u + 2 + 14);
  const auto r = decode_terminate(wire);
  ASSERT_TRUE(r.is_ok());
  EXPECT_EQ(r->ddp_header, t.ddp_header);
  EXPECT_TRUE(r->rdmap_header.empty());
  EXPECT_FALSE(r->rdmap_read_request.has_value());
  expect_every_prefix_incomplete(wire, [](ByteView v) { return decode_terminate(v); });
}

TEST(Terminate, SiwBitfieldVector) {
  // siw's "RDMAP / Remote Protection / Invalid STag, M+D+R" as seen in real captures.
  Bytes body = {0x10, 0x00, 0x07, 0x00, 0x00, 0x40};
  ByteWriter w(body);
  encode_ddp_header(untagged_header(rdmap_byte(Opcode::send), kQnSend, 1, 0, true), w);
  w.bytes(pattern(28));
  ASSERT_EQ(body.size(), 4u + 2 + 18 + 28);
  const auto r = decode_terminate(body);
  ASSERT_TRUE(r.is_ok());
  EXPECT_EQ(r->layout, TerminateLayout::siw_bitfield);
  EXPECT_EQ(r->control, (TerminateControl{0, 1, 0, true, true, true, 0}));
  EXPECT_EQ(r->rfc_reading, (TerminateControl{1, 0, 0, false, false, false, 0x0700}));
  EXPECT_EQ(r->ddp_segment_length, 0x40);
  ASSERT_TRUE(r->ddp_header.has_value());
  EXPECT_EQ(RdmapControl::from_byte(r->ddp_header->rsvd_ulp0).opcode, 3);
  EXPECT_EQ(r->rdmap_header, pattern(28));
  EXPECT_FALSE(r->rdmap_read_request.has_value());  // the quoted message is a Send
  EXPECT_EQ(r->body_size, body.size());
  // Our siw encoder writes the same octets.
  Bytes again;
  ByteWriter w2(again);
  encode_terminate(r.value(), TerminateLayout::siw_bitfield, w2);
  EXPECT_EQ(again, body);
  // Truncated: the bare control word alone reads per RFC (nothing quoted); longer prefixes fail.
  EXPECT_EQ(decode_terminate(ByteView{body.data(), 4})->layout, TerminateLayout::rfc);
  for (std::size_t n = 5; n < body.size(); ++n) {
    EXPECT_EQ(decode_terminate(ByteView{body.data(), n}).status(), DecodeStatus::malformed) << n;
  }
}

// Issue 16: siw sends its version, opcode, CRC and IRD errors with no M/D/R flag, so no flag
// tells the layouts apart. siw's reading is taken only when the RFC reading names no defined
// error and siw's does; when both are defined the RFC reading stands (ambiguous by design).
// Under the siw Data Sink profile (issue 40) the ambiguous flagless word is siw's: its
// 20 06 00 00 is RDMAP / Remote Operation / Unexpected OpCode, not LLP / MPA / 0x06.
TEST(Terminate, AmbiguousFlaglessWordReadAsSiwWhenSiwIsExpected) {
  auto r = decode_terminate(Bytes{0x20, 0x06, 0x00, 0x00}, /*expect_siw=*/true);
  ASSERT_TRUE(r.is_ok());
  EXPECT_EQ(r->layout, TerminateLayout::siw_bitfield);
  EXPECT_EQ(r->evidence, TerminateLayoutEvidence::siw_expected);
  EXPECT_EQ(r->control, (TerminateControl{0, 2, 6, false, false, false, 0}));
  // siw's reading undefined (LLP / 0x1): the RFC reading (DDP / Untagged / Invalid QN) stands.
  r = decode_terminate(Bytes{0x12, 0x01, 0x00, 0x00}, true);
  ASSERT_TRUE(r.is_ok());
  EXPECT_EQ(r->layout, TerminateLayout::rfc);
  // Neither reading defined: nothing to prefer.
  r = decode_terminate(Bytes{0x2F, 0x77, 0x00, 0x00}, true);
  ASSERT_TRUE(r.is_ok());
  EXPECT_EQ(r->layout, TerminateLayout::rfc);
}

TEST(Terminate, UnflaggedSiwWordReadAsSiwOnlyWhenTheRfcReadingIsUndefined) {
  // siw's DDP / Untagged / Invalid DDP version (0x06): RFC order reads LLP / 0x1 / 0x06,
  // which no table defines.
  const Bytes ddp_version = {0x21, 0x06, 0x00, 0x00};
  auto r = decode_terminate(ddp_version);
  ASSERT_TRUE(r.is_ok());
  EXPECT_EQ(r->layout, TerminateLayout::siw_bitfield);
  EXPECT_EQ(r->evidence, TerminateLayoutEvidence::rfc_undefined);
  EXPECT_EQ(r->control, (TerminateControl{1, 2, 6, false, false, false, 0}));
  EXPECT_EQ(r->rfc_reading, (TerminateControl{2, 1, 6, false, false, false, 0}));
  // siw's RDMAP / Remote Operation / Unexpected OpCode is 0x20 0x06: in RFC order that is
  // LLP / MPA / Insufficient IRD (RFC 6581), also defined: the RFC reading stands.
  r = decode_terminate(Bytes{0x20, 0x06, 0x00, 0x00});
  ASSERT_TRUE(r.is_ok());
  EXPECT_EQ(r->layout, TerminateLayout::rfc);
  EXPECT_EQ(r->evidence, TerminateLayoutEvidence::rfc_flags);
  EXPECT_EQ(r->control, (TerminateControl{2, 0, 6, false, false, false, 0}));
  // An RFC word that is a defined error is never reinterpreted.
  r = decode_terminate(Bytes{0x12, 0x01, 0x00, 0x00});  // DDP / Untagged / Invalid QN
  ASSERT_TRUE(r.is_ok());
  EXPECT_EQ(r->layout, TerminateLayout::rfc);
  // Neither reading defined: the RFC reading, as it is.
  r = decode_terminate(Bytes{0x2F, 0x77, 0x00, 0x00});
  ASSERT_TRUE(r.is_ok());
  EXPECT_EQ(r->layout, TerminateLayout::rfc);
}

TEST(Terminate, SiwRoundTripOfDdpLayerError) {
  Terminate t;
  t.control = TerminateControl{1, 2, 3, true, true, false, 0};  // DDP Untagged MSN range
  t.ddp_segment_length = 30;
  t.ddp_header = untagged_header(rdmap_byte(Opcode::send), 0, 9, 0, true);
  Bytes wire;
  ByteWriter w(wire);
  encode_terminate(t, TerminateLayout::siw_bitfield, w);
  EXPECT_EQ(load_be32(wire.data()), 0x21030300u);
  const auto r = decode_terminate(wire);
  ASSERT_TRUE(r.is_ok());
  EXPECT_EQ(r->layout, TerminateLayout::siw_bitfield);
  EXPECT_EQ(r->control, t.control);
  EXPECT_EQ(r->ddp_header, t.ddp_header);
}

TEST(Terminate, RfcLayoutCasesAreNotMistakenForSiw) {
  // No flags and no reserved bits, nothing quoted: RFC.
  Bytes plain = {0x02, 0x06, 0x00, 0x00};
  auto r = decode_terminate(plain);
  ASSERT_TRUE(r.is_ok());
  EXPECT_EQ(r->layout, TerminateLayout::rfc);
  EXPECT_EQ(r->control, (TerminateControl{0, 2, 6, false, false, false, 0}));
  EXPECT_EQ(r->body_size, 4u);
  // Reserved bits outside siw's M/D/R positions: RFC reading kept.
  Bytes odd = {0x10, 0x00, 0x08, 0x00, 0xEE};
  r = decode_terminate(odd);
  ASSERT_TRUE(r.is_ok());
  EXPECT_EQ(r->layout, TerminateLayout::rfc);
  EXPECT_EQ(r->control.reserved, 0x0800);
  EXPECT_EQ(r->body_size, 4u);
  // RFC flags set: RFC, even with trailing octets.
  Bytes flagged = {0x20, 0x02, 0x00, 0x00, 0, 0};
  r = decode_terminate(flagged);
  ASSERT_TRUE(r.is_ok());
  EXPECT_EQ(r->layout, TerminateLayout::rfc);
  EXPECT_EQ(r->control.layer, 2);
  EXPECT_EQ(r->control.code, 2);
}

TEST(Terminate, EncodesReadRequestWhenRawHeaderMissing) {
  Terminate t = terminate_for_read_request();
  t.rdmap_header.clear();
  t.rdmap_read_request = sample_read_request();
  Bytes wire;
  ByteWriter w(wire);
  encode_terminate(t, TerminateLayout::rfc, w);
  const auto r = decode_terminate(wire);
  ASSERT_TRUE(r.is_ok());
  EXPECT_EQ(r->rdmap_read_request, sample_read_request());
}

// ---------------------------------------------------------------------------------------------
// Field tables and control words (what hosts use to place fields): checked against the
// encoders' octets
// ---------------------------------------------------------------------------------------------

std::uint64_t field_value(const Bytes& b, std::size_t base, FieldSpan f) {
  EXPECT_LE(base + f.end(), b.size());
  std::uint64_t v = 0;
  for (std::size_t i = 0; i < f.size; ++i)
    v = (v << 8) | b.at(base + f.offset + i);
  return v;
}

TEST(FieldTables, MpaReqRepAndEnhancedWord) {
  MpaReqRep f;
  f.kind = MpaFrameKind::reply;
  f.markers = true;
  f.enhanced = true;
  f.revision = 2;
  f.enhanced_pd = MpaEnhancedPd{true, false, 0x1234, false, true, 0x0567};
  f.private_data = {0xAA, 0xBB};
  const Bytes b = encode_mpa_reqrep(f);
  namespace field = mpa_reqrep_field;
  EXPECT_EQ(Bytes(b.begin(), b.begin() + field::key.end()),
            Bytes(kMpaReplyKey.begin(), kMpaReplyKey.end()));
  EXPECT_EQ(field_value(b, 0, field::flags), f.flags_byte());
  EXPECT_EQ(field_value(b, 0, field::revision), 2u);
  EXPECT_EQ(field_value(b, 0, field::pd_length), 6u);
  EXPECT_EQ(field_value(b, field::private_data, mpa_enhanced_field::ird_word),
            f.enhanced_pd->ird_word());
  EXPECT_EQ(field_value(b, field::private_data, mpa_enhanced_field::ord_word),
            f.enhanced_pd->ord_word());
  EXPECT_EQ(b.at(field::private_data + MpaEnhancedPd::kSize), 0xAA);
  EXPECT_EQ(f.enhanced_pd->ird_word(), kMpaEnhancedPeerToPeer | 0x1234);
  EXPECT_EQ(f.enhanced_pd->ord_word(), kMpaEnhancedReadRtr | 0x0567);
}

TEST(FieldTables, EnhancedWordBitsRoundTrip) {
  for (int bits = 0; bits < 16; ++bits) {
    const MpaEnhancedPd pd{(bits & 1) != 0, (bits & 2) != 0, 0x3FFF,
                           (bits & 4) != 0, (bits & 8) != 0, 1};
    EXPECT_EQ(MpaEnhancedPd::from_words(pd.ird_word(), pd.ord_word()), pd);
    EXPECT_EQ((pd.ird_word() & kMpaEnhancedPeerToPeer) != 0, pd.peer_to_peer);
    EXPECT_EQ((pd.ird_word() & kMpaEnhancedSendRtr) != 0, pd.zero_length_send_rtr);
    EXPECT_EQ((pd.ord_word() & kMpaEnhancedWriteRtr) != 0, pd.zero_length_write_rtr);
    EXPECT_EQ((pd.ord_word() & kMpaEnhancedReadRtr) != 0, pd.zero_length_read_rtr);
    EXPECT_EQ(pd.ird_word() & kMpaEnhancedIrdOrdMask, 0x3FFF);
  }
  // IRD and ORD are cut to their 14 bits, never into the flags.
  EXPECT_EQ((MpaEnhancedPd{false, false, 0xFFFF, false, false, 0xFFFF}).ird_word(), 0x3FFF);
}

TEST(FieldTables, FpduAndMarker) {
  const Bytes ulpdu = pattern(5);
  const Bytes b = encode_fpdu(ulpdu, {});
  EXPECT_EQ(field_value(b, 0, fpdu_field::ulpdu_length), 5u);
  EXPECT_EQ(Bytes(b.begin() + fpdu_field::ulpdu, b.begin() + fpdu_field::ulpdu + 5), ulpdu);
  EXPECT_EQ(fpdu_pad_offset(5), 7u);
  EXPECT_EQ(fpdu_crc_offset(5) + kMpaCrcSize, b.size());
  EXPECT_EQ(mpa_crc_from_wire(b.data() + fpdu_crc_offset(5)),
            crc32c(ByteView(b).first(fpdu_crc_offset(5))));
  // A marker at stream position 512 inside a long FPDU starting at 500 points back 12 octets.
  FpduEncodeOptions o;
  o.markers = true;
  o.stream_pos = 500;
  const Bytes m = encode_fpdu(pattern(64), o);
  EXPECT_EQ(field_value(m, 12, marker_field::reserved), 0u);
  EXPECT_EQ(field_value(m, 12, marker_field::fpduptr), 12u);
}

TEST(FieldTables, DdpHeaders) {
  Bytes b;
  ByteWriter w(b);
  encode_ddp_header(tagged_header(0x41, 0x11223344, 0x5566778899AABBCC, true), w);
  ASSERT_EQ(b.size(), kDdpTaggedHeaderSize);
  EXPECT_EQ(field_value(b, 0, ddp_field::control), (DdpControl{true, true, 0, 1}.byte()));
  EXPECT_EQ(field_value(b, 0, ddp_field::rsvd_ulp), 0x41u);
  EXPECT_EQ(field_value(b, 0, ddp_field::stag), 0x11223344u);
  EXPECT_EQ(field_value(b, 0, ddp_field::to), 0x5566778899AABBCCu);
  b.clear();
  encode_ddp_header(untagged_header(Opcode::send_invalidate, 7, 8, 9, false, 0xABCD), w);
  ASSERT_EQ(b.size(), kDdpUntaggedHeaderSize);
  EXPECT_EQ(field_value(b, 0, ddp_field::rsvd_ulp1), 0xABCDu);
  EXPECT_EQ(field_value(b, 0, ddp_field::qn), 7u);
  EXPECT_EQ(field_value(b, 0, ddp_field::msn), 8u);
  EXPECT_EQ(field_value(b, 0, ddp_field::mo), 9u);
}

TEST(FieldTables, RdmapBodies) {
  Bytes b;
  ByteWriter w(b);
  const ReadRequest rr{0x01020304, 0x1111111111111111, 0x0A0B0C0D, 0x05060708, 0x2222222222222222};
  encode_read_request(rr, w);
  namespace rf = read_request_field;
  EXPECT_EQ(field_value(b, 0, rf::sink_stag), rr.sink_stag);
  EXPECT_EQ(field_value(b, 0, rf::sink_to), rr.sink_to);
  EXPECT_EQ(field_value(b, 0, rf::size), rr.size);
  EXPECT_EQ(field_value(b, 0, rf::source_stag), rr.source_stag);
  EXPECT_EQ(field_value(b, 0, rf::source_to), rr.source_to);

  b.clear();
  const AtomicRequest a{0x0ABCDEF, 2, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88, 0x99};
  encode_atomic_request(a, w);
  namespace af = atomic_request_field;
  EXPECT_EQ(field_value(b, 0, af::opcode_word), a.opcode_word());
  EXPECT_EQ(a.opcode_word() & kAtomicOpcodeMask, 2u);
  EXPECT_EQ((a.opcode_word() & kAtomicReservedMask) >> 4, 0x0ABCDEFu);
  EXPECT_EQ(field_value(b, 0, af::request_id), 0x33u);
  EXPECT_EQ(field_value(b, 0, af::remote_stag), 0x44u);
  EXPECT_EQ(field_value(b, 0, af::remote_to), 0x55u);
  EXPECT_EQ(field_value(b, 0, af::add_swap_data), 0x66u);
  EXPECT_EQ(field_value(b, 0, af::add_swap_mask), 0x77u);
  EXPECT_EQ(field_value(b, 0, af::compare_data), 0x88u);
  EXPECT_EQ(field_value(b, 0, af::compare_mask), 0x99u);

  b.clear();
  encode_atomic_response({0x12345678, 0x9ABCDEF012345678}, w);
  EXPECT_EQ(field_value(b, 0, atomic_response_field::request_id), 0x12345678u);
  EXPECT_EQ(field_value(b, 0, atomic_response_field::original_value), 0x9ABCDEF012345678u);
}

TEST(FieldTables, RdmapControlByteMasks) {
  const std::uint8_t b = RdmapControl{2, 1, 0xB}.byte();
  EXPECT_EQ(b & kRdmapVersionMask, 0x80);
  EXPECT_EQ(b & kRdmapReservedMask, 0x10);
  EXPECT_EQ(b & kRdmapOpcodeMask, 0x0B);
  EXPECT_EQ(RdmapControl::from_byte(b), (RdmapControl{2, 1, 0xB}));
}

TEST(FieldTables, TerminateControlWord) {
  Terminate t;
  t.control = TerminateControl{0x2, 0x1, 0x05, true, true, false, 0x1ABC};
  t.ddp_segment_length = 0x0123;
  t.ddp_header = untagged_header(Opcode::send, 0, 1, 0, true);
  Bytes b;
  ByteWriter w(b);
  encode_terminate(t, TerminateLayout::rfc, w);
  const std::uint32_t word = t.control.rfc_word();
  EXPECT_EQ(field_value(b, 0, terminate_field::control), word);
  EXPECT_EQ(field_value(b, 0, terminate_field::ddp_segment_length), 0x0123u);
  EXPECT_EQ(word & kTermLayerMask, 0x20000000u);
  EXPECT_EQ(word & kTermEtypeMask, 0x01000000u);
  EXPECT_EQ(word & kTermCodeMask, 0x00050000u);
  EXPECT_EQ(word & kTermFlagM, kTermFlagM);
  EXPECT_EQ(word & kTermFlagD, kTermFlagD);
  EXPECT_EQ(word & kTermFlagR, 0u);
  EXPECT_EQ(word & kTermReservedMask, 0x1ABCu);
  EXPECT_EQ(TerminateControl::from_rfc_word(word), t.control);
  // The masks tile the word.
  EXPECT_EQ(kTermLayerMask | kTermEtypeMask | kTermCodeMask | kTermFlagM | kTermFlagD | kTermFlagR |
                kTermReservedMask,
            0xFFFFFFFFu);
}

TEST(Bytes, ToHex) {
  const Bytes b = {0x00, 0xAB, 0x10, 0xFF};
  EXPECT_EQ(to_hex(b), "00ab10ff");
  EXPECT_EQ(to_hex(b, 2), "00ab...");
  EXPECT_EQ(to_hex({}), "");
}

}  // namespace
}  // namespace ddpscope::wire
