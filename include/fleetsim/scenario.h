// A Scenario is the pure-data form of a scenario YAML file: what the fleet is,
// how ranks are grouped, what every rank runs each step, and which faults are
// injected. It is produced by load_scenario() (sim/io/scenario_loader.h), which
// validates everything that can be checked without running; it holds no engine
// state and can be copied freely. Every value that a later stage might report
// on carries the SourceLoc it came from.
#pragma once

#include <cstdint>
#include <iterator>
#include <optional>
#include <string>
#include <vector>

#include "fleetsim/fault.h"
#include "fleetsim/status.h"
#include "fleetsim/time.h"

namespace fleetsim {

// What a rank's step program can do. Collectives are issued on a process group.
enum class OpKind : uint8_t {
  kCompute,        // GPU work for `time` (+ jitter); the CPU only enqueues it
  kCpu,            // CPU-side work (data loading, checkpoint I/O): occupies the CPU, not the GPU
  kAllReduce,
  kAllGather,
  kReduceScatter,
  kBroadcast,      // with `root` (index of the root within the group)
  kReduce,         // with `root`
  kAllToAll,
  kBarrier,        // an all-reduce of one element, then the CPU waits for it (as ProcessGroupNCCL does)
  kSend,           // point-to-point to the next/previous pipeline stage
  kRecv,
  kSync,           // the CPU waits until its GPU has finished everything enqueued (loss.item())
  kStoreBarrier,   // CPU-side barrier over every rank through the TCPStore (gloo/store barrier):
                   // the CPU waits for all ranks' CPUs; the GPU is not involved
  kLog,            // the rank prints a line to job.log
  kWhen,           // conditional block: `when` expression, `do` and optional `else` lists
};

// True for ops that are NCCL kernels on a process group (including barrier,
// send and recv).
bool is_collective(OpKind k);
// YAML spelling ("allreduce") and PyTorch flight-recorder profiling name
// ("nccl:all_reduce") and watchdog OpType ("ALLREDUCE").
const char* op_yaml_name(OpKind k);
const char* op_profiling_name(OpKind k);
const char* op_watchdog_name(OpKind k);

// Element types, as the flight recorder spells them (input_dtypes: ["Float"]).
enum class DType : uint8_t { kFloat, kBFloat16, kHalf, kDouble, kInt, kLong, kByte, kFloat8 };
const char* dtype_name(DType t);       // "Float", "BFloat16", ...
int dtype_bytes(DType t);              // 4, 2, ...

// Jitter of a duration: the op's time is multiplied by a draw X with mean 1.
//   kNormal     X = max(0, 1 + cv * Z)                      (`jitter: 2%`)
//   kLognormal  X = exp(mu + s * Z), s^2 = ln(1 + cv^2), mu = -s^2 / 2
//   kGamma      X ~ Gamma(shape 1/cv^2, scale cv^2)         (Marsaglia-Tsang)
//   kEmpirical  X = inverse CDF of measured times, linearly interpolated and
//               normalized to mean 1 (`samples`, sorted ascending)
// cv = 0 (and no samples) means no jitter. Draws are counter-based (rng.h).
enum class JitterDist : uint8_t { kNormal, kLognormal, kGamma, kEmpirical };
const char* jitter_dist_name(JitterDist d);  // "normal", "lognormal", "gamma", "empirical"

struct Jitter {
  double cv = 0.0;                 // coefficient of variation (kEmpirical: of the samples, informative)
  JitterDist dist = JitterDist::kNormal;
  std::string file;                // kEmpirical: the CSV as written in the scenario
  std::vector<double> samples;     // kEmpirical: sorted, mean-1 inverse-CDF knots
  bool active() const { return dist == JitterDist::kEmpirical ? samples.size() > 1 : cv > 0; }
};

// One entry of a step program.
struct Op {
  OpKind kind = OpKind::kCompute;
  std::string name;         // as the YAML names it; frames and logs use it
  SourceLoc loc;            // of the op's mapping in the file

  // kCompute, kCpu
  Duration time{};
  Jitter jitter;

  // collectives and send/recv
  std::string group;        // "world", "tp", "dp", "pp"
  int64_t bytes = 0;        // nccl-tests' S: allreduce/broadcast/reduce = the tensor;
                            // allgather = the gathered output; reducescatter = the input;
                            // alltoall = the send buffer; send/recv = the message
  DType dtype = DType::kFloat;
  int root = 0;             // kBroadcast, kReduce: index within the group
  std::string peer;         // kSend, kRecv: "next" or "prev" pipeline stage

  // kLog
  std::string text;         // "{step}" etc. are substituted; "{name}" of an op waits for the GPU

  // kWhen
  std::string when;         // expression source text
  SourceLoc when_loc;       // of the expression string (col points at its first character)
  std::vector<Op> then_ops;
  std::vector<Op> else_ops;
};

// Hardware of the fleet. A preset fills every field; explicit keys override.
struct Fleet {
  std::string system;             // preset name ("dgx-h100") or "custom"
  int nodes = 1;
  int gpus_per_node = 8;
  int sms_per_gpu = 132;
  double nvlink_bandwidth_GBps = 450.0;   // per GPU per direction
  Duration nvlink_latency = Duration::nanos(600);
  int nics_per_node = 8;
  double nic_bandwidth_Gbps = 400.0;      // per NIC per direction
  Duration net_latency = Duration::nanos(5000);
  double oversubscription = 1.0;          // leaf:spine of the rail-optimized network
  bool gpudirect = true;                  // GPUDirect RDMA (off: NIC traffic staged through host memory)
  std::string cpu;                        // intel | amd (NCCL's per-vendor net overhead); "" = the preset's
  std::vector<std::string> keys_set;      // the fleet keys the scenario wrote, in file order (for `check`)
};

struct Parallel {
  int tp = 1;
  int dp = 0;  // 0 = whatever the fleet leaves: ranks / (tp * pp)
  int pp = 1;
  bool pp_given = false;  // the `pp` group exists only if the scenario named pp
};

// How collective durations are computed (`job.collective_model`), once: the
// loader, the cost-model factory, `fleetsim list models` and the docs test read
// this table.
enum class CollectiveModel : uint8_t { kNccl, kAlphaBeta, kSteps };
struct CollectiveModelSpec {
  CollectiveModel id;
  const char* name;  // as the YAML spells it
  const char* what;  // one line for help and docs
};
// INVARIANT: kCollectiveModels[i].id == static_cast<CollectiveModel>(i).
inline constexpr CollectiveModelSpec kCollectiveModels[] = {
    {CollectiveModel::kNccl, "nccl", "NCCL's tuning model on the fabric: its algorithm and protocol choice and time"},
    {CollectiveModel::kAlphaBeta, "alpha-beta", "a plain ring over the group's slowest link class"},
    {CollectiveModel::kSteps, "steps",
     "NCCL's choice, with every Ring step a transfer on its link, timed from each member's arrival"},
};
constexpr const char* collective_model_name(CollectiveModel m) { return kCollectiveModels[static_cast<int>(m)].name; }
static_assert([] {
  for (int i = 0; i < static_cast<int>(std::size(kCollectiveModels)); ++i)
    if (static_cast<int>(kCollectiveModels[i].id) != i) return false;
  return true;
}(), "kCollectiveModels must list the models in enum order");

// The communication backend the simulated job runs on (`job.backend`), once: the
// loader, `fleetsim list backends`, the job log and the docs test read this
// table. It decides what a mismatched or missing collective does and how the log
// words it (docs/engine.md, "Backends").
enum class CommBackend : uint8_t { kNccl, kGloo };
struct CommBackendSpec {
  CommBackend id;
  const char* name;  // as the YAML spells it
  const char* what;  // one line for help and docs
};
// INVARIANT: kCommBackends[i].id == static_cast<CommBackend>(i).
inline constexpr CommBackendSpec kCommBackends[] = {
    {CommBackend::kNccl, "nccl",
     "GPUs: collectives match by order, never by size; a mismatch or a missing peer spins until the watchdog"},
    {CommBackend::kGloo, "gloo",
     "CPUs: a size mismatch aborts the rank that receives more than it expects (peers see the connection "
     "close); a missing peer makes its peers time out"},
};
constexpr const char* comm_backend_name(CommBackend b) { return kCommBackends[static_cast<int>(b)].name; }
static_assert([] {
  for (int i = 0; i < static_cast<int>(std::size(kCommBackends)); ++i)
    if (static_cast<int>(kCommBackends[i].id) != i) return false;
  return true;
}(), "kCommBackends must list the backends in enum order");

// The flight recorder's dump settings (`job.flight_recorder: {format: json, timing: on}`),
// once: the loader, the recorder (sim/observe), `fleetsim list flight-recorder` and the
// docs test read this table. Each setting has two values, the first PyTorch's default.
enum class FrSetting : uint8_t { kFormat, kTiming, kOnlyActive, kStackTraces };
struct FrSettingSpec {
  FrSetting id;
  const char* key;        // as the YAML spells it
  const char* values[2];  // [0] the default (PyTorch's), [1] the other
  const char* what;       // one line for help and docs
};
// INVARIANT: kFrSettings[i].id == static_cast<FrSetting>(i).
inline constexpr FrSettingSpec kFrSettings[] = {
    {FrSetting::kFormat, "format", {"pickle", "json"},
     "pickle: fr/comm_lib_trace_rank_<r>, as PyTorch dumps on a timeout; json: fr/rank_<r>.json, as "
     "_dump_nccl_trace_json returns it"},
    {FrSetting::kTiming, "timing", {"off", "on"},
     "TORCH_NCCL_ENABLE_TIMING: on records start events, so work shows started and, once completed, "
     "duration_ms; off, work goes from scheduled to completed"},
    {FrSetting::kOnlyActive, "only_active", {"false", "true"},
     "TORCH_INCLUDE_ONLY_ACTIVE: true leaves out the entries whose completion the watchdog saw"},
    {FrSetting::kStackTraces, "stack_traces", {"on", "off"},
     "TORCH_INCLUDE_STACK_TRACE: on gives each entry its frames (the scenario's op, its when, the step)"},
};
static_assert([] {
  for (int i = 0; i < static_cast<int>(std::size(kFrSettings)); ++i)
    if (static_cast<int>(kFrSettings[i].id) != i) return false;
  return true;
}(), "kFrSettings must list the settings in enum order");

// The values chosen for kFrSettings: each an index into its row's `values`.
struct FlightRecorderSettings {
  uint8_t choice[std::size(kFrSettings)] = {};  // all PyTorch's defaults
  bool is_default(FrSetting s) const { return choice[static_cast<int>(s)] == 0; }
  bool json() const { return !is_default(FrSetting::kFormat); }
  bool timing() const { return !is_default(FrSetting::kTiming); }
  bool only_active() const { return !is_default(FrSetting::kOnlyActive); }
  bool stack_traces() const { return is_default(FrSetting::kStackTraces); }
};

// How the simulated job behaves around its step program.
struct Job {
  int64_t steps = 1;
  uint64_t seed = 1;
  std::optional<Duration> watchdog = Duration::minutes(10);  // nullopt = "off"
  Duration telemetry_period = Duration::seconds(1);
  int launch_queue = 4;           // GPU ops a CPU may enqueue ahead of its GPU
  int flight_recorder_entries = 2000;   // per rank, as TORCH_FR_BUFFER_SIZE
  FlightRecorderSettings flight_recorder;  // job.flight_recorder: how the dumps are written
  Duration dump_wait = Duration::seconds(60);     // watchdog waits this long for dumps, then aborts
  Duration crash_detect = Duration::seconds(5);   // launcher notices a dead rank this long after
  CollectiveModel collective_model = CollectiveModel::kNccl;  // how collective durations are computed
  CommBackend backend = CommBackend::kNccl;  // job.backend: what a mismatch does, how the log words it
  std::string nccl_version = "2.30";   // job.nccl.version: whose tuning constants
  std::string nccl_algo;               // job.nccl.algo: as NCCL_ALGO ("ring", "^nvls", "" = all)
  std::string nccl_proto;              // job.nccl.proto: as NCCL_PROTO
};

struct ThrottleStage {
  int64_t from_step = 1;
  double factor = 1.0;
};

struct Fault {
  FaultKind kind = FaultKind::kStraggler;
  SlowMode mode = SlowMode::kPersistent;  // kStraggler only
  bool all_ranks = false;         // kStraggler: `ranks: all` (then `ranks` is empty)
  double probability = 0.0;       // kIntermittent: per rank and step
  Jitter slowdown_jitter;         // kIntermittent: spread of the slowdown (mean `slowdown`)
  int64_t every = 0;              // kPause: period in steps
  Duration pause{};               // kPause: extra time per pause
  bool staggered = false;         // kPause: rank r pauses at steps where (step + r) % every == 0
  std::vector<ThrottleStage> schedule;  // kThrottle: ascending from_step
  SourceLoc loc;
  std::vector<int> ranks;         // kStraggler, kAbsent: several; others: exactly one
  double slowdown = 1.0;          // kStraggler
  int64_t from_step = 1;          // kStraggler
  int64_t to_step = INT64_MAX;    // kStraggler (inclusive)
  int64_t at_step = 0;            // kStall, kCrash, kSkip, kMismatch, kNicDown
  std::string where;              // kStall: "data_loader", "checkpoint", ...
  std::string op;                 // kSkip, kMismatch: the op's name; kStall: optional cpu op
  std::optional<int64_t> bytes;   // kMismatch
  std::optional<DType> dtype;     // kMismatch
  int node = -1;                  // kLink, kNicAffinity, kNicDown
  int nic = -1;                   // kLink, kNicDown
  int gpu = -1;                   // kNicAffinity: local GPU index on the node
  double fraction = 1.0;          // kLink: share of the NIC's rate left
  std::vector<int> nodes;         // kGpuDirect
};

// What a scenario says its run must show; `fleetsim run --check-expect` and the
// scenario tests verify it.
struct Expect {
  std::optional<std::string> outcome;        // completed | hang | crash | deadlock
  std::optional<int64_t> hang_step;
  std::optional<int64_t> steps_completed;
  // What `fleetsim diagnose` must find on the run's record (tests check it).
  std::optional<std::string> cause;          // extra_collective | rank_stalled | ...
  std::optional<std::vector<int>> culprit;   // culprit ranks, ascending
};

struct Scenario {
  std::string file;               // path it was loaded from ("" for in-memory)
  std::string name;
  std::string description;
  Fleet fleet;
  Parallel parallel;
  Job job;
  std::vector<Op> step;
  std::vector<Fault> faults;
  Expect expect;
  std::string calibration;        // `calibration: FILE`: a fitted collective model (validate/)
  SourceLoc calibration_loc;

  int ranks() const { return fleet.nodes * fleet.gpus_per_node; }
};

}  // namespace fleetsim
