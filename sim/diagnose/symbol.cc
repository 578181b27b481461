// The process-wide pools behind Sym and RankList. Interning takes a lock only on a
// miss in the calling thread's own cache; reading a Sym's text takes none (a string's
// slot is written before its id is handed out, and never again).
#include "sim/diagnose/symbol.h"

#include <array>
#include <atomic>
#include <memory>
#include <mutex>
#include <set>
#include <unordered_map>

#include "fleetsim/status.h"

namespace fleetsim::diagnose {
namespace {

constexpr size_t kChunkBits = 12;
constexpr size_t kChunk = size_t{1} << kChunkBits;
constexpr size_t kMaxChunks = size_t{1} << 14;  // 67M distinct strings

struct SymbolPool {
  std::mutex mu;
  std::unordered_map<std::string_view, uint32_t> index;  // views into the chunks
  std::array<std::atomic<std::string*>, kMaxChunks> chunks{};
  uint32_t count = 0;

  SymbolPool() { add(""); }

  uint32_t add(std::string_view s) {  // mu held (or construction)
    const uint32_t id = count;
    FLEETSIM_CHECK(id / kChunk < kMaxChunks);  // 67M distinct strings
    std::string* chunk = chunks[id / kChunk].load(std::memory_order_relaxed);
    if (!chunk) {
      chunk = new std::string[kChunk];  // never freed: symbols live as long as the process
      chunks[id / kChunk].store(chunk, std::memory_order_release);
    }
    chunk[id % kChunk] = std::string(s);
    index.emplace(std::string_view(chunk[id % kChunk]), id);
    ++count;
    return id;
  }
};

SymbolPool& symbol_pool() {
  static SymbolPool* pool = new SymbolPool();  // outlives every static that may hold a Sym
  return *pool;
}

struct RankListPool {
  std::mutex mu;
  std::set<std::vector<int>> lists;  // nodes are stable
};

RankListPool& rank_list_pool() {
  static RankListPool* pool = new RankListPool();
  return *pool;
}

// Lets the per-thread cache be searched with a string_view (no copy on a hit).
struct ViewHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};

}  // namespace

uint32_t Sym::intern(std::string_view s) {
  if (s.empty()) return 0;
  thread_local std::unordered_map<std::string, uint32_t, ViewHash, std::equal_to<>> cache;
  if (auto it = cache.find(s); it != cache.end()) return it->second;
  SymbolPool& pool = symbol_pool();
  uint32_t id;
  {
    std::lock_guard<std::mutex> lock(pool.mu);
    auto it = pool.index.find(s);
    id = it != pool.index.end() ? it->second : pool.add(s);
  }
  cache.emplace(std::string(s), id);
  return id;
}

const std::string& Sym::text(uint32_t id) {
  const std::string* chunk = symbol_pool().chunks[id >> kChunkBits].load(std::memory_order_acquire);
  return chunk[id & (kChunk - 1)];
}

size_t Sym::interned() {
  SymbolPool& pool = symbol_pool();
  std::lock_guard<std::mutex> lock(pool.mu);
  return pool.count;
}

RankList::RankList() {
  static const RankList empty_list(std::vector<int>{});
  list_ = empty_list.list_;
}

RankList::RankList(const std::vector<int>& ranks) {
  RankListPool& pool = rank_list_pool();
  std::lock_guard<std::mutex> lock(pool.mu);
  list_ = &*pool.lists.insert(ranks).first;
}

}  // namespace fleetsim::diagnose
