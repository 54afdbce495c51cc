// SPDX-License-Identifier: Apache-2.0
// Buffer-pool conformance (docs/pipeline.md, Buffer pool), through the C ABI only.
#include <malloc.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "plugin_fixture.hpp"

namespace {

using Loaded = uaplex::conformance::Loaded<uaplex_buffer_pool_factory, uaplex_buffer_pool_params,
                                           uaplex_buffer_pool_ops>;

constexpr uint64_t kMiB = 1024 * 1024;

struct Pool : Loaded {
    explicit Pool(const char* check, uint64_t budget = 0, int64_t trim_interval_ms = -1) {
        auto lib = uaplex::conformance::library_from_env("UAPLEX_BP_PLUGIN");
        REQUIRE(lib->descriptor().buffer_pool != nullptr);
        params.hdr = UAPLEX_HEADER_INIT(uaplex_buffer_pool_params, UAPLEX_STYPE_BUFFER_POOL_PARAMS);
        params.max_outstanding_bytes = budget;
        toml::table settings;
        settings.insert("check", check);
        if (trim_interval_ms >= 0) settings.insert("trim_interval_ms", trim_interval_ms);
        load(lib, *lib->descriptor().buffer_pool, settings);
    }
    uaplex_buffer_manager* manager(uint32_t max) {
        uaplex_buffer_manager* m = nullptr;
        REQUIRE(ops->manager_create(self, uaplex_str{"test", 4}, max, &m) == UAPLEX_Good);
        return m;
    }
    uint32_t suggested(uaplex_buffer_manager* m, uint32_t n) {
        uint32_t out = 0;
        REQUIRE(ops->suggested_size(self, m, n, &out) == UAPLEX_Good);
        return out;
    }
    uint32_t expected(uaplex_buffer_manager* m, uint32_t n) {
        uint32_t out = 0;
        REQUIRE(ops->expected_size(self, m, n, &out) == UAPLEX_Good);
        return out;
    }
    uaplex_status take(uaplex_buffer_manager* m, uint32_t n, uaplex_buffer* b,
                       const uaplex_cancel_token* cancel = nullptr) {
        return ops->take(self, m, n, this, cancel, b);
    }
    uaplex_buffer rent(uaplex_buffer_manager* m, uint32_t n) {
        uaplex_buffer b{};
        REQUIRE(take(m, n, &b) == UAPLEX_Good);
        REQUIRE(b.length >= n);
        return b;
    }
    uaplex_status give_back(uaplex_buffer* b) { return ops->give_back(self, b, this); }
    uint64_t retained() {
        uint64_t r = 0, o = 0;
        REQUIRE(ops->stats(self, &r, &o) == UAPLEX_Good);
        return r;
    }
    uint64_t outstanding() {
        uint64_t r = 0, o = 0;
        REQUIRE(ops->stats(self, &r, &o) == UAPLEX_Good);
        return o;
    }
};

using Token = uaplex::conformance::CancelToken;

}  // namespace

TEST_CASE("1: suggested and expected sizes follow the metadata bytes") {
    Pool fast("fast");
    auto* f = fast.manager(65536);
    CHECK(fast.suggested(f, 65536) == 65536);
    CHECK(fast.expected(f, 65536) == 65536);
    CHECK(fast.expected(f, 1) == 16);
    Pool cookie("cookie");
    auto* c = cookie.manager(65536);
    CHECK(cookie.suggested(c, 65536) == 65535);
    CHECK(cookie.expected(c, 65535) == 65536);
    CHECK(cookie.suggested(c, 1000) == 1000);  // 1001 still fits bucket 1024
    Pool tracing("tracing");
    auto* t = tracing.manager(65536);
    CHECK(tracing.suggested(t, 65536) == 65531);
    CHECK(tracing.expected(t, 65531) == 65536);
    CHECK(fast.ops->manager_destroy(fast.self, f) == UAPLEX_Good);
    CHECK(cookie.ops->manager_destroy(cookie.self, c) == UAPLEX_Good);
    CHECK(tracing.ops->manager_destroy(tracing.self, t) == UAPLEX_Good);
}

TEST_CASE("2: out of range, cancelled, and cookie misuse are refused") {
    Pool p("cookie");
    auto* m = p.manager(65536);
    uaplex_buffer b{};
    CHECK(p.take(m, static_cast<uint32_t>(-1), &b) == UAPLEX_BadOutOfRange);
    CHECK(p.take(m, 65537, &b) == UAPLEX_BadOutOfRange);
    Token t;
    t.status = UAPLEX_BadRequestCancelledByClient;
    CHECK(p.take(m, 100, &b, &t.token) == UAPLEX_BadRequestCancelledByClient);
    CHECK(p.outstanding() == 0);

    b = p.rent(m, 100);
    CHECK(p.ops->lock(p.self, &b) == UAPLEX_Good);
    CHECK(p.ops->lock(p.self, &b) == UAPLEX_BadInvalidState);  // double lock
    CHECK(p.give_back(&b) == UAPLEX_BadInvalidState);          // returning a locked buffer
    CHECK(p.ops->unlock(p.self, &b) == UAPLEX_Good);
    CHECK(p.ops->unlock(p.self, &b) == UAPLEX_BadInvalidState);
    uaplex_buffer copy = b;
    CHECK(p.give_back(&b) == UAPLEX_Good);
    CHECK(b.data == nullptr);
    // A second return of the same array: the cookie says it came back already. Checked
    // before another rent can reuse it (the array is retained, so its bytes are readable).
    CHECK(p.give_back(&copy) == UAPLEX_BadInvalidState);
    uaplex_buffer none{};
    CHECK(p.give_back(&none) == UAPLEX_Good);  // null buffer: no-op
    CHECK(p.outstanding() == 0);
    CHECK(p.ops->manager_destroy(p.self, m) == UAPLEX_Good);
}

TEST_CASE("2b: tracing rejects an untracked array") {
    Pool p("tracing");
    auto* m = p.manager(4096);
    auto b = p.rent(m, 10);
    uaplex_buffer copy = b;
    CHECK(p.give_back(&b) == UAPLEX_Good);
    copy.data[copy.length + 4] = 0x5A;  // forge the cookie: the allocation is still untracked
    CHECK(p.give_back(&copy) == UAPLEX_BadInvalidState);
    CHECK(p.ops->manager_destroy(p.self, m) == UAPLEX_Good);
}

TEST_CASE("3: two managers with the same bucket limit share arrays") {
    Pool p("fast");
    auto* a = p.manager(65536);
    auto* b = p.manager(40000);  // bucket 65536 as well
    auto x = p.rent(a, 5000);
    uint8_t* array = x.data;
    REQUIRE(p.give_back(&x) == UAPLEX_Good);
    auto y = p.rent(b, 6000);  // same bucket (8192)
    CHECK(y.data == array);
    REQUIRE(p.give_back(&y) == UAPLEX_Good);
    // Another instance of the plugin (a client manager, say) shares the process-wide pool.
    Pool other("fast");
    auto* c = other.manager(65536);
    auto z = other.rent(c, 8000);
    CHECK(z.data == array);
    REQUIRE(other.give_back(&z) == UAPLEX_Good);
    CHECK(other.ops->manager_destroy(other.self, c) == UAPLEX_Good);
    CHECK(p.ops->manager_destroy(p.self, a) == UAPLEX_Good);
    CHECK(p.ops->manager_destroy(p.self, b) == UAPLEX_Good);
}

TEST_CASE("4: retention is bounded per bucket and in total") {
    // No trim timer: a slow run (a sanitizer build) would see arrays trimmed between steps.
    Pool p("fast", 0, 0);
    auto* m = p.manager(65536);
    constexpr int kArrays = 2000;
    std::vector<uaplex_buffer> bufs;
    bufs.reserve(kArrays);
    for (int i = 0; i < kArrays; ++i) bufs.push_back(p.rent(m, 65536));
    CHECK(p.retained() == 0);
    std::vector<std::thread> threads;
    std::atomic<int> failed{0};  // threads assert nothing (Catch2 is not thread-safe)
    for (int t = 0; t < 4; ++t)
        threads.emplace_back([&, t] {
            for (int i = t; i < kArrays; i += 4)
                if (p.ops->give_back(p.self, &bufs[i], &p) != UAPLEX_Good) failed.fetch_add(1);
        });
    for (auto& t : threads) t.join();
    CHECK(failed == 0);
    CHECK(p.retained() == 1024 * 65536ull);
    CHECK(p.metric("discards") == kArrays - 1024);

    // Fill every bucket 16 ... 64 KiB: still below 2 * 64 MiB.
    for (uint32_t len = 16; len <= 32768; len <<= 1) {
        std::vector<uaplex_buffer> v;
        for (int i = 0; i < 1100; ++i) v.push_back(p.rent(m, len));
        for (auto& b : v) REQUIRE(p.give_back(&b) == UAPLEX_Good);
    }
    CHECK(p.retained() == 1024ull * (2 * 65536 - 16));
    CHECK(p.retained() < 128 * kMiB);
    CHECK(p.ops->manager_destroy(p.self, m) == UAPLEX_Good);

    // L = 128 MiB: C = 1, so each bucket keeps one array. The big arrays are never touched
    // (fast check), so they cost address space only.
    auto* big = p.manager(128 * kMiB);
    auto b1 = p.rent(big, 128 * kMiB), b2 = p.rent(big, 128 * kMiB);
    auto s1 = p.rent(big, 10), s2 = p.rent(big, 10);
    for (auto* b : {&b1, &b2, &s1, &s2}) REQUIRE(p.give_back(b) == UAPLEX_Good);
    CHECK(p.retained() == 128 * kMiB + 16);
    CHECK(p.ops->manager_destroy(p.self, big) == UAPLEX_Good);
}

TEST_CASE("5: nothing is pre-allocated; retention grows to min(k, C)") {
    // L = 16 MiB gives C = 4 arrays per bucket.
    Pool p("fast");
    auto* m = p.manager(16 * kMiB);
    CHECK(p.retained() == 0);
    for (int k : {3, 6}) {
        std::vector<uaplex_buffer> v;
        for (int i = 0; i < k; ++i) v.push_back(p.rent(m, 100));
        CHECK(p.retained() == 0);  // none before the first return (k = 3 took them all back)
        for (auto& b : v) REQUIRE(p.give_back(&b) == UAPLEX_Good);
        CHECK(p.retained() == static_cast<uint64_t>(std::min(k, 4)) * 128);
    }
    CHECK(p.metric("allocations") == 6);  // 3 new, then 3 reused and 3 new
    CHECK(p.ops->manager_destroy(p.self, m) == UAPLEX_Good);
}

TEST_CASE("6: the process limiter blocks, cancels, and refuses foreign returns") {
    constexpr uint32_t kBucket = 65536;
    Pool p("fast", 2 * kBucket);
    auto* m = p.manager(kBucket);
    auto a = p.rent(m, kBucket), b = p.rent(m, kBucket);
    CHECK(p.outstanding() == 2 * kBucket);

    // The third rent waits until a return.
    std::atomic<bool> got{false};
    std::atomic<uaplex_status> waited{UAPLEX_BadInternalError};
    uaplex_buffer c{};
    std::thread waiter([&] {
        waited = p.ops->take(p.self, m, kBucket, &p, nullptr, &c);
        got = true;
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    CHECK_FALSE(got.load());
    REQUIRE(p.give_back(&a) == UAPLEX_Good);
    waiter.join();
    CHECK(got.load());
    REQUIRE(waited == UAPLEX_Good);

    // A cancelled wait gives the token's status and leaks nothing.
    Token t;
    std::thread canceller([&] {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        t.status = UAPLEX_BadRequestCancelledByClient;
    });
    uaplex_buffer d{};
    CHECK(p.take(m, kBucket, &d, &t.token) == UAPLEX_BadRequestCancelledByClient);
    canceller.join();
    CHECK(p.outstanding() == 2 * kBucket);

    // Above the budget: at once.
    auto* wide = p.manager(4 * kBucket);
    CHECK(p.take(wide, 3 * kBucket, &d) == UAPLEX_BadInvalidState);

    // Foreign and double returns change no count.
    Pool other("fast");
    auto* om = other.manager(kBucket);
    auto foreign = other.rent(om, 100);
    uaplex_buffer forged = foreign;
    forged.manager = m;
    CHECK(p.give_back(&forged) == UAPLEX_BadInvalidState);
    CHECK(p.give_back(&foreign) == UAPLEX_BadInvalidState);
    CHECK(p.outstanding() == 2 * kBucket);
    uaplex_buffer again = b;
    REQUIRE(p.give_back(&b) == UAPLEX_Good);
    CHECK(p.give_back(&again) == UAPLEX_BadInvalidState);
    CHECK(p.outstanding() == kBucket);
    REQUIRE(p.give_back(&c) == UAPLEX_Good);
    CHECK(p.outstanding() == 0);
    REQUIRE(other.give_back(&foreign) == UAPLEX_Good);

    // Stop fails a waiter with BadShutdown.
    auto e = p.rent(m, kBucket), f = p.rent(m, kBucket);
    std::thread stopper([&] {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        p.stop();
    });
    CHECK(p.take(m, kBucket, &d) == UAPLEX_BadShutdown);
    stopper.join();
    REQUIRE(p.give_back(&e) == UAPLEX_Good);
    REQUIRE(p.give_back(&f) == UAPLEX_Good);
    CHECK(p.ops->manager_destroy(p.self, m) == UAPLEX_Good);
    CHECK(p.ops->manager_destroy(p.self, wide) == UAPLEX_Good);
    CHECK(other.ops->manager_destroy(other.self, om) == UAPLEX_Good);
}

// Waits for `done` (the trim timer runs on the host's timer thread); false after 30 s.
template <typename F>
static bool eventually(F done) {
    for (int i = 0; i < 30000; ++i) {
        if (done()) return true;
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    return done();
}

TEST_CASE("7: idle arrays are trimmed; the trim timer runs only while there is something to trim") {
    Pool p("fast", 0, 5);
    auto* m = p.manager(65536 - 16);
    // Nothing retained: no timer, so an idle pool wakes nobody.
    CHECK(p.services.timers.active() == 0);
    std::vector<uaplex_buffer> bufs;
    for (int i = 0; i < 8; ++i) bufs.push_back(p.rent(m, 1000));
    CHECK(p.services.timers.active() == 0);
    for (auto& b : bufs) REQUIRE(p.give_back(&b) == UAPLEX_Good);
    CHECK(p.retained() == 8 * 1024);
    // The first array kept armed the timer.
    CHECK(p.services.timers.active() == 1);
    // Halved each interval they stay unused, down to nothing; then the timer stops.
    CHECK(eventually([&] { return p.retained() == 0; }));
    CHECK(eventually([&] { return p.services.timers.active() == 0; }));
    int64_t ticks = p.metric("trim_ticks");
    CHECK(ticks >= 3);  // 8 unused for a whole interval only from the second tick on
    // A later return arms it again and is trimmed again.
    uaplex_buffer b = p.rent(m, 1000);
    REQUIRE(p.give_back(&b) == UAPLEX_Good);
    CHECK(p.services.timers.active() == 1);
    CHECK(eventually([&] { return p.retained() == 0; }));
    CHECK(eventually([&] { return p.services.timers.active() == 0; }));
    CHECK(p.metric("trim_ticks") > ticks);
    // Stop with a tick pending: the timer is gone and later returns start none.
    b = p.rent(m, 1000);
    REQUIRE(p.give_back(&b) == UAPLEX_Good);
    p.stop();
    CHECK(p.services.timers.active() == 0);
    b = p.rent(m, 1000);
    REQUIRE(p.give_back(&b) == UAPLEX_Good);
    CHECK(p.services.timers.active() == 0);
    p.ops->manager_destroy(p.self, m);
}

TEST_CASE("7b: trim_interval_ms 0 never starts the timer") {
    Pool p("fast", 0, 0);
    auto* m = p.manager(65536 - 16);
    uaplex_buffer b = p.rent(m, 1000);
    REQUIRE(p.give_back(&b) == UAPLEX_Good);
    CHECK(p.retained() == 1024);
    CHECK(p.services.timers.active() == 0);
    p.ops->manager_destroy(p.self, m);
}

TEST_CASE("bounded: arrays of a page or more are mappings of their own, not C heap blocks") {
    // A burst of handshakes rents hundreds of 16 KiB arrays; from the C heap they left holes
    // between the connections' long-lived blocks once the pool let them go.
    Pool p("fast");
    auto* m = p.manager(16 * kMiB);
    auto heapInUse = [] { return mallinfo2().uordblks; };
    std::vector<uaplex_buffer> v;
    v.reserve(64);
    size_t before = heapInUse();
    for (int i = 0; i < 64; ++i) v.push_back(p.rent(m, 16000));
    CHECK(heapInUse() - before < 64 * 1024);  // 1 MiB from the heap before
    for (auto& b : v) {
        for (uint32_t i = 0; i < b.length; i += 4096) b.data[i] = 1;  // usable throughout
        REQUIRE(p.give_back(&b) == UAPLEX_Good);
    }
    // Small arrays stay heap blocks (a page each would waste most of it).
    uaplex_buffer small = p.rent(m, 100);
    REQUIRE(p.give_back(&small) == UAPLEX_Good);
    CHECK(p.ops->manager_destroy(p.self, m) == UAPLEX_Good);
}
