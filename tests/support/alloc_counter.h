// Counts heap allocations made through the global operator new anywhere in the
// test binary, for tests that assert a code path does not allocate. The counting
// operator new is defined once, in alloc_counter.cc, as a weak symbol: a strong
// replacement elsewhere (a sanitizer's) wins instead of clashing, and then
// allocation_counting() is false and such tests should skip themselves.
#pragma once

namespace fleetsim::test_support {

// Allocations so far (operator new, plain, array and aligned, in all threads).
long allocations();

// Whether allocations() is live: allocates and frees one object and checks that
// the count moved.
bool allocation_counting();

}  // namespace fleetsim::test_support
