// SPDX-License-Identifier: Apache-2.0
// History store on one SQLite database file (WAL). One thread of its own owns the
// connection: it writes the queued values in batches, one transaction each, and runs the
// reads, updates and deletes in the order they came, each after the values queued before it,
// then applies retention by age and by size. The kernel's threads only copy values into a
// bounded queue (store) or post an operation; a full queue drops and counts, never waits.
#include <sqlite3.h>

#include <algorithm>
#include <array>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include <uaplex/types.h>
#include <uaplex/cpp/clock.hpp>
#include <uaplex/cpp/kinds.hpp>

namespace {

using uaplex::sdk::Completion;
using uaplex::sdk::Context;

constexpr int64_t kTicksPerSecond = UAPLEX_DATETIME_TICKS_PER_SECOND;

int64_t setting(const Context& ctx, std::string_view key, int64_t def, int64_t lo, int64_t hi) {
    auto v = ctx.config_int(key).value_or(def);
    if (v < lo || v > hi)
        throw uaplex::sdk::StatusError(UAPLEX_BadConfigurationError,
                                       std::string(key) + " out of range [" + std::to_string(lo) +
                                           ", " + std::to_string(hi) + "]");
    return v;
}

// One queued value: strings keep their capacity when the slot is reused, so a warm queue
// copies without allocating.
struct Slot {
    std::string key;
    std::string value;
    int64_t source = 0;
    int64_t server = 0;
    uint32_t status = 0;
    uint16_t source_ps = 0;
    uint16_t server_ps = 0;
};

// The continuation of a raw read: where the read goes on, and a digest of the request it
// belongs to. Self-contained: the store keeps nothing per read.
struct Cursor {
    static constexpr uint8_t kMagic = 0x48;  // 'H'
    static constexpr uint8_t kVersion = 1;
    uint8_t phase = 0;  // 0 first bound, 1 range, 2 end bound
    int64_t ts = 0;
    int64_t seq = 0;
    bool started = false;  // ts/seq hold the last value returned in the range
    uint64_t digest = 0;
    static constexpr size_t kSize = 4 + 8 + 8 + 8;
    void encode(uint8_t* out) const noexcept {
        out[0] = kMagic;
        out[1] = kVersion;
        out[2] = phase;
        out[3] = started ? 1 : 0;
        std::memcpy(out + 4, &ts, 8);
        std::memcpy(out + 12, &seq, 8);
        std::memcpy(out + 20, &digest, 8);
    }
    bool decode(uaplex_bytes in) noexcept {
        if (in.len != kSize || in.data[0] != kMagic || in.data[1] != kVersion || in.data[2] > 2 ||
            in.data[3] > 1)
            return false;
        phase = in.data[2];
        started = in.data[3] != 0;
        std::memcpy(&ts, in.data + 4, 8);
        std::memcpy(&seq, in.data + 12, 8);
        std::memcpy(&digest, in.data + 20, 8);
        return true;
    }
};

uint64_t fnv(uint64_t h, const void* p, size_t n) noexcept {
    const auto* b = static_cast<const uint8_t*>(p);
    for (size_t i = 0; i < n; ++i) h = (h ^ b[i]) * 1099511628211ull;
    return h;
}

uint64_t digestOf(const uaplex_history_read& r) noexcept {
    uint64_t h = 14695981039346656037ull;
    h = fnv(h, r.node_key.data, r.node_key.len);
    h = fnv(h, &r.start_time, sizeof r.start_time);
    h = fnv(h, &r.end_time, sizeof r.end_time);
    h = fnv(h, &r.flags, sizeof r.flags);
    return h;
}

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

class SqliteHistory final : public uaplex::sdk::HistoryStore {
  public:
    SqliteHistory(Context ctx, const uaplex_history_params& params)
        : HistoryStore(ctx, params),
          path_(ctx.config_string("path").value_or("uaplex-history.db")),
          capacity_(size_t(setting(ctx, "queue_capacity", 65536, 1, 16 << 20))),
          batch_(size_t(setting(ctx, "batch_size", 1024, 1, 1 << 20))),
          flush_ms_(setting(ctx, "flush_interval_ms", 200, 1, 60000)),
          max_value_bytes_(size_t(setting(ctx, "max_value_bytes", 4096, 16, 1 << 20))),
          max_key_bytes_(size_t(setting(ctx, "max_key_bytes", 512, 8, 4096))),
          max_pending_(size_t(setting(ctx, "max_pending_operations", 256, 1, 65536))),
          max_age_s_(setting(ctx, "retention_max_age_s", 30 * 86400, 0, int64_t(1) << 40)),
          max_bytes_(setting(ctx, "retention_max_bytes", int64_t(1) << 30, 0, int64_t(1) << 50)),
          retention_s_(setting(ctx, "retention_interval_s", 60, 1, 86400)),
          ring_(capacity_) {
        ctx.check_known_keys({"path", "queue_capacity", "batch_size", "flush_interval_ms",
                              "max_value_bytes", "max_key_bytes", "max_pending_operations",
                              "retention_max_age_s", "retention_max_bytes",
                              "retention_interval_s"});
        if (path_.empty())
            throw uaplex::sdk::StatusError(UAPLEX_BadConfigurationError, "path is empty");
        metric("stored", UAPLEX_METRIC_COUNTER, &m_stored_);
        metric("dropped", UAPLEX_METRIC_COUNTER, &m_dropped_);
        metric("written", UAPLEX_METRIC_COUNTER, &m_written_);
        metric("write_errors", UAPLEX_METRIC_COUNTER, &m_write_errors_);
        metric("queued", UAPLEX_METRIC_GAUGE, &m_queued_);
        metric("retention_deleted", UAPLEX_METRIC_COUNTER, &m_retired_);
        batch_slots_.resize(batch_);
    }
    ~SqliteHistory() override { close(); }

    uaplex_status start() override {
        open();
        std::lock_guard lock(mu_);
        running_ = true;
        thread_ = std::thread([this] { run(); });
        return UAPLEX_Good;
    }

    uaplex_status stop() override {
        {
            std::lock_guard lock(mu_);
            if (!running_) return UAPLEX_Good;
            running_ = false;
        }
        cv_.notify_all();
        if (thread_.joinable()) thread_.join();
        close();
        return UAPLEX_Good;
    }

    uaplex_status store(size_t count, const uaplex_history_value* values,
                        size_t* out_accepted) override {
        size_t accepted = 0;
        uint64_t dropped = 0;
        bool wake = false;
        {
            std::lock_guard lock(mu_);
            if (!running_) {
                if (out_accepted) *out_accepted = 0;
                return UAPLEX_BadServerHalted;
            }
            for (size_t i = 0; i < count; ++i) {
                const auto& v = values[i];
                if (used_ == capacity_ || v.node_key.len == 0 || v.node_key.len > max_key_bytes_ ||
                    v.value.len > max_value_bytes_) {
                    // Values past the first refused one are refused too, so *out_accepted
                    // names a prefix.
                    dropped = count - i;
                    break;
                }
                Slot& s = ring_[(head_ + used_) % capacity_];
                s.key.assign(v.node_key.data, v.node_key.len);
                s.value.assign(reinterpret_cast<const char*>(v.value.data), v.value.len);
                s.source = v.source_timestamp;
                s.server = v.server_timestamp;
                s.status = v.status;
                s.source_ps = v.source_picoseconds;
                s.server_ps = v.server_picoseconds;
                ++used_;
                ++accepted;
            }
            enqueued_ += accepted;
            wake = used_ >= batch_;
        }
        if (accepted) add(m_stored_, int64_t(accepted));
        if (dropped) add(m_dropped_, int64_t(dropped));
        if (out_accepted) *out_accepted = accepted;
        if (wake) cv_.notify_one();
        return dropped ? UAPLEX_BadResourceUnavailable : UAPLEX_Good;
    }

    uaplex_status read_raw(const uaplex_history_read& read, uaplex_history_read_result& result,
                           Completion& done) override {
        if (read.max_values == 0 || read.alloc == nullptr || read.node_key.len == 0)
            return UAPLEX_BadInvalidArgument;
        const uaplex_history_read* r = &read;
        uaplex_history_read_result* out = &result;
        return post(done, [this, r, out]() { return doRead(*r, *out); });
    }

    uaplex_status update(const uaplex_history_update& update, Completion& done) override {
        if (update.perform < UAPLEX_HISTORY_INSERT || update.perform > UAPLEX_HISTORY_UPDATE ||
            update.node_key.len == 0 || update.node_key.len > max_key_bytes_ ||
            (update.value_count > 0 && (update.values == nullptr || update.results == nullptr)))
            return UAPLEX_BadInvalidArgument;
        const uaplex_history_update* u = &update;
        return post(done, [this, u]() { return doUpdate(*u); });
    }

    uaplex_status delete_raw(uaplex_history_delete& del, Completion& done) override {
        if (del.node_key.len == 0 || del.node_key.len > max_key_bytes_)
            return UAPLEX_BadInvalidArgument;
        uaplex_history_delete* d = &del;
        return post(done, [this, d]() { return doDelete(*d); });
    }

  private:
    struct Job {
        Completion done;
        std::function<uaplex_status()> run;
        uint64_t after = 0;  // runs once this many values were taken from the queue and written
    };

    void metric(const char* name, uint32_t kind, uaplex_metric** out) {
        const auto* api = context().api();
        if (api && api->metric_register)
            api->metric_register(context().raw(), uaplex::sdk::to_str(name), kind, out);
    }
    void add(uaplex_metric* m, int64_t d) const noexcept {
        const auto* api = context().api();
        if (m && api && api->metric_add) api->metric_add(context().raw(), m, d);
    }
    void set(uaplex_metric* m, int64_t v) const noexcept {
        const auto* api = context().api();
        if (m && api && api->metric_set) api->metric_set(context().raw(), m, v);
    }
    template <class Fn>
    uaplex_status post(Completion& done, Fn&& fn) {
        {
            std::lock_guard lock(mu_);
            if (!running_) return UAPLEX_BadServerHalted;
            if (jobs_.size() >= max_pending_) return UAPLEX_BadResourceUnavailable;
            jobs_.push_back(Job{std::move(done), std::forward<Fn>(fn), enqueued_});
        }
        cv_.notify_one();
        return UAPLEX_GoodCompletesAsynchronously;
    }

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
        exec("CREATE TABLE IF NOT EXISTS nodes(id INTEGER PRIMARY KEY, key TEXT NOT NULL UNIQUE)");
        // Clustered by (node, time, order stored): a read of one node's time range is one
        // range scan of the primary key, in either direction.
        exec(
            "CREATE TABLE IF NOT EXISTS samples(node INTEGER NOT NULL, ts INTEGER NOT NULL, "
            "seq INTEGER NOT NULL, server_ts INTEGER NOT NULL, status INTEGER NOT NULL, "
            "ps INTEGER NOT NULL, value BLOB, PRIMARY KEY(node, ts, seq)) WITHOUT ROWID");
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
        Statement max(db_, "SELECT coalesce(max(seq), 0) FROM samples");
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

    void run() noexcept {
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
                lock.unlock();
                writeBatch(n);
                lock.lock();
                written_ += n;
                if (!jobs_.empty() || stopping || used_ < batch_) break;
            }
            set(m_queued_, int64_t(used_));
            while (!jobs_.empty() && written_ >= jobs_.front().after) {
                Job job = std::move(jobs_.front());
                jobs_.pop_front();
                lock.unlock();
                uaplex_status st = stopping ? UAPLEX_BadServerHalted : runJob(job);
                job.done.complete(st);
                lock.lock();
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
            for (size_t i = 0; i < n; ++i) {
                const Slot& s = batch_slots_[i];
                int64_t node = nodeId(s.key, true);
                if (node <= 0) continue;
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
        v = {};
        v.hdr = UAPLEX_HEADER_INIT(uaplex_history_value, UAPLEX_STYPE_HISTORY_VALUE);
        v.source_timestamp = sqlite3_column_int64(s, 0);
        v.server_timestamp = sqlite3_column_int64(s, 2);
        v.status = uint32_t(sqlite3_column_int64(s, 3));
        int64_t ps = sqlite3_column_int64(s, 4);
        v.source_picoseconds = uint16_t(ps >> 16);
        v.server_picoseconds = uint16_t(ps & 0xFFFF);
        const void* blob = sqlite3_column_blob(s, 5);
        int len = sqlite3_column_bytes(s, 5);
        if (len > 0 && blob) {
            auto* p = static_cast<uint8_t*>(alloc.allocate(alloc.self, size_t(len), 1));
            if (!p) return false;
            std::memcpy(p, blob, size_t(len));
            v.value = {p, size_t(len)};
        }
        return true;
    }

    static uaplex_history_value missingBound(int64_t time) noexcept {
        uaplex_history_value v{};
        v.hdr = UAPLEX_HEADER_INIT(uaplex_history_value, UAPLEX_STYPE_HISTORY_VALUE);
        v.source_timestamp = time;
        v.status = UAPLEX_BadBoundNotFound;
        return v;
    }

    uaplex_status doRead(const uaplex_history_read& r, uaplex_history_read_result& out) {
        const uaplex_value_alloc& alloc = *r.alloc;
        Cursor c;
        c.digest = digestOf(r);
        const bool bounds =
            (r.flags & UAPLEX_HISTORY_READ_BOUNDS) != 0 && r.start_time != r.end_time;
        c.phase = bounds ? 0 : 1;
        if (r.continuation.len > 0) {
            Cursor in;
            if (!in.decode(r.continuation) || in.digest != c.digest)
                return UAPLEX_BadContinuationPointInvalid;
            c = in;
        }
        const bool forward = r.start_time <= r.end_time;
        const uint32_t max = std::min(
            r.max_values, params_.max_values_per_read ? params_.max_values_per_read : r.max_values);
        auto* values = static_cast<uaplex_history_value*>(alloc.allocate(
            alloc.self, sizeof(uaplex_history_value) * max, alignof(uaplex_history_value)));
        if (!values) return UAPLEX_BadOutOfMemory;
        uint32_t n = 0;
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
                    bool ok = rowValue(s, alloc, values[n]);
                    sqlite3_reset(s);
                    if (!ok) return false;
                    ++n;
                    return true;
                }
                sqlite3_reset(s);
            }
            values[n++] = missingBound(time);
            return true;
        };

        if (c.phase == 0) {
            // The first bound, unless a value at start_time opens the range itself.
            bool at_start = false;
            if (node > 0) {
                sqlite3_stmt* s = at_time_.reset();
                sqlite3_bind_int64(s, 1, node);
                sqlite3_bind_int64(s, 2, r.start_time);
                at_start = sqlite3_step(s) == SQLITE_ROW;
                sqlite3_reset(s);
            }
            if (!at_start && !bound(r.start_time, forward)) return UAPLEX_BadOutOfMemory;
            c.phase = 1;
        }
        bool range_done = false;
        if (c.phase == 1 && n < max) {
            if (node == 0) {
                range_done = true;
            } else {
                const bool exact = r.start_time == r.end_time;
                sqlite3_stmt* s = (forward ? fwd_ : bwd_).reset();
                sqlite3_bind_int64(s, 1, node);
                sqlite3_bind_int64(s, 2, r.start_time);
                // The values at exactly start_time when both times are the same.
                int64_t end = r.end_time;
                if (exact) end = r.end_time == INT64_MAX ? INT64_MAX : r.end_time + 1;
                sqlite3_bind_int64(s, 3, end);
                sqlite3_bind_int64(s, 4, c.started ? c.ts : (forward ? INT64_MIN : INT64_MAX));
                sqlite3_bind_int64(s, 5, c.started ? c.seq : (forward ? INT64_MIN : INT64_MAX));
                const uint32_t want = max - n;
                sqlite3_bind_int64(s, 6, int64_t(want) + 1);
                uint32_t got = 0;
                int rc = SQLITE_ROW;
                while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
                    if (got == want) break;  // one more exists
                    if (!rowValue(s, alloc, values[n])) {
                        sqlite3_reset(s);
                        return UAPLEX_BadOutOfMemory;
                    }
                    c.ts = sqlite3_column_int64(s, 0);
                    c.seq = sqlite3_column_int64(s, 1);
                    c.started = true;
                    ++n;
                    ++got;
                }
                if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
                    sqlite3_reset(s);
                    return UAPLEX_BadInternalError;
                }
                range_done = rc == SQLITE_DONE;
                sqlite3_reset(s);
            }
            if (range_done) c.phase = bounds ? 2 : 3;
        }
        if (c.phase == 2 && n < max) {
            if (!bound(r.end_time, !forward)) return UAPLEX_BadOutOfMemory;
            c.phase = 3;
        }
        out.values = values;
        out.value_count = n;
        out.continuation = {nullptr, 0};
        if (c.phase != 3) {
            auto* p = static_cast<uint8_t*>(alloc.allocate(alloc.self, Cursor::kSize, 1));
            if (!p) return UAPLEX_BadOutOfMemory;
            c.encode(p);
            out.continuation = {p, Cursor::kSize};
        }
        return UAPLEX_Good;
    }

    uaplex_status doUpdate(const uaplex_history_update& u) {
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
            if (u.perform == UAPLEX_HISTORY_INSERT && exists) {
                u.results[i] = UAPLEX_BadEntryExists;
                continue;
            }
            if (u.perform == UAPLEX_HISTORY_REPLACE && !exists) {
                u.results[i] = UAPLEX_BadNoEntryExists;
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

    uaplex_status doDelete(uaplex_history_delete& d) {
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

    int64_t pragma(const char* sql) noexcept {
        sqlite3_stmt* s = nullptr;
        int64_t v = 0;
        if (sqlite3_prepare_v2(db_, sql, -1, &s, nullptr) == SQLITE_OK &&
            sqlite3_step(s) == SQLITE_ROW)
            v = sqlite3_column_int64(s, 0);
        sqlite3_finalize(s);
        return v;
    }

    // Retention: values older than retention_max_age_s go; while the used pages exceed
    // retention_max_bytes, the oldest tenth of every node's values goes (a few rounds at most).
    void retain() noexcept {
        int64_t removed = 0;
        if (max_age_s_ > 0) {
            int64_t now = 0;
            const auto* api = context().api();
            if (api && api->utc_now && api->utc_now(context().raw(), &now) == UAPLEX_Good) {
                const int64_t cutoff = now - max_age_s_ * kTicksPerSecond;
                sqlite3_stmt* s = nullptr;
                if (sqlite3_prepare_v2(
                        db_, "DELETE FROM samples WHERE node IN (SELECT id FROM nodes) AND ts < ?1",
                        -1, &s, nullptr) == SQLITE_OK) {
                    sqlite3_bind_int64(s, 1, cutoff);
                    if (sqlite3_step(s) == SQLITE_DONE) removed += sqlite3_changes64(db_);
                }
                sqlite3_finalize(s);
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
        }
        if (removed > 0) {
            add(m_retired_, removed);
            execNoThrow("PRAGMA incremental_vacuum");
        }
        execNoThrow("PRAGMA wal_checkpoint(PASSIVE)");
    }

    const std::string path_;
    const size_t capacity_;
    const size_t batch_;
    const int64_t flush_ms_;
    const size_t max_value_bytes_;
    const size_t max_key_bytes_;
    const size_t max_pending_;
    const int64_t max_age_s_;
    const int64_t max_bytes_;
    const int64_t retention_s_;

    std::mutex mu_;
    std::condition_variable cv_;
    bool running_ = false;
    std::vector<Slot> ring_;
    size_t head_ = 0;
    size_t used_ = 0;
    uint64_t enqueued_ = 0;  // values accepted by store, ever
    uint64_t written_ = 0;   // values taken from the queue and written, ever
    std::deque<Job> jobs_;
    std::thread thread_;

    // The store's thread only.
    std::vector<Slot> batch_slots_;
    sqlite3* db_ = nullptr;
    int64_t seq_ = 0;
    std::unordered_map<std::string, int64_t> node_ids_;
    Statement insert_, node_find_, node_add_, fwd_, bwd_, at_or_before_, at_or_after_, at_time_,
        delete_at_, delete_range_;

    uaplex_metric* m_stored_ = nullptr;
    uaplex_metric* m_dropped_ = nullptr;
    uaplex_metric* m_written_ = nullptr;
    uaplex_metric* m_write_errors_ = nullptr;
    uaplex_metric* m_queued_ = nullptr;
    uaplex_metric* m_retired_ = nullptr;
};

}  // namespace

UAPLEX_PLUGIN(("history-sqlite", "1.0.0", "Historical values in one SQLite database file"),
              uaplex::sdk::HistoryFactory<SqliteHistory>)
