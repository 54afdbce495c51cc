// SPDX-License-Identifier: Apache-2.0
// HistoryRead of processed values (ReadProcessedDetails, the Part 13 aggregates) and of values
// at given times (ReadAtTimeDetails) from a history store plugin (history-sqlite), over values
// written with their source timestamps and statuses into Demo.Measured. Every expected value
// is worked out by hand in the comments.
#include <catch2/catch.hpp>

#include <filesystem>
#include <string>
#include <vector>

#include <uaplex/encoding/generated/ns0.hpp>
#include <uaplex/encoding/generated/types.hpp>

#include "support/pg_cluster.hpp"
#include "support/services_fixture.hpp"

namespace {

using namespace uaplex;
using Catch::Matchers::WithinAbs;

constexpr ua::DateTime kT0 = 132223104000000000LL;  // 2020-01-01T00:00:00Z
constexpr ua::DateTime kSecond = 10000000;
ua::DateTime at(double seconds) {
    return kT0 + ua::DateTime(seconds * double(kSecond));
}
constexpr std::uint32_t kCalculated = 0x1, kInterpolated = 0x2, kPartial = 0x4;
constexpr std::uint32_t kBits = 0x41F;  // InfoType DataValue and the aggregate bits

struct TempDb {
    std::filesystem::path path;
    TempDb() {
        path = std::filesystem::temp_directory_path() /
               ("uaplex-history-read-" + std::to_string(::getpid()) + "-" +
                std::to_string(reinterpret_cast<std::uintptr_t>(this)) + ".db");
        clean();
    }
    ~TempDb() { clean(); }
    void clean() {
        std::error_code ec;
        for (const char* s : {"", "-wal", "-shm"}) std::filesystem::remove(path.string() + s, ec);
    }
};

// The store: history-sqlite in `db`, or history-postgres (a table of its own) in `pg`.
std::string historyPlugins(const std::string& db, const std::string& history,
                           const test::PgCluster* pg) {
    static int tables = 0;
    std::string store =
        pg ? std::string("[plugins.history-postgres]\nlibrary = \"") +
                 UAPLEX_HISTORY_POSTGRES_PLUGIN + "\"\nconninfo = \"" + pg->conninfo() +
                 "\"\ntable = \"read_test_" + std::to_string(++tables) +
                 "\"\n[history]\nplugin = \"history-postgres\"\n"
           : std::string("[plugins.history-sqlite]\nlibrary = \"") + UAPLEX_HISTORY_SQLITE_PLUGIN +
                 "\"\npath = \"" + db + "\"\n[history]\nplugin = \"history-sqlite\"\n";
    return test::nodeManagerPlugins() + store +
           "nodes = [\"nsu=urn:uaplex:demo;s=Demo.Measured\"]\n" + history;
}

struct History {
    TempDb db;
    test::Server s;
    std::uint16_t ns;
    explicit History(const std::string& history = "", const test::PgCluster* pg = nullptr)
        : s("", historyPlugins(db.path.string(), history, pg)),
          ns(s.namespaceIndex("urn:uaplex:demo")) {}

    ua::NodeId measured() { return ua::stringNodeId(ns, "Demo.Measured"); }

    void put(double seconds, double v, std::uint32_t status = UAPLEX_Good) {
        ua::WriteValue wv{};
        wv.nodeId = measured();
        wv.attributeId = 13;
        wv.indexRange = ua::nullString();
        wv.value.mask = UAPLEX_DATAVALUE_VALUE | UAPLEX_DATAVALUE_SOURCE_TIMESTAMP;
        wv.value.value.encoding = UAPLEX_TYPE_DOUBLE;
        wv.value.value.array_length = -1;
        wv.value.value.value.double_ = v;
        wv.value.source_timestamp = at(seconds);
        if (status != UAPLEX_Good) {
            wv.value.mask |= UAPLEX_DATAVALUE_STATUS;
            wv.value.status = status;
        }
        REQUIRE(s.writeValue(wv) == UAPLEX_Good);
    }

    // HistoryRead of `nodes` (each with its continuation point) with `details`; the
    // response, or null with *fault set when the service fails.
    template <class D>
    ua::HistoryReadResponse* read(const D& details, std::vector<ua::HistoryReadValueId> nodes,
                                  uaplex_status* fault = nullptr, bool release = false,
                                  ua::TimestampsToReturn ts = ua::TimestampsToReturn::Source) {
        auto* d = s.arena.allocateArray<D>(1);
        *d = details;
        auto* items = s.arena.allocateArray<ua::HistoryReadValueId>(nodes.size());
        for (std::size_t i = 0; i < nodes.size(); ++i) items[i] = nodes[i];
        ua::HistoryReadRequest req{};
        req.historyReadDetails.data_type = enc::dataTypeOf<D>();
        req.historyReadDetails.object = d;
        req.timestampsToReturn = ts;
        req.releaseContinuationPoints = release;
        req.nodesToRead = {std::int32_t(nodes.size()), items};
        services::ServiceCall c{s.arena, s.session.get(), enc::dataTypeOf<ua::HistoryReadRequest>(),
                                &req};
        const uaplex_status st = s.services->historyRead(c);
        if (fault) *fault = st;
        if (st != UAPLEX_Good) return nullptr;
        auto* resp = static_cast<ua::HistoryReadResponse*>(c.response);
        REQUIRE(resp->results.size() == std::int32_t(nodes.size()));
        return resp;
    }
    ua::HistoryReadValueId node(const ua::ByteString& cp = {-1, nullptr}) {
        ua::HistoryReadValueId id{};
        id.nodeId = measured();
        id.indexRange = ua::nullString();
        id.dataEncoding.name = ua::nullString();
        id.continuationPoint = cp;
        return id;
    }
};

std::vector<ua::DataValue> valuesOf(const ua::HistoryReadResult& r) {
    std::vector<ua::DataValue> out;
    if (r.historyData.object == nullptr) return out;
    const auto* d = static_cast<const ua::HistoryData*>(r.historyData.object);
    for (std::int32_t i = 0; i < d->dataValues.length; ++i) out.push_back(d->dataValues.data[i]);
    return out;
}

double num(const ua::DataValue& dv) {
    REQUIRE((dv.mask & UAPLEX_DATAVALUE_VALUE) != 0);
    switch (dv.value.encoding) {
        case UAPLEX_TYPE_DOUBLE:
            return dv.value.value.double_;
        case UAPLEX_TYPE_INT32:
            return dv.value.value.int32;
        case UAPLEX_TYPE_UINT32:
            return dv.value.value.uint32;
        case UAPLEX_TYPE_STATUSCODE:
            return dv.value.value.statuscode;
        default:
            FAIL("unexpected type " << int(dv.value.encoding));
            return 0;
    }
}
std::uint32_t status(const ua::DataValue& dv) {
    return (dv.mask & UAPLEX_DATAVALUE_STATUS) ? dv.status : UAPLEX_Good;
}

ua::ReadProcessedDetails processed(double from, double to, double intervalMs,
                                   std::uint32_t aggregate) {
    ua::ReadProcessedDetails d{};
    d.startTime = at(from);
    d.endTime = to < 0 ? at(0) : at(to);
    d.processingInterval = intervalMs;
    static thread_local ua::NodeId agg;
    agg = ua::numericNodeId(0, aggregate);
    d.aggregateType = {1, &agg};
    d.aggregateConfiguration.useServerCapabilitiesDefaults = true;
    return d;
}

// Dataset A, all Good: 10 @0 s, 30 @15 s, 20 @30 s, 50 @45 s, 40 @60 s. Read [0 s, 60 s) in
// two intervals of 30 s: [0, 30) holds 10, 30 with 20 at its end; [30, 60) holds 20, 50 with
// 40 at its end.
void datasetA(History& h) {
    h.put(0, 10);
    h.put(15, 30);
    h.put(30, 20);
    h.put(45, 50);
    h.put(60, 40);
}

struct Expect {
    std::uint32_t aggregate;
    double first, second;
};

}  // namespace

// Every served aggregate over dataset A (both backends).
void everyAggregate(History& h) {
    datasetA(h);
    namespace ns0 = ua::ns0;
    // Sloped lines: [0,30) area 0..15 (10+30)/2*15 = 300, 15..30 (30+20)/2*15 = 375, 675 in
    // all, 22.5 on average; [30,60) (20+50)/2*15 = 525 and (50+40)/2*15 = 675, 1200, 40.
    const std::vector<Expect> cases = {
        {ns0::AggregateFunction_Interpolative, 10, 20},   // the raw values at 0 and 30
        {ns0::AggregateFunction_Average, 20, 35},         // (10+30)/2, (20+50)/2
        {ns0::AggregateFunction_TimeAverage, 22.5, 40},   // area / 30 s
        {ns0::AggregateFunction_TimeAverage2, 22.5, 40},  // the same lines (all Good)
        {ns0::AggregateFunction_Total, 675, 1200},        // TimeAverage * 30 s
        {ns0::AggregateFunction_Total2, 675, 1200},       // the area in value * s
        {ns0::AggregateFunction_Minimum, 10, 20},
        {ns0::AggregateFunction_Maximum, 30, 50},
        {ns0::AggregateFunction_MinimumActualTime, 10, 20},
        {ns0::AggregateFunction_MaximumActualTime, 30, 50},
        {ns0::AggregateFunction_Range, 20, 30},     // 30-10, 50-20
        {ns0::AggregateFunction_Minimum2, 10, 20},  // the bounds 10 and 20 at the edges
        {ns0::AggregateFunction_Maximum2, 30, 50},
        {ns0::AggregateFunction_Count, 2, 2},
        {ns0::AggregateFunction_Start, 10, 20},
        {ns0::AggregateFunction_End, 30, 50},
        {ns0::AggregateFunction_Delta, 20, 30},  // 30-10, 50-20
        {ns0::AggregateFunction_DurationGood, 30000, 30000},
        {ns0::AggregateFunction_DurationBad, 0, 0},
        {ns0::AggregateFunction_PercentGood, 100, 100},
        {ns0::AggregateFunction_PercentBad, 0, 0},
        {ns0::AggregateFunction_WorstQuality, 0, 0},  // Good
        {ns0::AggregateFunction_WorstQuality2, 0, 0},
    };
    for (const Expect& e : cases) {
        INFO("aggregate i=" << e.aggregate);
        ua::HistoryReadResponse* r = h.read(processed(0, 60, 30000, e.aggregate), {h.node()});
        REQUIRE(r->results.data[0].statusCode == UAPLEX_Good);
        auto v = valuesOf(r->results.data[0]);
        REQUIRE(v.size() == 2);
        CHECK((status(v[0]) & 0xC0000000u) == 0);
        CHECK((status(v[1]) & 0xC0000000u) == 0);
        CHECK_THAT(num(v[0]), WithinAbs(e.first, 1e-9));
        CHECK_THAT(num(v[1]), WithinAbs(e.second, 1e-9));
        // The interval's start, but for the ActualTime forms and End (the raw value's time).
        const bool actual = e.aggregate == ns0::AggregateFunction_MinimumActualTime ||
                            e.aggregate == ns0::AggregateFunction_MaximumActualTime ||
                            e.aggregate == ns0::AggregateFunction_End;
        if (!actual) {
            CHECK(v[0].source_timestamp == at(0));
            CHECK(v[1].source_timestamp == at(30));
        }
    }
    // The ActualTime forms carry the raw value's time: 30 at 15 s, 50 at 45 s.
    auto v = valuesOf(
        h.read(processed(0, 60, 30000, ns0::AggregateFunction_MaximumActualTime), {h.node()})
            ->results.data[0]);
    REQUIRE(v.size() == 2);
    CHECK(v[0].source_timestamp == at(15));
    CHECK(v[1].source_timestamp == at(45));
    // Average is Calculated.
    v = valuesOf(h.read(processed(0, 60, 30000, ns0::AggregateFunction_Average), {h.node()})
                     ->results.data[0]);
    CHECK((status(v[0]) & kBits) == (0x400 | kCalculated));
}

TEST_CASE("history: processed reads of every served aggregate, worked out by hand") {
    History h;
    everyAggregate(h);
}

TEST_CASE("history: processed reads backward, partial intervals, Bad values, refusals") {
    History h;
    datasetA(h);
    namespace ns0 = ua::ns0;
    // Backward from 60 s to 0: (30, 60] holds 50 and 40 (its later edge): 45; (0, 30] holds
    // 30 and 20: 25. The later interval comes first, stamped with its later edge.
    auto v = valuesOf(h.read(processed(60, 0, 30000, ns0::AggregateFunction_Average), {h.node()})
                          ->results.data[0]);
    REQUIRE(v.size() == 2);
    CHECK_THAT(num(v[0]), WithinAbs(45, 1e-9));
    CHECK(v[0].source_timestamp == at(60));
    CHECK_THAT(num(v[1]), WithinAbs(25, 1e-9));
    CHECK(v[1].source_timestamp == at(30));
    // [0, 50) in intervals of 30 s: [0, 30) and the short [30, 50) with 20 and 50: Average
    // 35; Count 2, Partial.
    v = valuesOf(h.read(processed(0, 50, 30000, ns0::AggregateFunction_Average), {h.node()})
                     ->results.data[0]);
    REQUIRE(v.size() == 2);
    CHECK_THAT(num(v[1]), WithinAbs(35, 1e-9));
    v = valuesOf(
        h.read(processed(0, 50, 30000, ns0::AggregateFunction_Count), {h.node()})->results.data[0]);
    REQUIRE(v.size() == 2);
    CHECK((status(v[0]) & kPartial) == 0);
    CHECK((status(v[1]) & kPartial) != 0);
    CHECK(num(v[1]) == 2);
    // processingInterval 0: one interval [0, 60): (10+30+20+50)/4 = 27.5.
    v = valuesOf(
        h.read(processed(0, 60, 0, ns0::AggregateFunction_Average), {h.node()})->results.data[0]);
    REQUIRE(v.size() == 1);
    CHECK_THAT(num(v[0]), WithinAbs(27.5, 1e-9));

    // Dataset B at 100 s: 10 Good, 110 s Bad (BadSensorFailure), 20 @130 s Good, 5 @140 s.
    h.put(100, 10);
    h.put(110, 0, UAPLEX_BadSensorFailure);
    h.put(130, 20);
    h.put(140, 5);
    // One interval [100, 140): Good 100..110 and 130..140, Bad 110..130.
    auto one = [&](std::uint32_t agg) {
        auto r = valuesOf(h.read(processed(100, 140, 0, agg), {h.node()})->results.data[0]);
        REQUIRE(r.size() == 1);
        return r[0];
    };
    CHECK_THAT(num(one(ns0::AggregateFunction_DurationGood)), WithinAbs(20000, 1e-6));
    CHECK_THAT(num(one(ns0::AggregateFunction_DurationBad)), WithinAbs(20000, 1e-6));
    CHECK_THAT(num(one(ns0::AggregateFunction_PercentGood)), WithinAbs(50, 1e-9));
    CHECK_THAT(num(one(ns0::AggregateFunction_PercentBad)), WithinAbs(50, 1e-9));
    CHECK(std::uint32_t(num(one(ns0::AggregateFunction_WorstQuality))) == UAPLEX_BadSensorFailure);
    // Average over the Good values 10 and 20: 15; 2 of 3 values Good, 1 Bad: neither share
    // reaches 100 %: Uncertain_DataSubNormal.
    ua::DataValue avg = one(ns0::AggregateFunction_Average);
    CHECK_THAT(num(avg), WithinAbs(15, 1e-9));
    CHECK((status(avg) & 0xFFFF0000u) == UAPLEX_UncertainDataSubNormal);
    CHECK(num(one(ns0::AggregateFunction_Count)) == 2);

    // Refusals, per node.
    uaplex_status fault = 0;
    auto st = [&](const ua::ReadProcessedDetails& d) {
        auto* r = h.read(d, {h.node()}, &fault);
        REQUIRE(r != nullptr);
        return r->results.data[0].statusCode;
    };
    CHECK(st(processed(0, 60, 30000, 2365 /* AnnotationCount: not served */)) ==
          UAPLEX_BadAggregateNotSupported);
    auto cfg = processed(0, 60, 30000, ns0::AggregateFunction_Average);
    cfg.aggregateConfiguration.useServerCapabilitiesDefaults = false;
    cfg.aggregateConfiguration.percentDataBad = 50;
    cfg.aggregateConfiguration.percentDataGood = 40;  // leaves a gap: refused
    CHECK(st(cfg) == UAPLEX_BadAggregateConfigurationRejected);
    CHECK(st(processed(10, 10, 1000, ns0::AggregateFunction_Average)) == UAPLEX_BadInvalidArgument);
    CHECK(st(processed(0, 60, -5, ns0::AggregateFunction_Average)) == UAPLEX_BadInvalidArgument);
    // Two nodes, one aggregate.
    auto* r = h.read(processed(0, 60, 30000, ns0::AggregateFunction_Average), {h.node(), h.node()});
    CHECK(r->results.data[0].statusCode == UAPLEX_BadAggregateListMismatch);
    CHECK(r->results.data[1].statusCode == UAPLEX_BadAggregateListMismatch);
}

TEST_CASE("history: a processed read pages its intervals and its raw values") {
    // Three intervals per call, two raw values per store page, at most 16 raw values held:
    // each call gets as far as 16 values reach, one whole interval.
    History h("max_intervals_per_node = 3\nmax_values_per_node = 2\nmax_processed_values = 16\n");
    namespace ns0 = ua::ns0;
    // 40 values: i at 1000 + i s. Averages of 10 s intervals: 4.5, 14.5, 24.5, 34.5.
    for (int i = 0; i < 40; ++i) h.put(1000 + i, i);
    std::vector<double> got;
    ua::ByteString cp{-1, nullptr};
    int calls = 0;
    do {
        auto* r =
            h.read(processed(1000, 1040, 10000, ns0::AggregateFunction_Average), {h.node(cp)});
        const auto& res = r->results.data[0];
        REQUIRE(res.statusCode == UAPLEX_Good);
        for (const auto& dv : valuesOf(res)) got.push_back(num(dv));
        cp = res.continuationPoint;
        REQUIRE(++calls < 10);
    } while (cp.length > 0);
    REQUIRE(got.size() == 4);
    CHECK_THAT(got[0], WithinAbs(4.5, 1e-9));
    CHECK_THAT(got[1], WithinAbs(14.5, 1e-9));
    CHECK_THAT(got[2], WithinAbs(24.5, 1e-9));
    CHECK_THAT(got[3], WithinAbs(34.5, 1e-9));
    CHECK(calls == 4);
    // A continuation point is good once and only for its own read.
    auto* first = h.read(processed(1000, 1040, 10000, ns0::AggregateFunction_Average), {h.node()});
    cp = first->results.data[0].continuationPoint;
    REQUIRE(cp.length > 0);
    auto* other =
        h.read(processed(1000, 1040, 10000, ns0::AggregateFunction_Maximum), {h.node(cp)});
    CHECK(other->results.data[0].statusCode == UAPLEX_BadContinuationPointInvalid);
    first = h.read(processed(1000, 1040, 10000, ns0::AggregateFunction_Average), {h.node()});
    cp = first->results.data[0].continuationPoint;
    auto* rel = h.read(processed(1000, 1040, 10000, ns0::AggregateFunction_Average), {h.node(cp)},
                       nullptr, true);
    CHECK(rel->results.data[0].statusCode == UAPLEX_Good);
    auto* gone = h.read(processed(1000, 1040, 10000, ns0::AggregateFunction_Average), {h.node(cp)});
    CHECK(gone->results.data[0].statusCode == UAPLEX_BadContinuationPointInvalid);
    // An interval with more raw values than a read may hold (20 > 16): refused.
    auto* big = h.read(processed(1000, 1040, 20000, ns0::AggregateFunction_Average), {h.node()});
    CHECK(big->results.data[0].statusCode == UAPLEX_BadTooManyOperations);
}

// Values at given times over dataset A and a Bad value (both backends); History made with
// max_values_per_node = 3, max_req_times = 8.
void atTimes(History& h) {
    datasetA(h);
    h.put(70, 0, UAPLEX_BadSensorFailure);  // 40 @60, Bad @70, 60 @80
    h.put(80, 60);
    static ua::DateTime times[6];
    times[0] = at(15);    // raw 30
    times[1] = at(7.5);   // between 10 @0 and 30 @15: 20, Interpolated
    times[2] = at(37.5);  // between 20 @30 and 50 @45: 35
    times[3] = at(75);    // between 40 @60 and Bad @70 / 60 @80
    times[4] = at(-10);   // before any value: no data
    times[5] = at(50);    // between 50 @45 and 40 @60: 46.666...
    ua::ReadAtTimeDetails d{};
    d.reqTimes = {6, times};
    d.useSimpleBounds = false;
    // Three values per call: two calls with a continuation point between them.
    auto* r = h.read(d, {h.node()});
    REQUIRE(r->results.data[0].statusCode == UAPLEX_Good);
    auto v = valuesOf(r->results.data[0]);
    REQUIRE(v.size() == 3);
    ua::ByteString cp = r->results.data[0].continuationPoint;
    REQUIRE(cp.length > 0);
    auto* r2 = h.read(d, {h.node(cp)});
    REQUIRE(r2->results.data[0].statusCode == UAPLEX_Good);
    CHECK(r2->results.data[0].continuationPoint.length <= 0);
    for (const auto& dv : valuesOf(r2->results.data[0])) v.push_back(dv);
    REQUIRE(v.size() == 6);
    for (int i = 0; i < 6; ++i) CHECK(v[i].source_timestamp == times[i]);
    CHECK(num(v[0]) == 30);
    CHECK((status(v[0]) & kInterpolated) == 0);
    CHECK_THAT(num(v[1]), WithinAbs(20, 1e-9));
    CHECK(status(v[1]) == (0x400 | kInterpolated));
    CHECK_THAT(num(v[2]), WithinAbs(35, 1e-9));
    // Interpolated bounds skip the Bad value: the line from 40 @60 to 60 @80 gives 55 at
    // 75 s, Uncertain for the Bad value passed over.
    CHECK_THAT(num(v[3]), WithinAbs(55, 1e-9));
    CHECK((status(v[3]) & 0xFFFF0000u) == UAPLEX_UncertainDataSubNormal);
    CHECK((status(v[4]) & 0xFFFF0000u) == UAPLEX_BadNoData);
    CHECK_THAT(num(v[5]), WithinAbs(50 - 10.0 / 15 * 5, 1e-9));
    // Simple bounds at 75 s: the value after (Bad @70) is Bad itself... the value before 75 s
    // is the Bad one at 70 s: no value.
    static ua::DateTime t75[1];
    t75[0] = at(75);
    d.reqTimes = {1, t75};
    d.useSimpleBounds = true;
    v = valuesOf(h.read(d, {h.node()})->results.data[0]);
    REQUIRE(v.size() == 1);
    CHECK((status(v[0]) & 0x80000000u) != 0);
    // Simple bounds at 65 s: 40 @60 then the Bad @70: held at 40, Uncertain.
    t75[0] = at(65);
    v = valuesOf(h.read(d, {h.node()})->results.data[0]);
    REQUIRE(v.size() == 1);
    CHECK_THAT(num(v[0]), WithinAbs(40, 1e-9));
    CHECK((status(v[0]) & 0xFFFF0000u) == UAPLEX_UncertainDataSubNormal);
    // More reqTimes than max_req_times: the request is refused.
    static ua::DateTime many[9];
    for (int i = 0; i < 9; ++i) many[i] = at(i);
    d.reqTimes = {9, many};
    uaplex_status fault = 0;
    CHECK(h.read(d, {h.node()}, &fault) == nullptr);
    CHECK(fault == UAPLEX_BadTooManyOperations);
    d.reqTimes = {0, nullptr};
    CHECK(h.read(d, {h.node()})->results.data[0].statusCode == UAPLEX_BadInvalidTimestampArgument);
}

TEST_CASE("history: values at given times, raw or interpolated, simple or interpolated bounds") {
    History h("max_values_per_node = 3\nmax_req_times = 8\n");
    atTimes(h);
}

TEST_CASE("history: processed and at-time reads from history-postgres") {
    test::PgCluster pg;
    pg.start();
    {
        History h("", &pg);
        everyAggregate(h);
    }
    History h("max_values_per_node = 3\nmax_req_times = 8\n", &pg);
    atTimes(h);
}
