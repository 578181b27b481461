// Every fabric key means something in the models that could use it: the fleet
// latencies move NCCL's and the step model's times, `check` warns about keys the
// chosen model ignores, and docs/collectives.md's key table is kFabricKeyUses.
#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <vector>

#include "fleetsim/scenario.h"
#include "sim/model/fabric_keys.h"
#include "sim/model/nccl_model.h"
#include "sim/model/ring_steps.h"

namespace fleetsim {
namespace {

Fleet fleet(int nodes, Duration nvlink_latency, Duration net_latency) {
  Fleet f;
  f.system = "dgx-h100";
  f.nodes = nodes;
  f.nvlink_latency = nvlink_latency;
  f.net_latency = net_latency;
  return f;
}

int64_t nccl_ns(const Fleet& f, int64_t bytes, const std::string& algo = "") {
  NcclOptions o;
  o.algo = algo;
  const auto m = make_nccl_model(fabric_from_fleet(f), o);
  EXPECT_NE(m, nullptr);
  return m->collective_time(OpKind::kAllReduce, bytes, {f.nodes * 8, f.nodes, 8}).ns;
}

TEST(FabricKeys, NetLatencyMovesTheNcclTime) {
  const Duration nvl = Duration::nanos(600);
  const int64_t fast = nccl_ns(fleet(4, nvl, Duration::micros(10)), 64 << 20);
  const int64_t slow = nccl_ns(fleet(4, nvl, Duration::micros(50)), 64 << 20);
  EXPECT_GT(slow, fast + 1000);  // tens of network hops, 40 us more each on the latency
  // The defaults are what NCCL's tables assume: no extra.
  const NcclFabric d = fabric_from_fleet(fleet(4, nvl, Duration::micros(5)));
  EXPECT_NEAR(d.net_hop_extra_us, 0.0, 1e-9);
  EXPECT_NEAR(d.nvlink_hop_extra_us, 0.0, 1e-9);
}

TEST(FabricKeys, NvlinkLatencyMovesTheNcclTimeOnOneNode) {
  const Duration net = Duration::micros(5);
  // Ring LL on 8 GPUs: 14 NVLink hops, each 1 us slower.
  const int64_t base = nccl_ns(fleet(1, Duration::nanos(600), net), 256 << 10, "ring");
  const int64_t slow = nccl_ns(fleet(1, Duration::nanos(1600), net), 256 << 10, "ring");
  EXPECT_NEAR(static_cast<double>(slow - base), 14000.0, 1.0);
  // Unforced, NCCL's choice follows: slower NVLink hops make NVLS (one flat hop) win earlier.
  EXPECT_GT(nccl_ns(fleet(1, Duration::nanos(1600), net), 256 << 10), nccl_ns(fleet(1, Duration::nanos(600), net), 256 << 10));
}

TEST(FabricKeys, StepModelFollowsTheLatencies) {
  NcclOptions ring;
  ring.algo = "ring";
  const Fleet a = fleet(2, Duration::nanos(600), Duration::micros(5));
  const Fleet b = fleet(2, Duration::nanos(600), Duration::micros(30));
  const auto ma = nccl::make_ring_steps_model(fabric_from_fleet(a), ring);
  const auto mb = nccl::make_ring_steps_model(fabric_from_fleet(b), ring);
  ASSERT_NE(ma, nullptr);
  ASSERT_NE(mb, nullptr);
  EXPECT_GT(mb->collective_time(OpKind::kAllReduce, 1 << 20, {16, 2, 8}).ns,
            ma->collective_time(OpKind::kAllReduce, 1 << 20, {16, 2, 8}).ns);
}

TEST(FabricKeys, CheckWarnsAboutKeysTheModelIgnores) {
  Scenario s;
  s.fleet.keys_set = {"system", "nodes", "net_latency", "gpudirect", "cpu"};
  s.job.collective_model = CollectiveModel::kAlphaBeta;
  const std::vector<std::string> w = ignored_fleet_key_warnings(s);
  ASSERT_EQ(w.size(), 2u);
  EXPECT_EQ(w[0], "fleet.gpudirect has no effect on job.collective_model 'alpha-beta' (read by: nccl, steps)");
  EXPECT_EQ(w[1], "fleet.cpu has no effect on job.collective_model 'alpha-beta' (read by: nccl, steps)");
  s.job.collective_model = CollectiveModel::kNccl;
  EXPECT_TRUE(ignored_fleet_key_warnings(s).empty());
  s.job.collective_model = CollectiveModel::kSteps;
  EXPECT_TRUE(ignored_fleet_key_warnings(s).empty());
}

// docs/collectives.md's `<!-- vocabulary: fabric-keys -->` table lists kFabricKeyUses, in order.
TEST(FabricKeys, DocsTableIsTheCodeTable) {
  std::ifstream in(std::string(FLEETSIM_SOURCE_DIR) + "/docs/collectives.md");
  ASSERT_TRUE(in.good());
  std::string line;
  bool in_table = false;
  std::vector<std::vector<std::string>> rows;
  while (std::getline(in, line)) {
    if (line == "<!-- vocabulary: fabric-keys -->") { in_table = true; continue; }
    if (!in_table) continue;
    if (line.empty() || line[0] != '|') { if (!rows.empty()) break; continue; }
    std::vector<std::string> cells;
    size_t at = 1;
    while (at < line.size()) {
      const size_t end = line.find('|', at);
      if (end == std::string::npos) break;
      std::string c = line.substr(at, end - at);
      c.erase(0, c.find_first_not_of(' '));
      c.erase(c.find_last_not_of(' ') + 1);
      cells.push_back(c);
      at = end + 1;
    }
    if (cells.size() == 5 && cells[0].rfind("`", 0) == 0) rows.push_back(cells);
  }
  ASSERT_EQ(rows.size(), std::size(kFabricKeyUses));
  for (size_t i = 0; i < rows.size(); ++i) {
    const FabricKeyUse& u = kFabricKeyUses[i];
    EXPECT_EQ(rows[i][0], "`" + std::string(u.key) + "`");
    EXPECT_EQ(rows[i][1], u.nccl ? "yes" : "no") << u.key;
    EXPECT_EQ(rows[i][2], u.alpha_beta ? "yes" : "no") << u.key;
    EXPECT_EQ(rows[i][3], u.steps ? "yes" : "no") << u.key;
    EXPECT_EQ(rows[i][4], u.how) << u.key;
  }
}

}  // namespace
}  // namespace fleetsim
