// SPDX-License-Identifier: Apache-2.0
// A C++ request queue whose constructor throws: the helper must turn it into
// BadInternalError and log it, never let it cross the C ABI.
#include <stdexcept>

#include "uaplex/cpp/kinds.hpp"

namespace {
class Throwing final : public uaplex::sdk::RequestQueue {
  public:
    Throwing(uaplex::sdk::Context ctx, const uaplex_request_queue_params& p)
        : RequestQueue(ctx, p) {
        throw std::runtime_error("constructor exploded on purpose");
    }
    uaplex_status enqueue(uaplex_request_entry*) override { return UAPLEX_Good; }
    uaplex_status try_dequeue(uaplex_request_entry**) override { return UAPLEX_BadNothingToDo; }
    uaplex_status dequeue(uint32_t, uaplex_request_entry**) override { return UAPLEX_BadTimeout; }
    uaplex_status cancel(uaplex_request_entry*, uaplex_status) override {
        return UAPLEX_BadNotFound;
    }
    uaplex_status count(uint64_t* out) override {
        *out = 0;
        return UAPLEX_Good;
    }
};
}  // namespace

UAPLEX_PLUGIN(("test-throwing", "1.0.0", "throws from its constructor"),
              uaplex::sdk::RequestQueueFactory<Throwing>)
