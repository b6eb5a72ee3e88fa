// SPDX-License-Identifier: GPL-2.0-or-later
// Comparing runs of octets, for the shadow buffers (ddp/shadow.h): how many differ, and a copy
// that counts what it changed, each at about the cost of a memcmp or memcpy. On x86-64 the copy
// runs 16 octets at a time (SSE2, every x86-64) or 32 (AVX2, when the CPU has it: chosen at run
// time, the build stays portable).
#pragma once

#include <cstddef>
#include <cstdint>

namespace ddpscope {

// How many of the n octets at a and b differ.
std::uint64_t count_differing(const std::uint8_t* a, const std::uint8_t* b, std::size_t n);

// Copies n octets from src over dst (not overlapping) and returns how many of them differed from
// what dst held: one pass over both.
std::uint64_t copy_counting_changes(std::uint8_t* dst, const std::uint8_t* src, std::size_t n);

// copy_counting_changes' implementations one by one, for tests and benchmarks.
enum class OctetKernel { portable, sse2, avx2 };
// Whether this build and CPU can run `k`.
bool octet_kernel_available(OctetKernel k);
// copy_counting_changes with `k` (which must be available).
std::uint64_t copy_counting_changes(OctetKernel k, std::uint8_t* dst, const std::uint8_t* src,
                                    std::size_t n);

}  // namespace ddpscope
