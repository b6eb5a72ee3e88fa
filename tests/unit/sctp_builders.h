// SPDX-License-Identifier: GPL-2.0-or-later
// One SCTP association fed into an Analyzer as real frames (Ethernet, IP or UDP, SCTP with its
// CRC32c), one packet per call: INIT / INIT ACK with the DDP adaptation indication, DATA chunks
// (whole or fragmented user messages, unordered as RFC 5043 §4 sends them), SACK, SHUTDOWN, and
// the DDP adaptation's messages: each opens with the side's next DDP-SSN (RFC 5043 §5.2.1).
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <vector>

#include "ddpscope/analysis/analyzer.h"
#include "ddpscope/net/packet.h"
#include "ddpscope/wire/rdmap.h"
#include "ddpscope/wire/sctp.h"

namespace ddpscope::sctptest {

inline Bytes ulpdu(const wire::DdpHeader& h, ByteView body) {
  Bytes u;
  ByteWriter w(u);
  wire::encode_ddp_header(h, w);
  w.bytes(body);
  return u;
}

class Association {
 public:
  explicit Association(Analyzer& an, bool v6 = false, bool udp = false) : an_(an) {
    addr_[0] = *net::Address::parse(v6 ? "2001:db8::1" : "10.0.0.1");
    addr_[1] = *net::Address::parse(v6 ? "2001:db8::2" : "10.0.0.2");
    udp_ = udp;
  }
  std::array<std::uint16_t, 2> port{5000, 7000};
  std::array<std::uint32_t, 2> tag{0xA1A1A1A1, 0xB2B2B2B2};  // each side's Initiate Tag
  std::array<std::uint32_t, 2> tsn{100, 9000};               // next TSN each side sends
  std::uint16_t stream_id = 1;
  // The next DDP-SSN each side sends, per SCTP stream (RFC 5043 §5.2.1).
  std::map<std::uint16_t, std::array<std::uint16_t, 2>> ddp_ssns;
  std::uint16_t next_ssn(int dir) { return ddp_ssns[stream_id][dir]++; }
  bool unordered = true;  // U on DATA chunks (RFC 5043 §4: always)
  std::uint64_t frame = 0;
  bool corrupt_next = false;             // the next packet's checksum is wrong
  bool zero_checksum = false;            // packets carry checksum 0 (offload, sender's capture)
  std::vector<Bytes>* frames = nullptr;  // when set, every frame fed is also kept here

  // Feeds one packet from `dir` holding `chunks`; returns its frame number.
  std::uint64_t packet(int dir, const Bytes& chunks, std::uint32_t vtag_override = 0xFFFFFFFF) {
    wire::SctpCommonHeader h;
    h.source_port = port[dir];
    h.destination_port = port[1 - dir];
    h.verification_tag = vtag_override != 0xFFFFFFFF ? vtag_override : tag[1 - dir];
    Bytes p = wire::encode_sctp_packet(h, chunks);
    if (corrupt_next) {
      p.back() ^= 0x40;
      corrupt_next = false;
    }
    if (zero_checksum) std::fill(p.begin() + 8, p.begin() + 12, std::uint8_t{0});
    net::SctpFrameSpec s;
    s.src = addr_[dir];
    s.dst = addr_[1 - dir];
    s.over_udp = udp_;
    const Bytes f = net::encode_sctp_frame(s, p);
    if (frames != nullptr) frames->push_back(f);
    ++frame;
    an_.feed_frame(frame, static_cast<std::int64_t>(frame) * 1000, 1, f,
                   static_cast<std::uint32_t>(f.size()));
    return frame;
  }
  // INIT, INIT ACK (both with the DDP adaptation indication), COOKIE ECHO, COOKIE ACK.
  void setup(bool adaptation = true) {
    for (int d = 0; d < 2; ++d) {
      wire::SctpInit init;
      init.ack = d == 1;
      init.initiate_tag = tag[d];
      init.a_rwnd = 1 << 20;
      init.outbound_streams = 16;
      init.inbound_streams = 16;
      init.initial_tsn = tsn[d];
      if (adaptation)
        init.parameters.push_back(wire::sctp_adaptation_parameter(wire::kAdaptationCodePointDdp));
      if (d == 1) init.parameters.push_back({wire::sctp_param::state_cookie, Bytes(8, 0xCC)});
      Bytes c;
      wire::encode_sctp_init(init, c);
      packet(d, c, d == 0 ? 0 : 0xFFFFFFFF);
    }
    Bytes ce;
    wire::encode_sctp_cookie_echo(Bytes(8, 0xCC), ce);
    packet(0, ce);
    Bytes ca;
    wire::encode_sctp_cookie_ack(ca);
    packet(1, ca);
  }
  // One DATA chunk (its TSN taken from tsn[dir]).
  Bytes data_chunk(int dir, ByteView payload, std::uint32_t ppid, bool b = true, bool e = true,
                   std::optional<bool> u = std::nullopt, std::uint16_t ssn = 0) {
    wire::SctpData d;
    d.beginning = b;
    d.ending = e;
    d.unordered = u.value_or(unordered);
    d.tsn = tsn[dir]++;
    d.stream_id = stream_id;
    d.ssn = ssn;
    d.ppid = ppid;
    d.user_data = payload;
    Bytes c;
    wire::encode_sctp_data(d, c);
    return c;
  }
  // A DDP segment as a PPID 16 user message: `dir`'s next DDP-SSN, then the segment.
  Bytes seg(int dir, ByteView ulpdu) { return wire::encode_ddp_sctp_message(next_ssn(dir), ulpdu); }
  // A DDP segment in one packet (fragmented into `fragments` chunks, bundled).
  std::uint64_t message(int dir, ByteView ulpdu, std::size_t fragments = 1) {
    return raw_message(dir, seg(dir, ulpdu), wire::kPpidDdpSegment, fragments);
  }
  // A user message as given (no DDP-SSN added) in one packet.
  std::uint64_t raw_message(int dir, ByteView payload, std::uint32_t ppid = wire::kPpidDdpSegment,
                            std::size_t fragments = 1) {
    Bytes chunks;
    const std::size_t n = payload.size();
    for (std::size_t i = 0; i < fragments; ++i) {
      const std::size_t a = n * i / fragments, b = n * (i + 1) / fragments;
      const Bytes c = data_chunk(dir, payload.subspan(a, b - a), ppid, i == 0, i + 1 == fragments);
      chunks.insert(chunks.end(), c.begin(), c.end());
    }
    return packet(dir, chunks);
  }
  std::uint64_t session(int dir, std::uint16_t fn, Bytes pd = {},
                        std::optional<wire::MpaEnhancedPd> enhanced = std::nullopt) {
    wire::DdpSessionControl m;
    m.ddp_ssn = next_ssn(dir);
    m.function_code = fn;
    m.private_data = std::move(pd);
    m.enhanced_pd = enhanced;
    return raw_message(dir, wire::encode_ddp_session_control(m), wire::kPpidDdpSessionControl);
  }
  // Initiate and Accept.
  void session_setup() {
    session(0, wire::ddp_session_fn::initiate, Bytes(4, 0x11));
    session(1, wire::ddp_session_fn::accept, Bytes(4, 0x22));
  }
  // Session Terminate from `dir`.
  std::uint64_t terminate(int dir) { return session(dir, wire::ddp_session_fn::terminate); }
  // A SACK from `dir` acknowledging everything the peer sent so far.
  std::uint64_t sack(int dir, std::optional<std::uint32_t> cum = std::nullopt) {
    wire::SctpSack s;
    s.cumulative_tsn_ack = cum.value_or(tsn[1 - dir] - 1);
    s.a_rwnd = 1 << 20;
    Bytes c;
    wire::encode_sctp_sack(s, c);
    return packet(dir, c);
  }
  std::uint64_t send(int dir, std::uint32_t msn, ByteView body, std::size_t fragments = 1) {
    return message(dir, ulpdu(wire::untagged_header(wire::Opcode::send, 0, msn, 0, true), body),
                   fragments);
  }

 private:
  Analyzer& an_;
  std::array<net::Address, 2> addr_;
  bool udp_ = false;
};

inline std::vector<std::string> codes(const Model& m) {
  std::vector<std::string> out;
  for (const auto& f : m.findings)
    out.emplace_back(f.code());
  return out;
}

}  // namespace ddpscope::sctptest
