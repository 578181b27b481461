// Interned strings and rank lists for the flight-recorder record: an entry's texts
// (op, state, group, sizes, dtypes, frames) and a group's member list are each kept
// once per process and held as a 4-byte id or a pointer, so 16,384 ranks' dumps of
// 2,000 entries fit in a few GB. Comparison is by content, never by id, so nothing
// read from a Sym depends on the order in which threads interned their strings.
#pragma once

#include <compare>
#include <cstdint>
#include <initializer_list>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

namespace fleetsim::diagnose {

// An interned string: 4 bytes, immutable, read as a const std::string&.
class Sym {
 public:
  Sym() = default;
  explicit Sym(std::string_view s) : id_(intern(s)) {}
  explicit Sym(const std::string& s) : id_(intern(s)) {}
  Sym(const char* s) : id_(intern(s)) {}  // NOLINT: implicit, so literals read as symbols
  Sym& operator=(const std::string& s) { return *this = Sym(s); }
  Sym& operator=(const char* s) { return *this = Sym(s); }

  const std::string& str() const { return text(id_); }
  operator const std::string&() const { return text(id_); }  // NOLINT
  const char* c_str() const { return str().c_str(); }
  bool empty() const { return id_ == 0; }
  size_t size() const { return str().size(); }
  uint32_t id() const { return id_; }

  friend bool operator==(Sym a, Sym b) { return a.id_ == b.id_; }
  friend bool operator==(Sym a, const std::string& b) { return a.str() == b; }
  friend bool operator==(Sym a, const char* b) { return a.str() == b; }
  friend std::strong_ordering operator<=>(Sym a, Sym b) {
    return a.id_ == b.id_ ? std::strong_ordering::equal : a.str().compare(b.str()) <=> 0;
  }
  friend std::strong_ordering operator<=>(Sym a, const std::string& b) { return a.str().compare(b) <=> 0; }
  friend std::string operator+(const std::string& a, Sym b) { return a + b.str(); }
  friend std::string operator+(std::string&& a, Sym b) { return std::move(a) + b.str(); }
  friend std::string operator+(const char* a, Sym b) { return a + b.str(); }
  friend std::string operator+(Sym a, const std::string& b) { return a.str() + b; }
  friend std::string operator+(Sym a, const char* b) { return a.str() + b; }
  friend std::ostream& operator<<(std::ostream& os, Sym s) { return os << s.str(); }

  // How many distinct strings have been interned (for tests and the bench).
  static size_t interned();

 private:
  static uint32_t intern(std::string_view s);
  static const std::string& text(uint32_t id);
  uint32_t id_ = 0;  // 0: ""
};

// An interned, sorted list of ranks (a process group's members): one pointer, read
// as a const std::vector<int>&. Every dump naming the same members shares one list.
class RankList {
 public:
  RankList();
  explicit RankList(const std::vector<int>& ranks);
  RankList& operator=(const std::vector<int>& ranks) { return *this = RankList(ranks); }
  RankList(std::initializer_list<int> ranks) : RankList(std::vector<int>(ranks)) {}

  const std::vector<int>& get() const { return *list_; }
  operator const std::vector<int>&() const { return *list_; }  // NOLINT
  bool empty() const { return list_->empty(); }
  size_t size() const { return list_->size(); }
  int operator[](size_t i) const { return (*list_)[i]; }
  std::vector<int>::const_iterator begin() const { return list_->begin(); }
  std::vector<int>::const_iterator end() const { return list_->end(); }
  int front() const { return list_->front(); }
  int back() const { return list_->back(); }

  friend bool operator==(const RankList& a, const RankList& b) { return a.list_ == b.list_; }
  friend bool operator==(const RankList& a, const std::vector<int>& b) { return *a.list_ == b; }
  friend auto operator<=>(const RankList& a, const RankList& b) { return *a.list_ <=> *b.list_; }

 private:
  const std::vector<int>* list_;
};

}  // namespace fleetsim::diagnose
