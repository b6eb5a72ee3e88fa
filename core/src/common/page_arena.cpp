// SPDX-License-Identifier: GPL-2.0-or-later
#include "ddpscope/common/page_arena.h"

#include <sys/mman.h>

#include <algorithm>
#include <cstdint>
#include <new>

namespace ddpscope {

namespace {

constexpr std::size_t kLarge = PageArena::kChunk / 4;  // larger blocks come from the heap

// `n` octets of anonymous memory aligned to `n` (a huge page can only back an aligned range):
// twice the size is mapped and the unaligned head and tail are given back. Then faulted in.
void* map_chunk(std::size_t n) {
  void* raw = ::mmap(nullptr, 2 * n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED) throw std::bad_alloc();
  const auto at = reinterpret_cast<std::uintptr_t>(raw);
  const std::uintptr_t aligned = (at + n - 1) & ~static_cast<std::uintptr_t>(n - 1);
  if (aligned > at) ::munmap(raw, aligned - at);
  const std::uintptr_t tail = at + 2 * n - (aligned + n);
  if (tail > 0) ::munmap(reinterpret_cast<void*>(aligned + n), tail);
  void* chunk = reinterpret_cast<void*>(aligned);
  // Advice only; an older kernel refuses MADV_POPULATE_WRITE (EINVAL) and the chunk is faulted
  // in page by page as it is used.
  if (n == PageArena::kChunk) advise_huge_pages(chunk, n);
#ifdef MADV_POPULATE_WRITE
  ::madvise(chunk, n, MADV_POPULATE_WRITE);
#endif
  return chunk;
}

}  // namespace

void advise_huge_pages(void* p, std::size_t n) {
#ifdef MADV_HUGEPAGE
  const auto at = reinterpret_cast<std::uintptr_t>(p);
  const std::uintptr_t begin = (at + PageArena::kChunk - 1) & ~(PageArena::kChunk - 1);
  const std::uintptr_t end = (at + n) & ~(PageArena::kChunk - 1);
  if (end > begin) ::madvise(reinterpret_cast<void*>(begin), end - begin, MADV_HUGEPAGE);
#else
  (void)p;
  (void)n;
#endif
}

PageArena::~PageArena() {
  for (const Chunk& c : chunks_)
    ::munmap(c.at, c.size);
}

void* PageArena::do_allocate(std::size_t bytes, std::size_t alignment) {
  if (kHeapOnly || bytes > kLarge || alignment > kLarge)
    return std::pmr::new_delete_resource()->allocate(bytes, alignment);
  auto align_up = [alignment](char* p) {
    const auto a = reinterpret_cast<std::uintptr_t>(p);
    return reinterpret_cast<char*>((a + alignment - 1) & ~(alignment - 1));
  };
  char* p = next_ != nullptr ? align_up(next_) : nullptr;
  if (p == nullptr || p + bytes > end_) {
    // Each chunk twice the previous one, up to kChunk; at least 4 blocks of this size.
    std::size_t size = chunks_.empty() ? kFirstChunk : std::min(2 * chunks_.back().size, kChunk);
    while (size < 4 * (bytes + alignment) && size < kChunk)
      size *= 2;
    chunks_.reserve(chunks_.size() + 1);  // so that a failure below leaks no chunk
    char* c = static_cast<char*>(map_chunk(size));
    chunks_.push_back({c, size});
    mapped_ += size;
    end_ = c + size;
    p = align_up(c);
  }
  next_ = p + bytes;
  return p;
}

void PageArena::do_deallocate(void* p, std::size_t bytes, std::size_t alignment) {
  if (kHeapOnly || bytes > kLarge || alignment > kLarge)
    std::pmr::new_delete_resource()->deallocate(p, bytes, alignment);
  // Blocks of a chunk are given back with the arena.
}

}  // namespace ddpscope
