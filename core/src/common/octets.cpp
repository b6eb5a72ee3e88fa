// SPDX-License-Identifier: GPL-2.0-or-later
#include "ddpscope/common/octets.h"

#include <cstring>

#if defined(__SSE2__) && defined(__x86_64__)
#define DDPSCOPE_OCTETS_X86 1
#include <immintrin.h>
#endif

namespace ddpscope {

// Eight at a time: a word's differing octets are folded to bit 0 of each octet and added up per
// octet lane (at most 255 words before a lane could overflow), then the lanes are summed.
std::uint64_t count_differing(const std::uint8_t* a, const std::uint8_t* b, std::size_t n) {
  constexpr std::uint64_t kLow = 0x0101010101010101ull;
  std::uint64_t count = 0;
  std::size_t i = 0;
  while (i + 8 <= n) {
    std::uint64_t lanes = 0;
    for (int w = 0; w < 255 && i + 8 <= n; ++w, i += 8) {
      std::uint64_t x = 0;
      std::uint64_t y = 0;
      std::memcpy(&x, a + i, 8);
      std::memcpy(&y, b + i, 8);
      std::uint64_t z = x ^ y;
      z |= z >> 4;
      z |= z >> 2;
      z |= z >> 1;
      lanes += z & kLow;
    }
    // The eight lane counts (each at most 255) summed, without a popcount instruction.
    lanes = (lanes & 0x00FF00FF00FF00FFull) + ((lanes >> 8) & 0x00FF00FF00FF00FFull);
    count += (lanes * 0x0001000100010001ull) >> 48;
  }
  for (; i < n; ++i)
    count += a[i] != b[i];
  return count;
}

namespace {

std::uint64_t copy_counting_portable(std::uint8_t* dst, const std::uint8_t* src, std::size_t n) {
  if (n == 0) return 0;  // src may then be null, which memcpy must not be given
  const std::uint64_t changed = count_differing(dst, src, n);
  std::memcpy(dst, src, n);
  return changed;
}

#ifdef DDPSCOPE_OCTETS_X86
// The vector kernels: equal octets are counted per lane (a compare gives -1 per equal octet; at
// most 255 rounds before a lane could overflow), then the lanes are summed (SAD against zero).
// The tail (under one vector) goes octet by octet.
std::uint64_t copy_counting_tail(std::uint8_t* dst, const std::uint8_t* src, std::size_t n) {
  std::uint64_t equal = 0;
  for (std::size_t i = 0; i < n; ++i) {
    equal += dst[i] == src[i];
    dst[i] = src[i];
  }
  return equal;
}

std::uint64_t copy_counting_sse2(std::uint8_t* dst, const std::uint8_t* src, std::size_t n) {
  std::uint64_t equal = 0;
  std::size_t i = 0;
  const __m128i zero = _mm_setzero_si128();
  while (i + 16 <= n) {
    __m128i lanes = zero;
    for (int r = 0; r < 255 && i + 16 <= n; ++r, i += 16) {
      const __m128i have = _mm_loadu_si128(reinterpret_cast<const __m128i*>(dst + i));
      const __m128i put = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i));
      lanes = _mm_sub_epi8(lanes, _mm_cmpeq_epi8(have, put));
      _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i), put);
    }
    const __m128i sums = _mm_sad_epu8(lanes, zero);
    equal += static_cast<std::uint64_t>(_mm_cvtsi128_si64(sums)) +
             static_cast<std::uint64_t>(_mm_cvtsi128_si64(_mm_unpackhi_epi64(sums, sums)));
  }
  equal += copy_counting_tail(dst + i, src + i, n - i);
  return n - equal;
}

// On the reuse benchmark shape (a region rewritten many times) this loop was a third of the
// engine's time with SSE2; AVX2 takes 5-8 % off the whole run (bench/RESULTS.md, 2026-12-05).
[[gnu::target("avx2")]] std::uint64_t copy_counting_avx2(std::uint8_t* dst, const std::uint8_t* src,
                                                         std::size_t n) {
  std::uint64_t equal = 0;
  std::size_t i = 0;
  const __m256i zero = _mm256_setzero_si256();
  while (i + 32 <= n) {
    __m256i lanes = zero;
    for (int r = 0; r < 255 && i + 32 <= n; ++r, i += 32) {
      const __m256i have = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(dst + i));
      const __m256i put = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + i));
      lanes = _mm256_sub_epi8(lanes, _mm256_cmpeq_epi8(have, put));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + i), put);
    }
    const __m256i sums = _mm256_sad_epu8(lanes, zero);  // four 64-bit sums
    const __m128i pair =
        _mm_add_epi64(_mm256_castsi256_si128(sums), _mm256_extracti128_si256(sums, 1));
    equal += static_cast<std::uint64_t>(_mm_cvtsi128_si64(pair)) +
             static_cast<std::uint64_t>(_mm_cvtsi128_si64(_mm_unpackhi_epi64(pair, pair)));
  }
  equal += copy_counting_tail(dst + i, src + i, n - i);
  return n - equal;
}

const bool kHaveAvx2 = __builtin_cpu_supports("avx2");
#endif

}  // namespace

std::uint64_t copy_counting_changes(std::uint8_t* dst, const std::uint8_t* src, std::size_t n) {
#ifdef DDPSCOPE_OCTETS_X86
  return kHaveAvx2 ? copy_counting_avx2(dst, src, n) : copy_counting_sse2(dst, src, n);
#else
  return copy_counting_portable(dst, src, n);
#endif
}

bool octet_kernel_available(OctetKernel k) {
  switch (k) {
    case OctetKernel::portable:
      return true;
#ifdef DDPSCOPE_OCTETS_X86
    case OctetKernel::sse2:
      return true;
    case OctetKernel::avx2:
      return kHaveAvx2;
#else
    case OctetKernel::sse2:
    case OctetKernel::avx2:
      return false;
#endif
  }
  return false;
}

std::uint64_t copy_counting_changes(OctetKernel k, std::uint8_t* dst, const std::uint8_t* src,
                                    std::size_t n) {
  switch (k) {
#ifdef DDPSCOPE_OCTETS_X86
    case OctetKernel::sse2:
      return copy_counting_sse2(dst, src, n);
    case OctetKernel::avx2:
      return copy_counting_avx2(dst, src, n);
#endif
    default:
      return copy_counting_portable(dst, src, n);
  }
}

}  // namespace ddpscope
