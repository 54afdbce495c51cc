// SPDX-License-Identifier: Apache-2.0
// The epoch slot on its own: exchange returns the old instance only after every call that
// could reach it has returned, and never while a call is inside it.
#include <atomic>
#include <catch2/catch.hpp>
#include <thread>
#include <vector>

#include <uaplex/host/slot.hpp>

namespace {
struct Counter {
    explicit Counter(int id) : id(id) {}
    int id;
    std::atomic<int> inside{0};
    std::atomic<uint64_t> calls{0};
    std::atomic<bool> retired{false};
};
}  // namespace

TEST_CASE("an empty slot gives a null reference") {
    uaplex::host::Slot<Counter> slot;
    auto ref = slot.acquire();
    CHECK_FALSE(ref);
}

TEST_CASE("exchange waits for a call in progress") {
    uaplex::host::Slot<Counter> slot;
    slot.exchange(std::make_shared<Counter>(1));
    std::atomic<bool> in_call{false}, release{false}, swapped{false};
    std::thread caller([&] {
        auto ref = slot.acquire();
        in_call = true;
        while (!release) std::this_thread::yield();
        CHECK(ref->id == 1);
    });
    while (!in_call) std::this_thread::yield();
    std::thread swapper([&] {
        auto old = slot.exchange(std::make_shared<Counter>(2));
        swapped = true;
        CHECK(old->id == 1);
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    CHECK_FALSE(swapped.load());     // still blocked by the caller
    CHECK(slot.acquire()->id == 2);  // new calls already see the new instance
    release = true;
    caller.join();
    swapper.join();
    CHECK(swapped.load());
}

TEST_CASE("no call reaches an instance after exchange returned it") {
    uaplex::host::Slot<Counter> slot;
    slot.exchange(std::make_shared<Counter>(0));
    std::atomic<bool> stop{false};
    std::atomic<uint64_t> violations{0}, total{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < 3; ++t) {
        threads.emplace_back([&] {
            while (!stop.load(std::memory_order_relaxed)) {
                auto ref = slot.acquire();
                ref->inside.fetch_add(1);
                if (ref->retired.load()) violations.fetch_add(1);
                ref->calls.fetch_add(1);
                ref->inside.fetch_sub(1);
                total.fetch_add(1, std::memory_order_relaxed);
            }
        });
    }
    uint64_t counted = 0;
    for (int i = 1; i <= 200; ++i) {
        auto old = slot.exchange(std::make_shared<Counter>(i));
        if (old->inside.load() != 0) violations.fetch_add(1);
        old->retired = true;
        counted += old->calls.load();
    }
    stop = true;
    for (auto& t : threads) t.join();
    counted += slot.exchange(nullptr)->calls.load();
    CHECK(violations.load() == 0);
    CHECK(counted == total.load());
}
