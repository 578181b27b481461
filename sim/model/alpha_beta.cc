// The simulator core's placeholder collective model: an alpha-beta ring over the
// group's slowest link class. Inside one node the ring runs on NVLink; across
// nodes each channel's ring crosses every node boundary once and channels spread
// over the NICs, so the bus bandwidth is the NICs' share of the members on a node
// (8 GPUs of a DGX H100 over 8 x 400 Gb/s: ~400 GB/s; one GPU per node: ~50 GB/s).
#include <algorithm>

#include "fleetsim/cost_model.h"

namespace fleetsim {

double ring_bytes_sent_per_rank(OpKind op, int64_t bytes, int ranks) {
  const double s = static_cast<double>(bytes);
  const double n = ranks;
  if (ranks <= 1) return 0.0;
  switch (op) {
    case OpKind::kAllReduce: case OpKind::kBarrier: return 2.0 * (n - 1) / n * s;
    case OpKind::kAllGather: case OpKind::kReduceScatter: case OpKind::kAllToAll:
      return (n - 1) / n * s;
    case OpKind::kBroadcast: case OpKind::kReduce: case OpKind::kSend: case OpKind::kRecv:
      return s;
    default: return 0.0;
  }
}

namespace {

int ring_steps(OpKind op, int n) {
  switch (op) {
    case OpKind::kAllReduce: case OpKind::kBarrier: return 2 * (n - 1);
    case OpKind::kSend: case OpKind::kRecv: return 1;
    default: return n - 1;
  }
}

class AlphaBetaModel final : public CostModel {
 public:
  explicit AlphaBetaModel(const Fleet& f) : fleet_(f) {}

  Duration collective_time(OpKind op, int64_t bytes, const GroupShape& g) const override {
    const bool multi_node = g.nodes > 1;
    const double alpha_s = (multi_node ? fleet_.net_latency : fleet_.nvlink_latency).to_seconds();
    const double nvlink = fleet_.nvlink_bandwidth_GBps * 1e9;
    const double nic_per_gpu = fleet_.nics_per_node * fleet_.nic_bandwidth_Gbps / 8.0 * 1e9 /
                               fleet_.gpus_per_node;
    const double bus = multi_node ? std::min(nvlink, g.ranks_per_node * nic_per_gpu) : nvlink;
    const double t = ring_steps(op, std::max(g.ranks, 2)) * alpha_s +
                     ring_bytes_sent_per_rank(op, bytes, g.ranks) / bus;
    return round_to_duration(t);
  }

  const char* name() const override { return "alpha-beta ring"; }

 private:
  Fleet fleet_;
};

}  // namespace

std::unique_ptr<CostModel> make_alpha_beta_model(const Fleet& fleet) {
  return std::make_unique<AlphaBetaModel>(fleet);
}

}  // namespace fleetsim
