// The engine's event queue: a 4-ary heap ordered by (time, priority, seq). The
// monotonic seq makes equal-time, equal-priority events pop in insertion order,
// so a run's event order is a pure function of its inputs. Events are small
// trivially-copyable records; the heap's storage is reserved up front.
#pragma once

#include <cstdint>
#include <algorithm>
#include <type_traits>
#include <vector>

#include "fleetsim/status.h"

namespace fleetsim {

// Lower runs first among events at the same time: faults before ordinary work,
// watchdog checks after the work of that instant, observation last.
enum class Priority : uint8_t { kFault = 0, kNormal = 1, kWatchdog = 2, kObserve = 3 };

struct Event {
  int64_t time_ns = 0;
  uint64_t seq = 0;       // assigned by the queue
  Priority priority = Priority::kNormal;
  uint8_t kind = 0;       // meaning private to the executor
  uint32_t a = 0;         // executor-defined payload (a rank, a group instance...)
  uint32_t b = 0;
  uint32_t c = 0;
};
static_assert(std::is_trivially_copyable_v<Event>);

class EventQueue {
 public:
  void reserve(size_t n) { heap_.reserve(n); }
  void push(Event e) {
    e.seq = next_seq_++;
    heap_.push_back(e);
    sift_up(heap_.size() - 1);
  }
  bool empty() const { return heap_.empty(); }
  size_t size() const { return heap_.size(); }
  const Event& peek() const { return heap_.front(); }
  Event pop() {
    FLEETSIM_DCHECK(!heap_.empty());
    const Event top = heap_.front();
    const Event last = heap_.back();
    heap_.pop_back();
    if (!heap_.empty()) sift_down(last);
    return top;
  }

 private:
  // A 4-ary heap: half the levels of a binary one, and a node's four children
  // (32 bytes each) share two cache lines; at 100,000+ pending events the pops'
  // cache misses are most of the queue's cost. The order is total (seq is
  // unique), so the pops come out as from any other heap.
  static constexpr size_t kArity = 4;
  static bool before(const Event& x, const Event& y) {
    if (x.time_ns != y.time_ns) return x.time_ns < y.time_ns;
    if (x.priority != y.priority) return x.priority < y.priority;
    return x.seq < y.seq;
  }
  void sift_up(size_t i) {
    const Event e = heap_[i];
    while (i > 0) {
      const size_t parent = (i - 1) / kArity;
      if (!before(e, heap_[parent])) break;
      heap_[i] = heap_[parent];
      i = parent;
    }
    heap_[i] = e;
  }
  // Places `e` from the root down. REQUIRES: !heap_.empty().
  void sift_down(const Event& e) {
    const size_t n = heap_.size();
    size_t i = 0;
    for (;;) {
      const size_t first = i * kArity + 1;
      if (first >= n) break;
      size_t best = first;
      const size_t end = std::min(first + kArity, n);
      for (size_t c = first + 1; c < end; ++c)
        if (before(heap_[c], heap_[best])) best = c;
      if (!before(heap_[best], e)) break;
      heap_[i] = heap_[best];
      i = best;
    }
    heap_[i] = e;
  }
  std::vector<Event> heap_;
  uint64_t next_seq_ = 0;
};

}  // namespace fleetsim
