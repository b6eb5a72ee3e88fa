// SPDX-License-Identifier: GPL-2.0-or-later
#include "ddpscope/findings/catalog.h"

#include <array>

namespace ddpscope {
namespace {

using F = FindingId;
using S = Severity;
constexpr std::uint8_t kRdmap = static_cast<std::uint8_t>(TermLayer::rdmap);
constexpr std::uint8_t kDdp = static_cast<std::uint8_t>(TermLayer::ddp);
constexpr std::uint8_t kLlp = static_cast<std::uint8_t>(TermLayer::llp);
constexpr std::optional<TerminateError> kNone = std::nullopt;
constexpr LlpAction kTerminateStream = LlpAction::session_terminate;
constexpr LlpAction kAbort = LlpAction::abort;
constexpr TerminateError term(std::uint8_t l, std::uint8_t t, std::uint8_t c) {
  return {l, t, c};
}

// Order must follow FindingId.
constexpr std::array<FindingSpec, kFindingCount> kCatalog{{
    {F::tcp_gap, "tcp.gap", S::warning, "tcp", "capture loss", kNone,
     "bytes of the TCP stream are missing from the capture"},
    {F::tcp_retransmission_conflict, "tcp.retransmission-conflict", S::warning, "tcp",
     "RFC 9293 §3.10.7.4", kNone,
     "a retransmission carries different bytes than the first copy (first copy kept)"},
    {F::capture_truncated_frame, "capture.truncated-frame", S::warning, "capture", "pcap snaplen",
     kNone, "a frame was cut by the capture's snaplen; its missing octets are treated as lost"},
    {F::capture_truncated_file, "capture.truncated-file", S::warning, "capture", "pcap format",
     kNone, "the capture file ends in the middle of a record"},
    {F::mpa_handshake_invalid, "mpa.handshake-invalid", S::error, "mpa", "RFC 5044 §7.1, RFC 6581",
     term(kLlp, 0, mpa_code::invalid_reqrep),
     "invalid MPA Request/Reply exchange or setup order (IRD/ORD, RTR, FPDU before the Reply)"},
    {F::mpa_rejected, "mpa.rejected", S::warning, "mpa", "RFC 5044 §7.1.1", kNone,
     "the responder rejected the connection (R bit in the MPA Reply)"},
    {F::mpa_crc_mismatch, "mpa.crc-mismatch", S::error, "mpa", "RFC 5044 §4.2",
     term(kLlp, 0, mpa_code::crc_error), "FPDU CRC does not match its contents"},
    {F::mpa_crc_unexpected, "mpa.crc-unexpected", S::note, "mpa", "RFC 5044 §4.2", kNone,
     "non-zero CRC field while CRC was not negotiated"},
    {F::mpa_marker_invalid, "mpa.marker-invalid", S::error, "mpa", "RFC 5044 §4.3",
     term(kLlp, 0, mpa_code::marker_mismatch), "marker FPDUPTR does not point at the FPDU start"},
    {F::mpa_marker_convention, "mpa.marker-convention", S::note, "mpa", "RFC 5044 §4.3", kNone,
     "which convention the sender uses for a marker directly in front of an FPDU"},
    {F::mpa_ulpdu_length_invalid, "mpa.ulpdu-length-invalid", S::error, "mpa", "RFC 5044 §4.1",
     term(kRdmap, rdmap_etype::remote_operation, rdmap_code::unspecified),
     "ULPDU_Length cannot hold the DDP header it must carry"},
    {F::mpa_fpdu_exceeds_mulpdu, "mpa.fpdu-exceeds-mulpdu", S::warning, "mpa", "RFC 5044 §8", kNone,
     "ULPDU longer than the MULPDU derived from the peer's MSS"},
    {F::mpa_resync, "mpa.resync", S::warning, "mpa", "RFC 5044 §4", kNone,
     "FPDU framing was lost and found again; octets in between were not analyzed"},
    {F::mpa_no_fpdu_boundary, "mpa.no-fpdu-boundary", S::warning, "mpa", "RFC 5044 §4", kNone,
     "no FPDU boundary found (or framing lost for good): octets to the end were not analyzed"},
    {F::mpa_crc_detected, "mpa.crc-detected", S::note, "mpa", "RFC 5044 §4.2", kNone,
     "mid-stream without a CRC setting: which one framed the FPDUs"},
    {F::mpa_reserved_bits, "mpa.reserved-bits", S::note, "mpa", "RFC 5044 §7.1, RFC 6581", kNone,
     "reserved MPA flag bits set (vendor extension)"},
    {F::mpa_private_data_long, "mpa.private-data-long", S::note, "mpa", "RFC 5044 §7.1", kNone,
     "private data longer than 256 octets (Linux siw and cxgb4 reject it)"},
    {F::sctp_checksum_mismatch, "sctp.checksum-mismatch", S::error, "sctp",
     "RFC 9260 §6.8, RFC 5043 §4", kNone,
     "SCTP packet CRC32c does not match its contents (a receiver discards the packet)"},
    {F::sctp_checksum_unfilled, "sctp.checksum-unfilled", S::note, "sctp", "RFC 9260 §6.8", kNone,
     "SCTP packets with a zero CRC32c, as a capture on the sending host shows them under "
     "checksum offload: analysed, their checksum not checked"},
    {F::sctp_gap, "sctp.gap", S::warning, "sctp", "capture loss", kNone,
     "DATA chunks (TSNs) of the association are missing from the capture"},
    {F::sctp_retransmission_conflict, "sctp.retransmission-conflict", S::warning, "sctp",
     "RFC 9260 §6.2", kNone,
     "a retransmitted DATA chunk carries different octets than the first copy (first copy kept)"},
    {F::sctp_ppid_invalid, "sctp.ppid-invalid", S::error, "sctp", "RFC 5043 §5.2", kNone,
     "DDP-looking data on a PPID other than 16, or a PPID 16 message that is not a DDP segment",
     kTerminateStream},
    {F::sctp_session_invalid, "sctp.session-invalid", S::error, "sctp",
     "RFC 5043 §6.1-§6.4, RFC 6581 §7", kNone,
     "DDP Stream Session Control outside the legal sequences (Initiate, then Accept, Reject or "
     "Terminate; a Terminate ends it), malformed, or a failed RFC 6581 negotiation",
     kTerminateStream},
    {F::sctp_session_rejected, "sctp.session-rejected", S::warning, "sctp", "RFC 5043 §6.2", kNone,
     "the responder rejected the DDP stream (Session Reject)"},
    {F::sctp_ssn_invalid, "sctp.ssn-invalid", S::error, "sctp", "RFC 5043 §5.2.1, §10", kNone,
     "a DDP-SSN skipped, reused, or not 0 at the session's start: the stream's order is broken",
     kTerminateStream},
    {F::sctp_function_code_invalid, "sctp.function-code-invalid", S::error, "sctp",
     "RFC 5043 §5.2.3, RFC 6581 §7", kNone,
     "a DDP Stream Session Control function code that RFC 5043 and RFC 6581 do not define",
     kTerminateStream},
    {F::sctp_private_data_invalid, "sctp.private-data-invalid", S::error, "sctp", "RFC 5043 §5.2.3",
     kNone, "more than 512 octets of private data, or private data in a Session Terminate",
     kTerminateStream},
    {F::sctp_segment_early, "sctp.segment-early", S::error, "sctp", "RFC 5043 §6.6", kNone,
     "a DDP segment the session did not allow yet: the active side's before its Initiate was "
     "acknowledged or answered, the passive side's before its Accept, either after a Reject or "
     "its own Terminate",
     kTerminateStream},
    {F::sctp_chunk_ordered, "sctp.chunk-ordered", S::error, "sctp", "RFC 5043 §4, §10", kNone,
     "a DATA chunk of the DDP adaptation sent ordered (U = 0): every chunk must be unordered",
     kTerminateStream},
    {F::sctp_adaptation_missing, "sctp.adaptation-missing", S::error, "sctp",
     "RFC 5043 §5.1, §11.1", kNone,
     "DDP messages on an association whose INIT and INIT ACK did not both carry the DDP "
     "adaptation indication (0x00000001)",
     kAbort},
    {F::sctp_segment_too_large, "sctp.segment-too-large", S::warning, "sctp", "RFC 5043 §9", kNone,
     "a DDP segment larger than the path's MULPDU (it needed SCTP fragmentation; a path MTU that "
     "fell after the segment was sized does this too)",
     kTerminateStream},
    {F::sctp_session_unterminated, "sctp.session-unterminated", S::warning, "sctp", "RFC 5043 §6.1",
     kNone,
     "an accepted DDP Stream Session whose association shut down with no Session Terminate from "
     "either side"},
    {F::ddp_version_invalid, "ddp.version-invalid", S::error, "ddp", "RFC 5041 §4.1",
     term(kDdp, ddp_etype::tagged_buffer, ddp_tagged_code::invalid_version),
     "DDP version (DV) is not 1"},
    {F::ddp_reserved_nonzero, "ddp.reserved-nonzero", S::warning, "ddp", "RFC 5041 §4.1", kNone,
     "reserved bits of the DDP control field are not zero"},
    {F::ddp_tagged_invalid_stag, "ddp.tagged.invalid-stag", S::error, "ddp", "RFC 5041 §7.2",
     term(kDdp, ddp_etype::tagged_buffer, ddp_tagged_code::invalid_stag),
     "tagged segment names an STag that is not valid at the Data Sink"},
    {F::ddp_tagged_bounds, "ddp.tagged.bounds", S::error, "ddp", "RFC 5041 §7.2",
     term(kDdp, ddp_etype::tagged_buffer, ddp_tagged_code::base_bounds),
     "tagged segment falls outside the STag's region"},
    {F::ddp_tagged_stag_wrong_stream, "ddp.tagged.stag-wrong-stream", S::error, "ddp",
     "RFC 5041 §7.2, §8",
     term(kDdp, ddp_etype::tagged_buffer, ddp_tagged_code::stag_not_associated),
     "STag used on a DDP stream it is not associated with"},
    {F::ddp_tagged_to_wrap, "ddp.tagged.to-wrap", S::error, "ddp", "RFC 5041 §7.2",
     term(kDdp, ddp_etype::tagged_buffer, ddp_tagged_code::to_wrap),
     "TO plus segment length wraps past 2^64"},
    {F::ddp_tagged_access_rights, "ddp.tagged.access-rights", S::error, "ddp",
     "RFC 5040 §5.3, RFC 5041 §7.2",
     term(kDdp, ddp_etype::tagged_buffer, ddp_tagged_code::invalid_stag),
     "the region does not grant the access right the segment or request needs"},
    // A warning: until a message is delivered its octets in the Data Sink's buffer are that
    // message's (RFC 5041 §5.3, RFC 5040 §5.5); different content written over them meanwhile,
    // by another stream or by the message itself, leaves the buffer undefined: almost always an
    // upper-layer race or a sender bug. No rule a compliant sink enforces (no Terminate), and
    // "in flight" is our reading of the capture's delivery order, so not an error. Reusing a
    // buffer after delivery is normal and no finding (counted per region, ddp/shadow.h).
    {F::ddp_tagged_conflicting_placement, "ddp.tagged.conflicting-placement", S::warning, "ddp",
     "RFC 5041 §5.3, RFC 5040 §5.5", kNone,
     "different content placed over octets of a message not yet delivered (its own included)"},
    {F::ddp_untagged_invalid_qn, "ddp.untagged.invalid-qn", S::error, "ddp", "RFC 5041 §7.2",
     term(kDdp, ddp_etype::untagged_buffer, ddp_untagged_code::invalid_qn),
     "untagged segment on a queue number its opcode does not use"},
    {F::ddp_untagged_msn_gap, "ddp.untagged.msn-gap", S::error, "ddp", "RFC 5041 §5.3",
     term(kDdp, ddp_etype::untagged_buffer, ddp_untagged_code::invalid_msn_range),
     "MSN skips ahead of the next expected message"},
    {F::ddp_untagged_msn_duplicate, "ddp.untagged.msn-duplicate", S::error, "ddp", "RFC 5041 §5.3",
     term(kDdp, ddp_etype::untagged_buffer, ddp_untagged_code::invalid_msn_range),
     "MSN of a message that was already received"},
    {F::ddp_untagged_invalid_mo, "ddp.untagged.invalid-mo", S::error, "ddp", "RFC 5041 §7.2",
     term(kDdp, ddp_etype::untagged_buffer, ddp_untagged_code::invalid_mo),
     "MO does not continue the message's previous segments"},
    {F::ddp_untagged_no_buffer, "ddp.untagged.no-buffer", S::error, "ddp", "RFC 5041 §7.2",
     term(kDdp, ddp_etype::untagged_buffer, ddp_untagged_code::invalid_msn_no_buffer),
     "untagged message while the Data Sink has no receive buffer posted"},
    {F::ddp_untagged_message_too_long, "ddp.untagged.message-too-long", S::error, "ddp",
     "RFC 5041 §7.2", term(kDdp, ddp_etype::untagged_buffer, ddp_untagged_code::message_too_long),
     "untagged message longer than the buffer that receives it"},
    {F::ddp_segment_after_last, "ddp.segment-after-last", S::error, "ddp", "RFC 5041 §4.2",
     term(kDdp, ddp_etype::untagged_buffer, ddp_untagged_code::invalid_msn_range),
     "segment of a message whose last segment (L=1) was already seen"},
    {F::ddp_message_incomplete, "ddp.message-incomplete", S::error, "ddp", "RFC 5041 §5.3", kNone,
     "message never completed (no L=1 segment, or segments missing)"},
    {F::rdmap_version_invalid, "rdmap.version-invalid", S::error, "rdmap", "RFC 5040 §4.2",
     term(kRdmap, rdmap_etype::remote_operation, rdmap_code::invalid_version),
     "RDMAP version (RV) is not 1"},
    {F::rdmap_opcode_invalid, "rdmap.opcode-invalid", S::error, "rdmap", "RFC 5040 §4.3",
     term(kRdmap, rdmap_etype::remote_operation, rdmap_code::unexpected_opcode),
     "reserved or unsupported opcode (or atomic opcode), or an opcode on the wrong buffer model"},
    {F::rdmap_body_invalid, "rdmap.body-invalid", S::error, "rdmap", "RFC 5040 §4.4-4.8",
     term(kRdmap, rdmap_etype::remote_operation, rdmap_code::unspecified),
     "RDMAP message too short or too long for its opcode's fixed body"},
    {F::rdmap_read_response_unmatched, "rdmap.read-response-unmatched", S::error, "rdmap",
     "RFC 5040 §5.2", term(kDdp, ddp_etype::local_catastrophic, 0),
     "Read Response with no outstanding Read Request"},
    {F::rdmap_read_response_size_mismatch, "rdmap.read-response-size-mismatch", S::error, "rdmap",
     "RFC 5040 §5.2", term(kDdp, ddp_etype::tagged_buffer, ddp_tagged_code::base_bounds),
     "Read Response does not cover exactly the requested sink range"},
    {F::rdmap_ird_exceeded, "rdmap.ird-exceeded", S::error, "rdmap", "RFC 5040 §5.2, RFC 6581",
     term(kRdmap, rdmap_etype::remote_operation, rdmap_code::catastrophic_stream),
     "more outstanding Read Requests than the responder's IRD"},
    {F::rdmap_stag_invalidated_use, "rdmap.stag-invalidated-use", S::error, "rdmap",
     "RFC 5040 §5.3", term(kDdp, ddp_etype::tagged_buffer, ddp_tagged_code::invalid_stag),
     "tagged segment uses an STag invalidated by an earlier Send with Invalidate"},
    {F::rdmap_invalidate_refused, "rdmap.invalidate-refused", S::error, "rdmap",
     "RFC 5040 §5.3, §7.1",
     term(kRdmap, rdmap_etype::remote_protection, rdmap_code::stag_cannot_invalidate),
     "Send with Invalidate names an STag the Data Sink cannot invalidate"},
    {F::rdmap_atomic_response_unmatched, "rdmap.atomic-response-unmatched", S::error, "rdmap",
     "RFC 7306 §5", term(kRdmap, rdmap_etype::remote_operation, rdmap_code::unexpected_opcode),
     "Atomic Response whose request identifier matches no outstanding Atomic Request"},
    {F::rdmap_terminate, "rdmap.terminate", S::error, "rdmap", "RFC 5040 §4.8", kNone,
     "a peer sent Terminate: the stream failed"},
    {F::rdmap_terminate_nonconformant, "rdmap.terminate-nonconformant", S::warning, "rdmap",
     "RFC 5040 §4.8", kNone,
     "Terminate control word not in RFC layout (Linux siw's little-endian bit fields)"},
    {F::rdmap_terminate_unexpected, "rdmap.terminate-unexpected", S::note, "rdmap", "RFC 5040 §4.8",
     kNone, "a peer's Terminate that no Data Sink profile predicts from the rule broken before it"},
    {F::ulp_access_mismatch, "ulp.access-mismatch", S::error, "ulp",
     "RFC 5040 §5.3; the ULP command's data direction",
     term(kRdmap, rdmap_etype::remote_protection, rdmap_code::access_rights),
     "RDMA Write into a buffer its command advertised for remote read only, or a Read Request "
     "of one advertised for remote write only"},
    {F::ulp_incomplete_transfer, "ulp.incomplete-transfer", S::error, "ulp",
     "NVMe-oF RDMA transport: data before the response", kNone,
     "a command completed successfully before all of the data its buffers advertised was "
     "transferred"},
    {F::ulp_length_mismatch, "ulp.length-mismatch", S::warning, "ulp",
     "the ULP command's data length", kNone,
     "the octets transferred for a command differ from the length the command itself gives"},
    {F::ulp_invalidate_mismatch, "ulp.invalidate-mismatch", S::error, "ulp",
     "RFC 5040 §5.3; NVMe-oF RDMA transport: Send with Invalidate", kNone,
     "a completion sent with Invalidate names another STag than its command's"},
    // ESP is under the LLP: no Terminate (a receiver drops the packet, RFC 4303 §3.4).
    {F::esp_icv_mismatch, "esp.icv-mismatch", S::error, "esp", "RFC 4303 §3.4.4", kNone,
     "an ESP packet's integrity check fails (wrong key or altered): a receiver drops it"},
    {F::esp_replay, "esp.replay", S::warning, "esp", "RFC 4303 §3.4.3", kNone,
     "an ESP sequence number already received or left of the anti-replay window: dropped"},
    {F::esp_unknown_spi, "esp.unknown-spi", S::warning, "esp", "RFC 4303 §3.4.2", kNone,
     "ESP packets of an SPI with no key given: their contents were not analysed"},
    {F::esp_decrypt_invalid, "esp.decrypt-invalid", S::error, "esp", "RFC 4303 §2.4-2.6", kNone,
     "after decryption the padding, pad length or next header is inconsistent: dropped"},
    {F::esp_profile_violation, "esp.profile-violation", S::error, "esp",
     "RFC 3723 §2.3, RFC 7146 §4", kNone,
     "an SA outside the iWARP IPsec profile (NULL integrity, NULL encryption where the policy "
     "requires confidentiality, an algorithm the profile does not list)"},
    {F::esp_unprotected, "esp.unprotected", S::error, "esp", "RFC 5041 §8, RFC 3723 §2.3", kNone,
     "--require-esp: an iWARP stream seen in the clear"},
    {F::engine_limit_reached, "engine.limit-reached", S::warning, "engine", "ddpscope limits",
     kNone, "a configured analysis limit was reached; analysis continues degraded"},
}};

constexpr bool catalog_in_order() {
  for (std::size_t i = 0; i < kCatalog.size(); ++i)
    if (static_cast<std::size_t>(kCatalog[i].id) != i) return false;
  return true;
}
static_assert(catalog_in_order(), "kCatalog must follow FindingId order");

}  // namespace

std::string_view to_string(Severity s) {
  switch (s) {
    case Severity::note:
      return "note";
    case Severity::warning:
      return "warning";
    case Severity::error:
      return "error";
  }
  return "?";
}

std::string_view to_string(LlpAction a) {
  switch (a) {
    case LlpAction::none:
      return "";
    case LlpAction::session_terminate:
      return "session-terminate";
    case LlpAction::abort:
      return "abort";
  }
  return "";
}

std::string_view to_string(Consequence c) {
  switch (c) {
    case Consequence::none:
      return "";
    case Consequence::gap:
      return "gap";
    case Consequence::crc:
      return "crc";
  }
  return "";
}

const FindingSpec& finding_spec(FindingId id) {
  return kCatalog.at(static_cast<std::size_t>(id));
}
std::span<const FindingSpec> finding_catalog() {
  return kCatalog;
}
std::optional<FindingId> finding_by_code(std::string_view code) {
  for (const auto& s : kCatalog)
    if (s.code == code) return s.id;
  return std::nullopt;
}

}  // namespace ddpscope
