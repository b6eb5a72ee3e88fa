// SPDX-License-Identifier: GPL-2.0-or-later
#include "ddpscope/common/crc32c.h"

#include <isa-l/crc.h>

#include <climits>

namespace ddpscope {

// ISA-L's crc32_iscsi takes and returns the raw register: init 0xFFFFFFFF, no final xor.
void Crc32c::update(ByteView data) {
  const unsigned char* p = data.data();
  std::size_t n = data.size();
  while (n > 0) {
    const int chunk = n > static_cast<std::size_t>(INT_MAX / 2) ? INT_MAX / 2 : static_cast<int>(n);
    state_ = crc32_iscsi(const_cast<unsigned char*>(p), chunk, state_);
    p += chunk;
    n -= static_cast<std::size_t>(chunk);
  }
}

std::uint32_t crc32c(ByteView data) {
  Crc32c c;
  c.update(data);
  return c.value();
}

void mpa_crc_to_wire(std::uint32_t crc, std::uint8_t* out) {
  out[0] = static_cast<std::uint8_t>(crc);
  out[1] = static_cast<std::uint8_t>(crc >> 8);
  out[2] = static_cast<std::uint8_t>(crc >> 16);
  out[3] = static_cast<std::uint8_t>(crc >> 24);
}

}  // namespace ddpscope
