// Files from a test: reading one whole (empty if it cannot be read), a path under
// tests/fixtures/, and writing a scratch file in the temp folder.
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

// Writes `text` to <temp folder>/<stem>_<pid><ext> and returns that path.
inline std::string write_temp(const std::string& stem, const std::string& ext, const std::string& text) {
  const std::filesystem::path p = std::filesystem::temp_directory_path() / (stem + "_" + std::to_string(::getpid()) + ext);
  std::ofstream(p, std::ios::binary) << text;
  return p.string();
}

}  // namespace fleetsim::test_support
