// Reads a pickle (Python's pickle format) holding plain data into a JSON value
// tree: PyTorch's flight-recorder dumps as its C++ pickler writes them (protocol 2)
// and as Python's pickle re-writes them (protocols 2 to 5). Opcodes that name or
// build Python objects are refused; every length, count and depth is bounded, and
// every error names the file and the byte offset of the opcode at fault.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "fleetsim/status.h"
#include "sim/diagnose/dump_sax.h"

namespace fleetsim::diagnose {

// Bounds on one pickle. A pickle past any of them is refused, with its byte offset.
struct PickleLimits {
  size_t max_depth = 100;             // containers nested (open MARKs, or in the tree)
  size_t max_values = size_t{1} << 25;  // values made (each opcode makes at most one)
  size_t max_memo = size_t{1} << 23;    // memo entries (BINPUT, LONG_BINPUT, MEMOIZE)
  // The tree a memo reference copies out may not outgrow the file by more than
  // this factor (plus a fixed 16 MiB): each value counts 16, each string byte 1.
  uint64_t expand_factor = 64;
};

// True when `head` (a file's first bytes) starts as a pickle of protocol 2 to 5 does.
bool looks_like_pickle(std::string_view head);

// The value a pickle holds, as JSON: a dict is an object (keys that are numbers,
// booleans or None become their text), a list, tuple, set or frozenset an array,
// bytes a binary value, None null. Errors are one Diagnostic at `file`, its message
// starting "byte N: " (N counts from 0, as `python -m pickletools` numbers bytes).
Result<nlohmann::json> read_pickle(std::string_view bytes, const std::string& file,
                                   const PickleLimits& limits = {});

// As read_pickle, but when the pickle holds a dict whose `list_key` is a list (or
// tuple), its items go to `on_item` one at a time, in order, each copied out just
// before the call and let go after it, and the dict comes back without that key: a
// dump's entries never sit in memory as one tree. Same bounds, same errors.
using PickleItemSink = std::function<void(size_t index, nlohmann::json&& item)>;
Result<nlohmann::json> read_pickle_streaming(std::string_view bytes, const std::string& file,
                                             std::string_view list_key, const PickleItemSink& on_item,
                                             const PickleLimits& limits = {});

// As read_pickle_streaming, but each item that is a dict goes to `on_entry` as the
// slots of the keys an entry is read by (dump_sax.h), filled straight from the pickle's
// values: no tree is built for an item, only for the values of those keys. Items of
// other kinds are checked and dropped. Same bounds, same errors, in the same order.
using PickleEntrySink = std::function<void(size_t index, const EntrySlots& slots)>;
Result<nlohmann::json> read_pickle_entries(std::string_view bytes, const std::string& file,
                                           std::string_view list_key, const PickleEntrySink& on_entry,
                                           const PickleLimits& limits = {});

}  // namespace fleetsim::diagnose
