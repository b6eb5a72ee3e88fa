// SPDX-License-Identifier: GPL-2.0-or-later
#include "fields.h"

#include <epan/packet.h>

#include <array>
#include <deque>
#include <iterator>
#include <string>
#include <vector>

#include "ddpscope/ddp/shadow.h"
#include "ddpscope/wire/mpa.h"
#include "ddpscope/wire/rdmap.h"
#include "ddpscope/wire/terminate_error.h"

namespace ddpscope::plugin {

Protocols proto;
HeaderFields hf;
Subtrees ett;

namespace {

// Storage for names computed from core's tables at registration (Wireshark keeps pointers).
std::deque<std::string>& name_store() {
  static std::deque<std::string> store;
  return store;
}
const char* keep(std::string s) {
  return name_store().emplace_back(std::move(s)).c_str();
}

std::array<value_string, wire::kOpcodeCount + 1> opcode_vals{};
std::array<value_string, 17> term_layer_vals{};
std::array<value_string, 6> region_source_vals{};
const value_string term_layout_vals[] = {
    {0, "RFC 5040"}, {1, "Linux siw bit-field order (little-endian bit fields)"}, {0, nullptr}};
const value_string direction_vals[] = {
    {0, "initiator to responder"}, {1, "responder to initiator"}, {0, nullptr}};

void fill_value_strings() {
  for (std::uint8_t op = 0; op < wire::kOpcodeCount; ++op) {
    const wire::OpcodeInfo& info = wire::opcode_info(op);
    opcode_vals[op] = {op, keep(info.defined ? std::string(info.name) : "Reserved")};
  }
  opcode_vals[wire::kOpcodeCount] = {0, nullptr};
  for (std::uint8_t l = 0; l < 16; ++l) {
    term_layer_vals[l] = {l, keep(std::string(term_layer_name(l)))};
  }
  term_layer_vals[16] = {0, nullptr};
  const RegionSource sources[] = {RegionSource::observed, RegionSource::regions_file,
                                  RegionSource::advertisement, RegionSource::read_request_sink,
                                  RegionSource::read_request_source};
  for (std::size_t i = 0; i < 5; ++i) {
    region_source_vals[i] = {static_cast<guint32>(sources[i]),
                             keep(std::string(to_string(sources[i])))};
  }
  region_source_vals[5] = {0, nullptr};
}

// Per finding: the finding itself, then its twins by cause (the order of kTwins).
struct Twin {
  Consequence cause;
  const char* suffix;
};
constexpr Twin kTwins[] = {{Consequence::gap, ".after-gap"}, {Consequence::crc, ".after-crc"}};
constexpr std::size_t kEisPerFinding = 1 + std::size(kTwins);
std::vector<expert_field> finding_eis(kEisPerFinding* kFindingCount);

int expert_group(const FindingSpec& s) {
  switch (s.id) {
    case FindingId::mpa_crc_mismatch:
    case FindingId::mpa_crc_unexpected:
      return PI_CHECKSUM;
    case FindingId::tcp_gap:
    case FindingId::tcp_retransmission_conflict:
    case FindingId::mpa_resync:
    case FindingId::ddp_untagged_msn_gap:
    case FindingId::ddp_untagged_msn_duplicate:
    case FindingId::ddp_message_incomplete:
    case FindingId::ddp_segment_after_last:
      return PI_SEQUENCE;
    case FindingId::capture_truncated_frame:
    case FindingId::capture_truncated_file:
    case FindingId::mpa_handshake_invalid:
    case FindingId::mpa_ulpdu_length_invalid:
    case FindingId::mpa_marker_invalid:
    case FindingId::ddp_version_invalid:
    case FindingId::rdmap_version_invalid:
    case FindingId::rdmap_opcode_invalid:
    case FindingId::rdmap_body_invalid:
      return PI_MALFORMED;
    case FindingId::rdmap_terminate:
      return PI_RESPONSE_CODE;
    default:
      return PI_PROTOCOL;
  }
}

int expert_severity(Severity s) {
  switch (s) {
    case Severity::note:
      return PI_NOTE;
    case Severity::warning:
      return PI_WARN;
    case Severity::error:
      return PI_ERROR;
  }
  return PI_NOTE;
}

}  // namespace

expert_field* finding_expert(FindingId id, Consequence consequence) {
  const auto i = static_cast<std::size_t>(id);
  if (i >= kFindingCount) return nullptr;
  std::size_t twin = 0;
  for (std::size_t k = 0; k < std::size(kTwins); ++k) {
    if (kTwins[k].cause == consequence) twin = k + 1;
  }
  return &finding_eis[kEisPerFinding * i + twin];
}

// clang-format off
#define HF(id, name, abbrev, type, display, strings, mask, blurb) \
  {&hf.id, {name, abbrev, type, display, strings, mask, blurb, HFILL}}
// clang-format on

void register_fields() {
  fill_value_strings();
  static hf_register_info mpa_fields[] = {
      HF(mpa_key, "Key", "iwarp.mpa.key", FT_STRING, BASE_NONE, nullptr, 0, nullptr),
      HF(mpa_flags, "Flags", "iwarp.mpa.flags", FT_UINT8, BASE_HEX, nullptr, 0, nullptr),
      HF(mpa_flag_m, "M (markers wanted)", "iwarp.mpa.flags.m", FT_BOOLEAN, 8, nullptr,
         wire::kMpaFlagMarkers, nullptr),
      HF(mpa_flag_c, "C (CRC)", "iwarp.mpa.flags.c", FT_BOOLEAN, 8, nullptr, wire::kMpaFlagCrc,
         nullptr),
      HF(mpa_flag_r, "R (reject)", "iwarp.mpa.flags.r", FT_BOOLEAN, 8, nullptr,
         wire::kMpaFlagReject, nullptr),
      HF(mpa_flag_enhanced, "Enhanced (RFC 6581)", "iwarp.mpa.flags.enhanced", FT_BOOLEAN, 8,
         nullptr, wire::kMpaFlagEnhanced, nullptr),
      HF(mpa_flag_reserved, "Reserved", "iwarp.mpa.flags.reserved", FT_UINT8, BASE_HEX, nullptr,
         wire::kMpaFlagReservedMask, nullptr),
      HF(mpa_rev, "Revision", "iwarp.mpa.rev", FT_UINT8, BASE_DEC, nullptr, 0, nullptr),
      HF(mpa_pd_length, "Private data length", "iwarp.mpa.pd_length", FT_UINT16, BASE_DEC, nullptr,
         0, nullptr),
      HF(mpa_private_data, "Private data", "iwarp.mpa.pd", FT_BYTES, BASE_NONE, nullptr, 0,
         nullptr),
      HF(mpa_ulp_private_data, "ULP private data", "iwarp.mpa.ulp_pd", FT_BYTES, BASE_NONE, nullptr,
         0, "Private data after the RFC 6581 IRD/ORD word"),
      HF(mpa_ird_word, "IRD word", "iwarp.mpa.ird_word", FT_UINT16, BASE_HEX, nullptr, 0, nullptr),
      HF(mpa_ord_word, "ORD word", "iwarp.mpa.ord_word", FT_UINT16, BASE_HEX, nullptr, 0, nullptr),
      HF(mpa_a, "A (peer-to-peer)", "iwarp.mpa.a", FT_BOOLEAN, 16, nullptr,
         wire::kMpaEnhancedPeerToPeer, nullptr),
      HF(mpa_b, "B (zero-length Send RTR)", "iwarp.mpa.b", FT_BOOLEAN, 16, nullptr,
         wire::kMpaEnhancedSendRtr, nullptr),
      HF(mpa_ird, "IRD", "iwarp.mpa.ird", FT_UINT16, BASE_DEC, nullptr,
         wire::kMpaEnhancedIrdOrdMask, nullptr),
      HF(mpa_c, "C (zero-length RDMA Write RTR)", "iwarp.mpa.c", FT_BOOLEAN, 16, nullptr,
         wire::kMpaEnhancedWriteRtr, nullptr),
      HF(mpa_d, "D (zero-length RDMA Read RTR)", "iwarp.mpa.d", FT_BOOLEAN, 16, nullptr,
         wire::kMpaEnhancedReadRtr, nullptr),
      HF(mpa_ord, "ORD", "iwarp.mpa.ord", FT_UINT16, BASE_DEC, nullptr,
         wire::kMpaEnhancedIrdOrdMask, nullptr),
      HF(mpa_ulpdu_length, "ULPDU length", "iwarp.mpa.ulpdu_length", FT_UINT16, BASE_DEC, nullptr,
         0, nullptr),
      HF(mpa_pad, "Pad", "iwarp.mpa.pad", FT_BYTES, BASE_NONE, nullptr, 0, nullptr),
      HF(mpa_crc, "CRC", "iwarp.mpa.crc", FT_UINT32, BASE_HEX, nullptr, 0, nullptr),
      HF(mpa_crc_status, "CRC status", "iwarp.mpa.crc.status", FT_UINT8, BASE_NONE,
         VALS(proto_checksum_vals), 0, nullptr),
      HF(mpa_crc_in_use, "CRC in use", "iwarp.mpa.crc_in_use", FT_BOOLEAN, BASE_NONE, nullptr, 0,
         nullptr),
      HF(mpa_marker, "Marker", "iwarp.mpa.marker", FT_NONE, BASE_NONE, nullptr, 0, nullptr),
      HF(mpa_marker_reserved, "Reserved", "iwarp.mpa.marker.reserved", FT_UINT16, BASE_HEX, nullptr,
         0, nullptr),
      HF(mpa_marker_fpduptr, "FPDUPTR", "iwarp.mpa.marker.fpduptr", FT_UINT16, BASE_DEC, nullptr, 0,
         nullptr),
      HF(mpa_marker_position, "Stream position (from S0)", "iwarp.mpa.marker.position", FT_UINT64,
         BASE_DEC, nullptr, 0, nullptr),
      HF(mpa_leading_marker, "Leading marker", "iwarp.mpa.leading_marker", FT_BOOLEAN, BASE_NONE,
         nullptr, 0, "A marker directly in front of the FPDU header"),
      HF(mpa_unframed, "Unframed octets", "iwarp.mpa.unframed", FT_BYTES, BASE_NONE, nullptr, 0,
         nullptr),
      HF(mpa_framing_resumed, "Framing resumed", "iwarp.mpa.framing_resumed", FT_BOOLEAN, BASE_NONE,
         nullptr, 0,
         "The FPDU boundary was found again by a search (DDP/RDMAP header sanity, CRC or the next "
         "FPDU's position), after capture loss, octets that did not frame, or a mid-stream start"),
      HF(mpa_resync_skipped, "Octets skipped before", "iwarp.mpa.resync_skipped", FT_UINT64,
         BASE_DEC, nullptr, 0, "Octets left unframed while the FPDU boundary was searched for"),
      HF(mpa_stream, "Stream", "iwarp.mpa.stream", FT_UINT32, BASE_DEC, nullptr, 0,
         "ddpscope stream index"),
      HF(mpa_direction, "Direction", "iwarp.mpa.direction", FT_UINT8, BASE_DEC,
         VALS(direction_vals), 0, nullptr),
      HF(mpa_stream_offset, "Stream offset", "iwarp.mpa.stream_offset", FT_UINT64, BASE_DEC,
         nullptr, 0, "Offset of the PDU in its direction's byte stream"),
      HF(mpa_fpdu_length, "PDU length on the wire", "iwarp.mpa.wire_length", FT_UINT32, BASE_DEC,
         nullptr, 0, nullptr),
      HF(mpa_continuation, "Continued PDU, completed in frame", "iwarp.mpa.continuation",
         FT_FRAMENUM, BASE_NONE, nullptr, 0, nullptr),
      HF(mpa_fragment, "Octets in frame", "iwarp.mpa.fragment", FT_FRAMENUM, BASE_NONE, nullptr, 0,
         nullptr),
      HF(mpa_reassembled_length, "Reassembled PDU length", "iwarp.mpa.reassembled_length",
         FT_UINT32, BASE_DEC, nullptr, 0, nullptr),
      HF(an_finding, "Finding", "iwarp.mpa.finding", FT_STRING, BASE_NONE, nullptr, 0,
         "Code of a ddpscope finding on this frame"),
      HF(an_pdu_end_of_capture, "PDU reported at the end of the capture",
         "iwarp.mpa.end_of_capture", FT_BOOLEAN, BASE_NONE, nullptr, 0,
         "Flushed when the capture ended: shown by two-pass runs (tshark -2) and revisits"),
      HF(an_pdu_released_in, "PDU held behind capture loss until frame", "iwarp.mpa.released_in",
         FT_FRAMENUM, BASE_NONE, nullptr, 0,
         "A hole before it was declared capture loss in that later frame (an ACK past it, or a "
         "full window): shown by two-pass runs (tshark -2) and revisits"),
      HF(an_pdu_held_behind, "FPDU held behind octets not delivered yet", "iwarp.mpa.held_behind",
         FT_UINT64, BASE_DEC, nullptr, 0,
         "TCP held this segment when it came, this many octets after the last it delivered in "
         "order (a hole: reordering, a retransmission to come, or capture loss): the FPDU is "
         "decoded from the segment alone, not analysed here; ddpscope analyses it where TCP "
         "delivers it"),
      HF(an_finding_reported_in, "Finding reported when frame was analysed",
         "iwarp.mpa.finding.reported_in", FT_FRAMENUM, BASE_NONE, nullptr, 0,
         "The PDU completed in a later frame: a one-pass run cannot show this finding"),
      HF(an_finding_end_of_capture, "Finding reported at the end of the capture",
         "iwarp.mpa.finding.end_of_capture", FT_BOOLEAN, BASE_NONE, nullptr, 0,
         "Known only after the last frame: shown by two-pass runs (tshark -2) and revisits"),
      HF(an_finding_learnt_from, "Finding of an earlier frame, learnt from this one",
         "iwarp.mpa.finding.frame", FT_FRAMENUM, BASE_NONE, nullptr, 0,
         "The frame the finding belongs to, printed by a one-pass run (tshark without -2, a "
         "live capture) before this frame made it known; two-pass runs and revisits show it "
         "there"),
      HF(an_finding_profile, "Data Sink profile", "iwarp.mpa.finding.sink_profile", FT_STRING,
         BASE_NONE, nullptr, 0,
         "The Data Sink the verdict is for (preference iwarp.mpa.sink_profile): rfc or siw"),
      HF(an_finding_verdict, "Sink verdict", "iwarp.mpa.finding.verdict", FT_STRING, BASE_NONE,
         nullptr, 0,
         "What that Data Sink does about the rule broken: 'Terminate <layer / type / code>', or "
         "'no Terminate: close|wait|accept|reject'"),
      HF(an_finding_rfc_verdict, "RFC sink verdict", "iwarp.mpa.finding.rfc_verdict", FT_STRING,
         BASE_NONE, nullptr, 0,
         "What an RFC Data Sink does instead, where the chosen profile's verdict differs"),
      HF(an_finding_matches, "Peer's Terminate matches the profile's prediction",
         "iwarp.mpa.finding.matches_profile", FT_BOOLEAN, BASE_NONE, nullptr, 0,
         "A peer's Terminate against what the chosen profile predicted from the first rule "
         "broken in the other direction (absent when no rule broken there predicted anything)"),
      HF(an_finding_matching, "Profiles whose prediction the peer's Terminate matches",
         "iwarp.mpa.finding.matching_profiles", FT_STRING, BASE_NONE, nullptr, 0,
         "Comma-separated (rfc, siw), or 'none'"),
  };
  static hf_register_info ddp_fields[] = {
      HF(ddp_control, "Control", "iwarp.ddp.control", FT_UINT8, BASE_HEX, nullptr, 0, nullptr),
      HF(ddp_t, "T (tagged)", "iwarp.ddp.t", FT_BOOLEAN, 8, nullptr, wire::kDdpFlagTagged, nullptr),
      HF(ddp_l, "L (last)", "iwarp.ddp.l", FT_BOOLEAN, 8, nullptr, wire::kDdpFlagLast, nullptr),
      HF(ddp_rsvd, "Reserved", "iwarp.ddp.rsvd", FT_UINT8, BASE_HEX, nullptr,
         wire::kDdpReservedMask, nullptr),
      HF(ddp_dv, "DDP version", "iwarp.ddp.dv", FT_UINT8, BASE_DEC, nullptr, wire::kDdpVersionMask,
         nullptr),
      HF(ddp_rsvdulp, "Reserved for ULP", "iwarp.ddp.rsvdulp", FT_UINT8, BASE_HEX, nullptr, 0,
         nullptr),
      HF(ddp_stag, "STag", "iwarp.ddp.stag", FT_UINT32, BASE_HEX, nullptr, 0, nullptr),
      HF(ddp_to, "Tagged offset", "iwarp.ddp.to", FT_UINT64, BASE_HEX, nullptr, 0, nullptr),
      HF(ddp_inval_stag, "Invalidate STag / RsvdULP", "iwarp.ddp.inval_stag", FT_UINT32, BASE_HEX,
         nullptr, 0, nullptr),
      HF(ddp_qn, "Queue number", "iwarp.ddp.qn", FT_UINT32, BASE_DEC, nullptr, 0, nullptr),
      HF(ddp_msn, "Message sequence number", "iwarp.ddp.msn", FT_UINT32, BASE_DEC, nullptr, 0,
         nullptr),
      HF(ddp_mo, "Message offset", "iwarp.ddp.mo", FT_UINT32, BASE_DEC, nullptr, 0, nullptr),
      HF(ddp_payload, "Payload", "iwarp.ddp.payload", FT_BYTES, BASE_NONE, nullptr, 0, nullptr),
      HF(ddp_payload_length, "Payload length", "iwarp.ddp.payload_length", FT_UINT32, BASE_DEC,
         nullptr, 0, nullptr),
      HF(an_region, "Region", "iwarp.ddp.region", FT_STRING, BASE_NONE, nullptr, 0,
         "Owner host and STag of the shadow buffer"),
      HF(an_region_stag, "Region STag", "iwarp.ddp.region.stag", FT_UINT32, BASE_HEX, nullptr, 0,
         nullptr),
      HF(an_region_source, "Region source", "iwarp.ddp.region.source", FT_UINT8, BASE_DEC,
         VALS(region_source_vals.data()), 0, nullptr),
      HF(an_region_bounds_known, "Region bounds known", "iwarp.ddp.region.bounds_known", FT_BOOLEAN,
         BASE_NONE, nullptr, 0, nullptr),
      HF(an_offset_in_region, "Offset in region", "iwarp.ddp.region.offset", FT_UINT64, BASE_DEC,
         nullptr, 0, nullptr),
      HF(an_region_bytes_placed, "Region octets placed so far", "iwarp.ddp.region.placed",
         FT_UINT64, BASE_DEC, nullptr, 0, nullptr),
      HF(an_region_ulp, "Region ULP", "iwarp.ddp.region.ulp", FT_STRING, BASE_NONE, nullptr, 0,
         "Upper layer whose command advertised the region (nvme-rdma)"),
      HF(an_region_command, "Region command", "iwarp.ddp.region.command", FT_STRING, BASE_NONE,
         nullptr, 0, "Upper-layer command the region serves (NVMe Read cid 12 nsid 1)"),
      HF(an_expected_msn, "Expected MSN", "iwarp.ddp.expected_msn", FT_UINT32, BASE_DEC, nullptr, 0,
         nullptr),
      HF(an_placed, "Placed", "iwarp.ddp.placed", FT_BOOLEAN, BASE_NONE, nullptr, 0, nullptr),
      HF(an_not_placed, "Not placed", "iwarp.ddp.not_placed", FT_STRING, BASE_NONE, nullptr, 0,
         "Why a compliant Data Sink drops this segment unplaced; its header is shown as received "
         "and not analysed"),
      HF(an_message, "Message", "iwarp.ddp.message", FT_UINT32, BASE_DEC, nullptr, 0,
         "ddpscope message index"),
      HF(an_placed_in, "Message completely placed in frame", "iwarp.ddp.message.placed_in",
         FT_FRAMENUM, BASE_NONE, nullptr, 0, nullptr),
      HF(an_delivered_in, "Message delivered in frame", "iwarp.ddp.message.delivered_in",
         FT_FRAMENUM, BASE_NONE, nullptr, 0, nullptr),
      HF(an_completes_message, "Completes message", "iwarp.ddp.completes_message", FT_UINT32,
         BASE_DEC, nullptr, 0, nullptr),
      HF(an_delivers_message, "Delivers message", "iwarp.ddp.delivers_message", FT_UINT32, BASE_DEC,
         nullptr, 0, nullptr),
  };
  static hf_register_info rdmap_fields[] = {
      HF(rdmap_control, "Control", "iwarp.rdmap.control", FT_UINT8, BASE_HEX, nullptr, 0, nullptr),
      HF(rdmap_rv, "RDMAP version", "iwarp.rdmap.rv", FT_UINT8, BASE_DEC, nullptr,
         wire::kRdmapVersionMask, nullptr),
      HF(rdmap_rsv, "Reserved", "iwarp.rdmap.rsv", FT_UINT8, BASE_HEX, nullptr,
         wire::kRdmapReservedMask, nullptr),
      HF(rdmap_opcode, "OpCode", "iwarp.rdmap.opcode", FT_UINT8, BASE_HEX, VALS(opcode_vals.data()),
         wire::kRdmapOpcodeMask, nullptr),
      HF(rr_sink_stag, "Data Sink STag", "iwarp.rdmap.sink_stag", FT_UINT32, BASE_HEX, nullptr, 0,
         nullptr),
      HF(rr_sink_to, "Data Sink TO", "iwarp.rdmap.sink_to", FT_UINT64, BASE_HEX, nullptr, 0,
         nullptr),
      HF(rr_size, "RDMA Read message size", "iwarp.rdmap.read_size", FT_UINT32, BASE_DEC, nullptr,
         0, nullptr),
      HF(rr_source_stag, "Data Source STag", "iwarp.rdmap.source_stag", FT_UINT32, BASE_HEX,
         nullptr, 0, nullptr),
      HF(rr_source_to, "Data Source TO", "iwarp.rdmap.source_to", FT_UINT64, BASE_HEX, nullptr, 0,
         nullptr),
      HF(term_control, "Terminate control", "iwarp.rdmap.term.control", FT_UINT32, BASE_HEX,
         nullptr, 0, "As meant by the sender (after undoing a siw bit-field layout)"),
      HF(term_layer, "Layer", "iwarp.rdmap.term.layer", FT_UINT32, BASE_HEX,
         VALS(term_layer_vals.data()), wire::kTermLayerMask, nullptr),
      HF(term_etype, "Error type", "iwarp.rdmap.term.etype", FT_UINT32, BASE_HEX, nullptr,
         wire::kTermEtypeMask, nullptr),
      HF(term_code, "Error code", "iwarp.rdmap.term.code", FT_UINT32, BASE_HEX, nullptr,
         wire::kTermCodeMask, nullptr),
      HF(term_m, "M (DDP segment length valid)", "iwarp.rdmap.term.m", FT_BOOLEAN, 32, nullptr,
         wire::kTermFlagM, nullptr),
      HF(term_d, "D (DDP header included)", "iwarp.rdmap.term.d", FT_BOOLEAN, 32, nullptr,
         wire::kTermFlagD, nullptr),
      HF(term_r, "R (RDMAP header included)", "iwarp.rdmap.term.r", FT_BOOLEAN, 32, nullptr,
         wire::kTermFlagR, nullptr),
      HF(term_reserved, "Reserved", "iwarp.rdmap.term.reserved", FT_UINT32, BASE_HEX, nullptr,
         wire::kTermReservedMask, nullptr),
      HF(term_layout, "Control word layout", "iwarp.rdmap.term.layout", FT_UINT8, BASE_DEC,
         VALS(term_layout_vals), 0, nullptr),
      HF(term_error, "Error", "iwarp.rdmap.term.error", FT_STRING, BASE_NONE, nullptr, 0, nullptr),
      HF(term_seg_len, "DDP segment length", "iwarp.rdmap.term.ddp_seg_len", FT_UINT16, BASE_DEC,
         nullptr, 0, nullptr),
      HF(term_ddp_header, "Terminated DDP header", "iwarp.rdmap.term.ddp", FT_NONE, BASE_NONE,
         nullptr, 0, nullptr),
      HF(term_ddp_control, "Control", "iwarp.rdmap.term.ddp.control", FT_UINT8, BASE_HEX, nullptr,
         0, nullptr),
      HF(term_ddp_t, "T (tagged)", "iwarp.rdmap.term.ddp.t", FT_BOOLEAN, 8, nullptr,
         wire::kDdpFlagTagged, nullptr),
      HF(term_ddp_l, "L (last)", "iwarp.rdmap.term.ddp.l", FT_BOOLEAN, 8, nullptr,
         wire::kDdpFlagLast, nullptr),
      HF(term_ddp_rsvd, "Reserved", "iwarp.rdmap.term.ddp.rsvd", FT_UINT8, BASE_HEX, nullptr,
         wire::kDdpReservedMask, nullptr),
      HF(term_ddp_dv, "DDP version", "iwarp.rdmap.term.ddp.dv", FT_UINT8, BASE_DEC, nullptr,
         wire::kDdpVersionMask, nullptr),
      HF(term_ddp_rsvdulp, "RDMAP control", "iwarp.rdmap.term.ddp.rsvdulp", FT_UINT8, BASE_HEX,
         nullptr, 0, nullptr),
      HF(term_ddp_stag, "STag", "iwarp.rdmap.term.ddp.stag", FT_UINT32, BASE_HEX, nullptr, 0,
         nullptr),
      HF(term_ddp_to, "Tagged offset", "iwarp.rdmap.term.ddp.to", FT_UINT64, BASE_HEX, nullptr, 0,
         nullptr),
      HF(term_ddp_qn, "Queue number", "iwarp.rdmap.term.ddp.qn", FT_UINT32, BASE_DEC, nullptr, 0,
         nullptr),
      HF(term_ddp_msn, "Message sequence number", "iwarp.rdmap.term.ddp.msn", FT_UINT32, BASE_DEC,
         nullptr, 0, nullptr),
      HF(term_ddp_mo, "Message offset", "iwarp.rdmap.term.ddp.mo", FT_UINT32, BASE_DEC, nullptr, 0,
         nullptr),
      HF(term_rdmap_header, "Terminated RDMAP header", "iwarp.rdmap.term.rdmap", FT_BYTES,
         BASE_NONE, nullptr, 0, nullptr),
      HF(term_rr_sink_stag, "Data Sink STag", "iwarp.rdmap.term.rr.sink_stag", FT_UINT32, BASE_HEX,
         nullptr, 0, nullptr),
      HF(term_rr_sink_to, "Data Sink TO", "iwarp.rdmap.term.rr.sink_to", FT_UINT64, BASE_HEX,
         nullptr, 0, nullptr),
      HF(term_rr_size, "RDMA Read message size", "iwarp.rdmap.term.rr.read_size", FT_UINT32,
         BASE_DEC, nullptr, 0, nullptr),
      HF(term_rr_source_stag, "Data Source STag", "iwarp.rdmap.term.rr.source_stag", FT_UINT32,
         BASE_HEX, nullptr, 0, nullptr),
      HF(term_rr_source_to, "Data Source TO", "iwarp.rdmap.term.rr.source_to", FT_UINT64, BASE_HEX,
         nullptr, 0, nullptr),
      HF(atomic_reserved, "Reserved", "iwarp.rdmap.atomic.reserved", FT_UINT32, BASE_HEX, nullptr,
         wire::kAtomicReservedMask, nullptr),
      HF(atomic_opcode, "Atomic operation", "iwarp.rdmap.atomic.opcode", FT_UINT32, BASE_DEC,
         nullptr, wire::kAtomicOpcodeMask, nullptr),
      HF(atomic_request_id, "Request identifier", "iwarp.rdmap.atomic.request_id", FT_UINT32,
         BASE_HEX, nullptr, 0, nullptr),
      HF(atomic_remote_stag, "Remote STag", "iwarp.rdmap.atomic.remote_stag", FT_UINT32, BASE_HEX,
         nullptr, 0, nullptr),
      HF(atomic_remote_to, "Remote TO", "iwarp.rdmap.atomic.remote_to", FT_UINT64, BASE_HEX,
         nullptr, 0, nullptr),
      HF(atomic_add_swap_data, "Add or swap data", "iwarp.rdmap.atomic.add_swap_data", FT_UINT64,
         BASE_HEX, nullptr, 0, nullptr),
      HF(atomic_add_swap_mask, "Add or swap mask", "iwarp.rdmap.atomic.add_swap_mask", FT_UINT64,
         BASE_HEX, nullptr, 0, nullptr),
      HF(atomic_compare_data, "Compare data", "iwarp.rdmap.atomic.compare_data", FT_UINT64,
         BASE_HEX, nullptr, 0, nullptr),
      HF(atomic_compare_mask, "Compare mask", "iwarp.rdmap.atomic.compare_mask", FT_UINT64,
         BASE_HEX, nullptr, 0, nullptr),
      HF(atomic_orig_request_id, "Original request identifier",
         "iwarp.rdmap.atomic.orig_request_id", FT_UINT32, BASE_HEX, nullptr, 0, nullptr),
      HF(atomic_orig_value, "Original remote data value", "iwarp.rdmap.atomic.orig_value",
         FT_UINT64, BASE_HEX, nullptr, 0, nullptr),
      HF(immediate_data, "Immediate data", "iwarp.rdmap.immediate", FT_UINT64, BASE_HEX, nullptr, 0,
         nullptr),
      HF(an_request_in, "Request in frame", "iwarp.rdmap.request_in", FT_FRAMENUM, BASE_NONE,
         FRAMENUM_TYPE(FT_FRAMENUM_REQUEST), 0, nullptr),
      HF(an_response_in, "Response in frame", "iwarp.rdmap.response_in", FT_FRAMENUM, BASE_NONE,
         FRAMENUM_TYPE(FT_FRAMENUM_RESPONSE), 0, nullptr),
      HF(an_response_time, "Response time", "iwarp.rdmap.response_time", FT_RELATIVE_TIME,
         BASE_NONE, nullptr, 0, nullptr),
      HF(an_quoted_frame, "Terminated segment in frame", "iwarp.rdmap.term.quoted_in", FT_FRAMENUM,
         BASE_NONE, nullptr, 0, nullptr),
      // Operation response times (core's timing model): on the answering PDU, the time since
      // the request and its frame; on the request, the answer's frame.
      HF(op_read_rtt, "Read response time (Read Request to the last Read Response octet)",
         "iwarp.rdmap.read.rtt", FT_RELATIVE_TIME, BASE_NONE, nullptr, 0, nullptr),
      HF(op_read_first_rtt,
         "Read first-octet time (Read Request to the first Read Response segment)",
         "iwarp.rdmap.read.first_rtt", FT_RELATIVE_TIME, BASE_NONE, nullptr, 0, nullptr),
      HF(op_read_request_in, "Read Request in frame", "iwarp.rdmap.read.request_in", FT_FRAMENUM,
         BASE_NONE, FRAMENUM_TYPE(FT_FRAMENUM_REQUEST), 0, nullptr),
      HF(op_read_response_in, "Read Response (last octet) in frame", "iwarp.rdmap.read.response_in",
         FT_FRAMENUM, BASE_NONE, FRAMENUM_TYPE(FT_FRAMENUM_RESPONSE), 0, nullptr),
      HF(op_read_first_response_in, "Read Response (first segment) in frame",
         "iwarp.rdmap.read.first_response_in", FT_FRAMENUM, BASE_NONE,
         FRAMENUM_TYPE(FT_FRAMENUM_RESPONSE), 0, nullptr),
      HF(op_atomic_time, "Atomic response time", "iwarp.rdmap.atomic.response_time",
         FT_RELATIVE_TIME, BASE_NONE, nullptr, 0, nullptr),
      HF(op_atomic_request_in, "Atomic Request in frame", "iwarp.rdmap.atomic.request_in",
         FT_FRAMENUM, BASE_NONE, FRAMENUM_TYPE(FT_FRAMENUM_REQUEST), 0, nullptr),
      HF(op_atomic_response_in, "Atomic Response in frame", "iwarp.rdmap.atomic.response_in",
         FT_FRAMENUM, BASE_NONE, FRAMENUM_TYPE(FT_FRAMENUM_RESPONSE), 0, nullptr),
      HF(op_ulp_kind, "ULP command kind", "iwarp.ulp.command.kind", FT_STRING, BASE_NONE, nullptr,
         0, nullptr),
      HF(op_ulp_operation, "ULP command", "iwarp.ulp.command.operation", FT_STRING, BASE_NONE,
         nullptr, 0, nullptr),
      HF(op_ulp_command, "ULP command (with its identifiers)", "iwarp.ulp.command.name", FT_STRING,
         BASE_NONE, nullptr, 0, nullptr),
      HF(op_ulp_latency, "ULP command latency", "iwarp.ulp.command.latency", FT_RELATIVE_TIME,
         BASE_NONE, nullptr, 0, nullptr),
      HF(op_ulp_request_in, "ULP command in frame", "iwarp.ulp.command.request_in", FT_FRAMENUM,
         BASE_NONE, FRAMENUM_TYPE(FT_FRAMENUM_REQUEST), 0, nullptr),
      HF(op_ulp_response_in, "ULP completion in frame", "iwarp.ulp.command.response_in",
         FT_FRAMENUM, BASE_NONE, FRAMENUM_TYPE(FT_FRAMENUM_RESPONSE), 0, nullptr),
  };

  int* subtrees[] = {&ett.mpa,           &ett.mpa_flags,
                     &ett.mpa_enhanced,  &ett.mpa_marker,
                     &ett.mpa_fragments, &ett.ddp,
                     &ett.ddp_control,   &ett.ddp_analysis,
                     &ett.rdmap,         &ett.rdmap_control,
                     &ett.rdmap_body,    &ett.term_control,
                     &ett.term_ddp,      &ett.term_ddp_control,
                     &ett.term_rdmap,    &ett.rdmap_analysis,
                     &ett.analysis,      &ett.sctp_session};

  // The DDP adaptation over SCTP (RFC 5043 §5.2): the DDP-SSN of every PPID 16 and 17 message,
  // and DDP Stream Session Control (PPID 17; RFC 6581's word uses iwarp.mpa.ird etc.).
  static hf_register_info sctp_session_fields[] = {
      HF(ss_ddp_ssn, "DDP-SSN", "iwarp.sctp.ddp_ssn", FT_UINT16, BASE_DEC, nullptr, 0, nullptr),
      HF(ss_function, "Function code", "iwarp.sctp.function", FT_UINT16, BASE_HEX, nullptr, 0,
         nullptr),
      HF(ss_private_data, "Private data", "iwarp.sctp.private_data", FT_BYTES, BASE_NONE, nullptr,
         0, nullptr),
      HF(ss_ulp_private_data, "ULP private data", "iwarp.sctp.ulp_private_data", FT_BYTES,
         BASE_NONE, nullptr, 0, nullptr),
      HF(ss_error, "Malformed", "iwarp.sctp.malformed", FT_STRING, BASE_NONE, nullptr, 0, nullptr),
  };

  proto_register_field_array(proto.sctp_session, sctp_session_fields,
                             G_N_ELEMENTS(sctp_session_fields));
  proto_register_field_array(proto.mpa, mpa_fields, G_N_ELEMENTS(mpa_fields));
  proto_register_field_array(proto.ddp, ddp_fields, G_N_ELEMENTS(ddp_fields));
  proto_register_field_array(proto.rdmap, rdmap_fields, G_N_ELEMENTS(rdmap_fields));
  proto_register_subtree_array(subtrees, G_N_ELEMENTS(subtrees));

  // Expert infos from core's catalog: "iwarp.<code>", severity as in the catalog, and note
  // twins named after their cause: "iwarp.<code>.after-gap" for findings that capture loss
  // caused (the name all such findings had before), "iwarp.<code>.after-crc" for those an FPDU
  // dropped for its CRC caused.
  static std::vector<ei_register_info> eis[3];
  for (const FindingSpec& spec : finding_catalog()) {
    const std::size_t layer = spec.layer == "ddp" ? 1 : spec.layer == "rdmap" ? 2 : 0;
    const char* summary = keep(std::string(spec.summary));
    for (std::size_t twin = 0; twin < kEisPerFinding; ++twin) {
      const Consequence cause = twin == 0 ? Consequence::none : kTwins[twin - 1].cause;
      std::string name =
          "iwarp." + std::string(spec.code) + (twin == 0 ? "" : kTwins[twin - 1].suffix);
      ei_register_info ei{};
      ei.ids = finding_expert(spec.id, cause);
      *ei.ids = EI_INIT;
      ei.eiinfo = {keep(std::move(name)), expert_group(spec),
                   twin == 0 ? expert_severity(spec.severity) : PI_NOTE, summary, EXPFILL};
      eis[layer].push_back(ei);
    }
  }
  const int protos[3] = {proto.mpa, proto.ddp, proto.rdmap};
  for (int i = 0; i < 3; ++i) {
    expert_module_t* module = expert_register_protocol(protos[i]);
    expert_register_field_array(module, eis[i].data(), static_cast<int>(eis[i].size()));
  }
}

}  // namespace ddpscope::plugin
