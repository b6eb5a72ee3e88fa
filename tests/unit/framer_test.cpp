// SPDX-License-Identifier: GPL-2.0-or-later
// The MPA framer state machine (RFC 5044 §4, §7): framing across feeds, markers, CRC-driven
// resync, gaps, mid-stream starts and its bounds. Streams are built from the wire encoders.
#include "ddpscope/mpa/framer.h"

#include <gtest/gtest.h>

#include <string>

#include "ddpscope/common/crc32c.h"
#include "ddpscope/wire/ddp.h"

namespace ddpscope {
namespace {

using wire::MarkerConvention;

// ---------------------------------------------------------------------------------------------
// Builders
// ---------------------------------------------------------------------------------------------

Bytes pattern(std::size_t n, std::uint8_t seed = 1) {
  Bytes b(n);
  for (std::size_t i = 0; i < n; ++i)
    b[i] = static_cast<std::uint8_t>(seed + i * 7);
  return b;
}

// An RDMA Write segment: a header a resynchronising framer accepts (RFC 5041 §4, RFC 5040 §4).
Bytes write_ulpdu(std::size_t payload, std::uint64_t to = 0x1000, std::uint8_t seed = 1) {
  wire::DdpHeader h;
  h.control.tagged = true;
  h.control.last = true;
  h.rsvd_ulp0 = wire::RdmapControl{wire::kRdmapVersion, 0, 0}.byte();
  h.stag = 0x1234'5678;
  h.to = to;
  Bytes out;
  ByteWriter w(out);
  wire::encode_ddp_header(h, w);
  const Bytes p = pattern(payload, seed);
  out.insert(out.end(), p.begin(), p.end());
  return out;
}

Bytes reqrep(bool markers, bool crc) {
  wire::MpaReqRep f;
  f.kind = wire::MpaFrameKind::request;
  f.markers = markers;
  f.crc = crc;
  return wire::encode_mpa_reqrep(f);
}

// One direction's stream: optionally a Request first, then FPDUs, each at its stream position.
struct Stream {
  bool markers = false;
  bool crc = true;
  MarkerConvention convention = MarkerConvention::leading_marker_in_fpdu;
  std::uint64_t s0 = 0;  // stream offset of S0
  Bytes bytes;
  std::vector<std::size_t> starts;  // stream offset of each FPDU

  static Stream with_request(bool markers, bool crc) {
    Stream s;
    s.markers = markers;
    s.crc = crc;
    s.bytes = reqrep(markers, crc);
    s.s0 = s.bytes.size();
    return s;
  }
  std::size_t add(const Bytes& ulpdu) {
    wire::FpduEncodeOptions o;
    o.crc = crc;
    o.markers = markers;
    o.stream_pos = bytes.size() - s0;
    o.convention = convention;
    const Bytes f = wire::encode_fpdu(ulpdu, o);
    starts.push_back(bytes.size());
    bytes.insert(bytes.end(), f.begin(), f.end());
    return starts.back();
  }
  std::size_t end_of(std::size_t k) const {
    return k + 1 < starts.size() ? starts[k + 1] : bytes.size();
  }
  ByteView slice(std::size_t from, std::size_t to) const {
    return ByteView(bytes).subspan(from, to - from);
  }
};

// What a listener sees of one RawPdu, copied out of the callback.
struct Seen {
  RawPdu::Kind kind = RawPdu::Kind::fpdu;
  std::uint64_t stream_offset = 0;
  Bytes raw;
  Bytes plain;
  std::string error_code;
  std::string error_message;
  bool leading_marker = false;
  std::vector<std::uint64_t> marker_positions;
  std::vector<std::uint16_t> fpduptrs;
  std::vector<std::size_t> marker_offsets;
  std::uint32_t crc_field = 0, crc_all = 0, crc_no_lead = 0;
  bool after_resync = false;
  std::uint64_t resync_skipped = 0;
  bool resync_after_gap = false;
  bool resync_mid_stream = false;
  std::optional<bool> crc_detected;
  std::vector<FrameSlice> slices;

  bool crc_ok() const { return crc_field == crc_all || crc_field == crc_no_lead; }
  // Everything but where the octets came from.
  bool same_pdu(const Seen& o) const {
    return kind == o.kind && stream_offset == o.stream_offset && raw == o.raw && plain == o.plain &&
           error_code == o.error_code && leading_marker == o.leading_marker &&
           marker_positions == o.marker_positions && fpduptrs == o.fpduptrs &&
           marker_offsets == o.marker_offsets && crc_field == o.crc_field && crc_all == o.crc_all &&
           crc_no_lead == o.crc_no_lead && after_resync == o.after_resync &&
           resync_skipped == o.resync_skipped && resync_after_gap == o.resync_after_gap &&
           resync_mid_stream == o.resync_mid_stream;
  }
};

// Records PDUs and plays the analyzer's part: set_params once the Request is framed, and
// start_mid_stream when the stream does not start with an MPA key.
class Recorder : public MpaFramerListener {
 public:
  Recorder(MpaFramer& f, bool markers, bool crc) : framer_(f), markers_(markers), crc_(crc) {}
  bool mid_stream_on_not_mpa = false;
  std::vector<Seen> seen;

  void on_raw_pdu(RawPdu& p) override {
    Seen s;
    s.kind = p.kind;
    s.stream_offset = p.stream_offset;
    s.raw.assign(p.raw.begin(), p.raw.end());
    s.plain.assign(p.plain.begin(), p.plain.end());
    if (p.error) {
      s.error_code = p.error->code;
      s.error_message = p.error->message;
    }
    s.leading_marker = p.leading_marker;
    for (const auto& m : p.markers) {
      s.marker_positions.push_back(m.stream_pos);
      s.fpduptrs.push_back(m.fpduptr);
    }
    s.marker_offsets = p.marker_offsets;
    s.crc_field = p.crc_field;
    s.crc_all = p.crc_all;
    s.crc_no_lead = p.crc_no_lead;
    s.after_resync = p.after_resync;
    s.resync_skipped = p.resync_skipped;
    s.resync_after_gap = p.resync_after_gap;
    s.resync_mid_stream = p.resync_mid_stream;
    s.crc_detected = p.crc_detected;
    s.slices = p.slices;
    seen.push_back(std::move(s));
    if (p.kind == RawPdu::Kind::reqrep) framer_.set_params(markers_, crc_, *this);
    if (p.kind == RawPdu::Kind::not_mpa && mid_stream_on_not_mpa)
      framer_.start_mid_stream(markers_, crc_, *this);
  }

  std::vector<const Seen*> of_kind(RawPdu::Kind k) const {
    std::vector<const Seen*> out;
    for (const Seen& s : seen)
      if (s.kind == k) out.push_back(&s);
    return out;
  }
  std::uint64_t unframed_octets() const {
    std::uint64_t n = 0;
    for (const Seen* s : of_kind(RawPdu::Kind::unframed))
      n += s->raw.size();
    return n;
  }

 private:
  MpaFramer& framer_;
  bool markers_;
  bool crc_;
};

// Feeds `s` cut at the given stream offsets, one frame per piece (frame numbers from 1).
void feed_cut(MpaFramer& f, Recorder& r, const Stream& s, std::vector<std::size_t> cuts) {
  cuts.push_back(s.bytes.size());
  std::size_t from = 0;
  std::uint64_t frame = 1;
  for (std::size_t to : cuts) {
    if (to > from) f.feed(from, s.slice(from, to), frame++, 0, r);
    from = to;
  }
}

// A stream with a Request and four FPDUs. With markers the first starts on one (a leading
// marker) and crosses the next, the second has one between pad and CRC (at S0 + 1024), the
// third crosses S0 + 1536.
Stream four_fpdus(bool markers, bool crc,
                  MarkerConvention c = MarkerConvention::leading_marker_in_fpdu) {
  Stream s = Stream::with_request(markers, crc);
  s.convention = c;
  s.add(write_ulpdu(586, 0x1000, 1));  // 608 octets + 2 markers: S0 .. S0 + 616
  s.add(write_ulpdu(391, 0x2000, 2));  // 2 + 405 + 1 pad = 408 octets, marker, CRC
  s.add(write_ulpdu(700, 0x3000, 3));
  s.add(write_ulpdu(5, 0x4000, 4));
  return s;
}

// The first FPDU from index `k` on that holds a marker or starts on one: where a framer
// resynchronising with markers finds framing again (RFC 5044 §4.3).
std::size_t first_marked_from(const Stream& s, std::size_t k) {
  for (; k < s.starts.size(); ++k) {
    const std::uint64_t b = s.starts[k] - s.s0;
    const std::uint64_t e = s.end_of(k) - s.s0;
    if (b % 512 == 0 || b / 512 != (e - 1) / 512) return k;
  }
  return s.starts.size();
}

std::vector<Seen> frame_whole(const Stream& s, Limits limits = {}) {
  MpaFramer f(limits);
  Recorder r(f, s.markers, s.crc);
  feed_cut(f, r, s, {});
  f.finish(r);
  return r.seen;
}

// ---------------------------------------------------------------------------------------------
// In-order framing
// ---------------------------------------------------------------------------------------------

TEST(MpaFramer, FramesRequestThenFpdus) {
  for (const bool markers : {false, true}) {
    SCOPED_TRACE(markers ? "markers" : "no markers");
    const Stream s = four_fpdus(markers, true);
    const auto seen = frame_whole(s);
    ASSERT_EQ(seen.size(), 5u);
    EXPECT_EQ(seen[0].kind, RawPdu::Kind::reqrep);
    EXPECT_EQ(seen[0].raw.size(), s.s0);
    for (std::size_t k = 0; k < 4; ++k) {
      const Seen& p = seen[k + 1];
      EXPECT_EQ(p.kind, RawPdu::Kind::fpdu);
      EXPECT_EQ(p.stream_offset, s.starts[k]);
      EXPECT_EQ(p.raw.size(), s.end_of(k) - s.starts[k]);
      EXPECT_TRUE(p.crc_ok());
      EXPECT_FALSE(p.after_resync);
      EXPECT_EQ(p.marker_offsets.size(), p.marker_positions.size());
      if (!markers) {
        EXPECT_TRUE(p.marker_positions.empty());
      }
    }
    if (markers) {
      EXPECT_TRUE(seen[1].leading_marker);
      EXPECT_EQ(seen[1].marker_positions, (std::vector<std::uint64_t>{0, 512}));
      EXPECT_FALSE(seen[2].leading_marker);
      EXPECT_EQ(seen[2].marker_positions, (std::vector<std::uint64_t>{1024}));
      EXPECT_EQ(seen[2].marker_offsets, (std::vector<std::size_t>{408}));
      EXPECT_EQ(seen[3].marker_positions, (std::vector<std::uint64_t>{1536}));
    }
  }
}

TEST(MpaFramer, SplitAtEveryOctetAcrossTwoFeeds) {
  for (const bool markers : {false, true}) {
    const Stream s = four_fpdus(markers, true);
    const auto whole = frame_whole(s);
    for (std::size_t cut = 1; cut < s.bytes.size(); ++cut) {
      SCOPED_TRACE(testing::Message() << (markers ? "markers" : "no markers") << " cut " << cut);
      MpaFramer f(Limits{});
      Recorder r(f, markers, true);
      feed_cut(f, r, s, {cut});
      f.finish(r);
      ASSERT_EQ(r.seen.size(), whole.size());
      for (std::size_t k = 0; k < whole.size(); ++k) {
        ASSERT_TRUE(r.seen[k].same_pdu(whole[k])) << "PDU " << k;
        // Where the octets came from: frame 1 up to the cut, frame 2 after it.
        std::uint64_t at = r.seen[k].stream_offset;
        std::uint32_t total = 0;
        for (const FrameSlice& sl : r.seen[k].slices) {
          EXPECT_EQ(sl.frame, at < cut ? 1u : 2u);
          EXPECT_EQ(sl.offset, at < cut ? at : at - cut);
          at += sl.length;
          total += sl.length;
        }
        EXPECT_EQ(total, r.seen[k].raw.size());
      }
    }
  }
}

TEST(MpaFramer, OneOctetPerFeed) {
  for (const bool markers : {false, true}) {
    const Stream s = four_fpdus(markers, true);
    const auto whole = frame_whole(s);
    std::vector<std::size_t> cuts;
    for (std::size_t i = 1; i < s.bytes.size(); ++i)
      cuts.push_back(i);
    MpaFramer f(Limits{});
    Recorder r(f, markers, true);
    feed_cut(f, r, s, cuts);
    EXPECT_EQ(f.buffered(), 0u);
    f.finish(r);
    ASSERT_EQ(r.seen.size(), whole.size());
    for (std::size_t k = 0; k < whole.size(); ++k) {
      EXPECT_TRUE(r.seen[k].same_pdu(whole[k])) << k;
      EXPECT_EQ(r.seen[k].slices.size(), whole[k].raw.size()) << k;
    }
  }
}

TEST(MpaFramer, MarkerCutInTheMiddleByAFeedEdge) {
  const Stream s = four_fpdus(true, true);
  // The first FPDU holds the marker at S0 + 512; cut two octets into it.
  const std::size_t mid_marker = s.s0 + 512 + 2;
  ASSERT_LT(mid_marker, s.end_of(0));
  MpaFramer f(Limits{});
  Recorder r(f, true, true);
  f.feed(0, s.slice(0, mid_marker), 1, 0, r);
  ASSERT_EQ(r.seen.size(), 1u);  // the Request only: the FPDU waits for the rest of the marker
  EXPECT_EQ(f.buffered(), mid_marker - s.s0);
  f.feed(mid_marker, s.slice(mid_marker, s.end_of(0)), 2, 0, r);
  ASSERT_EQ(r.seen.size(), 2u);
  const Seen& p = r.seen[1];
  EXPECT_EQ(p.kind, RawPdu::Kind::fpdu);
  EXPECT_TRUE(p.crc_ok());
  EXPECT_EQ(p.marker_positions, (std::vector<std::uint64_t>{0, 512}));
  EXPECT_EQ(p.marker_offsets, (std::vector<std::size_t>{0, 512}));
  EXPECT_EQ(p.fpduptrs, (std::vector<std::uint16_t>{0, 512}));
  ASSERT_EQ(p.slices.size(), 2u);
  EXPECT_EQ(p.slices[0].length, mid_marker - s.s0);
  EXPECT_EQ(f.buffered(), 0u);
}

TEST(MpaFramer, LeadingMarkerInBothConventions) {
  for (const auto c : {MarkerConvention::leading_marker_in_fpdu, MarkerConvention::literal}) {
    SCOPED_TRACE(std::string(wire::to_string(c)));
    const Stream s = four_fpdus(true, true, c);
    const auto seen = frame_whole(s);
    ASSERT_EQ(seen.size(), 5u);
    const Seen& p = seen[1];
    EXPECT_TRUE(p.leading_marker);
    EXPECT_EQ(p.fpduptrs[0], 0);
    EXPECT_EQ(p.fpduptrs[1], c == MarkerConvention::literal ? 508 : 512);
    EXPECT_NE(p.crc_all, p.crc_no_lead);
    EXPECT_EQ(p.crc_field, c == MarkerConvention::literal ? p.crc_no_lead : p.crc_all);
    for (std::size_t k = 1; k < seen.size(); ++k) {
      EXPECT_EQ(seen[k].kind, RawPdu::Kind::fpdu);
      EXPECT_FALSE(seen[k].after_resync);
      EXPECT_TRUE(seen[k].crc_ok());
    }
  }
}

TEST(MpaFramer, MarkerBetweenPadAndCrc) {
  Stream s = Stream::with_request(true, true);
  // Leading marker at S0, then 2 + 14 + 491 + 1 pad = 508 octets: the marker at 512 comes
  // right before the CRC field.
  s.add(write_ulpdu(491));
  s.add(write_ulpdu(20));
  ASSERT_EQ(s.end_of(0) - s.starts[0], 520u);
  const auto seen = frame_whole(s);
  ASSERT_EQ(seen.size(), 3u);
  const Seen& p = seen[1];
  EXPECT_EQ(p.marker_offsets, (std::vector<std::size_t>{0, 512}));
  EXPECT_EQ(p.plain.size(), wire::fpdu_size(505));
  EXPECT_TRUE(p.crc_ok());
  EXPECT_EQ(p.crc_all, crc32c(ByteView(p.raw).first(516)));
  EXPECT_EQ(seen[2].kind, RawPdu::Kind::fpdu);
  EXPECT_EQ(seen[2].stream_offset, s.starts[1]);
  EXPECT_FALSE(seen[2].after_resync);
}

// ---------------------------------------------------------------------------------------------
// Resynchronisation
// ---------------------------------------------------------------------------------------------

TEST(MpaFramer, ResyncAfterAGapWithoutMarkers) {
  Stream s = Stream::with_request(false, true);
  for (std::size_t k = 0; k < 5; ++k)
    s.add(write_ulpdu(100 + 40 * k, 0x1000 * (k + 1), static_cast<std::uint8_t>(k)));
  // Lost: from the middle of FPDU 1 to the middle of FPDU 2.
  const std::size_t lost_from = s.starts[1] + 50;
  const std::size_t lost_to = s.starts[2] + 30;
  MpaFramer f(Limits{});
  Recorder r(f, false, true);
  f.feed(0, s.slice(0, lost_from), 1, 0, r);
  f.gap(lost_from, lost_to - lost_from, r);
  EXPECT_EQ(f.state(), MpaFramer::State::resync);
  f.feed(lost_to, s.slice(lost_to, s.bytes.size()), 2, 0, r);
  f.finish(r);

  const auto fpdus = r.of_kind(RawPdu::Kind::fpdu);
  const auto unframed = r.of_kind(RawPdu::Kind::unframed);
  ASSERT_EQ(fpdus.size(), 3u);  // FPDUs 0, 3 and 4
  EXPECT_EQ(fpdus[0]->stream_offset, s.starts[0]);
  EXPECT_EQ(fpdus[1]->stream_offset, s.starts[3]);
  EXPECT_TRUE(fpdus[1]->after_resync);
  EXPECT_TRUE(fpdus[1]->resync_after_gap);
  EXPECT_FALSE(fpdus[1]->resync_mid_stream);
  // The part of FPDU 1 before the gap and the part of FPDU 2 after it.
  ASSERT_EQ(unframed.size(), 2u);
  EXPECT_EQ(unframed[0]->raw.size(), lost_from - s.starts[1]);
  EXPECT_EQ(unframed[0]->error_message, "cut by a gap in the capture");
  EXPECT_EQ(unframed[1]->stream_offset, lost_to);
  EXPECT_EQ(unframed[1]->raw.size(), s.starts[3] - lost_to);
  EXPECT_EQ(unframed[1]->error_message, "skipped while looking for an FPDU boundary");
  EXPECT_EQ(fpdus[1]->resync_skipped, (lost_from - s.starts[1]) + (s.starts[3] - lost_to));
  EXPECT_FALSE(fpdus[2]->after_resync);
  EXPECT_EQ(fpdus[2]->stream_offset, s.starts[4]);
  EXPECT_EQ(f.state(), MpaFramer::State::fpdu);
}

// The search for a boundary resumes where the last delivery left it: octets that arrive one at
// a time are each tried once (a search that started over at every delivery tried n^2/2 starts
// in n octets: minutes for these 192 KiB), and a start that wanted more octets is tried again
// when they come (here the FPDU after the garbage, itself delivered an octet at a time).
TEST(MpaFramer, ResyncOneOctetPerDeliveryTriesEachStartOnceAndFindsTheFpdu) {
  Stream s = Stream::with_request(false, true);
  s.add(write_ulpdu(100, 0x1000, 1));
  const std::size_t garbage_at = s.bytes.size();
  const std::size_t garbage = 192u << 10;  // under Limits::resync_buffer (256 KiB)
  const Bytes junk = pattern(garbage, 3);
  s.bytes.insert(s.bytes.end(), junk.begin(), junk.end());
  s.add(write_ulpdu(200, 0x2000, 2));
  s.add(write_ulpdu(300, 0x3000, 3));
  MpaFramer f(Limits{});
  Recorder r(f, false, true);
  f.feed(0, s.slice(0, garbage_at), 1, 0, r);
  f.gap(garbage_at, 0, r);  // framing lost: search from the garbage on
  ASSERT_EQ(f.state(), MpaFramer::State::resync);
  for (std::size_t i = garbage_at; i < s.bytes.size(); ++i)
    f.feed(i, s.slice(i, i + 1), 2 + i, 0, r);
  f.finish(r);

  const auto fpdus = r.of_kind(RawPdu::Kind::fpdu);
  ASSERT_EQ(fpdus.size(), 3u);
  EXPECT_EQ(fpdus[1]->stream_offset, s.starts[1]);
  EXPECT_TRUE(fpdus[1]->after_resync);
  EXPECT_EQ(fpdus[1]->resync_skipped, garbage);
  EXPECT_EQ(fpdus[2]->stream_offset, s.starts[2]);
  EXPECT_EQ(f.state(), MpaFramer::State::fpdu);
}

TEST(MpaFramer, ResyncAfterAGapExactlyAtAnFpduStartSkipsNothing) {
  Stream s = Stream::with_request(false, true);
  for (std::size_t k = 0; k < 3; ++k)
    s.add(write_ulpdu(60, 0x1000 * (k + 1), static_cast<std::uint8_t>(k)));
  MpaFramer f(Limits{});
  Recorder r(f, false, true);
  f.feed(0, s.slice(0, s.starts[1]), 1, 0, r);
  f.gap(s.starts[1], s.starts[2] - s.starts[1], r);
  f.feed(s.starts[2], s.slice(s.starts[2], s.bytes.size()), 2, 0, r);
  const auto fpdus = r.of_kind(RawPdu::Kind::fpdu);
  ASSERT_EQ(fpdus.size(), 2u);
  EXPECT_TRUE(fpdus[1]->after_resync);
  EXPECT_TRUE(fpdus[1]->resync_after_gap);
  EXPECT_EQ(fpdus[1]->resync_skipped, 0u);
  EXPECT_EQ(r.unframed_octets(), 0u);
}

TEST(MpaFramer, ResyncAfterAGapWithMarkersFollowsFpduptr) {
  Stream s = Stream::with_request(true, true);
  // FPDUs of 204 octets: several between markers, so a marker points back into held octets.
  for (std::size_t k = 0; k < 12; ++k)
    s.add(write_ulpdu(184, 0x1000 * (k + 1), static_cast<std::uint8_t>(k)));
  // Lost: from inside FPDU 1 to inside FPDU 3 (which holds no marker).
  const std::size_t lost_from = s.starts[1] + 10;
  const std::size_t lost_to = s.starts[3] + 10;
  MpaFramer f(Limits{});
  Recorder r(f, true, true);
  f.feed(0, s.slice(0, lost_from), 1, 0, r);
  f.gap(lost_from, lost_to - lost_from, r);
  f.feed(lost_to, s.slice(lost_to, s.bytes.size()), 2, 0, r);
  f.finish(r);

  // The first marker after the gap is at S0 + 1024; the FPDU holding it is found first.
  const std::size_t holder = first_marked_from(s, 3);
  ASSERT_EQ(s.starts[holder] - s.s0, 824u);  // FPDU 4 holds the marker at 1024
  const auto fpdus = r.of_kind(RawPdu::Kind::fpdu);
  ASSERT_EQ(fpdus.size(), 1 + (s.starts.size() - holder));
  EXPECT_EQ(fpdus[1]->stream_offset, s.starts[holder]);
  EXPECT_TRUE(fpdus[1]->after_resync);
  EXPECT_TRUE(fpdus[1]->resync_after_gap);
  EXPECT_EQ(fpdus[1]->resync_skipped, (lost_from - s.starts[1]) + (s.starts[holder] - lost_to));
  for (std::size_t k = 1; k < fpdus.size(); ++k)
    EXPECT_TRUE(fpdus[k]->crc_ok());
  EXPECT_EQ(r.unframed_octets(), fpdus[1]->resync_skipped);
}

TEST(MpaFramer, CrcErrorWithASaneLengthKeepsFraming) {
  Stream s = Stream::with_request(false, true);
  s.add(write_ulpdu(40));
  s.add(write_ulpdu(40));
  s.add(write_ulpdu(40));
  s.bytes[s.starts[1] + 30] ^= 0x01;  // payload octet of FPDU 1: its CRC no longer matches
  MpaFramer f(Limits{});
  Recorder r(f, false, true);
  // The damaged FPDU is emitted in the frame that completes it (a one-pass host shows it
  // there); whether the next one is where its length says is checked once that one is held.
  f.feed(0, s.slice(0, s.end_of(1)), 1, 0, r);
  EXPECT_EQ(r.of_kind(RawPdu::Kind::fpdu).size(), 2u);
  EXPECT_EQ(f.state(), MpaFramer::State::fpdu);
  f.feed(s.end_of(1), s.slice(s.end_of(1), s.bytes.size()), 2, 0, r);
  const auto fpdus = r.of_kind(RawPdu::Kind::fpdu);
  ASSERT_EQ(fpdus.size(), 3u);
  EXPECT_FALSE(fpdus[1]->crc_ok());
  EXPECT_EQ(fpdus[1]->stream_offset, s.starts[1]);
  EXPECT_FALSE(fpdus[2]->after_resync);
  EXPECT_TRUE(fpdus[2]->crc_ok());
  EXPECT_EQ(r.unframed_octets(), 0u);
  EXPECT_EQ(f.state(), MpaFramer::State::fpdu);
}

TEST(MpaFramer, CrcErrorWithADamagedLengthResyncs) {
  Stream s = Stream::with_request(false, true);
  for (std::size_t k = 0; k < 4; ++k)
    s.add(write_ulpdu(40, 0x1000 * (k + 1), static_cast<std::uint8_t>(k)));
  s.bytes[s.starts[1] + 1] += 8;  // ULPDU_Length of FPDU 1 now reaches 8 octets into FPDU 2
  const auto seen = frame_whole(s);
  std::vector<const Seen*> fpdus, unframed;
  for (const Seen& p : seen) {
    if (p.kind == RawPdu::Kind::fpdu) fpdus.push_back(&p);
    if (p.kind == RawPdu::Kind::unframed) unframed.push_back(&p);
  }
  ASSERT_EQ(fpdus.size(), 3u);  // FPDUs 0, 1 (damaged) and 3
  EXPECT_EQ(fpdus[1]->stream_offset, s.starts[1]);
  EXPECT_EQ(fpdus[1]->raw.size(), s.end_of(1) - s.starts[1] + 8);
  EXPECT_FALSE(fpdus[1]->crc_ok());
  // The rest of FPDU 2 is skipped; FPDU 3 is found again.
  EXPECT_EQ(fpdus[2]->stream_offset, s.starts[3]);
  EXPECT_TRUE(fpdus[2]->after_resync);
  EXPECT_FALSE(fpdus[2]->resync_after_gap);
  EXPECT_EQ(fpdus[2]->resync_skipped, s.end_of(2) - s.starts[2] - 8);
  ASSERT_EQ(unframed.size(), 1u);
  EXPECT_EQ(unframed[0]->stream_offset, s.starts[2] + 8);
}

TEST(MpaFramer, UlpduLengthShorterThanADdpHeader) {
  for (const bool markers : {false, true}) {
    SCOPED_TRACE(markers ? "markers" : "no markers");
    Stream s = Stream::with_request(markers, true);
    s.add(write_ulpdu(40, 0x1000, 1));
    s.add(Bytes(10, 0xEE));  // ULPDU_Length 10 < 14
    for (std::size_t k = 0; k < 6; ++k)
      s.add(write_ulpdu(100, 0x2000 * (k + 1), static_cast<std::uint8_t>(k)));
    // Without markers the next FPDU is found by its header and CRC, with markers the first
    // one a marker points at.
    const std::size_t found = markers ? first_marked_from(s, 2) : 2;
    ASSERT_LT(found, s.starts.size());
    const auto seen = frame_whole(s);
    std::vector<const Seen*> fpdus, unframed;
    for (const Seen& p : seen) {
      if (p.kind == RawPdu::Kind::fpdu) fpdus.push_back(&p);
      if (p.kind == RawPdu::Kind::unframed) unframed.push_back(&p);
    }
    ASSERT_EQ(unframed.size(), 2u);
    EXPECT_EQ(unframed[0]->error_code, "mpa.ulpdu-length-invalid");
    EXPECT_EQ(unframed[0]->error_message, "ULPDU_Length 10 is shorter than a DDP header");
    EXPECT_EQ(unframed[0]->stream_offset, s.starts[1]);
    EXPECT_EQ(unframed[0]->raw.size(), 2u);
    EXPECT_EQ(unframed[1]->error_message, "skipped while looking for an FPDU boundary");
    ASSERT_EQ(fpdus.size(), 1 + s.starts.size() - found);
    EXPECT_EQ(fpdus[1]->stream_offset, s.starts[found]);
    EXPECT_TRUE(fpdus[1]->after_resync);
    EXPECT_FALSE(fpdus[1]->resync_after_gap);
    EXPECT_EQ(fpdus[1]->resync_skipped, s.starts[found] - s.starts[1]);
    EXPECT_FALSE(fpdus[2]->after_resync);
  }
}

TEST(MpaFramer, StartMidStream) {
  Stream s;  // no Request: the capture begins inside FPDU 0
  s.crc = true;
  for (std::size_t k = 0; k < 3; ++k)
    s.add(write_ulpdu(50, 0x1000 * (k + 1), static_cast<std::uint8_t>(k)));
  const std::size_t from = s.starts[0] + 13;
  for (const bool told_first : {true, false}) {
    SCOPED_TRACE(told_first ? "start_mid_stream, then feed" : "on not_mpa");
    MpaFramer f(Limits{});
    Recorder r(f, false, true);
    r.mid_stream_on_not_mpa = !told_first;
    if (told_first) f.start_mid_stream(false, true, r);
    f.feed(from, s.slice(from, s.bytes.size()), 1, 0, r);
    f.finish(r);
    const auto fpdus = r.of_kind(RawPdu::Kind::fpdu);
    ASSERT_EQ(fpdus.size(), 2u);
    EXPECT_EQ(fpdus[0]->stream_offset, s.starts[1]);
    EXPECT_TRUE(fpdus[0]->after_resync);
    EXPECT_TRUE(fpdus[0]->resync_mid_stream);
    EXPECT_FALSE(fpdus[0]->resync_after_gap);
    EXPECT_EQ(fpdus[0]->resync_skipped, s.starts[1] - from);
    EXPECT_FALSE(fpdus[1]->after_resync);
    EXPECT_FALSE(fpdus[1]->resync_mid_stream);
    EXPECT_EQ(r.of_kind(RawPdu::Kind::not_mpa).size(), told_first ? 0u : 1u);
    EXPECT_FALSE(f.s0());
  }
}

TEST(MpaFramer, StartMidStreamAtAnFpduBoundarySkipsNothing) {
  Stream s;
  for (std::size_t k = 0; k < 2; ++k)
    s.add(write_ulpdu(50, 0x1000 * (k + 1), static_cast<std::uint8_t>(k)));
  MpaFramer f(Limits{});
  Recorder r(f, false, true);
  f.start_mid_stream(false, true, r);
  f.feed(0, s.bytes, 1, 0, r);
  const auto fpdus = r.of_kind(RawPdu::Kind::fpdu);
  ASSERT_EQ(fpdus.size(), 2u);
  EXPECT_TRUE(fpdus[0]->after_resync);
  EXPECT_TRUE(fpdus[0]->resync_mid_stream);
  EXPECT_EQ(fpdus[0]->resync_skipped, 0u);
}

TEST(MpaFramer, ResyncWithoutCrcNeedsAZeroCrcFieldAndASaneNextHeader) {
  Stream s = Stream::with_request(false, false);
  for (std::size_t k = 0; k < 4; ++k)
    s.add(write_ulpdu(48, 0x1000 * (k + 1), static_cast<std::uint8_t>(k)));
  const std::size_t lost_from = s.starts[1] + 6;
  const std::size_t lost_to = s.starts[1] + 20;
  MpaFramer f(Limits{});
  Recorder r(f, false, false);
  f.feed(0, s.slice(0, lost_from), 1, 0, r);
  f.gap(lost_from, lost_to - lost_from, r);
  f.feed(lost_to, s.slice(lost_to, s.bytes.size()), 2, 0, r);
  f.finish(r);
  const auto fpdus = r.of_kind(RawPdu::Kind::fpdu);
  ASSERT_EQ(fpdus.size(), 3u);
  EXPECT_EQ(fpdus[1]->stream_offset, s.starts[2]);
  EXPECT_EQ(fpdus[1]->resync_skipped, (lost_from - s.starts[1]) + (s.starts[2] - lost_to));
  for (const Seen* p : fpdus)
    EXPECT_EQ(p->crc_field, 0u);
}

// ---------------------------------------------------------------------------------------------
// stop(), finish() and bounds
// ---------------------------------------------------------------------------------------------

TEST(MpaFramer, StopReportsBufferedAndLaterOctetsUnframed) {
  const Stream s = four_fpdus(false, true);
  MpaFramer f(Limits{});
  Recorder r(f, false, true);
  const std::size_t part = s.starts[1] + 7;
  f.feed(0, s.slice(0, part), 1, 0, r);
  ASSERT_EQ(r.of_kind(RawPdu::Kind::fpdu).size(), 1u);
  f.stop(r, "budget spent");
  EXPECT_EQ(f.state(), MpaFramer::State::off);
  EXPECT_EQ(f.buffered(), 0u);
  f.feed(part, s.slice(part, s.bytes.size()), 2, 0, r);
  f.finish(r);
  const auto unframed = r.of_kind(RawPdu::Kind::unframed);
  ASSERT_EQ(unframed.size(), 2u);
  EXPECT_EQ(unframed[0]->stream_offset, s.starts[1]);
  EXPECT_EQ(unframed[0]->raw.size(), 7u);
  EXPECT_EQ(unframed[1]->stream_offset, part);
  EXPECT_EQ(unframed[1]->raw.size(), s.bytes.size() - part);
  for (const Seen* u : unframed)
    EXPECT_EQ(u->error_message, "budget spent");
  EXPECT_EQ(r.of_kind(RawPdu::Kind::fpdu).size(), 1u);
}

TEST(MpaFramer, StopBeforeTheHandshakeCompletes) {
  const Stream s = four_fpdus(false, true);
  MpaFramer f(Limits{});
  class NoParams : public MpaFramerListener {
   public:
    std::vector<RawPdu::Kind> kinds;
    std::string last_why;
    void on_raw_pdu(RawPdu& p) override {
      kinds.push_back(p.kind);
      if (p.error) last_why = p.error->message;
    }
  } r;
  f.feed(0, s.bytes, 1, 0, r);
  EXPECT_EQ(f.state(), MpaFramer::State::wait_params);
  EXPECT_EQ(f.buffered(), s.bytes.size() - s.s0);  // FPDUs wait for the Reply
  f.stop(r);
  EXPECT_EQ(f.buffered(), 0u);
  EXPECT_EQ(r.kinds, (std::vector<RawPdu::Kind>{RawPdu::Kind::reqrep, RawPdu::Kind::unframed}));
  EXPECT_EQ(r.last_why, "not framed (MPA handshake failed)");
}

TEST(MpaFramer, FinishWithAPartialFpdu) {
  for (const bool markers : {false, true}) {
    const Stream s = four_fpdus(markers, true);
    MpaFramer f(Limits{});
    Recorder r(f, markers, true);
    const std::size_t part = s.starts[2] + 100;
    f.feed(0, s.slice(0, part), 1, 0, r);
    EXPECT_EQ(f.buffered(), part - s.starts[2]);
    f.finish(r);
    ASSERT_EQ(r.of_kind(RawPdu::Kind::fpdu).size(), 2u);
    const auto unframed = r.of_kind(RawPdu::Kind::unframed);
    ASSERT_EQ(unframed.size(), 1u);
    EXPECT_EQ(unframed[0]->stream_offset, s.starts[2]);
    EXPECT_EQ(unframed[0]->raw.size(), 100u);
    EXPECT_EQ(unframed[0]->error_message, "incomplete FPDU at end of capture");
    EXPECT_EQ(f.buffered(), 0u);
  }
}

TEST(MpaFramer, CrcBadLastFpduIsEmittedWithoutWaiting) {
  Stream s = Stream::with_request(false, true);
  s.add(write_ulpdu(40));
  s.bytes.back() ^= 0xFF;  // the CRC field
  MpaFramer f(Limits{});
  Recorder r(f, false, true);
  f.feed(0, s.bytes, 1, 0, r);
  // Emitted with the frame that completed it, not when what follows arrives (or never comes).
  auto fpdus = r.of_kind(RawPdu::Kind::fpdu);
  ASSERT_EQ(fpdus.size(), 1u);
  EXPECT_FALSE(fpdus[0]->crc_ok());
  f.finish(r);
  fpdus = r.of_kind(RawPdu::Kind::fpdu);
  EXPECT_EQ(fpdus.size(), 1u);
  EXPECT_EQ(r.unframed_octets(), 0u);
}

TEST(MpaFramer, CrcBadFpduWithADamagedLengthResyncsOnceTheNextOctetsCome) {
  Stream s = Stream::with_request(false, true);
  for (std::size_t k = 0; k < 4; ++k)
    s.add(write_ulpdu(40, 0x1000 * (k + 1), static_cast<std::uint8_t>(k)));
  s.bytes[s.starts[1] + 1] += 8;  // ULPDU_Length of FPDU 1 now reaches 8 octets into FPDU 2
  MpaFramer f(Limits{});
  Recorder r(f, false, true);
  // FPDU 1 as its damaged length frames it: emitted once its octets are held.
  const std::size_t damaged_end = s.end_of(1) + 8;
  f.feed(0, s.slice(0, damaged_end), 1, 0, r);
  ASSERT_EQ(r.of_kind(RawPdu::Kind::fpdu).size(), 2u);
  EXPECT_FALSE(r.of_kind(RawPdu::Kind::fpdu)[1]->crc_ok());
  EXPECT_EQ(f.state(), MpaFramer::State::fpdu);  // the next FPDU's place is not known yet
  f.feed(damaged_end, s.slice(damaged_end, s.bytes.size()), 2, 0, r);
  // Nothing FPDU-like where the damaged length points: the rest of FPDU 2 is skipped, and
  // FPDU 3 found again, as when the damaged FPDU waited for what follows.
  EXPECT_EQ(r.unframed_octets(), s.end_of(2) - s.starts[2] - 8);
  const auto fpdus = r.of_kind(RawPdu::Kind::fpdu);
  ASSERT_EQ(fpdus.size(), 3u);
  EXPECT_TRUE(fpdus[2]->after_resync);
  EXPECT_TRUE(fpdus[2]->crc_ok());
  EXPECT_EQ(fpdus[2]->stream_offset, s.starts[3]);
}

TEST(MpaFramer, ResyncBufferIsCapped) {
  Limits limits;
  limits.resync_buffer = 4096;
  Stream s;
  // Octets no FPDU starts in (DDP version 3 everywhere), then two FPDUs.
  s.bytes.assign(20000, 0xFF);
  s.add(write_ulpdu(40, 0x1000, 1));
  s.add(write_ulpdu(40, 0x2000, 2));
  MpaFramer f(limits);
  Recorder r(f, false, true);
  f.start_mid_stream(false, true, r);
  for (std::size_t at = 0; at < 20000; at += 1000) {
    f.feed(at, s.slice(at, at + 1000), at / 1000 + 1, 0, r);
    EXPECT_LE(f.buffered(), limits.resync_buffer);
  }
  EXPECT_GT(r.unframed_octets(), 0u);
  for (const Seen* u : r.of_kind(RawPdu::Kind::unframed))
    EXPECT_EQ(u->error_message, "no FPDU boundary found");
  EXPECT_EQ(r.unframed_octets() + f.buffered(), 20000u);
  f.feed(20000, s.slice(20000, s.bytes.size()), 100, 0, r);
  f.finish(r);
  const auto fpdus = r.of_kind(RawPdu::Kind::fpdu);
  ASSERT_EQ(fpdus.size(), 2u);
  EXPECT_EQ(fpdus[0]->stream_offset, 20000u);
  EXPECT_EQ(fpdus[0]->resync_skipped, 20000u);
  EXPECT_EQ(r.unframed_octets(), 20000u);
}

TEST(MpaFramer, WaitingForTheReplyIsCapped) {
  Limits limits;
  limits.resync_buffer = 1024;
  Stream s = Stream::with_request(false, true);
  for (std::size_t k = 0; k < 10; ++k)
    s.add(write_ulpdu(200));
  MpaFramer f(limits);
  class NoParams : public MpaFramerListener {
   public:
    std::uint64_t unframed = 0;
    std::string why;
    void on_raw_pdu(RawPdu& p) override {
      if (p.kind != RawPdu::Kind::unframed) return;
      unframed += p.raw.size();
      why = p.error->message;
    }
  } r;
  f.feed(0, s.bytes, 1, 0, r);
  EXPECT_EQ(f.buffered(), 0u);
  EXPECT_EQ(r.unframed, s.bytes.size() - s.s0);
  EXPECT_EQ(r.why, "data before the MPA handshake completed");
}

TEST(MpaFramer, NotAnMpaKeyTurnsFramingOff) {
  Stream s;
  s.bytes = pattern(64);
  MpaFramer f(Limits{});
  Recorder r(f, false, true);
  f.feed(0, s.bytes, 1, 0, r);
  EXPECT_EQ(f.state(), MpaFramer::State::off);
  ASSERT_FALSE(r.seen.empty());
  EXPECT_EQ(r.seen[0].kind, RawPdu::Kind::not_mpa);
  EXPECT_EQ(r.seen[0].error_code, "mpa.key-invalid");
}

// ---------------------------------------------------------------------------------------------
// Mid-stream without a CRC setting, and framing that finds no boundary (issue 16)
// ---------------------------------------------------------------------------------------------

// A capture cut inside FPDU 0 of `n`, in one feed from frame 1.
struct Cut {
  Stream s;
  std::size_t from = 0;
};
Cut cut_stream(bool crc, std::size_t n, std::size_t payload = 50) {
  Cut c;
  c.s.crc = crc;
  for (std::size_t k = 0; k < n; ++k)
    c.s.add(write_ulpdu(payload, 0x1000 * (k + 1), static_cast<std::uint8_t>(k)));
  c.from = c.s.starts[0] + 13;
  return c;
}

TEST(MpaFramer, MidStreamWithoutACrcSettingFindsCrcOnFromAMatchingCrc) {
  const Cut c = cut_stream(true, 4);
  MpaFramer f(Limits{});
  Recorder r(f, false, true);
  f.start_mid_stream(false, std::nullopt, r);
  EXPECT_TRUE(f.detecting_crc());
  f.feed(c.from, c.s.slice(c.from, c.s.bytes.size()), 1, 0, r);
  f.finish(r);
  const auto fpdus = r.of_kind(RawPdu::Kind::fpdu);
  ASSERT_EQ(fpdus.size(), 3u);
  EXPECT_EQ(fpdus[0]->stream_offset, c.s.starts[1]);
  EXPECT_EQ(fpdus[0]->crc_detected, std::optional<bool>(true));
  EXPECT_FALSE(fpdus[1]->crc_detected);
  EXPECT_TRUE(f.crc());
  EXPECT_FALSE(f.detecting_crc());
  EXPECT_FALSE(f.lost_framing());
}

TEST(MpaFramer, MidStreamWithoutACrcSettingTakesCrcOffFromAChainOfFpdus) {
  const Cut c = cut_stream(false, 6);
  MpaFramer f(Limits{});
  Recorder r(f, false, false);
  f.start_mid_stream(false, std::nullopt, r);
  // Fed one FPDU at a time: the framer waits for the chain rather than deciding early.
  std::size_t at = c.from;
  for (std::size_t k = 1; k <= c.s.starts.size(); ++k) {
    const std::size_t to = k < c.s.starts.size() ? c.s.starts[k] : c.s.bytes.size();
    f.feed(at, c.s.slice(at, to), k, 0, r);
    at = to;
  }
  f.finish(r);
  const auto fpdus = r.of_kind(RawPdu::Kind::fpdu);
  ASSERT_EQ(fpdus.size(), 5u);
  EXPECT_EQ(fpdus[0]->stream_offset, c.s.starts[1]);
  EXPECT_EQ(fpdus[0]->crc_detected, std::optional<bool>(false));
  EXPECT_FALSE(f.crc());
  EXPECT_EQ(r.unframed_octets(), c.s.starts[1] - c.from);
  EXPECT_FALSE(f.lost_framing());
}

TEST(MpaFramer, MidStreamWithoutACrcSettingDoesNotTakeCrcOffFromOneFpdu) {
  const Cut c = cut_stream(false, 2);  // one whole FPDU after the cut
  MpaFramer f(Limits{});
  Recorder r(f, false, false);
  f.start_mid_stream(false, std::nullopt, r);
  f.feed(c.from, c.s.slice(c.from, c.s.bytes.size()), 7, 0, r);
  f.finish(r);
  EXPECT_TRUE(r.of_kind(RawPdu::Kind::fpdu).empty());
  EXPECT_TRUE(f.detecting_crc());
  const auto lost = f.lost_framing();
  ASSERT_TRUE(lost);
  EXPECT_TRUE(lost->never_framed);
  EXPECT_FALSE(lost->gave_up);
  EXPECT_EQ(lost->octets, c.s.bytes.size() - c.from);
  EXPECT_EQ(lost->frame, 7u);
}

// One FPDU that fills a TCP segment from its first octet to its last is framed at once; the
// same octets starting inside a segment are not enough.
TEST(MpaFramer, MidStreamWithoutACrcSettingTakesCrcOffFromAnFpduFillingASegment) {
  const Cut c = cut_stream(false, 3);
  for (const std::uint32_t offset_in_frame : {0u, 6u}) {
    SCOPED_TRACE("offset in frame " + std::to_string(offset_in_frame));
    MpaFramer f(Limits{});
    Recorder r(f, false, false);
    f.start_mid_stream(false, std::nullopt, r);
    f.feed(c.s.starts[1], c.s.slice(c.s.starts[1], c.s.starts[2]), 4, offset_in_frame, r);
    const auto fpdus = r.of_kind(RawPdu::Kind::fpdu);
    if (offset_in_frame == 0) {
      ASSERT_EQ(fpdus.size(), 1u);
      EXPECT_EQ(fpdus[0]->crc_detected, std::optional<bool>(false));
    } else {
      EXPECT_TRUE(fpdus.empty());
      EXPECT_TRUE(f.detecting_crc());
    }
  }
}

TEST(MpaFramer, AdoptedCrcSettingFramesWhatIsHeld) {
  const Cut c = cut_stream(false, 2);  // one FPDU after the cut: not enough on its own
  MpaFramer f(Limits{});
  Recorder r(f, false, false);
  f.start_mid_stream(false, std::nullopt, r);
  f.feed(c.from, c.s.slice(c.from, c.s.bytes.size()), 2, 0, r);
  EXPECT_TRUE(r.of_kind(RawPdu::Kind::fpdu).empty());
  f.adopt_crc(false, r);  // the other direction found CRC off
  const auto fpdus = r.of_kind(RawPdu::Kind::fpdu);
  ASSERT_EQ(fpdus.size(), 1u);
  EXPECT_EQ(fpdus[0]->stream_offset, c.s.starts[1]);
  EXPECT_EQ(fpdus[0]->crc_detected, std::optional<bool>(false));
  EXPECT_FALSE(f.detecting_crc());
}

TEST(MpaFramer, MidStreamWithTheWrongCrcSettingFindsNoBoundary) {
  for (const bool stream_crc : {false, true}) {
    SCOPED_TRACE(stream_crc ? "CRC on, told off" : "CRC off, told on");
    const Cut c = cut_stream(stream_crc, 6);
    MpaFramer f(Limits{});
    Recorder r(f, false, !stream_crc);
    f.start_mid_stream(false, !stream_crc, r);
    f.feed(c.from, c.s.slice(c.from, c.s.bytes.size()), 3, 0, r);
    f.finish(r);
    EXPECT_TRUE(r.of_kind(RawPdu::Kind::fpdu).empty());
    const auto lost = f.lost_framing();
    ASSERT_TRUE(lost);
    EXPECT_TRUE(lost->never_framed);
    EXPECT_EQ(lost->octets, c.s.bytes.size() - c.from);
    EXPECT_EQ(r.unframed_octets(), lost->octets);
  }
}

TEST(MpaFramer, ResyncBudgetSpentIsWhereFramingGaveUp) {
  Limits l;
  l.resync_buffer = 512;
  const Cut c = cut_stream(false, 1);
  MpaFramer f(l);
  Recorder r(f, false, true);
  f.start_mid_stream(false, true, r);
  std::uint64_t offset = c.from;
  for (std::uint64_t frame = 1; frame <= 20; ++frame) {
    const Bytes noise(100, 0xEE);  // no sane DDP/RDMAP control octets anywhere
    f.feed(offset, noise, frame, 0, r);
    offset += noise.size();
  }
  f.finish(r);
  const auto lost = f.lost_framing();
  ASSERT_TRUE(lost);
  EXPECT_TRUE(lost->gave_up);
  EXPECT_EQ(lost->frame, 6u);  // the frame that took the buffer past 512 octets
  EXPECT_EQ(lost->octets, 2000u);
}

TEST(MpaFramer, FramingFoundAgainOrAShortTailAfterAGapIsNotLost) {
  Stream s = Stream::with_request(false, true);
  for (std::size_t k = 0; k < 4; ++k)
    s.add(write_ulpdu(48, 0x1000 * (k + 1), static_cast<std::uint8_t>(k)));
  {
    SCOPED_TRACE("found again");
    MpaFramer f(Limits{});
    Recorder r(f, false, true);
    const std::size_t lost_from = s.starts[1] + 6;
    f.feed(0, s.slice(0, lost_from), 1, 0, r);
    f.gap(lost_from, 10, r);
    f.feed(lost_from + 10, s.slice(lost_from + 10, s.bytes.size()), 2, 0, r);
    f.finish(r);
    EXPECT_EQ(r.of_kind(RawPdu::Kind::fpdu).size(), 3u);
    EXPECT_FALSE(f.lost_framing());
  }
  {
    SCOPED_TRACE("a short tail");
    MpaFramer f(Limits{});
    Recorder r(f, false, true);
    const std::size_t lost_from = s.starts[3] + 6;
    f.feed(0, s.slice(0, lost_from), 1, 0, r);
    f.gap(lost_from, 10, r);
    f.feed(lost_from + 10, s.slice(lost_from + 10, s.bytes.size()), 2, 0, r);
    f.finish(r);
    EXPECT_EQ(f.state(), MpaFramer::State::resync);
    EXPECT_FALSE(f.lost_framing());
  }
}

}  // namespace
}  // namespace ddpscope
