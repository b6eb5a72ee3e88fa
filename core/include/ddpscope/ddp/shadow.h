// SPDX-License-Identifier: GPL-2.0-or-later
// Shadow buffers: our model of the Data Sink's memory. One per (owner host, STag): which byte
// ranges were placed, by which frames, with which content (kept up to a global cap).
//
// Placing octets that were placed before — the one rule, decided here (ShadowMemory::place) and
// read by every host (the analysis reports it, JSON/text/GUI show the counts):
//   * reuse (normal): the message that placed them had been delivered (or will never be: it was
//     abandoned, its stream ended) when new content arrives. An upper layer re-using a buffer does
//     this all the time (rping writes a new pattern each iteration, perftest re-uses its buffers):
//     no finding; counted per region (overwrites(), reused_octets()).
//   * conflict: different content while the message that placed them is still in flight (not
//     delivered yet, RFC 5041 §5.3), a message rewriting its own octets included. Until delivery
//     the Data Sink's buffer is the message's; two writers racing on it leave its content
//     undefined (RFC 5040 §5.5). The analysis reports ddp.tagged.conflicting-placement.
//   * the same content again (a retransmission, an idempotent rewrite): an overlap, never more.
// Whether a message is in flight is the caller's to say (WriterState): the memory does not know
// delivery. Unknown content (not retained, see the retention cap) is never a conflict.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <memory_resource>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ddpscope/common/bytes.h"
#include "ddpscope/common/page_arena.h"
#include "ddpscope/net/packet.h"

namespace ddpscope {

struct RegionKey {
  net::Address owner;  // host whose memory the STag names (the Data Sink of Writes)
  std::uint32_t stag = 0;
  auto operator<=>(const RegionKey&) const = default;
};

enum class RegionSource : std::uint8_t {
  observed,             // only seen in tagged segments: bounds unknown
  regions_file,         // the user's --regions file
  advertisement,        // an upper layer advertised it (rping, ...)
  read_request_sink,    // the Data Sink range of an RDMA Read Request
  read_request_source,  // the Data Source range of an RDMA Read Request
};
std::string_view to_string(RegionSource s);

struct RegionSpec {
  std::uint32_t stag = 0;
  std::uint64_t base = 0;
  std::uint64_t length = 0;
  std::optional<net::Address> owner;  // "sink" in the regions file; none = any host
  std::string origin;                 // free text: "regions file", "rping advertisement", ...
  // What the user knows of its registration (RFC 5040 §5.3), checked when given.
  std::optional<std::uint32_t> pd;     // protection domain
  std::optional<std::uint8_t> access;  // ddp::access rights
  bool valid = true;                   // false: already invalidated
  bool invalidatable = true;           // remote invalidation allowed
};

// What the user knows of a Data Sink's protection domain: the sink at `endpoint` puts the
// streams it terminates there in PD `pd` (RFC 5040 §5.3, RFC 5041 §7.2: an STag of another PD is
// not associated with the stream). Without a port (`any_port`), every stream of that host.
struct ProtectionDomainSpec {
  net::Endpoint endpoint;
  bool any_port = false;
  std::uint32_t pd = 0;
};

// The message whose segment placed octets: its stream, direction and place in that direction's
// delivery order. The caller gives it meaning through WriterState.
struct PlacementWriter {
  std::uint32_t stream = 0;
  std::uint8_t direction = 0;
  std::uint64_t message = 0;
  bool operator==(const PlacementWriter&) const = default;
};

// The caller's answer for placements: whether a message is still in flight (placing, or placed
// and not yet delivered; not abandoned). Asked where a buffer holds octets of messages that
// were in flight, not necessarily on every placement. A "no" is final: a message delivered,
// abandoned or of an ended stream is never in flight again.
class WriterState {
 public:
  virtual bool in_flight(const PlacementWriter& writer) const = 0;

 protected:
  ~WriterState() = default;
};

// One placement: a segment's octets, with who placed them.
struct PlacedRange {
  std::uint64_t begin = 0;  // TO of the first octet
  std::uint64_t end = 0;    // one past the last
  std::uint64_t frame = 0;  // frame holding the segment's first octet
  std::uint8_t opcode = 0;
  std::uint32_t stream = 0;
  std::uint8_t direction = 0;
  std::uint64_t message = 0;  // with stream and direction: the PlacementWriter
  bool overlap = false;       // placed over octets placed before
  bool conflict = false;      // ... with different content while their message was in flight
  bool reused = false;        // ... with different content after their message was delivered
  bool violation = false;     // outside the region's known bounds
  PlacementWriter writer() const { return {stream, direction, message}; }
};

class ShadowBuffer {
 public:
  ShadowBuffer() = default;
  // Retained pages allocated from `pages` (ShadowMemory's arena). A copy keeps its pages on the
  // heap (std::pmr: a copied container takes the default resource).
  explicit ShadowBuffer(std::pmr::memory_resource* pages) : pages_(pages) {}

  RegionKey key;
  RegionSource source = RegionSource::observed;
  std::string origin;
  std::optional<std::uint64_t> base;  // known bounds
  std::optional<std::uint64_t> length;
  // Whether tagged segments are checked against base/length. Bounds learned from a Read
  // Request describe one transfer, not the region, so they are shown but not enforced.
  bool bounds_enforced = false;
  // The stream it was learned on (or first used on). A binding only with `stream_scoped`.
  std::optional<std::uint32_t> stream;
  // The upper layer that taught it registers memory per connection (rping: a protection domain
  // per connection), so the STag is not associated with any other stream while `stream` lasts
  // (RFC 5041 §8, RFC 5040 §5.3). Learned from the stream's own traffic otherwise, it is
  // evidence for that stream, not a binding.
  bool stream_scoped = false;
  std::optional<std::uint32_t> pd;     // protection domain, when the user gave it
  std::optional<std::uint8_t> access;  // ddp::access rights, when the user gave them
  bool invalidatable = true;
  std::uint64_t learned_frame = 0;
  bool invalidated = false;
  std::uint64_t invalidated_frame = 0;
  // Learned from an upper layer's command (source advertisement, or the Read sink of one):
  // which ULP ("nvme-rdma"), the command ("NVMe Read cid 12 nsid 1"), the access it implies
  // (ddp::access bits) and the frame of the completion that ended it (0: none seen).
  std::string ulp;
  std::string command;
  std::optional<std::uint8_t> ulp_access;
  std::uint64_t completed_frame = 0;

  // Coalesced placed extents [begin, end).
  const std::map<std::uint64_t, std::uint64_t>& extents() const { return extents_; }
  // Individual placements in arrival order (capped; see ranges_dropped()). Empty when the
  // memory keeps none (ShadowMemory::set_keep_ranges): the counts below hold either way.
  const std::vector<PlacedRange>& ranges() const { return ranges_; }
  std::uint64_t ranges_dropped() const { return ranges_dropped_; }
  // Every placement into the region, kept in ranges() or not: how many, how many broke a
  // placement rule (PlacedRange::violation), how many overlapped octets placed before, and the
  // streams that placed them, in the order of their first placement.
  std::uint64_t segments() const { return segments_; }
  std::uint64_t violations() const { return violations_; }
  std::uint64_t overlaps() const { return overlaps_; }
  const std::vector<std::uint32_t>& placing_streams() const { return placing_streams_; }
  std::uint64_t bytes_placed() const { return bytes_placed_; }  // distinct octets
  std::uint64_t min_to() const { return min_to_; }
  std::uint64_t max_end() const { return max_end_; }
  bool contains(std::uint64_t to, std::uint64_t len) const;  // within base/length (if known)

  // Content at [to, to+len): octets never placed or not retained are absent from `known`.
  // Returns the octets (0 where unknown) and sets known[i].
  Bytes read(std::uint64_t to, std::size_t len, std::vector<bool>* known = nullptr) const;
  std::uint64_t bytes_retained() const { return retained_; }
  // Drops the retained pages whose PageGate ordinal is past `last` (content the gate admitted
  // but a one-engine analysis would not have retained: analysis/shards.h); their octets stay
  // placed, their content becomes unknown. Returns the octets dropped.
  std::uint64_t drop_pages_after(std::uint32_t last);
  // Every stream number it holds (the buffer's, its placements' and writers') through `map`.
  template <typename Map>
  void renumber_streams(const Map& map) {
    if (stream) stream = map(*stream);
    for (auto& r : ranges_)
      r.stream = map(r.stream);
    for (auto& s : placing_streams_)
      s = map(s);
    for (auto& f : in_flight_)
      f.writer.stream = map(f.writer.stream);
  }

  // Buffer reuse (see the rule at the top): placements that put new content over octets of a
  // delivered message, and how many octets changed. Not capped with ranges().
  std::uint64_t overwrites() const { return overwrites_; }
  std::uint64_t reused_octets() const { return reused_octets_; }
  // Conflicting placements (different content over octets of a message in flight) and octets.
  std::uint64_t conflicts() const { return conflicts_; }
  std::uint64_t conflict_octets() const { return conflict_octets_; }

  // Retained content in 4 KiB pages keyed by page index (TO / 4096). Octets never placed are
  // undefined in `data` (a new page is written only where placed; read() masks them to 0);
  // `valid_count` counts the placed ones. A whole page (valid_count 4096, the common
  // case) carries nothing more, so it costs its 4 KiB and little more. A page partly placed in
  // one run of octets (in-order segments filling it) says where the run starts: its placed
  // octets are [run_begin, run_begin + valid_count). Any other partly placed page has `valid`,
  // bit (b % 64) of word b / 64 set for each placed octet b.
  static constexpr std::size_t kPageSize = 4096;
  using PageBits = std::array<std::uint64_t, kPageSize / 64>;
  struct Page {
    std::array<std::uint8_t, kPageSize> data;
    std::unique_ptr<PageBits> valid;  // while partly placed, other than in one run
    std::uint32_t valid_count = 0;
    std::uint32_t run_begin = 0;  // without `valid`, while 0 < valid_count < 4096
    // With a PageGate: the page's place in the gate's order of retained pages (1-based).
    std::uint32_t ordinal = 0;
    Page() : data{} {}
    // `data` left as it is: for a page whose octets are written as they are placed
    // (place_content).
    struct Unset {};
    explicit Page(Unset) {}
    Page(const Page& o)  // buffers are copied (the GUI's snapshots of the model)
        : data(o.data),
          valid(o.valid ? std::make_unique<PageBits>(*o.valid) : nullptr),
          valid_count(o.valid_count),
          run_begin(o.run_begin),
          ordinal(o.ordinal) {}
    Page& operator=(const Page& o) {
      if (this != &o) *this = Page(o);
      return *this;
    }
    Page(Page&&) = default;
    Page& operator=(Page&&) = default;
    bool placed(std::size_t b) const {
      if (valid_count == kPageSize) return true;
      if (valid) return (*valid)[b / 64] >> (b % 64) & 1;
      return b >= run_begin && b - run_begin < valid_count;
    }
  };

 private:
  friend class ShadowMemory;
  // Octets placed by messages that were in flight when last asked: a few per buffer (one
  // extent per message in flight), pruned whenever the buffer is placed into.
  struct InFlight {
    std::uint64_t begin = 0;
    std::uint64_t end = 0;
    std::uint64_t frame = 0;  // the first placement of the extent
    PlacementWriter writer;
  };
  static constexpr std::size_t kMaxInFlight = 32;  // past it the oldest is forgotten
  std::vector<InFlight> in_flight_;
  std::uint64_t overwrites_ = 0;
  std::uint64_t reused_octets_ = 0;
  std::uint64_t conflicts_ = 0;
  std::uint64_t conflict_octets_ = 0;
  std::map<std::uint64_t, std::uint64_t> extents_;
  std::vector<PlacedRange> ranges_;
  std::uint64_t ranges_dropped_ = 0;
  std::uint64_t segments_ = 0;
  std::uint64_t violations_ = 0;
  std::uint64_t overlaps_ = 0;
  std::vector<std::uint32_t> placing_streams_;
  std::uint64_t bytes_placed_ = 0;
  std::uint64_t min_to_ = UINT64_MAX;
  std::uint64_t max_end_ = 0;
  using Pages = std::pmr::map<std::uint64_t, Page>;
  Pages pages_;
  // The page the last placement ended in: where the next one usually starts (the segments of a
  // message continue each other). Pages are never erased, so it stays valid; a copied or moved
  // buffer starts without one.
  struct LastPage {
    Pages::iterator at;
    bool set = false;
    LastPage() = default;
    LastPage(const LastPage&) {}
    LastPage& operator=(const LastPage&) {
      set = false;
      return *this;
    }
  };
  LastPage last_page_;
  std::uint64_t retained_ = 0;
};

// Who decides whether a new page of content is retained, in place of ShadowMemory's own cap
// (set_retention_cap): a sharded analysis (analysis/shards.h), whose engines share one cap in the
// order of the whole capture. Each retained page gets an ordinal from admit(); every placement
// that compares new content with a page's placed octets reports the page's ordinal to
// compared(), so that a page admitted in error can be found to have mattered.
class PageGate {
 public:
  // A new page is wanted: its ordinal (1, 2, ...) if it is retained, 0 if not.
  virtual std::uint32_t admit() = 0;
  // Whether admit() might retain a page now (false: it certainly would not).
  virtual bool open() = 0;
  // Placed octets of the page with this ordinal were compared with new content.
  virtual void compared(std::uint32_t ordinal) = 0;

 protected:
  ~PageGate() = default;
};

struct PlaceResult {
  std::uint64_t new_bytes = 0;  // octets not placed before
  bool overlap = false;
  // Different content over octets of a message in flight (also for a violating segment, which
  // places nothing: what it tried to place is compared).
  bool conflict = false;
  std::uint64_t conflict_octets = 0;
  bool conflict_own = false;         // the message in flight was the segment's own
  std::uint64_t conflict_frame = 0;  // where that message placed the octets first
  PlacementWriter conflict_writer;
  // Different content over octets of delivered messages: buffer reuse, normal.
  bool reused = false;
  std::uint64_t reused_octets = 0;
  bool content_dropped = false;  // retention cap reached for this placement
  bool capped = false;  // the placement or a new extent was not recorded (range cap reached)
};

class ShadowMemory {
 public:
  ShadowMemory() = default;
  // A copy (the GUI's snapshot of the model) keeps its buffers' pages on the heap; the arena
  // stays with the original.
  ShadowMemory(const ShadowMemory& o);
  ShadowMemory(ShadowMemory&&) noexcept = default;
  ShadowMemory& operator=(ShadowMemory o) noexcept;  // copy or move, then swap
  ~ShadowMemory() = default;

  void set_retention_cap(std::size_t bytes) { retention_cap_ = bytes; }
  void set_range_cap(std::size_t n) { range_cap_ = n; }
  // Whether each buffer keeps its placements (ShadowBuffer::ranges()) for hosts that show them
  // (the GUI's placement trace and byte map); the cap on them, and so the max_ranges_per_region
  // limit, counts the same either way.
  void set_keep_ranges(bool keep) { keep_ranges_ = keep; }
  // Not owned; nullptr (the default): the retention cap decides.
  void set_page_gate(PageGate* gate) { gate_ = gate; }
  // Moves `b` in (keyed by b.key; its pages stay with the arena they came from, which must
  // outlive this memory). False when a buffer of that key is here already (`b` unchanged).
  bool adopt(ShadowBuffer&& b);
  // Moves every buffer out (for adopt() into another memory); this memory keeps its arena.
  std::map<RegionKey, ShadowBuffer> release_buffers();
  std::size_t size() const { return buffers_.size(); }
  ShadowBuffer* find(const RegionKey& key);
  const ShadowBuffer* find(const RegionKey& key) const;
  // Creates the buffer if needed (returns nullptr when `max` buffers already exist).
  ShadowBuffer* get_or_create(const RegionKey& key, std::size_t max);
  // Places `content` (the segment's payload, at range.begin) as range.writer(). With `writers`,
  // octets placed again are reuse or conflict by the rule at the top; without, nothing is known
  // to be in flight (every change of content is reuse).
  PlaceResult place(ShadowBuffer& buf, const PlacedRange& range, ByteView content,
                    const WriterState* writers = nullptr);
  const std::map<RegionKey, ShadowBuffer>& buffers() const { return buffers_; }
  std::uint64_t bytes_retained() const { return retained_; }

 private:
  // The general case of place(): merges `range` with the extents it touches.
  void place_extent(ShadowBuffer& buf, const PlacedRange& range, std::uint64_t& covered,
                    bool& capped);
  // Compares `content` (placed at TO `begin`) with the retained octets and retains it; returns
  // how many retained octets it changed.
  std::uint64_t place_content(ShadowBuffer& buf, std::uint64_t begin, ByteView content,
                              PlaceResult& r);
  // Drops the in-flight extents of messages no longer in flight, then compares `content` with
  // what the remaining ones placed where `range` meets them (PlaceResult::conflict*).
  void check_in_flight(ShadowBuffer& buf, const PlacedRange& range, ByteView content,
                       const WriterState& writers, PlaceResult& r);
  // Remembers `range` as placed by its writer, in flight.
  static void add_in_flight(ShadowBuffer& buf, const PlacedRange& range);
  // Keeps the placement in the region's list, or counts it dropped past the range cap.
  void record_range(ShadowBuffer& buf, const PlacedRange& range, PlaceResult& r);

  // Where new buffers' retained pages come from (created with the first buffer). Declared before
  // buffers_: the buffers go first.
  std::unique_ptr<PageArena> arena_;
  std::map<RegionKey, ShadowBuffer> buffers_;
  std::size_t retention_cap_ = 64u << 20;
  std::size_t range_cap_ = 1u << 16;
  bool keep_ranges_ = true;
  std::uint64_t retained_ = 0;
  PageGate* gate_ = nullptr;
};

}  // namespace ddpscope
