// SPDX-License-Identifier: GPL-2.0-or-later
// rping's buffer advertisement (rdma-core librdmacm/examples/rping.c, struct rping_rdma_info):
// one 16-octet Send { be64 buf; be32 rkey; be32 size; } that names a buffer of the sender's
// (its address, which rping uses as the TO of its first octet, its STag and its length) for the
// peer to RDMA Read or Write. The codec and the rule for taking a captured Send to be one live
// here once: the analyzer's decoder (advert.h), the rping and scripted endpoints, replay and
// the synthetic generator all use them.
#pragma once

#include <cstdint>
#include <optional>

#include "ddpscope/common/bytes.h"

namespace ddpscope::ulp {

struct RpingInfo {
  std::uint64_t buf = 0;   // address of the buffer: the TO of its first octet
  std::uint32_t rkey = 0;  // STag
  std::uint32_t size = 0;  // octets
  static constexpr std::size_t kSize = 16;
  bool operator==(const RpingInfo&) const = default;
};

void encode_rping_info(const RpingInfo& info, ByteWriter& out);
Bytes encode_rping_info(const RpingInfo& info);
// The fields of a message of exactly kSize octets; nullopt for any other size. Shape only, no
// plausibility: an rping peer takes what it is sent.
std::optional<RpingInfo> decode_rping_info(ByteView message);

// --- When a Send is taken to be an advertisement ----------------------------------------------
// rping says nothing on the wire that marks its SEND, and any 16-octet Send has the right size
// (an NVMe-oF completion, for one), so the fields must look like rping's: a buffer mapped in
// user space and of a size rping can allocate.

// End of the canonical x86-64 / AArch64 user address space (48-bit virtual addresses).
inline constexpr std::uint64_t kRpingUserSpaceEnd = std::uint64_t{1} << 47;
// Largest buffer taken to be rping's: far above what rping allocates, low enough to turn away
// the lengths unrelated 16-octet Sends decode to.
inline constexpr std::uint32_t kRpingMaxSize = std::uint32_t{1} << 30;
// NVMe-oF's well-known port (IANA "nvme"): its 16-octet completions are not advertisements,
// whatever their fields say.
inline constexpr std::uint16_t kNvmeOfPort = 4420;

// A non-empty buffer of at most kRpingMaxSize octets, starting at a non-zero address and lying
// wholly below kRpingUserSpaceEnd.
bool rping_info_plausible(const RpingInfo& info);
// Neither end of the connection is on kNvmeOfPort. Port 0 stands for "not known" and passes.
bool rping_ports_plausible(std::uint16_t sender_port, std::uint16_t receiver_port);
// The whole rule for one complete untagged message: a Send (any of the four Send opcodes, RFC
// 5040 §4.1) of exactly kSize octets whose fields and ports are plausible.
std::optional<RpingInfo> rping_advertisement(std::uint8_t opcode, std::uint16_t sender_port,
                                             std::uint16_t receiver_port, ByteView message);

}  // namespace ddpscope::ulp
