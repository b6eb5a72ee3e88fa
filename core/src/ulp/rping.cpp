// SPDX-License-Identifier: GPL-2.0-or-later
// rping's buffer advertisement: codec and plausibility rule (see rping.h).
#include "ddpscope/ulp/rping.h"

#include "ddpscope/wire/rdmap.h"

namespace ddpscope::ulp {

void encode_rping_info(const RpingInfo& info, ByteWriter& out) {
  out.be64(info.buf);
  out.be32(info.rkey);
  out.be32(info.size);
}

Bytes encode_rping_info(const RpingInfo& info) {
  Bytes b;
  b.reserve(RpingInfo::kSize);
  ByteWriter w(b);
  encode_rping_info(info, w);
  return b;
}

std::optional<RpingInfo> decode_rping_info(ByteView message) {
  if (message.size() != RpingInfo::kSize) return std::nullopt;
  ByteReader r(message);
  RpingInfo info;
  info.buf = r.be64();
  info.rkey = r.be32();
  info.size = r.be32();
  return info;
}

bool rping_info_plausible(const RpingInfo& info) {
  if (info.buf == 0 || info.size == 0 || info.size > kRpingMaxSize) return false;
  return info.buf < kRpingUserSpaceEnd && info.size <= kRpingUserSpaceEnd - info.buf;
}

bool rping_ports_plausible(std::uint16_t sender_port, std::uint16_t receiver_port) {
  return sender_port != kNvmeOfPort && receiver_port != kNvmeOfPort;
}

std::optional<RpingInfo> rping_advertisement(std::uint8_t opcode, std::uint16_t sender_port,
                                             std::uint16_t receiver_port, ByteView message) {
  if (!wire::opcode_is_send_family(opcode)) return std::nullopt;
  const auto info = decode_rping_info(message);
  if (!info || !rping_info_plausible(*info) || !rping_ports_plausible(sender_port, receiver_port))
    return std::nullopt;
  return info;
}

}  // namespace ddpscope::ulp
