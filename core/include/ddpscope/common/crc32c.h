// SPDX-License-Identifier: GPL-2.0-or-later
// CRC32C (Castagnoli) as used by MPA (RFC 5044 §4.2) and iSCSI, computed by ISA-L.
#pragma once

#include <cstdint>

#include "ddpscope/common/bytes.h"

namespace ddpscope {

// Incremental CRC32C. value() is the standard CRC (init 0xFFFFFFFF, final xor 0xFFFFFFFF),
// e.g. crc32c("123456789") == 0xE3069283.
class Crc32c {
 public:
  void update(ByteView data);
  std::uint32_t value() const { return ~state_; }
  void reset() { state_ = 0xFFFFFFFFu; }

 private:
  std::uint32_t state_ = 0xFFFFFFFFu;
};

std::uint32_t crc32c(ByteView data);

// MPA puts the standard CRC value on the wire least significant byte first (as iSCSI does).
inline std::uint32_t mpa_crc_from_wire(const std::uint8_t* p) {
  return load_le32(p);
}
void mpa_crc_to_wire(std::uint32_t crc, std::uint8_t* out);

}  // namespace ddpscope
