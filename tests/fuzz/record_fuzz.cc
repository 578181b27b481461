// Fuzzes the RunRecord folder reader (sim/diagnose/record.h: read_record) and the
// diagnosis over what it reads. The input's first byte picks the file (its value
// modulo the count of kFiles); the rest is written into an otherwise empty scratch
// folder as that file. Seeds are real files with that byte prepended.
#include <array>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>

#include "sim/diagnose/diagnose.h"
#include "sim/diagnose/record.h"
#include "tests/fuzz/fuzz_support.h"

namespace {

// '0' picks summary.json, '1' model.json, and so on ('0' is 48, a multiple of 6).
constexpr std::array<const char*, 6> kFiles = {"summary.json", "model.json", "steps.csv",
                                               "telemetry.csv", "job.log",   "trace.json"};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  namespace fs = std::filesystem;
  const fs::path dir = fleetsim::fuzz::scratch_dir() / "record";
  std::error_code ec;
  fs::remove_all(dir, ec);
  fs::create_directories(dir);
  const char* name = kFiles[data[0] % kFiles.size()];
  fleetsim::fuzz::write_file(dir / name, fleetsim::fuzz::input_text(data + 1, size - 1));
  fleetsim::Result<fleetsim::diagnose::Record> rec = fleetsim::diagnose::read_record(dir.string());
  if (!rec) return 0;
  const std::unique_ptr<fleetsim::diagnose::HealthyModel> model = fleetsim::diagnose::recorded_model(*rec);
  const fleetsim::diagnose::Diagnosis d = fleetsim::diagnose::diagnose_record(*rec, model.get());
  (void)fleetsim::diagnose::format_human(d);
  (void)fleetsim::diagnose::format_json(d);
  return 0;
}
