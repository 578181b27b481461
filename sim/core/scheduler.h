// The engine's clock and agenda: an EventQueue, the current time, and how many
// pending events keep the run alive. Observation events (Priority::kObserve, the
// periodic samples) do not: a run whose only pending events are observations is
// over. pop() moves the clock to the event it returns. Time never goes back, and
// events of one instant and priority pop in the order they were scheduled.
// Knows nothing about what the events mean (that is the executor's switch).
#pragma once

#include <cstddef>
#include <cstdint>

#include "fleetsim/status.h"
#include "fleetsim/time.h"
#include "sim/core/event_queue.h"

namespace fleetsim {

class Scheduler {
 public:
  // Room for `n` pending events; the queue allocates only when it outgrows it.
  void reserve(size_t n) { queue_.reserve(n); }

  SimTime now() const { return now_; }

  // Adds `e` to the agenda (the queue assigns its seq). REQUIRES: e.time_ns >= now().
  void schedule(const Event& e) {
    FLEETSIM_DCHECK(e.time_ns >= now_.ns);
    if (e.priority != Priority::kObserve) ++live_;
    queue_.push(e);
  }

  // Whether a pending event keeps the run alive (one that is not an observation).
  bool live() const { return live_ > 0; }
  size_t pending() const { return queue_.size(); }

  // When the next event happens; SimTime::never() when nothing is pending.
  SimTime peek() const { return queue_.empty() ? SimTime::never() : SimTime{queue_.peek().time_ns}; }
  // The next event itself; null when nothing is pending.
  const Event* next() const { return queue_.empty() ? nullptr : &queue_.peek(); }

  // Removes the next event and moves the clock to it. REQUIRES: pending() > 0.
  Event pop() {
    FLEETSIM_DCHECK(!queue_.empty());
    const Event e = queue_.pop();
    FLEETSIM_DCHECK(e.time_ns >= now_.ns);  // monotone time
    // Among events of one instant and priority, insertion order (seq) decides.
    FLEETSIM_DCHECK(!popped_ || e.time_ns != now_.ns || e.priority != last_priority_ || e.seq > last_seq_);
    if (e.priority != Priority::kObserve) --live_;
    FLEETSIM_DCHECK(live_ >= 0 && static_cast<size_t>(live_) <= queue_.size());
    now_ = SimTime{e.time_ns};
    popped_ = true;
    last_priority_ = e.priority;
    last_seq_ = e.seq;
    return e;
  }

 private:
  EventQueue queue_;
  SimTime now_{};
  int64_t live_ = 0;  // pending events that are not observations
  // The last event popped, for the ordering checks.
  bool popped_ = false;
  Priority last_priority_ = Priority::kNormal;
  uint64_t last_seq_ = 0;
};

}  // namespace fleetsim
