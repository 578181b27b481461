// Fabric presets, graph derivation and degradations for the NCCL cost model.
// Derivation rules and provenance of every default: docs/collectives.md and
// NCCL 2.30.7's topology search (search speeds, NVL/NET link figures) and the
// hardware figures of nccl-tests issues #212 and #290 and nccl issue #1189.
#include "sim/model/nccl_fabric.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <cmath>

namespace fleetsim::nccl {
namespace {

// NCCL sm90 inter-node per-channel speeds tried by search.cc (reference §1.2).
constexpr std::array<double, 17> kInterSpeeds = {48, 45, 42, 40, 30, 24, 22, 20, 17.5,
                                                 15, 12, 6, 3, 2.4, 1.2, 0.24, 0.12};
// NCCL's achievable NVLink is ~80% of line rate ("~20% protocol overhead":
// 450 -> 360-370 GB/s, sjeaugey in nccl-tests #212).
constexpr double kNvlinkEfficiency = 0.8;
// What NVLink moves point to point: nvbandwidth measures 396 of 450 GB/s (88%)
// on H200 (reference §5). Bounds how much network traffic a node's GPUs can
// forward to its NICs in a multi-node ring.
constexpr double kNvlinkP2pEfficiency = 0.88;
// NVLS bus bandwidth is ~480 GB/s on 8 H100/H200 = 16/15 of NVLink line rate
// (nccl-tests #212, #290; stas00 8xH200 482 GB/s).
constexpr double kNvlsPerLineRate = 16.0 / 15.0;
constexpr int kDefaultNvlsChannels = 16;  // NCCL's nvlsChannels default (reference §1.1)

int default_channels(GpuArch a) {
  switch (a) {
    case GpuArch::kVolta: return 16;
    case GpuArch::kAmpere: return 24;
    case GpuArch::kHopper: return 24;     // "channel{Lo..Hi}={0..23}" on 8x H100/H200
    case GpuArch::kBlackwell: return 32;
  }
  return 24;
}

// All GPUs of a node talk over NVLink, or over PCIe when there is no NVLink.
double intra_total_GBps(const Fabric& f) {
  return f.nvlink_bandwidth_GBps > 0 ? kNvlinkEfficiency * f.nvlink_bandwidth_GBps
                                     : f.host_bandwidth_GBps;
}

// NICs serving the group's ranks on one node (affinity: gpus_per_nic share one).
int nics_used(const Fabric& f, const GroupShape& s) {
  const int per = std::max(1, f.gpus_per_nic);
  return std::clamp((s.ranks_per_node + per - 1) / per, 1, std::max(1, f.nics_per_node));
}

// Per-channel bandwidth for `channels` when the default count gets `per_ch`:
// fewer channels lose bandwidth, more channels cannot exceed the link total.
double per_channel(double total, int default_ch, int channels) {
  return std::min(total / default_ch, total / channels);
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

}  // namespace

double inter_speed_GBps(double nic_GBps) {
  for (double s : kInterSpeeds) {
    if (s <= nic_GBps) return s;
  }
  return nic_GBps;
}

double effective_nic_GBps(const Fabric& f, bool gpudirect) {
  const double line = f.nic_bandwidth_Gbps / 8.0;
  // Without GPUDirect RDMA every byte is staged in host memory: the GPU's PCIe
  // link carries its sends to host and the NIC's receives from the wire in the
  // same direction at once, so a NIC gets at most half the host bandwidth.
  return gpudirect ? line : std::min(line, f.host_bandwidth_GBps / 2.0);
}

Graphs nccl_graphs(const Fabric& f, const GroupShape& s) {
  Graphs g;
  const double intra = intra_total_GBps(f);
  const int dch = default_channels(f.arch);
  const int ch = f.channels > 0 ? f.channels : dch;
  const double bw_intra = f.bw_intra_GBps > 0 ? f.bw_intra_GBps : per_channel(intra, dch, ch);
  const int nvls_ch = f.nvls_channels > 0 ? f.nvls_channels : kDefaultNvlsChannels;
  const double nvls_total = kNvlsPerLineRate * f.nvlink_bandwidth_GBps;
  const double nvls_bw = f.nvls_bw_GBps > 0 ? f.nvls_bw_GBps
                                            : per_channel(nvls_total, kDefaultNvlsChannels, nvls_ch);
  if (s.nodes <= 1) {
    g.ring = {ch, bw_intra, bw_intra};
    g.tree = g.ring;
    g.nvls = {nvls_ch, nvls_bw, nvls_bw};
    g.collnet = g.ring;
    return g;
  }
  // Multi-node: one search channel per NIC, doubled for execution (nccl #1041);
  // every ring channel crosses the network once per node, so ring bwIntra = bwInter.
  const int nics = nics_used(f, s);
  const double per_nic = inter_speed_GBps(effective_nic_GBps(f, f.gpudirect));
  const double forward = f.nvlink_bandwidth_GBps > 0 ? kNvlinkP2pEfficiency * f.nvlink_bandwidth_GBps
                                                    : f.host_bandwidth_GBps;
  const double inter = std::min(nics * per_nic, forward);
  const int dch_net = 2 * nics;
  const int ch_net = f.channels > 0 ? f.channels : dch_net;
  const double bw_inter = f.bw_inter_GBps > 0 ? f.bw_inter_GBps : per_channel(inter, dch_net, ch_net);
  g.ring = {ch_net, bw_inter, bw_inter};
  g.tree = {ch_net, f.bw_intra_GBps > 0 ? f.bw_intra_GBps : intra / ch_net, bw_inter};
  g.nvls = {nvls_ch, nvls_bw, inter / nvls_ch};
  g.collnet = {nics, intra / nics, per_nic};
  g.tree_is_real_tree = true;
  g.ring_same_channels = nics <= 1;
  return g;
}

std::optional<Fabric> fabric_preset(std::string_view name) {
  Fabric f;
  f.system = std::string(name);
  if (name == "dgx-a100") {
    f.arch = GpuArch::kAmpere;
    f.cpu = CpuVendor::kAmd;           // 2x AMD EPYC 7742
    f.nvlink_bandwidth_GBps = 300.0;   // NVLink3, 12 links
    f.nic_bandwidth_Gbps = 200.0;      // 8x ConnectX-6 HDR
    f.host_bandwidth_GBps = 27.0;      // PCIe Gen4 x16 ~31 GB/s at ~88%
    f.nvls = false;
  } else if (name == "dgx-h100" || name == "dgx-h200") {
    f.arch = GpuArch::kHopper;
    f.cpu = CpuVendor::kIntel;         // 2x Xeon Platinum 8480C
    f.nvlink_bandwidth_GBps = 450.0;   // NVLink4, 18 links
    f.nic_bandwidth_Gbps = 400.0;      // 8x ConnectX-7 NDR
  } else if (name == "hgx-b200") {
    f.arch = GpuArch::kBlackwell;
    f.cpu = CpuVendor::kIntel;         // DGX B200: 2x Xeon Platinum 8570
    f.nvlink_bandwidth_GBps = 900.0;   // NVLink5, 18 links
    f.nic_bandwidth_Gbps = 400.0;      // 8x ConnectX-7
  } else {
    return std::nullopt;
  }
  f.exec = exec_terms_for(f.arch);
  return f;
}

Fabric fabric_from_fleet(const Fleet& fleet) {
  Fabric f;
  if (auto p = fabric_preset(fleet.system)) {
    f = *p;
  } else {
    f.system = fleet.system;
    const std::string s = lower(fleet.system);
    if (s.find("a100") != std::string::npos || s.find("a800") != std::string::npos) {
      f.arch = GpuArch::kAmpere;
      f.nvls = false;
    } else if (s.find("b200") != std::string::npos || s.find("b300") != std::string::npos) {
      f.arch = GpuArch::kBlackwell;
    } else if (s.find("v100") != std::string::npos) {
      f.arch = GpuArch::kVolta;
      f.nvls = false;
    }
  }
  f.exec = exec_terms_for(f.arch);
  f.nodes = std::max(1, fleet.nodes);
  f.gpus_per_node = std::max(1, fleet.gpus_per_node);
  f.nvlink_bandwidth_GBps = fleet.nvlink_bandwidth_GBps;
  f.nics_per_node = std::max(1, fleet.nics_per_node);
  f.nic_bandwidth_Gbps = fleet.nic_bandwidth_Gbps;
  f.gpus_per_nic = std::max(1, f.gpus_per_node / f.nics_per_node);
  f.oversubscription = std::max(1.0, fleet.oversubscription);
  f.gpudirect = fleet.gpudirect;
  if (!fleet.cpu.empty()) f.cpu = fleet.cpu == "amd" ? CpuVendor::kAmd : CpuVendor::kIntel;
  f.nvlink_hop_extra_us = fleet.nvlink_latency.to_seconds() * 1e6 - kFleetNvlinkLatencyUs;
  f.net_hop_extra_us = fleet.net_latency.to_seconds() * 1e6 - kFleetNetLatencyUs;
  return f;
}

Graphs degraded_graphs(const Fabric& f, const GroupShape& s,
                       const std::vector<LinkDegradation>& degradations) {
  Graphs g = nccl_graphs(f, s);
  const double nic_nominal = effective_nic_GBps(f, f.gpudirect);
  double nic_worst = nic_nominal;
  double nvl_worst = 1.0;
  const int nics = nics_used(f, s);
  for (const LinkDegradation& d : degradations) {
    if (d.node < 0 || d.node >= s.nodes) continue;  // not a node of this group
    switch (d.kind) {
      case DegradeKind::kNicRate:
        if (d.index < nics) nic_worst = std::min(nic_worst, nic_nominal * d.fraction);
        break;
      case DegradeKind::kGpuDirectOff:
        nic_worst = std::min(nic_worst, effective_nic_GBps(f, false));
        break;
      case DegradeKind::kRemoteNuma:
        // A NIC on the other socket is a SYS path: NCCL does not use GDR there
        // (NCCL_NET_GDR_LEVEL), so the channels on it are host-staged.
        if (d.index < nics) nic_worst = std::min(nic_worst, effective_nic_GBps(f, false));
        break;
      case DegradeKind::kNvlinkRate:
        if (d.index < s.ranks_per_node) nvl_worst = std::min(nvl_worst, d.fraction);
        break;
    }
  }
  if (s.nodes > 1 && nic_worst < nic_nominal) {
    const double net_scale = nic_worst / nic_nominal;  // every channel waits for the slowest NIC
    g.ring.bw_intra_GBps *= net_scale;
    g.ring.bw_inter_GBps *= net_scale;
    g.tree.bw_intra_GBps *= net_scale;  // 2-node trees are rated on bwIntra, yet cross the NIC
    g.tree.bw_inter_GBps *= net_scale;
    g.nvls.bw_inter_GBps *= net_scale;
    g.collnet.bw_inter_GBps *= net_scale;
  }
  if (nvl_worst < 1.0) {
    const double nvl_cap = intra_total_GBps(f) * nvl_worst / std::max(1, g.ring.channels);
    g.ring.bw_intra_GBps = std::min(g.ring.bw_intra_GBps, nvl_cap);
    if (s.nodes <= 1) g.ring.bw_inter_GBps = g.ring.bw_intra_GBps;
    g.tree.bw_intra_GBps *= nvl_worst;
    g.nvls.bw_intra_GBps *= nvl_worst;
    if (s.nodes <= 1) g.nvls.bw_inter_GBps *= nvl_worst;
    g.collnet.bw_intra_GBps *= nvl_worst;
  }
  return g;
}

}  // namespace fleetsim::nccl
