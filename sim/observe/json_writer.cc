// The streamed JSON writer (json_writer.h).
#include "sim/observe/json_writer.h"

#include <charconv>
#include <nlohmann/json.hpp>

#include "fleetsim/status.h"

namespace fleetsim {

void JsonWriter::value_start() {
  if (levels_.empty()) return;  // the root
  if (after_key_) {             // key() wrote the indent and `"key": `
    after_key_ = false;
    return;
  }
  Level& l = levels_.back();
  FLEETSIM_CHECK(!l.object);  // an object's value follows its key()
  out_.append(l.empty ? "\n" : ",\n");
  l.empty = false;
  indent(levels_.size());
}

void JsonWriter::open(char c, bool object) {
  value_start();
  out_.push_back(c);
  levels_.push_back(Level{object, true});
}

void JsonWriter::close(char c, bool object) {
  FLEETSIM_CHECK(!levels_.empty() && levels_.back().object == object && !after_key_);
  const bool empty = levels_.back().empty;
  levels_.pop_back();
  if (!empty) {
    out_.push_back('\n');
    indent(levels_.size());
  }
  out_.push_back(c);
}

void JsonWriter::open_object() { open('{', true); }
void JsonWriter::close_object() { close('}', true); }
void JsonWriter::open_array() { open('[', false); }
void JsonWriter::close_array() { close(']', false); }

void JsonWriter::key(std::string_view k) {
  FLEETSIM_CHECK(!levels_.empty() && levels_.back().object && !after_key_);
  Level& l = levels_.back();
  out_.append(l.empty ? "\n" : ",\n");
  l.empty = false;
  indent(levels_.size());
  quoted(k);
  out_.append(": ");
  after_key_ = true;
}

// Printable ASCII other than `"` and `\` stands for itself; anything else (escapes,
// UTF-8, invalid bytes replaced by U+FFFD) is left to nlohmann's serializer.
void JsonWriter::quoted(std::string_view s) {
  for (const char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if (c < 0x20 || c >= 0x7f || c == '"' || c == '\\') {
      out_.append(nlohmann::json(std::string(s)).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
      return;
    }
  }
  out_.push_back('"');
  out_.append(s);
  out_.push_back('"');
}

void JsonWriter::string(std::string_view s) {
  value_start();
  quoted(s);
}

void JsonWriter::integer(int64_t v) {
  value_start();
  char buf[24];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  out_.append(buf, r.ptr);
}

void JsonWriter::real(double v) {
  value_start();
  out_.append(nlohmann::json(v).dump());
}

void JsonWriter::boolean(bool v) {
  value_start();
  out_.append(v ? "true" : "false");
}

void JsonWriter::null() {
  value_start();
  out_.append("null");
}

std::string JsonWriter::finish() {
  FLEETSIM_CHECK(levels_.empty() && !after_key_);
  return std::move(out_);
}

}  // namespace fleetsim
