// SPDX-License-Identifier: Apache-2.0
// docs/pipeline.md, Retransmission queue: sequence numbers, the retransmission queue and message
// leases.
#include <catch2/catch.hpp>

#include <uaplex/subscription/retransmission_queue.hpp>

using namespace uaplex;
using namespace uaplex::subscription;

namespace {

struct Builder {
    MessagePool pool;
    SequenceNumbers seq;
    RetainedMessage* build() {
        RetainedMessage* m = pool.acquire();
        m->message.sequenceNumber = seq.assign();
        return m;
    }
    std::vector<RetainedMessage*> build(int n) {
        std::vector<RetainedMessage*> v;
        for (int i = 0; i < n; ++i) v.push_back(build());
        return v;
    }
};

}  // namespace

TEST_CASE("retransmission 1: a keep-alive shows the next number without consuming it") {
    Builder b;
    CHECK(b.seq.next() == 1);  // the keep-alive's number
    CHECK(b.seq.next() == 1);
    RetransmissionQueue q(10);
    auto sent = q.enqueue({b.build()});
    CHECK(sent.lease.sequenceNumber() == 1);
    CHECK(b.seq.next() == 2);
}

TEST_CASE("retransmission 2: sequence numbers wrap to 1, never 0") {
    SequenceNumbers s;
    s.setNext(0xFFFFFFFFu);
    CHECK(s.assign() == 0xFFFFFFFFu);
    CHECK(s.assign() == 1);
    CHECK(s.assign() == 2);
}

TEST_CASE("retransmission 3: M=3 retains the newest three") {
    Builder b;
    RetransmissionQueue q(3);
    for (int i = 0; i < 5; ++i) q.enqueue({b.build()});
    CHECK(q.availableForTransfer() == std::vector<uint32_t>{3, 4, 5});
    CHECK_FALSE(q.findForRepublish(1));  // the service maps this to BadMessageNotAvailable
    CHECK(q.findForRepublish(4));
    CHECK(b.pool.returned() == 2);
    CHECK(q.discardedCount() == 2);  // 1 and 2 went unacknowledged
}

TEST_CASE("retransmission 4: more messages than M at once drop the oldest new ones") {
    Builder b;
    RetransmissionQueue q(3);
    auto first = q.enqueue(b.build(5));
    CHECK(first.lease.sequenceNumber() == 3);
    CHECK(first.more);
    CHECK(first.available == std::vector<uint32_t>{3});
    auto second = q.tryDequeueQueued(false);
    REQUIRE(second.lease);
    CHECK(second.lease.sequenceNumber() == 4);
    CHECK(second.available == std::vector<uint32_t>{3, 4});
    CHECK(second.more);  // 5 is still unsent
    auto third = q.tryDequeueQueued(false);
    CHECK(third.lease.sequenceNumber() == 5);
    CHECK_FALSE(third.more);
    CHECK_FALSE(q.tryDequeueQueued(true).lease);
    CHECK(b.pool.returned() == 2);
    CHECK(q.discardedCount() == 2);  // 1 and 2 never left the server
}

TEST_CASE("retransmission 5: acknowledgement statuses; acknowledge moves the cursor") {
    Builder b;
    RetransmissionQueue q(10);
    q.enqueue({b.build()});
    CHECK(q.acknowledge(7) == UAPLEX_BadSequenceNumberUnknown);
    CHECK(q.acknowledge(0) == UAPLEX_BadSequenceNumberInvalid);
    CHECK(q.acknowledge(1) == UAPLEX_Good);
    CHECK(q.acknowledge(1) == UAPLEX_BadSequenceNumberUnknown);
    // Three built at once, one sent; acknowledging the sent one keeps the rest queued.
    auto s = q.enqueue(b.build(3));
    CHECK(s.lease.sequenceNumber() == 2);
    CHECK(q.acknowledge(2) == UAPLEX_Good);
    CHECK(q.fillAvailable().empty());
    CHECK(q.tryDequeueQueued(false).lease.sequenceNumber() == 3);
    CHECK(q.fillAvailable() == std::vector<uint32_t>{3});
}

TEST_CASE("retransmission 6: an acknowledged message stays alive while a response holds it") {
    Builder b;
    RetransmissionQueue q(10);
    RetainedMessage* m = b.build();
    {
        auto sent = q.enqueue({m});
        sent.lease.reset();  // the Publish response finished encoding
    }
    MessageLease republish = q.findForRepublish(1);
    REQUIRE(republish);
    CHECK(q.acknowledge(1) == UAPLEX_Good);
    CHECK(b.pool.returned() == 0);  // the Republish response still encodes it
    CHECK(republish.sequenceNumber() == 1);
    republish.reset();
    CHECK(b.pool.returned() == 1);
    CHECK(b.pool.freeCount() == 1);
    // The recycled message is reused without a new heap object.
    RetainedMessage* again = b.pool.acquire();
    CHECK(again == m);
    b.pool.release(again);
}

TEST_CASE("retransmission: trimming while a response is in flight defers the payload") {
    Builder b;
    RetransmissionQueue q(1);
    auto first = q.enqueue({b.build()});
    q.enqueue({b.build()});  // trims message 1 from the queue
    CHECK(b.pool.returned() == 0);
    CHECK(first.lease.sequenceNumber() == 1);
    first.lease.reset();
    CHECK(b.pool.returned() == 1);
}

TEST_CASE("retransmission 3b: acknowledged messages are not counted as discarded") {
    Builder b;
    RetransmissionQueue q(2);
    q.enqueue({b.build()});
    q.enqueue({b.build()});
    CHECK(q.acknowledge(1) == UAPLEX_Good);
    q.enqueue({b.build()});  // room was made by the acknowledgement
    CHECK(q.discardedCount() == 0);
    q.enqueue({b.build()});  // 2 goes unacknowledged
    CHECK(q.discardedCount() == 1);
}
