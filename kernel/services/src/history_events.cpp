// SPDX-License-Identifier: Apache-2.0
// Event history (Part 11 6.5.4 ReadEventDetails, 6.9.4 UpdateEventDetails, 6.9.7
// DeleteEventDetails) over the history store's event entries (history.h, since 1.14): the
// recorder that hands each event of a recorded notifier to the store, and the reads, updates
// and deletes of the stored events. An event is stored as the binary encoding of one Variant
// holding a Variant array of (BrowsePath, value) pairs: every field it was raised with, so a
// read's select and where clauses see the event as a subscriber saw it.
#include "history.hpp"

#include <algorithm>
#include <condition_variable>
#include <cstdio>
#include <cstring>

#include <uaplex/encoding/generated/ns0.hpp>
#include <uaplex/host/logging.hpp>
#include <uaplex/session/deferred_request.hpp>
#include <uaplex/session/session_services.hpp>
#include <uaplex/subscription/event_filter.hpp>

namespace uaplex::services {

using host::logger;

namespace {

constexpr std::uint8_t kNotifierHistoryRead = 4;   // EventNotifier HistoryRead (Part 3 8.59)
constexpr std::uint8_t kNotifierHistoryWrite = 8;  // EventNotifier HistoryWrite
constexpr std::uint32_t kEventPoint = 0x400;       // the flags of an event read's point
constexpr std::size_t kMaxEventFields = 256;       // fields of one recorded event at most

const enc::DataType& variantCodec() noexcept {
    static const enc::DataType* t = enc::findDataType("Variant");
    return *t;
}

bool isDetails(const ua::ExtensionObject& eo, const enc::DataType* t) noexcept {
    return eo.data_type == t && eo.object != nullptr;
}

// The fields of `e` as the store keeps them, into `out` (reused: no heap once warm). False
// when they do not fit in `max` bytes.
bool encodeEvent(const subscription::EventView& e, std::size_t max, std::vector<ua::Variant>& pairs,
                 enc::ByteBuffer& out) noexcept {
    pairs.clear();
    if (e.fields.size() > kMaxEventFields) return false;
    for (const auto& f : e.fields) {
        if (f.value == nullptr) continue;
        pairs.push_back(ua::variantArray(ua::BuiltinType::QualifiedName,
                                         std::int32_t(f.path.size()),
                                         const_cast<ua::QualifiedName*>(f.path.data())));
        pairs.push_back(*f.value);
    }
    ua::Variant all =
        ua::variantArray(ua::BuiltinType::Variant, std::int32_t(pairs.size()), pairs.data());
    out.clear();
    return enc::encodeValue(out, variantCodec(), &all, max + 1) == UAPLEX_Good && out.size() <= max;
}

// A stored event's fields decoded into `arena`, as an EventView over `fields`; false when the
// bytes are not an event's.
bool decodeEvent(uaplex_bytes bytes, enc::Arena& arena,
                 std::vector<subscription::EventFieldRef>& fields,
                 subscription::EventView& view) noexcept {
    fields.clear();
    void* out = nullptr;
    enc::DecodeLimits limits;
    if (bytes.len == 0 || bytes.data == nullptr ||
        enc::decodeValue({bytes.data, bytes.len}, arena, limits, variantCodec(), &out) !=
            UAPLEX_Good ||
        out == nullptr)
        return false;
    const auto& all = *static_cast<const ua::Variant*>(out);
    if (all.encoding != (std::uint8_t(ua::BuiltinType::Variant) | UAPLEX_VARIANT_ARRAY) ||
        all.array_length < 0 || all.array_length % 2 != 0)
        return false;
    const auto* pairs = static_cast<const ua::Variant*>(all.value.pointer);
    try {
        for (std::int32_t i = 0; i + 1 < all.array_length; i += 2) {
            const ua::Variant& path = pairs[i];
            if (path.encoding !=
                    (std::uint8_t(ua::BuiltinType::QualifiedName) | UAPLEX_VARIANT_ARRAY) ||
                path.array_length <= 0)
                continue;
            fields.push_back({{static_cast<const ua::QualifiedName*>(path.value.pointer),
                               std::size_t(path.array_length)},
                              &pairs[i + 1]});
        }
    } catch (...) {
        return false;
    }
    view = subscription::EventView{};
    view.fields = fields;
    if (const ua::Variant* t = view.find("EventType");
        t && t->encoding == std::uint8_t(ua::BuiltinType::NodeId) && t->value.pointer)
        view.eventType = *static_cast<const ua::NodeId*>(t->value.pointer);
    return true;
}

// The ByteString of a field (EventId), or null.
const ua::ByteString* bytesOf(const ua::Variant* v) noexcept {
    if (v == nullptr || v->encoding != std::uint8_t(ua::BuiltinType::ByteString)) return nullptr;
    return &v->value.bytestring;
}

// A DateTime field, or 0.
ua::DateTime timeOf(const ua::Variant* v) noexcept {
    if (v == nullptr || v->encoding != std::uint8_t(ua::BuiltinType::DateTime)) return 0;
    return v->value.datetime;
}

// One notifier of an event read.
struct EventPart {
    std::uint32_t index = 0;
    std::string key;
    std::vector<std::uint8_t> cursor;
    uaplex_history_event_read read{};
    uaplex_history_event_read_result result{};
    uaplex_completion completion{};
    std::atomic<bool> done{false};
};

class PendingEventRead {
  public:
    PendingEventRead(History& h, SessionState* s, std::size_t parts)
        : history(h), session(s), parts(parts) {
        if (session != nullptr) session->acquire();
        alloc = {this, [](void* self, size_t size, size_t align) -> void* {
                     auto* p = static_cast<PendingEventRead*>(self);
                     std::lock_guard lock(p->mutex);
                     return p->arena->allocate(size == 0 ? 1 : size, align == 0 ? 8 : align);
                 }};
    }
    ~PendingEventRead() {
        if (session != nullptr) session->release();
    }
    PendingEventRead(const PendingEventRead&) = delete;
    PendingEventRead& operator=(const PendingEventRead&) = delete;

    History& history;
    SessionState* session;
    std::vector<EventPart> parts;
    enc::Arena own{64u << 20, 64 * 1024};
    enc::Arena* arena = &own;
    enc::Arena scratch{16u << 20, 4096};  // where clauses' intermediate values
    uaplex_value_alloc alloc{};
    std::mutex mutex;
    std::condition_variable cv;
    ua::HistoryReadResponse* response = nullptr;
    ua::HistoryReadResult* results = nullptr;
    std::shared_ptr<session::DeferredRequest> deferred;
    std::atomic<std::uint32_t> outstanding{0};
    bool finished = false;
    std::unique_ptr<subscription::EventFilterSpec> filter;
    std::int64_t start = 0;
    std::int64_t end = 0;
    bool single = false;  // numValuesPerNode with one time: no continuation point

    static uaplex_status complete(void* self, std::uint64_t token, uaplex_status st) noexcept {
        auto* p = static_cast<PendingEventRead*>(self);
        if (token >= p->parts.size() || p->parts[token].done.exchange(true))
            return UAPLEX_BadInvalidState;
        p->history.pending.fetch_sub(1, std::memory_order_relaxed);
        p->finishPart(p->parts[token], st);
        p->release();
        return UAPLEX_Good;
    }
    static uaplex_status status(void* self, std::uint64_t) noexcept {
        auto* p = static_cast<PendingEventRead*>(self);
        return p->deferred ? p->deferred->status() : UAPLEX_Good;
    }
    void release() noexcept {
        if (outstanding.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
        if (deferred) {
            deferred->answer(UAPLEX_Good, enc::dataTypeOf<ua::HistoryReadResponse>(), response,
                             *arena);
            delete this;
            return;
        }
        std::lock_guard lock(mutex);
        finished = true;
        cv.notify_all();
    }
    void finishPart(EventPart& part, uaplex_status st) noexcept;
};

// The store's events for one notifier, filtered and selected, into its HistoryReadResult.
void PendingEventRead::finishPart(EventPart& part, uaplex_status st) noexcept {
    std::lock_guard lock(mutex);
    ua::HistoryReadResult& r = results[part.index];
    r.continuationPoint = {-1, nullptr};
    if (st != UAPLEX_Good) {
        r.statusCode = st == UAPLEX_BadContinuationPointInvalid || st == UAPLEX_BadServerHalted ||
                               st == UAPLEX_BadResourceUnavailable || st == UAPLEX_BadOutOfMemory ||
                               st == UAPLEX_BadDataUnavailable || st == UAPLEX_BadTimeout
                           ? st
                           : UAPLEX_BadInternalError;
        return;
    }
    const uaplex_history_event_read_result& res = part.result;
    const std::uint32_t n =
        res.events != nullptr ? std::min(res.event_count, part.read.max_events) : 0;
    auto* data = arena->allocateArray<ua::HistoryEvent>(1);
    auto* lists = n ? arena->allocateArray<ua::HistoryEventFieldList>(n) : nullptr;
    const std::size_t selects = filter->selectCount();
    if (data == nullptr || (n && lists == nullptr)) {
        r.statusCode = UAPLEX_BadOutOfMemory;
        return;
    }
    std::vector<subscription::EventFieldRef> fields;
    std::uint32_t kept = 0;
    const subscription::EventTypeModel& model = *history.eventTypes;
    for (std::uint32_t i = 0; i < n; ++i) {
        subscription::EventView view;
        if (!decodeEvent(res.events[i].fields, *arena, fields, view)) continue;
        scratch.reset();
        if (!filter->matches(view, model, scratch)) continue;
        auto* values = selects ? arena->allocateArray<ua::Variant>(selects) : nullptr;
        if (selects && values == nullptr) {
            r.statusCode = UAPLEX_BadOutOfMemory;
            return;
        }
        filter->selectInto(view, model, {values, selects});
        lists[kept++].eventFields = {std::int32_t(selects), values};
    }
    data->events = {std::int32_t(kept), lists};
    r.historyData = ua::ExtensionObject{};
    const enc::DataType* t = enc::dataTypeOf<ua::HistoryEvent>();
    r.historyData.type_id = ua::numericNodeId(0, t->binaryEncodingId);
    r.historyData.encoding = UAPLEX_EXTENSIONOBJECT_BINARY;
    r.historyData.data_type = t;
    r.historyData.object = data;
    r.statusCode = UAPLEX_Good;
    if (res.continuation.len == 0 || res.continuation.data == nullptr || single) {
        if (kept == 0) r.statusCode = UAPLEX_GoodNoData;
        return;
    }
    HistoryContinuation cp;
    try {
        cp.key = part.key;
        cp.start = start;
        cp.end = end;
        cp.flags = kEventPoint;
        cp.cursor.assign(res.continuation.data, res.continuation.data + res.continuation.len);
    } catch (...) {
        r.statusCode = UAPLEX_BadOutOfMemory;
        return;
    }
    uaplex_status why = UAPLEX_Good;
    if (!keepHistoryPoint(session, *arena, history.config().max_continuation_points, std::move(cp),
                          r.continuationPoint, why)) {
        r.statusCode = why;
        data->events = {0, nullptr};
    }
}

}  // namespace

bool History::writesEvents() const noexcept {
    return storesEvents_ &&
           UAPLEX_FIELD_OR(ops_, uaplex_history_ops, update_events, nullptr) != nullptr &&
           UAPLEX_FIELD_OR(ops_, uaplex_history_ops, delete_events, nullptr) != nullptr;
}

void History::resolveEventNotifiers(const config::HistorySection& cfg, AddressSpace& space,
                                    const std::function<std::uint64_t(const NodeRef&)>& handleOf) {
    storesEvents_ = UAPLEX_FIELD_OR(ops_, uaplex_history_ops, store_events, nullptr) != nullptr &&
                    UAPLEX_FIELD_OR(ops_, uaplex_history_ops, read_events, nullptr) != nullptr;
    if (!cfg.server_events && cfg.event_notifiers.empty()) return;
    if (!storesEvents_) {
        logger()->warn("history: '{}' keeps no events: event_notifiers are not recorded",
                       cfg.plugin);
        return;
    }
    const auto& uris = space.namespaces();
    const std::uint8_t bits =
        std::uint8_t(kNotifierHistoryRead | (writesEvents() ? kNotifierHistoryWrite : 0));
    auto add = [&](const ua::NodeId& id, const std::string& how) {
        const NodeRef ref = space.find(id);
        if (!ref || ref.nodeClass() != addressspace::kObject) {
            logger()->warn("history: event_notifiers: {} is not an Object: not recorded", how);
            return;
        }
        if (eventByNode_.count(id)) return;
        keys_.push_back(std::make_unique<std::string>(keyOf(id, uris)));
        const ua::NodeId kept = space.nodeIdOf(ref);  // the address space's own copy
        eventByNode_.emplace(kept, keys_.back().get());
        eventByHandle_.emplace(handleOf(ref), keys_.back().get());
        if (ref.dyn != nullptr)
            const_cast<Node*>(ref.dyn)->eventNotifier.fetch_or(bits);
        else  // a namespace-0 image node: its attribute read adds them
            staticBits_.emplace_back(ref.rec->id, bits);
    };
    if (cfg.server_events) add(ua::numericNodeId(0, subscription::kServerObject), "server");
    for (const config::PersistentNode& p : cfg.event_notifiers) {
        int ns = -1;
        if (!p.namespace_uri.empty()) {
            auto it = std::find(uris.begin(), uris.end(), p.namespace_uri);
            if (it != uris.end()) ns = int(it - uris.begin());
        } else if (std::size_t(p.ns) < uris.size()) {
            ns = p.ns;
        }
        if (ns < 0) {
            logger()->warn("history: event_notifiers: {}: no such namespace", p.text);
            continue;
        }
        add(p.is_string ? ua::stringNodeId(std::uint16_t(ns), p.string_id)
                        : ua::numericNodeId(std::uint16_t(ns), p.numeric),
            p.text);
    }
    logger()->info("history: {} event notifier(s) recorded into '{}'", eventByHandle_.size(),
                   cfg.plugin);
}

void History::recordEvent(std::span<const std::uint64_t> notifiers,
                          const subscription::EventView& e) noexcept {
    if (eventByHandle_.empty()) return;
    // Scratch of this thread: the event path allocates nothing once warm.
    thread_local std::vector<ua::Variant> pairs;
    thread_local enc::ByteBuffer buf;
    thread_local std::string typeKey;
    bool encoded = false;
    for (std::uint64_t n : notifiers) {
        auto it = eventByHandle_.find(n);
        if (it == eventByHandle_.end()) continue;
        try {
            if (!encoded) {
                if (!encodeEvent(e, cfg_.max_event_bytes, pairs, buf)) {
                    eventsDropped_.fetch_add(1, std::memory_order_relaxed);
                    return;
                }
                encoded = true;
            }
        } catch (...) {
            eventsDropped_.fetch_add(1, std::memory_order_relaxed);
            return;
        }
        const ua::ByteString* id = bytesOf(e.find("EventId"));
        uaplex_history_event he{};
        he.hdr = UAPLEX_HEADER_INIT(uaplex_history_event, UAPLEX_STYPE_HISTORY_EVENT);
        he.notifier_key = {it->second->data(), it->second->size()};
        he.time = timeOf(e.find("Time"));
        he.receive_time = timeOf(e.find("ReceiveTime"));
        if (he.receive_time == 0) he.receive_time = ua::utcNow();
        if (he.time == 0) he.time = he.receive_time;
        if (id != nullptr && id->length > 0) he.event_id = {id->data, std::size_t(id->length)};
        // The EventType's key: numeric ns0 types (nearly all) without building a string.
        typeKey.clear();
        if (e.eventType.namespace_index == 0 && e.eventType.identifier_type == UAPLEX_ID_NUMERIC) {
            char tmp[16];
            const int len = std::snprintf(tmp, sizeof tmp, "i=%u", e.eventType.identifier.numeric);
            typeKey.assign(tmp, std::size_t(std::max(0, len)));
        }
        he.event_type = {typeKey.data(), typeKey.size()};
        he.fields = {buf.data(), buf.size()};
        size_t accepted = 0;
        if (ops_->store_events(self_, 1, &he, &accepted) != UAPLEX_Good || accepted != 1)
            eventsDropped_.fetch_add(1, std::memory_order_relaxed);
    }
}

const std::string* History::eventKeyOf(const ua::NodeId& id) const noexcept {
    auto it = eventByNode_.find(id);
    return it == eventByNode_.end() ? nullptr : it->second;
}

uaplex_status History::readEvents(ServiceCall& call) noexcept {
    const auto& req = *static_cast<const ua::HistoryReadRequest*>(call.request);
    const auto& d = *static_cast<const ua::ReadEventDetails*>(req.historyReadDetails.object);
    const std::size_t n = req.nodesToRead.size();
    std::vector<uaplex_status> statuses(n, UAPLEX_Good);
    std::vector<std::size_t> partOf(n, SIZE_MAX);
    std::vector<HistoryContinuation> cps(n);
    std::size_t partCount = 0;

    // Part 11 6.5.4.2: both times, or one with numValuesPerNode (forward from startTime,
    // backward from endTime).
    std::int64_t start = 0, end = 0;
    std::uint32_t perNode = cfg_.max_events_per_node;
    bool single = false;
    uaplex_status domain = UAPLEX_Good;
    const bool s = d.startTime != 0, e = d.endTime != 0;
    const std::uint32_t nv = d.numValuesPerNode;
    if (nv != 0) perNode = std::min(perNode, nv);
    if (s && e) {
        start = d.startTime;
        end = d.endTime;
    } else if (s && nv != 0) {
        start = d.startTime;
        end = UAPLEX_HISTORY_TIME_MAX;
        single = nv <= cfg_.max_events_per_node;
    } else if (e && nv != 0) {
        start = d.endTime;
        end = UAPLEX_HISTORY_TIME_MIN;
        single = nv <= cfg_.max_events_per_node;
    } else {
        domain = UAPLEX_BadInvalidTimestampArgument;
    }
    std::unique_ptr<subscription::EventFilterSpec> filter;
    if (domain == UAPLEX_Good && !req.releaseContinuationPoints) {
        if (!storesEvents_ || eventTypes == nullptr) {
            domain = UAPLEX_BadHistoryOperationUnsupported;
        } else if (d.filter.selectClauses.size() == 0) {
            domain = UAPLEX_BadEventFilterInvalid;  // nothing to return
        } else {
            ua::EventFilterResult fr{};
            const uaplex_status st = subscription::EventFilterSpec::create(d.filter, *eventTypes,
                                                                           call.arena, fr, filter);
            if (st != UAPLEX_Good)
                domain = st == UAPLEX_BadOutOfMemory ? st : UAPLEX_BadEventFilterInvalid;
        }
    }
    for (std::size_t i = 0; i < n; ++i) {
        const ua::HistoryReadValueId& item = req.nodesToRead[i];
        if (req.releaseContinuationPoints) {
            if (item.continuationPoint.length > 0 &&
                !takeHistoryPoint(call.session, item.continuationPoint, cps[i]))
                statuses[i] = UAPLEX_BadContinuationPointInvalid;
            continue;
        }
        if (domain != UAPLEX_Good) {
            statuses[i] = domain;
            continue;
        }
        const NodeRef ref = space_.find(item.nodeId);
        const std::uint32_t perms =
            call.access ? call.access->permissions(item.nodeId) : config::kAllPermissions;
        if (!ref || !(perms & session::kPermBrowse)) {
            statuses[i] = UAPLEX_BadNodeIdUnknown;
            continue;
        }
        if (item.indexRange.length > 0) {
            statuses[i] = UAPLEX_BadIndexRangeInvalid;
            continue;
        }
        if (item.dataEncoding.name.length > 0) {
            statuses[i] = UAPLEX_BadDataEncodingInvalid;
            continue;
        }
        if (eventKeyOf(item.nodeId) == nullptr) {
            // Not a recorded notifier: a Variable or another Object has no event history.
            statuses[i] = ref.nodeClass() == addressspace::kObject
                              ? UAPLEX_BadHistoryOperationUnsupported
                              : UAPLEX_BadNotReadable;
            continue;
        }
        if (!(perms & session::kPermReadHistory)) {
            statuses[i] = UAPLEX_BadUserAccessDenied;
            continue;
        }
        if (item.continuationPoint.length > 0) {
            if (!takeHistoryPoint(call.session, item.continuationPoint, cps[i])) {
                statuses[i] = UAPLEX_BadContinuationPointInvalid;
                continue;
            }
        }
        partOf[i] = partCount++;
    }

    auto* resp = call.arena.allocateArray<ua::HistoryReadResponse>(1);
    if (resp == nullptr) return UAPLEX_BadOutOfMemory;
    *resp = ua::HistoryReadResponse{};
    call.responseType = enc::dataTypeOf<ua::HistoryReadResponse>();
    if (partCount == 0 || pending.load(std::memory_order_relaxed) + partCount > maxPending) {
        auto* results = call.arena.allocateArray<ua::HistoryReadResult>(n);
        if (results == nullptr) return UAPLEX_BadOutOfMemory;
        for (std::size_t i = 0; i < n; ++i) {
            results[i] = ua::HistoryReadResult{};
            results[i].continuationPoint = {-1, nullptr};
            results[i].statusCode =
                partOf[i] != SIZE_MAX ? UAPLEX_BadResourceUnavailable : statuses[i];
        }
        resp->results = {std::int32_t(n), results};
        call.response = resp;
        return UAPLEX_Good;
    }

    std::unique_ptr<PendingEventRead> p;
    try {
        p = std::make_unique<PendingEventRead>(*this, call.session, partCount);
    } catch (...) {
        return UAPLEX_BadOutOfMemory;
    }
    if (call.ctx != nullptr && call.ctx->defer != nullptr)
        p->deferred = call.ctx->defer(call.ctx->deferUser, call.returnDiagnostics);
    if (!p->deferred) p->arena = &call.arena;
    p->filter = std::move(filter);
    p->start = start;
    p->end = end;
    p->single = single;
    p->response = p->deferred ? p->arena->allocateArray<ua::HistoryReadResponse>(1) : resp;
    p->results = p->arena->allocateArray<ua::HistoryReadResult>(n);
    if (p->response == nullptr || p->results == nullptr) {
        if (p->deferred) p->deferred->answer(UAPLEX_BadOutOfMemory, nullptr, nullptr, *p->arena);
        return p->deferred ? UAPLEX_GoodCompletesAsynchronously : UAPLEX_BadOutOfMemory;
    }
    *p->response = ua::HistoryReadResponse{};
    for (std::size_t i = 0; i < n; ++i) {
        p->results[i] = ua::HistoryReadResult{};
        p->results[i].continuationPoint = {-1, nullptr};
        p->results[i].statusCode = statuses[i];
    }
    p->response->results = {std::int32_t(n), p->results};
    try {
        for (std::size_t i = 0; i < n; ++i) {
            if (partOf[i] == SIZE_MAX) continue;
            EventPart& part = p->parts[partOf[i]];
            part.index = std::uint32_t(i);
            part.key = *eventKeyOf(req.nodesToRead[i].nodeId);
            const HistoryContinuation& cp = cps[i];
            if (cp.id != 0) {
                // A continuation is only good for the event read it came from.
                if (cp.key != part.key || cp.start != start || cp.end != end ||
                    cp.flags != kEventPoint) {
                    p->results[i].statusCode = UAPLEX_BadContinuationPointInvalid;
                    part.done = true;
                    continue;
                }
                part.cursor = cp.cursor;
            }
        }
    } catch (...) {
        if (p->deferred) p->deferred->answer(UAPLEX_BadOutOfMemory, nullptr, nullptr, *p->arena);
        return p->deferred ? UAPLEX_GoodCompletesAsynchronously : UAPLEX_BadOutOfMemory;
    }
    PendingEventRead* raw = p.release();
    raw->outstanding.store(std::uint32_t(partCount) + 1, std::memory_order_relaxed);
    for (std::size_t k = 0; k < raw->parts.size(); ++k) {
        EventPart& part = raw->parts[k];
        if (part.done.load()) {
            raw->release();
            continue;
        }
        part.read.hdr =
            UAPLEX_HEADER_INIT(uaplex_history_event_read, UAPLEX_STYPE_HISTORY_EVENT_READ);
        part.read.max_events = perNode;
        part.read.notifier_key = {part.key.data(), part.key.size()};
        part.read.start_time = start;
        part.read.end_time = end;
        part.read.continuation = {part.cursor.data(), part.cursor.size()};
        part.read.alloc = &raw->alloc;
        part.result.hdr = UAPLEX_HEADER_INIT(uaplex_history_event_read_result,
                                             UAPLEX_STYPE_HISTORY_EVENT_READ_RESULT);
        part.completion.hdr = UAPLEX_HEADER_INIT(uaplex_completion, UAPLEX_STYPE_COMPLETION);
        part.completion.self = raw;
        part.completion.token = k;
        part.completion.complete = &PendingEventRead::complete;
        part.completion.status = &PendingEventRead::status;
        pending.fetch_add(1, std::memory_order_relaxed);
        const uaplex_status st =
            ops_->read_events(self_, &part.read, &part.result, &part.completion);
        if (st == UAPLEX_GoodCompletesAsynchronously) continue;
        if (part.done.exchange(true)) continue;  // completed already
        pending.fetch_sub(1, std::memory_order_relaxed);
        raw->finishPart(part, st);
        raw->release();
    }
    if (raw->deferred) {
        raw->release();
        return UAPLEX_GoodCompletesAsynchronously;
    }
    {
        std::unique_lock lock(raw->mutex);
        raw->outstanding.fetch_sub(1, std::memory_order_acq_rel) == 1
            ? void(raw->finished = true)
            : raw->cv.wait(lock, [&] { return raw->finished; });
    }
    delete raw;
    call.response = resp;
    return UAPLEX_Good;
}

namespace {

constexpr std::uint32_t kAttributeValue = 13;

// One UpdateEventDetails or DeleteEventDetails entry that goes to the store.
struct EventEntry {
    std::uint32_t index = 0;
    bool isDelete = false;
    std::string key;
    std::vector<std::vector<std::uint8_t>> encoded;  // each event's fields
    std::vector<std::vector<std::uint8_t>> ids;      // generated EventIds
    std::vector<std::string> types;                  // each event's EventType key
    std::vector<uaplex_history_event> events;
    std::vector<uaplex_bytes> eventIds;
    std::vector<std::uint32_t> opIndex;  // each store item's place in operationResults
    std::vector<uaplex_status> storeResults;
    uaplex_history_event_update update{};
    uaplex_history_event_delete del{};
    uaplex_completion completion{};
    std::atomic<bool> inFlight{false};
};

class PendingEventUpdate {
  public:
    PendingEventUpdate(History& h, std::size_t n) : history(h), entries(n) {}
    PendingEventUpdate(const PendingEventUpdate&) = delete;
    PendingEventUpdate& operator=(const PendingEventUpdate&) = delete;

    History& history;
    std::vector<EventEntry> entries;
    enc::Arena own{16u << 20, 16 * 1024};
    enc::Arena* arena = &own;
    std::mutex mutex;
    std::condition_variable cv;
    ua::HistoryUpdateResponse* response = nullptr;
    ua::HistoryUpdateResult* results = nullptr;
    std::shared_ptr<session::DeferredRequest> deferred;
    std::atomic<std::uint32_t> outstanding{0};
    bool finished = false;

    static uaplex_status complete(void* self, std::uint64_t token, uaplex_status st) noexcept {
        auto* p = static_cast<PendingEventUpdate*>(self);
        if (token >= p->entries.size()) return UAPLEX_BadInvalidState;
        EventEntry& e = p->entries[token];
        bool expected = true;
        if (!e.inFlight.compare_exchange_strong(expected, false, std::memory_order_acq_rel))
            return UAPLEX_BadInvalidState;
        p->history.pending.fetch_sub(1, std::memory_order_relaxed);
        p->done(e, st);
        return UAPLEX_Good;
    }
    static uaplex_status status(void* self, std::uint64_t) noexcept {
        auto* p = static_cast<PendingEventUpdate*>(self);
        return p->deferred ? p->deferred->status() : UAPLEX_Good;
    }
    void release() noexcept {
        if (outstanding.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
        if (deferred) {
            deferred->answer(UAPLEX_Good, enc::dataTypeOf<ua::HistoryUpdateResponse>(), response,
                             *arena);
            delete this;
            return;
        }
        std::lock_guard lock(mutex);
        finished = true;
        cv.notify_all();
    }
    void done(EventEntry& e, uaplex_status st) noexcept {
        ua::HistoryUpdateResult& r = results[e.index];
        if (st != UAPLEX_Good) {
            r.statusCode = st == UAPLEX_BadServerHalted || st == UAPLEX_BadResourceUnavailable ||
                                   st == UAPLEX_BadOutOfMemory || st == UAPLEX_BadDataUnavailable ||
                                   st == UAPLEX_BadTimeout
                               ? st
                               : UAPLEX_BadInternalError;
        } else {
            for (std::size_t k = 0; k < e.storeResults.size(); ++k) {
                const uaplex_status v = e.storeResults[k];
                const bool known =
                    e.isDelete ? (v == UAPLEX_Good || v == UAPLEX_BadEventIdUnknown)
                               : (v == UAPLEX_GoodEntryInserted || v == UAPLEX_GoodEntryReplaced ||
                                  v == UAPLEX_BadEntryExists || v == UAPLEX_BadNoEntryExists ||
                                  v == UAPLEX_BadOutOfRange);
                r.operationResults.data[e.opIndex[k]] = known ? v : UAPLEX_BadInternalError;
            }
        }
        release();
    }
};

// The field of one select clause: its one-step or longer BrowsePath, when it selects a Value.
bool selectsValue(const ua::SimpleAttributeOperand& o) noexcept {
    return o.attributeId == kAttributeValue && o.browsePath.size() > 0 && o.indexRange.length <= 0;
}

}  // namespace

bool History::updatesEventsOnly(const ua::HistoryUpdateRequest& req) noexcept {
    const std::size_t n = req.historyUpdateDetails.size();
    if (n == 0) return false;
    for (std::size_t i = 0; i < n; ++i) {
        const ua::ExtensionObject& eo = req.historyUpdateDetails[i];
        if (!isDetails(eo, enc::dataTypeOf<ua::UpdateEventDetails>()) &&
            !isDetails(eo, enc::dataTypeOf<ua::DeleteEventDetails>()))
            return false;
    }
    return true;
}

uaplex_status History::updateEvents(ServiceCall& call) noexcept {
    const auto& req = *static_cast<const ua::HistoryUpdateRequest*>(call.request);
    const std::size_t n = req.historyUpdateDetails.size();
    std::vector<uaplex_status> statuses(n, UAPLEX_Good);
    std::vector<std::uint32_t> counts(n, 0);
    std::vector<const std::string*> keys(n, nullptr);
    std::size_t entryCount = 0;
    const bool writes = writesEvents();
    for (std::size_t i = 0; i < n; ++i) {
        const ua::ExtensionObject& eo = req.historyUpdateDetails[i];
        const bool isDelete = isDetails(eo, enc::dataTypeOf<ua::DeleteEventDetails>());
        const ua::NodeId* id = nullptr;
        std::uint32_t need = session::kPermDeleteHistory;
        if (isDelete) {
            const auto& d = *static_cast<const ua::DeleteEventDetails*>(eo.object);
            id = &d.nodeId;
            counts[i] = std::uint32_t(d.eventIds.size());
        } else {
            const auto& d = *static_cast<const ua::UpdateEventDetails*>(eo.object);
            id = &d.nodeId;
            counts[i] = std::uint32_t(d.eventData.size());
            const auto perform = static_cast<std::int32_t>(d.performInsertReplace);
            if (perform < UAPLEX_HISTORY_INSERT || perform > UAPLEX_HISTORY_UPDATE) {
                statuses[i] = UAPLEX_BadHistoryOperationInvalid;
                counts[i] = 0;
                continue;
            }
            need = perform == UAPLEX_HISTORY_INSERT ? session::kPermInsertHistory
                   : perform == UAPLEX_HISTORY_REPLACE
                       ? session::kPermModifyHistory
                       : session::kPermInsertHistory | session::kPermModifyHistory;
            // Part 11 6.9.4: the where clause is empty; the select clauses name the fields.
            if (d.filter.whereClause.elements.size() > 0 || d.filter.selectClauses.size() == 0) {
                statuses[i] = UAPLEX_BadInvalidArgument;
                counts[i] = 0;
                continue;
            }
        }
        if (counts[i] > cfg_.max_events_per_update) {
            statuses[i] = UAPLEX_BadTooManyOperations;
            counts[i] = 0;
            continue;
        }
        const NodeRef ref = space_.find(*id);
        const std::uint32_t perms =
            call.access ? call.access->permissions(*id) : config::kAllPermissions;
        if (!ref || !(perms & session::kPermBrowse)) {
            statuses[i] = UAPLEX_BadNodeIdUnknown;
            counts[i] = 0;
            continue;
        }
        const std::string* key = eventKeyOf(*id);
        if (key == nullptr || !writes) {
            statuses[i] = UAPLEX_BadHistoryOperationUnsupported;
            counts[i] = 0;
            continue;
        }
        if ((perms & need) != need) {
            statuses[i] = UAPLEX_BadUserAccessDenied;
            counts[i] = 0;
            continue;
        }
        keys[i] = key;
        if (counts[i] > 0) ++entryCount;
    }

    std::unique_ptr<PendingEventUpdate> p;
    try {
        p = std::make_unique<PendingEventUpdate>(*this, entryCount);
    } catch (...) {
        return UAPLEX_BadOutOfMemory;
    }
    if (entryCount > 0 && call.ctx != nullptr && call.ctx->defer != nullptr)
        p->deferred = call.ctx->defer(call.ctx->deferUser, call.returnDiagnostics);
    if (!p->deferred) p->arena = &call.arena;
    auto answerNow = [&](uaplex_status st) noexcept {
        if (!p->deferred) {
            if (st == UAPLEX_Good) {
                call.responseType = enc::dataTypeOf<ua::HistoryUpdateResponse>();
                call.response = p->response;
            }
            return st;
        }
        p->deferred->answer(
            st, st == UAPLEX_Good ? enc::dataTypeOf<ua::HistoryUpdateResponse>() : nullptr,
            st == UAPLEX_Good ? p->response : nullptr, *p->arena);
        return UAPLEX_GoodCompletesAsynchronously;
    };
    enc::Arena& arena = *p->arena;
    p->response = arena.allocateArray<ua::HistoryUpdateResponse>(1);
    p->results = arena.allocateArray<ua::HistoryUpdateResult>(n);
    if (p->response == nullptr || p->results == nullptr) return answerNow(UAPLEX_BadOutOfMemory);
    *p->response = ua::HistoryUpdateResponse{};
    for (std::size_t i = 0; i < n; ++i) {
        ua::HistoryUpdateResult& r = p->results[i];
        r = ua::HistoryUpdateResult{};
        r.statusCode = statuses[i];
        if (statuses[i] != UAPLEX_Good || counts[i] == 0) continue;
        auto* ops = arena.allocateArray<ua::StatusCode>(counts[i]);
        if (ops == nullptr) return answerNow(UAPLEX_BadOutOfMemory);
        for (std::uint32_t k = 0; k < counts[i]; ++k) ops[k] = UAPLEX_Good;
        r.operationResults = {std::int32_t(counts[i]), ops};
    }
    p->response->results = {std::int32_t(n), p->results};

    const ua::DateTime now = ua::utcNow();
    const ua::NodeId baseEvent = ua::numericNodeId(0, subscription::kBaseEventType);
    enc::Arena scratch{std::size_t(1) << 20, 1024};
    std::vector<ua::Variant> pairs;
    enc::ByteBuffer buf;
    std::size_t k = 0;
    try {
        for (std::size_t i = 0; i < n; ++i) {
            if (keys[i] == nullptr || counts[i] == 0) continue;
            EventEntry& e = p->entries[k++];
            e.index = std::uint32_t(i);
            e.key = *keys[i];
            const ua::ExtensionObject& eo = req.historyUpdateDetails[i];
            ua::StatusCode* opResults = p->results[i].operationResults.data;
            e.isDelete = isDetails(eo, enc::dataTypeOf<ua::DeleteEventDetails>());
            if (e.isDelete) {
                const auto& d = *static_cast<const ua::DeleteEventDetails*>(eo.object);
                for (std::uint32_t v = 0; v < counts[i]; ++v) {
                    const ua::ByteString& id = d.eventIds[v];
                    if (id.length <= 0 || id.data == nullptr) {
                        opResults[v] = UAPLEX_BadEventIdUnknown;
                        continue;
                    }
                    e.eventIds.push_back({id.data, std::size_t(id.length)});
                    e.opIndex.push_back(v);
                }
                e.storeResults.assign(e.eventIds.size(), UAPLEX_Good);
                e.del.hdr = UAPLEX_HEADER_INIT(uaplex_history_event_delete,
                                               UAPLEX_STYPE_HISTORY_EVENT_DELETE);
                e.del.event_count = std::uint32_t(e.eventIds.size());
                e.del.notifier_key = {e.key.data(), e.key.size()};
                e.del.event_ids = e.eventIds.data();
                e.del.results = e.storeResults.data();
                continue;
            }
            const auto& d = *static_cast<const ua::UpdateEventDetails*>(eo.object);
            const auto perform = static_cast<std::uint32_t>(d.performInsertReplace);
            const std::size_t selects = d.filter.selectClauses.size();
            std::vector<subscription::EventFieldRef> fields;
            std::vector<ua::Variant> extra(3);
            for (std::uint32_t v = 0; v < counts[i]; ++v) {
                const ua::HistoryEventFieldList& data = d.eventData[v];
                if (std::size_t(data.eventFields.size()) != selects) {
                    opResults[v] = UAPLEX_BadArgumentsMissing;
                    continue;
                }
                fields.clear();
                for (std::size_t f = 0; f < selects; ++f) {
                    const ua::SimpleAttributeOperand& o = d.filter.selectClauses[f];
                    if (!selectsValue(o) ||
                        ua::variantType(data.eventFields[f]) == ua::BuiltinType::Null)
                        continue;
                    fields.push_back({{o.browsePath.data, std::size_t(o.browsePath.size())},
                                      &data.eventFields[f]});
                }
                subscription::EventView view;
                view.fields = fields;
                const ua::Variant* type = view.find("EventType");
                const ua::Variant* time = view.find("Time");
                const ua::ByteString* id = bytesOf(view.find("EventId"));
                // Part 11 6.9.4.2: EventType and Time at least; a replace names its EventId.
                if (type == nullptr || type->encoding != std::uint8_t(ua::BuiltinType::NodeId) ||
                    type->value.pointer == nullptr || timeOf(time) == 0 ||
                    (perform == UAPLEX_HISTORY_REPLACE && (id == nullptr || id->length <= 0))) {
                    opResults[v] = UAPLEX_BadArgumentsMissing;
                    continue;
                }
                const auto& typeId = *static_cast<const ua::NodeId*>(type->value.pointer);
                if (eventTypes == nullptr || !eventTypes->isSubtypeOf(typeId, baseEvent)) {
                    opResults[v] = UAPLEX_BadTypeDefinitionInvalid;
                    continue;
                }
                if (id != nullptr && (id->length <= 0 || id->length > 64)) {
                    opResults[v] = UAPLEX_BadInvalidArgument;
                    continue;
                }
                view.eventType = typeId;
                static const ua::QualifiedName kEventIdName{0, {7, "EventId"}};
                static const ua::QualifiedName kReceiveName{0, {11, "ReceiveTime"}};
                scratch.reset();
                if (id == nullptr) {  // a new event: the server names it
                    extra[0] = ua::makeVariant(ua::BuiltinType::ByteString);
                    extra[0].value.bytestring = subscription::newEventId(scratch);
                    fields.push_back({{&kEventIdName, 1}, &extra[0]});
                    id = &extra[0].value.bytestring;
                }
                if (view.find("ReceiveTime") == nullptr) {
                    extra[1] = ua::makeVariant(ua::BuiltinType::DateTime);
                    extra[1].value.datetime = now;
                    fields.push_back({{&kReceiveName, 1}, &extra[1]});
                }
                view.fields = fields;
                if (!encodeEvent(view, cfg_.max_event_bytes, pairs, buf)) {
                    opResults[v] = UAPLEX_BadOutOfRange;
                    continue;
                }
                e.encoded.emplace_back(buf.data(), buf.data() + buf.size());
                e.ids.emplace_back(id->data, id->data + id->length);
                std::string typeKey = keyOf(typeId, space_.namespaces());
                e.types.push_back(std::move(typeKey));
                uaplex_history_event he{};
                he.hdr = UAPLEX_HEADER_INIT(uaplex_history_event, UAPLEX_STYPE_HISTORY_EVENT);
                he.time = timeOf(time);
                he.receive_time = timeOf(view.find("ReceiveTime"));
                e.events.push_back(he);
                e.opIndex.push_back(v);
            }
            // Pointers once every vector is complete.
            for (std::size_t j = 0; j < e.events.size(); ++j) {
                e.events[j].event_id = {e.ids[j].data(), e.ids[j].size()};
                e.events[j].event_type = {e.types[j].data(), e.types[j].size()};
                e.events[j].fields = {e.encoded[j].data(), e.encoded[j].size()};
            }
            e.storeResults.assign(e.events.size(), UAPLEX_Good);
            e.update.hdr =
                UAPLEX_HEADER_INIT(uaplex_history_event_update, UAPLEX_STYPE_HISTORY_EVENT_UPDATE);
            e.update.perform = perform;
            e.update.event_count = std::uint32_t(e.events.size());
            e.update.notifier_key = {e.key.data(), e.key.size()};
            e.update.events = e.events.data();
            e.update.results = e.storeResults.data();
        }
    } catch (...) {
        return answerNow(UAPLEX_BadOutOfMemory);
    }
    std::size_t storeEntries = 0;
    for (EventEntry& e : p->entries)
        if (!e.storeResults.empty()) ++storeEntries;
    if (storeEntries == 0) return answerNow(UAPLEX_Good);
    if (pending.load(std::memory_order_relaxed) + storeEntries > maxPending) {
        for (EventEntry& e : p->entries) {
            p->results[e.index].statusCode = UAPLEX_BadResourceUnavailable;
            p->results[e.index].operationResults = {0, nullptr};
        }
        return answerNow(UAPLEX_Good);
    }
    PendingEventUpdate* raw = p.release();
    raw->outstanding.store(std::uint32_t(storeEntries) + 1, std::memory_order_relaxed);
    for (std::size_t t = 0; t < raw->entries.size(); ++t) {
        EventEntry& e = raw->entries[t];
        if (e.storeResults.empty()) continue;
        e.completion.hdr = UAPLEX_HEADER_INIT(uaplex_completion, UAPLEX_STYPE_COMPLETION);
        e.completion.self = raw;
        e.completion.token = t;
        e.completion.complete = &PendingEventUpdate::complete;
        e.completion.status = &PendingEventUpdate::status;
        e.inFlight.store(true, std::memory_order_release);
        pending.fetch_add(1, std::memory_order_relaxed);
        const uaplex_status st = e.isDelete ? ops_->delete_events(self_, &e.del, &e.completion)
                                            : ops_->update_events(self_, &e.update, &e.completion);
        if (st == UAPLEX_GoodCompletesAsynchronously) continue;
        bool expected = true;
        if (!e.inFlight.compare_exchange_strong(expected, false, std::memory_order_acq_rel))
            continue;
        pending.fetch_sub(1, std::memory_order_relaxed);
        raw->done(e, st);
    }
    if (raw->deferred) {
        raw->release();
        return UAPLEX_GoodCompletesAsynchronously;
    }
    {
        std::unique_lock lock(raw->mutex);
        raw->outstanding.fetch_sub(1, std::memory_order_acq_rel) == 1
            ? void(raw->finished = true)
            : raw->cv.wait(lock, [&] { return raw->finished; });
    }
    call.responseType = enc::dataTypeOf<ua::HistoryUpdateResponse>();
    call.response = raw->response;
    delete raw;
    return UAPLEX_Good;
}

}  // namespace uaplex::services
