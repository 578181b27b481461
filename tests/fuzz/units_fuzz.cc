// Fuzzes the unit parsers of scenario files and the CLI (sim/io/units.h and
// scenario_loader.h): decimals, durations, sizes, percentages, bandwidths and
// comma-separated lists. Each must return a value or a diagnostic, never crash.
#include <cstddef>
#include <cstdint>
#include <string>

#include "sim/io/scenario_loader.h"
#include "sim/io/units.h"
#include "tests/fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text = fleetsim::fuzz::input_text(data, size);
  fleetsim::Decimal d;
  if (fleetsim::parse_decimal(text, &d) > 0) (void)d.to_double();
  (void)fleetsim::parse_duration(text);
  (void)fleetsim::parse_bytes(text);
  (void)fleetsim::parse_percent(text);
  (void)fleetsim::parse_bandwidth_GBps(text);
  (void)fleetsim::split_list(text);
  return 0;
}
