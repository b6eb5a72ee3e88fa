// SPDX-License-Identifier: GPL-2.0-or-later
// Wire codecs for MPA (RFC 5044, RFC 6581): Request/Reply frames, FPDUs, markers, MULPDU.
// Pure functions: no state, no I/O. Every decoder is bounds-checked and returns a Result;
// every encoder appends to a byte vector. Facts whose source is uncertain are marked
// "(verify)" in wire/ and nowhere else.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "ddpscope/common/bytes.h"
#include "ddpscope/common/result.h"
#include "ddpscope/wire/field.h"

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

// The fields of a Request/Reply, from the first octet of its key; the private data follows the
// header (PD_Length octets).
namespace mpa_reqrep_field {
inline constexpr FieldSpan key{0, kMpaKeySize};
inline constexpr FieldSpan flags{16, 1};  // M C R Enhanced, then the reserved bits
inline constexpr FieldSpan revision{17, 1};
inline constexpr FieldSpan pd_length{18, 2};
inline constexpr std::size_t private_data = kMpaReqRepHeaderSize;
}  // namespace mpa_reqrep_field

enum class MpaFrameKind : std::uint8_t { request, reply };

// The RFC 6581 enhanced word: two big-endian 16-bit halves at the start of the private data.
namespace mpa_enhanced_field {
inline constexpr FieldSpan ird_word{0, 2};  // A | B | IRD
inline constexpr FieldSpan ord_word{2, 2};  // C | D | ORD
}  // namespace mpa_enhanced_field
inline constexpr std::uint16_t kMpaEnhancedPeerToPeer = 0x8000;  // A, IRD word
inline constexpr std::uint16_t kMpaEnhancedSendRtr = 0x4000;     // B, IRD word
inline constexpr std::uint16_t kMpaEnhancedWriteRtr = 0x8000;    // C, ORD word
inline constexpr std::uint16_t kMpaEnhancedReadRtr = 0x4000;     // D, ORD word
inline constexpr std::uint16_t kMpaEnhancedIrdOrdMask = 0x3FFF;  // IRD, ORD: 14 bits each

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
  // The two halves as on the wire (IRD and ORD cut to 14 bits).
  std::uint16_t ird_word() const;
  std::uint16_t ord_word() const;
  static MpaEnhancedPd from_words(std::uint16_t ird_word, std::uint16_t ord_word);
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

// The fields of a marker-free FPDU (RFC 5044 §4.1), from its first octet: ULPDU_Length, the
// ULPDU, pad to a 4-octet boundary, then the CRC.
namespace fpdu_field {
inline constexpr FieldSpan ulpdu_length{0, kMpaLengthSize};
inline constexpr std::size_t ulpdu = kMpaLengthSize;
}  // namespace fpdu_field
// A marker (RFC 5044 §4.3): 16 reserved bits, then FPDUPTR.
namespace marker_field {
inline constexpr FieldSpan reserved{0, 2};
inline constexpr FieldSpan fpduptr{2, 2};
}  // namespace marker_field

// Pad octets after the ULPDU so that (2 + ulpdu_length + pad) % 4 == 0.
constexpr std::size_t fpdu_pad(std::size_t ulpdu_length) {
  return (4 - ((2 + ulpdu_length) & 3)) & 3;
}
// FPDU size without markers: length field + ULPDU + pad + CRC.
constexpr std::size_t fpdu_size(std::size_t ulpdu_length) {
  return kMpaLengthSize + ulpdu_length + fpdu_pad(ulpdu_length) + kMpaCrcSize;
}
// Where the pad and the CRC field of a marker-free FPDU start.
constexpr std::size_t fpdu_pad_offset(std::size_t ulpdu_length) {
  return fpdu_field::ulpdu + ulpdu_length;
}
constexpr std::size_t fpdu_crc_offset(std::size_t ulpdu_length) {
  return fpdu_size(ulpdu_length) - kMpaCrcSize;
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

}  // namespace ddpscope::wire
