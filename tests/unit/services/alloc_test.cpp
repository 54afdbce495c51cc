// SPDX-License-Identifier: Apache-2.0
// A steady-state Read and Write of a benchmark scalar allocate nothing from the heap: the
// response lives in the call's arena and the stored value is overwritten in place.
#include <catch2/catch.hpp>

#include "support/counting_new.hpp"
#include "support/services_fixture.hpp"

using namespace uaplex;

TEST_CASE("steady-state scalar Read and Write do not touch the heap") {
    // The benchmark plugin only: the demo's timer thread would be counted too.
    test::Server s("", test::benchmarkPlugin());
    ua::ReadValueId item{};
    item.nodeId = ua::numericNodeId(1, 1042);
    item.attributeId = 13;
    item.indexRange = ua::nullString();
    item.dataEncoding.name = ua::nullString();
    ua::ReadRequest read{};
    read.timestampsToReturn = ua::TimestampsToReturn::Both;
    read.nodesToRead = {1, &item};

    ua::WriteValue wv{};
    wv.nodeId = item.nodeId;
    wv.attributeId = 13;
    wv.indexRange = ua::nullString();
    wv.value.mask = UAPLEX_DATAVALUE_VALUE;
    ua::WriteRequest write{};
    write.nodesToWrite = {1, &wv};

    enc::Arena arena;
    // No Catch assertions inside: only the services run while the heap is counted.
    auto cycle = [&](std::int32_t value) {
        arena.reset();
        wv.value.value = ua::variantInt32(value);
        services::ServiceCall w{arena, s.session.get(), enc::dataTypeOf<ua::WriteRequest>(),
                                &write};
        if (s.services->write(w) != UAPLEX_Good) return false;
        if (static_cast<ua::WriteResponse*>(w.response)->results[0] != UAPLEX_Good) return false;
        services::ServiceCall r{arena, s.session.get(), enc::dataTypeOf<ua::ReadRequest>(), &read};
        if (s.services->read(r) != UAPLEX_Good) return false;
        const ua::DataValue& dv = static_cast<ua::ReadResponse*>(r.response)->results[0];
        return dv.status == UAPLEX_Good && dv.value.value.int32 == value;
    };
    bool ok = true;
    for (int i = 0; i < 10; ++i) ok = cycle(i) && ok;  // warm-up: arena blocks, scratch buffer
    REQUIRE(ok);
    test::HeapScope heap;
    for (int i = 0; i < 1000; ++i) ok = cycle(i * 7) && ok;
    std::size_t allocations = heap.allocations(), bytes = heap.bytes();
    CHECK(ok);
    CHECK(allocations == 0);
    CHECK(bytes == 0);
}

TEST_CASE("a write that leaves a configured alarm's state as it is allocates nothing") {
    test::Server s("", test::benchmarkPlugin() +
                           "[[alarms]]\nname = \"A\"\ntype = \"non_exclusive_level\"\n"
                           "source = \"ns=1;i=1042\"\nhigh_high = 2000000\nhigh = 1000000\n"
                           "low = -1000000\ndeadband = 10\n");
    ua::WriteValue wv{};
    wv.nodeId = ua::numericNodeId(1, 1042);
    wv.attributeId = 13;
    wv.indexRange = ua::nullString();
    wv.value.mask = UAPLEX_DATAVALUE_VALUE;
    ua::WriteRequest write{};
    write.nodesToWrite = {1, &wv};
    enc::Arena arena;
    auto cycle = [&](std::int32_t value) {
        arena.reset();
        wv.value.value = ua::variantInt32(value);
        services::ServiceCall w{arena, s.session.get(), enc::dataTypeOf<ua::WriteRequest>(),
                                &write};
        return s.services->write(w) == UAPLEX_Good &&
               static_cast<ua::WriteResponse*>(w.response)->results[0] == UAPLEX_Good;
    };
    bool ok = true;
    for (int i = 0; i < 10; ++i) ok = cycle(i) && ok;
    ok = cycle(1500000) && ok;  // High active: a change, its event (allocates)
    REQUIRE(ok);
    test::HeapScope heap;
    // Within High and its deadband, then within the normal band: no state change.
    for (int i = 0; i < 500; ++i) ok = cycle(1000000 - (i % 10)) && ok;
    std::size_t allocations = heap.allocations();
    CHECK(ok);
    CHECK(allocations == 0);
}
