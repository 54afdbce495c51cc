// SPDX-License-Identifier: Apache-2.0
// The Part 13 aggregates. docs/aggregates.md states which rules are applied and why.
#include <uaplex/aggregates/aggregates.hpp>

#include <uaplex/statuscodes.h>
#include <uaplex/encoding/generated/ns0.hpp>
#include <uaplex/encoding/generated/types.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>

namespace uaplex::aggregates {

namespace {

using ua::DataValue;
using ua::DateTime;
using ua::StatusCode;

struct FunctionId {
    AggregateFunction function;
    std::uint32_t id;
};
constexpr std::array<FunctionId, kAggregateFunctionCount> kFunctionIds{{
    {AggregateFunction::Interpolative, ua::ns0::AggregateFunction_Interpolative},
    {AggregateFunction::Average, ua::ns0::AggregateFunction_Average},
    {AggregateFunction::TimeAverage, ua::ns0::AggregateFunction_TimeAverage},
    {AggregateFunction::TimeAverage2, ua::ns0::AggregateFunction_TimeAverage2},
    {AggregateFunction::Total, ua::ns0::AggregateFunction_Total},
    {AggregateFunction::Total2, ua::ns0::AggregateFunction_Total2},
    {AggregateFunction::Minimum, ua::ns0::AggregateFunction_Minimum},
    {AggregateFunction::Maximum, ua::ns0::AggregateFunction_Maximum},
    {AggregateFunction::MinimumActualTime, ua::ns0::AggregateFunction_MinimumActualTime},
    {AggregateFunction::MaximumActualTime, ua::ns0::AggregateFunction_MaximumActualTime},
    {AggregateFunction::Range, ua::ns0::AggregateFunction_Range},
    {AggregateFunction::Minimum2, ua::ns0::AggregateFunction_Minimum2},
    {AggregateFunction::Maximum2, ua::ns0::AggregateFunction_Maximum2},
    {AggregateFunction::Count, ua::ns0::AggregateFunction_Count},
    {AggregateFunction::Start, ua::ns0::AggregateFunction_Start},
    {AggregateFunction::End, ua::ns0::AggregateFunction_End},
    {AggregateFunction::Delta, ua::ns0::AggregateFunction_Delta},
    {AggregateFunction::DurationGood, ua::ns0::AggregateFunction_DurationGood},
    {AggregateFunction::DurationBad, ua::ns0::AggregateFunction_DurationBad},
    {AggregateFunction::PercentGood, ua::ns0::AggregateFunction_PercentGood},
    {AggregateFunction::PercentBad, ua::ns0::AggregateFunction_PercentBad},
    {AggregateFunction::WorstQuality, ua::ns0::AggregateFunction_WorstQuality},
    {AggregateFunction::WorstQuality2, ua::ns0::AggregateFunction_WorstQuality2},
}};

constexpr double kTicksPerMs = 10000.0;
constexpr double kTicksPerSecond = 10000000.0;
constexpr std::uint32_t kCodeMask = 0xFFFF0000u;

// Severity as the calculations see it; NoData marks a span without collected data.
enum class Sev : std::uint8_t { Good, Uncertain, Bad, NoData };

bool nonBad(Sev s) noexcept {
    return s == Sev::Good || s == Sev::Uncertain;
}
Sev worst(Sev a, Sev b) noexcept {
    return a > b ? a : b;
}

StatusCode rawStatus(const DataValue& dv) noexcept {
    return (dv.mask & UAPLEX_DATAVALUE_STATUS) != 0 ? dv.status : UAPLEX_Good;
}

// A scalar numeric value, or NaN.
double numeric(const ua::Variant& v) noexcept {
    switch (v.encoding) {
        case UAPLEX_TYPE_BOOLEAN:
            return v.value.boolean ? 1.0 : 0.0;
        case UAPLEX_TYPE_SBYTE:
            return v.value.sbyte;
        case UAPLEX_TYPE_BYTE:
            return v.value.byte;
        case UAPLEX_TYPE_INT16:
            return v.value.int16;
        case UAPLEX_TYPE_UINT16:
            return v.value.uint16;
        case UAPLEX_TYPE_INT32:
            return v.value.int32;
        case UAPLEX_TYPE_UINT32:
            return v.value.uint32;
        case UAPLEX_TYPE_INT64:
            return static_cast<double>(v.value.int64);
        case UAPLEX_TYPE_UINT64:
            return static_cast<double>(v.value.uint64);
        case UAPLEX_TYPE_FLOAT:
            return v.value.float_;
        case UAPLEX_TYPE_DOUBLE:
            return v.value.double_;
        default:
            return std::numeric_limits<double>::quiet_NaN();
    }
}

// One bounding value or raw point on the time axis.
struct Point {
    DateTime t = 0;
    double v = 0;
    Sev sev = Sev::NoData;
    bool raw = false;       // a raw value at t (else interpolated or extrapolated)
    std::size_t idx = 0;    // its raw index when raw
    std::size_t below = 0;  // raw values before t: [0, below)
    std::size_t upto = 0;   // raw values at or before t: [0, upto)
};

// One interval in real time: [lo, hi) forward, (lo, hi] backward.
struct Window {
    DateTime lo = 0;
    DateTime hi = 0;
    DateTime stamp = 0;  // its start in the request's direction
    bool reverse = false;
    bool shortInterval = false;
    std::size_t first = 0;  // the raw values of the interval: [first, last)
    std::size_t last = 0;
    DateTime noData = 0;  // time of the interval without collected data
};

class Calculator {
  public:
    Calculator(std::span<const DataValue> raw, const ProcessedRequest& rq) noexcept
        : raw_(raw), rq_(rq), cfg_(rq.configuration) {
        eod_ = raw.empty() ? rq.endOfData : std::max(rq.endOfData, raw.back().source_timestamp);
        for (const DataValue& d : raw) {
            if (UAPLEX_STATUS_IS_BAD(rawStatus(d))) continue;
            like_ = &d.value;
            break;
        }
        // Part 13 A.1.4: Boolean data is always stepped, interpolated and extrapolated.
        boolean_ = like_ != nullptr && like_->encoding == UAPLEX_TYPE_BOOLEAN;
        stepped_ = rq.stepped || boolean_;
    }

    DateTime t(std::size_t i) const noexcept { return raw_[i].source_timestamp; }
    double v(std::size_t i) const noexcept { return numeric(raw_[i].value); }
    Sev rawSev(std::size_t i) const noexcept {
        StatusCode s = rawStatus(raw_[i]);
        if ((s & kCodeMask) == UAPLEX_BadNoData) return Sev::NoData;
        if (UAPLEX_STATUS_IS_BAD(s)) return Sev::Bad;
        return UAPLEX_STATUS_IS_UNCERTAIN(s) ? Sev::Uncertain : Sev::Good;
    }
    // Uncertain counts as Bad when the configuration says so (Part 13 4.2.1.2).
    Sev sev(std::size_t i) const noexcept {
        Sev s = rawSev(i);
        return s == Sev::Uncertain && cfg_.treatUncertainAsBad ? Sev::Bad : s;
    }
    bool isNonBad(std::size_t i) const noexcept { return nonBad(sev(i)); }
    std::size_t size() const noexcept { return raw_.size(); }
    const DataValue& at(std::size_t i) const noexcept { return raw_[i]; }
    const AggregateConfiguration& cfg() const noexcept { return cfg_; }
    bool stepped() const noexcept { return stepped_; }
    bool booleanData() const noexcept { return boolean_; }
    // The Variant of the first non-Bad raw value: the type of "same as source" results.
    const ua::Variant* sourceType() const noexcept { return like_; }

    std::size_t lowerBound(DateTime at) const noexcept {
        return static_cast<std::size_t>(
            std::partition_point(raw_.begin(), raw_.end(),
                                 [at](const DataValue& d) { return d.source_timestamp < at; }) -
            raw_.begin());
    }
    std::size_t upperBound(DateTime at) const noexcept {
        return static_cast<std::size_t>(
            std::partition_point(raw_.begin(), raw_.end(),
                                 [at](const DataValue& d) { return d.source_timestamp <= at; }) -
            raw_.begin());
    }

    // The last non-Bad index below i, or npos. Queries mostly rise: scans are amortised.
    std::size_t prevNonBad(std::size_t i) noexcept {
        if (i < prevQuery_) return scanBack(i);
        for (std::size_t j = i; j > prevQuery_; --j) {
            if (isNonBad(j - 1)) {
                prevAnswer_ = j - 1;
                break;
            }
        }
        prevQuery_ = i;
        return prevAnswer_;
    }
    // The first non-Bad index at or above i, or size().
    std::size_t nextNonBad(std::size_t i) noexcept {
        if (nextValid_ && nextQuery_ <= i && nextAnswer_ >= i) return nextAnswer_;
        std::size_t j = i;
        while (j < size() && !isNonBad(j)) ++j;
        nextValid_ = true;
        nextQuery_ = i;
        nextAnswer_ = j;
        return j;
    }

    Point rawPoint(std::size_t i) const noexcept {
        Point p;
        p.t = t(i);
        p.sev = sev(i);
        p.v = nonBad(p.sev) ? v(i) : 0;
        p.raw = true;
        p.idx = i;
        p.below = i;
        p.upto = i + 1;
        return p;
    }

    // Part 13 3.1.8: from the nearest non-Bad values, skipping Bad ones.
    Point interpolatedBound(DateTime at, bool stepped) noexcept {
        std::size_t i = lowerBound(at);
        bool exact = i < size() && t(i) == at;
        if (exact && isNonBad(i)) return rawPoint(i);
        Point b;
        b.t = at;
        b.below = i;
        b.upto = exact ? i + 1 : i;
        std::size_t p = prevNonBad(i);
        if (p == kNpos) return b;  // NoData
        if (stepped) {
            b.v = v(p);
            bool skipped = b.upto - p > 1;
            bool held = at > eod_;  // held past the end of data: extrapolated
            b.sev = skipped || held || sev(p) == Sev::Uncertain ? Sev::Uncertain : Sev::Good;
            return b;
        }
        std::size_t q = nextNonBad(b.upto);
        if (q == size()) {
            b.v = extrapolate(p, at);
            b.sev = Sev::Uncertain;
            return b;
        }
        b.v = line(t(p), v(p), t(q), v(q), at);
        bool skipped = q - p > 1;
        b.sev = skipped || sev(p) == Sev::Uncertain || sev(q) == Sev::Uncertain ? Sev::Uncertain
                                                                                : Sev::Good;
        return b;
    }

    // Part 13 3.1.9: from the raw values just before and after, whatever their status.
    Point simpleBound(DateTime at) const noexcept {
        std::size_t i = lowerBound(at);
        bool exact = i < size() && t(i) == at;
        Point b;
        b.t = at;
        b.below = i;
        b.upto = exact ? i + 1 : i;
        if (at > eod_) return b;  // after the end of data: NoData
        if (exact) return rawPoint(i);
        if (i == 0) return b;
        std::size_t p = i - 1;
        Sev ps = sev(p);
        if (!nonBad(ps)) {
            b.sev = ps;
            return b;
        }
        b.v = v(p);
        b.sev = ps;
        if (stepped_) return b;
        if (i == size()) {
            b.sev = Sev::Uncertain;
            if (cfg_.useSlopedExtrapolation && p > 0 && isNonBad(p - 1))
                b.v = line(t(p - 1), v(p - 1), t(p), v(p), at);
            return b;
        }
        Sev qs = sev(i);
        if (!nonBad(qs)) {
            b.sev = Sev::Uncertain;  // the line ends at a Bad value: held, not sloped
            return b;
        }
        b.v = line(t(p), v(p), t(i), v(i), at);
        b.sev = worst(ps, qs);
        return b;
    }

    // The time of [lo, hi] without collected data: before the first raw value, after a
    // Bad_NoData raw value until the next one, after the end of data.
    DateTime noDataTime(DateTime lo, DateTime hi) const noexcept {
        if (size() == 0) return hi - lo;
        DateTime none = 0;
        DateTime first = t(0);
        if (lo < first) none += std::min(hi, first) - lo;
        if (hi > eod_) none += hi - std::max(lo, eod_);
        std::size_t j = upperBound(lo);
        j = j > 0 ? j - 1 : 0;
        for (; j < size() && t(j) < hi; ++j) {
            if (rawSev(j) != Sev::NoData) continue;
            DateTime from = std::max(t(j), lo);
            DateTime to = std::min(j + 1 < size() ? t(j + 1) : eod_, std::min(hi, eod_));
            if (to > from) none += to - from;
        }
        return std::min<DateTime>(none, hi - lo);
    }

    DateTime endOfData() const noexcept { return eod_; }
    static double line(DateTime t0, double v0, DateTime t1, double v1, DateTime at) noexcept {
        if (t1 == t0) return v0;
        return v0 + (v1 - v0) * (static_cast<double>(at - t0) / static_cast<double>(t1 - t0));
    }

    static constexpr std::size_t kNpos = static_cast<std::size_t>(-1);

  private:
    std::size_t scanBack(std::size_t i) const noexcept {
        for (std::size_t j = i; j > 0; --j)
            if (isNonBad(j - 1)) return j - 1;
        return kNpos;
    }
    double extrapolate(std::size_t p, DateTime at) noexcept {
        if (!cfg_.useSlopedExtrapolation || p == 0) return v(p);
        // Every interval past the last value asks for the same p: one scan back, not one each.
        if (p != secondFor_) {
            secondFor_ = p;
            second_ = scanBack(p);
        }
        std::size_t p2 = second_;
        return p2 == kNpos ? v(p) : line(t(p2), v(p2), t(p), v(p), at);
    }

    std::span<const DataValue> raw_;
    const ProcessedRequest& rq_;
    AggregateConfiguration cfg_;
    DateTime eod_ = 0;
    std::size_t secondFor_ = kNpos;  // extrapolate(): the p whose second value is second_
    std::size_t second_ = kNpos;
    const ua::Variant* like_ = nullptr;
    bool boolean_ = false;
    bool stepped_ = false;
    std::size_t prevQuery_ = 0;
    std::size_t prevAnswer_ = kNpos;
    bool nextValid_ = false;
    std::size_t nextQuery_ = 0;
    std::size_t nextAnswer_ = 0;
};

// Status helpers ------------------------------------------------------------------------

// Bad_NoData (nothing to compute from) carries no aggregate bits, as Annex A prints it; a
// result made Bad by PercentDataBad is "Bad, Calculated" (Partial kept), without a value.
StatusCode withBits(StatusCode code, std::uint32_t bits) noexcept {
    if ((code & kCodeMask) == UAPLEX_BadNoData) return code & kCodeMask;
    if (UAPLEX_STATUS_IS_BAD(code)) bits = kHistorianCalculated | (bits & kHistorianPartial);
    if (bits == 0) return code;
    return code | bits | kInfoTypeDataValue;
}

// Part 13 5.4.3.2: Bad when the Bad share reaches PercentDataBad, else Good when the Good
// share reaches PercentDataGood, else Uncertain_DataSubNormal. Shares of time or of counts.
StatusCode percentStatus(double good, double bad, double whole, const AggregateConfiguration& c) {
    if (whole <= 0) return UAPLEX_BadNoData;
    if (bad * 100.0 >= static_cast<double>(c.percentDataBad) * whole) return UAPLEX_Bad;
    if (good * 100.0 >= static_cast<double>(c.percentDataGood) * whole) return UAPLEX_Good;
    return UAPLEX_UncertainDataSubNormal;
}

void setResult(DataValue& out, DateTime stamp, StatusCode status) noexcept {
    out = DataValue{};
    out.mask = UAPLEX_DATAVALUE_STATUS | UAPLEX_DATAVALUE_SOURCE_TIMESTAMP;
    out.status = status;
    out.source_timestamp = stamp;
}
void setDouble(DataValue& out, DateTime stamp, StatusCode status, double value) noexcept {
    setResult(out, stamp, status);
    if (UAPLEX_STATUS_IS_BAD(status)) return;  // a Bad result carries no value
    out.mask |= UAPLEX_DATAVALUE_VALUE;
    out.value.encoding = UAPLEX_TYPE_DOUBLE;
    out.value.array_length = -1;
    out.value.value.double_ = value;
}
void setVariant(DataValue& out, DateTime stamp, StatusCode status, const ua::Variant& v) noexcept {
    setResult(out, stamp, status);
    if (UAPLEX_STATUS_IS_BAD(status)) return;
    out.mask |= UAPLEX_DATAVALUE_VALUE;
    out.value = v;
}
// A computed value of a "same as source" aggregate: in the source's type when it is exactly
// representable there (a Float is rounded to float), else a Double.
template <class T>
bool fits(double v) noexcept {
    return std::trunc(v) == v && v >= static_cast<double>(std::numeric_limits<T>::lowest()) &&
           v <= static_cast<double>(std::numeric_limits<T>::max());
}
using VariantValue = decltype(ua::Variant::value);
template <class T>
void putInt(ua::Variant& v, std::uint8_t type, T VariantValue::*field, double value) noexcept {
    if (!fits<T>(value)) return;
    v.encoding = type;
    v.value.*field = static_cast<T>(value);
}
void setSourceTyped(DataValue& out, DateTime stamp, StatusCode status, double value,
                    const ua::Variant* like) noexcept {
    setDouble(out, stamp, status, value);
    if (like == nullptr || (out.mask & UAPLEX_DATAVALUE_VALUE) == 0) return;
    ua::Variant& v = out.value;
    switch (like->encoding) {
        case UAPLEX_TYPE_BOOLEAN:
            if (value == 0 || value == 1) {
                v.encoding = UAPLEX_TYPE_BOOLEAN;
                v.value.boolean = value == 1;
            }
            break;
        case UAPLEX_TYPE_SBYTE:
            putInt(v, like->encoding, &VariantValue::sbyte, value);
            break;
        case UAPLEX_TYPE_BYTE:
            putInt(v, like->encoding, &VariantValue::byte, value);
            break;
        case UAPLEX_TYPE_INT16:
            putInt(v, like->encoding, &VariantValue::int16, value);
            break;
        case UAPLEX_TYPE_UINT16:
            putInt(v, like->encoding, &VariantValue::uint16, value);
            break;
        case UAPLEX_TYPE_INT32:
            putInt(v, like->encoding, &VariantValue::int32, value);
            break;
        case UAPLEX_TYPE_UINT32:
            putInt(v, like->encoding, &VariantValue::uint32, value);
            break;
        case UAPLEX_TYPE_FLOAT:
            v.encoding = UAPLEX_TYPE_FLOAT;
            v.value.float_ = static_cast<float>(value);
            break;
        default:
            break;  // Double; Int64 and UInt64 stay Double (not exact beyond 2^53)
    }
}
void setNoData(DataValue& out, DateTime stamp) noexcept {
    setResult(out, stamp, UAPLEX_BadNoData);
}

// Aggregates ----------------------------------------------------------------------------

struct Counts {
    std::size_t good = 0;
    std::size_t uncertain = 0;  // non-Bad Uncertain
    std::size_t bad = 0;
    std::size_t total() const noexcept { return good + uncertain + bad; }
};

Counts countValues(Calculator& c, const Window& w) noexcept {
    Counts n;
    for (std::size_t i = w.first; i < w.last; ++i) {
        switch (c.sev(i)) {
            case Sev::Good:
                ++n.good;
                break;
            case Sev::Uncertain:
                ++n.uncertain;
                break;
            case Sev::Bad:
                ++n.bad;
                break;
            case Sev::NoData:
                break;  // a marker, not a value
        }
    }
    return n;
}

std::uint32_t partialBit(const Window& w) noexcept {
    return w.shortInterval || w.noData > 0 ? kHistorianPartial : 0;
}
bool allNoData(const Window& w) noexcept {
    return w.noData >= w.hi - w.lo;
}

void average(Calculator& c, const Window& w, DataValue& out) noexcept {
    double sum = 0;
    std::size_t n = 0;
    Counts k;
    for (std::size_t i = w.first; i < w.last; ++i) {
        Sev s = c.sev(i);
        if (s == Sev::NoData) continue;
        if (s == Sev::Good) ++k.good;
        if (s == Sev::Uncertain) ++k.uncertain;
        if (s == Sev::Bad) {
            ++k.bad;
            continue;
        }
        sum += c.v(i);
        ++n;
    }
    if (n == 0) return setNoData(out, w.stamp);
    StatusCode st = percentStatus(static_cast<double>(k.good), static_cast<double>(k.bad),
                                  static_cast<double>(k.total()), c.cfg());
    setDouble(out, w.stamp, withBits(st, kHistorianCalculated), sum / static_cast<double>(n));
}

void count(Calculator& c, const Window& w, DataValue& out) noexcept {
    if (allNoData(w)) return setNoData(out, w.stamp);
    Counts k = countValues(c, w);
    StatusCode st = k.total() == 0
                        ? UAPLEX_Good
                        : percentStatus(static_cast<double>(k.good), static_cast<double>(k.bad),
                                        static_cast<double>(k.total()), c.cfg());
    setResult(out, w.stamp, withBits(st, kHistorianCalculated | partialBit(w)));
    if (UAPLEX_STATUS_IS_BAD(st)) return;
    out.mask |= UAPLEX_DATAVALUE_VALUE;
    out.value.encoding = UAPLEX_TYPE_INT32;
    out.value.array_length = -1;
    out.value.value.int32 = static_cast<std::int32_t>(
        std::min<std::size_t>(k.good + k.uncertain, std::numeric_limits<std::int32_t>::max()));
}

// Minimum, Maximum, their ActualTime forms and Range: Good raw values only (Part 13
// 5.4.3.10-5.4.3.14); Uncertain_DataSubNormal when Bad values were skipped or an Uncertain
// value lies beyond the result.
void extremes(AggregateFunction f, Calculator& c, const Window& w, DataValue& out) noexcept {
    bool wantMax = f == AggregateFunction::Maximum || f == AggregateFunction::MaximumActualTime;
    std::size_t minI = Calculator::kNpos;
    std::size_t maxI = Calculator::kNpos;
    std::size_t minTies = 0;
    std::size_t maxTies = 0;
    bool skippedBad = false;
    for (std::size_t i = w.first; i < w.last; ++i) {
        Sev s = c.sev(i);
        if (s == Sev::Bad) skippedBad = true;
        if (s != Sev::Good) continue;
        double x = c.v(i);
        if (minI == Calculator::kNpos || x < c.v(minI)) {
            minI = i;
            minTies = 1;
        } else if (x == c.v(minI)) {
            ++minTies;
        }
        if (maxI == Calculator::kNpos || x > c.v(maxI)) {
            maxI = i;
            maxTies = 1;
        } else if (x == c.v(maxI)) {
            ++maxTies;
        }
    }
    if (minI == Calculator::kNpos) return setNoData(out, w.stamp);
    // The loop runs in time order in both directions: of equal values the oldest is kept
    // (the ActualTime forms return its timestamp).
    bool uncertainBeyond = false;
    for (std::size_t i = w.first; i < w.last; ++i) {
        if (c.sev(i) != Sev::Uncertain) continue;
        double x = c.v(i);
        if ((f == AggregateFunction::Range && (x < c.v(minI) || x > c.v(maxI))) ||
            (f != AggregateFunction::Range && (wantMax ? x > c.v(maxI) : x < c.v(minI))))
            uncertainBeyond = true;
    }
    bool uncertain = skippedBad || uncertainBeyond;
    StatusCode st = uncertain ? UAPLEX_UncertainDataSubNormal : UAPLEX_Good;
    std::uint32_t bits = partialBit(w);
    if (f == AggregateFunction::Range) {
        return setSourceTyped(out, w.stamp, withBits(st, bits | kHistorianCalculated),
                              c.v(maxI) - c.v(minI), c.sourceType());
    }
    std::size_t best = wantMax ? maxI : minI;
    std::size_t ties = wantMax ? maxTies : minTies;
    if (ties > 1) bits |= kHistorianMultiValue;
    bool actual =
        f == AggregateFunction::MinimumActualTime || f == AggregateFunction::MaximumActualTime;
    // Minimum/Maximum (5.4.3.10/11): Raw when the value lies on the interval's start and is
    // Good, else Calculated. Annex A.11 prints an Uncertain ActualTime result without
    // Calculated: its value is the raw one at its own time.
    if (!actual && (uncertain || c.t(best) != w.stamp)) bits |= kHistorianCalculated;
    setVariant(out, actual ? c.t(best) : w.stamp, withBits(st, bits), c.at(best).value);
}

// Start and End: the earliest or the latest raw value of the interval, as stored.
void startEnd(AggregateFunction f, Calculator& c, const Window& w, DataValue& out) noexcept {
    // The earliest and the latest raw value (5.4.3.25/26), whichever way time runs.
    bool wantFirst = f == AggregateFunction::Start;
    std::size_t pick = Calculator::kNpos;
    for (std::size_t k = 0; k < w.last - w.first; ++k) {
        std::size_t i = wantFirst ? w.first + k : w.last - 1 - k;
        if (c.rawSev(i) != Sev::NoData) {
            pick = i;
            break;
        }
    }
    if (pick == Calculator::kNpos) return setNoData(out, w.stamp);
    StatusCode st = rawStatus(c.at(pick));  // as stored; Partial only on a non-Bad one
    if (!UAPLEX_STATUS_IS_BAD(st) && partialBit(w) != 0)
        st |= kHistorianPartial | kInfoTypeDataValue;
    setResult(out, c.t(pick), st);
    if ((c.at(pick).mask & UAPLEX_DATAVALUE_VALUE) != 0) {
        out.mask |= UAPLEX_DATAVALUE_VALUE;
        out.value = c.at(pick).value;
    }
}

// Delta (5.4.3.27): the latest minus the earliest non-Bad raw value (Uncertain ones count
// unless TreatUncertainAsBad, as Annex A.1 says of every aggregate), whichever way time
// runs; Uncertain_DataSubNormal when Bad values were passed over to find either end or an
// end is Uncertain. A Bad value between the two does not matter.
void delta(Calculator& c, const Window& w, DataValue& out) noexcept {
    std::size_t firstI = Calculator::kNpos;
    std::size_t lastI = Calculator::kNpos;
    bool skippedBefore = false;  // a Bad value before the earliest non-Bad one
    bool skippedAfter = false;   // ... after the latest
    for (std::size_t i = w.first; i < w.last; ++i) {
        Sev s = c.sev(i);
        if (s == Sev::NoData) continue;  // a marker, not a value
        if (!nonBad(s)) {
            if (firstI == Calculator::kNpos) skippedBefore = true;
            skippedAfter = true;
            continue;
        }
        if (firstI == Calculator::kNpos) firstI = i;
        lastI = i;
        skippedAfter = false;
    }
    if (firstI == Calculator::kNpos) return setNoData(out, w.stamp);
    bool uncertain = skippedBefore || skippedAfter || c.sev(firstI) == Sev::Uncertain ||
                     c.sev(lastI) == Sev::Uncertain;
    double d = c.v(lastI) - c.v(firstI);
    setSourceTyped(out, w.stamp,
                   withBits(uncertain ? UAPLEX_UncertainDataSubNormal : UAPLEX_Good,
                            kHistorianCalculated | partialBit(w)),
                   d, c.sourceType());
}

// Time shares of one interval by segment status, with the area under the non-Bad ones.
struct Shares {
    double good = 0;       // ticks
    double uncertain = 0;  // ticks, non-Bad
    double bad = 0;        // ticks
    double area = 0;       // value x ticks over the non-Bad segments
    bool allGood() const noexcept { return uncertain == 0 && bad == 0; }
    double nonBadTime() const noexcept { return good + uncertain; }
};

void addSegment(Shares& s, Sev sev, DateTime t0, DateTime t1, double v0, double v1) noexcept {
    double dt = static_cast<double>(t1 - t0);
    if (dt <= 0) return;
    switch (sev) {
        case Sev::Good:
            s.good += dt;
            break;
        case Sev::Uncertain:
            s.uncertain += dt;
            break;
        default:
            s.bad += dt;
            return;
    }
    s.area += (v0 + v1) * 0.5 * dt;
}

// Part 13 TimeAverage2 / Total2 / Minimum2 / Maximum2: simple bounds, every raw value a
// point; a segment takes the status of its start, a sloped one the worse of both ends, and
// one that ends at a Bad value is held at its start value (Uncertain when sloped).
template <class OnPoint>
Shares simpleWalk(Calculator& c, const Window& w, OnPoint&& onPoint) noexcept {
    Shares s;
    Point prev = c.simpleBound(w.lo);
    onPoint(prev, 0);  // the earlier edge: its value is in the interval either way
    auto segment = [&](const Point& p, const Point& q) {
        if (!nonBad(p.sev)) return addSegment(s, Sev::Bad, p.t, q.t, 0, 0);
        if (c.stepped()) return addSegment(s, p.sev, p.t, q.t, p.v, p.v);
        if (!nonBad(q.sev)) return addSegment(s, Sev::Uncertain, p.t, q.t, p.v, p.v);
        addSegment(s, worst(p.sev, q.sev), p.t, q.t, p.v, q.v);
    };
    std::size_t from = c.upperBound(w.lo);
    std::size_t to = c.lowerBound(w.hi);
    for (std::size_t i = from; i < to; ++i) {
        Point p = c.rawPoint(i);
        onPoint(p, 1);
        segment(prev, p);
        prev = p;
    }
    Point end = c.simpleBound(w.hi);
    onPoint(end, 2);
    segment(prev, end);
    return s;
}

// TimeAverage / Total: interpolated bounds, Bad values skipped, sloped lines (stepped for
// Boolean data, which is never sloped).
Shares interpolatedWalk(Calculator& c, const Window& w) noexcept {
    Shares s;
    const bool held = c.booleanData();
    Point prev = c.interpolatedBound(w.lo, held);
    auto segment = [&](const Point& p, const Point& q) {
        if (!nonBad(p.sev) || !nonBad(q.sev)) return addSegment(s, Sev::Bad, p.t, q.t, 0, 0);
        bool skipped = q.below > p.upto;  // Bad raw values between the two
        Sev sev = skipped ? Sev::Uncertain : worst(p.sev, q.sev);
        addSegment(s, sev, p.t, q.t, p.v, held ? p.v : q.v);
    };
    std::size_t from = c.upperBound(w.lo);
    std::size_t to = c.lowerBound(w.hi);
    for (std::size_t i = from; i < to; ++i) {
        if (!c.isNonBad(i)) continue;
        Point p = c.rawPoint(i);
        segment(prev, p);
        prev = p;
    }
    // No start bound: the interval is Bad up to its first value (calculated in part).
    segment(prev, c.interpolatedBound(w.hi, held));
    return s;
}

void timeAverage(AggregateFunction f, Calculator& c, const Window& w, DataValue& out) noexcept {
    if (f == AggregateFunction::TimeAverage || f == AggregateFunction::Total) {
        if (c.size() == 0 || w.hi <= c.t(0)) return setNoData(out, w.stamp);  // before data
        Shares s = interpolatedWalk(c, w);
        if (s.nonBadTime() <= 0) return setNoData(out, w.stamp);
        // Custom (Part 13 5.4.3.6): Good when only Good values were used and none skipped.
        StatusCode st = s.allGood() ? UAPLEX_Good : UAPLEX_UncertainDataSubNormal;
        double avg = s.area / s.nonBadTime();
        double value = f == AggregateFunction::TimeAverage
                           ? avg
                           : avg * static_cast<double>(w.hi - w.lo) / kTicksPerSecond;
        return setDouble(out, w.stamp, withBits(st, kHistorianCalculated | partialBit(w)), value);
    }
    Shares s = simpleWalk(c, w, [](const Point&, int) {});
    if (s.nonBadTime() <= 0) return setNoData(out, w.stamp);
    StatusCode st = percentStatus(s.good, s.bad, static_cast<double>(w.hi - w.lo), c.cfg());
    double value =
        f == AggregateFunction::TimeAverage2 ? s.area / s.nonBadTime() : s.area / kTicksPerSecond;
    setDouble(out, w.stamp, withBits(st, kHistorianCalculated | partialBit(w)), value);
}

// Minimum2 / Maximum2: the start bound, the raw values and, when sloped, the end bound.
void extremes2(AggregateFunction f, Calculator& c, const Window& w, DataValue& out) noexcept {
    bool wantMax = f == AggregateFunction::Maximum2;
    bool have = false;
    double best = 0;
    std::size_t ties = 0;
    bool anyRaw = false;    // a raw value among the best ones
    bool anyBound = false;  // an interpolated bound among them
    std::size_t rawIdx = 0;
    auto consider = [&](const Point& p, int role) {
        if (!nonBad(p.sev)) return;
        // The later edge counts only when sloped: stepped, its value is held from a point
        // already counted.
        if (role == 2 && c.stepped()) return;
        bool better = !have || (wantMax ? p.v > best : p.v < best);
        if (better) {
            have = true;
            best = p.v;
            ties = 0;
            anyRaw = false;
            anyBound = false;
        }
        if (better || p.v == best) {
            ++ties;
            if (p.raw) {
                if (!anyRaw) rawIdx = p.idx;
                anyRaw = true;
            } else {
                anyBound = true;
            }
        }
    };
    Shares s = simpleWalk(c, w, consider);
    if (!have) return setNoData(out, w.stamp);
    StatusCode st = percentStatus(s.good, s.bad, static_cast<double>(w.hi - w.lo), c.cfg());
    std::uint32_t bits = partialBit(w);
    bits |= anyRaw ? kHistorianCalculated : kHistorianInterpolated;
    if (ties > 1) bits |= kHistorianMultiValue;
    if (anyRaw && !anyBound && ties == 1)
        return setVariant(out, w.stamp, withBits(st, bits), c.at(rawIdx).value);
    setSourceTyped(out, w.stamp, withBits(st, bits), best, c.sourceType());
}

void interpolative(Calculator& c, const Window& w, DataValue& out) noexcept {
    Point b = c.interpolatedBound(w.stamp, c.stepped());
    if (b.raw) {
        const DataValue& r = c.at(b.idx);
        setResult(out, w.stamp, rawStatus(r));
        out.mask |= UAPLEX_DATAVALUE_VALUE;
        out.value = r.value;
        return;
    }
    if (!nonBad(b.sev)) return setNoData(out, w.stamp);
    StatusCode st = b.sev == Sev::Good ? UAPLEX_Good : UAPLEX_UncertainDataSubNormal;
    setSourceTyped(out, w.stamp, withBits(st, kHistorianInterpolated), b.v, c.sourceType());
}

// DurationGood / DurationBad / PercentGood / PercentBad (5.4.3.31-34): regions start at raw
// values and take their status, the first from the value at or before the start (none:
// Bad); time without collected data is Bad. Good regions are those of Good values; Bad ones
// those of Bad values, and of Uncertain ones with TreatUncertainAsBad. Uncertain regions
// otherwise count as neither, so the two durations need not fill the interval.
void durations(AggregateFunction f, Calculator& c, const Window& w, DataValue& out) noexcept {
    if (allNoData(w)) return setNoData(out, w.stamp);
    std::size_t j = c.upperBound(w.lo);
    std::size_t cur = j > 0 ? j - 1 : Calculator::kNpos;
    DateTime from = w.lo;
    double goodTicks = 0;
    double badTicks = 0;
    std::size_t to = c.lowerBound(w.hi);
    auto close = [&](DateTime until) {
        DateTime dataUntil = std::min(until, c.endOfData());
        Sev sev = cur == Calculator::kNpos ? Sev::NoData : c.sev(cur);
        if (dataUntil > from) {
            auto span = static_cast<double>(dataUntil - from);
            if (sev == Sev::Good) goodTicks += span;
            if (!nonBad(sev)) badTicks += span;
        }
        // After the end of data: Bad.
        if (until > std::max(from, dataUntil))
            badTicks += static_cast<double>(until - std::max(from, dataUntil));
    };
    for (; j < to; ++j) {
        close(c.t(j));
        from = c.t(j);
        cur = j;
    }
    close(w.hi);
    double width = static_cast<double>(w.hi - w.lo);
    double value = 0;
    switch (f) {
        case AggregateFunction::DurationGood:
            value = goodTicks / kTicksPerMs;
            break;
        case AggregateFunction::DurationBad:
            value = badTicks / kTicksPerMs;
            break;
        case AggregateFunction::PercentGood:
            value = goodTicks * 100.0 / width;
            break;
        default:
            value = badTicks * 100.0 / width;
            break;
    }
    setDouble(out, w.stamp, withBits(UAPLEX_Good, kHistorianCalculated | partialBit(w)), value);
}

int severityRank(StatusCode s) noexcept {
    if (UAPLEX_STATUS_IS_BAD(s)) return 2;
    return UAPLEX_STATUS_IS_UNCERTAIN(s) ? 1 : 0;
}

void worstQuality(AggregateFunction f, Calculator& c, const Window& w, DataValue& out) noexcept {
    bool have = false;
    StatusCode worstCode = UAPLEX_Good;
    std::size_t ties = 0;
    auto consider = [&](StatusCode s) {
        int r = severityRank(s);
        if (!have || r > severityRank(worstCode)) {
            have = true;
            worstCode = s;
            ties = 1;
        } else if (r == severityRank(worstCode)) {
            ++ties;
        }
    };
    if (f == AggregateFunction::WorstQuality2) {
        // The simple bound at the interval's earlier edge (3.1.9), by the raw statuses: this
        // aggregate ignores TreatUncertainAsBad.
        std::size_t i = c.lowerBound(w.lo);
        bool exact = i < c.size() && c.t(i) == w.lo;
        if (exact) {
            bool inside = i >= w.first && i < w.last;  // forward: counted below
            if (!inside && c.rawSev(i) != Sev::NoData) consider(rawStatus(c.at(i)));
        } else if (i > 0 && w.lo <= c.endOfData() && c.rawSev(i - 1) != Sev::NoData) {
            std::size_t p = i - 1;
            Sev ps = c.rawSev(p);
            if (ps == Sev::Bad || c.stepped()) {
                consider(rawStatus(c.at(p)));
            } else {
                Sev qs = i < c.size() ? c.rawSev(i) : Sev::NoData;
                bool uncertain = ps == Sev::Uncertain || qs != Sev::Good;
                consider(uncertain ? UAPLEX_UncertainDataSubNormal : UAPLEX_Good);
            }
        }
    }
    for (std::size_t i = w.first; i < w.last; ++i)
        if (c.rawSev(i) != Sev::NoData) consider(rawStatus(c.at(i)));
    if (!have) return setNoData(out, w.stamp);
    std::uint32_t bits = kHistorianCalculated | partialBit(w);
    if (ties > 1) bits |= kHistorianMultiValue;
    setResult(out, w.stamp, withBits(UAPLEX_Good, bits));
    out.mask |= UAPLEX_DATAVALUE_VALUE;
    out.value.encoding = UAPLEX_TYPE_STATUSCODE;
    out.value.array_length = -1;
    out.value.value.statuscode = worstCode & kCodeMask;
}

void computeOne(AggregateFunction f, Calculator& c, const Window& w, DataValue& out) noexcept {
    switch (f) {
        case AggregateFunction::Interpolative:
            return interpolative(c, w, out);
        case AggregateFunction::Average:
            return average(c, w, out);
        case AggregateFunction::TimeAverage:
        case AggregateFunction::TimeAverage2:
        case AggregateFunction::Total:
        case AggregateFunction::Total2:
            return timeAverage(f, c, w, out);
        case AggregateFunction::Minimum:
        case AggregateFunction::Maximum:
        case AggregateFunction::MinimumActualTime:
        case AggregateFunction::MaximumActualTime:
        case AggregateFunction::Range:
            if (allNoData(w)) return setNoData(out, w.stamp);
            return extremes(f, c, w, out);
        case AggregateFunction::Minimum2:
        case AggregateFunction::Maximum2:
            return extremes2(f, c, w, out);
        case AggregateFunction::Count:
            return count(c, w, out);
        case AggregateFunction::Start:
        case AggregateFunction::End:
            return startEnd(f, c, w, out);
        case AggregateFunction::Delta:
            return delta(c, w, out);
        case AggregateFunction::DurationGood:
        case AggregateFunction::DurationBad:
        case AggregateFunction::PercentGood:
        case AggregateFunction::PercentBad:
            return durations(f, c, w, out);
        case AggregateFunction::WorstQuality:
        case AggregateFunction::WorstQuality2:
            return worstQuality(f, c, w, out);
    }
    setNoData(out, w.stamp);
}

StatusCode validate(std::span<const DataValue> raw) noexcept {
    for (std::size_t i = 0; i < raw.size(); ++i) {
        const DataValue& d = raw[i];
        if ((d.mask & UAPLEX_DATAVALUE_SOURCE_TIMESTAMP) == 0)
            return UAPLEX_BadAggregateInvalidInputs;
        if (i > 0 && d.source_timestamp <= raw[i - 1].source_timestamp)
            return UAPLEX_BadAggregateInvalidInputs;
        if (UAPLEX_STATUS_IS_BAD(rawStatus(d))) continue;
        double x = (d.mask & UAPLEX_DATAVALUE_VALUE) != 0
                       ? numeric(d.value)
                       : std::numeric_limits<double>::quiet_NaN();
        if (!std::isfinite(x)) return UAPLEX_BadAggregateInvalidInputs;
    }
    return UAPLEX_Good;
}

// The interval length in ticks (0: one interval), or -1 when invalid.
std::int64_t intervalTicks(double ms) noexcept {
    if (!std::isfinite(ms) || ms < 0) return -1;
    double ticks = ms * kTicksPerMs;
    if (ticks >= 9.0e18) return std::numeric_limits<std::int64_t>::max();
    auto whole = static_cast<std::int64_t>(ticks);
    if (ms > 0 && whole < 1) return -1;
    return whole;
}

}  // namespace

std::uint32_t aggregateNodeId(AggregateFunction function) noexcept {
    for (const auto& f : kFunctionIds)
        if (f.function == function) return f.id;
    return 0;
}

std::optional<AggregateFunction> aggregateFromNodeId(const ua::NodeId& id) noexcept {
    if (id.namespace_index != 0 || id.identifier_type != UAPLEX_ID_NUMERIC) return std::nullopt;
    for (const auto& f : kFunctionIds)
        if (f.id == id.identifier.numeric) return f.function;
    return std::nullopt;
}

AggregateConfiguration effectiveConfiguration(const ua::AggregateConfiguration& requested,
                                              const AggregateConfiguration& defaults) noexcept {
    if (requested.useServerCapabilitiesDefaults) return defaults;
    AggregateConfiguration c;
    c.treatUncertainAsBad = requested.treatUncertainAsBad;
    c.percentDataBad = requested.percentDataBad;
    c.percentDataGood = requested.percentDataGood;
    c.useSlopedExtrapolation = requested.useSlopedExtrapolation;
    return c;
}

StatusCode checkConfiguration(const AggregateConfiguration& c) noexcept {
    if (c.percentDataBad > 100 || c.percentDataGood > 100)
        return UAPLEX_BadAggregateConfigurationRejected;
    if (static_cast<int>(c.percentDataGood) < 100 - static_cast<int>(c.percentDataBad))
        return UAPLEX_BadAggregateConfigurationRejected;
    return UAPLEX_Good;
}

StatusCode intervalCount(const ProcessedRequest& rq, std::size_t maxIntervals,
                         std::size_t& count) noexcept {
    count = 0;
    if (rq.startTime == rq.endTime) return UAPLEX_BadInvalidArgument;
    std::int64_t step = intervalTicks(rq.processingIntervalMs);
    if (step < 0) return UAPLEX_BadInvalidArgument;
    // The range as unsigned: DateTime spans the whole int64 range.
    std::uint64_t range =
        rq.startTime < rq.endTime
            ? static_cast<std::uint64_t>(rq.endTime) - static_cast<std::uint64_t>(rq.startTime)
            : static_cast<std::uint64_t>(rq.startTime) - static_cast<std::uint64_t>(rq.endTime);
    if (range > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
        return UAPLEX_BadInvalidArgument;  // wider than any DateTime range
    std::uint64_t n = 1;
    if (step != 0 && static_cast<std::uint64_t>(step) < range) {
        auto s = static_cast<std::uint64_t>(step);
        n = range / s + (range % s != 0 ? 1 : 0);
    }
    if (n > maxIntervals) return UAPLEX_BadTooManyOperations;
    count = static_cast<std::size_t>(n);
    return UAPLEX_Good;
}

ComputeResult compute(AggregateFunction function, std::span<const DataValue> raw,
                      const ProcessedRequest& rq, std::span<DataValue> out) noexcept {
    std::size_t n = 0;
    if (StatusCode s = intervalCount(rq, out.size(), n); UAPLEX_STATUS_IS_BAD(s)) {
        if (StatusCode c = checkConfiguration(rq.configuration); UAPLEX_STATUS_IS_BAD(c))
            return {c, 0};
        return {s, 0};
    }
    return computeIntervals(function, raw, rq, 0, out.first(n));
}

ComputeResult computeIntervals(AggregateFunction function, std::span<const DataValue> raw,
                               const ProcessedRequest& rq, std::size_t first,
                               std::span<DataValue> out) noexcept {
    if (StatusCode s = checkConfiguration(rq.configuration); UAPLEX_STATUS_IS_BAD(s)) return {s, 0};
    std::size_t n = 0;
    if (StatusCode s = intervalCount(rq, std::numeric_limits<std::size_t>::max(), n);
        UAPLEX_STATUS_IS_BAD(s))
        return {s, 0};
    if (first > n || out.size() > n - first) return {UAPLEX_BadTooManyOperations, 0};
    if (StatusCode s = validate(raw); UAPLEX_STATUS_IS_BAD(s)) return {s, 0};
    Calculator calc(raw, rq);
    bool reverse = rq.endTime < rq.startTime;
    std::int64_t step = intervalTicks(rq.processingIntervalMs);
    DateTime range = reverse ? rq.startTime - rq.endTime : rq.endTime - rq.startTime;
    if (step == 0 || step >= range) step = range;
    const std::size_t count = out.size();
    // Chronological order keeps the bound searches moving forward; a backward request is
    // written from its last interval (the earliest in time) up.
    for (std::size_t m = 0; m < count; ++m) {
        std::size_t k = first + (reverse ? count - 1 - m : m);
        Window w;
        w.reverse = reverse;
        auto offset = static_cast<DateTime>(k) * step;
        if (!reverse) {
            w.lo = rq.startTime + offset;
            w.hi = range - offset > step ? w.lo + step : rq.endTime;
            w.stamp = w.lo;
            w.first = calc.lowerBound(w.lo);
            w.last = calc.lowerBound(w.hi);
        } else {
            w.hi = rq.startTime - offset;
            w.lo = range - offset > step ? w.hi - step : rq.endTime;
            w.stamp = w.hi;
            w.first = calc.upperBound(w.lo);
            w.last = calc.upperBound(w.hi);
        }
        w.shortInterval = w.hi - w.lo < step;
        w.noData = calc.noDataTime(w.lo, w.hi);
        computeOne(function, calc, w, out[k - first]);
    }
    return {UAPLEX_Good, count};
}

ComputeResult valuesAtTimes(std::span<const DataValue> raw, std::span<const DateTime> times,
                            bool simpleBounds, const ProcessedRequest& rq,
                            std::span<DataValue> out) noexcept {
    if (StatusCode s = checkConfiguration(rq.configuration); UAPLEX_STATUS_IS_BAD(s)) return {s, 0};
    if (out.size() < times.size()) return {UAPLEX_BadTooManyOperations, 0};
    if (StatusCode s = validate(raw); UAPLEX_STATUS_IS_BAD(s)) return {s, 0};
    Calculator calc(raw, rq);
    for (std::size_t i = 0; i < times.size(); ++i) {
        const DateTime at = times[i];
        DataValue& o = out[i];
        Point b = simpleBounds ? calc.simpleBound(at) : calc.interpolatedBound(at, calc.stepped());
        if (b.raw) {  // a value at the time: as stored (Raw)
            const DataValue& r = calc.at(b.idx);
            setResult(o, at, rawStatus(r));
            if ((r.mask & UAPLEX_DATAVALUE_VALUE) != 0) {
                o.mask |= UAPLEX_DATAVALUE_VALUE;
                o.value = r.value;
            }
            continue;
        }
        if (!nonBad(b.sev)) {
            setNoData(o, at);
            continue;
        }
        StatusCode st = b.sev == Sev::Good ? UAPLEX_Good : UAPLEX_UncertainDataSubNormal;
        setSourceTyped(o, at, withBits(st, kHistorianInterpolated), b.v, calc.sourceType());
    }
    return {UAPLEX_Good, times.size()};
}

}  // namespace uaplex::aggregates
