// diagnose over many ranks' flight-recorder dumps: read (and align) a folder of JSON
// dumps in the shape PyTorch writes, a hung tp x dp job made by the bench itself in a
// temp folder (the founding case: rank 0 alone all-reduces on the world group at the
// end). Items are entries, so the rate reads as entries per second.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "sim/diagnose/diagnose.h"
#include "sim/diagnose/record.h"

namespace fleetsim::diagnose {
namespace {

constexpr int kTp = 8;
constexpr int64_t kBaseNs = 1'790'000'000'000'000'000;

std::string rank_list(int first, int step, int count) {
  std::string out = "[";
  for (int i = 0; i < count; ++i) out += (i ? ", " : "") + std::to_string(first + i * step);
  return out + "]";
}

nlohmann::json entry(int64_t id, const std::string& pg, const std::string& desc, int64_t seq, bool done) {
  return {{"record_id", id},          {"pg_id", pg},
          {"process_group", {pg, desc}}, {"collective_seq_id", seq},
          {"p2p_seq_id", 0},          {"is_p2p", false},
          {"profiling_name", "nccl:all_reduce"}, {"time_created_ns", kBaseNs + id * 250'000'000},
          {"time_discovered_started_ns", 0}, {"time_discovered_completed_ns", 0},
          {"duration_ms", nullptr},   {"input_sizes", {{4096, 1024}}},
          {"output_sizes", {{4096, 1024}}}, {"input_dtypes", {"Float"}},
          {"output_dtypes", {"Float"}}, {"state", done ? "completed" : "scheduled"},
          {"retired", done},          {"timeout_ms", 600000}};
}

// `ranks` dumps of `entries` ring entries each into a fresh temp folder.
std::string make_dumps(int ranks, int entries) {
  const std::string dir = (std::filesystem::temp_directory_path() /
                           ("fleetsim-diagnose-bench-" + std::to_string(ranks) + "x" + std::to_string(entries)))
                              .string();
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const int dp = ranks / kTp;
  for (int r = 0; r < ranks; ++r) {
    const std::string tp = std::to_string(1 + r / kTp), dpn = std::to_string(1 + dp + r % kTp);
    nlohmann::json d = {{"version", "2.10"}, {"rank", r}, {"comm_lib_version", "2.21.5"}};
    d["pg_config"] = {{"0", {{"name", "0"}, {"desc", "default_pg"}, {"ranks", rank_list(0, 1, ranks)}}},
                      {tp, {{"name", tp}, {"desc", "tp"}, {"ranks", rank_list(r / kTp * kTp, 1, kTp)}}},
                      {dpn, {{"name", dpn}, {"desc", "dp"}, {"ranks", rank_list(r % kTp, kTp, dp)}}}};
    nlohmann::json list = nlohmann::json::array();
    for (int64_t i = 0; i < entries; ++i)
      list.push_back(entry(i, i % 2 ? dpn : tp, i % 2 ? "dp" : "tp", i / 2 + 1, true));
    if (r == 0) list.push_back(entry(entries, "0", "default_pg", 1, false));
    d["entries"] = std::move(list);
    std::ofstream(dir + "/rank_" + std::to_string(r) + ".json") << d.dump();
  }
  return dir;
}

// Times `read(dir)` (true when it succeeds) over a folder of range(0) ranks' dumps of range(1) entries.
template <class Read>
void bench_dumps(benchmark::State& state, const Read& read) {
  const int ranks = static_cast<int>(state.range(0)), entries = static_cast<int>(state.range(1));
  const std::string dir = make_dumps(ranks, entries);
  for (auto _ : state)
    if (!read(dir)) state.SkipWithError("the dumps could not be read");
  state.SetItemsProcessed(state.iterations() * ranks * entries);
  std::filesystem::remove_all(dir);
}

// The read alone: every dump parsed into the record.
void BM_ReadDumps(benchmark::State& state) {
  bench_dumps(state, [](const std::string& dir) { return read_record(dir).ok(); });
}
BENCHMARK(BM_ReadDumps)->Args({256, 500})->Unit(benchmark::kMillisecond)->UseRealTime();

// The read, the alignment and the rest of the analysis.
void BM_DiagnoseDumps(benchmark::State& state) {
  bench_dumps(state, [](const std::string& dir) { return diagnose_dir(dir).ok(); });
}
BENCHMARK(BM_DiagnoseDumps)->Args({256, 500})->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
}  // namespace fleetsim::diagnose

BENCHMARK_MAIN();
