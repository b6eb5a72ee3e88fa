// SPDX-License-Identifier: GPL-2.0-or-later
// NVMe over Fabrics, RDMA transport binding (NVMe-oF 1.1 §7.3 and the NVMe Base Specification
// for the SQE, CQE and SGL): what the host's command capsules and the controller's response
// capsules say of the host's buffers, and how a stream is recognised as NVMe/RDMA.
//
// On the wire (every multi-octet NVMe field little-endian):
//   * RDMA CM private data, carried in the MPA Request / Reply after the RFC 6581 word:
//     Request {le16 recfmt = 0; le16 qid; le16 hrqsize; le16 hsqsize; le16 cntlid; 22 reserved}
//     Reply   {le16 recfmt = 0; le16 crqsize; 28 reserved}       (32 octets each)
//   * command capsule: a Send from the host holding the 64-octet SQE, then in-capsule data;
//   * response capsule: a Send or Send with Invalidate from the controller holding the
//     16-octet CQE {le32 dw0; le32 dw1; le16 sqhd; le16 sqid; le16 cid; le16 status};
//   * SGL descriptor (16 octets; identifier = type << 4 | sub-type in its last octet):
//     keyed data block (type 4h): le64 address, le24 length, le32 key; sub-type 0h address,
//       Fh invalidate key (the host wants the key invalidated with the command);
//     data block (0h), segment (2h), last segment (3h): le64 address, le32 length; sub-type 1h
//       (offset) places the block or the descriptor list in the in-capsule data.
// The controller moves a command's data with RDMA Write into the host's keyed buffers (data
// from controller to host: a Read) or RDMA Read from them (host to controller: a Write); the
// data transfer direction is the opcode's two low bits (for Fabrics commands, fctype's).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ddpscope/common/bytes.h"
#include "ddpscope/ulp/advert.h"

namespace ddpscope::ulp {

inline constexpr std::size_t kNvmeSqeSize = 64;
inline constexpr std::size_t kNvmeCqeSize = 16;
inline constexpr std::size_t kNvmeSglSize = 16;
inline constexpr std::size_t kNvmeCmPrivateDataSize = 32;
inline constexpr std::size_t kNvmeConnectDataSize = 1024;
inline constexpr std::uint8_t kNvmeFabricsOpcode = 0x7F;
inline constexpr std::uint16_t kNvmeRdmaPort = 4420;  // IANA "nvme": a hint, never proof

struct NvmeCmRequest {
  std::uint16_t recfmt = 0;
  std::uint16_t qid = 0;
  std::uint16_t hrqsize = 0;
  std::uint16_t hsqsize = 0;
  std::uint16_t cntlid = 0;
};
struct NvmeCmReply {
  std::uint16_t recfmt = 0;
  std::uint16_t crqsize = 0;
};
// The 32-octet private data: record format 0 with non-zero queue sizes and zero reserved
// octets (longer private data is not NVMe's).
std::optional<NvmeCmRequest> decode_nvme_cm_request(ByteView pd);
std::optional<NvmeCmReply> decode_nvme_cm_reply(ByteView pd);
Bytes encode_nvme_cm_request(const NvmeCmRequest& r);
Bytes encode_nvme_cm_reply(const NvmeCmReply& r);

namespace sgl_type {
inline constexpr std::uint8_t data_block = 0x0;
inline constexpr std::uint8_t bit_bucket = 0x1;
inline constexpr std::uint8_t segment = 0x2;
inline constexpr std::uint8_t last_segment = 0x3;
inline constexpr std::uint8_t keyed_data_block = 0x4;
}  // namespace sgl_type
namespace sgl_subtype {
inline constexpr std::uint8_t address = 0x0;
inline constexpr std::uint8_t offset = 0x1;  // in-capsule data
inline constexpr std::uint8_t invalidate_key = 0xF;
}  // namespace sgl_subtype

struct NvmeSgl {
  std::uint64_t address = 0;
  std::uint32_t length = 0;  // 24 bits for a keyed data block
  std::uint32_t key = 0;     // keyed data block only
  std::uint8_t type = 0;
  std::uint8_t subtype = 0;
  bool operator==(const NvmeSgl&) const = default;
};
NvmeSgl decode_nvme_sgl(ByteView d);  // d: kNvmeSglSize octets
void encode_nvme_sgl(const NvmeSgl& s, ByteWriter& out);

struct NvmeSqe {
  std::uint8_t opcode = 0;
  std::uint8_t flags = 0;  // FUSE (bits 1:0), PSDT (bits 7:6: 01b/10b SGL)
  std::uint16_t cid = 0;
  std::uint32_t nsid = 0;              // for a Fabrics command, octet 4 is fctype instead
  NvmeSgl sgl1;                        // octets 24..39
  std::array<std::uint32_t, 6> cdw{};  // CDW10..CDW15 (octets 40..63)
  std::uint8_t fctype() const { return static_cast<std::uint8_t>(nsid & 0xFF); }
  std::uint8_t psdt() const { return static_cast<std::uint8_t>(flags >> 6); }
};
std::optional<NvmeSqe> decode_nvme_sqe(ByteView capsule);  // the capsule's first 64 octets
Bytes encode_nvme_sqe(const NvmeSqe& sqe);

struct NvmeCqe {
  std::uint32_t dw0 = 0;
  std::uint32_t dw1 = 0;
  std::uint16_t sqhd = 0;
  std::uint16_t sqid = 0;
  std::uint16_t cid = 0;
  std::uint16_t status = 0;  // bit 0: phase tag; bits 15:1 the status field
  bool success() const { return (status >> 1) == 0; }
};
std::optional<NvmeCqe> decode_nvme_cqe(ByteView capsule);  // exactly 16 octets
Bytes encode_nvme_cqe(const NvmeCqe& cqe);
// A command's signature (AdvertisementDecoder::command_signature): what it asks without its
// CID and buffers: opcode, FUSE bits, NSID (a Fabrics command's FCTYPE) and CDW10-15.
std::uint64_t nvme_command_signature(ByteView sqe);
// The response capsule `cqe` answering command `cid` instead (unchanged when it is no CQE).
Bytes nvme_cqe_with_cid(ByteView cqe, std::uint16_t cid);

// Which way a command's data goes, by its opcode (or a Fabrics command's fctype): bits 1:0.
enum class NvmeDataDirection : std::uint8_t { none, host_to_controller, controller_to_host, both };
NvmeDataDirection nvme_data_direction(const NvmeSqe& sqe);

// "NVMe Read cid 12 nsid 1", "NVMe Identify cid 14 (admin)", "NVMe-oF Connect cid 0 qid 1";
// `admin`: the queue is the admin queue (nullopt: not known, overlapping opcodes get both
// names, "NVMe Read or Get Log Page cid 3").
std::string nvme_command_name(const NvmeSqe& sqe, std::optional<bool> admin);

// What a command capsule advertises: the host buffers its SGL1 (a keyed data block, or a
// keyed descriptor list in the in-capsule data) names, each with the access the command's
// direction implies. `partial` when the list runs past `capsule` (kept octets) or its cap.
struct NvmeCapsuleBuffers {
  std::vector<NvmeSgl> keyed;  // keyed data blocks, in transfer order
  bool partial = false;
};
inline constexpr std::size_t kNvmeMaxKeyedDescriptors = 256;  // per command
NvmeCapsuleBuffers nvme_capsule_buffers(const NvmeSqe& sqe, ByteView capsule);

// The length the command's own fields give for its data, where they give one: Connect (1024),
// Identify (4096), Get Log Page ((NUMD + 1) dwords). Read and Write depend on the namespace's
// block size, which the capsule does not carry: nullopt.
std::optional<std::uint64_t> nvme_command_transfer_length(const NvmeSqe& sqe, bool admin);

// Whether a capsule is shaped like an NVMe/RDMA command: at least 64 octets, SGL data (PSDT
// 01b or 10b), and an SGL1 of a type a host sends (data block, segment, last segment or keyed
// data block). Only with other evidence (the port) is a stream taken to be NVMe from this.
bool nvme_sqe_plausible(const NvmeSqe& sqe, std::uint64_t capsule_length);

// The per-stream state: whether the stream is NVMe/RDMA and how that was told, the queue.
class NvmeRdmaStream final : public UlpStreamState {
 public:
  std::string describe() const override;
  std::string evidence;  // "RDMA CM private data", "Fabrics Connect", "port 4420 and an SQE"
  std::optional<NvmeCmRequest> cm_request;
  std::optional<NvmeCmReply> cm_reply;
  std::optional<std::uint16_t> qid;  // from the CM private data or the Connect command
  std::optional<std::uint16_t> sqsize;
  std::optional<std::uint32_t> kato;
  std::string hostnqn, subnqn;        // from in-capsule Connect data
  std::optional<net::Endpoint> host;  // the MPA initiator, or the first command's sender
  bool admin() const { return qid && *qid == 0; }
};

class NvmeRdmaDecoder final : public AdvertisementDecoder {
 public:
  std::string_view name() const override { return "nvme-rdma"; }
  std::unique_ptr<UlpStreamState> new_stream() const override;
  void setup(UlpStreamState* state, const UlpSetup& setup) const override;
  void decode(const AdvertContext& ctx, UlpStreamState* state, ByteView message,
              UlpEvents& out) const override;
  std::uint64_t command_signature(ByteView message) const override {
    return nvme_command_signature(message);
  }
  bool may_open(const AdvertContext& ctx, const UlpStreamState* state,
                ByteView first) const override;
};

}  // namespace ddpscope::ulp
