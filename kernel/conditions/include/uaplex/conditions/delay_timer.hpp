// SPDX-License-Identifier: Apache-2.0
// The ends of OnDelay and OffDelay (Part 9 5.8.2) of the alarms the kernel evaluates: a
// delayed activation or deactivation takes effect when its delay expires, even when no new
// value arrives. One timing wheel for all alarms (no thread per alarm): each alarm owns a
// DelayEntry, linked into the slot of its deadline; scheduling, moving and cancelling an
// entry are pointer changes (no allocation). A thread of the timer's fires the entries due,
// each without the timer's lock held, waking once per resolution only while any is pending.
#pragma once

#include <array>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <thread>

#include "uaplex/encoding/encoding.hpp"

namespace uaplex::conditions {

// Intrusive: lives in the alarm it stands for. Its links belong to the timer.
struct DelayEntry {
    DelayEntry* prev = nullptr;
    DelayEntry* next = nullptr;
    ua::DateTime at = 0;  // the deadline; 0: not scheduled
};

class DelayTimer {
  public:
    // Called for each entry due by `now` (unlinked first), on the thread of run() and
    // without the timer's lock: it may schedule the entry again.
    using Fire = void (*)(void* user, DelayEntry& entry, ua::DateTime now);
    // 10 ms: a delay ends at most this late (plus scheduling) on the timer's thread.
    static constexpr std::int64_t kResolution = 100'000;  // 100 ns ticks
    static constexpr std::size_t kSlots = 512;            // the wheel's turn: 5.12 s

    DelayTimer(Fire fire, void* user) noexcept : fire_(fire), user_(user) {}
    ~DelayTimer();  // stops the thread
    DelayTimer(const DelayTimer&) = delete;
    DelayTimer& operator=(const DelayTimer&) = delete;

    // Schedules `e` for `at` (moving it when scheduled already); `at` 0 cancels it. The
    // entry must stay alive until cancelled or fired.
    void schedule(DelayEntry& e, ua::DateTime at) noexcept;
    // Fires every entry due by `now` (tests pass their own clock; the thread the system's).
    // One caller at a time.
    void run(ua::DateTime now);
    // The thread: run(utcNow()) every kResolution while entries are pending.
    void start();
    void stop() noexcept;
    std::size_t pending() const noexcept;

  private:
    static void unlink(DelayEntry& e) noexcept;
    static std::size_t slotOf(ua::DateTime at) noexcept {
        return std::size_t(std::uint64_t(at / kResolution) % kSlots);
    }
    void loop();

    Fire fire_;
    void* user_;
    mutable std::mutex mutex_;
    std::condition_variable cv_;
    // Each slot a circular list through its head; the due list likewise.
    std::array<DelayEntry, kSlots> slots_{};
    DelayEntry due_{};
    std::int64_t lastTick_ = 0;  // the last tick whose slot run() emptied of what was due
    std::size_t pending_ = 0;
    bool stop_ = false;
    std::thread thread_;
};

}  // namespace uaplex::conditions
