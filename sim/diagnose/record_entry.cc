// Reads one flight-recorder entry from its slots (dump_sax.h: a pickle's or simdjson's
// arena nodes read in place, or the SAX pass's JSON values) into an FrEntry: its numbers,
// texts as symbols, and the facts entries share (group, shapes, the call its frames
// name) interned, each by one set of rules whichever reader made the slots.
#include <algorithm>
#include <bit>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/diagnose/dump_reader.h"
#include "sim/diagnose/dump_sax.h"
#include "sim/diagnose/json_path.h"
#include "sim/diagnose/record.h"
#include "sim/io/units.h"

namespace fleetsim::diagnose {

namespace record_detail {

// A slot value as a symbol: a string as it is (interned from its view), null as "", else
// its JSON (an integer's, the plain decimal nlohmann writes, without building the JSON).
Sym as_sym(const SlotValue& v) {
  if (v.is_string()) return Sym(v.get_string());
  if (v.is_null()) return Sym("");
  if (v.is_number_integer()) {
    char buf[24];
    const std::to_chars_result r = v.is_number_unsigned() ? std::to_chars(buf, buf + sizeof buf, v.get_uint())
                                                          : std::to_chars(buf, buf + sizeof buf, v.get_int());
    return Sym(std::string_view(buf, static_cast<size_t>(r.ptr - buf)));
  }
  return Sym(v.dump());
}

}  // namespace record_detail

namespace {

using nlohmann::json;
using namespace record_detail;

// What a frame says to the call it is part of (read_frames).
struct FrameFacts {
  Sym name;
  Sym site;      // "file:line" in the job's code, or empty
  Sym when;      // the condition it carries, or empty
  int64_t step = -1;
};

// One dimension of a tensor's shape: a non-negative integer (or one in a string);
// anything else (a float, a negative, a value past int64) reads as unknown.
std::optional<int64_t> dim_of(const SlotValue& d) {
  if (d.is_number_unsigned()) {
    const uint64_t u = d.get_uint();
    return u <= static_cast<uint64_t>(INT64_MAX) ? std::optional<int64_t>(static_cast<int64_t>(u)) : std::nullopt;
  }
  if (d.is_number_integer()) {
    const int64_t v = d.get_int();
    return v >= 0 ? std::optional<int64_t>(v) : std::nullopt;
  }
  if (d.is_string()) {
    const std::optional<int64_t> v = parse_int<int64_t>(d.get_string());
    return v && *v >= 0 ? v : std::nullopt;
  }
  return std::nullopt;
}

// The element count of a list of shapes, saturating at INT64_MAX; shapes with an
// unreadable dimension count as 0.
int64_t numel_of(const SlotValue& sizes) {
  int64_t total = 0;
  if (!sizes.is_array()) return 0;
  for (size_t t = 0; t < sizes.size(); ++t) {
    const SlotValue tensor = sizes.item(t);
    if (!tensor.is_array()) continue;
    int64_t n = 1;
    for (size_t i = 0; i < tensor.size(); ++i) {
      const std::optional<int64_t> dim = dim_of(tensor.item(i));
      if (!dim) {
        n = 0;
        break;
      }
      if (__builtin_mul_overflow(n, *dim, &n)) n = INT64_MAX;
    }
    if (__builtin_add_overflow(total, n, &total)) total = INT64_MAX;
  }
  return total;
}

bool looks_like_condition(std::string_view s) {
  return s.rfind("when", 0) == 0 || s.find("==") != std::string_view::npos || s.find('%') != std::string_view::npos;
}

// "file:line" of a frame in the job's own code, or "": frames inside torch, an
// installed package or the Python runtime ("<string>") are the framework's.
std::string job_site(const SlotValue& f) {
  if (!f.is_object()) return "";
  const SlotValue name = f.find("filename");
  const std::string file = name ? as_sym(name).str() : "";
  const SlotValue line = f.find("line");
  if (file.empty() || file[0] == '<' || file.find("/torch/") != std::string::npos ||
      file.find("-packages/") != std::string::npos || !line || !line.is_number_integer() || line.get_int() <= 0)
    return "";
  return file.substr(file.find_last_of('/') + 1) + ":" + std::to_string(line.get_int());
}

// What frame `f` says: its name (a dict's "name", else the value as text), its job
// site, the step of a "step N" name, the condition a name carries.
FrameFacts frame_facts(const SlotValue& f) {
  FrameFacts out;
  const SlotValue name_value = f.is_object() ? f.find("name") : f;
  const std::string name = name_value ? as_sym(name_value).str() : "";
  out.name = Sym(name);
  out.site = Sym(job_site(f));
  if (name.rfind("step ", 0) == 0 && name.size() > 5 && name.find_first_not_of("0123456789", 5) == std::string::npos)
    out.step = std::strtoll(name.c_str() + 5, nullptr, 10);
  if (looks_like_condition(name)) {
    size_t skip = name.rfind("when", 0) == 0 ? 4 : 0;
    while (skip < name.size() && (name[skip] == ':' || name[skip] == ' ')) ++skip;
    out.when = Sym(name.substr(skip));
  }
  return out;
}

// The call a frames list names: the first frame's name, and the first site, step and
// condition any frame carries.
FrCall read_frames(const SlotValue& frames) {
  FrCall out;
  if (!frames || !frames.is_array()) return out;
  for (size_t i = 0; i < frames.size(); ++i) {
    const FrameFacts facts = frame_facts(frames.item(i));
    if (i == 0) out.op_name = facts.name;
    if (out.site.empty()) out.site = facts.site;
    if (out.step < 0) out.step = facts.step;
    if (out.when.empty()) out.when = facts.when;
  }
  return out;
}

// An entry's slot as a symbol: a string as it is, null or absent as "", else its JSON.
Sym slot_sym(const EntrySlots& e, EntryKey k, DumpReader& rd) {
  const SlotValue v = e.find(k);
  return v ? rd.sym(v) : Sym("");
}

bool slot_bool(const EntrySlots& e, EntryKey k) {
  const SlotValue v = e.find(k);
  if (!v) return false;
  if (v.is_boolean()) return v.get_bool();
  if (v.is_string()) return v.get_string() == "true" || v.get_string() == "True" || v.get_string() == "1";
  return v.is_number() && v.get_double() != 0;
}

// A list-valued slot as canonical JSON text ("[]" when absent), interned.
Sym slot_text(const EntrySlots& e, EntryKey k) {
  const SlotValue v = e.find(k);
  return v ? Sym(v.dump()) : Sym("[]");
}

// An entry's shape tuple. The four slots' values are looked up in `cache` first, so
// the JSON text is dumped and interned once per distinct shape, not once per entry;
// the text is the same either way. The SAX pass's JSON values are copied into the
// cache; arena nodes (`by_view`) outlive the dump's read and are kept as views.
FrShapeId shape_of(const EntrySlots& e, ShapeCache& cache, bool by_view) {
  std::array<SlotValue, 4> slots;
  size_t h = 0;
  for (size_t i = 0; i < kShapeKeys.size(); ++i) {
    slots[i] = e.find(kShapeKeys[i]);
    h = hash_value(slots[i], h);
  }
  for (const ShapeCache::Cached& c : cache.buckets[h]) {
    bool same = true;
    for (size_t i = 0; same && i < kShapeKeys.size(); ++i) same = same_value(c.view[i], slots[i]);
    if (same) return c.id;
  }
  FrShape shape{slot_text(e, kKeyInputSizes), slot_text(e, kKeyOutputSizes), slot_text(e, kKeyInputDtypes),
                slot_text(e, kKeyOutputDtypes), 0};
  if (slots[0]) shape.input_numel = numel_of(slots[0]);
  const FrShapeId id(shape);
  if (cache.buckets.size() > 4096) cache.buckets.clear();  // a bound for dumps whose every entry differs
  ShapeCache::Cached fresh{nullptr, slots, id};
  if (!by_view) {
    fresh.owned = std::make_unique<std::array<json, 4>>();
    for (size_t i = 0; i < kShapeKeys.size(); ++i)
      if (slots[i]) fresh.view[i] = SlotValue(&((*fresh.owned)[i] = slots[i].to_json()));
  }
  cache.buckets[h].push_back(std::move(fresh));
  return id;
}

// Writes a print of pickle node `id` that tells the JSON it dumps to: a word of type
// and size, then an integer's or float's bits, a string's symbol (kept by node: the
// pickler memoizes strings), a list's items. False for a dict, bytes, or a print past
// `out`'s room (shape_of then hashes and compares).
bool print_shape_node(const pickle_detail::PickleArena& arena, uint32_t id, DumpReader& rd, PrintWords& out) {
  using pickle_detail::Kind;
  using pickle_detail::Scalar;
  const pickle_detail::Node& n = arena.node(id);
  if (n.kind == Kind::kDict) return false;
  if (n.kind != Kind::kScalar) {  // a list, tuple or set dumps as a JSON list
    if (!out.put(PrintWords::tagged(1, n.count))) return false;
    for (uint32_t item : arena.items_of(n))
      if (!print_shape_node(arena, item, rd, out)) return false;
    return true;
  }
  switch (n.type) {
    case Scalar::kNull: return out.put(PrintWords::tagged(2, 0));
    case Scalar::kBool: return out.put(PrintWords::tagged(3, n.flag));
    case Scalar::kInt:
    case Scalar::kUint:
    case Scalar::kFloat: return out.put(PrintWords::tagged(4 + static_cast<uint64_t>(n.type), 0)) && out.put(n.num.u);
    case Scalar::kString: return out.put(PrintWords::tagged(16, rd.sym(SlotValue(&arena, id)).id()));  // past the number tags
    case Scalar::kBytes: return false;
  }
  return false;
}

// A pickle entry's shape by the print of its four slots (print_shape_node): one walk
// of the nodes, hashed and compared as words; shape_of for what is not printed.
FrShapeId pickle_shape_of(const EntrySlots& e, DumpReader& rd) {
  std::array<uint64_t, 256>& buf = rd.nodes.shape_print;
  PrintWords out{buf.data(), buf.data() + buf.size()};
  for (EntryKey k : kShapeKeys) {
    const SlotValue v = e.find(k);
    if (!(v ? print_shape_node(*v.arena(), v.node_id(), rd, out) : out.put(0))) return shape_of(e, rd.nodes.shapes, true);
  }
  const std::span<const uint64_t> print(buf.data(), out.at);
  const size_t hash = print_hash(print);
  PrintTable<FrShapeId>& known = rd.nodes.shapes_by_print;
  if (const FrShapeId* id = known.find(print, hash)) return *id;
  if (known.size() > 65536) known.clear();  // a bound for dumps whose every entry differs
  const FrShapeId id = shape_of(e, rd.nodes.shapes, true);
  known.insert(print, hash, id);
  return id;
}

// A simdjson entry's shape by the print the reader made of its slots (DeferredShape):
// their nodes are made, and the shape read from them, only for a print new to the dump.
FrShapeId deferred_shape_of(const EntrySlots& e, DumpReader& rd) {
  const std::span<const uint64_t> print = e.deferred->print;
  const size_t hash = print_hash(print);
  PrintTable<FrShapeId>& known = rd.nodes.shapes_by_parse_print;
  if (const FrShapeId* id = known.find(print, hash)) return *id;
  if (known.size() > 65536) known.clear();  // a bound for dumps whose every entry differs
  e.deferred->make();
  const FrShapeId id = pickle_shape_of(e, rd);
  known.insert(print, hash, id);
  return id;
}

// Appends to `out` a print of pickle value `v` that tells its content exactly: strings
// by symbol, numbers by type and bits, containers by kind, size and items (a dict's
// keys too). False for a value not printed so (bytes, or nested past `depth`).
bool print_value(const SlotValue& v, DumpReader& rd, std::vector<uint64_t>& out, int depth) {
  using pickle_detail::Kind;
  using pickle_detail::Scalar;
  const pickle_detail::Node& n = *v.node();
  auto word = [](uint64_t tag, uint32_t low) { return tag << 32 | low; };  // a tag and 32 bits, one word
  if (n.kind != Kind::kScalar) {
    if (depth == 0) return false;
    out.push_back(word(16 + static_cast<uint64_t>(n.kind), n.count));
    for (uint32_t id : v.arena()->items_of(n))
      if (!print_value(SlotValue(v.arena(), id), rd, out, depth - 1)) return false;
    return true;
  }
  switch (n.type) {
    case Scalar::kNull: out.push_back(word(1, 0)); return true;
    case Scalar::kBool: out.push_back(word(2, n.flag)); return true;
    case Scalar::kString: out.push_back(word(3, rd.sym(v).id())); return true;
    case Scalar::kInt:
    case Scalar::kUint:
    case Scalar::kFloat:
      out.push_back(word(4 + static_cast<uint64_t>(n.type), 0));
      out.push_back(n.num.u);
      return true;
    case Scalar::kBytes: return false;
  }
  return false;
}

// The call an entry's frames name; a pickle's cached by the frames' print, so each
// distinct frames list is read once per dump.
// Nodes never change once the run is over, so the same nodes name the same call: the
// frames list's items by node index are looked up first, then the content's print.
FrCallId call_of(const EntrySlots& e, DumpReader& rd) {
  const SlotValue frames = e.find(kKeyFrames);
  if (!e.arena) return FrCallId(read_frames(frames));
  std::vector<uint64_t>& by_node = rd.nodes.by_node;
  by_node.clear();
  if (frames) {
    const pickle_detail::Node& n = *frames.node();
    by_node.push_back(uint64_t{1 + static_cast<uint32_t>(n.kind)} << 32 | n.count);
    if (n.kind == pickle_detail::Kind::kScalar) by_node.push_back(frames.node_id());
    for (uint32_t id : frames.arena()->items_of(n)) by_node.push_back(id);
  }
  PrintTable<FrCallId>& known = rd.nodes.calls_by_node;
  const size_t by_node_hash = print_hash(by_node);
  if (const FrCallId* found = known.find(by_node, by_node_hash)) return *found;
  if (known.size() > 65536) known.clear();  // a bound for dumps whose every entry differs
  std::vector<uint64_t>& print = rd.nodes.print;
  print.clear();
  FrCallId call;
  if (frames && !print_value(frames, rd, print, 8)) {
    call = FrCallId(read_frames(frames));
  } else {
    auto& calls = rd.nodes.calls;
    if (auto it = calls.find(print); it != calls.end()) {
      call = it->second;
    } else {
      if (calls.size() > 65536) calls.clear();
      call = calls.emplace(print, FrCallId(read_frames(frames))).first->second;
    }
  }
  known.insert(by_node, by_node_hash, call);
  return call;
}

}  // namespace

namespace record_detail {

// Entry `index` of the dump's `entries` list, from its slots. Paths are made only to
// name an error.
FrEntry parse_entry(const EntrySlots& e, DumpReader& rd, size_t index) {
  auto path_of = [index](EntryKey k) {
    return JsonPath{{"entries", 0}, {"", index}, {std::string(kEntryKeyNames[k]), 0}};
  };
  auto field_int = [&](EntryKey k, int64_t fallback) {
    const SlotValue v = e.find(k);
    if (!v) return fallback;
    return rd.integer_at(v, fallback, [&] { return path_of(k); });
  };
  auto seq = [&](EntryKey k) {
    const int64_t v = field_int(k, -1);
    if (v < 0 && e.find(k) && !e.find(k).is_null())
      rd.fail(path_of(k), "a sequence number must be >= 0, got " + std::to_string(v));
    return v;
  };
  FrEntry out;
  (void)field_int(kKeyRecordId, -1);  // checked, not kept: nothing reads it
  FrGroupFacts group;
  group.pg_id = slot_sym(e, kKeyPgId, rd);
  const SlotValue pg = e.find(kKeyProcessGroup);
  if (pg && pg.is_array() && pg.size() > 0) {
    group.pg_name = rd.sym(pg.item(0));
    if (pg.size() > 1) group.pg_desc = rd.sym(pg.item(1));
  }
  if (group.pg_name.empty()) group.pg_name = group.pg_id;
  out.collective_seq_id = seq(kKeyCollectiveSeqId);
  out.p2p_seq_id = seq(kKeyP2pSeqId);
  out.is_p2p = slot_bool(e, kKeyIsP2p);
  FrEntryFacts facts;
  facts.profiling_name = slot_sym(e, kKeyProfilingName, rd);
  out.time_created_ns = field_int(kKeyTimeCreated, 0);
  out.time_discovered_started_ns = field_int(kKeyTimeStarted, 0);
  out.time_discovered_completed_ns = field_int(kKeyTimeCompleted, 0);
  const SlotValue dur = e.find(kKeyDuration);
  if (dur && dur.is_number()) out.set_duration_ms(dur.get_double());
  thread_local ShapeCache json_shapes;  // the SAX pass's values are gone after the entry: copies, kept per thread
  facts.shape = e.deferred ? deferred_shape_of(e, rd) : e.arena ? pickle_shape_of(e, rd) : shape_of(e, json_shapes, false);
  facts.state = slot_sym(e, kKeyState, rd);
  out.retired = slot_bool(e, kKeyRetired);
  group.timeout_ms = field_int(kKeyTimeoutMs, 0);
  facts.group = rd.groups.id(group);
  facts.call = call_of(e, rd);
  out.set_facts(rd.facts.id(facts));
  return out;
}

}  // namespace record_detail
}  // namespace fleetsim::diagnose
