// Where each fault kind acts, in one place per question, so that the plan, the
// executors (simulated and real) and the drill ask instead of switching on the
// kind: which link a fabric fault degrades for a group's members on a node,
// which nodes a fault is bound to, and the fault as a job on fewer nodes sees it.
#pragma once

#include <optional>
#include <vector>

#include "fleetsim/cost_model.h"
#include "fleetsim/scenario.h"

namespace fleetsim {

// The degradation fabric fault `f` (family kFabric) puts on a group whose
// members on `node` are the local GPUs `locals` (ascending), or nullopt when it
// does not touch them. `multi_node`: the group spans two or more nodes (a fault
// that acts on NIC traffic touches only such groups). The result's `node` is
// left for the caller (it is group-relative).
std::optional<LinkDegradation> fabric_degradation(const Fault& f, const Fleet& fleet, int node,
                                                  const std::vector<int>& locals, bool multi_node);

// The nodes fault `f` is bound to (ascending, no repeats); empty for a fault
// that follows the program rather than the hardware (skip, mismatch, or one on
// every rank).
std::vector<int> fault_nodes(const Fault& f, int gpus_per_node);

// `f` as a job made of nodes [lo, hi) of this one sees it (nodes and ranks
// renumbered from 0), or nullopt when it does not touch those nodes.
std::optional<Fault> fault_on_nodes(Fault f, int lo, int hi, int gpus_per_node);

}  // namespace fleetsim
