// SPDX-License-Identifier: GPL-2.0-or-later
// The plugin's per-capture state: core's Analyzer fed once, in frame order, on Wireshark's first
// pass, and what its observer reported, copied per PDU and indexed per frame so that any later
// visit (second pass, random clicks) only draws. Pure C++: no Wireshark types or calls here, so
// no longjmp can cross these frames.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <memory_resource>
#include <optional>
#include <span>
#include <string>
#include <unordered_set>
#include <vector>

#include "ddpscope/analysis/analyzer.h"
#include "ddpscope/wire/sctp.h"

namespace ddpscope::plugin {

// What few PDUs carry (an MPA Request/Reply, markers, framing found again, a Read Request, a
// Terminate, atomics, immediate data, a response link), kept out of line so that the common
// record (a Send, a Write segment) stays small: a capture of 800k Sends holds 800k records.
struct PduDetail {
  // MPA Request / Reply
  std::optional<wire::MpaReqRep> reqrep;
  // FPDU with markers: the octets with markers taken out, the markers and where they sit.
  Bytes fpdu;
  std::vector<wire::Marker> markers;
  std::vector<std::size_t> marker_offsets;
  bool leading_marker = false;
  // Framing found again with this FPDU by a search (after capture loss, unframed octets, or
  // at a mid-stream start), not carried over from the FPDU before.
  bool framing_resumed = false;
  bool resumed_after_gap = false;
  std::uint64_t resync_skipped = 0;
  std::optional<wire::ReadRequest> read_request;
  std::optional<wire::Terminate> terminate;
  std::optional<wire::AtomicRequest> atomic_request;
  std::optional<wire::AtomicResponse> atomic_response;
  std::optional<std::uint64_t> immediate_data;
  // Forward link filled when the answer arrives (Read/Atomic Request -> the frame of its first
  // answering PDU, iwarp.rdmap.response_in): from answered_by.
  std::optional<std::uint64_t> response_frame;
  // Operations (CaptureState::operation) whose request this PDU is, as core paired them
  // (CompletedOperation::request_pdu), linked when their answer arrived: a Read Request's
  // rdma-read-first and rdma-read, an Atomic Request's, a ULP command's.
  std::vector<std::uint32_t> answered_by;
  // Terminate names, computed once on the first pass (the drawing code builds no C++ strings).
  std::string term_layer_name, term_etype_name, term_code_name;
  std::string quoted_term_name;  // full "layer / type / code" of the Terminate

  // True when nothing here is set (the PDU needs no detail record).
  bool empty() const;
};

// An operation a PDU answered: core's CompletedOperation (the timing model's pairing and
// latency), with the frames where the plugin draws its request and its answer.
struct OperationRecord {
  OpKind kind = OpKind::rdma_read;
  int direction = 0;  // the requester's
  std::uint32_t stream = 0;
  // The frame the request's PDU is drawn in (its completed_frame): where its response_in is.
  // Core's CompletedOperation::request_frame is the request's first octet's frame, the same
  // unless the request spans frames (then the first is a continuation, drawn without it).
  std::uint64_t request_frame = 0;
  std::uint64_t response_frame = 0;  // the answering PDU's completed_frame (drawn there)
  std::uint64_t ns = 0;
  const std::string* operation = nullptr;  // ULP kinds: "NVMe Read" (interned)
  const std::string* command = nullptr;    // ULP kinds: "NVMe Read cid 12 nsid 1"
};

// One PDU as core framed and analysed it, owning copies of everything the tree shows.
struct PduRecord {
  PduKind kind = PduKind::fpdu;
  // sctp: one PPID 16 user message holding one DDP segment (RFC 5043), drawn without an MPA
  // item; raw is the message.
  bool sctp = false;
  bool crc_ok = true;
  // Reported by Analyzer::finish() (flushed at the end of the capture): drawn in the frame of
  // its last slice, which a one-pass run has printed before the PDU was known.
  bool end_of_capture = false;
  int direction = 0;
  std::uint32_t stream = 0;
  std::uint16_t ulpdu_length = 0;
  std::uint32_t crc_field = 0;
  std::optional<std::uint32_t> crc_expected;
  std::uint64_t stream_offset = 0;
  std::uint64_t completed_frame = 0;  // frame whose segment made core report the PDU
  // Held behind a hole that a later frame declared capture loss (an ACK past it, a full window):
  // that frame, when the PDU is drawn in its own (earlier) last frame. 0: not held.
  std::uint64_t released_frame = 0;
  // A provisional record (core's HeldFpdu): an FPDU decoded from a segment TCP held behind
  // this many octets not delivered yet (the hole and octets held after it); core has not
  // framed or analysed it. 0: core's own PDU.
  std::uint64_t held_missing = 0;
  std::int64_t ts_ns = 0;  // time of completed_frame
  // Octets as on the wire (markers included), `raw_size` of them. Stored only when they cannot
  // be read from completed_frame's own TCP payload: a PDU in one slice of completed_frame and
  // without markers keeps `raw` empty (raw_stored() false) and is drawn from that frame's tvb.
  Bytes raw;
  std::size_t raw_size = 0;
  // The lists below live in CaptureState's arena (one allocation per many PDUs, never moved).
  std::span<const FrameSlice> slices;
  // DDP / RDMAP. With crc_ok false: decoded as received, the FPDU dropped (not_placed()).
  std::optional<wire::DdpHeader> ddp;
  std::size_t payload_size = 0;
  SegmentFacts analysis;
  std::span<const std::size_t> messages_completed, messages_delivered;  // Model::messages
  std::span<const std::size_t> findings;                                // Model::findings
  std::span<const std::uint32_t> operations;  // answered by this PDU (CaptureState::operation)
  // The region's name, and the upper-layer command it serves as it is at this segment (issue
  // 14; null: no upper-layer command named the region). Shared by every segment that names the
  // same text (CaptureState keeps one copy of each).
  const std::string* region_text = nullptr;
  const std::string* region_ulp = nullptr;
  const std::string* region_command = nullptr;
  std::unique_ptr<PduDetail> detail;  // null: nothing of PduDetail is set

  // The rare parts (an empty PduDetail when there are none).
  const PduDetail& more() const;
  bool raw_stored() const { return raw.size() == raw_size; }
  // A DDP segment a compliant Data Sink drops unplaced: its FPDU failed the CRC (RFC 5044 §8).
  bool not_placed() const { return ddp.has_value() && !crc_ok; }
  // Length of the FPDU without markers (what the length, ULPDU, pad and CRC fields cover).
  std::size_t fpdu_size() const {
    return detail && !detail->fpdu.empty() ? detail->fpdu.size() : raw_size;
  }
  bool reassembled() const;  // more than one slice or not all in completed_frame
};

// A frame's list of PDU or finding indices, kept in CaptureState's arena: no heap allocation per
// frame (a capture of 800k Sends has 800k frames with one PDU each). It grows by doubling into
// a new block; the old one stays in the arena until the capture is closed.
template <class T>
class ArenaList {
 public:
  const T* begin() const { return data_; }
  const T* end() const { return data_ + size_; }
  std::size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  const T& front() const { return data_[0]; }
  const T& operator[](std::size_t i) const { return data_[i]; }
  void push_back(std::pmr::memory_resource& arena, T v) {
    if (size_ == cap_) {
      const std::uint32_t cap = cap_ == 0 ? 1 : 2 * cap_;
      T* data = static_cast<T*>(arena.allocate(cap * sizeof(T), alignof(T)));
      std::copy(data_, data_ + size_, data);
      data_ = data;
      cap_ = cap;
    }
    data_[size_++] = v;
  }

 private:
  T* data_ = nullptr;
  std::uint32_t size_ = 0;
  std::uint32_t cap_ = 0;
};

struct FrameRecord {
  bool claimed = false;  // our dissector took this frame's TCP payload
  // Where the TCP payload lies in the frame's own tvb (payload_length 0: not known): revisits
  // may not get TCP's payload field, and PDUs without a stored copy are drawn from here.
  std::uint32_t payload_offset = 0;
  std::uint32_t payload_length = 0;
  ArenaList<std::uint32_t> pdus_complete;
  ArenaList<std::uint32_t> pdus_continued;  // slices here, completed in another frame
  ArenaList<std::size_t> findings;          // Model::findings with Finding::frame == here
  // Model::findings this frame's segment raised for an earlier frame (the PDU completed here,
  // or a hole before it declared capture loss here): drawn here on the first visit only, where
  // a one-pass run (tshark without -2, a live capture) has printed their own frame already.
  ArenaList<std::size_t> findings_learnt;
  // Provisional records of FPDUs in this frame's segment, held out of order when it came
  // (drawn where no PDU of core's completes: what a one-pass run can show of them).
  ArenaList<std::uint32_t> pdus_held;
  // Operations whose answer core paired while this frame was fed (CaptureState::operation):
  // what a one-pass run can count here, where the answering PDU may lie in an earlier frame
  // (held behind a hole) that it has printed already.
  ArenaList<std::uint32_t> operations_learnt;
};

// One DDP Stream Session Control message (PPID 17, RFC 5043), decoded on the first pass.
struct SessionControlRecord {
  bool ok = false;
  wire::DdpSessionControl message;
  std::string function_name;  // "Enhanced Session Accept", ... ("Unknown" for other codes)
  std::string error;          // !ok: why it did not decode
  std::string info;
};

struct PluginOptions {
  AnalyzerOptions analyzer;
  std::optional<std::vector<RegionSpec>> regions;  // the regions file, when one is given
};

class CaptureState final : private AnalysisObserver {
 public:
  explicit CaptureState(PluginOptions options);
  ~CaptureState() override;
  CaptureState(const CaptureState&) = delete;
  CaptureState& operator=(const CaptureState&) = delete;

  // First pass only, frames in increasing order. Never throws (errors are swallowed and
  // counted: the dissector must not see a C++ exception).
  // `payload_in_frame`: the segment's payload lies in the frame's own octets (payload_offset),
  // so PDUs in it need no copy.
  void feed(std::uint64_t frame, std::int64_t ts_ns, const net::TcpSegment& segment,
            bool payload_in_frame) noexcept;
  // An SCTP packet (RFC 5043's LLP), for the Analyzer's SCTP LLP (which reassembles the user
  // messages itself). First pass only, in frame order.
  void feed_sctp(std::uint64_t frame, std::int64_t ts_ns, const net::SctpDatagram& packet) noexcept;
  // End of the sequential pass: flush core and attach end-of-capture findings.
  void finish() noexcept;
  bool finished() const { return finished_; }
  std::uint64_t last_fed_frame() const { return last_frame_; }
  // TCP segments Wireshark's TCP dissector handed us (the Model's frame count stays 0: the
  // plugin feeds segments, not frames).
  std::uint64_t segments_fed() const { return segments_fed_; }
  std::uint64_t internal_errors() const { return internal_errors_; }

  // True when core knows the TCP connection between a and b as iWARP (handshake seen, or a
  // mid-stream hint).
  bool is_iwarp(const net::Endpoint& a, const net::Endpoint& b) const;

  // Frame whose feeding raised the finding (0: at the end of the capture). Differs from
  // Finding::frame when a PDU spanning frames completes later: a one-pass run has printed
  // Finding::frame before the finding existed.
  std::uint64_t finding_reported_in(std::size_t finding) const {
    return finding < finding_reported_in_.size() ? finding_reported_in_[finding] : 0;
  }

  // A PPID 17 user message Wireshark's SCTP dissector hands the plugin, decoded by core's codec
  // on the first pass (the n-th of the frame) and found again on later visits; nullptr on an
  // internal error.
  const SessionControlRecord* sctp_session(std::uint64_t frame, std::size_t nth,
                                           ByteView message) noexcept;

  // Frame n's record (nullptr: none); frame_mut makes it. Records are never removed or moved.
  const FrameRecord* frame(std::uint64_t n) const {
    return n < frame_index_.size() && frame_index_[n] != 0 ? &frames_[frame_index_[n] - 1]
                                                           : nullptr;
  }
  FrameRecord& frame_mut(std::uint64_t n);
  const PduRecord& pdu(std::uint32_t i) const { return pdus_[i]; }
  const OperationRecord& operation(std::uint32_t i) const { return operations_[i]; }
  const Model& model() const { return analyzer_.model(); }
  const PluginOptions& options() const { return options_; }

 private:
  void on_pdu(const PduEvent& pdu) override;
  void on_finding(std::size_t finding_index) override;
  void on_held_fpdu(const HeldFpdu& fpdu) override;
  bool in_current_payload(const PduEvent& pdu) const;
  void collect_new_findings();
  void index_new_streams();
  // The request's record of an operation core paired (CompletedOperation::request_pdu), linked
  // to it; nullptr when core's PDU has no record.
  PduRecord* link_request(std::uint32_t operation, std::uint64_t request_pdu);
  const std::string* intern(std::string text);
  // A copy of `v` in the arena (empty: no copy).
  template <class T>
  std::span<const T> keep(const std::vector<T>& v);

  PluginOptions options_;
  Analyzer analyzer_;
  // The PDUs' lists (slices, messages, findings), the PDU records' blocks and the frame index's
  // nodes: bump-allocated, freed with the capture (records are never removed; a rehash leaves
  // the old bucket array here, at most as much again as the final one).
  std::pmr::monotonic_buffer_resource arena_;
  // A deque: growing never copies the records already stored.
  std::pmr::deque<PduRecord> pdus_{&arena_};
  std::deque<SessionControlRecord> sctp_sessions_;
  std::deque<OperationRecord> operations_;
  // Per core PduEvent::id, 1 + the index of its record in pdus_ (0: none yet). Held FPDUs'
  // provisional records have no id.
  std::vector<std::uint32_t> record_of_pdu_;
  std::map<std::pair<std::uint64_t, std::size_t>, std::size_t> sctp_session_index_;
  // The frames' records, and per frame number 1 + its record's index (0: none): Wireshark numbers
  // frames 1, 2, 3, ... A deque: growing never moves a record (the tap holds pointers).
  std::pmr::deque<FrameRecord> frames_{&arena_};
  std::vector<std::uint32_t> frame_index_;
  std::map<std::pair<net::Endpoint, net::Endpoint>, std::uint32_t> stream_index_;
  std::size_t streams_indexed_ = 0;
  std::size_t findings_collected_ = 0;
  std::vector<std::uint64_t> finding_reported_in_;
  std::uint64_t current_frame_ = 0;
  ByteView current_payload_;  // TCP payload of current_frame_, valid during feed()
  std::int64_t current_ts_ns_ = 0;
  std::uint64_t last_frame_ = 0;
  // One copy of each region text PduRecord points at (node-based: the pointers stay valid).
  std::unordered_set<std::string> texts_;
  std::optional<RegionKey> last_region_;  // region whose text last_region_text_ is
  const std::string* last_region_text_ = nullptr;
  std::uint64_t segments_fed_ = 0;
  std::uint64_t internal_errors_ = 0;
  bool finished_ = false;
};

// Info-column text for one PDU, written into `out` (at most `size` octets, NUL included,
// truncated beyond): built when the PDU is drawn, not kept per PDU. No allocation, so the
// drawing code may call it between Wireshark calls that longjmp.
constexpr std::size_t pdu_info_size = 512;
void describe_pdu(const PduRecord& pdu, char* out, std::size_t size) noexcept;

}  // namespace ddpscope::plugin
