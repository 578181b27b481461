// The checked status of one CUDA, NCCL or NVML call, with where it was made:
// ok(), or a failure that reads "file:line: call: CUDA error: words (code)".
// CPU-only and header-only (no CUDA headers, nothing to link), so the messages
// are unit-tested without a GPU; the per-library macros that make a GpuStatus
// are in gpu_check.h (CUDA, NCCL) and nvml.cc (NVML).
#pragma once

#include <cstdio>
#include <cstdlib>
#include <string>

namespace fleetsim::validate {

// Where a call was made: its library ("CUDA"), its text as written, file and line.
struct GpuCallSite {
  const char* library;
  const char* call;
  const char* file;
  int line;
};

// The path of `file` from its last "validate/" folder on (its name alone without one).
inline std::string short_source_path(const std::string& file) {
  const size_t v = file.rfind("validate/");
  if (v != std::string::npos && (v == 0 || file[v - 1] == '/')) return file.substr(v);
  const size_t slash = file.rfind('/');
  return slash == std::string::npos ? file : file.substr(slash + 1);
}

// [[nodiscard]]: a status made and dropped is a warning (an error under -Werror).
class [[nodiscard]] GpuStatus {
 public:
  // `words`: the library's error string for `code` (not read when ok).
  GpuStatus(bool ok, long code, const char* words, const GpuCallSite& site)
      : ok_(ok), code_(code), words_(words), site_(site) {}

  bool ok() const { return ok_; }
  long code() const { return code_; }

  // "words (code)", e.g. "invalid device ordinal (101)"; "" when ok.
  std::string describe() const {
    if (ok_) return "";
    const bool have = words_ != nullptr && *words_ != '\0';
    return std::string(have ? words_ : "unknown error") + " (" + std::to_string(code_) + ")";
  }

  // "validate/nccl/device.cc:12: cudaSetDevice(d): CUDA error: invalid device
  // ordinal (101)"; "" when ok.
  std::string message() const {
    if (ok_) return "";
    return short_source_path(site_.file) + ":" + std::to_string(site_.line) + ": " + site_.call + ": " +
           site_.library + " error: " + describe();
  }

  // When failed: one line "<prefix>warning: <message>" on stderr. Returns ok().
  bool warn(const std::string& prefix = "") const {
    if (!ok_) std::fprintf(stderr, "%swarning: %s\n", prefix.c_str(), message().c_str());
    return ok_;
  }

  // When failed: one line "<prefix>fatal: <message>; aborting" on stderr, then
  // std::abort(), for a call after which the process cannot go on.
  void or_abort(const std::string& prefix = "") const {
    if (ok_) return;
    std::fprintf(stderr, "%sfatal: %s; aborting\n", prefix.c_str(), message().c_str());
    std::fflush(stderr);
    std::abort();
  }

 private:
  bool ok_;
  long code_;
  const char* words_;
  GpuCallSite site_;
};

}  // namespace fleetsim::validate
