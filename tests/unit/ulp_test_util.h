// SPDX-License-Identifier: GPL-2.0-or-later
// What the ULP decoder tests share: a SEND's AdvertContext between two fixed endpoints, and the
// findings of one code in a model.
#pragma once

#include <cstdint>
#include <string_view>
#include <utility>
#include <vector>

#include "ddpscope/analysis/analyzer.h"
#include "ddpscope/ulp/advert.h"
#include "ddpscope/wire/rdmap.h"

namespace ddpscope::test {

// A SEND of `length` octets from the client 10.0.0.1:40000 to the server 10.0.0.2:port.
inline AdvertContext send_from_client(std::uint64_t length, std::uint16_t port) {
  AdvertContext c;
  c.opcode = static_cast<std::uint8_t>(wire::Opcode::send);
  c.sender = {*net::Address::parse("10.0.0.1"), 40000};
  c.receiver = {*net::Address::parse("10.0.0.2"), port};
  c.length = length;
  return c;
}
// The same, from the server to the client.
inline AdvertContext send_from_server(std::uint64_t length, std::uint16_t port) {
  AdvertContext c = send_from_client(length, port);
  std::swap(c.sender, c.receiver);
  return c;
}

inline std::vector<const Finding*> of(const Model& m, std::string_view code) {
  std::vector<const Finding*> out;
  for (const auto& f : m.findings)
    if (f.code() == code) out.push_back(&f);
  return out;
}

}  // namespace ddpscope::test
