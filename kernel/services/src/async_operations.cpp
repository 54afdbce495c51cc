// SPDX-License-Identifier: Apache-2.0
// Asynchronous node-manager operations: the completion slots, the request records and the
// batch a Read or Write gathers its asynchronous items in (async_operations.hpp).
#include "async_operations.hpp"

#include "blocking_calls.hpp"

#include "persistence.hpp"

#include <algorithm>
#include <bit>

namespace uaplex::services {

namespace {

constexpr std::uint64_t kPending = 1;

std::size_t ringSize(std::size_t n) {
    return std::bit_ceil(std::max<std::size_t>(n, 2));
}

}  // namespace

// --- CompletionTable ----------------------------------------------------------------------------

CompletionTable::CompletionTable(std::uint32_t capacity)
    : capacity_(std::max<std::uint32_t>(capacity, 1)),
      slots_(new Slot[capacity_]),
      free_(std::make_unique<sdk::MpmcRing<Slot*>>(ringSize(capacity_))),
      maxRequests_(std::size_t(capacity_) + 256) {
    for (std::uint32_t i = 0; i < capacity_; ++i) free_->push(&slots_[i]);
    spareRequests_ = std::make_unique<sdk::MpmcRing<AsyncRequest*>>(ringSize(maxRequests_));
}

CompletionTable::~CompletionTable() = default;

AsyncRequest* CompletionTable::makeRequest() noexcept {
    if (AsyncRequest* r = spareRequests_->pop()) return r;
    try {
        std::lock_guard lock(growMutex_);
        if (requests_.size() >= maxRequests_) return nullptr;
        requests_.push_back(std::make_unique<AsyncRequest>(*this));
        return requests_.back().get();
    } catch (...) {
        return nullptr;
    }
}

void CompletionTable::recycle(AsyncRequest* request) noexcept {
    request->reset();
    spareRequests_->push(request);  // room for every record made
}

bool CompletionTable::acquire(AsyncRequest& request, std::uint32_t part,
                              uaplex_completion& out) noexcept {
    Slot* s = free_->pop();
    if (s == nullptr) return false;
    s->request = &request;
    s->part = part;
    std::uint64_t gen = s->state.load(std::memory_order_relaxed) >> 1;
    pending_.fetch_add(1, std::memory_order_relaxed);
    s->state.store((gen << 1) | kPending, std::memory_order_release);
    out = uaplex_completion{};
    out.hdr = UAPLEX_HEADER_INIT(uaplex_completion, UAPLEX_STYPE_COMPLETION);
    out.self = this;
    out.token = (gen << 32) | std::uint64_t(s - slots_.get());
    out.complete = &CompletionTable::complete;
    out.status = &CompletionTable::statusOf;
    return true;
}

CompletionTable::Slot* CompletionTable::pendingSlot(std::uint64_t token) noexcept {
    std::uint64_t index = token & 0xFFFFFFFFu;
    if (index >= capacity_) return nullptr;
    Slot& s = slots_[index];
    std::uint64_t want = (((token >> 32) & 0xFFFFFFFFu) << 1) | kPending;
    return (s.state.load(std::memory_order_acquire) & 0x1FFFFFFFFull) == want ? &s : nullptr;
}

uaplex_status CompletionTable::complete(void* self, std::uint64_t token,
                                        uaplex_status status) noexcept {
    auto& t = *static_cast<CompletionTable*>(self);
    std::uint64_t index = token & 0xFFFFFFFFu;
    if (index >= t.capacity_) return UAPLEX_BadInvalidState;
    Slot& s = t.slots_[index];
    std::uint64_t gen = (token >> 32) & 0xFFFFFFFFu;
    std::uint64_t expected = (gen << 1) | kPending;
    // The one complete of this generation wins; the slot's next generation is not pending.
    if (!s.state.compare_exchange_strong(expected, ((gen + 1) & 0xFFFFFFFFu) << 1,
                                         std::memory_order_acq_rel))
        return UAPLEX_BadInvalidState;
    AsyncRequest* request = s.request;
    std::uint32_t part = s.part;
    s.request = nullptr;
    t.pending_.fetch_sub(1, std::memory_order_relaxed);
    t.free_->push(&s);
    request->completed(part, status);
    request->release();
    return UAPLEX_Good;
}

uaplex_status CompletionTable::statusOf(void* self, std::uint64_t token) noexcept {
    auto& t = *static_cast<CompletionTable*>(self);
    Slot* s = t.pendingSlot(token);
    if (s == nullptr) return UAPLEX_BadInvalidState;
    AsyncRequest* request = s->request;
    if (request == nullptr) return UAPLEX_BadInvalidState;
    // Records are never freed: locking one that moved on is harmless, and while the slot is
    // still pending under its lock the record cannot finish.
    std::lock_guard lock(request->mutex);
    if (t.pendingSlot(token) != s || s->request != request) return UAPLEX_BadInvalidState;
    uaplex_status st = request->deferred ? request->deferred->status() : UAPLEX_Good;
    return st == UAPLEX_GoodCompletesAsynchronously ? UAPLEX_Good : st;
}

// --- AsyncRequest -------------------------------------------------------------------------------

void AsyncRequest::reset() noexcept {
    arena.release();
    deferred.reset();
    impl = nullptr;
    responseType = nullptr;
    response = nullptr;
    readResults = nullptr;
    writeResults = nullptr;
    callResults = nullptr;
    browseResults = nullptr;
    parts.clear();
    items.clear();
    outstanding.store(0, std::memory_order_relaxed);
    pin = addressspace::Pin{};
}

void AsyncRequest::completed(std::uint32_t p, uaplex_status status) noexcept {
    std::lock_guard lock(mutex);
    AsyncPart& part = parts[p];
    switch (part.kind) {
        case AsyncPart::Kind::OwnerRead:
            for (std::uint32_t k = 0; k < part.count; ++k) {
                const AsyncItem& item = items[part.first + k];
                uaplex_status st = part.statuses ? part.statuses[k] : status;
                if (status != UAPLEX_Good && st == UAPLEX_Good) st = status;
                impl->finishOwnedRead(item.attributeId, item.perms, part.timestamps, st,
                                      readResults[item.index]);
            }
            break;
        case AsyncPart::Kind::StoreRead:
            impl->finishValueRead(arena, status, part.range, part.timestamps,
                                  readResults[part.index]);
            break;
        case AsyncPart::Kind::OwnerWrite:
            for (std::uint32_t k = 0; k < part.count; ++k) {
                const AsyncItem& item = items[part.first + k];
                uaplex_status st = part.statuses ? part.statuses[k] : status;
                if (status != UAPLEX_Good && st == UAPLEX_Good) st = status;
                if (!pluginStatusOk(st)) st = UAPLEX_BadInternalError;
                writeResults[item.index] =
                    st == UAPLEX_BadNotSupported ? UAPLEX_BadNodeIdUnknown : st;
            }
            break;
        case AsyncPart::Kind::StoreWrite:
            writeResults[part.index] = pluginStatusOk(status)
                                           ? impl->storeWritten(*part.node, part.value, status)
                                           : UAPLEX_BadInternalError;
            break;
        case AsyncPart::Kind::PersistWrite:
            // Committed: now in memory too. Not committed: the value stays as it was.
            writeResults[part.index] =
                status == UAPLEX_Good ? impl->storeWritten(*part.node, part.value, status) : status;
            break;
        case AsyncPart::Kind::OwnerCall:
            ServiceSet::Impl::finishOwnedCall(status, part.outCount, part.outputs, part.statuses,
                                              part.count, callResults[part.index]);
            break;
        case AsyncPart::Kind::OwnerBrowse: {
            PendingBrowse& b = *part.browse;
            b.done = true;
            ua::BrowseResult& res = browseResults[part.index];
            if (uaplex_status bad = ServiceSet::Impl::ownerBrowseStatus(status, b.faulty);
                bad != UAPLEX_Good) {
                res.statusCode = bad;
                break;
            }
            // A continuation point only for a request still waiting (its session is open).
            uaplex_status st = deferred ? deferred->status() : UAPLEX_BadInvalidState;
            const bool waiting = st == UAPLEX_Good || st == UAPLEX_GoodCompletesAsynchronously;
            SessionState* session = waiting ? b.session : nullptr;
            impl->pageBrowse(arena, session, b.cp, *b.nodeId, b.isNewBrowse, b.hits, true, res,
                             b.access ? &*b.access : nullptr);
            if (!b.isNewBrowse && session != nullptr && res.continuationPoint.length > 0) {
                std::lock_guard sessionLock(session->mutex);
                try {
                    session->continuationPoints.push_back(b.cp);
                } catch (...) {
                    res.statusCode = UAPLEX_BadOutOfMemory;
                }
            }
            break;
        }
    }
}

void AsyncRequest::release() noexcept {
    if (outstanding.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
    // Every operation completed: nothing else touches the arena now.
    if (deferred) deferred->answer(UAPLEX_Good, responseType, response, arena);
    {
        std::lock_guard lock(mutex);
        deferred.reset();
    }
    table_.recycle(this);
}

// --- AsyncBatch ---------------------------------------------------------------------------------

AsyncBatch::AsyncBatch(ServiceSet::Impl& impl, ServiceCall& call) noexcept
    : impl_(impl), call_(call), enabled_(call.ctx != nullptr && call.ctx->defer != nullptr) {}

AsyncBatch::~AsyncBatch() {
    if (request_ && !started_) impl_.completions.recycle(request_);
}

AsyncRequest* AsyncBatch::record() noexcept {
    if (request_ == nullptr && enabled_) {
        request_ = impl_.completions.makeRequest();
        if (request_ == nullptr) {
            enabled_ = false;  // none left: the rest is served synchronously
            return nullptr;
        }
        request_->impl = &impl_;
    }
    return request_;
}

bool AsyncBatch::addOwnerRead(const NamespaceOwner& owner, std::uint32_t index,
                              std::uint32_t attributeId, std::uint32_t perms) noexcept {
    AsyncRequest* r = record();
    if (r == nullptr) return false;
    try {
        r->items.push_back(AsyncItem{&owner, index, attributeId, perms});
    } catch (...) {
        return false;
    }
    return true;
}

bool AsyncBatch::addOwnerWrite(const NamespaceOwner& owner, std::uint32_t index) noexcept {
    return addOwnerRead(owner, index, 0, 0);
}

bool AsyncBatch::addPart(const AsyncPart& part) noexcept {
    AsyncRequest* r = record();
    if (r == nullptr) return false;
    try {
        r->parts.push_back(part);
    } catch (...) {
        return false;
    }
    return true;
}

bool AsyncBatch::addStoreRead(Node& node, std::uint32_t index, const IndexRange& range,
                              std::int32_t timestamps) noexcept {
    AsyncPart p;
    p.kind = AsyncPart::Kind::StoreRead;
    p.node = &node;
    p.index = index;
    p.range = range;
    p.timestamps = timestamps;
    return addPart(p);
}

bool AsyncBatch::addValueWrite(AsyncPart::Kind kind, Node& node, std::uint32_t index,
                               const ua::DataValue& value) noexcept {
    AsyncPart p;
    p.kind = kind;
    p.node = &node;
    p.index = index;
    p.value = value;
    return addPart(p);
}

bool AsyncBatch::addOwnerCall(const NamespaceOwner& owner, std::uint32_t index,
                              const ua::CallMethodRequest& m,
                              uaplex_status* inputResults) noexcept {
    AsyncPart p;
    p.kind = AsyncPart::Kind::OwnerCall;
    p.owner = &owner;
    p.index = index;
    p.count = std::uint32_t(m.inputArguments.size());
    p.statuses = inputResults;
    p.items = &m;
    return addPart(p);
}

bool AsyncBatch::addOwnerBrowse(const NamespaceOwner& owner, std::uint32_t index,
                                const ContinuationPoint& cp, const ua::NodeId& nodeId,
                                const ua::NodeId* referenceType, bool isNewBrowse,
                                std::size_t limit) noexcept {
    AsyncRequest* r = record();
    if (r == nullptr) return false;
    try {
        auto b = std::make_shared<PendingBrowse>();
        b->request = r;
        b->cp = cp;
        b->nodeId = &nodeId;
        b->isNewBrowse = isNewBrowse;
        b->limit = limit;
        b->sink = &ServiceSet::Impl::collectAsyncReference;
        if (call_.access != nullptr) b->access = *call_.access;  // the view may change meanwhile
        b->referenceType = referenceType != nullptr ? &b->cp.referenceType : nullptr;
        if (call_.session != nullptr) {
            call_.session->acquire();
            b->session = call_.session;
        }
        AsyncPart p;
        p.kind = AsyncPart::Kind::OwnerBrowse;
        p.owner = &owner;
        p.index = index;
        p.browse = std::move(b);
        return addPart(p);
    } catch (...) {
        return false;
    }
}

bool AsyncBatch::park() noexcept {
    request_->deferred = call_.ctx->defer(call_.ctx->deferUser, call_.returnDiagnostics);
    if (request_->deferred == nullptr) return false;
    request_->pin = impl_.space.pin();  // taken while the worker's Pin still holds
    return true;
}

void AsyncBatch::fail(uaplex_status status) noexcept {
    // Not parked (cancelled or expired while executing): the items answer `status` now.
    AsyncRequest& r = *request_;
    for (const AsyncItem& item : r.items) {
        if (r.readResults) {
            r.readResults[item.index] = ua::DataValue{};
            r.readResults[item.index].mask = UAPLEX_DATAVALUE_STATUS;
            r.readResults[item.index].status = status;
        } else {
            r.writeResults[item.index] = status;
        }
    }
    for (const AsyncPart& p : r.parts) {
        if (p.kind == AsyncPart::Kind::StoreRead) {
            r.readResults[p.index] = ua::DataValue{};
            r.readResults[p.index].mask = UAPLEX_DATAVALUE_STATUS;
            r.readResults[p.index].status = status;
        } else if (p.kind == AsyncPart::Kind::StoreWrite ||
                   p.kind == AsyncPart::Kind::PersistWrite) {
            r.writeResults[p.index] = status;
        } else if (p.kind == AsyncPart::Kind::OwnerCall) {
            r.callResults[p.index].statusCode = status;
        } else if (p.kind == AsyncPart::Kind::OwnerBrowse) {
            r.browseResults[p.index].statusCode = status;
        }
    }
}

uaplex_status AsyncBatch::startRead(ua::ReadResponse* response, ua::DataValue* results,
                                    const ua::ReadRequest& request,
                                    std::int32_t timestamps) noexcept {
    AsyncRequest& r = *request_;
    r.responseType = enc::dataTypeOf<ua::ReadResponse>();
    r.response = response;
    r.readResults = results;
    enc::Arena& arena = call_.arena;  // still the worker's
    // One operation per owner, its items in request order.
    std::stable_sort(r.items.begin(), r.items.end(),
                     [](const AsyncItem& a, const AsyncItem& b) { return a.owner < b.owner; });
    try {
        for (std::size_t i = 0; i < r.items.size();) {
            std::size_t j = i;
            while (j < r.items.size() && r.items[j].owner == r.items[i].owner) ++j;
            std::uint32_t n = std::uint32_t(j - i);
            AsyncPart p;
            p.kind = AsyncPart::Kind::OwnerRead;
            p.owner = r.items[i].owner;
            p.first = std::uint32_t(i);
            p.count = n;
            p.timestamps = timestamps;
            auto* items = arena.allocateArray<uaplex_read_item>(n);
            p.results = arena.allocateArray<ua::DataValue*>(n);
            p.statuses = arena.allocateArray<uaplex_status>(n);
            if (!items || !p.results || !p.statuses) return UAPLEX_BadOutOfMemory;
            for (std::uint32_t k = 0; k < n; ++k) {
                const AsyncItem& item = r.items[i + k];
                const ua::ReadValueId& rv = request.nodesToRead[item.index];
                uaplex_read_item& it = items[k];
                it.hdr = UAPLEX_HEADER_INIT(uaplex_read_item, UAPLEX_STYPE_NODE_MANAGER_READ_ITEM);
                it.attribute_id = rv.attributeId;
                it.node_id = &rv.nodeId;
                it.index_range =
                    uaplex_str{rv.indexRange.data,
                               rv.indexRange.length > 0 ? size_t(rv.indexRange.length) : 0};
                it.max_age_ms = request.maxAge;
                it.alloc = &r.alloc;
                p.results[k] = &results[item.index];
            }
            p.items = items;
            r.parts.push_back(p);
            i = j;
        }
    } catch (...) {
        return UAPLEX_BadOutOfMemory;
    }
    timestamps_ = timestamps;
    return run();
}

uaplex_status AsyncBatch::startWrite(ua::WriteResponse* response, ua::StatusCode* results,
                                     const ua::WriteRequest& request) noexcept {
    AsyncRequest& r = *request_;
    r.responseType = enc::dataTypeOf<ua::WriteResponse>();
    r.response = response;
    r.writeResults = results;
    enc::Arena& arena = call_.arena;
    std::stable_sort(r.items.begin(), r.items.end(),
                     [](const AsyncItem& a, const AsyncItem& b) { return a.owner < b.owner; });
    try {
        for (std::size_t i = 0; i < r.items.size();) {
            std::size_t j = i;
            while (j < r.items.size() && r.items[j].owner == r.items[i].owner) ++j;
            std::uint32_t n = std::uint32_t(j - i);
            AsyncPart p;
            p.kind = AsyncPart::Kind::OwnerWrite;
            p.owner = r.items[i].owner;
            p.first = std::uint32_t(i);
            p.count = n;
            auto* items = arena.allocateArray<uaplex_write_item>(n);
            p.statuses = arena.allocateArray<uaplex_status>(n);
            if (!items || !p.statuses) return UAPLEX_BadOutOfMemory;
            for (std::uint32_t k = 0; k < n; ++k) {
                const ua::WriteValue& wv = request.nodesToWrite[r.items[i + k].index];
                uaplex_write_item& it = items[k];
                it.hdr =
                    UAPLEX_HEADER_INIT(uaplex_write_item, UAPLEX_STYPE_NODE_MANAGER_WRITE_ITEM);
                it.attribute_id = wv.attributeId;
                it.node_id = &wv.nodeId;
                it.index_range =
                    uaplex_str{wv.indexRange.data,
                               wv.indexRange.length > 0 ? size_t(wv.indexRange.length) : 0};
                it.value = &wv.value;
            }
            p.items = items;
            r.parts.push_back(p);
            i = j;
        }
    } catch (...) {
        return UAPLEX_BadOutOfMemory;
    }
    return run();
}

uaplex_status AsyncBatch::startCall(ua::CallResponse* response,
                                    ua::CallMethodResult* results) noexcept {
    AsyncRequest& r = *request_;
    r.responseType = enc::dataTypeOf<ua::CallResponse>();
    r.response = response;
    r.callResults = results;
    return run();  // its parts were added in request order
}

uaplex_status AsyncBatch::startBrowse(const enc::DataType* responseType, void* response,
                                      ua::BrowseResult* results) noexcept {
    AsyncRequest& r = *request_;
    r.responseType = responseType;
    r.response = response;
    r.browseResults = results;
    return run();
}

uaplex_status AsyncBatch::run() noexcept {
    AsyncRequest& r = *request_;
    if (!park()) {
        fail(UAPLEX_BadRequestInterrupted);
        return UAPLEX_Good;  // answered by the worker as usual (its cancel status wins)
    }
    started_ = true;
    // From here the request's memory is the record's; the worker goes on with an empty arena.
    r.arena.swap(call_.arena);
    r.alloc = uaplex_value_alloc{&r, [](void* self, size_t size, size_t align) -> void* {
                                     auto& req = *static_cast<AsyncRequest*>(self);
                                     std::lock_guard lock(req.mutex);
                                     return req.arena.allocate(size == 0 ? 1 : size,
                                                               align == 0 ? 8 : align);
                                 }};
    const std::uint32_t n = std::uint32_t(r.parts.size());
    // A blocking node manager's synchronous entry, on its lane (blocking_calls.hpp).
    auto offload = [&](AsyncPart& p) noexcept {
        return impl_.blocking != nullptr && impl_.blocking->submit(&p, &r)
                   ? UAPLEX_GoodCompletesAsynchronously
                   : UAPLEX_BadResourceUnavailable;
    };
    // One reference per operation and one for this thread, so that no completion can answer
    // before every operation is issued.
    r.outstanding.store(n + 1, std::memory_order_relaxed);
    for (std::uint32_t i = 0; i < n; ++i) {
        AsyncPart& p = r.parts[i];
        if (!impl_.completions.acquire(r, i, p.completion)) {
            r.completed(i, UAPLEX_BadResourceUnavailable);  // over max_async_operations
            r.release();
            continue;
        }
        uaplex_completion c = p.completion;  // the plugin may complete (and the part move) now
        uaplex_status st = UAPLEX_BadInternalError;
        switch (p.kind) {
            case AsyncPart::Kind::OwnerRead:
                st = p.owner->readAsync == nullptr
                         ? offload(p)
                         : p.owner->readAsync(p.owner->self, p.count,
                                              static_cast<const uaplex_read_item*>(p.items),
                                              p.results, p.statuses, &c);
                break;
            case AsyncPart::Kind::StoreRead: {
                if (p.node->callbacks.readAsync == nullptr) {
                    st = offload(p);
                    break;
                }
                ua::DataValue& out = r.readResults[p.index];
                out = ua::DataValue{};
                st = p.node->callbacks.readAsync(p.node->callbacks.user, &p.node->id, &r.alloc,
                                                 &out, &c);
                break;
            }
            case AsyncPart::Kind::OwnerWrite:
                st = p.owner->writeAsync == nullptr
                         ? offload(p)
                         : p.owner->writeAsync(p.owner->self, p.count,
                                               static_cast<const uaplex_write_item*>(p.items),
                                               p.statuses, &c);
                break;
            case AsyncPart::Kind::StoreWrite:
                st = p.node->callbacks.writeAsync == nullptr
                         ? offload(p)
                         : p.node->callbacks.writeAsync(p.node->callbacks.user, &p.node->id,
                                                        &p.value, &c);
                break;
            case AsyncPart::Kind::PersistWrite:
                st = impl_.persistence->submit(&p) ? UAPLEX_GoodCompletesAsynchronously
                                                   : UAPLEX_BadResourceUnavailable;
                break;
            case AsyncPart::Kind::OwnerCall: {
                if (p.owner->callAsync == nullptr) {
                    st = offload(p);  // a blocking node manager's call, on its lane
                    break;
                }
                const auto& m = *static_cast<const ua::CallMethodRequest*>(p.items);
                st = p.owner->callAsync(p.owner->self, &m.objectId, &m.methodId, p.count,
                                        m.inputArguments.data, &r.alloc, p.statuses, &p.outCount,
                                        &p.outputs, &c);
                break;
            }
            case AsyncPart::Kind::OwnerBrowse: {
                if (p.owner->browseAsync == nullptr) {
                    st = offload(p);  // a blocking node manager's browse, on its lane
                    break;
                }
                PendingBrowse& b = *p.browse;
                st = p.owner->browseAsync(p.owner->self, b.nodeId, std::uint32_t(b.cp.direction),
                                          b.referenceType, b.cp.includeSubtypes,
                                          &ServiceSet::Impl::collectAsyncReference, &b, &c);
                break;
            }
        }
        if (st != UAPLEX_GoodCompletesAsynchronously) impl_.completions.completeNow(c, st);
    }
    r.release();
    return UAPLEX_GoodCompletesAsynchronously;
}

}  // namespace uaplex::services
