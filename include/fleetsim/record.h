// The RunRecord: the output folder of every run, simulated or real. This header
// owns its shape, once: which files a record can hold (the table that drives
// `--outputs`, the CLI help, summary.json's `outputs.written`, validate's merge
// and the docs test) and the columns of its CSV files (which every writer and
// the diagnose reader share). The writers live in sim/observe/ and validate/;
// the reader in sim/diagnose/. Nothing here allocates or has state.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace fleetsim {

// One file (or folder) of a RunRecord.
enum class OutputFile : uint8_t { kSummary, kSteps, kTelemetry, kFr, kTrace, kLog, kModel };
inline constexpr int kOutputFiles = 7;

struct OutputSpec {
  OutputFile id;
  const char* cli_name;   // as `--outputs` spells it: "summary"
  const char* file_name;  // in the folder: "summary.json"; a folder ends in '/'
  // Whether the lockstep executor can write it (it has no per-op events, so it
  // writes only what needs none).
  bool lockstep;
  // What `fleetsim run` writes by default, so that the folder stays bounded at
  // scale (the limits are in sim/run/outputs.cc; the CLI help prints this).
  const char* bounded_default;
  const char* what;       // one line for help and docs
};

// Every file of a RunRecord, in the order summary.json lists them.
// INVARIANT: kOutputs[i].id == static_cast<OutputFile>(i).
inline constexpr OutputSpec kOutputs[kOutputFiles] = {
    {OutputFile::kSummary, "summary", "summary.json", true, "always",
     "outcome, hang/crash details, step-time statistics, straggler tax"},
    {OutputFile::kSteps, "steps", "steps.csv", true, "always", "one row per completed step"},
    {OutputFile::kTelemetry, "telemetry", "telemetry.csv", false, "every rank up to 512 ranks, else ranks 0-63",
     "per-rank GPU utilization, SM and tensor activity, NIC bytes, step, every telemetry period"},
    {OutputFile::kFr, "fr", "fr/", false, "up to 1024 ranks, at most 2^18 entries in all",
     "one flight-recorder dump per rank, in PyTorch's schema"},
    {OutputFile::kTrace, "trace", "trace.json", false, "every rank up to 64 ranks, else 64 in full and the rest summarized",
     "Chrome trace events (Perfetto): compute, collectives, waits"},
    {OutputFile::kLog, "log", "job.log", true, "always", "what the job prints, watchdog lines in PyTorch's wording"},
    {OutputFile::kModel, "model", "model.json", true, "always",
     "each collective's healthy-fabric time as the run's cost model gives it (diagnose's yardstick)"},
};

constexpr const OutputSpec& output_spec(OutputFile f) { return kOutputs[static_cast<int>(f)]; }
constexpr const char* output_file_name(OutputFile f) { return output_spec(f).file_name; }

// The output `--outputs` calls `cli_name`, or nullopt.
std::optional<OutputFile> output_by_cli_name(std::string_view cli_name);

// "summary, steps, telemetry, fr, trace, log": the CLI names in table order,
// joined by `sep`.
std::string output_cli_names(const char* sep = ", ");

// A set of outputs, one bit per OutputFile.
class OutputSet {
 public:
  constexpr OutputSet() = default;
  static constexpr OutputSet all() { return OutputSet((1u << kOutputFiles) - 1); }
  constexpr bool has(OutputFile f) const { return (bits_ >> static_cast<int>(f)) & 1u; }
  constexpr void set(OutputFile f, bool on = true) {
    const unsigned bit = 1u << static_cast<int>(f);
    bits_ = on ? bits_ | bit : bits_ & ~bit;
  }
  constexpr bool operator==(const OutputSet&) const = default;

 private:
  constexpr explicit OutputSet(unsigned bits) : bits_(bits) {}
  unsigned bits_ = 0;
};

// The columns of the RunRecord's CSV files. Writers print exactly these headers
// (csv_header); the reader finds columns by these names.
namespace columns {
// steps.csv
inline constexpr const char* kStep = "step";
inline constexpr const char* kStartS = "start_s";
inline constexpr const char* kEndS = "end_s";
inline constexpr const char* kDurationS = "duration_s";
inline constexpr const char* kSlowestRank = "slowest_rank";
inline constexpr const char* kSteps[] = {kStep, kStartS, kEndS, kDurationS, kSlowestRank};

// telemetry.csv: simulated and real runs share these, in this order.
inline constexpr const char* kTimeS = "time_s";
inline constexpr const char* kRank = "rank";
inline constexpr const char* kGpuUtil = "gpu_util";          // nvidia-smi utilization.gpu, 0-100
inline constexpr const char* kSmActive = "sm_active";        // DCGM SM activity, 0-1
inline constexpr const char* kTensorActive = "tensor_active";// DCGM tensor-pipe activity, 0-1
inline constexpr const char* kNicTxBytes = "nic_tx_bytes";   // cumulative bytes sent through the NICs
inline constexpr const char* kTelemetry[] = {kTimeS, kRank, kGpuUtil, kSmActive, kTensorActive, kNicTxBytes, kStep};
// The simulator appends the bytes each rank sent over NVLink (DCGM's NVLink TX
// counter); a real run appends instead the CPU's own use (validate/), and with
// NVML the driver's figures.
inline constexpr const char* kNvlinkTxBytes = "nvlink_tx_bytes";
inline constexpr const char* kTelemetrySim[] = {kNvlinkTxBytes};
inline constexpr const char* kTelemetryReal[] = {"cpu_util"};
inline constexpr const char* kTelemetryNvml[] = {"nvml_util", "sm_clock_mhz", "power_w", "pcie_tx_kBps",
                                                 "pcie_rx_kBps"};
}  // namespace columns

// "a,b,c\n": the header line of a CSV with these columns, then `more`, in order.
std::string csv_header(std::span<const char* const> cols, std::span<const char* const> more = {},
                       std::span<const char* const> more2 = {});

}  // namespace fleetsim
