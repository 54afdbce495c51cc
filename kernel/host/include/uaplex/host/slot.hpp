// SPDX-License-Identifier: Apache-2.0
// A hot-swappable slot: callers reach the current instance through a per-slot epoch
// scheme, with no lock on the call path; exchange() returns the previous instance only
// after every call that could still reach it has returned.
//
// Call path: read the epoch, count the caller in the epoch's parity, re-check the epoch (so
// the count is visible to a swapper that already moved on), load the instance, call,
// uncount. Swap (serialised by a mutex that callers never take): publish the new instance,
// then flip the epoch twice, each time waiting for the parity that was current to drain.
// A caller that loaded the old instance was counted in one of those two parities, so after
// the second drain no caller can still hold it. Callers that start after the publication see
// the new instance. The cost per call is four atomic operations on two cache lines.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <thread>

namespace uaplex::host {

template <typename T>
class Slot {
  public:
    // Keeps the instance reachable for the duration of one call.
    class Ref {
      public:
        Ref(Ref&& o) noexcept : slot_(o.slot_), parity_(o.parity_), instance_(o.instance_) {
            o.slot_ = nullptr;
        }
        Ref(const Ref&) = delete;
        Ref& operator=(const Ref&) = delete;
        Ref& operator=(Ref&&) = delete;
        ~Ref() {
            if (slot_) slot_->readers_[parity_].value.fetch_sub(1, std::memory_order_release);
        }
        T* get() const noexcept { return instance_; }
        T* operator->() const noexcept { return instance_; }
        explicit operator bool() const noexcept { return instance_ != nullptr; }

      private:
        friend class Slot;
        Ref(Slot* s, unsigned p, T* i) noexcept : slot_(s), parity_(p), instance_(i) {}
        Slot* slot_;
        unsigned parity_;
        T* instance_;
    };

    Slot() = default;
    Slot(const Slot&) = delete;
    Slot& operator=(const Slot&) = delete;

    // Any thread; never blocks.
    Ref acquire() noexcept {
        for (;;) {
            uint64_t e = epoch_.value.load(std::memory_order_seq_cst);
            unsigned p = static_cast<unsigned>(e & 1u);
            readers_[p].value.fetch_add(1, std::memory_order_seq_cst);
            if (epoch_.value.load(std::memory_order_seq_cst) == e)
                return Ref(this, p, current_.value.load(std::memory_order_seq_cst));
            readers_[p].value.fetch_sub(1, std::memory_order_release);
        }
    }

    // Installs `next` (may be null) and returns the previous instance once no call can be
    // using it any more. Blocks for as long as the longest call in flight.
    std::shared_ptr<T> exchange(std::shared_ptr<T> next) {
        return exchange(std::move(next), [](T*) {});
    }
    // The same; while calls are still in flight, `nudge(instance)` runs again and again for
    // the previous and for the new instance (a call that started after the publication is
    // counted in a parity the second round drains too): it makes a blocking call return.
    template <typename Nudge>
    std::shared_ptr<T> exchange(std::shared_ptr<T> next, Nudge&& nudge) {
        std::lock_guard lock(swap_mutex_);
        current_.value.store(next.get(), std::memory_order_seq_cst);
        std::shared_ptr<T> previous = std::move(owner_);
        owner_ = std::move(next);
        for (int round = 0; round < 2; ++round) {
            uint64_t e = epoch_.value.load(std::memory_order_seq_cst);
            epoch_.value.store(e + 1, std::memory_order_seq_cst);
            auto& drained = readers_[e & 1u].value;
            for (unsigned spins = 0; drained.load(std::memory_order_acquire) != 0; ++spins) {
                if (spins < 64) {
                    std::this_thread::yield();
                } else {
                    nudge(previous.get());
                    nudge(owner_.get());
                    std::this_thread::sleep_for(std::chrono::microseconds(50));
                }
            }
        }
        return previous;
    }

    // The installed instance, for management code (not for calls: use acquire()).
    std::shared_ptr<T> current() const {
        std::lock_guard lock(swap_mutex_);
        return owner_;
    }

  private:
    // Each counter on its own cache line so callers and the swapper do not false-share.
    template <typename V>
    struct alignas(64) Padded {
        std::atomic<V> value{};
    };
    Padded<T*> current_;
    Padded<uint64_t> epoch_;
    Padded<int64_t> readers_[2];
    mutable std::mutex swap_mutex_;
    std::shared_ptr<T> owner_;
};

}  // namespace uaplex::host
