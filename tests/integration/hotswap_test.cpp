// SPDX-License-Identifier: Apache-2.0
// Hot swap of the request-queue slot under load: several threads call through the slot
// without pause while the main thread swaps test-swap-a and test-swap-b back and forth
// through Host::reload. Every call must succeed and be completed exactly once by the plugin
// that was installed, and each swapped-out library must really be unloaded (dlclose) before
// the next swap. Built twice: plain and with AddressSanitizer.
#include <dlfcn.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <limits>
#include <string>
#include <thread>
#include <vector>

#include <uaplex/config/config.hpp>
#include <uaplex/host/logging.hpp>
#include <uaplex/host/plugin_host.hpp>

namespace {

const std::string kSwapDir = std::string(UAPLEX_TEST_PLUGIN_ROOT) + "/swap";

std::string config_for(const std::string& slot) {
    return "[log]\nlevel = \"warn\"\n[host]\nplugin_dirs = [\"" + kSwapDir +
           "\"]\n[slots]\nrequest_queue = \"" + slot +
           "\"\n[plugins.test-swap-a]\n[plugins.test-swap-b]\n";
}

bool loaded(const std::string& name) {
    std::string path = kSwapDir + "/uaplex-" + name + ".so";
    void* h = dlopen(path.c_str(), RTLD_NOW | RTLD_NOLOAD);
    if (h) dlclose(h);
    return h != nullptr;
}

struct Counts {
    std::atomic<uint64_t> calls{0};  // read by the swapping thread for progress
    uint64_t failures = 0;
    uint64_t by_tag[3] = {0, 0, 0};
    char pad[64];
};

}  // namespace

TEST_CASE("request-queue slot swaps under load without losing a call") {
    uaplex::host::setLogger(nullptr);  // a fresh default logger (warnings to stderr)
    uaplex::host::logger()->set_level(spdlog::level::warn);
    uaplex::host::Host host;
    std::atomic<uint64_t> completed{0};
    host.requestQueue().setCompletion([&](uaplex_request_entry* e, uaplex_status st) {
        if (st == UAPLEX_Good) completed.fetch_add(1, std::memory_order_relaxed);
        e->kernel_private = reinterpret_cast<void*>(uintptr_t{1});
    });
    host.load(uaplex::config::parseString(config_for("test-swap-a"), "swap.toml", {}));
    host.start();
    REQUIRE(loaded("test-swap-a"));
    REQUIRE_FALSE(loaded("test-swap-b"));

    constexpr int kThreads = 4;
    std::vector<Counts> counts(kThreads);
    std::atomic<bool> stop{false};
    std::vector<std::thread> callers;
    for (int t = 0; t < kThreads; ++t) {
        callers.emplace_back([&, t] {
            Counts& c = counts[t];
            while (!stop.load(std::memory_order_relaxed)) {
                uaplex_request_entry e{};
                e.hdr = UAPLEX_HEADER_INIT(uaplex_request_entry, UAPLEX_STYPE_REQUEST_ENTRY);
                e.request_id = static_cast<uint32_t>(c.calls.load(std::memory_order_relaxed) + 1);
                uaplex_status st = host.requestQueue().enqueue(&e);
                c.calls.fetch_add(1, std::memory_order_relaxed);
                auto tag = reinterpret_cast<uintptr_t>(e.queue_private[0]);
                if (st != UAPLEX_Good || tag < 1 || tag > 2 || e.kernel_private == nullptr) {
                    ++c.failures;
                } else {
                    ++c.by_tag[tag];
                }
            }
        });
    }

    // Bounded: up to 40 swaps or about 2 s (at least 6 swaps), each after the callers made
    // progress, so the test stays short on a loaded machine.
    constexpr int kMaxSwaps = 40;
    constexpr int kMinSwaps = 6;
    const auto started = std::chrono::steady_clock::now();
    int swaps = 0;
    int unload_failures = 0;
    auto progress = [&] {
        uint64_t n = 0;
        for (auto& c : counts) n += c.calls;
        return n;
    };
    for (int i = 1; i <= kMaxSwaps; ++i) {
        if (i > kMinSwaps && std::chrono::steady_clock::now() - started > std::chrono::seconds(2))
            break;
        swaps = i;
        const bool to_b = (i % 2) == 1;
        uint64_t before = progress();
        auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(200);
        while (progress() < before + 500 && std::chrono::steady_clock::now() < deadline)
            std::this_thread::yield();
        host.reload(uaplex::config::parseString(config_for(to_b ? "test-swap-b" : "test-swap-a"),
                                                "swap.toml", {}));
        // The old library is gone for real; the new one is in.
        if (loaded(to_b ? "test-swap-a" : "test-swap-b")) ++unload_failures;
        if (!loaded(to_b ? "test-swap-b" : "test-swap-a")) ++unload_failures;
    }
    stop = true;
    for (auto& th : callers) th.join();

    struct {
        uint64_t calls = 0, failures = 0, by_tag[3] = {0, 0, 0};
    } total;
    for (auto& c : counts) {
        total.calls += c.calls.load();
        total.failures += c.failures;
        for (int k = 0; k < 3; ++k) total.by_tag[k] += c.by_tag[k];
    }
    int64_t metric_a = 0, metric_b = 0;
    host.services().metrics.value("test-swap-a.calls", metric_a);
    host.services().metrics.value("test-swap-b.calls", metric_b);
    host.shutdown();

    INFO("swaps " << swaps << " calls " << total.calls << " a " << total.by_tag[1] << " b "
                  << total.by_tag[2]);
    CHECK(swaps >= kMinSwaps);
    CHECK(unload_failures == 0);
    CHECK(total.failures == 0);
    CHECK(total.calls > 0);
    CHECK(total.by_tag[1] > 0);
    CHECK(total.by_tag[2] > 0);
    CHECK(total.by_tag[1] + total.by_tag[2] == total.calls);
    CHECK(completed.load() == total.calls);
    CHECK(static_cast<uint64_t>(metric_a + metric_b) == total.calls);
    CHECK_FALSE(loaded("test-swap-a"));
    CHECK_FALSE(loaded("test-swap-b"));
}

TEST_CASE("a reload moves queued requests to the new queue, in order, and loses none") {
    uaplex::host::setLogger(nullptr);
    uaplex::host::logger()->set_level(spdlog::level::warn);
    const std::string dir = UAPLEX_PLUGIN_DIR;
    auto config = [&](int max_queued) {
        return uaplex::config::parseString(
            "[host]\nplugin_dirs = [\"" + dir + "\"]\n[slots]\nrequest_queue = \"fifo\"\n" +
                "[plugins.fifo]\nmax_queued = " + std::to_string(max_queued) + "\n",
            "reload.toml", {});
    };
    uaplex::host::Host host;
    std::vector<std::pair<uint32_t, uaplex_status>> completions;
    host.requestQueue().setCompletion([&](uaplex_request_entry* e, uaplex_status st) {
        completions.emplace_back(e->request_id, st);
    });
    host.load(config(5));
    host.start();

    std::vector<uaplex_request_entry> e(6);
    for (uint32_t i = 0; i < e.size(); ++i) {
        e[i].hdr = UAPLEX_HEADER_INIT(uaplex_request_entry, UAPLEX_STYPE_REQUEST_ENTRY);
        e[i].request_id = i + 1;
    }
    for (int i = 0; i < 4; ++i) REQUIRE(host.requestQueue().enqueue(&e[i]) == UAPLEX_Good);
    auto before = host.requestQueue().current();

    // A changed plugin table swaps in a new instance (max_queued 2: two entries do not fit).
    host.reload(config(2));
    auto after = host.requestQueue().current();
    CHECK(after != before);
    before.reset();
    uint64_t n = 0;
    host.requestQueue().count(&n);
    CHECK(n == 2);
    // The two that did not fit were completed with the new queue's refusal, exactly once.
    REQUIRE(completions.size() == 2);
    CHECK(completions[0] == std::make_pair(3u, UAPLEX_BadServerTooBusy));
    CHECK(completions[1] == std::make_pair(4u, UAPLEX_BadServerTooBusy));

    uaplex_request_entry* out = nullptr;
    REQUIRE(host.requestQueue().tryDequeue(&out) == UAPLEX_Good);
    CHECK(out->request_id == 1);
    CHECK(host.requestQueue().enqueue(&e[4]) == UAPLEX_Good);
    CHECK(host.requestQueue().enqueue(&e[5]) == UAPLEX_BadServerTooBusy);

    // Unchanged configuration: no swap.
    host.reload(config(2));
    CHECK(host.requestQueue().current() == after);

    // Shutdown completes what is still queued with BadServerHalted.
    after.reset();
    host.shutdown();
    REQUIRE(completions.size() == 4);
    CHECK(completions[2] == std::make_pair(2u, UAPLEX_BadServerHalted));
    CHECK(completions[3] == std::make_pair(5u, UAPLEX_BadServerHalted));
}

TEST_CASE("a reload retires a queue that a worker waits on without a timeout") {
    uaplex::host::setLogger(nullptr);
    uaplex::host::logger()->set_level(spdlog::level::warn);
    const std::string dir = UAPLEX_PLUGIN_DIR;
    auto config = [&](const char* queue) {
        return uaplex::config::parseString(std::string("[host]\nplugin_dirs = [\"") + dir +
                                               "\"]\n[slots]\nrequest_queue = \"" + queue +
                                               "\"\n[plugins.fifo]\n[plugins.fair]\n",
                                           "wait.toml", {});
    };
    uaplex::host::Host host;
    host.requestQueue().setCompletion([](uaplex_request_entry*, uaplex_status) {});
    host.load(config("fifo"));
    host.start();
    // The shipped queues can be woken: the slot lets workers wait on them without a timeout.
    REQUIRE(host.requestQueue().current()->wakes_waiters);

    uaplex_request_entry entry{};
    entry.hdr = UAPLEX_HEADER_INIT(uaplex_request_entry, UAPLEX_STYPE_REQUEST_ENTRY);
    entry.request_id = 7;
    std::atomic<int> returns{0};
    std::atomic<uint32_t> got{0};
    std::thread worker([&] {  // a server worker's loop; asserts nothing (Catch2)
        while (got.load() == 0) {
            uaplex_request_entry* out = nullptr;
            uaplex::host::PluginInstance* from = nullptr;
            uaplex_status st =
                host.requestQueue().dequeue(std::numeric_limits<uint32_t>::max(), &out, &from);
            returns.fetch_add(1);
            if (st == UAPLEX_Good && out) {
                uaplex::host::RequestQueueSlot::dispose(from, out);
                got = out->request_id;
            }
        }
    });
    // The swap returns although the worker waits in the old queue without a timeout.
    host.reload(config("fair"));
    CHECK(host.requestQueue().pluginName() == "fair");
    CHECK(host.requestQueue().current()->wakes_waiters);
    REQUIRE(host.requestQueue().enqueue(&entry) == UAPLEX_Good);
    worker.join();
    CHECK(got.load() == 7);
    CHECK(returns.load() >= 1);
    host.shutdown();
}
