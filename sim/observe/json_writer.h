// Writes JSON as it is produced, laid out byte for byte as nlohmann's
// `dump(1, ' ', false, error_handler_t::replace)` lays out the same tree (one space
// of indent a level, `"key": value`, `{}` and `[]` when empty, UTF-8 kept as is):
// the flight recorder's JSON dumps (flight_recorder.cc) without building the tree.
// Plain ASCII strings and integers are written here; other strings and every
// double go through nlohmann's own serializer, so their escapes and digits are its.
// tests/observe/json_writer_test.cc holds it to nlohmann's dump of random trees.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace fleetsim {

class JsonWriter {
 public:
  // Containers are written open ... close; an object's members as key(), value.
  void open_object();
  void close_object();
  void open_array();
  void close_array();
  void key(std::string_view k);

  void string(std::string_view s);
  void integer(int64_t v);
  void real(double v);
  void boolean(bool v);
  void null();

  // The text written (no trailing newline). The writer is spent afterwards.
  std::string finish();

 private:
  void value_start();  // the separator and indent before an array's item
  void open(char c, bool object);
  void close(char c, bool object);
  void indent(size_t depth) { out_.append(depth, ' '); }
  void quoted(std::string_view s);

  struct Level {
    bool object = false;
    bool empty = true;
  };
  std::string out_;
  std::vector<Level> levels_;
  bool after_key_ = false;
};

}  // namespace fleetsim
