// Interned strings, tuples and rank lists for the flight-recorder record: an entry's
// texts, the tuples of facts entries share and a group's member list are each kept
// once per process and held as a 4-byte id or a pointer, so 16,384 ranks' dumps of
// 2,000 entries fit in a few GB. Comparison is by content, never by id, so nothing
// read from a Sym depends on the order in which threads interned their strings.
#pragma once

#include <array>
#include <atomic>
#include <compare>
#include <cstdint>
#include <initializer_list>
#include <mutex>
#include <ostream>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "fleetsim/status.h"

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

// An interned value of a small, hashable type T (a tuple of an entry's facts that
// many entries share): 4 bytes, immutable, read as a const T&. Id 0 is T{}. As Sym,
// interning locks only on a miss in the calling thread's cache, and reading locks never.
template <class T, class Hash>
class Interned {
 public:
  Interned() = default;
  explicit Interned(const T& value) : id_(intern(value)) {}

  const T& get() const {
    const T* chunk = chunks_[id_ >> kChunkBits].load(std::memory_order_acquire);
    if (!chunk) [[unlikely]] return pool().at(id_);  // nothing interned yet: the pool makes id 0's chunk
    return chunk[id_ & (kChunk - 1)];
  }
  const T* operator->() const { return &get(); }
  uint32_t id() const { return id_; }
  friend bool operator==(Interned a, Interned b) { return a.id_ == b.id_; }

 private:
  static constexpr size_t kChunkBits = 12;
  static constexpr size_t kChunk = size_t{1} << kChunkBits;
  static constexpr size_t kMaxChunks = size_t{1} << 14;

  // The values by id, a chunk of kChunk at a time. Constant-initialized, so that get()
  // reads it without the guard a function's static needs (it runs for every fact an
  // analysis reads of every entry).
  static constinit inline std::array<std::atomic<T*>, kMaxChunks> chunks_{};

  struct Pool {
    std::mutex mu;
    std::unordered_map<T, uint32_t, Hash> index;
    uint32_t count = 0;

    Pool() { add(T{}); }
    uint32_t add(const T& value) {  // mu held (or construction)
      const uint32_t id = count;
      FLEETSIM_CHECK(id / kChunk < kMaxChunks);
      T* chunk = chunks_[id / kChunk].load(std::memory_order_relaxed);
      if (!chunk) {
        chunk = new T[kChunk];  // never freed: values live as long as the process
        chunks_[id / kChunk].store(chunk, std::memory_order_release);
      }
      chunk[id % kChunk] = value;
      index.emplace(value, id);
      ++count;
      return id;
    }
    const T& at(uint32_t id) const {
      return chunks_[id >> kChunkBits].load(std::memory_order_acquire)[id & (kChunk - 1)];
    }
  };

  static Pool& pool() {
    static Pool* p = new Pool();  // outlives every static that may hold a value
    return *p;
  }

  static uint32_t intern(const T& value) {
    thread_local std::unordered_map<T, uint32_t, Hash> cache;
    if (auto it = cache.find(value); it != cache.end()) return it->second;
    Pool& p = pool();
    uint32_t id;
    {
      std::lock_guard<std::mutex> lock(p.mu);
      auto it = p.index.find(value);
      id = it != p.index.end() ? it->second : p.add(value);
    }
    cache.emplace(value, id);
    return id;
  }

  uint32_t id_ = 0;
};

// An interned value's id from a few kept by their hash (N slots, a power of two): a
// dump's entries name few distinct tuples, found here without the interning's own table.
template <class T, class Hash, size_t N>
class InternMemo {
  static_assert((N & (N - 1)) == 0, "N must be a power of two");

 public:
  Interned<T, Hash> id(const T& value) {
    Slot& kept = slots_[Hash{}(value) & (N - 1)];
    if (!kept.used || !(kept.value == value)) kept = {value, Interned<T, Hash>(value), true};
    return kept.id;
  }

 private:
  struct Slot {
    T value;
    Interned<T, Hash> id;
    bool used = false;
  };
  std::array<Slot, N> slots_{};
};

// Mixes values into one hash (for Interned's Hash types).
inline size_t hash_mix(size_t seed, uint64_t v) {
  return seed ^ (std::hash<uint64_t>{}(v) + 0x9e3779b97f4a7c15ULL + (seed << 6) + (seed >> 2));
}

}  // namespace fleetsim::diagnose
