// The JSON path helpers of json_path.h: a light scan of text already known to parse.
#include "sim/diagnose/json_path.h"

#include <string_view>

namespace fleetsim::diagnose {

namespace {

size_t skip_ws(const std::string& t, size_t i) {
  while (i < t.size() && (t[i] == ' ' || t[i] == '\n' || t[i] == '\r' || t[i] == '\t')) ++i;
  return i;
}

// The offset just past the JSON value that starts at `i` (text known to parse).
size_t skip_value(const std::string& t, size_t i) {
  if (i >= t.size()) return i;
  if (t[i] == '"') {
    for (++i; i < t.size() && t[i] != '"'; ++i) if (t[i] == '\\') ++i;
    return i + 1;
  }
  if (t[i] == '{' || t[i] == '[') {
    int depth = 0;
    for (; i < t.size(); ++i) {
      if (t[i] == '"') { i = skip_value(t, i) - 1; continue; }
      if (t[i] == '{' || t[i] == '[') ++depth;
      if ((t[i] == '}' || t[i] == ']') && --depth == 0) return i + 1;
    }
    return i;
  }
  while (i < t.size() && std::string_view(",}] \n\r\t").find(t[i]) == std::string_view::npos) ++i;
  return i;
}

}  // namespace

size_t offset_of(const std::string& t, const JsonPath& path) {
  size_t i = skip_ws(t, 0);
  for (const PathStep& step : path) {
    if (i >= t.size() || (t[i] != '{' && t[i] != '[')) return i;
    const bool object = t[i] == '{';
    size_t at = skip_ws(t, i + 1), n = 0;
    bool found = false;
    while (at < t.size() && t[at] != '}' && t[at] != ']') {
      if (object) {
        const size_t key_end = skip_value(t, at);
        const bool match = t.compare(at + 1, key_end - at - 2, step.key) == 0 && key_end - at - 2 == step.key.size();
        at = skip_ws(t, skip_ws(t, key_end) + 1);  // past ':'
        if (match) { found = true; break; }
      } else if (n++ == step.index) {
        found = true;
        break;
      }
      at = skip_ws(t, skip_value(t, at));
      if (at < t.size() && t[at] == ',') at = skip_ws(t, at + 1);
    }
    if (!found) return i;
    i = at;
  }
  return i;
}

std::string path_text(const JsonPath& path) {
  std::string out;
  for (const PathStep& s : path)
    out += s.key.empty() ? "[" + std::to_string(s.index) + "]" : (out.empty() ? "" : ".") + s.key;
  return out;
}

}  // namespace fleetsim::diagnose
