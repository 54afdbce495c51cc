// SPDX-License-Identifier: Apache-2.0
// Request-queue conformance: what every request-queue plugin must do, through the C ABI
// only. The plugin library comes from UAPLEX_RQ_PLUGIN; the queue is created with
// params.max_queued = 8 and no settings.
#include <atomic>
#include <catch2/catch.hpp>
#include <cstdlib>
#include <limits>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

#include <uaplex/config/config.hpp>
#include <uaplex/host/plugin_host.hpp>
#include "plugin_fixture.hpp"

namespace {

constexpr uint32_t kCapacity = 8;

// Records every completion the queue makes, to check "exactly once".
struct Completions {
    std::mutex mutex;
    std::map<uaplex_request_entry*, std::vector<uaplex_status>> by_entry;
    static uaplex_status complete(void* user, uaplex_request_entry* e, uaplex_status st) {
        auto* self = static_cast<Completions*>(user);
        std::lock_guard lock(self->mutex);
        self->by_entry[e].push_back(st);
        return UAPLEX_Good;
    }
    size_t total() {
        std::lock_guard lock(mutex);
        size_t n = 0;
        for (auto& [e, v] : by_entry) n += v.size();
        return n;
    }
};

using Token = uaplex::conformance::CancelToken;

struct Queue {
    uaplex::host::Services services;
    Completions completions;
    uaplex_request_queue_params params{};
    std::unique_ptr<uaplex::host::PluginInstance> instance;
    const uaplex_request_queue_ops* ops = nullptr;
    void* self = nullptr;
    uint32_t abi_minor = 0;  // the minor version the plugin was built with

    Queue() {
        const char* path = std::getenv("UAPLEX_RQ_PLUGIN");
        REQUIRE(path != nullptr);
        auto lib = uaplex::host::loadLibrary(path);
        REQUIRE(lib->descriptor().request_queue != nullptr);
        abi_minor = lib->descriptor().abi_minor;
        uaplex::config::PluginConfig pc;
        pc.name = lib->name();
        params.hdr =
            UAPLEX_HEADER_INIT(uaplex_request_queue_params, UAPLEX_STYPE_REQUEST_QUEUE_PARAMS);
        params.max_queued = kCapacity;
        params.complete = &Completions::complete;
        params.user = &completions;
        instance = std::make_unique<uaplex::host::PluginInstance>(lib, UAPLEX_KIND_REQUEST_QUEUE,
                                                                  pc, services);
        instance->create(*lib->descriptor().request_queue, params);
        instance->start();
        ops = instance->ops<uaplex_request_queue_ops>();
        self = instance->self();
    }
    uaplex_status enqueue(uaplex_request_entry* e) { return ops->enqueue(self, e); }
    uaplex_request_entry* try_dequeue(uaplex_status* st = nullptr) {
        uaplex_request_entry* e = nullptr;
        uaplex_status s = ops->try_dequeue(self, &e);
        if (st) *st = s;
        return s == UAPLEX_Good ? e : nullptr;
    }
    uint64_t count() {
        uint64_t n = 0;
        REQUIRE(ops->count(self, &n) == UAPLEX_Good);
        return n;
    }
};

std::vector<uaplex_request_entry> entries(size_t n) {
    std::vector<uaplex_request_entry> v(n);
    for (size_t i = 0; i < n; ++i) {
        v[i].hdr = UAPLEX_HEADER_INIT(uaplex_request_entry, UAPLEX_STYPE_REQUEST_ENTRY);
        v[i].request_id = static_cast<uint32_t>(i + 1);
    }
    return v;
}

}  // namespace

TEST_CASE("requests leave in the order they were admitted") {
    Queue q;
    auto e = entries(kCapacity);
    for (auto& x : e) REQUIRE(q.enqueue(&x) == UAPLEX_Good);
    CHECK(q.count() == kCapacity);
    for (auto& x : e) CHECK(q.try_dequeue() == &x);
    uaplex_status st = UAPLEX_Good;
    CHECK(q.try_dequeue(&st) == nullptr);
    CHECK(st == UAPLEX_BadNothingToDo);
    CHECK(q.count() == 0);
    CHECK(q.completions.total() == 0);  // handed out entries are the caller's to complete
}

TEST_CASE("a full queue rejects with BadServerTooBusy and does not complete") {
    Queue q;
    auto e = entries(kCapacity + 2);
    for (uint32_t i = 0; i < kCapacity; ++i) REQUIRE(q.enqueue(&e[i]) == UAPLEX_Good);
    CHECK(q.enqueue(&e[kCapacity]) == UAPLEX_BadServerTooBusy);
    CHECK(q.enqueue(&e[kCapacity + 1]) == UAPLEX_BadServerTooBusy);
    CHECK(q.count() == kCapacity);
    CHECK(q.completions.total() == 0);
    REQUIRE(q.try_dequeue() == &e[0]);
    CHECK(q.enqueue(&e[kCapacity]) == UAPLEX_Good);  // room again
    q.instance->stop();  // completes the queued entries while they still exist
}

TEST_CASE("stop completes every queued entry with BadServerHalted exactly once") {
    Queue q;
    auto e = entries(5);
    for (auto& x : e) REQUIRE(q.enqueue(&x) == UAPLEX_Good);
    REQUIRE(q.try_dequeue() == &e[0]);  // running: not the queue's to complete
    q.instance->stop();
    q.instance->stop();  // idempotent
    CHECK(q.completions.total() == 4);
    for (size_t i = 1; i < e.size(); ++i) {
        REQUIRE(q.completions.by_entry.count(&e[i]) == 1);
        CHECK(q.completions.by_entry[&e[i]] == std::vector<uaplex_status>{UAPLEX_BadServerHalted});
    }
    CHECK(q.completions.by_entry.count(&e[0]) == 0);
    auto late = entries(1);
    CHECK(q.enqueue(&late[0]) == UAPLEX_BadServerHalted);
    uaplex_status st = UAPLEX_Good;
    CHECK(q.try_dequeue(&st) == nullptr);
    CHECK(st == UAPLEX_BadServerHalted);
    CHECK(q.count() == 0);
}

TEST_CASE("cancel unlinks and completes once; later cancels find nothing") {
    Queue q;
    auto e = entries(3);
    for (auto& x : e) REQUIRE(q.enqueue(&x) == UAPLEX_Good);
    CHECK(q.ops->cancel(q.self, &e[1], UAPLEX_BadRequestCancelledByClient) == UAPLEX_Good);
    CHECK(q.ops->cancel(q.self, &e[1], UAPLEX_BadRequestCancelledByClient) == UAPLEX_BadNotFound);
    CHECK(q.completions.by_entry[&e[1]] ==
          std::vector<uaplex_status>{UAPLEX_BadRequestCancelledByClient});
    CHECK(q.count() == 2);
    CHECK(q.try_dequeue() == &e[0]);
    CHECK(q.ops->cancel(q.self, &e[0], UAPLEX_BadRequestCancelledByClient) == UAPLEX_BadNotFound);
    CHECK(q.try_dequeue() == &e[2]);
    q.instance->stop();
    CHECK(q.completions.total() == 1);
}

TEST_CASE("an already cancelled request is refused and not linked") {
    Queue q;
    auto e = entries(1);
    Token t;
    t.status = UAPLEX_BadRequestCancelledByClient;
    e[0].cancel = &t.token;
    CHECK(q.enqueue(&e[0]) == UAPLEX_BadRequestCancelledByClient);
    CHECK(q.count() == 0);
    CHECK(q.completions.total() == 0);
}

TEST_CASE("dequeue waits: times out, wakes on enqueue, and wakes on stop") {
    Queue q;
    if (!q.ops->dequeue) return;  // optional entry; the host polls instead
    uaplex_request_entry* out = nullptr;
    auto t0 = std::chrono::steady_clock::now();
    CHECK(q.ops->dequeue(q.self, 30, &out) == UAPLEX_BadTimeout);
    CHECK(std::chrono::steady_clock::now() - t0 >= std::chrono::milliseconds(25));

    auto e = entries(1);
    std::atomic<uaplex_status> enqueued{UAPLEX_BadInternalError};
    std::thread producer([&] {  // threads assert nothing (Catch2 is not thread-safe)
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        enqueued = q.enqueue(&e[0]);
    });
    CHECK(q.ops->dequeue(q.self, std::numeric_limits<uint32_t>::max(), &out) == UAPLEX_Good);
    CHECK(out == &e[0]);
    producer.join();
    CHECK(enqueued == UAPLEX_Good);

    std::thread stopper([&] {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        q.instance->stop();
    });
    CHECK(q.ops->dequeue(q.self, std::numeric_limits<uint32_t>::max(), &out) ==
          UAPLEX_BadServerHalted);
    stopper.join();
}

TEST_CASE("wake_waiters returns a dequeue that waits without a timeout; the queue is unchanged") {
    Queue q;
    if (q.abi_minor < 5) {
        // Built before 1.5: the table ends before wake_waiters, which the host treats as absent.
        CHECK_FALSE(UAPLEX_HAS_FIELD(q.ops, uaplex_request_queue_ops, wake_waiters));
        return;
    }
    // The host waits without a timeout only on a queue that supports it; the shipped ones do.
    REQUIRE(UAPLEX_HAS_FIELD(q.ops, uaplex_request_queue_ops, wake_waiters));
    REQUIRE(q.ops->wake_waiters != nullptr);
    REQUIRE(q.ops->wake_waiters(q.self) == UAPLEX_Good);  // none waiting: nothing happens
    auto e = entries(2);
    REQUIRE(q.enqueue(&e[0]) == UAPLEX_Good);
    uaplex_request_entry* out = nullptr;
    // A wake with nobody waiting is not left over: the next dequeue takes the entry.
    REQUIRE(q.ops->dequeue(q.self, std::numeric_limits<uint32_t>::max(), &out) == UAPLEX_Good);
    CHECK(out == &e[0]);

    std::atomic<bool> done{false};
    std::atomic<uaplex_status> status{UAPLEX_Good};
    std::thread waiter([&] {  // threads assert nothing (Catch2 is not thread-safe)
        uaplex_request_entry* got = nullptr;
        status = q.ops->dequeue(q.self, std::numeric_limits<uint32_t>::max(), &got);
        done = true;
    });
    // Called until the waiter is back: a call before it started to wait finds nobody.
    size_t calls = 0;
    while (!done.load()) {
        CHECK(q.ops->wake_waiters(q.self) == UAPLEX_Good);
        ++calls;
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    waiter.join();
    CHECK(calls > 0);
    CHECK(status.load() == UAPLEX_BadTimeout);
    CHECK(q.count() == 0);
    CHECK(q.completions.total() == 0);
    // Waiting works as before afterwards.
    std::thread producer([&] {
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
        q.enqueue(&e[1]);
    });
    CHECK(q.ops->dequeue(q.self, std::numeric_limits<uint32_t>::max(), &out) == UAPLEX_Good);
    CHECK(out == &e[1]);
    producer.join();
}

TEST_CASE("concurrent producers and consumers: each request once, FIFO per producer") {
    Queue q;
    constexpr int kProducers = 3, kPerProducer = 3000;
    std::vector<std::vector<uaplex_request_entry>> all(kProducers);
    for (int p = 0; p < kProducers; ++p) {
        all[p] = entries(kPerProducer);
        for (auto& e : all[p]) e.service_type = static_cast<uint32_t>(p);
    }
    std::atomic<int> producing{kProducers};
    std::vector<std::thread> threads;
    for (int p = 0; p < kProducers; ++p) {
        threads.emplace_back([&, p] {
            for (auto& e : all[p]) {
                while (q.enqueue(&e) == UAPLEX_BadServerTooBusy) std::this_thread::yield();
            }
            producing.fetch_sub(1);
        });
    }
    std::vector<std::vector<std::pair<uint32_t, uint32_t>>> got(2);
    for (int c = 0; c < 2; ++c) {
        threads.emplace_back([&, c] {
            for (;;) {
                uaplex_request_entry* e = nullptr;
                uaplex_status st = q.ops->try_dequeue(q.self, &e);
                if (st == UAPLEX_Good) {
                    got[c].emplace_back(e->service_type, e->request_id);
                } else if (uint64_t n = 1; producing.load() == 0 &&
                                           q.ops->count(q.self, &n) == UAPLEX_Good && n == 0) {
                    break;
                } else {
                    std::this_thread::yield();
                }
            }
        });
    }
    for (auto& t : threads) t.join();
    size_t total = 0;
    bool ordered = true;
    for (auto& g : got) {
        total += g.size();
        std::vector<uint32_t> last(kProducers, 0);
        for (auto [p, id] : g) {
            ordered = ordered && id > last[p];
            last[p] = id;
        }
    }
    CHECK(total == static_cast<size_t>(kProducers * kPerProducer));
    CHECK(ordered);
    CHECK(q.completions.total() == 0);
}
