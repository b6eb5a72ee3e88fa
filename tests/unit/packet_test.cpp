// SPDX-License-Identifier: GPL-2.0-or-later
#include "ddpscope/net/packet.h"

#include <gtest/gtest.h>

#include <string_view>

#include "ddpscope/wire/sctp.h"

namespace ddpscope::net {
namespace {

ByteView view(std::string_view s) {
  return {reinterpret_cast<const std::uint8_t*>(s.data()), s.size()};
}

Address addr(std::string_view text) {
  return *Address::parse(text);
}

TcpFrameSpec spec_v4() {
  TcpFrameSpec s;
  s.src = Endpoint{addr("10.0.0.1"), 42742};
  s.dst = Endpoint{addr("10.0.0.2"), 4420};
  s.seq = 0x01020304;
  s.ack = 0xA0B0C0D0;
  s.flags = tcp_flag::ack | tcp_flag::psh;
  s.window = 1234;
  return s;
}

TcpFrameSpec spec_v6() {
  TcpFrameSpec s = spec_v4();
  s.src.addr = addr("2001:db8::1");
  s.dst.addr = addr("2001:db8::2");
  return s;
}

std::uint16_t fold(std::uint32_t sum) {
  while (sum >> 16)
    sum = (sum & 0xFFFF) + (sum >> 16);
  return static_cast<std::uint16_t>(sum);
}
std::uint32_t sum16(ByteView data) {
  std::uint32_t sum = 0;
  for (std::size_t i = 0; i < data.size(); i += 2) {
    sum += (std::uint32_t{data[i]} << 8) | (i + 1 < data.size() ? data[i + 1] : 0);
  }
  return sum;
}

// The frame with its 14-octet Ethernet header replaced by `header`.
Bytes relink(const Bytes& ethernet_frame, ByteView header) {
  Bytes out(header.begin(), header.end());
  out.insert(out.end(), ethernet_frame.begin() + 14, ethernet_frame.end());
  return out;
}

void expect_segment(const FrameDecode& d, const TcpFrameSpec& s, std::string_view payload) {
  ASSERT_EQ(d.status, FrameStatus::tcp) << d.detail;
  EXPECT_EQ(d.tcp.src, s.src);
  EXPECT_EQ(d.tcp.dst, s.dst);
  EXPECT_EQ(d.tcp.seq, s.seq);
  EXPECT_EQ(d.tcp.ack, s.ack);
  EXPECT_EQ(d.tcp.flags, s.flags);
  EXPECT_EQ(d.tcp.window, s.window);
  EXPECT_EQ(d.tcp.mss, s.mss);
  EXPECT_EQ(d.tcp.payload_length, payload.size());
  EXPECT_FALSE(d.tcp.truncated());
  EXPECT_EQ(
      std::string_view(reinterpret_cast<const char*>(d.tcp.payload.data()), d.tcp.payload.size()),
      payload);
}

TEST(NetAddress, FormatsAndParses) {
  EXPECT_EQ(Address::v4(0x0A000001).to_string(), "10.0.0.1");
  EXPECT_EQ(addr("2001:db8:0:0:0:0:0:1").to_string(), "2001:db8::1");
  EXPECT_EQ((Endpoint{addr("10.0.0.1"), 4420}).to_string(), "10.0.0.1:4420");
  EXPECT_EQ((Endpoint{addr("2001:db8::1"), 4420}).to_string(), "[2001:db8::1]:4420");
  EXPECT_EQ(addr("10.0.0.1"), Address::v4(0x0A000001));
  EXPECT_FALSE(Address::parse("10.0.0.256"));
  EXPECT_FALSE(Address::parse("nonsense"));
  EXPECT_FALSE(Address::parse(""));
  EXPECT_TRUE(addr("::1").v6);
}

TEST(NetLinkType, NamesAndSupport) {
  for (std::uint32_t t : {0u, 1u, 12u, 14u, 101u, 108u, 113u, 228u, 229u, 276u}) {
    EXPECT_TRUE(is_supported_link_type(t)) << t;
    EXPECT_NE(link_type_name(t), "unknown") << t;
  }
  EXPECT_FALSE(is_supported_link_type(105));  // 802.11
  EXPECT_EQ(link_type_name(113), "linux_sll");
}

TEST(NetEncode, Ipv4ChecksumsAreValid) {
  TcpFrameSpec s = spec_v4();
  Bytes f = encode_tcp_frame(s, view("hello"));
  ASSERT_EQ(f.size(), 14u + 20 + 20 + 5);
  ByteView ip = ByteView(f).subspan(14, 20);
  EXPECT_EQ(fold(sum16(ip)), 0xFFFF);  // header checksum verifies
  EXPECT_EQ(ip[8], 64);                // TTL
  EXPECT_EQ(ip[6] & 0x40, 0x40);       // DF
  // TCP checksum over the pseudo header (RFC 9293 §3.1).
  ByteView tcp = ByteView(f).subspan(34);
  std::uint32_t sum = sum16(ip.subspan(12, 8)) + 6 + static_cast<std::uint32_t>(tcp.size());
  EXPECT_EQ(fold(sum + sum16(tcp)), 0xFFFF);
}

TEST(NetEncode, Ipv6TcpChecksumIsValid) {
  Bytes f = encode_tcp_frame(spec_v6(), view("odd"));
  ByteView ip = ByteView(f).subspan(14, 40);
  ByteView tcp = ByteView(f).subspan(54);
  std::uint32_t sum = sum16(ip.subspan(8, 32)) + 6 + static_cast<std::uint32_t>(tcp.size());
  EXPECT_EQ(fold(sum + sum16(tcp)), 0xFFFF);
}

TEST(NetDecode, Ipv4RoundTrip) {
  TcpFrameSpec s = spec_v4();
  Bytes f = encode_tcp_frame(s, view("hello, iWARP"));
  FrameDecode d = decode_frame(1, f, static_cast<std::uint32_t>(f.size()));
  expect_segment(d, s, "hello, iWARP");
  EXPECT_EQ(d.tcp.options_size, 0);
  EXPECT_FALSE(d.tcp.has_timestamps);
}

TEST(NetDecode, Ipv6RoundTrip) {
  TcpFrameSpec s = spec_v6();
  Bytes f = encode_tcp_frame(s, view("v6 payload"));
  expect_segment(decode_frame(1, f, static_cast<std::uint32_t>(f.size())), s, "v6 payload");
}

// The plugin's path: the TCP header found by Wireshark, decoded by core. It agrees with
// decode_frame's TCP layer (fields, options, payload), honours the IP-given length over
// trailing octets (Ethernet padding), and refuses a header that does not fit.
TEST(NetDecode, TcpSegmentFromAHostAgreesWithDecodeFrame) {
  TcpFrameSpec s = spec_v4();
  s.flags = tcp_flag::syn;
  s.mss = 1460;
  Bytes f = encode_tcp_frame(s, view("abc"));
  const FrameDecode whole = decode_frame(1, f, static_cast<std::uint32_t>(f.size()));
  const ByteView tcp = ByteView(f).subspan(14 + 20);
  FrameDecode d =
      decode_tcp_segment(tcp, static_cast<std::uint32_t>(tcp.size()), s.src.addr, s.dst.addr);
  expect_segment(d, s, "abc");
  EXPECT_EQ(d.tcp.options_size, whole.tcp.options_size);
  EXPECT_EQ(d.tcp.payload.data(), whole.tcp.payload.data());

  Bytes padded(tcp.begin(), tcp.end());
  padded.insert(padded.end(), 6, 0);  // padding past the segment's length
  d = decode_tcp_segment(padded, static_cast<std::uint32_t>(tcp.size()), s.src.addr, s.dst.addr);
  expect_segment(d, s, "abc");

  d = decode_tcp_segment(tcp.first(19), 19, s.src.addr, s.dst.addr);
  EXPECT_EQ(d.status, FrameStatus::malformed);
  d = decode_tcp_segment(tcp, static_cast<std::uint32_t>(tcp.size()), s.src.addr,
                         addr("2001:db8::2"));
  EXPECT_EQ(d.status, FrameStatus::malformed);
  EXPECT_FALSE(d.detail.empty());
}

TEST(NetDecode, SynWithMss) {
  TcpFrameSpec s = spec_v4();
  s.flags = tcp_flag::syn;
  s.mss = 1460;
  Bytes f = encode_tcp_frame(s, {});
  FrameDecode d = decode_frame(1, f, static_cast<std::uint32_t>(f.size()));
  expect_segment(d, s, "");
  EXPECT_EQ(d.tcp.options_size, 4);
}

TEST(NetDecode, TimestampOption) {
  TcpFrameSpec s = spec_v4();
  Bytes f = encode_tcp_frame(s, view("x"));
  // Rebuild the TCP header with NOP, NOP, TS (12 octets of options).
  Bytes opts = {1, 1, 8, 10, 0, 0, 0, 1, 0, 0, 0, 2};
  f.insert(f.begin() + 34 + 20, opts.begin(), opts.end());
  f[34 + 12] = static_cast<std::uint8_t>((20 + opts.size()) / 4 << 4);
  std::uint16_t total = static_cast<std::uint16_t>(f.size() - 14);
  f[16] = static_cast<std::uint8_t>(total >> 8);
  f[17] = static_cast<std::uint8_t>(total);
  FrameDecode d = decode_frame(1, f, static_cast<std::uint32_t>(f.size()));
  ASSERT_EQ(d.status, FrameStatus::tcp) << d.detail;
  EXPECT_TRUE(d.tcp.has_timestamps);
  EXPECT_EQ(d.tcp.options_size, 12);
  EXPECT_EQ(d.tcp.payload_length, 1u);
}

TEST(NetDecode, VlanRoundTrip) {
  TcpFrameSpec s = spec_v4();
  s.vlan = 100;
  Bytes f = encode_tcp_frame(s, view("tagged"));
  EXPECT_EQ(f[12], 0x81);
  expect_segment(decode_frame(1, f, static_cast<std::uint32_t>(f.size())), s, "tagged");
}

TEST(NetDecode, QinQ) {
  TcpFrameSpec s = spec_v6();
  s.vlan = 100;
  Bytes f = encode_tcp_frame(s, view("double tagged"));
  // Insert an 802.1ad S-tag before the C-tag.
  Bytes stag = {0x88, 0xA8, 0x00, 0x0A};
  f.insert(f.begin() + 12, stag.begin(), stag.end());
  expect_segment(decode_frame(1, f, static_cast<std::uint32_t>(f.size())), s, "double tagged");
  // And the pre-standard 0x9100 form.
  f[12] = 0x91;
  f[13] = 0x00;
  expect_segment(decode_frame(1, f, static_cast<std::uint32_t>(f.size())), s, "double tagged");
}

TEST(NetDecode, LinuxSll) {
  TcpFrameSpec s = spec_v4();
  Bytes eth = encode_tcp_frame(s, view("cooked"));
  Bytes header = {0, 0, 0, 1, 0, 6, 2, 0, 0, 0, 0, 1, 0, 0, 0x08, 0x00};
  Bytes f = relink(eth, header);
  expect_segment(decode_frame(113, f, static_cast<std::uint32_t>(f.size())), s, "cooked");
}

TEST(NetDecode, LinuxSll2) {
  TcpFrameSpec s = spec_v6();
  Bytes eth = encode_tcp_frame(s, view("cooked v2"));
  Bytes header = {0x86, 0xDD, 0, 0, 0, 0, 0, 2, 0, 1, 0, 6, 2, 0, 0, 0, 0, 1, 0, 0};
  Bytes f = relink(eth, header);
  expect_segment(decode_frame(276, f, static_cast<std::uint32_t>(f.size())), s, "cooked v2");
}

TEST(NetDecode, RawIp) {
  TcpFrameSpec s4 = spec_v4();
  Bytes f4 = relink(encode_tcp_frame(s4, view("raw4")), {});
  TcpFrameSpec s6 = spec_v6();
  Bytes f6 = relink(encode_tcp_frame(s6, view("raw6")), {});
  for (std::uint32_t lt : {101u, 12u, 14u}) {
    expect_segment(decode_frame(lt, f4, static_cast<std::uint32_t>(f4.size())), s4, "raw4");
    expect_segment(decode_frame(lt, f6, static_cast<std::uint32_t>(f6.size())), s6, "raw6");
  }
  expect_segment(decode_frame(228, f4, static_cast<std::uint32_t>(f4.size())), s4, "raw4");
  expect_segment(decode_frame(229, f6, static_cast<std::uint32_t>(f6.size())), s6, "raw6");
  // The link type promises a version the packet does not have.
  EXPECT_EQ(decode_frame(229, f4, static_cast<std::uint32_t>(f4.size())).status,
            FrameStatus::malformed);
}

TEST(NetDecode, NullLoopbackEitherByteOrder) {
  TcpFrameSpec s4 = spec_v4();
  TcpFrameSpec s6 = spec_v6();
  Bytes e4 = encode_tcp_frame(s4, view("null"));
  Bytes e6 = encode_tcp_frame(s6, view("null"));
  Bytes le_inet = relink(e4, Bytes{2, 0, 0, 0});
  Bytes be_inet = relink(e4, Bytes{0, 0, 0, 2});
  expect_segment(decode_frame(0, le_inet, static_cast<std::uint32_t>(le_inet.size())), s4, "null");
  expect_segment(decode_frame(0, be_inet, static_cast<std::uint32_t>(be_inet.size())), s4, "null");
  for (std::uint8_t family : {24, 28, 30}) {
    Bytes f = relink(e6, Bytes{family, 0, 0, 0});
    expect_segment(decode_frame(0, f, static_cast<std::uint32_t>(f.size())), s6, "null");
  }
  Bytes other = relink(e4, Bytes{7, 0, 0, 0});
  EXPECT_EQ(decode_frame(0, other, static_cast<std::uint32_t>(other.size())).status,
            FrameStatus::not_tcp);
}

TEST(NetDecode, LoopIsNetworkOrder) {
  TcpFrameSpec s6 = spec_v6();
  Bytes f = relink(encode_tcp_frame(s6, view("loop")), Bytes{0, 0, 0, 30});
  expect_segment(decode_frame(108, f, static_cast<std::uint32_t>(f.size())), s6, "loop");
  TcpFrameSpec s4 = spec_v4();
  Bytes g = relink(encode_tcp_frame(s4, view("loop")), Bytes{0, 0, 0, 2});
  expect_segment(decode_frame(108, g, static_cast<std::uint32_t>(g.size())), s4, "loop");
}

TEST(NetDecode, EthernetPaddingIsNotPayload) {
  TcpFrameSpec s = spec_v4();
  Bytes f = encode_tcp_frame(s, view("abcdef"));  // 14 + 20 + 20 + 6 = 60: pad a tiny one
  Bytes tiny = encode_tcp_frame(s, view("ab"));   // 56 octets
  tiny.resize(60, 0xEE);                          // the NIC pads to the minimum frame
  FrameDecode d = decode_frame(1, tiny, 60);
  expect_segment(d, s, "ab");
  Bytes bare = encode_tcp_frame(s, {});
  bare.resize(60, 0);
  FrameDecode e = decode_frame(1, bare, 60);
  expect_segment(e, s, "");
  EXPECT_TRUE(e.tcp.payload.empty());
  EXPECT_EQ(f.size(), 60u);
}

TEST(NetDecode, SnaplenTruncatedPayload) {
  TcpFrameSpec s = spec_v4();
  Bytes f = encode_tcp_frame(s, Bytes(1000, 0x5A));
  std::uint32_t wire = static_cast<std::uint32_t>(f.size());
  ByteView cut = ByteView(f).first(96);
  FrameDecode d = decode_frame(1, cut, wire);
  ASSERT_EQ(d.status, FrameStatus::tcp) << d.detail;
  EXPECT_EQ(d.tcp.payload_length, 1000u);
  EXPECT_EQ(d.tcp.payload.size(), 96u - 54);
  EXPECT_TRUE(d.tcp.truncated());
}

TEST(NetDecode, CutInsideTcpHeaderIsMalformed) {
  TcpFrameSpec s = spec_v4();
  s.mss = 9000;
  Bytes f = encode_tcp_frame(s, view("data"));
  for (std::size_t len : {34u + 10, 34u + 20, 34u + 23}) {  // inside the fixed part / options
    FrameDecode d = decode_frame(1, ByteView(f).first(len), static_cast<std::uint32_t>(f.size()));
    EXPECT_EQ(d.status, FrameStatus::malformed) << len;
    EXPECT_NE(d.detail.find("cut by snaplen"), std::string::npos) << d.detail;
  }
}

TEST(NetDecode, TotalLengthBeyondFrameIsMalformed) {
  Bytes f = encode_tcp_frame(spec_v4(), view("data"));
  f[17] += 10;  // total length claims 10 more octets than the wire carried
  FrameDecode d = decode_frame(1, f, static_cast<std::uint32_t>(f.size()));
  EXPECT_EQ(d.status, FrameStatus::malformed);
}

TEST(NetDecode, BadIhlAndDataOffsetAreMalformed) {
  Bytes f = encode_tcp_frame(spec_v4(), view("data"));
  Bytes bad_ihl = f;
  bad_ihl[14] = 0x44;
  EXPECT_EQ(decode_frame(1, bad_ihl, static_cast<std::uint32_t>(f.size())).status,
            FrameStatus::malformed);
  Bytes bad_doff = f;
  bad_doff[34 + 12] = 0x40;
  EXPECT_EQ(decode_frame(1, bad_doff, static_cast<std::uint32_t>(f.size())).status,
            FrameStatus::malformed);
  Bytes big_doff = f;
  big_doff[34 + 12] = 0xF0;  // 60 octets of TCP header in a 24-octet segment
  EXPECT_EQ(decode_frame(1, big_doff, static_cast<std::uint32_t>(f.size())).status,
            FrameStatus::malformed);
}

TEST(NetDecode, Ipv4FragmentIsUnsupported) {
  Bytes f = encode_tcp_frame(spec_v4(), view("fragment"));
  f[20] = 0x20;  // MF, offset 0
  FrameDecode d = decode_frame(1, f, static_cast<std::uint32_t>(f.size()));
  EXPECT_EQ(d.status, FrameStatus::unsupported);
  EXPECT_NE(d.detail.find("fragment"), std::string::npos);
  f[20] = 0x00;
  f[21] = 0x10;  // offset 128, last fragment
  EXPECT_EQ(decode_frame(1, f, static_cast<std::uint32_t>(f.size())).status,
            FrameStatus::unsupported);
}

TEST(NetDecode, UdpAndArpAreNotTcp) {
  Bytes f = encode_tcp_frame(spec_v4(), view("datagram"));
  f[14 + 9] = 17;  // UDP
  EXPECT_EQ(decode_frame(1, f, static_cast<std::uint32_t>(f.size())).status, FrameStatus::not_tcp);
  Bytes arp = encode_tcp_frame(spec_v4(), {});
  arp[12] = 0x08;
  arp[13] = 0x06;
  EXPECT_EQ(decode_frame(1, arp, static_cast<std::uint32_t>(arp.size())).status,
            FrameStatus::not_tcp);
}

TEST(NetDecode, UnknownLinkTypeIsUnsupported) {
  Bytes f = encode_tcp_frame(spec_v4(), {});
  EXPECT_EQ(decode_frame(105, f, static_cast<std::uint32_t>(f.size())).status,
            FrameStatus::unsupported);
}

// Inserts an IPv6 extension header of `length` octets (type `type`) after the fixed header.
Bytes with_ipv6_extension(Bytes f, std::uint8_t type, std::size_t length) {
  Bytes ext(length, 0);
  ext[0] = f[14 + 6];  // next header: what used to follow
  ext[1] = static_cast<std::uint8_t>(length / 8 - 1);
  f[14 + 6] = type;
  f.insert(f.begin() + 54, ext.begin(), ext.end());
  std::uint16_t plen = static_cast<std::uint16_t>(f.size() - 54);
  f[18] = static_cast<std::uint8_t>(plen >> 8);
  f[19] = static_cast<std::uint8_t>(plen);
  return f;
}

TEST(NetDecode, Ipv6ExtensionHeaders) {
  TcpFrameSpec s = spec_v6();
  Bytes f = encode_tcp_frame(s, view("ext"));
  Bytes g = with_ipv6_extension(with_ipv6_extension(f, 60, 16), 0, 8);  // hop-by-hop, dest opts
  expect_segment(decode_frame(1, g, static_cast<std::uint32_t>(g.size())), s, "ext");
  Bytes r = with_ipv6_extension(f, 43, 24);  // routing
  expect_segment(decode_frame(1, r, static_cast<std::uint32_t>(r.size())), s, "ext");
  Bytes frag = with_ipv6_extension(f, 44, 8);
  EXPECT_EQ(decode_frame(1, frag, static_cast<std::uint32_t>(frag.size())).status,
            FrameStatus::unsupported);
  // Cut inside the extension headers.
  FrameDecode c = decode_frame(1, ByteView(g).first(54 + 4), static_cast<std::uint32_t>(g.size()));
  EXPECT_EQ(c.status, FrameStatus::malformed);
  EXPECT_NE(c.detail.find("cut by snaplen"), std::string::npos) << c.detail;
}

TEST(NetDecode, EveryPrefixIsSafe) {
  TcpFrameSpec s = spec_v6();
  s.vlan = 7;
  s.mss = 1440;
  std::vector<std::pair<std::uint32_t, Bytes>> frames;
  frames.emplace_back(1, encode_tcp_frame(spec_v4(), view("prefix test payload")));
  frames.emplace_back(1, with_ipv6_extension(encode_tcp_frame(spec_v6(), view("p")), 0, 16));
  frames.emplace_back(1, encode_tcp_frame(s, view("tagged v6")));
  Bytes eth = encode_tcp_frame(spec_v4(), view("cooked"));
  frames.emplace_back(113, relink(eth, Bytes{0, 0, 0, 1, 0, 6, 2, 0, 0, 0, 0, 1, 0, 0, 8, 0}));
  frames.emplace_back(
      276, relink(eth, Bytes{8, 0, 0, 0, 0, 0, 0, 2, 0, 1, 0, 6, 2, 0, 0, 0, 0, 1, 0, 0}));
  frames.emplace_back(0, relink(eth, Bytes{2, 0, 0, 0}));
  frames.emplace_back(101, relink(eth, {}));
  for (const auto& [lt, f] : frames) {
    for (std::size_t n = 0; n <= f.size(); ++n) {
      // Each prefix in its own allocation so that a sanitizer sees any over-read.
      Bytes prefix(f.begin(), f.begin() + static_cast<std::ptrdiff_t>(n));
      FrameDecode d = decode_frame(lt, prefix, static_cast<std::uint32_t>(f.size()));
      if (d.status == FrameStatus::tcp) {
        EXPECT_LE(d.tcp.payload.size(), d.tcp.payload_length);
        EXPECT_EQ(d.tcp.truncated(), n < f.size());
      } else {
        EXPECT_EQ(d.status, FrameStatus::malformed) << lt << " " << n;
        EXPECT_FALSE(d.detail.empty());
      }
      // And with the wire length equal to the prefix: lengths must not be trusted.
      (void)decode_frame(lt, prefix, static_cast<std::uint32_t>(n));
    }
  }
}

// ---- SCTP (IP protocol 132) and SCTP over UDP (RFC 6951) ------------------------------------

// A 16-octet stand-in for an SCTP packet: net/ does not decode the SCTP header itself.
const Bytes kSctpPacket = {0x13, 0x89, 0x1b, 0x59, 1, 2, 3, 4, 0, 0, 0, 0, 11, 0, 0, 4};

SctpFrameSpec sctp_spec(bool v6, bool udp) {
  SctpFrameSpec s;
  s.src = addr(v6 ? "2001:db8::1" : "10.0.0.1");
  s.dst = addr(v6 ? "2001:db8::2" : "10.0.0.2");
  s.over_udp = udp;
  s.udp_src_port = 40000;
  s.udp_dst_port = 9899;
  return s;
}

TEST(NetDecode, SctpOverIpv4AndIpv6) {
  for (bool v6 : {false, true}) {
    const Bytes f = encode_sctp_frame(sctp_spec(v6, false), kSctpPacket);
    const FrameDecode d = decode_frame(1, f, static_cast<std::uint32_t>(f.size()));
    ASSERT_EQ(d.status, FrameStatus::sctp) << d.detail;
    EXPECT_EQ(d.sctp.src, addr(v6 ? "2001:db8::1" : "10.0.0.1"));
    EXPECT_EQ(d.sctp.dst, addr(v6 ? "2001:db8::2" : "10.0.0.2"));
    EXPECT_FALSE(d.sctp.over_udp);
    EXPECT_EQ(Bytes(d.sctp.packet.begin(), d.sctp.packet.end()), kSctpPacket);
    EXPECT_EQ(d.sctp.packet_length, kSctpPacket.size());
    EXPECT_FALSE(d.sctp.truncated());
    EXPECT_EQ(f[14 + (v6 ? 6 : 9)], 132);
  }
}

TEST(NetDecode, SctpOverUdpPort9899) {
  for (bool v6 : {false, true}) {
    const Bytes f = encode_sctp_frame(sctp_spec(v6, true), kSctpPacket);
    const FrameDecode d = decode_frame(1, f, static_cast<std::uint32_t>(f.size()));
    ASSERT_EQ(d.status, FrameStatus::sctp) << d.detail;
    EXPECT_TRUE(d.sctp.over_udp);
    EXPECT_EQ(d.sctp.udp_src_port, 40000);
    EXPECT_EQ(d.sctp.udp_dst_port, 9899);
    EXPECT_EQ(Bytes(d.sctp.packet.begin(), d.sctp.packet.end()), kSctpPacket);
    // The UDP checksum over the pseudo header and the datagram folds to all ones.
    const std::size_t ip = v6 ? 40 : 20;
    const ByteView udp = ByteView(f).subspan(14 + ip);
    std::uint32_t sum = sum16(udp) + 17 + static_cast<std::uint32_t>(udp.size());
    sum += sum16(ByteView(f).subspan(14 + (v6 ? 8 : 12), v6 ? 32 : 8));
    EXPECT_EQ(fold(sum), 0xFFFF) << v6;
  }
  // Another UDP port is not SCTP.
  SctpFrameSpec other = sctp_spec(false, true);
  other.udp_dst_port = 53;
  const Bytes f = encode_sctp_frame(other, kSctpPacket);
  EXPECT_EQ(decode_frame(1, f, static_cast<std::uint32_t>(f.size())).status, FrameStatus::not_tcp);
}

// RFC 6951 lets the encapsulation port be configured: on other ports a datagram is SCTP when the
// packet's CRC32c checksum (RFC 9260 §6.8) is right. Issue 41.
TEST(NetDecode, SctpOverUdpOnAnotherPortIsRecognisedByItsChecksum) {
  std::vector<std::uint8_t> good(kSctpPacket.begin(), kSctpPacket.end());
  wire::sctp_write_checksum(good);
  ASSERT_TRUE(wire::sctp_checksum_ok(good));
  for (bool v6 : {false, true}) {
    SctpFrameSpec spec = sctp_spec(v6, true);
    spec.udp_src_port = 5001;
    spec.udp_dst_port = 5002;
    const Bytes f = encode_sctp_frame(spec, good);
    const FrameDecode d = decode_frame(1, f, static_cast<std::uint32_t>(f.size()));
    ASSERT_EQ(d.status, FrameStatus::sctp) << d.detail;
    EXPECT_TRUE(d.sctp.over_udp);
    EXPECT_EQ(d.sctp.udp_src_port, 5001);
    EXPECT_EQ(d.sctp.udp_dst_port, 5002);
    EXPECT_EQ(Bytes(d.sctp.packet.begin(), d.sctp.packet.end()), Bytes(good.begin(), good.end()));
  }
  SctpFrameSpec spec = sctp_spec(false, true);
  spec.udp_dst_port = 5002;
  const auto status = [&](const Bytes& packet, std::size_t cut = 0) {
    Bytes f = encode_sctp_frame(spec, packet);
    const auto wire_length = static_cast<std::uint32_t>(f.size());
    f.resize(f.size() - cut);
    return decode_frame(1, f, wire_length).status;
  };
  // One bit off: other data on that port.
  Bytes bad(good.begin(), good.end());
  bad[13] ^= 1;
  EXPECT_EQ(status(bad), FrameStatus::not_tcp);
  // Checksum 0 (left to an offloading NIC): not recognised, as the checksum cannot say.
  EXPECT_EQ(status(kSctpPacket), FrameStatus::not_tcp);
  // Cut by snaplen: the checksum cannot be computed.
  EXPECT_EQ(status(Bytes(good.begin(), good.end()), 1), FrameStatus::not_tcp);
  // Shorter than a common header and a chunk header.
  Bytes tiny(good.begin(), good.begin() + 12);
  wire::sctp_write_checksum(tiny);
  EXPECT_EQ(status(tiny), FrameStatus::not_tcp);
}

TEST(NetDecode, SctpCutOrShortIsMalformedAndSnaplenIsTruncation) {
  const Bytes f = encode_sctp_frame(sctp_spec(false, false), kSctpPacket);
  // Cut inside the common header: malformed. Cut after it: an SCTP packet, truncated.
  for (std::size_t n = 14 + 20; n < f.size(); ++n) {
    const FrameDecode d =
        decode_frame(1, ByteView(f).first(n), static_cast<std::uint32_t>(f.size()));
    if (n < 14 + 20 + 12) {
      EXPECT_EQ(d.status, FrameStatus::malformed) << n;
      EXPECT_FALSE(d.detail.empty());
    } else {
      ASSERT_EQ(d.status, FrameStatus::sctp) << n;
      EXPECT_TRUE(d.sctp.truncated());
    }
  }
  // An IP payload shorter than the common header.
  Bytes shortp = encode_sctp_frame(sctp_spec(false, false), ByteView(kSctpPacket).first(8));
  EXPECT_EQ(decode_frame(1, shortp, static_cast<std::uint32_t>(shortp.size())).status,
            FrameStatus::malformed);
  // A UDP length past the IP payload.
  Bytes udp = encode_sctp_frame(sctp_spec(false, true), kSctpPacket);
  udp[14 + 20 + 4] = 0x7F;
  EXPECT_EQ(decode_frame(1, udp, static_cast<std::uint32_t>(udp.size())).status,
            FrameStatus::malformed);
}

}  // namespace
}  // namespace ddpscope::net
