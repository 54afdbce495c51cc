// SPDX-License-Identifier: Apache-2.0
// SparePool: steady reuse keeps its spares; what a burst left unused for a whole trim period
// goes back, down to the reserve, and the mappings it lived in with it.
#include <catch2/catch.hpp>

#include <vector>

#include "uaplex/cpp/spare_pool.hpp"

namespace {

struct Record {
    static inline int alive = 0;
    Record() { ++alive; }
    ~Record() { --alive; }
    char payload[200];
};

Record* takeOrMake(uaplex::sdk::SparePool<Record>& pool, int& made) {
    if (Record* r = pool.take()) return r;
    ++made;
    return pool.make();
}

}  // namespace

TEST_CASE("spare pool: a burst's spares go back after a trim period nobody needed them") {
    {
        uaplex::sdk::SparePool<Record> pool(1024, 4);
        int made = 0;
        std::vector<Record*> burst;
        for (int i = 0; i < 100; ++i) burst.push_back(takeOrMake(pool, made));
        for (auto* r : burst) pool.put(r);
        CHECK(made == 100);
        CHECK(pool.spares() == 100);
        // The period of the burst needed every one of them: nothing goes.
        CHECK(pool.trim() == 0);
        CHECK(Record::alive == 100);
        // A period in which none was taken: all but the reserve go.
        CHECK(pool.trim() == 96);
        CHECK(pool.spares() == 4);
        CHECK(Record::alive == 4);
        CHECK(pool.trim() == 0);
    }
    CHECK(Record::alive == 0);
}

TEST_CASE("spare pool: steady reuse keeps what it cycles through and makes nothing new") {
    uaplex::sdk::SparePool<Record> pool(1024, 4);
    int made = 0;
    std::vector<Record*> inFlight;
    for (int period = 0; period < 10; ++period) {
        for (int round = 0; round < 5; ++round) {
            for (int i = 0; i < 10; ++i) inFlight.push_back(takeOrMake(pool, made));
            for (auto* r : inFlight) pool.put(r);
            inFlight.clear();
        }
        pool.trim();
    }
    CHECK(made == 10);  // the first round's; every later one reused them
    CHECK(pool.spares() == 10);
}

TEST_CASE("spare pool: a full ring deletes what it cannot keep") {
    uaplex::sdk::SparePool<Record> pool(8, 2);
    std::vector<Record*> many;
    for (int i = 0; i < 12; ++i) many.push_back(pool.make());
    for (auto* r : many) pool.put(r);
    CHECK(pool.spares() == 8);
    CHECK(Record::alive == 8);
}

TEST_CASE("spare pool: a trimmed burst gives its mappings back; the reserve stays in the lowest") {
    using Pool = uaplex::sdk::SparePool<Record>;
    const std::size_t chunksBefore = Pool::chunks();
    {
        Pool pool(4096, 8);
        int made = 0;
        std::vector<Record*> burst;
        for (int i = 0; i < 2000; ++i) burst.push_back(takeOrMake(pool, made));
        // 2,000 records of 200 bytes: several 64 KiB mappings.
        CHECK(Pool::chunks() >= chunksBefore + 6);
        for (auto* r : burst) pool.put(r);
        pool.trim();  // the burst's own period
        CHECK(pool.trim() == 1992);
        CHECK(pool.spares() == 8);
        // The 8 kept are the lowest in memory: they share one mapping, the rest are unmapped.
        CHECK(Pool::chunks() == chunksBefore + 1);
        // Made again when needed.
        for (int i = 0; i < 100; ++i) burst[i] = takeOrMake(pool, made);
        for (int i = 0; i < 100; ++i) pool.put(burst[i]);
    }
    CHECK(Pool::chunks() == chunksBefore);
    CHECK(Record::alive == 0);
}
