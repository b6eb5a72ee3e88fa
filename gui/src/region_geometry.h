// SPDX-License-Identifier: GPL-2.0-or-later
// Region map geometry: placed ranges of one shadow buffer -> pixel spans with a kind.
// Pure functions (no Qt), so tests can call them with constructed ranges. Level of detail:
// every range is accumulated into the pixel columns it touches in O(1) (difference arrays),
// then equal neighbouring columns are merged, so 100,000 ranges cost O(ranges + width).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <utility>
#include <vector>

#include "ddpscope/ddp/shadow.h"

namespace ddpscope::gui {

enum class SpanKind : std::uint8_t {
  hole,     // no octet of the column was placed
  partial,  // some octets placed, some not (a hole narrower than a pixel)
  placed,   // every octet placed, no issue
  // Octets placed again, as core's ShadowBuffer classifies them (ddp/shadow.h):
  rewritten,  // new content after their message was delivered: buffer reuse, normal
  overlap,    // the same content again (a retransmission)
  conflict,   // different content while their message was in flight
  violation,  // outside the region's known bounds
};
const char* to_string(SpanKind k);

struct MapSpan {
  int x0 = 0;  // first pixel column
  int x1 = 0;  // one past the last
  SpanKind kind = SpanKind::hole;
  int opcode = -1;  // dominant opcode of the placed octets, -1 when none known
  bool operator==(const MapSpan&) const = default;
};

// What the geometry needs from a shadow buffer.
struct RegionGeometryInput {
  std::optional<std::uint64_t> base;  // known bounds
  std::optional<std::uint64_t> length;
  // Octets outside known bounds are violations only when the bounds are enforced (bounds
  // learned from a Read Request describe one transfer: shown, not enforced).
  bool bounds_enforced = true;
  std::span<const PlacedRange> ranges;
  // Coalesced placed extents [begin, end) (ShadowBuffer::extents()); computed from `ranges`
  // when null (the buffer's range list may be capped while its extents are complete).
  const std::map<std::uint64_t, std::uint64_t>* extents = nullptr;
  // Bounds violations cover at least this many pixel columns (centred on the octets, within
  // the width), so a 64-octet violation stays visible on a 16 MiB region. 0: exact.
  int min_violation_px = 0;
};

RegionGeometryInput geometry_input(const ShadowBuffer& buf);

// Coalesces ranges into non-overlapping extents.
std::map<std::uint64_t, std::uint64_t> coalesce(std::span<const PlacedRange> ranges);

// The octets the bar spans: the known bounds joined with the observed extent
// [min begin, max end). {0, 0} for an empty region without bounds.
std::pair<std::uint64_t, std::uint64_t> region_domain(const RegionGeometryInput& in);

// Lays out the view [view_begin, view_end) over `width` pixel columns. Column i covers the
// octets [view_begin + i*span/width, view_begin + (i+1)*span/width) (exact rational maths).
// Priority within a column: violation > conflict > overlap > placed/partial/hole.
std::vector<MapSpan> layout_region(const RegionGeometryInput& in, std::uint64_t view_begin,
                                   std::uint64_t view_end, int width);

// The octets [first, last) that pixel column `x` covers (at least one octet).
std::pair<std::uint64_t, std::uint64_t> column_octets(std::uint64_t view_begin,
                                                      std::uint64_t view_end, int width, int x);
// Pixel column of octet `to` (may be outside [0, width)).
double octet_to_x(std::uint64_t view_begin, std::uint64_t view_end, int width, std::uint64_t to);

// Indices of ranges intersecting [begin, end), in arrival order, at most `max`.
std::vector<std::size_t> ranges_at(std::span<const PlacedRange> ranges, std::uint64_t begin,
                                   std::uint64_t end, std::size_t max = 32);

}  // namespace ddpscope::gui
