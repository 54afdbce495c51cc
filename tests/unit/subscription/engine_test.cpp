// SPDX-License-Identifier: Apache-2.0
// docs/pipeline.md, Publish engine: revision, the timer tick, keep-alives, lifetime, message
// building, the ready list.
#include <catch2/catch.hpp>
#include <random>
#include <set>

#include "engine_support.hpp"

using namespace uaplex;
using namespace uaplex::subscription;
using namespace uaplex::subscription::test;

namespace {

bool isKeepAlive(const PublishOutcome& o) {
    return o.message && o.message.message().notificationData.length <= 0;
}

}  // namespace

TEST_CASE("engine 1: revision of PI, K and L") {
    SubscriptionLimits lim;
    CHECK(reviseSettings(lim, 55, 30, 3, 0).publishingInterval == 100);
    CHECK(reviseSettings(lim, 150, 30, 3, 0).publishingInterval == 200);
    CHECK(reviseSettings(lim, 1000, 30, 0, 0).maxKeepAliveCount == 3);
    CHECK(reviseSettings(lim, 2000, 1, 3, 0).lifetimeCount == 9);
    CHECK(reviseSettings(lim, 1000, 1, 3, 0).lifetimeCount == 10);
    CHECK(reviseSettings(lim, 1000, 30, 3, 0).maxNotificationsPerPublish == 100);
    CHECK(reviseSettings(lim, 1000, 30, 3, 7).maxNotificationsPerPublish == 7);
}

TEST_CASE("engine 2: the first tick yields a keep-alive with sequence number 1") {
    Engine e;
    auto sub = e.subscription(100, 3, 30, 0);
    Ticker tick{e, *sub};
    CHECK(tick() == TickResult::NotificationsAvailable);
    auto o = sub->publish();
    REQUIRE(isKeepAlive(o));
    CHECK(o.message.sequenceNumber() == 1);
    CHECK(sub->keepAliveCounter() == 0);
    CHECK(sub->lifetimeCounter() == 0);
    CHECK(sub->sequenceNumbers().next() == 1);  // not consumed
}

TEST_CASE("engine 3: keep-alives every K ticks while requests wait") {
    Engine e;
    auto sub = e.subscription(100, 3, 30, 0);
    Ticker tick{e, *sub};
    std::vector<int> at;
    for (int i = 1; i <= 9; ++i) {
        if (tick() == TickResult::NotificationsAvailable && isKeepAlive(sub->publish()))
            at.push_back(i);
    }
    CHECK(at == std::vector<int>{1, 4, 7});
}

TEST_CASE("engine 4: without Publish requests the subscription expires at tick L+1") {
    Engine e;
    auto sub = e.subscription(2000, 2, 6, 0);
    REQUIRE(sub->settings().lifetimeCount == 6);
    Ticker tick{e, *sub};
    for (int i = 1; i <= 6; ++i) CHECK(tick() != TickResult::Expired);
    CHECK(tick() == TickResult::Expired);
    CHECK(sub->latePublishRequestCount() == 6);
    auto status = sub->statusMessage(UAPLEX_BadTimeout);
    auto& eo = status.message.message().notificationData[0];
    REQUIRE(eo.data_type == enc::dataTypeOf<ua::StatusChangeNotification>());
    CHECK(static_cast<ua::StatusChangeNotification*>(eo.object)->status == UAPLEX_BadTimeout);
    CHECK(status.message.sequenceNumber() == 1);
}

TEST_CASE("engine 5: N=2 and five values give messages of 2, 2 and 1") {
    Engine e;
    auto sub = e.subscription(100, 3, 30, 2);
    MonitoredItem* it = e.dataItem(*sub, 5);
    for (int i = 1; i <= 5; ++i) e.put(it, i);
    Ticker tick{e, *sub};
    REQUIRE(tick() == TickResult::NotificationsAvailable);
    auto a = sub->publish();
    CHECK(valuesOf(notes(a.message.message())) == std::vector<double>{1, 2});
    CHECK(a.more);
    auto b = sub->publish();  // no tick needed
    CHECK(valuesOf(notes(b.message.message())) == std::vector<double>{3, 4});
    CHECK(b.more);
    auto c = sub->publish();
    CHECK(valuesOf(notes(c.message.message())) == std::vector<double>{5});
    CHECK_FALSE(c.more);
    CHECK(c.available == std::vector<uint32_t>{1, 2, 3});
}

TEST_CASE("engine 6: events before data changes; acknowledge and modify reset counters") {
    Engine e;
    auto sub = e.subscription(100, 3, 30, 0);
    MonitoredItem* data = e.dataItem(*sub, 1);
    MonitoredItem* ev = e.eventItem(*sub, 10);
    e.put(data, 7);
    e.queueEvent(ev, 1, 1);
    Ticker tick{e, *sub};
    tick();
    auto o = sub->publish();
    auto n = notes(o.message.message());
    REQUIRE(n.size() == 2);
    CHECK(n[0].event);
    CHECK_FALSE(n[1].event);
    tick();
    tick();  // no request: waitingForPublish stays false, nothing to count
    sub->republish(1);
    e.put(data, 8);
    tick();  // waitingForPublish now true
    tick();
    CHECK(sub->lifetimeCounter() == 1);
    CHECK(sub->acknowledge(1) == UAPLEX_Good);
    CHECK(sub->lifetimeCounter() == 0);
    CHECK(sub->keepAliveCounter() > 0);
    sub->modify(reviseSettings(e.ctx.limits, 500, 30, 3, 0), 0);
    CHECK(sub->keepAliveCounter() == 0);
    int64_t at = e.clock.mono;
    e.clock.mono = at + 499;
    CHECK(sub->tick(e.clock.mono) !=
          TickResult::NotificationsAvailable);  // the timer restarted at now
}

TEST_CASE("engine 7: publishing disabled sends no data, only keep-alives every K ticks") {
    Engine e;
    auto sub = e.subscription(100, 3, 30, 0, false);
    MonitoredItem* it = e.dataItem(*sub, 1);
    Ticker tick{e, *sub};
    std::vector<int> at;
    for (int i = 1; i <= 7; ++i) {
        e.put(it, i);
        if (tick() == TickResult::NotificationsAvailable) {
            auto o = sub->publish();
            CHECK(isKeepAlive(o));
            at.push_back(i);
        }
    }
    CHECK(at == std::vector<int>{1, 4, 7});
}

TEST_CASE("engine 8: readiness revoked between tick and Publish is a false alarm") {
    Engine e;
    auto sub = e.subscription(100, 3, 30, 0);
    MonitoredItem* it = e.dataItem(*sub, 5);
    Ticker tick{e, *sub};
    tick();
    REQUIRE(isKeepAlive(sub->publish()));
    e.put(it, 1);
    REQUIRE(tick() == TickResult::NotificationsAvailable);
    it->setMode(ua::MonitoringMode::Disabled, e.clock.mono);  // drops the queue
    auto o = sub->publish();
    CHECK(o.noMessage);
    CHECK_FALSE(o.message);
    CHECK_FALSE(sub->waitingForPublish());
    CHECK(sub->sequenceNumbers().next() == 1);  // no empty data message was built
}

TEST_CASE("engine 9: a stall of 5 PI advances each counter by one") {
    Engine e;
    auto sub = e.subscription(100, 10, 100, 0);
    Ticker tick{e, *sub};
    tick();  // the first keep-alive is due; nobody publishes: waitingForPublish
    REQUIRE(sub->waitingForPublish());
    uint32_t ka = sub->keepAliveCounter(), life = sub->lifetimeCounter();
    tick.n += 4;
    tick();
    CHECK(sub->keepAliveCounter() == ka + 1);
    CHECK(sub->lifetimeCounter() == life + 1);
}

TEST_CASE("engine 10: the ready list moves the same items as a full scan") {
    Engine e;
    auto sub = e.subscription(100, 1000, 3000, 0);
    std::mt19937 rng(5);
    std::vector<MonitoredItem*> items;
    for (int i = 0; i < 1000; ++i) {
        int64_t si = int64_t(rng() % 4) * 100;
        items.push_back(e.dataItem(*sub, 1 + rng() % 3, true, si));
    }
    Ticker tick{e, *sub};
    for (int round = 0; round < 60; ++round) {
        for (int k = 0; k < 150; ++k) {
            MonitoredItem* it = items[rng() % items.size()];
            int op = int(rng() % 20);
            if (op == 0)
                it->setMode(ua::MonitoringMode(rng() % 3), e.clock.mono);
            else
                e.put(it, double(rng() % 50));
        }
        e.clock.mono = int64_t(100) * (tick.n + 1) + 1;
        std::set<uint32_t> legacy;
        for (auto* it : items)
            if (it->isReadyToPublish(e.clock.mono)) legacy.insert(it->id());
        tick();
        std::set<uint32_t> moved(sub->lastMoved().begin(), sub->lastMoved().end());
        REQUIRE(moved == legacy);
        while (true) {
            auto o = sub->publish();
            if (!o.more) break;
        }
        for (uint32_t s : sub->availableSequenceNumbers()) sub->acknowledge(s);
    }
}
