// SPDX-License-Identifier: Apache-2.0
// A node manager whose operations complete later, from its own thread (ABI 1.8 read_async,
// write_async, uaplex_node_spec.read_async), for the asynchronous-operation tests and the
// bench. Owned namespace urn:uaplex:test-async: s=Delayed completes after `delay_ms`,
// s=Late after `late_ms` (past a short TimeoutHint), s=Inline completes inside read_async,
// s=Sync answers synchronously. Namespace urn:uaplex:test-async-store: s=StoreAsync is a store
// Variable with a read_async callback (after `delay_ms`), s=Stored a stored value.
// Methods of the owned namespace (call_async, any object): s=DelayedMethod(Int32 x) -> 2x
// after `delay_ms` (a non-Int32 input: BadTypeMismatch, BadInvalidArgument), s=LateMethod
// after `late_ms`, s=SyncMethod answered synchronously, s=TwiceMethod completed twice inline
// (s=SecondStatus returns what the second complete returned, UInt32), s=BadOutputMethod
// completes with Good and a NULL output array. Browse (browse_async): s=Folder has five
// HasComponent references to s=Child0..4, added from the plugin's thread after `delay_ms`.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "uaplex/cpp/address_space.hpp"

namespace {

using namespace uaplex::sdk;
using Clock = std::chrono::steady_clock;

std::string_view idText(const uaplex_nodeid* id) {
    if (id->identifier_type != UAPLEX_ID_STRING || id->identifier.string.length <= 0) return {};
    return {id->identifier.string.data, size_t(id->identifier.string.length)};
}

class AsyncNodes : public NodeManager {
  public:
    AsyncNodes(Context ctx, const uaplex_node_manager_params& p) : NodeManager(ctx, p) {
        delay_ = std::chrono::milliseconds(ctx.config_int("delay_ms").value_or(300));
        late_ = std::chrono::milliseconds(ctx.config_int("late_ms").value_or(1500));
        worker_ = std::thread([this] { run(); });
    }
    ~AsyncNodes() override { stopThread(); }

    uaplex_status namespace_count(size_t* out) override {
        *out = 1;
        return UAPLEX_Good;
    }
    uaplex_status namespace_uri(size_t index, uaplex_str* out) override {
        if (index != 0) return UAPLEX_BadOutOfRange;
        static constexpr std::string_view uri = "urn:uaplex:test-async";
        *out = {uri.data(), uri.size()};
        return UAPLEX_Good;
    }
    uaplex_status start() override {
        AddressSpace as(ctx_);
        uint16_t ns = 0;
        if (uaplex_status st = as.register_namespace("urn:uaplex:test-async-store", &ns);
            st != UAPLEX_Good)
            return st;
        NodeSpec a = variable_spec(string_id(ns, "StoreAsync"), numeric_id(0, 85), 47,
                                   qualified_name(ns, "StoreAsync"), 6, -1, 1);
        a.spec.read_async = &AsyncValueRead<&AsyncNodes::readStore>::fn;
        a.spec.user = this;
        if (uaplex_status st = as.add(a.get()); st != UAPLEX_Good) return st;
        NodeSpec s = variable_spec(string_id(ns, "Stored"), numeric_id(0, 85), 47,
                                   qualified_name(ns, "Stored"), 6, -1, 1);
        uaplex_datavalue v = data_value(scalar<int32_t>(UAPLEX_TYPE_INT32, 5));
        s.spec.value = &v;
        return as.add(s.get());
    }
    // Every pending operation completes before stop returns (node_manager.h).
    uaplex_status stop() override {
        stopThread();
        return UAPLEX_Good;
    }

    // The read of owned nodes: the results are filled on the completing thread.
    uaplex_status read_async(size_t n, const uaplex_read_item* items,
                             uaplex_datavalue* const* results, uaplex_status* statuses,
                             Completion& done) {
        Clock::duration wait{};
        bool inline_ = false;
        for (size_t i = 0; i < n; ++i) {
            std::string_view id = idText(items[i].node_id);
            if (items[i].attribute_id != 13) {
                statuses[i] = UAPLEX_BadAttributeIdInvalid;
            } else if (id == "Sync") {
                *results[i] = data_value(scalar<int32_t>(UAPLEX_TYPE_INT32, 9));
            } else if (id == "Inline") {
                inline_ = true;
            } else if (id == "Delayed") {
                wait = std::max<Clock::duration>(wait, delay_);
            } else if (id == "Late") {
                wait = std::max<Clock::duration>(wait, late_);
            } else {
                statuses[i] = UAPLEX_BadNodeIdUnknown;
            }
        }
        Job job{n, items, results, statuses, std::move(done)};
        if (wait == Clock::duration{} && !inline_) {
            job.done.disarm();
            return UAPLEX_Good;  // answered synchronously
        }
        if (wait == Clock::duration{}) {
            fill(job);
            job.done.complete(UAPLEX_Good);  // before read_async returns
            return UAPLEX_GoodCompletesAsynchronously;
        }
        schedule(Clock::now() + wait, std::move(job));
        return UAPLEX_GoodCompletesAsynchronously;
    }
    uaplex_status write_async(size_t n, const uaplex_write_item* items, uaplex_status* statuses,
                              Completion& done) {
        for (size_t i = 0; i < n; ++i)
            if (idText(items[i].node_id) != "Delayed") statuses[i] = UAPLEX_BadNotWritable;
        schedule(Clock::now() + delay_, Job{0, nullptr, nullptr, statuses, std::move(done)});
        return UAPLEX_GoodCompletesAsynchronously;
    }

    uaplex_status call_async(const uaplex_nodeid*, const uaplex_nodeid* method_id, size_t n,
                             const uaplex_variant* inputs, const uaplex_value_alloc* alloc,
                             uaplex_status* input_results, size_t* out_count,
                             uaplex_variant** outputs, Completion& done) {
        std::string_view id = idText(method_id);
        Job job{0, nullptr, nullptr, input_results, std::move(done)};
        job.kind = Kind::Call;
        job.inputs = inputs;
        job.inputCount = n;
        job.alloc = alloc;
        job.outCount = out_count;
        job.outputs = outputs;
        if (id == "SyncMethod") {
            job.done.disarm();
            return UAPLEX_Good;
        }
        if (id == "SecondStatus") {
            job.done.disarm();
            auto* v = static_cast<uaplex_variant*>(
                alloc->allocate(alloc->self, sizeof(uaplex_variant), alignof(uaplex_variant)));
            if (v == nullptr) return UAPLEX_BadOutOfMemory;
            *v = scalar<uint32_t>(UAPLEX_TYPE_UINT32, second_.load());
            *out_count = 1;
            *outputs = v;
            return UAPLEX_Good;
        }
        if (id == "TwiceMethod") {
            uaplex_completion h = job.done.handle();
            job.done.complete(UAPLEX_Good);
            second_.store(h.complete(h.self, h.token, UAPLEX_Good));
            return UAPLEX_GoodCompletesAsynchronously;
        }
        if (id == "DelayedMethod") {
            job.method = "DelayedMethod";
        } else if (id == "BadOutputMethod") {
            job.method = "BadOutputMethod";
        } else if (id != "LateMethod") {
            job.done.disarm();
            return UAPLEX_BadMethodInvalid;
        }
        schedule(Clock::now() + (id == "LateMethod" ? late_ : delay_), std::move(job));
        return UAPLEX_GoodCompletesAsynchronously;
    }

    uaplex_status browse_async(const uaplex_nodeid* node_id, uint32_t direction,
                               const uaplex_nodeid*, int32_t, ReferenceSink sink,
                               Completion& done) {
        if (idText(node_id) != "Folder") {
            done.disarm();
            return UAPLEX_BadNodeIdUnknown;
        }
        Job job{0, nullptr, nullptr, nullptr, std::move(done)};
        job.kind = Kind::Browse;
        job.sink = sink;
        job.forward = direction != 1;
        job.ns = node_id->namespace_index;
        schedule(Clock::now() + delay_, std::move(job));
        return UAPLEX_GoodCompletesAsynchronously;
    }

  private:
    enum class Kind { Read, Call, Browse };
    struct Job {
        size_t n;
        const uaplex_read_item* items;
        uaplex_datavalue* const* results;
        uaplex_status* statuses;  // calls: the input results
        Completion done;
        uaplex_datavalue* storeOut = nullptr;
        Kind kind = Kind::Read;
        // Calls.
        std::string_view method{};
        const uaplex_variant* inputs = nullptr;
        size_t inputCount = 0;
        const uaplex_value_alloc* alloc = nullptr;
        size_t* outCount = nullptr;
        uaplex_variant** outputs = nullptr;
        // Browses.
        ReferenceSink sink{};
        bool forward = true;
        uint16_t ns = 0;
    };

    // A call's answer, on the completing thread: the status its complete carries.
    uaplex_status answer(Job& job) const {
        if (job.method == "BadOutputMethod") {
            *job.outCount = 1;
            *job.outputs = nullptr;
            return UAPLEX_Good;
        }
        if (job.method != "DelayedMethod") return UAPLEX_Good;
        if (job.inputCount != 1) return UAPLEX_BadArgumentsMissing;
        if ((job.inputs[0].encoding & UAPLEX_VARIANT_TYPE_MASK) != UAPLEX_TYPE_INT32 ||
            (job.inputs[0].encoding & UAPLEX_VARIANT_ARRAY) != 0) {
            job.statuses[0] = UAPLEX_BadTypeMismatch;
            return UAPLEX_BadInvalidArgument;
        }
        auto* v = static_cast<uaplex_variant*>(
            job.alloc->allocate(job.alloc->self, sizeof(uaplex_variant), alignof(uaplex_variant)));
        if (v == nullptr) return UAPLEX_BadOutOfMemory;
        *v = scalar<int32_t>(UAPLEX_TYPE_INT32, job.inputs[0].value.int32 * 2);
        *job.outCount = 1;
        *job.outputs = v;
        return UAPLEX_Good;
    }

    // A browse's references, from this thread; the strings are borrowed for each add.
    uaplex_status browseChildren(Job& job) const {
        uaplex_nodeid type = numeric_id(0, 47);
        for (int i = 0; i < 5; ++i) {
            std::string name = "Child" + std::to_string(i);
            uaplex_nodeid target = string_id(job.ns, name);
            if (job.sink.add(job.forward, type, target, 2) != UAPLEX_Good) break;
        }
        return UAPLEX_Good;
    }

    uaplex_status readStore(const uaplex_nodeid&, const uaplex_value_alloc&, uaplex_datavalue& out,
                            Completion& done) {
        Job job{0, nullptr, nullptr, nullptr, std::move(done)};
        job.storeOut = &out;
        schedule(Clock::now() + delay_, std::move(job));
        return UAPLEX_GoodCompletesAsynchronously;
    }

    // Values of the owned nodes; a String from the item's alloc, on the completing thread.
    static void fill(Job& job) {
        if (job.storeOut) {
            *job.storeOut = data_value(scalar<int32_t>(UAPLEX_TYPE_INT32, 11));
            return;
        }
        for (size_t i = 0; i < job.n; ++i) {
            if (job.statuses[i] != UAPLEX_Good) continue;
            std::string_view id = idText(job.items[i].node_id);
            if (id == "Sync") continue;
            if (id == "Inline") {
                *job.results[i] = data_value(scalar<int32_t>(UAPLEX_TYPE_INT32, 8));
                continue;
            }
            const uaplex_value_alloc* a = job.items[i].alloc;
            std::string_view text = id == "Late" ? "late" : "delayed";
            auto* p = static_cast<char*>(a->allocate(a->self, text.size(), 1));
            if (p == nullptr) {
                job.statuses[i] = UAPLEX_BadOutOfMemory;
                continue;
            }
            std::memcpy(p, text.data(), text.size());
            uaplex_variant v{};
            v.encoding = UAPLEX_TYPE_STRING;
            v.array_length = -1;
            v.value.string = {int32_t(text.size()), p};
            *job.results[i] = data_value(v);
        }
    }

    void schedule(Clock::time_point due, Job job) {
        std::lock_guard lock(mutex_);
        jobs_.emplace(due, std::move(job));
        wake_.notify_one();
    }

    void run() {
        std::unique_lock lock(mutex_);
        while (!stopping_) {
            if (jobs_.empty()) {
                wake_.wait(lock);
                continue;
            }
            auto first = jobs_.begin();
            if (first->first > Clock::now()) {
                wake_.wait_until(lock, first->first);
                continue;
            }
            Job job = std::move(first->second);
            jobs_.erase(first);
            lock.unlock();
            uaplex_status st = UAPLEX_Good;
            if (job.kind == Kind::Call)
                st = answer(job);
            else if (job.kind == Kind::Browse)
                st = browseChildren(job);
            else
                fill(job);
            job.done.complete(st);
            lock.lock();
        }
        // Stopping: what is still pending completes now.
        for (auto& [due, job] : jobs_) job.done.complete(UAPLEX_BadServerHalted);
        jobs_.clear();
    }

    void stopThread() {
        {
            std::lock_guard lock(mutex_);
            stopping_ = true;
            wake_.notify_one();
        }
        if (worker_.joinable()) worker_.join();
    }

    Clock::duration delay_{}, late_{};
    std::mutex mutex_;
    std::condition_variable wake_;
    std::multimap<Clock::time_point, Job> jobs_;
    bool stopping_ = false;
    std::atomic<uaplex_status> second_{UAPLEX_Good};
    std::thread worker_;
};

}  // namespace

UAPLEX_PLUGIN(("test-asyncread", "1.0.0", "node manager whose operations complete later"),
              uaplex::sdk::NodeManagerFactory<AsyncNodes>)
