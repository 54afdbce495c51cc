// SPDX-License-Identifier: Apache-2.0
// Monitored-item queue conformance (docs/pipeline.md), through the C ABI, against the plugin
// in UAPLEX_MIQ_PLUGIN. Test 1 concerns factories without durable support (both plugins
// here); test 10 checks the plugin's declared duplicate window.
#include <algorithm>
#include <cstdlib>
#include <deque>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "plugin_fixture.hpp"
#include "uaplex/types.h"

namespace {

using Loaded = uaplex::conformance::Loaded<uaplex_mi_queue_factory, uaplex_mi_queue_params,
                                           uaplex_mi_queue_factory_ops>;

// Values and events are tagged integers; the fixture tracks what the queue released.
struct Factory : Loaded {
    std::multiset<int64_t> releasedValues, releasedEvents;
    std::vector<std::unique_ptr<uaplex_datavalue>> values;
    std::vector<std::unique_ptr<uaplex_event_entry>> events;

    Factory() {
        auto lib = uaplex::conformance::library_from_env("UAPLEX_MIQ_PLUGIN");
        REQUIRE(lib->descriptor().monitored_item_queue != nullptr);
        params.hdr = UAPLEX_HEADER_INIT(uaplex_mi_queue_params, UAPLEX_STYPE_MI_QUEUE_PARAMS);
        params.user = this;
        params.release_value = [](void* u, uaplex_datavalue* v) -> uaplex_status {
            static_cast<Factory*>(u)->releasedValues.insert(v->value.value.int64);
            return UAPLEX_Good;
        };
        params.release_event = [](void* u, uaplex_event_entry* e) -> uaplex_status {
            static_cast<Factory*>(u)->releasedEvents.insert(int64_t(e->field_count));
            return UAPLEX_Good;
        };
        load(lib, *lib->descriptor().monitored_item_queue, toml::table{});
    }
    uaplex_datavalue* value(int64_t n) {
        values.push_back(std::make_unique<uaplex_datavalue>());
        values.back()->value.value.int64 = n;
        return values.back().get();
    }
    // The event's id travels in field_count (the queue never reads fields).
    uaplex_event_entry* event(uint32_t id, uint64_t source) {
        events.push_back(std::make_unique<uaplex_event_entry>());
        auto* e = events.back().get();
        e->hdr = UAPLEX_HEADER_INIT(uaplex_event_entry, UAPLEX_STYPE_EVENT_ENTRY);
        e->field_count = id;
        e->source_handle = source;
        return e;
    }
};

struct DataQueue {
    void* self = nullptr;
    const uaplex_data_change_queue_ops* ops = nullptr;
    DataQueue(Factory& f) {
        REQUIRE(f.ops->create_data_change_queue(f.self, 0, 7, &self, &ops) == UAPLEX_Good);
    }
    ~DataQueue() { ops->destroy(self); }
    std::vector<int64_t> drain(std::vector<uaplex_status>* errors = nullptr) {
        std::vector<int64_t> out;
        uaplex_datavalue* v = nullptr;
        uaplex_status e = UAPLEX_Good;
        while (ops->dequeue(self, &v, &e) == UAPLEX_Good) {
            out.push_back(v->value.value.int64);
            if (errors) errors->push_back(e);
        }
        return out;
    }
};

struct EventQueue {
    void* self = nullptr;
    const uaplex_event_queue_ops* ops = nullptr;
    EventQueue(Factory& f) {
        REQUIRE(f.ops->create_event_queue(f.self, 0, 7, &self, &ops) == UAPLEX_Good);
    }
    ~EventQueue() { ops->destroy(self); }
    std::vector<uint32_t> drain() {
        std::vector<uint32_t> out;
        uaplex_event_entry* e = nullptr;
        while (ops->dequeue(self, &e) == UAPLEX_Good) out.push_back(e->field_count);
        return out;
    }
    bool contains(uint64_t h) {
        int32_t found = -1;
        REQUIRE(ops->contains_event(self, h, &found) == UAPLEX_Good);
        return found == 1;
    }
};

}  // namespace

TEST_CASE("mi queue 1: durable=true without durable support gives InvalidArgument") {
    Factory f;
    int32_t supported = -1;
    REQUIRE(f.ops->supports_durable(f.self, &supported) == UAPLEX_Good);
    REQUIRE(supported == 0);
    void* q = nullptr;
    const uaplex_data_change_queue_ops* dops = nullptr;
    const uaplex_event_queue_ops* eops = nullptr;
    CHECK(f.ops->create_data_change_queue(f.self, 1, 1, &q, &dops) == UAPLEX_BadInvalidArgument);
    CHECK(f.ops->create_event_queue(f.self, 1, 1, &q, &eops) == UAPLEX_BadInvalidArgument);
}

TEST_CASE("mi queue 2: enqueue before reset or at size 0 is refused") {
    Factory f;
    DataQueue q(f);
    CHECK(q.ops->enqueue(q.self, f.value(1), UAPLEX_Good) == UAPLEX_BadInvalidState);
    REQUIRE(q.ops->reset(q.self, 0, 0) == UAPLEX_Good);
    CHECK(q.ops->enqueue(q.self, f.value(2), UAPLEX_Good) == UAPLEX_BadInvalidState);
    CHECK(f.releasedValues.empty());  // refused values stay the caller's
}

TEST_CASE("mi queue 3: a full ring drops the oldest") {
    Factory f;
    DataQueue q(f);
    REQUIRE(q.ops->reset(q.self, 3, 0) == UAPLEX_Good);
    for (int i = 1; i <= 5; ++i) REQUIRE(q.ops->enqueue(q.self, f.value(i), UAPLEX_Good) == 0);
    uint32_t n = 0, size = 0;
    q.ops->items_in_queue(q.self, &n);
    q.ops->queue_size(q.self, &size);
    CHECK(n == 3);
    CHECK(size == 3);
    CHECK(q.drain() == std::vector<int64_t>{3, 4, 5});
    CHECK(f.releasedValues == std::multiset<int64_t>{1, 2});
}

TEST_CASE("mi queue 4: overwriteNewest replaces the newest entry") {
    Factory f;
    DataQueue q(f);
    uaplex_datavalue* v = nullptr;
    uaplex_status e = 0;
    CHECK(q.ops->overwrite_newest(q.self, f.value(0), UAPLEX_Good) == UAPLEX_BadInvalidState);
    REQUIRE(q.ops->reset(q.self, 3, 0) == UAPLEX_Good);
    CHECK(q.ops->peek_newest(q.self, &v, &e) == UAPLEX_BadNothingToDo);
    for (int i = 1; i <= 3; ++i) q.ops->enqueue(q.self, f.value(i), UAPLEX_Good);
    q.ops->dequeue(q.self, &v, &e);
    CHECK(v->value.value.int64 == 1);
    q.ops->enqueue(q.self, f.value(4), UAPLEX_Good);
    REQUIRE(q.ops->overwrite_newest(q.self, f.value(9), UAPLEX_Good) == UAPLEX_Good);
    REQUIRE(q.ops->peek_oldest(q.self, &v, &e) == UAPLEX_Good);
    CHECK(v->value.value.int64 == 2);
    REQUIRE(q.ops->peek_newest(q.self, &v, &e) == UAPLEX_Good);
    CHECK(v->value.value.int64 == 9);
    CHECK(q.drain() == std::vector<int64_t>{2, 3, 9});
    CHECK(f.releasedValues == std::multiset<int64_t>{4});
}

TEST_CASE("mi queue 5: errors are kept only with keepErrors") {
    Factory f;
    DataQueue q(f);
    std::vector<uaplex_status> errors;
    q.ops->reset(q.self, 2, 0);
    q.ops->enqueue(q.self, f.value(1), UAPLEX_BadNodeIdUnknown);
    q.drain(&errors);
    CHECK(errors == std::vector<uaplex_status>{UAPLEX_Good});
    errors.clear();
    q.ops->reset(q.self, 2, 1);
    q.ops->enqueue(q.self, f.value(1), UAPLEX_BadNodeIdUnknown);
    q.drain(&errors);
    CHECK(errors == std::vector<uaplex_status>{UAPLEX_BadNodeIdUnknown});
}

TEST_CASE("mi queue 6: an event queue of size 0 refuses with BadInternalError") {
    Factory f;
    EventQueue q(f);
    CHECK(q.ops->enqueue(q.self, f.event(1, 1)) == UAPLEX_BadInternalError);
    q.ops->set_queue_size(q.self, 0, 1);
    CHECK(q.ops->enqueue(q.self, f.event(2, 1)) == UAPLEX_BadInternalError);
}

TEST_CASE("mi queue 7: a full event queue drops the oldest, FIFO") {
    Factory f;
    EventQueue q(f);
    q.ops->set_queue_size(q.self, 3, 1);
    for (uint32_t i = 1; i <= 5; ++i) REQUIRE(q.ops->enqueue(q.self, f.event(i, i)) == 0);
    CHECK(q.drain() == std::vector<uint32_t>{3, 4, 5});
    CHECK(f.releasedEvents == std::multiset<int64_t>{1, 2});
}

TEST_CASE("mi queue 8: shrink keeps the newest or the oldest") {
    for (int discardOldest : {1, 0}) {
        Factory f;
        EventQueue q(f);
        q.ops->set_queue_size(q.self, 5, discardOldest);
        for (uint32_t i = 1; i <= 5; ++i) q.ops->enqueue(q.self, f.event(i, i));
        q.ops->set_queue_size(q.self, 2, discardOldest);
        CHECK(q.drain() ==
              (discardOldest ? std::vector<uint32_t>{4, 5} : std::vector<uint32_t>{1, 2}));
        for (uint32_t i = 6; i <= 8; ++i) q.ops->enqueue(q.self, f.event(i, i));
        CHECK(q.drain() == std::vector<uint32_t>{7, 8});  // the new size holds
        q.ops->enqueue(q.self, f.event(9, 9));
        q.ops->set_queue_size(q.self, 0, discardOldest);
        uint32_t n = 7;
        q.ops->items_in_queue(q.self, &n);
        CHECK(n == 0);
    }
}

TEST_CASE("mi queue 9: the duplicate check compares source identity") {
    Factory f;
    EventQueue q(f);
    q.ops->set_queue_size(q.self, 10, 1);
    q.ops->enqueue(q.self, f.event(1, 0xA));
    q.ops->enqueue(q.self, f.event(1, 0xB));  // equal fields, another source
    CHECK(q.contains(0xA));
    CHECK(q.contains(0xB));
    CHECK_FALSE(q.contains(0xC));
    uaplex_event_entry* e = nullptr;
    q.ops->dequeue(q.self, &e);
    CHECK_FALSE(q.contains(0xA));
    CHECK(q.contains(0xB));
}

TEST_CASE("mi queue 10: the duplicate window (1500 entries, handle at 1200)") {
    Factory f;
    EventQueue q(f);
    const std::string window =
        std::getenv("UAPLEX_MIQ_WINDOW") ? std::getenv("UAPLEX_MIQ_WINDOW") : "";
    REQUIRE((window == "oldest" || window == "newest"));
    q.ops->set_queue_size(q.self, 2000, 1);
    for (uint32_t i = 1; i <= 1500; ++i)
        q.ops->enqueue(q.self, f.event(i, i == 1200 ? 0xABCDEF : i));
    // Oldest window (reference server): positions 1..1000; newest: 501..1500.
    CHECK(q.contains(0xABCDEF) == (window == "newest"));
    CHECK(q.contains(5) == (window == "oldest"));
    CHECK(q.contains(1400) == (window == "newest"));
    CHECK(q.contains(600));  // inside both windows
}

TEST_CASE("mi queue: random event operations match a model") {
    Factory f;
    EventQueue q(f);
    std::deque<uint32_t> model;
    uint32_t size = 0, next = 1;
    std::mt19937 rng(11);
    for (int step = 0; step < 20000; ++step) {
        int op = rng() % 10;
        if (op < 6) {
            uaplex_status st = q.ops->enqueue(q.self, f.event(next, next));
            if (size == 0) {
                REQUIRE(st == UAPLEX_BadInternalError);
            } else {
                REQUIRE(st == UAPLEX_Good);
                if (model.size() == size) model.pop_front();
                model.push_back(next);
            }
            ++next;
        } else if (op < 9) {
            uaplex_event_entry* e = nullptr;
            uaplex_status st = q.ops->dequeue(q.self, &e);
            REQUIRE((st == UAPLEX_Good) == !model.empty());
            if (st == UAPLEX_Good) {
                REQUIRE(e->field_count == model.front());
                model.pop_front();
            }
        } else {
            uint32_t n = rng() % 8;
            bool discardOldest = rng() % 2;
            q.ops->set_queue_size(q.self, n, discardOldest);
            while (model.size() > n) discardOldest ? model.pop_front() : model.pop_back();
            size = n;
        }
        uint32_t count = 0;
        q.ops->items_in_queue(q.self, &count);
        REQUIRE(count == model.size());
    }
}

// The duplicate check under random enqueues, dequeues and resizes, with repeated handles and
// sizes below, at and above the window, against the plugin's declared window.
TEST_CASE("mi queue: the duplicate check matches its window under random operations") {
    Factory f;
    EventQueue q(f);
    const std::string window =
        std::getenv("UAPLEX_MIQ_WINDOW") ? std::getenv("UAPLEX_MIQ_WINDOW") : "";
    REQUIRE((window == "oldest" || window == "newest"));
    std::deque<uint64_t> model;  // handles, oldest first
    const uint32_t sizes[] = {0, 1, 7, 999, 1000, 1001, 1500, 2500};
    uint32_t size = 0, next = 1;
    std::mt19937 rng(17);
    auto expected = [&](uint64_t h) {
        size_t n = std::min<size_t>(model.size(), 1000);
        size_t from = window == "newest" ? model.size() - n : 0;
        for (size_t i = from; i < from + n; ++i)
            if (model[i] == h) return true;
        return false;
    };
    for (int step = 0; step < 30000; ++step) {
        int op = rng() % 1000;
        if (op < 700) {
            for (uint32_t burst = rng() % 40; burst > 0; --burst) {
                uint64_t h = rng() % 1800;  // repeats inside and across the window
                if (q.ops->enqueue(q.self, f.event(next++, h)) == UAPLEX_Good) {
                    if (model.size() == size) model.pop_front();
                    model.push_back(h);
                }
            }
        } else if (op < 998) {
            uaplex_event_entry* e = nullptr;
            if (q.ops->dequeue(q.self, &e) == UAPLEX_Good) {
                REQUIRE(e->source_handle == model.front());
                model.pop_front();
            }
        } else {
            uint32_t n = sizes[rng() % std::size(sizes)];
            bool discardOldest = rng() % 2;
            q.ops->set_queue_size(q.self, n, discardOldest);
            while (model.size() > n) discardOldest ? model.pop_front() : model.pop_back();
            size = n;
        }
        for (int k = 0; k < 3; ++k) {
            uint64_t h = rng() % 1800;
            INFO("step " << step << " handle " << h << " queued " << model.size());
            REQUIRE(q.contains(h) == expected(h));
        }
    }
}
