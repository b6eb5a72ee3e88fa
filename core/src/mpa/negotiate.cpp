// SPDX-License-Identifier: GPL-2.0-or-later
#include "ddpscope/mpa/negotiate.h"

#include <string>

#include "ddpscope/common/bytes.h"
#include "ddpscope/wire/rdmap.h"

namespace ddpscope::mpa {

namespace {

Violation invalid(std::string detail, std::uint8_t code = mpa_code::invalid_reqrep) {
  return Violation{FindingId::mpa_handshake_invalid, term::mpa(code), TerminateQuote::none,
                   std::move(detail)};
}

Violation note(FindingId id, std::string detail) {
  return Violation{id, std::nullopt, TerminateQuote::none, std::move(detail)};
}

std::optional<std::uint16_t> given(std::uint16_t v) {
  if (v == wire::MpaEnhancedPd::kNoValue) return std::nullopt;
  return v;
}

}  // namespace

Violation frame_invalid(std::string detail) {
  return invalid(std::move(detail));
}

std::optional<Violation> check_setup_order(Sender from, bool allowed, const wire::DdpHeader& first,
                                           std::string_view where) {
  const bool terminate =
      !first.control.tagged && wire::RdmapControl::from_byte(first.rsvd_ulp0).opcode ==
                                   static_cast<std::uint8_t>(wire::Opcode::terminate);
  if (allowed || terminate) return std::nullopt;
  return invalid(
      std::string(from == Sender::initiator
                      ? "the initiator's first FPDU precedes the MPA Reply"
                      : "peer-to-peer: the responder's first FPDU precedes the initiator's RTR") +
      std::string(where));
}

std::vector<Violation> check_frame(const wire::MpaReqRep& f, const Policy& policy) {
  std::vector<Violation> out;
  const bool request = f.kind == wire::MpaFrameKind::request;
  if (f.revision < policy.min_revision || f.revision > policy.max_revision) {
    out.push_back(invalid("MPA revision " + std::to_string(f.revision) +
                          " (accepted: " + std::to_string(policy.min_revision) + " to " +
                          std::to_string(policy.max_revision) + ")"));
  }
  if (request && f.reject) out.push_back(invalid("R (reject) set in an MPA Request"));
  if (f.reserved != 0) {
    out.push_back(note(
        FindingId::mpa_reserved_bits,
        "reserved MPA flag bits " + hex_number(f.reserved) +
            ((f.reserved & wire::kMpaFlagSiwGsoExp) ? " (Linux siw GSO experiment bit)" : "")));
  }
  if (f.private_data.size() > policy.max_private_data) {
    out.push_back(invalid("private data of " + std::to_string(f.private_data.size()) +
                          " octets (max " + std::to_string(policy.max_private_data) + ")"));
  } else if (f.private_data.size() > wire::kMpaMaxPrivateDataSiw) {
    out.push_back(note(FindingId::mpa_private_data_long,
                       std::to_string(f.private_data.size()) + " octets of private data"));
  }
  if (f.revision == 2 && f.enhanced && f.private_data.size() < wire::MpaEnhancedPd::kSize) {
    out.push_back(invalid("Enhanced (RFC 6581) frame without the 4-octet IRD/ORD private data"));
  }
  if (f.markers && !policy.accept_markers) {
    out.push_back(invalid(std::string(request ? "the Request" : "the Reply") +
                          " asks for markers, which this side refuses"));
  }
  // A responder refuses an invalid Request with a Reply that sets R (RFC 5044 §7.1.2).
  if (request) {
    for (auto& v : out)
      if (v.terminate) v.rule_case = SinkCase::handshake_request;
    if (!out.empty() && (f.revision < policy.min_revision || f.revision > policy.max_revision))
      out.front().rule_case = SinkCase::handshake_request_revision;
  }
  return out;
}

llp::RtrType picked_rtr(const wire::MpaEnhancedPd& pd) {
  if (pd.zero_length_write_rtr) return llp::RtrType::write;
  if (pd.zero_length_read_rtr) return llp::RtrType::read;
  if (pd.zero_length_send_rtr) return llp::RtrType::send;
  return llp::RtrType::none;
}

std::uint8_t rtr_bit(llp::RtrType t) {
  switch (t) {
    case llp::RtrType::write:
      return rtr_offer::write;
    case llp::RtrType::read:
      return rtr_offer::read;
    case llp::RtrType::send:
      return rtr_offer::send;
    case llp::RtrType::none:
      break;
  }
  return 0;
}

Settlement settle(const wire::MpaReqRep& req, const wire::MpaReqRep& rep) {
  Settlement s;
  Parameters& p = s.parameters;
  p.revision = rep.revision;
  p.crc = req.crc || rep.crc;
  // M asks the *peer* to send markers (RFC 5044 §7.1): the Reply's M governs what the
  // initiator sends.
  p.markers_to_responder = rep.markers;
  p.markers_to_initiator = req.markers;
  if (rep.revision > req.revision) {
    s.violations.push_back(invalid("Reply revision " + std::to_string(rep.revision) +
                                   " above the Request's " + std::to_string(req.revision)));
  }
  if (!req.enhanced_pd || !rep.enhanced_pd) return s;
  const auto& rq = *req.enhanced_pd;
  const auto& rp = *rep.enhanced_pd;
  p.enhanced = true;
  p.initiator_ird = given(rq.ird);
  p.responder_ird = given(rp.ird);
  if (rq.peer_to_peer) {
    const int picked =
        int{rp.zero_length_send_rtr} + int{rp.zero_length_write_rtr} + int{rp.zero_length_read_rtr};
    const std::uint8_t offered = (rq.zero_length_send_rtr ? rtr_offer::send : 0) |
                                 (rq.zero_length_write_rtr ? rtr_offer::write : 0) |
                                 (rq.zero_length_read_rtr ? rtr_offer::read : 0);
    const llp::RtrType t = picked_rtr(rp);
    if (!rp.peer_to_peer) {
      s.violations.push_back(
          invalid("peer-to-peer asked, the Reply does not echo A", mpa_code::no_matching_rtr));
    } else if (picked != 1 || !(offered & rtr_bit(t))) {
      s.violations.push_back(invalid(picked == 0  ? "the Reply picks no RTR type"
                                     : picked > 1 ? "the Reply picks more than one RTR type"
                                                  : "the Reply picks an RTR type the Request "
                                                    "did not offer",
                                     mpa_code::no_matching_rtr));
    } else {
      p.peer_to_peer = true;
      p.rtr = t;
    }
  }
  // RFC 6581 §9.1: the responder's ORD must not exceed the initiator's IRD (0x3FFF: none given).
  if (given(rp.ord) && given(rq.ird) && rp.ord > rq.ird) {
    s.violations.push_back(invalid("the Reply's ORD " + std::to_string(rp.ord) +
                                       " exceeds the Request's IRD " + std::to_string(rq.ird),
                                   mpa_code::insufficient_ird));
  }
  return s;
}

const Violation* first_fatal(const std::vector<Violation>& violations) {
  for (const auto& v : violations)
    if (v.terminate) return &v;
  return nullptr;
}

}  // namespace ddpscope::mpa
