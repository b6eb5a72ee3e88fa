// SPDX-License-Identifier: GPL-2.0-or-later
// Builders shared by the hostile tests and the caps cost harness: DDP headers, and one TCP
// connection fed straight into an Analyzer, one segment per call.
#pragma once

#include <array>
#include <cstdint>
#include <string>

#include "ddpscope/analysis/analyzer.h"
#include "ddpscope/net/packet.h"
#include "ddpscope/wire/mpa.h"
#include "ddpscope/wire/rdmap.h"

namespace ddpscope::hostile {

using wire::Opcode;

inline std::uint64_t count(const Model& m, FindingId id) {
  return m.finding_counts[static_cast<std::size_t>(id)];
}

inline bool has_limit(const Model& m, const std::string& what) {
  for (const auto& f : m.findings)
    if (f.id == FindingId::engine_limit_reached && f.message.find(what) != std::string::npos)
      return true;
  return false;
}

inline Bytes ulpdu(const wire::DdpHeader& h, ByteView body) {
  Bytes u;
  ByteWriter w(u);
  wire::encode_ddp_header(h, w);
  w.bytes(body);
  return u;
}

// One TCP connection fed straight into an Analyzer, one segment per call.
class Wire {
 public:
  explicit Wire(Analyzer& an, std::uint16_t client_port = 40000, std::uint32_t client_host = 1)
      : an_(an) {
    ep_[0] = {net::Address::v4(0x0A000000 + client_host), client_port};
    ep_[1] = {net::Address::v4(0x0A0000FE), 4791};
  }
  std::uint64_t* frame_counter = nullptr;  // shared numbering across connections
  std::array<std::uint32_t, 2> seq{1000, 5000};
  bool crc = true;

  void segment(int dir, std::uint32_t s, ByteView payload, std::uint8_t flags = net::tcp_flag::ack,
               std::uint32_t payload_length = 0) {
    net::TcpSegment t;
    t.src = ep_[dir];
    t.dst = ep_[1 - dir];
    t.seq = s;
    t.flags = flags;
    t.payload = payload;
    t.payload_length = payload_length ? payload_length : static_cast<std::uint32_t>(payload.size());
    const std::uint64_t f = frame_counter ? ++*frame_counter : ++frame_;
    an_.feed_tcp(f, static_cast<std::int64_t>(f) * 1000, t);
  }
  void send(int dir, ByteView payload) {
    segment(dir, seq[dir], payload);
    seq[dir] += static_cast<std::uint32_t>(payload.size());
  }
  void syn() {
    segment(0, seq[0]++, {}, net::tcp_flag::syn);
    segment(1, seq[1]++, {}, net::tcp_flag::syn | net::tcp_flag::ack);
  }
  // SYNs, MPA Request and Reply (revision 1: no IRD/ORD to exceed).
  void handshake(std::size_t request_pd = 0) {
    syn();
    wire::MpaReqRep req;
    req.kind = wire::MpaFrameKind::request;
    req.crc = crc;
    req.revision = 1;
    req.private_data = Bytes(request_pd, 0x11);
    send(0, wire::encode_mpa_reqrep(req));
    wire::MpaReqRep rep = req;
    rep.kind = wire::MpaFrameKind::reply;
    rep.private_data.clear();
    send(1, wire::encode_mpa_reqrep(rep));
  }
  Bytes fpdu_bytes(const wire::DdpHeader& h, ByteView body = {}) const {
    wire::FpduEncodeOptions o;
    o.crc = crc;
    return wire::encode_fpdu(ulpdu(h, body), o);
  }
  void fpdu(int dir, const wire::DdpHeader& h, ByteView body = {}) {
    send(dir, fpdu_bytes(h, body));
  }
  std::uint64_t frames() const { return frame_; }

 private:
  Analyzer& an_;
  std::array<net::Endpoint, 2> ep_;
  std::uint64_t frame_ = 0;
};

}  // namespace ddpscope::hostile
