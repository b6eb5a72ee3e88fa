// SPDX-License-Identifier: GPL-2.0-or-later
// Wire codecs for RDMAP (RFC 5040 §4, RFC 7306): opcodes, queue numbers, message bodies.
// Pure functions: no state, no I/O. Every decoder is bounds-checked and returns a Result;
// every encoder appends to a byte vector. Facts whose source is uncertain are marked
// "(verify)" in wire/ and nowhere else.
#pragma once

#include <array>
#include <bit>
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "ddpscope/common/bytes.h"
#include "ddpscope/common/result.h"
#include "ddpscope/wire/ddp.h"
#include "ddpscope/wire/field.h"

namespace ddpscope::wire {

// ---------------------------------------------------------------------------------------------
// RDMAP (RFC 5040 §4, RFC 7306)
// ---------------------------------------------------------------------------------------------

inline constexpr std::uint8_t kRdmapVersion = 1;
// The RDMAP control byte (RFC 5040 §4.2), DDP's first RsvdULP octet: RV, Rsvd, OpCode.
inline constexpr std::uint8_t kRdmapVersionMask = 0xC0;
inline constexpr std::uint8_t kRdmapReservedMask = 0x30;
inline constexpr std::uint8_t kRdmapOpcodeMask = 0x0F;

enum class Opcode : std::uint8_t {
  rdma_write = 0x0,
  read_request = 0x1,
  read_response = 0x2,
  send = 0x3,
  send_invalidate = 0x4,
  send_se = 0x5,
  send_se_invalidate = 0x6,
  terminate = 0x7,
  immediate_data = 0x8,     // RFC 7306
  immediate_data_se = 0x9,  // RFC 7306
  atomic_request = 0xA,     // RFC 7306
  atomic_response = 0xB,    // RFC 7306
};
inline constexpr std::uint8_t kOpcodeCount = 16;  // 0xC..0xF reserved

// Untagged queue numbers (RFC 5040 §5.1, RFC 7306).
inline constexpr std::uint32_t kQnSend = 0;
inline constexpr std::uint32_t kQnReadRequest = 1;
inline constexpr std::uint32_t kQnTerminate = 2;
inline constexpr std::uint32_t kQnAtomicRequest = 3;   // (verify RFC 7306)
inline constexpr std::uint32_t kQnAtomicResponse = 3;  // (verify RFC 7306: 3 or 4)

struct RdmapControl {
  std::uint8_t version = kRdmapVersion;  // RV, 2 bits
  std::uint8_t reserved = 0;             // 2 bits
  std::uint8_t opcode = 0;               // 4 bits
  std::uint8_t byte() const;
  // Inline: every segment's control byte is read this way, more than once.
  static constexpr RdmapControl from_byte(std::uint8_t b) {
    return RdmapControl{
        static_cast<std::uint8_t>((b & kRdmapVersionMask) >> std::countr_zero(kRdmapVersionMask)),
        static_cast<std::uint8_t>((b & kRdmapReservedMask) >> std::countr_zero(kRdmapReservedMask)),
        static_cast<std::uint8_t>((b & kRdmapOpcodeMask) >> std::countr_zero(kRdmapOpcodeMask))};
  }
  bool operator==(const RdmapControl&) const = default;
};

// The DDP header of one RDMAP message segment (RDMAP version 1, reserved bits zero): untagged
// on queue `qn` (`rsvd_ulp1`: the Invalidate STag of a Send with Invalidate), or tagged.
DdpHeader untagged_header(Opcode op, std::uint32_t qn, std::uint32_t msn, std::uint32_t mo,
                          bool last, std::uint32_t rsvd_ulp1 = 0);
DdpHeader tagged_header(Opcode op, std::uint32_t stag, std::uint64_t to, bool last);

struct OpcodeInfo {
  std::string_view name;            // e.g. "RDMA Write"
  std::string_view key;             // e.g. "rdma_write" (JSON, filters)
  bool defined = false;             // false for 0xC..0xF
  bool tagged = false;              // buffer model the opcode must use
  std::optional<std::uint32_t> qn;  // queue for untagged opcodes
  bool rfc7306 = false;
};
const OpcodeInfo& opcode_info(std::uint8_t opcode);
inline bool opcode_invalidates(std::uint8_t op) {
  return op == static_cast<std::uint8_t>(Opcode::send_invalidate) ||
         op == static_cast<std::uint8_t>(Opcode::send_se_invalidate);
}
inline bool opcode_is_send_family(std::uint8_t op) {
  return op >= 0x3 && op <= 0x6;
}

// RDMA Read Request body (RFC 5040 §4.4), 28 octets after the untagged header.
struct ReadRequest {
  std::uint32_t sink_stag = 0;
  std::uint64_t sink_to = 0;
  std::uint32_t size = 0;
  std::uint32_t source_stag = 0;
  std::uint64_t source_to = 0;
  static constexpr std::size_t kSize = 28;
  bool operator==(const ReadRequest&) const = default;
};
namespace read_request_field {
inline constexpr FieldSpan sink_stag{0, 4};
inline constexpr FieldSpan sink_to{4, 8};
inline constexpr FieldSpan size{12, 4};
inline constexpr FieldSpan source_stag{16, 4};
inline constexpr FieldSpan source_to{20, 8};
}  // namespace read_request_field
Result<ReadRequest> decode_read_request(ByteView body);
void encode_read_request(const ReadRequest& r, ByteWriter& out);

// RFC 7306 Atomic Request body, 52 octets.
enum class AtomicOp : std::uint8_t { fetch_add = 0, compare_swap = 2 };  // 1: (verify)
struct AtomicRequest {
  std::uint32_t reserved = 0;      // 28 bits
  std::uint8_t atomic_opcode = 0;  // 4 bits
  std::uint32_t request_id = 0;
  std::uint32_t remote_stag = 0;
  std::uint64_t remote_to = 0;
  std::uint64_t add_swap_data = 0;
  std::uint64_t add_swap_mask = 0;
  std::uint64_t compare_data = 0;
  std::uint64_t compare_mask = 0;
  static constexpr std::size_t kSize = 52;
  // The first word as on the wire: Reserved (28 bits), then the Atomic OpCode (4 bits).
  std::uint32_t opcode_word() const;
  bool operator==(const AtomicRequest&) const = default;
};
inline constexpr std::uint32_t kAtomicReservedMask = 0xFFFFFFF0;
inline constexpr std::uint32_t kAtomicOpcodeMask = 0x0000000F;
namespace atomic_request_field {
inline constexpr FieldSpan opcode_word{0, 4};
inline constexpr FieldSpan request_id{4, 4};
inline constexpr FieldSpan remote_stag{8, 4};
inline constexpr FieldSpan remote_to{12, 8};
inline constexpr FieldSpan add_swap_data{20, 8};
inline constexpr FieldSpan add_swap_mask{28, 8};
inline constexpr FieldSpan compare_data{36, 8};
inline constexpr FieldSpan compare_mask{44, 8};
}  // namespace atomic_request_field
Result<AtomicRequest> decode_atomic_request(ByteView body);
void encode_atomic_request(const AtomicRequest& r, ByteWriter& out);
std::string_view atomic_op_name(std::uint8_t op);

// RFC 7306 Atomic Response body, 12 octets.
struct AtomicResponse {
  std::uint32_t request_id = 0;
  std::uint64_t original_value = 0;
  static constexpr std::size_t kSize = 12;
  bool operator==(const AtomicResponse&) const = default;
};
namespace atomic_response_field {
inline constexpr FieldSpan request_id{0, 4};
inline constexpr FieldSpan original_value{4, 8};
}  // namespace atomic_response_field
Result<AtomicResponse> decode_atomic_response(ByteView body);
void encode_atomic_response(const AtomicResponse& r, ByteWriter& out);

// RFC 7306 Immediate Data body: 8 octets (verify size).
inline constexpr std::size_t kImmediateDataSize = 8;
Result<std::uint64_t> decode_immediate_data(ByteView body);

// Terminate (RFC 5040 §4.8). Layer / error type / code values are in terminate_error.h.
struct TerminateControl {
  std::uint8_t layer = 0;  // 4 bits
  std::uint8_t etype = 0;  // 4 bits
  std::uint8_t code = 0;
  bool m = false;              // DDP Segment Length valid
  bool d = false;              // DDP header included
  bool r = false;              // RDMAP header included
  std::uint16_t reserved = 0;  // 13 bits
  // The control word in the RFC layout, as a big-endian 32-bit value (masks below).
  std::uint32_t rfc_word() const;
  static TerminateControl from_rfc_word(std::uint32_t word);
  bool operator==(const TerminateControl&) const = default;
};
// RFC 5040 §4.8: Layer (4) | EType (4) | Error Code (8) | M | D | R | Rsvd (13).
inline constexpr std::uint32_t kTermLayerMask = 0xF0000000;
inline constexpr std::uint32_t kTermEtypeMask = 0x0F000000;
inline constexpr std::uint32_t kTermCodeMask = 0x00FF0000;
inline constexpr std::uint32_t kTermFlagM = 0x00008000;
inline constexpr std::uint32_t kTermFlagD = 0x00004000;
inline constexpr std::uint32_t kTermFlagR = 0x00002000;
inline constexpr std::uint32_t kTermReservedMask = 0x00001FFF;
// The two ways a Terminate control word has been seen on the wire.
enum class TerminateLayout : std::uint8_t {
  rfc,  // RFC 5040: Layer | EType | Code | M D R | Rsvd13
  // Linux siw (6.1 on x86): bit fields in little-endian order: the layer and etype nibbles
  // swapped and M/D/R at bits 0/1/2 of the third octet.
  siw_bitfield,
};
// What decided the layout of a Terminate's control word.
enum class TerminateLayoutEvidence : std::uint8_t {
  rfc_flags,      // RFC flag bits set (or nothing says otherwise): the RFC layout
  siw_flags,      // M/D/R only where siw's bit fields put them, the RFC flags clear
  rfc_undefined,  // no flag in either layout; the RFC reading names no defined error and
                  // siw's does (siw's Terminates for version, opcode, CRC and IRD errors)
  siw_expected,   // no flag in either layout and both readings defined; the reader expected siw
                  // (--sink-profile siw), so siw's reading was taken
};
struct Terminate {
  TerminateControl control;      // as meant by the sender (after undoing siw's layout)
  TerminateControl rfc_reading;  // the control word read strictly per RFC
  TerminateLayout layout = TerminateLayout::rfc;
  TerminateLayoutEvidence evidence = TerminateLayoutEvidence::rfc_flags;
  std::optional<std::uint16_t> ddp_segment_length;  // present with D (verify: tied to D)
  std::optional<DdpHeader> ddp_header;              // with D
  Bytes rdmap_header;                               // with R: 28 octets (raw)
  std::optional<ReadRequest> rdmap_read_request;    // with R, when it decodes as one
  std::size_t body_size = 0;                        // octets consumed from the body
};
inline constexpr std::size_t kTerminateControlSize = 4;
inline constexpr std::size_t kTerminateRdmapHeaderSize = 28;
// The fixed fields of a Terminate body; the quoted DDP header follows the segment length (with
// D), and the quoted RDMAP header follows that (with R).
namespace terminate_field {
inline constexpr FieldSpan control{0, kTerminateControlSize};
inline constexpr FieldSpan ddp_segment_length{4, 2};
}  // namespace terminate_field
// Decodes a Terminate body. Recognises siw's layout when the RFC reading has M/D/R clear,
// reserved bits only where siw puts M/D/R, and a quoted header is present. With `expect_siw`
// (the peer is Linux siw), a flagless control word that reads as a defined error in both
// layouts is read in siw's (e.g. 0x20 0x06: RDMAP / Remote Operation / Unexpected OpCode).
Result<Terminate> decode_terminate(ByteView body, bool expect_siw = false);
// Encodes per the RFC (layout rfc) or as siw does (siw_bitfield), for tests and synthesis.
void encode_terminate(const Terminate& t, TerminateLayout layout, ByteWriter& out);

}  // namespace ddpscope::wire
