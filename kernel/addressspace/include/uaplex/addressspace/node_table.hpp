// SPDX-License-Identifier: Apache-2.0
// An open-addressing table of pointers that readers search without a lock while one writer
// (serialised by the caller) inserts and erases. A slot is null (never used), a tombstone
// (erased) or a pointer whose key is read through KeyOf. Growing or shrinking builds a new
// array, publishes it and retires the old one through the Reclaimer, so a reader that still
// probes the old array finds what it held when it started.
#pragma once

#include <algorithm>
#include <atomic>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>

#include <uaplex/addressspace/reclaim.hpp>

namespace uaplex::addressspace {

template <class T, class Key, class Traits>
class PtrTable {
  public:
    explicit PtrTable(Reclaimer& reclaimer) : reclaimer_(reclaimer) {}
    PtrTable(const PtrTable&) = delete;
    PtrTable& operator=(const PtrTable&) = delete;
    ~PtrTable() { destroy(array_.load(std::memory_order_relaxed)); }

    // Any thread, inside a Pin (or as the writer).
    T* find(const Key& key) const noexcept {
        const Array* a = array_.load(std::memory_order_acquire);
        if (a == nullptr) return nullptr;
        std::size_t i = Traits::hash(key) & a->mask;
        for (std::size_t n = 0; n <= a->mask; ++n, i = (i + 1) & a->mask) {
            T* p = a->slots[i].load(std::memory_order_acquire);
            if (p == nullptr) return nullptr;
            if (p != tombstone() && Traits::equal(Traits::keyOf(*p), key)) return p;
        }
        return nullptr;
    }
    std::size_t size() const noexcept { return live_.load(std::memory_order_relaxed); }

    // Calls fn(T&) for every entry of the current array (inside a Pin, or as the writer).
    template <class Fn>
    void forEach(Fn&& fn) const {
        const Array* a = array_.load(std::memory_order_acquire);
        if (a == nullptr) return;
        for (std::size_t i = 0; i <= a->mask; ++i) {
            T* p = a->slots[i].load(std::memory_order_acquire);
            if (p != nullptr && p != tombstone()) fn(*p);
        }
    }

    // Writer only; the key must not be present. Throws std::bad_alloc (nothing changed).
    void insert(T* p) {
        Array* a = array_.load(std::memory_order_relaxed);
        if (a == nullptr || (used_ + 1) * 2 > a->mask + 1) {
            rebuild(std::bit_ceil(std::max<std::size_t>(16, (size() + 1) * 4)));
            a = array_.load(std::memory_order_relaxed);
        }
        std::size_t i = Traits::hash(Traits::keyOf(*p)) & a->mask;
        for (;; i = (i + 1) & a->mask) {
            T* q = a->slots[i].load(std::memory_order_relaxed);
            if (q == nullptr || q == tombstone()) {
                if (q == nullptr) ++used_;
                a->slots[i].store(p, std::memory_order_release);
                break;
            }
        }
        live_.store(size() + 1, std::memory_order_relaxed);
    }

    // Writer only: true when it was there. Shrinks (gives memory back) when mostly empty.
    bool erase(const Key& key) noexcept {
        Array* a = array_.load(std::memory_order_relaxed);
        if (a == nullptr) return false;
        std::size_t i = Traits::hash(key) & a->mask;
        for (std::size_t n = 0; n <= a->mask; ++n, i = (i + 1) & a->mask) {
            T* p = a->slots[i].load(std::memory_order_relaxed);
            if (p == nullptr) return false;
            if (p != tombstone() && Traits::equal(Traits::keyOf(*p), key)) {
                a->slots[i].store(tombstone(), std::memory_order_seq_cst);
                live_.store(size() - 1, std::memory_order_relaxed);
                if (a->mask + 1 > 64 && size() * 16 < a->mask + 1) {
                    try {
                        rebuild(std::bit_ceil(std::max<std::size_t>(16, size() * 4)));
                    } catch (...) {  // NOLINT(bugprone-empty-catch): keeps the larger array
                    }
                }
                return true;
            }
        }
        return false;
    }

  private:
    struct Array {
        std::size_t mask;
        std::unique_ptr<std::atomic<T*>[]> slots;
    };
    static T* tombstone() noexcept { return reinterpret_cast<T*>(std::uintptr_t{1}); }
    static void destroy(Array* a) noexcept { delete a; }

    void rebuild(std::size_t capacity) {
        auto fresh = std::make_unique<Array>();
        fresh->mask = capacity - 1;
        fresh->slots = std::make_unique<std::atomic<T*>[]>(capacity);
        for (std::size_t i = 0; i < capacity; ++i)
            fresh->slots[i].store(nullptr, std::memory_order_relaxed);
        std::size_t used = 0;
        Array* old = array_.load(std::memory_order_relaxed);
        if (old != nullptr)
            for (std::size_t i = 0; i <= old->mask; ++i) {
                T* p = old->slots[i].load(std::memory_order_relaxed);
                if (p == nullptr || p == tombstone()) continue;
                std::size_t j = Traits::hash(Traits::keyOf(*p)) & fresh->mask;
                while (fresh->slots[j].load(std::memory_order_relaxed) != nullptr)
                    j = (j + 1) & fresh->mask;
                fresh->slots[j].store(p, std::memory_order_relaxed);
                ++used;
            }
        if (old != nullptr)
            reclaimer_.retire(old, [](void* x) { destroy(static_cast<Array*>(x)); });
        used_ = used;
        array_.store(fresh.release(), std::memory_order_seq_cst);
    }

    Reclaimer& reclaimer_;
    std::atomic<Array*> array_{nullptr};
    std::size_t used_ = 0;  // slots not null (live + tombstones); writer only
    std::atomic<std::size_t> live_{0};
};

}  // namespace uaplex::addressspace
