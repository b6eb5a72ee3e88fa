// SPDX-License-Identifier: GPL-2.0-or-later
// net::decode_frame over every link type: the first octet picks the link type, the next two
// the frame's claimed wire length (relative to what was captured), the rest is the frame.
// A decoded TCP payload must lie inside the captured octets and the claimed lengths must agree.
#include <array>
#include <cstdint>

#include "ddpscope/net/packet.h"
#include "fuzz_input.h"

namespace {

using namespace ddpscope;

// Every supported link type, DLT_RAW's platform aliases, and a few we do not decode.
constexpr std::array<std::uint32_t, 14> kLinkTypes{0,   1,  101, 108, 113, 228, 229,
                                                   276, 12, 14,  105, 127, 147, 0xFFFFFFFF};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  fuzz::FuzzInput fi(data, size);
  const std::uint32_t link = kLinkTypes[fi.u8() % kLinkTypes.size()];
  const std::uint16_t extra = fi.be16();
  const ByteView frame = fi.rest();
  const auto wire_length = static_cast<std::uint32_t>(frame.size() + extra);
  const auto d = net::decode_frame(link, frame, wire_length);
  (void)net::link_type_name(link);
  if (d.status == net::FrameStatus::sctp) {
    const ByteView s = d.sctp.packet;
    DDPSCOPE_FUZZ_CHECK(s.size() >= 12 && s.size() <= d.sctp.packet_length);
    DDPSCOPE_FUZZ_CHECK(s.data() >= frame.data() &&
                        s.data() + s.size() <= frame.data() + frame.size());
    fuzz::touch(s);
    return 0;
  }
  if (d.status != net::FrameStatus::tcp) {
    if (d.status != net::FrameStatus::not_tcp) DDPSCOPE_FUZZ_CHECK(!d.detail.empty());
    return 0;
  }
  DDPSCOPE_FUZZ_CHECK(net::is_supported_link_type(link));
  const ByteView p = d.tcp.payload;
  if (!p.empty()) {
    DDPSCOPE_FUZZ_CHECK(p.data() >= frame.data() &&
                        p.data() + p.size() <= frame.data() + frame.size());
  }
  fuzz::touch(p);
  DDPSCOPE_FUZZ_CHECK(p.size() <= d.tcp.payload_length);
  (void)d.tcp.src.to_string();
  (void)d.tcp.dst.to_string();
  // What decodes re-encodes: the generator's frame builder takes any decoded segment.
  net::TcpFrameSpec spec;
  spec.src = d.tcp.src;
  spec.dst = d.tcp.dst;
  spec.seq = d.tcp.seq;
  spec.flags = d.tcp.flags;
  spec.mss = d.tcp.mss;
  const Bytes again = net::encode_tcp_frame(spec, p);
  const auto d2 = net::decode_frame(1, again, static_cast<std::uint32_t>(again.size()));
  DDPSCOPE_FUZZ_CHECK(d2.status == net::FrameStatus::tcp);
  DDPSCOPE_FUZZ_CHECK(d2.tcp.payload.size() == p.size() && d2.tcp.seq == d.tcp.seq);
  return 0;
}
