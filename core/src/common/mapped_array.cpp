// SPDX-License-Identifier: GPL-2.0-or-later
#include "ddpscope/common/mapped_array.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>

#ifdef DDPSCOPE_PAGE_ARENA_HEAP_ONLY
#include <sanitizer/asan_interface.h>
#endif

namespace ddpscope {

namespace {

std::size_t page_size() {
  static const std::size_t page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  return page;
}

std::size_t round_up(std::size_t n, std::size_t to) {
  return (n + to - 1) / to * to;
}

// `n` octets of address space (a multiple of the page size), on a huge-page boundary when it
// holds a huge page (a huge page can only back an aligned range): nothing readable, writable or
// charged against the commit limit until made writable.
std::byte* map_reservation(std::size_t n) {
  constexpr int kFlags = MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE;
  const std::size_t align = n >= PageArena::kChunk ? PageArena::kChunk : 0;
  void* raw = ::mmap(nullptr, n + align, PROT_NONE, kFlags, -1, 0);
  if (raw == MAP_FAILED) throw std::bad_alloc();
  const auto at = reinterpret_cast<std::uintptr_t>(raw);
  if (align == 0) return static_cast<std::byte*>(raw);
  const std::uintptr_t aligned = (at + align - 1) & ~static_cast<std::uintptr_t>(align - 1);
  if (aligned > at) ::munmap(raw, aligned - at);
  const std::uintptr_t tail = at + n + align - (aligned + n);
  if (tail > 0) ::munmap(reinterpret_cast<void*>(aligned + n), tail);
  auto* p = reinterpret_cast<std::byte*>(aligned);
  advise_huge_pages(p, n);
  return p;
}

void make_writable(std::byte* p, std::size_t n) {
  if (n > 0 && ::mprotect(p, n, PROT_READ | PROT_WRITE) != 0) throw std::bad_alloc();
}

#ifdef DDPSCOPE_PAGE_ARENA_HEAP_ONLY
void poison(const std::byte* p, std::size_t n) {
  ASAN_POISON_MEMORY_REGION(p, n);
}
void unpoison(const std::byte* p, std::size_t n) {
  ASAN_UNPOISON_MEMORY_REGION(p, n);
}
#else
void poison(const std::byte*, std::size_t) {}
void unpoison(const std::byte*, std::size_t) {}
#endif

}  // namespace

void MappedBytes::reserve(std::size_t bytes, std::size_t keep) {
  if (bytes <= reserved_) return;
  const std::size_t size = round_up(bytes, page_size());
  std::byte* fresh = map_reservation(size);
  // The records so far move: as many octets writable as before (fewer than the new size).
  try {
    make_writable(fresh, committed_);
  } catch (...) {
    ::munmap(fresh, size);
    throw;
  }
  if (keep > 0) std::memcpy(fresh, base_, keep);
  poison(fresh + keep, committed_ - keep);
  const std::size_t committed = committed_;
  release();
  base_ = fresh;
  reserved_ = size;
  committed_ = committed;
}

void MappedBytes::commit(std::size_t need, std::size_t keep) {
  if (need <= committed_) return;
  if (need > reserved_) reserve(std::max({need, 2 * reserved_, kFirstCommit}), keep);
  std::size_t size = std::max(committed_, std::max(kFirstCommit, page_size()));
  while (size < need)
    size *= 2;
  size = std::min(size, reserved_);
  make_writable(base_ + committed_, size - committed_);
  poison(base_ + committed_, size - committed_);
  committed_ = size;
}

#ifdef DDPSCOPE_PAGE_ARENA_HEAP_ONLY
void MappedBytes::mark_used(std::size_t from, std::size_t to) const {
  unpoison(base_ + from, to - from);
}
void MappedBytes::mark_unused(std::size_t from) const {
  if (committed_ > from) poison(base_ + from, committed_ - from);
}
#endif

void MappedBytes::release() {
  if (base_ == nullptr) return;
  // The address range may be mapped again by anyone: no poison left on it.
  unpoison(base_, committed_);
  ::munmap(base_, reserved_);
  base_ = nullptr;
  reserved_ = 0;
  committed_ = 0;
}

}  // namespace ddpscope
