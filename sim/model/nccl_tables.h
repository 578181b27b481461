// NCCL's tuning constants (src/graph/tuning.cc, ncclTunerConstantsDefaults) as
// plain data, one set per NCCL release range. Transcribed from the tables in
// NCCL 2.30.7's src/graph/tuning.cc (@ 5067397c) and the constants' changes
// in earlier releases (2.18, 2.19.1 f9c3dc25, 2.21.5, 2.23.4, 2.28.9 dbc86fd0).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace fleetsim::nccl {

// NCCL's algorithm order (NCCL_ALGO_TREE = 0 ... NCCL_ALGO_PAT = 6); kP2p is
// fleetsim's own entry for alltoall and send/recv, which tuning.cc does not model.
enum class Algo : uint8_t { kTree, kRing, kCollNetDirect, kCollNetChain, kNvls, kNvlsTree, kPat, kP2p };
inline constexpr int kNumAlgos = 7;  // the ones in NCCL's table (kP2p excluded)

// NCCL's protocol order (NCCL_PROTO_LL = 0, LL128 = 1, SIMPLE = 2).
enum class Proto : uint8_t { kLL, kLL128, kSimple };
inline constexpr int kNumProtos = 3;

// GPU generation: the row of the per-architecture bandwidth caps.
enum class GpuArch : uint8_t { kVolta, kAmpere, kHopper, kBlackwell };
inline constexpr int kNumArchs = 4;

// The hardware classes of hwLatencies (NCCL_HW_NVLINK, NCCL_HW_PCI, NCCL_HW_NET).
enum class Hw : uint8_t { kNvlink, kPci, kNet };
inline constexpr int kNumHw = 3;

// "RING", "LL128", ... as NCCL_DEBUG=TUNING prints them.
const char* algo_name(Algo a);
const char* proto_name(Proto p);
const char* arch_name(GpuArch a);

// How bus bandwidth becomes algorithm bandwidth for NVLS/NVLSTree: before 2.29
// NVLS used min(bwIntra, bwInter) per channel and a 5/6 ratio; from 2.29 an
// efficiency-based intra bandwidth and the ring ratio nRanks/nsteps.
enum class NvlsModel : uint8_t { kLegacyFiveSixths, kEfficiency };

using ArchCols = std::array<std::array<double, 3>, kNumArchs>;  // [arch][1 node, 2 nodes, >=4 nodes]

// One release range's constants. Latencies in microseconds, bandwidths in GB/s.
struct Constants {
  std::string version;  // canonical label, e.g. "2.30" or "2.19"
  std::array<std::array<double, kNumProtos>, kNumAlgos> base_lat_us{};
  std::array<std::array<std::array<double, kNumProtos>, kNumAlgos>, kNumHw> hw_lat_us{};
  ArchCols ll_max_bw{};                 // absolute cap on LL bus bandwidth
  ArchCols per_ch_max_ring_ll128_bw{};
  ArchCols per_ch_max_tree_ll128_bw{};
  ArchCols per_ch_max_tree_bw{};
  ArchCols per_ch_max_nvls_tree_bw{};
  std::array<double, kNumArchs> nvls_efficiency{};
  std::array<std::array<double, 24>, kNumProtos> tree_correction{};
  NvlsModel nvls_model = NvlsModel::kEfficiency;
  bool has_pat = true;                  // PAT exists from 2.23
  // Ring LL bus bandwidth = this fraction of nChannels x bw (then llMaxBws):
  // 0.5 from 2.19; through 2.18 1/4 for all-reduce, reduce and multi-node
  // rings and 1/3 for the other collectives on one node.
  double ring_ll_fraction = 0.5;
  double ring_ll_fraction_other_one_node = 0.5;
  // Through 2.18 Ring LL128 with one GPU per node ran at 0.7 (not 0.92) of busBw.
  double ring_ll128_one_ppn = 0.92;
  // Through 2.19 the Ring LL and LL128 kernels round each chunk up to a
  // per-thread minimum, so a mid-size op fills fewer channels than it has
  // (nccl_exec.h, ring_active_channels); 2.20 dropped the minimum.
  bool ring_min_chunk = false;
};

// Constants for an NCCL version string: "2.30", "2.28.9", "2.19.3", ... Supported
// range 2.18 ... 2.30 (later versions use the 2.30 set). nullopt if unparsable
// or out of range.
std::optional<Constants> constants_for_version(std::string_view version);

// The versions accepted, for error messages: "2.18 ... 2.30".
inline constexpr const char* kSupportedVersions = "2.18 ... 2.30 (e.g. 2.30, 2.28.9, 2.21, 2.18)";

}  // namespace fleetsim::nccl
