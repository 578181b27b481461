#include "sim/diagnose/json_nodes.h"

#include <algorithm>
#include <cstring>

#include "sim/diagnose/dump_sax.h"

namespace fleetsim::diagnose {

namespace {

// A short string's hash: its length and its first and last (up to) 8 bytes, mixed.
uint64_t string_hash(std::string_view s) {
  uint64_t head = 0, tail = 0;
  std::memcpy(&head, s.data(), std::min<size_t>(s.size(), 8));
  if (s.size() > 8) std::memcpy(&tail, s.data() + s.size() - 8, 8);  // overlapping the head where shorter than 16
  const uint64_t h = (head ^ s.size() << 56) * 0x9e3779b97f4a7c15ULL ^ tail * 0xc2b2ae3d27d4eb4fULL;
  return h ^ h >> 29;
}

}  // namespace

uint32_t JsonNodes::string_node(std::string_view text) {
  auto fresh = [&] {
    uint32_t id = 0;
    pickle_detail::Node& n = push(id);
    n.type = pickle_detail::Scalar::kString;
    n.text = text;
    return id;
  };
  if (string_count_ >= kMaxStrings) return fresh();  // a bound for dumps whose every string differs
  if ((string_count_ + 1) * 2 > strings_.size()) {
    std::vector<StringSlot> old(std::max<size_t>(1024, strings_.size() * 2));
    old.swap(strings_);
    for (const StringSlot& s : old) {
      if (!s.used) continue;
      size_t i = string_hash(s.text) & (strings_.size() - 1);
      while (strings_[i].used) i = (i + 1) & (strings_.size() - 1);
      strings_[i] = s;
    }
  }
  size_t i = string_hash(text) & (strings_.size() - 1);
  for (; strings_[i].used; i = (i + 1) & (strings_.size() - 1))
    if (same_text(strings_[i].text, text)) return strings_[i].node;
  const uint32_t id = fresh();
  strings_[i] = StringSlot{text, id, true};
  ++string_count_;
  return id;
}

}  // namespace fleetsim::diagnose
