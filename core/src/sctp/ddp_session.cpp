// SPDX-License-Identifier: GPL-2.0-or-later
#include "ddpscope/sctp/ddp_session.h"

#include <algorithm>
#include <cstdio>

namespace ddpscope::sctp {

namespace {
using Kind = wire::DdpSessionKind;

std::string fn_name(std::uint16_t fn) {
  const std::string_view n = wire::ddp_session_function_name(fn);
  if (!n.empty()) return std::string(n);
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%04X", static_cast<unsigned>(fn));
  return "function code " + std::string(buf);
}

const char* side_name(int side) {
  return side == 0 ? "the active side" : "the passive side";
}
}  // namespace

Violation violation(FindingId id, std::string detail) {
  return Violation{id, std::nullopt, TerminateQuote::none, std::move(detail)};
}

// ---- StreamSession ---------------------------------------------------------------------------

std::vector<Violation> StreamSession::on_control(int side, const wire::DdpSessionControl& m) {
  std::vector<Violation> out;
  side &= 1;
  const Kind kind = m.kind();
  const std::string name = fn_name(m.function_code);
  // §5.2.3 (RFC 6580 §3.5 keeps 0xFFFF for experiments; RFC 5043 gives it no meaning).
  if (kind == Kind::unknown) {
    out.push_back(
        violation(FindingId::sctp_function_code_invalid,
                  name + (m.function_code == wire::ddp_session_fn::experimental
                              ? " (reserved for experiments, RFC 6580 §3.5: no RFC 5043 meaning)"
                              : " is not defined (1-4 RFC 5043, 5-7 RFC 6581)")));
    return out;
  }
  // §5.2.3: at most 512 octets in Initiate, Accept and Reject (RFC 6581 §7: the IRD/ORD word
  // counts); none in a Terminate.
  if (kind == Kind::terminate && !m.private_data.empty()) {
    out.push_back(violation(FindingId::sctp_private_data_invalid,
                            "Session Terminate carries " + std::to_string(m.private_data.size()) +
                                " octets of private data (it carries none)"));
  } else if (m.private_data.size() > wire::kDdpSessionMaxPrivateData) {
    out.push_back(violation(FindingId::sctp_private_data_invalid,
                            name + " carries " + std::to_string(m.private_data.size()) +
                                " octets of private data (at most 512)"));
  }
  const auto sequence = [&](const std::string& why) {
    out.push_back(violation(FindingId::sctp_session_invalid, name + " from " + side_name(side) +
                                                                 ": " + why +
                                                                 " (RFC 5043 §6: the session "
                                                                 "must be terminated)"));
  };
  if (terminated_[side]) {
    sequence("after its own Session Terminate");
    return out;
  }
  switch (kind) {
    case Kind::initiate:
      if (side != 0) {
        sequence("only the active side initiates");
      } else if (phase_ == Phase::idle) {
        phase_ = Phase::initiated;
        enhanced_ = wire::ddp_session_is_enhanced(m.function_code);
      } else {
        sequence("the session was already initiated");
      }
      break;
    case Kind::accept:
    case Kind::reject: {
      const bool accept = kind == Kind::accept;
      if (side != 1) {
        sequence("only the passive side answers an Initiate");
      } else if (phase_ == Phase::initiated || phase_ == Phase::unknown) {
        // RFC 6581 §7: an enhanced Initiate is answered with the enhanced codes, a plain one
        // with the plain codes.
        if (phase_ == Phase::initiated &&
            wire::ddp_session_is_enhanced(m.function_code) != enhanced_)
          sequence(enhanced_ ? "a plain answer to an Enhanced Session Initiate"
                             : "an enhanced answer to a plain Session Initiate");
        phase_ = accept ? Phase::accepted : Phase::rejected;
      } else if (phase_ == Phase::idle) {
        sequence("no Initiate came before it");
      } else {
        sequence("the Initiate was already answered");
      }
      break;
    }
    case Kind::terminate:
      // §6.1 accepted sessions end with a Terminate from either side; §6.3 the passive side's
      // Terminate is the non-ULP reject of an Initiate. Before any Initiate it ends nothing.
      if (phase_ == Phase::idle) {
        sequence("no session was initiated");
        break;
      }
      if (phase_ == Phase::initiated) {
        if (side == 1) phase_ = Phase::rejected;  // the non-ULP reject
      } else if (phase_ == Phase::rejected) {
        sequence("the session was rejected");
        break;
      }
      terminated_[side] = true;
      break;
    case Kind::unknown:
      break;
  }
  return out;
}

std::optional<Violation> StreamSession::on_segment(int side, bool allowed_early) {
  side &= 1;
  if (terminated_[side])
    return violation(
        FindingId::sctp_segment_early,
        std::string("a DDP segment from ") + side_name(side) + " after its own Session Terminate");
  switch (phase_) {
    case Phase::unknown:
    case Phase::accepted:
      return std::nullopt;
    case Phase::rejected:
      return violation(
          FindingId::sctp_segment_early,
          std::string("a DDP segment from ") + side_name(side) + " on a rejected session");
    case Phase::idle:
      return violation(
          FindingId::sctp_segment_early,
          std::string("a DDP segment from ") + side_name(side) + " before any Session Initiate");
    case Phase::initiated:
      // §6.6: the active side may send once its Initiate was acknowledged by SCTP or answered;
      // the passive side only after its Accept.
      if (side == 0 && allowed_early) return std::nullopt;
      return violation(FindingId::sctp_segment_early,
                       side == 0 ? "a DDP segment from the active side before its Session "
                                   "Initiate was acknowledged (SACK) or answered"
                                 : "a DDP segment from the passive side before its Session "
                                   "Accept");
  }
  return std::nullopt;
}

std::optional<Violation> StreamSession::on_association_shutdown() const {
  if (phase_ != Phase::accepted || terminated_[0] || terminated_[1]) return std::nullopt;
  return violation(FindingId::sctp_session_unterminated,
                   "the association shut down with the session accepted and no Session "
                   "Terminate from either side");
}

// ---- per-message rules -----------------------------------------------------------------------

std::optional<Violation> check_unordered(bool unordered, std::uint32_t ppid,
                                         std::string_view what) {
  if (unordered) return std::nullopt;
  if (ppid != wire::kPpidDdpSegment && ppid != wire::kPpidDdpSessionControl) return std::nullopt;
  return violation(FindingId::sctp_chunk_ordered,
                   std::string(what) + " (PPID " + std::to_string(ppid) +
                       ") has U = 0: the DDP adaptation sends every chunk unordered");
}

std::optional<Violation> check_adaptation(std::optional<std::uint32_t> init,
                                          std::optional<std::uint32_t> init_ack) {
  const auto said = [](const char* chunk, std::optional<std::uint32_t> v) {
    if (!v) return std::string(chunk) + " had no Adaptation Layer Indication";
    char buf[16];
    std::snprintf(buf, sizeof buf, "0x%08X", static_cast<unsigned>(*v));
    return std::string(chunk) + " indicated adaptation " + buf;
  };
  const bool init_ok = init == wire::kAdaptationCodePointDdp;
  const bool ack_ok = init_ack == wire::kAdaptationCodePointDdp;
  if (init_ok && ack_ok) return std::nullopt;
  std::string why;
  if (!init_ok) why = said("the INIT", init);
  if (!ack_ok) why += (why.empty() ? "" : " and ") + said("the INIT ACK", init_ack);
  return violation(FindingId::sctp_adaptation_missing,
                   "DDP messages on an association that did not settle on DDP: " + why +
                       " (DDP needs 0x00000001 in both)");
}

std::optional<Violation> check_segment_size(std::size_t segment_octets, std::uint32_t mulpdu,
                                            std::string_view why) {
  if (segment_octets <= mulpdu) return std::nullopt;
  return violation(FindingId::sctp_segment_too_large,
                   "DDP segment of " + std::to_string(segment_octets) + " octets, MULPDU " +
                       std::to_string(mulpdu) + (why.empty() ? "" : " (") + std::string(why) +
                       (why.empty() ? "" : ")"));
}

std::optional<Violation> check_fragmented(std::size_t segment_octets, std::uint32_t chunks) {
  if (chunks <= 1) return std::nullopt;
  return violation(FindingId::sctp_segment_too_large,
                   "DDP segment of " + std::to_string(segment_octets) + " octets in " +
                       std::to_string(chunks) +
                       " DATA chunks: SCTP fragmented it, so it was larger than the path's MULPDU "
                       "(a DDP segment fits one chunk of one packet)");
}

std::uint32_t mulpdu_for_path(std::uint32_t pmtu, bool ipv6, bool over_udp) {
  const std::uint32_t overhead = (ipv6 ? 40u : 20u) + (over_udp ? 8u : 0u) + 12u + 16u +
                                 static_cast<std::uint32_t>(wire::kDdpSsnSize);
  return std::min<std::uint32_t>(pmtu > overhead ? pmtu - overhead : 0, 65535);
}

}  // namespace ddpscope::sctp
