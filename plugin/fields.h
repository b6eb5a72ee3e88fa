// SPDX-License-Identifier: GPL-2.0-or-later
// Protocol, field (hf_), subtree (ett_) and expert (ei_) identifiers of the plugin.
// Filter names: iwarp.mpa.*, iwarp.ddp.*, iwarp.rdmap.* (Wireshark 4.0 owns iwarp_mpa,
// iwarp_ddp_rdmap, iwarp_ddp.*, iwarp_rdma.* and AppleTalk's ddp).
#pragma once

#include <epan/expert.h>
#include <epan/proto.h>

#include "ddpscope/findings/catalog.h"

namespace ddpscope::plugin {

struct Protocols {
  int mpa = -1;
  int ddp = -1;
  int rdmap = -1;
  int sctp_session = -1;  // iwarp.sctp: DDP-SSN and Session Control (RFC 5043 §5.2)
  // "ddpscope": a name only (of iwarp.rdmap), for the service response time table
  // (tshark -z ddpscope,srt; Statistics › Service Response Time › ddpscope).
  int srt = -1;
};
extern Protocols proto;

// Header fields. One flat struct so registration and drawing share the names.
struct HeaderFields {
  // MPA Request / Reply (RFC 5044 §7.1, RFC 6581)
  int mpa_key = -1, mpa_flags = -1, mpa_flag_m = -1, mpa_flag_c = -1, mpa_flag_r = -1,
      mpa_flag_enhanced = -1, mpa_flag_reserved = -1, mpa_rev = -1, mpa_pd_length = -1,
      mpa_private_data = -1, mpa_ulp_private_data = -1;
  int mpa_ird_word = -1, mpa_ord_word = -1, mpa_a = -1, mpa_b = -1, mpa_ird = -1, mpa_c = -1,
      mpa_d = -1, mpa_ord = -1;
  // FPDU (RFC 5044 §4)
  int mpa_ulpdu_length = -1, mpa_pad = -1, mpa_crc = -1, mpa_crc_status = -1, mpa_crc_in_use = -1,
      mpa_marker = -1, mpa_marker_reserved = -1, mpa_marker_fpduptr = -1, mpa_marker_position = -1,
      mpa_leading_marker = -1, mpa_unframed = -1, mpa_framing_resumed = -1, mpa_resync_skipped = -1;
  // Where a PDU's octets are
  int mpa_stream = -1, mpa_direction = -1, mpa_stream_offset = -1, mpa_fpdu_length = -1,
      mpa_continuation = -1, mpa_fragment = -1, mpa_reassembled_length = -1;
  // DDP (RFC 5041 §4)
  int ddp_control = -1, ddp_t = -1, ddp_l = -1, ddp_rsvd = -1, ddp_dv = -1, ddp_rsvdulp = -1,
      ddp_stag = -1, ddp_to = -1, ddp_inval_stag = -1, ddp_qn = -1, ddp_msn = -1, ddp_mo = -1,
      ddp_payload = -1, ddp_payload_length = -1;
  // DDP analysis (core's SegmentAnalysis)
  int an_region = -1, an_region_stag = -1, an_region_source = -1, an_region_bounds_known = -1,
      an_offset_in_region = -1, an_region_bytes_placed = -1, an_expected_msn = -1, an_message = -1,
      an_placed_in = -1, an_delivered_in = -1, an_placed = -1, an_completes_message = -1,
      an_delivers_message = -1, an_not_placed = -1, an_region_ulp = -1, an_region_command = -1;
  // RDMAP (RFC 5040 §4, RFC 7306)
  int rdmap_control = -1, rdmap_rv = -1, rdmap_rsv = -1, rdmap_opcode = -1;
  int rr_sink_stag = -1, rr_sink_to = -1, rr_size = -1, rr_source_stag = -1, rr_source_to = -1;
  int term_control = -1, term_layer = -1, term_etype = -1, term_code = -1, term_m = -1, term_d = -1,
      term_r = -1, term_reserved = -1, term_layout = -1, term_error = -1, term_seg_len = -1,
      term_ddp_header = -1, term_ddp_control = -1, term_ddp_t = -1, term_ddp_l = -1,
      term_ddp_rsvd = -1, term_ddp_dv = -1, term_ddp_rsvdulp = -1, term_ddp_stag = -1,
      term_ddp_to = -1, term_ddp_qn = -1, term_ddp_msn = -1, term_ddp_mo = -1,
      term_rdmap_header = -1, term_rr_sink_stag = -1, term_rr_sink_to = -1, term_rr_size = -1,
      term_rr_source_stag = -1, term_rr_source_to = -1;
  int atomic_reserved = -1, atomic_opcode = -1, atomic_request_id = -1, atomic_remote_stag = -1,
      atomic_remote_to = -1, atomic_add_swap_data = -1, atomic_add_swap_mask = -1,
      atomic_compare_data = -1, atomic_compare_mask = -1, atomic_orig_request_id = -1,
      atomic_orig_value = -1, immediate_data = -1;
  // RDMAP analysis
  int an_request_in = -1, an_response_in = -1, an_response_time = -1, an_quoted_frame = -1;
  // Operation response times, from core's timing model (issue 42)
  int op_read_rtt = -1, op_read_first_rtt = -1, op_read_request_in = -1, op_read_response_in = -1,
      op_read_first_response_in = -1, op_atomic_time = -1, op_atomic_request_in = -1,
      op_atomic_response_in = -1, op_ulp_kind = -1, op_ulp_operation = -1, op_ulp_command = -1,
      op_ulp_latency = -1, op_ulp_request_in = -1, op_ulp_response_in = -1;
  // Frame-level analysis
  int an_pdu_end_of_capture = -1, an_pdu_released_in = -1, an_pdu_held_behind = -1;
  int an_finding = -1, an_finding_reported_in = -1, an_finding_end_of_capture = -1,
      an_finding_learnt_from = -1;
  // What the Data Sink of the chosen profile (preference sink_profile) does about the rule
  // broken, RFC's where it differs, and whether a peer's Terminate is what it predicted.
  int an_finding_profile = -1, an_finding_verdict = -1, an_finding_rfc_verdict = -1,
      an_finding_matches = -1, an_finding_matching = -1;
  // The DDP adaptation over SCTP (iwarp.sctp.*)
  int ss_ddp_ssn = -1, ss_function = -1, ss_private_data = -1, ss_ulp_private_data = -1,
      ss_error = -1;
};
extern HeaderFields hf;

struct Subtrees {
  int mpa = -1, mpa_flags = -1, mpa_enhanced = -1, mpa_marker = -1, mpa_fragments = -1, ddp = -1,
      ddp_control = -1, ddp_analysis = -1, rdmap = -1, rdmap_control = -1, rdmap_body = -1,
      term_control = -1, term_ddp = -1, term_ddp_control = -1, term_rdmap = -1, rdmap_analysis = -1,
      analysis = -1, sctp_session = -1;
};
extern Subtrees ett;

// Expert fields, one per finding in core's catalog, and a note-level twin per cause for
// findings raised only because octets went unseen: "iwarp.<code>.after-gap" (capture loss,
// Consequence::gap) and "iwarp.<code>.after-crc" (an FPDU dropped for its CRC).
expert_field* finding_expert(FindingId id, Consequence consequence);

void register_fields();

}  // namespace ddpscope::plugin
