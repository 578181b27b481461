// Fuzzes diagnose's job.log reading (sim/diagnose/signals.h): the watchdog-timeout
// lines, crash and exit lines, NCCL network errors and rank prefixes, over the
// input split into lines as the record reader splits job.log.
#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

#include "sim/diagnose/signals.h"
#include "tests/fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::istringstream in(fleetsim::fuzz::input_text(data, size));
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    (void)fleetsim::diagnose::rank_of_line(line);
    (void)fleetsim::diagnose::parse_watchdog_line(line);
    lines.push_back(std::move(line));
  }
  (void)fleetsim::diagnose::find_watchdog_lines(lines);
  (void)fleetsim::diagnose::find_crashed_ranks(lines);
  (void)fleetsim::diagnose::find_network_error_ranks(lines);
  return 0;
}
