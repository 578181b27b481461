// sim/exec depends on sim/core, sim/model, sim/program and include/ only: the
// executors know observers through include/fleetsim/observer.h, never the
// observers that write the RunRecord (sim/observe) or anything above them.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace fleetsim {
namespace {

namespace fs = std::filesystem;

// The project headers a file may include, by folder prefix.
const std::vector<std::string> kExecMayInclude = {"fleetsim/", "sim/core/", "sim/model/", "sim/program/",
                                                  "sim/exec/"};

TEST(ExecLayering, IncludesOnlyCoreModelProgramAndPublicHeaders) {
  const fs::path dir = fs::path(FLEETSIM_SOURCE_DIR) / "sim" / "exec";
  int files = 0;
  for (const auto& entry : fs::directory_iterator(dir)) {
    const std::string ext = entry.path().extension().string();
    if (ext != ".h" && ext != ".cc") continue;
    ++files;
    std::ifstream in(entry.path());
    std::string line;
    for (int n = 1; std::getline(in, line); ++n) {
      if (line.rfind("#include \"", 0) != 0) continue;  // <system> headers are fine
      const std::string path = line.substr(10, line.find('"', 10) - 10);
      bool allowed = false;
      for (const std::string& prefix : kExecMayInclude) allowed = allowed || path.rfind(prefix, 0) == 0;
      EXPECT_TRUE(allowed) << entry.path().filename().string() << ":" << n << " includes " << path;
    }
  }
  EXPECT_GT(files, 0);
}

}  // namespace
}  // namespace fleetsim
