// SPDX-License-Identifier: GPL-2.0-or-later
// The Data Sink model: one RDMAP/DDP receiver of one stream (RFC 5040 §5, RFC 5041 §5).
// It holds what a Data Sink keeps between segments — the tagged message in progress, each
// untagged queue's MSN and MO, the Read Requests it sent (ORQ) and accepted (IRQ), its
// outstanding atomics, the RTR it waits for — and runs every rule, in the one order below, on
// each DDP segment the LLP hands it. The memory it places into is the host's (SinkMemory): shadow
// buffers in an analysis, registered memory and posted receive buffers at the endpoint. The
// analyzer holds one per direction of a stream and reports each Violation as a finding; the
// endpoint holds one per session and sends each Violation's Terminate.
//
// The order (the first rule broken is the one reported; RFC section; siw's choice where
// it differs is in ddp/rules.h and rdmap/rules.h):
//   1. DDP version (RFC 5041 §4.1)                     ddp::check_version
//   2. RDMAP version, opcode, buffer model (5040 §4)   rdmap::check_control
//   3. the negotiated RTR first (RFC 6581 §9.2)        check_rtr (a Terminate is always let in)
//   tagged:
//   4. continuation of the open message (5041 §4.2)    ddp::check_tagged_continuation
//   5. Read Response against the ORQ (5040 §5.2)       rdmap::check_read_response
//   6. region: STag, PD/stream, access, wrap, bounds   ddp::check_region (DDP Tagged codes)
//      (not for a lone zero-length RDMA Write: it places nothing, RFC 5040 §5.1)
//   untagged:
//   4. QN for the opcode (5040 §5.1)                   rdmap::check_queue
//   5. MSN and MO (5041 §5.3)                          ddp::check_untagged_sequence
//   6. body: fixed sizes / the receive buffer          rdmap::check_fixed_body,
//                                                      ddp::check_untagged_room
//   7. at the last segment, per opcode: Send with Invalidate, Read Request (IRD, source),
//      Atomic Request (target), Atomic Response (outstanding)        rdmap::check_*
// A Terminate (QN 2) is checked through 5 but answered by no Terminate (RFC 5040 §5.4).
// The profile (SinkConfig::profile) decides what the sink does about each violation; where it
// accepts one, the checks go on after it (siw sequences a Read Request on QN 0 as on QN 1).
//
// After a violation the model follows the stream the way an observer must (an analysis goes on
// after a compliant sink would have stopped): a new MSN is adopted, an abandoned message is
// dropped, a damaged one continues. The endpoint stops at the first Terminate anyway.
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <optional>

#include "ddpscope/ddp/rules.h"
#include "ddpscope/findings/sink_profile.h"
#include "ddpscope/llp/boundary.h"
#include "ddpscope/rdmap/rules.h"
#include "ddpscope/wire/rdmap.h"

namespace ddpscope::rdmap {

// The sink's memory, as the model asks it.
class SinkMemory {
 public:
  virtual ~SinkMemory() = default;
  // The region `stag` names at this sink, or nullptr when it has none. Valid until the next call.
  virtual const ddp::RegionFacts* region(std::uint32_t stag) = 0;
  // Whether region() knows every region the sink has, so that an unknown STag is invalid.
  virtual bool regions_known() const = 0;
  // The buffer the next Send-family message lands in (QN 0, RFC 5040 §5.1).
  virtual ddp::UntaggedBuffer send_buffer() = 0;
};

// An Atomic Request this side sent, awaiting its response (RFC 7306).
struct PendingAtomic {
  std::uint32_t request_id = 0;
  std::uint64_t frame = 0;  // analysis
  std::int64_t ts_ns = 0;   // analysis
  std::uint64_t pdu = 0;    // analysis: the request's PduEvent::id
  std::uint64_t wr_id = 0;  // endpoint
};

struct SinkConfig {
  ddp::StreamFacts stream;
  // What the sink does about a rule broken (findings/sink_profile.h). The rules are the same
  // under every profile; where the profile accepts a violation (siw: a Read Request on QN 0, one
  // Read Request over IRD) the model goes on as that sink does.
  SinkProfile profile = SinkProfile::rfc;
  bool rfc7306 = true;                           // atomics and immediate data accepted (siw: no)
  std::optional<std::uint16_t> ird;              // Read Requests accepted in progress (RFC 6581)
  llp::RtrType expect_rtr = llp::RtrType::none;  // the first segment must be this RTR
  bool mid_stream = false;                       // analysis: no MSN is known at first
  std::size_t max_reads = SIZE_MAX;              // ORQ and IRQ entries kept (oldest dropped beyond)
  std::size_t max_atomics = SIZE_MAX;
};

// What one segment did, for the host to place, complete and report.
struct SegmentStep {
  // Each member as initialized below, nothing else: a defaulted constructor had GCC clear all
  // 408 octets (one `rep stosq` per segment, which callgrind counts 51 times).
  SegmentStep() noexcept {}
  enum class Kind : std::uint8_t {
    ignored,    // part of no message: a header, control, queue or sequence error
    tagged,     // a segment of a tagged message (placed at STag/TO when `placed`)
    untagged,   // a segment of an untagged message (placed at QN/MSN/MO when `placed`)
    terminate,  // a segment of a Terminate message (QN 2): the host decodes it
  };
  std::optional<Violation> violation;  // the first rule it broke
  // The violation is STag-level (invalid, invalidated, other stream, access) and the same as the
  // previous segment of this tagged message broke: the facts of an STag do not change within a
  // message, so a host that goes on after a violation (an analysis) reports it once per message.
  bool repeated = false;
  bool after_loss = false;  // analysis: the state the rule used was unsure after capture loss
  Consequence loss = Consequence::none;  // analysis: what left it unsure (with after_loss)
  Kind kind = Kind::ignored;
  std::uint8_t opcode = 0;
  bool rtr = false;             // it was the negotiated RTR (RFC 6581): the stream is ready
  bool starts_message = false;  // first segment of a message
  bool ends_message = false;    // last segment (L=1): the message is complete
  bool abandoned = false;       // a message in progress ended without its L segment
  bool damaged = false;         // analysis: the message lost octets to the capture
  bool placed = false;          // no rule broken: the payload lands in the sink's memory
  bool decoded = false;         // its DDP version and RDMAP control were valid
  // The message so far: tagged first TO, untagged QN/MSN/MO; octets including this segment.
  std::uint64_t message_to = 0;
  std::uint32_t qn = 0;
  std::uint32_t msn = 0;
  std::uint32_t mo = 0;
  std::uint64_t message_length = 0;
  // A Read Response: the request it answers (every segment), and whether this ends it.
  std::optional<OutstandingRead> read;
  bool read_done = false;
  // At a message's last segment, its decoded body:
  std::optional<wire::ReadRequest> read_request;  // taken into the IRQ
  std::optional<wire::AtomicRequest> atomic_request;
  std::optional<wire::AtomicResponse> atomic_response;
  std::optional<PendingAtomic> atomic;  // the request an Atomic Response answers
  std::optional<std::uint64_t> immediate;
  std::optional<std::uint32_t> invalidated;  // Send with Invalidate accepted: this STag
  bool limit_hit = false;                    // an ORQ/IRQ/atomics cap dropped its oldest entry
};

class DataSink {
 public:
  explicit DataSink(SinkConfig config = {});

  // One DDP segment from the LLP (a ULPDU that decoded as a DDP segment).
  SegmentStep receive(const wire::DdpSegment& seg, SinkMemory& memory);

  // --- what the sink's own side does ---
  // It sent a Read Request (its ORQ) or an Atomic Request. False when the cap dropped the oldest.
  bool read_requested(const OutstandingRead& read);
  bool atomic_requested(const PendingAtomic& atomic);
  // It finished answering the oldest inbound Read Request: its last Read Response segment left
  // this side (an analysis: it is in the capture; the endpoint: the transport took it). Until
  // then the request counts against IRD (RFC 5040 §5.2: the requester's ORD slot is not free
  // before the response reached it), so both hosts count what the wire order shows.
  void read_answered();
  // Analysis: the same, naming the request its Read Response answered (after capture loss the
  // IRQ entries before it were answered by responses the capture lost).
  void read_answered(const wire::ReadRequest& answered);
  // After a Terminate: no more Read Responses (RFC 5040 §5.4).
  void clear_inbound_reads() { irq_.clear(); }
  // Analysis: octets of this direction were lost (capture gap, dropped FPDU): open messages are
  // damaged, the ORQ may wait for a Read Response that was lost, and what the next segments
  // break is a consequence of `cause`.
  void lost_input(Consequence cause);
  // Analysis: octets this sink's own side sent were lost: a Read Request or Atomic Request (the
  // ORQ or the atomics lack it), or the last Read Response segment that answers an inbound
  // Read Request (the IRQ keeps it). What those counts decide next is a consequence of `cause`.
  void own_side_lost(Consequence cause);
  // Analysis: the capture starts mid-stream; no queue's MSN is known yet.
  void start_mid_stream();
  // Analysis: what left some queue's state unsure after capture loss (none: nothing).
  Consequence any_after_loss() const;
  // A message is open (its L segment has not come).
  bool has_open_message() const;
  // The endpoint gives up a half-received message (stall, EOF): it is never delivered.
  void drop_open_messages();

  void set_ird(std::optional<std::uint16_t> ird) { config_.ird = ird; }
  void expect_rtr(llp::RtrType t) { config_.expect_rtr = t; }
  void set_stream(const ddp::StreamFacts& s) { config_.stream = s; }
  // The profile, and its traits (RFC 7306 support).
  void set_profile(SinkProfile p) {
    config_.profile = p;
    config_.rfc7306 = sink_traits(p).rfc7306;
  }
  const SinkConfig& config() const { return config_; }

  const ddp::TaggedRx& tagged() const { return tagged_; }
  const ddp::UntaggedRx& queue(std::uint32_t qn) const { return queues_.at(qn).rx; }
  static constexpr std::uint32_t kQueues = 4;  // QN 0..3 (wire/rdmap.h)
  const std::deque<OutstandingRead>& orq() const { return orq_; }
  const std::deque<wire::ReadRequest>& irq() const { return irq_; }
  const std::deque<PendingAtomic>& atomics() const { return atomics_; }

 private:
  struct Queue {
    ddp::UntaggedRx rx;
    bool seen = false;      // a segment arrived on it
    bool too_long = false;  // reported for the open message
    std::uint32_t invalidate_stag = 0;
    std::array<std::uint8_t, wire::AtomicRequest::kSize> body{};  // a fixed-size body so far
  };
  // inline: defined in data_sink.cpp, each folded into its one caller there (per segment).
  inline void checks(const wire::DdpSegment& seg, SinkMemory& memory, SegmentStep& step);
  // After loss: the ORQ entry a Read Response segment answers, found by its STag and TO, made
  // the head with the octets before the segment counted as received. False when none is.
  bool resync_orq(const wire::DdpHeader& h, bool first);
  inline void tagged_segment(const wire::DdpSegment& seg, SinkMemory& memory, SegmentStep& step);
  void untagged_segment(const wire::DdpSegment& seg, SinkMemory& memory, SegmentStep& step);
  // RDMAP at a message's last segment; false when it broke a rule.
  bool complete_untagged(Queue& q, SinkMemory& memory, SegmentStep& step);

  SinkConfig config_;
  ddp::TaggedRx tagged_;
  bool tagged_read_matched_ = false;  // the open Read Response matched the ORQ head
  bool tagged_violated_ = false;      // the open tagged message broke a placement rule
  FindingId tagged_violation_ = FindingId::count_;  // the last one a tagged segment broke
  std::array<Queue, kQueues> queues_;
  std::deque<OutstandingRead> orq_;
  std::deque<wire::ReadRequest> irq_;
  std::deque<PendingAtomic> atomics_;
  // Analysis: what capture loss left unsure (none: nothing). The ORQ and the tagged message
  // become sure again with a Read Response that matches; the IRQ once it is empty; the
  // atomics with an Atomic Response that matches.
  Consequence loss_ = Consequence::none;  // the last loss on this direction (untagged queues)
  Consequence orq_unsure_ = Consequence::none;
  Consequence irq_unsure_ = Consequence::none;
  Consequence atomics_unsure_ = Consequence::none;
};

// RFC 6581 §9.2: the RTR is a zero-length RDMA Write (L=1), a zero-size Read Request (MSN 1), or
// a zero-length Send (MSN 1, MO 0, L=1); anything else draws LLP/MPA 0x07 (No matching RTR).
std::optional<Violation> check_rtr(llp::RtrType expected, const wire::DdpSegment& seg);

}  // namespace ddpscope::rdmap
