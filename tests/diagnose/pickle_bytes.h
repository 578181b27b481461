// Bytes of hand-made pickles for the pickle reader's tests (pickle_reader_test.cc,
// pickle_entries_test.cc): protocol 2 framing, little-endian integers, and strings
// as PyTorch's pickler writes them.
#pragma once

#include <cstdint>
#include <string>

namespace fleetsim::diagnose::pickle_bytes {

// A protocol 2 pickle of `body`, as the bytes between PROTO and STOP.
inline std::string pk(const std::string& body) { return "\x80\x02" + body + "."; }

inline std::string u32(uint32_t v) {
  std::string s;
  for (int k = 0; k < 4; ++k) s += static_cast<char>((v >> (8 * k)) & 0xff);
  return s;
}

inline std::string u64(uint64_t v) {
  std::string s;
  for (int k = 0; k < 8; ++k) s += static_cast<char>((v >> (8 * k)) & 0xff);
  return s;
}

// BINUNICODE then BINPUT, as PyTorch's pickler writes every string.
inline std::string str(const std::string& s, uint8_t memo) {
  return "X" + u32(static_cast<uint32_t>(s.size())) + s + "q" + static_cast<char>(memo);
}

}  // namespace fleetsim::diagnose::pickle_bytes
