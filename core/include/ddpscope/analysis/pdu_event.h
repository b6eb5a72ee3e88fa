// SPDX-License-Identifier: GPL-2.0-or-later
// One PDU as the engine framed and analysed it, handed to an AnalysisObserver (the plugin keeps
// these per frame; the GUI and CLI may watch them).
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>
#include "ddpscope/analysis/model.h"
#include "ddpscope/analysis/timing.h"
#include "ddpscope/common/bytes.h"
#include "ddpscope/common/limits.h"
#include "ddpscope/ddp/shadow.h"
#include "ddpscope/findings/catalog.h"
#include "ddpscope/mpa/framer.h"
#include "ddpscope/net/packet.h"
#include "ddpscope/wire/mpa.h"
#include "ddpscope/wire/rdmap.h"

namespace ddpscope {

enum class PduKind : std::uint8_t {
  mpa_request,
  mpa_reply,
  fpdu,
  unframed,  // octets skipped while framing was lost, or after a failed handshake
};

// What the rules found about one FPDU's DDP segment, for the hosts to show: trivially copyable
// (a host keeping one per segment copies it without allocating).
struct SegmentFacts {
  bool placed = false;  // payload went into a shadow buffer or an untagged message
  // Tagged:
  std::optional<RegionKey> region;
  RegionSource region_source = RegionSource::observed;
  bool region_bounds_known = false;
  std::uint64_t offset_in_region = 0;     // TO - base (or TO when base unknown)
  std::uint64_t region_bytes_placed = 0;  // after this segment
  // Untagged:
  std::optional<std::uint32_t> expected_msn;
  // Message this segment belongs to (index into Model::messages), when recorded.
  std::optional<std::size_t> message;
  // Read Request <-> Read Response / atomics: the frame of the other side, if known.
  std::optional<std::uint64_t> request_frame;
  std::optional<std::int64_t> response_time_ns;
  // Terminate: the frame of the segment it quotes.
  std::optional<std::uint64_t> quoted_frame;
};
static_assert(std::is_trivially_copyable_v<SegmentFacts>);

// The analysis of one FPDU's DDP segment: its facts and the messages it completed and delivered.
struct SegmentAnalysis : SegmentFacts {
  // Messages completed (placed) and delivered when this segment was processed.
  std::vector<std::size_t> messages_completed;
  std::vector<std::size_t> messages_delivered;
};

// An operation whose answer this PDU completed, as the timing model paired and timed it (only
// with AnalyzerOptions::timing): hosts that show response times per PDU take them from here.
// The pairing is core's alone (the ORQ for Reads and Atomics, RFC 5040 §5.2, RFC 7306 §4; the
// ULP's outstanding commands by their identifier): `request_pdu` names the request's own PDU, so
// a host that keeps PDUs links answer and request without matching them again.
struct CompletedOperation {
  OpKind kind = OpKind::rdma_read;
  int direction = 0;                // the requester's
  std::uint64_t request_frame = 0;  // LatencySample::request_frame
  // PduEvent::id of the request: the Read or Atomic Request, or the last DDP segment of the
  // Send that carried the ULP command. Handed to observers before this answer's event.
  std::uint64_t request_pdu = 0;
  std::uint64_t ns = 0;  // LatencySample::ns
  // ULP kinds: the command's operation without its identifiers ("NVMe Read", "SCSI READ(10)",
  // UlpCommand::operation) and its full name ("NVMe Read cid 12 nsid 1").
  std::string operation, command;
};

// One PDU as the engine framed it, handed to observers (the plugin keeps these per frame).
struct PduEvent {
  // The analyzer's number for this PDU: 0, 1, 2, ... in the order the engine framed them (an
  // event framed while another was analysed, the other direction's after an MPA Reply, is
  // handed to observers before that one). What CompletedOperation::request_pdu names.
  std::uint64_t id = 0;
  std::uint32_t stream = 0;
  int direction = 0;
  // fpdu: one DDP segment. Over MPA an FPDU; over SCTP (llp sctp) one PPID 16 user message,
  // with no MPA fields (ulpdu is the whole message, crc_ok true, no markers).
  PduKind kind = PduKind::fpdu;
  Llp llp = Llp::mpa;
  std::uint16_t sctp_stream_id = 0;  // llp sctp
  std::uint64_t stream_offset = 0;   // of raw[0] in the direction's byte stream
  ByteView raw;                      // octets as on the wire (markers included); valid in callback
  std::vector<FrameSlice> slices;    // where raw came from, in order
  // MPA Request/Reply
  const wire::MpaReqRep* reqrep = nullptr;
  // FPDU (markers removed): length, ULPDU, pad, CRC field
  std::uint16_t ulpdu_length = 0;
  ByteView plain;  // the whole FPDU without markers (RawPdu::plain), valid in callback
  ByteView ulpdu;  // demarkered ULPDU, valid in callback
  std::uint32_t crc_field = 0;
  std::optional<std::uint32_t> crc_expected;  // computed CRC when CRC is in use
  bool crc_ok = true;
  std::vector<wire::Marker> markers;        // markers inside raw (stream_pos relative to S0)
  std::vector<std::size_t> marker_offsets;  // offset of each marker in raw
  bool leading_marker = false;              // raw starts with a marker in front of the header
  // Framing found again (MPA resync) with this FPDU: after capture loss (`resumed_after_gap`),
  // after octets that did not frame, or at the start of a mid-stream capture. The boundary was
  // found by a search (header sanity, CRC or a chain of lengths), not carried over from the
  // FPDU before: hosts say so.
  bool framing_resumed = false;
  bool resumed_after_gap = false;
  std::uint64_t resync_skipped = 0;  // octets skipped before this FPDU while searching
  // DDP / RDMAP decode. With crc_ok false the FPDU is dropped (a compliant Data Sink does not
  // place it, RFC 5044 §8): the header and RDMAP body below are decoded as received, for the
  // user to see what was corrupted, and never analysed (analysis stays empty, placed false).
  std::optional<wire::DdpSegment> ddp;  // payload view valid in callback
  std::optional<wire::ReadRequest> read_request;
  std::optional<wire::Terminate> terminate;
  std::optional<wire::AtomicRequest> atomic_request;
  std::optional<wire::AtomicResponse> atomic_response;
  std::optional<std::uint64_t> immediate_data;
  SegmentAnalysis analysis;
  std::vector<std::size_t> findings;  // indices into Model::findings raised by this PDU
  // Operations this PDU answered (a Read Response's first and last segment, an Atomic
  // Response, a ULP completion), with AnalyzerOptions::timing only.
  std::vector<CompletedOperation> operations;

  // Back to a default-constructed event with the vectors' storage kept: the engine reuses its
  // events instead of building one per PDU (constructing and destroying one costs more than
  // framing a small FPDU).
  void reset();
};

inline void PduEvent::reset() {
  // Every field is named below: one added above must be added here (64-bit layout).
  static_assert(sizeof(void*) != 8 || sizeof(PduEvent) == 784, "PduEvent changed: update reset");
  id = 0;
  stream = 0;
  direction = 0;
  kind = PduKind::fpdu;
  llp = Llp::mpa;
  sctp_stream_id = 0;
  stream_offset = 0;
  raw = {};
  slices.clear();
  reqrep = nullptr;
  ulpdu_length = 0;
  plain = {};
  ulpdu = {};
  crc_field = 0;
  crc_expected.reset();
  crc_ok = true;
  markers.clear();
  marker_offsets.clear();
  leading_marker = false;
  framing_resumed = false;
  resumed_after_gap = false;
  resync_skipped = 0;
  ddp.reset();
  read_request.reset();
  terminate.reset();
  atomic_request.reset();
  atomic_response.reset();
  immediate_data.reset();
  // SegmentFacts field by field (assigning a default one builds it and copies it: ~20
  // instructions of this path's ~70).
  static_assert(sizeof(void*) != 8 || sizeof(SegmentFacts) == 128,
                "SegmentFacts changed: update reset");
  analysis.placed = false;
  analysis.region.reset();
  analysis.region_source = RegionSource::observed;
  analysis.region_bounds_known = false;
  analysis.offset_in_region = 0;
  analysis.region_bytes_placed = 0;
  analysis.expected_msn.reset();
  analysis.message.reset();
  analysis.request_frame.reset();
  analysis.response_time_ns.reset();
  analysis.quoted_frame.reset();
  analysis.messages_completed.clear();
  analysis.messages_delivered.clear();
  findings.clear();
  operations.clear();
}

// An FPDU at the start of a TCP segment that reassembly holds behind a hole (reordering, a
// retransmission still to come, or capture loss not yet declared), for hosts that show each
// frame as it arrives (the plugin in one pass). Its boundary is a guess from the segment alone,
// as a framer searching for one makes it (mpa::fpdu_candidate: a sane header and CRC; senders
// align FPDUs with segments, RFC 5044 §8), on a direction framing FPDUs without markers with a
// known CRC setting. Nothing is analysed: the engine frames and analyses these octets when TCP
// delivers them (then as a PduEvent, possibly with other boundaries) or declares them lost.
struct HeldFpdu {
  std::uint64_t frame = 0;
  std::uint32_t stream = 0;
  int direction = 0;
  std::uint64_t stream_offset = 0;  // of the FPDU's first octet
  // Octets between the last one TCP delivered in order and the segment: the hole, and octets
  // held after it.
  std::uint64_t missing_before = 0;
  FrameSlice slice;  // where the FPDU lies in the frame's TCP payload
  ByteView raw;      // its octets, valid in callback
  std::uint16_t ulpdu_length = 0;
  std::uint32_t crc_field = 0;
  std::optional<std::uint32_t> crc_expected;  // the computed CRC when CRC is in use (it matched)
  wire::DdpSegment ddp;                       // payload view valid in callback
};

class AnalysisObserver {
 public:
  virtual ~AnalysisObserver() = default;
  virtual void on_pdu(const PduEvent& pdu) = 0;
  // A finding not tied to one PDU (gaps, end-of-capture incompleteness, limits).
  virtual void on_finding(std::size_t /*finding_index*/) {}
  // FPDUs of a segment held out of order, in the frame that brought it (see HeldFpdu).
  virtual void on_held_fpdu(const HeldFpdu& /*fpdu*/) {}
};

}  // namespace ddpscope
