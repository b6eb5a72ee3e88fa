// SPDX-License-Identifier: GPL-2.0-or-later
// A growable array of records that never moves them while it has room, and holds memory only
// for the records it has: the analysis's message records (analysis/model.h, Model::messages),
// up to Limits::max_message_records of them (half a million of 96 octets by default), kept by
// every host that shows them (the plugin, the GUI) and every fuzz input.
//
// reserve(n) takes address space for n records on a 2 MiB boundary (mmap with PROT_NONE and
// MAP_NORESERVE: no memory, no commit charge, nothing cleared), advised for transparent huge
// pages (page_arena.h). Appending makes the records' pages readable and writable as they are
// needed, the writable part doubling from kFirstCommit; the kernel faults each page in once, on
// first write. So an analysis that keeps one record holds 64 KiB, not the cap's 48 MiB (issue
// 39: a std::vector reserved up to the cap was that much heap for every analysis, which
// AddressSanitizer cleared on every fuzz input), while a large one still writes its records
// once, in place, by 2 MiB pages where the kernel grants them: no copy as it grows, what the
// whole reservation bought (bench/RESULTS.md, issue 19). Appending past the reservation (none
// was made, or more records than were reserved) moves the records to one twice as large.
//
// For records that own nothing (trivially copyable: copies are octet copies, nothing is
// destroyed); LeakSanitizer does not look inside them. Under AddressSanitizer the writable
// octets past the last record are poisoned: a read past size() is reported. Not thread-safe;
// a copy is exactly as large as its records (the GUI's snapshots copy the model).
#pragma once

#include <cstddef>
#include <cstring>
#include <new>
#include <type_traits>
#include <utility>

#include "ddpscope/common/page_arena.h"  // DDPSCOPE_PAGE_ARENA_HEAP_ONLY: AddressSanitizer

namespace ddpscope {

// The octets behind a MappedArray: [data(), data() + reserved()) is address space, of which
// [data(), data() + committed()) is readable and writable.
class MappedBytes {
 public:
  static constexpr std::size_t kFirstCommit = 64u << 10;

  MappedBytes() = default;
  MappedBytes(const MappedBytes&) = delete;
  MappedBytes& operator=(const MappedBytes&) = delete;
  MappedBytes(MappedBytes&& other) noexcept { swap(other); }
  MappedBytes& operator=(MappedBytes&& other) noexcept {
    MappedBytes gone(std::move(other));
    swap(gone);
    return *this;
  }
  ~MappedBytes() { release(); }

  std::byte* data() const { return base_; }
  std::size_t reserved() const { return reserved_; }
  std::size_t committed() const { return committed_; }

  // Address space for at least `bytes` octets; when that is more than reserved(), a new
  // reservation to which the first `keep` octets are copied (the old one is given back).
  void reserve(std::size_t bytes, std::size_t keep);
  // At least `need` octets writable: the committed part doubles (kFirstCommit at first) up to
  // the reservation, which is doubled (as reserve(), keeping `keep` octets) when too small.
  void commit(std::size_t need, std::size_t keep);
  // Under AddressSanitizer, committed octets hold no record until marked used (a read of
  // them is reported); octets [from, to) now hold records, or octets [from, committed()) no
  // longer do. Elsewhere no-ops.
#ifdef DDPSCOPE_PAGE_ARENA_HEAP_ONLY
  void mark_used(std::size_t from, std::size_t to) const;
  void mark_unused(std::size_t from) const;
#else
  void mark_used(std::size_t, std::size_t) const {}
  void mark_unused(std::size_t) const {}
#endif

 private:
  void release();
  void swap(MappedBytes& other) noexcept {
    std::swap(base_, other.base_);
    std::swap(reserved_, other.reserved_);
    std::swap(committed_, other.committed_);
  }

  std::byte* base_ = nullptr;
  std::size_t reserved_ = 0;
  std::size_t committed_ = 0;
};

template <class T>
class MappedArray {
  static_assert(std::is_trivially_copyable_v<T>, "records are copied as octets");
  static_assert(alignof(T) <= alignof(std::max_align_t), "a page aligns them");

 public:
  MappedArray() = default;
  MappedArray(const MappedArray& other) { assign(other); }
  MappedArray& operator=(const MappedArray& other) {
    if (this != &other) {
      MappedArray copy(other);
      *this = std::move(copy);
    }
    return *this;
  }
  MappedArray(MappedArray&& other) noexcept
      : bytes_(std::move(other.bytes_)), size_(std::exchange(other.size_, 0)) {}
  MappedArray& operator=(MappedArray&& other) noexcept {
    bytes_ = std::move(other.bytes_);
    size_ = std::exchange(other.size_, 0);
    return *this;
  }
  ~MappedArray() = default;

  std::size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  // Records it holds without moving them (address space, not memory).
  std::size_t capacity() const { return bytes_.reserved() / sizeof(T); }
  // Octets of memory it holds: readable and writable, whether written yet or not.
  std::size_t committed_bytes() const { return bytes_.committed(); }

  // Room for `n` records without moving them; memory comes as they are appended.
  void reserve(std::size_t n) { bytes_.reserve(n * sizeof(T), size_ * sizeof(T)); }

  void push_back(const T& record) {
    const std::size_t end = (size_ + 1) * sizeof(T);
    if (end > bytes_.committed()) bytes_.commit(end, size_ * sizeof(T));
    bytes_.mark_used(size_ * sizeof(T), end);
    ::new (static_cast<void*>(bytes_.data() + size_ * sizeof(T))) T(record);
    ++size_;
  }
  void clear() {
    size_ = 0;
    bytes_.mark_unused(0);
  }

  T* data() { return reinterpret_cast<T*>(bytes_.data()); }
  const T* data() const { return reinterpret_cast<const T*>(bytes_.data()); }
  T& operator[](std::size_t i) { return data()[i]; }
  const T& operator[](std::size_t i) const { return data()[i]; }
  T& front() { return data()[0]; }
  const T& front() const { return data()[0]; }
  T& back() { return data()[size_ - 1]; }
  const T& back() const { return data()[size_ - 1]; }
  T* begin() { return data(); }
  T* end() { return data() + size_; }
  const T* begin() const { return data(); }
  const T* end() const { return data() + size_; }

 private:
  void assign(const MappedArray& other) {
    if (other.size_ == 0) return;
    const std::size_t n = other.size_ * sizeof(T);
    bytes_.reserve(n, 0);
    bytes_.commit(n, 0);
    bytes_.mark_used(0, n);
    std::memcpy(bytes_.data(), other.bytes_.data(), n);
    size_ = other.size_;
  }

  MappedBytes bytes_;
  std::size_t size_ = 0;
};

}  // namespace ddpscope
