// SPDX-License-Identifier: Apache-2.0
// RingQueue: the engine's double-ended queue (Publish requests, status messages, publish
// list, retained messages).
#include <algorithm>
#include <catch2/catch.hpp>
#include <memory>
#include <vector>

#define UAPLEX_COUNTING_NEW_SCOPES_ONLY  // publish_queue_test.cpp defines operator new
#include <uaplex/subscription/ring_queue.hpp>
#include "support/counting_new.hpp"

using uaplex::subscription::RingQueue;

TEST_CASE("ring queue: nothing allocated while empty, MinCapacity on the first push") {
    uaplex::test::HeapScope heap;
    RingQueue<int, 2> q;
    CHECK(heap.allocations() == 0);
    CHECK(sizeof(q) == 24);
    q.push_back(1);
    CHECK(heap.allocations() == 1);
    CHECK(heap.bytes() == 2 * sizeof(int));
    q.push_back(2);
    CHECK(heap.allocations() == 1);
    // A steady push/pop cycle within the capacity allocates nothing.
    for (int i = 0; i < 100; ++i) {
        q.pop_front();
        q.push_back(i);
    }
    CHECK(heap.allocations() == 1);
    CHECK(q.capacity() == 2);
}

TEST_CASE("ring queue: both ends, wrap-around and growth keep the order") {
    RingQueue<int, 4> q;
    std::vector<int> model;
    for (int i = 0; i < 3; ++i) q.push_back(i);
    q.pop_front();
    q.pop_front();
    for (int i = 3; i < 6; ++i) q.push_back(i);  // wraps
    q.push_front(-1);
    q.push_back(6);  // grows while wrapped
    model = {-1, 2, 3, 4, 5, 6};
    REQUIRE(q.size() == model.size());
    CHECK(std::vector<int>(q.begin(), q.end()) == model);
    CHECK(q.front() == -1);
    CHECK(q.back() == 6);
    q.pop_back();
    CHECK(q.back() == 5);
    CHECK(q[2] == 3);
}

TEST_CASE("ring queue: erase, remove_if compaction, shrink_to_fit") {
    RingQueue<std::unique_ptr<int>, 2> q;  // move-only elements
    for (int i = 0; i < 10; ++i) q.push_back(std::make_unique<int>(i));
    auto it = q.erase(q.begin() + 3);  // removes 3
    CHECK(**it == 4);
    for (auto i = q.begin(); i != q.end();) {
        if (**i == 7)
            i = q.erase(i);
        else
            ++i;
    }
    auto end = std::remove_if(q.begin(), q.end(), [](const auto& p) { return *p % 2 == 1; });
    q.erase(end, q.end());
    std::vector<int> left;
    for (auto& p : q) left.push_back(*p);
    CHECK(left == std::vector<int>{0, 2, 4, 6, 8});
    q.shrink_to_fit();
    CHECK(q.capacity() == 5);
    q.clear();
    q.shrink_to_fit();
    CHECK(q.capacity() == 0);
    CHECK(q.empty());
}
