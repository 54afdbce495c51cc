// SPDX-License-Identifier: Apache-2.0
// A request queue that misbehaves on purpose (faulty_queue_test), built with the SDK's C++
// helpers: a plain locked FIFO whose `fault` setting picks the misbehaviour.
//   "garbage_status": every other enqueue of a Read refuses with a status that is no refusal
//                     (0x00FF0000, Good severity) and links nothing;
//   "throw":          every other enqueue of a Read throws a C++ exception;
//   "spin":           dequeue never waits and, when empty, answers Good with a NULL entry;
// Built with FAULTY_TABLE, the library's ops table is broken instead ("huge": a struct_size
// of 1 MiB; "null": a NULL enqueue entry; "older": a 1.4 table that claims wake_waiters).
#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <stdexcept>
#include <string>

#include "uaplex/cpp/kinds.hpp"

namespace {

using uaplex::sdk::Context;

class FaultyQueue final : public uaplex::sdk::RequestQueue {
  public:
    FaultyQueue(Context ctx, const uaplex_request_queue_params& p) : RequestQueue(ctx, p) {
        ctx.check_known_keys({"fault"});
        fault_ = std::string(ctx.config_string("fault").value_or(""));
    }

    uaplex_status stop() override {
        std::deque<uaplex_request_entry*> left;
        {
            std::lock_guard lock(mutex_);
            stopped_ = true;
            left.swap(queue_);
        }
        cv_.notify_all();
        for (auto* e : left) complete(e, UAPLEX_BadServerHalted);
        return UAPLEX_Good;
    }
    uaplex_status enqueue(uaplex_request_entry* e) override {
        // Reads only (ReadRequest, 631): the sessions themselves are established.
        bool odd = e->service_type == 631 && (reads_++ % 2) == 1;
        if (odd && fault_ == "garbage_status") return 0x00FF0000u;
        if (odd && fault_ == "throw") throw std::runtime_error("enqueue exploded on purpose");
        {
            std::lock_guard lock(mutex_);
            if (stopped_) return UAPLEX_BadServerHalted;
            queue_.push_back(e);
        }
        cv_.notify_one();
        return UAPLEX_Good;
    }
    uaplex_status try_dequeue(uaplex_request_entry** out) override {
        std::lock_guard lock(mutex_);
        return take(out);
    }
    uaplex_status dequeue(uint32_t timeout_ms, uaplex_request_entry** out) override {
        std::unique_lock lock(mutex_);
        if (fault_ == "spin") {
            if (take(out) == UAPLEX_Good) return UAPLEX_Good;
            *out = nullptr;
            return UAPLEX_Good;  // "an entry", but none
        }
        cv_.wait_for(lock, std::chrono::milliseconds(timeout_ms),
                     [&] { return stopped_ || woken_ || !queue_.empty(); });
        woken_ = false;
        uaplex_status st = take(out);
        return st == UAPLEX_BadNothingToDo ? UAPLEX_BadTimeout : st;
    }
    uaplex_status cancel(uaplex_request_entry* e, uaplex_status status) override {
        {
            std::lock_guard lock(mutex_);
            auto it = std::find(queue_.begin(), queue_.end(), e);
            if (it == queue_.end()) return UAPLEX_BadNotFound;
            queue_.erase(it);
        }
        complete(e, status);
        return UAPLEX_Good;
    }
    uaplex_status count(uint64_t* out) override {
        std::lock_guard lock(mutex_);
        *out = queue_.size();
        return UAPLEX_Good;
    }
    uaplex_status wake_waiters() override {
        {
            std::lock_guard lock(mutex_);
            woken_ = true;
        }
        cv_.notify_all();
        return UAPLEX_Good;
    }

  private:
    uaplex_status take(uaplex_request_entry** out) {
        if (stopped_) return UAPLEX_BadServerHalted;
        if (queue_.empty()) return UAPLEX_BadNothingToDo;
        *out = queue_.front();
        queue_.pop_front();
        return UAPLEX_Good;
    }

    std::string fault_;
    std::mutex mutex_;
    std::condition_variable cv_;
    std::deque<uaplex_request_entry*> queue_;
    bool stopped_ = false;
    bool woken_ = false;
    std::atomic<uint64_t> reads_{0};
};

using Factory = uaplex::sdk::RequestQueueFactory<FaultyQueue>;

#ifdef FAULTY_TABLE
// The helper's tables, then broken as FAULTY_TABLE says.
uaplex_request_queue_ops broken_ops() {
    uaplex_request_queue_ops ops = Factory::ops;
    std::string how = FAULTY_TABLE;
    if (how == "huge") ops.hdr.struct_size = 1u << 20;
    if (how == "null") ops.enqueue = nullptr;
    return ops;
}
const uaplex_request_queue_ops kOps = broken_ops();
const uaplex_request_queue_factory kFactory{
    UAPLEX_HEADER_INIT(uaplex_request_queue_factory, UAPLEX_STYPE_REQUEST_QUEUE_FACTORY), &kOps,
    Factory::factory.create};
struct BrokenFactory {
    static void describe(uaplex_plugin_descriptor& d) noexcept {
        d.request_queue = &kFactory;
        if (std::string(FAULTY_TABLE) == "older") d.abi_minor = 4;
    }
};
#endif

}  // namespace

#ifdef FAULTY_TABLE
UAPLEX_PLUGIN((FAULTY_NAME, "1.0.0", "request queue with a broken ops table"), BrokenFactory)
#else
UAPLEX_PLUGIN(("test-faulty-queue", "1.0.0", "request queue that misbehaves on purpose"), Factory)
#endif
