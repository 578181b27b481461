// The JSON dump readers side by side, for tests: each reader's whole account of a text
// (its root, then each entry as an object of its present slots, keyed by name, with its
// index, and the resets between), so two readers are compared as two JSON trees.
#pragma once

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <utility>

#include <nlohmann/json.hpp>

#include "sim/diagnose/dump_sax.h"
#include "sim/diagnose/dump_simd.h"
#include "sim/diagnose/dump_template.h"
#include "tests/support/same_json.h"

namespace fleetsim::test_support {

enum class JsonReader { kTemplate, kSimd, kSax };

// `reader`'s account of `text`; null where the reader does not take it (`read` says which).
inline nlohmann::json read_with(const std::string& text, JsonReader reader, bool* read = nullptr) {
  using namespace fleetsim::diagnose;
  using nlohmann::json;
  json events = json::array();
  auto on_entry = [&](size_t i, const EntrySlots& s) {
    if (s.deferred) s.deferred->make();  // the shape slots as nodes, as the record reader asks for a new print
    json e = json::object();
    for (size_t k = 0; k < kEntryKeyCount; ++k)
      if (s.present[k]) e[std::string(kEntryKeyNames[k])] = s.find(static_cast<EntryKey>(k)).to_json();
    events.push_back(json::array({i, std::move(e)}));
  };
  auto on_reset = [&] { events.push_back("reset"); };
  if (reader != JsonReader::kSax) {
    std::optional<json> root = reader == JsonReader::kSimd ? read_dump_simd(text, on_entry, on_reset)
                                                           : read_dump_template(text, on_entry, on_reset);
    if (read) *read = root.has_value();
    return root ? json::array({std::move(*root), std::move(events)}) : json();
  }
  DumpSax sax(on_entry, on_reset);
  json::sax_parse(text, &sax);
  if (read) *read = true;
  return json::array({std::move(sax.root()), std::move(events)});
}

// Whether `reader` (simdjson's or the template reader) takes `text` within a bound of
// `max_values` values, and how many entries it handed out meanwhile.
inline std::pair<bool, int> read_within(const std::string& text, JsonReader reader, size_t max_values) {
  int entries = 0;
  const auto on_entry = [&](size_t, const diagnose::EntrySlots&) { ++entries; };
  const auto on_reset = [] {};
  const bool taken = reader == JsonReader::kSimd ? diagnose::read_dump_simd(text, on_entry, on_reset, max_values).has_value()
                                                 : diagnose::read_dump_template(text, on_entry, on_reset, max_values).has_value();
  return {taken, entries};
}

// simdjson's read takes `text` and reads it as the SAX pass does; so does the template
// reader where it takes it (and it must, with `template_takes`).
inline void expect_same(const std::string& text, bool template_takes = false) {
  bool read = false;
  const nlohmann::json fast = read_with(text, JsonReader::kSimd, &read);
  ASSERT_TRUE(read) << "left to the SAX pass: " << text.substr(0, 200);
  const nlohmann::json sax = read_with(text, JsonReader::kSax);
  EXPECT_TRUE(same_tree(fast, sax)) << "fast: " << fast.dump().substr(0, 400) << "\nsax:  " << sax.dump().substr(0, 400);
  const nlohmann::json by_template = read_with(text, JsonReader::kTemplate, &read);
  if (template_takes) {
    EXPECT_TRUE(read) << "the template reader did not take: " << text.substr(0, 200);
  }
  if (read) {
    EXPECT_TRUE(same_tree(by_template, sax))
        << "template: " << by_template.dump().substr(0, 400) << "\nsax:      " << sax.dump().substr(0, 400);
  }
}

}  // namespace fleetsim::test_support
