// Fault placement and fabric effects (fault_effects.h). Each fabric fault kind's
// mapping to a LinkDegradation is one case of fabric_degradation(); placement is
// read from the fields a fault uses (`node`, `nodes`, `ranks`), not its kind.
#include "sim/program/fault_effects.h"

#include <algorithm>

namespace fleetsim {

namespace {

// The group-relative index of NIC `nic` among the NICs the group's members on
// this node use (rail-optimized: GPU l uses NIC l / gpus_per_nic), or -1.
int nic_slot(const std::vector<int>& locals, int nic, int gpus_per_nic) {
  std::vector<int> used;
  for (int l : locals)
    if (used.empty() || used.back() != l / gpus_per_nic) used.push_back(l / gpus_per_nic);
  const auto it = std::find(used.begin(), used.end(), nic);
  return it == used.end() ? -1 : static_cast<int>(it - used.begin());
}

}  // namespace

std::optional<LinkDegradation> fabric_degradation(const Fault& f, const Fleet& fleet, int node,
                                                  const std::vector<int>& locals, bool multi_node) {
  if (fault_across_nodes(f.kind) && !multi_node) return std::nullopt;  // NVLink-only groups never use NICs
  const int gpus_per_nic = std::max(1, fleet.gpus_per_node / std::max(1, fleet.nics_per_node));
  LinkDegradation d;
  switch (f.kind) {
    case FaultKind::kLink:
      if (f.node != node || (d.index = nic_slot(locals, f.nic, gpus_per_nic)) < 0) return std::nullopt;
      d.kind = DegradeKind::kNicRate;
      d.fraction = f.fraction;
      return d;
    case FaultKind::kGpuDirect:
      if (!std::count(f.nodes.begin(), f.nodes.end(), node)) return std::nullopt;
      d.kind = DegradeKind::kGpuDirectOff;
      return d;
    case FaultKind::kNicAffinity:
      if (f.node != node || !std::count(locals.begin(), locals.end(), f.gpu) ||
          (d.index = nic_slot(locals, f.gpu / gpus_per_nic, gpus_per_nic)) < 0)
        return std::nullopt;
      d.kind = DegradeKind::kRemoteNuma;
      return d;
    case FaultKind::kNvlink: {
      // NVLink carries only the traffic between the group's GPUs on one node.
      const auto it = std::find(locals.begin(), locals.end(), f.gpu);
      if (f.node != node || it == locals.end() || locals.size() < 2) return std::nullopt;
      d.kind = DegradeKind::kNvlinkRate;
      d.index = static_cast<int>(it - locals.begin());  // the GPU's place among the group's GPUs on the node
      d.fraction = f.fraction;
      return d;
    }
    default:
      return std::nullopt;  // not a fabric fault
  }
}

std::vector<int> fault_nodes(const Fault& f, int gpus_per_node) {
  std::vector<int> out;
  if (f.node >= 0) out.push_back(f.node);
  out.insert(out.end(), f.nodes.begin(), f.nodes.end());
  if (fault_family(f.kind) != FaultFamily::kProgram)
    for (int r : f.ranks) out.push_back(r / gpus_per_node);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::optional<Fault> fault_on_nodes(Fault f, int lo, int hi, int gpus_per_node) {
  if (f.node >= 0) {
    if (f.node < lo || f.node >= hi) return std::nullopt;
    f.node -= lo;
    return f;
  }
  if (!f.nodes.empty()) {
    std::vector<int> nodes;
    for (int n : f.nodes)
      if (n >= lo && n < hi) nodes.push_back(n - lo);
    if (nodes.empty()) return std::nullopt;
    f.nodes = nodes;
    return f;
  }
  if (f.all_ranks) return f;
  const int first = lo * gpus_per_node, last = hi * gpus_per_node;
  std::vector<int> ranks;
  for (int r : f.ranks)
    if (r >= first && r < last) ranks.push_back(r - first);
  if (ranks.empty()) return std::nullopt;
  f.ranks = ranks;
  return f;
}

}  // namespace fleetsim
