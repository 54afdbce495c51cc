// SPDX-License-Identifier: Apache-2.0
// Deleting monitored items whose notifications are still queued (ready list, publish list,
// triggering): the next Publish carries only live items' notifications, every deleted item
// is freed once no list holds it, and the item slab gives its chunks back.
#include <algorithm>
#include <catch2/catch.hpp>
#include <map>
#include <random>
#include <set>

#include "engine_support.hpp"

using namespace uaplex;
using namespace uaplex::subscription;
using namespace uaplex::subscription::test;

namespace {

// The client handles of every data change the subscription publishes now (all messages).
std::multiset<uint32_t> publishAll(Subscription& s) {
    std::multiset<uint32_t> handles;
    for (;;) {
        auto o = s.publish();
        if (o.message)
            for (auto& n : notes(o.message.message()))
                if (!n.event) handles.insert(n.clientHandle);
        if (!o.more) break;
    }
    for (uint32_t seq : s.availableSequenceNumbers()) s.acknowledge(seq);
    return handles;
}

std::set<uint32_t> unique(const std::multiset<uint32_t>& m) {
    return {m.begin(), m.end()};
}

}  // namespace

TEST_CASE("block slab: blocks come from mapped chunks that go back when they empty") {
    BlockSlab slab(160, 8);
    const size_t per = slab.blocksPerChunk();
    REQUIRE(per > 1000);
    std::vector<void*> blocks;
    for (size_t i = 0; i < 3 * per; ++i) {
        void* b = slab.allocate();
        REQUIRE(b);
        std::memset(b, 0xAB, 160);
        blocks.push_back(b);
    }
    CHECK(slab.chunkCount() == 3);
    CHECK(std::set<void*>(blocks.begin(), blocks.end()).size() == blocks.size());
    std::shuffle(blocks.begin(), blocks.end(), std::mt19937(7));
    // Half freed in random order: every chunk still holds blocks.
    for (size_t i = 0; i < blocks.size() / 2; ++i) slab.release(blocks[i]);
    CHECK(slab.liveBlocks() == blocks.size() - blocks.size() / 2);
    // Freed blocks are reused before a new chunk is mapped.
    std::vector<void*> again;
    for (size_t i = 0; i < blocks.size() / 2; ++i) again.push_back(slab.allocate());
    CHECK(slab.chunkCount() == 3);
    for (void* b : again) slab.release(b);
    for (size_t i = blocks.size() / 2; i < blocks.size(); ++i) slab.release(blocks[i]);
    CHECK(slab.liveBlocks() == 0);
    CHECK(slab.chunkCount() == 1);  // the last one stays mapped, its pages given back
    void* b = slab.allocate();
    REQUIRE(b);
    slab.release(b);
    CHECK(slab.chunkCount() == 1);
}

TEST_CASE("deletion 1: items deleted from the ready list never reach a Publish") {
    Engine e;
    auto sub = e.subscription(100, 3, 30, 0);
    std::vector<MonitoredItem*> items;
    for (int i = 0; i < 10; ++i) items.push_back(e.dataItem(*sub, i % 2 ? 3 : 1));
    for (auto* it : items) e.put(it, 1);
    std::set<uint32_t> live;
    for (int i = 0; i < 10; ++i) {
        if (i % 3 == 0)
            REQUIRE(sub->deleteItem(items[i]->id()));
        else
            live.insert(100 + uint32_t(i));
    }
    CHECK(sub->itemCount() == 6);
    CHECK(sub->discardedCount() == 4);  // still in the ready list: freed later
    Ticker tick{e, *sub};
    REQUIRE(tick() == TickResult::NotificationsAvailable);
    CHECK(unique(publishAll(*sub)) == live);
    // The next deletion finds the discarded items out of every list and frees them.
    REQUIRE(sub->deleteItem(items[1]->id()));
    CHECK(sub->discardedCount() == 0);
    CHECK(e.ctx.itemSlab.liveBlocks() == 5);
}

TEST_CASE("deletion 2: items deleted from the publish list never reach a Publish") {
    Engine e;
    auto sub = e.subscription(100, 3, 30, 2);  // two notifications per message
    std::vector<MonitoredItem*> items;
    for (int i = 0; i < 12; ++i) items.push_back(e.dataItem(*sub, i % 2 ? 5 : 1));
    for (auto* it : items) {
        e.put(it, 1);
        e.put(it, 2);
    }
    Ticker tick{e, *sub};
    REQUIRE(tick() == TickResult::NotificationsAvailable);
    REQUIRE(sub->publishListSize() == 12);
    std::set<uint32_t> live;
    for (int i = 0; i < 12; ++i) {
        if (i % 4 == 3)
            live.insert(100 + uint32_t(i));
        else
            REQUIRE(sub->deleteItem(items[i]->id()));
    }
    auto published = publishAll(*sub);
    CHECK(unique(published) == live);
    CHECK(published.size() == 6);  // items 3, 7 and 11 (queue size 5) hold two values each
    CHECK(sub->publishListSize() == 0);
    // Nothing left in any list: the discarded items are freed by the next deletion.
    REQUIRE(sub->deleteItem(items[3]->id()));
    CHECK(sub->discardedCount() == 0);
    CHECK(e.ctx.itemSlab.liveBlocks() == sub->itemCount());
}

TEST_CASE("deletion 3: deleting a triggering item or a linked item") {
    Engine e;
    auto sub = e.subscription(100, 100, 300, 0);
    MonitoredItem* trigger = e.dataItem(*sub, 1);
    MonitoredItem* a = e.dataItem(*sub, 1);
    MonitoredItem* b = e.dataItem(*sub, 1);
    a->setMode(ua::MonitoringMode::Sampling, 0);
    b->setMode(ua::MonitoringMode::Sampling, 0);
    trigger->mutableLinks() = {a->id(), b->id()};
    uint32_t th = trigger->clientHandle(), ah = a->clientHandle(), bh = b->clientHandle();
    Ticker tick{e, *sub};
    e.put(trigger, 1);
    tick();
    publishAll(*sub);

    SECTION("the triggering item, after it was queued as a trigger source") {
        e.put(a, 2);
        e.put(b, 2);
        e.put(trigger, 2);  // ready to trigger
        REQUIRE(sub->deleteItem(trigger->id()));
        tick();
        CHECK(publishAll(*sub).empty());  // neither the trigger's value nor a triggered one
        // The linked items still publish when reporting.
        a->setMode(ua::MonitoringMode::Reporting, e.clock.mono);
        tick();
        CHECK(unique(publishAll(*sub)) == std::set<uint32_t>{ah});
    }
    SECTION("a linked item: the trigger reports itself and the live link") {
        e.put(a, 2);
        e.put(b, 2);
        REQUIRE(sub->deleteItem(a->id()));
        e.put(trigger, 2);
        tick();
        CHECK(unique(publishAll(*sub)) == std::set<uint32_t>{th, bh});
    }
    SECTION("links removed by SetTriggering after the trigger was queued") {
        e.put(a, 2);
        e.put(trigger, 2);
        trigger->mutableLinks().clear();
        tick();
        CHECK(unique(publishAll(*sub)) == std::set<uint32_t>{th});
    }
    sub.reset();
    CHECK(e.ctx.itemSlab.liveBlocks() == 0);
}

TEST_CASE("deletion 4: deleting every item while all its values are queued frees them all") {
    Engine e;
    auto sub = e.subscription(100, 3, 30, 0);
    const int n = 100000;  // each deletion scanning the lists would be 10^10 steps
    std::vector<uint32_t> ids;
    auto create = [&](int count) {
        for (int i = 0; i < count; ++i) {
            MonitoredItem* it = e.dataItem(*sub, 1);
            e.put(it, i);
            ids.push_back(it->id());
        }
    };
    Ticker tick{e, *sub};
    SECTION("in the ready list") {
        create(n);
    }
    SECTION("half in the publish list, half in the ready list") {
        create(n / 2);
        REQUIRE(tick() == TickResult::NotificationsAvailable);
        create(n / 2);
        CHECK(sub->publishListSize() == size_t(n / 2));
        CHECK(sub->readyListSize() == size_t(n / 2));
    }
    size_t chunks = e.ctx.itemSlab.chunkCount();
    CHECK(chunks >= size_t(n) / e.ctx.itemSlab.blocksPerChunk());
    for (uint32_t id : ids) REQUIRE(sub->deleteItem(id));
    CHECK(sub->itemCount() == 0);
    CHECK(sub->discardedCount() == 0);
    CHECK(sub->readyListSize() == 0);
    CHECK(sub->publishListSize() == 0);
    CHECK(e.ctx.itemSlab.liveBlocks() == 0);
    CHECK(e.ctx.itemSlab.chunkCount() == 1);
    tick();
    CHECK(publishAll(*sub).empty());
    // Ids start over once every item is gone.
    CHECK(e.dataItem(*sub, 1)->id() == 1);
}

TEST_CASE("deletion 5: random creation, values, triggering and deletion against a model") {
    Engine e;
    auto sub = e.subscription(100, 1000, 3000, 7);
    std::mt19937 rng(11);
    std::map<uint32_t, MonitoredItem*> live;  // by client handle
    uint32_t nextHandle = 1;
    auto create = [&] {
        MonitoredItem* it = e.dataItem(*sub, 1 + rng() % 3);
        it->setClientHandle(nextHandle++);  // never reused: a deleted item's handle is unique
        if (rng() % 4 == 0) it->setMode(ua::MonitoringMode::Sampling, e.clock.mono);
        live[it->clientHandle()] = it;
    };
    for (int i = 0; i < 300; ++i) create();
    Ticker tick{e, *sub};
    std::set<uint32_t> deleted;
    for (int round = 0; round < 80; ++round) {
        for (int k = 0; k < 200; ++k) {
            auto pick = std::next(live.begin(), long(rng() % live.size()));
            MonitoredItem* it = pick->second;
            switch (rng() % 10) {
                case 0:
                    deleted.insert(pick->first);
                    REQUIRE(sub->deleteItem(it->id()));
                    live.erase(pick);
                    create();
                    break;
                case 1: {
                    auto other = std::next(live.begin(), long(rng() % live.size()));
                    it->mutableLinks().push_back(other->second->id());
                    break;
                }
                default:
                    e.put(it, double(rng() % 50));
            }
        }
        tick();
        if (round % 3 == 0) continue;  // let some rounds leave the publish list full
        for (uint32_t h : publishAll(*sub)) {
            INFO("round " << round << " handle " << h);
            CHECK_FALSE(deleted.count(h));
            CHECK(live.count(h));
        }
    }
    sub.reset();
    CHECK(e.ctx.itemSlab.liveBlocks() == 0);
}
