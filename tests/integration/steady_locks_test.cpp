// SPDX-License-Identifier: Apache-2.0
// No server-wide lock on the steady request path, checked by counting instead of timing:
// this executable interposes the pthread mutex and rwlock entry points, and counts per lock
// address how often server threads take it. Two clients (two connections, two sessions)
// run the same Reads one after the other; a lock taken at least once per request in both
// runs serves requests of different sessions, so it is server-wide. Per-connection and
// per-session locks show up in one run only; timer threads lock far less than once per
// request.
#include <catch2/catch.hpp>

#include <dlfcn.h>
#include <pthread.h>

#include <sys/stat.h>

#include <array>
#include <atomic>
#include <cstdio>
#include <filesystem>
#include <map>
#include <string>

#include <uaplex/config/config.hpp>
#include <uaplex/host/plugin_host.hpp>
#include <uaplex/server/server.hpp>
#include <uaplex/server/service_handler.hpp>
#include "in_process_server.hpp"
#include "support/opcua_client.hpp"

namespace {

// A fixed open-addressing table: the interposed functions must neither allocate nor lock.
struct LockCount {
    std::atomic<const void*> address{nullptr};
    std::atomic<std::uint64_t> count{0};
    std::atomic<const void*> caller{nullptr};
};
std::array<LockCount, 8192> gLocks;
std::atomic<bool> gRecording{false};
thread_local bool tClient = false;  // the test's own thread is not the server

void record(const void* lock, const void* caller) noexcept {
    if (!gRecording.load(std::memory_order_relaxed) || tClient) return;
    std::size_t i = (reinterpret_cast<std::uintptr_t>(lock) >> 4) % gLocks.size();
    for (std::size_t n = 0; n < gLocks.size(); ++n, i = (i + 1) % gLocks.size()) {
        const void* seen = gLocks[i].address.load(std::memory_order_acquire);
        if (seen == nullptr &&
            gLocks[i].address.compare_exchange_strong(seen, lock, std::memory_order_acq_rel)) {
            gLocks[i].caller.store(caller, std::memory_order_relaxed);
            seen = lock;
        }
        if (seen == lock) {
            gLocks[i].count.fetch_add(1, std::memory_order_relaxed);
            return;
        }
    }
}

struct Taken {
    std::uint64_t count;
    const void* caller;
};

// Counts of the recorded run, then a clean table for the next one.
std::map<const void*, Taken> harvest() {
    gRecording = false;
    std::map<const void*, Taken> out;
    for (auto& l : gLocks) {
        if (const void* a = l.address.load()) out[a] = {l.count.load(), l.caller.load()};
        l.count = 0;
        l.caller = nullptr;
        l.address = nullptr;
    }
    return out;
}

// The file name of the object holding a code address. The host loads plugins through a
// link named after the file's inode (uaplex-<pid>-<dev>-<inode>.so); such a name is mapped
// back to the plugin file with that inode.
std::string moduleOf(const void* code) {
    Dl_info info{};
    if (!dladdr(code, &info) || !info.dli_fname) return "?";
    if (!*info.dli_fname) return "the executable";
    std::string name = std::filesystem::path(info.dli_fname).filename().string();
    unsigned long pid = 0, dev = 0, ino = 0;
    if (std::sscanf(name.c_str(), "uaplex-%lu-%lu-%lu.so", &pid, &dev, &ino) == 3) {
        std::error_code ec;
        for (auto& f : std::filesystem::directory_iterator(UAPLEX_PLUGIN_DIR, ec)) {
            struct stat st {};
            if (::stat(f.path().c_str(), &st) == 0 && st.st_ino == ino)
                return f.path().filename().string();
        }
    }
    return name;
}

}  // namespace

// The interposed entry points: every std::mutex, std::shared_mutex and pthread lock of the
// process (plugins included; the executable exports them) passes here first, then goes to
// libc's own (dlsym takes no lock through these symbols).
template <class T>
T* real(const char* name) {
    return reinterpret_cast<T*>(dlsym(RTLD_NEXT, name));
}
extern "C" int pthread_mutex_lock(pthread_mutex_t* m) {
    static auto* next = real<int(pthread_mutex_t*)>("pthread_mutex_lock");
    record(m, __builtin_return_address(0));
    return next(m);
}
extern "C" int pthread_mutex_trylock(pthread_mutex_t* m) {
    static auto* next = real<int(pthread_mutex_t*)>("pthread_mutex_trylock");
    record(m, __builtin_return_address(0));
    return next(m);
}
extern "C" int pthread_rwlock_rdlock(pthread_rwlock_t* l) {
    static auto* next = real<int(pthread_rwlock_t*)>("pthread_rwlock_rdlock");
    record(l, __builtin_return_address(0));
    return next(l);
}
extern "C" int pthread_rwlock_wrlock(pthread_rwlock_t* l) {
    static auto* next = real<int(pthread_rwlock_t*)>("pthread_rwlock_wrlock");
    record(l, __builtin_return_address(0));
    return next(l);
}

using namespace uaplex;

namespace {

constexpr int kReads = 1000;

struct SharedLock {
    std::string module;  // the object whose code took it
    std::uint64_t first, second;
};

// Locks taken at least once per Read for both sessions, with the module that took them.
std::vector<SharedLock> sharedLocks(const std::string& slots, const std::string& plugins) {
    tClient = true;
    test::InProcessServer process("[slots]\n" + slots + "[plugins.transport-tcp]\n" + plugins,
                                  "locks.toml");
    const std::uint16_t port = process.port;

    std::vector<ua::ReadValueId> ids(10);
    auto read = test::readServerState(ids);
    test::Client c1, c2;
    // No TimeoutHint: the deadline sweep, which visits every session, then stays asleep.
    c1.setTimeoutHint(0);
    c2.setTimeoutHint(0);
    REQUIRE(c1.open(port));
    REQUIRE(c1.createSession() == UAPLEX_Good);
    REQUIRE(c2.open(port));
    REQUIRE(c2.createSession() == UAPLEX_Good);
    auto run = [&](test::Client& c, int n) {
        for (int i = 0; i < n; ++i)
            REQUIRE(test::Client::result(c.call(read, std::uint32_t(i + 1))) == UAPLEX_Good);
    };
    run(c1, 200);  // warm-up: every session and connection is cached and sized
    run(c2, 200);
    harvest();
    gRecording = true;
    run(c1, kReads);
    auto first = harvest();
    gRecording = true;
    run(c2, kReads);
    auto second = harvest();
    // Named while the plugins are still loaded.
    std::vector<SharedLock> shared;
    for (auto& [lock, t] : first) {
        auto it = second.find(lock);
        if (t.count >= kReads && it != second.end() && it->second.count >= kReads)
            shared.push_back({moduleOf(t.caller), t.count, it->second.count});
    }
    c1.disconnect();
    c2.disconnect();
    return shared;
}

}  // namespace

TEST_CASE("the interposer sees the locks of the process") {
    tClient = false;
    gRecording = true;
    std::mutex m;
    m.lock();
    m.unlock();
    auto seen = harvest();
    CHECK(seen.count(&m) == 1);
}

// No stage - transport, kernel, fifo or fair queue, leases, pool - takes a lock shared by
// the requests of different sessions (docs/architecture.md, "Locks on the request path").
std::vector<std::string> unexpected(const std::vector<SharedLock>& shared) {
    std::vector<std::string> out;
    for (auto& s : shared)
        out.push_back(s.module + " (" + std::to_string(s.first) + " and " +
                      std::to_string(s.second) + " times)");
    return out;
}

TEST_CASE("steady-state Reads take no server-wide lock: fifo queue, bounded pool") {
    auto shared = sharedLocks("request_queue = \"fifo\"\nbuffer_pool = \"bounded\"\n",
                              "[plugins.fifo]\n[plugins.bounded]\n");
    auto bad = unexpected(shared);
    for (auto& s : bad) UNSCOPED_INFO("shared per-request lock taken in " << s);
    CHECK(bad.empty());
}

TEST_CASE("steady-state Reads take no server-wide lock: leases admission, fair queue, pool") {
    auto shared =
        sharedLocks("request_queue = \"fair\"\nadmission = \"leases\"\nbuffer_pool = \"bounded\"\n",
                    "[plugins.fair]\n[plugins.leases]\n[plugins.bounded]\n");
    auto bad = unexpected(shared);
    for (auto& s : bad) UNSCOPED_INFO("shared per-request lock taken in " << s);
    CHECK(bad.empty());
}
