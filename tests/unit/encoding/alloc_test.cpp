// SPDX-License-Identifier: Apache-2.0
// Proves the hot path is heap-free in steady state: after warm-up, decoding a ReadRequest
// into a reused arena and encoding a ReadResponse into a reused buffer allocate nothing.
#include "support/counting_new.hpp"
#include "support/encoding_messages.hpp"

#include <catch2/catch.hpp>

using namespace uaplex;

TEST_CASE("ReadRequest decode allocates nothing in steady state", "[alloc]") {
    for (int n : {1, 100}) {
        std::vector<std::uint8_t> bytes =
            test::encodeMessageBytes(test::ReadRequestFixture(n).request);
        enc::Arena arena;
        enc::DecodeLimits limits;
        for (int warm = 0; warm < 3; ++warm) {
            arena.reset();
            REQUIRE(enc::decodeMessage(bytes, arena, limits).status == UAPLEX_Good);
        }
        // No Catch assertions inside the measured loop: they may allocate themselves.
        bool allGood = true;
        test::HeapScope heap;
        for (int i = 0; i < 100; ++i) {
            arena.reset();
            enc::DecodedMessage m = enc::decodeMessage(bytes, arena, limits);
            allGood = allGood && m.status == UAPLEX_Good &&
                      static_cast<ua::ReadRequest*>(m.object)->nodesToRead.length == n;
        }
        std::size_t allocations = heap.allocations(), heapBytes = heap.bytes();
        INFO(n << " values");
        CHECK(allGood);
        CHECK(allocations == 0);
        CHECK(heapBytes == 0);
    }
}

TEST_CASE("ReadResponse encode allocates nothing in steady state", "[alloc]") {
    for (int n : {1, 100}) {
        test::ReadResponseFixture fixture(n);
        enc::ByteBuffer buffer;
        for (int warm = 0; warm < 3; ++warm) {
            buffer.clear();
            enc::BinaryWriter w(buffer);
            REQUIRE(enc::encodeMessage(w, fixture.response) == UAPLEX_Good);
        }
        bool allGood = true;
        std::size_t size = 0;
        test::HeapScope heap;
        for (int i = 0; i < 100; ++i) {
            buffer.clear();
            enc::BinaryWriter w(buffer);
            allGood = allGood && enc::encodeMessage(w, fixture.response) == UAPLEX_Good;
            size = buffer.size();
        }
        std::size_t allocations = heap.allocations(), heapBytes = heap.bytes();
        INFO(n << " values");
        CHECK(allGood);
        CHECK(allocations == 0);
        CHECK(heapBytes == 0);
        CHECK(size > std::size_t(n) * 20);
    }
}

TEST_CASE("the counting allocator sees heap use", "[alloc]") {
    test::HeapScope heap;
    auto* p = new int(3);
    CHECK(heap.allocations() == 1);
    delete p;
    enc::Arena fresh;
    CHECK(fresh.allocate(100, 8) != nullptr);  // first block comes from the heap
    CHECK(heap.allocations() == 2);
}
