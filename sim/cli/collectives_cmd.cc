// `fleetsim collectives`: what nccl-tests would print for NCCL's own cost model
// (sim/model/nccl_model.h) on a preset fabric, plus the (algo, proto) NCCL picks.
// Columns and bandwidth definitions follow NVIDIA/nccl-tests doc/PERFORMANCE.md
// (algbw = S/t, busbw = algbw x 2(n-1)/n for all-reduce, ...; GB/s = 1e9 B/s).
// `--calibration FILE` applies a calibration's `nccl:` section as a scenario does.
#include <algorithm>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "sim/cli/commands.h"
#include "sim/io/units.h"
#include "sim/model/calibration.h"
#include "sim/model/nccl_model.h"

namespace fleetsim::cli {
namespace {

struct CollectivesArgs {
  std::string system = "dgx-h100";
  int nodes = 1;
  int gpus_per_node = 0;  // 0 = the preset's
  std::string op = "allreduce";
  std::string min_bytes = "8";
  std::string max_bytes = "128MiB";
  double step_factor = 2.0;
  std::string algo, proto;
  std::string version = "2.30";
  bool version_given = false;
  std::string calibration;  // a calibration file whose `nccl:` section is applied
  std::string dtype = "float";
  std::string format = "table";
  std::string timing = "exec";
  int gpus_per_thread = 1;
  std::vector<std::string> sets;
};

struct Row {
  int64_t size = 0, count = 0;
  nccl::Estimate e;
  double algbw = 0, busbw = 0;
};

int dtype_size(const std::string& t) {
  if (t == "float" || t == "float32" || t == "int32" || t == "int" || t == "uint32") return 4;
  if (t == "half" || t == "float16" || t == "bfloat16") return 2;
  if (t == "double" || t == "float64" || t == "int64" || t == "uint64") return 8;
  if (t == "int8" || t == "uint8" || t == "char" || t == "fp8" || t == "f8e4m3" || t == "f8e5m2") return 1;
  return 0;
}

// Prints "error: MESSAGE" (the one-line bad-input contract) and returns exit code 2.
int fail(const std::string& message) {
  std::fprintf(stderr, "error: %s\n", message.c_str());
  return 2;
}

// Preset + --nodes/--gpus-per-node + the calibration's figures (`cal`, may be
// null) + --set edits. Returns "" or what was wrong.
std::string build_fabric(const CollectivesArgs& a, const NcclCalibration* cal, nccl::Fabric* f) {
  auto p = nccl::fabric_preset(a.system);
  if (!p) return "unknown system '" + a.system + "' (expected one of " + std::string(nccl::kPresetNames) + ")";
  *f = *p;
  if (a.nodes < 1) return "--nodes must be >= 1 (got " + std::to_string(a.nodes) + ")";
  f->nodes = a.nodes;
  if (a.gpus_per_node < 0) return "--gpus-per-node must be >= 1";
  if (a.gpus_per_node > 0) f->gpus_per_node = a.gpus_per_node;
  if (cal != nullptr) *f = apply_nccl_figures(*cal, *f);
  for (const std::string& kv : a.sets) {
    const size_t eq = kv.find('=');
    if (eq == std::string::npos) return "--set expects KEY=VALUE (got " + quote_value(kv) + ")";
    if (std::string e = nccl::set_fabric_field(f, kv.substr(0, eq), kv.substr(eq + 1)); !e.empty()) return e;
  }
  return "";
}

const char* time_format(double us) { return us >= 10000.0 ? "%7.0f" : us >= 100.0 ? "%7.1f" : "%7.2f"; }

void print_table(const CollectivesArgs& a, const nccl::Model& m, nccl::Coll coll, const std::vector<Row>& rows) {
  const nccl::Fabric& f = m.fabric();
  if (a.timing == "tuning") {
    std::printf("# fleetsim collectives: NCCL %s tuning model (analytical prediction, not a measurement)\n",
                m.constants().version.c_str());
  } else {
    std::printf("# fleetsim collectives: NCCL %s choice (tuning model), timed by the execution model "
                "(analytical prediction, not a measurement)\n", m.constants().version.c_str());
  }
  std::printf("# system %s: %d node(s) x %d GPUs (%s), NVLink %.0f GB/s, %d x %.0f Gb/s NICs, GPUDirect %s, "
              "NVLS %s, CollNet %s\n", f.system.c_str(), f.nodes, f.gpus_per_node, nccl::arch_name(f.arch),
              f.nvlink_bandwidth_GBps, f.nics_per_node, f.nic_bandwidth_Gbps, f.gpudirect ? "on" : "off",
              f.nvls ? "on" : "off", f.collnet ? "on" : "off");
  std::printf("# op %s  nranks %d  minBytes %s  maxBytes %s  step: %g(factor)  NCCL_ALGO=%s  NCCL_PROTO=%s\n",
              nccl::coll_name(coll), f.ranks(), a.min_bytes.c_str(), a.max_bytes.c_str(), a.step_factor,
              a.algo.empty() ? "(all)" : a.algo.c_str(), a.proto.empty() ? "(all)" : a.proto.c_str());
  std::printf("#\n");
  std::printf("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %-9s  %-6s\n", "size", "count", "type", "redop", "root",
              "time", "algbw", "busbw", "algo", "proto");
  std::printf("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s\n", "(B)", "(elements)", "", "", "", "(us)", "(GB/s)",
              "(GB/s)");
  const bool reduces = coll == nccl::Coll::kAllReduce || coll == nccl::Coll::kReduce ||
                       coll == nccl::Coll::kReduceScatter;
  const int root = (coll == nccl::Coll::kBroadcast || coll == nccl::Coll::kReduce) ? 0 : -1;
  double sum = 0;
  for (const Row& r : rows) {
    char t[32];
    std::snprintf(t, sizeof t, time_format(r.e.time_us), r.e.time_us);
    std::printf("  %10lld  %12lld  %8s  %6s  %6d  %s  %6.2f  %6.2f  %-9s  %-6s\n", static_cast<long long>(r.size),
                static_cast<long long>(r.count), a.dtype.c_str(), reduces ? "sum" : "none", root, t, r.algbw,
                r.busbw, nccl::algo_name(r.e.algo), nccl::proto_name(r.e.proto));
    sum += r.busbw;
  }
  std::printf("# Out of bounds values : 0 OK\n");
  std::printf("# Avg bus bandwidth    : %g \n", rows.empty() ? 0.0 : sum / static_cast<double>(rows.size()));
  std::printf("#\n");
}

// The calibration line of the table's header: the figures set and the offset added.
void print_calibration(const std::string& path, const NcclCalibration& c, double offset_us) {
  std::string figures;
  char buf[64];
  for (const auto& [key, v] : c.figures) {
    std::snprintf(buf, sizeof buf, "%s%s=%.3f", figures.empty() ? "" : " ", key.c_str(), v);
    figures += buf;
  }
  std::printf("# calibration %s: %s; latency offset %+.2f us per call\n", path.c_str(),
              figures.empty() ? "no figures fitted" : figures.c_str(), offset_us);
}

void print_csv(const CollectivesArgs& a, nccl::Coll coll, const std::vector<Row>& rows) {
  const bool reduces = coll == nccl::Coll::kAllReduce || coll == nccl::Coll::kReduce ||
                       coll == nccl::Coll::kReduceScatter;
  const int root = (coll == nccl::Coll::kBroadcast || coll == nccl::Coll::kReduce) ? 0 : -1;
  std::printf("size,count,type,redop,root,time_us,algbw,busbw,algo,proto\n");
  for (const Row& r : rows) {
    std::printf("%lld,%lld,%s,%s,%d,%.3f,%.3f,%.3f,%s,%s\n", static_cast<long long>(r.size),
                static_cast<long long>(r.count), a.dtype.c_str(), reduces ? "sum" : "none", root, r.e.time_us,
                r.algbw, r.busbw, nccl::algo_name(r.e.algo), nccl::proto_name(r.e.proto));
  }
}

// Validates everything, sweeps the sizes and prints. Returns the exit code.
int run_collectives(const CollectivesArgs& a) {
  const auto coll = nccl::coll_from_name(a.op);
  if (!coll) {
    return fail("unknown op '" + a.op + "' (expected allreduce, allgather, reducescatter, broadcast, reduce, "
                "alltoall or sendrecv)");
  }
  const int type_size = dtype_size(a.dtype);
  if (type_size == 0) {
    return fail("unknown --dtype '" + a.dtype + "' (expected float, half, bfloat16, double, int8, int32, int64 "
                "or fp8)");
  }
  if (a.format != "table" && a.format != "csv") return fail("--format must be table or csv (got '" + a.format + "')");
  const auto lo = nccl::parse_size_bytes(a.min_bytes);
  const auto hi = nccl::parse_size_bytes(a.max_bytes);
  if (!lo) return fail("--min-bytes: expected a size such as 8, 64KiB or 16GiB (got '" + a.min_bytes + "')");
  if (!hi) return fail("--max-bytes: expected a size such as 8, 64KiB or 16GiB (got '" + a.max_bytes + "')");
  if (*lo > *hi) return fail("--min-bytes (" + a.min_bytes + ") must not exceed --max-bytes (" + a.max_bytes + ")");
  if (!(a.step_factor > 1.0)) return fail("--step-factor must be > 1");
  std::optional<NcclCalibration> cal;
  if (!a.calibration.empty()) {
    auto c = load_calibration(a.calibration);
    if (!c.ok()) {  // located: "FILE:LINE:COL: error: ..."
      std::fprintf(stderr, "%s\n", c.errors().front().to_string().c_str());
      return 2;
    }
    if (!c->nccl) return fail("--calibration: " + a.calibration + " has no `nccl:` section (expected a file of "
                              "`fleetsim calibrate --backend nccl` or `--from-nccl-tests`)");
    cal = c->nccl;
  }
  nccl::Fabric fabric;
  if (std::string e = build_fabric(a, cal ? &*cal : nullptr, &fabric); !e.empty()) return fail(e);
  nccl::Options o;
  o.version = cal && !a.version_given ? cal->version : a.version;
  o.algo = a.algo;
  o.proto = a.proto;
  o.timing = a.timing;
  o.gpus_per_thread = a.gpus_per_thread;
  auto model = nccl::Model::create(fabric, o);
  if (!model.ok()) return fail(model.errors().front().message);
  const GroupShape shape = model->full_shape();
  // The calibration's latency offset for this collective (none if it measured other ones).
  const std::optional<OpKind> op = collective_from_name(nccl::coll_name(*coll));
  const double offset_us = cal && op ? cal->offset_us(*op) : 0.0;
  const bool per_rank = *coll == nccl::Coll::kAllGather || *coll == nccl::Coll::kReduceScatter ||
                        *coll == nccl::Coll::kAllToAll;
  const int64_t unit = type_size * (per_rank ? shape.ranks : 1);  // nccl-tests aligns S to this
  std::vector<Row> rows;
  for (double s = static_cast<double>(std::max<int64_t>(*lo, 0)); s <= static_cast<double>(*hi) && rows.size() < 4096;
       s = std::max(s * a.step_factor, s + 1)) {
    Row r;
    r.size = static_cast<int64_t>(s) / unit * unit;
    r.count = r.size / unit;
    r.e = model->estimate(*coll, r.size, shape);
    if (!r.e.ok) {
      return fail("no algorithm/protocol left for " + std::string(nccl::coll_name(*coll)) + " with --algo '" +
                  a.algo + "' --proto '" + a.proto + "' (NCCL would fail this call)");
    }
    if (cal) r.e.time_us = std::max(0.0, r.e.time_us + offset_us);
    r.algbw = static_cast<double>(r.size) / (r.e.time_us * 1e3);
    r.busbw = r.algbw * nccl::busbw_factor(*coll, shape.ranks);
    rows.push_back(r);
  }
  if (a.format == "csv") {
    print_csv(a, *coll, rows);
    return 0;
  }
  if (cal) print_calibration(a.calibration, *cal, offset_us);
  print_table(a, *model, *coll, rows);
  return 0;
}

}  // namespace

void register_collectives_command(CLI::App& app, int* exit_code) {
  auto args = std::make_shared<CollectivesArgs>();
  CLI::App* sub = app.add_subcommand(
      "collectives", "Print what nccl-tests would measure: NCCL's choice (tuning.cc), timed by the execution model");
  sub->add_option("--system", args->system, "Preset: dgx-a100, dgx-h100, dgx-h200, hgx-b200");
  sub->add_option("--nodes", args->nodes, "Nodes in the communicator");
  sub->add_option("--gpus-per-node", args->gpus_per_node, "GPUs per node (default: the preset's)");
  sub->add_option("--op", args->op, "allreduce, allgather, reducescatter, broadcast, reduce, alltoall, sendrecv");
  sub->add_option("--min-bytes,-b", args->min_bytes, "Smallest size S (nccl-tests' -b), e.g. 8 or 64KiB");
  sub->add_option("--max-bytes,-e", args->max_bytes, "Largest size S (nccl-tests' -e), e.g. 16GiB");
  sub->add_option("--step-factor,-f", args->step_factor, "Size multiplier between rows (nccl-tests' -f)");
  sub->add_option("--algo", args->algo, "NCCL_ALGO list, e.g. ring,tree or ^nvls");
  sub->add_option("--proto", args->proto, "NCCL_PROTO list, e.g. ll,ll128 or ^ll128");
  sub->add_option("--nccl-version", args->version,
                  "NCCL release whose constants to use (2.18 ... 2.30; default 2.30, or the --calibration file's)");
  sub->add_option("--calibration", args->calibration,
                  "Calibration file (`fleetsim calibrate`): its fabric figures, NCCL constants and this op's offset");
  sub->add_option("--dtype", args->dtype, "Element type (float, half, bfloat16, double, int8, ...)");
  sub->add_option("--format", args->format, "table (nccl-tests style) or csv");
  sub->add_option("--timing", args->timing, "exec (execution model, default) or tuning (NCCL's own lat + S/bw)");
  sub->add_option("--gpus-per-thread,-g", args->gpus_per_thread,
                  "GPUs one host thread drives (nccl-tests' -g; default 1 = one process per GPU)");
  sub->add_option("--set", args->sets, "Edit a fabric figure, KEY=VALUE (e.g. nic_bandwidth=200Gb/s)")
      ->allow_extra_args(false);
  sub->callback([args, exit_code, sub]() {
    args->version_given = sub->count("--nccl-version") > 0;
    *exit_code = run_collectives(*args);
  });
}

}  // namespace fleetsim::cli
