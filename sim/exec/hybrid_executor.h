// The hybrid executor: runs a plan's uniform stretch (steps where every rank
// runs the same compute and collectives, with no fault and no CPU wait) at
// lockstep speed, keeping each rank's GPU end time of its last few launch-queue
// items, then hands the event executor (FleetSim) the exact state it would have
// reached by then (handover.h) for the divergent steps, and takes the run back
// at lockstep speed once it is quiet again (hybrid_return.cc). Observers see
// what they would have seen under the event executor alone, in bulk for whole
// steps; see docs/engine.md, "The hybrid executor", for why the outputs it
// allows (summary, steps, model) come out byte-identical.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "fleetsim/engine.h"
#include "sim/exec/group_layout.h"
#include "sim/exec/handover.h"
#include "sim/exec/lockstep_executor.h"
#include "sim/model/compute_time.h"

namespace fleetsim {

class FleetSim;

// Whether the hybrid may run `plan` (it still falls back at run time if no
// uniform stretch comes first). Not for: collective_model steps, link, NIC and
// absent faults, job.backend gloo, more than one crash fault, launch_queue above 64.
Eligibility hybrid_eligible(const Plan& plan);

class HybridSim {
 public:
  // REQUIRES: hybrid_eligible(plan).ok; plan, cost, observers and accounting
  // outlive the object. `accounting` (may be null) takes whole steps of the
  // uniform stretch in place of per-op callbacks; when it is also one of the
  // observers, that observer gets those steps only through it.
  HybridSim(const Plan& plan, const CostModel& cost, const std::vector<Observer*>& observers,
            StepAccounting* accounting);

  // Runs to the end. False (observers may have seen part of the run) when the
  // event executor must rerun it alone: step 1 is not uniform, a rank fell
  // outside the kept history, or the run failed with an input error (whose
  // rank, among several at one instant, only the event executor's order names).
  bool run(RunResult* out);

  // The last step a uniform stretch simulated without events (a handover falls in it).
  int64_t uniform_steps() const { return last_step_; }
  // Times the run came back from the event executor to lockstep speed.
  int returns() const { return returns_; }
  // Items of divergent steps' shared starts that stretches ran before handing over.
  int64_t shared_items() const { return shared_items_; }

 private:
  struct ItemMeta {  // one launch-queue item, the same on every rank in a uniform stretch
    ItemKind kind = ItemKind::kCompute;
    int64_t step = 0;
    uint32_t op = 0;
    uint32_t pc = 0;       // the op's instruction (program size for a step marker)
    uint32_t records = 0;  // collectives issued before it
    uint32_t seq[kGroupKinds] = {};  // of which on each group kind
  };
  struct StepRec {  // a simulated step not yet reported to the observers
    int64_t step = 0;
    int64_t first_item = 0, marker_item = 0;
    bool partial = false;  // the event executor reported part of it (before a return)
    Arrival last_arrival;  // at a collective
    int64_t latest_ns = 0;  // the latest end of the step over the ranks, and
    int latest_rank = -1;   // the lowest rank ending then (-1: not found yet)
    std::vector<int64_t> compute, wait;  // per rank (ns)
  };

  using Path = std::vector<std::pair<uint32_t, uint32_t>>;  // (instruction, op) per item

  // hybrid_executor.cc: the uniform stretch.
  bool shared_path(int64_t step, Path* path) const;
  bool uniform_path(int64_t step, Path* path) const;
  bool uniform(int64_t step, Path* path);  // uniform_path, remembering the steps that are not
  bool simulate_step(int64_t step, const Path& path);
  int64_t shared_prefix(int64_t step);
  struct StepSums {  // whether the step's compute and wait sums have their first term
    bool compute = false, wait = false;
  };
  void next_item(int64_t step, const std::pair<uint32_t, uint32_t>* at, StepRec& rec, StepSums* sums);
  void feed_whole_steps(int64_t before_ns);
  int64_t cpu_reaches_next_step() const;
  int64_t stretch(int64_t* step);
  bool run_events(FleetSim& sim, int64_t since, int64_t* step);
  int64_t op_cost(uint32_t op, GroupKind g, int instance) const;
  // Rank r's GPU end of the item (item < 0: 0). A flat item's row is written
  // out only when something needs it as an array (row()); until then its ring
  // slot keeps only the value every rank shares.
  int64_t end(int64_t item, int r) const {
    if (item < 0) return 0;
    const auto slot = static_cast<size_t>(item % ring_);
    return filled_[slot] ? end_[slot * static_cast<size_t>(n_) + static_cast<size_t>(r)] : flat_[slot];
  }
  const ItemMeta& meta(int64_t item) const { return meta_[static_cast<size_t>(item % ring_)]; }
  // Every rank's end of the item when they are all one (item < 0: 0), else kNotFlat.
  static constexpr int64_t kNotFlat = INT64_MIN;
  int64_t flat(int64_t item) const { return item < 0 ? 0 : flat_[static_cast<size_t>(item % ring_)]; }
  bool kept(int64_t item) const { return item >= next_item_ - ring_ && item < next_item_; }

  // hybrid_items.cc: one item over every rank, and the ring's rows.
  void simulate_item(const std::pair<uint32_t, uint32_t>* at, StepRec& rec, StepSums* sums);
  bool flat_item(const std::pair<uint32_t, uint32_t>* at, StepRec& rec, StepSums* sums);
  void row_item(const std::pair<uint32_t, uint32_t>* at, StepRec& rec, StepSums* sums);
  bool covers_all(uint32_t op) const;
  int interleaved(GroupKind g, const GroupLayout& L) const;
  int64_t collective(uint32_t op, const int64_t* before, int64_t* clock, bool store, StepRec& rec);
  int64_t* row(int64_t item);        // the item's row, written out from its flat value if need be
  int64_t* fresh_row(int64_t item);  // the item's row, which the caller writes whole
  const int64_t* ends_of(int64_t item);  // every rank's end, from the ring or the scratch row

  // hybrid_handover.cc: the state at the handover and what observers saw before it.
  bool hand_over(int64_t t, Handover* h);
  bool build_rank(int r, int64_t t, Handover* h);
  void add_pending(int64_t t, Handover* h);
  void feed_partial(const StepRec& rec, int64_t before);
  uint64_t events_in(const StepRec& rec, int64_t before) const;
  WorkRecord work(int r, int64_t item) const;
  int64_t issued(int64_t item, int r) const;  // when r's CPU enqueued the item

  // hybrid_return.cc: taking a quiet event-executor run back to lockstep speed.
  bool take_back(FleetSim& sim);
  bool place_ranks(const Handover& h, int64_t lo, int64_t hi, int64_t k0);
  bool queues_match(const Handover& h) const;
  uint64_t expected_agenda() const;

  const Plan& plan_;
  const CostModel& cost_;
  std::vector<Observer*> obs_;
  StepAccounting* accounting_;
  const Observer* accounted_ = nullptr;  // the observer that is also accounting_, if any
  ComputeTime compute_time_;
  int n_ = 0;
  int64_t qcap_ = 0;
  int64_t ring_ = 0;                  // items kept per rank
  std::unique_ptr<int64_t[]> end_;    // ring_ x n: each item's GPU end per rank (ns), where filled_
  std::vector<uint8_t> filled_;       // ring_: the row holds the item's ends (else flat_ does)
  std::vector<int64_t> flat_row_;     // n: a flat item's ends written out for an observer
  int64_t flat_row_value_ = kNotFlat; // the value flat_row_ holds
  std::vector<ItemMeta> meta_;        // ring_
  std::vector<int64_t> flat_;         // ring_: each item's end when every rank's is the same, else kNotFlat
  int64_t next_item_ = 0;             // items simulated so far
  uint32_t records_ = 0;              // collectives so far
  uint32_t seq_[kGroupKinds] = {};
  std::vector<GroupLayout> groups_;   // per GroupKind
  std::vector<std::vector<int64_t>> op_cost_;  // per plan op: cost per shape class
  std::vector<int> lanes_;            // per GroupKind: instances a collective does at once (interleaved)
  std::vector<Arrival> lane_arrival_; // scratch: their latest arrivals
  std::vector<int64_t> lane_done_;    //   and when they end
  std::vector<StepRec> window_;       // simulated steps not yet fed, oldest first
  std::vector<StepRec> spare_;        // their reusable buffers
  StepRec prefix_rec_;                // scratch for shared_prefix's items
  int64_t first_fault_step_ = INT64_MAX;
  std::vector<int8_t> not_uniform_;   // per step: 1 once found not uniform
  Path path_;                         // scratch
  int64_t timeout_ns_ = -1;
  int64_t first_collective_ = -1;     // item index of the first collective
  int64_t armed_at_ = -1;             // when the pending watchdog check was armed, once known
  int64_t watchdog_at_ = -1;          // the pending watchdog check, once known
  uint32_t watchdog_gen_ = 1;         // its generation
  int64_t from_ = 0;                  // the stretch began here (0, or a return): events before it are FleetSim's
  uint64_t events_base_ = 0;          // events FleetSim processed before from_
  uint64_t fed_events_ = 0;           // events of the steps fed whole since from_
  int64_t last_step_ = 0;
  std::vector<int64_t> heads_;        // per rank at the handover: its queue's head item
  // The return (hybrid_return.cc): per rank, its head and its CPU's next item
  // at from_, the heads' start times, and the queued items' enqueue times.
  std::vector<int64_t> ret_head_, ret_next_, ret_begun_, ret_created_;
  std::vector<std::pair<int64_t, int>> starts_;  // (item before a head, rank), by item
  size_t next_start_ = 0;
  Handover back_;                     // what FleetSim hands back
  int probe_ = 0;                     // the rank to look at first when trying to return
  int64_t min_head_step_ = 0;         // a return needs every queued item at this step or later
  int64_t try_every_ns_ = 0;          // how often a return is tried
  int returns_ = 0;
  int64_t shared_items_ = 0;
};

}  // namespace fleetsim
