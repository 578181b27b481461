// The execution model's terms (sim/model/nccl_exec.h): channels NCCL uses at a
// size, the NVLS chunk schedule, and that each named term moves the time the
// way it should (so a calibration fitting them sees a response).
#include <gtest/gtest.h>

#include <algorithm>

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
  // Host floor: 8 GPUs on one thread finish at most one call per 8 x 4.15 us,
  // so a small op takes the floor; a large one is unchanged beyond its launches.
  EXPECT_DOUBLE_EQ(estimate(*f, 1024, 8).time_us, 8 * f->exec.call_floor_us_per_gpu);
  EXPECT_LT(estimate(*f, 1024).time_us, 8 * f->exec.call_floor_us_per_gpu);
  Fabric no_floor = *f;
  ASSERT_EQ(set_fabric_field(&no_floor, "call_floor_per_gpu", "0"), "");
  EXPECT_LT(estimate(no_floor, 1024, 8).time_us, estimate(*f, 1024, 8).time_us);
  EXPECT_DOUBLE_EQ(estimate(no_floor, 8 * kMiB, 8).time_us, estimate(*f, 8 * kMiB, 8).time_us);
  // The floor grows with the channels (CTAs) the kernel runs: a 1 MiB Ring/LL
  // reduce-scatter on 8 H100s uses all 24 channels, 23 more than a 1 KiB one.
  auto rs = [](const Fabric& fab, int64_t bytes) {
    Options o;
    o.gpus_per_thread = 8;
    auto m = Model::create(fab, o);
    EXPECT_TRUE(m.ok());
    return m->estimate(Coll::kReduceScatter, bytes, m->full_shape());
  };
  const Estimate wide = rs(*f, 1 * kMiB);
  ASSERT_EQ(wide.algo, Algo::kRing);
  ASSERT_EQ(wide.proto, Proto::kLL);
  EXPECT_DOUBLE_EQ(wide.time_us, 8 * (f->exec.call_floor_us_per_gpu + 23 * f->exec.call_floor_us_per_channel));
  EXPECT_DOUBLE_EQ(rs(*f, 1 * kKiB).time_us, 8 * f->exec.call_floor_us_per_gpu);
  Fabric flat = *f;
  ASSERT_EQ(set_fabric_field(&flat, "call_floor_per_channel", "0"), "");
  EXPECT_DOUBLE_EQ(rs(flat, 1 * kMiB).time_us, 8 * f->exec.call_floor_us_per_gpu);
  EXPECT_NE(set_fabric_field(&flat, "call_floor_per_channel", "-1"), "");
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

// NCCL <= 2.19 rounds Ring LL/LL128 chunks up to a per-thread minimum, so a
// mid-size op leaves channels empty: LL128 on 8 ranks x 24 channels fills 14
// at 2 and 4 MiB, 19 at 8 MiB, 22 at 16 MiB; LL's 4 KiB minimum fills 16 at 1 MiB.
TEST(NcclExec, OldRingMinimumChunkLeavesChannelsEmpty) {
  const ExecTerms x;
  EXPECT_EQ(ring_active_channels(x, 24, kLL128, Coll::kAllReduce, 2 * kMiB, 8), 14);
  EXPECT_EQ(ring_active_channels(x, 24, kLL128, Coll::kAllReduce, 4 * kMiB, 8), 14);
  EXPECT_EQ(ring_active_channels(x, 24, kLL128, Coll::kAllReduce, 8 * kMiB, 8), 19);
  EXPECT_EQ(ring_active_channels(x, 24, kLL128, Coll::kAllReduce, 16 * kMiB, 8), 22);
  EXPECT_EQ(ring_active_channels(x, 24, kLL128, Coll::kAllReduce, 1 * kGiB, 8), 24);
  EXPECT_EQ(ring_active_channels(x, 24, kLL, Coll::kAllReduce, 1 * kMiB, 8), 16);
  EXPECT_EQ(ring_active_channels(x, 24, kSimple, Coll::kAllReduce, 2 * kMiB, 8), 24);
  // The rule is 2.19's and older: the same A100 op is slower under 2.19 than 2.20.
  auto f = fabric_preset("dgx-a100");
  ASSERT_TRUE(f.has_value());
  Options o19, o20;
  o19.version = "2.19";
  o20.version = "2.20";
  o19.proto = o20.proto = "ll128";
  o19.algo = o20.algo = "ring";
  auto m19 = Model::create(*f, o19), m20 = Model::create(*f, o20);
  ASSERT_TRUE(m19.ok() && m20.ok());
  const Estimate e19 = m19->estimate(Coll::kAllReduce, 4 * kMiB, m19->full_shape());
  const Estimate e20 = m20->estimate(Coll::kAllReduce, 4 * kMiB, m20->full_shape());
  EXPECT_NEAR(e19.tuning_us, e20.tuning_us, 1e-9);
  EXPECT_GT(e19.time_us, e20.time_us + 10.0);
}

// A channel keeps its own rate when NCCL drops the others; llMaxBws caps the
// sum, not each channel. 4 x 8 H100 all-gather, Ring LL at 64 KiB: one channel
// (the LL threshold is x32 ranks) at 0.5 x its 24 GB/s, not 1/16 of the 20.4 GB/s cap.
TEST(NcclExec, LlCapBoundsTheSumNotEachChannel) {
  auto f = fabric_preset("dgx-h100");
  ASSERT_TRUE(f.has_value());
  f->nodes = 4;
  Options o;
  o.algo = "ring";
  o.proto = "ll";
  auto m = Model::create(*f, o);
  ASSERT_TRUE(m.ok());
  const GroupShape s = m->full_shape();
  const Table t = m->table(Coll::kAllGather, s);
  const double capped = t.bw_GBps[kRing][kLL], raw = t.bw_raw_GBps[kRing][kLL];
  ASSERT_GT(raw, capped);
  const Estimate e = m->estimate(Coll::kAllGather, 64 * kKiB, s);
  const double expect = t.lat_us[kRing][kLL] + 64.0 * kKiB / (1000.0 * std::min(capped, raw / 16));
  EXPECT_NEAR(e.time_us, expect, 1e-6);
  EXPECT_LT(e.time_us, t.lat_us[kRing][kLL] + 64.0 * kKiB / (1000.0 * capped / 16) - 20.0);
}

// A one-node all-to-all as NCCL 2.2x plans it on 8 x H100: 32 P2P channels (the
// ring's 24 rounded up), 4 to 16 per peer; pieces of at most 32 x 512 KiB.
TEST(NcclExec, AlltoallChannelPlanFollowsNccl) {
  const ExecTerms x;
  EXPECT_EQ(p2p_channels_per_peer(x, 32, 8, 4 * kMiB), 4);     // 32 MiB all-to-all
  EXPECT_EQ(p2p_channels_per_peer(x, 32, 8, 64 * kMiB), 4);    // 512 MiB: 16 MiB pieces
  EXPECT_EQ(p2p_channels_per_peer(x, 32, 8, 128 * kMiB), 8);   // 1 GiB
  EXPECT_EQ(p2p_channels_per_peer(x, 32, 8, 256 * kMiB), 16);  // 2 GiB
  EXPECT_EQ(p2p_channels_per_peer(x, 32, 8, 2 * kGiB), 16);    // at most 16 (4 ops a channel)
  EXPECT_EQ(p2p_channels_per_peer(x, 32, 8, 8), 4);
  EXPECT_EQ(p2p_channels_per_peer(x, 32, 2, 1 * kMiB), 16);    // 2 ranks: 16 to 32 a peer
  EXPECT_EQ(p2p_channels_per_peer(x, 32, 2, 1 * kGiB), 32);

  auto f = fabric_preset("dgx-h100");
  ASSERT_TRUE(f.has_value());
  Options tuning;
  tuning.timing = "tuning";
  auto exec = Model::create(*f, Options{});
  auto tuned = Model::create(*f, tuning);
  ASSERT_TRUE(exec.ok() && tuned.ok());
  const GroupShape s = exec->full_shape();
  // 256 MiB: 7 peers x 4 channels = 28 of 32 channels carry it.
  const Estimate a = exec->estimate(Coll::kAllToAll, 256 * kMiB, s);
  const Estimate b = tuned->estimate(Coll::kAllToAll, 256 * kMiB, s);
  ASSERT_EQ(a.algo, Algo::kP2p);
  EXPECT_NEAR(a.time_us - a.lat_us, (b.time_us - b.lat_us) * 32.0 / 28.0, 1e-6);
  // 2 GiB: every channel busy, the p2p model's full rate; LL sizes untouched.
  EXPECT_NEAR(exec->estimate(Coll::kAllToAll, 2 * kGiB, s).time_us,
              tuned->estimate(Coll::kAllToAll, 2 * kGiB, s).time_us, 1e-9);
  EXPECT_NEAR(exec->estimate(Coll::kAllToAll, 64 * kKiB, s).time_us,
              tuned->estimate(Coll::kAllToAll, 64 * kKiB, s).time_us, 1e-9);
  // Across nodes NCCL plans otherwise (one step a piece, net peers): unchanged.
  f->nodes = 2;
  auto exec2 = Model::create(*f, Options{});
  auto tuned2 = Model::create(*f, tuning);
  ASSERT_TRUE(exec2.ok() && tuned2.ok());
  EXPECT_NEAR(exec2->estimate(Coll::kAllToAll, 256 * kMiB, exec2->full_shape()).time_us,
              tuned2->estimate(Coll::kAllToAll, 256 * kMiB, tuned2->full_shape()).time_us, 1e-9);
}

}  // namespace
}  // namespace fleetsim::nccl
