// The test binary's one replacement of the global operator new and delete:
// every allocation bumps a counter, then goes to malloc (or aligned_alloc).
#include "tests/support/alloc_counter.h"

#include <atomic>
#include <cstdlib>
#include <new>

namespace {
std::atomic<long> g_allocations{0};

void* counted(std::size_t n) {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}

void* counted_aligned(std::size_t n, std::align_val_t al) {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  const auto a = static_cast<std::size_t>(al);
  if (void* p = std::aligned_alloc(a, (n + a - 1) / a * a)) return p;  // a multiple of the alignment
  throw std::bad_alloc();
}
}  // namespace

__attribute__((weak)) void* operator new(std::size_t n) { return counted(n); }
__attribute__((weak)) void* operator new[](std::size_t n) { return counted(n); }
__attribute__((weak)) void* operator new(std::size_t n, std::align_val_t al) { return counted_aligned(n, al); }
__attribute__((weak)) void* operator new[](std::size_t n, std::align_val_t al) { return counted_aligned(n, al); }
// The nothrow forms too (std::stable_sort's temporary buffer uses them): every
// form of new must come from here, since every form of delete frees here.
__attribute__((weak)) void* operator new(std::size_t n, const std::nothrow_t&) noexcept {
  try {
    return counted(n);
  } catch (...) {
    return nullptr;
  }
}
__attribute__((weak)) void* operator new[](std::size_t n, const std::nothrow_t&) noexcept {
  try {
    return counted(n);
  } catch (...) {
    return nullptr;
  }
}
__attribute__((weak)) void* operator new(std::size_t n, std::align_val_t al, const std::nothrow_t&) noexcept {
  try {
    return counted_aligned(n, al);
  } catch (...) {
    return nullptr;
  }
}
__attribute__((weak)) void* operator new[](std::size_t n, std::align_val_t al, const std::nothrow_t&) noexcept {
  try {
    return counted_aligned(n, al);
  } catch (...) {
    return nullptr;
  }
}
__attribute__((weak)) void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
__attribute__((weak)) void operator delete[](void* p, const std::nothrow_t&) noexcept { std::free(p); }
__attribute__((weak)) void operator delete(void* p) noexcept { std::free(p); }
__attribute__((weak)) void operator delete[](void* p) noexcept { std::free(p); }
__attribute__((weak)) void operator delete(void* p, std::size_t) noexcept { std::free(p); }
__attribute__((weak)) void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
__attribute__((weak)) void operator delete(void* p, std::align_val_t) noexcept { std::free(p); }
__attribute__((weak)) void operator delete[](void* p, std::align_val_t) noexcept { std::free(p); }
__attribute__((weak)) void operator delete(void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
__attribute__((weak)) void operator delete[](void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }

namespace fleetsim::test_support {

long allocations() { return g_allocations.load(std::memory_order_relaxed); }

bool allocation_counting() {
  const long before = allocations();
  int* volatile probe = new int(1);  // volatile: the pair may not be elided
  delete probe;
  return allocations() != before;
}

}  // namespace fleetsim::test_support
