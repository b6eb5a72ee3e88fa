// SPDX-License-Identifier: GPL-2.0-or-later
// MPA codecs: Request/Reply frames (RFC 5044 §7.1, RFC 6581 §5), FPDUs (RFC 5044 §4.1, §4.2),
// markers (RFC 5044 §4.3) and MULPDU (RFC 5044 §8).
#include <algorithm>
#include <cstdint>
#include <string>

#include "ddpscope/common/crc32c.h"
#include "ddpscope/wire/mpa.h"
#include "ddpscope/wire/rdmap.h"

namespace ddpscope::wire {

namespace {

bool is_prefix_of(ByteView data, std::string_view key) {
  const std::size_t n = std::min(data.size(), key.size());
  for (std::size_t i = 0; i < n; ++i) {
    if (data[i] != static_cast<std::uint8_t>(key[i])) return false;
  }
  return true;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Request / Reply
// ---------------------------------------------------------------------------------------------

ByteView MpaReqRep::ulp_private_data() const {
  ByteView pd{private_data};
  if (enhanced_pd && pd.size() >= MpaEnhancedPd::kSize) return pd.subspan(MpaEnhancedPd::kSize);
  return pd;
}

std::uint8_t MpaReqRep::flags_byte() const {
  std::uint8_t f = reserved & kMpaFlagReservedMask;
  if (markers) f |= kMpaFlagMarkers;
  if (crc) f |= kMpaFlagCrc;
  if (reject) f |= kMpaFlagReject;
  if (enhanced) f |= kMpaFlagEnhanced;
  return f;
}

bool could_be_mpa_key(ByteView data) {
  return is_prefix_of(data, kMpaRequestKey) || is_prefix_of(data, kMpaReplyKey);
}

std::uint16_t MpaEnhancedPd::ird_word() const {
  std::uint16_t w = ird & kMpaEnhancedIrdOrdMask;
  if (peer_to_peer) w |= kMpaEnhancedPeerToPeer;
  if (zero_length_send_rtr) w |= kMpaEnhancedSendRtr;
  return w;
}

std::uint16_t MpaEnhancedPd::ord_word() const {
  std::uint16_t w = ord & kMpaEnhancedIrdOrdMask;
  if (zero_length_write_rtr) w |= kMpaEnhancedWriteRtr;
  if (zero_length_read_rtr) w |= kMpaEnhancedReadRtr;
  return w;
}

MpaEnhancedPd MpaEnhancedPd::from_words(std::uint16_t ird_word, std::uint16_t ord_word) {
  MpaEnhancedPd pd;
  pd.peer_to_peer = (ird_word & kMpaEnhancedPeerToPeer) != 0;
  pd.zero_length_send_rtr = (ird_word & kMpaEnhancedSendRtr) != 0;
  pd.ird = ird_word & kMpaEnhancedIrdOrdMask;
  pd.zero_length_write_rtr = (ord_word & kMpaEnhancedWriteRtr) != 0;
  pd.zero_length_read_rtr = (ord_word & kMpaEnhancedReadRtr) != 0;
  pd.ord = ord_word & kMpaEnhancedIrdOrdMask;
  return pd;
}

static_assert(mpa_enhanced_field::ord_word.end() == MpaEnhancedPd::kSize);

MpaEnhancedPd decode_mpa_enhanced_pd(const std::uint8_t* p) {
  return MpaEnhancedPd::from_words(load_be16(p + mpa_enhanced_field::ird_word.offset),
                                   load_be16(p + mpa_enhanced_field::ord_word.offset));
}

// The encoder appends the halves in table order.
static_assert(mpa_enhanced_field::ird_word.end() == mpa_enhanced_field::ord_word.offset);

void encode_mpa_enhanced_pd(const MpaEnhancedPd& pd, ByteWriter& out) {
  out.be16(pd.ird_word());
  out.be16(pd.ord_word());
}

Result<MpaReqRep> decode_mpa_reqrep(ByteView data) {
  if (!could_be_mpa_key(data)) {
    return Result<MpaReqRep>::malformed("mpa.key-invalid", 0, "not an MPA Request or Reply key");
  }
  if (data.size() < kMpaReqRepHeaderSize) {
    return Result<MpaReqRep>::need_more(kMpaReqRepHeaderSize);
  }
  namespace field = mpa_reqrep_field;
  MpaReqRep f;
  f.kind = is_prefix_of(data.subspan(field::key.offset, field::key.size), kMpaRequestKey)
               ? MpaFrameKind::request
               : MpaFrameKind::reply;
  const std::uint8_t flags = data[field::flags.offset];
  f.markers = (flags & kMpaFlagMarkers) != 0;
  f.crc = (flags & kMpaFlagCrc) != 0;
  f.reject = (flags & kMpaFlagReject) != 0;
  f.enhanced = (flags & kMpaFlagEnhanced) != 0;
  f.reserved = flags & kMpaFlagReservedMask;
  f.revision = data[field::revision.offset];
  const std::uint16_t pd_length = load_be16(data.data() + field::pd_length.offset);
  const std::size_t total = field::private_data + pd_length;
  if (data.size() < total) return Result<MpaReqRep>::need_more(total);
  const ByteView pd = data.subspan(field::private_data, pd_length);
  f.private_data.assign(pd.begin(), pd.end());
  if (f.revision == 2 && f.enhanced && pd.size() >= MpaEnhancedPd::kSize) {
    f.enhanced_pd = decode_mpa_enhanced_pd(pd.data());
  }
  return Result<MpaReqRep>::ok(std::move(f), total);
}

// The encoder appends the fields in table order.
static_assert(mpa_reqrep_field::key.end() == mpa_reqrep_field::flags.offset &&
              mpa_reqrep_field::flags.end() == mpa_reqrep_field::revision.offset &&
              mpa_reqrep_field::revision.end() == mpa_reqrep_field::pd_length.offset &&
              mpa_reqrep_field::pd_length.end() == mpa_reqrep_field::private_data);

Bytes encode_mpa_reqrep(const MpaReqRep& frame) {
  Bytes out;
  const std::size_t pd_length =
      frame.private_data.size() + (frame.enhanced_pd ? MpaEnhancedPd::kSize : 0);
  out.reserve(kMpaReqRepHeaderSize + pd_length);
  ByteWriter w(out);
  const std::string_view key = frame.kind == MpaFrameKind::request ? kMpaRequestKey : kMpaReplyKey;
  for (char c : key)
    w.u8(static_cast<std::uint8_t>(c));
  w.u8(frame.flags_byte());
  w.u8(frame.revision);
  w.be16(static_cast<std::uint16_t>(pd_length));
  if (frame.enhanced_pd) encode_mpa_enhanced_pd(*frame.enhanced_pd, w);
  w.bytes(frame.private_data);
  return out;
}

// ---------------------------------------------------------------------------------------------
// FPDU and MULPDU
// ---------------------------------------------------------------------------------------------

std::uint32_t mulpdu(std::uint32_t emss, bool markers) {
  const std::int64_t e = emss;
  std::int64_t overhead = 6 + e % 4;
  if (markers) overhead += 4 * ((e + kMpaMarkerInterval - 1) / kMpaMarkerInterval);
  const std::int64_t m = e - overhead;
  return m > 0 ? static_cast<std::uint32_t>(m) : 0;
}

Result<Fpdu> decode_fpdu(ByteView data) {
  if (data.size() < kMpaLengthSize) return Result<Fpdu>::need_more(kMpaLengthSize);
  Fpdu f;
  f.ulpdu_length = load_be16(data.data() + fpdu_field::ulpdu_length.offset);
  const std::size_t total = fpdu_size(f.ulpdu_length);
  if (data.size() < total) return Result<Fpdu>::need_more(total);
  f.ulpdu = data.subspan(fpdu_field::ulpdu, f.ulpdu_length);
  f.pad = data.subspan(fpdu_pad_offset(f.ulpdu_length), fpdu_pad(f.ulpdu_length));
  const std::size_t crc_at = fpdu_crc_offset(f.ulpdu_length);
  f.crc_field = mpa_crc_from_wire(data.data() + crc_at);
  f.crc_computed = crc32c(data.first(crc_at));
  return Result<Fpdu>::ok(f, total);
}

std::string_view to_string(MarkerConvention c) {
  switch (c) {
    case MarkerConvention::leading_marker_in_fpdu:
      return "leading_marker_in_fpdu";
    case MarkerConvention::literal:
      return "literal";
  }
  return "unknown";
}

namespace {

// Writes FPDU octets at successive stream positions, inserting a marker first whenever the
// next octet falls on a 512-octet boundary (RFC 5044 §4.3).
class MarkedWriter {
 public:
  MarkedWriter(Bytes& out, bool markers, std::uint64_t pos, std::uint64_t pointer_base)
      : out_(out), markers_(markers), pos_(pos), base_(pointer_base) {}

  // Emits a marker when one is due at the current position. `covered` feeds it to the CRC.
  void marker_if_due(bool covered) {
    if (!markers_ || !is_marker_position(pos_)) return;
    // A marker in front of the header (pos_ < base_) points at it: FPDUPTR 0.
    const std::uint64_t ptr = pos_ > base_ ? pos_ - base_ : 0;
    std::uint8_t m[kMpaMarkerSize] = {0, 0, 0, 0};  // reserved octets zero
    m[marker_field::fpduptr.offset] = static_cast<std::uint8_t>(ptr >> 8);
    m[marker_field::fpduptr.offset + 1] = static_cast<std::uint8_t>(ptr);
    out_.insert(out_.end(), m, m + kMpaMarkerSize);
    if (covered) crc_.update(ByteView{m, kMpaMarkerSize});
    pos_ += kMpaMarkerSize;
  }
  void octet(std::uint8_t b, bool covered) {
    out_.push_back(b);
    if (covered) crc_.update(ByteView{&b, 1});
    ++pos_;
  }
  // Octets covered by the CRC, each run up to the next marker position at once (an octet at a
  // time, the CRC's call per octet was most of an FPDU's encoding).
  void run(ByteView octets) {
    while (!octets.empty()) {
      marker_if_due(true);
      std::size_t n = octets.size();
      if (markers_) {
        n = std::min<std::uint64_t>(n, kMpaMarkerInterval - pos_ % kMpaMarkerInterval);
      }
      out_.insert(out_.end(), octets.begin(), octets.begin() + static_cast<std::ptrdiff_t>(n));
      crc_.update(octets.first(n));
      pos_ += n;
      octets = octets.subspan(n);
    }
  }
  std::uint32_t crc() const { return crc_.value(); }

 private:
  Bytes& out_;
  bool markers_;
  std::uint64_t pos_;
  std::uint64_t base_;
  Crc32c crc_;
};

}  // namespace

Bytes encode_fpdu(ByteView ulpdu, const FpduEncodeOptions& options) {
  const std::size_t length = ulpdu.size();
  Bytes body;  // ULPDU_Length + ULPDU + pad, marker-free
  body.reserve(fpdu_size(length));
  ByteWriter w(body);
  w.be16(static_cast<std::uint16_t>(length));
  w.bytes(ulpdu);
  w.zeros(fpdu_pad(length));

  Bytes out;
  out.reserve(body.size() + kMpaCrcSize +
              (options.markers ? kMpaMarkerSize * (2 + body.size() / kMpaMarkerInterval) : 0));
  const bool leading = options.markers && is_marker_position(options.stream_pos);
  // FPDUPTR reference point: the FPDU's first octet (leading marker included) or, literally,
  // the ULPDU_Length field.
  const std::uint64_t base = (leading && options.convention == MarkerConvention::literal)
                                 ? options.stream_pos + kMpaMarkerSize
                                 : options.stream_pos;
  MarkedWriter mw(out, options.markers, options.stream_pos, base);
  if (leading) mw.marker_if_due(options.convention == MarkerConvention::leading_marker_in_fpdu);
  mw.run(body);
  // A marker between PAD and CRC is inside the FPDU and covered by its CRC.
  mw.marker_if_due(true);
  std::uint8_t crc[kMpaCrcSize] = {0, 0, 0, 0};
  if (options.crc) mpa_crc_to_wire(mw.crc(), crc);
  mw.octet(crc[0], false);
  for (std::size_t i = 1; i < kMpaCrcSize; ++i) {
    // A marker inside the CRC field itself cannot be covered by that CRC (it is computed
    // before the field is written); our convention leaves it out.
    mw.marker_if_due(false);
    mw.octet(crc[i], false);
  }
  // The marker due right after the last CRC octet belongs to the next FPDU: not emitted.
  return out;
}

MarkerSplit strip_markers(ByteView data, std::uint64_t stream_pos) {
  MarkerSplit s;
  s.payload.reserve(data.size());
  std::size_t i = 0;
  // data[0] may sit inside a marker that began before it.
  const std::uint64_t into = stream_pos % kMpaMarkerInterval;
  if (into != 0 && into < kMpaMarkerSize) {
    s.skipped_marker_octets =
        std::min<std::size_t>(data.size(), static_cast<std::size_t>(kMpaMarkerSize - into));
    i = s.skipped_marker_octets;
  }
  while (i < data.size()) {
    const std::uint64_t pos = stream_pos + i;
    if (is_marker_position(pos)) {
      if (data.size() - i < kMpaMarkerSize) {
        s.cut_marker_octets = data.size() - i;
        break;
      }
      Marker m;
      m.stream_pos = pos;
      m.reserved = load_be16(&data[i + marker_field::reserved.offset]);
      m.fpduptr = load_be16(&data[i + marker_field::fpduptr.offset]);
      s.markers.push_back(m);
      i += kMpaMarkerSize;
      continue;
    }
    // Copy up to the next marker position in one go.
    const std::uint64_t to_next = kMpaMarkerInterval - pos % kMpaMarkerInterval;
    const std::size_t n = static_cast<std::size_t>(
        std::min<std::uint64_t>(to_next, static_cast<std::uint64_t>(data.size() - i)));
    s.payload.insert(s.payload.end(), data.begin() + static_cast<std::ptrdiff_t>(i),
                     data.begin() + static_cast<std::ptrdiff_t>(i + n));
    i += n;
  }
  return s;
}

}  // namespace ddpscope::wire
