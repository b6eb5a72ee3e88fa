// SPDX-License-Identifier: GPL-2.0-or-later
#include "ddpscope/mpa/fpdu_walker.h"

#include <algorithm>
#include <cstring>

#include "ddpscope/common/crc32c.h"

namespace ddpscope::mpa {

using wire::kMpaCrcSize;
using wire::kMpaLengthSize;
using wire::kMpaMarkerInterval;
using wire::kMpaMarkerSize;

namespace {

// Lays `n` demarkered octets out on the wire from raw offset `i` on (raw[0] at stream position
// `pos0`): calls run(raw_offset, plain_offset, length) for each run of plain octets and
// marker(raw_offset) for each marker among them. Pure arithmetic: it reads no octet, so it also
// says how many raw octets a complete FPDU needs. Returns the raw offset after the last octet.
template <class Run, class Mark>
std::size_t lay_out(std::uint64_t pos0, bool markers, std::size_t i, std::size_t n, Run&& run,
                    Mark&& marker) {
  if (!markers) {
    if (n > 0) run(i, std::size_t{0}, n);
    return i + n;
  }
  std::size_t got = 0;
  while (got < n) {
    const std::uint64_t rel = (pos0 + i) % kMpaMarkerInterval;
    if (rel == 0) {
      marker(i);
      i += kMpaMarkerSize;
      continue;
    }
    const std::size_t chunk =
        static_cast<std::size_t>(std::min<std::uint64_t>(n - got, kMpaMarkerInterval - rel));
    run(i, got, chunk);
    i += chunk;
    got += chunk;
  }
  return i;
}

constexpr auto kNoRun = [](std::size_t, std::size_t, std::size_t) {};
constexpr auto kNoMarker = [](std::size_t) {};

wire::Marker marker_at(ByteView raw, std::size_t off, std::uint64_t stream_pos) {
  wire::Marker m;
  m.stream_pos = stream_pos + off;
  m.reserved = load_be16(&raw[off]);
  m.fpduptr = load_be16(&raw[off + 2]);
  return m;
}

// Copies `n` demarkered octets from raw offset `i` into `dst` (raw holds them all).
void gather(ByteView raw, std::uint64_t pos0, bool markers, std::size_t i, std::size_t n,
            std::uint8_t* dst) {
  lay_out(
      pos0, markers, i, n,
      [&](std::size_t r, std::size_t p, std::size_t len) { std::memcpy(dst + p, &raw[r], len); },
      kNoMarker);
}

}  // namespace

WalkStatus walk_fpdu_marked(ByteView raw, const FpduWalkParams& params, Bytes& scratch,
                            FpduWalk& out) {
  detail::reset_walk(params, out);
  const bool markers = true;  // walk_fpdu takes the FPDUs without them
  const std::uint64_t pos0 = params.stream_pos;
  std::size_t head = 0;  // raw offset of the ULPDU_Length field
  if (wire::is_marker_position(pos0)) {
    out.leading_marker = true;
    head = kMpaMarkerSize;
  }

  // ULPDU_Length, which may itself be cut by a marker when the FPDU starts unaligned.
  const std::size_t after_length = lay_out(pos0, markers, head, kMpaLengthSize, kNoRun, kNoMarker);
  if (raw.size() < after_length) {
    out.raw_length = after_length;
    return WalkStatus::need_more;
  }
  std::uint8_t len_field[kMpaLengthSize];
  gather(raw, pos0, markers, head, kMpaLengthSize, len_field);
  const std::uint16_t len = load_be16(len_field);
  out.ulpdu_length = len;

  const std::size_t total = wire::fpdu_size(len);
  const std::size_t crc_plain = total - kMpaCrcSize;
  const std::size_t end = lay_out(
      pos0, markers, head, total,
      [&](std::size_t r, std::size_t p, std::size_t n) {
        if (p <= crc_plain && crc_plain < p + n) out.crc_offset = r + (crc_plain - p);
      },
      kNoMarker);
  out.raw_length = end;
  if (raw.size() < end) return WalkStatus::need_more;

  if (out.leading_marker) {
    out.markers.push_back(marker_at(raw, 0, pos0));
    out.marker_offsets.push_back(0);
  }
  if (end - head == total) {
    out.plain = raw.subspan(head, total);  // no marker inside: no copy
  } else {
    scratch.resize(total);
    std::uint8_t* dst = scratch.data();
    lay_out(
        pos0, markers, head, total,
        [&](std::size_t r, std::size_t p, std::size_t n) { std::memcpy(dst + p, &raw[r], n); },
        [&](std::size_t r) {
          out.markers.push_back(marker_at(raw, r, pos0));
          out.marker_offsets.push_back(r);
        });
    out.plain = ByteView(scratch).first(total);
  }
  out.crc_field = mpa_crc_from_wire(&out.plain[crc_plain]);
  if (params.crc) {
    out.crc_all = crc32c(raw.first(out.crc_offset));
    out.crc_no_lead =
        out.leading_marker ? crc32c(raw.subspan(head, out.crc_offset - head)) : out.crc_all;
  }
  return WalkStatus::complete;
}

bool peek_fpdu_head(ByteView raw, std::uint64_t stream_pos, bool markers,
                    std::span<std::uint8_t> head) {
  const std::size_t start = markers && wire::is_marker_position(stream_pos) ? kMpaMarkerSize : 0;
  if (lay_out(stream_pos, markers, start, head.size(), kNoRun, kNoMarker) > raw.size())
    return false;
  gather(raw, stream_pos, markers, start, head.size(), head.data());
  return true;
}

FpduptrFit fpduptr_fit(const wire::Marker& marker, std::uint64_t fpdu_start, bool leading_marker) {
  const std::uint64_t from_start = marker.stream_pos - fpdu_start;
  const std::uint64_t from_header = leading_marker ? from_start - kMpaMarkerSize : from_start;
  FpduptrFit fit;
  fit.leading_marker_in_fpdu = marker.fpduptr == from_start;
  fit.literal = marker.fpduptr == from_header;
  return fit;
}

bool fpduptrs_point_at_start(const FpduWalk& walk) {
  for (std::size_t k = walk.leading_marker ? 1 : 0; k < walk.markers.size(); ++k) {
    if (!fpduptr_fit(walk.markers[k], walk.stream_pos, walk.leading_marker).any()) return false;
  }
  return true;
}

}  // namespace ddpscope::mpa
