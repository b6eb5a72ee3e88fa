// SPDX-License-Identifier: GPL-2.0-or-later
// Where a fixed-size field sits in a header or body: its first octet's offset from the start
// of that header or body, and its size. The wire headers publish one table per structure so
// that hosts showing octets (the Wireshark plugin's tree) take positions from the codec instead
// of their own constants; wire_test checks each table against the decoder.
#pragma once

#include <cstddef>

namespace ddpscope::wire {

struct FieldSpan {
  std::size_t offset = 0;
  std::size_t size = 0;
  constexpr std::size_t end() const { return offset + size; }
};

}  // namespace ddpscope::wire
