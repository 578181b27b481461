// The JSON dump read's first try, before simdjson's (dump_simd.h): the `entries` list
// read straight off the text, each entry matched against the one before it. A dump's
// entries repeat one key order and, key by key, a few values (a group, an op, a state,
// a shape), so most of an entry is found by comparing its bytes with bytes already
// read: the text from one value to the next (`,"profiling_name":`) and each value's
// text against the last two at that place. Where they are equal the value is the same
// and its node is used again; the rest (a sequence number, a time) is read as JSON.
//
// It reads a strict part of JSON only (strings without escapes, ASCII only; nesting up
// to 64 deep) and leaves anything else to simdjson's read, which reads every file it
// takes as this one does. The root's other keys (pg_config, pg_status, version ...) are
// read by simdjson, from a copy of the text with the entries list as `[]`. The file is
// taken only when that copy parses and the entries were read whole; then the text was
// valid JSON (a valid value put in place of a valid value) and every value is the one
// simdjson's read makes, typed as nlohmann types it.
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "sim/diagnose/dump_sax.h"
#include "sim/diagnose/dump_simd.h"

namespace fleetsim::diagnose {

// As read_dump_simd, the root and the entries' slots, but nullopt for any file this
// reader does not take (then `on_entry` may have run for the first entries: the next
// reader must start from a fresh record reader). The slots' arena lives until this
// thread's next call; equal nodes in two entries are equal values (a value met again
// is its node again). The shape slots are made at once: `deferred`'s print is their
// nodes, and make() has nothing left to make.
std::optional<nlohmann::json> read_dump_template(const std::string& text, const DumpSax::EntrySink& on_entry,
                                                 const std::function<void()>& on_reset,
                                                 size_t max_values = kMaxJsonValues);

}  // namespace fleetsim::diagnose
