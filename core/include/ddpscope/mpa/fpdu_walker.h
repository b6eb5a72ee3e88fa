// SPDX-License-Identifier: GPL-2.0-or-later
// The FPDU walker (RFC 5044 §4): finds the one complete FPDU at the start of a run of raw
// stream octets of one direction, taking out the markers (§4.3) that sit at every 512th octet
// from S0, and computes its CRC32C (§4.2) under both marker conventions. Stateless; the MPA
// framer (analysis), the endpoint session and, through the framer, the plugin all frame with it.
//
// A marker in front of an FPDU header is read two ways (wire::MarkerConvention): as the FPDU's
// first octet, covered by the CRC, later FPDUPTRs counting from it; or, literally, outside the
// FPDU, FPDUPTRs counting from the ULPDU_Length field. The walker reports both CRCs and
// fpduptr_fit() both readings; callers accept what fits either.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "ddpscope/common/bytes.h"
#include "ddpscope/common/crc32c.h"
#include "ddpscope/wire/mpa.h"

namespace ddpscope::mpa {

struct FpduWalkParams {
  // Stream position of raw[0] relative to S0, the first octet after this direction's MPA
  // Request or Reply. Used only with markers.
  std::uint64_t stream_pos = 0;
  bool markers = false;  // the sender inserts markers (RFC 5044 §4.3)
  bool crc = false;      // compute crc_all / crc_no_lead (both stay 0 otherwise)
};

enum class WalkStatus : std::uint8_t { complete, need_more };

struct FpduWalk {
  std::uint64_t stream_pos = 0;  // of raw[0] (the FPDU's first octet, a leading marker included)
  // Raw octets of the FPDU on the wire, markers included. With need_more: the octets a complete
  // FPDU needs, exact once ulpdu_length is known, before that a lower bound.
  std::size_t raw_length = 0;
  // The ULPDU_Length field; set with need_more too once its octets are present.
  std::optional<std::uint16_t> ulpdu_length;
  // ULPDU_Length, ULPDU, pad and CRC field without markers: a view into raw when no marker
  // falls inside them, else into the caller's scratch storage. Empty with need_more.
  ByteView plain;
  bool leading_marker = false;  // raw[0] is a marker directly in front of the header
  // Every marker among the raw octets, in order (a leading marker first), and its raw offset.
  std::vector<wire::Marker> markers;
  std::vector<std::size_t> marker_offsets;
  std::size_t crc_offset = 0;   // raw offset of the CRC field's first octet
  std::uint32_t crc_field = 0;  // the CRC as sent (standard value, read LSB first)
  // CRC32C over raw[0, crc_offset): everything before the CRC field, every marker among it
  // and a leading marker included (leading_marker_in_fpdu convention).
  std::uint32_t crc_all = 0;
  // The same without a leading marker (literal convention); equals crc_all when none leads.
  std::uint32_t crc_no_lead = 0;

  ByteView ulpdu() const { return plain.subspan(wire::kMpaLengthSize, *ulpdu_length); }
  // The CRC field fits either convention.
  bool crc_matches() const { return crc_field == crc_all || crc_field == crc_no_lead; }
};

// walk_fpdu with markers (out of line).
WalkStatus walk_fpdu_marked(ByteView raw, const FpduWalkParams& params, Bytes& scratch,
                            FpduWalk& out);

namespace detail {
// Every field of `out` as a walk starts it (its vectors keep their storage).
inline void reset_walk(const FpduWalkParams& params, FpduWalk& out) {
  out.stream_pos = params.stream_pos;
  out.raw_length = 0;
  out.ulpdu_length.reset();
  out.plain = {};
  out.leading_marker = false;
  out.markers.clear();
  out.marker_offsets.clear();
  out.crc_offset = 0;
  out.crc_field = 0;
  out.crc_all = 0;
  out.crc_no_lead = 0;
}
}  // namespace detail

// Walks the FPDU at raw[0]. Markers sit where (stream_pos + offset) % 512 == 0; a marker at
// raw[0] leads the FPDU. A marker due right after the CRC field belongs to the next FPDU and is
// not part of this one. No ULPDU_Length is rejected here (too short for a DDP header is the
// caller's rule). `out` is overwritten; its vectors keep their storage. Inline: without markers
// (most streams) the FPDU is its raw octets, taken without a call but the CRC's.
[[gnu::always_inline]] inline WalkStatus walk_fpdu(ByteView raw, const FpduWalkParams& params,
                                                   Bytes& scratch, FpduWalk& out) {
  if (params.markers) return walk_fpdu_marked(raw, params, scratch, out);
  detail::reset_walk(params, out);
  if (raw.size() < wire::kMpaLengthSize) {
    out.raw_length = wire::kMpaLengthSize;
    return WalkStatus::need_more;
  }
  const std::uint16_t len = load_be16(raw.data());
  out.ulpdu_length = len;
  const std::size_t total = wire::fpdu_size(len);
  out.raw_length = total;
  out.crc_offset = total - wire::kMpaCrcSize;
  if (raw.size() < total) return WalkStatus::need_more;
  out.plain = raw.first(total);
  out.crc_field = mpa_crc_from_wire(&raw[out.crc_offset]);
  if (params.crc) {
    out.crc_all = crc32c(raw.first(out.crc_offset));
    out.crc_no_lead = out.crc_all;
  }
  return WalkStatus::complete;
}

// Copies the first head.size() octets of the FPDU at raw[0] without markers (the ULPDU_Length
// field first; a leading marker skipped). False when raw ends before them.
bool peek_fpdu_head(ByteView raw, std::uint64_t stream_pos, bool markers,
                    std::span<std::uint8_t> head);

// Which reading of a leading marker a marker's FPDUPTR fits (RFC 5044 §4.3: FPDUPTR is the
// distance back to the FPDU). `fpdu_start` is the FPDU's first octet, a leading marker
// included. Without a leading marker both readings agree.
struct FpduptrFit {
  bool leading_marker_in_fpdu = false;  // FPDUPTR == stream_pos - fpdu_start
  bool literal = false;                 // FPDUPTR == distance back to the ULPDU_Length field
  bool any() const { return leading_marker_in_fpdu || literal; }
};
FpduptrFit fpduptr_fit(const wire::Marker& marker, std::uint64_t fpdu_start, bool leading_marker);

// Every marker inside the FPDU points back at its start under either convention (a leading
// marker aside: its FPDUPTR names the header right behind it, and the analyzer judges it). A Data
// Sink that finds otherwise sends Terminate LLP/MPA 0x03 (marker mismatch).
bool fpduptrs_point_at_start(const FpduWalk& walk);

}  // namespace ddpscope::mpa
