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

// RFC rows that are not a Terminate: the rule's own triple is what every other row sends.
constexpr std::array<ProfileRow, 1> kRfc{{
    {F::mpa_handshake_invalid,
     C::handshake_request,
     {O::reject, std::nullopt, "RFC 5044 §7.1.2: the responder answers with R = 1"}},
}};

// Linux siw 6.1 (Debian's 6.1 kernel), where it differs from the RFC row. Each row names the
// siw function that decides it and the lab case that observed it (tests/interop/siw_oracle.py).
constexpr std::array<ProfileRow, 10> kSiw{{
    {F::mpa_handshake_invalid,
     C::handshake_request,
     {O::reject, std::nullopt, "siw_recv_mpa_rr: an MPA Reply with R = 1 (as RFC 5044 §7.1.2)"}},
    {F::ddp_untagged_message_too_long,
     C::general,
     {O::terminate, kSiwNoBuffer,
      "siw_proc_send: a Send longer than the receive buffer finds no buffer (0x02); lab case "
      "send-too-long"}},
    {F::ddp_untagged_message_too_long,
     C::fixed_body_long,
     {O::close, std::nullopt,
      "siw_proc_rreq / siw_get_hdr: a Read Request with extra octets desynchronises the FPDU "
      "stream; siw closes with FIN; lab case read-request-long"}},
    {F::rdmap_body_invalid,
     C::fixed_body_short,
     {O::wait, std::nullopt,
      "siw_get_hdr reads the fixed header size from the opcode and waits for the missing "
      "octets; lab case read-request-short"}},
    {F::mpa_ulpdu_length_invalid,
     C::header_too_short,
     {O::wait, std::nullopt,
      "siw_tcp_rx_data takes the header length from the opcode and waits for octets of the next "
      "FPDU; lab case ulpdu-shorter-than-header"}},
    {F::rdmap_opcode_invalid,
     C::control_send_tagged,
     {O::terminate, kSiwMsnRange,
      "siw_get_hdr takes the buffer model from the opcode: the tagged header's STag is read as "
      "an MSN (0x03); lab case send-opcode-tagged"}},
    {F::ddp_tagged_to_wrap,
     C::general,
     {O::terminate, term::ddp_local_catastrophic(),
      "siw_check_mem has no TO-wrap check; the placement fails later (DDP Local "
      "Catastrophic); lab case write-to-wrap"}},
    {F::ddp_untagged_invalid_qn,
     C::queue_terminate,
     {O::close, std::nullopt,
      "siw_proc_terminate is not reached for QN 0; siw closes with FIN; lab case "
      "terminate-qn0"}},
    {F::ddp_untagged_invalid_qn,
     C::queue_read_request,
     {O::accept, std::nullopt,
      "siw_proc_rreq sequences a Read Request by its opcode, not its QN; answered; lab case "
      "read-request-qn0"}},
    {F::rdmap_ird_exceeded,
     C::ird_first_over,
     {O::accept, std::nullopt,
      "siw_init_rresp schedules one Read Response in its idle send slot without an IRQ entry: "
      "IRD + 1 are admitted; lab case ird-plus-one"}},
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
  if (!v.terminate) return {SinkOutcome::accept, std::nullopt, "no Terminate names this rule"};
  return {SinkOutcome::terminate, v.terminate, finding_spec(v.id).rfc};
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
