// SPDX-License-Identifier: Apache-2.0
// The recorder and HistoryRead (history.hpp).
#include "history.hpp"

#include <algorithm>
#include <bit>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstring>
#include <random>

#include <uaplex/aggregates/aggregates.hpp>
#include <uaplex/host/logging.hpp>
#include <uaplex/session/deferred_request.hpp>
#include <uaplex/session/session_services.hpp>

#include "history_derived.hpp"

namespace uaplex::services {

using host::logger;

namespace {

constexpr std::uint8_t kHistoryReadBit = 4;   // AccessLevel HistoryRead (Part 3 8.57)
constexpr std::uint8_t kHistoryWriteBit = 8;  // AccessLevel HistoryWrite
constexpr std::size_t kCpBytes = 8;           // a continuation point on the wire

const enc::DataType& variantCodec() noexcept {
    static const enc::DataType* t = enc::findDataType("Variant");
    return *t;
}

std::string hex(const std::uint8_t* p, std::size_t n) {
    static const char* d = "0123456789abcdef";
    std::string out;
    for (std::size_t i = 0; i < n; ++i) {
        out += d[p[i] >> 4];
        out += d[p[i] & 15];
    }
    return out;
}

// A per-process secret mixed into the continuation point ids a client sees.
std::uint64_t cpSalt() noexcept {
    static const std::uint64_t salt = [] {
        std::random_device rd;
        return (std::uint64_t(rd()) << 32) ^ rd();
    }();
    return salt;
}

// The flags of a continuation point of a processed or an at-time read (a raw read's are its
// uaplex_history_read_flags).
constexpr std::uint32_t kProcessedPoint = 0x100;
constexpr std::uint32_t kAtTimePoint = 0x200;
constexpr std::size_t kDerivedCursor = 16;  // digest, next interval or time

std::uint64_t fnv(std::uint64_t h, const void* p, std::size_t n) noexcept {
    const auto* b = static_cast<const std::uint8_t*>(p);
    for (std::size_t i = 0; i < n; ++i) h = (h ^ b[i]) * 1099511628211ULL;
    return h;
}
constexpr std::uint64_t kFnvBasis = 14695981039346656037ULL;

// One node of a HistoryRead that goes to the store.
struct Part {
    std::uint32_t index = 0;  // in the request
    std::string key;
    std::vector<std::uint8_t> cursor;
    uaplex_history_read read{};
    uaplex_history_read_result result{};
    uaplex_completion completion{};
    std::atomic<bool> done{false};
    // Processed and at-time reads: the pages and the computation; what their continuation
    // point is tied to (start, end, flags of the point, the digest of the rest).
    std::unique_ptr<DerivedRead> derived;
    std::int64_t cpStart = 0;
    std::int64_t cpEnd = 0;
    std::uint32_t cpFlags = 0;
    std::uint64_t digest = 0;
};

// A HistoryRead waiting for the store: the response lives in `arena`, answered (or handed to
// the waiting worker) when the last part completes.
class PendingRead {
  public:
    PendingRead(History& h, SessionState* session, std::int32_t timestamps, std::size_t parts)
        : history(h), session(session), timestamps(timestamps), parts(parts) {
        if (session != nullptr) session->acquire();
        alloc = {this, [](void* self, size_t size, size_t align) -> void* {
                     auto* p = static_cast<PendingRead*>(self);
                     std::lock_guard lock(p->mutex);
                     return p->arena->allocate(size == 0 ? 1 : size, align == 0 ? 8 : align);
                 }};
    }
    ~PendingRead() {
        if (session != nullptr) session->release();
    }
    PendingRead(const PendingRead&) = delete;
    PendingRead& operator=(const PendingRead&) = delete;

    History& history;
    SessionState* session;
    const std::int32_t timestamps;
    std::vector<Part> parts;
    enc::Arena own{64u << 20, 64 * 1024};
    enc::Arena* arena = &own;  // the worker's arena when it waits
    uaplex_value_alloc alloc{};
    std::mutex mutex;
    std::condition_variable cv;
    ua::HistoryReadResponse* response = nullptr;
    ua::HistoryReadResult* results = nullptr;
    std::shared_ptr<session::DeferredRequest> deferred;  // null: a worker waits
    std::atomic<std::uint32_t> outstanding{0};
    bool finished = false;
    // Only one time and numValuesPerNode (at most one page): that many values, no
    // continuation (Part 11 6.5.3.2).
    bool single = false;
    std::vector<ua::DateTime> times;  // ReadAtTimeDetails reqTimes, copied

    static uaplex_status complete(void* self, std::uint64_t token, uaplex_status st) noexcept {
        auto* p = static_cast<PendingRead*>(self);
        if (token >= p->parts.size() || p->parts[token].done.exchange(true))
            return UAPLEX_BadInvalidState;
        p->history.pending.fetch_sub(1, std::memory_order_relaxed);
        Part& part = p->parts[token];
        if (part.derived) {
            p->advance(part, st);
            return UAPLEX_Good;
        }
        p->finishPart(part, st);
        p->release();
        return UAPLEX_Good;
    }
    static uaplex_status status(void* self, std::uint64_t) noexcept {
        auto* p = static_cast<PendingRead*>(self);
        return p->deferred ? p->deferred->status() : UAPLEX_Good;
    }

    // One reference less; the last answers the request.
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

    void finishPart(Part& part, uaplex_status st) noexcept;
    void finishDerived(Part& part) noexcept;
    // Issues the part's (next) store read: its status (GoodCompletesAsynchronously: the
    // completion goes on with it).
    uaplex_status issue(Part& part) noexcept;
    // A derived part's page came with `st`: the next one issued, or the part answered.
    void advance(Part& part, uaplex_status st) noexcept;
    // A new continuation point of the session for `part` (its cursor `bytes`) into r; false
    // when r got a Bad status instead.
    bool keepPoint(Part& part, ua::HistoryReadResult& r, std::int64_t start, std::int64_t end,
                   std::uint32_t flags, const std::uint8_t* bytes, std::size_t len) noexcept;
};

uaplex_status PendingRead::issue(Part& part) noexcept {
    part.result = uaplex_history_read_result{};
    part.result.hdr =
        UAPLEX_HEADER_INIT(uaplex_history_read_result, UAPLEX_STYPE_HISTORY_READ_RESULT);
    if (part.derived) part.derived->nextRead(part.read);
    part.done.store(false);
    history.pending.fetch_add(1, std::memory_order_relaxed);
    uaplex_status st =
        history.ops()->read_raw(history.self(), &part.read, &part.result, &part.completion);
    if (st == UAPLEX_GoodCompletesAsynchronously) return st;
    // Completed and returned at once: the completion has answered it.
    if (part.done.exchange(true)) return UAPLEX_GoodCompletesAsynchronously;
    history.pending.fetch_sub(1, std::memory_order_relaxed);
    return st;
}

void PendingRead::advance(Part& part, uaplex_status st) noexcept {
    while (part.derived->onPage(st, part.result)) {
        const uaplex_status req = deferred ? deferred->status() : UAPLEX_Good;
        if (req != UAPLEX_Good) {  // timed out, cancelled, its session gone: no more pages
            part.derived->fail(req);
            break;
        }
        st = issue(part);
        if (st == UAPLEX_GoodCompletesAsynchronously) return;
    }
    finishPart(part, UAPLEX_Good);
    release();
}

// The store's answer for one node into its HistoryReadResult (Part 11 6.4.3 and 6.3).
void PendingRead::finishPart(Part& part, uaplex_status st) noexcept {
    if (part.derived) return finishDerived(part);
    std::lock_guard lock(mutex);
    ua::HistoryReadResult& r = results[part.index];
    r.continuationPoint = {-1, nullptr};
    if (st != UAPLEX_Good) {
        r.statusCode = pluginStatusOk(st) && (st & 0x80000000u) ? st : UAPLEX_BadInternalError;
        if (st == UAPLEX_BadContinuationPointInvalid || st == UAPLEX_BadServerHalted ||
            st == UAPLEX_BadResourceUnavailable || st == UAPLEX_BadOutOfMemory)
            r.statusCode = st;
        return;
    }
    const uaplex_history_read_result& res = part.result;
    const std::uint32_t n =
        res.values != nullptr ? std::min(res.value_count, part.read.max_values) : 0;
    auto* data = arena->allocateArray<ua::HistoryData>(1);
    auto* dvs = n ? arena->allocateArray<ua::DataValue>(n) : nullptr;
    if (data == nullptr || (n && dvs == nullptr)) {
        r.statusCode = UAPLEX_BadOutOfMemory;
        return;
    }
    enc::DecodeLimits limits;
    for (std::uint32_t i = 0; i < n; ++i) {
        const uaplex_history_value& v = res.values[i];
        ua::DataValue& dv = dvs[i];
        dv = ua::DataValue{};
        if (v.status != UAPLEX_Good) {
            dv.mask |= UAPLEX_DATAVALUE_STATUS;
            dv.status = v.status;
        }
        if (decodeNumericScalar(v.value, dv.value)) {  // the common case, without the codec
            dv.mask |= UAPLEX_DATAVALUE_VALUE;
        } else if (v.value.len > 0 && v.value.data != nullptr) {
            void* out = nullptr;
            if (enc::decodeValue({v.value.data, v.value.len}, *arena, limits, variantCodec(),
                                 &out) == UAPLEX_Good &&
                out != nullptr) {
                dv.value = *static_cast<const ua::Variant*>(out);
                dv.mask |= UAPLEX_DATAVALUE_VALUE;
            } else {
                dv.mask |= UAPLEX_DATAVALUE_STATUS;
                dv.status = UAPLEX_BadDataLost;
            }
        }
        const bool bound = v.status == UAPLEX_BadBoundNotFound;
        if (timestamps != 1 || bound) {  // Source or Both; a missing bound shows its time
            dv.mask |= UAPLEX_DATAVALUE_SOURCE_TIMESTAMP;
            dv.source_timestamp = v.source_timestamp;
            if (v.source_picoseconds) {
                dv.mask |= UAPLEX_DATAVALUE_SOURCE_PICOSECONDS;
                dv.source_picoseconds = v.source_picoseconds;
            }
        }
        if ((timestamps == 1 || timestamps == 2) && !bound && v.server_timestamp != 0) {
            dv.mask |= UAPLEX_DATAVALUE_SERVER_TIMESTAMP;
            dv.server_timestamp = v.server_timestamp;
            if (v.server_picoseconds) {
                dv.mask |= UAPLEX_DATAVALUE_SERVER_PICOSECONDS;
                dv.server_picoseconds = v.server_picoseconds;
            }
        }
    }
    data->dataValues = {std::int32_t(n), dvs};
    r.historyData = ua::ExtensionObject{};
    const enc::DataType* t = enc::dataTypeOf<ua::HistoryData>();
    r.historyData.type_id = ua::numericNodeId(0, t->binaryEncodingId);
    r.historyData.encoding = UAPLEX_EXTENSIONOBJECT_BINARY;
    r.historyData.data_type = t;
    r.historyData.object = data;
    r.statusCode = UAPLEX_Good;
    const bool more = !single && res.continuation.len > 0 && res.continuation.data != nullptr &&
                      res.continuation.len <= UAPLEX_HISTORY_MAX_CONTINUATION;
    if (!more) {
        if (n == 0) r.statusCode = UAPLEX_GoodNoData;
        return;
    }
    if (!keepPoint(part, r, part.read.start_time, part.read.end_time, part.read.flags,
                   res.continuation.data, res.continuation.len))
        data->dataValues = {0, nullptr};
}

bool PendingRead::keepPoint(Part& part, ua::HistoryReadResult& r, std::int64_t start,
                            std::int64_t end, std::uint32_t flags, const std::uint8_t* bytes,
                            std::size_t len) noexcept {
    if (session == nullptr) {
        r.statusCode = UAPLEX_BadNoContinuationPoints;
        return false;
    }
    auto* idBytes = static_cast<std::uint8_t*>(arena->allocate(kCpBytes, 1));
    if (idBytes == nullptr) {
        r.statusCode = UAPLEX_BadOutOfMemory;
        return false;
    }
    try {
        std::lock_guard sl(session->mutex);
        if (session->historyPoints.size() >= history.config().max_continuation_points) {
            r.statusCode = UAPLEX_BadNoContinuationPoints;
            return false;
        }
        HistoryContinuation cp;
        cp.id = (session->nextContinuationId++) ^ cpSalt();
        cp.key = part.key;
        cp.start = start;
        cp.end = end;
        cp.flags = flags;
        cp.cursor.assign(bytes, bytes + len);
        std::memcpy(idBytes, &cp.id, kCpBytes);
        session->historyPoints.push_back(std::move(cp));
    } catch (...) {
        r.statusCode = UAPLEX_BadOutOfMemory;
        return false;
    }
    r.continuationPoint = {std::int32_t(kCpBytes), idBytes};
    return true;
}

// A processed or at-time part's results into its HistoryReadResult: the computed values, with
// the interval's (or requested) time as the timestamps asked for, and a continuation point
// when intervals or times are left.
void PendingRead::finishDerived(Part& part) noexcept {
    std::lock_guard lock(mutex);
    ua::HistoryReadResult& r = results[part.index];
    r.continuationPoint = {-1, nullptr};
    const DerivedRead& d = *part.derived;
    if (const uaplex_status st = d.status(); st != UAPLEX_Good) {
        r.statusCode = pluginStatusOk(st) && (st & 0x80000000u) ? st : UAPLEX_BadInternalError;
        return;
    }
    const auto values = d.results();
    const std::size_t n = values.size();
    auto* data = arena->allocateArray<ua::HistoryData>(1);
    auto* dvs = n ? arena->allocateArray<ua::DataValue>(n) : nullptr;
    if (data == nullptr || (n && dvs == nullptr)) {
        r.statusCode = UAPLEX_BadOutOfMemory;
        return;
    }
    for (std::size_t i = 0; i < n; ++i) {
        ua::DataValue dv = values[i];
        const ua::DateTime t = dv.source_timestamp;
        dv.mask &= ~std::uint32_t(
            UAPLEX_DATAVALUE_SOURCE_TIMESTAMP | UAPLEX_DATAVALUE_SERVER_TIMESTAMP |
            UAPLEX_DATAVALUE_SOURCE_PICOSECONDS | UAPLEX_DATAVALUE_SERVER_PICOSECONDS);
        dv.source_timestamp = 0;
        dv.server_timestamp = 0;
        if (timestamps != 1) {
            dv.mask |= UAPLEX_DATAVALUE_SOURCE_TIMESTAMP;
            dv.source_timestamp = t;
        }
        if (timestamps != 0) {
            dv.mask |= UAPLEX_DATAVALUE_SERVER_TIMESTAMP;
            dv.server_timestamp = t;
        }
        dvs[i] = dv;
    }
    data->dataValues = {std::int32_t(n), dvs};
    r.historyData = ua::ExtensionObject{};
    const enc::DataType* t = enc::dataTypeOf<ua::HistoryData>();
    r.historyData.type_id = ua::numericNodeId(0, t->binaryEncodingId);
    r.historyData.encoding = UAPLEX_EXTENSIONOBJECT_BINARY;
    r.historyData.data_type = t;
    r.historyData.object = data;
    r.statusCode = UAPLEX_Good;
    if (d.next() >= d.total()) {
        if (n == 0) r.statusCode = UAPLEX_GoodNoData;
        return;
    }
    std::uint8_t cursor[kDerivedCursor];
    const std::uint64_t next = d.next();
    std::memcpy(cursor, &part.digest, 8);
    std::memcpy(cursor + 8, &next, 8);
    if (!keepPoint(part, r, part.cpStart, part.cpEnd, part.cpFlags, cursor, sizeof cursor))
        data->dataValues = {0, nullptr};
}

// The continuation point `bytes` of `session`, taken out of it; false when there is none.
bool takeContinuation(SessionState* session, const ua::ByteString& bytes,
                      HistoryContinuation& out) noexcept {
    if (session == nullptr || bytes.length != std::int32_t(kCpBytes) || bytes.data == nullptr)
        return false;
    std::uint64_t id = 0;
    std::memcpy(&id, bytes.data, kCpBytes);
    std::lock_guard lock(session->mutex);
    auto& v = session->historyPoints;
    for (auto it = v.begin(); it != v.end(); ++it) {
        if (it->id != id) continue;
        out = std::move(*it);
        v.erase(it);
        return true;
    }
    return false;
}

bool isDetails(const ua::ExtensionObject& eo, const enc::DataType* t) noexcept {
    return eo.data_type == t && eo.object != nullptr;
}

}  // namespace

bool takeHistoryPoint(SessionState* session, const ua::ByteString& bytes,
                      HistoryContinuation& out) noexcept {
    return takeContinuation(session, bytes, out);
}

bool keepHistoryPoint(SessionState* session, enc::Arena& arena, std::uint32_t maxPoints,
                      HistoryContinuation&& cp, ua::ByteString& out, uaplex_status& why) noexcept {
    if (session == nullptr) {
        why = UAPLEX_BadNoContinuationPoints;
        return false;
    }
    auto* idBytes = static_cast<std::uint8_t*>(arena.allocate(kCpBytes, 1));
    if (idBytes == nullptr) {
        why = UAPLEX_BadOutOfMemory;
        return false;
    }
    try {
        std::lock_guard sl(session->mutex);
        if (session->historyPoints.size() >= maxPoints) {
            why = UAPLEX_BadNoContinuationPoints;
            return false;
        }
        cp.id = (session->nextContinuationId++) ^ cpSalt();
        std::memcpy(idBytes, &cp.id, kCpBytes);
        session->historyPoints.push_back(std::move(cp));
    } catch (...) {
        why = UAPLEX_BadOutOfMemory;
        return false;
    }
    out = {std::int32_t(kCpBytes), idBytes};
    return true;
}

std::string History::keyOf(const ua::NodeId& id, const std::vector<std::string>& uris) {
    std::string out;
    if (id.namespace_index != 0) {
        out = "nsu=";
        out += id.namespace_index < uris.size() ? uris[id.namespace_index]
                                                : std::to_string(id.namespace_index);
        out += ';';
    }
    switch (id.identifier_type) {
        case UAPLEX_ID_NUMERIC:
            out += "i=" + std::to_string(id.identifier.numeric);
            break;
        case UAPLEX_ID_STRING:
            out += "s=";
            out.append(id.identifier.string.data,
                       std::size_t(std::max(0, id.identifier.string.length)));
            break;
        case UAPLEX_ID_GUID: {
            std::uint8_t b[16];
            std::memcpy(b, &id.identifier.guid, sizeof b);
            out += "g=" + hex(b, sizeof b);
            break;
        }
        default:
            out += "b=" + hex(id.identifier.bytestring.data,
                              std::size_t(std::max(0, id.identifier.bytestring.length)));
            break;
    }
    return out;
}

// The namespace index a configured node names, or -1 (logged when `log`).
static int namespaceOf(const config::PersistentNode& p, const std::vector<std::string>& uris,
                       bool log) {
    if (!p.namespace_uri.empty()) {
        auto it = std::find(uris.begin(), uris.end(), p.namespace_uri);
        if (it == uris.end()) {
            if (log) logger()->warn("history: {}: no such namespace", p.text);
            return -1;
        }
        return int(it - uris.begin());
    }
    if (std::size_t(p.ns) >= uris.size()) {
        if (log) logger()->warn("history: {}: no such namespace", p.text);
        return -1;
    }
    return int(p.ns);
}

std::vector<Node*> History::resolve(const config::HistorySection& cfg, AddressSpace& space,
                                    bool log, const std::function<bool(std::uint16_t)>& owned) {
    const auto& uris = space.namespaces();
    std::vector<Node*> out;
    std::unordered_map<const Node*, bool> seen;
    auto add = [&](Node& n, const std::string& how) {
        if (!seen.emplace(&n, true).second) return;
        if (n.nodeClass != addressspace::kVariable || n.callbacks.readsValue()) {
            // One a node manager serves is recorded from its pushes (resolvePushed).
            if (log && !(n.nodeClass == addressspace::kVariable && n.callbacks.owner != nullptr))
                logger()->warn("history: {} is not a stored Variable: not recorded", how);
            return;
        }
        if (out.size() >= cfg.max_nodes)
            throw std::runtime_error("history: more than max_nodes = " +
                                     std::to_string(cfg.max_nodes) + " recorded nodes");
        n.pinned.store(true, std::memory_order_relaxed);  // its entry is never removed
        out.push_back(&n);
    };
    for (const config::PersistentNode& p : cfg.nodes) {
        const int ns = namespaceOf(p, uris, log);
        if (ns < 0) continue;
        ua::NodeId id = p.is_string ? ua::stringNodeId(std::uint16_t(ns), p.string_id)
                                    : ua::numericNodeId(std::uint16_t(ns), p.numeric);
        Node* n = space.mutableNode(id);
        if (n == nullptr) {
            if (log && !(owned && owned(std::uint16_t(ns))))
                logger()->warn("history: {}: no such node: not recorded", p.text);
            continue;
        }
        add(*n, p.text);
    }
    if (cfg.historizing) {
        std::vector<Node*> nodes;
        space.forEachNode([&](Node& n) {
            if (n.nodeClass == addressspace::kVariable && n.historizing.load()) nodes.push_back(&n);
        });
        for (Node* n : nodes) add(*n, keyOf(n->id, uris));
    }
    return out;
}

std::vector<Node*> History::resolvePushed(const config::HistorySection& cfg, AddressSpace& space,
                                          const std::function<bool(std::uint16_t)>& owned) {
    const auto& uris = space.namespaces();
    std::vector<Node*> served;  // in the store: their access bits are set with the others'
    auto full = [&] {
        if (byNode_.size() + pushed_.size() >= cfg.max_nodes)
            throw std::runtime_error("history: more than max_nodes = " +
                                     std::to_string(cfg.max_nodes) + " recorded nodes");
    };
    // A Variable of the store a node manager's read callback serves.
    auto add = [&](Node& n) {
        if (n.nodeClass != addressspace::kVariable || !n.callbacks.readsValue() ||
            n.callbacks.owner == nullptr || pushed_.count(n.id))
            return;
        full();
        keys_.push_back(std::make_unique<std::string>(keyOf(n.id, uris)));
        pushed_.emplace(n.id, track(keys_.back().get(), nullptr));
        served.push_back(&n);
    };
    // A node of a namespace a node manager owns (not in the store).
    auto addOwned = [&](const ua::NodeId& id, const std::string& how) {
        if (pushed_.count(id)) return;
        full();
        auto text = std::make_unique<std::string>();
        ua::NodeId kept = id;
        if (id.identifier_type == UAPLEX_ID_STRING || id.identifier_type == UAPLEX_ID_BYTESTRING) {
            text->assign(reinterpret_cast<const char*>(id.identifier.string.data),
                         std::size_t(std::max(0, id.identifier.string.length)));
            kept.identifier.string.data =
                reinterpret_cast<decltype(kept.identifier.string.data)>(text->data());
        }
        texts_.push_back(std::move(text));
        keys_.push_back(std::make_unique<std::string>(keyOf(kept, uris)));
        pushed_.emplace(kept, track(keys_.back().get(), nullptr));
        logger()->info(
            "history: {} of an owned namespace: recorded from its node manager's "
            "pushed changes",
            how);
    };
    for (const config::PersistentNode& p : cfg.nodes) {
        const int ns = namespaceOf(p, uris, false);
        if (ns < 0) continue;
        ua::NodeId id = p.is_string ? ua::stringNodeId(std::uint16_t(ns), p.string_id)
                                    : ua::numericNodeId(std::uint16_t(ns), p.numeric);
        if (Node* n = space.mutableNode(id))
            add(*n);
        else if (owned && owned(std::uint16_t(ns)))
            addOwned(id, p.text);
    }
    if (cfg.historizing) {
        std::vector<Node*> nodes;
        space.forEachNode([&](Node& n) {
            if (n.nodeClass == addressspace::kVariable && n.historizing.load()) nodes.push_back(&n);
        });
        for (Node* n : nodes) add(*n);
    }
    return served;
}

History::History(const config::HistorySection& cfg, host::Host& host, AddressSpace& space,
                 std::uint32_t maxPendingReads, const std::vector<Node*>* resolved,
                 const std::function<bool(std::uint16_t)>& owned)
    : maxPending(maxPendingReads),
      cfg_(cfg),
      space_(space),
      minInterval_(ua::DateTime(cfg.min_time_interval_ms * 10000.0)),
      filtering_(cfg.min_time_interval_ms > 0 || cfg.exception_deviation > 0) {
    const auto& uris = space.namespaces();
    std::vector<Node*> nodes = resolved ? *resolved : resolve(cfg, space, true, owned);
    for (Node* n : nodes) {
        keys_.push_back(std::make_unique<std::string>(keyOf(n->id, uris)));
        byNode_.emplace(n, track(keys_.back().get(), n));
    }
    // Variables node managers serve: recorded from the changes they push (value_changed).
    for (Node* n : resolvePushed(cfg, space, owned)) nodes.push_back(n);
    uaplex_history_params params{};
    params.hdr = UAPLEX_HEADER_INIT(uaplex_history_params, UAPLEX_STYPE_HISTORY_PARAMS);
    params.max_values_per_read = cfg.max_values_per_node;
    store_ = host.createHistory(cfg.plugin, params);
    store_->start();
    ops_ = store_->ops<uaplex_history_ops>();
    self_ = store_->self();
    const bool writes = UAPLEX_FIELD_OR(ops_, uaplex_history_ops, update, nullptr) != nullptr ||
                        UAPLEX_FIELD_OR(ops_, uaplex_history_ops, delete_raw, nullptr) != nullptr;
    for (Node* n : nodes) {
        n->accessLevel.fetch_or(std::uint8_t(kHistoryReadBit | (writes ? kHistoryWriteBit : 0)));
        n->historizing = true;
    }
    logger()->info("history: {} node(s) recorded into '{}'", byNode_.size() + pushed_.size(),
                   cfg.plugin);
    if (cfg.max_time_interval_ms > 0 && !byNode_.empty())
        repeater_ = std::thread([this] { repeatLoop(); });
}

History::~History() {
    if (repeater_.joinable()) {
        {
            std::lock_guard lock(repeatMutex_);
            stopping_ = true;
        }
        repeatWake_.notify_all();
        repeater_.join();
    }
    // Completes every pending read (BadServerHalted at the latest) before it returns.
    store_.reset();
}

namespace {

std::int64_t steadyMs() noexcept {
    return std::chrono::duration_cast<std::chrono::milliseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

// The value of a numeric scalar as a double, for ExceptionDeviation.
bool numericValue(const ua::DataValue& v, double& out) noexcept {
    if (!(v.mask & UAPLEX_DATAVALUE_VALUE) || (v.value.encoding & UAPLEX_VARIANT_ARRAY))
        return false;
    const auto& u = v.value.value;
    switch (v.value.encoding & UAPLEX_VARIANT_TYPE_MASK) {
        case UAPLEX_TYPE_SBYTE:
            out = u.sbyte;
            return true;
        case UAPLEX_TYPE_BYTE:
            out = u.byte;
            return true;
        case UAPLEX_TYPE_INT16:
            out = u.int16;
            return true;
        case UAPLEX_TYPE_UINT16:
            out = u.uint16;
            return true;
        case UAPLEX_TYPE_INT32:
            out = u.int32;
            return true;
        case UAPLEX_TYPE_UINT32:
            out = u.uint32;
            return true;
        case UAPLEX_TYPE_INT64:
            out = double(u.int64);
            return true;
        case UAPLEX_TYPE_UINT64:
            out = double(u.uint64);
            return true;
        case UAPLEX_TYPE_FLOAT:
            out = u.float_;
            return true;
        case UAPLEX_TYPE_DOUBLE:
            out = u.double_;
            return true;
        default:
            return false;
    }
}

}  // namespace

History::Recorded* History::track(const std::string* key, const Node* node) {
    recorded_.push_back(std::make_unique<Recorded>());
    Recorded* r = recorded_.back().get();
    r->key = key;
    r->node = node;
    r->recordedMs.store(steadyMs(), std::memory_order_relaxed);
    return r;
}

bool History::admit(Recorded& r, const ua::DataValue& v, ua::DateTime source) noexcept {
    double number = 0;
    const bool numeric = numericValue(v, number);
    const ua::StatusCode status = (v.mask & UAPLEX_DATAVALUE_STATUS) ? v.status : UAPLEX_Good;
    while (r.busy.exchange(true, std::memory_order_acquire)) std::this_thread::yield();
    // MinTimeInterval holds whatever changed (a value older than the last one is kept);
    // ExceptionDeviation (AbsoluteValue) leaves out a numeric change smaller than it with
    // the same status: a change of status or of type always counts.
    const bool tooSoon =
        r.any && minInterval_ > 0 && source >= r.source && source - r.source < minInterval_;
    const bool tooSmall = r.any && cfg_.exception_deviation > 0 && numeric && r.numeric &&
                          status == r.status &&
                          std::abs(number - r.number) < cfg_.exception_deviation;
    const bool keep = !tooSoon && !tooSmall;
    if (keep) {
        r.any = true;
        r.numeric = numeric;
        r.source = source;
        r.number = number;
        r.status = status;
    }
    r.busy.store(false, std::memory_order_release);
    return keep;
}

void History::repeatLoop() {
    const auto interval = std::int64_t(cfg_.max_time_interval_ms);
    const auto period = std::chrono::milliseconds(std::clamp<std::int64_t>(interval / 4, 10, 1000));
    enc::Arena arena(std::size_t(cfg_.max_value_bytes) * 4 + 4096);
    std::unique_lock lock(repeatMutex_);
    while (!repeatWake_.wait_for(lock, period, [this] { return stopping_; })) {
        lock.unlock();
        const std::int64_t now = steadyMs();
        for (const auto& r : recorded_) {
            if (r->node == nullptr ||
                now - r->recordedMs.load(std::memory_order_relaxed) < interval)
                continue;
            // The current value again, as a data point of now (Part 11 5.3.3 MaxTimeInterval).
            ua::DataValue dv{};
            arena.reset();
            if (r->node->value.read(arena, dv) != UAPLEX_Good) continue;
            const ua::DateTime t = ua::utcNow();
            dv.mask = std::uint8_t(
                (dv.mask | UAPLEX_DATAVALUE_SOURCE_TIMESTAMP | UAPLEX_DATAVALUE_SERVER_TIMESTAMP) &
                ~(UAPLEX_DATAVALUE_SOURCE_PICOSECONDS | UAPLEX_DATAVALUE_SERVER_PICOSECONDS));
            dv.source_timestamp = t;
            dv.server_timestamp = t;
            put(*r, dv, true);
            repeated_.fetch_add(1, std::memory_order_relaxed);
        }
        lock.lock();
    }
}

void History::record(const Node& node, const ua::DataValue& v) noexcept {
    auto it = byNode_.find(&node);
    if (it == byNode_.end()) return;
    put(*it->second, v);
}

void History::recordPushed(const ua::NodeId& id, const ua::DataValue& v) noexcept {
    if (pushed_.empty()) return;
    auto it = pushed_.find(id);
    if (it == pushed_.end()) return;
    put(*it->second, v);
}

std::vector<ua::NodeId> History::pushedNodes() const {
    std::vector<ua::NodeId> out;
    out.reserve(pushed_.size());
    for (const auto& [id, key] : pushed_) out.push_back(id);
    return out;
}

void History::put(Recorded& r, const ua::DataValue& v, bool repeat) noexcept {
    const std::string& key = *r.key;
    if (filtering_) {
        const ua::DateTime source =
            (v.mask & UAPLEX_DATAVALUE_SOURCE_TIMESTAMP)   ? v.source_timestamp
            : (v.mask & UAPLEX_DATAVALUE_SERVER_TIMESTAMP) ? v.server_timestamp
                                                           : ua::utcNow();
        if (!admit(r, v, source) && !repeat) {
            filtered_.fetch_add(1, std::memory_order_relaxed);
            return;
        }
    }
    r.recordedMs.store(steadyMs(), std::memory_order_relaxed);
    thread_local enc::ByteBuffer buf;
    buf.clear();
    if ((v.mask & UAPLEX_DATAVALUE_VALUE) &&
        enc::encodeValue(buf, variantCodec(), &v.value, std::size_t(cfg_.max_value_bytes) + 1) !=
            UAPLEX_Good) {
        dropped_.fetch_add(1, std::memory_order_relaxed);
        return;
    }
    if (buf.size() > cfg_.max_value_bytes) {
        dropped_.fetch_add(1, std::memory_order_relaxed);
        return;
    }
    const ua::DateTime now = ua::utcNow();
    uaplex_history_value hv{};
    hv.hdr = UAPLEX_HEADER_INIT(uaplex_history_value, UAPLEX_STYPE_HISTORY_VALUE);
    hv.node_key = {key.data(), key.size()};
    hv.server_timestamp = (v.mask & UAPLEX_DATAVALUE_SERVER_TIMESTAMP) ? v.server_timestamp : now;
    hv.source_timestamp =
        (v.mask & UAPLEX_DATAVALUE_SOURCE_TIMESTAMP) ? v.source_timestamp : hv.server_timestamp;
    hv.status = (v.mask & UAPLEX_DATAVALUE_STATUS) ? v.status : UAPLEX_Good;
    hv.source_picoseconds =
        (v.mask & UAPLEX_DATAVALUE_SOURCE_PICOSECONDS) ? v.source_picoseconds : 0;
    hv.server_picoseconds =
        (v.mask & UAPLEX_DATAVALUE_SERVER_PICOSECONDS) ? v.server_picoseconds : 0;
    hv.value = {buf.data(), buf.size()};
    size_t accepted = 0;
    if (ops_->store(self_, 1, &hv, &accepted) != UAPLEX_Good || accepted != 1)
        dropped_.fetch_add(1, std::memory_order_relaxed);
}

uaplex_status History::read(ServiceCall& call) noexcept {
    const auto& req = *static_cast<const ua::HistoryReadRequest*>(call.request);
    const auto ts = static_cast<std::int32_t>(req.timestampsToReturn);
    // Part 11 6.4.1: Neither is not a HistoryRead choice.
    if (ts < 0 || ts > 2) return UAPLEX_BadTimestampsToReturnInvalid;
    const std::size_t n = req.nodesToRead.size();
    if (n == 0) return UAPLEX_BadNothingToDo;
    if (n > cfg_.max_nodes_per_read) return UAPLEX_BadTooManyOperations;

    const auto& eo = req.historyReadDetails;
    if (isDetails(eo, enc::dataTypeOf<ua::ReadEventDetails>())) return readEvents(call);
    const ua::ReadRawModifiedDetails* raw = nullptr;
    const ua::ReadProcessedDetails* processed = nullptr;
    const ua::ReadAtTimeDetails* atTime = nullptr;
    if (isDetails(eo, enc::dataTypeOf<ua::ReadRawModifiedDetails>())) {
        raw = static_cast<const ua::ReadRawModifiedDetails*>(eo.object);
    } else if (isDetails(eo, enc::dataTypeOf<ua::ReadProcessedDetails>())) {
        processed = static_cast<const ua::ReadProcessedDetails*>(eo.object);
    } else if (isDetails(eo, enc::dataTypeOf<ua::ReadAtTimeDetails>())) {
        atTime = static_cast<const ua::ReadAtTimeDetails*>(eo.object);
        if (atTime->reqTimes.size() > cfg_.max_req_times) return UAPLEX_BadTooManyOperations;
    } else if (!isDetails(eo, enc::dataTypeOf<ua::ReadAnnotationDataDetails>())) {
        return UAPLEX_BadHistoryOperationInvalid;
    }
    const bool derived = processed != nullptr || atTime != nullptr;
    // Processed and at-time reads: each node's aggregate, its interval count and the digest
    // its continuation points carry.
    std::vector<aggregates::AggregateFunction> functions(processed ? n : 0);
    std::vector<std::size_t> totals(derived ? n : 0);
    std::vector<std::uint64_t> digests(derived ? n : 0);
    aggregates::ProcessedRequest rq;
    rq.endOfData = ua::utcNow();  // recorded values hold until now
    std::uint64_t timesDigest = kFnvBasis;
    if (processed) {
        rq.startTime = processed->startTime;
        rq.endTime = processed->endTime;
        rq.processingIntervalMs = processed->processingInterval;
        // The variables' HistoricalDataConfiguration ([history]) is the server's default.
        const aggregates::AggregateConfiguration defaults{
            cfg_.treat_uncertain_as_bad, std::uint8_t(cfg_.percent_data_bad),
            std::uint8_t(cfg_.percent_data_good), cfg_.use_sloped_extrapolation};
        rq.configuration =
            aggregates::effectiveConfiguration(processed->aggregateConfiguration, defaults);
        rq.stepped = cfg_.stepped;
    }
    if (atTime) {
        for (std::int32_t i = 0; i < atTime->reqTimes.length; ++i)
            timesDigest = fnv(timesDigest, &atTime->reqTimes.data[i], sizeof(ua::DateTime));
        timesDigest = fnv(timesDigest, &atTime->useSimpleBounds, 1);
    }

    // What each node gets without the store: a status, or a part.
    std::vector<uaplex_status> statuses(n, UAPLEX_Good);
    std::vector<std::size_t> partOf(n, SIZE_MAX);
    std::vector<HistoryContinuation> cps(n);
    std::size_t partCount = 0;
    std::int64_t start = 0, end = 0;
    std::uint32_t flags = 0, perNode = cfg_.max_values_per_node;
    uaplex_status domain = UAPLEX_Good;
    bool single = false;
    if (processed) {
        // Part 11 6.5.4: one aggregate per node.
        if (processed->aggregateType.size() != n) domain = UAPLEX_BadAggregateListMismatch;
    } else if (atTime) {
        if (atTime->reqTimes.size() == 0) domain = UAPLEX_BadInvalidTimestampArgument;
    } else if (raw == nullptr || raw->isReadModified) {
        domain = UAPLEX_BadHistoryOperationUnsupported;
    } else {
        const bool s = raw->startTime != 0, e = raw->endTime != 0;
        const std::uint32_t nv = raw->numValuesPerNode;
        if (nv != 0) perNode = std::min(perNode, nv);
        if (s && e) {
            start = raw->startTime;
            end = raw->endTime;
            if (raw->returnBounds) flags |= UAPLEX_HISTORY_READ_BOUNDS;
        } else if (s && nv != 0) {
            start = raw->startTime;
            end = UAPLEX_HISTORY_TIME_MAX;
            single = nv <= cfg_.max_values_per_node;
        } else if (e && nv != 0) {
            start = raw->endTime;  // backward from endTime
            end = UAPLEX_HISTORY_TIME_MIN;
            single = nv <= cfg_.max_values_per_node;
        } else {
            domain = UAPLEX_BadInvalidTimestampArgument;
        }
    }
    for (std::size_t i = 0; i < n; ++i) {
        const ua::HistoryReadValueId& item = req.nodesToRead[i];
        if (req.releaseContinuationPoints) {
            if (item.continuationPoint.length > 0 &&
                !takeContinuation(call.session, item.continuationPoint, cps[i]))
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
        // A recorded node of an owned namespace: its node manager serves its attributes.
        const bool owned = !ref && !pushed_.empty() && pushed_.count(item.nodeId) != 0;
        if ((!ref && !owned) || !(perms & session::kPermBrowse)) {
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
        const Node* node = ref.dyn;
        if (!owned && (node == nullptr || node->nodeClass != addressspace::kVariable ||
                       !(node->accessLevel.load() & kHistoryReadBit))) {
            statuses[i] = UAPLEX_BadNotReadable;
            continue;
        }
        if (!(perms & session::kPermReadHistory) ||
            (!owned && !(node->userAccessLevel.load() & kHistoryReadBit))) {
            statuses[i] = UAPLEX_BadUserAccessDenied;
            continue;
        }
        if (processed) {
            const auto f = aggregates::aggregateFromNodeId(processed->aggregateType.data[i]);
            if (!f) {
                statuses[i] = UAPLEX_BadAggregateNotSupported;
                continue;
            }
            if (aggregates::checkConfiguration(rq.configuration) != UAPLEX_Good) {
                statuses[i] = UAPLEX_BadAggregateConfigurationRejected;
                continue;
            }
            if (const uaplex_status st = aggregates::intervalCount(
                    rq, std::numeric_limits<std::size_t>::max(), totals[i]);
                st != UAPLEX_Good) {
                statuses[i] = st;  // startTime == endTime, an interval that is no duration
                continue;
            }
            functions[i] = *f;
            std::uint64_t h = kFnvBasis;
            const std::uint32_t id = aggregates::aggregateNodeId(*f);
            h = fnv(h, &id, sizeof id);
            h = fnv(h, &rq.processingIntervalMs, sizeof rq.processingIntervalMs);
            const std::uint8_t c[4] = {
                rq.configuration.treatUncertainAsBad, rq.configuration.percentDataBad,
                rq.configuration.percentDataGood, rq.configuration.useSlopedExtrapolation};
            digests[i] = fnv(h, c, sizeof c);
        } else if (atTime) {
            totals[i] = atTime->reqTimes.size();
            digests[i] = timesDigest;
        }
        if (item.continuationPoint.length > 0) {
            if (!takeContinuation(call.session, item.continuationPoint, cps[i])) {
                statuses[i] = UAPLEX_BadContinuationPointInvalid;
                continue;
            }
        }
        partOf[i] = partCount++;
    }

    auto* resp = call.arena.allocateArray<ua::HistoryReadResponse>(1);
    if (resp == nullptr) return UAPLEX_BadOutOfMemory;
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

    // The store's reads: parked while they run, or waited for when the request cannot park.
    std::unique_ptr<PendingRead> p;
    try {
        p = std::make_unique<PendingRead>(*this, call.session, ts, partCount);
    } catch (...) {
        return UAPLEX_BadOutOfMemory;
    }
    if (call.ctx != nullptr && call.ctx->defer != nullptr)
        p->deferred = call.ctx->defer(call.ctx->deferUser, call.returnDiagnostics);
    if (!p->deferred) p->arena = &call.arena;
    p->single = single;
    try {
        if (atTime)
            p->times.assign(atTime->reqTimes.data, atTime->reqTimes.data + atTime->reqTimes.size());
    } catch (...) {
        if (p->deferred) p->deferred->answer(UAPLEX_BadOutOfMemory, nullptr, nullptr, *p->arena);
        return p->deferred ? UAPLEX_GoodCompletesAsynchronously : UAPLEX_BadOutOfMemory;
    }
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
            Part& part = p->parts[partOf[i]];
            part.index = std::uint32_t(i);
            part.key = keyOf(req.nodesToRead[i].nodeId, space_.namespaces());
            const HistoryContinuation& cp = cps[i];
            if (!derived) {
                part.cpStart = start;
                part.cpEnd = end;
                part.cpFlags = flags;
            } else if (processed) {
                part.cpStart = processed->startTime;
                part.cpEnd = processed->endTime;
                part.cpFlags = kProcessedPoint;
                part.digest = digests[i];
            } else {
                part.cpStart = 0;
                part.cpEnd = std::int64_t(totals[i]);
                part.cpFlags = kAtTimePoint | (atTime->useSimpleBounds ? 1u : 0u);
                part.digest = digests[i];
            }
            std::size_t first = 0;
            if (cp.id != 0) {
                // A continuation is only good for the read it came from.
                bool ok = cp.key == part.key && cp.start == part.cpStart && cp.end == part.cpEnd &&
                          cp.flags == part.cpFlags;
                if (ok && derived) {
                    std::uint64_t digest = 0, next = 0;
                    ok = cp.cursor.size() == kDerivedCursor;
                    if (ok) {
                        std::memcpy(&digest, cp.cursor.data(), 8);
                        std::memcpy(&next, cp.cursor.data() + 8, 8);
                        ok = digest == part.digest && next > 0 && next < totals[i];
                        first = std::size_t(next);
                    }
                }
                if (!ok) {
                    p->results[i].statusCode = UAPLEX_BadContinuationPointInvalid;
                    part.done = true;
                    continue;
                }
                if (!derived) part.cursor = cp.cursor;
            }
            DerivedRead::Limits limits;
            limits.pageValues = std::min(cfg_.max_values_per_node, cfg_.max_processed_values);
            limits.maxRawValues = cfg_.max_processed_values;
            if (processed) {
                limits.maxResults = cfg_.max_intervals_per_node;
                part.derived =
                    std::make_unique<DerivedRead>(functions[i], rq, totals[i], first, limits);
            } else if (atTime) {
                limits.maxResults = cfg_.max_values_per_node;
                part.derived =
                    std::make_unique<DerivedRead>(std::span<const ua::DateTime>(p->times),
                                                  atTime->useSimpleBounds, rq, first, limits);
            }
        }
    } catch (...) {
        if (p->deferred) p->deferred->answer(UAPLEX_BadOutOfMemory, nullptr, nullptr, *p->arena);
        return p->deferred ? UAPLEX_GoodCompletesAsynchronously : UAPLEX_BadOutOfMemory;
    }
    PendingRead* raw_p = p.release();
    raw_p->outstanding.store(std::uint32_t(partCount) + 1, std::memory_order_relaxed);
    for (std::size_t k = 0; k < raw_p->parts.size(); ++k) {
        Part& part = raw_p->parts[k];
        if (part.done.load()) {
            raw_p->release();
            continue;
        }
        part.read.hdr = UAPLEX_HEADER_INIT(uaplex_history_read, UAPLEX_STYPE_HISTORY_READ);
        part.read.flags = flags;
        part.read.max_values = perNode;
        part.read.node_key = {part.key.data(), part.key.size()};
        part.read.start_time = start;
        part.read.end_time = end;
        part.read.continuation = {part.cursor.data(), part.cursor.size()};
        part.read.alloc = &raw_p->alloc;
        part.completion.hdr = UAPLEX_HEADER_INIT(uaplex_completion, UAPLEX_STYPE_COMPLETION);
        part.completion.self = raw_p;
        part.completion.token = k;
        part.completion.complete = &PendingRead::complete;
        part.completion.status = &PendingRead::status;
        const uaplex_status st = raw_p->issue(part);
        if (st == UAPLEX_GoodCompletesAsynchronously) continue;
        if (part.derived) {
            raw_p->advance(part, st);
        } else {
            raw_p->finishPart(part, st);
            raw_p->release();
        }
    }
    if (raw_p->deferred) {
        raw_p->release();
        return UAPLEX_GoodCompletesAsynchronously;
    }
    {
        std::unique_lock lock(raw_p->mutex);
        raw_p->outstanding.fetch_sub(1, std::memory_order_acq_rel) == 1
            ? void(raw_p->finished = true)
            : raw_p->cv.wait(lock, [&] { return raw_p->finished; });
    }
    delete raw_p;
    call.response = resp;
    return UAPLEX_Good;
}

void ServiceSet::Impl::record(const Node& n, const ua::DataValue& v) noexcept {
    if (History* h = recording.load(std::memory_order_acquire)) h->record(n, v);
}

void ServiceSet::Impl::recordPushed(const ua::NodeId& id, const ua::DataValue& v) noexcept {
    if (History* h = recording.load(std::memory_order_acquire)) h->recordPushed(id, v);
}

uaplex_status ServiceSet::Impl::historyRead(ServiceCall& call) noexcept {
    History* h = history.get();
    if (h == nullptr) return UAPLEX_BadServiceUnsupported;
    return h->read(call);
}

}  // namespace uaplex::services
