// SPDX-License-Identifier: GPL-2.0-or-later
// Byte views and big-endian (network order) access, and the upper layers' fixed-offset fields.
// Every read is bounds-checked by its caller through ByteReader; nothing here reads past the view
// it is given.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <vector>

namespace ddpscope {

using ByteView = std::span<const std::uint8_t>;
using Bytes = std::vector<std::uint8_t>;

inline std::uint16_t load_be16(const std::uint8_t* p) {
  return static_cast<std::uint16_t>((p[0] << 8) | p[1]);
}
inline std::uint32_t load_be32(const std::uint8_t* p) {
  return (std::uint32_t{p[0]} << 24) | (std::uint32_t{p[1]} << 16) | (std::uint32_t{p[2]} << 8) |
         std::uint32_t{p[3]};
}
inline std::uint64_t load_be64(const std::uint8_t* p) {
  return (std::uint64_t{load_be32(p)} << 32) | load_be32(p + 4);
}
inline std::uint32_t load_le32(const std::uint8_t* p) {
  return std::uint32_t{p[0]} | (std::uint32_t{p[1]} << 8) | (std::uint32_t{p[2]} << 16) |
         (std::uint32_t{p[3]} << 24);
}

// Fixed-offset fields of a view whose caller has checked that it holds them: the upper layers'
// layouts, little-endian (NVMe, SMB) and big-endian (iSCSI, XDR), of 1 to 8 octets.
inline std::uint64_t load_le(ByteView d, std::size_t at, std::size_t octets) {
  std::uint64_t v = 0;
  for (std::size_t i = octets; i-- > 0;)
    v = (v << 8) | d[at + i];
  return v;
}
inline std::uint64_t load_be(ByteView d, std::size_t at, std::size_t octets) {
  std::uint64_t v = 0;
  for (std::size_t i = 0; i < octets; ++i)
    v = (v << 8) | d[at + i];
  return v;
}
inline std::uint16_t le16(ByteView d, std::size_t at) {
  return static_cast<std::uint16_t>(load_le(d, at, 2));
}
inline std::uint32_t le24(ByteView d, std::size_t at) {
  return static_cast<std::uint32_t>(load_le(d, at, 3));
}
inline std::uint32_t le32(ByteView d, std::size_t at) {
  return static_cast<std::uint32_t>(load_le(d, at, 4));
}
inline std::uint64_t le64(ByteView d, std::size_t at) {
  return load_le(d, at, 8);
}
inline std::uint16_t be16(ByteView d, std::size_t at) {
  return static_cast<std::uint16_t>(load_be(d, at, 2));
}
inline std::uint32_t be24(ByteView d, std::size_t at) {
  return static_cast<std::uint32_t>(load_be(d, at, 3));
}
inline std::uint32_t be32(ByteView d, std::size_t at) {
  return static_cast<std::uint32_t>(load_be(d, at, 4));
}
inline std::uint64_t be64(ByteView d, std::size_t at) {
  return load_be(d, at, 8);
}

// Reads a view front to back; every read checks the remaining length first.
class ByteReader {
 public:
  explicit ByteReader(ByteView data) : data_(data) {}
  std::size_t offset() const { return pos_; }
  std::size_t remaining() const { return data_.size() - pos_; }
  bool has(std::size_t n) const { return remaining() >= n; }
  // Callers check has() first; these never read past the end (they return 0 instead).
  std::uint8_t u8() { return has(1) ? data_[pos_++] : 0; }
  std::uint16_t be16() { return has(2) ? advance(2, load_be16(&data_[pos_])) : 0; }
  std::uint32_t be32() { return has(4) ? advance(4, load_be32(&data_[pos_])) : 0; }
  std::uint64_t be64() { return has(8) ? advance(8, load_be64(&data_[pos_])) : 0; }
  ByteView take(std::size_t n) {
    if (!has(n)) return {};
    ByteView v = data_.subspan(pos_, n);
    pos_ += n;
    return v;
  }
  ByteView rest() const { return data_.subspan(pos_); }

 private:
  template <class T>
  T advance(std::size_t n, T v) {
    pos_ += n;
    return v;
  }
  ByteView data_;
  std::size_t pos_ = 0;
};

// Appends big-endian values to a byte vector.
class ByteWriter {
 public:
  explicit ByteWriter(Bytes& out) : out_(out) {}
  void u8(std::uint8_t v) { out_.push_back(v); }
  void be16(std::uint16_t v) {
    out_.push_back(static_cast<std::uint8_t>(v >> 8));
    out_.push_back(static_cast<std::uint8_t>(v));
  }
  void be32(std::uint32_t v) {
    be16(static_cast<std::uint16_t>(v >> 16));
    be16(static_cast<std::uint16_t>(v));
  }
  void be64(std::uint64_t v) {
    be32(static_cast<std::uint32_t>(v >> 32));
    be32(static_cast<std::uint32_t>(v));
  }
  // The low `octets` octets of v, least significant first (the upper layers' little-endian
  // fields), or most significant first. These three stay out of line: inlined into the
  // fixed-size encoders, GCC 12 at -O3 with _FORTIFY_SOURCE (the Debian package's flags) warns
  // of out-of-bounds copies in the vector's growth that cannot happen.
  [[gnu::noinline]] void le(std::uint64_t v, std::size_t octets);
  [[gnu::noinline]] void be(std::uint64_t v, std::size_t octets);
  void bytes(ByteView v) {
    if (v.empty()) return;
    const std::size_t at = out_.size();
    out_.resize(at + v.size());
    std::memcpy(out_.data() + at, v.data(), v.size());
  }
  [[gnu::noinline]] void zeros(std::size_t n);

 private:
  Bytes& out_;
};

std::string to_hex(ByteView data, std::size_t max_bytes = SIZE_MAX);
// "0x1f": a number in lowercase hexadecimal, no leading zeros (the form findings use).
std::string hex_number(std::uint64_t v);
// "0x00002b02": a 32-bit word in 8 digits, as Wireshark and the GUI show STags (RFC 5040 §4.4)
// and CRC32C values (RFC 5044 §4.4).
std::string hex_word(std::uint32_t v);
inline std::string hex_stag(std::uint32_t stag) {
  return hex_word(stag);
}

}  // namespace ddpscope
