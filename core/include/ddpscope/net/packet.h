// SPDX-License-Identifier: GPL-2.0-or-later
// Link, IP and TCP header decoding (and encoding, for the synthetic capture generator).
// Pure functions over bytes: capture files are read elsewhere (analyzer/ uses libpcap).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "ddpscope/common/bytes.h"

namespace ddpscope::net {

// Link types, numbered as pcap LINKTYPE_* values.
enum class LinkType : std::uint32_t {
  null = 0,         // BSD loopback: 4-octet host-order address family
  ethernet = 1,     // Ethernet II, with 802.1Q / 802.1ad (QinQ) tags
  raw = 101,        // raw IPv4 or IPv6 (version nibble decides)
  loop = 108,       // OpenBSD loopback: 4-octet network-order address family
  linux_sll = 113,  // Linux cooked v1
  ipv4 = 228,
  ipv6 = 229,
  linux_sll2 = 276,  // Linux cooked v2
};
// DLT_RAW is 12 or 14 on some platforms; both are accepted as raw.
bool is_supported_link_type(std::uint32_t link_type);
std::string_view link_type_name(std::uint32_t link_type);

struct Address {
  bool v6 = false;
  std::array<std::uint8_t, 16> bytes{};  // IPv4 in the first 4 octets
  std::string to_string() const;         // 10.0.0.1 / 2001:db8::1
  static Address v4(std::uint32_t host_order);
  static std::optional<Address> parse(std::string_view text);
  auto operator<=>(const Address&) const = default;
};

struct Endpoint {
  Address addr;
  std::uint16_t port = 0;
  std::string to_string() const;  // 10.0.0.1:4420 / [2001:db8::1]:4420
  auto operator<=>(const Endpoint&) const = default;
};

namespace tcp_flag {
inline constexpr std::uint8_t fin = 0x01;
inline constexpr std::uint8_t syn = 0x02;
inline constexpr std::uint8_t rst = 0x04;
inline constexpr std::uint8_t psh = 0x08;
inline constexpr std::uint8_t ack = 0x10;
}  // namespace tcp_flag

// One TCP segment as decoded from a frame.
struct TcpSegment {
  Endpoint src;
  Endpoint dst;
  std::uint32_t seq = 0;
  std::uint32_t ack = 0;
  std::uint8_t flags = 0;
  std::uint16_t window = 0;
  std::optional<std::uint16_t> mss;  // MSS option (SYN)
  bool has_timestamps = false;       // TCP timestamp option present (affects EMSS)
  std::uint8_t options_size = 0;     // octets of TCP options in this segment
  ByteView payload;                  // the payload octets captured (view into the frame)
  // Payload length per the IP header. Larger than payload.size() when the frame was cut
  // by the capture's snaplen: the missing octets are capture loss, not a protocol fact.
  std::uint32_t payload_length = 0;
  bool truncated() const { return payload.size() < payload_length; }
};

// One SCTP packet as decoded from a frame: carried by IP (protocol 132) or, as user-space stacks
// send it, in UDP (RFC 6951, port 9899 at either end). The SCTP header is not decoded here
// (wire/sctp.h does that).
struct SctpDatagram {
  Address src;
  Address dst;
  ByteView packet;  // the SCTP packet's captured octets, common header first
  // Its length per the IP (or UDP) header; larger than packet.size() when snaplen cut it.
  std::uint32_t packet_length = 0;
  bool over_udp = false;  // RFC 6951 encapsulation
  std::uint16_t udp_src_port = 0;
  std::uint16_t udp_dst_port = 0;
  bool truncated() const { return packet.size() < packet_length; }
};

enum class FrameStatus {
  tcp,          // a TCP segment (possibly truncated by snaplen: see TcpSegment)
  sctp,         // an SCTP packet (possibly truncated by snaplen: see SctpDatagram)
  not_tcp,      // a valid frame that carries neither (ARP, other UDP, ICMP, ...): ignored
  unsupported,  // link type or encapsulation we do not decode (IP fragments, tunnels)
  malformed,    // headers inconsistent or cut before the TCP header ended
};

struct FrameDecode {
  // Inlined where a decode builds one (once per frame): as a call it was ~30 instructions.
  [[gnu::always_inline]] FrameDecode() = default;
  FrameStatus status = FrameStatus::malformed;
  TcpSegment tcp;
  SctpDatagram sctp;
  std::string detail;  // why, for anything but tcp / not_tcp
};

// Decodes a captured frame. `data` is what was captured (caplen octets); `wire_length` is the
// frame's original length. Never reads past `data`.
FrameDecode decode_frame(std::uint32_t link_type, ByteView data, std::uint32_t wire_length);

// decode_frame into `d`, which holds an earlier result of decode_frame (or a default FrameDecode):
// the same as `d = decode_frame(...)`. For a caller that keeps a FrameDecode per slot (feed's
// batches): the common frame costs the stores of its own fields, not a new FrameDecode of ~200
// octets and a string built and destroyed.
void decode_frame_into(FrameDecode& d, std::uint32_t link_type, ByteView data,
                       std::uint32_t wire_length);

namespace detail {
// decode_frame's two ways, for the tests that hold them to one result. The fast one takes only
// the frame nearly every capture is made of (Ethernet II without tags, IPv4 without options and
// not a fragment, TCP, its lengths consistent) and returns false for anything else; the general
// one decodes every frame and is the one that says what is wrong with one.
bool decode_frame_fast(std::uint32_t link_type, ByteView data, std::uint32_t wire_length,
                       FrameDecode& out);
FrameDecode decode_frame_general(std::uint32_t link_type, ByteView data, std::uint32_t wire_length);
}  // namespace detail

// `d`, the decode of the octets at `from`, made the decode of a copy of them at `to`: its views
// into the frame (the TCP payload, the SCTP packet) moved by the same distance.
void rebase(FrameDecode& d, const std::uint8_t* from, const std::uint8_t* to);

// Decodes one TCP segment whose lower layers a host has decoded itself (the Wireshark plugin):
// `segment` is what was captured from the TCP header on, `tcp_length` the segment's length
// (header and payload) per the IP header, `src` and `dst` the IP header's addresses (both of
// one family). The same checks and option parsing as decode_frame's TCP layer.
FrameDecode decode_tcp_segment(ByteView segment, std::uint32_t tcp_length, const Address& src,
                               const Address& dst);

// Builds an Ethernet II + IPv4/IPv6 + TCP frame with correct checksums and lengths.
struct TcpFrameSpec {
  Endpoint src;
  Endpoint dst;
  std::uint32_t seq = 0;
  std::uint32_t ack = 0;
  std::uint8_t flags = tcp_flag::ack;
  std::uint16_t window = 65535;
  std::optional<std::uint16_t> mss;  // MSS option, for SYNs
  std::array<std::uint8_t, 6> src_mac{0x02, 0, 0, 0, 0, 1};
  std::array<std::uint8_t, 6> dst_mac{0x02, 0, 0, 0, 0, 2};
  std::optional<std::uint16_t> vlan;  // one 802.1Q tag
};
Bytes encode_tcp_frame(const TcpFrameSpec& spec, ByteView payload);

// Builds an Ethernet II + IPv4/IPv6 frame around an SCTP packet (built by wire/sctp.h), as IP
// protocol 132 or, with `over_udp`, in a UDP datagram between the two UDP ports (RFC 6951; UDP
// checksum computed).
struct SctpFrameSpec {
  Address src;
  Address dst;
  bool over_udp = false;
  std::uint16_t udp_src_port = 9899;
  std::uint16_t udp_dst_port = 9899;
  std::array<std::uint8_t, 6> src_mac{0x02, 0, 0, 0, 0, 1};
  std::array<std::uint8_t, 6> dst_mac{0x02, 0, 0, 0, 0, 2};
};
Bytes encode_sctp_frame(const SctpFrameSpec& spec, ByteView sctp_packet);

}  // namespace ddpscope::net
