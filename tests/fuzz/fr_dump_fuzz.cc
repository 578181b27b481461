// Fuzzes the flight-recorder dump reader (sim/diagnose/record.h: parse_fr_dump)
// on one rank's JSON dump, then diagnoses a record holding that dump (the FR
// analysis), and parses the input's first line as a dump file name.
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>

#include "sim/diagnose/diagnose.h"
#include "sim/diagnose/record.h"
#include "tests/fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text = fleetsim::fuzz::input_text(data, size);
  (void)fleetsim::diagnose::rank_from_file_name(text.substr(0, text.find('\n')));
  fleetsim::Result<fleetsim::diagnose::FrDump> dump = fleetsim::diagnose::parse_fr_dump(text, "rank_0.json", 0);
  if (!dump) return 0;
  fleetsim::diagnose::Record rec;
  rec.dir = "fuzz";
  rec.files.push_back(dump->file);
  const int rank = dump->rank;
  rec.dumps.emplace(rank, std::move(*dump));
  (void)fleetsim::diagnose::format_human(fleetsim::diagnose::diagnose_record(rec));
  return 0;
}
