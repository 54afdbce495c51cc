// SPDX-License-Identifier: Apache-2.0
// The kernel's limit and off-normal evaluation (LimitEvaluator): each limit's hysteresis
// (deadband on the way back), the exclusive alarm's LimitState against the non-exclusive
// alarm's limit states, severity per limit, and OnDelay/OffDelay against an explicit clock.
#include <catch2/catch.hpp>

#include <uaplex/conditions/limit_evaluator.hpp>

#include <cmath>
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
