// SPDX-License-Identifier: Apache-2.0
#include <uaplex/addressspace/reclaim.hpp>

namespace uaplex::addressspace {

Reclaimer::~Reclaimer() {
    for (Retired& r : previous_) r.del(r.p);
    for (Retired& r : current_) r.del(r.p);
}

std::uint16_t Reclaimer::threadSlot() noexcept {
    static std::atomic<std::uint32_t> next{0};
    thread_local const std::uint16_t slot =
        static_cast<std::uint16_t>(next.fetch_add(1, std::memory_order_relaxed) % kSlots);
    return slot;
}

Reclaimer::Token Reclaimer::enter() noexcept {
    Token t;
    t.slot = threadSlot();
    t.phase = static_cast<std::uint8_t>(phase_.load(std::memory_order_seq_cst) & 1u);
    // seq_cst: ordered against the writer's unlink and its check of this counter, so a reader
    // the writer did not count sees the unlink (and never the object it retired).
    slots_[t.slot].count[t.phase].fetch_add(1, std::memory_order_seq_cst);
    t.held = true;
    return t;
}

void Reclaimer::exit(Token& t) noexcept {
    slots_[t.slot].count[t.phase].fetch_sub(1, std::memory_order_release);
    t.held = false;
}

void Reclaimer::retire(void* p, void (*del)(void*)) {
    current_.push_back(Retired{p, del});
}

bool Reclaimer::drained(std::uint32_t phase) const noexcept {
    std::atomic_thread_fence(std::memory_order_seq_cst);
    for (const Slot& s : slots_)
        if (s.count[phase & 1u].load(std::memory_order_acquire) != 0) return false;
    return true;
}

void Reclaimer::collect() noexcept {
    for (int round = 0; round < 2; ++round) {
        if (current_.empty() && previous_.empty()) return;
        const std::uint32_t phase = phase_.load(std::memory_order_relaxed);
        if (!drained(phase ^ 1u)) return;  // readers of the previous phase are still inside
        for (Retired& r : previous_) r.del(r.p);
        previous_.clear();
        previous_.swap(current_);
        phase_.store(phase + 1, std::memory_order_seq_cst);
    }
}

}  // namespace uaplex::addressspace
