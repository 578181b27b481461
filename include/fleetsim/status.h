// Bad input is a value with a location; bugs crash. A Diagnostic names
// file:line:col (1-based, as GCC prints them) and what was expected. Result<T>
// carries either a value or the diagnostics that prevented it.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace fleetsim {

// Where something stands in an input file. line and col are 1-based; 0 means
// "unknown" (e.g. a value given on the command line has line 0).
struct SourceLoc {
  std::string file;
  int line = 0;
  int col = 0;
};

struct Diagnostic {
  SourceLoc loc;
  std::string message;  // what was wrong and what was expected, one line

  // "FILE:LINE:COL: error: MESSAGE" (GCC style). Missing parts are omitted.
  std::string to_string() const;

  // A diagnostic about a whole file, folder or argument (no line or column).
  static Diagnostic in_file(std::string file, std::string message) {
    Diagnostic d;
    d.loc.file = std::move(file);
    d.message = std::move(message);
    return d;
  }
};

// Either a T or one or more diagnostics (never both, never neither).
template <typename T>
class Result {
 public:
  Result(T value) : v_(std::move(value)) {}                          // NOLINT: implicit by design
  Result(Diagnostic d) : v_(std::vector<Diagnostic>{std::move(d)}) {}  // NOLINT
  Result(std::vector<Diagnostic> ds) : v_(std::move(ds)) {}           // NOLINT

  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }
  T& value() { return std::get<0>(v_); }
  const T& value() const { return std::get<0>(v_); }
  T& operator*() { return value(); }
  const T& operator*() const { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  const std::vector<Diagnostic>& errors() const { return std::get<1>(v_); }

 private:
  std::variant<T, std::vector<Diagnostic>> v_;
};

}  // namespace fleetsim

// Engine invariants. FLEETSIM_CHECK is always on (TigerBeetle-style: a broken
// invariant is a bug, and a bug must crash loudly, never continue silently).
// FLEETSIM_DCHECK compiles out in release builds; use it in the hot loop.
#define FLEETSIM_CHECK(cond)                                                          \
  do {                                                                                \
    if (!(cond)) {                                                                    \
      std::fprintf(stderr, "%s:%d: internal error: check failed: %s\n", __FILE__,     \
                   __LINE__, #cond);                                                  \
      std::abort();                                                                   \
    }                                                                                 \
  } while (0)
#ifdef NDEBUG
#define FLEETSIM_DCHECK(cond) \
  do {                        \
  } while (0)
#else
#define FLEETSIM_DCHECK(cond) FLEETSIM_CHECK(cond)
#endif
