// SPDX-License-Identifier: Apache-2.0
// docs/pipeline.md, AggregateFilter, item level: one aggregated value per processing interval
// from the samples of a 200 ms interval on the fake clock, checked against values worked
// out by hand.
#include <catch2/catch.hpp>

#include <cmath>

#include "engine_support.hpp"

using namespace uaplex;
using namespace uaplex::subscription;
using namespace uaplex::subscription::test;

namespace {

constexpr uint32_t kCalculated = aggregates::kInfoTypeDataValue | aggregates::kHistorianCalculated;

struct AggregateItem {
    Engine e;
    std::unique_ptr<Subscription> sub = e.subscription(100, 3, 30, 0);
    MonitoredItem* it = nullptr;
    explicit AggregateItem(aggregates::AggregateFunction f, uint32_t capacity = 5) {
        it = e.dataItem(*sub, 8, true, 50);
        AggregateSpec spec;
        spec.function = f;
        spec.startTime = e.clock.utcNow();  // the first interval starts at mono 0
        spec.processingIntervalMs = 200;
        spec.capacity = capacity;
        it->setAggregate(&spec);
    }
    void at(int64_t ms, double x) {
        e.clock.mono = ms;
        e.put(it, x);
    }
    void badAt(int64_t ms) {
        e.clock.mono = ms;
        ua::DataValue dv{};
        dv.mask = UAPLEX_DATAVALUE_STATUS;
        dv.status = UAPLEX_BadSensorFailure;
        it->queueValue(dv, UAPLEX_Good, e.clock.monoMs());
    }
    // Interval 1 [0, 200): 3, 1, 4, 2 every 50 ms. Interval 2 [200, 400): 5, Bad, 7, 6.
    // The sample at 400 ends interval 2.
    void feed() {
        at(0, 3);
        at(50, 1);
        at(100, 4);
        at(150, 2);
        at(200, 5);
        badAt(250);
        at(300, 7);
        at(350, 6);
        at(400, 8);
    }
    std::vector<ua::DataValue> published() {
        Staged s(e.ctx);
        it->publish(s.data, s.events, 0, e.clock.monoMs());
        std::vector<ua::DataValue> out;
        for (auto& d : s.data) out.push_back(d.value->dv);
        return out;
    }
    ua::DateTime utcAt(int64_t ms) const { return e.clock.utcBase + ms * 10000; }
};

}  // namespace

TEST_CASE("aggregate filter 1: Average over 200 ms intervals") {
    AggregateItem a(aggregates::AggregateFunction::Average);
    a.feed();
    auto v = a.published();
    REQUIRE(v.size() == 2);
    // (3 + 1 + 4 + 2) / 4, from Good values only: Good, Calculated.
    CHECK(v[0].value.value.double_ == 2.5);
    CHECK(v[0].status == kCalculated);
    CHECK(v[0].source_timestamp == a.utcAt(0));
    // (5 + 7 + 6) / 3; 3 of 4 values Good (PercentDataGood 100 not reached, PercentDataBad
    // 100 not reached): Uncertain_DataSubNormal, Calculated.
    CHECK(v[1].value.value.double_ == 6);
    CHECK(v[1].status == (UAPLEX_UncertainDataSubNormal | kCalculated));
    CHECK(v[1].source_timestamp == a.utcAt(200));
}

TEST_CASE("aggregate filter 2: Minimum over 200 ms intervals") {
    AggregateItem a(aggregates::AggregateFunction::Minimum);
    a.feed();
    auto v = a.published();
    REQUIRE(v.size() == 2);
    // 1 at 50 ms, not at the interval's timestamp: Good, Calculated.
    CHECK(v[0].value.value.double_ == 1);
    CHECK(v[0].status == kCalculated);
    // 5 at the interval's start, but a Bad value was skipped: Uncertain, Calculated.
    CHECK(v[1].value.value.double_ == 5);
    CHECK(v[1].status == (UAPLEX_UncertainDataSubNormal | kCalculated));
    CHECK(v[1].source_timestamp == a.utcAt(200));
}

TEST_CASE("aggregate filter 3: no sample in an interval gives Bad_NoData") {
    AggregateItem a(aggregates::AggregateFunction::Average);
    a.at(0, 4);
    a.at(150, 4);                  // unchanged values are samples too
    CHECK(a.published().empty());  // the interval has not ended
    a.at(450, 6);                  // ends [0, 200) and [200, 400)
    auto v = a.published();
    REQUIRE(v.size() == 2);
    CHECK(v[0].value.value.double_ == 4);
    CHECK(v[0].status == kCalculated);
    CHECK(v[1].status == UAPLEX_BadNoData);
    CHECK(v[1].source_timestamp == a.utcAt(200));
}

TEST_CASE("aggregate filter 4: a full interval drops the later samples and counts them") {
    AggregateItem a(aggregates::AggregateFunction::Average, 2);
    a.at(0, 1);
    a.at(50, 3);
    a.at(100, 100);  // dropped: the buffer holds 2
    a.at(150, 100);  // dropped
    a.at(200, 0);
    auto v = a.published();
    REQUIRE(v.size() == 1);
    CHECK(v[0].value.value.double_ == 2);
    CHECK(a.it->aggregateDroppedSamples() == 2);
}
