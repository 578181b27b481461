// The hybrid executor's items over every rank: a uniform stretch's compute
// op, collective or step marker, one ring row each (or, when every rank's end
// is one value, that value alone), and the ring's rows read as arrays.
#include <algorithm>
#include <functional>

#include "sim/exec/hybrid_executor.h"

namespace fleetsim {

int64_t* HybridSim::row(int64_t item) {
  const auto slot = static_cast<size_t>(item % ring_);
  int64_t* out = end_.get() + slot * static_cast<size_t>(n_);
  if (!filled_[slot]) {
    FLEETSIM_DCHECK(flat_[slot] != kNotFlat);
    std::fill_n(out, n_, flat_[slot]);
    filled_[slot] = 1;
  }
  return out;
}

int64_t* HybridSim::fresh_row(int64_t item) {
  const auto slot = static_cast<size_t>(item % ring_);
  filled_[slot] = 1;
  return end_.get() + slot * static_cast<size_t>(n_);
}

// For an observer's span: a flat item's ends go to one scratch row, not to
// the ring (whose pages then stay untouched).
const int64_t* HybridSim::ends_of(int64_t item) {
  const auto slot = static_cast<size_t>(item % ring_);
  if (filled_[slot]) return end_.get() + slot * static_cast<size_t>(n_);
  if (flat_row_value_ != flat_[slot]) {
    flat_row_.assign(static_cast<size_t>(n_), flat_[slot]);
    flat_row_value_ = flat_[slot];
  }
  return flat_row_.data();
}

// Whether the instances of op's group hold every rank (then a collective
// writes its whole row and need not start from a copy of the one before).
bool HybridSim::covers_all(uint32_t op) const {
  const GroupLayout& L = groups_[static_cast<size_t>(plan_.ops[op].group)];
  return static_cast<int64_t>(L.count) * L.size == n_;
}

// How many instances of `L` (kind g) interleave: L.stride when each run of
// L.stride consecutive instances holds consecutive lowest ranks (a dp group
// under tp: the run's members fill a block of ranks), else 1.
int HybridSim::interleaved(GroupKind g, const GroupLayout& L) const {
  if (L.stride <= 1 || L.count % L.stride != 0) return 1;
  for (int inst = 0; inst < L.count; ++inst)
    if (first_member(plan_, g, inst) != first_member(plan_, g, inst - inst % L.stride) + inst % L.stride) return 1;
  return L.stride;
}

// A collective over every instance of its group: each member's GPU, free at
// `before` (the item before; may be `clock` itself), is free again at the max
// arrival plus the cost, written to `clock`. Each member's wait is added to
// rec.wait, or stored there (`store`: the step's first, over every rank), if
// the step keeps sums (rec.wait not empty).
// Interleaved instances are done a block at a time, in rank order. Returns the
// end every instance shares, or kNotFlat if they differ.
int64_t HybridSim::collective(uint32_t op, const int64_t* before, int64_t* clock, bool store, StepRec& rec) {
  const GroupKind g = plan_.ops[op].group;
  const GroupLayout& L = groups_[static_cast<size_t>(g)];
  const int w = lanes_[static_cast<size_t>(g)];
  Arrival* a = lane_arrival_.data();
  int64_t* done = lane_done_.data();
  int64_t* wait = rec.wait.empty() ? nullptr : rec.wait.data();
  int64_t same = L.count > 0 ? INT64_MAX : kNotFlat;
  for (int inst0 = 0; inst0 < L.count; inst0 += w) {
    const int base = first_member(plan_, g, inst0);
    const int stop = base + L.size * L.stride;
    if (w == 1) {
      a[0] = latest_arrival(before, base, L);
    } else {
      for (int j = 0; j < w; ++j) a[j] = Arrival{0, base + j};
      for (int r = base; r < stop; r += L.stride)
        for (int j = 0; j < w; ++j)
          if (before[r + j] > a[j].ns) a[j] = Arrival{before[r + j], r + j};
    }
    for (int j = 0; j < w; ++j) {
      keep_latest(a[j], &rec.last_arrival);
      done[j] = a[j].ns + op_cost_[op][L.shape_class[static_cast<size_t>(inst0 + j)]];
      if (same == INT64_MAX) same = done[j];
      else if (same != done[j]) same = kNotFlat;
    }
    if (wait == nullptr) {
      for (int r = base; r < stop; r += L.stride)
        for (int j = 0; j < w; ++j) clock[r + j] = done[j];
      continue;
    }
    for (int r = base; r < stop; r += L.stride)
      for (int j = 0; j < w; ++j) {
        const int64_t waited = a[j].ns - before[r + j];
        wait[r + j] = store ? waited : wait[r + j] + waited;
        clock[r + j] = done[j];
      }
  }
  return same;
}

// Item next_item_ of rec's step over every rank: the op `at` (instruction, op),
// or the step's marker when null. Each item starts from the one before.
void HybridSim::simulate_item(const std::pair<uint32_t, uint32_t>* at, StepRec& rec, StepSums* sums) {
  ItemMeta& m = meta_[static_cast<size_t>(next_item_ % ring_)];
  if (at == nullptr) {
    m.kind = ItemKind::kStepMarker;
    m.pc = static_cast<uint32_t>(plan_.program.size());
  } else {
    m.pc = at->first;
    m.op = at->second;
    if (plan_.ops[m.op].kind != OpKind::kCompute) {
      m.kind = ItemKind::kCollective;
      if (first_collective_ < 0) first_collective_ = next_item_;
    }
  }
  if (!flat_item(at, rec, sums)) row_item(at, rec, sums);
  if (m.kind == ItemKind::kCollective) {
    ++records_;
    ++seq_[static_cast<size_t>(plan_.ops[m.op].group)];
  }
}

// simulate_item when every rank's clock before the item is one value and the
// item leaves them equal (a marker; a compute op with one duration for every
// rank; a collective over every rank whose instances all cost the same, where
// nobody waits): the row is filled, with no per-rank arithmetic. False otherwise.
bool HybridSim::flat_item(const std::pair<uint32_t, uint32_t>* at, StepRec& rec, StepSums* sums) {
  const int64_t v = flat(next_item_ - 1);
  if (v == kNotFlat) return false;
  int64_t after = v;
  if (at != nullptr && plan_.ops[at->second].kind == OpKind::kCompute) {
    int64_t d = 0;
    if (!compute_time_.same_for_all(at->second, &d)) return false;
    if (sums->compute) {
      for (int64_t& c : rec.compute) c += d;
    } else {
      std::fill(rec.compute.begin(), rec.compute.end(), d);  // nothing when the step keeps no sums
    }
    sums->compute = true;
    after = v + d;
  } else if (at != nullptr) {
    const std::vector<int64_t>& costs = op_cost_[at->second];
    if (!covers_all(at->second) || costs.empty() ||
        std::adjacent_find(costs.begin(), costs.end(), std::not_equal_to<>()) != costs.end())
      return false;
    // Every member arrives at v; rank 0 is the lowest first member of the instances.
    keep_latest(Arrival{v, 0}, &rec.last_arrival);
    if (!sums->wait) std::fill(rec.wait.begin(), rec.wait.end(), 0);
    sums->wait = true;
    after = v + costs[0];
  }
  filled_[static_cast<size_t>(next_item_ % ring_)] = 0;  // the row is written out only if needed
  flat_[static_cast<size_t>(next_item_ % ring_)] = after;
  return true;
}

// simulate_item rank by rank. A collective over every rank reads the row
// before in place rather than from a copy.
void HybridSim::row_item(const std::pair<uint32_t, uint32_t>* at, StepRec& rec, StepSums* sums) {
  flat_[static_cast<size_t>(next_item_ % ring_)] = kNotFlat;
  const bool whole_row = at != nullptr && next_item_ > 0 && plan_.ops[at->second].kind != OpKind::kCompute &&
                         covers_all(at->second);
  int64_t* out = fresh_row(next_item_);
  if (next_item_ == 0) std::fill_n(out, n_, 0);
  else if (!whole_row) std::copy_n(row(next_item_ - 1), n_, out);
  if (at == nullptr) return;
  const uint32_t op = at->second;
  if (plan_.ops[op].kind == OpKind::kCompute) {
    compute_time_.add_all(rec.step, op, out, rec.compute.empty() ? nullptr : rec.compute.data(),
                          sums->compute ? ComputeTime::Sum::kAdd : ComputeTime::Sum::kStore);
    sums->compute = true;
    return;
  }
  const bool store = !sums->wait && covers_all(op);
  if (!sums->wait && !store) std::fill(rec.wait.begin(), rec.wait.end(), 0);
  sums->wait = true;
  const int64_t same = collective(op, whole_row ? row(next_item_ - 1) : out, out, store, rec);
  if (same != kNotFlat && covers_all(op)) flat_[static_cast<size_t>(next_item_ % ring_)] = same;
}

}  // namespace fleetsim
