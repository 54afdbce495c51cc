// SPDX-License-Identifier: Apache-2.0
// A node manager for the sampling tests (sampling_test.cpp, in the test's own process): it
// owns urn:uaplex:test-sampling, where i=1..99 are gated Int32 nodes (a read blocks while the
// test holds the gate closed), i=101..199 slow registers (20 ms per node read; the sampling
// bench, tools/bench/micro/server/bench_plugin_sampling.cpp), i=500 pushes its changes through
// params.value_changed once monitored, and the store node i=900 is a stored value set through
// value_set. The test steers it through the exported test_sampling_* functions. In the
// synchronous build the gated nodes also take writes, and the store node i=902 has read and
// write callbacks behind the same gate (the blocking node manager tests); the gated nodes'
// Browse and Call wait at the gate as well.
// Built a second time as test-sampling-async (TEST_SAMPLING_ASYNC): the owned nodes are read
// through read_async, completed from the plugin's own thread once the gate is open, and the
// store node i=901 has only a read_async callback (901000 + the number of its reads so far,
// completed from that thread).
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

#include "uaplex/cpp/address_space.hpp"

#define TEST_EXPORT extern "C" __attribute__((visibility("default")))

namespace {

using namespace uaplex::sdk;

constexpr uint32_t kPushed = 500, kStored = 900, kStoredAsync = 901, kGatedStore = 902;

struct Control {
    std::mutex mutex;
    std::condition_variable changed;
    bool open = true;
    int blocked = 0;                 // reads waiting at the gate
    std::vector<size_t> readCounts;  // items of each read call on gated nodes
    int monitorOn = 0, monitorOff = 0;
    int32_t pushedValue = 0;
    int32_t gatedStoreValue = 902;
    uint16_t ns = 0;
    uaplex_node_manager_params params{};
    uaplex_plugin_ctx* ctx = nullptr;
    const uaplex_host_api* api = nullptr;
};
Control control;

class Sampling : public NodeManager {
  public:
    Sampling(Context ctx, const uaplex_node_manager_params& params) : NodeManager(ctx, params) {
        std::lock_guard lock(control.mutex);  // the library may stay loaded between tests
        control.open = true;
        control.readCounts.clear();
        control.monitorOn = control.monitorOff = 0;
        control.pushedValue = 0;
        control.gatedStoreValue = 902;
        control.params = params_;
        control.ctx = ctx.raw();
        control.api = ctx.api();
    }
    uaplex_status namespace_count(size_t* out) override {
        *out = 1;
        return UAPLEX_Good;
    }
    uaplex_status namespace_uri(size_t, uaplex_str* out) override {
        *out = to_str("urn:uaplex:test-sampling");
        return UAPLEX_Good;
    }
    uaplex_status start() override {
        AddressSpace as(ctx_);
        uint16_t ns = 0;
        if (uaplex_status st = as.register_namespace("urn:uaplex:test-sampling", &ns);
            st != UAPLEX_Good)
            return st;
        control.ns = ns;
        NodeSpec v = variable_spec(numeric_id(ns, kStored), numeric_id(0, 85), 47,
                                   qualified_name(ns, "Stored"), 6, -1, 3);
        uaplex_datavalue initial = data_value(scalar<int32_t>(UAPLEX_TYPE_INT32, 0));
        v.spec.value = &initial;
#ifdef TEST_SAMPLING_ASYNC
        if (uaplex_status st = as.add(v.get()); st != UAPLEX_Good) return st;
        NodeSpec a = variable_spec(numeric_id(ns, kStoredAsync), numeric_id(0, 85), 47,
                                   qualified_name(ns, "StoredAsync"), 6, -1, 1);
        a.spec.read_async = &AsyncValueRead<&Sampling::read_stored>::fn;
        a.spec.user = this;
        return as.add(a.get());
#else
        if (uaplex_status st = as.add(v.get()); st != UAPLEX_Good) return st;
        NodeSpec g = variable_spec(numeric_id(ns, kGatedStore), numeric_id(0, 85), 47,
                                   qualified_name(ns, "GatedStore"), 6, -1, 3);
        g.spec.read = &Sampling::readGatedStore;
        g.spec.write = &Sampling::writeGatedStore;
        g.spec.user = this;
        return as.add(g.get());
#endif
    }
#ifndef TEST_SAMPLING_ASYNC
    // Gated nodes take Int32 writes once the gate opens (the synchronous build).
    uaplex_status write(size_t count, const uaplex_write_item* items,
                        uaplex_status* statuses) override {
        bool gated = false;
        for (size_t i = 0; i < count; ++i) {
            const uaplex_nodeid& id = *items[i].node_id;
            statuses[i] = UAPLEX_BadNodeIdUnknown;
            if (id.identifier_type != UAPLEX_ID_NUMERIC || id.identifier.numeric < 1 ||
                id.identifier.numeric > 99 || items[i].attribute_id != 13)
                continue;
            gated = true;
            statuses[i] = UAPLEX_Good;
        }
        if (gated) waitAtGate();
        return UAPLEX_Good;
    }
    // Gated nodes browse to i=500 (HasComponent) and take a Call (on the Object, any method)
    // that answers the Object's number, once the gate opens (the synchronous build).
    uaplex_status browse(const uaplex_nodeid* id, uint32_t, const uaplex_nodeid*, int32_t,
                         uaplex_reference_sink sink, void* sink_user) override {
        if (!gatedId(*id)) return UAPLEX_BadNodeIdUnknown;
        waitAtGate();
        const uaplex_nodeid type = numeric_id(0, 47);
        const uaplex_nodeid target = numeric_id(control.ns, kPushed);
        uaplex_reference ref{};
        ref.hdr = {sizeof(ref), UAPLEX_STYPE_NODE_MANAGER_REFERENCE};
        ref.is_forward = 1;
        ref.reference_type_id = &type;
        ref.target_id = &target;
        ref.node_class = 2;
        return sink(sink_user, &ref);
    }
    uaplex_status call(const uaplex_nodeid* object, const uaplex_nodeid*, size_t,
                       const uaplex_variant*, const uaplex_value_alloc* alloc, uaplex_status*,
                       size_t* out_count, uaplex_variant** out) override {
        if (!gatedId(*object)) return UAPLEX_BadNodeIdUnknown;
        waitAtGate();
        auto* v = static_cast<uaplex_variant*>(
            alloc->allocate(alloc->self, sizeof(uaplex_variant), alignof(uaplex_variant)));
        if (v == nullptr) return UAPLEX_BadOutOfMemory;
        *v = scalar<int32_t>(UAPLEX_TYPE_INT32, int32_t(object->identifier.numeric));
        *out = v;
        *out_count = 1;
        return UAPLEX_Good;
    }
    static bool gatedId(const uaplex_nodeid& id) {
        return id.identifier_type == UAPLEX_ID_NUMERIC && id.identifier.numeric >= 1 &&
               id.identifier.numeric <= 99;
    }
#endif
    static void waitAtGate() {
        std::unique_lock lock(control.mutex);
        ++control.blocked;
        control.changed.notify_all();
        control.changed.wait(lock, [] { return control.open; });
        --control.blocked;
    }
    static uaplex_status readGatedStore(void*, const uaplex_nodeid*, const uaplex_value_alloc*,
                                        uaplex_datavalue* out) {
        int32_t value = 0;  // as it was when the read came, whatever is written meanwhile
        {
            std::lock_guard lock(control.mutex);
            value = control.gatedStoreValue;
        }
        waitAtGate();
        *out = data_value(scalar<int32_t>(UAPLEX_TYPE_INT32, value));
        return UAPLEX_Good;
    }
    static uaplex_status writeGatedStore(void*, const uaplex_nodeid*, const uaplex_datavalue* v) {
        waitAtGate();
        std::lock_guard lock(control.mutex);
        control.gatedStoreValue = v->value.value.int32;
        return UAPLEX_Good;
    }
    // The async build has only read_async (its read is the default, BadNotSupported).
    uaplex_status read(size_t count, const uaplex_read_item* items,
                       uaplex_datavalue* const* results, uaplex_status* statuses) override {
#ifdef TEST_SAMPLING_ASYNC
        (void)count, (void)items, (void)results, (void)statuses;
        return UAPLEX_BadNotSupported;
#else
        return serve(count, items, results, statuses);
#endif
    }
    uaplex_status serve(size_t count, const uaplex_read_item* items,
                        uaplex_datavalue* const* results, uaplex_status* statuses) {
        std::unique_lock lock(control.mutex);
        bool gated = false;
        for (size_t i = 0; i < count; ++i) {
            const uaplex_nodeid& id = *items[i].node_id;
            statuses[i] = UAPLEX_BadNodeIdUnknown;
            if (id.identifier_type != UAPLEX_ID_NUMERIC || items[i].attribute_id != 13) continue;
            uint32_t n = id.identifier.numeric;
            if (n >= 1 && n <= 99) {
                gated = true;
                *results[i] = data_value(scalar<int32_t>(UAPLEX_TYPE_INT32, int32_t(n)));
                statuses[i] = UAPLEX_Good;
            } else if (n >= 101 && n <= 199) {
                lock.unlock();
                std::this_thread::sleep_for(std::chrono::milliseconds(20));
                lock.lock();
                *results[i] = data_value(scalar<int32_t>(UAPLEX_TYPE_INT32, int32_t(n)));
                statuses[i] = UAPLEX_Good;
            } else if (n == kPushed) {
                *results[i] = data_value(scalar<int32_t>(UAPLEX_TYPE_INT32, control.pushedValue));
                statuses[i] = UAPLEX_Good;
            }
        }
        if (gated) {
            control.readCounts.push_back(count);
            ++control.blocked;
            control.changed.notify_all();
            control.changed.wait(lock, [] { return control.open; });
            --control.blocked;
        }
        return UAPLEX_Good;
    }
#ifdef TEST_SAMPLING_ASYNC
    ~Sampling() override {
        stopThread();
    }
    uaplex_status stop() override {
        stopThread();
        return UAPLEX_Good;
    }
    // The answers of the synchronous build's read, given on the plugin's thread (which waits at the
    // gate).
    uaplex_status read_async(size_t count, const uaplex_read_item* items,
                             uaplex_datavalue* const* results, uaplex_status* statuses,
                             Completion& done) {
        std::lock_guard lock(jobsMutex_);
        if (!worker_.joinable()) worker_ = std::thread([this] { run(); });
        jobs_.push_back(Job{count, items, results, statuses, std::move(done)});
        jobsChanged_.notify_all();
        return UAPLEX_GoodCompletesAsynchronously;
    }
    // The store node's read_async: answered on the plugin's thread.
    uaplex_status read_stored(const uaplex_nodeid&, const uaplex_value_alloc&,
                              uaplex_datavalue& out, Completion& done) {
        std::lock_guard lock(jobsMutex_);
        if (!worker_.joinable()) worker_ = std::thread([this] { run(); });
        jobs_.push_back(Job{0, nullptr, nullptr, nullptr, std::move(done), &out});
        jobsChanged_.notify_all();
        return UAPLEX_GoodCompletesAsynchronously;
    }
#endif
    uaplex_status monitor(const uaplex_nodeid* id, uint32_t attribute, int32_t enabled) override {
        if (id->identifier_type != UAPLEX_ID_NUMERIC || id->identifier.numeric != kPushed ||
            attribute != 13)
            return UAPLEX_BadNotSupported;  // sampled with read
        std::lock_guard lock(control.mutex);
        ++(enabled ? control.monitorOn : control.monitorOff);
        control.changed.notify_all();
        return UAPLEX_Good;
    }

#ifdef TEST_SAMPLING_ASYNC
  private:
    struct Job {
        size_t count;
        const uaplex_read_item* items;
        uaplex_datavalue* const* results;
        uaplex_status* statuses;
        Completion done;
        uaplex_datavalue* storeOut = nullptr;  // the store node's read
    };
    void run() {
        std::unique_lock lock(jobsMutex_);
        for (;;) {
            jobsChanged_.wait(lock, [&] { return stopping_ || !jobs_.empty(); });
            if (jobs_.empty()) return;
            Job job = std::move(jobs_.front());
            jobs_.erase(jobs_.begin());
            lock.unlock();
            uaplex_status st = UAPLEX_BadServerHalted;
            if (!stopping_ && job.storeOut) {
                *job.storeOut =
                    data_value(scalar<int32_t>(UAPLEX_TYPE_INT32, 901000 + storeReads_++));
                st = UAPLEX_Good;
            } else if (!stopping_) {
                st = serve(job.count, job.items, job.results, job.statuses);
            }
            job.done.complete(st);
            lock.lock();
        }
    }
    void stopThread() {
        {
            std::lock_guard lock(jobsMutex_);
            stopping_ = true;
            jobsChanged_.notify_all();
        }
        test_gate_open();
        if (worker_.joinable()) worker_.join();
    }
    static void test_gate_open() {
        std::lock_guard lock(control.mutex);
        control.open = true;
        control.changed.notify_all();
    }
    std::mutex jobsMutex_;
    std::condition_variable jobsChanged_;
    std::vector<Job> jobs_;
    std::atomic<bool> stopping_{false};
    int32_t storeReads_ = 0;  // the plugin's thread
    std::thread worker_;
#endif
};

}  // namespace

// Closes (0) or opens (1) the gate of the gated nodes' reads.
TEST_EXPORT void test_sampling_gate(int open) {
    std::lock_guard lock(control.mutex);
    control.open = open != 0;
    control.changed.notify_all();
}
// Waits up to `ms` until `blocked` reads wait at the gate; the number waiting.
TEST_EXPORT int test_sampling_wait_blocked(int blocked, int ms) {
    std::unique_lock lock(control.mutex);
    control.changed.wait_for(lock, std::chrono::milliseconds(ms),
                             [&] { return control.blocked >= blocked; });
    return control.blocked;
}
// The item counts of the read calls on gated nodes since the last call (up to `max`).
TEST_EXPORT size_t test_sampling_read_counts(size_t* out, size_t max) {
    std::lock_guard lock(control.mutex);
    size_t n = control.readCounts.size() < max ? control.readCounts.size() : max;
    for (size_t i = 0; i < n; ++i) out[i] = control.readCounts[i];
    control.readCounts.clear();
    return n;
}
// Waits up to `ms` until monitor was called `on` times enabling and `off` times disabling.
TEST_EXPORT int test_sampling_wait_monitor(int on, int off, int ms) {
    std::unique_lock lock(control.mutex);
    return control.changed.wait_for(lock, std::chrono::milliseconds(ms), [&] {
        return control.monitorOn >= on && control.monitorOff >= off;
    });
}
// A change of i=500 through params.value_changed; its status.
TEST_EXPORT uaplex_status test_sampling_push(int32_t value) {
    uaplex_node_manager_params p;
    {
        std::lock_guard lock(control.mutex);
        control.pushedValue = value;
        p = control.params;
    }
    if (p.value_changed == nullptr) return UAPLEX_BadNotSupported;
    uaplex_nodeid id = numeric_id(control.ns, kPushed);
    uaplex_datavalue dv = data_value(scalar<int32_t>(UAPLEX_TYPE_INT32, value));
    return p.value_changed(p.user, &id, 13, &dv);
}
// The stored node i=900 set through the host API's value_set; its status.
TEST_EXPORT uaplex_status test_sampling_value_set(int32_t value) {
    uaplex_nodeid id = numeric_id(control.ns, kStored);
    uaplex_datavalue dv = data_value(scalar<int32_t>(UAPLEX_TYPE_INT32, value));
    return control.api->value_set(control.ctx, &id, &dv);
}

#ifdef TEST_SAMPLING_ASYNC
UAPLEX_PLUGIN(("test-sampling-async", "1.0.0", "node manager whose sampling reads complete later"),
              uaplex::sdk::NodeManagerFactory<Sampling>)
#else
UAPLEX_PLUGIN(("test-sampling", "1.0.0", "node manager with gated reads and pushed changes"),
              uaplex::sdk::NodeManagerFactory<Sampling>)
#endif
