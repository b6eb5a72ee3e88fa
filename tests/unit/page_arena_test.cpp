// SPDX-License-Identifier: GPL-2.0-or-later
// PageArena: the shadow buffers' retained pages come from 2 MiB chunks (common/page_arena.h).
#include "ddpscope/common/page_arena.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <map>
#include <memory_resource>
#include <vector>

namespace ddpscope {
namespace {

TEST(PageArena, BlocksAreDistinctAndChunksGrowToHugePages) {
  if (PageArena::kHeapOnly) GTEST_SKIP() << "AddressSanitizer build: every block from the heap";
  PageArena arena;
  EXPECT_EQ(arena.mapped(), 0u);        // nothing mapped before the first block
  constexpr std::size_t kBlock = 4152;  // about a retained page's map node
  std::vector<std::uint8_t*> blocks;
  // 64 MiB of blocks, the default retention cap.
  for (std::size_t i = 0; i < (64u << 20) / kBlock; ++i) {
    auto* p = static_cast<std::uint8_t*>(arena.allocate(kBlock, 8));
    ASSERT_EQ(reinterpret_cast<std::uintptr_t>(p) % 8, 0u);
    std::memset(p, static_cast<int>(i & 0xff), kBlock);  // writable, all of it
    blocks.push_back(p);
  }
  // Blocks do not overlap: each still holds what was written into it.
  for (std::size_t i = 0; i < blocks.size(); ++i) {
    ASSERT_EQ(blocks[i][0], i & 0xff) << i;
    ASSERT_EQ(blocks[i][kBlock - 1], i & 0xff) << i;
  }
  // 64 KiB, 128 KiB, ... 1 MiB (5 chunks, 1984 KiB), then 2 MiB chunks: a few dozen in all,
  // with no more than one chunk's slack.
  EXPECT_LE(arena.chunks(), 5u + 33u);
  EXPECT_GE(arena.mapped(), blocks.size() * kBlock);
  EXPECT_LE(arena.mapped(), blocks.size() * kBlock + 2 * PageArena::kChunk);
  // The newest chunk is a whole huge page, on a huge-page boundary.
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(blocks.back()) / PageArena::kChunk,
            reinterpret_cast<std::uintptr_t>(blocks.back() + kBlock - 1) / PageArena::kChunk);
}

TEST(PageArena, ASmallUseMapsLittle) {
  if (PageArena::kHeapOnly) GTEST_SKIP() << "AddressSanitizer build: every block from the heap";
  PageArena arena;
  (void)arena.allocate(4152, 8);
  EXPECT_EQ(arena.chunks(), 1u);
  EXPECT_EQ(arena.mapped(), PageArena::kFirstChunk);
}

TEST(PageArena, AlignmentIsHonouredInsideAChunk) {
  PageArena arena;
  void* small = arena.allocate(3, 1);
  void* p = arena.allocate(64, 64);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(p) % 64, 0u);
  arena.deallocate(p, 64, 64);  // given back with the arena, or to the heap under ASan
  arena.deallocate(small, 3, 1);
}

TEST(PageArena, LargeBlocksComeFromTheHeapAndGoBack) {
  PageArena arena;
  void* big = arena.allocate(PageArena::kChunk, 16);  // larger than a quarter chunk
  std::memset(big, 1, PageArena::kChunk);
  EXPECT_EQ(arena.mapped(), 0u);
  arena.deallocate(big, PageArena::kChunk, 16);  // ASan would see a leak otherwise
}

TEST(PageArena, ServesAPmrMap) {
  PageArena arena;
  std::pmr::map<int, std::vector<int>> m(&arena);
  for (int i = 0; i < 10000; ++i)
    m[i].push_back(i);
  for (int i = 0; i < 10000; i += 999)
    EXPECT_EQ(m.at(i).front(), i);
  EXPECT_EQ(arena.chunks() >= 1u, !PageArena::kHeapOnly);
  m.clear();  // handing blocks back is allowed (they are reused only with the arena)
}

}  // namespace
}  // namespace ddpscope
