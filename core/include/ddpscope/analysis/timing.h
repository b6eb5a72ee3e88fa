// SPDX-License-Identifier: GPL-2.0-or-later
// The timing model (issue 42): operation latencies, placed-octet throughput and the stalls that
// delayed operations, read from what the analysis already recognises (no parsing of its own).
// The engine feeds it at its hooks when AnalyzerOptions::timing is set; hosts read it through
// Analyzer::timing(). Its memory is bounded: every latency goes into a log-scale histogram;
// exact samples are kept only up to Limits::max_timing_samples (all kinds and streams together),
// after which a kind's median and p99 are estimated from its histogram; the slowest operations
// are a top-N; a request whose answer never comes is only counted (the Data Sink model's ORQ,
// bounded by max_outstanding_reads, and the ULP's outstanding commands hold what is pending).
//
// Latency is capture time: from the frame whose arrival completed a request (where the engine
// recognises it) to the frame whose arrival completed its answer (its first segment for
// rdma-read-first). A request's frame number is that of its first octet (the plugin's "request
// in" names the frame it draws the request's PDU in, the one that completed it: the same unless
// the request spans frames); an answer's is the completing frame (a hole filled late, it is the
// frame that filled it). A capture taken at one host sees that host's view of the round trip.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string_view>
#include <tuple>
#include <vector>

namespace ddpscope {

// What an operation is, as its request and answer were paired.
enum class OpKind : std::uint8_t {
  rdma_read,        // Read Request -> last octet of its Read Response (RFC 5040 §4.4, §4.5)
  rdma_read_first,  // Read Request -> first segment of its Read Response
  atomic,           // Atomic Request -> Atomic Response (RFC 7306 §4)
  nvme_command,     // NVMe-oF command capsule -> its CQE (by CID)
  iser_command,     // iSER SCSI Command -> SCSI Response (by ITT)
  rpc_call,         // RPC-over-RDMA call -> reply (by XID)
  smb_request,      // SMB Direct request -> response (by MessageId)
  ulp_command,      // another decoder's command -> completion
};
inline constexpr std::size_t kOpKinds = 8;
std::string_view to_string(OpKind k);  // "rdma-read", "rdma-read-first", "atomic", ...
// An upper layer's command (nvme_command ... ulp_command), not an RDMAP operation.
inline bool is_ulp_kind(OpKind k) {
  return k >= OpKind::nvme_command;
}
// The kind of a ULP decoder's commands, by the decoder's name ("nvme-rdma" -> nvme_command).
OpKind op_kind_of_ulp(std::string_view decoder);

// What can hold an operation up below RDMAP, as the engine sees it on the stream.
enum class StallKind : std::uint8_t {
  // Octets (TCP) or a DATA chunk (SCTP) seen again: the sender retransmitted; or a TCP segment
  // that fills a hole later octets had passed (the original lost before the capture point).
  retransmission,
  out_of_order,  // a TCP segment came past a hole (reordering, or a loss to be retransmitted)
  capture_loss,  // octets missing from the capture (tcp.gap), declared by the engine
  sctp_gap,      // TSNs missing from the capture (sctp.gap)
  zero_window,   // a TCP receiver advertised a zero window
  crc_drop,      // an FPDU dropped for its CRC (RFC 5044 §8): its octets come again
  // A Read Request filled the responder's IRD (RFC 5040 §5.2, the IRD of RFC 6581 or RDMA CM):
  // until one is answered, the requester may issue no further Read on the stream.
  read_credit,
};
inline constexpr std::size_t kStallKinds = 7;
std::string_view to_string(StallKind k);  // "retransmission", "out-of-order", ...

// Events of each kind seen on the operation's stream (both directions) between its request
// and its answer. `incomplete`: older events had left the stream's event ring, so some may
// be missing from the count.
struct StallCounts {
  std::array<std::uint32_t, kStallKinds> events{};
  bool incomplete = false;
  // The first events in the interval, oldest first, so a report can name the frames (the
  // retransmission that delayed a Read); `kept` of them are set.
  struct Event {
    StallKind kind = StallKind::retransmission;
    std::uint64_t frame = 0;
  };
  static constexpr std::size_t kFirst = 4;
  std::array<Event, kFirst> first{};
  std::uint8_t kept = 0;
  bool any() const {
    for (auto n : events)
      if (n) return true;
    return false;
  }
};

// Latencies in buckets of a quarter octave: bucket i holds [lower(i), lower(i + 1)), lower(i)
// being 2^(i/4) ns rounded up (bucket 0 also holds 0). An estimate from it is within a factor
// of 2^(1/8) (about 9 %) of the true value.
class LatencyHistogram {
 public:
  static constexpr std::size_t kPerOctave = 4;
  static constexpr std::size_t kBuckets = 64 * kPerOctave;
  void add(std::uint64_t ns);
  void merge(const LatencyHistogram& other);
  std::uint64_t count() const { return count_; }
  std::uint64_t min() const { return count_ ? min_ : 0; }
  std::uint64_t max() const { return max_; }
  std::uint64_t bucket(std::size_t i) const { return buckets_[i]; }
  // The value of rank ceil(q * count) (nearest rank, 1-based), estimated as its bucket's
  // geometric middle, kept within [min, max]; the first and last rank are min and max
  // exactly. 0 when empty.
  std::uint64_t quantile(double q) const;
  static std::size_t bucket_of(std::uint64_t ns);
  static std::uint64_t lower(std::size_t i);  // lower(kBuckets) is UINT64_MAX

 private:
  std::array<std::uint64_t, kBuckets> buckets_{};
  std::uint64_t count_ = 0;
  std::uint64_t min_ = UINT64_MAX;
  std::uint64_t max_ = 0;
};

// The one latency of an operation: its answer's capture time less its request's; 0 when capture
// times step back (a capture merged from two clocks). The timing model and the per-PDU response
// time (SegmentFacts::response_time_ns) both take it from here.
inline std::uint64_t operation_latency_ns(std::int64_t request_ns, std::int64_t answer_ns) {
  return answer_ns > request_ns ? static_cast<std::uint64_t>(answer_ns - request_ns) : 0;
}

struct LatencySample {
  std::uint64_t ns = 0;
  std::uint64_t request_frame = 0;
  std::uint64_t completion_frame = 0;
  StallCounts stalls;
};

// One kind of operation on one stream, requested from one direction (0: client->server).
struct OperationStats {
  OpKind kind = OpKind::rdma_read;
  std::uint32_t stream = 0;
  int direction = 0;           // the requester's direction
  std::uint64_t requests = 0;  // requests seen (for rdma-read-first: the same as rdma-read)
  LatencyHistogram histogram;  // every completion
  // Exact latencies while under the shared cap; `estimated` once one could not be kept (then
  // `exact` is emptied and quantiles come from the histogram).
  std::vector<std::uint64_t> exact;
  bool estimated = false;
  std::vector<LatencySample> slowest;  // slowest first, at most TimingOptions::top
  // Completions delayed by at least one stall event, in all and by kind.
  std::uint64_t stalled = 0;
  std::array<std::uint64_t, kStallKinds> stalled_by{};
  std::uint64_t completions() const { return histogram.count(); }
  // Requests with no answer in the capture (in flight at its end, lost, or forgotten).
  std::uint64_t unanswered() const {
    return requests > completions() ? requests - completions() : 0;
  }
  // Nearest rank: the exact value while every sample is kept, else the histogram's estimate.
  std::uint64_t quantile(double q) const;
};

// Octets a direction placed (DDP payload the Data Sink accepted: tagged placement and untagged
// messages) per interval since Timing's origin. The interval doubles, neighbours merged, when
// the capture outgrows TimingOptions::max_intervals of them.
struct IdleGap {
  std::int64_t start_ns = 0;  // capture time of the segment before the gap
  std::uint64_t ns = 0;
  std::uint64_t frame_before = 0;
  std::uint64_t frame_after = 0;
};
struct ThroughputSeries {
  std::uint32_t stream = 0;
  int direction = 0;
  std::uint64_t interval_ns = 0;
  std::vector<std::uint64_t> octets;  // octets[i]: placed in [origin + i*interval, +interval)
  std::uint64_t total = 0;
  std::uint64_t segments = 0;
  std::int64_t first_ns = 0, last_ns = 0;  // capture times of the first and last placement
  std::uint64_t last_frame = 0;
  // Gaps between placements of at least TimingOptions::idle_threshold_ns: count, sum, longest.
  std::uint64_t idle_count = 0;
  std::uint64_t idle_ns = 0;
  std::vector<IdleGap> longest_idle;  // longest first, at most TimingOptions::top
};

// Placed octets per STag region (its Data Sink's direction), up to TimingOptions::max_stags.
struct StagTraffic {
  std::uint32_t stream = 0;
  int direction = 0;
  std::uint32_t stag = 0;
  std::uint64_t octets = 0;
  std::uint64_t segments = 0;
  std::int64_t first_ns = 0, last_ns = 0;
  std::uint64_t first_frame = 0, last_frame = 0;
};

struct TimingOptions {
  std::size_t top = 10;                           // slowest operations and longest idle gaps kept
  std::uint64_t interval_ns = 1'000'000;          // throughput interval to start with (1 ms)
  std::size_t max_intervals = 1024;               // per direction; past it the interval doubles
  std::uint64_t idle_threshold_ns = 10'000'000;   // a gap this long is idle (10 ms)
  std::size_t max_stags = 4096;                   // STag rows; later STags only add to the totals
  static constexpr std::size_t kStallRing = 256;  // stall events remembered per stream
};

// One stall event as the stream's ring keeps it (Timing::stall_events).
struct StallEvent {
  std::int64_t ns = 0;  // capture time
  std::uint64_t frame = 0;
  StallKind kind = StallKind::retransmission;
};

class Timing {
 public:
  // `max_samples`: Limits::max_timing_samples.
  Timing(TimingOptions options, std::size_t max_samples);

  // ---- what the engine tells (capture order) ----
  // A request of `kind` from `direction` of `stream` (rdma_read counts rdma_read_first too).
  void request(OpKind kind, std::uint32_t stream, int direction);
  // Its answer: `direction` is the requester's, frames and times of the request and answer.
  // Returns the sample recorded (hosts that show operations per PDU take its latency).
  LatencySample completion(OpKind kind, std::uint32_t stream, int direction,
                           std::uint64_t request_frame, std::int64_t request_ns,
                           std::uint64_t frame, std::int64_t ns);
  // An event that can hold operations on `stream` up (`direction`: whose octets it concerns).
  void stall(std::uint32_t stream, int direction, StallKind kind, std::uint64_t frame,
             std::int64_t ns);
  // A TCP receiver's advertised window: a stall at each change to zero (per direction). Asked
  // per segment: nothing to do while no window is or was zero.
  void window(std::uint32_t stream, int receiver_direction, bool zero, std::uint64_t frame,
              std::int64_t ns) {
    if (zero || zero_windows_ > 0) window_change(stream, receiver_direction, zero, frame, ns);
  }
  // `octets` of a DDP segment of `direction` placed (tagged: into `stag`).
  void placed(std::uint32_t stream, int direction, std::optional<std::uint32_t> stag,
              std::uint64_t octets, std::uint64_t frame, std::int64_t ns);
  // The stream's sides were swapped (the MPA Request showed the initiator): directions flip.
  void swap_sides(std::uint32_t stream);

  // ---- what hosts read ----
  const TimingOptions& options() const { return options_; }
  // Ordered by stream, kind, direction.
  const std::map<std::tuple<std::uint32_t, OpKind, int>, OperationStats>& operations() const {
    return ops_;
  }
  std::vector<const ThroughputSeries*> series() const;  // by stream, direction
  const std::vector<StagTraffic>& stags() const { return stags_; }
  std::uint64_t stags_untracked_octets() const { return stags_other_; }
  // Stall events per stream and kind, both directions (index: stream id).
  std::array<std::uint64_t, kStallKinds> stall_totals(std::uint32_t stream) const;
  // The stream's stall events still in its ring (the last TimingOptions::kStallRing of
  // them), oldest first; stall_totals counts them all.
  std::vector<StallEvent> stall_events(std::uint32_t stream) const;
  std::int64_t origin_ns() const { return origin_; }
  std::size_t samples_kept() const { return samples_; }
  std::size_t max_samples() const { return max_samples_; }

 private:
  struct StreamState {
    std::vector<StallEvent> ring;  // up to kStallRing, oldest at `next` once full
    std::size_t next = 0;
    std::uint64_t events = 0;
    std::array<std::uint64_t, kStallKinds> totals{};
    std::array<bool, 2> zero_window{};
    std::array<std::optional<std::size_t>, 2> series;   // index into series_
    std::map<std::uint32_t, std::size_t> stag_rows[2];  // STag -> index into stags_
  };
  StreamState& state(std::uint32_t stream) {
    return stream < streams_.size() ? streams_[stream] : grow(stream);
  }
  StreamState& grow(std::uint32_t stream);
  void window_change(std::uint32_t stream, int receiver_direction, bool zero, std::uint64_t frame,
                     std::int64_t ns);
  StallCounts stalls_between(std::uint32_t stream, std::int64_t from, std::int64_t to) const;
  OperationStats& op(OpKind kind, std::uint32_t stream, int direction);
  void add_sample(OperationStats& s, const LatencySample& sample);

  TimingOptions options_;
  std::size_t max_samples_;
  std::size_t samples_ = 0;
  bool origin_set_ = false;
  std::int64_t origin_ = 0;
  std::map<std::tuple<std::uint32_t, OpKind, int>, OperationStats> ops_;
  std::vector<StreamState> streams_;
  std::vector<ThroughputSeries> series_;
  std::vector<StagTraffic> stags_;
  std::uint64_t stags_other_ = 0;
  std::size_t zero_windows_ = 0;  // directions whose receiver's window is zero now
};

}  // namespace ddpscope
