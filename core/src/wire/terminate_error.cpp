// SPDX-License-Identifier: GPL-2.0-or-later
// Names for Terminate (layer, error type, error code) triples: RFC 5040 §7 (RDMAP),
// RFC 5041 §7 (DDP), RFC 5044 §8 and RFC 6581 (LLP / MPA). Which codes sit under which
// type follows Wireshark and Linux siw (verify against the RFC tables).
#include "ddpscope/wire/terminate_error.h"

#include <cstdio>

namespace ddpscope {

namespace {

struct CodeName {
  std::uint8_t layer;
  std::uint8_t etype;
  std::uint8_t code;
  std::string_view name;
};

constexpr std::uint8_t kRdmap = static_cast<std::uint8_t>(TermLayer::rdmap);
constexpr std::uint8_t kDdp = static_cast<std::uint8_t>(TermLayer::ddp);
constexpr std::uint8_t kLlp = static_cast<std::uint8_t>(TermLayer::llp);

constexpr CodeName kCodes[] = {
    // RDMAP
    {kRdmap, rdmap_etype::local_catastrophic, 0x00, "Local catastrophic error"},
    {kRdmap, rdmap_etype::remote_protection, rdmap_code::invalid_stag, "Invalid STag"},
    {kRdmap, rdmap_etype::remote_protection, rdmap_code::base_bounds, "Base or bounds violation"},
    {kRdmap, rdmap_etype::remote_protection, rdmap_code::access_rights, "Access rights violation"},
    {kRdmap, rdmap_etype::remote_protection, rdmap_code::stag_not_associated,
     "STag not associated with RDMAP stream"},
    {kRdmap, rdmap_etype::remote_protection, rdmap_code::to_wrap, "TO wrap"},
    {kRdmap, rdmap_etype::remote_protection, rdmap_code::stag_cannot_invalidate,
     "STag cannot be invalidated"},
    {kRdmap, rdmap_etype::remote_protection, rdmap_code::unspecified, "Unspecified"},
    {kRdmap, rdmap_etype::remote_operation, rdmap_code::invalid_version, "Invalid RDMAP version"},
    {kRdmap, rdmap_etype::remote_operation, rdmap_code::unexpected_opcode, "Unexpected OpCode"},
    {kRdmap, rdmap_etype::remote_operation, rdmap_code::catastrophic_stream,
     "Catastrophic, localized to RDMAP stream"},
    {kRdmap, rdmap_etype::remote_operation, rdmap_code::catastrophic_global,
     "Catastrophic, global"},
    {kRdmap, rdmap_etype::remote_operation, rdmap_code::stag_cannot_invalidate,
     "STag cannot be invalidated"},
    {kRdmap, rdmap_etype::remote_operation, rdmap_code::unspecified, "Unspecified"},
    // DDP
    {kDdp, ddp_etype::local_catastrophic, 0x00, "Local catastrophic error"},
    {kDdp, ddp_etype::tagged_buffer, ddp_tagged_code::invalid_stag, "Invalid STag"},
    {kDdp, ddp_etype::tagged_buffer, ddp_tagged_code::base_bounds, "Base or bounds violation"},
    {kDdp, ddp_etype::tagged_buffer, ddp_tagged_code::stag_not_associated,
     "STag not associated with DDP stream"},
    {kDdp, ddp_etype::tagged_buffer, ddp_tagged_code::to_wrap, "TO wrap"},
    {kDdp, ddp_etype::tagged_buffer, ddp_tagged_code::invalid_version, "Invalid DDP version"},
    {kDdp, ddp_etype::untagged_buffer, ddp_untagged_code::invalid_qn, "Invalid QN"},
    {kDdp, ddp_etype::untagged_buffer, ddp_untagged_code::invalid_msn_no_buffer,
     "Invalid MSN - no buffer available"},
    {kDdp, ddp_etype::untagged_buffer, ddp_untagged_code::invalid_msn_range,
     "Invalid MSN - MSN range not valid"},
    {kDdp, ddp_etype::untagged_buffer, ddp_untagged_code::invalid_mo, "Invalid MO"},
    {kDdp, ddp_etype::untagged_buffer, ddp_untagged_code::message_too_long,
     "DDP message too long for available buffer"},
    {kDdp, ddp_etype::untagged_buffer, ddp_untagged_code::invalid_version, "Invalid DDP version"},
    // LLP (MPA)
    {kLlp, llp_etype::mpa, mpa_code::connection_lost, "TCP connection closed, terminated or lost"},
    {kLlp, llp_etype::mpa, mpa_code::crc_error, "MPA CRC error"},
    {kLlp, llp_etype::mpa, mpa_code::marker_mismatch, "MPA Marker and ULPDU Length field mismatch"},
    {kLlp, llp_etype::mpa, mpa_code::invalid_reqrep, "Invalid MPA Request/Reply frame"},
    {kLlp, llp_etype::mpa, mpa_code::local_catastrophic, "Local catastrophic error"},
    {kLlp, llp_etype::mpa, mpa_code::insufficient_ird, "Insufficient IRD resources"},
    {kLlp, llp_etype::mpa, mpa_code::no_matching_rtr, "No matching RTR option"},
};

std::string hex(std::uint8_t v, int digits) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "0x%0*X", digits, static_cast<unsigned>(v));
  return buf;
}

}  // namespace

std::string_view term_layer_name(std::uint8_t layer) {
  switch (layer) {
    case kRdmap:
      return "RDMAP";
    case kDdp:
      return "DDP";
    case kLlp:
      return "LLP";
    default:
      return {};
  }
}

std::string_view term_etype_name(std::uint8_t layer, std::uint8_t etype) {
  if (layer == kRdmap) {
    switch (etype) {
      case rdmap_etype::local_catastrophic:
        return "Local Catastrophic";
      case rdmap_etype::remote_protection:
        return "Remote Protection";
      case rdmap_etype::remote_operation:
        return "Remote Operation";
      default:
        return {};
    }
  }
  if (layer == kDdp) {
    switch (etype) {
      case ddp_etype::local_catastrophic:
        return "Local Catastrophic";
      case ddp_etype::tagged_buffer:
        return "Tagged Buffer";
      case ddp_etype::untagged_buffer:
        return "Untagged Buffer";
      case ddp_etype::llp:
        return "Reserved for LLP";
      default:
        return {};
    }
  }
  if (layer == kLlp && etype == llp_etype::mpa) return "MPA";
  if (layer == kLlp && etype == llp_etype::sctp_non_standard)
    return "SCTP (not defined by RFC 5043)";
  return {};
}

std::string_view term_code_name(std::uint8_t layer, std::uint8_t etype, std::uint8_t code) {
  for (const CodeName& c : kCodes) {
    if (c.layer == layer && c.etype == etype && c.code == code) return c.name;
  }
  return {};
}

std::string terminate_error_name(std::uint8_t layer, std::uint8_t etype, std::uint8_t code) {
  std::string s;
  const std::string_view l = term_layer_name(layer);
  s += l.empty() ? hex(layer, 1) : std::string(l);
  s += " / ";
  const std::string_view e = term_etype_name(layer, etype);
  s += e.empty() ? hex(etype, 1) : std::string(e);
  s += " / ";
  const std::string_view c = term_code_name(layer, etype, code);
  s += c.empty() ? hex(code, 2) : std::string(c);
  return s;
}

}  // namespace ddpscope
