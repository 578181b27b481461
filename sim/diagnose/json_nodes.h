// A JSON dump's entry values as nodes of a pickle-style arena (pickle_node.h), read in
// place by the record reader (slot_value.h): the store both JSON readers that make nodes
// fill, simdjson's (dump_simd.cc) and the template reader's (dump_template.cc). Strings
// are views into text that outlives the dump's read; each distinct text is one node.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "sim/diagnose/pickle_node.h"

namespace fleetsim::diagnose {

class JsonNodes {
 public:
  void clear() {
    nodes_.clear();
    items_.clear();
    strings_.assign(strings_.size(), StringSlot{});
    string_count_ = 0;
  }
  // Gives the memory back (after a dump far larger than the usual).
  void release() {
    std::vector<pickle_detail::Node>().swap(nodes_);
    std::vector<uint32_t>().swap(items_);
  }
  size_t size() const { return nodes_.size(); }

  // A fresh node at the end, and its id. Made in place in the vector (a node built aside
  // and copied in stalls on its partly written bytes); the reference holds until the next node.
  pickle_detail::Node& push(uint32_t& id) {
    id = static_cast<uint32_t>(nodes_.size());
    return nodes_.emplace_back();
  }
  pickle_detail::Node& node(uint32_t id) { return nodes_[id]; }
  // Room for `count` items in the pool, their first place: a container's items sit together.
  uint32_t reserve_items(size_t count) {
    const size_t first = items_.size();
    items_.resize(first + count);
    return static_cast<uint32_t>(first);
  }
  uint32_t& item(uint32_t at) { return items_[at]; }

  // A string's node: one per distinct text in the dump (up to kMaxStrings of them), as
  // a pickle's memo shares its strings, so what the record reader keeps by node (a
  // string's symbol) is found again for the next entry's equal string.
  uint32_t string_node(std::string_view text);

  // The nodes so far, read in place; the same object all along (the vectors move as they
  // grow: the pointers are set again on each call).
  const pickle_detail::PickleArena& view() {
    view_.nodes = nodes_.data();
    view_.items = items_.data();
    return view_;
  }

 private:
  struct StringSlot {
    std::string_view text;
    uint32_t node = 0;
    bool used = false;
  };
  static constexpr size_t kMaxStrings = 1 << 16;
  std::vector<pickle_detail::Node> nodes_;
  std::vector<uint32_t> items_;
  std::vector<StringSlot> strings_;  // open addressing: a power of two of them, at most half used
  size_t string_count_ = 0;
  pickle_detail::PickleArena view_;
};

}  // namespace fleetsim::diagnose
