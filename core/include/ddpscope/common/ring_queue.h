// SPDX-License-Identifier: GPL-2.0-or-later
// A first-in first-out queue over one power-of-two vector: push at the back, pop at the front,
// index from the front. For queues that stay short and turn over per PDU (the engine's delivery
// queue pushes and pops an entry per Send), where std::deque's block bookkeeping costs more
// than the work. Storage grows by doubling and is kept once grown; the caller bounds the size.
#pragma once

#include <algorithm>
#include <cstddef>
#include <vector>

namespace ddpscope {

template <class T>
class RingQueue {
 public:
  bool empty() const { return size_ == 0; }
  std::size_t size() const { return size_; }
  T& front() { return ring_[head_]; }
  const T& front() const { return ring_[head_]; }
  // The i-th entry from the front (i < size()).
  T& operator[](std::size_t i) { return ring_[(head_ + i) & mask_]; }
  const T& operator[](std::size_t i) const { return ring_[(head_ + i) & mask_]; }
  void push_back(const T& v) {
    if (size_ == ring_.size()) grow();
    ring_[(head_ + size_) & mask_] = v;
    ++size_;
  }
  // Requires !empty(). The entry's slot is reused, not destroyed.
  void pop_front() {
    head_ = (head_ + 1) & mask_;
    --size_;
  }
  void clear() {
    head_ = 0;
    size_ = 0;
  }

 private:
  void grow() {
    std::vector<T> bigger(std::max<std::size_t>(8, ring_.size() * 2));
    for (std::size_t i = 0; i < size_; ++i)
      bigger[i] = (*this)[i];
    ring_.swap(bigger);
    mask_ = ring_.size() - 1;
    head_ = 0;
  }
  std::vector<T> ring_;   // size 0 or a power of two
  std::size_t mask_ = 0;  // ring_.size() - 1 once grown (a load, not a division, per use)
  std::size_t head_ = 0;
  std::size_t size_ = 0;
};

}  // namespace ddpscope
