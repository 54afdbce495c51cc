// SPDX-License-Identifier: Apache-2.0
// Replaces the global operator new/delete with counting versions. Include in exactly one
// translation unit of a test or benchmark executable (never in a library).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdlib>
#include <new>

namespace uaplex::test {

struct HeapCounters {
    std::atomic<std::size_t> allocations{0};
    std::atomic<std::size_t> bytes{0};
};
inline HeapCounters gHeap;
// Set on a thread whose allocations are not to be counted (e.g. a test's own client thread
// when the server runs in the same process).
inline thread_local bool tUncounted = false;

// Allocations and bytes requested while the scope is alive.
class HeapScope {
  public:
    HeapScope() : a0_(gHeap.allocations.load()), b0_(gHeap.bytes.load()) {}
    std::size_t allocations() const { return gHeap.allocations.load() - a0_; }
    std::size_t bytes() const { return gHeap.bytes.load() - b0_; }

  private:
    std::size_t a0_, b0_;
};

inline void* countedAlloc(std::size_t n, std::size_t align) {
    if (!tUncounted) {
        gHeap.allocations.fetch_add(1, std::memory_order_relaxed);
        gHeap.bytes.fetch_add(n, std::memory_order_relaxed);
    }
    if (n == 0) n = 1;
    void* p = align > alignof(std::max_align_t)
                  ? std::aligned_alloc(align, (n + align - 1) / align * align)
                  : std::malloc(n);
    return p;
}

}  // namespace uaplex::test

// Another translation unit of the same executable includes this with
// UAPLEX_COUNTING_NEW_SCOPES_ONLY: the counters and scopes, not a second operator new.
#ifndef UAPLEX_COUNTING_NEW_SCOPES_ONLY
void* operator new(std::size_t n) {
    if (void* p = uaplex::test::countedAlloc(n, 0)) return p;
    throw std::bad_alloc();
}
void* operator new[](std::size_t n) {
    if (void* p = uaplex::test::countedAlloc(n, 0)) return p;
    throw std::bad_alloc();
}
void* operator new(std::size_t n, const std::nothrow_t&) noexcept {
    return uaplex::test::countedAlloc(n, 0);
}
void* operator new[](std::size_t n, const std::nothrow_t&) noexcept {
    return uaplex::test::countedAlloc(n, 0);
}
void* operator new(std::size_t n, std::align_val_t a) {
    if (void* p = uaplex::test::countedAlloc(n, std::size_t(a))) return p;
    throw std::bad_alloc();
}
void* operator new[](std::size_t n, std::align_val_t a) {
    if (void* p = uaplex::test::countedAlloc(n, std::size_t(a))) return p;
    throw std::bad_alloc();
}
// GCC cannot see that the matching operator new above uses malloc.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpragmas"
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
void operator delete(void* p) noexcept {
    std::free(p);
}
void operator delete[](void* p) noexcept {
    std::free(p);
}
void operator delete(void* p, std::size_t) noexcept {
    std::free(p);
}
void operator delete[](void* p, std::size_t) noexcept {
    std::free(p);
}
void operator delete(void* p, std::align_val_t) noexcept {
    std::free(p);
}
void operator delete(void* p, std::size_t, std::align_val_t) noexcept {
    std::free(p);
}
void operator delete[](void* p, std::align_val_t) noexcept {
    std::free(p);
}
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept {
    std::free(p);
}
#pragma GCC diagnostic pop
#endif  // UAPLEX_COUNTING_NEW_SCOPES_ONLY
