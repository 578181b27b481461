// The fast JSON read of a flight-recorder dump: simdjson parses the file, and its
// values are handed out as the SAX pass (dump_sax.h) would hand them: each object of
// the top-level `entries` list as EntrySlots (its values as arena nodes, read in place
// as a pickle's are, no JSON tree per entry), everything else as one JSON tree. A file
// simdjson refuses, or reads differently from nlohmann, is left to the SAX pass.
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "sim/diagnose/dump_sax.h"
#include "sim/diagnose/pickle_reader.h"

namespace fleetsim::diagnose {

// Bytes a dump's text should have allocated past its end (its capacity) for simdjson
// to parse it in place, as simdjson's parse of a std::string allows (it reads them,
// whatever they hold); with fewer, read_dump_simd parses a padded copy.
inline constexpr size_t kJsonReadPadding = 64;

// The most values a dump's entries may hold on the simdjson path, as many as a pickle
// may make; past it the SAX pass reads the file.
inline constexpr size_t kMaxJsonValues = PickleLimits{}.max_values;

// Whether the text may hold "-0" as a number (nlohmann: a signed 0; simdjson: an int64
// 0, as for "0"), so that the SAX pass must read it: see dump_simd.cc.
bool json_has_negative_zero(std::string_view text);

// The dump's root (the `entries` list holding only its non-object items, as the SAX
// pass leaves it), with `on_entry` and `on_reset` called as DumpSax calls them (the
// slots' arena and its strings live until this thread's next call); or
// nullopt when the file is not one simdjson reads exactly as nlohmann's parser: any
// simdjson error (syntax, numbers past 64 bits, invalid UTF-8, a BOM, too deep) or a
// "-0" (an integer nlohmann keeps signed). Then neither callback has been called, and
// the SAX pass must read the file (and word its errors). Also nullopt for a dump whose
// entries hold more than `max_values` values: `on_entry` may then have run for its
// first entries, so the SAX pass must start from a fresh reader.
std::optional<nlohmann::json> read_dump_simd(const std::string& text, const DumpSax::EntrySink& on_entry,
                                             const std::function<void()>& on_reset,
                                             size_t max_values = kMaxJsonValues);

}  // namespace fleetsim::diagnose
