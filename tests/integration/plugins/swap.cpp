// SPDX-License-Identifier: Apache-2.0
// The two request queues of the hot-swap test (built as test-swap-a and test-swap-b). Each
// enqueue stamps the entry with the plugin's tag, counts itself in a host metric, does a
// little work in the library's own code and data, and completes the entry at once. A call
// into an unloaded copy would crash (or be reported by AddressSanitizer); a lost call shows
// up as a count mismatch.
#include <atomic>

#include "uaplex/cpp/kinds.hpp"

namespace {

std::atomic<uint64_t> g_work{0};

class SwapQueue final : public uaplex::sdk::RequestQueue {
  public:
    SwapQueue(uaplex::sdk::Context ctx, const uaplex_request_queue_params& p)
        : RequestQueue(ctx, p) {
        ctx.api()->metric_register(ctx.raw(), uaplex::sdk::to_str("calls"), UAPLEX_METRIC_COUNTER,
                                   &calls_);
    }
    uaplex_status enqueue(uaplex_request_entry* e) override {
        for (int i = 0; i < 64; ++i)
            g_work.fetch_add(static_cast<uint64_t>(i), std::memory_order_relaxed);
        e->queue_private[0] = reinterpret_cast<void*>(static_cast<uintptr_t>(SWAP_TAG));
        ctx_.api()->metric_add(ctx_.raw(), calls_, 1);
        complete(e, UAPLEX_Good);
        return UAPLEX_Good;
    }
    uaplex_status try_dequeue(uaplex_request_entry** out) override {
        *out = nullptr;
        return UAPLEX_BadNothingToDo;
    }
    uaplex_status dequeue(uint32_t, uaplex_request_entry** out) override {
        *out = nullptr;
        return UAPLEX_BadTimeout;
    }
    uaplex_status cancel(uaplex_request_entry*, uaplex_status) override {
        return UAPLEX_BadNotFound;
    }
    uaplex_status count(uint64_t* out) override {
        *out = 0;
        return UAPLEX_Good;
    }

  private:
    uaplex_metric* calls_ = nullptr;
};

}  // namespace

UAPLEX_PLUGIN((SWAP_NAME, "1.0.0", "hot-swap test queue"),
              uaplex::sdk::RequestQueueFactory<SwapQueue>)
