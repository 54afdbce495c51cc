// The per-session request registry: Cancel by handle unlinks only queued requests, marks
// executing ones without counting them, and completions during a cancel remove themselves.
#include <catch2/catch.hpp>

#include <vector>

#include "session/request_registry.hpp"

using uaplex::session::QueuedCanceller;
using uaplex::session::RequestRegistry;
using uaplex::session::TrackedRequest;

namespace {

// Stands in for the request queue: holds the queued requests, and on cancel completes them
// the way the server does (the completion removes the request from the registry).
struct FakeQueue {
    explicit FakeQueue(RequestRegistry* r) : registry(r) {}
    RequestRegistry* registry;
    std::vector<TrackedRequest*> queued;
    std::vector<std::pair<std::uint32_t, uaplex_status>> completed;

    static bool unlink(void* user, TrackedRequest& r, uaplex_status st) {
        auto& q = *static_cast<FakeQueue*>(user);
        for (auto it = q.queued.begin(); it != q.queued.end(); ++it) {
            if (*it != &r) continue;
            q.queued.erase(it);
            q.completed.emplace_back(r.requestHandle, st);
            q.registry->remove(r);  // re-enters the registry on the cancelling thread
            return true;
        }
        return false;  // a worker has it
    }
    QueuedCanceller canceller() { return {&FakeQueue::unlink, this}; }
    TrackedRequest* dequeue() {
        TrackedRequest* r = queued.front();
        queued.erase(queued.begin());
        registry->executing(*r);
        return r;
    }
};

}  // namespace

TEST_CASE("registry: Cancel unlinks every queued request with the handle and counts them") {
    RequestRegistry reg;
    FakeQueue q{&reg};
    TrackedRequest a, b, c;
    reg.add(a, 7);
    q.queued.push_back(&a);
    reg.add(b, 8);
    q.queued.push_back(&b);
    reg.add(c, 7);
    q.queued.push_back(&c);
    CHECK(reg.size() == 3);

    CHECK(reg.cancel(7, UAPLEX_BadRequestCancelledByClient, q.canceller()) == 2);
    REQUIRE(q.completed.size() == 2);
    CHECK(q.completed[0].second == UAPLEX_BadRequestCancelledByClient);
    CHECK(q.completed[1].second == UAPLEX_BadRequestCancelledByClient);
    CHECK(reg.size() == 1);
    CHECK(a.state == TrackedRequest::State::Idle);
    CHECK(c.state == TrackedRequest::State::Idle);
    CHECK(b.state == TrackedRequest::State::Queued);
    CHECK(b.cancelStatus.load() == UAPLEX_Good);
    REQUIRE(q.queued.size() == 1);
    CHECK(q.queued[0] == &b);

    // Nothing is left with that handle, and an unknown handle cancels nothing.
    CHECK(reg.cancel(7, UAPLEX_BadRequestCancelledByClient, q.canceller()) == 0);
    CHECK(reg.cancel(99, UAPLEX_BadRequestCancelledByClient, q.canceller()) == 0);
    CHECK(reg.size() == 1);
}

TEST_CASE("registry: an executing request is marked cancelled but not counted") {
    RequestRegistry reg;
    FakeQueue q{&reg};
    TrackedRequest a;
    reg.add(a, 5);
    q.queued.push_back(&a);
    TrackedRequest* running = q.dequeue();
    REQUIRE(running == &a);
    CHECK(a.state == TrackedRequest::State::Executing);

    CHECK(reg.cancel(5, UAPLEX_BadRequestCancelledByClient, q.canceller()) == 0);
    CHECK(a.cancelStatus.load() == UAPLEX_BadRequestCancelledByClient);
    CHECK(q.completed.empty());
    CHECK(reg.size() == 1);
    // The first cancellation decides the status.
    reg.cancelAll(UAPLEX_BadSessionClosed, q.canceller());
    CHECK(a.cancelStatus.load() == UAPLEX_BadRequestCancelledByClient);

    reg.remove(a);
    reg.remove(a);  // idempotent
    CHECK(reg.size() == 0);
    // Reuse for another request starts afresh.
    reg.add(a, 6);
    CHECK(a.cancelStatus.load() == UAPLEX_Good);
    CHECK(a.state == TrackedRequest::State::Queued);
}

TEST_CASE("registry: a request a worker took first is not counted") {
    RequestRegistry reg;
    FakeQueue q{&reg};
    TrackedRequest a;
    reg.add(a, 3);
    // Not in the fake queue: the worker dequeued it but has not called executing() yet.
    CHECK(reg.cancel(3, UAPLEX_BadRequestCancelledByClient, q.canceller()) == 0);
    CHECK(a.cancelStatus.load() == UAPLEX_BadRequestCancelledByClient);
    CHECK(reg.size() == 1);
}

TEST_CASE("registry: session close cancels every queued request with BadSessionClosed") {
    RequestRegistry reg;
    FakeQueue q{&reg};
    TrackedRequest r[4];
    for (std::uint32_t i = 0; i < 4; ++i) {
        reg.add(r[i], i + 1);
        q.queued.push_back(&r[i]);
    }
    q.dequeue();  // r[0] executes
    CHECK(reg.cancelAll(UAPLEX_BadSessionClosed, q.canceller()) == 3);
    REQUIRE(q.completed.size() == 3);
    for (auto& [h, st] : q.completed) {
        CHECK(h != 1);
        CHECK(st == UAPLEX_BadSessionClosed);
    }
    CHECK(reg.size() == 1);
    CHECK(r[0].cancelStatus.load() == UAPLEX_BadSessionClosed);
}
