// SPDX-License-Identifier: Apache-2.0
// History store on PostgreSQL (libpq). One table of values and one of events, each
// declaratively partitioned by month on the value's or event's time (PARTITION BY RANGE), with
// a default partition for times outside the window of monthly partitions, and indexes on
// (node, time, order stored) for the reads.
//
// One thread of the store's own owns the connection: it writes the queued values in batches
// with binary COPY, runs the reads, updates and deletes in the order they came (each after the
// values queued before it), creates the partitions ahead of time and drops whole partitions
// past the retention age. The kernel's threads only copy values into a bounded queue (store)
// or post an operation: a full queue drops and counts, never waits. While the database is
// away the thread reconnects with backoff; values wait in the queue (bounded), operations
// complete at once with BadDataUnavailable (Part 11: data temporarily unavailable).
#include <libpq-fe.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <mutex>
#include <set>
#include <string>
#include <thread>
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
// The continuation of a raw read ('P') and of an event read ('Q').
using Cursor = uaplex::history_store::Cursor<0x50>;
using EventCursor = uaplex::history_store::Cursor<0x51>;

// DateTime ticks (100 ns since 1601-01-01) of the Unix epoch.
constexpr int64_t kUnixEpochTicks = 116444736000000000LL;
constexpr int64_t kSeqBlock = 65536;  // seq numbers one nextval of the sequence reserves
constexpr int kMaxIdentifier = 40;    // table names; event partitions add "_events_pYYYYMM"

// --- months: partition bounds in DateTime ticks ------------------------------------------

// Months since year 0 (year * 12 + month - 1) of a DateTime; false outside years 1601..9999.
bool monthOf(int64_t ticks, int32_t& month) noexcept {
    if (ticks < 0) return false;
    const int64_t days =
        ticks / kTicksPerSecond / 86400 - (kUnixEpochTicks / kTicksPerSecond / 86400);
    const std::chrono::year_month_day ymd{std::chrono::sys_days{std::chrono::days{days}}};
    const int y = int(ymd.year());
    if (y < 1601 || y > 9999) return false;
    month = y * 12 + int(unsigned(ymd.month())) - 1;
    return true;
}

// The DateTime at the first instant of a month (months as monthOf counts them).
int64_t monthStart(int32_t month) noexcept {
    const std::chrono::year_month_day ymd{std::chrono::year{month / 12},
                                          std::chrono::month{unsigned(month % 12) + 1},
                                          std::chrono::day{1}};
    const int64_t days = std::chrono::sys_days{ymd}.time_since_epoch().count();
    return (days * 86400) * kTicksPerSecond + kUnixEpochTicks;
}

// --- wire helpers: binary parameters and results ----------------------------------------

void put16(std::string& b, uint16_t v) {
    const char c[2] = {char(v >> 8), char(v)};
    b.append(c, 2);
}
void put32(std::string& b, uint32_t v) {
    const char c[4] = {char(v >> 24), char(v >> 16), char(v >> 8), char(v)};
    b.append(c, 4);
}
void put64(std::string& b, uint64_t v) {
    put32(b, uint32_t(v >> 32));
    put32(b, uint32_t(v));
}
uint64_t bigEndian(const char* p, int n) noexcept {
    uint64_t v = 0;
    for (int i = 0; i < n; ++i) v = (v << 8) | uint8_t(p[i]);
    return v;
}

class Result {
  public:
    explicit Result(PGresult* r = nullptr) noexcept : r_(r) {}
    Result(const Result&) = delete;
    Result& operator=(const Result&) = delete;
    Result(Result&& o) noexcept : r_(std::exchange(o.r_, nullptr)) {}
    Result& operator=(Result&& o) noexcept {
        std::swap(r_, o.r_);
        return *this;
    }
    ~Result() { PQclear(r_); }
    PGresult* get() const noexcept { return r_; }
    bool ok() const noexcept {
        const auto s = r_ ? PQresultStatus(r_) : PGRES_FATAL_ERROR;
        return s == PGRES_COMMAND_OK || s == PGRES_TUPLES_OK;
    }
    int rows() const noexcept { return r_ ? PQntuples(r_) : 0; }
    int64_t i64(int row, int col) const noexcept {
        return int64_t(bigEndian(PQgetvalue(r_, row, col), 8));
    }
    uint32_t u32(int row, int col) const noexcept {
        return uint32_t(bigEndian(PQgetvalue(r_, row, col), 4));
    }

  private:
    PGresult* r_;
};

// Binary parameters of one statement.
class Params {
  public:
    Params& i32(uint32_t v) {
        add(4);
        for (int i = 0; i < 4; ++i) buf_[off_.back() + size_t(i)] = char(v >> (24 - 8 * i));
        return *this;
    }
    Params& i64(int64_t v) {
        add(8);
        for (int i = 0; i < 8; ++i)
            buf_[off_.back() + size_t(i)] = char(uint64_t(v) >> (56 - 8 * i));
        return *this;
    }
    Params& bytes(const void* p, size_t n) {
        add(n);
        if (n) std::memcpy(buf_.data() + off_.back(), p, n);
        return *this;
    }
    PGresult* exec(PGconn* c, const char* stmt) {
        ptrs_.clear();
        for (size_t o : off_) ptrs_.push_back(buf_.data() + o);
        return PQexecPrepared(c, stmt, int(ptrs_.size()), ptrs_.data(), lens_.data(),
                              formats_.data(), 1);
    }

  private:
    void add(size_t n) {
        off_.push_back(buf_.size());
        buf_.resize(buf_.size() + n);
        lens_.push_back(int(n));
        formats_.push_back(1);
    }
    std::string buf_;
    std::vector<size_t> off_;
    std::vector<int> lens_;
    std::vector<int> formats_;
    std::vector<const char*> ptrs_;
};

bool validIdentifier(std::string_view s) noexcept {
    if (s.empty() || s.size() > size_t(kMaxIdentifier)) return false;
    if (!(std::islower(uint8_t(s[0])) || s[0] == '_')) return false;
    return std::all_of(s.begin(), s.end(), [](char c) {
        return std::islower(uint8_t(c)) || std::isdigit(uint8_t(c)) || c == '_';
    });
}

// What a database step came to.
enum class Outcome { Ok, Failed, Lost };  // Lost: the connection is gone

class PostgresHistory final : public uaplex::history_store::QueuedHistoryStore {
  public:
    PostgresHistory(Context ctx, const uaplex_history_params& params)
        : QueuedHistoryStore(ctx, params, 8192),
          table_(ctx.config_string("table").value_or("uaplex_history")),
          max_age_s_(setting(ctx, "retention_max_age_s", 90 * 86400, 0, int64_t(1) << 40)),
          maintenance_s_(setting(ctx, "retention_interval_s", 600, 1, 86400)),
          ahead_(int32_t(setting(ctx, "partitions_ahead", 2, 0, 24))),
          back_(int32_t(setting(ctx, "partitions_back", 12, 0, 1200))),
          connect_timeout_s_(setting(ctx, "connect_timeout_s", 5, 1, 300)),
          statement_timeout_ms_(setting(ctx, "statement_timeout_ms", 30000, 0, 3600000)),
          reconnect_min_ms_(setting(ctx, "reconnect_min_ms", 100, 1, 600000)),
          reconnect_max_ms_(setting(ctx, "reconnect_max_ms", 30000, 1, 3600000)) {
        ring_.resize(capacity_);
        ctx.check_known_keys({"conninfo",
                              "host",
                              "port",
                              "dbname",
                              "user",
                              "password",
                              "sslmode",
                              "table",
                              "queue_capacity",
                              "batch_size",
                              "flush_interval_ms",
                              "max_value_bytes",
                              "max_key_bytes",
                              "max_pending_operations",
                              "max_event_bytes",
                              "queue_retained_slots",
                              "retention_max_age_s",
                              "retention_interval_s",
                              "partitions_ahead",
                              "partitions_back",
                              "connect_timeout_s",
                              "statement_timeout_ms",
                              "reconnect_min_ms",
                              "reconnect_max_ms"});
        if (!validIdentifier(table_))
            throw uaplex::sdk::StatusError(
                UAPLEX_BadConfigurationError,
                "table must be 1-40 of [a-z0-9_], not starting with a digit");
        if (reconnect_max_ms_ < reconnect_min_ms_)
            throw uaplex::sdk::StatusError(UAPLEX_BadConfigurationError,
                                           "reconnect_max_ms is below reconnect_min_ms");
        // Connection keywords: defaults first, then the conninfo, then the single keys (the
        // last value of a keyword wins, libpq's rule).
        addKeyword("connect_timeout", std::to_string(connect_timeout_s_));
        addKeyword("application_name", "uaplex-history");
        addKeyword("keepalives", "1");
        addKeyword("keepalives_idle", "10");
        addKeyword("keepalives_interval", "5");
        addKeyword("keepalives_count", "3");
        if (auto c = ctx.config_string("conninfo")) addKeyword("dbname", std::string(*c));
        for (const char* k : {"host", "dbname", "user", "password", "sslmode"})
            if (auto v = ctx.config_string(k)) addKeyword(k, std::string(*v));
        if (auto p = ctx.config_int("port")) {
            if (*p < 1 || *p > 65535)
                throw uaplex::sdk::StatusError(UAPLEX_BadConfigurationError,
                                               "port out of range [1, 65535]");
            addKeyword("port", std::to_string(*p));
        }
        t_ = "\"" + table_ + "\"";
        nodes_ = "\"" + table_ + "_nodes\"";
        events_ = "\"" + table_ + "_events\"";
        value_months_.parent = table_;
        event_months_.parent = table_ + "_events";
        seqname_ = table_ + "_seq";
        registerQueueMetrics();
        metric("connected", UAPLEX_METRIC_GAUGE, &m_connected_);
        metric("reconnects", UAPLEX_METRIC_COUNTER, &m_reconnects_);
        metric("partitions_created", UAPLEX_METRIC_COUNTER, &m_parts_created_);
        metric("retention_partitions_dropped", UAPLEX_METRIC_COUNTER, &m_parts_dropped_);
        metric("retention_deleted", UAPLEX_METRIC_COUNTER, &m_retired_);
    }
    ~PostgresHistory() override {
        stop();
        disconnect();
    }

    uaplex_status start() override {
        // One attempt here, so a store whose database is up serves at once; without it the
        // thread keeps trying.
        if (!connect())
            context().warn("database not reachable at start; retrying in the background");
        startThread();
        return UAPLEX_Good;
    }

    uaplex_status stop() override {
        stopThread();
        return UAPLEX_Good;
    }

  private:
    void addKeyword(const char* k, std::string v) {
        keywords_.emplace_back(k);
        values_.push_back(std::move(v));
    }
    // The database is away: no waiting for it.
    uaplex_status acceptsJobs() const noexcept override {
        return connected_ ? UAPLEX_Good : UAPLEX_BadDataUnavailable;
    }
    void refused(uint64_t n) noexcept override { dropped_unlogged_ += n; }

    // --- connection (the store's thread, or start before it runs) --------------------------

    bool lost() const noexcept { return conn_ == nullptr || PQstatus(conn_) == CONNECTION_BAD; }
    std::string why() const { return conn_ ? PQerrorMessage(conn_) : "no connection"; }

    Result exec(const std::string& sql) { return Result(PQexec(conn_, sql.c_str())); }
    bool execOk(const std::string& sql) {
        Result r = exec(sql);
        if (!r.ok()) {
            context().warn(sql.substr(0, 80) + ": " + why());
            return false;
        }
        return true;
    }

    bool connect() {
        disconnect();
        std::vector<const char*> k;
        std::vector<const char*> v;
        for (size_t i = 0; i < keywords_.size(); ++i) {
            k.push_back(keywords_[i].c_str());
            v.push_back(values_[i].c_str());
        }
        k.push_back(nullptr);
        v.push_back(nullptr);
        conn_ = PQconnectdbParams(k.data(), v.data(), 1);
        if (PQstatus(conn_) != CONNECTION_OK) {
            const std::string msg = why();
            if (!connect_failed_logged_) context().warn("cannot connect: " + msg);
            connect_failed_logged_ = true;
            disconnect();
            return false;
        }
        connect_failed_logged_ = false;
        // The server's notices (e.g. "already exists, skipping") are not for the log.
        PQsetNoticeProcessor(
            conn_, [](void*, const char*) {}, nullptr);
        if (!setup()) {
            disconnect();
            return false;
        }
        {
            std::lock_guard lock(mu_);
            connected_ = true;
        }
        set(m_connected_, 1);
        if (ever_connected_) {
            add(m_reconnects_, 1);
            context().info("reconnected to the database");
        }
        ever_connected_ = true;
        maintain();  // retention and partitions at once, also after an outage
        next_maintenance_ = uaplex::sdk::monotonic_ms() + maintenance_s_ * 1000;
        return !lost();
    }

    void disconnect() noexcept {
        if (conn_) PQfinish(conn_);
        conn_ = nullptr;
        node_ids_.clear();
        seq_next_ = seq_end_ = 0;
        {
            std::lock_guard lock(mu_);
            connected_ = false;
        }
        set(m_connected_, 0);
    }

    // The schema (idempotent) and the prepared statements of this connection.
    bool setup() {
        if (statement_timeout_ms_ > 0 &&
            !execOk("SET statement_timeout = " + std::to_string(statement_timeout_ms_)))
            return false;
        const std::string& t = t_;
        const std::string def = "\"" + table_ + "_default\"";
        const bool ok =
            execOk("CREATE TABLE IF NOT EXISTS " + nodes_ +
                   " (id integer GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY, key bytea NOT NULL "
                   "UNIQUE)") &&
            execOk("CREATE SEQUENCE IF NOT EXISTS \"" + seqname_ + "\" INCREMENT BY " +
                   std::to_string(kSeqBlock)) &&
            // ts: the value's SourceTimestamp in DateTime ticks (100 ns since 1601, exact);
            // seq: the order stored; status: the StatusCode's bits; ps: source picoseconds in
            // the high, server picoseconds in the low 16 bits; value: the Variant's encoding.
            execOk("CREATE TABLE IF NOT EXISTS " + t +
                   " (node integer NOT NULL, ts bigint NOT NULL, seq bigint NOT NULL, server_ts "
                   "bigint NOT NULL, status integer NOT NULL, ps integer NOT NULL, value bytea "
                   "NOT NULL) PARTITION BY RANGE (ts)") &&
            execOk("CREATE INDEX IF NOT EXISTS \"" + table_ + "_node_ts\" ON " + t +
                   " (node, ts, seq)") &&
            execOk("CREATE TABLE IF NOT EXISTS " + def + " PARTITION OF " + t + " DEFAULT") &&
            // Events: partitioned by month as the values, read by (notifier, time, order
            // stored), updated and deleted by (notifier, EventId).
            execOk("CREATE TABLE IF NOT EXISTS " + events_ +
                   " (node integer NOT NULL, ts bigint NOT NULL, seq bigint NOT NULL, receive_ts "
                   "bigint NOT NULL, event_id bytea NOT NULL, event_type bytea NOT NULL, fields "
                   "bytea NOT NULL) PARTITION BY RANGE (ts)") &&
            execOk("CREATE INDEX IF NOT EXISTS \"" + table_ + "_events_node_ts\" ON " + events_ +
                   " (node, ts, seq)") &&
            execOk("CREATE INDEX IF NOT EXISTS \"" + table_ + "_events_node_id\" ON " + events_ +
                   " (node, event_id)");
        if (!ok) return false;
        // An events table made by a build before it was partitioned stays as it is: its
        // retention deletes rows by age.
        Result kind = exec("SELECT relkind FROM pg_class WHERE oid = '" + events_ + "'::regclass");
        if (!kind.ok() || kind.rows() != 1) return false;
        event_months_.partitioned = PQgetvalue(kind.get(), 0, 0)[0] == 'p';
        if (event_months_.partitioned &&
            !execOk("CREATE TABLE IF NOT EXISTS \"" + table_ + "_events_default\" PARTITION OF " +
                    events_ + " DEFAULT"))
            return false;
        if (!event_months_.partitioned && !plain_events_logged_) {
            plain_events_logged_ = true;
            context().warn("events: table " + events_ +
                           " is not partitioned (made by an earlier version): retention deletes "
                           "its rows by age");
        }
        if (!readMonths(value_months_) || !readMonths(event_months_)) return false;
        const std::string cols = "SELECT ts, seq, server_ts, status, ps, value FROM " + t + " ";
        const std::string ecols =
            "SELECT ts, seq, receive_ts, event_id, event_type, fields FROM " + events_ + " ";
        const struct {
            const char* name;
            std::string sql;
        } stmts[] = {
            {"fwd",
             cols + "WHERE node = $1 AND ts >= $2 AND ts < $3 AND (ts, seq) > ($4, $5) ORDER BY "
                    "ts, seq LIMIT $6"},
            {"bwd", cols + "WHERE node = $1 AND ts <= $2 AND ts > $3 AND (ts, seq) < ($4, $5) "
                           "ORDER BY ts DESC, seq DESC LIMIT $6"},
            {"before", cols + "WHERE node = $1 AND ts <= $2 ORDER BY ts DESC, seq DESC LIMIT 1"},
            {"after", cols + "WHERE node = $1 AND ts >= $2 ORDER BY ts, seq LIMIT 1"},
            {"at", "SELECT 1 FROM " + t + " WHERE node = $1 AND ts = $2 LIMIT 1"},
            {"del_at", "DELETE FROM " + t + " WHERE node = $1 AND ts = $2"},
            {"del_range", "DELETE FROM " + t + " WHERE node = $1 AND ts >= $2 AND ts < $3"},
            {"ins", "INSERT INTO " + t +
                        " (node, ts, seq, server_ts, status, ps, value) VALUES ($1, $2, $3, $4, "
                        "$5, $6, $7)"},
            {"node_find", "SELECT id FROM " + nodes_ + " WHERE key = $1"},
            {"node_add", "INSERT INTO " + nodes_ +
                             " (key) VALUES ($1) ON CONFLICT (key) DO UPDATE SET key = "
                             "EXCLUDED.key RETURNING id"},
            {"seq", "SELECT nextval('\"" + seqname_ + "\"')"},
            {"ev_fwd", ecols + "WHERE node = $1 AND ts >= $2 AND ts < $3 AND (ts, seq) > ($4, $5) "
                               "ORDER BY ts, seq LIMIT $6"},
            {"ev_bwd", ecols + "WHERE node = $1 AND ts <= $2 AND ts > $3 AND (ts, seq) < ($4, $5) "
                               "ORDER BY ts DESC, seq DESC LIMIT $6"},
            {"ev_find", "SELECT 1 FROM " + events_ + " WHERE node = $1 AND event_id = $2 LIMIT 1"},
            {"ev_del", "DELETE FROM " + events_ + " WHERE node = $1 AND event_id = $2"},
            {"ev_ins", "INSERT INTO " + events_ +
                           " (node, ts, seq, receive_ts, event_id, event_type, fields) VALUES ($1, "
                           "$2, $3, $4, $5, $6, $7)"},
        };
        for (const auto& s : stmts) {
            Result p(PQprepare(conn_, s.name, s.sql.c_str(), 0, nullptr));
            if (!p.ok()) {
                context().warn(std::string("prepare ") + s.name + ": " + why());
                return false;
            }
        }
        copy_cols_ = " (node, ts, seq, server_ts, status, ps, value) FROM STDIN (FORMAT binary)";
        copy_sql_ = "COPY " + t + copy_cols_;
        return true;
    }

    // The next seq number (the order stored); blocks of kSeqBlock from the sequence, so a
    // restart continues after every value stored before it. 0 on error.
    int64_t nextSeq() {
        if (seq_next_ == seq_end_ && !refillSeq()) return 0;
        return seq_next_++;
    }
    bool refillSeq() {
        Result r(Params().exec(conn_, "seq"));
        if (!r.ok() || r.rows() != 1) return false;
        seq_next_ = r.i64(0, 0);
        seq_end_ = seq_next_ + kSeqBlock;
        return true;
    }

    // The id of a node key; 0 when unknown and `create` is false, -1 on error.
    int32_t nodeId(std::string_view key, bool create) {
        if (auto it = node_ids_.find(key); it != node_ids_.end()) return it->second;
        Result r(
            Params().bytes(key.data(), key.size()).exec(conn_, create ? "node_add" : "node_find"));
        if (!r.ok()) return -1;
        if (r.rows() == 0) return 0;
        const auto id = int32_t(r.u32(0, 0));
        node_ids_.emplace(std::string(key), id);
        return id;
    }

    // A partitioned table: the values' or the events'. The store's thread only.
    struct Months {
        std::string parent;  // unquoted: "plant" or "plant_events"
        bool partitioned = true;
        std::set<int32_t> months;  // the monthly partitions there are
    };

    std::string partitionName(const Months& t, int32_t month) const {
        char ym[24];
        std::snprintf(ym, sizeof ym, "%04d%02d", month / 12, month % 12 + 1);
        return t.parent + "_p" + ym;
    }

    // The monthly partitions of `t` the catalogue lists.
    bool readMonths(Months& t) {
        t.months.clear();
        if (!t.partitioned) return true;
        Result r = exec(
            "SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid WHERE "
            "i.inhparent = '\"" +
            t.parent + "\"'::regclass");
        if (!r.ok()) return false;
        const std::string prefix = t.parent + "_p";
        for (int i = 0; i < r.rows(); ++i) {
            std::string name = PQgetvalue(r.get(), i, 0);
            if (name.size() != prefix.size() + 6 || name.compare(0, prefix.size(), prefix) != 0)
                continue;
            const int ym = std::atoi(name.c_str() + prefix.size());
            t.months.insert((ym / 100) * 12 + (ym % 100) - 1);
        }
        return true;
    }

    int32_t currentMonth() const noexcept {
        int64_t now = 0;
        const auto* api = context().api();
        if (!api || !api->utc_now || api->utc_now(context().raw(), &now) != UAPLEX_Good) return 0;
        int32_t m = 0;
        return monthOf(now, m) ? m : 0;
    }

    // Makes sure the month of `ts` has its partition when it lies in the window of monthly
    // partitions (partitions_back months before the current one to partitions_ahead after);
    // other times go to the default partition. Rows of the month already in the default
    // partition move into the new one, in the same transaction.
    // Not inside a transaction: a new partition commits on its own.
    void ensureMonth(Months& t, int64_t ts) {
        int32_t m = 0;
        if (!t.partitioned || !monthOf(ts, m) || t.months.count(m)) return;
        const int32_t now = currentMonth();
        if (now == 0 || m < now - back_ || m > now + ahead_) return;
        createMonth(t, m);
    }
    void createMonth(Months& t, int32_t m) {
        if (!t.partitioned || t.months.count(m)) return;
        const std::string parent = "\"" + t.parent + "\"";
        const std::string p = "\"" + partitionName(t, m) + "\"";
        const std::string def = "\"" + t.parent + "_default\"";
        const std::string lo = std::to_string(monthStart(m));
        const std::string hi = std::to_string(monthStart(m + 1));
        const bool ok =
            execOk("BEGIN") &&
            execOk("CREATE TABLE " + p + " (LIKE " + parent + " INCLUDING DEFAULTS)") &&
            execOk("WITH moved AS (DELETE FROM " + def + " WHERE ts >= " + lo + " AND ts < " + hi +
                   " RETURNING *) INSERT INTO " + p + " SELECT * FROM moved") &&
            execOk("ALTER TABLE " + parent + " ATTACH PARTITION " + p + " FOR VALUES FROM (" + lo +
                   ") TO (" + hi + ")") &&
            execOk("COMMIT");
        if (ok) {
            t.months.insert(m);
            add(m_parts_created_, 1);
        } else if (!lost()) {
            execOk("ROLLBACK");
            // Made by another server meanwhile, perhaps: take the catalogue's word.
            Result r = exec("SELECT to_regclass('" + p + "') IS NOT NULL");
            if (r.ok() && r.rows() == 1 && PQgetvalue(r.get(), 0, 0)[0] == 't') t.months.insert(m);
        }
    }

    // Partitions ahead of time, and retention: whole monthly partitions that end before the
    // age go (DROP TABLE), and the default partition's rows older than it are deleted; for
    // values and events alike.
    void maintain() {
        const int32_t now = currentMonth();
        if (now == 0) return;
        for (Months* t : {&value_months_, &event_months_})
            for (int32_t m = now; m <= now + ahead_ && !lost(); ++m) createMonth(*t, m);
        if (max_age_s_ <= 0) return;
        int64_t utc = 0;
        const auto* api = context().api();
        if (!api || !api->utc_now || api->utc_now(context().raw(), &utc) != UAPLEX_Good) return;
        const int64_t cutoff = utc - max_age_s_ * kTicksPerSecond;
        for (Months* t : {&value_months_, &event_months_}) {
            std::vector<int32_t> old;
            for (int32_t m : t->months)
                if (monthStart(m + 1) <= cutoff) old.push_back(m);
            for (int32_t m : old) {
                if (!execOk("DROP TABLE IF EXISTS \"" + partitionName(*t, m) + "\"")) break;
                t->months.erase(m);
                add(m_parts_dropped_, 1);
                context().info("retention: dropped partition " + partitionName(*t, m));
            }
            const std::string rows =
                t->partitioned ? "\"" + t->parent + "_default\"" : "\"" + t->parent + "\"";
            Result r = exec("DELETE FROM " + rows + " WHERE ts < " + std::to_string(cutoff));
            if (r.ok()) add(m_retired_, std::atoll(PQcmdTuples(r.get())));
        }
    }

    // --- the store's thread ----------------------------------------------------------------

    void run() noexcept override {
        int64_t backoff = reconnect_min_ms_;
        int64_t next_connect = 0;
        int64_t last_drop_log = 0;
        std::unique_lock lock(mu_);
        for (;;) {
            bool stopping = !running_;
            if (!connected_) {
                // Nothing waits for the database: pending operations end now.
                failJobs(lock, stopping ? UAPLEX_BadServerHalted : UAPLEX_BadDataUnavailable);
                const int64_t now = uaplex::sdk::monotonic_ms();
                if (stopping || now >= next_connect) {
                    lock.unlock();
                    bool ok = false;
                    try {
                        ok = connect();
                    } catch (...) {
                    }
                    lock.lock();
                    if (ok) {
                        backoff = reconnect_min_ms_;
                        continue;
                    }
                    if (stopping) {
                        if (used_ > 0) {
                            context().error("stopping with the database away: " +
                                            std::to_string(used_) + " values not written");
                            add(m_dropped_, int64_t(used_));
                            used_ = 0;
                        }
                        failJobs(lock, UAPLEX_BadServerHalted);
                        break;
                    }
                    next_connect = uaplex::sdk::monotonic_ms() + backoff;
                    backoff = std::min(backoff * 2, reconnect_max_ms_);
                }
                logDrops(lock, last_drop_log);
                const int64_t wait =
                    std::max<int64_t>(1, next_connect - uaplex::sdk::monotonic_ms());
                cv_.wait_for(lock, std::chrono::milliseconds(std::min<int64_t>(wait, 1000)),
                             [&] { return !running_ || !jobs_.empty(); });
                continue;
            }
            if (running_ && used_ < batch_ && jobs_.empty() &&
                uaplex::sdk::monotonic_ms() < next_maintenance_)
                cv_.wait_for(lock, std::chrono::milliseconds(flush_ms_),
                             [&] { return !running_ || used_ >= batch_ || !jobs_.empty(); });
            stopping = !running_;
            // Every value queued before the first job is written before it runs. The values
            // stay in the queue (counted against its bound) until their COPY succeeded.
            bool gone = false;
            while (used_ > 0) {
                const size_t n = std::min(used_, batch_);
                const size_t from = head_;
                lock.unlock();
                const Outcome o = writeBatch(from, n);
                lock.lock();
                if (o == Outcome::Lost) {
                    gone = true;
                    break;
                }
                head_ = (head_ + n) % capacity_;
                used_ -= n;
                written_ += n;
                if (o == Outcome::Failed) add(m_write_errors_, int64_t(n));
                if (!jobs_.empty() || stopping || used_ < batch_) break;
            }
            set(m_queued_, int64_t(used_));
            if (!gone) settleQueue();
            while (!gone && !jobs_.empty() && written_ >= jobs_.front().after) {
                Job job = std::move(jobs_.front());
                jobs_.pop_front();
                lock.unlock();
                uaplex_status st = UAPLEX_BadServerHalted;
                if (!stopping) {
                    try {
                        st = job.run();
                    } catch (...) {
                        st = UAPLEX_BadInternalError;
                    }
                    if (lost()) {
                        st = UAPLEX_BadDataUnavailable;
                        gone = true;
                    }
                }
                job.done.complete(st);
                lock.lock();
            }
            if (gone) {
                lostConnection(lock);
                next_connect = uaplex::sdk::monotonic_ms() + backoff;
                continue;
            }
            if (stopping && used_ == 0 && jobs_.empty()) break;
            logDrops(lock, last_drop_log);
            if (!stopping && uaplex::sdk::monotonic_ms() >= next_maintenance_) {
                lock.unlock();
                try {
                    maintain();
                } catch (...) {
                }
                const bool l = lost();
                lock.lock();
                next_maintenance_ = uaplex::sdk::monotonic_ms() + maintenance_s_ * 1000;
                if (l) lostConnection(lock);
            }
        }
        lock.unlock();
        disconnect();
    }

    void lostConnection(std::unique_lock<std::mutex>& lock) {
        lock.unlock();
        context().warn("lost the database connection: " + why());
        disconnect();
        lock.lock();
    }

    void failJobs(std::unique_lock<std::mutex>& lock, uaplex_status st) {
        while (!jobs_.empty()) {
            Job job = std::move(jobs_.front());
            jobs_.pop_front();
            lock.unlock();
            job.done.complete(st);
            lock.lock();
        }
    }

    // Logs the values dropped since the last line, at most every 5 s.
    void logDrops(std::unique_lock<std::mutex>& lock, int64_t& last) {
        if (dropped_unlogged_ == 0) return;
        const int64_t now = uaplex::sdk::monotonic_ms();
        if (last != 0 && now - last < 5000) return;
        const uint64_t n = std::exchange(dropped_unlogged_, 0);
        last = now;
        lock.unlock();
        context().warn("queue full: dropped " + std::to_string(n) + " values (queue_capacity " +
                       std::to_string(capacity_) + ")");
        lock.lock();
    }

    // Writes ring slots [from, from + n) with one binary COPY. The slots are not touched by
    // store meanwhile: they stay counted in used_ until this returns. First what needs the
    // database (node ids, partitions, seq numbers), then the rows streamed in chunks, so the
    // server stores a chunk while the next one is encoded.
    Outcome writeBatch(size_t from, size_t n) {
        ids_.resize(n);
        int64_t lo = 0;
        int64_t hi = 0;  // the month of partitions already made sure of
        // One monthly partition for the whole batch (the usual case): COPY goes straight into
        // it, without routing each row.
        int32_t only = -1;
        size_t values = 0;
        for (size_t i = 0; i < n; ++i) {
            const Slot& s = ring_[(from + i) % capacity_];
            if (s.event) {
                ensureMonth(event_months_, s.source);
                if (lost()) return Outcome::Lost;
                ids_[i] = nodeId(s.key, true);
                if (ids_[i] <= 0) return lost() ? Outcome::Lost : Outcome::Failed;
                continue;
            }
            ++values;
            if (s.source < lo || s.source >= hi) {
                ensureMonth(value_months_, s.source);
                int32_t m = 0;
                if (monthOf(s.source, m)) {
                    lo = monthStart(m);
                    hi = monthStart(m + 1);
                } else {
                    lo = hi = 0;
                }
                only = (values == 1 && lo != hi && value_months_.months.count(m)) ? m : -2;
                if (lost()) return Outcome::Lost;
            }
            ids_[i] = nodeId(s.key, true);
            if (ids_[i] <= 0) return lost() ? Outcome::Lost : Outcome::Failed;
        }
        if (values < n) {
            // The batch's events first, one transaction; the values' COPY after.
            if (const Outcome o = writeEvents(from, n); o != Outcome::Ok) return o;
            if (values == 0) {
                add(m_written_, int64_t(n));
                return Outcome::Ok;
            }
        }
        // Seq numbers: blocks from the sequence, in order.
        seqs_.clear();
        for (size_t have = 0; have < values;) {  // the COPY below skips the event slots
            if (seq_next_ == seq_end_ && !refillSeq())
                return lost() ? Outcome::Lost : Outcome::Failed;
            const int64_t first = seq_next_;
            const auto take =
                size_t(std::min<int64_t>(seq_end_ - seq_next_, int64_t(values - have)));
            seq_next_ += int64_t(take);
            seqs_.push_back({first, take});
            have += take;
        }
        const std::string direct =
            only >= 0 ? "COPY \"" + partitionName(value_months_, only) + "\"" + copy_cols_
                      : std::string();
        Result start(PQexec(conn_, only >= 0 ? direct.c_str() : copy_sql_.c_str()));
        if (!start.get() || PQresultStatus(start.get()) != PGRES_COPY_IN) {
            if (lost()) return Outcome::Lost;
            context().warn("COPY: " + why());
            return Outcome::Failed;
        }
        constexpr size_t kChunk = 256 * 1024;
        bool sent = true;
        copy_.clear();
        copy_.append("PGCOPY\n\377\r\n\0", 11);
        put32(copy_, 0);
        put32(copy_, 0);
        size_t run = 0;  // seqs_ entry
        int64_t seq = seqs_.empty() ? 0 : seqs_[0].first;
        size_t left = seqs_.empty() ? 0 : seqs_[0].count;
        for (size_t i = 0; i < n && sent; ++i) {
            const Slot& s = ring_[(from + i) % capacity_];
            if (s.event) continue;
            if (left == 0) {
                ++run;
                seq = seqs_[run].first;
                left = seqs_[run].count;
            }
            --left;
            put16(copy_, 7);
            put32(copy_, 4);
            put32(copy_, uint32_t(ids_[i]));
            put32(copy_, 8);
            put64(copy_, uint64_t(s.source));
            put32(copy_, 8);
            put64(copy_, uint64_t(seq++));
            put32(copy_, 8);
            put64(copy_, uint64_t(s.server));
            put32(copy_, 4);
            put32(copy_, s.status);
            put32(copy_, 4);
            put32(copy_, (uint32_t(s.source_ps) << 16) | s.server_ps);
            put32(copy_, uint32_t(s.value.size()));
            copy_.append(s.value);
            if (copy_.size() >= kChunk) {
                sent = PQputCopyData(conn_, copy_.data(), int(copy_.size())) == 1;
                copy_.clear();
            }
        }
        put16(copy_, 0xFFFF);
        sent = sent && PQputCopyData(conn_, copy_.data(), int(copy_.size())) == 1;
        sent = PQputCopyEnd(conn_, sent ? nullptr : "send failed") == 1 && sent;
        bool ok = sent;
        for (Result r(PQgetResult(conn_)); r.get(); r = Result(PQgetResult(conn_)))
            ok = ok && PQresultStatus(r.get()) == PGRES_COMMAND_OK;
        if (!ok) {
            if (lost()) return Outcome::Lost;
            context().warn("COPY: " + why());
            return Outcome::Failed;
        }
        add(m_written_, int64_t(n));
        return Outcome::Ok;
    }

    // The event slots of ring slots [from, from + n) (node ids in ids_), in one transaction.
    Outcome writeEvents(size_t from, size_t n) {
        if (!execOk("BEGIN")) return lost() ? Outcome::Lost : Outcome::Failed;
        bool ok = true;
        for (size_t i = 0; i < n && ok; ++i) {
            const Slot& s = ring_[(from + i) % capacity_];
            if (!s.event) continue;
            ok = insertEvent(ids_[i], s.source, s.server, s.event_id.data(), s.event_id.size(),
                             s.event_type, s.value.data(), s.value.size());
        }
        if (!ok || !execOk("COMMIT")) {
            if (lost()) return Outcome::Lost;
            execOk("ROLLBACK");
            context().warn("events: " + why());
            return Outcome::Failed;
        }
        return Outcome::Ok;
    }

    bool insertEvent(int32_t node, int64_t ts, int64_t receive, const void* id, size_t id_len,
                     std::string_view type, const void* fields, size_t fields_len) {
        const int64_t seq = nextSeq();
        if (seq == 0) return false;
        Result in(Params()
                      .i32(uint32_t(node))
                      .i64(ts)
                      .i64(seq)
                      .i64(receive)
                      .bytes(id, id_len)
                      .bytes(type.data(), type.size())
                      .bytes(fields, fields_len)
                      .exec(conn_, "ev_ins"));
        return in.ok();
    }

    uaplex_status doReadEvents(const uaplex_history_event_read& r,
                               uaplex_history_event_read_result& out) override {
        const uaplex_value_alloc& alloc = *r.alloc;
        uaplex::history_store::EventReadState<EventCursor> rs;
        if (const uaplex_status st = rs.begin(r, params_); st != UAPLEX_Good) return st;
        const int32_t node =
            nodeId(std::string_view(r.notifier_key.data, r.notifier_key.len), false);
        if (node < 0) return UAPLEX_BadInternalError;
        if (node == 0) {
            rs.cursor.phase = 3;
            return rs.finish(alloc, out);
        }
        Result q(Params()
                     .i32(uint32_t(node))
                     .i64(r.start_time)
                     .i64(rs.rangeEnd(r))
                     .i64(rs.cursor.afterTs(rs.forward))
                     .i64(rs.cursor.afterSeq(rs.forward))
                     .i64(int64_t(rs.max) + 1)
                     .exec(conn_, rs.forward ? "ev_fwd" : "ev_bwd"));
        if (!q.ok()) return UAPLEX_BadInternalError;
        const int rows = q.rows();
        const int take = std::min(rows, int(rs.max));
        for (int i = 0; i < take; ++i) {
            if (!uaplex::history_store::fillEvent(
                    rs.events[rs.n], q.i64(i, 0), q.i64(i, 2), PQgetvalue(q.get(), i, 3),
                    size_t(PQgetlength(q.get(), i, 3)), PQgetvalue(q.get(), i, 4),
                    size_t(PQgetlength(q.get(), i, 4)), PQgetvalue(q.get(), i, 5),
                    size_t(PQgetlength(q.get(), i, 5)), alloc))
                return UAPLEX_BadOutOfMemory;
            rs.cursor.ts = q.i64(i, 0);
            rs.cursor.seq = q.i64(i, 1);
            rs.cursor.started = true;
            ++rs.n;
        }
        if (rows <= int(rs.max)) rs.cursor.phase = 3;
        return rs.finish(alloc, out);
    }

    uaplex_status doUpdateEvents(const uaplex_history_event_update& u) override {
        const int32_t node =
            nodeId(std::string_view(u.notifier_key.data, u.notifier_key.len), true);
        if (node <= 0) return UAPLEX_BadInternalError;
        for (uint32_t i = 0; i < u.event_count; ++i) ensureMonth(event_months_, u.events[i].time);
        if (!execOk("BEGIN")) return UAPLEX_BadInternalError;
        bool ok = true;
        for (uint32_t i = 0; i < u.event_count && ok; ++i) {
            const auto& e = u.events[i];
            if (!validEvent(e, false)) {
                u.results[i] = UAPLEX_BadOutOfRange;
                continue;
            }
            Result at(Params()
                          .i32(uint32_t(node))
                          .bytes(e.event_id.data, e.event_id.len)
                          .exec(conn_, "ev_find"));
            if (!at.ok()) {
                ok = false;
                break;
            }
            const bool exists = at.rows() > 0;
            if (const uaplex_status no = uaplex::history_store::updateConflict(u.perform, exists);
                no != UAPLEX_Good) {
                u.results[i] = no;
                continue;
            }
            if (exists) {
                Result d(Params()
                             .i32(uint32_t(node))
                             .bytes(e.event_id.data, e.event_id.len)
                             .exec(conn_, "ev_del"));
                ok = d.ok();
            }
            ok = ok && insertEvent(node, e.time, e.receive_time, e.event_id.data, e.event_id.len,
                                   std::string_view(e.event_type.data, e.event_type.len),
                                   e.fields.data, e.fields.len);
            u.results[i] = exists ? UAPLEX_GoodEntryReplaced : UAPLEX_GoodEntryInserted;
        }
        if (!ok || !execOk("COMMIT")) {
            if (!lost()) execOk("ROLLBACK");
            return UAPLEX_BadInternalError;
        }
        return UAPLEX_Good;
    }

    uaplex_status doDeleteEvents(const uaplex_history_event_delete& d) override {
        const int32_t node =
            nodeId(std::string_view(d.notifier_key.data, d.notifier_key.len), false);
        if (node < 0) return UAPLEX_BadInternalError;
        for (uint32_t i = 0; i < d.event_count; ++i) {
            const uaplex_bytes id = d.event_ids[i];
            if (node == 0 || id.len == 0 || id.data == nullptr ||
                id.len > uaplex::history_store::kMaxEventIdBytes) {
                d.results[i] = UAPLEX_BadEventIdUnknown;
                continue;
            }
            Result r(Params().i32(uint32_t(node)).bytes(id.data, id.len).exec(conn_, "ev_del"));
            if (!r.ok()) return UAPLEX_BadInternalError;
            d.results[i] = std::strtoull(PQcmdTuples(r.get()), nullptr, 10) == 0
                               ? UAPLEX_BadEventIdUnknown
                               : UAPLEX_Good;
        }
        return UAPLEX_Good;
    }

    static bool rowValue(const Result& r, int row, const uaplex_value_alloc& alloc,
                         uaplex_history_value& v) noexcept {
        const int len = PQgetlength(r.get(), row, 5);
        return uaplex::history_store::fillValue(v, r.i64(row, 0), r.i64(row, 2), r.u32(row, 3),
                                                r.u32(row, 4), PQgetvalue(r.get(), row, 5),
                                                size_t(len > 0 ? len : 0), alloc);
    }

    uaplex_status doRead(const uaplex_history_read& r, uaplex_history_read_result& out) override {
        const uaplex_value_alloc& alloc = *r.alloc;
        uaplex::history_store::ReadState<Cursor> rs;
        if (const uaplex_status st = rs.begin(r, params_); st != UAPLEX_Good) return st;
        const int32_t node = nodeId(std::string_view(r.node_key.data, r.node_key.len), false);
        if (node < 0) return UAPLEX_BadInternalError;

        bool failed = false;
        auto bound = [&](int64_t time, bool before) -> bool {
            if (node > 0) {
                Result q(Params()
                             .i32(uint32_t(node))
                             .i64(time)
                             .exec(conn_, before ? "before" : "after"));
                if (!q.ok()) {
                    failed = true;
                    return false;
                }
                if (q.rows() == 1) {
                    if (!rowValue(q, 0, alloc, rs.values[rs.n])) return false;
                    ++rs.n;
                    return true;
                }
            }
            rs.values[rs.n++] = uaplex::history_store::missingBound(time);
            return true;
        };

        if (rs.cursor.phase == 0) {
            bool at_start = false;
            if (node > 0) {
                Result q(Params().i32(uint32_t(node)).i64(r.start_time).exec(conn_, "at"));
                if (!q.ok()) return UAPLEX_BadInternalError;
                at_start = q.rows() > 0;
            }
            if (!at_start && !bound(r.start_time, rs.forward))
                return failed ? UAPLEX_BadInternalError : UAPLEX_BadOutOfMemory;
            rs.cursor.phase = 1;
        }
        if (rs.cursor.phase == 1 && rs.n < rs.max) {
            bool range_done = true;
            if (node > 0) {
                const uint32_t want = rs.max - rs.n;
                Result q(Params()
                             .i32(uint32_t(node))
                             .i64(r.start_time)
                             .i64(rs.rangeEnd(r))
                             .i64(rs.cursor.afterTs(rs.forward))
                             .i64(rs.cursor.afterSeq(rs.forward))
                             .i64(int64_t(want) + 1)
                             .exec(conn_, rs.forward ? "fwd" : "bwd"));
                if (!q.ok()) return UAPLEX_BadInternalError;
                const int rows = q.rows();
                const int take = std::min(rows, int(want));
                for (int i = 0; i < take; ++i) {
                    if (!rowValue(q, i, alloc, rs.values[rs.n])) return UAPLEX_BadOutOfMemory;
                    rs.cursor.ts = q.i64(i, 0);
                    rs.cursor.seq = q.i64(i, 1);
                    rs.cursor.started = true;
                    ++rs.n;
                }
                range_done = rows <= int(want);
            }
            if (range_done) rs.cursor.phase = rs.bounds ? 2 : 3;
        }
        if (rs.cursor.phase == 2 && rs.n < rs.max) {
            if (!bound(r.end_time, !rs.forward))
                return failed ? UAPLEX_BadInternalError : UAPLEX_BadOutOfMemory;
            rs.cursor.phase = 3;
        }
        return rs.finish(alloc, out);
    }

    uaplex_status doUpdate(const uaplex_history_update& u) override {
        const int32_t node = nodeId(std::string_view(u.node_key.data, u.node_key.len), true);
        if (node <= 0) return UAPLEX_BadInternalError;
        for (uint32_t i = 0; i < u.value_count; ++i)
            ensureMonth(value_months_, u.values[i].source_timestamp);
        if (!execOk("BEGIN")) return UAPLEX_BadInternalError;
        bool ok = true;
        for (uint32_t i = 0; i < u.value_count && ok; ++i) {
            const auto& v = u.values[i];
            if (v.value.len > max_value_bytes_) {
                u.results[i] = UAPLEX_BadOutOfRange;
                continue;
            }
            Result at(Params().i32(uint32_t(node)).i64(v.source_timestamp).exec(conn_, "at"));
            if (!at.ok()) {
                ok = false;
                break;
            }
            const bool exists = at.rows() > 0;
            if (const uaplex_status no = uaplex::history_store::updateConflict(u.perform, exists);
                no != UAPLEX_Good) {
                u.results[i] = no;
                continue;
            }
            if (exists) {
                Result d(
                    Params().i32(uint32_t(node)).i64(v.source_timestamp).exec(conn_, "del_at"));
                ok = d.ok();
            }
            const int64_t seq = ok ? nextSeq() : 0;
            ok = ok && seq != 0;
            if (ok) {
                Result in(Params()
                              .i32(uint32_t(node))
                              .i64(v.source_timestamp)
                              .i64(seq)
                              .i64(v.server_timestamp)
                              .i32(v.status)
                              .i32((uint32_t(v.source_picoseconds) << 16) | v.server_picoseconds)
                              .bytes(v.value.data, v.value.len)
                              .exec(conn_, "ins"));
                ok = in.ok();
            }
            u.results[i] = exists ? UAPLEX_GoodEntryReplaced : UAPLEX_GoodEntryInserted;
        }
        if (!ok || !execOk("COMMIT")) {
            if (!lost()) execOk("ROLLBACK");
            return UAPLEX_BadInternalError;
        }
        return UAPLEX_Good;
    }

    uaplex_status doDelete(uaplex_history_delete& d) override {
        d.deleted = 0;
        const int32_t node = nodeId(std::string_view(d.node_key.data, d.node_key.len), false);
        if (node < 0) return UAPLEX_BadInternalError;
        if (node == 0 || d.start_time >= d.end_time) return UAPLEX_Good;
        Result r(Params()
                     .i32(uint32_t(node))
                     .i64(d.start_time)
                     .i64(d.end_time)
                     .exec(conn_, "del_range"));
        if (!r.ok()) return UAPLEX_BadInternalError;
        d.deleted = uint64_t(std::strtoull(PQcmdTuples(r.get()), nullptr, 10));
        return UAPLEX_Good;
    }

    const std::string table_;
    const int64_t max_age_s_;
    const int64_t maintenance_s_;
    const int32_t ahead_;
    const int32_t back_;
    const int64_t connect_timeout_s_;
    const int64_t statement_timeout_ms_;
    const int64_t reconnect_min_ms_;
    const int64_t reconnect_max_ms_;
    std::vector<std::string> keywords_;
    std::vector<std::string> values_;
    std::string t_, nodes_, events_, seqname_, copy_sql_, copy_cols_;

    // Under mu_.
    bool connected_ = false;
    uint64_t dropped_unlogged_ = 0;

    // The store's thread only (or start, before the thread runs).
    PGconn* conn_ = nullptr;
    bool ever_connected_ = false;
    bool connect_failed_logged_ = false;
    int64_t next_maintenance_ = 0;
    int64_t seq_next_ = 0;
    int64_t seq_end_ = 0;
    Months value_months_;
    Months event_months_;
    bool plain_events_logged_ = false;
    // Heterogeneous lookup: a key from a slot or a request is looked up without a copy.
    struct KeyHash {
        using is_transparent = void;
        size_t operator()(std::string_view k) const noexcept {
            return std::hash<std::string_view>{}(k);
        }
    };
    std::unordered_map<std::string, int32_t, KeyHash, std::equal_to<>> node_ids_;
    std::string copy_;
    std::vector<int32_t> ids_;  // a batch's node ids
    struct SeqRun {
        int64_t first;
        size_t count;
    };
    std::vector<SeqRun> seqs_;  // a batch's seq numbers

    uaplex_metric* m_connected_ = nullptr;
    uaplex_metric* m_reconnects_ = nullptr;
    uaplex_metric* m_parts_created_ = nullptr;
    uaplex_metric* m_parts_dropped_ = nullptr;
    uaplex_metric* m_retired_ = nullptr;
};

}  // namespace

UAPLEX_PLUGIN(("history-postgres", "1.0.0",
               "Historical values in PostgreSQL, partitioned by month"),
              uaplex::sdk::HistoryFactory<PostgresHistory>)
