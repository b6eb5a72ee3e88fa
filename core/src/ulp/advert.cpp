// SPDX-License-Identifier: GPL-2.0-or-later
#include "ddpscope/ulp/advert.h"

#include "ddpscope/wire/mpa.h"
#include "ddpscope/wire/rdmap.h"

namespace ddpscope {

void RpingAdvertisementDecoder::decode(const AdvertContext& ctx, ByteView message,
                                       std::vector<AdvertisedRegion>& out) const {
  if (!wire::opcode_is_send_family(ctx.opcode) || message.size() != 16) return;
  ByteReader r(message);
  AdvertisedRegion region;
  region.base = r.be64();
  region.stag = r.be32();
  region.length = r.be32();
  region.owner = ctx.sender.addr;
  // rping buffers are small and mapped in user space: a canonical x86-64/AArch64 user address
  // (below 2^47). Other 16-octet Sends (an NVMe-oF completion, for one) mostly fail this.
  constexpr std::uint64_t kUserSpaceEnd = 1ull << 47;
  if (region.base == 0 || region.length == 0 || region.length > (1u << 30)) return;
  if (region.base >= kUserSpaceEnd || region.length > kUserSpaceEnd - region.base) return;
  // NVMe-oF's well-known port: its 16-octet completions are not advertisements.
  if (ctx.sender.port == 4420 || ctx.receiver.port == 4420) return;
  out.push_back(region);
}

std::vector<std::unique_ptr<AdvertisementDecoder>> default_advertisement_decoders() {
  std::vector<std::unique_ptr<AdvertisementDecoder>> d;
  d.push_back(std::make_unique<RpingAdvertisementDecoder>());
  return d;
}

}  // namespace ddpscope
