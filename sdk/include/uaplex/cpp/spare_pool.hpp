// SPDX-License-Identifier: Apache-2.0
// Spare objects kept for reuse between threads without a lock (an MpmcRing of them). Steady
// traffic takes and returns the same spares and never allocates; what a burst needed beyond
// a small reserve goes back once a whole trim period passed without anyone needing it, so
// memory follows the load instead of the highest burst ever seen.
//
// The objects live in 64 KiB mappings of their own (BlockChunks), not on the heap: a burst's
// objects would otherwise sit between the long-lived ones made at the same time (a
// connection's, a session's), and freeing them would leave holes, not memory given back.
#pragma once

#include <sys/mman.h>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <mutex>
#include <new>
#include <utility>
#include <vector>

#include "uaplex/cpp/mpmc_ring.hpp"

namespace uaplex::sdk {

// Fixed-size blocks carved from aligned 64 KiB mappings. A block is taken from the mapping
// with the lowest address that has one free, and a mapping none of whose blocks is in use
// is unmapped, so what is in use gathers in few mappings. Only object creation and deletion
// come here (a mutex): reuse goes through the SparePool's ring.
class BlockChunks {
  public:
    static constexpr std::size_t kChunkSize = 64 * 1024;

    explicit BlockChunks(std::size_t blockSize)
        : blockSize_((std::max(blockSize, sizeof(void*)) + 15) & ~std::size_t{15}) {}
    BlockChunks(const BlockChunks&) = delete;
    BlockChunks& operator=(const BlockChunks&) = delete;

    void* allocate() {
        std::lock_guard lock(mutex_);
        for (Chunk* c : chunks_)
            if (void* p = c->take(blockSize_)) return p;
        Chunk* c = mapChunk();
        if (!c) throw std::bad_alloc();
        chunks_.insert(std::upper_bound(chunks_.begin(), chunks_.end(), c), c);
        return c->take(blockSize_);
    }
    void release(void* p) noexcept {
        auto* c = reinterpret_cast<Chunk*>(reinterpret_cast<std::uintptr_t>(p) & ~(kChunkSize - 1));
        std::lock_guard lock(mutex_);
        *static_cast<void**>(p) = c->free;
        c->free = p;
        if (--c->live != 0) return;
        chunks_.erase(std::lower_bound(chunks_.begin(), chunks_.end(), c));
        ::munmap(c, kChunkSize);
    }
    std::size_t chunks() {
        std::lock_guard lock(mutex_);
        return chunks_.size();
    }

  private:
    struct Chunk {
        void* free = nullptr;  // released blocks
        std::size_t bump = 0;  // offset of the first never-used block
        std::size_t live = 0;  // blocks in use
        void* take(std::size_t size) {
            void* p = free;
            if (p) {
                free = *static_cast<void**>(p);
            } else if (bump + size <= kChunkSize) {
                p = reinterpret_cast<char*>(this) + bump;
                bump += size;
            } else {
                return nullptr;
            }
            ++live;
            return p;
        }
    };
    // An aligned mapping: twice the size mapped, the unaligned ends unmapped.
    Chunk* mapChunk() noexcept {
        void* m = ::mmap(nullptr, 2 * kChunkSize, PROT_READ | PROT_WRITE,
                         MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (m == MAP_FAILED) return nullptr;
        auto base = reinterpret_cast<std::uintptr_t>(m);
        auto aligned = (base + kChunkSize - 1) & ~(kChunkSize - 1);
        if (aligned > base) ::munmap(m, aligned - base);
        if (std::uintptr_t end = base + 2 * kChunkSize; end > aligned + kChunkSize)
            ::munmap(reinterpret_cast<void*>(aligned + kChunkSize), end - aligned - kChunkSize);
        auto* c = new (reinterpret_cast<void*>(aligned)) Chunk();
        c->bump = (sizeof(Chunk) + 15) & ~std::size_t{15};
        return c;
    }

    const std::size_t blockSize_;
    std::mutex mutex_;
    std::vector<Chunk*> chunks_;  // by address
};

template <typename T>
class SparePool {
  public:
    // capacity: a power of two, the most spares kept; reserve: spares never trimmed.
    SparePool(std::size_t capacity, std::size_t reserve) : ring_(capacity), reserve_(reserve) {
        static_assert(alignof(T) <= 16);
    }
    ~SparePool() {
        while (T* p = ring_.pop()) destroy(p);
    }
    SparePool(const SparePool&) = delete;
    SparePool& operator=(const SparePool&) = delete;

    // A spare, or null when there is none (the caller makes one with make()).
    T* take() noexcept {
        T* p = ring_.pop();
        std::size_t left = p ? ring_.size() : 0;
        if (left < lowWater_.load(std::memory_order_relaxed))
            lowWater_.store(left, std::memory_order_relaxed);
        return p;
    }
    template <class... A>
    T* make(A&&... args) {
        void* p = blocks().allocate();
        try {
            return new (p) T(std::forward<A>(args)...);
        } catch (...) {
            blocks().release(p);
            throw;
        }
    }
    // Keeps `p` (made by make()) for reuse, or destroys it when the pool is full.
    void put(T* p) noexcept {
        if (!ring_.push(p)) destroy(p);
    }
    static void destroy(T* p) noexcept {
        p->~T();
        blocks().release(p);
    }
    // Destroys the spares beyond the reserve that no take() needed since the last trim (the
    // fewest spares seen in between); returns how many. Those kept are the lowest in memory,
    // so the mappings above them empty and go. Call it periodically.
    std::size_t trim() {
        std::size_t unused = lowWater_.exchange(kNone, std::memory_order_relaxed);
        std::size_t held = ring_.size();
        if (unused == kNone || unused > held) unused = held;
        if (unused <= reserve_) return 0;
        std::vector<T*> all;
        all.reserve(held);
        while (T* p = ring_.pop()) all.push_back(p);
        std::sort(all.begin(), all.end());
        std::size_t keep = all.size() - std::min(all.size(), unused - reserve_);
        std::size_t freed = 0;
        for (std::size_t i = 0; i < all.size(); ++i) {
            if (i < keep && ring_.push(all[i])) continue;
            destroy(all[i]);
            ++freed;
        }
        return freed;
    }
    std::size_t spares() const noexcept { return ring_.size(); }
    std::size_t reserve() const noexcept { return reserve_; }
    // The mappings the objects of this type live in (all pools of T share them).
    static std::size_t chunks() { return blocks().chunks(); }

  private:
    // One per type for the process, never destroyed: an object may be given back after the
    // pool that made it is gone.
    static BlockChunks& blocks() {
        static auto* b = new BlockChunks(sizeof(T));
        return *b;
    }
    static constexpr std::size_t kNone = std::numeric_limits<std::size_t>::max();
    MpmcRing<T*> ring_;
    std::size_t reserve_;
    std::atomic<std::size_t> lowWater_{kNone};
};

}  // namespace uaplex::sdk
