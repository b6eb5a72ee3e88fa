// SPDX-License-Identifier: GPL-2.0-or-later
// iSER, iSCSI Extensions for RDMA (RFC 7145, which obsoletes RFC 5046), over iWARP: what the
// initiator's SCSI Command PDUs say of its buffers, what the target's SCSI Response says of the
// transfer, and how a stream is recognised as iSER.
//
// On the wire (every multi-octet field big-endian):
//   * every Send carries a 28-octet iSER header (RFC 7145), then the iSCSI PDU:
//       octet 0: opcode (high nibble: 1h iSCSI control-type PDU, 2h Hello, 3h HelloReply);
//         for a control-type PDU bit 3 (08h) W: Write STag valid, bit 2 (04h) R: Read STag
//         valid; octets 1..3 reserved;
//       be32 Write STag, be64 Write Base Offset (the initiator's buffer of SCSI write data the
//         target RDMA-Reads, starting after any unsolicited data), be32 Read STag, be64 Read
//         Base Offset (the buffer the target RDMA-Writes SCSI read data into);
//     Hello (initiator) { octet 1: MaxVer << 4 | MinVer; be16 iSER-IRD } and HelloReply
//     (target) { octet 0 bit 0: RejF; octet 1: MaxVer << 4 | CurVer; be16 iSER-ORD }
//     (RFC 7145; only their first 4 octets are read);
//   * the iSCSI PDU (RFC 7143 §11): a 48-octet Basic Header Segment (opcode in octet 0's low
//     six bits, 40h the immediate bit), additional header segments, the data segment. A SCSI
//     Command (01h): octet 1 F 80h, R 40h, W 20h; octet 4 TotalAHSLength (words); octets 5..7
//     DataSegmentLength (immediate data); 16..19 Initiator Task Tag; 20..23 Expected Data
//     Transfer Length; 32..47 the CDB. A bidirectional command's read length is the AHS of
//     type 02h (Bidirectional Read Expected Data Transfer Length, be32 after 4 octets). A SCSI
//     Response (21h): octet 1 flags (o 10h, u 08h, O 04h, U 02h), octet 2 Response, octet 3
//     Status, 16..19 ITT, 40..43 Bidirectional Read Residual Count, 44..47 Residual Count.
// Over iSER there are no Data-In nor R2T PDUs: the target RDMA-Writes read data into the
// Read STag's buffer (remote write) and RDMA-Reads solicited write data from the Write STag's
// (remote read). After the SCSI Response the initiator invalidates the STags it advertised
// (the target may do it with a Send with Invalidate), so they end with the response.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ddpscope/common/bytes.h"
#include "ddpscope/ulp/advert.h"

namespace ddpscope::ulp {

inline constexpr std::size_t kIserHeaderSize = 28;
inline constexpr std::size_t kIscsiBhsSize = 48;
inline constexpr std::uint16_t kIscsiPort = 3260;  // IANA "iscsi-target": a hint, never proof

namespace iser_opcode {
inline constexpr std::uint8_t control = 0x1;
inline constexpr std::uint8_t hello = 0x2;
inline constexpr std::uint8_t hello_reply = 0x3;
}  // namespace iser_opcode

struct IserHeader {
  std::uint8_t opcode = iser_opcode::control;
  bool write_valid = false;  // W
  bool read_valid = false;   // R
  std::uint32_t write_stag = 0;
  std::uint64_t write_base = 0;
  std::uint32_t read_stag = 0;
  std::uint64_t read_base = 0;
  // Hello / HelloReply.
  std::uint8_t max_version = 0;
  std::uint8_t min_or_cur_version = 0;  // Hello: MinVer; HelloReply: CurVer
  std::uint16_t ird_or_ord = 0;         // Hello: iSER-IRD; HelloReply: iSER-ORD
  bool reject = false;                  // HelloReply RejF
  bool operator==(const IserHeader&) const = default;
};

// A control-type header needs 28 octets with the reserved bits clear; Hello and HelloReply
// their first 4. nullopt for other opcodes or shapes.
std::optional<IserHeader> decode_iser_header(ByteView message);
Bytes encode_iser_header(const IserHeader& h);  // 28 octets for every opcode

namespace iscsi_opcode {
inline constexpr std::uint8_t nop_out = 0x00;
inline constexpr std::uint8_t scsi_command = 0x01;
inline constexpr std::uint8_t task_management = 0x02;
inline constexpr std::uint8_t login_request = 0x03;
inline constexpr std::uint8_t text_request = 0x04;
inline constexpr std::uint8_t data_out = 0x05;
inline constexpr std::uint8_t logout_request = 0x06;
inline constexpr std::uint8_t snack = 0x10;
inline constexpr std::uint8_t nop_in = 0x20;
inline constexpr std::uint8_t scsi_response = 0x21;
inline constexpr std::uint8_t task_management_response = 0x22;
inline constexpr std::uint8_t login_response = 0x23;
inline constexpr std::uint8_t text_response = 0x24;
inline constexpr std::uint8_t data_in = 0x25;
inline constexpr std::uint8_t logout_response = 0x26;
inline constexpr std::uint8_t r2t = 0x31;
inline constexpr std::uint8_t async_message = 0x32;
inline constexpr std::uint8_t reject = 0x3F;
}  // namespace iscsi_opcode

// The fields of a Basic Header Segment the decoder reads (a SCSI Command's or Response's).
struct IscsiBhs {
  std::uint8_t opcode = 0;
  bool immediate = false;
  std::uint8_t flags = 0;           // octet 1
  std::uint8_t response = 0;        // SCSI Response octet 2
  std::uint8_t status = 0;          // SCSI Response octet 3
  std::uint8_t ahs_words = 0;       // TotalAHSLength
  std::uint32_t data_length = 0;    // DataSegmentLength (24 bits)
  std::uint64_t lun = 0;            // octets 8..15
  std::uint32_t itt = 0;            // Initiator Task Tag
  std::uint32_t word20 = 0;         // SCSI Command: Expected Data Transfer Length
  std::uint32_t cmdsn = 0;          // octets 24..27 (SCSI Response: StatSN)
  std::uint32_t bidi_residual = 0;  // SCSI Response octets 40..43
  std::uint32_t residual = 0;       // SCSI Response octets 44..47
  std::array<std::uint8_t, 16> cdb{};
  static constexpr std::uint8_t kFinal = 0x80, kRead = 0x40, kWrite = 0x20;
  static constexpr std::uint8_t kBidiOverflow = 0x10, kBidiUnderflow = 0x08;
  static constexpr std::uint8_t kOverflow = 0x04, kUnderflow = 0x02;
};

std::optional<IscsiBhs> decode_iscsi_bhs(ByteView pdu);  // the PDU's first 48 octets
Bytes encode_iscsi_bhs(const IscsiBhs& b);

// "READ(10)", "WRITE(16)", "INQUIRY"; "opcode 0xc1" for one not named here.
std::string scsi_cdb_name(std::uint8_t cdb_opcode);
// "SCSI READ(10) ITT 0x1f LUN 0".
std::string iser_command_name(const IscsiBhs& cmd);
// The read length of a bidirectional command: its AHS of type 02h (nullopt: none in `ahs`).
std::optional<std::uint32_t> iscsi_bidi_read_length(ByteView ahs);

// The per-stream state: whether the stream is iSER and how that was told.
class IserStream final : public UlpStreamState {
 public:
  std::string describe() const override;
  std::string evidence;  // "iSER Hello", "iSCSI Login over iSER", "port 3260 and ..."
  // The MPA Request's private data is an iSER CM REQ message (RFC 7145, iSER CM REQ Message: 4
  // octets as Linux sends it, only the ZBVA-not-supported and Send-with-Invalidate-not-supported
  // bits of octet 0 may be set): a hint, like the port, that content then confirms.
  bool cm_hint = false;
  std::optional<IserHeader> hello, hello_reply;
  // Who has sent a Send-family message yet (at most the stream's two ends): a Hello is the
  // initiator's first message and a HelloReply the target's (RFC 7145 §5.1), never a later one.
  std::vector<net::Endpoint> senders;
  std::string initiator_name, target_name;  // from the Login Request's text keys
  std::optional<net::Endpoint> initiator;   // the MPA initiator, or the first command's sender
};

class IserDecoder final : public AdvertisementDecoder {
 public:
  std::string_view name() const override { return "iser"; }
  std::unique_ptr<UlpStreamState> new_stream() const override;
  void setup(UlpStreamState* state, const UlpSetup& setup) const override;
  void decode(const AdvertContext& ctx, UlpStreamState* state, ByteView message,
              UlpEvents& out) const override;
  bool may_open(const AdvertContext& ctx, const UlpStreamState* state,
                ByteView first) const override;
};

}  // namespace ddpscope::ulp
