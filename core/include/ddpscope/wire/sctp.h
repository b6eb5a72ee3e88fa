// SPDX-License-Identifier: GPL-2.0-or-later
// Wire codecs for SCTP as DDP's second LLP (RFC 9260 / RFC 4960, RFC 5061 adaptation layer
// indication, RFC 6951 UDP encapsulation) and the DDP adaptation itself (RFC 5043, RFC 6581):
// the common header and its CRC32c, the chunk walk (bundling, padding), DATA, INIT / INIT ACK
// (with their parameters), SACK, ABORT, SHUTDOWN*, COOKIE*, and the DDP Stream Session Control
// message carried on PPID 17.
// Pure functions: no state, no I/O. Decoders are bounds-checked and return a Result; encoders
// append to a byte vector. The adaptation's layout and codes are read from RFC 5043's own text
// (../shared/reference/iwarp-wire-facts.md, "DDP over SCTP").
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "ddpscope/common/bytes.h"
#include "ddpscope/common/result.h"
#include "ddpscope/wire/field.h"
#include "ddpscope/wire/mpa.h"

namespace ddpscope::wire {

// ---------------------------------------------------------------------------------------------
// Where SCTP sits
// ---------------------------------------------------------------------------------------------

inline constexpr std::uint8_t kIpProtocolSctp = 132;  // IANA protocol numbers
inline constexpr std::uint16_t kSctpUdpPort = 9899;   // RFC 6951 §5.1 (IANA sctp-tunneling)

// SCTP Payload Protocol Identifiers of RFC 5043 §5.2, §12 (IANA; tshark names them "DDP Segment
// Chunk" and "DDP Stream Session Control").
inline constexpr std::uint32_t kPpidDdpSegment = 16;
inline constexpr std::uint32_t kPpidDdpSessionControl = 17;

// The Adaptation Code Point that says "DDP" in the Adaptation Layer Indication parameter
// (RFC 5043 §5.1, §12): 1. An association whose INIT or INIT ACK lacks it runs no DDP.
inline constexpr std::uint32_t kAdaptationCodePointDdp = 0x00000001;

// ---------------------------------------------------------------------------------------------
// Common header (RFC 9260 §3.1) and checksum (RFC 9260 §6.8, Appendix A)
// ---------------------------------------------------------------------------------------------

inline constexpr std::size_t kSctpCommonHeaderSize = 12;
namespace sctp_header_field {
inline constexpr FieldSpan source_port{0, 2};
inline constexpr FieldSpan destination_port{2, 2};
inline constexpr FieldSpan verification_tag{4, 4};
inline constexpr FieldSpan checksum{8, 4};
inline constexpr std::size_t chunks = kSctpCommonHeaderSize;
}  // namespace sctp_header_field

struct SctpCommonHeader {
  std::uint16_t source_port = 0;
  std::uint16_t destination_port = 0;
  std::uint32_t verification_tag = 0;
  std::uint32_t checksum = 0;  // the CRC32c value (as crc32c() returns it), not the wire octets
  bool operator==(const SctpCommonHeader&) const = default;
};

// CRC32c over the whole packet with the checksum field taken as zero. Like MPA and iSCSI, SCTP
// puts the value on the wire least significant octet first (Linux sctp_compute_cksum; tshark
// with -o sctp.checksum:CRC-32C agrees, checked in tests/).
std::uint32_t sctp_checksum(ByteView packet);
// True when the packet's checksum field holds sctp_checksum(packet). False for < 12 octets.
bool sctp_checksum_ok(ByteView packet);
// Writes sctp_checksum(packet) into the packet's checksum field (packet.size() >= 12).
void sctp_write_checksum(std::vector<std::uint8_t>& packet);

// ---------------------------------------------------------------------------------------------
// Chunks (RFC 9260 §3.2)
// ---------------------------------------------------------------------------------------------

namespace sctp_chunk {
inline constexpr std::uint8_t data = 0;
inline constexpr std::uint8_t init = 1;
inline constexpr std::uint8_t init_ack = 2;
inline constexpr std::uint8_t sack = 3;
inline constexpr std::uint8_t heartbeat = 4;
inline constexpr std::uint8_t heartbeat_ack = 5;
inline constexpr std::uint8_t abort = 6;
inline constexpr std::uint8_t shutdown = 7;
inline constexpr std::uint8_t shutdown_ack = 8;
inline constexpr std::uint8_t error = 9;
inline constexpr std::uint8_t cookie_echo = 10;
inline constexpr std::uint8_t cookie_ack = 11;
inline constexpr std::uint8_t shutdown_complete = 14;
inline constexpr std::uint8_t forward_tsn = 192;
}  // namespace sctp_chunk
// "DATA", "INIT ACK", ... or empty for a type this table does not name.
std::string_view sctp_chunk_name(std::uint8_t type);

inline constexpr std::size_t kSctpChunkHeaderSize = 4;
namespace sctp_chunk_field {
inline constexpr FieldSpan type{0, 1};
inline constexpr FieldSpan flags{1, 1};
inline constexpr FieldSpan length{2, 2};  // header + value, without the padding
inline constexpr std::size_t value = kSctpChunkHeaderSize;
}  // namespace sctp_chunk_field

// The T bit of ABORT and SHUTDOWN COMPLETE (RFC 9260 §3.3.7, §3.3.13): the sender had no TCB
// and reflected the peer's tag.
inline constexpr std::uint8_t kSctpFlagT = 0x01;

constexpr std::size_t sctp_pad(std::size_t length) {
  return (4 - (length & 3)) & 3;
}

// One chunk of a packet, as a view into the packet.
struct SctpChunkView {
  std::uint8_t type = 0;
  std::uint8_t flags = 0;
  std::uint16_t length = 0;  // the Chunk Length field
  std::size_t offset = 0;    // of the chunk header, from the start of the SCTP packet
  ByteView value;            // length - 4 octets
};

struct SctpPacketView {
  SctpCommonHeader header;
  std::vector<SctpChunkView> chunks;
  bool last_chunk_unpadded = false;  // the final chunk's padding is missing (tolerated)
};

// Decodes the common header and walks the chunks. Malformed codes: "sctp.truncated" (< 12
// octets), "sctp.chunk-length" (a chunk length below 4 or past the packet; offset = that chunk),
// "sctp.no-chunks" (a header and nothing after it). Nonzero padding is not checked. A packet
// holds at most kSctpMaxChunksPerPacket chunks (a 64 KiB datagram cannot hold more).
inline constexpr std::size_t kSctpMaxChunksPerPacket = 16384;
Result<SctpPacketView> decode_sctp_packet(ByteView packet);

// Appends one chunk (header, value, zero padding) to `out`.
void encode_sctp_chunk(std::uint8_t type, std::uint8_t flags, ByteView value, Bytes& out);
// A whole packet: the header (its checksum ignored) and the chunk octets, with the CRC32c
// computed and written.
Bytes encode_sctp_packet(const SctpCommonHeader& header, ByteView chunks);

// ---------------------------------------------------------------------------------------------
// DATA (RFC 9260 §3.3.1)
// ---------------------------------------------------------------------------------------------

inline constexpr std::uint8_t kSctpDataFlagE = 0x01;    // ending fragment
inline constexpr std::uint8_t kSctpDataFlagB = 0x02;    // beginning fragment
inline constexpr std::uint8_t kSctpDataFlagU = 0x04;    // unordered
inline constexpr std::uint8_t kSctpDataFlagI = 0x08;    // immediate SACK (RFC 7053)
inline constexpr std::size_t kSctpDataHeaderSize = 16;  // chunk header included
namespace sctp_data_field {                             // from the chunk header's first octet
inline constexpr FieldSpan tsn{4, 4};
inline constexpr FieldSpan stream_id{8, 2};
inline constexpr FieldSpan ssn{10, 2};
inline constexpr FieldSpan ppid{12, 4};
inline constexpr std::size_t user_data = kSctpDataHeaderSize;
}  // namespace sctp_data_field

struct SctpData {
  bool unordered = false;  // U
  bool beginning = false;  // B
  bool ending = false;     // E
  bool immediate = false;  // I
  std::uint32_t tsn = 0;
  std::uint16_t stream_id = 0;
  std::uint16_t ssn = 0;
  std::uint32_t ppid = 0;  // host order (the wire field is big-endian)
  ByteView user_data;      // decode: a view into the chunk; encode: the octets to write
  std::uint8_t flags() const;
};
// Malformed "sctp.data-short" when the chunk is not a DATA chunk of >= 16 octets. An empty user
// data field is decoded (RFC 9260 calls it a protocol violation; the engine reports it).
Result<SctpData> decode_sctp_data(const SctpChunkView& chunk);
void encode_sctp_data(const SctpData& data, Bytes& out);

// ---------------------------------------------------------------------------------------------
// INIT / INIT ACK (RFC 9260 §3.3.2, §3.3.3) and their parameters
// ---------------------------------------------------------------------------------------------

namespace sctp_param {
inline constexpr std::uint16_t ipv4_address = 5;
inline constexpr std::uint16_t ipv6_address = 6;
inline constexpr std::uint16_t state_cookie = 7;
inline constexpr std::uint16_t cookie_preservative = 9;
inline constexpr std::uint16_t supported_address_types = 12;
inline constexpr std::uint16_t ecn_capable = 0x8000;
inline constexpr std::uint16_t forward_tsn_supported = 0xC000;
inline constexpr std::uint16_t supported_extensions = 0x8008;
inline constexpr std::uint16_t adaptation_layer_indication = 0xC006;  // RFC 5061 §4.2.7
}  // namespace sctp_param

inline constexpr std::size_t kSctpInitFixedSize = 20;  // chunk header + 16 octets
namespace sctp_init_field {                            // from the chunk header's first octet
inline constexpr FieldSpan initiate_tag{4, 4};
inline constexpr FieldSpan a_rwnd{8, 4};
inline constexpr FieldSpan outbound_streams{12, 2};
inline constexpr FieldSpan inbound_streams{14, 2};
inline constexpr FieldSpan initial_tsn{16, 4};
inline constexpr std::size_t parameters = kSctpInitFixedSize;
}  // namespace sctp_init_field

struct SctpParameter {
  std::uint16_t type = 0;
  Bytes value;  // length - 4 octets
  bool operator==(const SctpParameter&) const = default;
};

struct SctpInit {
  bool ack = false;  // INIT ACK (carries the State Cookie)
  std::uint32_t initiate_tag = 0;
  std::uint32_t a_rwnd = 0;
  std::uint16_t outbound_streams = 0;
  std::uint16_t inbound_streams = 0;
  std::uint32_t initial_tsn = 0;
  // Every parameter in wire order (the adaptation indication and cookie included).
  std::vector<SctpParameter> parameters;
  // The Adaptation Code Point when an Adaptation Layer Indication parameter is present.
  std::optional<std::uint32_t> adaptation_code_point() const;
  // The State Cookie parameter's value, or empty.
  ByteView state_cookie() const;
  bool operator==(const SctpInit&) const = default;
};
// Malformed "sctp.init-short" (< 20 octets or not INIT/INIT ACK), "sctp.param-length" (a
// parameter length below 4 or past the chunk; offset from the chunk header). An Adaptation Layer
// Indication whose value is not 4 octets is "sctp.param-length" too.
Result<SctpInit> decode_sctp_init(const SctpChunkView& chunk);
void encode_sctp_init(const SctpInit& init, Bytes& out);
// The parameter RFC 5061 §4.2.7 defines, for SctpInit::parameters.
SctpParameter sctp_adaptation_parameter(std::uint32_t code_point);

// ---------------------------------------------------------------------------------------------
// SACK (RFC 9260 §3.3.4)
// ---------------------------------------------------------------------------------------------

struct SctpGapBlock {
  std::uint16_t start = 0;  // offsets from the cumulative TSN ack
  std::uint16_t end = 0;
  bool operator==(const SctpGapBlock&) const = default;
};
struct SctpSack {
  std::uint32_t cumulative_tsn_ack = 0;
  std::uint32_t a_rwnd = 0;
  std::vector<SctpGapBlock> gap_blocks;
  std::vector<std::uint32_t> duplicate_tsns;
  bool operator==(const SctpSack&) const = default;
};
// Malformed "sctp.sack-short" when the counts promise more than the chunk holds.
Result<SctpSack> decode_sctp_sack(const SctpChunkView& chunk);
void encode_sctp_sack(const SctpSack& sack, Bytes& out);

// ---------------------------------------------------------------------------------------------
// ABORT, SHUTDOWN, SHUTDOWN ACK, SHUTDOWN COMPLETE, COOKIE ECHO, COOKIE ACK (RFC 9260 §3.3.7-14)
// ---------------------------------------------------------------------------------------------

// ABORT: the T flag and the error causes (kept raw). SHUTDOWN: the cumulative TSN ack.
void encode_sctp_abort(bool t_flag, ByteView error_causes, Bytes& out);
void encode_sctp_shutdown(std::uint32_t cumulative_tsn_ack, Bytes& out);
void encode_sctp_shutdown_ack(Bytes& out);
void encode_sctp_shutdown_complete(bool t_flag, Bytes& out);
void encode_sctp_cookie_echo(ByteView cookie, Bytes& out);
void encode_sctp_cookie_ack(Bytes& out);
// Malformed "sctp.shutdown-short" when a SHUTDOWN chunk is not 8 octets long.
Result<std::uint32_t> decode_sctp_shutdown(const SctpChunkView& chunk);

// ---------------------------------------------------------------------------------------------
// The DDP adaptation's user messages (RFC 5043 §5.2): DDP-SSN, then a DDP segment (PPID 16) or a
// DDP Stream Session Control message (PPID 17)
// ---------------------------------------------------------------------------------------------
//
// Every user message of the adaptation, on either PPID, opens with a 16-bit DDP-SSN
// (RFC 5043 §5.2.1): per SCTP stream and direction it numbers the messages in the order the
// sender submitted them, starts at 0 with each DDP Stream Session and has no gaps. Chunks are
// sent unordered (U = 1, §4, §10), so the DDP-SSN, not the TSN, is the order a receiver judges a
// stream in.
//   PPID 16:  DDP-SSN (2) | DDP segment (RFC 5041 header and payload)
//   PPID 17:  DDP-SSN (2) | Function Code (2) | Private Data (to the end of the message)

inline constexpr std::size_t kDdpSsnSize = 2;

// RFC 5043 §10: DDP-SSNs compare in 16-bit serial arithmetic (RFC 1982); fewer than 2^15
// messages of one stream and direction are ever in flight.
constexpr bool ddp_ssn_before(std::uint16_t a, std::uint16_t b) {
  return static_cast<std::int16_t>(static_cast<std::uint16_t>(a - b)) < 0;
}

// A user message split into its DDP-SSN and what follows it.
struct DdpSctpMessage {
  std::uint16_t ddp_ssn = 0;
  ByteView body;  // the DDP segment (PPID 16) or the session control after the DDP-SSN (PPID 17)
};
// Malformed "sctp.message-short" when the message is shorter than the DDP-SSN.
Result<DdpSctpMessage> decode_ddp_sctp_message(ByteView user_message);
// DDP-SSN followed by `body`: a PPID 16 user message when `body` is a DDP segment.
Bytes encode_ddp_sctp_message(std::uint16_t ddp_ssn, ByteView body);

// DDP Stream Session Control (PPID 17; RFC 5043 §5.2.3, RFC 6581 §7). There is no length field:
// the private data is the rest of the message.
inline constexpr std::size_t kDdpSessionControlHeaderSize = 4;  // DDP-SSN and Function Code
namespace ddp_session_field {
inline constexpr FieldSpan ddp_ssn{0, 2};
inline constexpr FieldSpan function_code{2, 2};
inline constexpr std::size_t private_data = kDdpSessionControlHeaderSize;
}  // namespace ddp_session_field

// RFC 5043 §5.2.3: Initiate, Accept and Reject carry at most 512 octets of private data (the
// RFC 6581 word included, RFC 6581 §7); Terminate carries none.
inline constexpr std::size_t kDdpSessionMaxPrivateData = 512;

// Function codes: RFC 5043 §5.2.3 (1-4), RFC 6581 §7 (5-7); RFC 6580 §3.5 keeps 0xFFFF for
// experiments. Every other value is invalid. There is no enhanced Terminate: an enhanced
// session ends with the plain one.
namespace ddp_session_fn {
inline constexpr std::uint16_t initiate = 0x0001;
inline constexpr std::uint16_t accept = 0x0002;
inline constexpr std::uint16_t reject = 0x0003;
inline constexpr std::uint16_t terminate = 0x0004;
inline constexpr std::uint16_t enhanced_initiate = 0x0005;  // RFC 6581
inline constexpr std::uint16_t enhanced_accept = 0x0006;    // RFC 6581
inline constexpr std::uint16_t enhanced_reject = 0x0007;    // RFC 6581
inline constexpr std::uint16_t experimental = 0xFFFF;       // RFC 6580 §3.5
}  // namespace ddp_session_fn

// What a function code means to the session rules.
enum class DdpSessionKind : std::uint8_t {
  unknown,  // not a code RFC 5043 or RFC 6581 defines (0xFFFF included)
  initiate,
  accept,
  reject,
  terminate,
};
DdpSessionKind ddp_session_kind(std::uint16_t function_code);
bool ddp_session_is_enhanced(std::uint16_t function_code);
// "Session Initiate", "Enhanced Session Accept", ... or empty for an undefined code.
std::string_view ddp_session_function_name(std::uint16_t function_code);

struct DdpSessionControl {
  std::uint16_t ddp_ssn = 0;
  std::uint16_t function_code = 0;
  Bytes private_data;  // all PD octets as on the wire (the enhanced word included)
  // Decoded RFC 6581 word: present for an enhanced function code with >= 4 PD octets.
  std::optional<MpaEnhancedPd> enhanced_pd;
  DdpSessionKind kind() const { return ddp_session_kind(function_code); }
  // The private data the ULP sees (after the enhanced word, when there is one).
  ByteView ulp_private_data() const;
  bool operator==(const DdpSessionControl&) const = default;
};
// Decodes one whole PPID 17 user message (SCTP delivers messages, not a byte stream, so a short
// one is malformed, never need_more): "sctp.session-short" when it is shorter than the DDP-SSN
// and the function code. Private data over 512 octets, private data in a Terminate and an
// undefined function code decode: they are rules (sctp/ddp_session.h), not wire errors.
Result<DdpSessionControl> decode_ddp_session_control(ByteView message);
// Builds the message. When enhanced_pd is set its word is written first and private_data is the
// ULP's PD only (the same asymmetry as encode_mpa_reqrep).
Bytes encode_ddp_session_control(const DdpSessionControl& message);

}  // namespace ddpscope::wire
