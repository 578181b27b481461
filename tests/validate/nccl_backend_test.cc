// The NCCL backend's parts that need no GPU: the NVML loader (absent, failing
// and present through a stand-in library), the merge of the driver's telemetry
// columns, the CLI's one-line errors for --backend nccl on a machine without a
// GPU, the runner reporting "no CUDA device" and exiting without hanging, and
// the spin demonstration on the MPI backend (the transport-independent spin,
// watchdog timeout and bounded abort). Tests that need the runner skip when it
// was not built; the GPU runs themselves are scripts/gpu-check.sh.
#include <gtest/gtest.h>

#include "tests/support/command.h"
#include "tests/support/files.h"
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "sim/io/scenario_loader.h"
#include "validate/nccl/nvml.h"
#include "validate/real_record.h"

namespace fs = std::filesystem;

namespace fleetsim::validate {
namespace {

const std::string kBin = FLEETSIM_BINARY;
const std::string kSrc = FLEETSIM_SOURCE_DIR;
const std::string kFakeNvml = FLEETSIM_FAKE_NVML;

std::string runner(const char* name) { return (fs::path(kBin).parent_path() / name).string(); }

int run(const std::string& cmd, std::string* out) {
  fleetsim::test_support::CommandResult c = fleetsim::test_support::run_command(cmd);
  *out = std::move(c.out);
  return c.exit_code;
}

std::string temp(const std::string& name) {
  return (fs::temp_directory_path() / ("fleetsim-nccl-" + std::to_string(::getpid())) / name).string();
}

TEST(NvmlLoader, AbsentLibrarySaysWhy) {
  Nvml n(0, "", "libfleetsim-no-such-nvml.so.1");
  EXPECT_FALSE(n.ok());
  EXPECT_NE(n.why().find("libfleetsim-no-such-nvml.so.1"), std::string::npos) << n.why();
  NvmlSample s;
  EXPECT_FALSE(n.sample(&s));
}

TEST(NvmlLoader, ALibraryThatIsNotNvml) {
  Nvml n(0, "", "libm.so.6");
  EXPECT_FALSE(n.ok());
  EXPECT_NE(n.why().find("not NVML"), std::string::npos) << n.why();
}

TEST(NvmlLoader, ReadsTheStandIn) {
  Nvml n(0, "", kFakeNvml);
  ASSERT_TRUE(n.ok()) << n.why();
  NvmlSample s;
  ASSERT_TRUE(n.sample(&s));
  EXPECT_EQ(s.util_gpu_pct, 100);
  EXPECT_EQ(s.sm_clock_mhz, 1980);
  EXPECT_DOUBLE_EQ(s.power_w, 312.5);  // milliwatts to watts
  EXPECT_EQ(s.pcie_tx_kBps, -1);       // "not supported" stays -1
  EXPECT_EQ(s.pcie_rx_kBps, -1);
  Nvml by_bus(5, "00000000:00:01.0", kFakeNvml);  // the bus id wins over the index
  EXPECT_TRUE(by_bus.ok()) << by_bus.why();
  Nvml cuda_form(5, "0000:00:01.0", kFakeNvml);   // as cudaDeviceGetPCIBusId writes it
  EXPECT_TRUE(cuda_form.ok()) << cuda_form.why();
  Nvml wrong_bus(0, "00000000:99:00.0", kFakeNvml);
  EXPECT_FALSE(wrong_bus.ok());
  EXPECT_NE(wrong_bus.why().find("nvmlDeviceGetHandleByPciBusId_v2(00000000:99:00.0)"), std::string::npos);
  Nvml wrong_index(3, "", kFakeNvml);
  EXPECT_FALSE(wrong_index.ok());
}

TEST(NvmlLoader, InitFailureIsReported) {
  ::setenv("FAKE_NVML_FAIL_INIT", "1", 1);
  Nvml n(0, "", kFakeNvml);
  ::unsetenv("FAKE_NVML_FAIL_INIT");
  EXPECT_FALSE(n.ok());
  EXPECT_EQ(n.why(), "nvmlInit_v2: Driver Not Loaded (9)");
}

// Whatever this machine has, the default library either loads with sane
// figures or says why not; it never crashes the caller.
TEST(NvmlLoader, TheRealLibraryOrAReason) {
  Nvml n(0);
  NvmlSample s;
  if (n.ok()) {
    ASSERT_TRUE(n.sample(&s));
    EXPECT_GE(s.util_gpu_pct, 0);
    EXPECT_LE(s.util_gpu_pct, 100);
  } else {
    EXPECT_FALSE(n.why().empty());
    EXPECT_FALSE(n.sample(&s));
  }
}

// A GPU run's telemetry rows carry five driver figures: they become columns.
TEST(NcclRecord, MergesTheDriversColumns) {
  auto sc = load_scenario_text(R"(
name: one
fleet: {system: dgx-h100, nodes: 1, gpus_per_node: 1}
job: {steps: 2, watchdog: 1s}
step:
  - compute: {name: f, time: 10ms}
  - allreduce: {name: g, group: world, bytes: 4MiB}
)", "one.yaml");
  ASSERT_TRUE(sc.ok());
  auto plan = compile_plan(*sc);
  ASSERT_TRUE(plan.ok());
  const std::string dir = temp("merge");
  fs::remove_all(dir);
  fs::create_directories(dir + "/" + kPartsDir);
  std::ofstream(part_path(dir, 0)) << "S\t1\t100\nS\t2\t200\ndone\t300\n";
  std::ofstream(telemetry_part_path(dir, 0)) << "T\t100000000\t100\t99\t1.000\t0.000\t0\t1\t100\t1980\t312.5\t-1\t-1\n"
                                                "T\t200000000\t0\t99\t0.000\t0.000\t0\t2\n";
  LaunchInfo info;
  info.backend = "nccl";
  auto r = merge_parts(*plan, dir, info);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->result.outcome, Outcome::kCompleted);
  std::ifstream tel(dir + "/telemetry.csv");
  std::string header, row1, row2;
  std::getline(tel, header);
  std::getline(tel, row1);
  std::getline(tel, row2);
  EXPECT_EQ(header, "time_s,rank,gpu_util,sm_active,tensor_active,nic_tx_bytes,step,cpu_util,nvml_util,sm_clock_mhz,"
                    "power_w,pcie_tx_kBps,pcie_rx_kBps");
  EXPECT_EQ(row1, "0.100000000,0,100,1.000,0.000,0,1,99,100,1980,312.5,-1,-1");
  EXPECT_EQ(row2, "0.200000000,0,0,0.000,0.000,0,2,99,-1,-1,-1,-1,-1");  // a row without them
  std::ifstream sj(dir + "/summary.json");
  const auto j = nlohmann::json::parse(sj);
  EXPECT_EQ(j["executor"], "nccl");
  EXPECT_EQ(j["cost_model"], "real (NCCL on CUDA GPUs)");
  fleetsim::test_support::remove_with_empty_parent(dir);
}

// True when this machine has no usable GPU (or the runner was not built).
bool no_gpu() {
  if (!fs::exists(runner("fleetsim-nccl-runner"))) return true;
  std::string out;
  return run(runner("fleetsim-nccl-runner") + " probe", &out) != 0;
}

TEST(NcclBackend, CliSaysWhyInOneLineWithoutAGpu) {
  if (!no_gpu()) GTEST_SKIP() << "this machine has a GPU: scripts/gpu-check.sh covers it";
  const std::string out_dir = temp("cli");
  std::string out;
  int rc = run(kBin + " validate " + kSrc + "/validate/nccl/spin_1gpu.yaml --backend nccl --out " + out_dir, &out);
  EXPECT_EQ(rc, 2) << out;
  EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), 1) << out;
  EXPECT_EQ(out.rfind("--backend nccl: error: fleetsim-nccl-runner: ", 0), 0u) << out;
  EXPECT_FALSE(fs::exists(out_dir));
  rc = run(kBin + " calibrate --backend nccl --ranks 2 --out " + out_dir + ".yaml", &out);
  EXPECT_EQ(rc, 2) << out;
  EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), 1) << out;
  EXPECT_EQ(out.rfind("--backend nccl: error: ", 0), 0u) << out;
  EXPECT_FALSE(fs::exists(out_dir + ".yaml"));
}

TEST(NcclBackend, BadBackendAndOneRankCalibration) {
  std::string out;
  EXPECT_EQ(run(kBin + " validate " + kSrc + "/validate/nccl/spin_1gpu.yaml --backend cuda", &out), 2);
  EXPECT_NE(out.find("unknown backend 'cuda' (expected mpi, nccl or torch)"), std::string::npos) << out;
  EXPECT_EQ(run(kBin + " calibrate --backend nccl --ranks 1", &out), 2);
  EXPECT_NE(out.find("fleetsim-nccl-runner selftest"), std::string::npos) << out;
}

// The runner starts, finds no device, says so and exits 3: alone, in selftest,
// and as two MPI ranks that must agree instead of waiting in NCCL's init.
TEST(NcclBackend, RunnerReportsNoDeviceAndExits) {
  const std::string r = runner("fleetsim-nccl-runner");
  if (!fs::exists(r)) GTEST_SKIP() << "fleetsim-nccl-runner not built (no CUDA/NCCL)";
  if (!no_gpu()) GTEST_SKIP() << "this machine has a GPU";
  std::string out;
  EXPECT_EQ(run(r + " probe", &out), 3);
  EXPECT_EQ(out.rfind("no CUDA device (cudaGetDeviceCount: ", 0), 0u) << out;
  EXPECT_EQ(run(r + " selftest", &out), 3);
  EXPECT_EQ(out.rfind("no CUDA device", 0), 0u) << out;
  EXPECT_EQ(run(runner("fleetsim-gpu-selftest"), &out), 3);  // the self-test alone says the same
  EXPECT_EQ(out.rfind("no CUDA device", 0), 0u) << out;
  const std::string work = temp("norun");
  fs::create_directories(work + "/parts");
  fs::create_directories(work + "/fr");
  const std::string mpirun = std::string("timeout 60 mpirun ") + (::geteuid() == 0 ? "--allow-run-as-root " : "") +
                             "--oversubscribe -np 2 ";
  auto t0 = std::chrono::steady_clock::now();
  const int rc = run(mpirun + r + " run " + kSrc + "/scenarios/validate/crash_2ranks.yaml --work " + work, &out);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_NE(rc, 0);
  EXPECT_NE(rc, 124) << "the ranks hung: " << out;
  EXPECT_LT(s, 30);
  EXPECT_NE(out.find("[rank 0] error: no CUDA device"), std::string::npos) << out;
  EXPECT_NE(out.find("[rank 1] error: no CUDA device"), std::string::npos) << out;
  fs::remove_all(fs::path(work).parent_path());
}

// The spin demonstration on the MPI backend: the same plan walk, watchdog and
// abort as on GPUs, with a CPU spinning for the missing peer.
TEST(NcclBackend, SpinDemoOnTheCpuBackend) {
  if (!fs::exists(runner("fleetsim-mpi-runner"))) GTEST_SKIP() << "fleetsim-mpi-runner not built (no MPI)";
  const std::string out_dir = temp("spin");
  std::string out;
  const int rc = run(kBin + " validate " + kSrc + "/validate/nccl/spin_1gpu.yaml --backend mpi --spin-demo "
                     "--spin-step 3 --timeout 2s --out " + out_dir, &out);
  ASSERT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("spin demo  the real side's hang is by design"), std::string::npos) << out;
  std::ifstream sj(out_dir + "/real/summary.json");
  const auto j = nlohmann::json::parse(sj);
  EXPECT_EQ(j["outcome"], "hang");
  EXPECT_EQ(j["hang"]["step"], 3);
  EXPECT_EQ(j["steps_completed"], 2);
  EXPECT_EQ(j["real"]["mpirun_exit_code"], 134);  // the watchdog's abort, not the launcher's kill
  EXPECT_EQ(j["real"]["killed_by_launcher"], false);
  std::ifstream log(out_dir + "/real/job.log");
  std::string all((std::istreambuf_iterator<char>(log)), std::istreambuf_iterator<char>());
  EXPECT_NE(all.find("Watchdog caught collective operation timeout: WorkNCCL(SeqNum=3, OpType=ALLREDUCE"),
            std::string::npos) << all;
  EXPECT_TRUE(fs::exists(out_dir + "/real/fr/comm_lib_trace_rank_0"));
  // While it spins the rank reads busy with no compute (as nvidia-smi reads a hung NCCL kernel). The
  // runner's own accounting says so exactly: in a collective for the whole of each sample's interval
  // (sm_active 1), in compute for none of it (tensor_active 0). gpu_util on the CPU backend is the
  // scheduler's running-or-runnable time, which a loaded machine skews, so it is only required to
  // show the spin at all (a stalled, sleeping rank reads 0 there).
  std::ifstream tel(out_dir + "/real/telemetry.csv");
  std::string line;
  int spinning = 0;
  double util_sum = 0;
  std::getline(tel, line);
  while (std::getline(tel, line)) {
    const double t = std::atof(line.c_str());
    if (t < 0.5 || t > 2.0) continue;  // well inside the spin (step 3 starts at ~0.1 s)
    std::vector<std::string> c;
    std::stringstream ss(line);
    for (std::string cell; std::getline(ss, cell, ',');) c.push_back(cell);
    ASSERT_GE(c.size(), 7u);
    util_sum += std::atof(c[2].c_str());                  // gpu_util
    EXPECT_DOUBLE_EQ(std::atof(c[3].c_str()), 1.0) << line;  // sm_active
    EXPECT_EQ(std::atof(c[4].c_str()), 0.0) << line;         // tensor_active
    EXPECT_EQ(c[6], "3") << line;                             // step
    ++spinning;
  }
  EXPECT_GE(spinning, 10);
  EXPECT_GT(util_sum, 0.0);
  fs::remove_all(fs::path(out_dir).parent_path());
}

}  // namespace
}  // namespace fleetsim::validate
