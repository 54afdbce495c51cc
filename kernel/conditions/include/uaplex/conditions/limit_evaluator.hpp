// SPDX-License-Identifier: Apache-2.0
// The kernel's own evaluation of a limit or off-normal alarm (Part 9 5.8.17 LimitAlarmType,
// 5.8.18 ExclusiveLimitStateMachineType, 5.8.19-5.8.21 the exclusive and non-exclusive
// level alarms, 5.8.23 OffNormalAlarmType; OnDelay and OffDelay of AlarmConditionType 5.8.2)
// from the values of its input node. Pure state: no lock, no clock of its own (the caller
// passes the time), no allocation after construction.
//
// Each limit is a two-state machine with hysteresis: a high limit (HighHigh, High) becomes
// active when the value reaches it (value >= limit) and inactive when the value falls below
// limit - deadband; a low limit (Low, LowLow) becomes active at value <= limit and inactive
// above limit + deadband. An off-normal alarm has one such state: active while the value is
// not its normal value. Delays act on each state: a change to active takes effect once the
// input has wanted it for OnDelay without interruption, a change to inactive after OffDelay;
// a change the input takes back within its delay never takes effect. The exclusive alarm's
// LimitState is the most severe active limit (HighHigh before High, LowLow before Low); the
// non-exclusive alarm shows each limit's state. Severity is the greatest of the active
// limits' severities (the off-normal alarm's own severity while it is active).
//
// What the limits apply to (LimitInput): the value itself (level alarms, 5.8.19-5.8.21), the
// value minus a setpoint (deviation alarms, 5.8.22: re-evaluated when either changes), or the
// change per second between successive values by their source timestamps (rate of change
// alarms, 5.8.21). An off-normal alarm's normal value is a constant or the last value of a
// NormalState node (5.8.23), re-evaluated when either changes.
#pragma once

#include <array>
#include <cmath>
#include <cstdint>

#include "uaplex/encoding/encoding.hpp"

namespace uaplex::conditions {

// Namespace-0 ids of Part 9 (NodeIds.csv) the limit alarms use.
inline constexpr std::uint32_t kExclusiveLevelAlarmType = 9482;
inline constexpr std::uint32_t kNonExclusiveLevelAlarmType = 10060;
inline constexpr std::uint32_t kOffNormalAlarmType = 10637;
inline constexpr std::uint32_t kExclusiveDeviationAlarmType = 9764;
inline constexpr std::uint32_t kNonExclusiveDeviationAlarmType = 10368;
inline constexpr std::uint32_t kExclusiveRateOfChangeAlarmType = 9623;
inline constexpr std::uint32_t kNonExclusiveRateOfChangeAlarmType = 10214;
inline constexpr std::uint32_t kDiscreteAlarmType = 10523;
inline constexpr std::uint32_t kTripAlarmType = 10751;
inline constexpr std::uint32_t kSystemOffNormalAlarmType = 11753;
inline constexpr std::uint32_t kExclusiveLimitStateMachineType = 9318;
inline constexpr std::uint32_t kLimitStateHighHigh = 9329;
inline constexpr std::uint32_t kLimitStateHigh = 9331;
inline constexpr std::uint32_t kLimitStateLow = 9333;
inline constexpr std::uint32_t kLimitStateLowLow = 9335;

// The shape of the state: one LimitState, four limit states, or one off-normal state.
enum class AlarmKind : std::uint8_t { ExclusiveLevel, NonExclusiveLevel, OffNormal };
// What the limits of ExclusiveLevel/NonExclusiveLevel apply to.
enum class LimitInput : std::uint8_t { Value, Deviation, RateOfChange };

// The limits, in this order everywhere (an index into LimitAlarmSpec::limits).
enum class Limit : std::uint8_t { HighHigh = 0, High = 1, Low = 2, LowLow = 3 };
inline constexpr std::size_t kLimitCount = 4;

// The exclusive alarm's LimitState (None: inactive, no current state).
enum class LimitLevel : std::uint8_t { None, HighHigh, High, Low, LowLow };

struct LimitSpec {
    bool present = false;
    double value = 0.0;
    std::uint16_t severity = 500;  // 1..1000
};

struct LimitAlarmSpec {
    AlarmKind kind = AlarmKind::ExclusiveLevel;
    LimitInput input = LimitInput::Value;  // not OffNormal
    bool normalFromReference = false;      // OffNormal: the reference is the normal value
    std::array<LimitSpec, kLimitCount> limits{};
    double deadband = 0.0;         // >= 0, in the value's unit
    double normalValue = 0.0;      // OffNormal
    std::uint16_t severity = 500;  // OffNormal: its severity while active
    std::int64_t onDelay = 0;      // 100 ns ticks, >= 0
    std::int64_t offDelay = 0;     // 100 ns ticks, >= 0
};

// The ns0 NodeId number of a level's state (0 for None).
std::uint32_t limitStateId(LimitLevel level) noexcept;
// "HighHigh", "High", "Low", "LowLow"; "" for None.
const char* limitStateName(LimitLevel level) noexcept;

class LimitEvaluator {
  public:
    explicit LimitEvaluator(const LimitAlarmSpec& spec) noexcept : spec_(spec) {}

    // A new input value at `now`. True when the alarm's state (active, a limit's state,
    // severity) changed. A NaN leaves everything as it is.
    bool update(double value, ua::DateTime now) noexcept { return update(value, now, now); }
    // The same with the value's source timestamp (the rate of change is taken between
    // successive values' timestamps; a value not newer than the last one is ignored).
    bool update(double value, ua::DateTime sourceTime, ua::DateTime now) noexcept;
    // A new value of the reference (the setpoint of a deviation alarm, the NormalState of an
    // off-normal alarm): the last input is evaluated against it. NaN: ignored.
    bool updateReference(double reference, ua::DateTime now) noexcept;
    // The inputs known at start, without an evaluation (the first change evaluates). A rate
    // of change starts its series with its first change instead.
    void seed(double value, double reference) noexcept {
        if (spec_.kind == AlarmKind::OffNormal || spec_.input != LimitInput::RateOfChange)
            input_ = value;
        reference_ = reference;
    }
    // Applies the delays that ended by `now` (without a new value). True on a change.
    bool tick(ua::DateTime now) noexcept;
    // The earliest time a pending delay ends; 0 when none is pending.
    ua::DateTime nextDeadline() const noexcept;

    bool active() const noexcept;
    bool limitActive(Limit l) const noexcept { return state_[index(l)].effective; }
    LimitLevel level() const noexcept;        // the exclusive alarm's LimitState
    std::uint16_t severity() const noexcept;  // 0 while inactive
    const LimitAlarmSpec& spec() const noexcept { return spec_; }

  private:
    struct State {
        bool wanted = false;     // what the input (with hysteresis) asks for
        bool effective = false;  // what the alarm shows
        ua::DateTime since = 0;  // when `wanted` last changed
    };
    static constexpr std::size_t index(Limit l) noexcept { return static_cast<std::size_t>(l); }
    std::size_t stateCount() const noexcept {
        return spec_.kind == AlarmKind::OffNormal ? 1 : kLimitCount;
    }
    bool settle(State& s, ua::DateTime now) const noexcept;
    bool evaluate(double x, ua::DateTime now) noexcept;  // x: what the limits apply to

    LimitAlarmSpec spec_;
    std::array<State, kLimitCount> state_{};
    double input_ = NAN;          // the last input value
    ua::DateTime inputTime_ = 0;  // its source timestamp (rate of change)
    double reference_ = NAN;      // the last setpoint / normal value of a node
};

}  // namespace uaplex::conditions
