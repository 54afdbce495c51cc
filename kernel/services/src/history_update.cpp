// SPDX-License-Identifier: Apache-2.0
// HistoryUpdate (Part 11 6.9, Part 4 5.10.5) over the history store (history.hpp): the
// request is checked per details entry on the worker, then parked while the store runs one
// update or delete per entry; the last completion answers. A DeleteAtTimeDetails entry runs
// its times one after the other (each completion issues the next), so a request never has
// more store operations pending than it has entries.
#include "history.hpp"

#include <condition_variable>
#include <cstring>

#include <uaplex/session/deferred_request.hpp>
#include <uaplex/session/session_services.hpp>

namespace uaplex::services {

namespace {

constexpr std::uint8_t kHistoryWriteBit = 8;  // AccessLevel HistoryWrite (Part 3 8.57)

const enc::DataType& variantCodec() noexcept {
    static const enc::DataType* t = enc::findDataType("Variant");
    return *t;
}

bool isDetails(const ua::ExtensionObject& eo, const enc::DataType* t) noexcept {
    return eo.data_type == t && eo.object != nullptr;
}

enum class Kind : std::uint8_t { Update, DeleteRaw, DeleteAtTime };

// One details entry that goes to the store.
struct Entry {
    std::uint32_t index = 0;  // in the request
    Kind kind = Kind::Update;
    std::string key;
    std::vector<std::uint8_t> bytes;           // the values' encoded Variants
    std::vector<uaplex_history_value> values;  // Update: those the store gets
    std::vector<std::uint32_t> valueIndex;     // Update: each one's place in updateValues
    std::vector<uaplex_status> storeResults;   // Update: the store's result per value
    std::vector<std::int64_t> times;           // DeleteAtTime: the times, in request order
    std::size_t next = 0;                      // DeleteAtTime: the time being deleted
    uaplex_history_update update{};
    uaplex_history_delete del{};
    uaplex_completion completion{};
    std::atomic<bool> inFlight{false};  // a store operation of this entry is pending
};

class PendingUpdate {
  public:
    PendingUpdate(History& h, std::size_t entries) : history(h), entries(entries) {}
    PendingUpdate(const PendingUpdate&) = delete;
    PendingUpdate& operator=(const PendingUpdate&) = delete;

    History& history;
    std::vector<Entry> entries;
    enc::Arena own{16u << 20, 16 * 1024};
    enc::Arena* arena = &own;  // the worker's arena when it waits
    std::mutex mutex;
    std::condition_variable cv;
    ua::HistoryUpdateResponse* response = nullptr;
    ua::HistoryUpdateResult* results = nullptr;
    std::shared_ptr<session::DeferredRequest> deferred;  // null: a worker waits
    std::atomic<std::uint32_t> outstanding{0};
    bool finished = false;

    static uaplex_status complete(void* self, std::uint64_t token, uaplex_status st) noexcept {
        auto* p = static_cast<PendingUpdate*>(self);
        if (token >= p->entries.size()) return UAPLEX_BadInvalidState;
        Entry& e = p->entries[token];
        bool expected = true;
        if (!e.inFlight.compare_exchange_strong(expected, false, std::memory_order_acq_rel))
            return UAPLEX_BadInvalidState;
        p->history.pending.fetch_sub(1, std::memory_order_relaxed);
        p->done(e, st);
        return UAPLEX_Good;
    }
    static uaplex_status status(void* self, std::uint64_t) noexcept {
        auto* p = static_cast<PendingUpdate*>(self);
        return p->deferred ? p->deferred->status() : UAPLEX_Good;
    }

    // Issues the entry's (next) store operation; finishes the entry when there is none left.
    void issue(Entry& e) noexcept;
    // One store operation of `e` ended with `st`.
    void done(Entry& e, uaplex_status st) noexcept;

    // One reference less; the last answers the request.
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
};

// A store's failure as a HistoryUpdateResult's StatusCode.
uaplex_status storeFailure(uaplex_status st) noexcept {
    if (st == UAPLEX_BadServerHalted || st == UAPLEX_BadResourceUnavailable ||
        st == UAPLEX_BadOutOfMemory || st == UAPLEX_BadDataUnavailable || st == UAPLEX_BadTimeout ||
        st == UAPLEX_BadHistoryOperationUnsupported)
        return st;
    return UAPLEX_BadInternalError;
}

void PendingUpdate::issue(Entry& e) noexcept {
    const uaplex_history_ops* ops = history.ops();
    for (;;) {
        uaplex_status st = UAPLEX_Good;
        e.completion.hdr = UAPLEX_HEADER_INIT(uaplex_completion, UAPLEX_STYPE_COMPLETION);
        e.completion.self = this;
        e.completion.token = std::uint64_t(&e - entries.data());
        e.completion.complete = &PendingUpdate::complete;
        e.completion.status = &PendingUpdate::status;
        if (e.kind == Kind::DeleteAtTime) {
            if (e.next >= e.times.size() || (deferred && deferred->status() != UAPLEX_Good)) {
                release();
                return;
            }
            const std::int64_t t = e.times[e.next];
            e.del = uaplex_history_delete{};
            e.del.hdr = UAPLEX_HEADER_INIT(uaplex_history_delete, UAPLEX_STYPE_HISTORY_DELETE);
            e.del.node_key = {e.key.data(), e.key.size()};
            e.del.start_time = t;
            e.del.end_time = t == INT64_MAX ? t : t + 1;  // the values at exactly t
        }
        e.inFlight.store(true, std::memory_order_release);
        history.pending.fetch_add(1, std::memory_order_relaxed);
        switch (e.kind) {
            case Kind::Update:
                st = ops->update(history.self(), &e.update, &e.completion);
                break;
            case Kind::DeleteRaw:
            case Kind::DeleteAtTime:
                st = ops->delete_raw(history.self(), &e.del, &e.completion);
                break;
        }
        if (st == UAPLEX_GoodCompletesAsynchronously) return;  // done() goes on
        bool expected = true;
        if (!e.inFlight.compare_exchange_strong(expected, false, std::memory_order_acq_rel))
            return;  // completed and returned something else: done() ran already
        history.pending.fetch_sub(1, std::memory_order_relaxed);
        if (e.kind != Kind::DeleteAtTime) {
            done(e, st);
            return;
        }
        // A delete answered at once: record it and go on with the next time here.
        ua::StatusCode& out = results[e.index].operationResults.data[e.next];
        out = st != UAPLEX_Good ? storeFailure(st)
                                : (e.del.deleted > 0 ? UAPLEX_Good : UAPLEX_BadNoEntryExists);
        ++e.next;
    }
}

void PendingUpdate::done(Entry& e, uaplex_status st) noexcept {
    ua::HistoryUpdateResult& r = results[e.index];
    switch (e.kind) {
        case Kind::Update:
            if (st != UAPLEX_Good) {
                r.statusCode = storeFailure(st);
            } else {
                for (std::size_t k = 0; k < e.values.size(); ++k) {
                    const uaplex_status v = e.storeResults[k];
                    // Only the codes of an update (history.h); anything else is the store's
                    // failure for that value.
                    r.operationResults.data[e.valueIndex[k]] =
                        v == UAPLEX_GoodEntryInserted || v == UAPLEX_GoodEntryReplaced ||
                                v == UAPLEX_BadEntryExists || v == UAPLEX_BadNoEntryExists ||
                                v == UAPLEX_BadOutOfRange
                            ? v
                            : UAPLEX_BadInternalError;
                }
            }
            release();
            return;
        case Kind::DeleteRaw:
            r.statusCode = st != UAPLEX_Good   ? storeFailure(st)
                           : e.del.deleted > 0 ? UAPLEX_Good
                                               : UAPLEX_BadNoData;
            release();
            return;
        case Kind::DeleteAtTime:
            r.operationResults.data[e.next] =
                st != UAPLEX_Good ? storeFailure(st)
                                  : (e.del.deleted > 0 ? UAPLEX_Good : UAPLEX_BadNoEntryExists);
            ++e.next;
            issue(e);  // the next time, or the entry's end
            return;
    }
}

// What one details entry names: its node and kind, or why it is not served.
struct Checked {
    const ua::NodeId* nodeId = nullptr;
    Kind kind = Kind::Update;
    uaplex_status status = UAPLEX_Good;
    std::uint32_t operations = 0;  // values or times
};

}  // namespace

uaplex_status History::update(ServiceCall& call) noexcept {
    const auto& req = *static_cast<const ua::HistoryUpdateRequest*>(call.request);
    const std::size_t n = req.historyUpdateDetails.size();
    if (n == 0) return UAPLEX_BadNothingToDo;
    if (n > cfg_.max_nodes_per_update) return UAPLEX_BadTooManyOperations;
    if (updatesEventsOnly(req)) return updateEvents(call);  // history_events.cpp

    // Each entry's node, kind and the number of its operation results.
    std::vector<Checked> checked(n);
    std::uint64_t operations = 0;
    for (std::size_t i = 0; i < n; ++i) {
        const ua::ExtensionObject& eo = req.historyUpdateDetails[i];
        Checked& c = checked[i];
        if (isDetails(eo, enc::dataTypeOf<ua::UpdateDataDetails>())) {
            const auto& d = *static_cast<const ua::UpdateDataDetails*>(eo.object);
            c.nodeId = &d.nodeId;
            c.kind = Kind::Update;
            c.operations = std::uint32_t(d.updateValues.size());
            const auto perform = static_cast<std::int32_t>(d.performInsertReplace);
            if (perform < UAPLEX_HISTORY_INSERT || perform > UAPLEX_HISTORY_UPDATE)
                c.status = UAPLEX_BadHistoryOperationInvalid;  // Remove, or no PerformUpdateType
        } else if (isDetails(eo, enc::dataTypeOf<ua::DeleteRawModifiedDetails>())) {
            const auto& d = *static_cast<const ua::DeleteRawModifiedDetails*>(eo.object);
            c.nodeId = &d.nodeId;
            c.kind = Kind::DeleteRaw;
            // Part 11 6.9.5: both times, startTime not after endTime; modified values are
            // not kept by the stores.
            if (d.isDeleteModified)
                c.status = UAPLEX_BadHistoryOperationUnsupported;
            else if (d.startTime == 0 || d.endTime == 0 || d.startTime > d.endTime)
                c.status = UAPLEX_BadInvalidTimestampArgument;
        } else if (isDetails(eo, enc::dataTypeOf<ua::DeleteAtTimeDetails>())) {
            const auto& d = *static_cast<const ua::DeleteAtTimeDetails*>(eo.object);
            c.nodeId = &d.nodeId;
            c.kind = Kind::DeleteAtTime;
            c.operations = std::uint32_t(d.reqTimes.size());
        } else if (isDetails(eo, enc::dataTypeOf<ua::UpdateEventDetails>()) ||
                   isDetails(eo, enc::dataTypeOf<ua::DeleteEventDetails>()) ||
                   isDetails(eo, enc::dataTypeOf<ua::UpdateStructureDataDetails>())) {
            // Event entries are served in a request of event entries only.
            c.status = UAPLEX_BadHistoryOperationUnsupported;
        } else {
            c.status = UAPLEX_BadHistoryOperationInvalid;
        }
        operations += c.operations;
    }
    if (operations > cfg_.max_values_per_update) return UAPLEX_BadTooManyOperations;

    // The node checks: known, recorded, writable by the store and by the session.
    std::vector<const Node*> nodes(n, nullptr);        // null for an owned namespace's
    std::vector<const std::string*> keys(n, nullptr);  // the store key: the entry goes ahead
    std::size_t entryCount = 0;
    for (std::size_t i = 0; i < n; ++i) {
        Checked& c = checked[i];
        if (c.status != UAPLEX_Good) continue;
        const NodeRef ref = space_.find(*c.nodeId);
        const std::uint32_t perms =
            call.access ? call.access->permissions(*c.nodeId) : config::kAllPermissions;
        // A recorded node of an owned namespace: its node manager serves its attributes.
        const bool owned = !ref && !pushed_.empty() && pushed_.count(*c.nodeId) != 0;
        if ((!ref && !owned) || !(perms & session::kPermBrowse)) {
            c.status = UAPLEX_BadNodeIdUnknown;
            continue;
        }
        const Node* node = ref.dyn;
        const std::string* key = nullptr;
        if (owned) {
            key = pushed_.find(*c.nodeId)->second->key;
        } else if (node != nullptr) {
            key = keyOf(node);
            if (key == nullptr && !pushed_.empty()) {  // a read callback serves its Value
                auto it = pushed_.find(node->id);
                if (it != pushed_.end()) key = it->second->key;
            }
        }
        if (key == nullptr) {
            c.status = UAPLEX_BadHistoryOperationUnsupported;  // not recorded
            continue;
        }
        const bool storeDoes =
            c.kind == Kind::Update
                ? UAPLEX_FIELD_OR(ops_, uaplex_history_ops, update, nullptr) != nullptr
                : UAPLEX_FIELD_OR(ops_, uaplex_history_ops, delete_raw, nullptr) != nullptr;
        if (!owned && !(node->accessLevel.load() & kHistoryWriteBit)) {
            c.status = UAPLEX_BadNotWritable;
            continue;
        }
        if (!storeDoes) {
            c.status = UAPLEX_BadHistoryOperationUnsupported;
            continue;
        }
        // Part 3 8.55: InsertHistory, ModifyHistory (Replace; Update may do both) and
        // DeleteHistory.
        std::uint32_t need = session::kPermDeleteHistory;
        if (c.kind == Kind::Update) {
            const auto& d =
                *static_cast<const ua::UpdateDataDetails*>(req.historyUpdateDetails[i].object);
            const auto perform = static_cast<std::int32_t>(d.performInsertReplace);
            need = perform == UAPLEX_HISTORY_INSERT ? session::kPermInsertHistory
                   : perform == UAPLEX_HISTORY_REPLACE
                       ? session::kPermModifyHistory
                       : session::kPermInsertHistory | session::kPermModifyHistory;
        }
        if ((perms & need) != need ||
            (!owned && !(node->userAccessLevel.load() & kHistoryWriteBit))) {
            c.status = UAPLEX_BadUserAccessDenied;
            continue;
        }
        nodes[i] = node;
        keys[i] = key;
        if (c.operations > 0 || c.kind == Kind::DeleteRaw) ++entryCount;
    }

    // The response and every result array, before any store operation runs: completions
    // only fill them in.
    std::unique_ptr<PendingUpdate> p;
    try {
        p = std::make_unique<PendingUpdate>(*this, entryCount);
    } catch (...) {
        return UAPLEX_BadOutOfMemory;
    }
    if (entryCount > 0 && call.ctx != nullptr && call.ctx->defer != nullptr)
        p->deferred = call.ctx->defer(call.ctx->deferUser, call.returnDiagnostics);
    if (!p->deferred) p->arena = &call.arena;
    // The answer without a store operation: through the parked request when there is one.
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
        r.statusCode = checked[i].status;
        if (checked[i].status != UAPLEX_Good || checked[i].operations == 0) continue;
        auto* ops = arena.allocateArray<ua::StatusCode>(checked[i].operations);
        if (ops == nullptr) return answerNow(UAPLEX_BadOutOfMemory);
        for (std::uint32_t k = 0; k < checked[i].operations; ++k) ops[k] = UAPLEX_Good;
        r.operationResults = {std::int32_t(checked[i].operations), ops};
    }
    p->response->results = {std::int32_t(n), p->results};

    // The store operations of each entry.
    const ua::DateTime now = ua::utcNow();
    std::size_t k = 0;
    try {
        for (std::size_t i = 0; i < n; ++i) {
            if (keys[i] == nullptr) continue;
            const Checked& c = checked[i];
            if (c.operations == 0 && c.kind != Kind::DeleteRaw) continue;  // nothing to do
            Entry& e = p->entries[k++];
            e.index = std::uint32_t(i);
            e.kind = c.kind;
            e.key = *keys[i];
            const ua::ExtensionObject& eo = req.historyUpdateDetails[i];
            ua::StatusCode* opResults = p->results[i].operationResults.data;
            if (c.kind == Kind::DeleteRaw) {
                const auto& d = *static_cast<const ua::DeleteRawModifiedDetails*>(eo.object);
                e.del.hdr = UAPLEX_HEADER_INIT(uaplex_history_delete, UAPLEX_STYPE_HISTORY_DELETE);
                e.del.start_time = d.startTime;
                // startTime == endTime: the value at startTime (Part 11 6.9.5).
                e.del.end_time =
                    d.startTime == d.endTime && d.endTime != INT64_MAX ? d.endTime + 1 : d.endTime;
            } else if (c.kind == Kind::DeleteAtTime) {
                const auto& d = *static_cast<const ua::DeleteAtTimeDetails*>(eo.object);
                e.times.assign(d.reqTimes.data, d.reqTimes.data + d.reqTimes.size());
            } else {
                const auto& d = *static_cast<const ua::UpdateDataDetails*>(eo.object);
                // Each value encoded into e.bytes; offsets first, pointers once it is full.
                std::vector<std::pair<std::size_t, std::size_t>> spans;
                enc::ByteBuffer one;
                for (std::uint32_t v = 0; v < c.operations; ++v) {
                    const ua::DataValue& dv = d.updateValues[v];
                    if (!(dv.mask & UAPLEX_DATAVALUE_SOURCE_TIMESTAMP)) {
                        opResults[v] = UAPLEX_BadInvalidTimestamp;  // the value's time
                        continue;
                    }
                    const bool hasValue = (dv.mask & UAPLEX_DATAVALUE_VALUE) != 0 &&
                                          ua::variantType(dv.value) != ua::BuiltinType::Null;
                    if (hasValue && valueFits && nodes[i] != nullptr &&
                        !valueFits(*nodes[i], dv.value)) {
                        opResults[v] = UAPLEX_BadTypeMismatch;
                        continue;
                    }
                    one.clear();
                    if (hasValue &&
                        (enc::encodeValue(one, variantCodec(), &dv.value,
                                          std::size_t(cfg_.max_value_bytes) + 1) != UAPLEX_Good ||
                         one.size() > cfg_.max_value_bytes)) {
                        opResults[v] = UAPLEX_BadOutOfRange;
                        continue;
                    }
                    uaplex_history_value hv{};
                    hv.hdr = UAPLEX_HEADER_INIT(uaplex_history_value, UAPLEX_STYPE_HISTORY_VALUE);
                    hv.source_timestamp = dv.source_timestamp;
                    hv.source_picoseconds =
                        (dv.mask & UAPLEX_DATAVALUE_SOURCE_PICOSECONDS) ? dv.source_picoseconds : 0;
                    const bool st = (dv.mask & UAPLEX_DATAVALUE_SERVER_TIMESTAMP) != 0;
                    hv.server_timestamp = st ? dv.server_timestamp : now;
                    hv.server_picoseconds = st && (dv.mask & UAPLEX_DATAVALUE_SERVER_PICOSECONDS)
                                                ? dv.server_picoseconds
                                                : 0;
                    hv.status = (dv.mask & UAPLEX_DATAVALUE_STATUS) ? dv.status : UAPLEX_Good;
                    e.values.push_back(hv);
                    e.valueIndex.push_back(v);
                    spans.emplace_back(e.bytes.size(), hasValue ? one.size() : 0);
                    if (hasValue)
                        e.bytes.insert(e.bytes.end(), one.data(), one.data() + one.size());
                }
                for (std::size_t j = 0; j < e.values.size(); ++j)
                    e.values[j].value =
                        spans[j].second
                            ? uaplex_bytes{e.bytes.data() + spans[j].first, spans[j].second}
                            : uaplex_bytes{nullptr, 0};
                e.storeResults.assign(e.values.size(), UAPLEX_Good);
                e.update.hdr =
                    UAPLEX_HEADER_INIT(uaplex_history_update, UAPLEX_STYPE_HISTORY_UPDATE);
                e.update.perform = std::uint32_t(d.performInsertReplace);
                e.update.value_count = std::uint32_t(e.values.size());
                e.update.values = e.values.data();
                e.update.results = e.storeResults.data();
            }
            e.update.node_key = {e.key.data(), e.key.size()};
            e.del.node_key = {e.key.data(), e.key.size()};
        }
    } catch (...) {
        return answerNow(UAPLEX_BadOutOfMemory);
    }
    // Entries whose values all failed the checks need no store round trip.
    std::size_t storeEntries = 0;
    for (Entry& e : p->entries)
        if (e.kind != Kind::Update || !e.values.empty()) ++storeEntries;
    if (storeEntries == 0) return answerNow(UAPLEX_Good);
    if (pending.load(std::memory_order_relaxed) + storeEntries > maxPending) {
        for (Entry& e : p->entries) {
            p->results[e.index].statusCode = UAPLEX_BadResourceUnavailable;
            p->results[e.index].operationResults = {0, nullptr};
        }
        return answerNow(UAPLEX_Good);
    }

    PendingUpdate* raw = p.release();
    raw->outstanding.store(std::uint32_t(storeEntries) + 1, std::memory_order_relaxed);
    for (Entry& e : raw->entries) {
        if (e.kind == Kind::Update && e.values.empty()) continue;
        raw->issue(e);
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

uaplex_status ServiceSet::Impl::historyUpdate(ServiceCall& call) noexcept {
    History* h = history.get();
    if (h == nullptr) return UAPLEX_BadServiceUnsupported;
    return h->update(call);
}

}  // namespace uaplex::services
