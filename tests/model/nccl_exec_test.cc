// The execution model's terms (sim/model/nccl_exec.h): channels NCCL uses at a
// size, the NVLS chunk schedule, and that each named term moves the time the
// way it should (so a calibration fitting them sees a response).
#include <gtest/gtest.h>

#include "sim/model/nccl_model.h"

namespace fleetsim::nccl {
namespace {

constexpr int64_t kKiB = 1024, kMiB = 1024 * kKiB, kGiB = 1024 * kMiB;
constexpr int kTree = 0, kRing = 1, kLL = 0, kLL128 = 1, kSimple = 2;

TEST(NcclExec, ChannelsUsedFollowNcclThresholds) {
  const ExecTerms x;
  // Ring LL on 8 ranks: 512 threads x 8 B x 8 ranks = 32 KiB per channel.
  EXPECT_EQ(channels_used(x, 24, kRing, kLL, 64 * kKiB, 8), 2);
  EXPECT_EQ(channels_used(x, 24, kRing, kLL, 768 * kKiB, 8), 24);
  EXPECT_EQ(channels_used(x, 24, kRing, kLL, 8, 8), 1);
  // LL128: 640 x 8 = 5 KiB per channel; Simple: 512 x 64 = 32 KiB.
  EXPECT_EQ(channels_used(x, 24, kRing, kLL128, 50 * kKiB, 8), 10);
  EXPECT_EQ(channels_used(x, 24, kRing, kSimple, 64 * kKiB, 8), 2);
  // Tree LL is not multiplied by the rank count: 512 x 8 = 4 KiB.
  EXPECT_EQ(channels_used(x, 24, kTree, kLL, 16 * kKiB, 16), 4);
  // NVLS (and the others) keep their channels.
  EXPECT_EQ(channels_used(x, 16, 4, kSimple, 8, 8), 16);
}

TEST(NcclExec, NvlsChunkScheduleOn8xH100) {
  const ExecTerms x;
  EXPECT_EQ(nvls_chunk_bytes(x, 2 * kMiB, 16, 8), 16 * kKiB);
  EXPECT_EQ(nvls_chunk_bytes(x, 8 * kMiB, 16, 8), 32 * kKiB);
  EXPECT_EQ(nvls_chunk_bytes(x, 64 * kMiB, 16, 8), 64 * kKiB);
  EXPECT_EQ(nvls_chunk_bytes(x, 1 * kGiB, 16, 8), 128 * kKiB);
}

Estimate estimate(const Fabric& f, int64_t bytes, int gpus_per_thread = 1) {
  Options o;
  o.gpus_per_thread = gpus_per_thread;
  auto m = Model::create(f, o);
  EXPECT_TRUE(m.ok());
  return m->estimate(Coll::kAllReduce, bytes, m->full_shape());
}

TEST(NcclExec, TermsMoveTheTime) {
  auto f = fabric_preset("dgx-h100");
  ASSERT_TRUE(f.has_value());
  const Estimate base = estimate(*f, 8 * kMiB);
  ASSERT_EQ(base.algo, Algo::kNvls);
  EXPECT_GT(base.time_us, base.tuning_us);  // mid-size NVLS is slower than NCCL's estimate
  Fabric no_sync = *f;
  ASSERT_EQ(set_fabric_field(&no_sync, "nvls_step_sync", "0"), "");
  EXPECT_LT(estimate(no_sync, 8 * kMiB).time_us, base.time_us);
  Fabric slow_base = *f;
  ASSERT_EQ(set_fabric_field(&slow_base, "nvls_base", "14"), "");
  EXPECT_NEAR(estimate(slow_base, 8 * kMiB).time_us - base.time_us, 10.0, 1e-9);
  // Serial launches: 8 GPUs on one thread add 7 launches; one GPU per thread adds none.
  ASSERT_EQ(set_fabric_field(&slow_base, "launch_per_gpu", "2"), "");
  EXPECT_NEAR(estimate(*f, 8 * kMiB, 8).time_us - base.time_us, 7 * f->exec.launch_us_per_gpu, 1e-9);
  EXPECT_NE(set_fabric_field(&slow_base, "nvls_base", "-1"), "");
  // Large sizes: the execution time meets NCCL's plateau within 1%.
  const Estimate big = estimate(*f, 8 * kGiB);
  EXPECT_NEAR(big.time_us, big.tuning_us, 0.01 * big.tuning_us);
}

// Small Ring ops run on fewer channels, so they take longer than NCCL's formula
// says, and the time stays flat while each used channel keeps its minimum share.
TEST(NcclExec, SmallRingOpsUseFewerChannels) {
  auto f = fabric_preset("dgx-h100");
  ASSERT_TRUE(f.has_value());
  const Estimate a = estimate(*f, 64 * kKiB), b = estimate(*f, 256 * kKiB);
  ASSERT_EQ(a.algo, Algo::kRing);
  EXPECT_GT(a.time_us, a.tuning_us + 5.0);
  EXPECT_NEAR(a.time_us, b.time_us, 1e-6);
  const Estimate full = estimate(*f, 1 * kMiB);  // 24 channels: NCCL's own estimate
  EXPECT_NEAR(full.time_us, full.tuning_us, 1e-9);
}

}  // namespace
}  // namespace fleetsim::nccl
