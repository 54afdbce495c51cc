// SPDX-License-Identifier: Apache-2.0
// Shared helpers: queues made in-process with the plugins' ring (no library load), values.
#pragma once

#include <vector>

#include <uaplex/subscription/queue_handlers.hpp>
#include "data_change_ring.hpp"

namespace uaplex::subscription::test {

// A queue factory's params releasing into a ValuePool, and handlers over the shared ring.
struct Queues {
    ValuePool pool;
    uaplex_mi_queue_params params{};
    Queues() {
        params.hdr = UAPLEX_HEADER_INIT(uaplex_mi_queue_params, UAPLEX_STYPE_MI_QUEUE_PARAMS);
        params.user = &pool;
        params.release_value = [](void* u, uaplex_datavalue* v) -> uaplex_status {
            static_cast<ValuePool*>(u)->release(ValueCell::of(v));
            return UAPLEX_Good;
        };
    }
    std::unique_ptr<DataChangeQueueHandler> handler(uint32_t size, bool discardOldest) {
        auto* q = new miqueues::DataChangeRing(params);
        auto h = std::make_unique<DataChangeQueueHandler>(
            q, &miqueues::DataChangeOps<miqueues::DataChangeRing>::ops, pool);
        h->setQueueSize(size, discardOldest, false);
        return h;
    }
    ValueCell* value(double x, uaplex_status status = UAPLEX_Good) {
        ua::DataValue dv{};
        dv.mask = UAPLEX_DATAVALUE_VALUE | UAPLEX_DATAVALUE_STATUS;
        dv.status = status;
        dv.value = ua::variantDouble(x);
        return pool.copy(dv);
    }
};

struct Published {
    double value;
    bool overflow;
    uaplex_status status;
};

inline std::vector<Published> drain(DataChangeQueueHandler& h, ValuePool& pool) {
    std::vector<Published> out;
    ValueCell* c = nullptr;
    uaplex_status e = UAPLEX_Good;
    while (h.publishSingleValue(&c, &e)) {
        out.push_back({c->dv.value.value.double_, (c->dv.status & kOverflowInfoBits) != 0,
                       c->dv.status & ~kOverflowInfoBits});
        pool.release(c);
    }
    return out;
}

inline std::vector<double> values(const std::vector<Published>& p) {
    std::vector<double> v;
    for (auto& x : p) v.push_back(x.value);
    return v;
}
inline std::vector<bool> overflows(const std::vector<Published>& p) {
    std::vector<bool> v;
    for (auto& x : p) v.push_back(x.overflow);
    return v;
}

}  // namespace uaplex::subscription::test
