// SPDX-License-Identifier: Apache-2.0
// docs/pipeline.md, Queue handlers and monitored items, handler level: the data-change enqueue
// rules, the sampling grid, resize, the deleted-node marker, and the event handler.
#include <catch2/catch.hpp>

#include "test_support.hpp"

using namespace uaplex;
using namespace uaplex::subscription;
using namespace uaplex::subscription::test;

TEST_CASE("handlers 1: discardOldest=true marks the entry that becomes oldest") {
    Queues q;
    auto h = q.handler(3, true);
    std::vector<bool> returned;
    for (int i = 1; i <= 5; ++i) returned.push_back(h->queueValue(q.value(i), UAPLEX_Good, 0));
    CHECK(returned == std::vector<bool>{false, false, false, true, true});
    auto out = drain(*h, q.pool);
    CHECK(values(out) == std::vector<double>{3, 4, 5});
    CHECK(overflows(out) == std::vector<bool>{true, false, false});
    CHECK(h->overflows() == 2);
    CHECK(q.pool.live() == 0);
}

TEST_CASE("handlers 2: discardOldest=false overwrites the newest and marks it") {
    Queues q;
    auto h = q.handler(3, false);
    for (int i = 1; i <= 5; ++i) h->queueValue(q.value(i), UAPLEX_Good, 0);
    auto out = drain(*h, q.pool);
    CHECK(values(out) == std::vector<double>{1, 2, 5});
    CHECK(overflows(out) == std::vector<bool>{false, false, true});
}

TEST_CASE("handlers 3: the sampling grid throttles within a slot") {
    Queues q;
    auto h = q.handler(5, true);
    h->setSamplingInterval(100);
    CHECK(h->nextSampleTime() == 100);
    h->queueValue(q.value(1), UAPLEX_Good, 1000);
    CHECK(h->itemsInQueue() == 1);
    CHECK(h->nextSampleTime() == 1100);
    CHECK_FALSE(h->queueValue(q.value(2), UAPLEX_Good, 1050));
    CHECK(h->itemsInQueue() == 1);
    CHECK(h->discarded() == 1);
    h->queueValue(q.value(3), UAPLEX_Good, 1100);
    auto out = drain(*h, q.pool);
    CHECK(values(out) == std::vector<double>{2, 3});
    CHECK(overflows(out) == std::vector<bool>{false, false});
}

TEST_CASE("handlers 4: a newest BadWaitingForInitialData entry is overwritten") {
    Queues q;
    auto h = q.handler(3, true);
    h->queueValue(q.value(0, UAPLEX_BadWaitingForInitialData), UAPLEX_Good, 0);
    CHECK_FALSE(h->queueValue(q.value(7), UAPLEX_Good, 0));
    auto out = drain(*h, q.pool);
    CHECK(values(out) == std::vector<double>{7});
    CHECK_FALSE(out[0].overflow);
}

TEST_CASE("handlers 5: resize 5 to 2 re-applies the enqueue rules") {
    for (bool discardOldest : {true, false}) {
        Queues q;
        auto h = q.handler(5, discardOldest);
        for (int i = 1; i <= 5; ++i) h->queueValue(q.value(i), UAPLEX_Good, 0);
        h->setQueueSize(2, discardOldest, false);
        auto out = drain(*h, q.pool);
        if (discardOldest) {
            CHECK(values(out) == std::vector<double>{4, 5});
            CHECK(overflows(out) == std::vector<bool>{true, false});
        } else {
            CHECK(values(out) == std::vector<double>{1, 5});
            CHECK(overflows(out) == std::vector<bool>{false, true});
        }
        CHECK(q.pool.live() == 0);
    }
}

TEST_CASE("handlers 6: the deleted-node marker is never displaced and takes the mark") {
    for (bool discardOldest : {true, false}) {
        Queues q;
        auto h = q.handler(3, discardOldest);
        for (int i = 1; i <= 3; ++i) h->queueValue(q.value(i), UAPLEX_Good, 0);
        h->queueRequiredValue(q.value(0, UAPLEX_BadNodeIdUnknown), UAPLEX_BadNodeIdUnknown);
        for (int i = 4; i <= 9; ++i) h->queueValue(q.value(i), UAPLEX_Good, 0);
        auto out = drain(*h, q.pool);
        REQUIRE(!out.empty());
        bool found = false;
        for (auto& p : out) {
            if (p.status != UAPLEX_BadNodeIdUnknown) continue;
            found = true;
            CHECK(p.overflow);
        }
        CHECK(found);
        CHECK(q.pool.live() == 0);
    }
}

TEST_CASE("handlers: event queue handler overflow rules") {
    // An in-process FIFO is enough here; the plugins' own conformance covers their queues.
    struct Fifo {
        std::vector<uaplex_event_entry*> v;
        uint32_t size = 0;
    };
    static const uaplex_event_queue_ops ops{
        .hdr = UAPLEX_HEADER_INIT(uaplex_event_queue_ops, UAPLEX_STYPE_EVENT_QUEUE_OPS),
        .destroy = [](void* s) noexcept -> uaplex_status {
            delete static_cast<Fifo*>(s);
            return UAPLEX_Good;
        },
        .set_queue_size = [](void* s, uint32_t n, int32_t) noexcept -> uaplex_status {
            static_cast<Fifo*>(s)->size = n;
            return UAPLEX_Good;
        },
        .contains_event = [](void* s, uint64_t h, int32_t* f) noexcept -> uaplex_status {
            *f = 0;
            for (auto* e : static_cast<Fifo*>(s)->v) *f |= e->source_handle == h;
            return UAPLEX_Good;
        },
        .enqueue = [](void* s, uaplex_event_entry* e) noexcept -> uaplex_status {
            auto* f = static_cast<Fifo*>(s);
            if (f->size == 0) return UAPLEX_BadInternalError;
            if (f->v.size() == f->size) f->v.erase(f->v.begin());
            f->v.push_back(e);
            return UAPLEX_Good;
        },
        .dequeue = [](void* s, uaplex_event_entry** e) noexcept -> uaplex_status {
            auto* f = static_cast<Fifo*>(s);
            if (f->v.empty()) return UAPLEX_BadNothingToDo;
            *e = f->v.front();
            f->v.erase(f->v.begin());
            return UAPLEX_Good;
        },
        .items_in_queue = [](void* s, uint32_t* n) noexcept -> uaplex_status {
            *n = uint32_t(static_cast<Fifo*>(s)->v.size());
            return UAPLEX_Good;
        },
    };
    uaplex_event_entry e[3]{};
    for (int i = 0; i < 3; ++i) e[i].source_handle = uint64_t(i + 1);
    EventQueueHandler keep(new Fifo, &ops);
    keep.setQueueSize(2, false);
    CHECK(keep.queueEvent(&e[0]) == UAPLEX_Good);
    CHECK(keep.queueEvent(&e[1]) == UAPLEX_Good);
    CHECK(keep.setOverflowIfFull());
    CHECK(keep.overflow);
    std::vector<uaplex_event_entry*> out;
    CHECK(keep.publish(out, 2) == 2);
    CHECK(keep.overflow);  // count reached max: the overflow event is still owed
    out.clear();
    CHECK(keep.publish(out, 2) == 0);
    CHECK_FALSE(keep.overflow);
}
