// SPDX-License-Identifier: Apache-2.0
// History store on one SQLite database file (WAL). One thread of its own owns the
// connection: it writes the queued values in batches, one transaction each, and runs the
// reads, updates and deletes in the order they came, each after the values queued before it,
// then applies retention by age and by size. The kernel's threads only copy values into a
// bounded queue (store) or post an operation; a full queue drops and counts, never waits.
#include <sqlite3.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <thread>
#include <tuple>
#include <unordered_map>
#include <vector>

#include <uaplex/types.h>
#include <uaplex/cpp/clock.hpp>
#include <uaplex/cpp/kinds.hpp>

#include "queued_history_store.hpp"

namespace {

using uaplex::sdk::Context;

using uaplex::history_store::kTicksPerSecond;
using uaplex::history_store::setting;
using uaplex::history_store::Slot;
// The continuation of a raw read ('H') and of an event read ('E').
using Cursor = uaplex::history_store::Cursor<0x48>;
using EventCursor = uaplex::history_store::Cursor<0x45>;

class Statement {
  public:
    Statement() = default;
    Statement(sqlite3* db, const char* sql) {
        if (sqlite3_prepare_v3(db, sql, -1, SQLITE_PREPARE_PERSISTENT, &s_, nullptr) != SQLITE_OK)
            throw uaplex::sdk::StatusError(UAPLEX_BadInternalError,
                                           std::string("sqlite prepare: ") + sqlite3_errmsg(db));
    }
    Statement(const Statement&) = delete;
    Statement& operator=(const Statement&) = delete;
    Statement(Statement&& o) noexcept : s_(std::exchange(o.s_, nullptr)) {}
    Statement& operator=(Statement&& o) noexcept {
        std::swap(s_, o.s_);
        return *this;
    }
    ~Statement() { sqlite3_finalize(s_); }
    sqlite3_stmt* get() const noexcept { return s_; }
    sqlite3_stmt* reset() const noexcept {
        sqlite3_reset(s_);
        sqlite3_clear_bindings(s_);
        return s_;
    }

  private:
    sqlite3_stmt* s_ = nullptr;
};

class SqliteHistory final : public uaplex::history_store::QueuedHistoryStore {
  public:
    SqliteHistory(Context ctx, const uaplex_history_params& params)
        : QueuedHistoryStore(ctx, params, 1024),
          path_(ctx.config_string("path").value_or("uaplex-history.db")),
          max_age_s_(setting(ctx, "retention_max_age_s", 30 * 86400, 0, int64_t(1) << 40)),
          max_bytes_(setting(ctx, "retention_max_bytes", int64_t(1) << 30, 0, int64_t(1) << 50)),
          retention_s_(setting(ctx, "retention_interval_s", 60, 1, 86400)),
          cache_kib_(setting(ctx, "cache_size_kib", 2048, 64, 1 << 20)) {
        ring_.resize(capacity_);
        ctx.check_known_keys({"path", "queue_capacity", "batch_size", "flush_interval_ms",
                              "max_value_bytes", "max_key_bytes", "max_pending_operations",
                              "max_event_bytes", "queue_retained_slots", "retention_max_age_s",
                              "retention_max_bytes", "retention_interval_s", "cache_size_kib"});
        if (path_.empty())
            throw uaplex::sdk::StatusError(UAPLEX_BadConfigurationError, "path is empty");
        registerQueueMetrics();
        metric("retention_deleted", UAPLEX_METRIC_COUNTER, &m_retired_);
        metric("cache_bytes", UAPLEX_METRIC_GAUGE, &m_cache_bytes_);
        batch_slots_.resize(batch_);
        order_.reserve(batch_);
    }
    ~SqliteHistory() override { close(); }

    uaplex_status start() override {
        open();
        startThread();
        return UAPLEX_Good;
    }

    uaplex_status stop() override {
        if (stopThread()) close();
        return UAPLEX_Good;
    }

  private:
    // --- the store's thread --------------------------------------------------------------

    void open() {
        if (sqlite3_open_v2(path_.c_str(), &db_,
                            SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
                            nullptr) != SQLITE_OK) {
            std::string why = db_ ? sqlite3_errmsg(db_) : "out of memory";
            close();
            throw uaplex::sdk::StatusError(UAPLEX_BadConfigurationError,
                                           "cannot open " + path_ + ": " + why);
        }
        sqlite3_busy_timeout(db_, 1000);
        // auto_vacuum only takes effect on a new file: it lets size retention give pages back.
        exec("PRAGMA auto_vacuum=INCREMENTAL");
        exec("PRAGMA journal_mode=WAL");
        exec("PRAGMA synchronous=NORMAL");
        // The page cache grows up to this and stays there: a bound of its own, not SQLite's
        // build default; sorts and temporary tables spill to files beyond it.
        exec(("PRAGMA cache_size=-" + std::to_string(cache_kib_)).c_str());
        exec("CREATE TABLE IF NOT EXISTS nodes(id INTEGER PRIMARY KEY, key TEXT NOT NULL UNIQUE)");
        // Clustered by (node, time, order stored): a read of one node's time range is one
        // range scan of the primary key, in either direction.
        exec(
            "CREATE TABLE IF NOT EXISTS samples(node INTEGER NOT NULL, ts INTEGER NOT NULL, "
            "seq INTEGER NOT NULL, server_ts INTEGER NOT NULL, status INTEGER NOT NULL, "
            "ps INTEGER NOT NULL, value BLOB, PRIMARY KEY(node, ts, seq)) WITHOUT ROWID");
        // Events: clustered by (notifier, time, order stored) as the values; found by EventId
        // through a second index for updates and deletes.
        exec(
            "CREATE TABLE IF NOT EXISTS events(node INTEGER NOT NULL, ts INTEGER NOT NULL, "
            "seq INTEGER NOT NULL, receive_ts INTEGER NOT NULL, event_id BLOB NOT NULL, "
            "event_type TEXT NOT NULL, fields BLOB, PRIMARY KEY(node, ts, seq)) WITHOUT ROWID");
        exec("CREATE INDEX IF NOT EXISTS events_by_id ON events(node, event_id)");
        ev_insert_ = Statement(db_,
                               "INSERT OR REPLACE INTO events(node, ts, seq, receive_ts, "
                               "event_id, event_type, fields) VALUES(?,?,?,?,?,?,?)");
        const char* ecols = "SELECT ts, seq, receive_ts, event_id, event_type, fields FROM events ";
        ev_fwd_ = Statement(db_, (std::string(ecols) +
                                  "WHERE node = ?1 AND ts >= ?2 AND ts < ?3 AND (ts > ?4 OR (ts = "
                                  "?4 AND seq > ?5)) ORDER BY ts, seq LIMIT ?6")
                                     .c_str());
        ev_bwd_ = Statement(db_, (std::string(ecols) +
                                  "WHERE node = ?1 AND ts <= ?2 AND ts > ?3 AND (ts < ?4 OR (ts = "
                                  "?4 AND seq < ?5)) ORDER BY ts DESC, seq DESC LIMIT ?6")
                                     .c_str());
        ev_find_ =
            Statement(db_, "SELECT seq FROM events WHERE node = ?1 AND event_id = ?2 LIMIT 1");
        ev_delete_ = Statement(db_, "DELETE FROM events WHERE node = ?1 AND event_id = ?2");
        insert_ = Statement(db_,
                            "INSERT OR REPLACE INTO samples(node, ts, seq, server_ts, status, ps, "
                            "value) VALUES(?,?,?,?,?,?,?)");
        node_find_ = Statement(db_, "SELECT id FROM nodes WHERE key = ?");
        node_add_ = Statement(db_, "INSERT INTO nodes(key) VALUES(?)");
        const char* cols = "SELECT ts, seq, server_ts, status, ps, value FROM samples ";
        fwd_ = Statement(db_, (std::string(cols) +
                               "WHERE node = ?1 AND ts >= ?2 AND ts < ?3 AND (ts > ?4 OR (ts = ?4 "
                               "AND seq > ?5)) ORDER BY ts, seq LIMIT ?6")
                                  .c_str());
        bwd_ = Statement(db_, (std::string(cols) +
                               "WHERE node = ?1 AND ts <= ?2 AND ts > ?3 AND (ts < ?4 OR (ts = ?4 "
                               "AND seq < ?5)) ORDER BY ts DESC, seq DESC LIMIT ?6")
                                  .c_str());
        at_or_before_ = Statement(
            db_, (std::string(cols) + "WHERE node = ?1 AND ts <= ?2 ORDER BY ts DESC, seq DESC "
                                      "LIMIT 1")
                     .c_str());
        at_or_after_ = Statement(
            db_,
            (std::string(cols) + "WHERE node = ?1 AND ts >= ?2 ORDER BY ts, seq LIMIT 1").c_str());
        at_time_ = Statement(db_, "SELECT seq FROM samples WHERE node = ?1 AND ts = ?2 LIMIT 1");
        delete_at_ = Statement(db_, "DELETE FROM samples WHERE node = ?1 AND ts = ?2");
        delete_range_ =
            Statement(db_, "DELETE FROM samples WHERE node = ?1 AND ts >= ?2 AND ts < ?3");
        // The next seq continues the file's.
        Statement max(db_,
                      "SELECT max(coalesce((SELECT max(seq) FROM samples), 0), "
                      "coalesce((SELECT max(seq) FROM events), 0))");
        if (sqlite3_step(max.get()) == SQLITE_ROW) seq_ = sqlite3_column_int64(max.get(), 0);
    }

    void close() noexcept {
        insert_ = {};
        node_find_ = {};
        node_add_ = {};
        fwd_ = {};
        bwd_ = {};
        at_or_before_ = {};
        at_or_after_ = {};
        at_time_ = {};
        delete_at_ = {};
        delete_range_ = {};
        ev_insert_ = {};
        ev_fwd_ = {};
        ev_bwd_ = {};
        ev_find_ = {};
        ev_delete_ = {};
        node_ids_.clear();
        if (db_) sqlite3_close_v2(db_);
        db_ = nullptr;
    }

    void exec(const char* sql) {
        char* err = nullptr;
        if (sqlite3_exec(db_, sql, nullptr, nullptr, &err) != SQLITE_OK) {
            std::string why = err ? err : "?";
            sqlite3_free(err);
            throw uaplex::sdk::StatusError(UAPLEX_BadInternalError, std::string(sql) + ": " + why);
        }
    }
    bool execNoThrow(const char* sql) noexcept {
        return sqlite3_exec(db_, sql, nullptr, nullptr, nullptr) == SQLITE_OK;
    }

    // The id of a node key; 0 when unknown and `create` is false, -1 on error.
    int64_t nodeId(std::string_view key, bool create) {
        auto it = node_ids_.find(std::string(key));
        if (it != node_ids_.end()) return it->second;
        sqlite3_stmt* s = node_find_.reset();
        sqlite3_bind_text(s, 1, key.data(), int(key.size()), SQLITE_TRANSIENT);
        int64_t id = 0;
        if (sqlite3_step(s) == SQLITE_ROW) id = sqlite3_column_int64(s, 0);
        sqlite3_reset(s);
        if (id == 0 && create) {
            s = node_add_.reset();
            sqlite3_bind_text(s, 1, key.data(), int(key.size()), SQLITE_TRANSIENT);
            if (sqlite3_step(s) != SQLITE_DONE) {
                sqlite3_reset(s);
                return -1;
            }
            sqlite3_reset(s);
            id = sqlite3_last_insert_rowid(db_);
        }
        if (id > 0) node_ids_.emplace(std::string(key), id);
        return id;
    }

    void run() noexcept override {
        retain();  // at start, before anything else
        int64_t next_retention = uaplex::sdk::monotonic_ms() + retention_s_ * 1000;
        std::unique_lock lock(mu_);
        for (;;) {
            cv_.wait_for(lock, std::chrono::milliseconds(flush_ms_),
                         [&] { return !running_ || used_ >= batch_ || !jobs_.empty(); });
            const bool stopping = !running_;
            // Every value queued before the first job is written before it runs.
            while (used_ > 0) {
                size_t n = std::min(used_, batch_);
                for (size_t i = 0; i < n; ++i)
                    std::swap(batch_slots_[i], ring_[(head_ + i) % capacity_]);
                head_ = (head_ + n) % capacity_;
                used_ -= n;
                settleQueue();  // the batch's slots are free already: swapped out
                lock.unlock();
                writeBatch(n);
                lock.lock();
                written_ += n;
                if (!jobs_.empty() || stopping || used_ < batch_) break;
            }
            set(m_queued_, int64_t(used_));
            settleQueue();
            while (!jobs_.empty() && written_ >= jobs_.front().after) {
                Job job = std::move(jobs_.front());
                jobs_.pop_front();
                lock.unlock();
                uaplex_status st = stopping ? UAPLEX_BadServerHalted : runJob(job);
                job.done.complete(st);
                lock.lock();
            }
            if (db_) {
                int cache = 0, peak = 0;
                if (sqlite3_db_status(db_, SQLITE_DBSTATUS_CACHE_USED, &cache, &peak, 0) ==
                    SQLITE_OK)
                    set(m_cache_bytes_, cache);
            }
            if (stopping && used_ == 0 && jobs_.empty()) break;
            if (stopping) continue;
            if (uaplex::sdk::monotonic_ms() >= next_retention) {
                lock.unlock();
                retain();
                lock.lock();
                next_retention = uaplex::sdk::monotonic_ms() + retention_s_ * 1000;
            }
        }
    }

    uaplex_status runJob(Job& job) noexcept {
        try {
            return job.run();
        } catch (...) {
            return UAPLEX_BadInternalError;
        }
    }

    void writeBatch(size_t n) noexcept {
        if (!execNoThrow("BEGIN")) {
            add(m_write_errors_, int64_t(n));
            return;
        }
        size_t ok = 0;
        try {
            // Inserted in (node, time, arrival) order: each node's values then go to the end
            // of its key range one after the other instead of one B-tree descent per value
            // across all nodes' pages.
            order_.clear();
            for (size_t i = 0; i < n; ++i) {
                const Slot& e = batch_slots_[i];
                const int64_t node = nodeId(e.key, true);
                if (node <= 0) continue;
                if (e.event) {  // events go to their own table, in arrival order
                    if (insertEvent(node, e.source, e.server, e.event_id.data(), e.event_id.size(),
                                    e.event_type, e.value.data(), e.value.size()))
                        ++ok;
                    continue;
                }
                order_.push_back(Insert{node, e.source, i});
            }
            std::sort(order_.begin(), order_.end(), [](const Insert& a, const Insert& b) {
                return std::tie(a.node, a.source, a.index) < std::tie(b.node, b.source, b.index);
            });
            for (const Insert& in : order_) {
                const Slot& s = batch_slots_[in.index];
                const int64_t node = in.node;
                sqlite3_stmt* st = insert_.reset();
                sqlite3_bind_int64(st, 1, node);
                sqlite3_bind_int64(st, 2, s.source);
                sqlite3_bind_int64(st, 3, ++seq_);
                sqlite3_bind_int64(st, 4, s.server);
                sqlite3_bind_int64(st, 5, s.status);
                sqlite3_bind_int64(st, 6, (int64_t(s.source_ps) << 16) | s.server_ps);
                sqlite3_bind_blob(st, 7, s.value.data(), int(s.value.size()), SQLITE_STATIC);
                if (sqlite3_step(st) == SQLITE_DONE) ++ok;
                sqlite3_reset(st);
            }
        } catch (...) {
        }
        if (!execNoThrow("COMMIT")) {
            execNoThrow("ROLLBACK");
            node_ids_.clear();
            ok = 0;
        }
        add(m_written_, int64_t(ok));
        if (ok < n) add(m_write_errors_, int64_t(n - ok));
    }

    // Copies the current row into `v`, with its bytes from `alloc`; false when out of memory.
    static bool rowValue(sqlite3_stmt* s, const uaplex_value_alloc& alloc,
                         uaplex_history_value& v) noexcept {
        const int len = sqlite3_column_bytes(s, 5);
        return uaplex::history_store::fillValue(
            v, sqlite3_column_int64(s, 0), sqlite3_column_int64(s, 2),
            uint32_t(sqlite3_column_int64(s, 3)), sqlite3_column_int64(s, 4),
            sqlite3_column_blob(s, 5), size_t(len > 0 ? len : 0), alloc);
    }

    uaplex_status doRead(const uaplex_history_read& r, uaplex_history_read_result& out) override {
        const uaplex_value_alloc& alloc = *r.alloc;
        uaplex::history_store::ReadState<Cursor> rs;
        if (const uaplex_status st = rs.begin(r, params_); st != UAPLEX_Good) return st;
        const int64_t node = nodeId(std::string_view(r.node_key.data, r.node_key.len), false);
        if (node < 0) return UAPLEX_BadInternalError;

        // One bounding value: the value at `time` or the nearest one on the side away from
        // the range (`before`: at or before).
        auto bound = [&](int64_t time, bool before) -> bool {
            if (node > 0) {
                sqlite3_stmt* s = (before ? at_or_before_ : at_or_after_).reset();
                sqlite3_bind_int64(s, 1, node);
                sqlite3_bind_int64(s, 2, time);
                int rc = sqlite3_step(s);
                if (rc == SQLITE_ROW) {
                    bool ok = rowValue(s, alloc, rs.values[rs.n]);
                    sqlite3_reset(s);
                    if (!ok) return false;
                    ++rs.n;
                    return true;
                }
                sqlite3_reset(s);
            }
            rs.values[rs.n++] = uaplex::history_store::missingBound(time);
            return true;
        };

        if (rs.cursor.phase == 0) {
            // The first bound, unless a value at start_time opens the range itself.
            bool at_start = false;
            if (node > 0) {
                sqlite3_stmt* s = at_time_.reset();
                sqlite3_bind_int64(s, 1, node);
                sqlite3_bind_int64(s, 2, r.start_time);
                at_start = sqlite3_step(s) == SQLITE_ROW;
                sqlite3_reset(s);
            }
            if (!at_start && !bound(r.start_time, rs.forward)) return UAPLEX_BadOutOfMemory;
            rs.cursor.phase = 1;
        }
        bool range_done = false;
        if (rs.cursor.phase == 1 && rs.n < rs.max) {
            if (node == 0) {
                range_done = true;
            } else {
                sqlite3_stmt* s = (rs.forward ? fwd_ : bwd_).reset();
                sqlite3_bind_int64(s, 1, node);
                sqlite3_bind_int64(s, 2, r.start_time);
                sqlite3_bind_int64(s, 3, rs.rangeEnd(r));
                sqlite3_bind_int64(s, 4, rs.cursor.afterTs(rs.forward));
                sqlite3_bind_int64(s, 5, rs.cursor.afterSeq(rs.forward));
                const uint32_t want = rs.max - rs.n;
                sqlite3_bind_int64(s, 6, int64_t(want) + 1);
                uint32_t got = 0;
                int rc = SQLITE_ROW;
                while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
                    if (got == want) break;  // one more exists
                    if (!rowValue(s, alloc, rs.values[rs.n])) {
                        sqlite3_reset(s);
                        return UAPLEX_BadOutOfMemory;
                    }
                    rs.cursor.ts = sqlite3_column_int64(s, 0);
                    rs.cursor.seq = sqlite3_column_int64(s, 1);
                    rs.cursor.started = true;
                    ++rs.n;
                    ++got;
                }
                if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
                    sqlite3_reset(s);
                    return UAPLEX_BadInternalError;
                }
                range_done = rc == SQLITE_DONE;
                sqlite3_reset(s);
            }
            if (range_done) rs.cursor.phase = rs.bounds ? 2 : 3;
        }
        if (rs.cursor.phase == 2 && rs.n < rs.max) {
            if (!bound(r.end_time, !rs.forward)) return UAPLEX_BadOutOfMemory;
            rs.cursor.phase = 3;
        }
        return rs.finish(alloc, out);
    }

    uaplex_status doUpdate(const uaplex_history_update& u) override {
        if (!execNoThrow("BEGIN")) return UAPLEX_BadInternalError;
        const int64_t node = nodeId(std::string_view(u.node_key.data, u.node_key.len), true);
        if (node <= 0) {
            execNoThrow("ROLLBACK");
            node_ids_.clear();
            return UAPLEX_BadInternalError;
        }
        for (uint32_t i = 0; i < u.value_count; ++i) {
            const auto& v = u.values[i];
            if (v.value.len > max_value_bytes_) {
                u.results[i] = UAPLEX_BadOutOfRange;
                continue;
            }
            sqlite3_stmt* s = at_time_.reset();
            sqlite3_bind_int64(s, 1, node);
            sqlite3_bind_int64(s, 2, v.source_timestamp);
            const bool exists = sqlite3_step(s) == SQLITE_ROW;
            sqlite3_reset(s);
            if (const uaplex_status no = uaplex::history_store::updateConflict(u.perform, exists);
                no != UAPLEX_Good) {
                u.results[i] = no;
                continue;
            }
            if (exists) {
                s = delete_at_.reset();
                sqlite3_bind_int64(s, 1, node);
                sqlite3_bind_int64(s, 2, v.source_timestamp);
                sqlite3_step(s);
                sqlite3_reset(s);
            }
            s = insert_.reset();
            sqlite3_bind_int64(s, 1, node);
            sqlite3_bind_int64(s, 2, v.source_timestamp);
            sqlite3_bind_int64(s, 3, ++seq_);
            sqlite3_bind_int64(s, 4, v.server_timestamp);
            sqlite3_bind_int64(s, 5, v.status);
            sqlite3_bind_int64(s, 6, (int64_t(v.source_picoseconds) << 16) | v.server_picoseconds);
            sqlite3_bind_blob(s, 7, v.value.data, int(v.value.len), SQLITE_STATIC);
            const bool ok = sqlite3_step(s) == SQLITE_DONE;
            sqlite3_reset(s);
            u.results[i] = !ok      ? UAPLEX_BadInternalError
                           : exists ? UAPLEX_GoodEntryReplaced
                                    : UAPLEX_GoodEntryInserted;
        }
        if (!execNoThrow("COMMIT")) {
            execNoThrow("ROLLBACK");
            node_ids_.clear();
            return UAPLEX_BadInternalError;
        }
        return UAPLEX_Good;
    }

    uaplex_status doDelete(uaplex_history_delete& d) override {
        d.deleted = 0;
        const int64_t node = nodeId(std::string_view(d.node_key.data, d.node_key.len), false);
        if (node < 0) return UAPLEX_BadInternalError;
        if (node == 0 || d.start_time >= d.end_time) return UAPLEX_Good;
        sqlite3_stmt* s = delete_range_.reset();
        sqlite3_bind_int64(s, 1, node);
        sqlite3_bind_int64(s, 2, d.start_time);
        sqlite3_bind_int64(s, 3, d.end_time);
        const int rc = sqlite3_step(s);
        sqlite3_reset(s);
        if (rc != SQLITE_DONE) return UAPLEX_BadInternalError;
        d.deleted = uint64_t(sqlite3_changes64(db_));
        return UAPLEX_Good;
    }

    bool insertEvent(int64_t node, int64_t ts, int64_t receive, const void* id, size_t id_len,
                     std::string_view type, const void* fields, size_t fields_len) noexcept {
        sqlite3_stmt* st = ev_insert_.reset();
        sqlite3_bind_int64(st, 1, node);
        sqlite3_bind_int64(st, 2, ts);
        sqlite3_bind_int64(st, 3, ++seq_);
        sqlite3_bind_int64(st, 4, receive);
        sqlite3_bind_blob(st, 5, id, int(id_len), SQLITE_STATIC);
        sqlite3_bind_text(st, 6, type.data(), int(type.size()), SQLITE_STATIC);
        sqlite3_bind_blob(st, 7, fields, int(fields_len), SQLITE_STATIC);
        const bool ok = sqlite3_step(st) == SQLITE_DONE;
        sqlite3_reset(st);
        return ok;
    }

    // Whether the notifier has an event with the EventId; -1 on error.
    int hasEvent(int64_t node, const void* id, size_t len) noexcept {
        sqlite3_stmt* s = ev_find_.reset();
        sqlite3_bind_int64(s, 1, node);
        sqlite3_bind_blob(s, 2, id, int(len), SQLITE_STATIC);
        const int rc = sqlite3_step(s);
        sqlite3_reset(s);
        return rc == SQLITE_ROW ? 1 : rc == SQLITE_DONE ? 0 : -1;
    }

    uaplex_status doReadEvents(const uaplex_history_event_read& r,
                               uaplex_history_event_read_result& out) override {
        const uaplex_value_alloc& alloc = *r.alloc;
        uaplex::history_store::EventReadState<EventCursor> rs;
        if (const uaplex_status st = rs.begin(r, params_); st != UAPLEX_Good) return st;
        const int64_t node =
            nodeId(std::string_view(r.notifier_key.data, r.notifier_key.len), false);
        if (node < 0) return UAPLEX_BadInternalError;
        if (node == 0) {
            rs.cursor.phase = 3;
            return rs.finish(alloc, out);
        }
        sqlite3_stmt* s = (rs.forward ? ev_fwd_ : ev_bwd_).reset();
        sqlite3_bind_int64(s, 1, node);
        sqlite3_bind_int64(s, 2, r.start_time);
        sqlite3_bind_int64(s, 3, rs.rangeEnd(r));
        sqlite3_bind_int64(s, 4, rs.cursor.afterTs(rs.forward));
        sqlite3_bind_int64(s, 5, rs.cursor.afterSeq(rs.forward));
        sqlite3_bind_int64(s, 6, int64_t(rs.max) + 1);
        int rc = SQLITE_ROW;
        while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
            if (rs.n == rs.max) break;  // one more exists
            const int id_len = sqlite3_column_bytes(s, 3);
            const void* id = sqlite3_column_blob(s, 3);
            const int type_len = sqlite3_column_bytes(s, 4);
            const auto* type = reinterpret_cast<const char*>(sqlite3_column_text(s, 4));
            const int f_len = sqlite3_column_bytes(s, 5);
            const void* f = sqlite3_column_blob(s, 5);
            if (!uaplex::history_store::fillEvent(
                    rs.events[rs.n], sqlite3_column_int64(s, 0), sqlite3_column_int64(s, 2), id,
                    size_t(std::max(id_len, 0)), type, size_t(std::max(type_len, 0)), f,
                    size_t(std::max(f_len, 0)), alloc)) {
                sqlite3_reset(s);
                return UAPLEX_BadOutOfMemory;
            }
            rs.cursor.ts = sqlite3_column_int64(s, 0);
            rs.cursor.seq = sqlite3_column_int64(s, 1);
            rs.cursor.started = true;
            ++rs.n;
        }
        sqlite3_reset(s);
        if (rc != SQLITE_ROW && rc != SQLITE_DONE) return UAPLEX_BadInternalError;
        if (rc == SQLITE_DONE) rs.cursor.phase = 3;
        return rs.finish(alloc, out);
    }

    uaplex_status doUpdateEvents(const uaplex_history_event_update& u) override {
        if (!execNoThrow("BEGIN")) return UAPLEX_BadInternalError;
        const int64_t node =
            nodeId(std::string_view(u.notifier_key.data, u.notifier_key.len), true);
        if (node <= 0) {
            execNoThrow("ROLLBACK");
            node_ids_.clear();
            return UAPLEX_BadInternalError;
        }
        for (uint32_t i = 0; i < u.event_count; ++i) {
            const auto& e = u.events[i];
            if (!validEvent(e, false)) {
                u.results[i] = UAPLEX_BadOutOfRange;
                continue;
            }
            const int exists = hasEvent(node, e.event_id.data, e.event_id.len);
            if (exists < 0) {
                u.results[i] = UAPLEX_BadInternalError;
                continue;
            }
            if (const uaplex_status no =
                    uaplex::history_store::updateConflict(u.perform, exists != 0);
                no != UAPLEX_Good) {
                u.results[i] = no;
                continue;
            }
            if (exists) {
                sqlite3_stmt* s = ev_delete_.reset();
                sqlite3_bind_int64(s, 1, node);
                sqlite3_bind_blob(s, 2, e.event_id.data, int(e.event_id.len), SQLITE_STATIC);
                sqlite3_step(s);
                sqlite3_reset(s);
            }
            const bool ok = insertEvent(
                node, e.time, e.receive_time, e.event_id.data, e.event_id.len,
                std::string_view(e.event_type.data, e.event_type.len), e.fields.data, e.fields.len);
            u.results[i] = !ok      ? UAPLEX_BadInternalError
                           : exists ? UAPLEX_GoodEntryReplaced
                                    : UAPLEX_GoodEntryInserted;
        }
        if (!execNoThrow("COMMIT")) {
            execNoThrow("ROLLBACK");
            node_ids_.clear();
            return UAPLEX_BadInternalError;
        }
        return UAPLEX_Good;
    }

    uaplex_status doDeleteEvents(const uaplex_history_event_delete& d) override {
        const int64_t node =
            nodeId(std::string_view(d.notifier_key.data, d.notifier_key.len), false);
        if (node < 0) return UAPLEX_BadInternalError;
        if (node > 0 && !execNoThrow("BEGIN")) return UAPLEX_BadInternalError;
        for (uint32_t i = 0; i < d.event_count; ++i) {
            const uaplex_bytes id = d.event_ids[i];
            if (node == 0 || id.len == 0 || id.data == nullptr ||
                id.len > uaplex::history_store::kMaxEventIdBytes) {
                d.results[i] = UAPLEX_BadEventIdUnknown;
                continue;
            }
            sqlite3_stmt* s = ev_delete_.reset();
            sqlite3_bind_int64(s, 1, node);
            sqlite3_bind_blob(s, 2, id.data, int(id.len), SQLITE_STATIC);
            const int rc = sqlite3_step(s);
            sqlite3_reset(s);
            d.results[i] = rc != SQLITE_DONE             ? UAPLEX_BadInternalError
                           : sqlite3_changes64(db_) == 0 ? UAPLEX_BadEventIdUnknown
                                                         : UAPLEX_Good;
        }
        if (node > 0 && !execNoThrow("COMMIT")) {
            execNoThrow("ROLLBACK");
            return UAPLEX_BadInternalError;
        }
        return UAPLEX_Good;
    }

    int64_t pragma(const char* sql) noexcept {
        sqlite3_stmt* s = nullptr;
        int64_t v = 0;
        if (sqlite3_prepare_v2(db_, sql, -1, &s, nullptr) == SQLITE_OK &&
            sqlite3_step(s) == SQLITE_ROW)
            v = sqlite3_column_int64(s, 0);
        sqlite3_finalize(s);
        return v;
    }

    // Retention: values and events older than retention_max_age_s go; while the used pages
    // exceed retention_max_bytes, the oldest tenth of every node's values and every notifier's
    // events goes (a few rounds at most).
    void retain() noexcept {
        int64_t removed = 0;
        if (max_age_s_ > 0) {
            int64_t now = 0;
            const auto* api = context().api();
            if (api && api->utc_now && api->utc_now(context().raw(), &now) == UAPLEX_Good) {
                const int64_t cutoff = now - max_age_s_ * kTicksPerSecond;
                for (const char* sql :
                     {"DELETE FROM samples WHERE node IN (SELECT id FROM nodes) AND ts < ?1",
                      "DELETE FROM events WHERE node IN (SELECT id FROM nodes) AND ts < ?1"}) {
                    sqlite3_stmt* s = nullptr;
                    if (sqlite3_prepare_v2(db_, sql, -1, &s, nullptr) == SQLITE_OK) {
                        sqlite3_bind_int64(s, 1, cutoff);
                        if (sqlite3_step(s) == SQLITE_DONE) removed += sqlite3_changes64(db_);
                    }
                    sqlite3_finalize(s);
                }
            }
        }
        for (int round = 0; max_bytes_ > 0 && round < 8; ++round) {
            const int64_t used = (pragma("PRAGMA page_count") - pragma("PRAGMA freelist_count")) *
                                 pragma("PRAGMA page_size");
            if (used <= max_bytes_) break;
            sqlite3_stmt* s = nullptr;
            const char* sql =
                "DELETE FROM samples WHERE (node, ts, seq) IN (SELECT node, ts, seq FROM (SELECT "
                "node, ts, seq, row_number() OVER (PARTITION BY node ORDER BY ts, seq) AS rn, "
                "count(*) OVER (PARTITION BY node) AS cnt FROM samples) WHERE rn <= (cnt + 9) / "
                "10)";
            if (sqlite3_prepare_v2(db_, sql, -1, &s, nullptr) == SQLITE_OK &&
                sqlite3_step(s) == SQLITE_DONE)
                removed += sqlite3_changes64(db_);
            sqlite3_finalize(s);
            // The oldest tenth of every notifier's events, likewise.
            s = nullptr;
            const char* esql =
                "DELETE FROM events WHERE (node, ts, seq) IN (SELECT node, ts, seq FROM (SELECT "
                "node, ts, seq, row_number() OVER (PARTITION BY node ORDER BY ts, seq) AS rn, "
                "count(*) OVER (PARTITION BY node) AS cnt FROM events) WHERE rn <= (cnt + 9) / "
                "10)";
            if (sqlite3_prepare_v2(db_, esql, -1, &s, nullptr) == SQLITE_OK &&
                sqlite3_step(s) == SQLITE_DONE)
                removed += sqlite3_changes64(db_);
            sqlite3_finalize(s);
        }
        if (removed > 0) {
            add(m_retired_, removed);
            execNoThrow("PRAGMA incremental_vacuum");
        }
        execNoThrow("PRAGMA wal_checkpoint(PASSIVE)");
    }

    const std::string path_;
    const int64_t max_age_s_;
    const int64_t max_bytes_;
    const int64_t retention_s_;
    const int64_t cache_kib_;

    // The store's thread only.
    std::vector<Slot> batch_slots_;
    struct Insert {
        int64_t node;
        int64_t source;
        size_t index;  // in batch_slots_
    };
    std::vector<Insert> order_;  // the writer thread's; its capacity is kept
    sqlite3* db_ = nullptr;
    int64_t seq_ = 0;
    std::unordered_map<std::string, int64_t> node_ids_;
    Statement insert_, node_find_, node_add_, fwd_, bwd_, at_or_before_, at_or_after_, at_time_,
        delete_at_, delete_range_, ev_insert_, ev_fwd_, ev_bwd_, ev_find_, ev_delete_;

    uaplex_metric* m_retired_ = nullptr;
    uaplex_metric* m_cache_bytes_ = nullptr;
};

}  // namespace

UAPLEX_PLUGIN(("history-sqlite", "1.0.0", "Historical values in one SQLite database file"),
              uaplex::sdk::HistoryFactory<SqliteHistory>)
