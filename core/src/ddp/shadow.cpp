// SPDX-License-Identifier: GPL-2.0-or-later
#include "ddpscope/ddp/shadow.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <iterator>
#include <tuple>
#include <utility>

#include "ddpscope/common/octets.h"

namespace ddpscope {

namespace {
constexpr std::uint64_t kPage = 4096;
static_assert(kPage == ShadowBuffer::kPageSize);

// Bits [lo, hi) of a 64-bit word (0 <= lo < hi <= 64).
std::uint64_t bit_range(std::size_t lo, std::size_t hi) {
  const std::uint64_t upto_hi = hi == 64 ? ~0ull : (1ull << hi) - 1;
  return upto_hi & ~((1ull << lo) - 1);
}

// Where a page's one run of placed octets (no bitmap) meets [lo, hi): [first, second), empty
// when first >= second.
std::pair<std::size_t, std::size_t> run_within(const ShadowBuffer::Page& pg, std::size_t lo,
                                               std::size_t hi) {
  return {std::max<std::size_t>(lo, pg.run_begin),
          std::min<std::size_t>(hi, std::size_t{pg.run_begin} + pg.valid_count)};
}

// Octets [lo, lo + n) of a page not wholly placed that were placed and differ from `src` (a
// whole page is compared as it is copied: copy_counting_changes).
std::uint64_t count_changed(const ShadowBuffer::Page& pg, std::size_t lo, const std::uint8_t* src,
                            std::size_t n) {
  const std::size_t hi = lo + n;
  if (!pg.valid) {  // one run (or none): only where it meets [lo, hi)
    const auto [b0, b1] = run_within(pg, lo, hi);
    return b0 < b1 ? count_differing(pg.data.data() + b0, src + (b0 - lo), b1 - b0) : 0;
  }
  std::uint64_t changed = 0;
  for (std::size_t w = lo / 64; w * 64 < hi; ++w) {
    const std::size_t b0 = std::max(lo, w * 64);
    const std::size_t b1 = std::min(hi, w * 64 + 64);
    const std::uint64_t want = bit_range(b0 - w * 64, b1 - w * 64);
    const std::uint64_t have = (*pg.valid)[w] & want;
    if (have == 0) continue;
    if (have == want) {
      changed += count_differing(pg.data.data() + b0, src + (b0 - lo), b1 - b0);
      continue;
    }
    for (std::uint64_t m = have; m != 0; m &= m - 1) {
      const std::size_t b = w * 64 + static_cast<std::size_t>(std::countr_zero(m));
      changed += pg.data[b] != src[b - lo];
    }
  }
  return changed;
}

// Marks octets [lo, lo + n) of a bitmap page placed.
void set_bits(ShadowBuffer::Page& pg, std::size_t lo, std::size_t n) {
  auto& bits = *pg.valid;
  const std::size_t hi = lo + n;
  for (std::size_t w = lo / 64; w * 64 < hi; ++w) {
    const std::size_t b0 = std::max(lo, w * 64);
    const std::size_t b1 = std::min(hi, w * 64 + 64);
    const std::uint64_t want = bit_range(b0 - w * 64, b1 - w * 64);
    const std::uint64_t fresh = want & ~bits[w];
    // Most words are wholly new or wholly placed before: counted without a popcount (which is
    // a libgcc call in a baseline x86-64 build).
    pg.valid_count += fresh == want ? static_cast<std::uint32_t>(b1 - b0)
                      : fresh == 0  ? 0u
                                    : static_cast<std::uint32_t>(std::popcount(fresh));
    bits[w] |= want;
  }
}

// Marks octets [lo, lo + n) of a page placed.
void set_valid(ShadowBuffer::Page& pg, std::size_t lo, std::size_t n) {
  if (pg.valid_count == kPage) return;
  if (!pg.valid) {
    const std::size_t hi = lo + n;
    if (pg.valid_count == 0) {  // the first run
      pg.run_begin = static_cast<std::uint32_t>(lo);
      pg.valid_count = static_cast<std::uint32_t>(n);
      return;
    }
    const std::size_t run_end = pg.run_begin + pg.valid_count;
    if (lo <= run_end && pg.run_begin <= hi) {  // touches or overlaps the run: one run still
      const std::size_t b = std::min<std::size_t>(lo, pg.run_begin);
      pg.run_begin = static_cast<std::uint32_t>(b);
      pg.valid_count = static_cast<std::uint32_t>(std::max(hi, run_end) - b);
      return;
    }
    // A second run: the page needs its bitmap.
    pg.valid = std::make_unique<ShadowBuffer::PageBits>();
    const std::size_t run = pg.valid_count;
    pg.valid_count = 0;
    set_bits(pg, pg.run_begin, run);
  }
  set_bits(pg, lo, n);
  if (pg.valid_count == kPage) pg.valid.reset();  // whole: the count says it all
}
}  // namespace

std::string_view to_string(RegionSource s) {
  switch (s) {
    case RegionSource::observed:
      return "observed";
    case RegionSource::regions_file:
      return "regions-file";
    case RegionSource::advertisement:
      return "advertisement";
    case RegionSource::read_request_sink:
      return "read-request-sink";
    case RegionSource::read_request_source:
      return "read-request-source";
  }
  return "?";
}

bool ShadowBuffer::contains(std::uint64_t to, std::uint64_t len) const {
  if (!base || !length) return true;
  if (to < *base) return false;
  const std::uint64_t off = to - *base;
  return off <= *length && len <= *length - off;
}

Bytes ShadowBuffer::read(std::uint64_t to, std::size_t len, std::vector<bool>* known) const {
  Bytes out(len, 0);
  if (known) known->assign(len, false);
  std::size_t i = 0;
  while (i < len) {
    const std::uint64_t pos = to + i;
    const std::uint64_t page = pos / kPage;
    const std::size_t in_page = static_cast<std::size_t>(pos % kPage);
    const std::size_t n = std::min<std::size_t>(len - i, kPage - in_page);
    auto it = pages_.find(page);
    if (it != pages_.end()) {
      const Page& pg = it->second;
      // Only placed octets are copied: the others hold what the page's memory held before
      // (place_content writes no more than it places), and stay 0 in `out`.
      if (pg.valid_count == kPage) {
        std::memcpy(out.data() + i, pg.data.data() + in_page, n);
        if (known) std::fill_n(known->begin() + static_cast<std::ptrdiff_t>(i), n, true);
      } else if (!pg.valid) {  // one run: where it meets [in_page, in_page + n)
        const auto [b0, b1] = run_within(pg, in_page, in_page + n);
        if (b0 < b1) {
          std::memcpy(out.data() + i + (b0 - in_page), pg.data.data() + b0, b1 - b0);
          if (known)
            std::fill_n(known->begin() + static_cast<std::ptrdiff_t>(i + (b0 - in_page)), b1 - b0,
                        true);
        }
      } else {
        for (std::size_t k = 0; k < n; ++k) {
          const std::size_t b = in_page + k;
          if (!pg.placed(b)) continue;
          out[i + k] = pg.data[b];
          if (known) (*known)[i + k] = true;
        }
      }
    }
    i += n;
    if (pos + n < pos) break;  // TO wrapped
  }
  return out;
}

ShadowMemory::ShadowMemory(const ShadowMemory& o)
    : buffers_(o.buffers_),
      retention_cap_(o.retention_cap_),
      range_cap_(o.range_cap_),
      keep_ranges_(o.keep_ranges_),
      retained_(o.retained_) {}

ShadowMemory& ShadowMemory::operator=(ShadowMemory o) noexcept {
  // What this held goes with `o`, buffers before their arena.
  std::swap(arena_, o.arena_);
  std::swap(buffers_, o.buffers_);
  std::swap(retention_cap_, o.retention_cap_);
  std::swap(range_cap_, o.range_cap_);
  std::swap(keep_ranges_, o.keep_ranges_);
  std::swap(retained_, o.retained_);
  return *this;
}

ShadowBuffer* ShadowMemory::find(const RegionKey& key) {
  auto it = buffers_.find(key);
  return it == buffers_.end() ? nullptr : &it->second;
}
const ShadowBuffer* ShadowMemory::find(const RegionKey& key) const {
  auto it = buffers_.find(key);
  return it == buffers_.end() ? nullptr : &it->second;
}

std::uint64_t ShadowBuffer::drop_pages_after(std::uint32_t last) {
  std::uint64_t dropped = 0;
  for (auto it = pages_.begin(); it != pages_.end();) {
    if (it->second.ordinal > last) {
      it = pages_.erase(it);
      dropped += kPage;
    } else {
      ++it;
    }
  }
  retained_ -= dropped;
  last_page_.set = false;
  return dropped;
}

bool ShadowMemory::adopt(ShadowBuffer&& b) {
  const RegionKey key = b.key;
  if (buffers_.count(key)) return false;
  retained_ += b.retained_;
  buffers_.emplace(key, std::move(b));
  return true;
}

std::map<RegionKey, ShadowBuffer> ShadowMemory::release_buffers() {
  std::map<RegionKey, ShadowBuffer> out;
  out.swap(buffers_);
  retained_ = 0;
  return out;
}

ShadowBuffer* ShadowMemory::get_or_create(const RegionKey& key, std::size_t max) {
  if (auto* b = find(key)) return b;
  if (buffers_.size() >= max) return nullptr;
  if (!arena_) arena_ = std::make_unique<PageArena>();
  ShadowBuffer& b = buffers_.try_emplace(key, arena_.get()).first->second;
  b.key = key;
  return &b;
}

PlaceResult ShadowMemory::place(ShadowBuffer& buf, const PlacedRange& range_in, ByteView content,
                                const WriterState* writers) {
  PlaceResult r;
  PlacedRange range = range_in;
  if (range.end <= range.begin) return r;
  const std::uint64_t len = range.end - range.begin;
  const std::size_t n = std::min<std::size_t>(content.size(), len);
  // Octets of messages in flight (the rule at the top of shadow.h): usually none, as a buffer is
  // written by one message at a time.
  if (writers != nullptr && !buf.in_flight_.empty())
    check_in_flight(buf, range, content.first(n), *writers, r);
  if (r.conflict) {
    buf.conflicts_++;
    buf.conflict_octets_ += r.conflict_octets;
  }
  if (range.violation) {
    // A compliant sink places nothing of a violating segment: keep the attempt, not the bytes.
    range.conflict = r.conflict;
    record_range(buf, range, r);
    return r;
  }

  // Coalesced extents: count new octets, detect overlap.
  std::uint64_t covered = 0;
  auto& ext = buf.extents_;
  // Fast path, O(1): a placement at or past the end of the highest extent (in-order segments of
  // a message, the common case) extends that extent in place or starts a new last one.
  const auto last = ext.empty() ? ext.end() : std::prev(ext.end());
  if (last != ext.end() && last->first <= range.begin && last->second == range.begin) {
    last->second = range.end;
  } else if (last == ext.end() || last->second < range.begin) {
    if (ext.size() < range_cap_) {
      ext.emplace_hint(ext.end(), range.begin, range.end);
    } else {
      r.capped = true;
    }
  } else {
    place_extent(buf, range, covered, r.capped);
  }
  r.new_bytes = len - covered;
  r.overlap = covered > 0;
  buf.bytes_placed_ += r.new_bytes;
  buf.min_to_ = std::min(buf.min_to_, range.begin);
  buf.max_end_ = std::max(buf.max_end_, range.end);

  // Content: compare with what is retained, then keep the new octets while the cap allows.
  std::uint64_t changed = 0;
  if (n > 0 && buf.pages_.empty() &&
      (gate_ ? !gate_->open() : retained_ + kPage > retention_cap_)) {
    r.content_dropped = true;  // nothing of this region is retained, and nothing more can be
  } else {
    changed = place_content(buf, range.begin, content.first(n), r);
  }
  // What changed beyond the octets of messages in flight changed octets of delivered ones.
  if (changed > r.conflict_octets) {
    r.reused = true;
    r.reused_octets = changed - r.conflict_octets;
    buf.overwrites_++;
    buf.reused_octets_ += r.reused_octets;
  }
  if (writers != nullptr) add_in_flight(buf, range);

  range.overlap = r.overlap;
  range.conflict = r.conflict;
  range.reused = r.reused;
  record_range(buf, range, r);
  return r;
}

void ShadowMemory::check_in_flight(ShadowBuffer& buf, const PlacedRange& range, ByteView content,
                                   const WriterState& writers, PlaceResult& r) {
  auto& fl = buf.in_flight_;
  const std::uint64_t cend = range.begin + content.size();
  // The common case: the next segment of the message that placed every extent here, meeting
  // none of them. Nothing to compare, so nothing is asked: should that message be no longer in
  // flight (a "no" is final), its extents stay until a placement that meets them, or another
  // message's, drops them before comparing (meanwhile they only grow, unseen).
  const PlacementWriter own = range.writer();
  if (std::all_of(fl.begin(), fl.end(), [&](const ShadowBuffer::InFlight& e) {
        return e.writer == own && std::max(e.begin, range.begin) >= std::min(e.end, cend);
      }))
    return;
  fl.erase(
      std::remove_if(fl.begin(), fl.end(),
                     [&](const ShadowBuffer::InFlight& e) { return !writers.in_flight(e.writer); }),
      fl.end());
  // Octets of `content` found different from a message in flight, each counted once (extents
  // of two messages in flight may overlap each other).
  std::vector<bool> counted;
  for (const auto& e : fl) {
    const std::uint64_t lo = std::max(e.begin, range.begin);
    const std::uint64_t hi = std::min(e.end, cend);
    if (lo >= hi) continue;
    std::vector<bool> known;
    const Bytes have = buf.read(lo, static_cast<std::size_t>(hi - lo), &known);
    if (gate_) {
      for (auto it = buf.pages_.lower_bound(lo / kPage);
           it != buf.pages_.end() && it->first <= (hi - 1) / kPage; ++it)
        gate_->compared(it->second.ordinal);
    }
    bool differs = false;
    for (std::uint64_t p = lo; p < hi; ++p) {
      const std::size_t i = static_cast<std::size_t>(p - range.begin);
      const std::size_t k = static_cast<std::size_t>(p - lo);
      if (!known[k] || have[k] == content[i]) continue;
      differs = true;
      if (counted.empty()) counted.assign(content.size(), false);
      if (!counted[i]) {
        counted[i] = true;
        r.conflict_octets++;
      }
    }
    if (differs && !r.conflict) {
      r.conflict = true;
      r.conflict_writer = e.writer;
      r.conflict_frame = e.frame;
      r.conflict_own = e.writer == range.writer();
    }
  }
}

void ShadowMemory::add_in_flight(ShadowBuffer& buf, const PlacedRange& range) {
  auto& fl = buf.in_flight_;
  const PlacementWriter w = range.writer();
  // A message's segments continue each other: they grow its one extent.
  for (auto& e : fl) {
    if (e.writer == w && range.begin <= e.end && e.begin <= range.end) {
      e.begin = std::min(e.begin, range.begin);
      e.end = std::max(e.end, range.end);
      return;
    }
  }
  if (fl.size() >= ShadowBuffer::kMaxInFlight) fl.erase(fl.begin());  // conflicts go unseen
  fl.push_back({range.begin, range.end, range.frame, w});
}

void ShadowMemory::record_range(ShadowBuffer& buf, const PlacedRange& range, PlaceResult& r) {
  buf.violations_ += range.violation;
  buf.overlaps_ += range.overlap;
  auto& s = buf.placing_streams_;
  if (s.empty() ||
      (s.back() != range.stream && std::find(s.begin(), s.end(), range.stream) == s.end()))
    s.push_back(range.stream);
  // Kept or not, the placements count against the cap alike.
  if (buf.segments_++ - buf.ranges_dropped_ < range_cap_) {
    if (keep_ranges_) buf.ranges_.push_back(range);
  } else {
    ++buf.ranges_dropped_;
    r.capped = true;
  }
}

void ShadowMemory::place_extent(ShadowBuffer& buf, const PlacedRange& range, std::uint64_t& covered,
                                bool& capped) {
  auto& ext = buf.extents_;
  auto it = ext.upper_bound(range.begin);
  if (it != ext.begin()) --it;
  std::uint64_t new_begin = range.begin;
  std::uint64_t new_end = range.end;
  bool merged = false;
  while (it != ext.end() && it->first <= range.end) {
    const std::uint64_t b = it->first;
    const std::uint64_t e = it->second;
    if (e < range.begin) {
      ++it;
      continue;
    }
    const std::uint64_t ob = std::max(b, range.begin);
    const std::uint64_t oe = std::min(e, range.end);
    if (oe > ob) covered += oe - ob;
    new_begin = std::min(new_begin, b);
    new_end = std::max(new_end, e);
    merged = true;
    it = ext.erase(it);
  }
  // Disjoint extents are capped like ranges: past the cap a new island is not remembered
  // (its octets still count as placed; a later overlap with it goes unseen).
  if (merged || ext.size() < range_cap_) {
    ext.emplace(new_begin, new_end);
  } else {
    capped = true;
  }
}

std::uint64_t ShadowMemory::place_content(ShadowBuffer& buf, std::uint64_t begin, ByteView content,
                                          PlaceResult& r) {
  std::uint64_t changed = 0;
  const std::size_t n = content.size();
  auto& pages = buf.pages_;
  auto& last = buf.last_page_;
  for (std::size_t i = 0; i < n;) {
    const std::uint64_t pos = begin + i;
    const std::uint64_t page = pos / kPage;
    const std::size_t in_page = static_cast<std::size_t>(pos % kPage);
    const std::size_t chunk = std::min<std::size_t>(n - i, kPage - in_page);
    const std::uint8_t* src = content.data() + i;
    i += chunk;
    // Where the page is, or goes: the page the buffer's last chunk went to or the one after it
    // (a placement's pages are consecutive, and the segments of a message continue each
    // other), else found by one search.
    auto at = !last.set                    ? pages.lower_bound(page)
              : last.at->first == page     ? last.at
              : last.at->first + 1 == page ? std::next(last.at)
                                           : pages.lower_bound(page);
    if (at == pages.end() || at->first != page) {
      std::uint32_t ordinal = 0;
      if (gate_ ? (ordinal = gate_->admit()) == 0 : retained_ + kPage > retention_cap_) {
        r.content_dropped = true;
        continue;
      }
      // A new page: its placed octets one run, the only ones written (nothing reads an octet
      // before it is placed: ShadowBuffer::read, count_changed).
      at = pages.emplace_hint(at, std::piecewise_construct, std::forward_as_tuple(page),
                              std::forward_as_tuple(ShadowBuffer::Page::Unset{}));
      at->second.ordinal = ordinal;
      retained_ += kPage;
      buf.retained_ += kPage;
      auto& pg = at->second;
      std::memcpy(pg.data.data() + in_page, src, chunk);
      set_valid(pg, in_page, chunk);
    } else if (auto& pg = at->second; pg.valid_count == kPage) {
      // Memory holds the latest, as the sink's would.
      if (gate_) gate_->compared(pg.ordinal);
      changed += copy_counting_changes(pg.data.data() + in_page, src, chunk);
    } else {
      // Placed octets met (a run meeting [in_page, in_page + chunk), or any bitmap page).
      if (gate_ && (pg.valid || (pg.run_begin < in_page + chunk &&
                                 in_page < std::size_t{pg.run_begin} + pg.valid_count)))
        gate_->compared(pg.ordinal);
      changed += count_changed(pg, in_page, src, chunk);
      std::memcpy(pg.data.data() + in_page, src, chunk);
      set_valid(pg, in_page, chunk);
    }
    last.at = at;
    last.set = true;
  }
  return changed;
}

}  // namespace ddpscope
