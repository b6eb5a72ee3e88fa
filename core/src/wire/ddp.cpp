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

namespace {

// The header at data[0] into `h`: its size, the octets it needs (more than data holds when it
// is cut). The T bit of the first octet selects the size.
std::size_t read_ddp_header(ByteView data, DdpHeader& h) {
  h.control = DdpControl::from_byte(data[ddp_field::control.offset]);
  const std::size_t size = h.size();
  if (data.size() < size) return size;
  const std::uint8_t* p = data.data();
  h.rsvd_ulp0 = p[ddp_field::rsvd_ulp.offset];
  if (h.control.tagged) {
    h.stag = load_be32(p + ddp_field::stag.offset);
    h.to = load_be64(p + ddp_field::to.offset);
  } else {
    h.rsvd_ulp1 = load_be32(p + ddp_field::rsvd_ulp1.offset);
    h.qn = load_be32(p + ddp_field::qn.offset);
    h.msn = load_be32(p + ddp_field::msn.offset);
    h.mo = load_be32(p + ddp_field::mo.offset);
  }
  return size;
}

}  // namespace

// Nothing here is validated (version, reserved bits and QN belong to the engine), so a complete
// header always decodes.
Result<DdpHeader> decode_ddp_header(ByteView data) {
  if (data.empty()) return Result<DdpHeader>::need_more(kDdpTaggedHeaderSize);
  DdpHeader h;
  const std::size_t size = read_ddp_header(data, h);
  if (data.size() < size) return Result<DdpHeader>::need_more(size);
  return Result<DdpHeader>::ok(h, size);
}

// The encoder appends the fields in table order; each layout fills its header exactly.
static_assert(ddp_field::control.end() == ddp_field::rsvd_ulp.offset &&
              ddp_field::rsvd_ulp.end() == ddp_field::stag.offset &&
              ddp_field::stag.end() == ddp_field::to.offset &&
              ddp_field::to.end() == kDdpTaggedHeaderSize);
static_assert(ddp_field::rsvd_ulp.end() == ddp_field::rsvd_ulp1.offset &&
              ddp_field::rsvd_ulp1.end() == ddp_field::qn.offset &&
              ddp_field::qn.end() == ddp_field::msn.offset &&
              ddp_field::msn.end() == ddp_field::mo.offset &&
              ddp_field::mo.end() == kDdpUntaggedHeaderSize);

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
// Decoded per FPDU: the header is read in place (no Result of its own).
bool read_ddp_segment(ByteView ulpdu, DdpSegment& out) {
  const std::size_t size =
      ulpdu.empty() ? kDdpTaggedHeaderSize : read_ddp_header(ulpdu, out.header);
  if (ulpdu.size() < size) return false;
  out.payload = ulpdu.subspan(size);
  return true;
}

Result<DdpSegment> decode_ddp_segment(ByteView ulpdu) {
  DdpSegment s;
  if (!read_ddp_segment(ulpdu, s)) {
    return Result<DdpSegment>::malformed("ddp.truncated", ulpdu.size(),
                                         "ULPDU shorter than its DDP header");
  }
  return Result<DdpSegment>::ok(s, ulpdu.size());
}

}  // namespace ddpscope::wire
