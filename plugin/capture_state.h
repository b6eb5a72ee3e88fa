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
// Terminate, atomics, immediate data, a response link, findings, operations, stored octets,
// several slices), kept out of line so that the common record (a Send, a Write segment) stays
// small: a capture of 800k Sends holds 800k records, and most of them need none of this.
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

  // PduRecord's rarer parts (read through PduRecord's accessors):
  // Octets as on the wire, when they cannot be read from completed_frame's own TCP payload.
  Bytes raw;
  std::uint64_t released_frame = 0;  // PduRecord::released_frame
  std::uint64_t held_missing = 0;    // PduRecord::held_missing
  // The slices, unless there is exactly one (the record keeps that one).
  std::span<const FrameSlice> slices;
  // A DDP header the record's packed form does not hold (never, for a header core decoded).
  std::optional<wire::DdpHeader> ddp;
  // Model::messages completed / delivered, unless none or just the segment's own message (the
  // record says which). In CaptureState's arena, as the two lists below.
  std::span<const std::size_t> messages_completed, messages_delivered;
  std::span<const std::size_t> findings;      // Model::findings
  std::span<const std::uint32_t> operations;  // answered by this PDU (CaptureState::operation)

  // True when nothing here is set (the PDU needs no detail record).
  bool empty() const;
};

// A segment's analysis when it does not fit the record's packed form (a tagged segment's
// region, Read/Atomic links, a Terminate's quoted frame), with the region's texts.
struct PduFacts {
  SegmentFacts facts;
  // The region's name, and the upper-layer command it serves as it is at this segment (issue
  // 14; null: no upper-layer command named the region). Shared by every segment that names the
  // same text (CaptureState keeps one copy of each).
  const std::string* region_text = nullptr;
  const std::string* region_ulp = nullptr;
  const std::string* region_command = nullptr;
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

// One PDU as core framed and analysed it, owning copies of everything the tree shows. A capture
// of small messages holds one per frame (issue 43: 819k of them on the small benchmark shape),
// so what most PDUs carry is kept here packed, the rest in a PduDetail or PduFacts the record
// points at; the accessors give back what core reported. Wireshark numbers frames with 32 bits:
// frame numbers are kept as such. Written by CaptureState only.
class PduRecord {
 public:
  PduKind kind = PduKind::fpdu;
  std::uint8_t direction = 0;
  std::uint16_t ulpdu_length = 0;
  std::uint32_t stream = 0;
  std::uint32_t crc_field = 0;
  // Length of the octets as on the wire (markers included).
  std::uint32_t raw_size = 0;
  std::uint32_t payload_size = 0;  // of the DDP segment
  std::uint64_t stream_offset = 0;

  // sctp: one PPID 16 user message holding one DDP segment (RFC 5043), drawn without an MPA
  // item; raw is the message.
  bool sctp() const { return has(flag_sctp); }
  bool crc_ok() const { return has(flag_crc_ok); }
  std::optional<std::uint32_t> crc_expected() const {
    return has(flag_crc_expected) ? std::optional<std::uint32_t>(crc_expected_) : std::nullopt;
  }
  // Reported by Analyzer::finish() (flushed at the end of the capture): drawn in the frame of
  // its last slice, which a one-pass run has printed before the PDU was known.
  bool end_of_capture() const { return has(flag_end_of_capture); }
  // The frame whose segment made core report the PDU.
  std::uint64_t completed_frame() const { return completed_frame_; }
  // Held behind a hole that a later frame declared capture loss (an ACK past it, a full window):
  // that frame, when the PDU is drawn in its own (earlier) last frame. 0: not held.
  std::uint64_t released_frame() const { return detail_ ? detail_->released_frame : 0; }
  // A provisional record (core's HeldFpdu): an FPDU decoded from a segment TCP held behind
  // this many octets not delivered yet (the hole and octets held after it); core has not
  // framed or analysed it. 0: core's own PDU.
  std::uint64_t held_missing() const { return detail_ ? detail_->held_missing : 0; }
  // Octets as on the wire (markers included), `raw_size` of them. Stored only when they cannot
  // be read from completed_frame's own TCP payload: a PDU in one slice of completed_frame and
  // without markers keeps `raw` empty (raw_stored() false) and is drawn from that frame's tvb.
  const Bytes& raw() const;
  bool raw_stored() const { return raw().size() == raw_size; }
  std::span<const FrameSlice> slices() const {
    if (has(flag_one_slice)) return {&slice_, 1};
    return detail_ ? detail_->slices : std::span<const FrameSlice>();
  }
  // DDP / RDMAP. With crc_ok false: decoded as received, the FPDU dropped (not_placed()).
  std::optional<wire::DdpHeader> ddp() const;
  SegmentFacts analysis() const;
  std::span<const std::size_t> messages_completed() const;  // Model::messages
  std::span<const std::size_t> messages_delivered() const;
  std::span<const std::size_t> findings() const {  // Model::findings
    return detail_ ? detail_->findings : std::span<const std::size_t>();
  }
  std::span<const std::uint32_t> operations() const {  // answered by this PDU
    return detail_ ? detail_->operations : std::span<const std::uint32_t>();
  }
  // The region's name, and the upper-layer command it serves (PduFacts); null: none.
  const std::string* region_text() const { return facts_ ? facts_->region_text : nullptr; }
  const std::string* region_ulp() const { return facts_ ? facts_->region_ulp : nullptr; }
  const std::string* region_command() const { return facts_ ? facts_->region_command : nullptr; }

  // The rare parts (an empty PduDetail when there are none).
  const PduDetail& more() const;
  // A DDP segment a compliant Data Sink drops unplaced: its FPDU failed the CRC (RFC 5044 §8).
  bool not_placed() const { return has(flag_ddp) && !crc_ok(); }
  // Length of the FPDU without markers (what the length, ULPDU, pad and CRC fields cover).
  std::size_t fpdu_size() const {
    return detail_ && !detail_->fpdu.empty() ? detail_->fpdu.size() : raw_size;
  }
  bool reassembled() const;  // more than one slice or not all in completed_frame

 private:
  friend class CaptureState;
  enum : std::uint16_t {
    flag_sctp = 1u << 0,
    flag_crc_ok = 1u << 1,
    flag_crc_expected = 1u << 2,
    flag_end_of_capture = 1u << 3,
    flag_one_slice = 1u << 4,           // slice_ is the only slice
    flag_ddp = 1u << 5,                 // a DDP header: packed below, or detail_->ddp
    flag_ddp_packed = 1u << 6,          // ddp_control_, rsvd_ulp0_, ddp_words_ hold it
    flag_placed = 1u << 7,              // SegmentFacts::placed (without facts_)
    flag_expected_msn = 1u << 8,        // SegmentFacts::expected_msn is expected_msn_
    flag_message = 1u << 9,             // SegmentFacts::message is message_
    flag_completes_message = 1u << 10,  // messages_completed is {message_}
    flag_delivers_message = 1u << 11,   // messages_delivered is {message_}
  };
  bool has(std::uint16_t f) const { return (flags_ & f) != 0; }
  void set(std::uint16_t f, bool on = true) {
    flags_ = static_cast<std::uint16_t>(on ? flags_ | f : flags_ & ~f);
  }

  std::uint16_t flags_ = flag_crc_ok;
  // The DDP header packed: its control and first RsvdULP octets, and tagged: STag, TO (high,
  // low); untagged: RsvdULP1, QN, MSN, MO.
  std::uint8_t ddp_control_ = 0;
  std::uint8_t rsvd_ulp0_ = 0;
  std::uint32_t ddp_words_[4] = {};
  std::uint32_t completed_frame_ = 0;
  std::uint32_t crc_expected_ = 0;
  std::uint32_t expected_msn_ = 0;
  std::size_t message_ = 0;
  FrameSlice slice_;
  PduDetail* detail_ = nullptr;      // null: nothing of PduDetail is set
  const PduFacts* facts_ = nullptr;  // null: the analysis is the packed one (flags, message_)
};
static_assert(sizeof(PduRecord) <= 104, "one record per PDU: keep it packed (issue 43)");

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

// What few frames carry besides the PDUs they complete (continuations, findings, held FPDUs,
// operations learnt): kept out of line, in CaptureState's arena.
struct FrameMore {
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

struct FrameRecord {
  bool claimed = false;  // our dissector took this frame's TCP payload
  // Where the TCP payload lies in the frame's own tvb (payload_length 0: not known): revisits
  // may not get TCP's payload field, and PDUs without a stored copy are drawn from here.
  std::uint32_t payload_offset = 0;
  std::uint32_t payload_length = 0;
  ArenaList<std::uint32_t> pdus_complete;
  FrameMore* more = nullptr;  // null: every list of FrameMore is empty

  const ArenaList<std::uint32_t>& pdus_continued() const { return rest().pdus_continued; }
  const ArenaList<std::size_t>& findings() const { return rest().findings; }
  const ArenaList<std::size_t>& findings_learnt() const { return rest().findings_learnt; }
  const ArenaList<std::uint32_t>& pdus_held() const { return rest().pdus_held; }
  const ArenaList<std::uint32_t>& operations_learnt() const { return rest().operations_learnt; }

 private:
  const FrameMore& rest() const {
    static const FrameMore none;
    return more != nullptr ? *more : none;
  }
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
  // The record's PduDetail, made when it has none; the frame's FrameMore likewise.
  PduDetail& detail_of(PduRecord& p);
  FrameMore& more_of(FrameRecord& f);
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
  // Deques: growing never copies (or moves) the records already stored.
  std::pmr::deque<PduRecord> pdus_{&arena_};
  std::deque<PduDetail> details_;             // PduRecord::detail_ point here
  std::pmr::deque<PduFacts> facts_{&arena_};  // PduRecord::facts_ point here
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
