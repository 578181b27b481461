// Tests of the NCCL tuning model (sim/model/nccl_model.h): formula checks from
// NCCL 2.30.7's tuning.cc (docs/collectives.md), selection, overrides, versions,
// multi-node bandwidth, degradations and the CostModel adapter.
#include <gtest/gtest.h>

#include <cmath>

#include "sim/model/nccl_model.h"

namespace fleetsim::nccl {
namespace {

constexpr int64_t kMiB = 1024 * 1024;
constexpr int64_t kGiB = 1024 * kMiB;

Fabric preset(const char* name, int nodes) {
  auto f = fabric_preset(name);
  EXPECT_TRUE(f.has_value()) << name;
  Fabric out = f.value_or(Fabric{});
  out.nodes = nodes;
  return out;
}

Model model(const Fabric& f, const char* algo = "", const char* proto = "", const char* version = "2.30") {
  Options o;
  o.algo = algo;
  o.proto = proto;
  o.version = version;
  auto m = Model::create(f, o);
  EXPECT_TRUE(m.ok());
  return *m;
}

double entry_lat(const Table& t, Algo a, Proto p) { return t.lat_us[static_cast<int>(a)][static_cast<int>(p)]; }
double entry_bw(const Table& t, Algo a, Proto p) { return t.bw_GBps[static_cast<int>(a)][static_cast<int>(p)]; }

double busbw(const Estimate& e, Coll c, int64_t bytes, int ranks) {
  return static_cast<double>(bytes) / (e.time_us * 1e3) * busbw_factor(c, ranks);
}

// nccl #1453: 24 ranks = 3 nodes x 8 H100 over IB, 4 B -> Tree/LL time 25.200462 µs.
TEST(NcclFormula, TreeLLOnThreeH100NodesMatchesNcclLog) {
  const Model m = model(preset("dgx-h100", 3));
  const GroupShape s{24, 3, 8};
  const Table t = m.table(Coll::kAllReduce, s);
  EXPECT_NEAR(entry_lat(t, Algo::kTree, Proto::kLL), 25.2, 1e-9);
  const Graphs g = nccl_graphs(m.fabric(), s);
  const double time = algo_time_us(t, m.fabric(), g, m.constants(), Coll::kAllReduce, Algo::kTree,
                                   Proto::kLL, 4, s);
  EXPECT_NEAR(time, 25.200462, 2e-6);
}

// Reference §1.5.2: DGX H100, one node, Ring/LL latency 6.6 + 14 x 0.6 = 15.0 µs, algbw 141*8/14.
TEST(NcclFormula, RingLLOnOneH100NodeIs15us) {
  const Model m = model(preset("dgx-h100", 1));
  const Table t = m.table(Coll::kAllReduce, m.full_shape());
  EXPECT_NEAR(entry_lat(t, Algo::kRing, Proto::kLL), 15.0, 1e-9);
  EXPECT_NEAR(entry_bw(t, Algo::kRing, Proto::kLL), 141.0 * 8 / 14, 1e-9);
  const Estimate e = m.estimate(Coll::kAllReduce, 8, m.full_shape());
  EXPECT_EQ(e.algo, Algo::kRing);
  EXPECT_EQ(e.proto, Proto::kLL);
  EXPECT_NEAR(e.time_us, 15.0, 0.01);
}

// The AllReduce row NCCL 2.30 printed (NCCL_DEBUG_SUBSYS=TUNING) on 8x H200, quoted in a
// public write-up found with the search tool ("AllReduce |15.2/43.6|31.5/128.8|...").
TEST(NcclFormula, OneNodeTableMatchesNccl230TuningDumpOn8xH200) {
  const Model m = model(preset("dgx-h200", 1));
  const Table t = m.table(Coll::kAllReduce, m.full_shape());
  struct Row { Algo a; Proto p; double lat, bw; };
  const Row rows[] = {{Algo::kTree, Proto::kLL, 15.2, 43.6},     {Algo::kTree, Proto::kLL128, 31.5, 128.8},
                      {Algo::kTree, Proto::kSimple, 64.4, 165.6}, {Algo::kRing, Proto::kLL, 15.0, 80.6},
                      {Algo::kRing, Proto::kLL128, 40.6, 189.3},  {Algo::kRing, Proto::kSimple, 56.0, 205.7},
                      {Algo::kNvls, Proto::kSimple, 25.0, 272.0}};
  for (const Row& r : rows) {
    SCOPED_TRACE(std::string(algo_name(r.a)) + "/" + proto_name(r.p));
    EXPECT_NEAR(entry_lat(t, r.a, r.p), r.lat, 0.05);
    EXPECT_NEAR(entry_bw(t, r.a, r.p), r.bw, 0.01 * r.bw);  // NVLS: 274.3 vs 272.0
  }
  EXPECT_EQ(entry_bw(t, Algo::kNvlsTree, Proto::kSimple), 0.0);  // no NVLSTree on one node
  EXPECT_EQ(entry_bw(t, Algo::kCollNetDirect, Proto::kSimple), 0.0);
}

// Reference §1.5.3: on one DGX H100 node Ring/LL wins up to 1 MiB, NVLS/Simple from 2 MiB.
TEST(NcclSelection, NvlsOvertakesRingLLBetween1And2MiB) {
  const Model m = model(preset("dgx-h100", 1));
  const Estimate at1 = m.estimate(Coll::kAllReduce, 1 * kMiB, m.full_shape());
  const Estimate at2 = m.estimate(Coll::kAllReduce, 2 * kMiB, m.full_shape());
  EXPECT_EQ(at1.algo, Algo::kRing);
  EXPECT_EQ(at1.proto, Proto::kLL);
  EXPECT_EQ(at2.algo, Algo::kNvls);
  EXPECT_EQ(at2.proto, Proto::kSimple);
}

// Large all-reduce on one H100 node: Ring busbw 360-370 GB/s, NVLS ~480 GB/s (nccl-tests #212).
TEST(NcclSelection, LargeAllReducePlateausOnOneH100Node) {
  const Model ring = model(preset("dgx-h100", 1), "ring");
  const Model any = model(preset("dgx-h100", 1));
  const Estimate r = ring.estimate(Coll::kAllReduce, 16 * kGiB, ring.full_shape());
  const Estimate n = any.estimate(Coll::kAllReduce, 16 * kGiB, any.full_shape());
  EXPECT_EQ(n.algo, Algo::kNvls);
  EXPECT_GE(busbw(r, Coll::kAllReduce, 16 * kGiB, 8), 355.0);
  EXPECT_LE(busbw(r, Coll::kAllReduce, 16 * kGiB, 8), 370.0);
  EXPECT_NEAR(busbw(n, Coll::kAllReduce, 16 * kGiB, 8), 480.0, 10.0);
}

// NCCL_ALGO/NCCL_PROTO only disable entries: "ring" removes NVLS; "^ll" removes LL; lists parse.
TEST(NcclOverride, AlgoAndProtoListsOnlyDisable) {
  const Fabric f = preset("dgx-h100", 1);
  EXPECT_EQ(model(f, "ring").estimate(Coll::kAllReduce, 64 * kMiB, {8, 1, 8}).algo, Algo::kRing);
  EXPECT_EQ(model(f, "^nvls").estimate(Coll::kAllReduce, 64 * kMiB, {8, 1, 8}).algo, Algo::kRing);
  EXPECT_EQ(model(f, "ring,tree", "^ll").estimate(Coll::kAllReduce, 8, {8, 1, 8}).proto, Proto::kLL128);
  EXPECT_EQ(model(f, "tree", "simple").estimate(Coll::kAllReduce, 8, {8, 1, 8}).algo, Algo::kTree);
  // Disabling everything usable for an op leaves nothing (NCCL would fail the call).
  EXPECT_FALSE(model(f, "tree").estimate(Coll::kBroadcast, 8, {8, 1, 8}).ok);
}

// Unknown names in NCCL_ALGO/NCCL_PROTO lists and unknown versions are rejected with a message.
TEST(NcclOverride, BadListsAndVersionsAreRejected) {
  uint32_t mask = 0;
  EXPECT_NE(parse_algo_list("ring,bogus", &mask), "");
  EXPECT_NE(parse_proto_list("LL256", &mask), "");
  EXPECT_EQ(parse_algo_list("NVLS_TREE,CollNet", &mask), "");
  EXPECT_EQ(mask, (1u << 5) | (1u << 2) | (1u << 3));
  Options o;
  o.version = "2.17";
  EXPECT_FALSE(Model::create(preset("dgx-h100", 1), o).ok());
  o.version = "banana";
  EXPECT_FALSE(Model::create(preset("dgx-h100", 1), o).ok());
}

// Constant sets differ where the history says: Tree/Simple 28 µs before 2.23, NET NVLSTree 20.9 from 2.28.9.
TEST(NcclVersion, ConstantSetsFollowTheHistory) {
  const auto v230 = constants_for_version("2.30");
  const auto v219 = constants_for_version("2.19");
  const auto v2283 = constants_for_version("2.28.3");
  const auto v2289 = constants_for_version("2.28.9");
  ASSERT_TRUE(v230 && v219 && v2283 && v2289);
  EXPECT_EQ(v230->hw_lat_us[0][0][2], 4.0);   // NVLink Tree Simple
  EXPECT_EQ(v219->hw_lat_us[0][0][2], 28.0);
  EXPECT_EQ(v219->base_lat_us[0][2], 0.0);
  EXPECT_EQ(v219->hw_lat_us[0][4][2], 23.0);  // NVLS NVLink
  EXPECT_FALSE(v219->has_pat);
  EXPECT_EQ(v2283->hw_lat_us[2][5][2], 14.0);
  EXPECT_EQ(v2289->hw_lat_us[2][5][2], 20.9);
  EXPECT_EQ(v219->nvls_model, NvlsModel::kLegacyFiveSixths);
  // 2.18: Ring LL at a quarter of the bus (a third for one-node AG/RS/broadcast),
  // Hopper's one-node LL cap still 87.7; 2.19 has 0.5 and 141.
  const auto v218 = constants_for_version("2.18");
  ASSERT_TRUE(v218);
  EXPECT_EQ(v218->ring_ll_fraction, 0.25);
  EXPECT_EQ(v219->ring_ll_fraction, 0.5);
  EXPECT_EQ(v218->ll_max_bw[2][0], 87.7);
  EXPECT_EQ(v219->ll_max_bw[2][0], 141.0);
  EXPECT_TRUE(v218->ring_min_chunk && v219->ring_min_chunk);
  EXPECT_FALSE(constants_for_version("2.20")->ring_min_chunk);
  EXPECT_EQ(v230->nvls_model, NvlsModel::kEfficiency);
  // The change is visible in the tables: one-node Tree/Simple latency 8.4 + 14*4 vs 0 + 14*28.
  const Fabric f = preset("dgx-h100", 1);
  EXPECT_NEAR(entry_lat(model(f, "", "", "2.30").table(Coll::kAllReduce, {8, 1, 8}), Algo::kTree, Proto::kSimple), 64.4, 1e-9);
  EXPECT_NEAR(entry_lat(model(f, "", "", "2.19").table(Coll::kAllReduce, {8, 1, 8}), Algo::kTree, Proto::kSimple), 392.0, 1e-9);
}

// Multi-node Ring all-reduce on 8 x 400 Gb/s NICs per node: busbw ~ 8 x 46-48 GB/s (nccl-tests #290).
TEST(NcclMultiNode, RingBusbwIsEightNicsAt46To48) {
  for (int nodes : {2, 4, 16}) {
    const Model m = model(preset("dgx-h100", nodes), "ring");
    const Estimate e = m.estimate(Coll::kAllReduce, 16 * kGiB, m.full_shape());
    const double bb = busbw(e, Coll::kAllReduce, 16 * kGiB, 8 * nodes);
    SCOPED_TRACE(nodes);
    EXPECT_GE(bb, 8 * 46.0);
    EXPECT_LE(bb, 8 * 48.0 + 0.5);
  }
}

// Ring broadcast/reduce latency (tuning.cc): one hop of the ring's path class when every
// channel follows one GPU order (sameChannels), else nRanks hops, Simple with Tree's hop.
// Rings over several NICs enter each node at different GPUs (sameChannels 0); one node
// or one NIC per node keeps one order.
TEST(NcclMultiNode, RingChainLatencyFollowsSameChannels) {
  const Model four = model(preset("dgx-h100", 4));
  const GroupShape s{32, 4, 8};
  EXPECT_FALSE(nccl_graphs(four.fabric(), s).ring_same_channels);
  for (Coll c : {Coll::kReduce, Coll::kBroadcast}) {
    const Table t = four.table(c, s);
    EXPECT_NEAR(entry_lat(t, Algo::kRing, Proto::kLL), 6.6 + 32 * 2.7, 1e-9);
    EXPECT_NEAR(entry_lat(t, Algo::kRing, Proto::kLL128), 14.0 + 32 * 4.0, 1e-9);
    EXPECT_NEAR(entry_lat(t, Algo::kRing, Proto::kSimple), 8.4 + 32 * 14.0, 1e-9);
  }
  Fabric one_nic = preset("dgx-h100", 4);
  one_nic.nics_per_node = 1;
  one_nic.gpus_per_nic = 8;
  const Model single = model(one_nic);
  EXPECT_TRUE(nccl_graphs(single.fabric(), s).ring_same_channels);
  EXPECT_NEAR(entry_lat(single.table(Coll::kReduce, s), Algo::kRing, Proto::kLL), 6.6 + 2.7, 1e-9);
  const Model node = model(preset("dgx-h100", 1));
  EXPECT_NEAR(entry_lat(node.table(Coll::kReduce, node.full_shape()), Algo::kRing, Proto::kLL), 6.6 + 0.6, 1e-9);
}

// A NIC at 25% of its rate: every ring channel waits for it, so a large ring all-reduce takes ~4x.
TEST(NcclDegrade, NicAtQuarterRateSlowsMultiNodeRingFourfold) {
  const Model m = model(preset("dgx-h100", 4), "ring");
  const GroupShape s = m.full_shape();
  const Estimate healthy = m.estimate(Coll::kAllReduce, 4 * kGiB, s);
  const Estimate slow = m.estimate_degraded(Coll::kAllReduce, 4 * kGiB, s, {{DegradeKind::kNicRate, 2, 5, 0.25}});
  EXPECT_EQ(slow.algo, healthy.algo);
  EXPECT_NEAR(slow.time_us / healthy.time_us, 4.0, 0.15);  // latency is the same, bandwidth / 4
  // The same NIC on a node outside the group changes nothing.
  const Estimate outside = m.estimate_degraded(Coll::kAllReduce, 4 * kGiB, s, {{DegradeKind::kNicRate, 9, 5, 0.25}});
  EXPECT_DOUBLE_EQ(outside.time_us, healthy.time_us);
}

// GPUDirect off (on one node, or a remote-NUMA NIC) caps its NICs at half the host bandwidth.
TEST(NcclDegrade, GpuDirectOffAndRemoteNumaAreHostStaged) {
  const Model m = model(preset("dgx-h100", 2), "ring");
  const GroupShape s = m.full_shape();
  const double t0 = m.estimate(Coll::kAllReduce, 1 * kGiB, s).time_us;
  const double t_gdr = m.estimate_degraded(Coll::kAllReduce, 1 * kGiB, s, {{DegradeKind::kGpuDirectOff, 1, 0, 1}}).time_us;
  const double t_numa = m.estimate_degraded(Coll::kAllReduce, 1 * kGiB, s, {{DegradeKind::kRemoteNuma, 0, 3, 1}}).time_us;
  EXPECT_NEAR(t_gdr / t0, 50.0 / 27.5, 0.1);  // 55 GB/s host path / 2 vs a 50 GB/s NIC
  EXPECT_DOUBLE_EQ(t_numa, t_gdr);
  // A fabric configured without GPUDirect gets the search's lower speed (24 GB/s per NIC) and no LL128.
  Fabric off = preset("dgx-h100", 2);
  off.gpudirect = false;
  const Model m_off = model(off, "ring");
  const Estimate e = m_off.estimate(Coll::kAllReduce, 1 * kGiB, s);
  EXPECT_NEAR(busbw(e, Coll::kAllReduce, 1 * kGiB, 16), 8 * 24.0, 8.0);
  EXPECT_EQ(entry_bw(m_off.table(Coll::kAllReduce, s), Algo::kRing, Proto::kLL128), 0.0);
}

// Fleet -> fabric keeps the preset's arch and CPU and takes the Fleet's sizes and rates.
TEST(NcclFabric, FromFleetUsesPresetAndFleetFigures) {
  Fleet fleet;
  fleet.system = "dgx-a100";
  fleet.nodes = 4;
  fleet.gpus_per_node = 8;
  fleet.nvlink_bandwidth_GBps = 300;
  fleet.nics_per_node = 4;
  fleet.nic_bandwidth_Gbps = 200;
  const Fabric f = fabric_from_fleet(fleet);
  EXPECT_EQ(f.arch, GpuArch::kAmpere);
  EXPECT_EQ(f.cpu, CpuVendor::kAmd);
  EXPECT_FALSE(f.nvls);
  EXPECT_EQ(f.nodes, 4);
  EXPECT_EQ(f.gpus_per_nic, 2);
  EXPECT_DOUBLE_EQ(f.nic_bandwidth_Gbps, 200);
  fleet.system = "my-b200-cluster";
  EXPECT_EQ(fabric_from_fleet(fleet).arch, GpuArch::kBlackwell);
}

// --set edits fabric fields with units and rejects bad keys or values with a message.
TEST(NcclFabric, SetFieldParsesUnits) {
  Fabric f = preset("dgx-h100", 1);
  EXPECT_EQ(set_fabric_field(&f, "nic_bandwidth", "200Gb/s"), "");
  EXPECT_DOUBLE_EQ(f.nic_bandwidth_Gbps, 200);
  EXPECT_EQ(set_fabric_field(&f, "nvlink_bandwidth", "300GB/s"), "");
  EXPECT_DOUBLE_EQ(f.nvlink_bandwidth_GBps, 300);
  EXPECT_EQ(set_fabric_field(&f, "gpudirect", "false"), "");
  EXPECT_FALSE(f.gpudirect);
  EXPECT_EQ(set_fabric_field(&f, "channels", "8"), "");
  EXPECT_EQ(f.channels, 8);
  EXPECT_NE(set_fabric_field(&f, "channels", "-1"), "");
  EXPECT_NE(set_fabric_field(&f, "warp_drive", "1"), "");
  EXPECT_NE(set_fabric_field(&f, "nic_bandwidth", "fast"), "");
  // A number below the key's bound says which bound, not that it is no number.
  EXPECT_EQ(set_fabric_field(&f, "call_floor_per_gpu", "-3"),
            "--set call_floor_per_gpu: expected a number >= 0 (got '-3')");
  EXPECT_EQ(set_fabric_field(&f, "oversubscription", "0.5"),
            "--set oversubscription: expected a number >= 1 (got '0.5')");
  EXPECT_EQ(set_fabric_field(&f, "net_latency", "soon"), "--set net_latency: expected a number (got 'soon')");
  // The per-hop extras may be negative (a faster hop than NCCL's table), as the docs say.
  EXPECT_EQ(set_fabric_field(&f, "nvlink_hop_extra", "-0.2"), "");
  EXPECT_DOUBLE_EQ(f.nvlink_hop_extra_us, -0.2);
  EXPECT_EQ(set_fabric_field(&f, "nic_bandwidth", "-100Gb/s"),
            "--set nic_bandwidth: expected a bandwidth such as 400Gb/s or 50GB/s (got '-100Gb/s')");
}

// Sizes use nccl-tests' binary K/M/G as well as explicit KiB/MB units; rates accept Gb/s and GB/s.
TEST(NcclFabric, UnitParsers) {
  EXPECT_EQ(parse_size_bytes("16GiB"), 16 * kGiB);
  EXPECT_EQ(parse_size_bytes("16G"), 16 * kGiB);
  EXPECT_EQ(parse_size_bytes("8"), 8);
  EXPECT_EQ(parse_size_bytes("1MB"), 1000000);
  EXPECT_EQ(parse_size_bytes("1.5KiB"), 1536);
  EXPECT_FALSE(parse_size_bytes("0.5B").has_value());
  EXPECT_FALSE(parse_size_bytes("12 parsecs").has_value());
  EXPECT_DOUBLE_EQ(parse_rate_GBps("400Gb/s").value_or(0), 50.0);
  EXPECT_DOUBLE_EQ(parse_rate_GBps("450GB/s").value_or(0), 450.0);
  EXPECT_FALSE(parse_rate_GBps("400 furlongs").has_value());
}

// Fewer channels than NCCL's search gives lose bandwidth; the intra-node figure derives from NVLink.
TEST(NcclFabric, ChannelsAndNvlinkDriveRingBandwidth) {
  Fabric f = preset("dgx-h100", 1);
  const GroupShape s{8, 1, 8};
  EXPECT_NEAR(nccl_graphs(f, s).ring.channels * nccl_graphs(f, s).ring.bw_intra_GBps, 360.0, 1e-9);
  f.channels = 12;
  EXPECT_NEAR(nccl_graphs(f, s).ring.channels * nccl_graphs(f, s).ring.bw_intra_GBps, 180.0, 1e-9);
  const Fabric a100 = preset("dgx-a100", 1);
  EXPECT_NEAR(nccl_graphs(a100, s).ring.channels * nccl_graphs(a100, s).ring.bw_intra_GBps, 240.0, 1e-9);
}

// Send/recv and alltoall use the α-β point-to-point model: NVLink inside a node, the NIC across nodes.
TEST(NcclP2p, SendRecvAndAllToAllFollowTheSlowestPath) {
  const Model m = model(preset("dgx-h100", 2));
  const Estimate intra = m.estimate(Coll::kSendRecv, 1 * kGiB, {2, 1, 2});
  const Estimate inter = m.estimate(Coll::kSendRecv, 1 * kGiB, {2, 2, 1});
  EXPECT_EQ(intra.algo, Algo::kP2p);
  EXPECT_NEAR(intra.bw_GBps, 360.0, 1.0);
  EXPECT_NEAR(inter.bw_GBps, 48.0, 0.5);
  const Estimate small = m.estimate(Coll::kSendRecv, 8, {2, 2, 1});
  EXPECT_EQ(small.proto, Proto::kLL);
  EXPECT_NEAR(small.time_us, 6.6 + 2.7, 0.01);
  // Alltoall across 2 nodes: half the data leaves the node at 48 GB/s per GPU.
  const Estimate a2a = m.estimate(Coll::kAllToAll, 1 * kGiB, m.full_shape());
  EXPECT_NEAR(static_cast<double>(kGiB) / 2 / (a2a.time_us - a2a.lat_us) / 1e3, 48.0, 1.0);
  // Oversubscription matters only once the group spans more than one leaf.
  Fabric big = preset("dgx-h100", 64);
  big.oversubscription = 2;
  const Model mb = model(big);
  const Model mb1 = model(preset("dgx-h100", 64));
  EXPECT_GT(mb.estimate(Coll::kAllToAll, 1 * kGiB, mb.full_shape()).time_us,
            mb1.estimate(Coll::kAllToAll, 1 * kGiB, mb1.full_shape()).time_us);
}

// AllGather on one H100 node: Ring (LL small, Simple large, as NVLS AG has less bandwidth);
// PAT is offered only with one GPU per node.
TEST(NcclSelection, AllGatherUsesRingOnOneNodeAndPatNeedsOneGpuPerNode) {
  const Model m = model(preset("dgx-h100", 1));
  const Estimate small = m.estimate(Coll::kAllGather, 64 * 1024, m.full_shape());
  const Estimate large = m.estimate(Coll::kAllGather, 4 * kGiB, m.full_shape());
  EXPECT_EQ(small.algo, Algo::kRing);
  EXPECT_EQ(small.proto, Proto::kLL);
  EXPECT_EQ(large.algo, Algo::kRing);
  EXPECT_EQ(large.proto, Proto::kSimple);
  EXPECT_GT(entry_bw(m.table(Coll::kAllGather, m.full_shape()), Algo::kNvls, Proto::kSimple), 0.0);
  // PAT exists for one GPU per node only.
  const Model p = model(preset("dgx-h100", 16));
  EXPECT_GT(entry_bw(p.table(Coll::kAllGather, {16, 16, 1}), Algo::kPat, Proto::kSimple), 0.0);
  EXPECT_EQ(entry_bw(p.table(Coll::kAllGather, {128, 16, 8}), Algo::kPat, Proto::kSimple), 0.0);
}

// The CostModel adapter returns NCCL's time as a Duration, charges a 1-rank group only the launch,
// and falls back to the unmasked table when the overrides leave nothing for an op.
TEST(NcclCostModel, AdapterReturnsDurations) {
  Options o;
  o.algo = "tree";
  const auto cm = make_nccl_model(preset("dgx-h100", 1), o);
  ASSERT_NE(cm, nullptr);
  // Tree/LL: NCCL's 15.2 us latency; 8 B run on one of the 24 channels (4 ns).
  EXPECT_EQ(cm->collective_time(OpKind::kAllReduce, 8, {8, 1, 8}).ns, 15204);
  EXPECT_GT(cm->collective_time(OpKind::kBroadcast, 8, {8, 1, 8}).ns, 0);       // ring fallback
  EXPECT_EQ(cm->collective_time(OpKind::kAllReduce, 1 * kGiB, {1, 1, 1}).ns, 6600);
  EXPECT_STREQ(cm->name(), "nccl 2.30 tuning model");
  o.version = "1.0";
  EXPECT_EQ(make_nccl_model(preset("dgx-h100", 1), o), nullptr);
}

}  // namespace
}  // namespace fleetsim::nccl
