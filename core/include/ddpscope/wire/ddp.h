// SPDX-License-Identifier: GPL-2.0-or-later
// Wire codecs for DDP (RFC 5041 §4): the tagged and untagged headers.
// Pure functions: no state, no I/O. Every decoder is bounds-checked and returns a Result;
// every encoder appends to a byte vector. Facts whose source is uncertain are marked
// "(verify)" in wire/ and nowhere else.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "ddpscope/common/bytes.h"
#include "ddpscope/common/result.h"
#include "ddpscope/wire/field.h"

namespace ddpscope::wire {

// ---------------------------------------------------------------------------------------------
// DDP (RFC 5041 §4)
// ---------------------------------------------------------------------------------------------

inline constexpr std::uint8_t kDdpFlagTagged = 0x80;
inline constexpr std::uint8_t kDdpFlagLast = 0x40;
inline constexpr std::uint8_t kDdpReservedMask = 0x3C;
inline constexpr std::uint8_t kDdpVersionMask = 0x03;
inline constexpr std::uint8_t kDdpVersion = 1;
inline constexpr std::size_t kDdpTaggedHeaderSize = 14;
inline constexpr std::size_t kDdpUntaggedHeaderSize = 18;

// The fields of a DDP header, from its first octet.
namespace ddp_field {
inline constexpr FieldSpan control{0, 1};   // T L Rsvd DV
inline constexpr FieldSpan rsvd_ulp{1, 1};  // RDMAP's control byte
// Tagged (RFC 5041 §4.2)
inline constexpr FieldSpan stag{2, 4};
inline constexpr FieldSpan to{6, 8};
// Untagged (RFC 5041 §4.3)
inline constexpr FieldSpan rsvd_ulp1{2, 4};  // RDMAP: the Invalidate STag
inline constexpr FieldSpan qn{6, 4};
inline constexpr FieldSpan msn{10, 4};
inline constexpr FieldSpan mo{14, 4};
}  // namespace ddp_field

struct DdpControl {
  bool tagged = false;
  bool last = false;
  std::uint8_t reserved = 0;  // the 4 Rsvd bits, shifted down
  std::uint8_t version = kDdpVersion;
  std::uint8_t byte() const;
  static DdpControl from_byte(std::uint8_t b) {
    DdpControl c;
    c.tagged = (b & kDdpFlagTagged) != 0;
    c.last = (b & kDdpFlagLast) != 0;
    c.reserved = static_cast<std::uint8_t>((b & kDdpReservedMask) >> 2);
    c.version = b & kDdpVersionMask;
    return c;
  }
  bool operator==(const DdpControl&) const = default;
};

// One DDP header, tagged or untagged. The first RsvdULP octet is RDMAP's control byte.
struct DdpHeader {
  DdpControl control;
  std::uint8_t rsvd_ulp0 = 0;  // RDMAP control byte
  // Tagged:
  std::uint32_t stag = 0;
  std::uint64_t to = 0;
  // Untagged:
  std::uint32_t rsvd_ulp1 = 0;  // RDMAP: Invalidate STag (Send with Invalidate) or 0
  std::uint32_t qn = 0;
  std::uint32_t msn = 0;
  std::uint32_t mo = 0;

  std::size_t size() const {
    return control.tagged ? kDdpTaggedHeaderSize : kDdpUntaggedHeaderSize;
  }
  bool operator==(const DdpHeader&) const = default;
};

Result<DdpHeader> decode_ddp_header(ByteView data);
void encode_ddp_header(const DdpHeader& header, ByteWriter& out);

// A DDP segment: header + payload view (into the ULPDU).
struct DdpSegment {
  DdpHeader header;
  ByteView payload;
};
Result<DdpSegment> decode_ddp_segment(ByteView ulpdu);
// The same decode into `out`, a fresh DdpSegment (the fields of the other header kind are left as
// they are), without building a Result: the engine's per-PDU path. False, and `out`
// unspecified, when the ULPDU is shorter than its header ("ddp.truncated").
bool read_ddp_segment(ByteView ulpdu, DdpSegment& out);

}  // namespace ddpscope::wire
