// SPDX-License-Identifier: GPL-2.0-or-later
// A fuzz input read front to back: fixed-size fields first, what is left as bytes. Reads past
// the end yield zeros, so every input maps to some script (libFuzzer explores them all).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "ddpscope/common/bytes.h"

namespace ddpscope::fuzz {

class FuzzInput {
 public:
  FuzzInput(const std::uint8_t* data, std::size_t size) : data_(data, size) {}
  bool empty() const { return pos_ >= data_.size(); }
  std::size_t remaining() const { return data_.size() - pos_; }
  std::uint8_t u8() { return pos_ < data_.size() ? data_[pos_++] : 0; }
  std::uint16_t be16() { return static_cast<std::uint16_t>((u8() << 8) | u8()); }
  std::uint32_t be32() { return (std::uint32_t{be16()} << 16) | be16(); }
  std::uint64_t be64() { return (std::uint64_t{be32()} << 32) | be32(); }
  // Up to n octets (fewer at the end of the input).
  ByteView take(std::size_t n) {
    n = std::min(n, remaining());
    ByteView v = data_.subspan(pos_, n);
    pos_ += n;
    return v;
  }
  ByteView rest() { return take(remaining()); }

 private:
  ByteView data_;
  std::size_t pos_ = 0;
};

// Reads every octet of a view, so that ASan sees a dangling or out-of-bounds view: as a copy,
// whose whole source range ASan checks at once (its report names the first bad octet). An
// octet-by-octet loop, instrumented for coverage and checked an octet at a time, cost
// fuzz_engine a sixth of its own time (issue 39).
inline std::uint32_t touch(ByteView v) {
  static std::uint8_t sink[64u << 10];
  std::uint32_t sum = static_cast<std::uint32_t>(v.size());
  while (!v.empty()) {
    const std::size_t n = std::min(v.size(), sizeof sink);
    std::memcpy(sink, v.data(), n);
    sum = sum * 31 + sink[n - 1];
    v = v.subspan(n);
  }
  return sum;
}

// The input as a file (a memfd named `name`, rewritten for each input), for harnesses that read
// captures by path; -1 when it cannot be written.
int input_as_file(const char* name, const std::uint8_t* data, std::size_t size);

// Aborts with a message: a broken invariant is a crash for libFuzzer and for the replay test.
[[noreturn]] void invariant_failed(const char* what, const char* file, int line);

}  // namespace ddpscope::fuzz

#define DDPSCOPE_FUZZ_CHECK(cond)                                               \
  do {                                                                          \
    if (!(cond)) ::ddpscope::fuzz::invariant_failed(#cond, __FILE__, __LINE__); \
  } while (0)
