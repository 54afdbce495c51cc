// SPDX-License-Identifier: Apache-2.0
// Arena and output buffer: reuse after reset, alignment, limits.
#include "test_util.hpp"

#include <catch2/catch.hpp>

using namespace uaplex;

TEST_CASE("arena allocations are aligned and reset reuses the blocks", "[arena]") {
    enc::Arena arena(std::size_t(-1), 256);
    auto* a = static_cast<std::uint8_t*>(arena.allocate(3, 1));
    auto* b = arena.allocate(8, 8);
    auto* c = arena.allocate(16, 16);
    REQUIRE((a && b && c));
    CHECK(reinterpret_cast<std::uintptr_t>(b) % 8 == 0);
    CHECK(reinterpret_cast<std::uintptr_t>(c) % 16 == 0);
    void* big = arena.allocate(100000, 8);  // larger than any growth step: own block
    REQUIRE(big != nullptr);
    for (int i = 0; i < 50; ++i) REQUIRE(arena.allocate(200, 8) != nullptr);
    std::size_t reserved = arena.reservedBytes();

    // The same pattern after reset is served from the kept blocks.
    for (int round = 0; round < 5; ++round) {
        arena.reset();
        CHECK(arena.used() == 0);
        CHECK(static_cast<std::uint8_t*>(arena.allocate(3, 1)) == a);
        REQUIRE(arena.allocate(8, 8) != nullptr);
        REQUIRE(arena.allocate(16, 16) != nullptr);
        REQUIRE(arena.allocate(100000, 8) != nullptr);
        for (int i = 0; i < 50; ++i) REQUIRE(arena.allocate(200, 8) != nullptr);
        CHECK(arena.reservedBytes() == reserved);
    }
}

TEST_CASE("arena shrink keeps only the first block", "[arena]") {
    enc::Arena arena(std::size_t(-1), 4096);
    auto* first = arena.allocate(16, 8);
    REQUIRE(first != nullptr);
    for (int i = 0; i < 100; ++i) REQUIRE(arena.allocate(8000, 8) != nullptr);
    REQUIRE(arena.reservedBytes() > 400000);
    arena.shrink();
    CHECK(arena.used() == 0);
    CHECK(arena.reservedBytes() == 4096);
    CHECK(arena.allocate(16, 8) == first);  // the first block serves again
    for (int i = 0; i < 100; ++i) REQUIRE(arena.allocate(8000, 8) != nullptr);
    arena.shrink();
    CHECK(arena.reservedBytes() == 4096);
    enc::Arena empty;
    empty.shrink();  // no block yet
    CHECK(empty.reservedBytes() == 0);
    CHECK(empty.allocate(8, 8) != nullptr);
}

TEST_CASE("arena refuses allocations past its byte limit", "[arena]") {
    enc::Arena arena(1000, 256);
    CHECK(arena.allocate(600, 8) != nullptr);
    CHECK(arena.allocate(600, 8) == nullptr);
    CHECK(arena.allocate(300, 8) != nullptr);
    arena.reset();
    CHECK(arena.allocate(1000, 1) != nullptr);
    CHECK(arena.allocate(1, 1) == nullptr);
    int* zeros = nullptr;
    arena.reset();
    zeros = arena.allocateArray<int>(10);
    REQUIRE(zeros != nullptr);
    CHECK(zeros[9] == 0);
}

TEST_CASE("byte buffer keeps its storage across clear()", "[arena]") {
    enc::ByteBuffer buf;
    {
        enc::BinaryWriter w(buf);
        for (int i = 0; i < 10000; ++i) w.writeRaw<std::uint32_t>(std::uint32_t(i));
        REQUIRE(w.ok());
    }
    CHECK(buf.size() == 40000);
    std::uint32_t last = 0;
    std::memcpy(&last, buf.data() + 39996, 4);
    CHECK(last == 9999u);
    const std::uint8_t* storage = buf.data();
    buf.clear();
    enc::BinaryWriter w(buf);
    w.writeRaw<std::uint64_t>(1);
    CHECK(buf.data() == storage);
    CHECK(buf.size() == 8);
}
