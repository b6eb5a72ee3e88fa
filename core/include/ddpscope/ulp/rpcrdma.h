// SPDX-License-Identifier: GPL-2.0-or-later
// RPC-over-RDMA version 1 (RFC 8166; NFS upper-layer binding RFC 8267): what a requester's
// (NFS client's) Call says of its memory, what the responder's Reply says was written, and how
// a stream is recognised as RPC-over-RDMA.
//
// On the wire (XDR: every field a big-endian 32-bit word, hypers two):
//   * transport header (RFC 8166): rdma_xid, rdma_vers (1), rdma_credit, rdma_proc
//     (0 RDMA_MSG, 1 RDMA_NOMSG, 2 RDMA_MSGP, 3 RDMA_DONE, 4 RDMA_ERROR); RDMA_MSGP then has
//     rdma_align and rdma_thresh (RFC 5666); for MSG, NOMSG and MSGP three chunk lists:
//       read list: { 1, position, handle, length, offset(64) }* 0   (a read chunk's segments)
//       write list: { 1, count, count x { handle, length, offset(64) } }* 0
//       reply chunk: 1, count, count x segment | 0
//     RDMA_ERROR: rdma_err (1 ERR_VERS, 2 ERR_CHUNK);
//   * RDMA_MSG: the RPC message (RFC 5531) follows inline: xid, msg_type (0 CALL, 1 REPLY),
//     a Call's rpcvers (2), prog, vers, proc; a Reply's reply_stat (0 MSG_ACCEPTED), verifier
//     (flavor, opaque), accept_stat (0 SUCCESS). RDMA_NOMSG: the message is in a Position-Zero
//     Read chunk (a Call) or the Reply chunk (a Reply).
//   * RDMA CM private data (RFC 8797; the layout Linux xprtrdma and svcrdma
//     send, section numbers not re-checked): be32 magic f6ab0e18h, octet version (1), octet flags
//     (01h: remote invalidation), octets max Send and max Receive size (1 KiB units, minus 1).
// The responder RDMA-Reads the requester's read chunks (remote read) and RDMA-Writes results
// into its write chunks and reply chunk (remote write); its Reply returns the write list and
// the reply chunk with each segment's length set to what it wrote (RFC 8166). The
// requester invalidates its chunks' registrations once the Reply is in (RFC 8166), or
// the responder does with a Send with Invalidate (RFC 8797).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "ddpscope/common/bytes.h"
#include "ddpscope/ulp/advert.h"

namespace ddpscope::ulp {

inline constexpr std::uint16_t kNfsRdmaPort = 20049;  // IANA "nfsrdma": a hint, never proof
inline constexpr std::uint32_t kRpcRdmaCmMagic = 0xf6ab0e18;
inline constexpr std::size_t kRpcRdmaMaxSegments = 256;  // per message, every list together

namespace rpcrdma_proc {
inline constexpr std::uint32_t msg = 0;
inline constexpr std::uint32_t nomsg = 1;
inline constexpr std::uint32_t msgp = 2;
inline constexpr std::uint32_t done = 3;
inline constexpr std::uint32_t error = 4;
}  // namespace rpcrdma_proc

struct RdmaSegment {
  std::uint32_t handle = 0;
  std::uint32_t length = 0;
  std::uint64_t offset = 0;
  bool operator==(const RdmaSegment&) const = default;
};
struct ReadSegment {
  std::uint32_t position = 0;
  RdmaSegment segment;
  bool operator==(const ReadSegment&) const = default;
};

struct RpcRdmaHeader {
  std::uint32_t xid = 0;
  std::uint32_t vers = 1;
  std::uint32_t credit = 0;
  std::uint32_t proc = rpcrdma_proc::msg;
  std::vector<ReadSegment> reads;
  std::vector<std::vector<RdmaSegment>> writes;  // each write chunk's segments
  std::optional<std::vector<RdmaSegment>> reply;
  std::uint32_t error = 0;  // RDMA_ERROR
  std::size_t size = 0;     // octets of the header (where the RPC message starts)
  bool truncated = false;   // a list ran past kRpcRdmaMaxSegments: not all read
  bool operator==(const RpcRdmaHeader& o) const {
    return xid == o.xid && vers == o.vers && credit == o.credit && proc == o.proc &&
           reads == o.reads && writes == o.writes && reply == o.reply;
  }
};

// Version 1 with a known procedure and well-formed lists; nullopt otherwise (lists running
// past the message, a discriminator other than 0 or 1).
std::optional<RpcRdmaHeader> decode_rpcrdma_header(ByteView message);
Bytes encode_rpcrdma_header(const RpcRdmaHeader& h);  // MSG, NOMSG and ERROR

struct RpcCall {
  std::uint32_t xid = 0;
  std::uint32_t prog = 0, vers = 0, proc = 0;
};
struct RpcReply {
  std::uint32_t xid = 0;
  bool accepted_success = false;  // MSG_ACCEPTED and SUCCESS
  std::uint32_t reply_stat = 0, accept_stat = 0;
};
// The start of an RPC message (RFC 5531 §9): a Call (rpcvers 2) or a Reply.
std::optional<RpcCall> decode_rpc_call(ByteView m);
std::optional<RpcReply> decode_rpc_reply(ByteView m);
Bytes encode_rpc_call(const RpcCall& c);  // with AUTH_NONE credentials and verifier
Bytes encode_rpc_reply(const RpcReply& r);

// "NFSv3 READ xid 0x1f", "NFSv4 COMPOUND xid 0x20", "RPC prog 100005 vers 3 proc 1 xid 0x21".
std::string rpc_call_name(const RpcCall& c);

struct RpcRdmaCmPrivateData {
  std::uint8_t version = 1;
  bool remote_invalidation = false;
  std::uint8_t max_send = 0, max_recv = 0;  // (octets / 1024) - 1
};
std::optional<RpcRdmaCmPrivateData> decode_rpcrdma_cm(ByteView pd);
Bytes encode_rpcrdma_cm(const RpcRdmaCmPrivateData& pd);

class RpcRdmaStream final : public UlpStreamState {
 public:
  std::string describe() const override;
  std::string evidence;
  std::optional<RpcRdmaCmPrivateData> cm_request, cm_reply;
  std::optional<net::Endpoint> requester;
  std::uint32_t credit = 0;  // the latest credit value the responder granted
  // Octets of each outstanding Call's write chunks and reply chunk, by XID, for the residual
  // its Reply states (capped: a Call past the cap is not judged).
  std::map<std::uint32_t, std::uint64_t> writable;
  static constexpr std::size_t kMaxOutstanding = 1024;
};

class RpcRdmaDecoder final : public AdvertisementDecoder {
 public:
  std::string_view name() const override { return "rpc-rdma"; }
  std::unique_ptr<UlpStreamState> new_stream() const override;
  void setup(UlpStreamState* state, const UlpSetup& setup) const override;
  void decode(const AdvertContext& ctx, UlpStreamState* state, ByteView message,
              UlpEvents& out) const override;
  bool may_open(const AdvertContext& ctx, const UlpStreamState* state,
                ByteView first) const override;
};

}  // namespace ddpscope::ulp
