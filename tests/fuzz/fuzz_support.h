// Shared by the libFuzzer targets: the input as a string, and a private scratch
// folder for the readers that take a path (one per fuzzer process, reused by
// every input and removed at exit).
#pragma once

#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

namespace fleetsim::fuzz {

inline std::string input_text(const uint8_t* data, size_t size) {
  return std::string(reinterpret_cast<const char*>(data), size);
}

// The folder; created on first use under $TMPDIR (or /tmp).
inline const std::filesystem::path& scratch_dir() {
  static const std::filesystem::path dir = [] {
    const char* tmp = std::getenv("TMPDIR");
    std::string templ = std::string(tmp && *tmp ? tmp : "/tmp") + "/fleetsim-fuzz-XXXXXX";
    if (::mkdtemp(templ.data()) == nullptr) std::abort();
    static const std::string to_remove = templ;
    std::atexit([] {
      std::error_code ec;
      std::filesystem::remove_all(to_remove, ec);
    });
    return std::filesystem::path(templ);
  }();
  return dir;
}

// Writes `text` to `path` (replacing it), aborting if it cannot: a fuzzer that
// silently stops writing would stop testing anything.
inline void write_file(const std::filesystem::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  if (!out) std::abort();
}

}  // namespace fleetsim::fuzz
