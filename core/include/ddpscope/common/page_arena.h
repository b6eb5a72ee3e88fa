// SPDX-License-Identifier: GPL-2.0-or-later
// Memory for many long-lived blocks of a few KiB that are given back all at once: the shadow
// buffers' retained pages (ddp/shadow.h). Blocks are carved from chunks of anonymous memory that
// are faulted in with one call each (MADV_POPULATE_WRITE, Linux 5.14) rather than a page fault
// per 4 KiB; chunks grow from 64 KiB (a small analysis, a fuzz input, maps little) to 2 MiB,
// which the kernel is asked to back with transparent huge pages (MADV_HUGEPAGE, honoured when
// /sys/kernel/mm/transparent_hugepage/enabled is "madvise" or "always"). Retaining the default
// 64 MiB then costs a few dozen calls instead of 16,384 page faults, which were most of the
// default analysis's system time (bench/RESULTS.md, issue 19). Both are advice: where the kernel
// declines, the chunk is ordinary memory faulted in on first touch.
//
// A block handed back is not reused: the arena only grows, until it is destroyed. Blocks larger
// than a quarter of the largest chunk come from the heap and go back to it. Not thread-safe.
// Under AddressSanitizer every block comes from the heap (kHeapOnly), so that ASan still sees
// each page's bounds and lifetime.
#pragma once

#include <cstddef>
#include <memory_resource>
#include <vector>

namespace ddpscope {

#if defined(__SANITIZE_ADDRESS__)
#define DDPSCOPE_PAGE_ARENA_HEAP_ONLY 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define DDPSCOPE_PAGE_ARENA_HEAP_ONLY 1
#endif
#endif

// Asks the kernel to back the whole 2 MiB pages inside [p, p + n) with transparent huge pages:
// for a large block that is written from its start to its end, once (the message records'
// reservation, mapped_array.h), a fault per 2 MiB instead of one per 4 KiB. Advice only, as above.
void advise_huge_pages(void* p, std::size_t n);

class PageArena final : public std::pmr::memory_resource {
 public:
#ifdef DDPSCOPE_PAGE_ARENA_HEAP_ONLY
  static constexpr bool kHeapOnly = true;
#else
  static constexpr bool kHeapOnly = false;
#endif
  static constexpr std::size_t kFirstChunk = 64u << 10;
  static constexpr std::size_t kChunk = 2u << 20;  // the largest: one x86-64 huge page

  PageArena() = default;
  PageArena(const PageArena&) = delete;
  PageArena& operator=(const PageArena&) = delete;
  ~PageArena() override;

  // Octets of the address space the arena holds (its chunks), and how many chunks.
  std::size_t mapped() const {
    return mapped_;
  }
  std::size_t chunks() const {
    return chunks_.size();
  }

 private:
  struct Chunk {
    void* at;
    std::size_t size;
  };
  void* do_allocate(std::size_t bytes, std::size_t alignment) override;
  void do_deallocate(void* p, std::size_t bytes, std::size_t alignment) override;
  bool do_is_equal(const std::pmr::memory_resource& other) const noexcept override {
    return this == &other;
  }

  std::vector<Chunk> chunks_;
  std::size_t mapped_ = 0;
  char* next_ = nullptr;  // free space of the newest chunk: [next_, end_)
  char* end_ = nullptr;
};

}  // namespace ddpscope
