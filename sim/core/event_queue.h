// The engine's event queue: a binary heap ordered by (time, priority, seq). The
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
    std::push_heap(heap_.begin(), heap_.end(), Later{});
  }
  bool empty() const { return heap_.empty(); }
  size_t size() const { return heap_.size(); }
  const Event& peek() const { return heap_.front(); }
  Event pop() {
    FLEETSIM_DCHECK(!heap_.empty());
    std::pop_heap(heap_.begin(), heap_.end(), Later{});
    Event e = heap_.back();
    heap_.pop_back();
    return e;
  }

 private:
  struct Later {
    bool operator()(const Event& x, const Event& y) const {
      if (x.time_ns != y.time_ns) return x.time_ns > y.time_ns;
      if (x.priority != y.priority) return x.priority > y.priority;
      return x.seq > y.seq;
    }
  };
  std::vector<Event> heap_;
  uint64_t next_seq_ = 0;
};

}  // namespace fleetsim
