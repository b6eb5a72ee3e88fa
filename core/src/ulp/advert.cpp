// SPDX-License-Identifier: GPL-2.0-or-later
#include "ddpscope/ulp/advert.h"

#include "ddpscope/ulp/rping.h"

namespace ddpscope {

void RpingAdvertisementDecoder::decode(const AdvertContext& ctx, ByteView message,
                                       std::vector<AdvertisedRegion>& out) const {
  const auto info =
      ulp::rping_advertisement(ctx.opcode, ctx.sender.port, ctx.receiver.port, message);
  if (!info) return;
  AdvertisedRegion region;
  region.stag = info->rkey;
  region.base = info->buf;
  region.length = info->size;
  region.owner = ctx.sender.addr;
  region.per_connection = true;
  out.push_back(region);
}

std::vector<std::unique_ptr<AdvertisementDecoder>> default_advertisement_decoders() {
  std::vector<std::unique_ptr<AdvertisementDecoder>> d;
  d.push_back(std::make_unique<RpingAdvertisementDecoder>());
  return d;
}

}  // namespace ddpscope
