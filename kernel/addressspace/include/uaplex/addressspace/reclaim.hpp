// SPDX-License-Identifier: Apache-2.0
// Deferred reclamation for the address space's store: readers never lock, the one writer
// (mutations are serialised by their caller) unlinks a node or an array and retires it here,
// and it is freed only once no reader that might still see it is left.
//
// Readers announce themselves in one of kSlots counters (picked per thread), under the phase
// they read when they entered. The writer files what it retires under the current phase;
// collect() flips the phase once the readers of the previous one are gone and frees what was
// retired before that previous flip. A reader that entered after an object was unlinked
// cannot reach it, so an object is freed after at most two flips. Nothing here waits: while
// readers stay inside, what is retired waits for a later collect().
//
// A Pin is not bound to its thread: it may be released on another one (a parked request that
// completes elsewhere). Pins nest and cost one atomic add at entry and one at exit.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace uaplex::addressspace {

class Reclaimer {
  public:
    static constexpr std::size_t kSlots = 64;
    struct Token {
        std::uint16_t slot = 0;
        std::uint8_t phase = 0;
        bool held = false;
    };

    Reclaimer() = default;
    Reclaimer(const Reclaimer&) = delete;
    Reclaimer& operator=(const Reclaimer&) = delete;
    ~Reclaimer();

    Token enter() noexcept;
    void exit(Token& t) noexcept;

    // Writer only. `del(p)` runs once no reader can hold p. Throws std::bad_alloc (before
    // anything is filed: the caller keeps p).
    void retire(void* p, void (*del)(void*));
    // Writer only: room for n more retire() calls that then do not throw.
    void reserve(std::size_t n) { current_.reserve(current_.size() + n); }
    // Writer only: frees what no reader can hold any more (at most two phase flips).
    void collect() noexcept;
    // Retired objects not freed yet (tests, metrics).
    std::size_t pending() const noexcept { return current_.size() + previous_.size(); }

  private:
    struct Retired {
        void* p;
        void (*del)(void*);
    };
    struct alignas(64) Slot {
        std::atomic<std::uint32_t> count[2] = {0, 0};
    };
    bool drained(std::uint32_t phase) const noexcept;
    static std::uint16_t threadSlot() noexcept;

    Slot slots_[kSlots];
    std::atomic<std::uint32_t> phase_{0};
    std::vector<Retired> current_;   // retired in the current phase
    std::vector<Retired> previous_;  // retired in the phase before
};

// RAII read-side section; movable so that an operation may carry it to another thread.
class Pin {
  public:
    Pin() = default;
    explicit Pin(Reclaimer& r) noexcept : r_(&r), t_(r.enter()) {}
    Pin(Pin&& o) noexcept : r_(o.r_), t_(o.t_) { o.t_.held = false; }
    Pin& operator=(Pin&& o) noexcept {
        if (this != &o) {
            release();
            r_ = o.r_;
            t_ = o.t_;
            o.t_.held = false;
        }
        return *this;
    }
    Pin(const Pin&) = delete;
    Pin& operator=(const Pin&) = delete;
    ~Pin() { release(); }
    void release() noexcept {
        if (t_.held && r_ != nullptr) r_->exit(t_);
    }
    bool held() const noexcept { return t_.held; }

  private:
    Reclaimer* r_ = nullptr;
    Reclaimer::Token t_{};
};

}  // namespace uaplex::addressspace
