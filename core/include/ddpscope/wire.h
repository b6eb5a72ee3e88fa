// SPDX-License-Identifier: GPL-2.0-or-later
// Wire codecs for MPA (RFC 5044, RFC 6581), DDP (RFC 5041) and RDMAP (RFC 5040, RFC 7306).
// Pure functions: no state, no I/O. Every decoder is bounds-checked and returns a Result;
// every encoder appends to a byte vector. Facts whose source is uncertain are marked
// "(verify)" here and nowhere else.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "ddpscope/bytes.h"
#include "ddpscope/result.h"

namespace ddpscope::wire {

// ---------------------------------------------------------------------------------------------
// MPA Request / Reply frames (RFC 5044 §7.1, RFC 6581 §5)
// ---------------------------------------------------------------------------------------------

inline constexpr std::string_view kMpaRequestKey = "MPA ID Req Frame";
inline constexpr std::string_view kMpaReplyKey = "MPA ID Rep Frame";
inline constexpr std::size_t kMpaKeySize = 16;
inline constexpr std::size_t kMpaReqRepHeaderSize = 20;
inline constexpr std::size_t kMpaMaxPrivateDataRfc = 512;  // RFC 5044
inline constexpr std::size_t kMpaMaxPrivateDataSiw = 256;  // Linux siw / cxgb4 cap

inline constexpr std::uint8_t kMpaFlagMarkers = 0x80;
inline constexpr std::uint8_t kMpaFlagCrc = 0x40;
inline constexpr std::uint8_t kMpaFlagReject = 0x20;
inline constexpr std::uint8_t kMpaFlagEnhanced = 0x10;  // RFC 6581
inline constexpr std::uint8_t kMpaFlagReservedMask = 0x0F;
inline constexpr std::uint8_t kMpaFlagSiwGsoExp = 0x08;  // siw's experimental GSO bit (vendor)

enum class MpaFrameKind : std::uint8_t { request, reply };

// RFC 6581 enhanced private data: the first 4 octets of PD when Rev = 2 and Enhanced is set.
struct MpaEnhancedPd {
  bool peer_to_peer = false;                         // A
  bool zero_length_send_rtr = false;                 // B (verify the exact RFC wording)
  std::uint16_t ird = 0;                             // 14 bits
  bool zero_length_write_rtr = false;                // C
  bool zero_length_read_rtr = false;                 // D
  std::uint16_t ord = 0;                             // 14 bits
  static constexpr std::uint16_t kNoValue = 0x3FFF;  // Intel's "not given" (convention)
  static constexpr std::size_t kSize = 4;
  bool operator==(const MpaEnhancedPd&) const = default;
};

struct MpaReqRep {
  MpaFrameKind kind = MpaFrameKind::request;
  bool markers = false;       // M: the sender wants markers in what it *receives*
  bool crc = false;           // C
  bool reject = false;        // R (meaningful in a Reply only)
  bool enhanced = false;      // RFC 6581 Enhanced bit (0x10)
  std::uint8_t reserved = 0;  // the remaining reserved bits (mask 0x0F), vendor bits included
  std::uint8_t revision = 1;
  Bytes private_data;  // all PD_Length octets as on the wire (enhanced word included)
  // Decoded RFC 6581 word, present when revision == 2, enhanced is set and PD has >= 4 octets.
  std::optional<MpaEnhancedPd> enhanced_pd;

  std::size_t wire_size() const { return kMpaReqRepHeaderSize + private_data.size(); }
  // Private data the ULP sees (after the enhanced word, when there is one).
  ByteView ulp_private_data() const;
  std::uint8_t flags_byte() const;
  bool operator==(const MpaReqRep&) const = default;
};

// Decodes a Request or Reply from the first octets of a stream direction.
// need_more until the 20-octet header and PD_Length octets of PD are present;
// malformed (code "mpa.key-invalid") when the key is neither Request nor Reply.
// PD_Length above 512 is decoded, not rejected: validation is the engine's job.
Result<MpaReqRep> decode_mpa_reqrep(ByteView data);
// Returns true when `data` (possibly shorter than 16 octets) could be the start of a key.
bool could_be_mpa_key(ByteView data);
// Builds the frame. When enhanced_pd is set, its word is written as the first 4 PD octets
// (and `private_data` is taken to hold the ULP's PD only); otherwise private_data is verbatim.
// Asymmetry: decode always keeps the whole PD (enhanced word included) in private_data, so for
// an enhanced frame decode(encode(x)).private_data == word + x.private_data, and
// ulp_private_data() of the decoded frame equals x.private_data. Decoded frames re-encode
// verbatim once their enhanced_pd is reset.
Bytes encode_mpa_reqrep(const MpaReqRep& frame);
void encode_mpa_enhanced_pd(const MpaEnhancedPd& pd, ByteWriter& out);
MpaEnhancedPd decode_mpa_enhanced_pd(const std::uint8_t* p);

// ---------------------------------------------------------------------------------------------
// MPA FPDU (RFC 5044 §4)
// ---------------------------------------------------------------------------------------------

inline constexpr std::size_t kMpaLengthSize = 2;
inline constexpr std::size_t kMpaCrcSize = 4;
inline constexpr std::size_t kMpaMarkerSize = 4;
inline constexpr std::size_t kMpaMarkerInterval = 512;

// Pad octets after the ULPDU so that (2 + ulpdu_length + pad) % 4 == 0.
constexpr std::size_t fpdu_pad(std::size_t ulpdu_length) {
  return (4 - ((2 + ulpdu_length) & 3)) & 3;
}
// FPDU size without markers: length field + ULPDU + pad + CRC.
constexpr std::size_t fpdu_size(std::size_t ulpdu_length) {
  return kMpaLengthSize + ulpdu_length + fpdu_pad(ulpdu_length) + kMpaCrcSize;
}

// MULPDU from the effective MSS (RFC 5044 §8 (verify the exact formula)):
//   markers off: EMSS - (6 + EMSS mod 4)
//   markers on:  EMSS - (6 + 4 * ceil(EMSS / 512) + EMSS mod 4)
// Returns 0 when EMSS is too small to carry any ULPDU.
std::uint32_t mulpdu(std::uint32_t emss, bool markers);

// An FPDU as it is after markers were removed: length, ULPDU, pad, CRC field.
struct Fpdu {
  std::uint16_t ulpdu_length = 0;
  ByteView ulpdu;  // view into the input
  ByteView pad;
  std::uint32_t crc_field = 0;     // the CRC as sent (standard value, read LSB first)
  std::uint32_t crc_computed = 0;  // CRC32C over length + ULPDU + pad (no markers)
  std::size_t size() const { return fpdu_size(ulpdu_length); }
};
// Decodes one marker-free FPDU from the start of `data`; need_more until complete.
Result<Fpdu> decode_fpdu(ByteView data);

// Which octet a marker directly in front of an FPDU header is taken to belong to.
enum class MarkerConvention : std::uint8_t {
  // The leading marker is the FPDU's first octet: later markers' FPDUPTR count from it and
  // the CRC covers it (Wireshark, the OSC stack). This is what our encoder writes.
  leading_marker_in_fpdu,
  // Literal RFC 5044 reading: FPDUPTR counts from the ULPDU_Length field, the leading marker
  // sits outside the FPDU and its CRC (pointers 4 smaller than the other convention's).
  literal,
};
std::string_view to_string(MarkerConvention c);

// Encodes an FPDU. `crc` false writes a zero CRC field.
// Without markers: the FPDU octets. With markers (`markers` set): `stream_pos` is the
// position (relative to S0, the first octet after the sender's Request/Reply) of the first
// octet this FPDU occupies, and markers are inserted at every position multiple of 512,
// pointing at the FPDU start per `convention`. The result is what goes on the wire.
struct FpduEncodeOptions {
  bool crc = true;
  bool markers = false;
  std::uint64_t stream_pos = 0;
  MarkerConvention convention = MarkerConvention::leading_marker_in_fpdu;
};
Bytes encode_fpdu(ByteView ulpdu, const FpduEncodeOptions& options);

// A marker seen in a stream: its position relative to S0 and its FPDUPTR.
struct Marker {
  std::uint64_t stream_pos = 0;
  std::uint16_t reserved = 0;
  std::uint16_t fpduptr = 0;
};
inline constexpr bool is_marker_position(std::uint64_t stream_pos) {
  return stream_pos % kMpaMarkerInterval == 0;
}
// Splits stream octets into data and markers. `stream_pos` is the position of data[0]
// relative to S0. A marker cut by the end of `data` is not returned; its octets present are
// counted in `cut_marker_octets` (and left out of `payload`). When data[0] lies inside a
// marker that began before it (stream_pos % 512 in 1..3), that marker's remaining octets are
// dropped and counted in `skipped_marker_octets`.
struct MarkerSplit {
  Bytes payload;
  std::vector<Marker> markers;
  std::size_t cut_marker_octets = 0;
  std::size_t skipped_marker_octets = 0;
};
MarkerSplit strip_markers(ByteView data, std::uint64_t stream_pos);

// ---------------------------------------------------------------------------------------------
// DDP (RFC 5041 §4)
// ---------------------------------------------------------------------------------------------

inline constexpr std::uint8_t kDdpFlagTagged = 0x80;
inline constexpr std::uint8_t kDdpFlagLast = 0x40;
inline constexpr std::uint8_t kDdpReservedMask = 0x3C;
inline constexpr std::uint8_t kDdpVersionMask = 0x03;
inline constexpr std::uint8_t kDdpVersion = 1;
inline constexpr std::size_t kDdpTaggedHeaderSize = 14;
inline constexpr std::size_t kDdpUntaggedHeaderSize = 18;

struct DdpControl {
  bool tagged = false;
  bool last = false;
  std::uint8_t reserved = 0;  // the 4 Rsvd bits, shifted down
  std::uint8_t version = kDdpVersion;
  std::uint8_t byte() const;
  static DdpControl from_byte(std::uint8_t b);
  bool operator==(const DdpControl&) const = default;
};

// One DDP header, tagged or untagged. The first RsvdULP octet is RDMAP's control byte.
struct DdpHeader {
  DdpControl control;
  std::uint8_t rsvd_ulp0 = 0;  // RDMAP control byte
  // Tagged:
  std::uint32_t stag = 0;
  std::uint64_t to = 0;
  // Untagged:
  std::uint32_t rsvd_ulp1 = 0;  // RDMAP: Invalidate STag (Send with Invalidate) or 0
  std::uint32_t qn = 0;
  std::uint32_t msn = 0;
  std::uint32_t mo = 0;

  std::size_t size() const {
    return control.tagged ? kDdpTaggedHeaderSize : kDdpUntaggedHeaderSize;
  }
  bool operator==(const DdpHeader&) const = default;
};

Result<DdpHeader> decode_ddp_header(ByteView data);
void encode_ddp_header(const DdpHeader& header, ByteWriter& out);

// A DDP segment: header + payload view (into the ULPDU).
struct DdpSegment {
  DdpHeader header;
  ByteView payload;
};
Result<DdpSegment> decode_ddp_segment(ByteView ulpdu);

// ---------------------------------------------------------------------------------------------
// RDMAP (RFC 5040 §4, RFC 7306)
// ---------------------------------------------------------------------------------------------

inline constexpr std::uint8_t kRdmapVersion = 1;

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
  static RdmapControl from_byte(std::uint8_t b);
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
  bool operator==(const AtomicRequest&) const = default;
};
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
Result<AtomicResponse> decode_atomic_response(ByteView body);
void encode_atomic_response(const AtomicResponse& r, ByteWriter& out);

// RFC 7306 Immediate Data body: 8 octets (verify size).
inline constexpr std::size_t kImmediateDataSize = 8;
Result<std::uint64_t> decode_immediate_data(ByteView body);

// Terminate (RFC 5040 §4.8). Layer / error type / code values are in errors.h.
struct TerminateControl {
  std::uint8_t layer = 0;  // 4 bits
  std::uint8_t etype = 0;  // 4 bits
  std::uint8_t code = 0;
  bool m = false;              // DDP Segment Length valid
  bool d = false;              // DDP header included
  bool r = false;              // RDMAP header included
  std::uint16_t reserved = 0;  // 13 bits
  bool operator==(const TerminateControl&) const = default;
};
// The two ways a Terminate control word has been seen on the wire.
enum class TerminateLayout : std::uint8_t {
  rfc,  // RFC 5040: Layer | EType | Code | M D R | Rsvd13
  // Linux siw (6.1 on x86): bit fields in little-endian order: the layer and etype nibbles
  // swapped and M/D/R at bits 0/1/2 of the third octet.
  siw_bitfield,
};
struct Terminate {
  TerminateControl control;      // as meant by the sender (after undoing siw's layout)
  TerminateControl rfc_reading;  // the control word read strictly per RFC
  TerminateLayout layout = TerminateLayout::rfc;
  std::optional<std::uint16_t> ddp_segment_length;  // present with D (verify: tied to D)
  std::optional<DdpHeader> ddp_header;              // with D
  Bytes rdmap_header;                               // with R: 28 octets (raw)
  std::optional<ReadRequest> rdmap_read_request;    // with R, when it decodes as one
  std::size_t body_size = 0;                        // octets consumed from the body
};
inline constexpr std::size_t kTerminateControlSize = 4;
inline constexpr std::size_t kTerminateRdmapHeaderSize = 28;
// Decodes a Terminate body. Recognises siw's layout when the RFC reading has M/D/R clear,
// reserved bits only where siw puts M/D/R, and a quoted header is present.
Result<Terminate> decode_terminate(ByteView body);
// Encodes per the RFC (layout rfc) or as siw does (siw_bitfield), for tests and synthesis.
void encode_terminate(const Terminate& t, TerminateLayout layout, ByteWriter& out);

}  // namespace ddpscope::wire
