// SPDX-License-Identifier: Apache-2.0
// The housekeeping's trim after a burst of freed NotificationMessages: once the burst is over
// (a tick without more frees), and only for at least 256 KiB, the heap is trimmed once.
#include <catch2/catch.hpp>

#include <vector>

#include <uaplex/server/server.hpp>
#include <uaplex/subscription/retransmission_queue.hpp>

using namespace uaplex;

namespace {

// Frees about `kib` KiB of messages (the pool keeps none).
void freeMessages(int kib) {
    subscription::MessagePool pool(0);
    std::vector<subscription::RetainedMessage*> v;
    for (int i = 0; i < kib; ++i) {
        v.push_back(pool.acquire());
        REQUIRE(v.back()->arena.allocate(100, 8));
    }
    for (auto* m : v) pool.release(m);
}

}  // namespace

TEST_CASE("a burst of freed messages is trimmed once, after a quiet tick") {
    while (server::trimHeapAfterMessageBurst()) {
    }
    server::trimHeapAfterMessageBurst();  // settled: nothing pending
    std::uint32_t trims = server::heapTrimCount();
    freeMessages(100);                                 // below 256 KiB
    CHECK_FALSE(server::trimHeapAfterMessageBurst());  // still freeing
    CHECK_FALSE(server::trimHeapAfterMessageBurst());  // quiet, but too little
    freeMessages(300);
    CHECK_FALSE(server::trimHeapAfterMessageBurst());  // the burst goes on
    CHECK(server::trimHeapAfterMessageBurst());        // over: trimmed
    CHECK(server::heapTrimCount() == trims + 1);
    CHECK_FALSE(server::trimHeapAfterMessageBurst());  // once
    CHECK(server::heapTrimCount() == trims + 1);
}
