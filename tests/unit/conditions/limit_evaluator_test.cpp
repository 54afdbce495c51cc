// SPDX-License-Identifier: Apache-2.0
// The kernel's limit and off-normal evaluation (LimitEvaluator): each limit's hysteresis
// (deadband on the way back), the exclusive alarm's LimitState against the non-exclusive
// alarm's limit states, severity per limit, and OnDelay/OffDelay against an explicit clock.
#include <catch2/catch.hpp>

#include <uaplex/conditions/limit_evaluator.hpp>

#include <cmath>
#include <limits>
#include <string>

using namespace uaplex;
using namespace uaplex::conditions;

namespace {

constexpr std::int64_t kSecond = 10'000'000;  // 100 ns ticks

LimitAlarmSpec levels(AlarmKind kind, double deadband) {
    LimitAlarmSpec s;
    s.kind = kind;
    s.limits[0] = {true, 90.0, 900};  // HighHigh
    s.limits[1] = {true, 80.0, 700};  // High
    s.limits[2] = {true, 20.0, 300};  // Low
    s.limits[3] = {true, 10.0, 600};  // LowLow
    s.deadband = deadband;
    return s;
}

}  // namespace

TEST_CASE("exclusive level: LimitState follows the value, severity per limit") {
    LimitEvaluator e(levels(AlarmKind::ExclusiveLevel, 0.0));
    CHECK_FALSE(e.update(50.0, 1));
    CHECK_FALSE(e.active());
    CHECK(e.level() == LimitLevel::None);
    CHECK(e.severity() == 0);

    CHECK(e.update(80.0, 2));  // reaching the limit is enough
    CHECK(e.active());
    CHECK(e.level() == LimitLevel::High);
    CHECK(e.severity() == 700);
    CHECK(limitStateId(e.level()) == kLimitStateHigh);
    CHECK(std::string(limitStateName(e.level())) == "High");

    CHECK(e.update(95.0, 3));
    CHECK(e.level() == LimitLevel::HighHigh);
    CHECK(e.severity() == 900);
    CHECK_FALSE(e.update(96.0, 4));  // same state: no change

    CHECK(e.update(85.0, 5));
    CHECK(e.level() == LimitLevel::High);
    CHECK(e.update(50.0, 6));
    CHECK_FALSE(e.active());

    CHECK(e.update(15.0, 7));
    CHECK(e.level() == LimitLevel::Low);
    CHECK(e.severity() == 300);
    CHECK(e.update(5.0, 8));
    CHECK(e.level() == LimitLevel::LowLow);
    CHECK(limitStateId(e.level()) == kLimitStateLowLow);
    CHECK(e.severity() == 600);
    CHECK_FALSE(e.update(std::nan(""), 9));  // NaN: nothing changes
    CHECK(e.level() == LimitLevel::LowLow);
}

TEST_CASE("non-exclusive level: each limit its own state") {
    LimitEvaluator e(levels(AlarmKind::NonExclusiveLevel, 0.0));
    CHECK(e.update(95.0, 1));
    CHECK(e.limitActive(Limit::HighHigh));
    CHECK(e.limitActive(Limit::High));  // both high limits at once
    CHECK_FALSE(e.limitActive(Limit::Low));
    CHECK(e.severity() == 900);
    CHECK(e.update(85.0, 2));
    CHECK_FALSE(e.limitActive(Limit::HighHigh));
    CHECK(e.limitActive(Limit::High));
    CHECK(e.severity() == 700);
    CHECK(e.update(5.0, 3));
    CHECK_FALSE(e.limitActive(Limit::High));
    CHECK(e.limitActive(Limit::Low));
    CHECK(e.limitActive(Limit::LowLow));
    CHECK(e.severity() == 600);  // LowLow's, the greater
}

TEST_CASE("absent limits are never active") {
    LimitAlarmSpec s;
    s.kind = AlarmKind::ExclusiveLevel;
    s.limits[1] = {true, 80.0, 700};  // High only
    LimitEvaluator e(s);
    CHECK_FALSE(e.update(-1e9, 1));
    CHECK_FALSE(e.active());
    CHECK(e.update(1e9, 2));
    CHECK(e.level() == LimitLevel::High);
}

TEST_CASE("deadband on the way back") {
    LimitEvaluator e(levels(AlarmKind::ExclusiveLevel, 2.0));
    CHECK(e.update(80.0, 1));
    CHECK(e.level() == LimitLevel::High);
    CHECK_FALSE(e.update(79.0, 2));  // inside the deadband: still High
    CHECK_FALSE(e.update(78.0, 3));  // limit - deadband: still High
    CHECK(e.level() == LimitLevel::High);
    CHECK(e.update(77.9, 4));
    CHECK_FALSE(e.active());
    CHECK_FALSE(e.update(79.9, 5));  // below the limit: the deadband does not raise it
    CHECK_FALSE(e.active());

    CHECK(e.update(20.0, 6));
    CHECK(e.level() == LimitLevel::Low);
    CHECK_FALSE(e.update(21.5, 7));
    CHECK(e.update(22.5, 8));
    CHECK_FALSE(e.active());

    CHECK(e.update(91.0, 9));
    CHECK(e.level() == LimitLevel::HighHigh);
    CHECK_FALSE(e.update(88.5, 10));  // HighHigh held by its deadband
    CHECK(e.update(87.0, 11));
    CHECK(e.level() == LimitLevel::High);
}

TEST_CASE("off-normal: active while not the normal value") {
    LimitAlarmSpec s;
    s.kind = AlarmKind::OffNormal;
    s.normalValue = 1.0;
    s.severity = 400;
    LimitEvaluator e(s);
    CHECK_FALSE(e.update(1.0, 1));
    CHECK(e.update(0.0, 2));
    CHECK(e.active());
    CHECK(e.severity() == 400);
    CHECK(e.level() == LimitLevel::None);
    CHECK_FALSE(e.update(2.0, 3));  // still off normal
    CHECK(e.update(1.0, 4));
    CHECK_FALSE(e.active());
    CHECK(e.severity() == 0);
}

TEST_CASE("OnDelay and OffDelay against an explicit clock") {
    LimitAlarmSpec s = levels(AlarmKind::ExclusiveLevel, 0.0);
    s.onDelay = 5 * kSecond;
    s.offDelay = 2 * kSecond;
    LimitEvaluator e(s);
    const ua::DateTime t0 = 100 * kSecond;

    CHECK_FALSE(e.update(85.0, t0));
    CHECK_FALSE(e.active());
    CHECK(e.nextDeadline() == t0 + 5 * kSecond);
    CHECK_FALSE(e.tick(t0 + 4 * kSecond));
    CHECK_FALSE(e.update(86.0, t0 + 4 * kSecond));  // still wanted: the delay goes on
    CHECK(e.tick(t0 + 5 * kSecond));
    CHECK(e.level() == LimitLevel::High);
    CHECK(e.nextDeadline() == 0);

    // Back to normal: the alarm stays active for OffDelay.
    const ua::DateTime t1 = t0 + 10 * kSecond;
    CHECK_FALSE(e.update(50.0, t1));
    CHECK(e.active());
    CHECK(e.nextDeadline() == t1 + 2 * kSecond);
    // Taken back within the OffDelay: nothing ever changes.
    CHECK_FALSE(e.update(85.0, t1 + kSecond));
    CHECK(e.nextDeadline() == 0);
    CHECK_FALSE(e.tick(t1 + 3 * kSecond));
    CHECK(e.active());

    // A short excursion is filtered by the OnDelay.
    CHECK(e.update(50.0, t1 + 4 * kSecond) == false);
    CHECK(e.tick(t1 + 6 * kSecond));
    CHECK_FALSE(e.active());
    CHECK_FALSE(e.update(95.0, t1 + 7 * kSecond));
    CHECK_FALSE(e.update(50.0, t1 + 8 * kSecond));
    CHECK_FALSE(e.tick(t1 + 20 * kSecond));
    CHECK_FALSE(e.active());

    // A value after the delay ended applies it at once.
    CHECK_FALSE(e.update(95.0, t1 + 30 * kSecond));
    CHECK(e.update(95.0, t1 + 35 * kSecond));
    CHECK(e.level() == LimitLevel::HighHigh);
}

TEST_CASE("deviation: the limits apply to value minus setpoint, re-evaluated on either") {
    LimitAlarmSpec spec = levels(AlarmKind::ExclusiveLevel, 2.0);
    spec.input = LimitInput::Deviation;
    LimitEvaluator e(spec);
    CHECK_FALSE(e.update(100.0, 1));  // no setpoint yet: nothing to compare with
    CHECK_FALSE(e.active());
    CHECK(e.updateReference(15.0, 2));  // 85: High, from the setpoint alone
    CHECK(e.level() == LimitLevel::High);
    CHECK_FALSE(e.updateReference(22.0, 3));  // 78: inside the deadband
    CHECK(e.updateReference(23.0, 4));        // 77: normal
    CHECK_FALSE(e.active());
    CHECK(e.update(20.0, 5));  // -3: LowLow (below 10)
    CHECK(e.level() == LimitLevel::LowLow);
    CHECK_FALSE(e.updateReference(std::nan(""), 6));  // NaN: ignored
    CHECK(e.level() == LimitLevel::LowLow);
}

TEST_CASE("deviation: seeded inputs are used by the first change") {
    LimitAlarmSpec spec = levels(AlarmKind::NonExclusiveLevel, 0.0);
    spec.input = LimitInput::Deviation;
    LimitEvaluator e(spec);
    e.seed(100.0, 50.0);
    CHECK_FALSE(e.active());           // seeding does not evaluate
    CHECK(e.updateReference(5.0, 1));  // 95
    CHECK(e.limitActive(Limit::HighHigh));
    CHECK(e.limitActive(Limit::High));
}

TEST_CASE("rate of change: per second between successive source timestamps") {
    LimitAlarmSpec spec;
    spec.kind = AlarmKind::ExclusiveLevel;
    spec.input = LimitInput::RateOfChange;
    spec.limits[1] = {true, 5.0, 500};   // High: 5/s
    spec.limits[2] = {true, -5.0, 400};  // Low: -5/s
    spec.deadband = 1.0;
    LimitEvaluator e(spec);
    e.seed(1e6, std::nan(""));         // a start value does not begin the series
    CHECK_FALSE(e.update(0.0, 0, 1));  // the first value: no rate
    CHECK_FALSE(e.update(3.0, kSecond, 2));
    CHECK(e.update(13.0, 2 * kSecond, 3));  // 10/s
    CHECK(e.level() == LimitLevel::High);
    CHECK_FALSE(e.update(15.25, 2 * kSecond + kSecond / 2, 4));  // 4.5/s: deadband
    CHECK(e.update(18.25, 3 * kSecond + kSecond / 2, 5));        // 3/s
    CHECK_FALSE(e.active());
    CHECK(e.update(8.25, 4 * kSecond, 6));  // -20/s
    CHECK(e.level() == LimitLevel::Low);
    CHECK(e.severity() == 400);
    CHECK_FALSE(e.update(1e9, 4 * kSecond, 7));  // not newer: ignored
    CHECK_FALSE(e.update(1e9, 3 * kSecond, 8));  // older: ignored
    CHECK(e.update(9.25, 5 * kSecond, 9));       // 1/s from 8.25
    CHECK_FALSE(e.active());
    CHECK_FALSE(e.updateReference(1.0, 10));  // no reference for a rate
}

TEST_CASE("off-normal: the normal value from a reference node") {
    LimitAlarmSpec spec;
    spec.kind = AlarmKind::OffNormal;
    spec.normalFromReference = true;
    spec.normalValue = 7.0;  // not used
    spec.severity = 900;
    LimitEvaluator e(spec);
    CHECK_FALSE(e.update(7.0, 1));  // no normal value yet
    CHECK(e.updateReference(3.0, 2));
    CHECK(e.active());
    CHECK(e.severity() == 900);
    CHECK(e.update(3.0, 3));
    CHECK_FALSE(e.active());
    CHECK(e.updateReference(4.0, 4));
    CHECK(e.active());
    CHECK_FALSE(e.updateReference(5.0, 5));  // still not normal: no change
}

TEST_CASE("rate of change: extreme source timestamps and values change nothing") {
    LimitAlarmSpec spec;
    spec.kind = AlarmKind::NonExclusiveLevel;
    spec.input = LimitInput::RateOfChange;
    spec.limits[1] = {true, 5.0, 500};
    spec.limits[2] = {true, -5.0, 500};
    LimitEvaluator e(spec);
    constexpr std::int64_t kMin = std::numeric_limits<std::int64_t>::min();
    constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();
    CHECK_FALSE(e.update(0.0, kMin, 1));
    CHECK_FALSE(e.update(1.0, kMax, 2));  // a tiny rate over the whole range
    CHECK_FALSE(e.active());
    CHECK_FALSE(e.update(-1e308, kMax, 3));  // not newer: ignored
    LimitEvaluator f(spec);
    CHECK_FALSE(f.update(-1.7e308, 0, 1));
    CHECK_FALSE(f.update(1.7e308, 1, 2));  // an infinite rate: not evaluated
    CHECK_FALSE(f.active());
}
