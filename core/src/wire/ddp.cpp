// SPDX-License-Identifier: GPL-2.0-or-later
// DDP header codecs (RFC 5041 §4): the tagged (14 octets) and untagged (18 octets) headers.
#include "ddpscope/wire/mpa.h"
#include "ddpscope/wire/rdmap.h"

namespace ddpscope::wire {

std::uint8_t DdpControl::byte() const {
  std::uint8_t b =
      static_cast<std::uint8_t>(((reserved & 0x0F) << 2) | (version & kDdpVersionMask));
  if (tagged) b |= kDdpFlagTagged;
  if (last) b |= kDdpFlagLast;
  return b;
}

DdpControl DdpControl::from_byte(std::uint8_t b) {
  DdpControl c;
  c.tagged = (b & kDdpFlagTagged) != 0;
  c.last = (b & kDdpFlagLast) != 0;
  c.reserved = static_cast<std::uint8_t>((b & kDdpReservedMask) >> 2);
  c.version = b & kDdpVersionMask;
  return c;
}

// The T bit of the first octet selects the header size; nothing here is validated (version,
// reserved bits and QN belong to the engine), so a complete header always decodes.
Result<DdpHeader> decode_ddp_header(ByteView data) {
  if (data.empty()) return Result<DdpHeader>::need_more(kDdpTaggedHeaderSize);
  DdpHeader h;
  h.control = DdpControl::from_byte(data[0]);
  const std::size_t size = h.size();
  if (data.size() < size) return Result<DdpHeader>::need_more(size);
  ByteReader r(data.first(size));
  r.u8();
  h.rsvd_ulp0 = r.u8();
  if (h.control.tagged) {
    h.stag = r.be32();
    h.to = r.be64();
  } else {
    h.rsvd_ulp1 = r.be32();
    h.qn = r.be32();
    h.msn = r.be32();
    h.mo = r.be32();
  }
  return Result<DdpHeader>::ok(h, size);
}

void encode_ddp_header(const DdpHeader& header, ByteWriter& out) {
  out.u8(header.control.byte());
  out.u8(header.rsvd_ulp0);
  if (header.control.tagged) {
    out.be32(header.stag);
    out.be64(header.to);
  } else {
    out.be32(header.rsvd_ulp1);
    out.be32(header.qn);
    out.be32(header.msn);
    out.be32(header.mo);
  }
}

// A ULPDU is complete once MPA framed it, so a short one is malformed rather than incomplete.
Result<DdpSegment> decode_ddp_segment(ByteView ulpdu) {
  auto h = decode_ddp_header(ulpdu);
  if (!h) {
    return Result<DdpSegment>::malformed("ddp.truncated", ulpdu.size(),
                                         "ULPDU shorter than its DDP header");
  }
  DdpSegment s;
  s.header = h.value();
  s.payload = ulpdu.subspan(h.consumed());
  return Result<DdpSegment>::ok(s, ulpdu.size());
}

}  // namespace ddpscope::wire
