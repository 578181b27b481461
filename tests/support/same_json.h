// Two JSON values equal as trees with the same value types all the way down (json's ==
// calls 1 and 1u equal, and -0.0 and 0.0): floats by their bits, objects key by key in
// order. Shared by the JSON readers' unit test and their differential fuzzer.
#pragma once

#include <bit>
#include <cstdint>

#include <nlohmann/json.hpp>

namespace fleetsim::test_support {

inline bool same_tree(const nlohmann::json& a, const nlohmann::json& b) {
  if (a.type() != b.type()) return false;
  if (a.is_number_float()) return std::bit_cast<uint64_t>(a.get<double>()) == std::bit_cast<uint64_t>(b.get<double>());
  if (a.is_array() || a.is_object()) {
    if (a.size() != b.size()) return false;
    for (auto ia = a.begin(), ib = b.begin(); ia != a.end(); ++ia, ++ib) {
      if (a.is_object() && ia.key() != ib.key()) return false;
      if (!same_tree(*ia, *ib)) return false;
    }
    return true;
  }
  return a == b;
}

}  // namespace fleetsim::test_support
