// SPDX-License-Identifier: Apache-2.0
// The PostgreSQL history store (plugins/history/postgres) against a real server this test
// starts and removes (support/pg_cluster.hpp): the values' and the events' tables are
// partitioned by month, with partitions made ahead and whole ones dropped by retention; while the
// server is away store keeps taking values into its bounded queue, counts what it refuses, and
// operations end with BadDataUnavailable; when the server is back the queued values arrive and
// reads work.
#include <libpq-fe.h>

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <uaplex/types.h>

#include "history/history_fixture.hpp"
#include "support/pg_cluster.hpp"

namespace {

using uaplex::conformance::history::Alloc;
using uaplex::conformance::history::Done;
using uaplex::conformance::history::Loaded;
constexpr int64_t kDay = int64_t(86400) * UAPLEX_DATETIME_TICKS_PER_SECOND;

struct Store : Loaded {
    Store(const uaplex::test::PgCluster& pg, const std::string& table, toml::table extra = {}) {
        extra.insert_or_assign("conninfo", pg.conninfo());
        extra.insert_or_assign("table", table);
        uaplex::conformance::history::loadStore(*this, 10000, extra);
    }
    // Stores values at `times` for node "k"; returns the status, *accepted how many.
    uaplex_status put(const std::vector<int64_t>& times, size_t* accepted = nullptr,
                      std::string_view key = "k") {
        std::vector<uaplex_history_value> in(times.size());
        std::vector<std::string> bytes(times.size());
        for (size_t i = 0; i < times.size(); ++i) {
            bytes[i] = "v" + std::to_string(times[i]);
            in[i] = uaplex::conformance::history::value(key, times[i], bytes[i]);
        }
        size_t n = 0;
        const uaplex_status st = ops->store(self, in.size(), in.data(), &n);
        if (accepted) *accepted = n;
        return st;
    }
    struct Page {
        uaplex_status status = 0;
        std::vector<int64_t> times;
    };
    Page read(int64_t start = UAPLEX_HISTORY_TIME_MIN + 1, int64_t end = UAPLEX_HISTORY_TIME_MAX,
              std::string_view key = "k") {
        Alloc a;
        uaplex_history_read r =
            uaplex::conformance::history::readRequest(key, start, end, 10000, a);
        uaplex_history_read_result res = uaplex::conformance::history::readResult();
        Done d;
        Page p;
        p.status = d.wait(ops->read_raw(self, &r, &res, &d.c));
        if (p.status == UAPLEX_Good)
            for (uint32_t i = 0; i < res.value_count; ++i)
                p.times.push_back(res.values[i].source_timestamp);
        return p;
    }
    // Stores one event of notifier "n" at each of `times` (EventId "e<time>").
    uaplex_status putEvents(const std::vector<int64_t>& times) {
        std::vector<std::string> ids(times.size());
        std::vector<uaplex_history_event> in(times.size());
        static const std::string kNotifier = "n", kType = "i=2041", kFields = "f";
        for (size_t i = 0; i < times.size(); ++i) {
            ids[i] = "e" + std::to_string(times[i]);
            uaplex_history_event& e = in[i];
            e.hdr = UAPLEX_HEADER_INIT(uaplex_history_event, UAPLEX_STYPE_HISTORY_EVENT);
            e.notifier_key = {kNotifier.data(), kNotifier.size()};
            e.time = times[i];
            e.receive_time = times[i];
            e.event_id = {reinterpret_cast<const uint8_t*>(ids[i].data()), ids[i].size()};
            e.event_type = {kType.data(), kType.size()};
            e.fields = {reinterpret_cast<const uint8_t*>(kFields.data()), kFields.size()};
        }
        size_t n = 0;
        return ops->store_events(self, in.size(), in.data(), &n);
    }
    // The times of notifier "n"'s events, oldest first.
    Page readEvents() {
        Alloc a;
        static const std::string kNotifier = "n";
        uaplex_history_event_read r{};
        r.hdr = UAPLEX_HEADER_INIT(uaplex_history_event_read, UAPLEX_STYPE_HISTORY_EVENT_READ);
        r.max_events = 1000;
        r.notifier_key = {kNotifier.data(), kNotifier.size()};
        r.start_time = UAPLEX_HISTORY_TIME_MIN + 1;
        r.end_time = UAPLEX_HISTORY_TIME_MAX;
        r.alloc = &a.alloc;
        uaplex_history_event_read_result res{};
        res.hdr = UAPLEX_HEADER_INIT(uaplex_history_event_read_result,
                                     UAPLEX_STYPE_HISTORY_EVENT_READ_RESULT);
        Done d;
        Page p;
        p.status = d.wait(ops->read_events(self, &r, &res, &d.c));
        if (p.status == UAPLEX_Good)
            for (uint32_t i = 0; i < res.event_count; ++i) p.times.push_back(res.events[i].time);
        return p;
    }
    // Waits (bounded) until a metric reaches `value`.
    bool awaitMetric(const std::string& name, int64_t value, int seconds = 20) {
        for (int i = 0; i < seconds * 100; ++i) {
            if (metric(name) == value) return true;
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
        }
        return false;
    }
};

// A libpq connection of the test's own, to look at the schema.
struct Sql {
    PGconn* c;
    explicit Sql(const uaplex::test::PgCluster& pg) : c(PQconnectdb(pg.conninfo().c_str())) {
        REQUIRE(PQstatus(c) == CONNECTION_OK);
    }
    ~Sql() { PQfinish(c); }
    Sql(const Sql&) = delete;
    Sql& operator=(const Sql&) = delete;
    std::string one(const std::string& q) {
        PGresult* r = PQexec(c, q.c_str());
        INFO(q << ": " << PQerrorMessage(c));
        REQUIRE(PQresultStatus(r) == PGRES_TUPLES_OK);
        std::string v = PQntuples(r) > 0 ? PQgetvalue(r, 0, 0) : "";
        PQclear(r);
        return v;
    }
};

int64_t utcNow(Store& s) {
    int64_t now = 0;
    REQUIRE(uaplex::host::hostApiTable()->utc_now(s.ctx.get(), &now) == UAPLEX_Good);
    return now;
}

std::vector<int64_t> ramp(int64_t t0, int n) {
    std::vector<int64_t> v;
    for (int i = 0; i < n; ++i) v.push_back(t0 + i);
    return v;
}

}  // namespace

TEST_CASE("partitions: one per month by range on the time, ahead of time, dropped whole") {
    uaplex::test::PgCluster pg;
    int64_t now = 0;
    {
        Store s(pg, "plant", toml::table{{"retention_max_age_s", 0}, {"partitions_ahead", 2}});
        now = utcNow(s);
        // Now, 100 days ago (a month of its own), and 1601 (outside the monthly window).
        REQUIRE(s.put({now, now - 100 * kDay, 1000}) == UAPLEX_Good);
        CHECK(s.read().times == std::vector<int64_t>{1000, now - 100 * kDay, now});
    }
    Sql sql(pg);
    // Declarative partitioning by range on ts; one index fitted to (node, time) reads.
    CHECK(sql.one("SELECT partstrat FROM pg_partitioned_table WHERE partrelid = "
                  "'plant'::regclass") == "r");
    CHECK(sql.one("SELECT pg_get_partkeydef('plant'::regclass)") == "RANGE (ts)");
    CHECK(sql.one("SELECT indexdef FROM pg_indexes WHERE tablename = 'plant'")
              .find("(node, ts, seq)") != std::string::npos);
    // The current month and the two after it, the month 100 days ago, the default partition.
    CHECK(sql.one("SELECT count(*) FROM pg_inherits WHERE inhparent = 'plant'::regclass") == "5");
    CHECK(sql.one("SELECT count(*) FROM plant_default") == "1");
    const std::string old = sql.one("SELECT tableoid::regclass FROM plant WHERE ts = " +
                                    std::to_string(now - 100 * kDay));
    CHECK(old.rfind("plant_p", 0) == 0);
    // A partition's bounds are a month of DateTime ticks.
    CHECK(sql.one("SELECT pg_get_expr(relpartbound, oid) LIKE 'FOR VALUES FROM (%) TO (%)' FROM "
                  "pg_class WHERE relname = '" +
                  old + "'") == "t");

    // Retention of 45 days drops the old month's partition whole, and the 1601 value from
    // the default partition; the current month stays.
    Store s(pg, "plant", toml::table{{"retention_max_age_s", 45 * 86400}, {"partitions_ahead", 2}});
    CHECK(s.metric("retention_partitions_dropped") == 1);
    CHECK(s.metric("retention_deleted") == 1);
    CHECK(sql.one("SELECT to_regclass('" + old + "') IS NULL") == "t");
    CHECK(s.read().times == std::vector<int64_t>{now});
}

TEST_CASE("partitions: events by month as the values, old months dropped whole") {
    uaplex::test::PgCluster pg;
    int64_t now = 0;
    {
        Store s(pg, "ev", toml::table{{"retention_max_age_s", 0}, {"partitions_ahead", 2}});
        now = utcNow(s);
        REQUIRE(s.putEvents({now, now - 100 * kDay, 1000}) == UAPLEX_Good);
        CHECK(s.readEvents().times == std::vector<int64_t>{1000, now - 100 * kDay, now});
    }
    Sql sql(pg);
    CHECK(sql.one("SELECT partstrat FROM pg_partitioned_table WHERE partrelid = "
                  "'ev_events'::regclass") == "r");
    CHECK(sql.one("SELECT pg_get_partkeydef('ev_events'::regclass)") == "RANGE (ts)");
    // The current month and the two after it, the month 100 days ago, the default partition.
    CHECK(sql.one("SELECT count(*) FROM pg_inherits WHERE inhparent = 'ev_events'::regclass") ==
          "5");
    CHECK(sql.one("SELECT count(*) FROM ev_events_default") == "1");
    const std::string old = sql.one("SELECT tableoid::regclass FROM ev_events WHERE ts = " +
                                    std::to_string(now - 100 * kDay));
    CHECK(old.rfind("ev_events_p", 0) == 0);
    // Each partition has the indexes the reads and the updates by EventId use.
    CHECK(sql.one("SELECT count(*) FROM pg_indexes WHERE tablename = '" + old + "'") == "2");

    // Retention of 45 days drops the old month's partition of events whole and the 1601 event
    // from the default partition; the values' partitions have nothing that old.
    Store s(pg, "ev", toml::table{{"retention_max_age_s", 45 * 86400}, {"partitions_ahead", 2}});
    CHECK(s.metric("retention_partitions_dropped") == 1);
    CHECK(s.metric("retention_deleted") == 1);
    CHECK(sql.one("SELECT to_regclass('" + old + "') IS NULL") == "t");
    CHECK(s.readEvents().times == std::vector<int64_t>{now});
}

TEST_CASE("the database away: store keeps returning, drops are counted, values flow again") {
    uaplex::test::PgCluster pg;
    toml::table t{{"queue_capacity", 1000}, {"batch_size", 100},       {"flush_interval_ms", 10},
                  {"reconnect_min_ms", 50}, {"reconnect_max_ms", 200}, {"retention_max_age_s", 0}};
    Store s(pg, "outage", t);
    const int64_t t0 = utcNow(s);
    REQUIRE(s.put(ramp(t0, 500)) == UAPLEX_Good);
    REQUIRE(s.awaitMetric("written", 500));
    CHECK(s.read().times.size() == 500);

    pg.stop();
    // 1500 values while the server is away: the queue takes 1000 (its bound), the rest is
    // refused and counted; no call waits for the database.
    size_t accepted_total = 0;
    int refused_calls = 0;
    for (int i = 0; i < 15; ++i) {
        size_t accepted = 0;
        const uaplex_status st = s.put(ramp(t0 + 1000 + i * 100, 100), &accepted);
        accepted_total += accepted;
        if (st == UAPLEX_BadResourceUnavailable)
            ++refused_calls;
        else
            CHECK(st == UAPLEX_Good);
    }
    CHECK(accepted_total == 1000);
    CHECK(refused_calls == 5);
    CHECK(s.metric("dropped") == 500);
    CHECK(s.metric("stored") == 1500);
    // Once the store saw the server go, operations end at once with BadDataUnavailable.
    REQUIRE(s.awaitMetric("connected", 0));
    CHECK(s.read().status == UAPLEX_BadDataUnavailable);
    uaplex_history_delete del{};
    del.hdr = UAPLEX_HEADER_INIT(uaplex_history_delete, UAPLEX_STYPE_HISTORY_DELETE);
    del.node_key = {"k", 1};
    del.start_time = 0;
    del.end_time = 1;
    Done d;
    CHECK(d.wait(s.ops->delete_raw(s.self, &del, &d.c)) == UAPLEX_BadDataUnavailable);

    pg.start();
    // The queued values arrive; reads work; new values flow.
    REQUIRE(s.awaitMetric("written", 1500));
    CHECK(s.metric("reconnects") >= 1);
    CHECK(s.metric("connected") == 1);
    auto after = s.read().times;
    REQUIRE(after.size() == 1500);
    CHECK(after[499] == t0 + 499);
    CHECK(after[500] == t0 + 1000);   // the first value stored while away
    CHECK(after[1499] == t0 + 1999);  // the last one the queue took
    REQUIRE(s.put(ramp(t0 + 5000, 10)) == UAPLEX_Good);
    REQUIRE(s.awaitMetric("written", 1510));
    CHECK(s.read(t0 + 5000, t0 + 6000).times.size() == 10);
}

TEST_CASE("a store started while the database is away serves once it appears") {
    uaplex::test::PgCluster pg;
    pg.stop();
    Store s(pg, "late", toml::table{{"reconnect_min_ms", 50}, {"reconnect_max_ms", 200}});
    CHECK(s.metric("connected") == 0);
    CHECK(s.read().status == UAPLEX_BadDataUnavailable);
    const int64_t t0 = utcNow(s);
    REQUIRE(s.put(ramp(t0, 10)) == UAPLEX_Good);
    pg.start();
    REQUIRE(s.awaitMetric("written", 10));
    CHECK(s.read().times == ramp(t0, 10));
    CHECK(s.metric("reconnects") == 0);  // the first connection is not a reconnect
}

TEST_CASE("node keys are bytes: a NUL or invalid UTF-8 spoils no batch") {
    uaplex::test::PgCluster pg;
    Store s(pg, "keys", toml::table{{"batch_size", 1000}, {"flush_interval_ms", 10}});
    const int64_t t0 = utcNow(s);
    const std::string odd("s=A\0\xff\xfe", 7);
    REQUIRE(s.put(ramp(t0, 3)) == UAPLEX_Good);
    REQUIRE(s.put(ramp(t0, 2), nullptr, odd) == UAPLEX_Good);
    REQUIRE(s.put(ramp(t0 + 10, 1)) == UAPLEX_Good);
    REQUIRE(s.awaitMetric("written", 6));
    CHECK(s.metric("write_errors") == 0);
    CHECK(s.read().times == std::vector<int64_t>{t0, t0 + 1, t0 + 2, t0 + 10});
    CHECK(s.read(UAPLEX_HISTORY_TIME_MIN + 1, UAPLEX_HISTORY_TIME_MAX, odd).times == ramp(t0, 2));
    CHECK(s.read(UAPLEX_HISTORY_TIME_MIN + 1, UAPLEX_HISTORY_TIME_MAX, "s=A").times.empty());
}
