// Files from a test: reading one whole (empty if it cannot be read), a path under
// tests/fixtures/, and scratch files that do not outlive the test process.
#pragma once

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <unistd.h>

namespace fleetsim::test_support {

inline std::string slurp(const std::filesystem::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// `rel` under the source tree's tests/fixtures/.
inline std::string fixture_path(const std::string& rel) {
  return std::string(FLEETSIM_SOURCE_DIR) + "/tests/fixtures/" + rel;
}

// This test process's scratch folder, <temp folder>/fleetsim-tests-<pid>: made on first
// use, removed with everything in it when the process exits.
inline const std::filesystem::path& scratch_dir() {
  static const struct Scratch {
    std::filesystem::path path =
        std::filesystem::temp_directory_path() / ("fleetsim-tests-" + std::to_string(::getpid()));
    Scratch() { std::filesystem::create_directories(path); }
    ~Scratch() {
      std::error_code ec;
      std::filesystem::remove_all(path, ec);
    }
  } scratch;
  return scratch.path;
}

// Writes `text` to <scratch folder>/<stem><ext> and returns that path.
inline std::string write_temp(const std::string& stem, const std::string& ext, const std::string& text) {
  const std::filesystem::path p = scratch_dir() / (stem + ext);
  std::ofstream(p, std::ios::binary) << text;
  return p.string();
}

// Removes `path` and everything in it, then its folder if that is left empty (a test's
// per-process folder once its last run is gone).
inline void remove_with_empty_parent(const std::filesystem::path& path) {
  std::error_code ec;
  std::filesystem::remove_all(path, ec);
  std::filesystem::remove(path.parent_path(), ec);  // fails, harmlessly, while it holds anything
}

}  // namespace fleetsim::test_support
