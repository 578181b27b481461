// Fuzzes the three JSON dump readers against each other: where simdjson's read
// (dump_simd.h) takes a dump, every entry it files (parse_entry, record_entry.cc) must
// equal the entry the SAX pass (dump_sax.h) files from the same text, field by field
// and fact by fact, and the two must leave the same root and the same error; so must
// the template reader's (dump_template.h) where it takes the dump, and it may take only
// what simdjson's read takes. The simdjson read leaves an entry's shape as a print of
// the parse (DeferredShape), made into nodes only for a print new to the dump, and the
// template reader reuses a value's node where its text repeats, so this also checks
// that equal prints are equal values. A difference aborts, which libFuzzer reports as a crash.
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/diagnose/dump_reader.h"
#include "sim/diagnose/dump_sax.h"
#include "sim/diagnose/dump_simd.h"
#include "sim/diagnose/dump_template.h"
#include "sim/diagnose/record.h"
#include "tests/fuzz/fuzz_support.h"
#include "tests/support/same_json.h"

namespace {

using nlohmann::json;
using namespace fleetsim::diagnose;

[[noreturn]] void differ(const char* what, size_t index = 0, const char* reader = "the simdjson read") {
  std::fprintf(stderr, "json_readers: %s and the SAX pass differ: %s (entry %zu)\n", reader, what, index);
  std::abort();
}

using fleetsim::test_support::same_tree;

struct Read {
  std::optional<json> root;
  std::vector<FrEntry> entries;
  std::optional<fleetsim::Diagnostic> error;
};

void compare(const Read& fast, const Read& sax, const char* reader) {
  auto fail = [reader](const char* what, size_t index = 0) { differ(what, index, reader); };
  if (fast.error.has_value() != sax.error.has_value()) fail("one reader found an error");
  if (fast.error && fast.error->to_string() != sax.error->to_string()) fail("the errors' texts");
  if (!same_tree(*fast.root, *sax.root)) fail("the roots");
  if (fast.entries.size() != sax.entries.size()) fail("the entry counts");
  for (size_t i = 0; i < fast.entries.size(); ++i) {
    const FrEntry& a = fast.entries[i];
    const FrEntry& b = sax.entries[i];
    if (a.collective_seq_id != b.collective_seq_id || a.p2p_seq_id != b.p2p_seq_id) fail("sequence numbers", i);
    if (a.time_created_ns != b.time_created_ns || a.time_discovered_started_ns != b.time_discovered_started_ns ||
        a.time_discovered_completed_ns != b.time_discovered_completed_ns)
      fail("times", i);
    if (a.is_p2p != b.is_p2p || a.retired != b.retired) fail("flags", i);
    const std::optional<double> da = a.duration_ms(), db = b.duration_ms();
    if (da.has_value() != db.has_value() || (da && std::bit_cast<uint64_t>(*da) != std::bit_cast<uint64_t>(*db)))
      fail("durations", i);
    // Facts are interned by content: equal facts are one object.
    if (&a.shape() != &b.shape()) fail("shapes", i);
    if (&a.group() != &b.group()) fail("groups", i);
    if (&a.call() != &b.call()) fail("calls", i);
    if (&a.facts() != &b.facts()) fail("facts", i);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text = fleetsim::fuzz::input_text(data, size);
  const std::string file = "rank_0.json";
  auto filing = [](Read& out, record_detail::DumpReader& rd) {
    return [&out, &rd](size_t i, const EntrySlots& e) { out.entries.push_back(record_detail::parse_entry(e, rd, i)); };
  };
  Read by_template;
  {
    record_detail::DumpReader rd{&text, file, std::nullopt, {}};
    by_template.root = read_dump_template(text, filing(by_template, rd), [&] { by_template.entries.clear(); });
    by_template.error = rd.error;
  }
  Read fast;
  {
    record_detail::DumpReader rd{&text, file, std::nullopt, {}};
    fast.root = read_dump_simd(text, filing(fast, rd), [&] { fast.entries.clear(); });
    if (!fast.root) {
      if (by_template.root) differ("the template reader took a text simdjson's read refused", 0, "the template reader");
      return 0;  // left to the SAX pass: nothing to compare
    }
    fast.error = rd.error;
  }
  Read sax;
  record_detail::DumpReader rd{&text, file, std::nullopt, {}};
  DumpSax pass(filing(sax, rd), [&] { sax.entries.clear(); });
  try {
    json::sax_parse(text, &pass);
  } catch (const json::exception&) {
    differ("the SAX pass refused a text the simdjson read took");
  }
  sax.root = std::move(pass.root());
  sax.error = rd.error;
  compare(fast, sax, "the simdjson read");
  if (by_template.root) compare(by_template, sax, "the template reader");
  return 0;
}
