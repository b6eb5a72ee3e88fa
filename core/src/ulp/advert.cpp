// SPDX-License-Identifier: GPL-2.0-or-later
#include "ddpscope/ulp/advert.h"

#include "ddpscope/ulp/iser.h"
#include "ddpscope/ulp/nvmeof.h"
#include "ddpscope/ulp/rpcrdma.h"
#include "ddpscope/ulp/rping.h"
#include "ddpscope/ulp/smbdirect.h"

namespace ddpscope {

void RpingAdvertisementDecoder::decode(const AdvertContext& ctx, UlpStreamState*, ByteView message,
                                       UlpEvents& out) const {
  const auto info =
      ulp::rping_advertisement(ctx.opcode, ctx.sender.port, ctx.receiver.port, message);
  if (!info) return;
  AdvertisedRegion region;
  region.stag = info->rkey;
  region.base = info->buf;
  region.length = info->size;
  region.owner = ctx.sender.addr;
  region.per_connection = true;
  out.regions.push_back(region);
}

std::vector<std::unique_ptr<AdvertisementDecoder>> default_advertisement_decoders() {
  std::vector<std::unique_ptr<AdvertisementDecoder>> d;
  // A decoder that recognises its stream by set-up or content comes before rping, whose
  // advertisement is recognised by its shape alone.
  d.push_back(std::make_unique<ulp::NvmeRdmaDecoder>());
  d.push_back(std::make_unique<ulp::IserDecoder>());
  d.push_back(std::make_unique<ulp::RpcRdmaDecoder>());
  d.push_back(std::make_unique<ulp::SmbDirectDecoder>());
  d.push_back(std::make_unique<RpingAdvertisementDecoder>());
  return d;
}

UlpStreamDecoders::UlpStreamDecoders(
    const std::vector<std::unique_ptr<AdvertisementDecoder>>& decoders)
    : decoders_(decoders) {
  states_.reserve(decoders.size());
  for (const auto& d : decoders)
    states_.push_back(d->new_stream());
}

void UlpStreamDecoders::setup(const UlpSetup& setup) {
  for (std::size_t i = 0; i < decoders_.size(); ++i)
    decoders_[i]->setup(states_[i].get(), setup);
}

std::optional<std::size_t> UlpStreamDecoders::claimed() const {
  if (claimed_) return claimed_;
  for (std::size_t i = 0; i < states_.size(); ++i)
    if (states_[i] && states_[i]->claimed()) return claimed_ = i;
  return std::nullopt;
}

std::vector<UlpStreamDecoders::Decoded> UlpStreamDecoders::decode(const AdvertContext& ctx,
                                                                  ByteView message) {
  std::vector<Decoded> out;
  // A claimed stream is its ULP's alone (an NVMe completion is no rping advertisement). A
  // decoder may claim the stream while decoding this message: then what others found is void.
  const auto before = claimed();
  for (std::size_t i = 0; i < decoders_.size(); ++i) {
    if (before && *before != i) continue;
    Decoded d{i, {}};
    decoders_[i]->decode(ctx, states_[i].get(), message, d.events);
    const auto now = claimed();
    if (now && !before) {
      out.clear();
      if (*now == i && !d.events.empty()) out.push_back(std::move(d));
      return out;
    }
    if (!d.events.empty()) out.push_back(std::move(d));
  }
  return out;
}

}  // namespace ddpscope
