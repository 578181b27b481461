// The pickle writer (pickle_writer.h): the choices PyTorch's C++ pickler makes
// (torch/csrc/jit/serialization/pickler.cpp), with the opcode bytes taken from the
// one opcode table, include/fleetsim/pickle_ops.h.
#include "sim/observe/pickle_writer.h"

#include <bit>
#include <limits>

#include "fleetsim/pickle_ops.h"
#include "fleetsim/status.h"

namespace fleetsim {
namespace {
constexpr uint8_t kProto = pickle_op_code("PROTO");
constexpr uint8_t kStop = pickle_op_code("STOP");
constexpr uint8_t kMark = pickle_op_code("MARK");
constexpr uint8_t kNone = pickle_op_code("NONE");
constexpr uint8_t kTrue = pickle_op_code("NEWTRUE");
constexpr uint8_t kFalse = pickle_op_code("NEWFALSE");
constexpr uint8_t kBinInt = pickle_op_code("BININT");
constexpr uint8_t kBinInt1 = pickle_op_code("BININT1");
constexpr uint8_t kBinInt2 = pickle_op_code("BININT2");
constexpr uint8_t kLong1 = pickle_op_code("LONG1");
constexpr uint8_t kBinFloat = pickle_op_code("BINFLOAT");
constexpr uint8_t kBinUnicode = pickle_op_code("BINUNICODE");
constexpr uint8_t kEmptyDict = pickle_op_code("EMPTY_DICT");
constexpr uint8_t kSetItems = pickle_op_code("SETITEMS");
constexpr uint8_t kEmptyList = pickle_op_code("EMPTY_LIST");
constexpr uint8_t kAppends = pickle_op_code("APPENDS");
constexpr uint8_t kEmptyTuple = pickle_op_code("EMPTY_TUPLE");
constexpr uint8_t kTuple = pickle_op_code("TUPLE");
constexpr uint8_t kTuple1 = pickle_op_code("TUPLE1");
constexpr uint8_t kTuple2 = pickle_op_code("TUPLE2");
constexpr uint8_t kTuple3 = pickle_op_code("TUPLE3");
constexpr uint8_t kBinPut = pickle_op_code("BINPUT");
constexpr uint8_t kLongBinPut = pickle_op_code("LONG_BINPUT");
constexpr uint8_t kBinGet = pickle_op_code("BINGET");
constexpr uint8_t kLongBinGet = pickle_op_code("LONG_BINGET");
constexpr uint8_t kProtocol = 2;
}  // namespace

PickleWriter::PickleWriter() {
  op(kProto);
  op(kProtocol);
}

void PickleWriter::le(uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out_.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

void PickleWriter::none() { op(kNone); }

void PickleWriter::boolean(bool v) { op(v ? kTrue : kFalse); }

void PickleWriter::integer(int64_t v) {
  if (v >= 0 && v <= std::numeric_limits<uint8_t>::max()) {
    op(kBinInt1);
    le(static_cast<uint64_t>(v), 1);
  } else if (v >= 0 && v <= std::numeric_limits<uint16_t>::max()) {
    op(kBinInt2);
    le(static_cast<uint64_t>(v), 2);
  } else if (v >= std::numeric_limits<int32_t>::min() && v <= std::numeric_limits<int32_t>::max()) {
    op(kBinInt);
    le(static_cast<uint32_t>(static_cast<int32_t>(v)), 4);
  } else {
    op(kLong1);
    le(8, 1);
    le(static_cast<uint64_t>(v), 8);
  }
}

void PickleWriter::real(double v) {
  op(kBinFloat);
  const auto bits = std::bit_cast<uint64_t>(v);
  for (int i = 7; i >= 0; --i) out_.push_back(static_cast<char>((bits >> (8 * i)) & 0xff));
}

void PickleWriter::string(std::string_view s) {
  if (auto it = strings_.find(s); it != strings_.end()) return get(it->second);
  FLEETSIM_CHECK(s.size() <= std::numeric_limits<uint32_t>::max());
  op(kBinUnicode);
  le(s.size(), 4);
  out_.append(s);
  strings_.emplace(std::string(s), memoize());
}

void PickleWriter::open_dict() {
  op(kEmptyDict);
  op(kMark);
}

void PickleWriter::close_dict() { op(kSetItems); }

void PickleWriter::open_list() {
  op(kEmptyList);
  op(kMark);
}

void PickleWriter::close_list() { op(kAppends); }

void PickleWriter::open_tuple(size_t n) {
  tuples_.push_back(n);
  if (n > 3) op(kMark);
}

void PickleWriter::close_tuple() {
  FLEETSIM_CHECK(!tuples_.empty());
  const size_t n = tuples_.back();
  tuples_.pop_back();
  constexpr uint8_t kSmall[] = {kEmptyTuple, kTuple1, kTuple2, kTuple3};
  op(n <= 3 ? kSmall[n] : kTuple);
}

// BINPUT/BINGET with a 1-byte slot, LONG_BINPUT/LONG_BINGET with 4 bytes past 255.
void PickleWriter::memo_op(uint8_t short_op, uint8_t long_op, uint32_t slot) {
  const bool small = slot <= std::numeric_limits<uint8_t>::max();
  op(small ? short_op : long_op);
  le(slot, small ? 1 : 4);
}

uint32_t PickleWriter::memoize() {
  const uint32_t slot = next_memo_++;
  memo_op(kBinPut, kLongBinPut, slot);
  return slot;
}

void PickleWriter::get(uint32_t slot) {
  FLEETSIM_CHECK(slot < next_memo_);
  memo_op(kBinGet, kLongBinGet, slot);
}

std::string PickleWriter::finish() {
  FLEETSIM_CHECK(tuples_.empty());
  op(kStop);
  return std::move(out_);
}

}  // namespace fleetsim
