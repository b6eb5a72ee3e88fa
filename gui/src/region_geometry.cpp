// SPDX-License-Identifier: GPL-2.0-or-later
#include "region_geometry.h"

#include <algorithm>
#include <array>

namespace ddpscope::gui {
namespace {

using i128 = __int128;

// Accumulates intervals into columns in scaled units: octet x maps to (x - vb) * width, and
// column i spans [i * span, (i + 1) * span). Everything is an exact integer.
struct Columns {
  std::uint64_t vb = 0;
  std::uint64_t ve = 0;
  int width = 0;
  i128 span = 1;

  // Clips [a, b) to the view; false when nothing is left. c0/c1: first/last column touched.
  bool clip(std::uint64_t a, std::uint64_t b, i128& A, i128& B, int& c0, int& c1) const {
    a = std::max(a, vb);
    b = std::min(b, ve);
    if (a >= b) return false;
    A = static_cast<i128>(a - vb) * width;
    B = static_cast<i128>(b - vb) * width;
    c0 = static_cast<int>(A / span);
    c1 = static_cast<int>((B - 1) / span);
    return true;
  }
};

// Covered amount per column: partial ends plus a difference array of full columns.
struct Coverage {
  std::vector<i128> partial;
  std::vector<std::int64_t> full_diff;
  explicit Coverage(int w) : partial(static_cast<std::size_t>(w), 0), full_diff(w + 1, 0) {}
  void add(const Columns& c, std::uint64_t a, std::uint64_t b) {
    i128 A, B;
    int c0, c1;
    if (!c.clip(a, b, A, B, c0, c1)) return;
    if (c0 == c1) {
      partial[c0] += B - A;
      return;
    }
    partial[c0] += static_cast<i128>(c0 + 1) * c.span - A;
    partial[c1] += B - static_cast<i128>(c1) * c.span;
    if (c1 > c0 + 1) {
      full_diff[c0 + 1] += 1;
      full_diff[c1] -= 1;
    }
  }
  // Covered amount of each column in scaled units (span = whole column).
  std::vector<i128> totals(i128 span) const {
    std::vector<i128> out(partial.size());
    std::int64_t run = 0;
    for (std::size_t i = 0; i < partial.size(); ++i) {
      run += full_diff[i];
      out[i] = partial[i] + static_cast<i128>(run) * span;
    }
    return out;
  }
};

// Number of intervals touching each column.
struct Touches {
  std::vector<std::int64_t> diff;
  int min_cols = 1;
  explicit Touches(int w, int min = 1) : diff(w + 1, 0), min_cols(std::clamp(min, 1, w)) {}
  void add(const Columns& c, std::uint64_t a, std::uint64_t b) {
    i128 A, B;
    int c0, c1;
    if (!c.clip(a, b, A, B, c0, c1)) return;
    if (c1 - c0 + 1 < min_cols) {  // widen around the middle, inside [0, width)
      const int w = c.width;
      c0 = std::max(0, (c0 + c1 + 1) / 2 - min_cols / 2);
      c1 = c0 + min_cols - 1;
      if (c1 >= w) {
        c1 = w - 1;
        c0 = w - min_cols;
      }
    }
    diff[c0] += 1;
    diff[c1 + 1] -= 1;
  }
  std::vector<bool> any() const {
    std::vector<bool> out(diff.size() - 1);
    std::int64_t run = 0;
    for (std::size_t i = 0; i + 1 < diff.size(); ++i) {
      run += diff[i];
      out[i] = run > 0;
    }
    return out;
  }
};

constexpr int kOpcodes = 16;

}  // namespace

const char* to_string(SpanKind k) {
  switch (k) {
    case SpanKind::hole:
      return "hole";
    case SpanKind::partial:
      return "partial";
    case SpanKind::placed:
      return "placed";
    case SpanKind::rewritten:
      return "rewritten";
    case SpanKind::overlap:
      return "overlap";
    case SpanKind::conflict:
      return "conflict";
    case SpanKind::violation:
      return "violation";
  }
  return "?";
}

RegionGeometryInput geometry_input(const ShadowBuffer& buf) {
  RegionGeometryInput in;
  in.base = buf.base;
  in.length = buf.length;
  in.bounds_enforced = buf.bounds_enforced;
  in.ranges = buf.ranges();
  in.extents = &buf.extents();
  return in;
}

std::map<std::uint64_t, std::uint64_t> coalesce(std::span<const PlacedRange> ranges) {
  std::vector<std::pair<std::uint64_t, std::uint64_t>> v;
  v.reserve(ranges.size());
  for (const auto& r : ranges)
    if (r.end > r.begin) v.emplace_back(r.begin, r.end);
  std::sort(v.begin(), v.end());
  std::map<std::uint64_t, std::uint64_t> out;
  for (const auto& [b, e] : v) {
    if (!out.empty()) {
      auto last = std::prev(out.end());
      if (b <= last->second) {
        last->second = std::max(last->second, e);
        continue;
      }
    }
    out.emplace(b, e);
  }
  return out;
}

std::pair<std::uint64_t, std::uint64_t> region_domain(const RegionGeometryInput& in) {
  std::uint64_t lo = UINT64_MAX, hi = 0;
  if (in.base && in.length) {
    lo = *in.base;
    hi = *in.base + *in.length;
    if (hi < lo) hi = UINT64_MAX;  // wraps: clamp
  }
  for (const auto& r : in.ranges) {
    lo = std::min(lo, r.begin);
    hi = std::max(hi, r.end);
  }
  if (in.extents && !in.extents->empty()) {
    lo = std::min(lo, in.extents->begin()->first);
    hi = std::max(hi, std::prev(in.extents->end())->second);
  }
  if (lo >= hi) return {0, 0};
  return {lo, hi};
}

std::vector<MapSpan> layout_region(const RegionGeometryInput& in, std::uint64_t view_begin,
                                   std::uint64_t view_end, int width) {
  std::vector<MapSpan> spans;
  if (width <= 0 || view_end <= view_begin) return spans;
  Columns cols{view_begin, view_end, width, static_cast<i128>(view_end - view_begin)};

  std::map<std::uint64_t, std::uint64_t> own_extents;
  const auto* extents = in.extents;
  if (!extents) {
    own_extents = coalesce(in.ranges);
    extents = &own_extents;
  }
  const bool bounded = in.base && in.length;
  const std::uint64_t lo = bounded ? *in.base : 0;
  const std::uint64_t hi = bounded ? *in.base + *in.length : UINT64_MAX;

  Coverage coverage(width);
  Touches rewritten(width), overlap(width), conflict(width), violation(width, in.min_violation_px);
  // Start at the last extent beginning at or before the view.
  auto it = extents->upper_bound(view_begin);
  if (it != extents->begin()) --it;
  for (; it != extents->end() && it->first < view_end; ++it) {
    coverage.add(cols, it->first, it->second);
    if (bounded && in.bounds_enforced) {  // octets outside the known bounds
      if (it->first < lo) violation.add(cols, it->first, std::min(it->second, lo));
      if (it->second > hi) violation.add(cols, std::max(it->first, hi), it->second);
    }
  }
  std::array<std::vector<double>, kOpcodes> op_partial;
  std::array<std::vector<double>, kOpcodes> op_diff;
  for (int o = 0; o < kOpcodes; ++o) {
    op_partial[o].assign(width, 0.0);
    op_diff[o].assign(width + 1, 0.0);
  }
  for (const auto& r : in.ranges) {
    i128 A, B;
    int c0, c1;
    if (!cols.clip(r.begin, r.end, A, B, c0, c1)) continue;
    const int o = r.opcode & (kOpcodes - 1);
    if (c0 == c1) {
      op_partial[o][c0] += static_cast<double>(B - A);
    } else {
      op_partial[o][c0] += static_cast<double>(static_cast<i128>(c0 + 1) * cols.span - A);
      op_partial[o][c1] += static_cast<double>(B - static_cast<i128>(c1) * cols.span);
      op_diff[o][c0 + 1] += static_cast<double>(cols.span);
      op_diff[o][c1] -= static_cast<double>(cols.span);
    }
    // Core's classes of a placement over earlier octets, one each.
    if (r.conflict)
      conflict.add(cols, r.begin, r.end);
    else if (r.reused)
      rewritten.add(cols, r.begin, r.end);
    else if (r.overlap)
      overlap.add(cols, r.begin, r.end);
    if (r.violation) violation.add(cols, r.begin, r.end);
  }

  const auto covered = coverage.totals(cols.span);
  const auto rw = rewritten.any();
  const auto ov = overlap.any();
  const auto cf = conflict.any();
  const auto vi = violation.any();
  std::array<double, kOpcodes> run{};
  for (int x = 0; x < width; ++x) {
    int best = -1;
    double best_w = 0;
    for (int o = 0; o < kOpcodes; ++o) {
      run[o] += op_diff[o][x];
      const double w = run[o] + op_partial[o][x];
      if (w > best_w + 1e-9) {
        best_w = w;
        best = o;
      }
    }
    SpanKind kind;
    if (vi[x])
      kind = SpanKind::violation;
    else if (cf[x])
      kind = SpanKind::conflict;
    else if (ov[x])
      kind = SpanKind::overlap;
    else if (rw[x])
      kind = SpanKind::rewritten;
    else if (covered[x] <= 0)
      kind = SpanKind::hole;
    else if (covered[x] >= cols.span)
      kind = SpanKind::placed;
    else
      kind = SpanKind::partial;
    const int opcode = kind == SpanKind::hole ? -1 : best;
    if (!spans.empty() && spans.back().kind == kind && spans.back().opcode == opcode &&
        spans.back().x1 == x) {
      spans.back().x1 = x + 1;
    } else {
      spans.push_back({x, x + 1, kind, opcode});
    }
  }
  return spans;
}

std::pair<std::uint64_t, std::uint64_t> column_octets(std::uint64_t view_begin,
                                                      std::uint64_t view_end, int width, int x) {
  if (width <= 0 || view_end <= view_begin) return {view_begin, view_begin};
  const i128 span = static_cast<i128>(view_end - view_begin);
  const i128 a = span * x / width;
  i128 b = (span * (x + 1) + width - 1) / width;
  if (b <= a) b = a + 1;
  return {view_begin + static_cast<std::uint64_t>(a), view_begin + static_cast<std::uint64_t>(b)};
}

double octet_to_x(std::uint64_t view_begin, std::uint64_t view_end, int width, std::uint64_t to) {
  if (view_end <= view_begin) return 0;
  const long double d = to >= view_begin ? static_cast<long double>(to - view_begin)
                                         : -static_cast<long double>(view_begin - to);
  return static_cast<double>(d * width / static_cast<long double>(view_end - view_begin));
}

std::vector<std::size_t> ranges_at(std::span<const PlacedRange> ranges, std::uint64_t begin,
                                   std::uint64_t end, std::size_t max) {
  std::vector<std::size_t> out;
  for (std::size_t i = 0; i < ranges.size() && out.size() < max; ++i)
    if (ranges[i].begin < end && ranges[i].end > begin) out.push_back(i);
  return out;
}

}  // namespace ddpscope::gui
