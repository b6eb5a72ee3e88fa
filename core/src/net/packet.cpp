// SPDX-License-Identifier: GPL-2.0-or-later
// Link, IP and TCP header decoding and encoding. Every read is bounds-checked against the
// captured octets; lengths from headers are checked against the frame's wire length.
#include "ddpscope/net/packet.h"

#include <arpa/inet.h>
#include <sys/socket.h>

#include <algorithm>
#include <cstring>

#include "ddpscope/wire/sctp.h"

namespace ddpscope::net {
namespace {

constexpr std::uint16_t ethertype_ipv4 = 0x0800;
constexpr std::uint16_t ethertype_ipv6 = 0x86DD;
constexpr std::uint16_t ethertype_vlan = 0x8100;      // IEEE 802.1Q C-tag
constexpr std::uint16_t ethertype_qinq = 0x88A8;      // IEEE 802.1ad S-tag
constexpr std::uint16_t ethertype_qinq_old = 0x9100;  // pre-standard QinQ

constexpr std::uint32_t dlt_raw_a = 12;  // DLT_RAW on some BSDs
constexpr std::uint32_t dlt_raw_b = 14;  // DLT_RAW on OpenBSD

constexpr std::uint8_t ip_proto_hop_by_hop = 0;
constexpr std::uint8_t ip_proto_tcp = 6;
constexpr std::uint8_t ip_proto_udp = 17;
constexpr std::uint8_t ip_proto_sctp = 132;
constexpr std::uint16_t sctp_udp_port = 9899;  // RFC 6951 §5.1
constexpr std::size_t udp_header = 8;
constexpr std::size_t sctp_common_header = 12;
constexpr std::uint8_t ip_proto_routing = 43;
constexpr std::uint8_t ip_proto_fragment = 44;
constexpr std::uint8_t ip_proto_esp = 50;
constexpr std::uint8_t ip_proto_ah = 51;
constexpr std::uint8_t ip_proto_no_next = 59;
constexpr std::uint8_t ip_proto_dest_opts = 60;

constexpr std::size_t ipv4_min_header = 20;
constexpr std::size_t ipv6_header = 40;
constexpr std::size_t tcp_min_header = 20;

FrameDecode fail(FrameStatus status, std::string detail) {
  FrameDecode d;
  d.status = status;
  d.detail = std::move(detail);
  return d;
}

FrameDecode not_tcp(std::string detail = {}) {
  return fail(FrameStatus::not_tcp, std::move(detail));
}

// What the link layer hands to the network layer.
struct NetworkLayer {
  enum class Kind { ipv4, ipv6, by_version } kind = Kind::by_version;
  std::size_t offset = 0;  // first octet of the IP header within the frame
};

// Skips any number of 802.1Q / 802.1ad tags starting at `offset`, where `ethertype` has
// just been read. Returns false when the frame ends inside a tag.
bool skip_vlan_tags(ByteView frame, std::size_t& offset, std::uint16_t& ethertype) {
  while (ethertype == ethertype_vlan || ethertype == ethertype_qinq ||
         ethertype == ethertype_qinq_old) {
    if (frame.size() < offset + 4) return false;
    ethertype = load_be16(&frame[offset + 2]);
    offset += 4;
  }
  return true;
}

// Maps an Ethernet-style protocol number (after tags) to the network layer.
std::optional<NetworkLayer> by_ethertype(std::uint16_t ethertype, std::size_t offset) {
  if (ethertype == ethertype_ipv4) return NetworkLayer{NetworkLayer::Kind::ipv4, offset};
  if (ethertype == ethertype_ipv6) return NetworkLayer{NetworkLayer::Kind::ipv6, offset};
  return std::nullopt;
}

// BSD loopback address families: AF_INET is 2 everywhere; AF_INET6 is 24 (NetBSD, OpenBSD),
// 28 (FreeBSD) or 30 (macOS), and a capture may come from any of them.
std::optional<NetworkLayer> by_bsd_family(std::uint32_t family) {
  if (family == 2) return NetworkLayer{NetworkLayer::Kind::ipv4, 4};
  if (family == 24 || family == 28 || family == 30)
    return NetworkLayer{NetworkLayer::Kind::ipv6, 4};
  return std::nullopt;
}

// The result of the link layer: either a network layer to decode or why not (trivially
// copyable: decode_frame builds the FrameDecode of a failure, and only for one).
struct LinkResult {
  std::optional<NetworkLayer> net;
  FrameStatus status = FrameStatus::not_tcp;  // without `net`: not_tcp, malformed or unsupported
  std::string_view cut;                       // malformed: the header the snaplen cut
};

LinkResult decode_link(std::uint32_t link_type, ByteView frame) {
  auto cut = [](std::string_view header) {
    return LinkResult{std::nullopt, FrameStatus::malformed, header};
  };
  auto ethertype_result = [](std::uint16_t ethertype, std::size_t offset) {
    return LinkResult{by_ethertype(ethertype, offset)};
  };
  switch (link_type) {
    case static_cast<std::uint32_t>(LinkType::ethernet): {
      if (frame.size() < 14) return cut("Ethernet");
      std::uint16_t ethertype = load_be16(&frame[12]);
      std::size_t offset = 14;
      if (!skip_vlan_tags(frame, offset, ethertype)) return cut("802.1Q");
      return ethertype_result(ethertype, offset);
    }
    case static_cast<std::uint32_t>(LinkType::linux_sll): {
      if (frame.size() < 16) return cut("Linux cooked (SLL)");
      std::uint16_t protocol = load_be16(&frame[14]);
      std::size_t offset = 16;
      if (!skip_vlan_tags(frame, offset, protocol)) return cut("802.1Q");
      return ethertype_result(protocol, offset);
    }
    case static_cast<std::uint32_t>(LinkType::linux_sll2): {
      if (frame.size() < 20) return cut("Linux cooked v2 (SLL2)");
      std::uint16_t protocol = load_be16(&frame[0]);
      std::size_t offset = 20;
      if (!skip_vlan_tags(frame, offset, protocol)) return cut("802.1Q");
      return ethertype_result(protocol, offset);
    }
    case static_cast<std::uint32_t>(LinkType::raw):
    case dlt_raw_a:
    case dlt_raw_b:
      return LinkResult{NetworkLayer{NetworkLayer::Kind::by_version, 0}};
    case static_cast<std::uint32_t>(LinkType::ipv4):
      return LinkResult{NetworkLayer{NetworkLayer::Kind::ipv4, 0}};
    case static_cast<std::uint32_t>(LinkType::ipv6):
      return LinkResult{NetworkLayer{NetworkLayer::Kind::ipv6, 0}};
    case static_cast<std::uint32_t>(LinkType::null): {
      if (frame.size() < 4) return cut("loopback");
      // Host order of the capturing machine, which may differ from ours: families are
      // small, so whichever reading fits in 16 bits is the right one.
      std::uint32_t le = load_le32(&frame[0]);
      std::uint32_t family = (le & 0xFFFF0000u) == 0 ? le : load_be32(&frame[0]);
      return LinkResult{by_bsd_family(family)};
    }
    case static_cast<std::uint32_t>(LinkType::loop): {
      if (frame.size() < 4) return cut("loopback");
      return LinkResult{by_bsd_family(load_be32(&frame[0]))};
    }
    default:
      return LinkResult{std::nullopt, FrameStatus::unsupported};
  }
}

// Parses TCP options (RFC 9293 §3.1) for MSS (kind 2) and timestamps (kind 8, RFC 7323).
// A malformed option list ends the parse; it does not invalidate the segment.
void parse_tcp_options(ByteView options, TcpSegment& seg) {
  std::size_t i = 0;
  while (i < options.size()) {
    std::uint8_t kind = options[i];
    if (kind == 0) break;  // end of option list
    if (kind == 1) {       // no-operation
      ++i;
      continue;
    }
    if (i + 1 >= options.size()) break;
    std::uint8_t len = options[i + 1];
    if (len < 2 || i + len > options.size()) break;
    if (kind == 2 && len == 4) seg.mss = load_be16(&options[i + 2]);
    if (kind == 8 && len == 10) seg.has_timestamps = true;
    i += len;
  }
}

// Decodes the TCP header at `offset`. `ip_payload_length` is the TCP segment length per the
// IP header; octets of the frame beyond it (Ethernet padding) are not part of the segment.
// `src` and `dst` point at the IP addresses (4 or 16 octets, `v6`). Every path returns the one
// object `d` (built in the caller's result, no copy of the segment) and the addresses are
// copied straight into it: a whole-Address reload of a local written in 4-octet pieces stalled
// on store forwarding, a measurable share of the per-frame cost. Inlined into the IP layers (as
// decode_ipv4 is into decode_frame): the calls and their frames were ~45 instructions a frame.
[[gnu::always_inline]] inline FrameDecode decode_tcp(ByteView frame, std::size_t offset,
                                                     std::uint32_t ip_payload_length,
                                                     const std::uint8_t* src,
                                                     const std::uint8_t* dst, bool v6) {
  FrameDecode d;
  auto failed = [&d](std::string detail) {
    d.status = FrameStatus::malformed;
    d.detail = std::move(detail);
  };
  std::size_t captured = std::min<std::size_t>(frame.size() - offset, ip_payload_length);
  ByteView segment = frame.subspan(offset, captured);
  if (ip_payload_length < tcp_min_header) {
    failed("IP payload of " + std::to_string(ip_payload_length) +
           " octets is shorter than a TCP header");
    return d;
  }
  if (segment.size() < tcp_min_header) {
    failed("cut by snaplen before the TCP header ended");
    return d;
  }
  std::size_t header_length = static_cast<std::size_t>(segment[12] >> 4) * 4;
  if (header_length < tcp_min_header) {
    failed("TCP data offset " + std::to_string(header_length / 4) + " is below 5");
    return d;
  }
  if (header_length > ip_payload_length) {
    failed("TCP header of " + std::to_string(header_length) + " octets exceeds the IP payload of " +
           std::to_string(ip_payload_length));
    return d;
  }
  if (segment.size() < header_length) {
    failed("cut by snaplen before the TCP header ended");
    return d;
  }
  d.status = FrameStatus::tcp;
  TcpSegment& seg = d.tcp;
  seg.src.addr.v6 = v6;
  seg.dst.addr.v6 = v6;
  // Fixed sizes: copied inline, not by a memcpy call of a variable size.
  if (v6) {
    std::memcpy(seg.src.addr.bytes.data(), src, 16);
    std::memcpy(seg.dst.addr.bytes.data(), dst, 16);
  } else {
    std::memcpy(seg.src.addr.bytes.data(), src, 4);
    std::memcpy(seg.dst.addr.bytes.data(), dst, 4);
  }
  seg.src.port = load_be16(&segment[0]);
  seg.dst.port = load_be16(&segment[2]);
  seg.seq = load_be32(&segment[4]);
  seg.ack = load_be32(&segment[8]);
  seg.flags = segment[13];
  seg.window = load_be16(&segment[14]);
  seg.options_size = static_cast<std::uint8_t>(header_length - tcp_min_header);
  parse_tcp_options(segment.subspan(tcp_min_header, header_length - tcp_min_header), seg);
  seg.payload = segment.subspan(header_length);
  seg.payload_length = ip_payload_length - static_cast<std::uint32_t>(header_length);
  return d;
}

// A UDP datagram (`datagram`, header included, as captured) on ports other than 9899 that
// carries an SCTP packet. RFC 6951 §5.1 lets the encapsulation port be configured (usrsctp
// takes any), and nothing in UDP says what it carries: the packet's CRC32c checksum (RFC 9260
// §6.8, over the whole packet) decides. A datagram of other data passes it by chance once in
// 2^32; one cut by snaplen, or with the checksum left to an offloading NIC (0), is not
// recognised (port 9899 is, whatever its checksum).
bool sctp_on_other_udp_port(ByteView datagram, std::uint16_t udp_length,
                            std::uint32_t ip_payload_length) {
  constexpr std::size_t chunk_header = 4;
  if (udp_length < udp_header + sctp_common_header + chunk_header ||
      udp_length > ip_payload_length || datagram.size() < udp_length)
    return false;
  const ByteView packet = datagram.subspan(udp_header, udp_length - udp_header);
  return load_be32(&packet[8]) != 0 && wire::sctp_checksum_ok(packet);
}

// An SCTP packet at `offset` (IP protocol 132), `ip_payload_length` octets long per the IP
// header, or a UDP datagram there that carries one (RFC 6951: port 9899 at either end, or
// another port with the packet's checksum right). Any other UDP datagram is not_tcp.
FrameDecode decode_sctp(ByteView frame, std::size_t offset, std::uint32_t ip_payload_length,
                        const std::uint8_t* src, const std::uint8_t* dst, bool v6, bool udp) {
  FrameDecode d;
  const std::size_t captured = std::min<std::size_t>(frame.size() - offset, ip_payload_length);
  ByteView packet = frame.subspan(offset, captured);
  std::uint32_t length = ip_payload_length;
  SctpDatagram& s = d.sctp;
  if (udp) {
    if (ip_payload_length < udp_header || packet.size() < udp_header) {
      return ip_payload_length < udp_header
                 ? fail(FrameStatus::malformed, "IP payload shorter than a UDP header")
                 : fail(FrameStatus::malformed, "cut by snaplen before the UDP header ended");
    }
    s.udp_src_port = load_be16(&packet[0]);
    s.udp_dst_port = load_be16(&packet[2]);
    const std::uint16_t udp_length = load_be16(&packet[4]);
    if (s.udp_src_port != sctp_udp_port && s.udp_dst_port != sctp_udp_port &&
        !sctp_on_other_udp_port(packet, udp_length, ip_payload_length))
      return not_tcp();
    if (udp_length < udp_header || udp_length > ip_payload_length) {
      return fail(FrameStatus::malformed, "UDP length " + std::to_string(udp_length) +
                                              " does not fit the IP payload of " +
                                              std::to_string(ip_payload_length));
    }
    s.over_udp = true;
    length = udp_length - static_cast<std::uint32_t>(udp_header);
    packet = packet.subspan(udp_header, std::min<std::size_t>(packet.size() - udp_header, length));
  }
  if (length < sctp_common_header) {
    return fail(FrameStatus::malformed, "SCTP packet of " + std::to_string(length) +
                                            " octets is shorter than its common header");
  }
  if (packet.size() < sctp_common_header) {
    return fail(FrameStatus::malformed, "cut by snaplen before the SCTP common header ended");
  }
  d.status = FrameStatus::sctp;
  const std::size_t addr_size = v6 ? 16 : 4;
  s.src.v6 = v6;
  s.dst.v6 = v6;
  std::memcpy(s.src.bytes.data(), src, addr_size);
  std::memcpy(s.dst.bytes.data(), dst, addr_size);
  s.packet = packet;
  s.packet_length = length;
  return d;
}

// `wire_available` is the number of octets of the IP packet on the wire (from `offset`).
[[gnu::always_inline]] inline FrameDecode decode_ipv4(ByteView frame, std::size_t offset,
                                                      std::size_t wire_available) {
  ByteView ip = frame.subspan(offset);
  if (ip.size() < ipv4_min_header) {
    return fail(FrameStatus::malformed, "cut by snaplen before the IPv4 header ended");
  }
  if ((ip[0] >> 4) != 4) {
    return fail(FrameStatus::malformed,
                "IP version " + std::to_string(ip[0] >> 4) + " where IPv4 was expected");
  }
  std::size_t header_length = static_cast<std::size_t>(ip[0] & 0x0Fu) * 4;
  if (header_length < ipv4_min_header) {
    return fail(FrameStatus::malformed,
                "IPv4 IHL " + std::to_string(header_length / 4) + " is below 5");
  }
  if (ip.size() < header_length) {
    return fail(FrameStatus::malformed, "cut by snaplen before the IPv4 header ended");
  }
  std::size_t total_length = load_be16(&ip[2]);
  // A total length of 0 is what captures of TSO/GSO super-segments show: the frame's own
  // length stands in for it.
  if (total_length == 0) total_length = std::min<std::size_t>(wire_available, 0xFFFFFFFFu);
  if (total_length < header_length) {
    return fail(FrameStatus::malformed, "IPv4 total length " + std::to_string(total_length) +
                                            " is below its header length " +
                                            std::to_string(header_length));
  }
  if (total_length > wire_available) {
    return fail(FrameStatus::malformed, "IPv4 total length " + std::to_string(total_length) +
                                            " exceeds the " + std::to_string(wire_available) +
                                            " octets in the frame");
  }
  std::uint16_t flags_offset = load_be16(&ip[6]);
  bool more_fragments = (flags_offset & 0x2000) != 0;
  std::uint16_t fragment_offset = flags_offset & 0x1FFF;
  if (more_fragments || fragment_offset != 0) {
    return fail(FrameStatus::unsupported,
                "IPv4 fragment (offset " + std::to_string(fragment_offset * 8) +
                    (more_fragments ? ", more fragments" : ", last fragment") +
                    "): reassembly is not supported");
  }
  if (ip[9] == ip_proto_sctp || ip[9] == ip_proto_udp) {
    return decode_sctp(frame, offset + header_length,
                       static_cast<std::uint32_t>(total_length - header_length), &ip[12], &ip[16],
                       false, ip[9] == ip_proto_udp);
  }
  if (ip[9] != ip_proto_tcp) return not_tcp();
  return decode_tcp(frame, offset + header_length,
                    static_cast<std::uint32_t>(total_length - header_length), &ip[12], &ip[16],
                    false);
}

FrameDecode decode_ipv6(ByteView frame, std::size_t offset, std::size_t wire_available) {
  ByteView ip = frame.subspan(offset);
  if (ip.size() < ipv6_header) {
    return fail(FrameStatus::malformed, "cut by snaplen before the IPv6 header ended");
  }
  if ((ip[0] >> 4) != 6) {
    return fail(FrameStatus::malformed,
                "IP version " + std::to_string(ip[0] >> 4) + " where IPv6 was expected");
  }
  std::size_t payload_length = load_be16(&ip[4]);
  // 0 means a jumbogram (RFC 2675) or a GSO super-segment: take the frame's length.
  if (payload_length == 0 && wire_available > ipv6_header) {
    payload_length = wire_available - ipv6_header;
  }
  if (ipv6_header + payload_length > wire_available) {
    return fail(FrameStatus::malformed,
                "IPv6 payload length " + std::to_string(payload_length) + " exceeds the " +
                    std::to_string(wire_available - ipv6_header) + " octets in the frame");
  }

  // Walk the extension header chain (RFC 8200 §4) up to TCP.
  std::uint8_t next = ip[6];
  std::size_t pos = ipv6_header;  // relative to the IPv6 header
  std::size_t end = ipv6_header + payload_length;
  for (;;) {
    switch (next) {
      case ip_proto_tcp:
        return decode_tcp(frame, offset + pos, static_cast<std::uint32_t>(end - pos), &ip[8],
                          &ip[24], true);
      case ip_proto_sctp:
      case ip_proto_udp:
        return decode_sctp(frame, offset + pos, static_cast<std::uint32_t>(end - pos), &ip[8],
                           &ip[24], true, next == ip_proto_udp);
      case ip_proto_hop_by_hop:
      case ip_proto_routing:
      case ip_proto_dest_opts:
      case ip_proto_ah: {
        if (end - pos < 2) {
          return fail(FrameStatus::malformed, "IPv6 extension header exceeds the payload length");
        }
        if (ip.size() < pos + 2) {
          return fail(FrameStatus::malformed,
                      "cut by snaplen before the IPv6 extension headers ended");
        }
        std::size_t length = next == ip_proto_ah ? (std::size_t{ip[pos + 1]} + 2) * 4
                                                 : (std::size_t{ip[pos + 1]} + 1) * 8;
        if (length > end - pos) {
          return fail(FrameStatus::malformed, "IPv6 extension header exceeds the payload length");
        }
        if (ip.size() < pos + length) {
          return fail(FrameStatus::malformed,
                      "cut by snaplen before the IPv6 extension headers ended");
        }
        next = ip[pos];
        pos += length;
        break;
      }
      case ip_proto_fragment:
        return fail(FrameStatus::unsupported, "IPv6 fragment header: reassembly is not supported");
      case ip_proto_esp:
        return fail(FrameStatus::unsupported, "IPsec ESP: encrypted payload");
      case ip_proto_no_next:
      default:
        return not_tcp();
    }
  }
}

std::uint32_t checksum_add(std::uint32_t sum, ByteView data) {
  std::size_t i = 0;
  for (; i + 1 < data.size(); i += 2)
    sum += load_be16(&data[i]);
  if (i < data.size()) sum += std::uint32_t{data[i]} << 8;
  return sum;
}

std::uint16_t checksum_fold(std::uint32_t sum) {
  while (sum >> 16)
    sum = (sum & 0xFFFF) + (sum >> 16);
  return static_cast<std::uint16_t>(~sum);
}

void store_be16(Bytes& out, std::size_t at, std::uint16_t v) {
  out[at] = static_cast<std::uint8_t>(v >> 8);
  out[at + 1] = static_cast<std::uint8_t>(v);
}

}  // namespace

bool is_supported_link_type(std::uint32_t link_type) {
  switch (link_type) {
    case static_cast<std::uint32_t>(LinkType::null):
    case static_cast<std::uint32_t>(LinkType::ethernet):
    case static_cast<std::uint32_t>(LinkType::raw):
    case static_cast<std::uint32_t>(LinkType::loop):
    case static_cast<std::uint32_t>(LinkType::linux_sll):
    case static_cast<std::uint32_t>(LinkType::ipv4):
    case static_cast<std::uint32_t>(LinkType::ipv6):
    case static_cast<std::uint32_t>(LinkType::linux_sll2):
    case dlt_raw_a:
    case dlt_raw_b:
      return true;
    default:
      return false;
  }
}

std::string_view link_type_name(std::uint32_t link_type) {
  switch (link_type) {
    case static_cast<std::uint32_t>(LinkType::null):
      return "null";
    case static_cast<std::uint32_t>(LinkType::ethernet):
      return "ethernet";
    case static_cast<std::uint32_t>(LinkType::raw):
    case dlt_raw_a:
    case dlt_raw_b:
      return "raw";
    case static_cast<std::uint32_t>(LinkType::loop):
      return "loop";
    case static_cast<std::uint32_t>(LinkType::linux_sll):
      return "linux_sll";
    case static_cast<std::uint32_t>(LinkType::ipv4):
      return "ipv4";
    case static_cast<std::uint32_t>(LinkType::ipv6):
      return "ipv6";
    case static_cast<std::uint32_t>(LinkType::linux_sll2):
      return "linux_sll2";
    default:
      return "unknown";
  }
}

std::string Address::to_string() const {
  char text[INET6_ADDRSTRLEN] = {};
  if (inet_ntop(v6 ? AF_INET6 : AF_INET, bytes.data(), text, sizeof text) == nullptr) return "?";
  return text;
}

Address Address::v4(std::uint32_t host_order) {
  Address a;
  a.bytes[0] = static_cast<std::uint8_t>(host_order >> 24);
  a.bytes[1] = static_cast<std::uint8_t>(host_order >> 16);
  a.bytes[2] = static_cast<std::uint8_t>(host_order >> 8);
  a.bytes[3] = static_cast<std::uint8_t>(host_order);
  return a;
}

std::optional<Address> Address::parse(std::string_view text) {
  if (text.size() >= 2 && text.front() == '[' && text.back() == ']') {
    text = text.substr(1, text.size() - 2);
  }
  if (text.size() >= INET6_ADDRSTRLEN) return std::nullopt;
  std::string s(text);  // inet_pton needs a terminated string
  Address a;
  if (inet_pton(AF_INET, s.c_str(), a.bytes.data()) == 1) return a;
  a.v6 = true;
  if (inet_pton(AF_INET6, s.c_str(), a.bytes.data()) == 1) return a;
  return std::nullopt;
}

std::string Endpoint::to_string() const {
  // Appended, not "[" + ...: GCC 12 at -O3 with _FORTIFY_SOURCE warns (-Wrestrict) of an
  // overlap in operator+(const char*, string&&) that cannot happen.
  std::string s;
  if (addr.v6) s += '[';
  s += addr.to_string();
  s += addr.v6 ? "]:" : ":";
  s += std::to_string(port);
  return s;
}

namespace {

constexpr std::size_t ethernet_header = 14;

// Where decode_frame's fast path found the headers of a frame it takes, and what they say.
struct CommonFrame {
  const std::uint8_t* ip;           // the IPv4 header
  const std::uint8_t* tcp;          // the TCP header
  std::uint32_t ip_payload_length;  // the TCP segment's length per the IPv4 header
  std::uint32_t header_length;      // the TCP header's length
  std::size_t captured;             // octets of the segment captured (no Ethernet padding)
};

// Whether `data` is the frame nearly every capture is made of: Ethernet II without a tag, IPv4
// with IHL 5 and not a fragment, TCP, the IPv4 total length neither 0 (a GSO super-segment) nor
// beyond the frame, the TCP header within the segment and the capture. Each test is one the
// general decode makes on that way (decode_link, decode_ipv4, decode_tcp), in fewer words; a
// frame that fails any goes the general way, which decides what it is and says what is wrong.
// The first test makes sure the 54 octets read here were captured.
[[gnu::always_inline]] inline bool common_frame(std::uint32_t link_type, ByteView data,
                                                std::uint32_t wire_length, CommonFrame& f) {
  constexpr std::size_t tcp_at = ethernet_header + ipv4_min_header;
  if (link_type != static_cast<std::uint32_t>(LinkType::ethernet) ||
      data.size() < tcp_at + tcp_min_header)
    return false;
  const std::uint8_t* ip = data.data() + ethernet_header;
  // The ethertype and the IPv4 version and IHL in one load: 0x0800, then 0x45 (version 4, IHL 5,
  // no options). 0x3FFF of the flags and offset: MF or an offset, a fragment (DF, 0x4000, is
  // what nearly every TCP segment carries).
  if (load_be32(&data[12]) >> 8 != (std::uint32_t{ethertype_ipv4} << 8 | 0x45) ||
      ip[9] != ip_proto_tcp || (load_be16(ip + 6) & 0x3FFF) != 0)
    return false;
  // A capture's wire length cannot be below what was captured; trust the larger (decode_frame).
  const std::size_t wire = std::max<std::size_t>(wire_length, data.size());
  const std::uint32_t total_length = load_be16(ip + 2);
  if (total_length < ipv4_min_header + tcp_min_header || total_length > wire - ethernet_header)
    return false;
  f.ip = ip;
  f.tcp = ip + ipv4_min_header;
  f.ip_payload_length = total_length - static_cast<std::uint32_t>(ipv4_min_header);
  f.header_length = (f.tcp[12] >> 2) & 0x3Cu;  // the data offset's 32-bit words, in octets
  f.captured = std::min<std::size_t>(data.size() - tcp_at, f.ip_payload_length);
  // Within the captured segment is within the IP payload too (captured is at most that).
  return f.header_length >= tcp_min_header && f.header_length <= f.captured;
}

// decode_frame_into's general way, out of the fast path's (its frame and saved registers).
[[gnu::noinline]] void general_into(FrameDecode& d, std::uint32_t link_type, ByteView data,
                                    std::uint32_t wire_length) {
  d = detail::decode_frame_general(link_type, data, wire_length);
}

// Makes `d`, an earlier decode_frame result that is not a TCP decode of IPv4 (or a default
// FrameDecode), one the fast path can write over field by field: one whose fields that path does
// not write are as a new FrameDecode has them. Only an SCTP decode sets SCTP fields, only a
// failure the detail; an IPv6 segment's addresses set v6 and the octets past the first 4.
[[gnu::cold, gnu::noinline]] void clear_decode(FrameDecode& d) {
  if (d.status == FrameStatus::sctp) d.sctp = SctpDatagram();
  d.detail.clear();
  d.status = FrameStatus::tcp;
  for (Address* a : {&d.tcp.src.addr, &d.tcp.dst.addr}) {
    a->v6 = false;
    std::memset(a->bytes.data() + 4, 0, a->bytes.size() - 4);
  }
}

// common_decode into `d`, an earlier decode_frame result: only the fields the frame sets, as
// in the header's order (a store into `d` may alias a later read of the frame's octets, so the
// reads are not moved before the stores, and few registers are live).
[[gnu::always_inline]] inline void common_decode_into(const CommonFrame& f, FrameDecode& d) {
  if (d.status != FrameStatus::tcp || d.tcp.src.addr.v6) [[unlikely]]
    clear_decode(d);
  const std::uint8_t* t = f.tcp;
  TcpSegment& seg = d.tcp;
  std::memcpy(seg.src.addr.bytes.data(), f.ip + 12, 4);
  std::memcpy(seg.dst.addr.bytes.data(), f.ip + 16, 4);
  seg.src.port = load_be16(t);
  seg.dst.port = load_be16(t + 2);
  seg.seq = load_be32(t + 4);
  seg.ack = load_be32(t + 8);
  seg.flags = t[13];
  seg.window = load_be16(t + 14);
  seg.payload = ByteView(t + f.header_length, f.captured - f.header_length);
  seg.payload_length = f.ip_payload_length - f.header_length;
  seg.options_size = static_cast<std::uint8_t>(f.header_length - tcp_min_header);
  seg.mss = std::nullopt;
  seg.has_timestamps = false;
  if (f.header_length > tcp_min_header)
    parse_tcp_options(ByteView(t + tcp_min_header, f.header_length - tcp_min_header), seg);
}

// The decode of a frame common_frame took, as a new FrameDecode: common_decode_into over a
// default one made a TCP decode (nothing to clear), so that the fields are written in one place.
[[gnu::always_inline]] inline FrameDecode common_decode(const CommonFrame& f) {
  FrameDecode d;
  d.status = FrameStatus::tcp;
  common_decode_into(f, d);
  return d;
}

}  // namespace

void decode_frame_into(FrameDecode& d, std::uint32_t link_type, ByteView data,
                       std::uint32_t wire_length) {
  CommonFrame f;
  if (common_frame(link_type, data, wire_length, f)) [[likely]] {
    common_decode_into(f, d);
    return;
  }
  general_into(d, link_type, data, wire_length);
}

bool detail::decode_frame_fast(std::uint32_t link_type, ByteView data, std::uint32_t wire_length,
                               FrameDecode& out) {
  CommonFrame f;
  if (!common_frame(link_type, data, wire_length, f)) return false;
  out = common_decode(f);
  return true;
}

// The common frame decoded in a straight line (the general way through the link, network and
// transport layers was ~200 instructions a frame); every other frame the general way.
FrameDecode decode_frame(std::uint32_t link_type, ByteView data, std::uint32_t wire_length) {
  CommonFrame f;
  if (common_frame(link_type, data, wire_length, f)) [[likely]]
    return common_decode(f);
  return detail::decode_frame_general(link_type, data, wire_length);
}

FrameDecode detail::decode_frame_general(std::uint32_t link_type, ByteView data,
                                         std::uint32_t wire_length) {
  const LinkResult link = decode_link(link_type, data);
  if (!link.net) {
    if (link.status == FrameStatus::malformed)
      return fail(FrameStatus::malformed,
                  "cut by snaplen before the " + std::string(link.cut) + " header ended");
    if (link.status == FrameStatus::unsupported)
      return fail(FrameStatus::unsupported,
                  "link type " + std::to_string(link_type) + " is not supported");
    return not_tcp();
  }
  NetworkLayer net = *link.net;
  // A capture's wire length cannot be below what was captured; trust the larger.
  std::size_t wire = std::max<std::size_t>(wire_length, data.size());
  std::size_t wire_available = wire - net.offset;
  if (net.kind == NetworkLayer::Kind::by_version) {
    if (data.size() <= net.offset) {
      return fail(FrameStatus::malformed, "cut by snaplen before the IP header ended");
    }
    std::uint8_t version = data[net.offset] >> 4;
    if (version == 4) {
      net.kind = NetworkLayer::Kind::ipv4;
    } else if (version == 6) {
      net.kind = NetworkLayer::Kind::ipv6;
    } else {
      return fail(FrameStatus::malformed, "IP version " + std::to_string(version) + " is unknown");
    }
  }
  if (net.kind == NetworkLayer::Kind::ipv4) return decode_ipv4(data, net.offset, wire_available);
  return decode_ipv6(data, net.offset, wire_available);
}

namespace {

// Ethernet II (with one 802.1Q tag when asked) and the IPv4 / IPv6 header of a packet carrying
// `payload_length` octets of `protocol`. Returns the pseudo-header sum of RFC 9293 §3.1 /
// RFC 8200 §8.1 for the transport checksum.
std::uint32_t write_link_and_ip(Bytes& out, const std::array<std::uint8_t, 6>& src_mac,
                                const std::array<std::uint8_t, 6>& dst_mac,
                                std::optional<std::uint16_t> vlan, const Address& src,
                                const Address& dst, std::uint8_t protocol,
                                std::size_t payload_length) {
  const bool v6 = src.v6;
  ByteWriter w(out);
  w.bytes(dst_mac);
  w.bytes(src_mac);
  if (vlan) {
    w.be16(ethertype_vlan);
    w.be16(*vlan & 0x0FFF);
  }
  w.be16(v6 ? ethertype_ipv6 : ethertype_ipv4);
  std::uint32_t pseudo = 0;
  if (v6) {
    w.be32(0x60000000u);  // version 6, traffic class 0, flow label 0
    w.be16(static_cast<std::uint16_t>(payload_length));
    w.u8(protocol);
    w.u8(64);  // hop limit
    w.bytes(src.bytes);
    w.bytes(dst.bytes);
    pseudo = checksum_add(pseudo, src.bytes);
    pseudo = checksum_add(pseudo, dst.bytes);
    pseudo += static_cast<std::uint32_t>(payload_length >> 16) + (payload_length & 0xFFFF);
    pseudo += protocol;
  } else {
    const std::size_t ip_start = out.size();
    w.u8(0x45);  // version 4, IHL 5
    w.u8(0);     // DSCP / ECN
    w.be16(static_cast<std::uint16_t>(ipv4_min_header + payload_length));
    w.be16(0);       // identification: 0 is fine with DF set (RFC 6864 §4.1)
    w.be16(0x4000);  // DF, offset 0
    w.u8(64);        // TTL
    w.u8(protocol);
    w.be16(0);  // header checksum, filled below
    w.bytes(ByteView(src.bytes).first(4));
    w.bytes(ByteView(dst.bytes).first(4));
    std::uint16_t ip_sum =
        checksum_fold(checksum_add(0, ByteView(out).subspan(ip_start, ipv4_min_header)));
    store_be16(out, ip_start + 10, ip_sum);
    pseudo = checksum_add(pseudo, ByteView(src.bytes).first(4));
    pseudo = checksum_add(pseudo, ByteView(dst.bytes).first(4));
    pseudo += protocol;
    pseudo += static_cast<std::uint32_t>(payload_length);
  }
  return pseudo;
}

}  // namespace

Bytes encode_tcp_frame(const TcpFrameSpec& spec, ByteView payload) {
  const std::size_t options_size = spec.mss ? 4 : 0;  // MSS is 4 octets: already aligned
  const std::size_t tcp_length = tcp_min_header + options_size + payload.size();
  Bytes out;
  out.reserve(18 + ipv6_header + tcp_length);
  ByteWriter w(out);
  const std::uint32_t pseudo =
      write_link_and_ip(out, spec.src_mac, spec.dst_mac, spec.vlan, spec.src.addr, spec.dst.addr,
                        ip_proto_tcp, tcp_length);

  const std::size_t tcp_start = out.size();
  w.be16(spec.src.port);
  w.be16(spec.dst.port);
  w.be32(spec.seq);
  w.be32(spec.ack);
  w.u8(static_cast<std::uint8_t>(((tcp_min_header + options_size) / 4) << 4));
  w.u8(spec.flags);
  w.be16(spec.window);
  w.be16(0);  // checksum, filled below
  w.be16(0);  // urgent pointer
  if (spec.mss) {
    w.u8(2);
    w.u8(4);
    w.be16(*spec.mss);
  }
  w.bytes(payload);
  std::uint16_t tcp_sum = checksum_fold(checksum_add(pseudo, ByteView(out).subspan(tcp_start)));
  store_be16(out, tcp_start + 16, tcp_sum);
  return out;
}

Bytes encode_sctp_frame(const SctpFrameSpec& spec, ByteView sctp_packet) {
  const std::size_t length = sctp_packet.size() + (spec.over_udp ? udp_header : 0);
  Bytes out;
  out.reserve(18 + ipv6_header + length);
  const std::uint32_t pseudo =
      write_link_and_ip(out, spec.src_mac, spec.dst_mac, std::nullopt, spec.src, spec.dst,
                        spec.over_udp ? ip_proto_udp : ip_proto_sctp, length);
  if (!spec.over_udp) {
    ByteWriter(out).bytes(sctp_packet);
    return out;
  }
  const std::size_t udp_start = out.size();
  ByteWriter w(out);
  w.be16(spec.udp_src_port);
  w.be16(spec.udp_dst_port);
  w.be16(static_cast<std::uint16_t>(length));
  w.be16(0);  // checksum, filled below
  w.bytes(sctp_packet);
  std::uint16_t sum = checksum_fold(checksum_add(pseudo, ByteView(out).subspan(udp_start)));
  if (sum == 0) sum = 0xFFFF;  // RFC 768: a computed 0 is sent as all ones
  store_be16(out, udp_start + 6, sum);
  return out;
}

void rebase(FrameDecode& d, const std::uint8_t* from, const std::uint8_t* to) {
  auto move = [from, to](ByteView v) {
    return v.data() == nullptr ? v : ByteView(to + (v.data() - from), v.size());
  };
  d.tcp.payload = move(d.tcp.payload);
  d.sctp.packet = move(d.sctp.packet);
}

FrameDecode decode_tcp_segment(ByteView segment, std::uint32_t tcp_length, const Address& src,
                               const Address& dst) {
  if (src.v6 != dst.v6) {
    FrameDecode d;
    d.detail = "IP addresses of two families";
    return d;
  }
  return decode_tcp(segment, 0, tcp_length, src.bytes.data(), dst.bytes.data(), src.v6);
}

}  // namespace ddpscope::net
