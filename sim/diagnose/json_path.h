// Where a value sits in a JSON dump's text: a path of keys and indices (as the record
// reader walks a dump), the byte it starts at, and the path as an error message names it.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace fleetsim::diagnose {

// A step of a JSON path: an object key, or an array index when key is empty.
struct PathStep {
  std::string key;
  size_t index = 0;
};
using JsonPath = std::vector<PathStep>;

// The offset of the value at `path` in `t` (text known to parse); as deep as it can
// follow (an escaped key is not matched: the enclosing value's offset comes back).
size_t offset_of(const std::string& t, const JsonPath& path);

// The path as a message names it: "entries[3].input_sizes".
std::string path_text(const JsonPath& path);

}  // namespace fleetsim::diagnose
