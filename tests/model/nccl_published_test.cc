// Compares the NCCL model with a published all-reduce sweep on one 8x H200 node.
// Source (measured numbers only): stas00/ml-engineering,
// network/benchmarks/results/all-reduce-8xH200.md @ c53741b8 — torch 2.9.1,
// NCCL 2.27.7, all_reduce_bench.py (torch.distributed), busbw in GB/s per payload.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <vector>

#include "sim/model/nccl_model.h"

namespace fleetsim::nccl {
namespace {

struct Measured {
  int64_t bytes;
  double busbw_GBps;
};

constexpr int64_t kKiB = 1024;
constexpr int64_t kMiB = 1024 * kKiB;
constexpr int64_t kGiB = 1024 * kMiB;

// busbw column of the source table (32 KiB ... 16 GiB).
const Measured kH200[] = {
    {32 * kKiB, 1.44},    {64 * kKiB, 2.93},    {128 * kKiB, 5.73},   {256 * kKiB, 11.74},
    {512 * kKiB, 23.94},  {1 * kMiB, 39.93},    {2 * kMiB, 64.53},    {4 * kMiB, 107.16},
    {8 * kMiB, 155.53},   {16 * kMiB, 219.89},  {32 * kMiB, 275.84},  {64 * kMiB, 346.51},
    {128 * kMiB, 401.93}, {256 * kMiB, 436.15}, {512 * kMiB, 450.29}, {1 * kGiB, 463.58},
    {2 * kGiB, 469.17},   {4 * kGiB, 473.10},   {8 * kGiB, 477.45},   {16 * kGiB, 482.26}};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// Time per call from a busbw (all-reduce on 8 ranks: algbw = busbw * 8/14).
double time_us(int64_t bytes, double busbw) { return static_cast<double>(bytes) / (busbw * 8.0 / 14.0 * 1e3); }

// The model tracks the published H200 sweep: within 3% of busbw from 1 GiB up, and the median
// absolute relative error of the time from 64 KiB up stays under 20% once the benchmark's fixed
// per-call framework overhead (fitted on the 32 KiB point, which is then not scored) is added.
TEST(NcclPublished, AllReduceOn8xH200MatchesStas00Sweep) {
  auto f = fabric_preset("dgx-h200");
  ASSERT_TRUE(f.has_value());
  const Options defaults;
  auto m = Model::create(*f, defaults);
  ASSERT_TRUE(m.ok());
  const GroupShape s = m->full_shape();
  // torch.distributed adds a per-call host overhead that nccl-tests does not see.
  const double overhead_us = time_us(kH200[0].bytes, kH200[0].busbw_GBps) -
                             m->estimate(Coll::kAllReduce, kH200[0].bytes, s).time_us;
  std::vector<double> raw, adjusted;
  for (const Measured& row : kH200) {
    if (row.bytes < 64 * kKiB) continue;
    const double model_us = m->estimate(Coll::kAllReduce, row.bytes, s).time_us;
    const double measured_us = time_us(row.bytes, row.busbw_GBps);
    raw.push_back(std::abs(model_us - measured_us) / measured_us);
    adjusted.push_back(std::abs(model_us + overhead_us - measured_us) / measured_us);
    if (row.bytes >= 1 * kGiB) {
      EXPECT_NEAR(model_us, measured_us, 0.03 * measured_us) << row.bytes;
    }
  }
  const double mdape_raw = median(raw), mdape_adj = median(adjusted);
  std::printf("[ NcclPublished ] 8xH200 all-reduce, %zu sizes >= 64 KiB: median |rel err| %.1f%% raw, "
              "%.1f%% with %.1f us framework overhead\n", raw.size(), 100 * mdape_raw, 100 * mdape_adj, overhead_us);
  EXPECT_GT(overhead_us, 0.0);
  EXPECT_LT(overhead_us, 40.0);
  EXPECT_LT(mdape_adj, 0.20);  // reference §7.2: ~15% small sizes, poorer at mid sizes
}

}  // namespace
}  // namespace fleetsim::nccl
