// The checked status of CUDA, NCCL and NVML calls (validate/nccl/gpu_status.h),
// without a GPU: its one-line messages (file:line, the call, the library's
// words and code), warnings, the fatal path, and NVML's quiet "not supported".
#include "validate/nccl/gpu_status.h"

#include <gtest/gtest.h>

#include <string>

#include "validate/nccl/nvml.h"

namespace fleetsim::validate {
namespace {

const GpuCallSite kSite{"CUDA", "cudaSetDevice(device_)", "/home/ci/src/fleetsim/validate/nccl/nccl_transport.cc", 57};

TEST(GpuStatus, OkSaysNothing) {
  const GpuStatus s(true, 0, nullptr, kSite);
  EXPECT_TRUE(s.ok());
  EXPECT_EQ(s.describe(), "");
  EXPECT_EQ(s.message(), "");
  ::testing::internal::CaptureStderr();
  EXPECT_TRUE(s.warn("[rank 0] "));
  s.or_abort();  // returns
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "");
}

TEST(GpuStatus, AFailureNamesFileLineCallLibraryWordsAndCode) {
  const GpuStatus s(false, 101, "invalid device ordinal", kSite);
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.code(), 101);
  EXPECT_EQ(s.describe(), "invalid device ordinal (101)");
  EXPECT_EQ(s.message(),
            "validate/nccl/nccl_transport.cc:57: cudaSetDevice(device_): CUDA error: invalid device ordinal (101)");
  const GpuStatus nccl(false, 2, "unhandled system error", {"NCCL", "ncclCommInitRank(&world_, n, id, r)", "x.cc", 9});
  EXPECT_EQ(nccl.message(), "x.cc:9: ncclCommInitRank(&world_, n, id, r): NCCL error: unhandled system error (2)");
  const GpuStatus wordless(false, 999, nullptr, kSite);
  EXPECT_EQ(wordless.describe(), "unknown error (999)");
}

TEST(GpuStatus, SourcePathsAreShortened) {
  EXPECT_EQ(short_source_path("/a/b/validate/nccl/device.cc"), "validate/nccl/device.cc");
  EXPECT_EQ(short_source_path("validate/nccl/device.cc"), "validate/nccl/device.cc");
  EXPECT_EQ(short_source_path("/a/b/notvalidate/device.cc"), "device.cc");
  EXPECT_EQ(short_source_path("/a/b/device.cc"), "device.cc");
  EXPECT_EQ(short_source_path("device.cc"), "device.cc");
}

TEST(GpuStatus, WarnWritesOneLine) {
  const GpuStatus s(false, 4, "invalid argument", {"NCCL", "ncclCommDestroy(c)", "/r/validate/nccl/n.cc", 3});
  ::testing::internal::CaptureStderr();
  EXPECT_FALSE(s.warn("[rank 3] "));
  EXPECT_EQ(::testing::internal::GetCapturedStderr(),
            "[rank 3] warning: validate/nccl/n.cc:3: ncclCommDestroy(c): NCCL error: invalid argument (4)\n");
}

TEST(GpuStatusDeathTest, OrAbortSaysWhyAndAborts) {
  const GpuStatus s(false, 700, "an illegal memory access was encountered", kSite);
  EXPECT_DEATH(s.or_abort("[rank 1] "),
               "\\[rank 1\\] fatal: validate/nccl/nccl_transport.cc:57: cudaSetDevice\\(device_\\): CUDA error: an "
               "illegal memory access was encountered \\(700\\); aborting");
}

// NVML's "not supported" (the stand-in's PCIe counters) leaves the figure at -1
// without an error; the figures it has come with none.
TEST(GpuStatus, NvmlNotSupportedIsQuiet) {
  Nvml n(0, "", FLEETSIM_FAKE_NVML);
  ASSERT_TRUE(n.ok()) << n.why();
  NvmlSample s;
  std::string error = "stale";
  ASSERT_TRUE(n.sample(&s, &error));
  EXPECT_EQ(error, "");
  EXPECT_EQ(s.util_gpu_pct, 100);
  EXPECT_EQ(s.pcie_tx_kBps, -1);
}

}  // namespace
}  // namespace fleetsim::validate
