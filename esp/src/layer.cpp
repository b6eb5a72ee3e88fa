// SPDX-License-Identifier: GPL-2.0-or-later
#include "ddpscope/esp/layer.h"

#include <algorithm>
#include <cstdio>

#include "ddpscope/esp/crypto.h"

namespace ddpscope::esp {
namespace {

constexpr std::uint8_t kProtoTcp = 6;
constexpr std::uint8_t kProtoUdp = 17;
constexpr std::uint8_t kProtoEsp = 50;
constexpr std::uint8_t kProtoAh = 51;
constexpr std::uint8_t kProtoIpv4 = 4;
constexpr std::uint8_t kProtoIpv6 = 41;
constexpr std::uint8_t kProtoNoNext = 59;  // RFC 4303 §2.6: a dummy packet (TFC), discarded
constexpr std::uint16_t kNatTPort = 4500;  // RFC 3948 §2
constexpr std::uint32_t kMaxWindow = 4096;
constexpr std::size_t kMaxUnknown = 4096;  // distinct SPIs remembered (hostile captures)
constexpr std::size_t kMaxDirections = 1u << 16;
constexpr std::size_t kMaxCarried = 64;  // TCP directions remembered per SA
constexpr std::uint32_t kLinkRaw = 101;

std::string hex32(std::uint32_t v) {
  char b[16];
  std::snprintf(b, sizeof b, "0x%08x", v);
  return b;
}

// Where the IP header starts, by link type (the ones net::decode_frame reads).
std::optional<std::size_t> ip_offset(std::uint32_t link, ByteView f) {
  auto ether = [&](std::size_t at, std::uint16_t type) -> std::optional<std::size_t> {
    while (type == 0x8100 || type == 0x88A8 || type == 0x9100) {
      if (f.size() < at + 4) return std::nullopt;
      type = load_be16(&f[at + 2]);
      at += 4;
    }
    if (type == 0x0800 || type == 0x86DD) return at;
    return std::nullopt;
  };
  switch (link) {
    case 1:
      if (f.size() < 14) return std::nullopt;
      return ether(14, load_be16(&f[12]));
    case 113:
      if (f.size() < 16) return std::nullopt;
      return ether(16, load_be16(&f[14]));
    case 276:
      if (f.size() < 20) return std::nullopt;
      return ether(20, load_be16(&f[0]));
    case 0:
    case 108:
      return f.size() >= 4 ? std::optional<std::size_t>(4) : std::nullopt;
    case 12:
    case 14:
    case 101:
    case 228:
    case 229:
      return 0;
    default:
      return std::nullopt;
  }
}

std::uint16_t ipv4_checksum(const std::uint8_t* h, std::size_t n) {
  std::uint32_t sum = 0;
  for (std::size_t i = 0; i + 1 < n; i += 2)
    sum += load_be16(h + i);
  while (sum >> 16)
    sum = (sum & 0xFFFF) + (sum >> 16);
  return static_cast<std::uint16_t>(~sum);
}

}  // namespace

// One SA as a receiver keeps it (RFC 4303 §3.4.3 anti-replay window, with ESN).
struct EspLayer::SaState {
  explicit SaState(const SecurityAssociation& s)
      : sa(s), crypto(s), window(std::min(s.replay_window, kMaxWindow)) {
    if (window) seen_frame.assign(window, 0);
  }
  SecurityAssociation sa;
  SaCrypto crypto;
  std::uint32_t window;
  bool any = false;                       // an authenticated packet was received
  std::uint64_t top = 0;                  // highest sequence number authenticated (64-bit with ESN)
  std::vector<std::uint64_t> seen_frame;  // by seq % window: frame of that number, 0 none
  std::vector<std::uint64_t> seen_seq;
  bool profile_checked = false;
  std::uint64_t frames = 0;
  // The TCP directions whose packets this SA carried (a tunnel's may be many; at most
  // kMaxCarried): a packet the SA drops may belong to any of them.
  std::vector<std::pair<net::Endpoint, net::Endpoint>> carried;

  // RFC 4303 Appendix A2.2: the high half of the sequence number a receiver infers.
  std::uint32_t infer_hi(std::uint32_t seq) const {
    if (!sa.esn || !any) return 0;
    const std::uint32_t th = static_cast<std::uint32_t>(top >> 32);
    const std::uint32_t tl = static_cast<std::uint32_t>(top);
    const std::uint32_t w = std::max<std::uint32_t>(window, 1);
    if (tl >= w - 1) return seq >= tl - w + 1 ? th : th + 1;
    return seq >= tl - w + 1 ? th - 1 : th;  // wraps: (Tl - W + 1) mod 2^32
  }
  // 0 when new; else the frame that had the number (or UINT64_MAX: left of the window).
  std::uint64_t replayed(std::uint64_t seq) const {
    if (!window || !any) return 0;
    if (seq > top) return 0;
    if (top - seq >= window) return UINT64_MAX;
    const std::size_t i = static_cast<std::size_t>(seq % window);
    return seen_seq.size() == window && seen_seq[i] == seq ? seen_frame[i] : 0;
  }
  void accept(std::uint64_t seq, std::uint64_t frame) {
    if (!any || seq > top) top = seq;
    any = true;
    if (!window) return;
    if (seen_seq.size() != window) seen_seq.assign(window, UINT64_MAX);
    const std::size_t i = static_cast<std::size_t>(seq % window);
    seen_seq[i] = seq;
    seen_frame[i] = frame;
  }
};

EspLayer::EspLayer(EspOptions options) : options_(std::move(options)) {
  for (const auto& sa : options_.sas) {
    auto st = std::make_unique<SaState>(sa);
    if (!st->crypto.error().empty() && error_.empty())
      error_ = sa.origin + ": " + st->crypto.error();
    by_spi_.emplace(sa.spi, sas_.size());
    sas_.push_back(std::move(st));
  }
}

EspLayer::~EspLayer() = default;

bool EspLayer::wants(const net::FrameDecode& decoded) const {
  switch (decoded.status) {
    case net::FrameStatus::tcp:
      return options_.require_esp;
    case net::FrameStatus::sctp:
      // SCTP in UDP (port 9899) from or to the NAT-T port would be ESP's on that side.
      return decoded.sctp.over_udp &&
             (decoded.sctp.udp_src_port == kNatTPort || decoded.sctp.udp_dst_port == kNatTPort);
    default:
      return true;
  }
}

const capture::Frame* EspLayer::replace(const capture::Frame& frame, capture::LayerNotes& notes) {
  return process(frame, notes);
}

// Where an ESP packet lies in a frame (process() found it, open() receives it).
struct EspLayer::Packet {
  std::size_t ip = 0;         // the outer IP header
  std::size_t ip_header = 0;  // its length (IPv6: the fixed 40 octets)
  std::size_t esp_at = 0;     // the ESP header
  std::size_t end = 0;        // the IP packet's end within the captured octets
  std::uint8_t version = 0;
  bool udp = false;  // RFC 3948 UDP encapsulation
  bool truncated = false;
};

// Per frame: finds the ESP packet, if any; most frames of a capture are none and cost only this.
const capture::Frame* EspLayer::process(const capture::Frame& frame, capture::LayerNotes& notes) {
  const ByteView f = frame.data;
  const auto off = ip_offset(frame.link_type, f);
  if (!off || *off >= f.size()) return nullptr;
  Packet p;
  p.ip = *off;
  const std::size_t ip = p.ip;
  p.version = f[ip] >> 4;
  std::size_t l4 = 0, ip_end = 0;
  std::uint8_t proto = 0;
  p.truncated = frame.wire_length > f.size();
  if (p.version == 4) {
    if (f.size() < ip + 20) return nullptr;
    p.ip_header = std::size_t{f[ip] & 0x0Fu} * 4;
    const std::size_t total = load_be16(&f[ip + 2]);
    if (p.ip_header < 20 || total < p.ip_header || f.size() < ip + p.ip_header) return nullptr;
    if (load_be16(&f[ip + 6]) & 0x3FFF) return nullptr;  // a fragment: not reassembled here
    proto = f[ip + 9];
    l4 = ip + p.ip_header;
    ip_end = ip + total;
  } else if (p.version == 6) {
    if (f.size() < ip + 40) return nullptr;
    ip_end = ip + 40 + load_be16(&f[ip + 4]);
    proto = f[ip + 6];
    l4 = ip + 40;
    p.ip_header = 40;
    // Extension headers in front of ESP (RFC 8200 §4): hop-by-hop, routing, destination options.
    for (int hops = 0; hops < 8 && (proto == 0 || proto == 43 || proto == 60 || proto == kProtoAh);
         ++hops) {
      if (f.size() < l4 + 2) return nullptr;
      const std::size_t len =
          proto == kProtoAh ? (std::size_t{f[l4 + 1]} + 2) * 4 : (std::size_t{f[l4 + 1]} + 1) * 8;
      proto = f[l4];
      l4 += len;
    }
  } else {
    return nullptr;
  }
  if (ip_end > f.size()) p.truncated = true;
  p.end = std::min(ip_end, f.size());
  if (l4 > p.end) return nullptr;
  p.esp_at = l4;
  if (proto == kProtoUdp) {
    // RFC 3948 §2.2: on port 4500 a payload whose first four octets are not zero is ESP (zero:
    // the non-ESP marker of IKE; one 0xFF octet: a NAT-keepalive).
    if (p.end < l4 + 8) return nullptr;
    const std::uint16_t sport = load_be16(&f[l4]), dport = load_be16(&f[l4 + 2]);
    if (sport != kNatTPort && dport != kNatTPort) return nullptr;
    p.esp_at = l4 + 8;
    if (p.end < p.esp_at + 8) return nullptr;
    if (load_be32(&f[p.esp_at]) == 0) return nullptr;
    p.udp = true;
  } else if (proto != kProtoEsp) {
    if (options_.require_esp && proto == kProtoTcp && clear_.size() < kMaxDirections)
      note_clear(frame);
    return nullptr;
  }
  if (p.end < p.esp_at + 8) return nullptr;
  return open(frame, p, notes);
}

// --require-esp: the direction of a TCP frame with payload was seen in the clear. Out of line,
// as open() is: process() runs for every frame and stays small.
[[gnu::noinline]] void EspLayer::note_clear(const capture::Frame& frame) {
  const net::FrameDecode d = net::decode_frame(frame.link_type, frame.data, frame.wire_length);
  if (d.status == net::FrameStatus::tcp && !d.tcp.payload.empty())
    clear_.emplace(DirKey{d.tcp.src, d.tcp.dst}, frame.number);
}

// An ESP packet, as its receiver processes it (RFC 4303 §3.4).
[[gnu::noinline]] const capture::Frame* EspLayer::open(const capture::Frame& frame, const Packet& p,
                                                       capture::LayerNotes& notes) {
  const ByteView f = frame.data;
  const std::size_t ip = p.ip, ip_header = p.ip_header, esp_at = p.esp_at, end = p.end;
  const std::uint8_t version = p.version;
  const bool udp = p.udp, truncated = p.truncated;
  net::Address src, dst;
  if (version == 4) {
    std::copy_n(&f[ip + 12], 4, src.bytes.begin());
    std::copy_n(&f[ip + 16], 4, dst.bytes.begin());
  } else {
    src.v6 = dst.v6 = true;
    std::copy_n(&f[ip + 8], 16, src.bytes.begin());
    std::copy_n(&f[ip + 24], 16, dst.bytes.begin());
  }
  const ByteView esp = f.subspan(esp_at, end - esp_at);
  const std::uint32_t spi = load_be32(&esp[0]);
  const std::uint32_t seq = load_be32(&esp[4]);
  SaState* st = nullptr;
  for (auto [it, last] = by_spi_.equal_range(spi); it != last; ++it) {
    SaState& c = *sas_[it->second];
    if (c.sa.v6 == src.v6 && c.sa.src.matches(src) && c.sa.dst.matches(dst)) {
      st = &c;
      break;
    }
  }
  // The packet in a finding's message (built only for one).
  const auto where = [&] {
    return "SPI " + hex32(spi) + " " + src.to_string() + " \u2192 " + dst.to_string() + " seq " +
           std::to_string(seq);
  };
  if (st == nullptr) {
    ++frames_without_key_;
    auto key = std::make_tuple(spi, src, dst);
    auto it = unknown_.find(key);
    if (it == unknown_.end()) {
      if (unknown_.size() >= kMaxUnknown) {
        ++unknown_dropped_;
        return nullptr;
      }
      it = unknown_.emplace(key, Unknown{spi, src.to_string(), dst.to_string(), frame.number, 0})
               .first;
    }
    ++it->second.frames;
    return nullptr;
  }
  if (truncated) {
    notes.note_finding(FindingId::capture_truncated_frame, frame.number,
                       where() +
                           ": ESP packet cut by the snaplen; not decrypted (its octets are "
                           "missing from the analysis)");
    return nullptr;
  }
  std::uint32_t hi = st->infer_hi(seq);
  const std::uint64_t seq64 = st->sa.esn ? (std::uint64_t{hi} << 32 | seq) : seq;
  // RFC 4303 §3.4.3: the replay check comes first, the window moves only after the ICV.
  if (const std::uint64_t prev = st->replayed(seq64)) {
    const std::string w = "anti-replay window " + std::to_string(st->window);
    notes.note_finding(FindingId::esp_replay, frame.number,
                       prev == UINT64_MAX
                           ? where() + ": left of the " + w + " (highest received " +
                                 std::to_string(st->top) + "); a receiver drops it"
                           : where() + ": already received in frame " + std::to_string(prev) +
                                 " (" + w + "); a receiver drops it");
    return nullptr;
  }
  Opened o = st->crypto.open(esp, hi, plain_);
  if (st->sa.esn && !st->any && o.status == Opened::Status::icv_mismatch) {
    // The SA's first packet: the receiver's high half is unknown here. Try where the SA file
    // says the SA got to, and the few high halves below it (RFC 4303 §2.2.1: only the right one
    // authenticates).
    for (std::uint32_t back = 0; back < 4 && back <= st->sa.esn_hi_hint; ++back) {
      const std::uint32_t h = st->sa.esn_hi_hint - back;
      if (h == hi) continue;
      Opened t = st->crypto.open(esp, h, plain_);
      if (t.status != Opened::Status::icv_mismatch) {
        o = std::move(t);
        hi = h;
        break;
      }
    }
  }
  // A packet the receiver drops after the replay check (RFC 4303 §3.4.4, §3.4.4.2): unlike a
  // replay, its octets were never received once, and TCP will send them again. Which of the
  // SA's TCP directions it belonged to is sealed in it: each of them is told.
  const auto dropped = [&] {
    for (const auto& [from, to] : st->carried)
      notes.note_receiver_drop(from, to);
  };
  if (o.status == Opened::Status::icv_mismatch) {
    notes.note_finding(FindingId::esp_icv_mismatch, frame.number,
                       where() + ": the ICV does not match (" +
                           integrity_name(st->sa.cipher, st->sa.integrity) + "; wrong key in " +
                           st->sa.origin + ", or the packet was altered); a receiver drops it");
    dropped();
    return nullptr;
  }
  st->accept(st->sa.esn ? (std::uint64_t{hi} << 32 | seq) : seq, frame.number);
  if (o.status == Opened::Status::invalid) {
    notes.note_finding(FindingId::esp_decrypt_invalid, frame.number,
                       where() + ": " + o.detail + "; a receiver drops it");
    dropped();
    return nullptr;
  }
  if (!st->profile_checked) {
    st->profile_checked = true;
    const SecurityAssociation& sa = st->sa;
    const std::string why = profile_violation(sa, options_.require_confidentiality);
    if (!why.empty())
      notes.note_finding(FindingId::esp_profile_violation, frame.number,
                         "SPI " + hex32(spi) + " (" + sa.origin + "): " + why);
  }
  if (o.next_header == kProtoNoNext) return nullptr;
  // The packet handed on: tunnel mode's inner packet as decrypted (in plain_), transport mode's
  // built in inner_ from the outer header and the payload.
  ByteView inner;
  const char* mode = nullptr;
  if (o.next_header == kProtoIpv4 || o.next_header == kProtoIpv6) {
    // Tunnel mode (RFC 4303 §3.1.2): the payload is the inner IP packet.
    const std::uint8_t want = o.next_header == kProtoIpv4 ? 4 : 6;
    if (o.payload.empty() || (o.payload[0] >> 4) != want) {
      notes.note_finding(FindingId::esp_decrypt_invalid, frame.number,
                         where() + ": Next Header " + std::to_string(o.next_header) + " (IPv" +
                             std::to_string(want) +
                             ") but the payload is no such packet; a receiver drops it");
      dropped();
      return nullptr;
    }
    mode = "tunnel";
    inner = o.payload;
  } else {
    // Transport mode (RFC 4303 §3.1.1): the outer header, its protocol the next header.
    mode = "transport";
    if (version == 4) {
      inner_.assign(f.begin() + static_cast<std::ptrdiff_t>(ip),
                    f.begin() + static_cast<std::ptrdiff_t>(ip + ip_header));
      const std::size_t total = ip_header + o.payload.size();
      if (total > 0xFFFF) return nullptr;
      inner_[2] = static_cast<std::uint8_t>(total >> 8);
      inner_[3] = static_cast<std::uint8_t>(total);
      inner_[9] = o.next_header;
      inner_[10] = inner_[11] = 0;
      const std::uint16_t c = ipv4_checksum(inner_.data(), ip_header);
      inner_[10] = static_cast<std::uint8_t>(c >> 8);
      inner_[11] = static_cast<std::uint8_t>(c);
    } else {
      inner_.assign(f.begin() + static_cast<std::ptrdiff_t>(ip),
                    f.begin() + static_cast<std::ptrdiff_t>(ip + 40));
      if (o.payload.size() > 0xFFFF) return nullptr;
      inner_[4] = static_cast<std::uint8_t>(o.payload.size() >> 8);
      inner_[5] = static_cast<std::uint8_t>(o.payload.size());
      inner_[6] = o.next_header;
    }
    inner_.insert(inner_.end(), o.payload.begin(), o.payload.end());
    inner = ByteView(inner_);
  }
  ++st->frames;
  frame_ = capture::Frame{
      frame.number,      frame.ts_ns, kLinkRaw, inner, static_cast<std::uint32_t>(inner.size()),
      frame.interface_id};
  const net::FrameDecode d = net::decode_frame(kLinkRaw, frame_.data, frame_.wire_length);
  if (d.status == net::FrameStatus::tcp) {
    const auto dir = std::make_pair(d.tcp.src, d.tcp.dst);
    if (st->carried.size() < kMaxCarried &&
        std::find(st->carried.begin(), st->carried.end(), dir) == st->carried.end())
      st->carried.push_back(dir);
    DirKey k{d.tcp.src, d.tcp.dst};
    auto it = protected_.find(k);
    if (it == protected_.end() && protected_.size() < kMaxDirections) {
      EspProtection p;
      p.spi = spi;
      p.mode = mode;
      p.encryption = cipher_name(st->sa.cipher, st->sa.enc_key.size());
      p.integrity = integrity_name(st->sa.cipher, st->sa.integrity);
      p.esn = st->sa.esn;
      p.udp_encap = udp;
      it = protected_.emplace(k, p).first;
    }
    if (it != protected_.end()) ++it->second.frames;
  }
  return &frame_;
}

void EspLayer::finish(Analyzer& analyzer) {
  std::vector<const Unknown*> unknown;
  for (const auto& [k, u] : unknown_)
    unknown.push_back(&u);
  std::stable_sort(unknown.begin(), unknown.end(), [](const Unknown* a, const Unknown* b) {
    return a->first_frame < b->first_frame;
  });
  for (const Unknown* u : unknown)
    analyzer.note_finding(
        FindingId::esp_unknown_spi, u->first_frame,
        "SPI " + hex32(u->spi) + " " + u->from + " \u2192 " + u->to + ": no key; " +
            std::to_string(u->frames) + (u->frames == 1 ? " ESP frame" : " ESP frames") +
            " not analysed. Pass its SA with --esp-sa FILE (Wireshark's esp_sa table) or --xfrm "
            "FILE (the output of ip -s xfrm state)");
  if (unknown_dropped_)
    analyzer.note_finding(
        FindingId::esp_unknown_spi, unknown.empty() ? 0 : unknown.back()->first_frame,
        std::to_string(unknown_dropped_) + " more ESP frames of SPIs past the first " +
            std::to_string(kMaxUnknown) + " without a key, not analysed");
  for (const auto& [k, p] : protected_)
    analyzer.note_esp(k.from, k.to, p);
  // Reports say "protected or not" per stream once ESP is in the picture: keys given, ESP seen,
  // or --require-esp; a capture without any stays reported as before.
  if (!options_.sas.empty() || options_.require_esp || !unknown_.empty() || !protected_.empty())
    analyzer.note_esp_analysed();
  if (!options_.require_esp) return;
  for (const StreamModel& s : analyzer.model().streams) {
    if (s.state == StreamState::unknown || s.state == StreamState::not_iwarp) continue;
    std::uint64_t first = 0;
    std::string dirs;
    for (const DirectionModel& d : s.dirs) {
      auto it = clear_.find(DirKey{d.from, d.to});
      if (it == clear_.end()) continue;
      if (first == 0 || it->second < first) first = it->second;
      dirs += (dirs.empty() ? "" : ", ") + d.from.to_string() + " \u2192 " + d.to.to_string();
    }
    if (first == 0) continue;
    analyzer.note_finding(FindingId::esp_unprotected, first,
                          "stream " + std::to_string(s.id) + " (" + s.client.to_string() + " -> " +
                              s.server.to_string() + ") carried iWARP in the clear (" + dirs +
                              "); --require-esp: RFC 5041 §8 and RFC 3723 require IPsec ESP",
                          s.id);
  }
}

}  // namespace ddpscope::esp
