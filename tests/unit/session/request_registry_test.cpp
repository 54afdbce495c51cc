// SPDX-License-Identifier: Apache-2.0
// The per-session request registry: Cancel by handle unlinks only queued requests, marks
// executing ones without counting them, and completions during a cancel remove themselves.
#include <catch2/catch.hpp>

#include <algorithm>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include <uaplex/session/request_registry.hpp>

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

    CHECK(reg.cancel(7, UAPLEX_BadRequestCancelledByRequest, q.canceller()) == 2);
    REQUIRE(q.completed.size() == 2);
    CHECK(q.completed[0].second == UAPLEX_BadRequestCancelledByRequest);
    CHECK(q.completed[1].second == UAPLEX_BadRequestCancelledByRequest);
    CHECK(reg.size() == 1);
    CHECK(a.state == TrackedRequest::State::Idle);
    CHECK(c.state == TrackedRequest::State::Idle);
    CHECK(b.state == TrackedRequest::State::Queued);
    CHECK(b.cancelStatus.load() == UAPLEX_Good);
    REQUIRE(q.queued.size() == 1);
    CHECK(q.queued[0] == &b);

    // Nothing is left with that handle, and an unknown handle cancels nothing.
    CHECK(reg.cancel(7, UAPLEX_BadRequestCancelledByRequest, q.canceller()) == 0);
    CHECK(reg.cancel(99, UAPLEX_BadRequestCancelledByRequest, q.canceller()) == 0);
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

    CHECK(reg.cancel(5, UAPLEX_BadRequestCancelledByRequest, q.canceller()) == 0);
    CHECK(a.cancelStatus.load() == UAPLEX_BadRequestCancelledByRequest);
    CHECK(q.completed.empty());
    CHECK(reg.size() == 1);
    // The first cancellation decides the status.
    reg.cancelAll(UAPLEX_BadSessionClosed, q.canceller());
    CHECK(a.cancelStatus.load() == UAPLEX_BadRequestCancelledByRequest);

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
    CHECK(reg.cancel(3, UAPLEX_BadRequestCancelledByRequest, q.canceller()) == 0);
    CHECK(a.cancelStatus.load() == UAPLEX_BadRequestCancelledByRequest);
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

// --- deadlines (docs/pipeline.md, Request registry and deadlines) on a fake clock ----------

namespace {
// The server's sweep, driven by a fake monotonic clock in DeadlineMonitor::kPeriodMs steps:
// returns the fake time at which `r` was first marked, or -1 if it never was by `until`.
std::int64_t sweepUntil(RequestRegistry& reg, FakeQueue& q, const TrackedRequest& r,
                        std::int64_t from, std::int64_t until) {
    for (std::int64_t now = from; now <= until;
         now += uaplex::session::DeadlineMonitor::kPeriodMs) {
        reg.expire(now, q.canceller());
        if (r.cancelStatus.load() != UAPLEX_Good) return now;
    }
    return -1;
}
}  // namespace

TEST_CASE("deadlines: TimeoutHint 100 expires between +100 and +120 ms with BadTimeout") {
    uaplex::session::DeadlineMonitor monitor;
    RequestRegistry reg;
    reg.setDeadlineMonitor(&monitor);
    FakeQueue q{&reg};
    const std::int64_t t0 = 5000;
    TrackedRequest a;
    reg.add(a, 1, t0 + 100);
    q.queued.push_back(&a);
    CHECK(monitor.active() == 1);

    CHECK(reg.expire(t0 + 99, q.canceller()) == 0);  // nothing at +99
    CHECK(q.completed.empty());
    // The sweep runs every 20 ms from an arbitrary phase: the request expires by +120.
    std::int64_t at = sweepUntil(reg, q, a, t0 + 1, t0 + 200);
    CHECK(at >= t0 + 100);
    CHECK(at <= t0 + 120);
    REQUIRE(q.completed.size() == 1);
    CHECK(q.completed[0].second == UAPLEX_BadTimeout);
    CHECK(reg.size() == 0);
    CHECK(monitor.active() == 0);  // the sweep goes idle again
}

TEST_CASE("deadlines: an executing request past its deadline is marked, not unlinked") {
    uaplex::session::DeadlineMonitor monitor;
    RequestRegistry reg;
    reg.setDeadlineMonitor(&monitor);
    FakeQueue q{&reg};
    TrackedRequest a;
    reg.add(a, 1, 100);
    q.queued.push_back(&a);
    q.dequeue();
    CHECK(reg.expire(100, q.canceller()) == 1);
    CHECK(a.cancelStatus.load() == UAPLEX_BadTimeout);  // the worker answers BadTimeout
    CHECK(q.completed.empty());
    CHECK(reg.expire(200, q.canceller()) == 0);  // marked once
    CHECK(monitor.active() == 1);
    reg.remove(a);
    CHECK(monitor.active() == 0);
}

TEST_CASE("deadlines: TimeoutHint 0 never expires and keeps the monitor idle") {
    uaplex::session::DeadlineMonitor monitor;
    RequestRegistry reg;
    reg.setDeadlineMonitor(&monitor);
    FakeQueue q{&reg};
    TrackedRequest a;
    reg.add(a, 1);  // no deadline
    q.queued.push_back(&a);
    CHECK(monitor.active() == 0);
    CHECK(reg.expire(std::int64_t(1) << 40, q.canceller()) == 0);
    CHECK(a.cancelStatus.load() == UAPLEX_Good);
    CHECK(q.completed.empty());
}

TEST_CASE("deadlines: a session's sweep touches only that session's requests") {
    uaplex::session::DeadlineMonitor monitor;
    RequestRegistry s1, s2;
    s1.setDeadlineMonitor(&monitor);
    s2.setDeadlineMonitor(&monitor);
    FakeQueue q1{&s1}, q2{&s2};
    TrackedRequest a, b;
    s1.add(a, 7, 50);
    q1.queued.push_back(&a);
    s2.add(b, 7, 50);
    q2.queued.push_back(&b);
    CHECK(monitor.active() == 2);
    CHECK(s1.cancelAll(UAPLEX_BadSessionClosed, q1.canceller()) == 1);
    CHECK(b.cancelStatus.load() == UAPLEX_Good);
    CHECK(s2.size() == 1);
    CHECK(monitor.active() == 1);
    // The same handle in another session is untouched by Cancel too.
    CHECK(s1.cancel(7, UAPLEX_BadRequestCancelledByRequest, q1.canceller()) == 0);
    CHECK(s2.size() == 1);
}

TEST_CASE("deadlines: the monitor sleeps while idle and wakes on the first deadline") {
    uaplex::session::DeadlineMonitor monitor;
    std::atomic<int> woke{0};
    std::thread sweeper([&] {
        while (monitor.waitForDeadlines()) {
            woke.fetch_add(1);
            monitor.removed();  // consume it, so the next wait sleeps again
        }
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    CHECK(woke.load() == 0);
    monitor.added();
    for (int i = 0; i < 200 && woke.load() == 0; ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    CHECK(woke.load() == 1);
    monitor.stop();
    sweeper.join();
}

TEST_CASE("registry: registering the same request twice is a no-op") {
    uaplex::session::DeadlineMonitor monitor;
    RequestRegistry reg;
    reg.setDeadlineMonitor(&monitor);
    FakeQueue q{&reg};
    TrackedRequest a;
    reg.add(a, 3, 100);
    reg.add(a, 4, 200);
    CHECK(reg.size() == 1);
    CHECK(a.requestHandle == 3);
    CHECK(a.deadlineMs == 100);
    CHECK(monitor.active() == 1);
    reg.remove(a);
    CHECK(reg.size() == 0);
    CHECK(monitor.active() == 0);
    // A completed request is not cancellable any more.
    CHECK(reg.cancel(3, UAPLEX_BadRequestCancelledByRequest, q.canceller()) == 0);
}

// The drain, on a fake clock (milliseconds handed to the drain) and a 1 s grace.
TEST_CASE("drain: an empty snapshot completes at once") {
    RequestRegistry reg;
    uaplex::session::RequestDrain drain(1000, 1000);
    drain.snapshot(reg);
    CHECK(drain.poll(1000) == uaplex::session::RequestDrain::Result::Done);
}

TEST_CASE("drain: completes when the snapshotted requests complete, ignoring later ones") {
    using Result = uaplex::session::RequestDrain::Result;
    RequestRegistry reg;
    TrackedRequest a, b, later;
    reg.add(a, 1);
    reg.add(b, 2, 5000);
    uaplex::session::RequestDrain drain(1000, 1000);
    drain.snapshot(reg);
    reg.add(later, 3);
    CHECK(drain.poll(1000) == Result::Pending);
    reg.remove(a);
    CHECK(drain.poll(1500) == Result::Pending);
    reg.remove(b);
    CHECK(drain.poll(2000) == Result::Done);  // `later` is still registered
    CHECK(reg.size() == 1);
    reg.remove(later);
}

TEST_CASE("drain: a request that never completes gives Timeout after the budget") {
    using Result = uaplex::session::RequestDrain::Result;
    RequestRegistry reg;
    TrackedRequest stuck, noDeadline;
    reg.add(stuck, 1, 4000);  // 3 s remaining at the snapshot
    reg.add(noDeadline, 2);
    uaplex::session::RequestDrain drain(1000, 1000);
    drain.snapshot(reg);
    CHECK(drain.budgetEndMs() == 1000 + 3000 + 1000);
    CHECK(drain.poll(4999) == Result::Pending);
    CHECK(drain.poll(5000) == Result::Timeout);
    reg.remove(stuck);
    reg.remove(noDeadline);
}

TEST_CASE("drain: requests far past their deadline are not waited for") {
    using Result = uaplex::session::RequestDrain::Result;
    RequestRegistry reg;
    TrackedRequest stale, recent;
    reg.add(stale, 1, 100);    // 1900 ms past at the snapshot, beyond the 1 s grace
    reg.add(recent, 2, 1500);  // 500 ms past: still waited for
    uaplex::session::RequestDrain drain(2000, 1000);
    drain.snapshot(reg);
    CHECK(drain.budgetEndMs() == 3000);
    CHECK(drain.poll(2000) == Result::Pending);
    reg.remove(recent);
    CHECK(drain.poll(2000) == Result::Done);
    reg.remove(stale);
}

TEST_CASE("deadlines: the earliest deadline follows adds, removals and expiries") {
    RequestRegistry reg;
    FakeQueue q{&reg};
    TrackedRequest early, late, later, none;
    reg.add(late, 2, 300);
    reg.add(early, 1, 100);
    reg.add(none, 4, 0);
    q.queued = {&late, &early, &none};
    CHECK(reg.expire(99, q.canceller()) == 0);
    // The earliest leaves before it is due: the next one still expires on time.
    q.queued.erase(std::find(q.queued.begin(), q.queued.end(), &early));
    reg.remove(early);
    CHECK(reg.expire(150, q.canceller()) == 0);
    CHECK(reg.expire(299, q.canceller()) == 0);
    // A request added after a sweep with an earlier deadline than the rest.
    reg.add(later, 3, 200);
    q.queued.push_back(&later);
    CHECK(reg.expire(250, q.canceller()) == 1);
    CHECK(reg.expire(300, q.canceller()) == 1);
    REQUIRE(q.completed.size() == 2);
    CHECK(q.completed[0].first == 3);
    CHECK(q.completed[1].first == 2);
    CHECK(reg.expire(1000000, q.canceller()) == 0);  // the one without a deadline stays
    CHECK(reg.size() == 1);
}
