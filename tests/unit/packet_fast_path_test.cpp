// SPDX-License-Identifier: GPL-2.0-or-later
// decode_frame's fast path (the common Ethernet II + IPv4 + TCP frame in a straight line) held to
// the general decode: for every frame it takes, the same FrameDecode field for field (views by
// address, not only by content); every other frame left to the general decode. The frames are
// the common one and its neighbours on every side of each test the fast path makes, each cut at
// every length and with every octet of its headers changed.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "ddpscope/net/packet.h"

namespace ddpscope::net {
namespace {

Address addr(std::string_view text) {
  return *Address::parse(text);
}

TcpFrameSpec spec(bool v6 = false) {
  TcpFrameSpec s;
  s.src = Endpoint{addr(v6 ? "2001:db8::1" : "192.168.10.1"), 42742};
  s.dst = Endpoint{addr(v6 ? "2001:db8::2" : "192.168.10.2"), 4420};
  s.seq = 0xF1020304;
  s.ack = 0xA0B0C0D0;
  s.flags = tcp_flag::ack | tcp_flag::psh;
  s.window = 0xFEDC;
  return s;
}

Bytes payload(std::size_t n) {
  Bytes b(n);
  for (std::size_t i = 0; i < n; ++i)
    b[i] = static_cast<std::uint8_t>(i * 7 + 1);
  return b;
}

void set_be16(Bytes& f, std::size_t at, std::size_t v) {
  f[at] = static_cast<std::uint8_t>(v >> 8);
  f[at + 1] = static_cast<std::uint8_t>(v);
}

// `f` (an Ethernet II + IPv4 + TCP frame without TCP options) with `options` inserted after the
// TCP header's fixed part, the data offset and the IPv4 total length grown to match.
Bytes with_tcp_options(Bytes f, const Bytes& options) {
  f.insert(f.begin() + 54, options.begin(), options.end());
  f[46] = static_cast<std::uint8_t>(((20 + options.size()) / 4) << 4);
  set_be16(f, 16, (f[16] << 8 | f[17]) + options.size());
  return f;
}

// `f` with `n` octets of IPv4 options (NOPs) after the fixed header, IHL and total length grown.
Bytes with_ip_options(Bytes f, std::size_t n) {
  f.insert(f.begin() + 34, n, std::uint8_t{1});
  f[14] = static_cast<std::uint8_t>(0x40 | (20 + n) / 4);
  set_be16(f, 16, (f[16] << 8 | f[17]) + n);
  return f;
}

bool same_address(const Address& a, const Address& b) {
  return a.v6 == b.v6 && a.bytes == b.bytes;
}

// Every field, and the views by where they point: what the engine reads of a decode.
void expect_same(const FrameDecode& fast, const FrameDecode& general, const std::string& what) {
  SCOPED_TRACE(what);
  EXPECT_EQ(fast.status, general.status);
  EXPECT_EQ(fast.detail, general.detail);
  const TcpSegment& a = fast.tcp;
  const TcpSegment& b = general.tcp;
  EXPECT_TRUE(same_address(a.src.addr, b.src.addr));
  EXPECT_TRUE(same_address(a.dst.addr, b.dst.addr));
  EXPECT_EQ(a.src.port, b.src.port);
  EXPECT_EQ(a.dst.port, b.dst.port);
  EXPECT_EQ(a.seq, b.seq);
  EXPECT_EQ(a.ack, b.ack);
  EXPECT_EQ(a.flags, b.flags);
  EXPECT_EQ(a.window, b.window);
  EXPECT_EQ(a.mss, b.mss);
  EXPECT_EQ(a.has_timestamps, b.has_timestamps);
  EXPECT_EQ(a.options_size, b.options_size);
  EXPECT_EQ(a.payload.data(), b.payload.data());
  EXPECT_EQ(a.payload.size(), b.payload.size());
  EXPECT_EQ(a.payload_length, b.payload_length);
  const SctpDatagram& s = fast.sctp;
  const SctpDatagram& t = general.sctp;
  EXPECT_TRUE(same_address(s.src, t.src));
  EXPECT_TRUE(same_address(s.dst, t.dst));
  EXPECT_EQ(s.packet.data(), t.packet.data());
  EXPECT_EQ(s.packet.size(), t.packet.size());
  EXPECT_EQ(s.packet_length, t.packet_length);
  EXPECT_EQ(s.over_udp, t.over_udp);
  EXPECT_EQ(s.udp_src_port, t.udp_src_port);
  EXPECT_EQ(s.udp_dst_port, t.udp_dst_port);
}

// Decodes of every kind, for decode_frame_into to write over: what it leaves of one must not
// show. Their views point into frames that live as long as the test program.
const std::vector<FrameDecode>& earlier_decodes() {
  static const std::vector<Bytes> frames = [] {
    std::vector<Bytes> f;
    TcpFrameSpec syn = spec(true);
    syn.mss = 1220;
    f.push_back(encode_tcp_frame(syn, payload(3)));  // IPv6, MSS
    f.push_back(with_tcp_options(encode_tcp_frame(spec(), payload(7)),
                                 {2, 4, 5, 0xB4, 1, 1, 8, 10, 1, 2, 3, 4, 5, 6, 7, 8}));
    SctpFrameSpec sctp;
    sctp.src = addr("2001:db8::7");
    sctp.dst = addr("2001:db8::8");
    sctp.over_udp = true;
    f.push_back(encode_sctp_frame(sctp, Bytes{0x13, 0x89, 0x1b, 0x59, 1, 2, 3, 4, 0, 0, 0, 0}));
    const Bytes ack = encode_tcp_frame(spec(), {});
    f.emplace_back(ack.begin(), ack.begin() + 40);  // cut inside the TCP header: malformed
    return f;
  }();
  static const std::vector<FrameDecode> decodes = [] {
    std::vector<FrameDecode> d;
    d.emplace_back();  // a default FrameDecode
    for (const Bytes& f : frames)
      d.push_back(decode_frame(1, f, static_cast<std::uint32_t>(f.size())));
    d.push_back(decode_frame(1, frames[0], 0));
    d.push_back(decode_frame(9999, frames[0], 0));  // unsupported
    return d;
  }();
  return decodes;
}

// Decodes `data` every way: the fast path (when it takes the frame), decode_frame and
// decode_frame_into (over a decode of every kind) must give what the general decode gives.
// Returns whether the fast path took it.
bool check(std::uint32_t link_type, ByteView data, std::uint32_t wire, const std::string& what) {
  const FrameDecode general = detail::decode_frame_general(link_type, data, wire);
  FrameDecode fast;
  const bool took = detail::decode_frame_fast(link_type, data, wire, fast);
  if (took) {
    EXPECT_EQ(general.status, FrameStatus::tcp) << what;
    expect_same(fast, general, what + " (fast path)");
  }
  expect_same(decode_frame(link_type, data, wire), general, what + " (decode_frame)");
  for (const FrameDecode& earlier : earlier_decodes()) {
    FrameDecode d = earlier;
    decode_frame_into(d, link_type, data, wire);
    expect_same(d, general,
                what + " (decode_frame_into over a decode of status " +
                    std::to_string(static_cast<int>(earlier.status)) + ")");
  }
  return took;
}

TEST(NetDecodeFastPath, EarlierDecodesAreOfEveryKind) {
  std::vector<FrameStatus> statuses;
  bool v6 = false, mss = false, timestamps = false, detail = false;
  for (const FrameDecode& d : earlier_decodes()) {
    statuses.push_back(d.status);
    v6 |= d.tcp.src.addr.v6;
    mss |= d.tcp.mss.has_value();
    timestamps |= d.tcp.has_timestamps;
    detail |= !d.detail.empty();
  }
  for (FrameStatus s :
       {FrameStatus::tcp, FrameStatus::sctp, FrameStatus::malformed, FrameStatus::unsupported})
    EXPECT_NE(std::find(statuses.begin(), statuses.end(), s), statuses.end());
  EXPECT_TRUE(v6 && mss && timestamps && detail);
}

// Each prefix of `f` (in its own allocation, for the sanitizers), with the wire length of the
// whole frame and of the prefix. Returns how many the fast path took.
int check_prefixes(const Bytes& f, const std::string& what) {
  int took = 0;
  for (std::size_t n = 0; n <= f.size(); ++n) {
    const Bytes prefix(f.begin(), f.begin() + static_cast<std::ptrdiff_t>(n));
    const std::string at = what + " cut at " + std::to_string(n);
    took += check(1, prefix, static_cast<std::uint32_t>(f.size()), at);
    took += check(1, prefix, static_cast<std::uint32_t>(n), at + ", wire length too");
    took += check(1, prefix, 0, at + ", wire length 0");
  }
  return took;
}

TEST(NetDecodeFastPath, TakesTheCommonFrame) {
  const Bytes f = encode_tcp_frame(spec(), payload(64));
  ASSERT_TRUE(check(1, f, static_cast<std::uint32_t>(f.size()), "a Send-sized segment"));
  const Bytes ack = encode_tcp_frame(spec(), {});
  ASSERT_TRUE(check(1, ack, static_cast<std::uint32_t>(ack.size()), "a pure ACK"));
  // What the fast path made is the segment itself (not only what the general decode made).
  FrameDecode d;
  ASSERT_TRUE(detail::decode_frame_fast(1, f, static_cast<std::uint32_t>(f.size()), d));
  EXPECT_EQ(d.status, FrameStatus::tcp);
  EXPECT_EQ(d.tcp.src, spec().src);
  EXPECT_EQ(d.tcp.dst, spec().dst);
  EXPECT_EQ(d.tcp.seq, 0xF1020304u);
  EXPECT_EQ(d.tcp.ack, 0xA0B0C0D0u);
  EXPECT_EQ(d.tcp.flags, tcp_flag::ack | tcp_flag::psh);
  EXPECT_EQ(d.tcp.window, 0xFEDC);
  EXPECT_EQ(d.tcp.payload.data(), f.data() + 54);
  EXPECT_EQ(d.tcp.payload.size(), 64u);
  EXPECT_EQ(d.tcp.payload_length, 64u);
  EXPECT_EQ(d.tcp.options_size, 0);
}

TEST(NetDecodeFastPath, TcpOptionsAreParsedAsTheGeneralDecodeDoes) {
  TcpFrameSpec syn = spec();
  syn.flags = tcp_flag::syn;
  syn.mss = 1460;
  const Bytes mss = encode_tcp_frame(syn, {});
  EXPECT_TRUE(check(1, mss, static_cast<std::uint32_t>(mss.size()), "SYN with MSS"));
  const Bytes base = encode_tcp_frame(spec(), payload(40));
  // NOP NOP timestamps (10 octets): a data offset of 8, as Linux sends every segment.
  const Bytes ts = with_tcp_options(base, {1, 1, 8, 10, 1, 2, 3, 4, 5, 6, 7, 8});
  EXPECT_TRUE(check(1, ts, static_cast<std::uint32_t>(ts.size()), "timestamps"));
  FrameDecode d;
  ASSERT_TRUE(detail::decode_frame_fast(1, ts, static_cast<std::uint32_t>(ts.size()), d));
  EXPECT_TRUE(d.tcp.has_timestamps);
  EXPECT_EQ(d.tcp.options_size, 12);
  EXPECT_EQ(d.tcp.payload.size(), 40u);
  const Bytes both =
      with_tcp_options(base, {2, 4, 0x23, 0x28, 1, 1, 8, 10, 1, 2, 3, 4, 5, 6, 7, 8});
  EXPECT_TRUE(check(1, both, static_cast<std::uint32_t>(both.size()), "MSS and timestamps"));
  // A damaged option list ends the parse, not the segment: the same either way.
  const Bytes bad = with_tcp_options(base, {2, 9, 0, 0, 8, 1, 0, 0});
  EXPECT_TRUE(check(1, bad, static_cast<std::uint32_t>(bad.size()), "bad option lengths"));
  const Bytes eol = with_tcp_options(base, {0, 2, 4, 5});
  EXPECT_TRUE(check(1, eol, static_cast<std::uint32_t>(eol.size()), "end of list first"));
  const Bytes max = with_tcp_options(base, Bytes(40, 1));
  EXPECT_TRUE(check(1, max, static_cast<std::uint32_t>(max.size()), "data offset 15"));
}

TEST(NetDecodeFastPath, LeavesEveryOtherShapeToTheGeneralDecode) {
  const Bytes f = encode_tcp_frame(spec(), payload(30));
  const auto wire = [](const Bytes& b) { return static_cast<std::uint32_t>(b.size()); };
  TcpFrameSpec tagged = spec();
  tagged.vlan = 12;
  EXPECT_FALSE(check(1, encode_tcp_frame(tagged, payload(30)), wire(f) + 4, "802.1Q"));
  EXPECT_FALSE(check(1, encode_tcp_frame(spec(true), payload(30)), wire(f) + 20, "IPv6"));
  const Bytes ip_options = with_ip_options(f, 8);
  EXPECT_FALSE(check(1, ip_options, wire(ip_options), "IPv4 options"));
  // The same octets under other link types: raw IP, and Ethernet's number for another.
  const Bytes raw(f.begin() + 14, f.end());
  EXPECT_FALSE(check(101, raw, wire(raw), "raw IPv4"));
  EXPECT_FALSE(check(113, f, wire(f), "Linux cooked"));
  EXPECT_FALSE(check(12345, f, wire(f), "unknown link type"));
  Bytes b = f;
  b[20] = 0x20;  // MF
  EXPECT_FALSE(check(1, b, wire(b), "first fragment"));
  b[20] = 0x00;
  b[21] = 0x01;  // offset 8, last
  EXPECT_FALSE(check(1, b, wire(b), "last fragment"));
  b[20] = 0x40;  // DF and an offset
  EXPECT_FALSE(check(1, b, wire(b), "DF with an offset"));
  b = f;
  b[20] = 0x80;  // the reserved flag: not a fragment, the general decode ignores it too
  EXPECT_TRUE(check(1, b, wire(b), "reserved flag"));
  b = f;
  b[20] = 0x40;  // DF
  EXPECT_TRUE(check(1, b, wire(b), "DF"));
  for (std::uint8_t proto : {0, 1, 17, 50, 132, 255}) {
    b = f;
    b[23] = proto;
    EXPECT_FALSE(check(1, b, wire(b), "IP protocol " + std::to_string(proto)));
  }
  for (std::uint8_t v : {0x44, 0x40, 0x46, 0x4F, 0x55, 0x65, 0x05, 0xF5}) {
    b = f;
    b[14] = v;
    EXPECT_FALSE(check(1, b, wire(b), "version and IHL " + std::to_string(v)));
  }
  for (std::uint16_t ethertype : {0x0806, 0x86DD, 0x8100, 0x88A8, 0x9100, 0x0000, 0x0008}) {
    b = f;
    set_be16(b, 12, ethertype);
    EXPECT_FALSE(check(1, b, wire(b), "ethertype " + std::to_string(ethertype)));
  }
}

TEST(NetDecodeFastPath, LengthsAgreeWithTheGeneralDecode) {
  const Bytes f = encode_tcp_frame(spec(), payload(30));  // total length 70
  const auto wire = [](const Bytes& b) { return static_cast<std::uint32_t>(b.size()); };
  int took = 0;
  // Every total length from 0 to past the frame: 0 (GSO), below the IP header, below a TCP
  // header, within the capture (the rest Ethernet padding), beyond it.
  for (std::size_t total = 0; total <= 90; ++total) {
    Bytes b = f;
    set_be16(b, 16, total);
    took += check(1, b, wire(b), "total length " + std::to_string(total));
    took += check(1, b, wire(b) + 16, "total length " + std::to_string(total) + ", cut");
  }
  EXPECT_EQ(took, (70 - 40 + 1) + (86 - 40 + 1));
  // Every data offset against segments of several lengths.
  for (std::size_t doff = 0; doff < 16; ++doff) {
    for (std::size_t total : {40, 44, 59, 60, 70}) {
      Bytes b = f;
      b[46] = static_cast<std::uint8_t>(doff << 4 | 0x0F);  // reserved bits set too
      set_be16(b, 16, total);
      const bool fits = doff >= 5 && doff * 4 <= total - 20;
      EXPECT_EQ(
          check(1, b, wire(b),
                "data offset " + std::to_string(doff) + ", total length " + std::to_string(total)),
          fits);
    }
  }
  // Ethernet padding: a short segment in a frame padded to 60 octets.
  Bytes padded = encode_tcp_frame(spec(), payload(2));
  padded.resize(60, 0);
  EXPECT_TRUE(check(1, padded, wire(padded), "Ethernet padding"));
  FrameDecode d;
  ASSERT_TRUE(detail::decode_frame_fast(1, padded, wire(padded), d));
  EXPECT_EQ(d.tcp.payload.size(), 2u);
  // Cut by the snaplen after the TCP header: the fast path's, and truncated.
  EXPECT_TRUE(check(1, ByteView(f).first(60), wire(f), "snaplen 60"));
  ASSERT_TRUE(detail::decode_frame_fast(1, ByteView(f).first(60), wire(f), d));
  EXPECT_TRUE(d.tcp.truncated());
}

TEST(NetDecodeFastPath, EveryPrefixAgrees) {
  TcpFrameSpec syn = spec();
  syn.mss = 9000;
  const Bytes frames[] = {
      encode_tcp_frame(spec(), payload(64)),
      encode_tcp_frame(spec(), {}),
      encode_tcp_frame(syn, {}),
      with_tcp_options(encode_tcp_frame(spec(), payload(9)), {1, 1, 8, 10, 1, 2, 3, 4, 5, 6, 7, 8}),
      with_ip_options(encode_tcp_frame(spec(), payload(5)), 4),
      encode_tcp_frame(spec(true), payload(5)),
  };
  int took = 0;
  for (const Bytes& f : frames)
    took += check_prefixes(f, "frame of " + std::to_string(f.size()));
  // The first four are taken once their headers are whole (from 54, 54, 58 and 66 octets on)
  // with the whole frame's wire length, and whole with their own: 65 + 3 + 3 + 12.
  EXPECT_EQ(took, 85);
}

TEST(NetDecodeFastPath, EveryHeaderOctetChangedAgrees) {
  const Bytes frames[] = {
      encode_tcp_frame(spec(), payload(20)),
      with_tcp_options(encode_tcp_frame(spec(), payload(20)), {2, 4, 5, 0xB4}),
  };
  int took = 0, left = 0;
  for (const Bytes& f : frames) {
    const std::size_t headers = 54 + (f[46] >> 4) * 4 - 20;
    for (std::size_t at = 0; at < headers; ++at) {
      for (unsigned v : {0x00u, 0xFFu, 0x01u, 0x80u, f[at] ^ 0x01u, f[at] ^ 0x10u, f[at] + 4u}) {
        Bytes b = f;
        b[at] = static_cast<std::uint8_t>(v);
        const std::string what = "octet " + std::to_string(at) + " = " + std::to_string(v & 0xFF);
        const bool t = check(1, b, static_cast<std::uint32_t>(b.size()), what);
        took += t;
        left += !t;
      }
    }
  }
  // Changes to the MACs, addresses, ports and the like are taken; to the tests, mostly not.
  EXPECT_GT(took, 500);
  EXPECT_GT(left, 50);
}

}  // namespace
}  // namespace ddpscope::net
