// The hardware an NCCL communicator runs on, as NCCL's tuning model sees it:
// nodes x GPUs, NVLink, NICs, the network and the figures of NCCL's topology
// search (channels, bwIntra, bwInter). Presets and their provenance are in
// docs/collectives.md ("Presets": hardware figures and their sources).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "fleetsim/cost_model.h"
#include "fleetsim/scenario.h"
#include "sim/model/nccl_exec.h"
#include "sim/model/nccl_tables.h"

namespace fleetsim::nccl {

enum class CpuVendor : uint8_t { kIntel, kAmd };

// One graph as NCCL's search reports it ("nChannels N, bw X/Y"): execution
// channels and the per-channel intra-node and inter-node bandwidth in GB/s.
struct Graph {
  int channels = 0;
  double bw_intra_GBps = 0;
  double bw_inter_GBps = 0;
};

// Plain data. Graph figures left at 0 are derived from the hardware fields by
// nccl_graphs(); set them to pin what NCCL_DEBUG_SUBSYS=GRAPH printed.
struct Fabric {
  std::string system = "custom";
  int nodes = 1;
  int gpus_per_node = 8;
  GpuArch arch = GpuArch::kHopper;
  CpuVendor cpu = CpuVendor::kIntel;
  double nvlink_bandwidth_GBps = 450.0;  // per GPU per direction, line rate (0 = PCIe only)
  int nics_per_node = 8;
  double nic_bandwidth_Gbps = 400.0;     // per NIC per direction, line rate
  int gpus_per_nic = 1;                  // NIC affinity: GPUs behind one NIC's PCIe switch
  double oversubscription = 1.0;         // leaf:spine, rail-optimized fabric
  int nodes_per_leaf = 32;               // nodes under one leaf per rail (a SuperPOD SU)
  bool gpudirect = true;                 // GPUDirect RDMA; off = staged through host memory
  double host_bandwidth_GBps = 55.0;     // achievable GPU<->host per direction (PCIe), for !gpudirect
  bool nvls = true;                      // NVLink SHARP (Hopper+ with NVSwitch)
  bool collnet = false;                  // IB SHARP (CollNet) in the network
  double net_latency_us = 0.0;           // latencyInter the net plugin reports (IB: 0)
  double net_overhead_us = -1.0;         // NCCL_NET_OVERHEAD; < 0 = by CPU vendor (1 Intel, 2 AMD)
  // Per-hop latency beyond what NCCL's hwLat tables assume (which match the
  // Fleet defaults: 0.6 us per NVLink hop, 5 us per network hop): added to every
  // NVLink (or PCIe) hop and every network hop; negative values shorten them
  // (a hop never goes below 0). Set from fleet.nvlink_latency / net_latency.
  double nvlink_hop_extra_us = 0.0;
  double net_hop_extra_us = 0.0;
  // NCCL graph figures; 0 = derive (see nccl_graphs()).
  int channels = 0;                      // ring/tree execution channels
  double bw_intra_GBps = 0;              // per channel, single-node ring graph
  double bw_inter_GBps = 0;              // per channel, multi-node ring graph
  int nvls_channels = 0;
  double nvls_bw_GBps = 0;               // per channel, NVLS graph (intra)
  // How NCCL executes the chosen algorithm at a size (channels used, NVLS
  // chunking, per-step sync, launches): the execution model's named terms.
  ExecTerms exec;

  int ranks() const { return nodes * gpus_per_node; }
};

// The graphs NCCL would build for a group of `shape` on this fabric.
struct Graphs {
  Graph ring;
  Graph tree;
  Graph nvls;
  Graph collnet;
  bool tree_is_real_tree = false;  // multi-node trees branch (x0.85 in tuning.cc)
  // The ring graph's sameChannels: every channel follows one GPU order. True on
  // one node; across nodes only with one NIC, since channels spread over several
  // NICs enter each node at the GPU next to their NIC (NCCL issues #601, #1189
  // log "sameChannels 0" for such rings). Ring broadcast/reduce latency uses it.
  bool ring_same_channels = true;
};
Graphs nccl_graphs(const Fabric& f, const GroupShape& shape);

// Per-NIC bandwidth NCCL's inter-node search settles on for a NIC that moves
// `nic_GBps`: the largest of its sm90 inter speeds not above it (50 -> 48).
double inter_speed_GBps(double nic_GBps);
// What one NIC can move per direction, after the GPUDirect-off host-staging cap.
double effective_nic_GBps(const Fabric& f, bool gpudirect);

// Presets: "dgx-a100", "dgx-h100", "dgx-h200", "hgx-b200". nullopt if unknown.
std::optional<Fabric> fabric_preset(std::string_view name);
inline constexpr const char* kPresetNames = "dgx-a100, dgx-h100, dgx-h200, hgx-b200";

// The Fleet's default hop latencies, which NCCL's hwLat tables already assume.
inline constexpr double kFleetNvlinkLatencyUs = 0.6;
inline constexpr double kFleetNetLatencyUs = 5.0;

// Maps the simulator's Fleet onto a fabric: the preset named by fleet.system
// (arch guessed from the name when it is not a preset), then the Fleet's
// nodes, GPUs, NVLink and NIC figures on top, and its hop latencies as the
// difference from the defaults (nvlink_hop_extra_us, net_hop_extra_us).
Fabric fabric_from_fleet(const Fleet& fleet);

// `--set KEY=VALUE` on a fabric. Keys: nodes, gpus_per_node, arch, cpu,
// nvlink_bandwidth, nics, nic_bandwidth, gpus_per_nic, oversubscription,
// nodes_per_leaf, gpudirect, host_bandwidth, nvls, collnet, net_latency,
// net_overhead, nvlink_hop_extra, net_hop_extra, channels, bw_intra, bw_inter, nvls_channels, nvls_bw, and the
// execution terms nvls_step_sync, nvls_base, launch_per_gpu (us).
// Returns an error message naming what was expected, or "" on success.
std::string set_fabric_field(Fabric* f, std::string_view key, std::string_view value);

// Unit parsers for the command line (local to the NCCL model so it does not
// depend on the scenario loader): sizes "16GiB", "8", "1.5MB" -> bytes;
// rates "400Gb/s", "50GB/s" -> GB/s (10^9 B/s). nullopt if malformed.
std::optional<int64_t> parse_size_bytes(std::string_view text);
std::optional<double> parse_rate_GBps(std::string_view text);

// Degradations that NCCL's topology search did not see (they happened after
// init, or are congestion): the algorithm NCCL picked stays, its time stretches.
using DegradeKind = fleetsim::DegradeKind;
using LinkDegradation = fleetsim::LinkDegradation;

// The fabric's graphs with every degradation on the group's nodes (0 ..
// shape.nodes-1) applied: "a ring runs at its slowest link", so each graph's
// per-channel bandwidth drops to what the slowest NIC (or NVLink) gives a channel.
Graphs degraded_graphs(const Fabric& f, const GroupShape& shape,
                       const std::vector<LinkDegradation>& degradations);

}  // namespace fleetsim::nccl
