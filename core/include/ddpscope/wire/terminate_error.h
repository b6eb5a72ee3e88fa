// SPDX-License-Identifier: GPL-2.0-or-later
// Terminate error numbers: layer, error type and error code (RFC 5040 §7, RFC 5041 §7,
// RFC 5044 §8, RFC 6581). Which codes sit under which type follows common practice
// (Wireshark, Linux siw): (verify) against the RFC tables.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace ddpscope {

enum class TermLayer : std::uint8_t { rdmap = 0x0, ddp = 0x1, llp = 0x2 };

namespace rdmap_etype {
inline constexpr std::uint8_t local_catastrophic = 0x0;
inline constexpr std::uint8_t remote_protection = 0x1;
inline constexpr std::uint8_t remote_operation = 0x2;
}  // namespace rdmap_etype
namespace rdmap_code {
inline constexpr std::uint8_t invalid_stag = 0x00;
inline constexpr std::uint8_t base_bounds = 0x01;
inline constexpr std::uint8_t access_rights = 0x02;
inline constexpr std::uint8_t stag_not_associated = 0x03;
inline constexpr std::uint8_t to_wrap = 0x04;
inline constexpr std::uint8_t invalid_version = 0x05;
inline constexpr std::uint8_t unexpected_opcode = 0x06;
inline constexpr std::uint8_t catastrophic_stream = 0x07;
inline constexpr std::uint8_t catastrophic_global = 0x08;
inline constexpr std::uint8_t stag_cannot_invalidate = 0x09;
inline constexpr std::uint8_t unspecified = 0xFF;
}  // namespace rdmap_code

namespace ddp_etype {
inline constexpr std::uint8_t local_catastrophic = 0x0;
inline constexpr std::uint8_t tagged_buffer = 0x1;
inline constexpr std::uint8_t untagged_buffer = 0x2;
inline constexpr std::uint8_t llp = 0x3;  // reserved for the LLP
}  // namespace ddp_etype
namespace ddp_tagged_code {
inline constexpr std::uint8_t invalid_stag = 0x00;
inline constexpr std::uint8_t base_bounds = 0x01;
inline constexpr std::uint8_t stag_not_associated = 0x02;
inline constexpr std::uint8_t to_wrap = 0x03;
inline constexpr std::uint8_t invalid_version = 0x04;
}  // namespace ddp_tagged_code
namespace ddp_untagged_code {
inline constexpr std::uint8_t invalid_qn = 0x01;
inline constexpr std::uint8_t invalid_msn_no_buffer = 0x02;
inline constexpr std::uint8_t invalid_msn_range = 0x03;
inline constexpr std::uint8_t invalid_mo = 0x04;
inline constexpr std::uint8_t message_too_long = 0x05;
inline constexpr std::uint8_t invalid_version = 0x06;
}  // namespace ddp_untagged_code

namespace llp_etype {
inline constexpr std::uint8_t mpa = 0x0;
// RFC 5043 defines no LLP error type or codes (RFC 6581 §8): an RFC 5043 receiver ends the DDP
// stream with a Session Terminate instead (findings/catalog.h, LlpAction). Earlier ddpscope
// endpoints sent LLP type 1 in an RDMAP Terminate for SCTP errors; a Terminate carrying it is
// named "SCTP (not defined by RFC 5043)" and its codes are left unnamed.
inline constexpr std::uint8_t sctp_non_standard = 0x1;
}  // namespace llp_etype
namespace mpa_code {
inline constexpr std::uint8_t connection_lost = 0x01;
inline constexpr std::uint8_t crc_error = 0x02;
inline constexpr std::uint8_t marker_mismatch = 0x03;
inline constexpr std::uint8_t invalid_reqrep = 0x04;
inline constexpr std::uint8_t local_catastrophic = 0x05;  // RFC 6581
inline constexpr std::uint8_t insufficient_ird = 0x06;    // RFC 6581
inline constexpr std::uint8_t no_matching_rtr = 0x07;     // RFC 6581
}  // namespace mpa_code

// The (layer, type, code) triple a compliant Data Sink puts in a Terminate.
struct TerminateError {
  std::uint8_t layer = 0;
  std::uint8_t etype = 0;
  std::uint8_t code = 0;
  bool operator==(const TerminateError&) const = default;
};

// The triples by table (RFC 5040 §7, RFC 5041 §7, RFC 5044 §8). Only the rule layer
// (ddp/rules.h, rdmap/rules.h, mpa/negotiate.h) and the catalog use these.
namespace term {
constexpr TerminateError rdmap_local_catastrophic() {
  return {static_cast<std::uint8_t>(TermLayer::rdmap), rdmap_etype::local_catastrophic, 0};
}
constexpr TerminateError rdmap_protection(std::uint8_t code) {
  return {static_cast<std::uint8_t>(TermLayer::rdmap), rdmap_etype::remote_protection, code};
}
constexpr TerminateError rdmap_operation(std::uint8_t code) {
  return {static_cast<std::uint8_t>(TermLayer::rdmap), rdmap_etype::remote_operation, code};
}
constexpr TerminateError ddp_local_catastrophic() {
  return {static_cast<std::uint8_t>(TermLayer::ddp), ddp_etype::local_catastrophic, 0};
}
constexpr TerminateError ddp_tagged(std::uint8_t code) {
  return {static_cast<std::uint8_t>(TermLayer::ddp), ddp_etype::tagged_buffer, code};
}
constexpr TerminateError ddp_untagged(std::uint8_t code) {
  return {static_cast<std::uint8_t>(TermLayer::ddp), ddp_etype::untagged_buffer, code};
}
constexpr TerminateError mpa(std::uint8_t code) {
  return {static_cast<std::uint8_t>(TermLayer::llp), llp_etype::mpa, code};
}
}  // namespace term

std::string_view term_layer_name(std::uint8_t layer);
std::string_view term_etype_name(std::uint8_t layer, std::uint8_t etype);
// Name of the code, or empty when the triple is not in the tables.
std::string_view term_code_name(std::uint8_t layer, std::uint8_t etype, std::uint8_t code);
// "DDP / Tagged Buffer / Base or bounds violation" (unknown parts as hex).
std::string terminate_error_name(std::uint8_t layer, std::uint8_t etype, std::uint8_t code);
inline std::string terminate_error_name(const TerminateError& e) {
  return terminate_error_name(e.layer, e.etype, e.code);
}

}  // namespace ddpscope
