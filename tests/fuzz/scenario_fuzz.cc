// Fuzzes the scenario loader (sim/io/scenario_loader.h) on YAML text: every
// input must load or give located diagnostics. A `--set` override is tried on
// what loads, so the override path is covered too.
#include <cstddef>
#include <cstdint>
#include <string>

#include "sim/io/scenario_loader.h"
#include "tests/fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text = fleetsim::fuzz::input_text(data, size);
  fleetsim::Result<fleetsim::Scenario> s = fleetsim::load_scenario_text(text, "fuzz.yaml");
  if (s) (void)fleetsim::load_scenario_text(text, "fuzz.yaml", {"job.steps=3"});
  return 0;
}
