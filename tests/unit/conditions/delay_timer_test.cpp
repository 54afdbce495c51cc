// SPDX-License-Identifier: Apache-2.0
// The ends of OnDelay/OffDelay (DelayTimer) against an explicit clock: an entry fires once its
// deadline is reached by run(), not before; moving and cancelling it; deadlines beyond a turn
// of the wheel; an entry scheduled in a slot already passed; a LimitEvaluator whose delayed
// activation takes effect from the timer alone, and one taken back in time that never does.
#include <catch2/catch.hpp>

#include <uaplex/conditions/delay_timer.hpp>
#include <uaplex/conditions/limit_evaluator.hpp>

#include <vector>

using namespace uaplex;
using namespace uaplex::conditions;

namespace {

constexpr std::int64_t kMs = 10'000;  // 100 ns ticks
constexpr ua::DateTime kT0 = 134'000'000'000'000'000;

struct Fired {
    std::vector<std::pair<DelayEntry*, ua::DateTime>> list;
    static void fn(void* user, DelayEntry& e, ua::DateTime now) {
        static_cast<Fired*>(user)->list.emplace_back(&e, now);
    }
};

}  // namespace

TEST_CASE("DelayTimer: entries fire when their deadline is reached, moved or cancelled") {
    Fired fired;
    DelayTimer timer(&Fired::fn, &fired);
    timer.run(kT0);
    DelayEntry a, b, c;
    timer.schedule(a, kT0 + 100 * kMs);
    timer.schedule(b, kT0 + 250 * kMs);
    timer.schedule(c, kT0 + 3'600'000 * kMs);  // an hour: many turns of the wheel
    CHECK(timer.pending() == 3);
    timer.run(kT0 + 99 * kMs);
    CHECK(fired.list.empty());
    timer.run(kT0 + 100 * kMs);
    REQUIRE(fired.list.size() == 1);
    CHECK(fired.list[0].first == &a);
    CHECK(a.at == 0);
    timer.schedule(b, kT0 + 400 * kMs);  // moved later
    timer.run(kT0 + 300 * kMs);
    CHECK(fired.list.size() == 1);
    timer.schedule(b, 0);  // cancelled
    CHECK(timer.pending() == 1);
    timer.run(kT0 + 500 * kMs);
    CHECK(fired.list.size() == 1);
    // Many turns pass (each run visits every slot once at most): c only at its hour.
    for (std::int64_t ms = 1000; ms < 3'600'000; ms += 7'000) timer.run(kT0 + ms * kMs);
    CHECK(fired.list.size() == 1);
    timer.run(kT0 + 3'600'000 * kMs);
    REQUIRE(fired.list.size() == 2);
    CHECK(fired.list[1].first == &c);
    CHECK(timer.pending() == 0);
    // A deadline in a slot run() has passed: due at the next run.
    const ua::DateTime now = kT0 + 3'600'000 * kMs;
    timer.schedule(a, now - 5 * kMs);
    timer.run(now);
    CHECK(fired.list.size() == 3);
    // A deadline later in the tick of a run: it fires at a later run, not a turn later.
    timer.schedule(b, now + 20 * kMs + 7 * kMs);
    timer.run(now + 20 * kMs + 2 * kMs);
    CHECK(fired.list.size() == 3);
    timer.run(now + 20 * kMs + 8 * kMs);
    REQUIRE(fired.list.size() == 4);
    CHECK(fired.list[3].first == &b);
}

TEST_CASE("DelayTimer drives a LimitEvaluator's OnDelay and OffDelay without new values") {
    LimitAlarmSpec spec;
    spec.limits[1] = {true, 80.0, 700};  // High
    spec.onDelay = 200 * kMs;
    spec.offDelay = 50 * kMs;
    LimitEvaluator e(spec);
    struct Ctx {
        LimitEvaluator* e;
        int changes = 0;
        DelayTimer* timer = nullptr;
    } ctx{&e};
    auto fire = [](void* user, DelayEntry& entry, ua::DateTime now) {
        auto* c = static_cast<Ctx*>(user);
        if (c->e->tick(now)) ++c->changes;
        c->timer->schedule(entry, c->e->nextDeadline());
    };
    DelayTimer timer(fire, &ctx);
    ctx.timer = &timer;
    DelayEntry entry;
    timer.run(kT0);
    CHECK_FALSE(e.update(85.0, kT0));  // wanted, not yet effective
    timer.schedule(entry, e.nextDeadline());
    timer.run(kT0 + 199 * kMs);
    CHECK_FALSE(e.active());
    timer.run(kT0 + 200 * kMs);  // no new value: the delay's end alone activates it
    CHECK(e.active());
    CHECK(ctx.changes == 1);
    CHECK(timer.pending() == 0);

    CHECK_FALSE(e.update(50.0, kT0 + 300 * kMs));
    timer.schedule(entry, e.nextDeadline());
    timer.run(kT0 + 350 * kMs);
    CHECK_FALSE(e.active());
    CHECK(ctx.changes == 2);

    // Taken back within the delay: never takes effect, nothing pending.
    CHECK_FALSE(e.update(90.0, kT0 + 400 * kMs));
    timer.schedule(entry, e.nextDeadline());
    CHECK_FALSE(e.update(60.0, kT0 + 450 * kMs));
    timer.schedule(entry, e.nextDeadline());
    CHECK(timer.pending() == 0);
    timer.run(kT0 + 1000 * kMs);
    CHECK_FALSE(e.active());
    CHECK(ctx.changes == 2);
}
