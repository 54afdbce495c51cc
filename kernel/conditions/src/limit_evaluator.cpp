// SPDX-License-Identifier: Apache-2.0
#include "uaplex/conditions/limit_evaluator.hpp"

#include <cmath>

namespace uaplex::conditions {

std::uint32_t limitStateId(LimitLevel level) noexcept {
    switch (level) {
        case LimitLevel::HighHigh:
            return kLimitStateHighHigh;
        case LimitLevel::High:
            return kLimitStateHigh;
        case LimitLevel::Low:
            return kLimitStateLow;
        case LimitLevel::LowLow:
            return kLimitStateLowLow;
        case LimitLevel::None:
            break;
    }
    return 0;
}

const char* limitStateName(LimitLevel level) noexcept {
    switch (level) {
        case LimitLevel::HighHigh:
            return "HighHigh";
        case LimitLevel::High:
            return "High";
        case LimitLevel::Low:
            return "Low";
        case LimitLevel::LowLow:
            return "LowLow";
        case LimitLevel::None:
            break;
    }
    return "";
}

bool LimitEvaluator::settle(State& s, ua::DateTime now) const noexcept {
    if (s.wanted == s.effective) return false;
    const std::int64_t delay = s.wanted ? spec_.onDelay : spec_.offDelay;
    if (now - s.since < delay) return false;
    s.effective = s.wanted;
    return true;
}

bool LimitEvaluator::update(double value, ua::DateTime sourceTime, ua::DateTime now) noexcept {
    if (std::isnan(value)) return false;
    if (spec_.kind != AlarmKind::OffNormal && spec_.input == LimitInput::RateOfChange) {
        // Per second between this value and the last; the first only starts the series.
        const bool first = std::isnan(input_);
        if (!first && sourceTime <= inputTime_) return false;
        // In doubles: a client writes any source timestamps, whose difference may not fit.
        const double seconds = (double(sourceTime) - double(inputTime_)) / 1e7;
        const double rate = first ? NAN : (value - input_) / seconds;
        input_ = value;
        inputTime_ = sourceTime;
        return !first && evaluate(rate, now);
    }
    input_ = value;
    if (spec_.kind != AlarmKind::OffNormal && spec_.input == LimitInput::Deviation)
        return evaluate(value - reference_, now);
    return evaluate(value, now);
}

bool LimitEvaluator::updateReference(double reference, ua::DateTime now) noexcept {
    if (std::isnan(reference)) return false;
    reference_ = reference;
    if (spec_.kind == AlarmKind::OffNormal)
        return spec_.normalFromReference && evaluate(input_, now);
    return spec_.input == LimitInput::Deviation && evaluate(input_ - reference_, now);
}

bool LimitEvaluator::evaluate(double value, ua::DateTime now) noexcept {
    // NaN: an input not known yet (the setpoint, the normal value, the first value).
    if (!std::isfinite(value)) return false;
    if (spec_.kind == AlarmKind::OffNormal && spec_.normalFromReference && std::isnan(reference_))
        return false;
    const double normal = spec_.normalFromReference ? reference_ : spec_.normalValue;
    bool changed = false;
    for (std::size_t i = 0; i < stateCount(); ++i) {
        State& s = state_[i];
        bool wanted = false;
        if (spec_.kind == AlarmKind::OffNormal) {
            wanted = value != normal;
        } else {
            const LimitSpec& l = spec_.limits[i];
            if (!l.present) continue;
            const bool high = i == index(Limit::HighHigh) || i == index(Limit::High);
            if (high)
                wanted = s.wanted ? value >= l.value - spec_.deadband : value >= l.value;
            else
                wanted = s.wanted ? value <= l.value + spec_.deadband : value <= l.value;
        }
        if (wanted != s.wanted) {
            s.wanted = wanted;
            s.since = now;
        }
        changed = settle(s, now) || changed;
    }
    return changed;
}

bool LimitEvaluator::tick(ua::DateTime now) noexcept {
    bool changed = false;
    for (std::size_t i = 0; i < stateCount(); ++i) changed = settle(state_[i], now) || changed;
    return changed;
}

ua::DateTime LimitEvaluator::nextDeadline() const noexcept {
    ua::DateTime next = 0;
    for (std::size_t i = 0; i < stateCount(); ++i) {
        const State& s = state_[i];
        if (s.wanted == s.effective) continue;
        const ua::DateTime at = s.since + (s.wanted ? spec_.onDelay : spec_.offDelay);
        if (next == 0 || at < next) next = at;
    }
    return next;
}

bool LimitEvaluator::active() const noexcept {
    for (std::size_t i = 0; i < stateCount(); ++i)
        if (state_[i].effective) return true;
    return false;
}

LimitLevel LimitEvaluator::level() const noexcept {
    if (spec_.kind == AlarmKind::OffNormal) return LimitLevel::None;
    if (state_[index(Limit::HighHigh)].effective) return LimitLevel::HighHigh;
    if (state_[index(Limit::High)].effective) return LimitLevel::High;
    if (state_[index(Limit::LowLow)].effective) return LimitLevel::LowLow;
    if (state_[index(Limit::Low)].effective) return LimitLevel::Low;
    return LimitLevel::None;
}

std::uint16_t LimitEvaluator::severity() const noexcept {
    if (spec_.kind == AlarmKind::OffNormal) return state_[0].effective ? spec_.severity : 0;
    std::uint16_t s = 0;
    for (std::size_t i = 0; i < kLimitCount; ++i)
        if (state_[i].effective && spec_.limits[i].severity > s) s = spec_.limits[i].severity;
    return s;
}

}  // namespace uaplex::conditions
