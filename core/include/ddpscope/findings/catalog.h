// SPDX-License-Identifier: GPL-2.0-or-later
// The one catalog of findings: every rule a capture can break, with a stable dotted code,
// a severity, the layer, the RFC rule, and the Terminate (layer, type, code) a compliant Data
// Sink would send. The plugin's expert infos, the CLI's --list-findings, the docs and the
// coverage test all read this table.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ddpscope/wire/terminate_error.h"

namespace ddpscope {

enum class Severity : std::uint8_t { note, warning, error };
std::string_view to_string(Severity s);

enum class FindingId : std::uint16_t {
  // TCP and capture
  tcp_gap,
  tcp_retransmission_conflict,
  capture_truncated_frame,
  capture_truncated_file,
  // MPA
  mpa_handshake_invalid,
  mpa_rejected,
  mpa_crc_mismatch,
  mpa_crc_unexpected,
  mpa_marker_invalid,
  mpa_marker_convention,
  mpa_ulpdu_length_invalid,
  mpa_fpdu_exceeds_mulpdu,
  mpa_resync,
  mpa_no_fpdu_boundary,
  mpa_crc_detected,
  mpa_reserved_bits,
  mpa_private_data_long,
  // SCTP, DDP's second LLP (RFC 5043)
  sctp_checksum_mismatch,
  sctp_checksum_unfilled,
  sctp_gap,
  sctp_retransmission_conflict,
  sctp_ppid_invalid,
  sctp_session_invalid,
  sctp_session_rejected,
  sctp_ssn_invalid,
  sctp_function_code_invalid,
  sctp_private_data_invalid,
  sctp_segment_early,
  sctp_chunk_ordered,
  sctp_adaptation_missing,
  sctp_segment_too_large,
  sctp_session_unterminated,
  // DDP
  ddp_version_invalid,
  ddp_reserved_nonzero,
  ddp_tagged_invalid_stag,
  ddp_tagged_bounds,
  ddp_tagged_stag_wrong_stream,
  ddp_tagged_to_wrap,
  ddp_tagged_access_rights,
  ddp_tagged_conflicting_placement,
  ddp_untagged_invalid_qn,
  ddp_untagged_msn_gap,
  ddp_untagged_msn_duplicate,
  ddp_untagged_invalid_mo,
  ddp_untagged_no_buffer,
  ddp_untagged_message_too_long,
  ddp_segment_after_last,
  ddp_message_incomplete,
  // RDMAP
  rdmap_version_invalid,
  rdmap_opcode_invalid,
  rdmap_body_invalid,
  rdmap_read_response_unmatched,
  rdmap_read_response_size_mismatch,
  rdmap_ird_exceeded,
  rdmap_stag_invalidated_use,
  rdmap_invalidate_refused,
  rdmap_atomic_response_unmatched,
  rdmap_terminate,
  rdmap_terminate_nonconformant,
  rdmap_terminate_unexpected,
  // Upper layers (ulp/advert.h: NVMe-oF, ...)
  ulp_access_mismatch,
  ulp_incomplete_transfer,
  ulp_length_mismatch,
  ulp_invalidate_mismatch,
  // IPsec ESP (RFC 4303; the RFC 3723 / RFC 7146 profile): reported by the capture layer that
  // decrypts (esp/), through Analyzer::note_finding
  esp_icv_mismatch,
  esp_replay,
  esp_unknown_spi,
  esp_decrypt_invalid,
  esp_profile_violation,
  esp_unprotected,
  // Engine
  engine_limit_reached,
  count_
};
inline constexpr std::size_t kFindingCount = static_cast<std::size_t>(FindingId::count_);

// What an RFC 5043 Data Sink does about an SCTP-level violation (RFC 5043 §11.3). RFC 5043
// defines no LLP Terminate codes (RFC 6581 §8 says so), so no RDMAP Terminate names these rules:
// the receiver ends the DDP stream with a DDP Stream Session Terminate (function code 4), or,
// when the association itself cannot carry DDP, ends the association with an SCTP ABORT.
enum class LlpAction : std::uint8_t { none, session_terminate, abort };
// "", "session-terminate", "abort"
std::string_view to_string(LlpAction a);

// What a Data Sink does about a rule broken (findings/sink_profile.h chooses it by profile).
enum class SinkOutcome : std::uint8_t {
  terminate,  // an RDMAP Terminate with a triple, then the stream ends
  close,      // the connection closed without a Terminate (FIN)
  wait,       // nothing: the sink waits for octets that never come
  accept,     // the segment is taken as if valid; the stream goes on
  reject,     // MPA: a Reply with the Rejected bit (RFC 5044 §7.1.2) to an invalid Request
};
std::string_view to_string(SinkOutcome o);  // "terminate", "close", "wait", "accept", "reject"

struct FindingSpec {
  FindingId id;
  std::string_view code;  // stable dotted name, e.g. "ddp.tagged.bounds"
  Severity severity;
  std::string_view
      layer;             // "tcp", "capture", "mpa", "sctp", "ddp", "rdmap", "ulp", "esp", "engine"
  std::string_view rfc;  // the rule's home, e.g. "RFC 5041 §7.2"
  std::optional<TerminateError> terminate;  // what a compliant Data Sink sends
  std::string_view summary;                 // one line
  LlpAction llp_action = LlpAction::none;   // SCTP rules: what the sink does instead
};

const FindingSpec& finding_spec(FindingId id);
std::span<const FindingSpec> finding_catalog();
std::optional<FindingId> finding_by_code(std::string_view code);

// What a finding is only a consequence of: octets the analysis did not see, so what it reports
// is not blamed on the peer (severity note).
enum class Consequence : std::uint8_t {
  none,
  gap,  // octets missing from the capture (tcp.gap, sctp.gap, or a capture that ends first)
  crc,  // an FPDU dropped for its CRC (mpa.crc-mismatch, RFC 5044 §8: a sink never places it)
};
std::string_view to_string(Consequence c);

struct Finding {
  FindingId id = FindingId::count_;
  Severity severity = Severity::note;       // the catalog's, or note when caused by capture loss
  std::uint64_t frame = 0;                  // frame holding the first octet of the offending PDU
  std::vector<std::uint64_t> frames;        // every frame the PDU spans
  std::uint32_t stream = 0;                 // stream id (0-based), UINT32_MAX when none
  int direction = -1;                       // 0 = client->server, 1 = server->client, -1 = none
  std::string message;                      // one line with the specifics
  std::optional<TerminateError> terminate;  // what the chosen profile's Data Sink sends
  // A rule the peer broke: what the chosen profile's Data Sink does, and RFC's triple where the
  // profile's Terminate (`terminate`) differs from it.
  std::optional<SinkOutcome> outcome;
  std::optional<TerminateError> rfc_terminate;
  // A peer's Terminate (rdmap.terminate) against what the profiles predicted from the first
  // rule broken in the other direction: bit (1 << SinkProfile) for each profile whose
  // prediction it matches; nullopt when no rule broken there predicted anything.
  std::optional<std::uint8_t> matches;
  Consequence consequence_of = Consequence::none;  // raised only because octets went unseen
  bool consequence() const { return consequence_of != Consequence::none; }
  std::string_view code() const { return finding_spec(id).code; }
};

}  // namespace ddpscope
