// SPDX-License-Identifier: GPL-2.0-or-later
// RingQueue (common/ring_queue.h), the engine's delivery queue: first in, first out, indexed
// from the front, across wrap-arounds and growth while wrapped, against std::deque.
#include <gtest/gtest.h>

#include <deque>
#include <random>

#include "ddpscope/common/ring_queue.h"

namespace ddpscope {
namespace {

TEST(RingQueue, GrowsWhileWrappedAndKeepsTheOrder) {
  RingQueue<int> q;
  EXPECT_TRUE(q.empty());
  for (int i = 0; i < 8; ++i)
    q.push_back(i);
  for (int i = 0; i < 5; ++i)
    q.pop_front();  // head at 5 of 8: the next pushes wrap
  for (int i = 8; i < 12; ++i)
    q.push_back(i);  // 7 held, wrapped
  q.push_back(12);
  q.push_back(13);  // the ninth: grows while wrapped
  ASSERT_EQ(q.size(), 9u);
  for (std::size_t i = 0; i < q.size(); ++i)
    EXPECT_EQ(q[i], static_cast<int>(5 + i));
  EXPECT_EQ(q.front(), 5);
}

TEST(RingQueue, AgreesWithDequeOnRandomOperations) {
  std::mt19937 rng(43);
  RingQueue<std::size_t> q;
  std::deque<std::size_t> ref;
  std::size_t next = 0;
  for (int step = 0; step < 20000; ++step) {
    const unsigned op = rng() % 8;
    if (op < 4 || ref.empty()) {
      q.push_back(next);
      ref.push_back(next++);
    } else if (op < 7) {
      q.pop_front();
      ref.pop_front();
    } else if (!ref.empty()) {
      const std::size_t i = rng() % ref.size();
      q[i] += 1000000;  // written through the index, seen at the same place
      ref[i] += 1000000;
    }
    ASSERT_EQ(q.size(), ref.size()) << step;
    ASSERT_EQ(q.empty(), ref.empty());
    if (!ref.empty()) {
      ASSERT_EQ(q.front(), ref.front()) << step;
    }
    if (step % 97 == 0) {
      for (std::size_t i = 0; i < ref.size(); ++i) {
        ASSERT_EQ(q[i], ref[i]) << step << " " << i;
      }
    }
  }
  q.clear();
  EXPECT_TRUE(q.empty());
  q.push_back(7);
  EXPECT_EQ(q.front(), 7u);
}

}  // namespace
}  // namespace ddpscope
