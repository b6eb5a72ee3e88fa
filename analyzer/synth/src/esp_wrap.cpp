// SPDX-License-Identifier: GPL-2.0-or-later
#include "esp_wrap.h"

#include <algorithm>
#include <map>
#include <memory>

#include "ddpscope/esp/crypto.h"
#include "emitter.h"

namespace ddpscope::synth {
namespace {

struct Parsed {
  std::size_t ip = 0;  // offset of the IP header
  bool v6 = false;
  std::size_t ip_header = 0;
  net::Endpoint src, dst;
};

// The generator's own frames: Ethernet (one optional 802.1Q tag), IPv4 without options or IPv6
// without extension headers, TCP.
std::optional<Parsed> parse(const Bytes& f) {
  Parsed p;
  p.ip = 14;
  if (f.size() < 14) return std::nullopt;
  std::uint16_t type = load_be16(&f[12]);
  if (type == 0x8100) {
    if (f.size() < 18) return std::nullopt;
    type = load_be16(&f[16]);
    p.ip = 18;
  }
  p.v6 = type == 0x86DD;
  p.ip_header = p.v6 ? 40 : 20;
  if (f.size() < p.ip + p.ip_header + 4) return std::nullopt;
  const std::size_t a = p.v6 ? 8 : 12, n = p.v6 ? 16 : 4;
  p.src.addr.v6 = p.dst.addr.v6 = p.v6;
  std::copy_n(&f[p.ip + a], n, p.src.addr.bytes.begin());
  std::copy_n(&f[p.ip + a + n], n, p.dst.addr.bytes.begin());
  p.src.port = load_be16(&f[p.ip + p.ip_header]);
  p.dst.port = load_be16(&f[p.ip + p.ip_header + 2]);
  return p;
}

void put16(Bytes& b, std::size_t at, std::uint16_t v) {
  b[at] = static_cast<std::uint8_t>(v >> 8);
  b[at + 1] = static_cast<std::uint8_t>(v);
}

struct Sa {
  esp::SecurityAssociation sa;
  std::unique_ptr<esp::SaCrypto> crypto;
  net::Address src, dst;
  std::uint64_t next = 1;
  bool used = false;  // its first packet (the profile check's) has been emitted
};

}  // namespace

EspWrapped esp_wrap(const Scenario& s, Generated& g) {
  const EspSpec& e = *s.esp;
  std::vector<bool> protect(s.connections.size(), e.connections.empty());
  for (int c : e.connections)
    protect[static_cast<std::size_t>(c)] = true;
  std::map<std::pair<net::Address, net::Address>, Sa> sas;
  std::vector<std::pair<net::Address, net::Address>> order;
  auto sa_for = [&](const net::Address& src, const net::Address& dst, bool client) -> Sa& {
    auto key = std::make_pair(src, dst);
    auto it = sas.find(key);
    if (it != sas.end()) return it->second;
    // A second pair of outer addresses (transport mode, several hosts) gets SPIs of its own.
    const std::uint32_t step = static_cast<std::uint32_t>(order.size() / 2) * 0x10;
    Sa x;
    x.sa.origin = "scenario esp";
    x.sa.v6 = src.v6;
    x.sa.src = esp::AddressMatch{false, src, src.v6 ? 128u : 32u};
    x.sa.dst = esp::AddressMatch{false, dst, dst.v6 ? 128u : 32u};
    x.sa.spi = (client ? e.spi_client : e.spi_server) + step;
    x.sa.cipher = e.cipher;
    x.sa.enc_key = e.enc_key;
    x.sa.integrity = e.integrity;
    x.sa.auth_key = e.auth_key;
    x.sa.esn = e.esn;
    x.sa.replay_window = e.replay_window;
    x.sa.mode = e.mode;
    x.sa.udp_encap = e.udp_encap;
    x.crypto = std::make_unique<esp::SaCrypto>(x.sa);
    if (!x.crypto->error().empty()) throw GenerateError("esp: " + x.crypto->error());
    x.src = src;
    x.dst = dst;
    x.next = e.first_seq;
    order.push_back(key);
    return sas.emplace(key, std::move(x)).first->second;
  };

  struct Out {
    GeneratedFrame f;
    std::optional<ExpectedFinding> expect;
  };
  std::vector<Out> out;
  std::vector<std::uint64_t> renumber(g.frames.size() + 1, 0);
  struct Pending {
    std::size_t due;  // emit after this original frame index
    GeneratedFrame f;
    std::uint64_t original;
    std::string where;
  };
  std::vector<Pending> replays;
  std::vector<std::uint64_t> clear_first(s.connections.size(), 0);  // first clear payload frame

  // The ESP form of original frame `i` with the SA's next sequence number.
  auto seal = [&](std::size_t i, bool bad_padding, Sa** used) -> std::optional<Bytes> {
    const Bytes& f = g.frames[i].data;
    const auto p = parse(f);
    if (!p) return std::nullopt;
    int conn = -1, dir = 0;
    for (std::size_t c = 0; c < s.connections.size(); ++c) {
      const auto& cs = s.connections[c];
      if (p->src == cs.client && p->dst == cs.server) conn = static_cast<int>(c), dir = 0;
      if (p->src == cs.server && p->dst == cs.client) conn = static_cast<int>(c), dir = 1;
    }
    if (conn < 0 || !protect[static_cast<std::size_t>(conn)]) return std::nullopt;
    const bool tunnel = e.mode == "tunnel";
    net::Address osrc = p->src.addr, odst = p->dst.addr;
    if (tunnel) {
      const bool v6 = e.tunnel_client ? e.tunnel_client->v6 : p->v6;
      net::Address gc = e.tunnel_client.value_or(v6 ? *net::Address::parse("2001:db8:ff::1")
                                                    : *net::Address::parse("192.0.2.1"));
      net::Address gs = e.tunnel_server.value_or(v6 ? *net::Address::parse("2001:db8:ff::2")
                                                    : *net::Address::parse("192.0.2.2"));
      osrc = dir == 0 ? gc : gs;
      odst = dir == 0 ? gs : gc;
    }
    Sa& sa = sa_for(osrc, odst, dir == 0);
    *used = &sa;
    const ByteView inner =
        tunnel ? ByteView(f).subspan(p->ip) : ByteView(f).subspan(p->ip + p->ip_header);
    const std::uint8_t nh = tunnel ? (p->v6 ? 41 : 4) : 6;
    const std::uint64_t seq = sa.next++;
    Bytes iv(esp::iv_size(e.cipher));
    for (std::size_t k = 0; k < iv.size(); ++k)  // deterministic, distinct per packet
      iv[k] = static_cast<std::uint8_t>((seq >> (8 * (k % 8))) ^ (0x5c + 29 * k) ^ sa.sa.spi);
    Bytes body = sa.crypto->seal(static_cast<std::uint32_t>(seq),
                                 static_cast<std::uint32_t>(seq >> 32), inner, nh, iv, bad_padding);
    if (e.udp_encap) {  // RFC 3948 §2.1: UDP header, source and destination port 4500
      Bytes u(8, 0);
      put16(u, 0, 4500);
      put16(u, 2, 4500);
      put16(u, 4, static_cast<std::uint16_t>(8 + body.size()));
      body.insert(body.begin(), u.begin(), u.end());
    }
    const std::uint8_t proto = e.udp_encap ? 17 : 50;
    Bytes frame(f.begin(), f.begin() + static_cast<std::ptrdiff_t>(p->ip));
    frame[p->ip - 2] = osrc.v6 ? 0x86 : 0x08;
    frame[p->ip - 1] = osrc.v6 ? 0xDD : 0x00;
    Bytes ip;
    if (!osrc.v6) {
      if (!tunnel) {
        ip.assign(f.begin() + static_cast<std::ptrdiff_t>(p->ip),
                  f.begin() + static_cast<std::ptrdiff_t>(p->ip + 20));
      } else {
        ip = {0x45, 0, 0, 0, 0, 0, 0x40, 0, 64, 0, 0, 0};
        ip.insert(ip.end(), osrc.bytes.begin(), osrc.bytes.begin() + 4);
        ip.insert(ip.end(), odst.bytes.begin(), odst.bytes.begin() + 4);
        put16(ip, 4, static_cast<std::uint16_t>(i + 1));
      }
      put16(ip, 2, static_cast<std::uint16_t>(20 + body.size()));
      ip[9] = proto;
      ip[10] = ip[11] = 0;
      std::uint32_t sum = 0;
      for (std::size_t k = 0; k < 20; k += 2)
        sum += load_be16(&ip[k]);
      while (sum >> 16)
        sum = (sum & 0xFFFF) + (sum >> 16);
      put16(ip, 10, static_cast<std::uint16_t>(~sum));
    } else {
      ip = {0x60, 0, 0, 0, 0, 0, proto, 64};
      ip.insert(ip.end(), osrc.bytes.begin(), osrc.bytes.end());
      ip.insert(ip.end(), odst.bytes.begin(), odst.bytes.end());
      put16(ip, 4, static_cast<std::uint16_t>(body.size()));
    }
    frame.insert(frame.end(), ip.begin(), ip.end());
    frame.insert(frame.end(), body.begin(), body.end());
    return frame;
  };

  auto fault_at = [&](const EspFault& x) -> std::size_t {
    if (x.frame > g.frames.size())
      throw GenerateError(x.where + ": frame " + std::to_string(x.frame) + " past the capture's " +
                          std::to_string(g.frames.size()));
    return static_cast<std::size_t>(x.frame - 1);
  };
  for (std::size_t i = 0; i < g.frames.size(); ++i) {
    for (const EspFault& x : e.faults) {
      if (x.kind == EspFault::Kind::replay || fault_at(x) != i) continue;
      Sa* sa = nullptr;
      auto b = seal(i, x.kind == EspFault::Kind::bad_padding, &sa);
      if (!b) throw GenerateError(x.where + ": frame " + std::to_string(x.frame) + " is not ESP");
      if (x.kind == EspFault::Kind::icv) b->back() ^= 0x01;
      Out o{{g.frames[i].ts_ns, std::move(*b)}, ExpectedFinding{}};
      o.expect->code = x.kind == EspFault::Kind::icv ? "esp.icv-mismatch" : "esp.decrypt-invalid";
      o.expect->detail =
          x.kind == EspFault::Kind::icv
              ? "a copy of frame " + std::to_string(x.frame) + " with an ICV bit flipped"
              : "a copy of frame " + std::to_string(x.frame) +
                    " with bad padding under a valid ICV";
      out.push_back(std::move(o));
    }
    Sa* sa = nullptr;
    auto b = seal(i, false, &sa);
    Out o;
    o.f.ts_ns = g.frames[i].ts_ns;
    if (g.frames[i].receiver_drop) {
      // The packet itself arrives altered: its receiver drops it (RFC 4303 §3.4.4) and TCP
      // retransmits it (the TCP fault receiver_drop placed the retransmission and held the ACKs).
      if (!b)
        throw GenerateError("tcp fault receiver_drop: frame " + std::to_string(i + 1) +
                            " is not ESP (receiver_drop needs the connection under esp)");
      b->back() ^= 0x01;
      o.expect = ExpectedFinding{"esp.icv-mismatch", 0, false, -1,
                                 "frame " + std::to_string(i + 1) +
                                     " with an ICV bit flipped: its receiver drops it, TCP "
                                     "retransmits it"};
    }
    if (b) {
      o.f.data = std::move(*b);
      if (!sa->used && !e.keys_given) {  // (a data segment is never an SA's first packet)
        sa->used = true;
        o.expect =
            ExpectedFinding{"esp.unknown-spi", 0, false, -1, "the SA's first packet, no key given"};
      } else if (!sa->used) {
        sa->used = true;
        if (!esp::profile_violation(sa->sa, e.require_confidentiality).empty())
          o.expect = ExpectedFinding{"esp.profile-violation", 0, false, -1,
                                     "the SA's first packet: " +
                                         esp::profile_violation(sa->sa, e.require_confidentiality)};
      }
    } else {
      o.f.data = g.frames[i].data;
      const net::FrameDecode d = net::decode_frame(
          1, g.frames[i].data, static_cast<std::uint32_t>(g.frames[i].data.size()));
      if (e.require_esp && d.status == net::FrameStatus::tcp && !d.tcp.payload.empty()) {
        for (std::size_t c = 0; c < s.connections.size(); ++c) {
          const auto& cs = s.connections[c];
          const bool mine = (d.tcp.src == cs.client && d.tcp.dst == cs.server) ||
                            (d.tcp.src == cs.server && d.tcp.dst == cs.client);
          if (mine && clear_first[c] == 0) {
            clear_first[c] = i + 1;
            o.expect = ExpectedFinding{"esp.unprotected", 0, false, -1,
                                       "connection " + std::to_string(c) + " in the clear"};
          }
        }
      }
    }
    const bool esp_frame = b.has_value();
    const Bytes copy = o.f.data;
    out.push_back(std::move(o));
    renumber[i + 1] = out.size();
    for (const EspFault& x : e.faults)
      if (x.kind == EspFault::Kind::replay && fault_at(x) == i) {
        if (!esp_frame)
          throw GenerateError(x.where + ": frame " + std::to_string(x.frame) + " is not ESP");
        replays.push_back(
            Pending{i + x.after, GeneratedFrame{g.frames[i].ts_ns, copy}, x.frame, x.where});
      }
    for (auto it = replays.begin(); it != replays.end();) {
      if (it->due != i && !(i + 1 == g.frames.size() && it->due >= i)) {
        ++it;
        continue;
      }
      Out r{it->f, ExpectedFinding{"esp.replay", 0, false, -1,
                                   "an exact copy of frame " + std::to_string(it->original)}};
      out.push_back(std::move(r));
      it = replays.erase(it);
    }
  }
  for (auto& x : g.expected)
    x.frame = x.frame < renumber.size() ? renumber[x.frame] : x.frame;
  g.frames.clear();
  for (std::size_t n = 0; n < out.size(); ++n) {
    if (out[n].expect) {
      out[n].expect->frame = n + 1;
      g.expected.push_back(*out[n].expect);
    }
    g.frames.push_back(std::move(out[n].f));
  }
  std::stable_sort(
      g.expected.begin(), g.expected.end(),
      [](const ExpectedFinding& a, const ExpectedFinding& b) { return a.frame < b.frame; });
  EspWrapped w;
  for (const auto& k : order) {
    Sa& x = sas.at(k);
    // Where the SA got to, as ip -s xfrm state shows it after the capture.
    if (x.sa.esn) x.sa.esn_hi_hint = static_cast<std::uint32_t>((x.next - 1) >> 32);
    w.sas.push_back(x.sa);
    w.outer.push_back(k);
  }
  return w;
}

}  // namespace ddpscope::synth
