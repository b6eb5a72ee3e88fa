// SPDX-License-Identifier: GPL-2.0-or-later
// SMB Direct (MS-SMBD) and the SMB2 READ/WRITE RDMA channel (MS-SMB2): what a client's READ and
// WRITE requests say of its buffers, what the responses say was transferred, and how a stream
// is recognised as SMB Direct.
//
// On the wire (every multi-octet field little-endian):
//   * Negotiate Request (MS-SMBD 2.2.1, 20 octets): le16 MinVersion, MaxVersion (0100h),
//     Reserved, CreditsRequested; le32 PreferredSendSize, MaxReceiveSize, MaxFragmentedSize;
//   * Negotiate Response (2.2.2, 32 octets): le16 MinVersion, MaxVersion, NegotiatedVersion,
//     Reserved, CreditsRequested, CreditsGranted; le32 Status, MaxReadWriteSize,
//     PreferredSendSize, MaxReceiveSize, MaxFragmentedSize;
//   * Data Transfer message (2.2.3): le16 CreditsRequested, CreditsGranted, Flags, Reserved;
//     le32 RemainingDataLength (octets of the upper message in later fragments), DataOffset,
//     DataLength; then padding and the data: a fragment of one SMB2 message;
//   * SMB2 header (MS-SMB2 2.2.1, 64 octets): FE 'S' 'M' 'B', le16 StructureSize 64, ...,
//     le32 Status at 8, le16 Command at 12, le32 Flags at 16 (01h SERVER_TO_REDIR), le32
//     NextCommand at 20, le64 MessageId at 24;
//   * SMB2 READ request (2.2.19): body le32 Length at 4, le32 Channel at 36 (1 RDMA_V1, 2
//     RDMA_V1_INVALIDATE), le16 ReadChannelInfoOffset (from the SMB2 header) and Length at
//     44/46; WRITE request (2.2.21): le32 Channel at 32, le32 RemainingBytes at 36,
//     WriteChannelInfoOffset/Length at 40/42; the channel info: SMB_DIRECT_BUFFER_DESCRIPTOR_V1
//     {le64 Offset; le32 Token; le32 Length} per buffer (MS-SMBD 2.2.3.1);
//   * READ response (2.2.20): le32 DataRemaining at body 8 (octets sent on the channel);
//     WRITE response (2.2.22): le32 Count at body 4 (octets written).
// The server RDMA-Writes READ data into the client's buffers (remote write) and RDMA-Reads
// WRITE data from them (remote read); with RDMA_V1_INVALIDATE it invalidates the buffer with a
// Send with Invalidate of the response. An interim response (STATUS_PENDING) completes nothing.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ddpscope/common/bytes.h"
#include "ddpscope/ulp/advert.h"

namespace ddpscope::ulp {

inline constexpr std::uint16_t kSmbDirectPort = 5445;  // IANA "smbdirect": a hint, never proof
inline constexpr std::uint16_t kSmbDirectVersion = 0x0100;
inline constexpr std::size_t kSmbdNegotiateRequestSize = 20;
inline constexpr std::size_t kSmbdNegotiateResponseSize = 32;
inline constexpr std::size_t kSmbdDataHeaderSize = 24;
inline constexpr std::size_t kSmb2HeaderSize = 64;
// Octets of a fragmented SMB2 message kept per direction (its headers and channel info are at
// the front); the rest is counted, not kept.
inline constexpr std::size_t kSmbdMaxReassembly = 16384;
inline constexpr std::size_t kSmbdMaxDescriptors = 64;  // per request

struct SmbdNegotiateRequest {
  std::uint16_t min_version = kSmbDirectVersion, max_version = kSmbDirectVersion;
  std::uint16_t credits_requested = 0;
  std::uint32_t preferred_send_size = 0, max_receive_size = 0, max_fragmented_size = 0;
};
struct SmbdNegotiateResponse {
  std::uint16_t min_version = kSmbDirectVersion, max_version = kSmbDirectVersion;
  std::uint16_t negotiated_version = kSmbDirectVersion;
  std::uint16_t credits_requested = 0, credits_granted = 0;
  std::uint32_t status = 0, max_read_write_size = 0, preferred_send_size = 0, max_receive_size = 0,
                max_fragmented_size = 0;
};
struct SmbdDataHeader {
  std::uint16_t credits_requested = 0, credits_granted = 0, flags = 0;
  std::uint32_t remaining_data_length = 0, data_offset = 0, data_length = 0;
};

std::optional<SmbdNegotiateRequest> decode_smbd_negotiate_request(ByteView m);    // 20 octets
std::optional<SmbdNegotiateResponse> decode_smbd_negotiate_response(ByteView m);  // 32 octets
// At least 24 octets; data within `length` (the message's whole length) and 8-aligned.
std::optional<SmbdDataHeader> decode_smbd_data_header(ByteView m, std::uint64_t length);
Bytes encode_smbd_negotiate_request(const SmbdNegotiateRequest& r);
Bytes encode_smbd_negotiate_response(const SmbdNegotiateResponse& r);
Bytes encode_smbd_data(const SmbdDataHeader& h, ByteView data);  // data at offset 24

namespace smb2_command {
inline constexpr std::uint16_t read = 0x0008;
inline constexpr std::uint16_t write = 0x0009;
}  // namespace smb2_command
inline constexpr std::uint32_t kSmb2StatusPending = 0x00000103;

struct SmbDirectBuffer {
  std::uint64_t offset = 0;
  std::uint32_t token = 0;
  std::uint32_t length = 0;
  bool operator==(const SmbDirectBuffer&) const = default;
};

// One SMB2 message of a (possibly compound) SMB2 PDU, as far as the decoder reads it.
struct Smb2Message {
  std::uint16_t command = 0;
  std::uint32_t status = 0;
  bool response = false;
  std::uint64_t message_id = 0;
  std::uint32_t channel = 0;  // READ/WRITE request
  std::vector<SmbDirectBuffer> buffers;
  bool buffers_partial = false;   // descriptors past the kept octets or the cap
  std::uint32_t length = 0;       // READ request Length, WRITE request RemainingBytes
  std::uint32_t transferred = 0;  // READ response DataRemaining, WRITE response Count
};
// Every message of the compound PDU `pdu` (at most 32), nullopt if it is no SMB2 PDU.
std::optional<std::vector<Smb2Message>> decode_smb2(ByteView pdu);
// An SMB2 READ or WRITE request with an RDMA channel and its descriptors, and responses.
Bytes encode_smb2_read_request(std::uint64_t message_id, std::uint32_t length,
                               std::uint32_t channel, const std::vector<SmbDirectBuffer>& bufs);
Bytes encode_smb2_write_request(std::uint64_t message_id, std::uint32_t length,
                                std::uint32_t channel, const std::vector<SmbDirectBuffer>& bufs);
Bytes encode_smb2_response(std::uint16_t command, std::uint64_t message_id, std::uint32_t status,
                           std::uint32_t transferred);

class SmbDirectStream final : public UlpStreamState {
 public:
  std::string describe() const override;
  std::string evidence;
  std::optional<SmbdNegotiateRequest> negotiate_request;
  std::optional<SmbdNegotiateResponse> negotiate_response;
  std::optional<net::Endpoint> client;
  // One upper message being reassembled per direction (0: from the client).
  struct Reassembly {
    Bytes kept;
    std::uint64_t total = 0;  // octets of the message received so far
    bool active = false;
  };
  Reassembly from[2];
};

class SmbDirectDecoder final : public AdvertisementDecoder {
 public:
  std::string_view name() const override { return "smb-direct"; }
  std::unique_ptr<UlpStreamState> new_stream() const override;
  void decode(const AdvertContext& ctx, UlpStreamState* state, ByteView message,
              UlpEvents& out) const override;
  bool may_open(const AdvertContext& ctx, const UlpStreamState* state,
                ByteView first) const override;
};

}  // namespace ddpscope::ulp
