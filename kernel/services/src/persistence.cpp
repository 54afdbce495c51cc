// SPDX-License-Identifier: Apache-2.0
// Persistent stored values: the database, the restore at start and the commit thread
// (persistence.hpp).
#include "persistence.hpp"

#include <sqlite3.h>

#include <algorithm>
#include <bit>
#include <chrono>
#include <stdexcept>

#include <uaplex/host/logging.hpp>

#include "async_operations.hpp"

namespace uaplex::services {

using host::logger;

namespace {

// Rows of one start that are logged one by one; the rest are counted.
constexpr int kRowLogLines = 20;
// After a failed transaction the marked nodes are tried again this much later.
constexpr auto kRetryDelay = std::chrono::milliseconds(500);

const enc::DataType& nodeIdType() noexcept {
    static const enc::DataType* t = enc::findDataType("NodeId");
    return *t;
}
const enc::DataType& dataValueType() noexcept {
    static const enc::DataType* t = enc::findDataType("DataValue");
    return *t;
}

std::size_t ringSize(std::size_t n) {
    return std::bit_ceil(std::max<std::size_t>(n, 2));
}

std::string idText(const ua::NodeId& id) {
    switch (id.identifier_type) {
        case UAPLEX_ID_NUMERIC:
            return "i=" + std::to_string(id.identifier.numeric);
        case UAPLEX_ID_STRING:
            return "s=" + std::string(id.identifier.string.data,
                                      std::size_t(std::max(0, id.identifier.string.length)));
        case UAPLEX_ID_GUID:
            return "g=<guid>";
        default:
            return "b=<bytes>";
    }
}

}  // namespace

Persistence::Persistence(const config::PersistenceSection& cfg, AddressSpace& space,
                         CompletionTable& completions, Fits fits, std::uint32_t pending)
    : space_(space),
      completions_(completions),
      fits_(std::move(fits)),
      file_(cfg.file.string()),
      maxValueBytes_(cfg.max_value_bytes) {
    resolve(cfg);
    jobs_ = std::make_unique<sdk::MpmcRing<AsyncPart*>>(ringSize(pending));
    marks_ = std::make_unique<sdk::MpmcRing<Entry*>>(ringSize(entries_.size()));
    try {
        open(cfg);
        restore();
    } catch (...) {
        if (upsert_) sqlite3_finalize(upsert_);
        if (db_) sqlite3_close(db_);
        throw;
    }
    logger()->info("persistence: {} node(s) persistent in {} (synchronous {})", entries_.size(),
                   file_, cfg.synchronous_full ? "full" : "normal");
    thread_ = std::thread([this] { run(); });
}

Persistence::~Persistence() {
    // What is queued is still committed and answered; then the database is closed.
    stop_.store(true, std::memory_order_release);
    wake();
    if (thread_.joinable()) thread_.join();
    if (upsert_) sqlite3_finalize(upsert_);
    if (db_) sqlite3_close(db_);
}

void Persistence::resolve(const config::PersistenceSection& cfg) {
    AddressSpace& space = space_;
    const auto& uris = space.namespaces();
    auto add = [&](Node& n, const std::string& how) {
        n.pinned.store(true, std::memory_order_relaxed);  // its entry is never removed
        if (byNode_.count(&n)) return;
        auto e = std::make_unique<Entry>();
        e->node = &n;
        e->uri = uris[n.id.namespace_index];
        e->label = "nsu=" + e->uri + ";" + idText(n.id);
        if (n.nodeClass != addressspace::kVariable || n.callbacks.read || n.callbacks.write ||
            n.callbacks.readAsync || n.callbacks.writeAsync) {
            logger()->warn("persistence: {} ({}) is not a stored Variable: not persistent",
                           e->label, how);
            return;
        }
        if (entries_.size() >= cfg.max_nodes)
            throw std::runtime_error("persistence: more than max_nodes = " +
                                     std::to_string(cfg.max_nodes) + " persistent nodes");
        ua::NodeId key = n.id;
        key.namespace_index = 0;
        enc::ByteBuffer buf;
        if (enc::encodeValue(buf, nodeIdType(), &key) != UAPLEX_Good)
            throw std::runtime_error("persistence: cannot encode the NodeId of " + e->label);
        e->id = buf.toVector();
        byNode_.emplace(&n, e.get());
        entries_.push_back(std::move(e));
    };
    for (const config::PersistentNode& p : cfg.nodes) {
        std::size_t ns = 0;
        if (!p.namespace_uri.empty()) {
            auto it = std::find(uris.begin(), uris.end(), p.namespace_uri);
            if (it == uris.end()) {
                logger()->warn("persistence: {}: no such namespace", p.text);
                continue;
            }
            ns = std::size_t(it - uris.begin());
        } else {
            ns = std::size_t(p.ns);
            if (ns >= uris.size()) {
                logger()->warn("persistence: {}: no such namespace", p.text);
                continue;
            }
        }
        ua::NodeId id = p.is_string ? ua::stringNodeId(std::uint16_t(ns), p.string_id)
                                    : ua::numericNodeId(std::uint16_t(ns), p.numeric);
        Node* n = space.mutableNode(id);
        if (n == nullptr) {
            logger()->warn("persistence: {}: no such node: not persistent", p.text);
            continue;
        }
        add(*n, p.text);
    }
    for (const std::string& uri : cfg.namespaces) {
        auto it = std::find(uris.begin(), uris.end(), uri);
        if (it == uris.end()) {
            logger()->warn("persistence: namespace {} does not exist", uri);
            continue;
        }
        const auto ns = std::uint16_t(it - uris.begin());
        std::vector<Node*> nodes;
        space.forEachNode([&](Node& n) {
            if (n.id.namespace_index == ns && n.nodeClass == addressspace::kVariable &&
                !n.callbacks.readsValue() && !n.callbacks.write && !n.callbacks.writeAsync)
                nodes.push_back(&n);
        });
        for (Node* n : nodes) add(*n, "namespace " + uri);
    }
}

bool Persistence::exec(const char* sql) noexcept {
    return sqlite3_exec(db_, sql, nullptr, nullptr, nullptr) == SQLITE_OK;
}

void Persistence::open(const config::PersistenceSection& cfg) {
    auto failed = [&](const std::string& what) {
        std::string msg = db_ ? sqlite3_errmsg(db_) : "out of memory";
        throw std::runtime_error("persistence: " + file_ + ": " + what + ": " + msg +
                                 " (the server does not start without its persisted values; "
                                 "move the file away to start without them)");
    };
    if (sqlite3_open_v2(file_.c_str(), &db_,
                        SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
                        nullptr) != SQLITE_OK)
        failed("cannot open");
    // One server per database: a second one finds it locked and does not start.
    if (!exec("PRAGMA locking_mode=EXCLUSIVE")) failed("cannot lock");
    sqlite3_stmt* st = nullptr;
    auto unreadable = [&] {
        const int code = sqlite3_errcode(db_) & 0xFF;
        failed(code == SQLITE_BUSY || code == SQLITE_LOCKED ? "in use by another process"
               : code == SQLITE_NOTADB                      ? "not an SQLite database"
                                                            : "cannot read");
    };
    if (sqlite3_prepare_v2(db_, "PRAGMA journal_mode=WAL", -1, &st, nullptr) != SQLITE_OK)
        unreadable();
    int rc = sqlite3_step(st);
    std::string mode =
        rc == SQLITE_ROW ? reinterpret_cast<const char*>(sqlite3_column_text(st, 0)) : "";
    sqlite3_finalize(st);
    if (rc != SQLITE_ROW) unreadable();
    if (mode != "wal") failed("cannot switch to WAL mode (" + mode + ")");
    if (!exec(cfg.synchronous_full ? "PRAGMA synchronous=FULL" : "PRAGMA synchronous=NORMAL"))
        failed("cannot set synchronous");
    // The integrity of the file before anything of it is trusted.
    if (sqlite3_prepare_v2(db_, "PRAGMA quick_check", -1, &st, nullptr) != SQLITE_OK)
        failed("integrity check");
    rc = sqlite3_step(st);
    std::string check =
        rc == SQLITE_ROW ? reinterpret_cast<const char*>(sqlite3_column_text(st, 0)) : "";
    sqlite3_finalize(st);
    if (check != "ok") failed("integrity check failed (" + check.substr(0, 200) + ")");
    if (!exec("CREATE TABLE IF NOT EXISTS persisted_values(ns_uri TEXT NOT NULL, "
              "node_id BLOB NOT NULL, value BLOB NOT NULL, PRIMARY KEY(ns_uri, node_id)) "
              "WITHOUT ROWID"))
        failed("cannot create the table");
    if (sqlite3_prepare_v2(db_,
                           "INSERT OR REPLACE INTO persisted_values(ns_uri, node_id, value) "
                           "VALUES(?, ?, ?)",
                           -1, &upsert_, nullptr) != SQLITE_OK)
        failed("unexpected table layout");
}

void Persistence::restore() {
    std::unordered_map<std::string, Entry*> byKey;
    for (auto& e : entries_) {
        std::string key = e->uri;
        key.push_back('\0');
        key.append(e->id.begin(), e->id.end());
        byKey.emplace(std::move(key), e.get());
    }
    sqlite3_stmt* st = nullptr;
    if (sqlite3_prepare_v2(db_, "SELECT ns_uri, node_id, value FROM persisted_values", -1, &st,
                           nullptr) != SQLITE_OK)
        throw std::runtime_error("persistence: " + file_ +
                                 ": unexpected table layout: " + sqlite3_errmsg(db_));
    int logged = 0;
    std::size_t restored = 0, skipped = 0;
    auto skip = [&](const std::string& what) {
        ++skipped;
        if (logged++ < kRowLogLines) logger()->warn("persistence: {}: skipped (kept)", what);
    };
    enc::Arena arena;
    enc::DecodeLimits limits;
    limits.maxMessageSize = maxValueBytes_;
    limits.maxArenaBytes = std::size_t(maxValueBytes_) * 16 + 65536;
    const ua::DateTime now = ua::utcNow();
    int rc = 0;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        arena.reset();
        const auto* uriText = sqlite3_column_text(st, 0);
        std::string uri = uriText ? reinterpret_cast<const char*>(uriText) : "";
        uri = uri.substr(0, 512);
        const void* idBlob = sqlite3_column_blob(st, 1);
        int idLen = sqlite3_column_bytes(st, 1);
        std::string key = uri;
        key.push_back('\0');
        if (idBlob && idLen > 0 && idLen <= 8192)
            key.append(static_cast<const char*>(idBlob), std::size_t(idLen));
        std::string label = "row of namespace " + uri;
        void* idObj = nullptr;
        if (idBlob && idLen > 0 && idLen <= 8192 &&
            enc::decodeValue({static_cast<const std::uint8_t*>(idBlob), std::size_t(idLen)}, arena,
                             limits, nodeIdType(), &idObj) == UAPLEX_Good)
            label = "nsu=" + uri + ";" + idText(*static_cast<const ua::NodeId*>(idObj));
        auto it = byKey.find(key);
        if (it == byKey.end()) {
            skip(label + " is not a persistent node (no such node, or not configured)");
            continue;
        }
        Entry& e = *it->second;
        const void* blob = sqlite3_column_blob(st, 2);
        int len = sqlite3_column_bytes(st, 2);
        if (blob == nullptr || len <= 0 || std::uint32_t(len) > maxValueBytes_) {
            skip(e.label + ": the value is empty or over max_value_bytes");
            continue;
        }
        void* obj = nullptr;
        if (enc::decodeValue({static_cast<const std::uint8_t*>(blob), std::size_t(len)}, arena,
                             limits, dataValueType(), &obj) != UAPLEX_Good) {
            skip(e.label + ": the value does not decode");
            continue;
        }
        ua::DataValue dv = *static_cast<const ua::DataValue*>(obj);
        Node& n = *e.node;
        if (!(dv.mask & UAPLEX_DATAVALUE_VALUE) || !fits_(n, dv.value)) {
            skip(e.label + ": the value does not match the node's DataType or ValueRank");
            continue;
        }
        dv.mask |= UAPLEX_DATAVALUE_SERVER_TIMESTAMP;
        dv.server_timestamp = now;
        if (n.value.store(dv) != UAPLEX_Good) {
            skip(e.label + ": cannot be stored");
            continue;
        }
        ++restored;
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE)
        throw std::runtime_error("persistence: " + file_ +
                                 ": cannot read the values: " + sqlite3_errmsg(db_));
    if (logged > kRowLogLines)
        logger()->warn("persistence: {} more skipped rows not logged", logged - kRowLogLines);
    logger()->info("persistence: {} value(s) restored, {} row(s) skipped", restored, skipped);
}

bool Persistence::submit(AsyncPart* part) noexcept {
    if (!jobs_->push(part)) return false;
    wake();
    return true;
}

void Persistence::mark(Entry& e) noexcept {
    if (e.marked.exchange(true, std::memory_order_acq_rel)) return;  // queued already
    marks_->push(&e);                                                // room for every entry
    wake();
}

bool Persistence::upsert(const Entry& e, const ua::DataValue& dv, enc::ByteBuffer& buf,
                         uaplex_status& status) noexcept {
    buf.clear();
    ua::DataValue v = dv;
    v.mask &= ~UAPLEX_DATAVALUE_SERVER_TIMESTAMP;  // set again when restored
    v.server_timestamp = 0;
    uaplex_status st = enc::encodeValue(buf, dataValueType(), &v, std::size_t(maxValueBytes_) + 1);
    if (st != UAPLEX_Good || buf.size() > maxValueBytes_) {
        status = UAPLEX_BadEncodingLimitsExceeded;
        return true;  // nothing written for it; the transaction goes on
    }
    sqlite3_reset(upsert_);
    sqlite3_bind_text(upsert_, 1, e.uri.data(), int(e.uri.size()), SQLITE_STATIC);
    sqlite3_bind_blob(upsert_, 2, e.id.data(), int(e.id.size()), SQLITE_STATIC);
    sqlite3_bind_blob(upsert_, 3, buf.data(), int(buf.size()), SQLITE_STATIC);
    int rc = sqlite3_step(upsert_);
    sqlite3_reset(upsert_);
    status = UAPLEX_Good;
    return rc == SQLITE_DONE;
}

bool Persistence::commit(std::vector<AsyncPart*>& jobs, std::vector<Entry*>& marked,
                         std::vector<uaplex_status>& statuses) noexcept {
    thread_local enc::Arena arena;
    thread_local enc::ByteBuffer buf;
    arena.reset();
    if (!exec("BEGIN IMMEDIATE")) return false;
    bool ok = true;
    // The marked nodes first: a write of the same transaction replaces their row, as it
    // replaces their value in memory after the commit.
    for (Entry* e : marked) {
        if (!ok) break;
        e->marked.store(false, std::memory_order_release);  // a later value_set marks again
        ua::DataValue dv{};
        if (e->node->value.read(arena, dv) != UAPLEX_Good) continue;
        uaplex_status st = UAPLEX_Good;
        ok = upsert(*e, dv, buf, st);
        if (st != UAPLEX_Good)
            logger()->warn("persistence: {}: the value set is over max_value_bytes: not stored",
                           e->label);
    }
    for (std::size_t i = 0; i < jobs.size() && ok; ++i) {
        Entry* e = entryOf(jobs[i]->node);
        ok = e != nullptr && upsert(*e, jobs[i]->value, buf, statuses[i]);
    }
    if (ok && exec("COMMIT")) return true;
    exec("ROLLBACK");
    return false;
}

void Persistence::run() noexcept {
    std::vector<AsyncPart*> jobs;
    std::vector<Entry*> marked;
    std::vector<uaplex_status> statuses;
    std::vector<uaplex_completion> completions;
    bool reported = false;
    for (;;) {
        const std::uint32_t seen = seq_.load(std::memory_order_acquire);
        const bool stopping = stop_.load(std::memory_order_acquire);
        try {
            while (AsyncPart* p = jobs_->pop()) jobs.push_back(p);
            while (Entry* e = marks_->pop()) marked.push_back(e);
            statuses.assign(jobs.size(), UAPLEX_Good);
        } catch (...) {
            // Out of memory: what was taken is answered below as a failed transaction.
        }
        if (jobs.empty() && marked.empty()) {
            if (stopping) return;
            seq_.wait(seen, std::memory_order_acquire);
            continue;
        }
        statuses.resize(jobs.size(), UAPLEX_Good);
        bool ok = commit(jobs, marked, statuses);
        if (!ok) {
            if (!reported)
                logger()->error(
                    "persistence: {}: a transaction failed: {} (writes answered "
                    "BadResourceUnavailable, values unchanged)",
                    file_, db_ ? sqlite3_errmsg(db_) : "");
            reported = true;
            for (auto& s : statuses) s = UAPLEX_BadResourceUnavailable;
        } else {
            reported = false;
        }
        // Committed (or not): the operations complete in queue order, which stores the
        // written values in memory in the order they were committed.
        for (std::size_t i = 0; i < jobs.size(); ++i) {
            uaplex_completion c = jobs[i]->completion;  // the record may go once completed
            completions_.completeNow(c, statuses[i]);
        }
        jobs.clear();
        if (!ok && !marked.empty()) {
            // Their values are in memory only: tried again later (not when stopping).
            for (Entry* e : marked) {
                e->marked.store(false, std::memory_order_release);
                mark(*e);
            }
            marked.clear();
            if (stopping) return;
            auto until = std::chrono::steady_clock::now() + kRetryDelay;
            while (!stop_.load() && std::chrono::steady_clock::now() < until)
                std::this_thread::sleep_for(std::chrono::milliseconds(20));
            continue;
        }
        marked.clear();
    }
}

}  // namespace uaplex::services
