// Spare objects kept for reuse between threads without a lock (an MpmcRing of them). Steady
// traffic takes and returns the same spares and never reaches the heap; what a burst needed
// beyond a small reserve goes back to the heap once a whole trim period passed without
// anyone needing it, so memory follows the load instead of the highest burst ever seen.
#pragma once

#include <atomic>
#include <cstddef>
#include <limits>

#include "mpmc_ring.hpp"

namespace uaplex::plugins {

template <typename T>
class SparePool {
  public:
    // capacity: a power of two, the most spares kept; reserve: spares never trimmed.
    SparePool(std::size_t capacity, std::size_t reserve) : ring_(capacity), reserve_(reserve) {}
    ~SparePool() {
        while (T* p = ring_.pop()) delete p;
    }
    SparePool(const SparePool&) = delete;
    SparePool& operator=(const SparePool&) = delete;

    // A spare, or null when there is none (the caller makes one).
    T* take() noexcept {
        T* p = ring_.pop();
        std::size_t left = p ? ring_.size() : 0;
        if (left < lowWater_.load(std::memory_order_relaxed))
            lowWater_.store(left, std::memory_order_relaxed);
        return p;
    }
    // Keeps `p` for reuse, or deletes it when the pool is full.
    void put(T* p) noexcept {
        if (!ring_.push(p)) delete p;
    }
    // Deletes the spares beyond the reserve that no take() needed since the last trim (the
    // fewest spares seen in between); returns how many. Call it periodically.
    std::size_t trim() noexcept {
        std::size_t unused = lowWater_.exchange(kNone, std::memory_order_relaxed);
        if (unused == kNone) unused = ring_.size();
        std::size_t freed = 0;
        while (unused > reserve_ + freed) {
            T* p = ring_.pop();
            if (!p) break;
            delete p;
            ++freed;
        }
        return freed;
    }
    std::size_t spares() const noexcept { return ring_.size(); }

  private:
    static constexpr std::size_t kNone = std::numeric_limits<std::size_t>::max();
    MpmcRing<T*> ring_;
    std::size_t reserve_;
    std::atomic<std::size_t> lowWater_{kNone};
};

}  // namespace uaplex::plugins
