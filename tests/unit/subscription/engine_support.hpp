// SPDX-License-Identifier: Apache-2.0
// An engine on a fake clock with queues made in-process (the plugins' shared ring), and
// readers for the NotificationMessages it builds.
#pragma once

#include <deque>
#include <memory>
#include <vector>

#include <uaplex/subscription/subscription.hpp>
#include "data_change_ring.hpp"

namespace uaplex::subscription::test {

struct EventFifo {  // a minimal event queue: FIFO, drop-oldest, duplicate check over all
    std::deque<uaplex_event_entry*> v;
    uint32_t size = 0;
    EngineContext* ctx = nullptr;
    static const uaplex_event_queue_ops ops;
};
inline const uaplex_event_queue_ops EventFifo::ops{
    .hdr = UAPLEX_HEADER_INIT(uaplex_event_queue_ops, UAPLEX_STYPE_EVENT_QUEUE_OPS),
    .destroy = [](void* s) noexcept -> uaplex_status {
        auto* f = static_cast<EventFifo*>(s);
        for (auto* e : f->v) f->ctx->releaseEvent(EventCell::of(e));
        delete f;
        return UAPLEX_Good;
    },
    .set_queue_size = [](void* s, uint32_t n, int32_t discardOldest) noexcept -> uaplex_status {
        auto* f = static_cast<EventFifo*>(s);
        while (f->v.size() > n) {
            auto* e = discardOldest ? f->v.front() : f->v.back();
            discardOldest ? f->v.pop_front() : f->v.pop_back();
            f->ctx->releaseEvent(EventCell::of(e));
        }
        f->size = n;
        return UAPLEX_Good;
    },
    .contains_event = [](void* s, uint64_t h, int32_t* found) noexcept -> uaplex_status {
        *found = 0;
        for (auto* e : static_cast<EventFifo*>(s)->v) *found |= e->source_handle == h;
        return UAPLEX_Good;
    },
    .enqueue = [](void* s, uaplex_event_entry* e) noexcept -> uaplex_status {
        auto* f = static_cast<EventFifo*>(s);
        if (f->size == 0) return UAPLEX_BadInternalError;
        if (f->v.size() == f->size) {
            f->ctx->releaseEvent(EventCell::of(f->v.front()));
            f->v.pop_front();
        }
        f->v.push_back(e);
        return UAPLEX_Good;
    },
    .dequeue = [](void* s, uaplex_event_entry** e) noexcept -> uaplex_status {
        auto* f = static_cast<EventFifo*>(s);
        if (f->v.empty()) return UAPLEX_BadNothingToDo;
        *e = f->v.front();
        f->v.pop_front();
        return UAPLEX_Good;
    },
    .items_in_queue = [](void* s, uint32_t* n) noexcept -> uaplex_status {
        *n = uint32_t(static_cast<EventFifo*>(s)->v.size());
        return UAPLEX_Good;
    },
};

struct Engine {
    FakeClock clock;
    EngineContext ctx{clock};
    uaplex_mi_queue_params params{};
    uint32_t nextSub = 1;

    Engine() {
        params.hdr = UAPLEX_HEADER_INIT(uaplex_mi_queue_params, UAPLEX_STYPE_MI_QUEUE_PARAMS);
        params.user = &ctx;
        params.release_value = [](void* u, uaplex_datavalue* v) -> uaplex_status {
            static_cast<EngineContext*>(u)->values.release(ValueCell::of(v));
            return UAPLEX_Good;
        };
    }
    std::unique_ptr<Subscription> subscription(double pi, uint32_t k, uint32_t l, uint32_t n,
                                               bool enabled = true) {
        auto s = reviseSettings(ctx.limits, pi, l, k, n);
        return std::make_unique<Subscription>(ctx, nextSub++, 1, s, 0, enabled);
    }
    MonitoredItem* dataItem(Subscription& s, uint32_t size, bool discardOldest = true,
                            int64_t si = 0) {
        MonitoredItem* it = s.createItem(100 + uint32_t(s.itemCount()), 1);
        it->setSamplingInterval(si, clock.monoMs());
        std::unique_ptr<DataChangeQueueHandler> dq;
        if (size > 1)
            dq = std::make_unique<DataChangeQueueHandler>(
                new miqueues::DataChangeRing(params),
                &miqueues::DataChangeOps<miqueues::DataChangeRing>::ops, ctx.values);
        it->setQueue(size, discardOldest, std::move(dq), nullptr);
        return it;
    }
    MonitoredItem* eventItem(Subscription& s, uint32_t size, bool discardOldest = true) {
        MonitoredItem* it = s.createItem(100 + uint32_t(s.itemCount()), 1);
        it->markEventItem();
        auto* f = new EventFifo;
        f->ctx = &ctx;
        it->setQueue(size, discardOldest, nullptr,
                     std::make_unique<EventQueueHandler>(f, &EventFifo::ops));
        return it;
    }
    // An event with one field (a Double) from source `handle`.
    EventCell* event(double field, uint64_t handle) {
        auto* e = new EventCell;
        e->entry.source_handle = handle;
        ua::DataValue dv{};
        dv.mask = UAPLEX_DATAVALUE_VALUE;
        dv.value = ua::variantDouble(field);
        e->cells.push_back(ctx.values.copy(dv));
        return e;
    }
    bool queueEvent(MonitoredItem* it, double field, uint64_t handle) {
        EventCell* e = event(field, handle);
        bool ok = it->queueEvent(e);
        if (!ok) ctx.releaseEvent(e);
        return ok;
    }
    static ua::DataValue value(double x, int64_t sourceTs = 0) {
        ua::DataValue dv{};
        dv.mask = UAPLEX_DATAVALUE_VALUE | UAPLEX_DATAVALUE_SOURCE_TIMESTAMP |
                  UAPLEX_DATAVALUE_SERVER_TIMESTAMP;
        dv.value = ua::variantDouble(x);
        dv.source_timestamp = sourceTs ? sourceTs : 1000;
        dv.server_timestamp = 2000;
        return dv;
    }
    void put(MonitoredItem* it, double x, int64_t sourceTs = 0) {
        it->queueValue(value(x, sourceTs), UAPLEX_Good, clock.monoMs());
    }
};

// One notification of a message, flattened: events (value = first field, nan for the
// overflow event) and data changes.
struct Note {
    bool event;
    uint32_t clientHandle;
    double value;
    bool overflow;
};

inline std::vector<Note> notes(const ua::NotificationMessage& m) {
    std::vector<Note> out;
    for (auto& eo : m.notificationData) {
        if (eo.data_type == enc::dataTypeOf<ua::DataChangeNotification>()) {
            auto* d = static_cast<ua::DataChangeNotification*>(eo.object);
            for (auto& n : d->monitoredItems)
                out.push_back({false, n.clientHandle, n.value.value.value.double_,
                               (n.value.status & kOverflowInfoBits) != 0});
        } else if (eo.data_type == enc::dataTypeOf<ua::EventNotificationList>()) {
            auto* l = static_cast<ua::EventNotificationList*>(eo.object);
            for (auto& f : l->events)
                out.push_back({true, f.clientHandle,
                               f.eventFields.size() ? f.eventFields[0].value.double_ : -1,
                               f.eventFields.size() == 0});
        }
    }
    return out;
}

inline std::vector<double> valuesOf(const std::vector<Note>& n) {
    std::vector<double> v;
    for (auto& x : n) v.push_back(x.value);
    return v;
}

// Staged output of one item's publish (handler-level tests).
struct Staged {
    std::vector<StagedData> data;
    std::vector<StagedEvent> events;
    EngineContext& ctx;
    explicit Staged(EngineContext& c) : ctx(c) {}
    ~Staged() { clear(); }
    void clear() {
        for (auto& d : data)
            if (!d.borrowed) ctx.values.release(d.value);  // borrowed: the item's own
        for (auto& e : events)
            if (e.event) ctx.releaseEvent(e.event);
        data.clear();
        events.clear();
    }
    // Event first fields, -1 for the overflow event.
    std::vector<double> eventValues() const {
        std::vector<double> v;
        for (auto& e : events) {
            if (!e.event) {
                v.push_back(-1);
                continue;
            }
            v.push_back(e.event->cells[0]->dv.value.value.double_);
        }
        return v;
    }
};

// Ticks at whole publishing intervals past creation (the timer fires once now > expiry).
struct Ticker {
    Engine& e;
    Subscription& s;
    int n = 0;
    TickResult operator()() {
        ++n;
        e.clock.mono = int64_t(s.settings().publishingInterval) * n + 1;
        return s.tick(e.clock.mono);
    }
};

}  // namespace uaplex::subscription::test
