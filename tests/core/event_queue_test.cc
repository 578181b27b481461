// Tests for the engine's event queue: events pop in (time, priority, insertion)
// order whatever the interleaving of pushes and pops, as a run's determinism needs.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <vector>

#include "sim/core/event_queue.h"

namespace fleetsim {
namespace {

bool earlier(const Event& x, const Event& y) {
  if (x.time_ns != y.time_ns) return x.time_ns < y.time_ns;
  if (x.priority != y.priority) return x.priority < y.priority;
  return x.seq < y.seq;
}

// Pushes and pops interleaved at random, with many ties in time and priority:
// every pop is the earliest pending event, ties going to the one pushed first.
TEST(EventQueue, PopsInTimePriorityInsertionOrder) {
  std::mt19937_64 gen(7);
  EventQueue q;
  std::vector<Event> pending;  // what the queue should hold, with seqs as it assigns them
  uint64_t seq = 0;
  int64_t now = 0;
  for (int i = 0; i < 20000; ++i) {
    if (pending.empty() || gen() % 3 != 0) {
      Event e;
      e.time_ns = now + static_cast<int64_t>(gen() % 50);
      e.priority = static_cast<Priority>(gen() % 4);
      e.a = static_cast<uint32_t>(i);
      q.push(e);
      e.seq = seq++;
      pending.push_back(e);
      continue;
    }
    const auto it = std::min_element(pending.begin(), pending.end(), earlier);
    ASSERT_EQ(q.peek().a, it->a);
    const Event got = q.pop();
    EXPECT_EQ(got.a, it->a);
    EXPECT_EQ(got.seq, it->seq);
    now = got.time_ns;
    pending.erase(it);
    ASSERT_EQ(q.size(), pending.size());
  }
  while (!pending.empty()) {
    const auto it = std::min_element(pending.begin(), pending.end(), earlier);
    EXPECT_EQ(q.pop().a, it->a);
    pending.erase(it);
  }
  EXPECT_TRUE(q.empty());
}

}  // namespace
}  // namespace fleetsim
