// SPDX-License-Identifier: Apache-2.0
// The kernel buffer pool: blocks are reused, the retained count is bounded, and concurrent
// rent/return from several threads neither loses nor duplicates a block.
#include <catch2/catch.hpp>

#include <atomic>
#include <thread>
#include <vector>

#include <uaplex/pipeline/buffer_pool.hpp>

using uaplex::pipeline::KernelBufferPool;

namespace {
uaplex_buffer_manager* makeManager(KernelBufferPool& p, std::uint32_t size) {
    uaplex_buffer_manager* m = nullptr;
    REQUIRE(p.ops()->manager_create(p.self(), {"t", 1}, size, &m) == UAPLEX_Good);
    return m;
}
}  // namespace

TEST_CASE("blocks are reused and bounded; one-off blocks beyond the bound") {
    KernelBufferPool pool(2);
    auto* m = makeManager(pool, 1000);
    const auto* ops = pool.ops();
    uaplex_buffer a{}, b{}, c{};
    REQUIRE(ops->take(pool.self(), m, 1000, nullptr, nullptr, &a) == UAPLEX_Good);
    CHECK(a.length == 1000);
    CHECK(ops->take(pool.self(), m, 1001, nullptr, nullptr, &b) == UAPLEX_BadOutOfRange);
    std::uint8_t* first = a.data;
    REQUIRE(ops->give_back(pool.self(), &a, nullptr) == UAPLEX_Good);
    CHECK(a.data == nullptr);
    REQUIRE(ops->take(pool.self(), m, 10, nullptr, nullptr, &a) == UAPLEX_Good);
    CHECK(a.data == first);  // the same block again
    REQUIRE(ops->take(pool.self(), m, 10, nullptr, nullptr, &b) == UAPLEX_Good);
    REQUIRE(ops->take(pool.self(), m, 10, nullptr, nullptr, &c) == UAPLEX_Good);  // one-off
    std::uint64_t retained = 0, outstanding = 0;
    pool.stats(retained, outstanding);
    CHECK(retained == 2000);
    CHECK(outstanding == 3000);
    CHECK(ops->manager_destroy(pool.self(), m) == UAPLEX_BadInvalidState);
    for (auto* x : {&a, &b, &c}) REQUIRE(ops->give_back(pool.self(), x, nullptr) == UAPLEX_Good);
    CHECK(ops->manager_destroy(pool.self(), m) == UAPLEX_Good);
}

TEST_CASE("concurrent rent and return keep every block exclusive") {
    KernelBufferPool pool(64);
    auto* m = makeManager(pool, 64);
    const auto* ops = pool.ops();
    std::vector<std::thread> threads;
    std::atomic<int> clashes{0};
    for (int t = 0; t < 4; ++t) {
        threads.emplace_back([&, t] {
            for (int i = 0; i < 20000; ++i) {
                uaplex_buffer b{};
                if (ops->take(pool.self(), m, 64, nullptr, nullptr, &b) != UAPLEX_Good) continue;
                // Stamp the block, check nobody else wrote it meanwhile.
                b.data[0] = std::uint8_t(t);
                b.data[1] = std::uint8_t(i);
                if (b.data[0] != std::uint8_t(t) || b.data[1] != std::uint8_t(i)) ++clashes;
                ops->give_back(pool.self(), &b, nullptr);
            }
        });
    }
    for (auto& th : threads) th.join();
    CHECK(clashes == 0);
    std::uint64_t retained = 0, outstanding = 0;
    pool.stats(retained, outstanding);
    CHECK(outstanding == 0);
    CHECK(retained <= 64 * 64);
}
