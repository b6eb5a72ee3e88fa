// SPDX-License-Identifier: GPL-2.0-or-later
#include "ddpscope/ulp/advert.h"

#include <bit>
#include <cstdio>
#include <stdexcept>

#include "ddpscope/ulp/iser.h"
#include "ddpscope/ulp/nvmeof.h"
#include "ddpscope/ulp/rpcrdma.h"
#include "ddpscope/ulp/rping.h"
#include "ddpscope/ulp/smbdirect.h"
#include "ddpscope/wire/rdmap.h"

namespace ddpscope {

std::size_t RpingAdvertisementDecoder::message_size() const {
  return ulp::RpingInfo::kSize;
}

void RpingAdvertisementDecoder::decode(const AdvertContext& ctx, UlpStreamState*, ByteView message,
                                       UlpEvents& out) const {
  // rping's SEND is its 16-octet advertisement alone: any other size is none (the size
  // decode_rping_info asks for, checked here before a call per message into rping.cpp).
  if (message.size() != ulp::RpingInfo::kSize) return;
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

std::string ulp_message_name(std::string_view ulp, const UlpEvents& events,
                             const std::function<std::string(std::uint64_t)>& command_name) {
  std::string out;
  const auto add = [&](const std::string& part) {
    if (!out.empty()) out += "; ";
    out += part;
  };
  for (const UlpCommand& c : events.commands)
    add(c.name);
  for (const UlpCompletion& c : events.completions) {
    const std::string cmd = command_name ? command_name(c.id) : std::string();
    add("completion of " + (cmd.empty() ? std::string(ulp) + " id " + std::to_string(c.id) : cmd) +
        (c.success || c.status.empty() ? std::string() : ", " + c.status));
  }
  // Regions no command advertised (rping's buffer): named by their STag.
  for (const AdvertisedRegion& r : events.regions) {
    char stag[16];
    std::snprintf(stag, sizeof stag, "0x%08x", r.stag);
    add(std::string(ulp) + " advertisement STag " + stag + ", " + std::to_string(r.length) +
        " octets");
  }
  if (out.size() > kMaxMessageName) {
    out.resize(kMaxMessageName - 3);
    // Not in the middle of a UTF-8 sequence (names are ASCII but for strings the peer sent).
    while (!out.empty() && (static_cast<unsigned char>(out.back()) & 0xC0) == 0x80)
      out.pop_back();
    if (!out.empty() && (static_cast<unsigned char>(out.back()) & 0x80)) out.pop_back();
    out += "\xE2\x80\xA6";
  }
  return out;
}

UlpStreamDecoders::UlpStreamDecoders(
    const std::vector<std::unique_ptr<AdvertisementDecoder>>& decoders)
    : decoders_(decoders) {
  // One bit per decoder (default_advertisement_decoders has five).
  if (decoders.size() > 32) throw std::length_error("more than 32 advertisement decoders");
  asked_ = decoders.size() == 32 ? ~0u : (1u << decoders.size()) - 1;
  states_.reserve(decoders.size());
  sizes_.reserve(decoders.size());
  for (const auto& d : decoders) {
    states_.push_back(d->new_stream());
    sizes_.push_back(d->message_size());
    if (sizes_.back() != 0) sized_ |= 1u << (sizes_.size() - 1);
  }
}

// A state claims only while its own decoder runs (setup or decode): asking that one state
// then is enough, and claimed() is a flag, not a walk over every decoder (it is asked for every
// untagged message).
void UlpStreamDecoders::setup(const UlpSetup& setup) {
  for (std::size_t i = 0; i < decoders_.size(); ++i) {
    UlpStreamState* const st = states_[i].get();
    decoders_[i]->setup(st, setup);
    if (!claimed_ && st && st->claimed()) claimed_ = i;
  }
}

std::vector<UlpStreamDecoders::Decoded> UlpStreamDecoders::decode(const AdvertContext& ctx,
                                                                  ByteView message) {
  std::vector<Decoded> out;
  // A claimed stream is its ULP's alone (an NVMe completion is no rping advertisement). A
  // decoder may claim the stream while decoding this message: then what others found is void.
  if (claimed_) {
    Decoded d{*claimed_, {}};
    decoders_[*claimed_]->decode(ctx, states_[*claimed_].get(), message, d.events);
    if (!d.events.empty()) out.push_back(std::move(d));
    return out;
  }
  // One event list for every decoder: most find nothing in a message, and what one found is
  // moved out (leaving the list empty for the next).
  Decoded d;
  for (std::uint32_t left = (asked_ & ~sized_) | asked_sized(message.size()); left != 0;
       left &= left - 1) {
    const auto i = static_cast<std::size_t>(std::countr_zero(left));
    UlpStreamState* const st = states_[i].get();
    decoders_[i]->decode(ctx, st, message, d.events);
    if (st && st->claimed()) {
      claimed_ = i;
      out.clear();
      if (!d.events.empty()) {
        d.decoder = i;
        out.push_back(std::move(d));
      }
      return out;
    }
    if (!d.events.empty()) {
      d.decoder = i;
      out.push_back(std::move(d));
      d.events = UlpEvents{};
    }
  }
  if (opening_msn_ != 0 && ctx.msn == opening_msn_) judge_opening(ctx, message);
  return out;
}

// The initiator's opening message, which no decoder claimed the stream on: a decoder whose ULP
// cannot open so (its may_open) is not asked again. Judged once, on a whole message the MSN says
// is the initiator's first Send (capture loss before it leaves the stream unjudged: MSN 1 never
// comes, or comes damaged and is not decoded), so the rule-out follows from the ULPs' own rules,
// not from where the capture started.
void UlpStreamDecoders::judge_opening(const AdvertContext& ctx, ByteView message) {
  if (ctx.from_initiator != true) return;
  if (ctx.length == 0) {  // an RTR (RFC 6581) or an empty Send opens nothing
    opening_msn_ = ctx.msn + 1;
    return;
  }
  opening_msn_ = 0;
  if (!wire::opcode_is_send_family(ctx.opcode)) return;  // no ULP opens with another message
  if (message.size() != ctx.length) return;              // not all of it at hand
  for (std::uint32_t left = asked_; left != 0; left &= left - 1) {
    const auto i = static_cast<std::size_t>(std::countr_zero(left));
    if (!decoders_[i]->may_open(ctx, states_[i].get(), message)) asked_ &= ~(1u << i);
  }
}

}  // namespace ddpscope
