// Writes plain data as a pickle, byte for byte as PyTorch's C++ pickler writes a
// flight-recorder dump (protocol 2; docs/flight-recorder-formats.md, "The pickle as
// fleetsim writes it"): every string memoized by value, repeats fetched back, dicts
// and lists framed by MARK even when empty. The opcode bytes come from kPickleOps.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace fleetsim {

class PickleWriter {
 public:
  PickleWriter();  // PROTO 2

  void none();
  void boolean(bool v);
  void integer(int64_t v);  // the smallest of BININT1, BININT2, BININT, else LONG1 (8 bytes)
  void real(double v);      // BINFLOAT, big-endian
  void string(std::string_view s);  // BINUNICODE and a memo slot; a repeat is a BINGET

  // Containers are written open ... close; a dict's items as key, value, key, value.
  void open_dict();
  void close_dict();
  void open_list();
  void close_list();
  // A tuple of `n` items: the items follow, then close_tuple().
  void open_tuple(size_t n);
  void close_tuple();

  // Puts the value just written into the next memo slot (as the pickler does for a
  // container shared by pointer) and returns the slot; get() writes it again.
  uint32_t memoize();
  void get(uint32_t slot);

  // The pickle, ended with STOP. The writer is spent afterwards.
  std::string finish();

 private:
  void op(uint8_t code) { out_.push_back(static_cast<char>(code)); }
  void le(uint64_t v, int bytes);
  void memo_op(uint8_t short_op, uint8_t long_op, uint32_t slot);

  std::string out_;
  uint32_t next_memo_ = 0;
  // Found by string_view, so a lookup makes no string (C++20 heterogeneous lookup).
  struct Hash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  std::unordered_map<std::string, uint32_t, Hash, std::equal_to<>> strings_;  // memo slot of each string written
  std::vector<size_t> tuples_;  // open tuples' sizes
};

}  // namespace fleetsim
