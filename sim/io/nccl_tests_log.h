// A reader of nccl-tests output (all_reduce_perf and the other *_perf programs)
// as users keep it: any release's column layout, several tables per file, the
// `# Rank` device lines, NCCL's version line, NCCL_DEBUG=INFO lines and mpirun's
// `[1,0]<stdout>:` prefixes interleaved. Bad or truncated logs give one located
// diagnostic (file:line:col). Used by `fleetsim calibrate --from-nccl-tests`.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "fleetsim/file_read.h"
#include "fleetsim/scenario.h"
#include "fleetsim/status.h"

namespace fleetsim {

// A log with NCCL_DEBUG=INFO of a large job runs to hundreds of MiB.
inline constexpr int64_t kNcclTestsLogMax = 512 * kMiB;

// One size of a table: nccl-tests' S (`size`, bytes), the out-of-place time
// and bandwidths and, where printed as numbers, the in-place ones.
struct NcclTestsRow {
  int line = 0;
  int64_t bytes = 0;
  int64_t count = 0;
  double time_us = 0, algbw_GBps = 0, busbw_GBps = 0;
  std::optional<double> in_place_time_us, in_place_algbw_GBps, in_place_busbw_GBps;
};

// One run of one *_perf program: its header lines and its table.
struct NcclTestsTable {
  std::string file;
  int line = 0;                 // the column header's line
  std::optional<OpKind> op;     // kSend for sendrecv; nullopt: not found, or not modelled
  std::string op_name;          // nccl-tests' name ("all_reduce"), "" if not found
  std::string op_source;        // how the op was found: "program name", "file name", "column layout"
  int ranks = 0;                // the highest `# Rank` + 1 (0: none printed)
  int ranks_listed = 0;         // distinct `# Rank` lines: fewer than `ranks` when some were cut ("...")
  std::vector<std::string> hosts;  // distinct hosts of those lines, in order of appearance
  std::string gpu;              // the device name of the first rank ("NVIDIA H100 80GB HBM3")
  bool mixed_gpus = false;      // ranks name different devices
  int gpus_per_thread = 1;      // `nGpus` of the `# nThread T nGpus G` line: GPUs one host thread drives (-g)
  std::string nccl_version;     // "2.6.4" from `NCCL version 2.6.4+cuda10.2` or nccl-tests' version line
  std::vector<std::string> columns;  // the column header's names ("size", "count", ..., "#wrong")
  std::vector<NcclTestsRow> rows;
  std::optional<double> avg_busbw_GBps;  // `# Avg bus bandwidth`
  int out_of_bounds = -1;       // `# Out of bounds values : N` (-1: not printed)

  int nodes() const { return static_cast<int>(hosts.size()); }
};

// nccl-tests' name of a collective ("all_reduce", "sendrecv", ...) -> OpKind.
std::optional<OpKind> op_from_nccl_tests_name(std::string_view name);
// The reverse ("all_reduce" for kAllReduce, "sendrecv" for kSend).
const char* nccl_tests_name(OpKind op);
// nccl-tests' busbw / algbw for `op` on `ranks` ranks.
double nccl_tests_busbw_factor(OpKind op, int ranks);

// Parses one file's text; `file` names it in diagnostics and, when the text
// does not, may name the collective (`..all_reduce..log`). Errors: one
// diagnostic with the line (and column) of what was wrong.
Result<std::vector<NcclTestsTable>> parse_nccl_tests_log(std::string_view text, const std::string& file);

// Reads and parses `path` (a regular file of at most kNcclTestsLogMax).
Result<std::vector<NcclTestsTable>> read_nccl_tests_log(const std::string& path);

}  // namespace fleetsim
