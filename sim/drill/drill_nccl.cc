// The drill's communication-side evidence: ncclras status (collective operation counts per communicator), NCCL_DEBUG=INFO
// COLL lines from a rerun, halving the job, and nccl-tests on one node.
#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <map>

#include "fleetsim/cost_model.h"
#include "sim/drill/drill_incident.h"
#include "sim/program/fault_effects.h"
#include "sim/run/run.h"

namespace fleetsim::drill {
namespace {

int ncclras_dtype(DType t) {
  switch (t) {
    case DType::kByte: return 1;
    case DType::kInt: return 2;
    case DType::kLong: return 4;
    case DType::kHalf: return 6;
    case DType::kFloat: return 7;
    case DType::kDouble: return 8;
    case DType::kBFloat16: return 9;
    case DType::kFloat8: return 10;
  }
  return 7;
}

const char* coll_name(OpKind k) {
  switch (k) {
    case OpKind::kAllGather: return "AllGather";
    case OpKind::kReduceScatter: return "ReduceScatter";
    case OpKind::kBroadcast: return "Broadcast";
    case OpKind::kReduce: return "Reduce";
    case OpKind::kSend: return "Send";
    case OpKind::kRecv: return "Recv";
    default: return "AllReduce";
  }
}

bool present(const RankView& v) { return !v.absent && !v.crashed; }

std::vector<GroupKind> kinds(const Plan& plan) {
  std::vector<GroupKind> out;
  for (GroupKind g : {GroupKind::kWorld, GroupKind::kTp, GroupKind::kDp, GroupKind::kPp}) {
    if (plan.group_exists(g)) out.push_back(g);
  }
  return out;
}

std::vector<int> members(const Plan& plan, GroupKind g, int inst) {
  std::vector<int> out;
  for (int i = 0; i < plan.group_size(g); ++i) out.push_back(plan.group_member(g, inst, i));
  return out;
}

}  // namespace

std::string render_ncclras(const Incident& inc, int query) {
  const Plan& plan = inc.plan;
  const int nodes = plan.scenario.fleet.nodes;
  const int gpn = plan.scenario.fleet.gpus_per_node;
  char buf[512];
  std::string out = "Job summary\n===========\n\n  Nodes  Processes         GPUs  Processes     GPUs\n"
                    "(total)   per node  per process    (total)  (total)\n";
  std::snprintf(buf, sizeof buf, "%7d  %9d  %11d  %9d  %7d\n\n", nodes, gpn, 1, plan.ranks, plan.ranks);
  out += buf;
  std::string table, errors;
  int comms = 0;
  for (GroupKind g : kinds(plan)) {
    bool mismatch = false, incomplete = false;
    for (int inst = 0; inst < plan.group_count(g); ++inst) {
      std::map<uint32_t, std::vector<int>> by_count;
      std::vector<int> gone;
      for (int r : members(plan, g, inst)) {
        const RankView& v = inc.ranks[static_cast<size_t>(r)];
        if (present(v)) by_count[v.launched[static_cast<size_t>(g)]].push_back(r);
        else gone.push_back(r);
      }
      const std::string head = "Group " + std::to_string(static_cast<int>(g)) + " (" + group_name(g) +
                               "), communicator " + std::to_string(inst) + " (ranks " + rank_list(members(plan, g, inst)) + ")\n";
      if (!gone.empty()) {
        incomplete = true;
        const bool dead = inc.ranks[static_cast<size_t>(gone[0])].crashed;
        errors += head + (dead ? "  DEAD: ranks considered dead (unreachable for more than 60 s): "
                               : "  INCOMPLETE: the communicator never completed initialization; missing rank(s): ") +
                  rank_list(gone) + "\n";
      }
      if (by_count.size() > 1) {
        mismatch = true;
        errors += head + "  Communicator ranks have different collective operation counts\n";
        for (auto it = by_count.rbegin(); it != by_count.rend(); ++it) {
          errors += "    " + std::to_string(it->second.size()) + (it->second.size() == 1 ? " rank has" : " ranks have") +
                    " launched up to operation " + std::to_string(it->first) +
                    (it->second.size() * 4 <= static_cast<size_t>(plan.group_size(g)) ? ": rank " + rank_list(it->second) : "") + "\n";
        }
      }
      ++comms;
    }
    std::snprintf(buf, sizeof buf, "%5d  %8d  %8d  %8d  %8d  %8d  %8s  %s\n", static_cast<int>(g), plan.group_count(g),
                  plan.group_shape(g, 0).nodes, plan.group_shape(g, 0).ranks_per_node, plan.group_size(g), plan.ranks,
                  incomplete ? "INIT" : "RUNNING", mismatch ? "MISMATCH" : (incomplete ? "INCOMPLETE" : "OK"));
    table += buf;
  }
  out += "Communicators... (" + std::to_string(comms) + " total)\n=============\n\n"
         "Group     Comms     Nodes     Ranks     Ranks     Ranks    Status  Errors\n"
         "    #  in group  per comm  per node  per comm  in group\n" + table;
  out += "\nErrors\n======\n\n" + (errors.empty() ? "(none)\n" : errors);
  if (query > 1 && inc.result.outcome != Outcome::kCompleted) {
    out += "\n(the same counts as your previous query: the gap does not move, so the communicator is stuck, not skewed)\n";
  }
  return out;
}

std::string render_nccl_debug(const Incident& inc) {
  const Plan& plan = inc.plan;
  const int gpn = plan.scenario.fleet.gpus_per_node;
  std::string out = "rerun with NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=COLL; the last COLL line of each rank per communicator\n"
                    "(communicators whose members agree are shown once):\n";
  char buf[400];
  for (GroupKind g : kinds(plan)) {
    for (int inst = 0; inst < plan.group_count(g); ++inst) {
      std::map<std::string, std::vector<int>> by_line;
      std::vector<std::string> order;
      for (int r : members(plan, g, inst)) {
        const RankView& v = inc.ranks[static_cast<size_t>(r)];
        const auto& recent = v.recent[static_cast<size_t>(g)];
        std::string key = "(no COLL line)";
        if (!recent.empty()) {
          const WorkRecord& w = recent.back();
          std::snprintf(buf, sizeof buf, "%s: opCount %x sendbuff 0x7f2a40000000 recvbuff 0x7f2a40000000 count %" PRId64
                        " datatype %d op 0 root 0 comm 0x55d0c8e%02x [nranks=%d]",
                        coll_name(plan.ops[w.op].kind), v.launched[static_cast<size_t>(g)] - 1,
                        w.bytes / dtype_bytes(w.dtype), ncclras_dtype(w.dtype), static_cast<int>(g) * 16 + inst % 16,
                        plan.group_size(g));
          key = buf;
        }
        if (!by_line.count(key)) order.push_back(key);
        by_line[key].push_back(r);
      }
      if (order.size() == 1 && inst > 0) continue;
      out += "comm " + std::string(group_name(g)) + "#" + std::to_string(inst) + ":\n";
      for (const std::string& key : order) {
        const int r = by_line[key][0];
        out += "  node" + std::to_string(r / gpn) + ":" + std::to_string(1000 + r) + ":" + std::to_string(1100 + r) +
               " [" + std::to_string(r % gpn) + "] NCCL INFO " + key + "   <- rank " + rank_list(by_line[key]) + "\n";
      }
    }
  }
  return out;
}

namespace {

// The incident's scenario as a new job on nodes [lo, hi): ranks renumbered from 0,
// dp scaled to the half, faults outside the half dropped and the rest renumbered.
// nullopt when a contiguous half cannot hold the job's layout (pp > 1 spreads
// each pipeline stage over all nodes; tp must divide the half).
std::optional<Scenario> half_scenario(const Plan& plan, int lo, int hi) {
  Scenario s = plan.scenario;
  const int gpn = s.fleet.gpus_per_node;
  const int ranks = (hi - lo) * gpn;
  if (plan.pp > 1 || ranks % plan.tp != 0) return std::nullopt;
  s.fleet.nodes = hi - lo;
  s.parallel.dp = ranks / plan.tp;
  s.expect = Expect{};
  std::vector<Fault> kept;
  for (const Fault& f : s.faults)
    if (std::optional<Fault> g = fault_on_nodes(f, lo, hi, gpn)) kept.push_back(std::move(*g));
  s.faults = kept;
  return s;
}

struct HalfRun {
  bool ok = false;
  RunResult result;
  double tax = 0;  // mean step over the half's own jitter-free, fault-free step, minus 1
};

HalfRun run_half(const Scenario& s) {
  HalfRun h;
  auto plan = compile_plan(s);
  if (!plan.ok()) return h;
  auto prepared = prepare_run(std::move(*plan));
  if (!prepared.ok()) return h;
  auto run = execute_steps(*prepared);
  if (!run.ok()) return h;
  h.result = run->result;
  if (h.result.steps_completed > 0 && run->baseline_step_ns > 0)
    h.tax = static_cast<double>(h.result.end.ns) / static_cast<double>(h.result.steps_completed) /
                run->baseline_step_ns - 1;
  h.ok = true;
  return h;
}

std::string symptom_of(const RunResult& r) {
  switch (r.outcome) {
    case Outcome::kHang: return "hangs at step " + std::to_string(r.steps_completed + 1);
    case Outcome::kCrash: return "a worker dies at step " + std::to_string(r.crash.step);
    case Outcome::kDeadlock: return "stops (no watchdog fires) at step " + std::to_string(r.stuck_step);
    case Outcome::kCompleted: break;
  }
  return "completes";
}

}  // namespace

// Halving the job: two real reruns, each half of the nodes as a job of its own.
std::string render_bisect(const Incident& inc) {
  const Plan& plan = inc.plan;
  const int nodes = plan.scenario.fleet.nodes;
  if (nodes >= 2) {
    const int half = nodes / 2;
    auto a = half_scenario(plan, 0, half), b = half_scenario(plan, half, nodes);
    if (a && b) {
      const HalfRun runs[2] = {run_half(*a), run_half(*b)};
      if (runs[0].ok && runs[1].ok) {
        // The full job's own tax, to judge whether a completed half is slow too.
        double full_tax = 0;
        if (inc.result.steps_completed > 0 && inc.baseline_step_ns > 0)
          full_tax = static_cast<double>(inc.result.end.ns) / static_cast<double>(inc.result.steps_completed) /
                         inc.baseline_step_ns - 1;
        const bool hang = inc.result.outcome != Outcome::kCompleted;
        std::string out = "reran as two half jobs (dp halved, same program, ranks renumbered from 0 in each):\n";
        int reproduced = 0;
        char buf[200];
        // A slowdown reproduces in a half that pays clearly more than the other
        // (noise everywhere makes both pay a little), or in both if both pay much.
        const double hi_tax = std::max(runs[0].tax, runs[1].tax), lo_tax = std::min(runs[0].tax, runs[1].tax);
        const bool one_sided = hi_tax > 0.05 && hi_tax - lo_tax > std::max(0.03, 0.25 * hi_tax);
        for (int h = 0; h < 2; ++h) {
          const RunResult& r = runs[h].result;
          bool repro = false;
          std::string what;
          if (hang) {
            repro = r.outcome != Outcome::kCompleted;
            what = symptom_of(r);
          } else {
            repro = one_sided ? runs[h].tax == hi_tax : lo_tax > std::max(0.05, 0.5 * full_tax);
            std::snprintf(buf, sizeof buf, "completes, step time %.1f%% over its jitter-free step (the full job: %.1f%%)",
                          100 * runs[h].tax, 100 * full_tax);
            what = buf;
            if (r.outcome != Outcome::kCompleted) {
              repro = true;
              what = symptom_of(r);
            }
          }
          reproduced += repro;
          out += "  nodes " + std::to_string(h == 0 ? 0 : half) + "-" + std::to_string(h == 0 ? half - 1 : nodes - 1) +
                 ": " + what + (repro ? "  <- reproduces" : "") + "\n";
        }
        if (reproduced == 2) return out + "both halves reproduce: the cause follows the program (or is everywhere); "
                                          "look at the code path, not the hardware\n";
        if (reproduced == 1) return out + "one half reproduces: the cause is hardware in that half; halve it again\n";
        return out + "neither half reproduces: the cause needs the whole job (traffic between the halves, or a "
                     "rank number only the full job has); test node pairs across the halves\n";
      }
    }
  }
  return render_bisect_reasoned(inc);
}

std::string render_bisect_reasoned(const Incident& inc) {
  const Plan& plan = inc.plan;
  const int nodes = plan.scenario.fleet.nodes;
  const int gpn = plan.scenario.fleet.gpus_per_node;
  if (nodes < 2) return "bisect: the job runs on one node; nothing to halve\n";
  // A rank-bound fault (a slow GPU, a stuck or dead process, a node that never
  // started) follows its node; a program bug (a desync or a mismatch) follows the
  // code and reproduces in either half. A network fault needs traffic between
  // nodes, so a one-node half runs clean even when it holds the bad NIC.
  std::vector<int> bound, net_bound;
  for (const Fault& f : plan.scenario.faults) {
    const FaultFamily family = fault_family(f.kind);
    const std::vector<int> at = fault_nodes(f, gpn);
    if (family == FaultFamily::kCompute || family == FaultFamily::kProcess)
      bound.insert(bound.end(), at.begin(), at.end());
    else if (family == FaultFamily::kFabric) {
      std::vector<int>& into = fault_across_nodes(f.kind) ? net_bound : bound;
      into.insert(into.end(), at.begin(), at.end());
    }
  }
  const bool program = bound.empty() && net_bound.empty();
  const int half = nodes / 2;
  std::string symptom = inc.result.outcome == Outcome::kCompleted ? "slow (step time up)" :
                        inc.result.outcome == Outcome::kCrash ? "a worker dies" : "hangs";
  std::string out = "rerun as two half jobs: nodes 0-" + std::to_string(half - 1) + " and nodes " +
                    std::to_string(half) + "-" + std::to_string(nodes - 1) + " (dp halved, same program):\n";
  int reproduced = 0;
  for (int h = 0; h < 2; ++h) {
    const int lo = h == 0 ? 0 : half;
    const int hi = h == 0 ? half : nodes;
    bool repro = program;
    for (int n : bound) repro |= n >= lo && n < hi;
    for (int n : net_bound) repro |= n >= lo && n < hi && hi - lo >= 2;
    reproduced += repro;
    out += "  nodes " + std::to_string(lo) + "-" + std::to_string(hi - 1) + ": " + (repro ? symptom : std::string("runs clean")) + "\n";
  }
  if (program) return out + "both halves reproduce: the fault follows the program, not the hardware\n";
  if (reproduced == 2) return out + "both halves reproduce: the cause is in both halves (or everywhere); halve each again\n";
  if (reproduced == 1) return out + "only one half reproduces: the fault follows the hardware in that half; halve it again\n";
  return out + "neither half reproduces: the fault needs traffic between nodes (a NIC, GPUDirect, NUMA placement); "
               "run nccl-tests on node pairs\n";
}

std::string render_nccl_tests(const Incident& inc, int node, int node2) {
  const Plan& plan = inc.plan;
  const int nodes = plan.scenario.fleet.nodes;
  if (node < 0 || node >= nodes || node2 >= nodes || node2 == node) return "nccl-tests: no such node\n";
  const bool pair = node2 >= 0;
  const int gpn = plan.scenario.fleet.gpus_per_node;
  const CostModel* cost = inc.cost.get();  // the model the incident ran with
  std::vector<std::pair<int, std::vector<int>>> ring;
  for (int n : pair ? std::vector<int>{node, node2} : std::vector<int>{node}) {
    ring.push_back({n, {}});
    for (int l = 0; l < gpn; ++l) ring.back().second.push_back(l);
  }
  const std::vector<LinkDegradation> degraded = plan.node_degradations(ring);
  const int n_gpus = gpn * static_cast<int>(ring.size());
  const GroupShape shape{n_gpus, static_cast<int>(ring.size()), gpn};
  std::string out = pair ? "node" + std::to_string(node) + ",node" + std::to_string(node2) + ": $ mpirun -np " +
                               std::to_string(n_gpus) + " -H node" + std::to_string(node) + ":" + std::to_string(gpn) +
                               ",node" + std::to_string(node2) + ":" + std::to_string(gpn) +
                               " all_reduce_perf -b 8M -e 1G -f 4 -g 1"
                         : "node" + std::to_string(node) + ": $ all_reduce_perf -b 8M -e 1G -f 4 -g " + std::to_string(gpn);
  out += "\n#       size         count      type   redop    root     time   algbw   busbw #wrong\n"
         "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)\n";
  double sum = 0, healthy_sum = 0;
  int n = 0;
  char buf[200];
  for (int64_t bytes = 8 << 20; bytes <= (1ll << 30); bytes *= 4) {
    const auto busbw_of = [&](Duration d) {
      const double us = static_cast<double>(d.ns) / 1e3;
      return std::pair{us, static_cast<double>(bytes) / (us * 1e3) * 2.0 * (n_gpus - 1) / n_gpus};
    };
    const auto [us, busbw] = busbw_of(cost->collective_time_degraded(OpKind::kAllReduce, bytes, shape, degraded));
    healthy_sum += busbw_of(cost->collective_time(OpKind::kAllReduce, bytes, shape)).second;
    std::snprintf(buf, sizeof buf, "%12" PRId64 "  %12" PRId64 "     float     sum      -1  %7.1f  %6.2f  %6.2f      0\n",
                  bytes, bytes / 4, us, static_cast<double>(bytes) / (us * 1e3), busbw);
    out += buf;
    sum += busbw;
    ++n;
  }
  std::snprintf(buf, sizeof buf, "# Out of bounds values : 0 OK\n# Avg bus bandwidth    : %.2f\n", sum / n);
  out += buf;
  if (!pair && sum < 0.9 * healthy_sum) {
    std::snprintf(buf, sizeof buf, "(%.0f%% of the %.2f GB/s the fleet's other nodes reach: this test crosses no NIC, "
                  "so NVLink or an NVSwitch port on node%d is slow; check nvidia-smi nvlink --status and -e there)\n",
                  100.0 * sum / healthy_sum, healthy_sum / n, node);
    return out + buf;
  }
  if (!pair) {
    return out + "(in line with the fleet's other nodes: NVLink on this node is healthy; this test crosses no NIC, "
                 "so run node pairs (`nccl-tests A B`) to test the network)\n";
  }
  if (sum < 0.9 * healthy_sum) {
    std::snprintf(buf, sizeof buf, "(%.0f%% of the %.2f GB/s other node pairs reach: a NIC, GPUDirect or the NIC's "
                  "NUMA placement on node%d or node%d is slow; pair each with a third node)\n",
                  100.0 * sum / healthy_sum, healthy_sum / n, node, node2);
    return out + buf;
  }
  return out + "(in line with the fleet's other node pairs: the network between these nodes is healthy)\n";
}

}  // namespace fleetsim::drill
