// SPDX-License-Identifier: GPL-2.0-or-later
#include "ddpscope/common/page_arena.h"

#include <sys/mman.h>

#include <cstdint>
#include <new>

namespace ddpscope {

namespace {

// kChunk octets aligned to kChunk (a huge page can only back an aligned range): twice the size
// is mapped and the unaligned head and tail are given back.
void* map_chunk() {
  constexpr std::size_t n = PageArena::kChunk;
  void* raw = ::mmap(nullptr, 2 * n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED) throw std::bad_alloc();
  const auto at = reinterpret_cast<std::uintptr_t>(raw);
  const std::uintptr_t aligned = (at + n - 1) & ~static_cast<std::uintptr_t>(n - 1);
  if (aligned > at) ::munmap(raw, aligned - at);
  const std::uintptr_t tail = at + 2 * n - (aligned + n);
  if (tail > 0) ::munmap(reinterpret_cast<void*>(aligned + n), tail);
  void* chunk = reinterpret_cast<void*>(aligned);
#ifdef MADV_HUGEPAGE
  // Advice only: without transparent huge pages the chunk is ordinary 4 KiB pages.
  ::madvise(chunk, n, MADV_HUGEPAGE);
#endif
  return chunk;
}

}  // namespace

PageArena::~PageArena() {
  for (void* c : chunks_)
    ::munmap(c, kChunk);
}

void* PageArena::do_allocate(std::size_t bytes, std::size_t alignment) {
  if (bytes > kChunk / 4 || alignment > kChunk / 4)
    return std::pmr::new_delete_resource()->allocate(bytes, alignment);
  auto align_up = [alignment](char* p) {
    const auto a = reinterpret_cast<std::uintptr_t>(p);
    return reinterpret_cast<char*>((a + alignment - 1) & ~(alignment - 1));
  };
  char* p = next_ != nullptr ? align_up(next_) : nullptr;
  if (p == nullptr || p + bytes > end_) {
    chunks_.reserve(chunks_.size() + 1);  // so that a failure below leaks no chunk
    char* c = static_cast<char*>(map_chunk());
    chunks_.push_back(c);
    end_ = c + kChunk;
    p = align_up(c);
  }
  next_ = p + bytes;
  return p;
}

void PageArena::do_deallocate(void* p, std::size_t bytes, std::size_t alignment) {
  if (bytes > kChunk / 4 || alignment > kChunk / 4)
    std::pmr::new_delete_resource()->deallocate(p, bytes, alignment);
  // Blocks of a chunk are given back with the arena.
}

}  // namespace ddpscope
