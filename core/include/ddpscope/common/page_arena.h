// SPDX-License-Identifier: GPL-2.0-or-later
// Memory for many long-lived blocks of a few KiB that are given back all at once: the shadow
// buffers' retained pages (ddp/shadow.h). Blocks are carved from 2 MiB chunks that the kernel is
// asked to back with transparent huge pages (madvise MADV_HUGEPAGE, honoured when
// /sys/kernel/mm/transparent_hugepage/enabled is "madvise" or "always"): retaining the default
// 64 MiB then costs 32 page faults instead of 16,384, which was most of the default analysis's
// system time (bench/RESULTS.md, issue 19). Without huge pages it is a plain bump allocator over
// anonymous memory.
//
// A block handed back is not reused: the arena only grows, until it is destroyed. Blocks larger
// than a quarter of a chunk come from the heap and go back to it. Not thread-safe.
#pragma once

#include <cstddef>
#include <memory_resource>
#include <vector>

namespace ddpscope {

class PageArena final : public std::pmr::memory_resource {
 public:
  static constexpr std::size_t kChunk = 2u << 20;  // one x86-64 huge page

  PageArena() = default;
  PageArena(const PageArena&) = delete;
  PageArena& operator=(const PageArena&) = delete;
  ~PageArena() override;

  // Chunks mapped so far (what the arena holds of the address space: chunks() * kChunk).
  std::size_t chunks() const { return chunks_.size(); }

 private:
  void* do_allocate(std::size_t bytes, std::size_t alignment) override;
  void do_deallocate(void* p, std::size_t bytes, std::size_t alignment) override;
  bool do_is_equal(const std::pmr::memory_resource& other) const noexcept override {
    return this == &other;
  }

  std::vector<void*> chunks_;
  char* next_ = nullptr;  // free space of the newest chunk: [next_, end_)
  char* end_ = nullptr;
};

}  // namespace ddpscope
