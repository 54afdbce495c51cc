// SPDX-License-Identifier: Apache-2.0
// A bounded multi-producer multi-consumer ring of pointers, shared by the plugins that hand
// objects between threads without a lock. Each cell carries a sequence number that tells
// producers and consumers whose turn it is, so push and pop are a single compare-and-swap on
// the shared position plus a release store on the cell.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <type_traits>

namespace uaplex::sdk {

// CellAlignment: 64 gives every cell its own cache line (no false sharing between a producer
// and a consumer of neighbouring cells, for twice the memory at least).
template <typename T, std::size_t CellAlignment = alignof(std::atomic<uint64_t>)>
class MpmcRing {
    static_assert(std::is_pointer_v<T>);

  public:
    explicit MpmcRing(std::size_t capacity)  // capacity: a power of two
        : mask_(capacity - 1), cells_(new Cell[capacity]) {
        for (std::size_t i = 0; i < capacity; ++i)
            cells_[i].seq.store(i, std::memory_order_relaxed);
    }
    // False when the ring is full.
    bool push(T value) {
        return push(value, [](uint64_t) {});
    }
    // As push(value), and `placed(ticket)` runs after the value took its place and before a
    // consumer can see it. The ticket counts pushes (it names this push: pop returns it), so
    // `placed` can record in the value what a consumer should find there.
    //
    // The position is taken with a seq_cst CAS: a thread that sets a flag and then checks
    // empty() (both seq_cst), and a pusher that checks the flag after its push, cannot both
    // miss each other. On x86 a CAS costs the same in any order.
    template <typename Placed>
    bool push(T value, Placed&& placed) {
        uint64_t pos = tail_.load(std::memory_order_relaxed);
        for (;;) {
            Cell& c = cells_[pos & mask_];
            uint64_t seq = c.seq.load(std::memory_order_acquire);
            auto diff = static_cast<int64_t>(seq - pos);
            if (diff == 0) {
                if (tail_.compare_exchange_weak(pos, pos + 1, std::memory_order_seq_cst,
                                                std::memory_order_relaxed)) {
                    placed(pos);
                    c.value = value;
                    c.seq.store(pos + 1, std::memory_order_release);
                    return true;
                }
            } else if (diff < 0) {
                return false;
            } else {
                pos = tail_.load(std::memory_order_relaxed);
            }
        }
    }
    // Null when the ring is empty (or a push is not yet published). `ticket`, when given,
    // receives the ticket of the push that stored the value.
    T pop(uint64_t* ticket = nullptr) {
        uint64_t pos = head_.load(std::memory_order_relaxed);
        for (;;) {
            Cell& c = cells_[pos & mask_];
            uint64_t seq = c.seq.load(std::memory_order_acquire);
            auto diff = static_cast<int64_t>(seq - (pos + 1));
            if (diff == 0) {
                if (head_.compare_exchange_weak(pos, pos + 1, std::memory_order_relaxed)) {
                    T value = c.value;
                    c.seq.store(pos + mask_ + 1, std::memory_order_release);
                    if (ticket) *ticket = pos;
                    return value;
                }
            } else if (diff < 0) {
                return nullptr;
            } else {
                pos = head_.load(std::memory_order_relaxed);
            }
        }
    }

    // How many values the ring holds, approximately while others push and pop.
    std::size_t size() const noexcept {
        auto n = static_cast<int64_t>(tail_.load(std::memory_order_relaxed) -
                                      head_.load(std::memory_order_relaxed));
        return n > 0 ? static_cast<std::size_t>(n) : 0;
    }
    // True when every push that took a place has been popped (seq_cst reads; see push).
    bool empty() const noexcept {
        return head_.load(std::memory_order_seq_cst) == tail_.load(std::memory_order_seq_cst);
    }

  private:
    struct alignas(CellAlignment) Cell {
        std::atomic<uint64_t> seq{0};
        T value = nullptr;
    };
    uint64_t mask_;
    std::unique_ptr<Cell[]> cells_;
    alignas(64) std::atomic<uint64_t> head_{0};
    alignas(64) std::atomic<uint64_t> tail_{0};
};

}  // namespace uaplex::sdk
