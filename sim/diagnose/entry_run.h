// One member's entries of one group in seq order, as the analyses align them (a lane of
// the divergence search, a run of the timing evidence): 4-byte places in the member's
// dump's entry vector, read as entry pointers. Two such tables over every entry are
// alive at the diagnosis's peak, so their width is memory at scale (docs/performance.md).
#pragma once

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <vector>

#include "fleetsim/status.h"
#include "sim/diagnose/record.h"

namespace fleetsim::diagnose {

class EntryRun {
 public:
  // Appends `e`, an entry of the dump whose entries start at `first` (the same dump at
  // every call; a dump holds fewer than 2^32 entries, its file's size bounds it).
  void push_back(const FrEntry* first, const FrEntry* e) {
    FLEETSIM_DCHECK(!base_ || base_ == first);
    FLEETSIM_DCHECK(e >= first && static_cast<uint64_t>(e - first) < UINT32_MAX);
    base_ = first;
    at_.push_back(static_cast<uint32_t>(e - first));
  }
  size_t size() const { return at_.size(); }
  size_t capacity() const { return at_.capacity(); }  // equal to size() once keep_last_by_seq has run
  bool empty() const { return at_.empty(); }
  const FrEntry* operator[](size_t i) const { return base_ + at_[i]; }
  const FrEntry* front() const { return base_ + at_.front(); }
  const FrEntry* back() const { return base_ + at_.back(); }
  // For a walk that keeps its own cursor: entry i is base()[places()[i]].
  const FrEntry* base() const { return base_; }
  const uint32_t* places() const { return at_.data(); }

  // The entry at `seq`, or null; the run sorted by seq (keep_last_by_seq).
  const FrEntry* find(int64_t seq) const;
  // Sorts the run by collective_seq_id and keeps one entry a seq, the last pushed; no
  // slack after (a run pushed one a seq, ascending, is only checked).
  void keep_last_by_seq();
  void shrink_to_fit() { at_.shrink_to_fit(); }

  class iterator {
   public:
    using iterator_category = std::forward_iterator_tag;
    using value_type = const FrEntry*;
    using difference_type = std::ptrdiff_t;
    using pointer = void;
    using reference = const FrEntry*;
    iterator() = default;
    iterator(const FrEntry* base, const uint32_t* at) : base_(base), at_(at) {}
    const FrEntry* operator*() const { return base_ + *at_; }
    iterator& operator++() {
      ++at_;
      return *this;
    }
    iterator operator++(int) {
      iterator old = *this;
      ++at_;
      return old;
    }
    friend bool operator==(iterator a, iterator b) { return a.at_ == b.at_; }

   private:
    const FrEntry* base_ = nullptr;
    const uint32_t* at_ = nullptr;
  };
  iterator begin() const { return {base_, at_.data()}; }
  iterator end() const { return {base_, at_.data() + at_.size()}; }

 private:
  const FrEntry* base_ = nullptr;
  std::vector<uint32_t> at_;
};

}  // namespace fleetsim::diagnose
