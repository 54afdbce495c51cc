// SPDX-License-Identifier: Apache-2.0
// The host's timer thread allocates nothing in the steady state: a one-shot timer re-armed
// from its own callback on every tick (the buffer pool's trim) reuses the node of the last.
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <thread>

#include <uaplex/host/timers.hpp>

#include "support/counting_new.hpp"

using namespace uaplex;

namespace {

struct Rearming {
    host::TimerService* timers = nullptr;
    std::atomic<int> ticks{0};
    std::atomic<bool> measuring{false};
    std::atomic<long> allocations{0};
    int limit = 0;
};

void tick(void* user) {
    auto& r = *static_cast<Rearming*>(user);
    const std::size_t before = test::gHeap.allocations.load();
    if (r.ticks.fetch_add(1) + 1 < r.limit)
        r.timers->start(std::chrono::milliseconds(1), std::chrono::milliseconds(0), &tick, user);
    if (r.measuring.load()) r.allocations += long(test::gHeap.allocations.load() - before);
}

}  // namespace

TEST_CASE("a one-shot timer re-armed from its callback allocates nothing once warm") {
    host::TimerService timers;
    Rearming r;
    r.timers = &timers;
    r.limit = 60;
    timers.start(std::chrono::milliseconds(1), std::chrono::milliseconds(0), &tick, &r);
    while (r.ticks.load() < 10) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    r.measuring = true;
    while (r.ticks.load() < r.limit) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    CHECK(r.allocations.load() == 0);
    CHECK(timers.active() == 0);
}

TEST_CASE("a cancelled timer's node serves the next start") {
    host::TimerService timers;
    auto noop = [](void*) {};
    std::uint64_t a =
        timers.start(std::chrono::hours(1), std::chrono::milliseconds(0), noop, nullptr);
    timers.cancel(a);
    const std::size_t before = test::gHeap.allocations.load();
    std::uint64_t b =
        timers.start(std::chrono::hours(1), std::chrono::milliseconds(0), noop, nullptr);
    CHECK(test::gHeap.allocations.load() == before);
    CHECK(b != a);
    CHECK(timers.active() == 1);
    timers.cancel(b);
    CHECK(timers.active() == 0);
}
