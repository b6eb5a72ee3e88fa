// SPDX-License-Identifier: GPL-2.0-or-later
// The FPDU walker (RFC 5044 §4): demarkering, both CRCs, FPDUPTR fit, need-more.
#include "ddpscope/mpa/fpdu_walker.h"

#include <gtest/gtest.h>

#include "ddpscope/common/crc32c.h"

namespace ddpscope::mpa {
namespace {

using wire::MarkerConvention;

Bytes pattern(std::size_t n, std::uint8_t seed = 1) {
  Bytes b(n);
  for (std::size_t i = 0; i < n; ++i)
    b[i] = static_cast<std::uint8_t>(seed + i * 7);
  return b;
}

// The FPDU of `ulpdu` as on the wire from stream position `pos` (markers when `markers`).
Bytes fpdu(const Bytes& ulpdu, std::uint64_t pos, bool markers,
           MarkerConvention c = MarkerConvention::leading_marker_in_fpdu, bool crc = true) {
  wire::FpduEncodeOptions o;
  o.crc = crc;
  o.markers = markers;
  o.stream_pos = pos;
  o.convention = c;
  return wire::encode_fpdu(ulpdu, o);
}

// ULPDU_Length, ULPDU, pad and CRC field as they are without markers.
Bytes plain_of(const Bytes& ulpdu, bool crc = true) {
  return fpdu(ulpdu, 0, false, MarkerConvention::leading_marker_in_fpdu, crc);
}

FpduWalkParams params(std::uint64_t pos, bool markers, bool crc = true) {
  FpduWalkParams p;
  p.stream_pos = pos;
  p.markers = markers;
  p.crc = crc;
  return p;
}

Bytes as_bytes(ByteView v) {
  return Bytes(v.begin(), v.end());
}

// The demarkered FPDU up to its CRC field (the CRC itself covers the markers, so it differs).
Bytes before_crc(ByteView plain) {
  return as_bytes(plain.first(plain.size() - 4));
}

TEST(FpduWalker, WithoutMarkersTheFpduIsAViewOfTheRawOctets) {
  const Bytes ulpdu = pattern(33);
  Bytes raw = plain_of(ulpdu);
  const Bytes next = plain_of(pattern(20, 9));
  raw.insert(raw.end(), next.begin(), next.end());
  Bytes scratch;
  FpduWalk w;
  ASSERT_EQ(walk_fpdu(raw, params(7, false), scratch, w), WalkStatus::complete);
  EXPECT_EQ(w.raw_length, wire::fpdu_size(33));
  ASSERT_EQ(w.ulpdu_length, 33);
  EXPECT_EQ(w.plain.data(), raw.data());  // no copy
  EXPECT_EQ(w.plain.size(), w.raw_length);
  EXPECT_TRUE(scratch.empty());
  EXPECT_EQ(as_bytes(w.ulpdu()), ulpdu);
  EXPECT_FALSE(w.leading_marker);
  EXPECT_TRUE(w.markers.empty());
  EXPECT_EQ(w.crc_offset, w.raw_length - 4);
  EXPECT_EQ(w.crc_all, crc32c(ByteView(raw).first(w.crc_offset)));
  EXPECT_EQ(w.crc_no_lead, w.crc_all);
  EXPECT_EQ(w.crc_field, w.crc_all);
  EXPECT_TRUE(w.crc_matches());
  EXPECT_TRUE(fpduptrs_point_at_start(w));
}

TEST(FpduWalker, CrcNotAskedForLeavesBothCrcsZero) {
  const Bytes raw = plain_of(pattern(20), false);
  Bytes scratch;
  FpduWalk w;
  ASSERT_EQ(walk_fpdu(raw, params(0, false, false), scratch, w), WalkStatus::complete);
  EXPECT_EQ(w.crc_field, 0u);
  EXPECT_EQ(w.crc_all, 0u);
  EXPECT_EQ(w.crc_no_lead, 0u);
}

TEST(FpduWalker, NeedMoreAtEveryTruncation) {
  for (const bool markers : {false, true}) {
    for (const std::uint64_t pos : {0ull, 400ull, 511ull}) {
      const Bytes raw = fpdu(pattern(700), pos, markers);
      Bytes scratch;
      FpduWalk w;
      for (std::size_t n = 0; n < raw.size(); ++n) {
        SCOPED_TRACE(testing::Message() << "markers " << markers << " pos " << pos << " n " << n);
        ASSERT_EQ(walk_fpdu(ByteView(raw).first(n), params(pos, markers), scratch, w),
                  WalkStatus::need_more);
        EXPECT_TRUE(w.plain.empty());
        EXPECT_GT(w.raw_length, n);  // a lower bound on what is needed, never below what is held
        if (w.ulpdu_length) {
          EXPECT_EQ(*w.ulpdu_length, 700);
          EXPECT_EQ(w.raw_length, raw.size());  // exact once the length field is in
        }
      }
      ASSERT_EQ(walk_fpdu(raw, params(pos, markers), scratch, w), WalkStatus::complete);
      EXPECT_EQ(w.raw_length, raw.size());
      EXPECT_TRUE(w.crc_matches());
    }
  }
}

TEST(FpduWalker, MarkersInsideAreTakenOutIntoScratch) {
  // From stream position 1000 a 1100-octet ULPDU crosses the markers at 1024 and 1536 and 2048.
  const Bytes ulpdu = pattern(1100);
  const Bytes raw = fpdu(ulpdu, 1000, true, MarkerConvention::literal);
  Bytes scratch;
  FpduWalk w;
  ASSERT_EQ(walk_fpdu(raw, params(1000, true), scratch, w), WalkStatus::complete);
  EXPECT_EQ(w.raw_length, raw.size());
  EXPECT_FALSE(w.leading_marker);
  ASSERT_EQ(w.markers.size(), 3u);
  ASSERT_EQ(w.marker_offsets.size(), 3u);
  for (std::size_t k = 0; k < 3; ++k) {
    EXPECT_EQ(w.markers[k].stream_pos, 1024u + 512u * k);
    EXPECT_EQ(w.marker_offsets[k], 24u + 512u * k);
    EXPECT_EQ(w.markers[k].reserved, 0);
    EXPECT_EQ(w.markers[k].fpduptr, 24u + 512u * k);  // back to the FPDU start at 1000
  }
  EXPECT_EQ(w.plain.data(), scratch.data());
  EXPECT_EQ(before_crc(w.plain), before_crc(plain_of(ulpdu)));
  EXPECT_EQ(w.crc_field, crc32c(ByteView(raw).first(raw.size() - 4)));
  EXPECT_EQ(as_bytes(w.ulpdu()), ulpdu);
  // The CRC covers the markers inside: the demarkered octets' own CRC differs.
  EXPECT_EQ(w.crc_all, crc32c(ByteView(raw).first(raw.size() - 4)));
  EXPECT_NE(w.crc_all, crc32c(w.plain.first(w.plain.size() - 4)));
  EXPECT_TRUE(w.crc_matches());
  EXPECT_TRUE(fpduptrs_point_at_start(w));
}

TEST(FpduWalker, LeadingMarkerInBothConventions) {
  const Bytes ulpdu = pattern(600);
  for (const auto c : {MarkerConvention::leading_marker_in_fpdu, MarkerConvention::literal}) {
    SCOPED_TRACE(std::string(wire::to_string(c)));
    const Bytes raw = fpdu(ulpdu, 512, true, c);
    Bytes scratch;
    FpduWalk w;
    ASSERT_EQ(walk_fpdu(raw, params(512, true), scratch, w), WalkStatus::complete);
    EXPECT_TRUE(w.leading_marker);
    ASSERT_EQ(w.markers.size(), 2u);
    EXPECT_EQ(w.marker_offsets[0], 0u);
    EXPECT_EQ(w.markers[0].stream_pos, 512u);
    EXPECT_EQ(w.markers[0].fpduptr, 0);
    EXPECT_EQ(w.marker_offsets[1], 512u);
    EXPECT_EQ(w.markers[1].stream_pos, 1024u);
    const bool in_fpdu = c == MarkerConvention::leading_marker_in_fpdu;
    EXPECT_EQ(w.markers[1].fpduptr, in_fpdu ? 512 : 508);
    const FpduptrFit fit = fpduptr_fit(w.markers[1], w.stream_pos, w.leading_marker);
    EXPECT_EQ(fit.leading_marker_in_fpdu, in_fpdu);
    EXPECT_EQ(fit.literal, !in_fpdu);
    EXPECT_TRUE(fpduptrs_point_at_start(w));
    // The CRC covers the leading marker in one convention only.
    EXPECT_EQ(w.crc_all, crc32c(ByteView(raw).first(raw.size() - 4)));
    EXPECT_EQ(w.crc_no_lead, crc32c(ByteView(raw).subspan(4, raw.size() - 8)));
    EXPECT_NE(w.crc_all, w.crc_no_lead);
    EXPECT_EQ(w.crc_field, in_fpdu ? w.crc_all : w.crc_no_lead);
    EXPECT_TRUE(w.crc_matches());
    EXPECT_EQ(as_bytes(w.ulpdu()), ulpdu);
  }
}

TEST(FpduWalker, OnlyALeadingMarkerStillViewsTheRawOctets) {
  const Bytes ulpdu = pattern(40);
  const Bytes raw = fpdu(ulpdu, 0, true);
  Bytes scratch;
  FpduWalk w;
  ASSERT_EQ(walk_fpdu(raw, params(0, true), scratch, w), WalkStatus::complete);
  EXPECT_TRUE(w.leading_marker);
  EXPECT_EQ(w.markers.size(), 1u);
  EXPECT_EQ(w.plain.data(), raw.data() + 4);
  EXPECT_EQ(before_crc(w.plain), before_crc(plain_of(ulpdu)));
}

TEST(FpduWalker, MarkerInsideTheLengthField) {
  const Bytes ulpdu = pattern(30);
  const Bytes raw = fpdu(ulpdu, 511, true);
  Bytes scratch;
  FpduWalk w;
  // The high length octet alone is not enough, nor is it with the marker cut.
  for (std::size_t n = 0; n < 6; ++n) {
    ASSERT_EQ(walk_fpdu(ByteView(raw).first(n), params(511, true), scratch, w),
              WalkStatus::need_more);
    EXPECT_FALSE(w.ulpdu_length);
    EXPECT_EQ(w.raw_length, 6u);
  }
  ASSERT_EQ(walk_fpdu(raw, params(511, true), scratch, w), WalkStatus::complete);
  EXPECT_EQ(w.ulpdu_length, 30);
  ASSERT_EQ(w.markers.size(), 1u);
  EXPECT_EQ(w.marker_offsets[0], 1u);
  EXPECT_EQ(w.markers[0].fpduptr, 1);
  EXPECT_EQ(as_bytes(w.ulpdu()), ulpdu);
  EXPECT_TRUE(w.crc_matches());
}

TEST(FpduWalker, MarkerBetweenPadAndCrc) {
  // From stream position 0: leading marker, then 2 + 505 + 1 pad = 508 octets end at 512, where
  // the next marker sits in front of the CRC field. The CRC covers it.
  const Bytes ulpdu = pattern(505);
  const Bytes raw = fpdu(ulpdu, 0, true);
  ASSERT_EQ(raw.size(), 4u + 508u + 4u + 4u);
  Bytes scratch;
  FpduWalk w;
  ASSERT_EQ(walk_fpdu(raw, params(0, true), scratch, w), WalkStatus::complete);
  EXPECT_EQ(w.raw_length, raw.size());
  ASSERT_EQ(w.markers.size(), 2u);
  EXPECT_EQ(w.marker_offsets[1], 512u);
  EXPECT_EQ(w.markers[1].fpduptr, 512);
  EXPECT_EQ(w.crc_offset, 516u);
  EXPECT_EQ(w.crc_all, crc32c(ByteView(raw).first(516)));
  EXPECT_TRUE(w.crc_matches());
  EXPECT_EQ(before_crc(w.plain), before_crc(plain_of(ulpdu)));
  // Without the CRC field's first octet the FPDU is still incomplete.
  EXPECT_EQ(walk_fpdu(ByteView(raw).first(516), params(0, true), scratch, w),
            WalkStatus::need_more);
}

TEST(FpduWalker, MarkerDueAfterTheCrcBelongsToTheNextFpdu) {
  // 4 + 504 (2 + 502) + 4 CRC ends right at 512: the marker there is the next FPDU's.
  const Bytes ulpdu = pattern(502);
  Bytes raw = fpdu(ulpdu, 0, true);
  ASSERT_EQ(raw.size(), 512u);
  const Bytes next = fpdu(pattern(20), 512, true);
  raw.insert(raw.end(), next.begin(), next.end());
  Bytes scratch;
  FpduWalk w;
  ASSERT_EQ(walk_fpdu(ByteView(raw).first(512), params(0, true), scratch, w), WalkStatus::complete);
  EXPECT_EQ(w.raw_length, 512u);
  EXPECT_EQ(w.markers.size(), 1u);
  ASSERT_EQ(walk_fpdu(ByteView(raw).subspan(512), params(512, true), scratch, w),
            WalkStatus::complete);
  EXPECT_TRUE(w.leading_marker);
  EXPECT_EQ(w.raw_length, next.size());
}

TEST(FpduWalker, AgreesWithTheEncoderAndStripMarkersEverywhere) {
  Bytes scratch;
  FpduWalk w;
  for (std::uint64_t pos = 0; pos < 1100; pos += 1 + pos % 13) {
    for (const std::size_t len : {14u, 15u, 16u, 17u, 300u, 509u, 510u, 1030u}) {
      for (const auto c : {MarkerConvention::leading_marker_in_fpdu, MarkerConvention::literal}) {
        SCOPED_TRACE(testing::Message() << "pos " << pos << " len " << len);
        const Bytes ulpdu = pattern(len, static_cast<std::uint8_t>(pos));
        const Bytes raw = fpdu(ulpdu, pos, true, c);
        ASSERT_EQ(walk_fpdu(raw, params(pos, true), scratch, w), WalkStatus::complete);
        EXPECT_EQ(w.raw_length, raw.size());
        EXPECT_EQ(as_bytes(w.ulpdu()), ulpdu);
        EXPECT_EQ(before_crc(w.plain), before_crc(plain_of(ulpdu)));
        const auto split = wire::strip_markers(raw, pos);
        ASSERT_EQ(w.markers.size(), split.markers.size());
        for (std::size_t k = 0; k < w.markers.size(); ++k) {
          EXPECT_EQ(w.markers[k].stream_pos, split.markers[k].stream_pos);
          EXPECT_EQ(w.markers[k].fpduptr, split.markers[k].fpduptr);
          EXPECT_EQ(w.marker_offsets[k], split.markers[k].stream_pos - pos);
        }
        // strip_markers takes an unaligned start 1..3 octets past a marker position for the
        // marker's tail; the encoder and the walker take those octets as FPDU octets.
        if (pos % 512 == 0 || pos % 512 > 3) {
          EXPECT_EQ(as_bytes(w.plain), split.payload);
        }
        EXPECT_TRUE(w.crc_matches());
        EXPECT_TRUE(fpduptrs_point_at_start(w));
      }
    }
  }
}

TEST(FpduWalker, FpduptrThatFitsNeitherConvention) {
  const Bytes ulpdu = pattern(600);
  Bytes raw = fpdu(ulpdu, 512, true);
  // The marker at 1024 (raw offset 512): FPDUPTR 512 fits, 508 fits literally, 510 neither.
  for (const std::uint16_t ptr : {512, 508, 510, 0}) {
    raw[512 + 2] = static_cast<std::uint8_t>(ptr >> 8);
    raw[512 + 3] = static_cast<std::uint8_t>(ptr);
    Bytes scratch;
    FpduWalk w;
    ASSERT_EQ(walk_fpdu(raw, params(512, true, false), scratch, w), WalkStatus::complete);
    EXPECT_EQ(fpduptrs_point_at_start(w), ptr == 512 || ptr == 508) << ptr;
  }
  // A leading marker's own FPDUPTR is not judged by the FPDUPTR check.
  raw = fpdu(ulpdu, 512, true);
  raw[3] = 0x40;
  Bytes scratch;
  FpduWalk w;
  ASSERT_EQ(walk_fpdu(raw, params(512, true), scratch, w), WalkStatus::complete);
  EXPECT_TRUE(fpduptrs_point_at_start(w));
  EXPECT_EQ(w.markers[0].fpduptr, 0x40);
}

TEST(FpduWalker, ReservedFieldIsReported) {
  Bytes raw = fpdu(pattern(600), 1000, true);
  raw[24] = 0x12;
  raw[25] = 0x34;
  Bytes scratch;
  FpduWalk w;
  ASSERT_EQ(walk_fpdu(raw, params(1000, true), scratch, w), WalkStatus::complete);
  ASSERT_FALSE(w.markers.empty());
  EXPECT_EQ(w.markers[0].reserved, 0x1234);
  EXPECT_FALSE(w.crc_matches());  // the CRC covers the marker
}

TEST(FpduWalker, CrcMismatchIsReportedNotRejected) {
  Bytes raw = plain_of(pattern(20));
  raw[5] ^= 1;
  Bytes scratch;
  FpduWalk w;
  ASSERT_EQ(walk_fpdu(raw, params(0, false), scratch, w), WalkStatus::complete);
  EXPECT_FALSE(w.crc_matches());
  EXPECT_EQ(w.crc_all, crc32c(ByteView(raw).first(raw.size() - 4)));
}

TEST(FpduWalker, ShortLengthsAreWalkedNotJudged) {
  // ULPDU_Length 0: length, 2 pad, CRC. Too short for DDP, but a well-formed MPA FPDU.
  const Bytes raw = plain_of({});
  ASSERT_EQ(raw.size(), 8u);
  Bytes scratch;
  FpduWalk w;
  ASSERT_EQ(walk_fpdu(raw, params(0, false), scratch, w), WalkStatus::complete);
  EXPECT_EQ(w.ulpdu_length, 0);
  EXPECT_TRUE(w.ulpdu().empty());
  EXPECT_TRUE(w.crc_matches());
}

TEST(FpduWalker, ReusedOutputIsReset) {
  Bytes scratch;
  FpduWalk w;
  const Bytes marked = fpdu(pattern(600), 512, true);
  ASSERT_EQ(walk_fpdu(marked, params(512, true), scratch, w), WalkStatus::complete);
  ASSERT_FALSE(w.markers.empty());
  const Bytes plain = plain_of(pattern(20));
  ASSERT_EQ(walk_fpdu(plain, params(0, false), scratch, w), WalkStatus::complete);
  EXPECT_TRUE(w.markers.empty());
  EXPECT_TRUE(w.marker_offsets.empty());
  EXPECT_FALSE(w.leading_marker);
  EXPECT_EQ(w.plain.data(), plain.data());
  ASSERT_EQ(walk_fpdu(ByteView(plain).first(1), params(0, false), scratch, w),
            WalkStatus::need_more);
  EXPECT_FALSE(w.ulpdu_length);
  EXPECT_TRUE(w.plain.empty());
}

TEST(FpduWalker, PeekHead) {
  const Bytes ulpdu = pattern(40);
  std::uint8_t head[16];
  // Across a leading marker and across a marker inside the length field.
  for (const std::uint64_t pos : {0ull, 510ull, 100ull}) {
    const Bytes raw = fpdu(ulpdu, pos, true);
    const Bytes plain = plain_of(ulpdu);
    ASSERT_TRUE(peek_fpdu_head(raw, pos, true, head)) << pos;
    EXPECT_EQ(Bytes(head, head + 16), Bytes(plain.begin(), plain.begin() + 16)) << pos;
  }
  const Bytes raw = fpdu(ulpdu, 0, true);
  EXPECT_FALSE(peek_fpdu_head(ByteView(raw).first(19), 0, true, head));
  EXPECT_TRUE(peek_fpdu_head(ByteView(raw).first(20), 0, true, head));
  // Without markers the leading octets are the head.
  EXPECT_TRUE(peek_fpdu_head(raw, 0, false, head));
  EXPECT_EQ(head[3], 0);  // the marker's FPDUPTR octet
}

}  // namespace
}  // namespace ddpscope::mpa
