// SPDX-License-Identifier: Apache-2.0
// The JSON decode threads' queue: bounded by the bytes it holds, one job always taken when
// nothing is held, nothing taken after stop, and jobs run off the posting thread.
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <future>
#include <thread>

#include <uaplex/pipeline/json_decode_pool.hpp>

using uaplex::pipeline::JsonDecodePool;
using Posted = JsonDecodePool::Posted;

TEST_CASE("the JSON decode pool holds at most its bound and runs jobs on its own threads") {
    JsonDecodePool pool(1, 1000);
    std::promise<void> release;
    std::shared_future<void> gate = release.get_future().share();
    std::promise<std::thread::id> ran;
    // Larger than the bound: taken, since nothing is held.
    REQUIRE(pool.post(5000, [&] {
        ran.set_value(std::this_thread::get_id());
        gate.wait();
    }) == Posted::Queued);
    CHECK(ran.get_future().get() != std::this_thread::get_id());
    CHECK(pool.heldBytes() == 5000);
    // While it runs (its bytes held) nothing more fits.
    CHECK(pool.post(1, [] {}) == Posted::Full);
    release.set_value();
    // Its bytes go back when it is done.
    for (int i = 0; i < 1000 && pool.heldBytes() != 0; ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    CHECK(pool.heldBytes() == 0);
    std::atomic<int> done{0};
    CHECK(pool.post(600, [&] { ++done; }) == Posted::Queued);
    for (int i = 0; i < 1000 && done.load() != 1; ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    CHECK(done.load() == 1);
    pool.stop();
    CHECK(pool.post(1, [] {}) == Posted::Stopped);
}

TEST_CASE("the JSON decode pool drops queued jobs at stop and finishes the running one") {
    JsonDecodePool pool(1, 100);
    std::promise<void> started, release;
    std::shared_future<void> gate = release.get_future().share();
    std::atomic<bool> finished{false}, dropped{true};
    REQUIRE(pool.post(10, [&] {
        started.set_value();
        gate.wait();
        finished = true;
    }) == Posted::Queued);
    started.get_future().wait();
    REQUIRE(pool.post(10, [&] { dropped = false; }) == Posted::Queued);
    std::thread stopper([&] { pool.stop(); });
    // Stopped (and the queue emptied, in the same step) before the running job may finish.
    while (!pool.stopped()) std::this_thread::yield();
    release.set_value();
    stopper.join();
    CHECK(finished.load());
    CHECK(dropped.load());
}
