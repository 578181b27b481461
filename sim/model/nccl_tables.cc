// NCCL tuning constants per release. The 2.30 set is transcribed from the
// tables of NCCL 2.30.7's src/graph/tuning.cc;
// older sets apply the constants' changes between releases (2.18, 2.19.1,
// 2.21.5, 2.23.4, 2.28.9, 2.29.7 commits). Facts only; no NCCL code.
#include "sim/model/nccl_tables.h"

#include <charconv>
#include <cstdio>

namespace fleetsim::nccl {
namespace {

constexpr int kTree = 0, kRing = 1, kCnd = 2, kCnc = 3, kNvls = 4, kNvlsTree = 5, kPat = 6;
constexpr int kLL = 0, kLL128 = 1, kSimple = 2;
constexpr int kNvl = 0, kPci = 1, kNet = 2;

Constants constants_2_30() {
  Constants c;
  c.version = "2.30";
  c.base_lat_us[kTree] = {6.8, 14.0, 8.4};
  c.base_lat_us[kRing] = {6.6, 14.0, 8.4};
  c.base_lat_us[kPat] = {8.0, 8.0, 8.0};  // CollNet, NVLS, NVLSTree: 0
  auto& nvl = c.hw_lat_us[kNvl];
  nvl[kTree] = {0.6, 1.25, 4.0};
  nvl[kRing] = {0.6, 1.9, 3.4};
  nvl[kCnd] = {0, 0, 3.7};
  nvl[kCnc] = {0, 0, 2.8};
  nvl[kNvls] = {0, 0, 25};
  nvl[kNvlsTree] = {0, 0, 25};
  nvl[kPat] = {0, 0, 4.0};
  auto& pci = c.hw_lat_us[kPci];
  pci[kTree] = {1.0, 1.9, 4.0};
  pci[kRing] = {1.0, 2.5, 5.7};
  pci[kCnd] = {0, 0, 3.7};
  pci[kCnc] = {0, 0, 2.8};
  pci[kPat] = {0, 0, 4.0};  // NVLS, NVLSTree over PCI: 0
  auto& net = c.hw_lat_us[kNet];
  net[kTree] = {5.0, 8.5, 14};
  net[kRing] = {2.7, 4.0, 14.0};
  net[kCnd] = {0, 0, 31};
  net[kCnc] = {0, 0, 30};
  net[kNvls] = {0, 0, 18};
  net[kNvlsTree] = {0, 0, 20.9};
  net[kPat] = {0, 0, 14};
  // Rows Volta, Ampere, Hopper, Blackwell; columns 1 node, 2 nodes, >= 4 nodes.
  c.ll_max_bw = {{{39.0, 39.0, 20.4}, {87.7, 22.5, 19.0}, {141.0, 45.0, 35.0}, {282, 90, 70}}};
  c.per_ch_max_ring_ll128_bw = {{{20, 20, 20}, {20, 20, 20}, {36.7, 36.7, 36.7}, {40, 40, 40}}};
  c.per_ch_max_tree_ll128_bw = {{{20, 20, 20}, {20, 20, 20}, {36.7, 36.7, 29.0}, {55.6, 31.67, 20.0}}};
  c.per_ch_max_tree_bw = {{{26.5, 18.5, 10.0}, {24.0, 23.6, 17.8}, {38.7, 41.4, 36.0}, {70.0, 42.8, 24.0}}};
  c.per_ch_max_nvls_tree_bw = {{{26.5, 18.5, 10.0}, {24.0, 23.6, 17.8}, {0, 57.7, 45.5}, {0, 96.0, 80.0}}};
  c.nvls_efficiency = {0, 0, 0.85, 0.74};
  c.tree_correction[kLL] = {1, 1, 1, 1, .9, .8, .7, .7, .7, .7, .6, .5,
                            .4, .4, .5, .6, .7, .8, .9, 1, 1, 1, 1, 1};
  c.tree_correction[kLL128] = {1, 1, 1, 1, 1, .9, .8, .8, .8, .7, .6, .6,
                               .6, .6, .6, .6, .8, .9, .9, .9, .9, 1, 1, 1};
  c.tree_correction[kSimple] = {.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5,
                                .5, .5, .5, .6, .7, .8, .7, .7, .8, .9, .9, .9};
  c.nvls_model = NvlsModel::kEfficiency;
  c.has_pat = true;
  return c;
}

struct Version {
  int major = 0, minor = 0, patch = 0;
  bool has_patch = false;
};

// Accepts "2.30", "2.28.9", "v2.19.3-1" (the "-1" package suffix is ignored).
std::optional<Version> parse_version(std::string_view s) {
  if (!s.empty() && (s[0] == 'v' || s[0] == 'V')) s.remove_prefix(1);
  Version v;
  int* parts[3] = {&v.major, &v.minor, &v.patch};
  const char* p = s.data();
  const char* end = s.data() + s.size();
  for (int i = 0; i < 3; ++i) {
    auto [next, ec] = std::from_chars(p, end, *parts[i]);
    if (ec != std::errc() || next == p) return std::nullopt;
    p = next;
    if (i == 2) v.has_patch = true;
    if (p == end || *p == '-') return i >= 1 ? std::optional<Version>(v) : std::nullopt;
    if (*p != '.') return std::nullopt;
    ++p;
  }
  return std::nullopt;
}

}  // namespace

std::optional<Constants> constants_for_version(std::string_view text) {
  const auto v = parse_version(text);
  if (!v || v->major != 2 || v->minor < 18 || v->minor > 99) return std::nullopt;
  Constants c = constants_2_30();
  char label[32];
  if (v->has_patch) {
    std::snprintf(label, sizeof label, "%d.%d.%d", v->major, v->minor, v->patch);
  } else {
    std::snprintf(label, sizeof label, "%d.%d", v->major, v->minor);
  }
  c.version = label;
  const bool before_2_28_9 = v->minor < 28 || (v->minor == 28 && v->has_patch && v->patch < 9);
  if (before_2_28_9) c.hw_lat_us[kNet][kNvlsTree][kSimple] = 14;
  // Reference: the NVLS bus->alg change lands in 2.29; 2.28 is documented as using the 2.30 set.
  if (v->minor < 28) c.nvls_model = NvlsModel::kLegacyFiveSixths;
  if (v->minor < 23) {
    for (auto& hw : c.hw_lat_us) hw[kTree][kSimple] = 28;
    c.base_lat_us[kTree][kSimple] = 0;
    c.has_pat = false;
    c.base_lat_us[kPat] = {0, 0, 0};
    for (auto& hw : c.hw_lat_us) hw[kPat] = {0, 0, 0};
  }
  if (v->minor < 21) {
    c.hw_lat_us[kNvl][kNvls][kSimple] = 23;
    c.hw_lat_us[kNvl][kNvlsTree][kSimple] = 23;
  }
  if (v->minor < 20) c.ring_min_chunk = true;
  if (v->minor < 19) {
    // 2.18's tuning.cc: Ring LL at a quarter (a third) of the bus, LL128 x0.7
    // with one GPU per node, and the Hopper one-node LL cap still Ampere's.
    c.ring_ll_fraction = 0.25;
    c.ring_ll_fraction_other_one_node = 1.0 / 3.0;
    c.ring_ll128_one_ppn = 0.7;
    c.ll_max_bw[static_cast<int>(GpuArch::kHopper)] = {87.7, 22.5, 19.0};
  }
  return c;
}

const char* algo_name(Algo a) {
  switch (a) {
    case Algo::kTree: return "TREE";
    case Algo::kRing: return "RING";
    case Algo::kCollNetDirect: return "COLLNET_DIRECT";
    case Algo::kCollNetChain: return "COLLNET_CHAIN";
    case Algo::kNvls: return "NVLS";
    case Algo::kNvlsTree: return "NVLS_TREE";
    case Algo::kPat: return "PAT";
    case Algo::kP2p: return "P2P";
  }
  return "?";
}

const char* proto_name(Proto p) {
  switch (p) {
    case Proto::kLL: return "LL";
    case Proto::kLL128: return "LL128";
    case Proto::kSimple: return "SIMPLE";
  }
  return "?";
}

const char* arch_name(GpuArch a) {
  switch (a) {
    case GpuArch::kVolta: return "volta";
    case GpuArch::kAmpere: return "ampere";
    case GpuArch::kHopper: return "hopper";
    case GpuArch::kBlackwell: return "blackwell";
  }
  return "?";
}

}  // namespace fleetsim::nccl
