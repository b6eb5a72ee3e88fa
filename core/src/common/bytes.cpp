// SPDX-License-Identifier: GPL-2.0-or-later
#include "ddpscope/common/bytes.h"

namespace ddpscope {

void ByteWriter::le(std::uint64_t v, std::size_t octets) {
  for (std::size_t i = 0; i < octets; ++i)
    out_.push_back(static_cast<std::uint8_t>(v >> (8 * i)));
}

void ByteWriter::be(std::uint64_t v, std::size_t octets) {
  for (std::size_t i = octets; i-- > 0;)
    out_.push_back(static_cast<std::uint8_t>(v >> (8 * i)));
}

void ByteWriter::zeros(std::size_t n) {
  out_.resize(out_.size() + n);
}

// Lower-case hex, two digits per octet, no separators; "..." marks a cut at max_bytes.
std::string to_hex(ByteView data, std::size_t max_bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  const std::size_t n = data.size() < max_bytes ? data.size() : max_bytes;
  std::string s;
  s.reserve(2 * n + 3);
  for (std::size_t i = 0; i < n; ++i) {
    s.push_back(kDigits[data[i] >> 4]);
    s.push_back(kDigits[data[i] & 0x0F]);
  }
  if (n < data.size()) s += "...";
  return s;
}

std::string hex_word(std::uint32_t v) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string s = "0x00000000";
  for (int i = 9; i >= 2; --i, v >>= 4)
    s[static_cast<std::size_t>(i)] = kDigits[v & 15];
  return s;
}

std::string hex_number(std::uint64_t v) {
  static constexpr char kDigits[] = "0123456789abcdef";
  char buf[16];
  std::size_t n = 0;
  do {
    buf[n++] = kDigits[v & 15];
    v >>= 4;
  } while (v != 0);
  std::string s = "0x";
  while (n > 0)
    s += buf[--n];
  return s;
}

}  // namespace ddpscope
