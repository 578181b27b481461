// Fuzzes the nccl-tests log reader (sim/io/nccl_tests_log.h): any text must
// parse or give one located diagnostic; what parses is walked as calibrate
// walks it (rows, factors, the collective's name).
#include <cstddef>
#include <cstdint>
#include <string>

#include "sim/io/nccl_tests_log.h"
#include "tests/fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text = fleetsim::fuzz::input_text(data, size);
  auto r = fleetsim::parse_nccl_tests_log(text, "all_reduce.log");
  if (!r) {
    if (r.errors().size() != 1 || r.errors()[0].message.empty()) __builtin_trap();
    return 0;
  }
  for (const fleetsim::NcclTestsTable& t : *r) {
    if (t.rows.empty() || t.columns.empty()) __builtin_trap();
    if (t.op) (void)fleetsim::nccl_tests_busbw_factor(*t.op, t.ranks);
    for (const fleetsim::NcclTestsRow& row : t.rows)
      if (!(row.time_us > 0) || row.line <= t.line) __builtin_trap();
  }
  (void)fleetsim::parse_nccl_tests_log(text, "x.log");  // without a name in the file name
  return 0;
}
