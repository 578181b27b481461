// Fuzzes the pickle reader (sim/diagnose/pickle_reader.h) on any bytes, with and
// without the protocol header a dump starts with, then reads what it accepts as a
// flight-recorder dump (sim/diagnose/record.h: parse_fr_dump) and prints the tree.
#include <cstddef>
#include <cstdint>
#include <string>

#include "sim/diagnose/pickle_reader.h"
#include "sim/diagnose/record.h"
#include "tests/fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string bytes = fleetsim::fuzz::input_text(data, size);
  fleetsim::Result<nlohmann::json> tree = fleetsim::diagnose::read_pickle(bytes, "rank_0.pkl");
  if (tree) (void)tree->dump();
  // The same bytes as the body of a protocol 2 pickle, so every input reaches the opcodes.
  const std::string framed = std::string("\x80\x02", 2) + bytes;
  fleetsim::Result<nlohmann::json> framed_tree = fleetsim::diagnose::read_pickle(framed, "rank_0.pkl");
  if (framed_tree) (void)framed_tree->dump();
  (void)fleetsim::diagnose::parse_fr_dump(bytes, "rank_0.pkl", 0);
  return 0;
}
