// SPDX-License-Identifier: GPL-2.0-or-later
// MappedArray: records appended in place in reserved address space, memory committed as they
// come (common/mapped_array.h).
#include "ddpscope/common/mapped_array.h"

#include <gtest/gtest.h>

#include <cstdint>

#include "ddpscope/analysis/model.h"

namespace ddpscope {
namespace {

struct Rec {
  std::uint64_t a = 0;
  std::uint32_t b = 0;
  std::uint32_t c = 0;
};

Rec rec(std::uint64_t i) {
  return Rec{i, static_cast<std::uint32_t>(i * 3), static_cast<std::uint32_t>(~i)};
}

void expect_records(const MappedArray<Rec>& v, std::size_t n) {
  ASSERT_EQ(v.size(), n);
  for (std::size_t i = 0; i < n; ++i) {
    ASSERT_EQ(v[i].a, i) << i;
    ASSERT_EQ(v[i].b, static_cast<std::uint32_t>(i * 3)) << i;
    ASSERT_EQ(v[i].c, static_cast<std::uint32_t>(~i)) << i;
  }
}

TEST(MappedArray, EmptyHoldsNothing) {
  MappedArray<Rec> v;
  EXPECT_TRUE(v.empty());
  EXPECT_EQ(v.capacity(), 0u);
  EXPECT_EQ(v.committed_bytes(), 0u);
  EXPECT_EQ(v.begin(), v.end());
}

TEST(MappedArray, AReservationIsAddressSpaceMemoryComesWithTheRecords) {
  // The analysis's reservation: the default cap of message records, 48 MiB.
  MappedArray<MessageRecord> v;
  v.reserve(Limits{}.max_message_records);
  EXPECT_GE(v.capacity(), Limits{}.max_message_records);
  EXPECT_EQ(v.committed_bytes(), 0u);
  MessageRecord r;
  r.msn = 7;
  v.push_back(r);
  EXPECT_EQ(v.committed_bytes(), MappedBytes::kFirstCommit);
  EXPECT_EQ(v.back().msn, 7u);
  // The reservation is on a huge-page boundary, for the kernel to back it with huge pages.
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(v.data()) % PageArena::kChunk, 0u);
}

TEST(MappedArray, RecordsStayInPlaceWithinTheReservationAndCommitDoubles) {
  MappedArray<Rec> v;
  constexpr std::size_t kN = 300'000;  // 4.6 MiB of records
  v.reserve(kN);
  v.push_back(rec(0));
  const Rec* first = &v[0];
  std::size_t commits = 0, committed = v.committed_bytes();
  for (std::size_t i = 1; i < kN; ++i) {
    v.push_back(rec(i));
    if (v.committed_bytes() != committed) {
      ++commits;
      EXPECT_EQ(v.committed_bytes(), std::min(2 * committed, v.capacity() * sizeof(Rec)));
      committed = v.committed_bytes();
    }
    // Never more than twice what the records hold (and the first commit).
    ASSERT_LE(v.committed_bytes(),
              std::max<std::size_t>(2 * v.size() * sizeof(Rec), MappedBytes::kFirstCommit));
  }
  EXPECT_EQ(&v[0], first);  // never moved
  EXPECT_LE(commits, 7u);   // 64 KiB .. 4 MiB, then the rest of the reservation
  expect_records(v, kN);
}

TEST(MappedArray, AppendingPastTheReservationMovesTheRecords) {
  MappedArray<Rec> v;  // no reservation at all: one is made, then doubled
  for (std::size_t i = 0; i < 20'000; ++i)
    v.push_back(rec(i));
  expect_records(v, 20'000);
  MappedArray<Rec> w;
  w.reserve(10);
  for (std::size_t i = 0; i < 10'000; ++i)
    w.push_back(rec(i));
  expect_records(w, 10'000);
  EXPECT_GE(w.capacity(), 10'000u);
}

TEST(MappedArray, ACopyHoldsOnlyItsRecordsAndMovesTakeThem) {
  MappedArray<Rec> v;
  v.reserve(1u << 20);
  for (std::size_t i = 0; i < 1000; ++i)
    v.push_back(rec(i));
  MappedArray<Rec> c(v);
  expect_records(c, 1000);
  EXPECT_LT(c.capacity(), 2000u);  // the snapshot's size, not the original's reservation
  c.push_back(rec(1000));          // and it still grows
  expect_records(c, 1001);
  expect_records(v, 1000);

  MappedArray<Rec> m(std::move(c));
  expect_records(m, 1001);
  EXPECT_TRUE(c.empty());  // NOLINT(bugprone-use-after-move): moved-from is empty
  c = v;
  expect_records(c, 1000);
  m = std::move(v);
  expect_records(m, 1000);
  const MappedArray<Rec>& same = m;
  m = same;  // self-assignment keeps the records
  expect_records(m, 1000);
  m.clear();
  EXPECT_TRUE(m.empty());
  m.push_back(rec(0));
  expect_records(m, 1);
}

TEST(MappedArrayDeathTest, UnderAddressSanitizerAReadPastTheRecordsIsReported) {
  if (!PageArena::kHeapOnly) GTEST_SKIP() << "not an AddressSanitizer build";
  MappedArray<Rec> v;
  v.reserve(1000);
  v.push_back(rec(0));
  v.push_back(rec(1));
  const Rec* past = v.data() + v.size();  // committed memory, but no record
  EXPECT_DEATH(
      {
        volatile std::uint64_t a = past->a;
        (void)a;
      },
      "use-after-poison");
}

}  // namespace
}  // namespace ddpscope
