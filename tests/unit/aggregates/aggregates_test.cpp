// SPDX-License-Identifier: Apache-2.0
// The aggregates against the example historian of Part 13 Annex A.1.1 ("Historian 1") and
// variations of it. Each expected value is worked out by hand in the comments from the
// rules of Part 13 (bounds, regions, PercentDataGood/PercentDataBad); where Annex A prints
// the table for Historian 1 (Interpolative A.2, TimeAverage2 A.5, MaximumActualTime A.11,
// Maximum2 A.13) the expectation is that table.
#include <catch2/catch.hpp>

#include <uaplex/statuscodes.h>
#include <uaplex/aggregates/aggregates.hpp>
#include <uaplex/encoding/generated/types.hpp>

#include <cmath>
#include <optional>
#include <random>
#include <vector>

namespace {

using namespace uaplex;
using namespace uaplex::aggregates;
using ua::DataValue;
using ua::DateTime;
using ua::StatusCode;

// 12:00:00 of the examples; any instant serves.
constexpr DateTime kNoon =
    UAPLEX_DATETIME_UNIX_EPOCH + INT64_C(1700000000) * UAPLEX_DATETIME_TICKS_PER_SECOND;
DateTime at(double seconds) {
    return kNoon + static_cast<DateTime>(std::llround(seconds * 1e7));
}

DataValue rawValue(double s, std::optional<double> v, StatusCode status) {
    DataValue d{};
    d.mask = UAPLEX_DATAVALUE_STATUS | UAPLEX_DATAVALUE_SOURCE_TIMESTAMP;
    d.status = status;
    d.source_timestamp = at(s);
    if (v) {
        d.mask |= UAPLEX_DATAVALUE_VALUE;
        d.value.encoding = UAPLEX_TYPE_DOUBLE;
        d.value.array_length = -1;
        d.value.value.double_ = *v;
    }
    return d;
}

// Part 13 A.1.1, seconds after 12:00:00. The first entry marks the creation of the point
// (Bad_NoData); there is no data after 12:01:30.
std::vector<DataValue> historian1() {
    return {
        rawValue(0, std::nullopt, UAPLEX_BadNoData),
        rawValue(10, 10, UAPLEX_Good),
        rawValue(20, 20, UAPLEX_Good),
        rawValue(30, 30, UAPLEX_Good),
        rawValue(40, 40, UAPLEX_Bad),
        rawValue(50, 50, UAPLEX_Good),
        rawValue(60, 60, UAPLEX_Good),
        rawValue(70, 70, UAPLEX_Uncertain),
        rawValue(80, 80, UAPLEX_Good),
        rawValue(90, 90, UAPLEX_Good),
    };
}

// Historian 1's configuration: TreatUncertainAsBad false, PercentDataBad and
// PercentDataGood 100, sloped, stepped extrapolation.
ProcessedRequest request(double start, double end, double intervalSeconds, bool stepped = false) {
    ProcessedRequest r;
    r.startTime = at(start);
    r.endTime = at(end);
    r.processingIntervalMs = intervalSeconds * 1000.0;
    r.configuration.treatUncertainAsBad = false;
    r.configuration.percentDataBad = 100;
    r.configuration.percentDataGood = 100;
    r.configuration.useSlopedExtrapolation = false;
    r.stepped = stepped;
    return r;
}

constexpr std::uint32_t C = kHistorianCalculated;
constexpr std::uint32_t I = kHistorianInterpolated;
constexpr std::uint32_t P = kHistorianPartial;
constexpr std::uint32_t M = kHistorianMultiValue;
constexpr StatusCode G = UAPLEX_Good;
constexpr StatusCode U = UAPLEX_UncertainDataSubNormal;

StatusCode st(StatusCode code, std::uint32_t bits = 0) {
    return bits == 0 ? code : (code | bits | kInfoTypeDataValue);
}

struct Expected {
    double time;                  // seconds after 12:00:00
    std::optional<double> value;  // none: a Bad result without a value
    StatusCode status;
};
constexpr std::optional<double> kNone = std::nullopt;

double asDouble(const ua::Variant& v) {
    switch (v.encoding) {
        case UAPLEX_TYPE_DOUBLE:
            return v.value.double_;
        case UAPLEX_TYPE_INT32:
            return v.value.int32;
        case UAPLEX_TYPE_BOOLEAN:
            return v.value.boolean ? 1 : 0;
        case UAPLEX_TYPE_STATUSCODE:
            return static_cast<double>(v.value.statuscode);
        default:
            FAIL("unexpected result type " << int(v.encoding));
            return 0;
    }
}

// Any numeric result as a double (the random test accepts every result type).
double asNumber(const ua::Variant& v) {
    switch (v.encoding) {
        case UAPLEX_TYPE_BOOLEAN:
            return v.value.boolean ? 1 : 0;
        case UAPLEX_TYPE_INT32:
            return v.value.int32;
        case UAPLEX_TYPE_FLOAT:
            return v.value.float_;
        case UAPLEX_TYPE_DOUBLE:
            return v.value.double_;
        case UAPLEX_TYPE_STATUSCODE:
            return static_cast<double>(v.value.statuscode);
        default:
            return std::nan("");
    }
}

void check(AggregateFunction f, const std::vector<DataValue>& raw, const ProcessedRequest& rq,
           const std::vector<Expected>& expected, double margin = 1e-9) {
    std::vector<DataValue> out(expected.size());
    ComputeResult r = compute(f, raw, rq, out);
    REQUIRE(r.status == UAPLEX_Good);
    REQUIRE(r.written == expected.size());
    for (std::size_t k = 0; k < expected.size(); ++k) {
        INFO("interval " << k << " at " << expected[k].time << " s");
        const DataValue& d = out[k];
        CHECK(d.source_timestamp == at(expected[k].time));
        INFO("status 0x" << std::hex << d.status << ", expected 0x" << expected[k].status);
        CHECK(d.status == expected[k].status);
        if (expected[k].value) {
            REQUIRE((d.mask & UAPLEX_DATAVALUE_VALUE) != 0);
            CHECK(asDouble(d.value) == Approx(*expected[k].value).margin(margin));
        } else {
            CHECK((d.mask & UAPLEX_DATAVALUE_VALUE) == 0);
        }
    }
}

}  // namespace

TEST_CASE("every aggregate function NodeId maps to its function and back") {
    CHECK(aggregateNodeId(AggregateFunction::Average) == 2342);
    CHECK(aggregateNodeId(AggregateFunction::Interpolative) == 2341);
    CHECK(aggregateNodeId(AggregateFunction::TimeAverage2) == 11285);
    CHECK(aggregateNodeId(AggregateFunction::Total2) == 11304);
    CHECK(aggregateNodeId(AggregateFunction::WorstQuality2) == 11292);
    for (std::size_t k = 0; k < kAggregateFunctionCount; ++k) {
        auto f = static_cast<AggregateFunction>(k);
        ua::NodeId id{};
        id.identifier_type = UAPLEX_ID_NUMERIC;
        id.identifier.numeric = aggregateNodeId(f);
        REQUIRE(id.identifier.numeric != 0);
        auto back = aggregateFromNodeId(id);
        REQUIRE(back);
        CHECK(*back == f);
    }
}

TEST_CASE("an unknown or foreign aggregate NodeId is not served") {
    ua::NodeId id{};
    id.identifier_type = UAPLEX_ID_NUMERIC;
    id.identifier.numeric = 2351;  // AnnotationCount: not served
    CHECK_FALSE(aggregateFromNodeId(id));
    id.identifier.numeric = 11426;  // StandardDeviationSample: not served
    CHECK_FALSE(aggregateFromNodeId(id));
    id.identifier.numeric = 2342;
    id.namespace_index = 1;  // Average's number in another namespace
    CHECK_FALSE(aggregateFromNodeId(id));
    ua::NodeId text{};
    text.identifier_type = UAPLEX_ID_STRING;
    CHECK_FALSE(aggregateFromNodeId(text));
}

TEST_CASE("PercentDataGood and PercentDataBad must leave no gap") {
    AggregateConfiguration c;
    CHECK(checkConfiguration(c) == UAPLEX_Good);  // 100 / 100
    c.percentDataGood = 50;
    c.percentDataBad = 50;  // 50 >= 100 - 50: Good or Bad, never Uncertain
    CHECK(checkConfiguration(c) == UAPLEX_Good);
    c.percentDataGood = 40;  // 40 < 100 - 50: an interval 45 % Good, 45 % Bad would be nothing
    CHECK(checkConfiguration(c) == UAPLEX_BadAggregateConfigurationRejected);
    c.percentDataGood = 101;
    CHECK(checkConfiguration(c) == UAPLEX_BadAggregateConfigurationRejected);
    c.percentDataGood = 100;
    c.percentDataBad = 200;
    CHECK(checkConfiguration(c) == UAPLEX_BadAggregateConfigurationRejected);

    auto raw = historian1();
    auto rq = request(0, 100, 16);
    rq.configuration.percentDataGood = 10;
    rq.configuration.percentDataBad = 10;
    std::vector<DataValue> out(7);
    ComputeResult r = compute(AggregateFunction::Average, raw, rq, out);
    CHECK(r.status == UAPLEX_BadAggregateConfigurationRejected);
    CHECK(r.written == 0);
}

TEST_CASE("the intervals of a time domain follow Part 13 5.4.2.2") {
    std::size_t n = 99;
    // start == end: no intervals, Bad_InvalidArgument.
    CHECK(intervalCount(request(10, 10, 5), 100, n) == UAPLEX_BadInvalidArgument);
    CHECK(n == 0);
    // 100 s by 16 s: 6 whole intervals and a partial one of 4 s.
    CHECK(intervalCount(request(0, 100, 16), 100, n) == UAPLEX_Good);
    CHECK(n == 7);
    // Backwards the same.
    CHECK(intervalCount(request(100, 0, 16), 100, n) == UAPLEX_Good);
    CHECK(n == 7);
    // Interval 0 or at least the range: one interval.
    CHECK(intervalCount(request(0, 100, 0), 100, n) == UAPLEX_Good);
    CHECK(n == 1);
    CHECK(intervalCount(request(0, 100, 500), 100, n) == UAPLEX_Good);
    CHECK(n == 1);
    // Negative, NaN, infinite and below one DateTime tick (100 ns).
    CHECK(intervalCount(request(0, 100, -1), 100, n) == UAPLEX_BadInvalidArgument);
    auto rq = request(0, 100, 1);
    rq.processingIntervalMs = std::nan("");
    CHECK(intervalCount(rq, 100, n) == UAPLEX_BadInvalidArgument);
    rq.processingIntervalMs = INFINITY;
    CHECK(intervalCount(rq, 100, n) == UAPLEX_BadInvalidArgument);
    rq.processingIntervalMs = 0.00001;  // 0.1 tick
    CHECK(intervalCount(rq, 100, n) == UAPLEX_BadInvalidArgument);
    // The caller's bound: 7 intervals do not fit in 6.
    CHECK(intervalCount(request(0, 100, 16), 6, n) == UAPLEX_BadTooManyOperations);
    // A time domain wider than any DateTime range (year 1601 to 9999 is 2.5e18 ticks).
    ProcessedRequest wide;
    wide.startTime = INT64_MIN;
    wide.endTime = INT64_MAX;
    wide.processingIntervalMs = 0;
    CHECK(intervalCount(wide, 1000000, n) == UAPLEX_BadInvalidArgument);
    // Many tiny intervals: counted without overflow, refused by the bound.
    wide.startTime = 0;
    wide.processingIntervalMs = 0.0001;  // one tick
    CHECK(intervalCount(wide, 1000000, n) == UAPLEX_BadTooManyOperations);
}

TEST_CASE("compute refuses more intervals than the output holds") {
    auto raw = historian1();
    std::vector<DataValue> out(6);
    ComputeResult r = compute(AggregateFunction::Average, raw, request(0, 100, 16), out);
    CHECK(r.status == UAPLEX_BadTooManyOperations);
    CHECK(r.written == 0);
}

TEST_CASE("invalid raw inputs give Bad_AggregateInvalidInputs") {
    std::vector<DataValue> out(7);
    auto rq = request(0, 100, 16);
    SECTION("timestamps out of order") {
        auto raw = historian1();
        std::swap(raw[3], raw[4]);
        CHECK(compute(AggregateFunction::Average, raw, rq, out).status ==
              UAPLEX_BadAggregateInvalidInputs);
    }
    SECTION("two values at one timestamp") {
        auto raw = historian1();
        raw[4].source_timestamp = raw[3].source_timestamp;
        CHECK(compute(AggregateFunction::Average, raw, rq, out).status ==
              UAPLEX_BadAggregateInvalidInputs);
    }
    SECTION("a Good value that is not a number") {
        auto raw = historian1();
        raw[2].value.encoding = UAPLEX_TYPE_STRING;
        raw[2].value.value.string = {3, "abc"};
        CHECK(compute(AggregateFunction::TimeAverage, raw, rq, out).status ==
              UAPLEX_BadAggregateInvalidInputs);
    }
    SECTION("a Good value that is NaN") {
        auto raw = historian1();
        raw[2].value.value.double_ = std::nan("");
        CHECK(compute(AggregateFunction::Maximum, raw, rq, out).status ==
              UAPLEX_BadAggregateInvalidInputs);
    }
    SECTION("an array") {
        auto raw = historian1();
        raw[2].value.encoding = UAPLEX_TYPE_DOUBLE | 0x80;
        CHECK(compute(AggregateFunction::Average, raw, rq, out).status ==
              UAPLEX_BadAggregateInvalidInputs);
    }
    SECTION("no source timestamp") {
        auto raw = historian1();
        raw[5].mask &= static_cast<std::uint8_t>(~UAPLEX_DATAVALUE_SOURCE_TIMESTAMP);
        CHECK(compute(AggregateFunction::Count, raw, rq, out).status ==
              UAPLEX_BadAggregateInvalidInputs);
    }
    SECTION("a Bad value may hold anything") {
        auto raw = historian1();
        raw[4].value.encoding = UAPLEX_TYPE_STRING;
        raw[4].value.value.string = {3, "abc"};
        CHECK(compute(AggregateFunction::Average, raw, rq, out).status == UAPLEX_Good);
    }
}

TEST_CASE("Interpolative over Historian 1 (Part 13 A.2)") {
    // Interpolated bounds (3.1.8), sloped: a raw non-Bad value at the time is returned as
    // stored; else the line between the nearest non-Bad values around it, Uncertain when a
    // Bad value lies between them or one of them is Uncertain; after the last value the
    // last one is held (stepped extrapolation), Uncertain. Before 12:00:10 there is no
    // non-Bad value: Bad_NoData.
    check(AggregateFunction::Interpolative, historian1(), request(0, 100, 5),
          {
              {0, kNone, UAPLEX_BadNoData},  // the Bad_NoData entry, nothing non-Bad before
              {5, kNone, UAPLEX_BadNoData},
              {10, 10, G},         // raw, as stored
              {15, 15, st(G, I)},  // 10 + (20 - 10) * 5/10
              {20, 20, G},
              {25, 25, st(G, I)},
              {30, 30, G},
              {35, 35, st(U, I)},  // 30..50 across the Bad 40
              {40, 40, st(U, I)},  // the raw 40 is Bad: interpolated instead
              {45, 45, st(U, I)},
              {50, 50, G},
              {55, 55, st(G, I)},
              {60, 60, G},
              {65, 65, st(U, I)},          // 60..70, 70 is Uncertain
              {70, 70, UAPLEX_Uncertain},  // raw, as stored
              {75, 75, st(U, I)},          // 70 (Uncertain)..80
              {80, 80, G},
              {85, 85, st(G, I)},
              {90, 90, G},
              {95, 90, st(U, I)},  // 90 held past the last value
          });
}

TEST_CASE("Interpolative of a stepped variable holds the value before") {
    // Stepped interpolated bound: the last non-Bad value at or before the time; Uncertain
    // when Bad values were skipped since it, when it is Uncertain, or past the end of data.
    check(AggregateFunction::Interpolative, historian1(), request(10, 100, 5, true),
          {
              {10, 10, G},
              {15, 10, st(G, I)},
              {20, 20, G},
              {25, 20, st(G, I)},
              {30, 30, G},
              {35, 30, st(G, I)},  // no Bad value between 30 and 35
              {40, 30, st(U, I)},  // the raw 40 is Bad: skipped
              {45, 30, st(U, I)},  // the Bad 40 lies between 30 and 45
              {50, 50, G},
              {55, 50, st(G, I)},
              {60, 60, G},
              {65, 60, st(G, I)},
              {70, 70, UAPLEX_Uncertain},
              {75, 70, st(U, I)},  // held from an Uncertain value
              {80, 80, G},
              {85, 80, st(G, I)},
              {90, 90, G},
              {95, 90, st(U, I)},  // past the end of data (12:01:30)
          });
}

TEST_CASE("TimeAverage2 over Historian 1 (Part 13 A.5)") {
    // Simple bounds (3.1.9); segments between the bounds and every raw value; a segment
    // from a Bad point is Bad, a sloped one takes the worse status of its ends and one that
    // runs into a Bad point is held at its start value, Uncertain. Average over the non-Bad
    // time; Good only when 100 % of the interval is Good (PercentDataGood 100), Bad only when
    // 100 % is Bad.
    check(AggregateFunction::TimeAverage2, historian1(), request(0, 100, 5),
          {
              {0, kNone, UAPLEX_BadNoData},  // from the Bad_NoData entry: no data
              {5, kNone, UAPLEX_BadNoData},  // start bound after the Bad_NoData entry
              {10, 12.5, st(G, C)},          // line 10 -> 15
              {15, 17.5, st(G, C)},
              {20, 22.5, st(G, C)},
              {25, 27.5, st(G, C)},  // 25 -> raw 30
              {30, 30, st(U, C)},    // end bound at 35: 30 held (next raw 40 is Bad), Uncertain
              {35, 30, st(U, C)},    // start bound 30 held (Uncertain) into the Bad 40
              {40, kNone, UAPLEX_BadNoData},  // the Bad 40 to 45: all Bad
              {45, kNone, UAPLEX_BadNoData},  // start bound after the Bad 40: Bad
              {50, 52.5, st(G, C)},
              {55, 57.5, st(G, C)},
              {60, 62.5, st(U, C)},  // 60 -> 65, the end bound leans on the Uncertain 70
              {65, 67.5, st(U, C)},
              {70, 72.5, st(U, C)},
              {75, 77.5, st(U, C)},  // 75 (Uncertain, from 70) -> 80
              {80, 82.5, st(G, C)},
              {85, 87.5, st(G, C)},
              {90, 90, st(U, C | P)},         // 90 held to 95 past the end of data: Partial
              {95, kNone, UAPLEX_BadNoData},  // after the end of data
          });
}

TEST_CASE("TimeAverage2 of a stepped variable") {
    // Stepped: a segment holds its start value and takes its start's status only.
    check(AggregateFunction::TimeAverage2, historian1(), request(30, 75, 5, true),
          {
              {30, 30, st(G, C)},  // 30 held to 35, Good (sloped: Uncertain)
              {35, 30, st(G, C)},  // 30 held up to the Bad 40
              {40, kNone, UAPLEX_BadNoData},
              {45, kNone, UAPLEX_BadNoData},  // start bound: the Bad 40
              {50, 50, st(G, C)},
              {55, 50, st(G, C)},
              {60, 60, st(G, C)},
              {65, 60, st(G, C)},  // Good 60 held up to the Uncertain 70
              {70, 70, st(U, C)},  // Uncertain 70 held: no Good time
          });
}

TEST_CASE("Maximum2 over Historian 1 (Part 13 A.13)") {
    // Candidates: the start bound, the non-Bad raw values, and (sloped) the end bound.
    // Interpolated when a bound is the maximum, Calculated when a raw value is (also when a
    // raw value is the end bound); status by time as for TimeAverage2.
    check(AggregateFunction::Maximum2, historian1(), request(0, 100, 16),
          {
              // [0,16): no data until 10, then 10 -> end bound 16 (line 10..20). Max 16, the
              // end bound. 10 s of 16 without data: Uncertain, Partial.
              {0, 16, st(U, I | P)},
              // [16,32): 16, 20, 30, end bound 30 (held: the next raw is Bad, Uncertain).
              // 30 twice: MultipleValues. [30,32) Uncertain: not 100 % Good.
              {16, 30, st(U, C | M)},
              // [32,48): start bound 30 (held, Uncertain), the Bad 40, end bound Bad.
              {32, 30, st(U, I)},
              // [48,64): start bound Bad (after the Bad 40), 50, 60, end bound 64 (to the
              // Uncertain 70).
              {48, 64, st(U, I)},
              // [64,80): 64 (Uncertain), the Uncertain 70, the raw 80 as end bound.
              {64, 80, st(U, C)},
              // [80,96): 80, 90, then nothing after the end of data (12:01:30).
              {80, 90, st(U, C | P)},
              // [96,100): after the end of data.
              {96, kNone, UAPLEX_BadNoData},
          });
}

TEST_CASE("MaximumActualTime over Historian 1 (Part 13 A.11)") {
    // Good raw values only, at their own timestamp; no Calculated bit while Good.
    check(AggregateFunction::MaximumActualTime, historian1(), request(0, 100, 16),
          {
              {10, 10, st(G, P)},             // [0,16): no data before 10: Partial
              {30, 30, G},                    // [16,32): 20, 30
              {32, kNone, UAPLEX_BadNoData},  // [32,48): only the Bad 40
              {60, 60, G},                    // [48,64): 50, 60
              {64, kNone, UAPLEX_BadNoData},  // [64,80): only the Uncertain 70, not Good
              {90, 90, st(G, P)},             // [80,96): 80, 90, past the end of data
              {96, kNone, UAPLEX_BadNoData},
          });
}

TEST_CASE("Average counts values (Part 13 5.4.3.5)") {
    // Mean of the non-Bad raw values (Uncertain included: TreatUncertainAsBad false); the
    // status from the counts; no bounds, no Partial. The Bad_NoData entry is no value.
    check(AggregateFunction::Average, historian1(), request(0, 100, 16),
          {
              {0, 10, st(G, C)},              // 10
              {16, 25, st(G, C)},             // (20 + 30) / 2
              {32, kNone, UAPLEX_BadNoData},  // only the Bad 40
              {48, 55, st(G, C)},             // (50 + 60) / 2
              {64, 70, st(U, C)},             // the Uncertain 70: 0 % Good, 0 % Bad
              {80, 85, st(G, C)},             // (80 + 90) / 2
              {96, kNone, UAPLEX_BadNoData},
          });
}

TEST_CASE("Average with TreatUncertainAsBad and 50/50 percentages") {
    auto raw = historian1();
    auto rq = request(0, 100, 16);
    rq.configuration.treatUncertainAsBad = true;
    // [64,80): the Uncertain 70 is now Bad: nothing left.
    check(AggregateFunction::Average, raw, rq,
          {{0, 10, st(G, C)},
           {16, 25, st(G, C)},
           {32, kNone, UAPLEX_BadNoData},
           {48, 55, st(G, C)},
           {64, kNone, UAPLEX_BadNoData},
           {80, 85, st(G, C)},
           {96, kNone, UAPLEX_BadNoData}});
    // One interval [32,64): the Bad 40, 50, 60. Bad 1/3 < 50 %, Good 2/3 >= 50 %: Good.
    auto one = request(32, 64, 0);
    one.configuration.percentDataBad = 50;
    one.configuration.percentDataGood = 50;
    check(AggregateFunction::Average, raw, one, {{32, 55, st(G, C)}});
    // The same with 100/100: neither all Good nor all Bad.
    check(AggregateFunction::Average, raw, request(32, 64, 0), {{32, 55, st(U, C)}});
    // [36,52) at 50/50: the Bad 40 and 50: Bad 1/2 >= 50 %. Bad by the percentage, not for
    // want of data: "Bad, Calculated", no value.
    auto half = request(36, 52, 0);
    half.configuration.percentDataBad = 50;
    half.configuration.percentDataGood = 50;
    check(AggregateFunction::Average, raw, half, {{36, kNone, st(UAPLEX_Bad, C)}});
}

TEST_CASE("Average backwards: latest interval first, each includes its later edge") {
    // From 12:01:40 back to 12:00:00 by 16 s: (84,100], (68,84], ..., (0,4]; the
    // timestamp is the later edge (the interval's start in the request's direction).
    check(AggregateFunction::Average, historian1(), request(100, 0, 16),
          {
              {100, 90, st(G, C)},           // 90
              {84, 75, st(U, C)},            // the Uncertain 70, 80: 50 % Good
              {68, 60, st(G, C)},            // 60
              {52, 50, st(U, C)},            // the Bad 40, 50
              {36, 30, st(G, C)},            // 30 (20 is on the excluded edge)
              {20, 15, st(G, C)},            // 10, 20 (20 on the included edge)
              {4, kNone, UAPLEX_BadNoData},  // (0,4]: the entry at 0 is outside
          });
}

TEST_CASE("Start, End and Delta in both directions") {
    auto raw = historian1();
    // Start and End return the raw value as stored, at its own time.
    check(AggregateFunction::Start, raw, request(16, 48, 16), {{20, 20, G}, {40, 40, UAPLEX_Bad}});
    check(AggregateFunction::End, raw, request(16, 48, 16), {{30, 30, G}, {40, 40, UAPLEX_Bad}});
    // The Bad_NoData entry is not a value; the interval [0,16) lacks data until 10.
    check(AggregateFunction::Start, raw, request(0, 16, 16), {{10, 10, st(G, P)}});
    // Backwards (68,84]: Start is still the earliest value (the Uncertain 70), End the latest
    // (80): Part 13 5.4.3.25/26 speak of time, not of the request's direction.
    check(AggregateFunction::Start, raw, request(84, 68, 16), {{70, 70, UAPLEX_Uncertain}});
    check(AggregateFunction::End, raw, request(84, 68, 16), {{80, 80, G}});
    // Delta = the latest - the earliest non-Bad value; Uncertain when Bad values were passed
    // over to find them (not for one between them) or an end is Uncertain.
    check(AggregateFunction::Delta, raw, request(16, 48, 16),
          {{16, 10, st(G, C)},               // 30 - 20
           {32, kNone, UAPLEX_BadNoData}});  // only the Bad 40
    check(AggregateFunction::Delta, raw, request(84, 68, 16),
          {{84, 10, st(U, C)}});  // 80 - 70, the earliest is the Uncertain 70
    check(AggregateFunction::Delta, raw, request(32, 64, 0),
          {{32, 10, st(U, C)}});  // 60 - 50, the Bad 40 passed over before 50
    check(AggregateFunction::Delta, raw, request(25, 55, 0),
          {{25, 20, st(G, C)}});  // 50 - 30; the Bad 40 between them does not count
    check(AggregateFunction::Delta, raw, request(0, 16, 0),
          {{0, 0, st(G, C | P)}});  // 10 alone; the Bad_NoData entry is no value
}

TEST_CASE("Minimum, Maximum, MinimumActualTime and Range use Good values") {
    auto raw = historian1();
    check(AggregateFunction::Minimum, raw, request(0, 100, 16),
          {
              {0, 10, st(G, C | P)},
              {16, 20, st(G, C)},
              {32, kNone, UAPLEX_BadNoData},
              {48, 50, st(G, C)},
              {64, kNone, UAPLEX_BadNoData},  // the Uncertain 70 is not Good
              {80, 80, st(G, P)},             // on the interval's start: Raw, not Calculated
              {96, kNone, UAPLEX_BadNoData},
          });
    // [32,64): the Bad 40 was skipped: Uncertain_DataSubNormal; the ActualTime forms return
    // the raw value without Calculated (as Annex A.11 prints them).
    check(AggregateFunction::MinimumActualTime, raw, request(32, 64, 0), {{50, 50, U}});
    check(AggregateFunction::Maximum, raw, request(32, 64, 0), {{32, 60, st(U, C)}});
    // [48,80): Good 50, 60; the Uncertain 70 lies above the maximum Good value.
    check(AggregateFunction::Maximum, raw, request(48, 80, 0), {{48, 60, st(U, C)}});
    check(AggregateFunction::Minimum, raw, request(48, 80, 0), {{48, 50, st(G, C)}});
    check(AggregateFunction::Range, raw, request(16, 32, 0), {{16, 10, st(G, C)}});
    // Equal minimums: the oldest, MultipleValues.
    std::vector<DataValue> twice{rawValue(0, 5, G), rawValue(1, 3, G), rawValue(2, 3, G),
                                 rawValue(3, 4, G)};
    auto whole = request(0, 4, 0);
    whole.endOfData = at(4);  // complete up to the end: not Partial
    check(AggregateFunction::MinimumActualTime, twice, whole, {{1, 3, st(G, M)}});
}

TEST_CASE("Count counts non-Bad values") {
    check(AggregateFunction::Count, historian1(), request(0, 100, 16),
          {
              {0, 1, st(G, C | P)},            // 10; no data before it
              {16, 2, st(G, C)},               // 20, 30
              {32, kNone, st(UAPLEX_Bad, C)},  // only the Bad 40: 100 % Bad
              {48, 2, st(G, C)},
              {64, 1, st(U, C)},  // the Uncertain 70
              {80, 2, st(G, C | P)},
              {96, kNone, UAPLEX_BadNoData},  // after the end of data
          });
}

TEST_CASE("TimeAverage and Total use interpolated bounds and skip Bad values") {
    auto raw = historian1();
    // [16,32): start bound 16 (10..20); 20; 30; end bound 32 on the line 30..50 across the
    // Bad 40 (Uncertain). Area 4*(16+20)/2 + 10*(20+30)/2 + 2*(30+32)/2 = 72 + 250 + 62 = 384;
    // / 16 s = 24. Uncertain: an Uncertain bound was used.
    // [32,48): bounds 32 and 48 on the line 30..50, the Bad 40 skipped: area 16*(32+48)/2 =
    // 640, / 16 = 40, Uncertain.
    // [0,16): no start bound (nothing non-Bad before 10): Bad until 10, then 10 -> 16:
    // area 6*(10+16)/2 = 78 over the 6 s with data = 13; Uncertain, Partial.
    // [96,100): after the last value: 90 extrapolated (held), Uncertain, Partial.
    check(AggregateFunction::TimeAverage, raw, request(0, 48, 16),
          {{0, 13, st(U, C | P)}, {16, 24, st(U, C)}, {32, 40, st(U, C)}});
    check(AggregateFunction::TimeAverage, raw, request(96, 100, 0), {{96, 90, st(U, C | P)}});
    // [48,64): 48 (Uncertain, across the Bad 40) -> 50 -> 60 -> 64 (60..70, Uncertain 70):
    // 2*(48+50)/2 + 10*(50+60)/2 + 4*(60+64)/2 = 98 + 550 + 248 = 896, / 16 = 56.
    check(AggregateFunction::TimeAverage, raw, request(48, 64, 0), {{48, 56, st(U, C)}});
    // [10,30): Good throughout: 10*(10+20)/2 + 10*(20+30)/2 = 400, / 20 = 20, Good.
    check(AggregateFunction::TimeAverage, raw, request(10, 30, 0), {{10, 20, st(G, C)}});
    // Total = TimeAverage x the interval in seconds.
    check(AggregateFunction::Total, raw, request(0, 48, 16),
          {{0, 208, st(U, C | P)}, {16, 384, st(U, C)}, {32, 640, st(U, C)}});
    check(AggregateFunction::Total, raw, request(10, 30, 0), {{10, 400, st(G, C)}});
}

TEST_CASE("Total2 is the area under the non-Bad time") {
    // [16,32) with simple bounds: 16 -> 20 -> 30, then 30 held to the end bound (the next
    // raw is Bad): 72 + 250 + 2*30 = 382 value-seconds; TimeAverage2 = 382 / 16 = 23.875.
    // 14 s Good, 2 s Uncertain: Uncertain.
    auto raw = historian1();
    check(AggregateFunction::Total2, raw, request(16, 32, 0), {{16, 382, st(U, C)}});
    check(AggregateFunction::TimeAverage2, raw, request(16, 32, 0), {{16, 23.875, st(U, C)}});
    // [32,48): 30 held to the Bad 40 (8 s, Uncertain), then Bad: area 240 over 8 s.
    check(AggregateFunction::Total2, raw, request(32, 48, 0), {{32, 240, st(U, C)}});
    check(AggregateFunction::TimeAverage2, raw, request(32, 48, 0), {{32, 30, st(U, C)}});
}

TEST_CASE("DurationGood, DurationBad, PercentGood and PercentBad split the interval") {
    // Regions start at raw values and take their status; the first from the value at or
    // before the start. Time without data is Bad. Good regions are those of Good values, Bad
    // ones those of Bad values: an Uncertain region is neither (TreatUncertainAsBad false).
    // Milliseconds; always Good, Calculated.
    auto raw = historian1();
    // [0,16): no data 0..10, Good 10..16.  [16,32): Good.  [32,48): Good 32..40 (30),
    // Bad 40..48.  [48,64): Bad 48..50, Good 50..64.  [64,80): Good 64..70, the Uncertain
    // 70 is neither Good nor Bad.  [80,96): Good 80..90, no data 90..96.
    check(AggregateFunction::DurationBad, raw, request(0, 100, 16),
          {{0, 10000, st(G, C | P)},
           {16, 0, st(G, C)},
           {32, 8000, st(G, C)},
           {48, 2000, st(G, C)},
           {64, 0, st(G, C)},
           {80, 6000, st(G, C | P)},
           {96, kNone, UAPLEX_BadNoData}});
    check(AggregateFunction::DurationGood, raw, request(0, 96, 16),
          {{0, 6000, st(G, C | P)},
           {16, 16000, st(G, C)},
           {32, 8000, st(G, C)},
           {48, 14000, st(G, C)},
           {64, 6000, st(G, C)},  // 64..70; 70..80 Uncertain
           {80, 10000, st(G, C | P)}});
    check(AggregateFunction::PercentGood, raw, request(64, 80, 0), {{64, 37.5, st(G, C)}});
    check(AggregateFunction::PercentBad, raw, request(64, 80, 0), {{64, 0, st(G, C)}});
    check(AggregateFunction::PercentGood, raw, request(32, 64, 16),
          {{32, 50, st(G, C)}, {48, 87.5, st(G, C)}});
    check(AggregateFunction::PercentBad, raw, request(0, 16, 16), {{0, 62.5, st(G, C | P)}});
    // With TreatUncertainAsBad the Uncertain 70 starts a Bad region: 70..80 of [64,80).
    auto tuab = request(64, 80, 0);
    tuab.configuration.treatUncertainAsBad = true;
    check(AggregateFunction::DurationBad, raw, tuab, {{64, 10000, st(G, C)}});
}

TEST_CASE("WorstQuality and WorstQuality2") {
    auto raw = historian1();
    // The worst status of the raw values as the value (a StatusCode); several values of
    // the worst severity: MultipleValues.
    check(AggregateFunction::WorstQuality, raw, request(16, 80, 16),
          {{16, G, st(G, C | M)},                       // 20, 30: both Good
           {32, double(UAPLEX_Bad), st(G, C)},          // the Bad 40
           {48, G, st(G, C | M)},                       // 50, 60
           {64, double(UAPLEX_Uncertain), st(G, C)}});  // the Uncertain 70
    // WorstQuality2 adds the simple bound at the start of the interval: at 48 the bound after
    // the Bad 40 is Bad; at 52 the line 50..60 is Good (with 60: two Good values); at 62
    // the line 60..70 leans on the Uncertain 70: Uncertain_DataSubNormal, although no raw
    // value of [62,68) exists.
    check(AggregateFunction::WorstQuality2, raw, request(48, 64, 0),
          {{48, double(UAPLEX_Bad), st(G, C)}});
    check(AggregateFunction::WorstQuality2, raw, request(52, 64, 0), {{52, G, st(G, C | M)}});
    check(AggregateFunction::WorstQuality2, raw, request(62, 68, 0),
          {{62, double(UAPLEX_UncertainDataSubNormal), st(G, C)}});
    check(AggregateFunction::WorstQuality, raw, request(62, 68, 0),
          {{62, kNone, UAPLEX_BadNoData}});
    check(AggregateFunction::WorstQuality, raw, request(96, 100, 0),
          {{96, kNone, UAPLEX_BadNoData}});
}

TEST_CASE("a caller-given end of data extends the last value") {
    // With the history complete up to 12:01:40, [80,96) is no longer Partial and 90 holds
    // Good to 96 in the durations.
    auto rq = request(80, 96, 0);
    rq.endOfData = at(100);
    check(AggregateFunction::DurationGood, historian1(), rq, {{80, 16000, st(G, C)}});
    check(AggregateFunction::Count, historian1(), rq, {{80, 2, st(G, C)}});
}

TEST_CASE("no raw values at all") {
    std::vector<DataValue> none;
    for (std::size_t k = 0; k < kAggregateFunctionCount; ++k) {
        auto f = static_cast<AggregateFunction>(k);
        INFO("function " << k);
        check(f, none, request(0, 10, 5),
              {{0, kNone, UAPLEX_BadNoData}, {5, kNone, UAPLEX_BadNoData}});
    }
}

namespace {

// Part 13 A.1.2: non-periodic data; TreatUncertainAsBad true (the Uncertain 70 at 12:01:17
// counts as Bad), sloped, PercentDataBad and PercentDataGood 100.
std::vector<DataValue> historian2() {
    return {
        rawValue(0, std::nullopt, UAPLEX_BadNoData),
        rawValue(2, 10, UAPLEX_Good),
        rawValue(25, 20, UAPLEX_Good),
        rawValue(28, 25, UAPLEX_Good),
        rawValue(39, 30, UAPLEX_Good),
        rawValue(42, std::nullopt, UAPLEX_Bad),
        rawValue(48, 40, UAPLEX_Good),
        rawValue(52, 50, UAPLEX_Good),
        rawValue(72, 60, UAPLEX_Good),
        rawValue(77, 70, UAPLEX_Uncertain),
        rawValue(83, 70, UAPLEX_Good),
        rawValue(86, 80, UAPLEX_Good),
        rawValue(90, 90, UAPLEX_Good),
    };
}
ProcessedRequest request2(double start, double end, double intervalSeconds) {
    ProcessedRequest r = request(start, end, intervalSeconds);
    r.configuration.treatUncertainAsBad = true;
    return r;
}
// Part 13 A.1.3: the same data, stepped, TreatUncertainAsBad, PercentDataBad and
// PercentDataGood 50 (Good or Bad, Uncertain only from the custom rules).
ProcessedRequest request3(double start, double end, double intervalSeconds) {
    ProcessedRequest r = request(start, end, intervalSeconds, true);
    r.configuration.treatUncertainAsBad = true;
    r.configuration.percentDataBad = 50;
    r.configuration.percentDataGood = 50;
    return r;
}

}  // namespace

TEST_CASE("Interpolative over Historian 2 (Part 13 A.2)") {
    // Lines between the nearest non-Bad values; the Bad entry at 42 and the Uncertain 70 at
    // 77 (Bad here) are skipped, making the bounds across them Uncertain. Annex A prints
    // three decimals.
    check(AggregateFunction::Interpolative, historian2(), request2(0, 95, 5),
          {
              {0, kNone, UAPLEX_BadNoData},
              {5, 11.304, st(G, I)},  // 10 + 10 * 3/23 (2..25)
              {10, 13.478, st(G, I)},
              {15, 15.652, st(G, I)},
              {20, 17.826, st(G, I)},
              {25, 20, G},             // raw
              {30, 25.909, st(G, I)},  // 25 + 5 * 2/11 (28..39)
              {35, 28.182, st(G, I)},
              {40, 31.111, st(U, I)},  // 30 + 10 * 1/9 (39..48, the Bad 42 between)
              {45, 36.667, st(U, I)},
              {50, 45, st(G, I)},  // 40 + 10 * 2/4 (48..52)
              {55, 51.5, st(G, I)},
              {60, 54, st(G, I)},
              {65, 56.5, st(G, I)},
              {70, 59, st(G, I)},
              {75, 62.727, st(U, I)},  // 60 + 10 * 3/11 (72..83, the 77 between)
              {80, 67.273, st(U, I)},
              {85, 76.667, st(G, I)},  // 70 + 10 * 2/3 (83..86)
              {90, 90, G},
          },
          1e-3);
}

TEST_CASE("TimeAverage2 over Historian 2 (Part 13 A.5)") {
    check(AggregateFunction::TimeAverage2, historian2(), request2(0, 75, 5),
          {
              // No data 0..2, then 10 -> 11.304 at 5: 3 * 10.652 / 3; 60 % Good: Uncertain.
              {0, 10.652, st(U, C | P)},
              {5, 12.391, st(G, C)},
              {10, 14.565, st(G, C)},
              {15, 16.739, st(G, C)},
              {20, 18.913, st(G, C)},
              {25, 23.682, st(G, C)},  // (3 * 22.5 + 2 * 25.4545) / 5
              {30, 27.046, st(G, C)},
              {35, 29.273, st(U, C)},  // 28.182 -> 30 at 39, then 30 held to the Bad 42 bound
              {40, 30, st(U, C)},      // 30 held 40..42 (Uncertain), then Bad
              {45, 42.5, st(U, C)},    // Bad to 48, then 40 -> 45
              {50, 49.45, st(G, C)},   // (2 * 47.5 + 3 * 50.75) / 5
              {55, 52.75, st(G, C)},
              {60, 55.25, st(G, C)},
              {65, 57.75, st(G, C)},
              {70, 59.8, st(U, C)},  // 59 -> 60 at 72, then 60 held to the 77 (Bad here)
          },
          1e-3);
}

TEST_CASE("Maximum2 over Historians 2 and 3 (Part 13 A.13)") {
    check(AggregateFunction::Maximum2, historian2(), request2(0, 100, 16),
          {
              {0, 16.087, st(U, I | P)},  // end bound 10 + 10 * 14/23
              {16, 26.818, st(G, I)},     // end bound 25 + 5 * 4/11
              {32, 40, st(U, C)},         // the raw 40 as end bound; the Bad 42 region
              {48, 56, st(G, I)},         // end bound 50 + 10 * 12/20
              {64, 60, st(U, C)},         // the raw 60; 77 (Bad here) to the end
              {80, 90, st(U, C | P)},     // start bound Bad after 77; no data after 90
              {96, kNone, UAPLEX_BadNoData},
          },
          1e-3);
    // Stepped: the end bound is no candidate; 50/50: Good when half the time is Good.
    check(AggregateFunction::Maximum2, historian2(), request3(0, 100, 16),
          {
              {0, 10, st(G, C | P)},  // Bad 2 s of 16
              {16, 25, st(G, C)},
              {32, 30, st(G, C)},  // Bad 42..48: 6 s of 16
              {48, 50, st(G, C)},
              {64, 60, st(G, C)},      // Bad 77..80
              {80, 90, st(G, C | P)},  // Bad 80..83 (from 77)
              {96, kNone, UAPLEX_BadNoData},
          });
}

TEST_CASE("MaximumActualTime over Historians 2 and 3 (Part 13 A.11)") {
    const std::vector<Expected> expected{
        {2, 10, st(G, P)},  {28, 25, G},
        {39, 30, U},                      // the Bad 42 was skipped
        {52, 50, G},        {72, 60, U},  // the 77 (Bad here) was skipped
        {90, 90, st(G, P)}, {96, kNone, UAPLEX_BadNoData},
    };
    check(AggregateFunction::MaximumActualTime, historian2(), request2(0, 100, 16), expected);
    check(AggregateFunction::MaximumActualTime, historian2(), request3(0, 100, 16), expected);
}

TEST_CASE("TimeAverage2 over Historian 3 (Part 13 1.04 A.5)") {
    // Stepped, 50/50: Bad when half the interval is Bad, as "Bad, Calculated".
    check(AggregateFunction::TimeAverage2, historian2(), request3(0, 80, 5),
          {
              {0, 10, st(G, C | P)},  // Bad 0..2, 10 held 2..5: 60 % Good
              {5, 10, st(G, C)},
              {10, 10, st(G, C)},
              {15, 10, st(G, C)},
              {20, 10, st(G, C)},
              {25, 22, st(G, C)},  // (3 * 20 + 2 * 25) / 5
              {30, 25, st(G, C)},
              {35, 26, st(G, C)},              // (4 * 25 + 1 * 30) / 5
              {40, kNone, st(UAPLEX_Bad, C)},  // 30 held 40..42, Bad 42..45: 60 % Bad
              {45, kNone, st(UAPLEX_Bad, C)},  // Bad 45..48, 40 held 48..50
              {50, 46, st(G, C)},              // (2 * 40 + 3 * 50) / 5
              {55, 50, st(G, C)},
              {60, 50, st(G, C)},
              {65, 50, st(G, C)},
              {70, 56, st(G, C)},              // (2 * 50 + 3 * 60) / 5
              {75, kNone, st(UAPLEX_Bad, C)},  // 60 held 75..77, then Bad from 77
          });
}

TEST_CASE("backward time domains: stamps at the later edge, latest first") {
    // (60,80] and (80,100] of Historian 1. (80,100]: 80 -> 90 Good (850), then 90 held to
    // 100 past the end of data, Uncertain (900): 1750 / 20 = 87.5, 10 s of 20 Good, Partial.
    // (60,80]: 60 -> 70 and 70 -> 80, both touching the Uncertain 70: 1400 / 20 = 70.
    check(AggregateFunction::TimeAverage2, historian1(), request(100, 60, 20),
          {{100, 87.5, st(U, C | P)}, {80, 70, st(U, C)}});
    // Stepped (24,40]: 20 held from 24 (the bound at the earlier edge), 30 from 30, the Bad
    // 40 on the later edge. Minimum2 is the held 20 at the earlier edge, which is inside the
    // interval whichever way time runs; Good throughout.
    check(AggregateFunction::Minimum2, historian1(), request(40, 24, 16, true),
          {{40, 20, st(G, I)}});
    check(AggregateFunction::Maximum2, historian1(), request(40, 24, 16, true),
          {{40, 30, st(G, C)}});
    check(AggregateFunction::Interpolative, historian1(), request(20, 0, 5),
          {{20, 20, G}, {15, 15, st(G, I)}, {10, 10, G}, {5, kNone, UAPLEX_BadNoData}});
}

TEST_CASE("same-as-source aggregates keep an integer source's type when exact") {
    auto int32 = [](double s, std::int32_t v) {
        DataValue d = rawValue(s, 0, UAPLEX_Good);
        d.value.encoding = UAPLEX_TYPE_INT32;
        d.value.value.int32 = v;
        return d;
    };
    std::vector<DataValue> raw{int32(0, 10), int32(10, 20), int32(20, 25)};
    std::vector<DataValue> out(2);
    // Interpolative at 5: 15, an Int32; at 12.5: 21.25, a Double.
    REQUIRE(compute(AggregateFunction::Interpolative, raw, request(5, 12.5, 7.5), out).written ==
            1);
    CHECK(out[0].value.encoding == UAPLEX_TYPE_INT32);
    CHECK(out[0].value.value.int32 == 15);
    REQUIRE(compute(AggregateFunction::Interpolative, raw, request(12.5, 20, 7.5), out).written ==
            1);
    CHECK(out[0].value.encoding == UAPLEX_TYPE_DOUBLE);
    CHECK(out[0].value.value.double_ == Approx(21.25));
    // Delta and Range of [0,20.5): 25 - 10 = 15 as Int32.
    REQUIRE(compute(AggregateFunction::Delta, raw, request(0, 20.5, 0), out).written == 1);
    CHECK(out[0].value.encoding == UAPLEX_TYPE_INT32);
    CHECK(out[0].value.value.int32 == 15);
    REQUIRE(compute(AggregateFunction::Range, raw, request(0, 20.5, 0), out).written == 1);
    CHECK(out[0].value.encoding == UAPLEX_TYPE_INT32);
    CHECK(out[0].value.value.int32 == 15);
    // Minimum2 of [5,20): the start bound 15 (interpolated), the raw 20, the end bound 25.
    REQUIRE(compute(AggregateFunction::Minimum2, raw, request(5, 20, 0), out).written == 1);
    CHECK(out[0].status == st(G, I));
    CHECK(out[0].value.encoding == UAPLEX_TYPE_INT32);
    CHECK(out[0].value.value.int32 == 15);
    // The averages stay Double.
    REQUIRE(compute(AggregateFunction::Average, raw, request(5, 20, 0), out).written == 1);
    CHECK(out[0].value.encoding == UAPLEX_TYPE_DOUBLE);
}

TEST_CASE("Boolean data is always stepped (Part 13 A.1.4, Historian 4)") {
    // Historian 4: the times of Historian 2 with Boolean values; TreatUncertainAsBad, and
    // stepped whatever the variable says. Interpolated values stay Boolean.
    auto boolean = [](double s, bool v, StatusCode status) {
        DataValue d = rawValue(s, 0, status);
        d.value.encoding = UAPLEX_TYPE_BOOLEAN;
        d.value.value.boolean = v;
        return d;
    };
    std::vector<DataValue> raw{
        rawValue(0, std::nullopt, UAPLEX_BadNoData),
        boolean(2, true, G),
        boolean(25, false, G),
        boolean(28, true, G),
        boolean(39, true, G),
        rawValue(42, std::nullopt, UAPLEX_Bad),
        boolean(48, true, G),
        boolean(52, false, G),
        boolean(72, false, G),
        boolean(77, true, UAPLEX_Uncertain),
        boolean(83, true, G),
        boolean(86, false, G),
        boolean(90, true, G),
    };
    auto rq = request2(0, 95, 5);  // not marked stepped
    check(AggregateFunction::Interpolative, raw, rq,
          {
              {0, kNone, UAPLEX_BadNoData},
              {5, 1, st(G, I)},  // true since 2
              {10, 1, st(G, I)},
              {15, 1, st(G, I)},
              {20, 1, st(G, I)},
              {25, 0, G},         // raw false
              {30, 1, st(G, I)},  // true since 28
              {35, 1, st(G, I)},
              {40, 1, st(G, I)},  // true since 39, nothing between
              {45, 1, st(U, I)},  // the Bad 42 since 39
              {50, 1, st(G, I)},  // true since 48
              {55, 0, st(G, I)},  // false since 52
              {60, 0, st(G, I)},
              {65, 0, st(G, I)},
              {70, 0, st(G, I)},
              {75, 0, st(G, I)},  // false since 72
              {80, 0, st(U, I)},  // the 77 (Bad here) since 72
              {85, 1, st(G, I)},  // true since 83
              {90, 1, G},         // raw true
          });
    std::vector<DataValue> out(19);
    REQUIRE(compute(AggregateFunction::Interpolative, raw, rq, out).written == 19);
    CHECK(out[5].value.encoding == UAPLEX_TYPE_BOOLEAN);
    // TimeAverage over [25,35): false 25..28, true 28..35, held, never sloped: 7 / 10.
    check(AggregateFunction::TimeAverage, raw, request2(25, 35, 0), {{25, 0.7, st(G, C)}});
}

TEST_CASE("random histories keep the invariants of every aggregate") {
    // Seeded, bounded: 300 histories of up to 40 values with every status, forward and
    // backward domains, stepped or not, every valid configuration corner. Nothing here is
    // compared with an earlier output; these hold for any correct calculation.
    std::mt19937 rng(20261204);
    auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<unsigned>(n)); };
    const StatusCode statuses[] = {UAPLEX_Good, UAPLEX_Good, UAPLEX_Uncertain, UAPLEX_Bad,
                                   UAPLEX_BadNoData};
    for (int round = 0; round < 300; ++round) {
        std::vector<DataValue> raw;
        double t = pick(5);
        for (int i = pick(41); i > 0; --i) {
            StatusCode s = statuses[pick(5)];
            raw.push_back(rawValue(
                t, UAPLEX_STATUS_IS_BAD(s) ? std::nullopt : std::optional<double>(pick(200) - 100),
                s));
            t += 1 + pick(6);
        }
        double a = pick(120) - 10;
        double b = a + 1 + pick(100);
        if (pick(2) == 1) std::swap(a, b);
        ProcessedRequest rq = request(a, b, pick(4) == 0 ? 0 : 1 + pick(30), pick(2) == 1);
        rq.configuration.treatUncertainAsBad = pick(2) == 1;
        rq.configuration.percentDataBad = static_cast<std::uint8_t>(pick(101));
        rq.configuration.percentDataGood = static_cast<std::uint8_t>(
            100 - rq.configuration.percentDataBad + pick(rq.configuration.percentDataBad + 1));
        rq.configuration.useSlopedExtrapolation = pick(2) == 1;
        std::size_t n = 0;
        REQUIRE(intervalCount(rq, 1000, n) == UAPLEX_Good);
        std::vector<std::vector<DataValue>> results(kAggregateFunctionCount,
                                                    std::vector<DataValue>(n));
        for (std::size_t f = 0; f < kAggregateFunctionCount; ++f) {
            INFO("round " << round << " function " << f);
            ComputeResult r = compute(static_cast<AggregateFunction>(f), raw, rq, results[f]);
            REQUIRE(r.status == UAPLEX_Good);
            REQUIRE(r.written == n);
            for (std::size_t k = 0; k < n; ++k) {
                const DataValue& d = results[f][k];
                INFO("interval " << k << " status 0x" << std::hex << d.status);
                REQUIRE((d.mask & UAPLEX_DATAVALUE_STATUS) != 0);
                REQUIRE((d.mask & UAPLEX_DATAVALUE_SOURCE_TIMESTAMP) != 0);
                const bool hasValue = (d.mask & UAPLEX_DATAVALUE_VALUE) != 0;
                if (UAPLEX_STATUS_IS_BAD(d.status)) {
                    auto fn = static_cast<AggregateFunction>(f);
                    bool raw_copy = fn == AggregateFunction::Start || fn == AggregateFunction::End;
                    if (!raw_copy) CHECK_FALSE(hasValue);
                    continue;
                }
                REQUIRE(hasValue);
                CHECK(std::isfinite(asNumber(d.value)));
                // Only the aggregate bits, and InfoType DataValue exactly when one is set.
                StatusCode low = d.status & 0xFFFFu;
                StatusCode bits = low & ~kInfoTypeDataValue;
                CHECK((bits & ~(C | I | P | M)) == 0);
                CHECK(((low & kInfoTypeDataValue) != 0) == (bits != 0));
            }
        }
        auto value = [&](AggregateFunction f, std::size_t k) {
            return asNumber(results[std::size_t(f)][k].value);
        };
        auto good = [&](AggregateFunction f, std::size_t k) {
            return !UAPLEX_STATUS_IS_BAD(results[std::size_t(f)][k].status);
        };
        for (std::size_t k = 0; k < n; ++k) {
            INFO("round " << round << " interval " << k);
            using F = AggregateFunction;
            if (good(F::DurationGood, k)) {
                REQUIRE(good(F::DurationBad, k));
                CHECK(value(F::PercentGood, k) + value(F::PercentBad, k) <= 100 + 1e-9);
                if (rq.configuration.treatUncertainAsBad)  // no Uncertain regions: they fill it
                    CHECK(value(F::PercentGood, k) + value(F::PercentBad, k) == Approx(100));
                CHECK(value(F::DurationGood, k) >= 0);
                CHECK(value(F::DurationBad, k) >= 0);
            }
            if (good(F::Minimum, k) && good(F::Maximum, k)) {
                CHECK(value(F::Minimum, k) <= value(F::Maximum, k));
                CHECK(value(F::Range, k) == Approx(value(F::Maximum, k) - value(F::Minimum, k)));
                CHECK(value(F::MinimumActualTime, k) == value(F::Minimum, k));
                CHECK(value(F::MaximumActualTime, k) == value(F::Maximum, k));
            }
            if (good(F::Minimum2, k) && good(F::Maximum2, k)) {
                CHECK(value(F::Minimum2, k) <= value(F::Maximum2, k));
            }
            if (good(F::TimeAverage2, k) && good(F::Minimum2, k) && good(F::Maximum2, k)) {
                CHECK(value(F::TimeAverage2, k) >= value(F::Minimum2, k) - 1e-9);
                CHECK(value(F::TimeAverage2, k) <= value(F::Maximum2, k) + 1e-9);
            }
            if (good(F::Count, k)) CHECK(value(F::Count, k) >= 0);
        }
    }
}

TEST_CASE("UseSlopedExtrapolation continues the line of the last two non-Bad values") {
    auto rq = request(85, 100, 5);
    rq.configuration.useSlopedExtrapolation = true;
    // After 90 (the last value) along 80 -> 90: 95 at 95; always Uncertain.
    check(AggregateFunction::Interpolative, historian1(), rq,
          {{85, 85, st(G, I)}, {90, 90, G}, {95, 95, st(U, I)}});
    // TimeAverage [90,100): 90 -> 100 extrapolated: 95, Uncertain, Partial (no data after 90).
    auto one = request(90, 100, 0);
    one.configuration.useSlopedExtrapolation = true;
    check(AggregateFunction::TimeAverage, historian1(), one, {{90, 95, st(U, C | P)}});
}

TEST_CASE("the requested configuration or the defaults") {
    ua::AggregateConfiguration wire{};
    wire.useServerCapabilitiesDefaults = false;
    wire.treatUncertainAsBad = false;
    wire.percentDataBad = 30;
    wire.percentDataGood = 80;
    wire.useSlopedExtrapolation = true;
    AggregateConfiguration defaults;  // true, 100, 100, false
    AggregateConfiguration c = effectiveConfiguration(wire, defaults);
    CHECK_FALSE(c.treatUncertainAsBad);
    CHECK(c.percentDataBad == 30);
    CHECK(c.percentDataGood == 80);
    CHECK(c.useSlopedExtrapolation);
    wire.useServerCapabilitiesDefaults = true;
    c = effectiveConfiguration(wire, defaults);
    CHECK(c.treatUncertainAsBad);
    CHECK(c.percentDataBad == 100);
    CHECK(c.percentDataGood == 100);
    CHECK_FALSE(c.useSlopedExtrapolation);
}
