// SPDX-License-Identifier: GPL-2.0-or-later
// The analysis engine behind the Analyzer facade (analyzer.h), in three parts that follow the
// pipeline:
//   engine_tcp.cpp   connections, TCP reassembly, capture loss, budgets across streams
//   engine_mpa.cpp   the MPA LLP: handshake (mpa/negotiate.h), FPDU framing, CRC, markers,
//                    MULPDU, setup order — hands each DDP segment over the LLP boundary
//   engine_sctp.cpp  the SCTP LLP: associations, TSN-ordered reassembly of user messages per
//                    direction, capture loss, DDP Stream Session Control (PPID 17) — hands each
//                    PPID 16 message, one DDP segment, over the same LLP boundary
//   engine_sink.cpp  each DDP segment through the Data Sink model (rdmap/data_sink.h) of its
//                    direction: findings from its Violations, placement into shadow buffers,
//                    message records and delivery, what completed RDMAP messages teach
// Internal to core/src/analysis. Members declared `inline` run per segment and are defined in
// the one file that calls them, folded into their caller there.
#pragma once

#include <array>
#include <atomic>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <type_traits>
#include <vector>

#include "ddpscope/analysis/analyzer.h"
#include "ddpscope/common/ring_queue.h"
#include "ddpscope/findings/violation.h"
#include "ddpscope/mpa/framer.h"
#include "ddpscope/rdmap/data_sink.h"
#include "ddpscope/sctp/ddp_session.h"
#include "ddpscope/tcp/reassembly.h"
#include "ddpscope/ulp/advert.h"
#include "ddpscope/wire/sctp.h"
#include "engine_ulp.h"

namespace ddpscope {

inline constexpr std::size_t kNoIndex = static_cast<std::size_t>(-1);

// Endpoint equality for the per-segment path: a fixed-size compare the compiler inlines (the
// defaulted operators go through a lexicographic memcmp call). Here, not in one .cpp: all three
// parts of the engine call them per segment, and a call across translation units is not inlined.
inline bool same_address(const net::Address& x, const net::Address& y) {
  return x.v6 == y.v6 && std::memcmp(x.bytes.data(), y.bytes.data(), x.bytes.size()) == 0;
}
inline bool same_endpoint(const net::Endpoint& x, const net::Endpoint& y) {
  return x.port == y.port && same_address(x.addr, y.addr);
}

// One queue's message being recorded (what the Data Sink model does not keep).
struct MessageTrack {
  std::size_t record = kNoIndex;   // index into Model::messages
  std::uint64_t delivery_id = 0;   // place in the delivery queue
  Bytes body;                      // the first octets of an untagged message, for decoding
  bool conflict_reported = false;  // ddp.tagged.conflicting-placement: once per message
  // No message: as constructed, but the body's storage is kept for the queue's next message
  // (an allocation less per Send).
  void reset() {
    record = kNoIndex;
    delivery_id = 0;
    body.clear();
    conflict_reported = false;
  }
};
// reset() names every field: one added must be added there (64-bit layout).
static_assert(sizeof(void*) != 8 || sizeof(MessageTrack) == 48,
              "MessageTrack changed: update reset");

struct PendingDelivery {
  std::size_t record = kNoIndex;
  bool complete = false;
  bool abandoned = false;  // will never be delivered: no longer in flight
};

struct HeaderEcho {
  wire::DdpHeader header;
  std::uint64_t frame = 0;
};

// The last DDP headers a direction sent and their frames, for the Terminates that quote one
// (RFC 5040 §7.1). A ring of kCap: one is added per segment, so it allocates only while it
// fills.
class RecentHeaders {
 public:
  static constexpr std::size_t kCap = 256;
  void push(const wire::DdpHeader& header, std::uint64_t frame) {
    if (ring_.size() < kCap) {
      ring_.push_back({header, frame});
      return;
    }
    ring_[next_] = {header, frame};
    next_ = (next_ + 1) % kCap;
  }
  // The most recent one with this header, or nullptr.
  const HeaderEcho* find(const wire::DdpHeader& header) const {
    // Newest first: ring_[next_ - 1] back to ring_[0], then ring_.back() down to ring_[next_].
    for (std::size_t i = next_; i-- > 0;)
      if (ring_[i].header == header) return &ring_[i];
    for (std::size_t i = ring_.size(); i-- > next_;)
      if (ring_[i].header == header) return &ring_[i];
    return nullptr;
  }

 private:
  std::vector<HeaderEcho> ring_;
  std::size_t next_ = 0;  // the oldest once full (where the next one goes)
};

// The analysis of one direction of a stream: what its sender sent, and the Data Sink of its
// receiver.
struct DirectionEngine {
  DirectionEngine(const Limits& l, HistoryBudget* budget);
  TcpReassembler reasm;
  MpaFramer framer;
  rdmap::DataSink sink;  // the receiver's Data Sink model
  MessageTrack tagged;   // the tagged message in progress
  std::array<MessageTrack, rdmap::DataSink::kQueues> queues;
  // Messages in arrival order, awaiting delivery (a message in one segment is pushed and popped
  // by that segment: a ring, not std::deque's blocks). Bounded by Limits::max_pending_messages.
  RingQueue<PendingDelivery> delivery;
  std::uint64_t delivery_base = 0;  // id of delivery.front()
  RecentHeaders recent;             // DDP headers sent, for Terminates that quote them
  // DirectionModel::queues' entries for QN 0..3 once looked up (a map node's address stays
  // while the map lives: the stream's model moves, it is not copied, and swap_sides swaps the
  // models with these engines).
  std::array<QueueStats*, rdmap::DataSink::kQueues> queue_stats{};
  static_assert(std::is_nothrow_move_constructible_v<StreamModel> &&
                    std::is_nothrow_move_assignable_v<DirectionModel>,
                "queue_stats: a growing Model::streams must move its maps, not copy them");
  std::set<FindingId> once;  // noisy findings reported once per direction
  bool truncated_reported = false;
  Consequence last_loss = Consequence::none;  // what this direction last lost octets to
  // Analyzer::note_receiver_drop: a packet of this direction was dropped before its receiver's
  // TCP; an ACK past a hole proves no capture loss until the holes have filled.
  bool receiver_dropped = false;
  // The first rule broken in this direction that stops its Data Sink, by profile
  // (findings/sink_profile.h): what a Terminate from the receiver is held against.
  struct Prediction {
    SinkAnswer answer;
    FindingId id = FindingId::count_;
    std::uint64_t frame = 0;
  };
  std::array<std::optional<Prediction>, 2> predicted;  // by SinkProfile
};

// A DDP stream, whatever its LLP: over MPA one TCP connection (its reassemblers and framers
// used), over SCTP one SCTP stream of an association (engine_sctp.cpp feeds the DDP segments;
// `reasm` and `framer` stay idle).
struct SctpStreamState;  // engine_sctp.cpp's, below

struct Connection {
  Connection(const Limits& l, HistoryBudget* budget)
      : d{std::make_unique<DirectionEngine>(l, budget),
          std::make_unique<DirectionEngine>(l, budget)} {}
  // Direction states live behind pointers: swapping sides (once MPA tells which side is the
  // initiator) may happen while one of them is framing, and must not move it.
  DirectionEngine& ds(int i) { return *d[i]; }
  int index_of(const DirectionEngine* s) const { return d[0].get() == s ? 0 : 1; }
  std::uint32_t stream = 0;
  std::array<std::unique_ptr<DirectionEngine>, 2> d;
  bool provisional = true;  // client side guessed, not yet proven by SYN or MPA Request
  std::optional<StreamHint> hint;
  std::uint64_t reply_frame = 0;  // the MPA Reply's frame (0: none seen)
  bool replaced = false;          // a new connection on its 4-tuple began: it has ended
  // TCP: this connection's share of Impl::pending_total and resync_total, as feed_tcp last left
  // them (only feed_tcp changes what its reassemblers and framers hold before finish()).
  std::size_t held_share = 0, resync_share = 0;
  std::unique_ptr<UlpStream> ulp;  // the upper layer's decoders and commands (engine_ulp.cpp)
  // llp sctp: the association (index into Impl::assocs) and whether the stream's client is the
  // association's second endpoint (stream direction = association direction XOR flipped).
  Llp llp = Llp::mpa;
  std::size_t assoc = kNoIndex;
  bool flipped = false;
  std::unique_ptr<SctpStreamState> sctp;
};

// ---- SCTP (engine_sctp.cpp) -----------------------------------------------------------------

// A DATA chunk held until the TSNs before it arrive.
struct SctpHeldChunk {
  std::uint32_t tsn = 0;
  std::uint8_t flags = 0;
  std::uint16_t stream_id = 0;
  std::uint16_t ssn = 0;
  std::uint32_t ppid = 0;
  Bytes data;
  FrameSlice slice;
};

// A user message being put together from its fragments (B ... E), per SCTP stream and U flag.
struct SctpMessageBuild {
  std::uint32_t ppid = 0;
  Bytes data;
  std::vector<FrameSlice> slices;
  std::uint32_t chunks = 0;
  std::uint32_t first_tsn = 0;  // of its B fragment
  bool oversize = false;        // past the cap: dropped until its E fragment
};

// A whole user message of PPID 16 or 17 waiting for its turn in DDP-SSN order.
struct SctpOrderedMessage {
  SctpMessageBuild m;
  std::optional<wire::DdpSessionControl> control;  // PPID 17, decoded
  bool allowed_early = false;  // active side: Initiate acknowledged or answered when it came
  std::uint64_t frame = 0;     // of its first octet
};

// What one SCTP stream carrying DDP keeps beyond a Connection's: each stream direction's DDP-SSN
// order and the DDP Stream Session's rules (sctp/ddp_session.h). Indexed by stream direction
// (0: client, the active side).
struct SctpStreamState {
  struct Direction {
    sctp::SsnOrder<SctpOrderedMessage> order;
    std::size_t held_bytes = 0;  // octets waiting in `order` (counted in the total)
    // TSNs of this direction were lost from the capture: DDP-SSN holes are capture loss.
    bool loss_pending = false;
    std::pair<std::uint16_t, std::uint16_t> given_up{};  // last skipped [from, to)
    bool too_large_reported = false;                     // sctp.segment-too-large: once
  };
  std::array<Direction, 2> d;  // swapped whole when the sides are placed
  sctp::StreamSession session{sctp::StreamSession::Phase::idle};
  bool sides_known = false;                   // an Initiate, Accept or Reject placed the sides
  std::optional<std::uint32_t> initiate_tsn;  // the active side's Initiate (§6.6)
  bool answer_arrived = false;                // an Accept, Reject or Terminate came back
};

// One direction of an association: its sender's DATA chunks in TSN order (RFC 9260 §6.5).
struct SctpDirection {
  bool tsn_known = false;
  std::uint32_t next_tsn = 0;                          // the TSN expected next
  std::map<std::uint32_t, SctpHeldChunk> ahead;        // chunks past a hole, by TSN
  std::size_t ahead_bytes = 0;                         // their octets plus kHeldOverhead each
  std::map<std::uint32_t, SctpMessageBuild> building;  // by stream id | U << 16
  // CRC32c of the last delivered chunks' data, by TSN: what a retransmission is compared with.
  std::deque<std::pair<std::uint32_t, std::uint32_t>> recent;
  bool ppid_reported = false;                       // sctp.ppid-invalid: once per direction
  bool ordered_reported = false;                    // sctp.chunk-ordered: once per direction
  std::optional<std::uint32_t> peer_cum_ack;        // the peer's latest cumulative TSN ack
  bool truncated_reported = false;                  // capture.truncated-frame: once per direction
  bool zero_checksum_reported = false;              // sctp.checksum-unfilled: once per direction
  static constexpr std::size_t kHeldOverhead = 96;  // per held chunk: the map node and header
  static constexpr std::size_t kRecent = 1024;
};

struct SctpAssociation {
  std::array<net::Endpoint, 2> ep;      // ep[0]: the INIT's sender, or the first sender seen
  bool provisional = true;              // ep[0] guessed, not proven by an INIT
  bool setup_seen = false;              // the INIT or INIT ACK was captured
  std::array<std::uint32_t, 2> vtag{};  // the tag packets from ep[i] carry
  std::array<std::optional<std::uint32_t>, 2> adaptation;  // code point ep[i] announced
  bool over_udp = false;
  std::array<SctpDirection, 2> d;                // d[i]: what ep[i] sends
  std::map<std::uint16_t, std::size_t> streams;  // SCTP stream id -> DDP stream (conns index)
  bool closed = false;                           // ABORT or SHUTDOWN COMPLETE seen
  bool shutdown = false;                         // SHUTDOWN seen: a graceful end
  std::array<bool, 2> init_seen{};               // ep[i]'s INIT (0) or INIT ACK (1) captured
  bool adaptation_reported = false;              // sctp.adaptation-missing: once
};

struct ConnectionKey {
  net::Endpoint a, b;
  auto operator<=>(const ConnectionKey&) const = default;
};

// ---- sharded analysis (engine_shards.cpp) ---------------------------------------------------
// `ddpscope analyze --threads N` runs N - 1 engines, each on the streams Analyzer::shard_of
// gives it, and merges their models into the one engine's (analyzer.h, "sharded"). What one
// engine decides from the whole capture is ordered by Stamps: the place in capture order of the
// event an engine was analysing (a frame or a note, numbered by the host), or of the step of
// finish() (kFinishSctp, kFinishConns with the global index of the association or stream).
struct Stamp {
  std::uint64_t major = 0;
  std::uint64_t minor = 0;
  auto operator<=>(const Stamp&) const = default;
};
inline constexpr std::uint64_t kFinishSctp = UINT64_MAX - 1;
inline constexpr std::uint64_t kFinishConns = UINT64_MAX;

// The Stamps of the pages of content one shard retained, in its order: the one retention cap
// (Limits::payload_retention) is shared in capture order. Written by its shard's thread, read
// by the others' (count_before) while it grows: published through an atomic size, stored in
// chunks that never move.
class PageLog {
 public:
  explicit PageLog(std::size_t cap) : chunks_((cap + kChunk - 1) / kChunk) {}
  void push(const Stamp& s) {
    const std::size_t n = size_.load(std::memory_order_relaxed);
    auto& chunk = chunks_[n / kChunk];
    if (!chunk) chunk = std::make_unique<Stamp[]>(kChunk);
    chunk[n % kChunk] = s;
    size_.store(n + 1, std::memory_order_release);
  }
  std::size_t size() const { return size_.load(std::memory_order_acquire); }
  const Stamp& at(std::size_t i) const { return chunks_[i / kChunk][i % kChunk]; }
  // Entries published with a Stamp before `s` (the log is in Stamp order).
  std::size_t count_before(const Stamp& s) const {
    std::size_t lo = 0, hi = size();
    while (lo < hi) {
      const std::size_t mid = lo + (hi - lo) / 2;
      if (at(mid) < s)
        lo = mid + 1;
      else
        hi = mid;
    }
    return lo;
  }

 private:
  static constexpr std::size_t kChunk = 4096;
  std::vector<std::unique_ptr<Stamp[]>> chunks_;
  std::atomic<std::size_t> size_{0};
};

// The retention cap of a shard: a page is retained unless at least `cap` pages are known to be
// retained before it in capture order (its own shard's, and what the others have published
// with an earlier Stamp). Another shard may still be behind, so a page may be retained that one
// engine would not have; the merge finds those (the first `cap` pages of all logs in Stamp order
// are the one engine's), drops them, and takes the analysis as inexact if new content was
// compared with one (`compared_max`).
class ShardPageGate final : public PageGate {
 public:
  ShardPageGate(const Stamp& stamp, std::size_t cap, PageLog& own,
                const std::vector<const PageLog*>& all)
      : stamp_(stamp), cap_(cap), own_(own), all_(all) {}
  std::uint32_t admit() override {
    if (!open()) return 0;
    own_.push(stamp_);
    return static_cast<std::uint32_t>(own_.size());
  }
  bool open() override {
    std::size_t n = own_.size();
    if (n >= cap_) return false;
    std::size_t upper = n;  // every published page, whatever its Stamp
    for (const PageLog* l : all_)
      if (l != &own_) upper += l->size();
    if (upper < cap_) return true;
    for (const PageLog* l : all_)
      if (l != &own_) n += l->count_before(stamp_);
    return n < cap_;
  }
  void compared(std::uint32_t ordinal) override {
    if (ordinal > compared_max) compared_max = ordinal;
  }
  std::uint32_t compared_max = 0;

 private:
  const Stamp& stamp_;
  std::size_t cap_;
  PageLog& own_;
  const std::vector<const PageLog*>& all_;
};

// What an engine that is one shard of a sharded analysis keeps for the merge.
struct ShardState {
  ShardState(std::size_t page_cap, const std::vector<const PageLog*>& all)
      : log(page_cap), gate(stamp, page_cap, log, all) {}
  Stamp stamp;                        // what is being analysed
  std::vector<Stamp> finding_stamps;  // of each finding kept, in Model::findings order
  std::vector<Stamp> stream_stamps;   // of each stream's creation, by its (local) id
  std::vector<Stamp> assoc_stamps;    // of each SCTP association's creation
  std::set<RegionKey> touched;        // shadow buffers the analysis looked up or created
  std::set<net::Address> ensured;     // hosts given the regions file's ownerless regions
  bool regions_capped = false;        // a buffer was not created (max_regions)
  std::size_t pending_peak = 0;       // the budgets shared by all streams: the most asked
  std::size_t resync_peak = 0;
  std::size_t sctp_held_peak = 0;
  std::vector<std::uint32_t> named_streams;  // other streams a finding's text may name
  // finish(): the global index of each association and stream, by local index.
  std::vector<std::uint64_t> finish_assoc, finish_conn;
  std::uint64_t last_seq = 0;  // the event of the last TCP or SCTP frame fed (cur_frame's)
  PageLog log;
  ShardPageGate gate;
};

struct Analyzer::Impl {
  explicit Impl(AnalyzerOptions o);

  AnalyzerOptions options;
  std::vector<std::unique_ptr<AdvertisementDecoder>> advertisers;
  // ---- sharded (engine_shards.cpp) ----
  // The facade's engine of a sharded analysis holds the shards (before `model`: the merged
  // model's shadow pages live in the shards' arenas) and analyses no frame itself: it counts
  // frames, keeps the notes tied to no stream, and after finish() the merged model.
  std::vector<const PageLog*> page_logs;
  std::vector<std::unique_ptr<Impl>> shards;
  std::unique_ptr<ShardState> shard;  // set in the facade's engine and in each shard
  std::uint64_t seq = 0;              // the facade's last event number
  bool exact = true;                  // the merge is the one engine's model
  std::string inexact_reason;
  std::string unsharded_reason;  // why more shards were asked than run
  void make_shards(unsigned n);
  void finish_shards();  // each shard's finish(), then the merge into `model`
  void merge_shards_with(std::size_t stream_count,
                         const std::vector<std::vector<std::uint32_t>>& to_global);
  // A TCP or SCTP frame into a shard's engine (on_frame less the counters).
  inline void on_stream_frame(std::uint64_t frame, std::int64_t ts, const net::FrameDecode& d);
  Model model;
  AnalysisObserver* observer = nullptr;
  // Shared by every connection's reassemblers: declared before `conns`, which return their
  // history to it when destroyed.
  HistoryBudget history_budget{options.limits.max_history_total};
  std::map<ConnectionKey, std::size_t> conn_index;
  std::vector<std::unique_ptr<Connection>> conns;
  std::map<ConnectionKey, std::size_t> assoc_index;
  std::vector<std::unique_ptr<SctpAssociation>> assocs;
  std::size_t sctp_held_total = 0;  // octets held by all associations' directions
  std::vector<RegionSpec> user_regions;
  bool regions_known = false;  // the user gave a regions file (even an empty one)
  std::set<std::string, std::less<>> limits_reported;
  // The connection of the previous segment: captures are runs of one connection's segments.
  ConnectionKey last_key;
  std::size_t last_conn = kNoIndex;
  ShadowBuffer* last_region = nullptr;  // see find_region()
  bool ranges_capped = false;           // max_ranges_per_region reported
  bool history_capped = false;          // max_history_total reported
  bool records_capped = false;          // max_message_records reported
  std::uint64_t pending_total = 0;      // out-of-order octets held by all reassemblers
  std::uint64_t resync_total = 0;       // octets held by all framers looking for a boundary

  // The timing model (analysis/timing.h), when asked for: every hook is `if (timing)`.
  std::unique_ptr<Timing> timing_model;
  Timing* timing = nullptr;

  // The frame being processed and the PDU being built (findings attach to it).
  std::uint64_t cur_frame = 0;
  std::int64_t cur_ts = 0;
  PduEvent* cur_ev = nullptr;
  std::uint64_t next_pdu_id = 0;  // PduEvent::id of the next event framed
  // The events PDUs are built in, reused (PduEvent::reset) rather than constructed and
  // destroyed per PDU, their vectors keeping their storage: a Send completes and delivers a
  // message, two allocations a PDU otherwise. A stack, as building one event can build another
  // (framing one direction's MPA Reply frames the other's octets); each is owned apart, so an
  // outer event stays where it is while the stack grows. Observers see an event only during
  // on_pdu, as before.
  std::vector<std::unique_ptr<PduEvent>> events;
  std::size_t events_used = 0;
  PduEvent& take_event() {
    if (events_used == events.size()) events.push_back(std::make_unique<PduEvent>());
    return *events[events_used++];
  }
  // The event take_event() returned last, back to default values for the next PDU.
  void give_back_event(PduEvent& ev) {
    ev.reset();
    --events_used;
  }

  // ---- findings (engine_tcp.cpp) ----
  struct Ctx {
    std::uint32_t stream = UINT32_MAX;
    int dir = -1;
    std::uint64_t frame = 0;
    const std::vector<FrameSlice>* slices = nullptr;  // the PDU's octets, when there is one
  };
  // A PDU's context: its first octet's frame (or `fallback`), every frame it spans.
  static Ctx ctx_of(const Connection& c, int dir, const std::vector<FrameSlice>& slices,
                    std::uint64_t fallback);
  class ShadowView;  // the Data Sink model's view of the shadow buffers (engine_sink.cpp)
  ddp::RegionFacts region_facts;  // what ShadowView::region() last returned
  class MessagesInFlight;         // the shadow memory's WriterState (engine_sink.cpp)
  // `consequence`: what hid the octets the finding follows from (a note, not the peer's fault).
  std::size_t report(FindingId id, const Ctx& ctx, std::string message,
                     Consequence consequence = Consequence::none,
                     std::optional<TerminateError> term = std::nullopt);
  SinkProfile profile() const { return options.sink_profile.value_or(SinkProfile::rfc); }
  // A rule-layer Violation as a finding: its id, detail, and what the profile's sink does.
  std::size_t report(const Violation& v, const Ctx& ctx,
                     Consequence consequence = Consequence::none);
  // Reported once per limit. Called for every item past a cap, so the repeat costs a lookup.
  void limit_reached(std::string_view what, const Ctx& ctx);
  bool once(DirectionEngine& ds, FindingId id) { return ds.once.insert(id).second; }

  // ---- the facade (analyzer.cpp) ----
  // A decoded frame: counted, then handed to TCP or SCTP. Folded into Analyzer::feed_frame,
  // feed_decoded and feed_tcp (every frame passes through two or three of them).
  // `stays_valid`: feed_decoded's, the frame lies where the host keeps it valid until finish(),
  // if AnalyzerOptions::frames_stay_valid says the host does.
  inline void on_frame(std::uint64_t frame, std::int64_t ts, std::size_t captured,
                       const net::FrameDecode& d, bool stays_valid);
  inline void on_tcp_frame(std::uint64_t frame, std::int64_t ts, const net::TcpSegment& seg,
                           bool stays_valid);

  // ---- TCP (engine_tcp.cpp) ----
  void feed_tcp(std::uint64_t frame, std::int64_t ts, const net::TcpSegment& seg, bool stays_valid);
  // What feed_tcp tells the timing model, out of line (called only with timing on).
  [[gnu::cold, gnu::noinline]] void timing_window(std::uint32_t stream, int dir,
                                                  const net::TcpSegment& seg, std::uint64_t frame,
                                                  std::int64_t ts);
  // Before a segment goes to reassembly: a stall if it lies past a hole; the direction's
  // retransmitted octets so far.
  [[gnu::cold, gnu::noinline]] std::uint64_t timing_segment(std::uint32_t stream, int dir,
                                                            const DirectionEngine& ds,
                                                            std::uint32_t seq, bool empty,
                                                            std::uint64_t frame, std::int64_t ts);
  void note_receiver_drop(const net::Endpoint& from, const net::Endpoint& to);
  // The FPDUs a segment held out of order shows by itself, to the observer (HeldFpdu).
  void report_held(Connection& c, int dir, std::uint64_t frame, ByteView payload,
                   std::uint64_t offset);
  // The segment's connection: the last one's, checked inline (most segments), else looked up
  // or created out of line (lookup_connection).
  [[gnu::always_inline]] Connection* connection_for(std::uint64_t frame, std::int64_t ts,
                                                    const net::TcpSegment& seg) {
    const bool pure_syn = (seg.flags & net::tcp_flag::syn) && !(seg.flags & net::tcp_flag::ack);
    if (last_conn != kNoIndex && !pure_syn &&
        ((same_endpoint(seg.src, last_key.a) && same_endpoint(seg.dst, last_key.b)) ||
         (same_endpoint(seg.src, last_key.b) && same_endpoint(seg.dst, last_key.a))))
      return conns[last_conn].get();
    return lookup_connection(frame, ts, seg);
  }
  Connection* lookup_connection(std::uint64_t frame, std::int64_t ts, const net::TcpSegment& seg);
  void on_data(Connection& c, int dir, std::uint64_t offset, ByteView data, std::uint64_t frame,
               std::uint32_t offset_in_frame);
  void on_gap(Connection& c, int dir, std::uint64_t offset, std::uint64_t length,
              std::uint64_t next_frame);
  // Octets a direction's framer holds while it looks for an FPDU boundary or waits for the
  // MPA Reply (a partial FPDU in order is bounded by the FPDU size, not counted).
  static std::size_t resync_held(const DirectionEngine& ds) {
    const auto st = ds.framer.state();
    return st == MpaFramer::State::resync || st == MpaFramer::State::wait_params
               ? ds.framer.buffered()
               : 0;
  }
  // A connection's shares of pending_total and resync_total as its directions hold them now
  // (Connection::held_share and resync_share keep what feed_tcp last found).
  static std::size_t held_now(Connection& c) {
    return c.ds(0).reasm.held_bytes() + c.ds(1).reasm.held_bytes();
  }
  static std::size_t resync_now(Connection& c) {
    return resync_held(c.ds(0)) + resync_held(c.ds(1));
  }
  void finish();
  void add_regions(std::span<const RegionSpec> regions);
  void install_region(const RegionSpec& r, const net::Address& owner);
  void ensure_ownerless_regions(const net::Address& host);
  // The protection domain the user said the Data Sink at `sink` uses (an exact endpoint first,
  // then its host's), or nullopt.
  std::optional<std::uint32_t> protection_domain_of(const net::Endpoint& sink) const;

  // Adapts reassembly and framing callbacks to one connection direction. The direction is
  // looked up from the state object on every call: sides may be swapped while a callback chain
  // is running.
  struct DirectionCallbacks : ReassemblyListener, MpaFramerListener {
    DirectionCallbacks(Impl& i, Connection& c, int d) : impl(i), conn(c), state(&c.ds(d)) {}
    Impl& impl;
    Connection& conn;
    const DirectionEngine* state;
    int dir() const { return conn.index_of(state); }
    void on_data(std::uint64_t offset, ByteView data, std::uint64_t frame,
                 std::uint32_t offset_in_frame) override;
    void on_gap(std::uint64_t offset, std::uint64_t length, std::uint64_t next_frame) override;
    void on_conflict(std::uint64_t offset, std::uint64_t length, std::uint64_t frame) override;
    void on_raw_pdu(RawPdu& pdu) override;
  };

  // ---- SCTP (engine_sctp.cpp) ----
  void feed_sctp(std::uint64_t frame, std::int64_t ts, const net::SctpDatagram& dg);
  // The association's index in `assocs` (kNoIndex past max_streams) and the sender's side.
  std::size_t association_for(std::uint64_t frame, const net::SctpDatagram& dg,
                              const wire::SctpCommonHeader& h, int& dir);
  void sctp_data(SctpAssociation& a, std::size_t ai, int dir, const wire::SctpData& d,
                 FrameSlice slice);
  void sctp_deliver(SctpAssociation& a, std::size_t ai, int dir, SctpHeldChunk& chunk);
  void sctp_acked(SctpAssociation& a, std::size_t ai, int dir, std::uint32_t cum_ack);
  void sctp_gap_to(SctpAssociation& a, int dir, std::uint32_t tsn, std::uint64_t frame);
  void sctp_drain(SctpAssociation& a, std::size_t ai, int dir);
  void sctp_message(SctpAssociation& a, std::size_t ai, int dir, std::uint16_t stream_id,
                    SctpMessageBuild& m);
  Connection* sctp_stream(SctpAssociation& a, std::size_t ai, std::uint16_t stream_id,
                          int client_dir, bool from_start);
  void sctp_in_order(Connection& c, int dir, std::uint16_t ssn, SctpOrderedMessage&& om);
  void sctp_skip_hole(Connection& c, int dir, bool end_of_input);
  void sctp_session(Connection& c, int dir, const wire::DdpSessionControl& m, const Ctx& ctx);
  void sctp_segment(Connection& c, int dir, SctpOrderedMessage& om, const Ctx& ctx);
  void sctp_finish();

  // ---- MPA (engine_mpa.cpp) ----
  void on_raw_pdu(Connection& c, int dir, RawPdu& p);
  void on_not_mpa(Connection& c, int dir, const Ctx& ctx);
  int on_reqrep(Connection& c, int dir, const wire::MpaReqRep& f, const Ctx& ctx);
  void settle(Connection& c, const wire::MpaReqRep& reply, const Ctx& ctx);
  inline void on_fpdu(Connection& c, int dir, RawPdu& p, PduEvent& ev, const Ctx& ctx);
  void check_setup_order(Connection& c, int dir, const wire::DdpHeader& first, const Ctx& ctx);
  void check_markers(Connection& c, int dir, const RawPdu& p, const Ctx& ctx);
  void swap_sides(Connection& c);
  void start_mid_stream(Connection& c, int dir, bool markers, std::optional<bool> crc);
  // At the end of input: a direction whose framer found no FPDU boundary (mpa.no-fpdu-boundary).
  void report_lost_framing(Connection& c, int dir);
  // Octets of this direction were lost (capture gap, unframed: `gap`) or dropped (`crc`): the
  // direction's Data Sink and the sender's own (whose requests and answers they carried).
  void lost_input(Connection& c, int dir, Consequence cause);

  // ---- DDP / RDMAP (engine_sink.cpp): the LLP boundary ----
  void on_ddp_segment(Connection& c, int dir, PduEvent& ev, const Ctx& ctx);
  // A segment's placed octets to the timing model (called only with timing on).
  [[gnu::cold, gnu::noinline]] void timing_placed(std::uint32_t stream, int dir, const PduEvent& ev,
                                                  bool is_tagged);
  inline void tagged_segment(Connection& c, int dir, PduEvent& ev, const Ctx& ctx,
                             const rdmap::SegmentStep& step);
  void untagged_segment(Connection& c, int dir, PduEvent& ev, const Ctx& ctx,
                        const rdmap::SegmentStep& step);
  void conflicting_placement(const Connection& c, const Ctx& ctx, const ShadowBuffer& buf,
                             const PlacedRange& r, const PlaceResult& pr);
  // `body`: the message's first octets (up to kBodyKeep).
  void untagged_message(Connection& c, int dir, PduEvent& ev, const Ctx& ctx,
                        const rdmap::SegmentStep& step, ByteView body);
  void learn_from_read_request(Connection& c, int dir, const wire::ReadRequest& rr, const Ctx& ctx);
  // ---- upper layers (engine_ulp.cpp) ----
  UlpStream& ulp_of(Connection& c) { return c.ulp ? *c.ulp : new_ulp(c); }
  UlpStream& new_ulp(Connection& c);  // ulp_of's first call on a stream, out of line
  // The MPA Reply settled the stream: its Request's and Reply's private data to the decoders.
  void ulp_setup(Connection& c);  // MPA: the two frames' ULP private data
  void ulp_setup(Connection& c, std::optional<ByteView> request_pd,
                 std::optional<ByteView> reply_pd);
  // StreamModel::ulp_detail of every claimed stream whose decoder state changed since: written
  // when the model is read (Analyzer::model()), not per message.
  std::vector<Connection*> ulp_stale;
  void refresh_ulp_details();
  // A complete Send: regions, commands and completions the decoders find in it.
  // `record`: the message's record (kNoIndex: none), named after what the decoders found.
  void advertisements(Connection& c, int dir, PduEvent& ev, const Ctx& ctx, std::uint8_t op,
                      ByteView body, std::uint64_t length, std::uint32_t msn,
                      std::uint32_t invalidate_stag, std::size_t record);
  void name_message(const UlpStream& u, MessageRecord& m,
                    const std::vector<UlpStreamDecoders::Decoded>& found);
  void ulp_learn(Connection& c, int dir, const Ctx& ctx, std::size_t decoder,
                 const AdvertisedRegion& a, const std::string& command);
  void ulp_command(Connection& c, int dir, const Ctx& ctx, std::size_t decoder, UlpCommand& cmd);
  void ulp_complete(Connection& c, int dir, PduEvent& ev, const Ctx& ctx, std::size_t decoder,
                    const UlpCompletion& done, std::uint8_t opcode, std::uint32_t invalidate_stag);
  // A placed RDMA Write segment, and a Read Request: checked against the command that
  // advertised the region, counted as its data.
  void ulp_tagged(Connection& c, int dir, const PduEvent& ev, const Ctx& ctx,
                  const rdmap::SegmentStep& step);
  void ulp_read_request(Connection& c, int dir, const wire::ReadRequest& rr, const Ctx& ctx);
  void ulp_lost(Connection& c, Consequence cause);
  void ulp_forget(UlpStream& u, const UlpStream::CommandKey& k);
  void terminate(Connection& c, int dir, PduEvent& ev, const Ctx& ctx, ByteView body);
  inline std::size_t new_record(Connection& c, int dir, std::uint8_t opcode, bool is_tagged);
  inline std::uint64_t delivery_push(Connection& c, int dir, std::size_t record);
  inline void complete(Connection& c, int dir, std::uint64_t delivery_id, std::size_t record,
                       PduEvent& ev, bool placed);
  void abandon(Connection& c, int dir, std::uint64_t delivery_id);
  // ShadowMemory::find with the previous answer kept: a message's segments all go to one
  // region. Buffers are never removed from the model, so a found buffer's address stays valid.
  // Asked twice per tagged segment (the Data Sink model's region check, then placement).
  ShadowBuffer* find_region(const RegionKey& key) {
    if (last_region != nullptr && last_region->key.stag == key.stag &&
        same_address(last_region->key.owner, key.owner))
      return last_region;
    return lookup_region(key);
  }
  ShadowBuffer* lookup_region(const RegionKey& key);  // the ShadowMemory lookup behind it
  // The stream has ended (FIN or RST seen, or its 4-tuple reused).
  bool stream_ended(std::uint32_t stream) const;
  // What `b` was taught by another stream's own traffic (an advertisement, a Read Request), and
  // that stream has ended: the registration it described ended with it.
  bool learned_elsewhere_and_ended(const ShadowBuffer& b, std::uint32_t stream) const;
  ShadowBuffer* region_for(Connection& c, int dir, const RegionKey& key);
  void finish_direction(Connection& c, int dir);
};

}  // namespace ddpscope
