// SPDX-License-Identifier: GPL-2.0-or-later
// common/octets.h: the counted copy behind every overwrite of a shadow buffer's retained
// octets, with each kernel this machine can run (portable, SSE2, AVX2) against an octet-by-octet
// reference: every length up to a few vectors and past a lane's 255-round limit, every
// alignment within a vector, changes at the ends, in the tail and everywhere.
#include "ddpscope/common/octets.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace ddpscope {
namespace {

std::uint64_t reference_changes(const std::vector<std::uint8_t>& before,
                                const std::vector<std::uint8_t>& src) {
  std::uint64_t n = 0;
  for (std::size_t i = 0; i < src.size(); ++i)
    n += before[i] != src[i];
  return n;
}

class Octets : public ::testing::TestWithParam<OctetKernel> {};

TEST_P(Octets, CountedCopyMatchesAnOctetByOctetReference) {
  if (!octet_kernel_available(GetParam())) GTEST_SKIP() << "not on this CPU or build";
  std::mt19937 rng(5041);
  // Lengths around every vector size and past 255 rounds of 32 octets (8160) and of 16 (4080).
  std::vector<std::size_t> lengths;
  for (std::size_t n = 0; n <= 200; ++n)
    lengths.push_back(n);
  for (std::size_t n : {4079u, 4080u, 4081u, 4096u, 8159u, 8160u, 8161u, 8192u, 20000u})
    lengths.push_back(n);
  for (std::size_t n : lengths) {
    for (std::size_t align = 0; align < 33; align += (n > 200 ? 11 : 1)) {
      // dst and src at different alignments; changes at a rate from none to all.
      for (int rate : {0, 1, 50, 100}) {
        std::vector<std::uint8_t> dst_store(n + 64), src(n);
        for (auto& o : src)
          o = static_cast<std::uint8_t>(rng());
        std::uint8_t* dst = dst_store.data() + align;
        for (std::size_t i = 0; i < n; ++i) {
          const bool change = rate == 100 || (rate > 0 && static_cast<int>(rng() % 100) < rate);
          // A change by one bit only, anywhere in the octet: a kernel must not miss it.
          dst[i] = change ? static_cast<std::uint8_t>(src[i] ^ (1u << (rng() % 8))) : src[i];
        }
        if (rate == 1 && n > 0) {
          dst[0] ^= 0x80;  // the first and the last octet changed
          dst[n - 1] ^= 0x01;
        }
        const std::vector<std::uint8_t> before(dst, dst + n);
        const std::uint8_t guard_after = dst[n];
        const std::uint64_t want = reference_changes(before, src);
        const std::uint64_t got = copy_counting_changes(GetParam(), dst, src.data(), n);
        ASSERT_EQ(got, want) << "n " << n << " align " << align << " rate " << rate;
        ASSERT_TRUE(std::equal(src.begin(), src.end(), dst)) << "n " << n << " align " << align;
        ASSERT_EQ(dst[n], guard_after) << "wrote past the end: n " << n;
      }
    }
  }
}

TEST_P(Octets, AllEqualAndAllDifferentRunsLongerThanALanesCount) {
  if (!octet_kernel_available(GetParam())) GTEST_SKIP() << "not on this CPU or build";
  // 100,000 octets: a lane of 8-bit counters would wrap many times over without the flush.
  std::vector<std::uint8_t> dst(100000, 0xAB), src(100000, 0xAB);
  EXPECT_EQ(copy_counting_changes(GetParam(), dst.data(), src.data(), dst.size()), 0u);
  std::fill(src.begin(), src.end(), 0x54);
  EXPECT_EQ(copy_counting_changes(GetParam(), dst.data(), src.data(), dst.size()), 100000u);
  EXPECT_EQ(dst, src);
}

TEST(Octets, CountDifferingAndTheDispatchedCopyAgree) {
  std::vector<std::uint8_t> a(5000), b(5000);
  std::mt19937 rng(5040);
  for (std::size_t i = 0; i < a.size(); ++i) {
    a[i] = static_cast<std::uint8_t>(rng());
    b[i] = i % 7 == 0 ? static_cast<std::uint8_t>(a[i] + 1) : a[i];
  }
  const std::uint64_t differing = count_differing(a.data(), b.data(), a.size());
  EXPECT_EQ(differing, (a.size() + 6) / 7);
  EXPECT_EQ(copy_counting_changes(a.data(), b.data(), a.size()), differing);
  EXPECT_EQ(a, b);
}

INSTANTIATE_TEST_SUITE_P(Kernels, Octets,
                         ::testing::Values(OctetKernel::portable, OctetKernel::sse2,
                                           OctetKernel::avx2),
                         [](const auto& info) {
                           switch (info.param) {
                             case OctetKernel::portable:
                               return std::string("portable");
                             case OctetKernel::sse2:
                               return std::string("sse2");
                             case OctetKernel::avx2:
                               return std::string("avx2");
                           }
                           return std::string("unknown");
                         });

}  // namespace
}  // namespace ddpscope
