// SPDX-License-Identifier: GPL-2.0-or-later
// What the ULP decoder tests share: a SEND's AdvertContext between two fixed endpoints, an iSER
// Login Request, and the findings of one code in a model.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ddpscope/analysis/analyzer.h"
#include "ddpscope/ulp/advert.h"
#include "ddpscope/ulp/iser.h"
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

// An iSCSI Login Request over iSER (the initiator's first message), naming both ends.
inline Bytes iser_login_request() {
  ulp::IscsiBhs b;
  b.opcode = ulp::iscsi_opcode::login_request;
  b.immediate = true;
  b.flags = 0x87;  // T, CSG 1, NSG 3
  const std::string text = std::string("InitiatorName=iqn.2026-12.org.example:host") + '\0' +
                           "TargetName=iqn.2026-12.org.example:disk" + '\0';
  b.data_length = static_cast<std::uint32_t>(text.size());
  Bytes m = ulp::encode_iser_header(ulp::IserHeader{});
  const Bytes pdu = ulp::encode_iscsi_bhs(b);
  m.insert(m.end(), pdu.begin(), pdu.end());
  m.insert(m.end(), text.begin(), text.end());
  return m;
}

inline std::vector<const Finding*> of(const Model& m, std::string_view code) {
  std::vector<const Finding*> out;
  for (const auto& f : m.findings)
    if (f.code() == code) out.push_back(&f);
  return out;
}

}  // namespace ddpscope::test
