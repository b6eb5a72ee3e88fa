// SPDX-License-Identifier: GPL-2.0-or-later
#include "ddpscope/findings/sink_profile.h"

#include <array>

namespace ddpscope {
namespace {

using F = FindingId;
using C = SinkCase;
using O = SinkOutcome;

constexpr TerminateError kSiwNoBuffer =
    term::ddp_untagged(ddp_untagged_code::invalid_msn_no_buffer);
constexpr TerminateError kSiwMsnRange = term::ddp_untagged(ddp_untagged_code::invalid_msn_range);
constexpr TerminateError kSiwInvalidQn = term::ddp_untagged(ddp_untagged_code::invalid_qn);

// RFC rows that are not a Terminate: the rule's own triple is what every other row sends.
constexpr std::array<ProfileRow, 2> kRfc{{
    {F::mpa_handshake_invalid,
     C::handshake_request,
     {O::reject, std::nullopt, "RFC 5044 §7.1.2: the responder answers with R = 1"}},
    {F::mpa_handshake_invalid,
     C::handshake_request_revision,
     {O::reject, std::nullopt, "RFC 5044 §7.1.2: the responder answers with R = 1"}},
}};

// Linux siw 6.1 (Debian's 6.1.0 kernel), where it differs from the RFC row. Each row names the
// lab case that observed it (tests/interop/siw_oracle.py; docs/siw-sink-oracle.md) and the siw
// function that decides it (drivers/infiniband/sw/siw/).
constexpr std::array<ProfileRow, 20> kSiw{{
    {F::mpa_handshake_invalid,
     C::handshake_request,
     {O::reject, std::nullopt,
      "siw_proc_mpareq: an MPA Reply with R = 1 (as RFC 5044 §7.1.2); lab case "
      "mpa-enhanced-pd-short"}},
    {F::mpa_handshake_invalid,
     C::handshake_request_revision,
     {O::close, std::nullopt,
      "siw_proc_mpareq: a Request of an unknown revision is dropped with the connection (FIN), "
      "no Reply; lab case mpa-request-rev3"}},
    {F::ddp_untagged_message_too_long,
     C::general,
     {O::terminate, kSiwNoBuffer,
      "siw_proc_send: a Send longer than the receive buffer finds no buffer (0x02); lab case "
      "send-too-long"}},
    {F::ddp_segment_after_last,
     C::general,
     {O::terminate, kSiwNoBuffer,
      "siw_proc_send: a segment of a message already complete finds no buffer (0x02); lab case "
      "send-segment-after-last"}},
    {F::ddp_untagged_message_too_long,
     C::fixed_body_long,
     {O::close, std::nullopt,
      "siw_get_hdr: a Read Request with extra octets desynchronises the FPDU stream; siw closes "
      "with FIN; lab case read-request-long"}},
    {F::rdmap_body_invalid,
     C::fixed_body_short,
     {O::wait, std::nullopt,
      "siw_get_hdr reads the fixed header size from the opcode and waits for the missing octets; "
      "lab case read-request-short"}},
    {F::mpa_ulpdu_length_invalid,
     C::header_too_short,
     {O::wait, std::nullopt,
      "siw_tcp_rx_data takes the header length from the opcode and waits for octets of the next "
      "FPDU; lab cases ulpdu-length-short, ulpdu-length-zero"}},
    {F::rdmap_opcode_invalid,
     C::control_send_tagged,
     {O::terminate, kSiwMsnRange,
      "siw_get_hdr takes the buffer model from the opcode: the tagged header is read as an "
      "untagged one, QN 0 and the TO's low word as the MSN (0x03)"}},
    {F::rdmap_opcode_invalid,
     C::control_send_tagged_qn,
     {O::terminate, kSiwInvalidQn,
      "siw_get_hdr takes the buffer model from the opcode: the TO's high word is read as the QN "
      "(0x01); lab case send-in-tagged-segment"}},
    {F::rdmap_opcode_invalid,
     C::control_read_request_tagged,
     {O::terminate, term::mpa(mpa_code::marker_mismatch),
      "siw_get_hdr sizes a Read Request's header from its opcode: the FPDU's length no longer "
      "fits (LLP/MPA 0x03); lab case read-request-in-tagged-segment"}},
    {F::rdmap_opcode_invalid,
     C::control_tagged_untagged,
     {O::terminate, term::ddp_tagged(ddp_tagged_code::invalid_stag),
      "siw_get_hdr takes the buffer model from the opcode: the untagged header's first word is "
      "read as an STag (0x00); lab cases write-in-untagged-segment, "
      "read-response-in-untagged-segment"}},
    {F::ddp_tagged_to_wrap,
     C::general,
     {O::terminate, term::ddp_local_catastrophic(),
      "siw_check_mem has no TO-wrap check; the placement fails later (DDP Local Catastrophic); "
      "lab case write-to-wrap"}},
    {F::ddp_untagged_invalid_qn,
     C::queue_terminate,
     {O::close, std::nullopt,
      "siw_proc_terminate is not reached off QN 2; siw closes with FIN; lab cases "
      "terminate-on-qn0, terminate-on-qn1"}},
    {F::ddp_untagged_invalid_qn,
     C::queue_read_request,
     {O::accept, std::nullopt,
      "siw_proc_rreq sequences a Read Request by its opcode, not its QN; answered; lab cases "
      "read-request-on-qn0, read-request-on-qn2"}},
    {F::rdmap_ird_exceeded,
     C::ird_first_over,
     {O::accept, std::nullopt,
      "siw_init_rresp schedules one Read Response in its idle send slot without an IRQ entry: "
      "IRD + 1 are admitted; lab case ird-exceeded"}},
    {F::rdmap_invalidate_refused,
     C::general,
     {O::terminate, term::rdmap_operation(rdmap_code::stag_cannot_invalidate),
      "siw_invalidate_stag reports it under Remote Operation, not Remote Protection; lab cases "
      "send-invalidate-unknown-stag, send-se-invalidate-unknown-stag"}},
    {F::ddp_untagged_msn_gap,
     C::in_terminate,
     {O::close, std::nullopt, "siw closes with FIN; lab case terminate-msn-gap"}},
    {F::ddp_untagged_invalid_mo,
     C::in_terminate,
     {O::close, std::nullopt, "siw closes with FIN; lab case terminate-mo-not-0"}},
    {F::ddp_untagged_msn_duplicate,
     C::in_terminate,
     {O::close, std::nullopt, "siw closes with FIN (as for an MSN gap in a Terminate)"}},
    {F::rdmap_body_invalid,
     C::terminate_body_short,
     {O::terminate, term::mpa(mpa_code::marker_mismatch),
      "siw_get_hdr: a Terminate shorter than its header breaks the FPDU's length (LLP/MPA "
      "0x03); lab case terminate-short"}},
}};

}  // namespace

std::string_view to_string(SinkProfile p) {
  return p == SinkProfile::siw ? "siw" : "rfc";
}

std::optional<SinkProfile> sink_profile_by_name(std::string_view name) {
  if (name == "rfc") return SinkProfile::rfc;
  if (name == "siw") return SinkProfile::siw;
  return std::nullopt;
}

std::string_view sink_profile_description(SinkProfile p) {
  return p == SinkProfile::siw ? "Linux siw 6.1 as observed" : "RFC 5040/5041/5044/6581/7306";
}

std::string_view to_string(SinkOutcome o) {
  switch (o) {
    case SinkOutcome::terminate:
      return "terminate";
    case SinkOutcome::close:
      return "close";
    case SinkOutcome::wait:
      return "wait";
    case SinkOutcome::accept:
      return "accept";
    case SinkOutcome::reject:
      return "reject";
  }
  return "terminate";
}

std::span<const ProfileRow> profile_rows(SinkProfile p) {
  if (p == SinkProfile::siw) return kSiw;
  return kRfc;
}

SinkAnswer sink_answer(SinkProfile p, const Violation& v) {
  for (const ProfileRow& row : profile_rows(p))
    if (row.id == v.id && row.rule_case == v.rule_case) return row.answer;
  if (!v.terminate)
    return {SinkOutcome::accept, std::nullopt, "no Terminate names this rule", false};
  return {SinkOutcome::terminate, v.terminate,
          v.id == FindingId::count_ ? std::string_view("a local error") : finding_spec(v.id).rfc};
}

SinkTraits sink_traits(SinkProfile p) {
  SinkTraits t;
  if (p == SinkProfile::siw) {
    t.rfc7306 = false;
    t.siw_terminate_layout = true;
  }
  return t;
}

}  // namespace ddpscope
