// The SAX pass of dump_sax.h: a JSON tree builder (as nlohmann's own: an object's
// repeated key keeps the last value) that files the top-level entries' values into
// slots instead of trees, dropping the keys nothing reads.
#include "sim/diagnose/dump_sax.h"

namespace fleetsim::diagnose {

using nlohmann::json;

void EntrySlots::clear() {
  if (!arena)  // the SAX pass's values (an arena's slots hold none)
    for (size_t i = 0; i < kEntryKeyCount; ++i)
      if (present[i]) value[i] = json();
  present.fill(false);
  deferred = nullptr;
}

void EntrySlots::from_object(json&& object, EntrySlots& out) {
  out.clear();
  for (auto it = object.begin(); it != object.end(); ++it) {
    const EntryKey k = entry_key(it.key());
    if (k == kEntryKeyCount) continue;
    out.value[k] = std::move(it.value());
    out.present[k] = true;
  }
}

bool DumpSax::key(std::string& k) {
  Level& top = levels_.back();
  if (top.mode == Mode::kEntry) top.slot = entry_key(k);
  else if (top.mode == Mode::kValue) top.key = std::move(k);
  return true;
}

json* DumpSax::target() {
  if (levels_.empty()) return &root_;
  Level& top = levels_.back();
  switch (top.mode) {
    case Mode::kSkip: return nullptr;
    case Mode::kEntry:
      if (top.slot == kEntryKeyCount) return nullptr;
      slots_.present[top.slot] = true;
      return &slots_.value[top.slot];
    case Mode::kValue: break;
  }
  if (top.value->is_array()) {
    top.value->push_back(json());
    return &top.value->back();
  }
  return &(*top.value)[top.key];
}

bool DumpSax::put(json&& v) {
  if (json* at = target()) *at = std::move(v);
  return true;
}

bool DumpSax::open(bool object) {
  if (object && in_entries_ && levels_.size() == 2) {  // an entry: its values go to slots
    slots_.clear();
    levels_.push_back({nullptr, Mode::kEntry, kEntryKeyCount, {}});
    return true;
  }
  const bool entries_list = !object && levels_.size() == 1 && levels_[0].value->is_object() &&
                            levels_[0].key == "entries";
  json* at = target();
  if (!at) {
    levels_.push_back({nullptr, Mode::kSkip, kEntryKeyCount, {}});
    return true;
  }
  *at = object ? json::object() : json::array();
  levels_.push_back({at, Mode::kValue, kEntryKeyCount, {}});
  if (entries_list) {
    in_entries_ = true;
    entry_index_ = 0;
    on_reset_();  // a repeated key: the last list wins, as in the tree
  }
  return true;
}

bool DumpSax::close() {
  if (levels_.back().mode == Mode::kEntry) on_entry_(entry_index_++, slots_);
  if (levels_.size() == 2) in_entries_ = false;
  levels_.pop_back();
  return true;
}

}  // namespace fleetsim::diagnose
