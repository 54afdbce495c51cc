// SPDX-License-Identifier: Apache-2.0
// ReadProcessedDetails and ReadAtTimeDetails over raw history pages (history_derived.hpp).
#include "history_derived.hpp"

#include <algorithm>
#include <cstring>
#include <limits>

#include <uaplex/statuscodes.h>
#include <uaplex/encoding/datatype.hpp>
#include <uaplex/encoding/generated/types.hpp>

namespace uaplex::services {

namespace {

constexpr std::uint32_t kSeverityMask = 0xC0000000u;
constexpr std::uint32_t kUncertain = 0x40000000u;
// At-time: the values read around a time in one store read.
constexpr std::uint32_t kAtTimePage = 16;

// The size of a numeric scalar of the builtin type `t` on the wire; 0 for any other type.
std::size_t scalarSize(std::uint8_t t) noexcept {
    switch (t) {
        case UAPLEX_TYPE_BOOLEAN:
        case UAPLEX_TYPE_SBYTE:
        case UAPLEX_TYPE_BYTE:
            return 1;
        case UAPLEX_TYPE_INT16:
        case UAPLEX_TYPE_UINT16:
            return 2;
        case UAPLEX_TYPE_INT32:
        case UAPLEX_TYPE_UINT32:
        case UAPLEX_TYPE_FLOAT:
            return 4;
        case UAPLEX_TYPE_INT64:
        case UAPLEX_TYPE_UINT64:
        case UAPLEX_TYPE_DOUBLE:
            return 8;
        default:
            return 0;
    }
}

const enc::DataType& variantCodec() noexcept {
    static const enc::DataType* t = enc::findDataType("Variant");
    return *t;
}

// A stored value as a DataValue: a numeric scalar decoded in place (little-endian host, as
// the encoder assumes), anything else through the codec into `scratch` and kept only when it
// is a numeric scalar. False: a Good or Uncertain value that is none (the aggregates take
// numbers only); a Bad one keeps its status without its value.
bool decodeStored(const uaplex_history_value& v, ua::DataValue& dv, enc::Arena& scratch) noexcept {
    dv = ua::DataValue{};
    dv.mask = UAPLEX_DATAVALUE_SOURCE_TIMESTAMP;
    dv.source_timestamp = v.source_timestamp;
    if (v.source_picoseconds) {
        dv.mask |= UAPLEX_DATAVALUE_SOURCE_PICOSECONDS;
        dv.source_picoseconds = v.source_picoseconds;
    }
    if (v.server_timestamp != 0) {
        dv.mask |= UAPLEX_DATAVALUE_SERVER_TIMESTAMP;
        dv.server_timestamp = v.server_timestamp;
    }
    if (v.status != UAPLEX_Good) {
        dv.mask |= UAPLEX_DATAVALUE_STATUS;
        dv.status = v.status;
    }
    const bool bad =
        (v.status & kSeverityMask) == 0x80000000u || (v.status & kSeverityMask) == 0xC0000000u;
    if (v.value.len == 0 || v.value.data == nullptr) return true;  // a null Variant
    if (decodeNumericScalar(v.value, dv.value)) {
        dv.mask |= UAPLEX_DATAVALUE_VALUE;
        return true;
    }
    void* out = nullptr;
    enc::DecodeLimits limits;
    scratch.reset();
    if (enc::decodeValue({v.value.data, v.value.len}, scratch, limits, variantCodec(), &out) ==
            UAPLEX_Good &&
        out != nullptr) {
        const auto& var = *static_cast<const ua::Variant*>(out);
        if (var.array_length < 0 && scalarSize(var.encoding & UAPLEX_VARIANT_TYPE_MASK) != 0 &&
            (var.encoding & ~UAPLEX_VARIANT_TYPE_MASK) == 0) {
            dv.value = var;
            dv.mask |= UAPLEX_DATAVALUE_VALUE;
            return true;
        }
    }
    return bad;
}

}  // namespace

bool decodeNumericScalar(uaplex_bytes in, ua::Variant& out) noexcept {
    if (in.len < 2 || in.data == nullptr) return false;
    const std::uint8_t t = in.data[0];
    const std::size_t size = scalarSize(t);
    if (size == 0 || in.len != size + 1) return false;
    out = ua::Variant{};
    out.encoding = t;
    out.array_length = -1;
    const std::uint8_t* p = in.data + 1;
    if (t == UAPLEX_TYPE_BOOLEAN)
        out.value.boolean = p[0] != 0;
    else
        std::memcpy(&out.value, p, size);
    return true;
}

DerivedRead::DerivedRead(aggregates::AggregateFunction function,
                         const aggregates::ProcessedRequest& rq, std::size_t total,
                         std::size_t first, const Limits& limits)
    : kind_(Kind::Processed),
      function_(function),
      rq_(rq),
      limits_(limits),
      total_(total),
      next_(first) {
    alloc_ = {this, [](void* self, size_t size, size_t align) -> void* {
                  return static_cast<DerivedRead*>(self)->page_.allocate(size == 0 ? 1 : size,
                                                                         align == 0 ? 8 : align);
              }};
    const bool reverse = rq.endTime < rq.startTime;
    const auto range = static_cast<std::int64_t>(
        reverse ? std::uint64_t(rq.startTime) - std::uint64_t(rq.endTime)
                : std::uint64_t(rq.endTime) - std::uint64_t(rq.startTime));
    // As the aggregates count them: the interval in whole ticks, the range when it is 0 or
    // longer.
    const double ticks = rq.processingIntervalMs * 10000.0;
    step_ = ticks >= 9.0e18 ? std::numeric_limits<std::int64_t>::max()
                            : static_cast<std::int64_t>(ticks);
    if (step_ <= 0 || step_ >= range) step_ = range;
    chunk_ = std::min<std::size_t>(limits_.maxResults, total_ - next_);
    const ua::DateTime e0 = edge(next_), e1 = edge(next_ + chunk_);
    readStart_ = e0;  // towards the later intervals: forward [e0, e1), backward (e1, e0]
    readEnd_ = e1;
    readFlags_ = UAPLEX_HISTORY_READ_BOUNDS;
}

DerivedRead::DerivedRead(std::span<const ua::DateTime> times, bool simpleBounds,
                         const aggregates::ProcessedRequest& rq, std::size_t first,
                         const Limits& limits)
    : kind_(Kind::AtTime),
      rq_(rq),
      times_(times),
      simple_(simpleBounds),
      limits_(limits),
      total_(times.size()),
      next_(first) {
    alloc_ = {this, [](void* self, size_t size, size_t align) -> void* {
                  return static_cast<DerivedRead*>(self)->page_.allocate(size == 0 ? 1 : size,
                                                                         align == 0 ? 8 : align);
              }};
    (void)startTime();
}

ua::DateTime DerivedRead::edge(std::size_t k) const noexcept {
    if (k >= total_) return rq_.endTime;
    const auto offset = static_cast<std::int64_t>(k) * step_;
    return rq_.endTime < rq_.startTime ? rq_.startTime - offset : rq_.startTime + offset;
}

bool DerivedRead::nonBad(const ua::DataValue& dv) const noexcept {
    const std::uint32_t s = (dv.mask & UAPLEX_DATAVALUE_STATUS) ? dv.status : UAPLEX_Good;
    if ((s & kSeverityMask) == 0) return true;
    return (s & kSeverityMask) == kUncertain && !rq_.configuration.treatUncertainAsBad;
}

bool DerivedRead::startTime() noexcept {
    if (next_ >= total_ || results_.size() >= limits_.maxResults) return false;
    const ua::DateTime t = times_[next_];
    phase_ = 0;
    found_ = 0;
    raw_.clear();
    cursor_.clear();
    readStart_ = t;  // backward from t (inclusive)
    readEnd_ = UAPLEX_HISTORY_TIME_MIN;
    readFlags_ = 0;
    return true;
}

void DerivedRead::nextRead(uaplex_history_read& read) noexcept {
    page_.reset();
    read.flags = readFlags_;
    read.start_time = readStart_;
    read.end_time = readEnd_;
    read.max_values =
        kind_ == Kind::AtTime ? std::min(kAtTimePage, limits_.pageValues) : limits_.pageValues;
    readMax_ = read.max_values;
    read.continuation = {cursor_.data(), cursor_.size()};
    read.alloc = &alloc_;
}

int DerivedRead::append(const uaplex_history_read_result& res, bool forward) noexcept {
    const std::uint32_t n = res.values != nullptr ? std::min(res.value_count, readMax_) : 0;
    int good = 0;
    try {
        for (std::uint32_t i = 0; i < n; ++i) {
            const uaplex_history_value& v = res.values[i];
            if (v.status == UAPLEX_BadBoundNotFound && v.value.len == 0) continue;
            ua::DataValue dv;
            if (!decodeStored(v, dv, scratch_)) return -1;
            if (!raw_.empty()) {
                const ua::DateTime last = raw_.back().source_timestamp;
                // Strictly ordered for the aggregates: of values of one time the one stored
                // last (forward it comes last, backward first).
                if (forward ? dv.source_timestamp < last : dv.source_timestamp > last) continue;
                if (dv.source_timestamp == last) {
                    if (forward) raw_.back() = dv;
                    continue;
                }
            }
            if (nonBad(dv)) ++good;
            raw_.push_back(dv);
        }
    } catch (...) {
        status_ = UAPLEX_BadOutOfMemory;
        return -2;
    }
    return good;
}

bool DerivedRead::keepCursor(const uaplex_history_read_result& res) noexcept {
    try {
        cursor_.assign(res.continuation.data, res.continuation.data + res.continuation.len);
    } catch (...) {
        status_ = UAPLEX_BadOutOfMemory;
        results_.clear();
        return false;
    }
    return true;
}

bool DerivedRead::onPage(uaplex_status st, const uaplex_history_read_result& res) noexcept {
    if (st != UAPLEX_Good) {
        status_ = st;
        results_.clear();
        return false;
    }
    return kind_ == Kind::Processed ? processedPage(res) : atTimePage(res);
}

bool DerivedRead::processedPage(const uaplex_history_read_result& res) noexcept {
    const bool forward = rq_.startTime < rq_.endTime;
    const int got = append(res, forward);
    if (got < 0) {
        if (got == -1) status_ = UAPLEX_BadAggregateInvalidInputs;
        return false;
    }
    const bool more = res.continuation.len > 0 && res.continuation.data != nullptr;
    if (more && raw_.size() + limits_.pageValues > limits_.maxRawValues) truncated_ = true;
    if (more && !truncated_) return keepCursor(res);
    std::size_t count = chunk_;
    if (more) {
        // Only whole intervals: those whose far edge the values read have passed.
        count = 0;
        const ua::DateTime last = raw_.empty() ? readStart_ : raw_.back().source_timestamp;
        while (count < chunk_) {
            const ua::DateTime e = edge(next_ + count + 1);
            if (forward ? last > e : last < e)
                ++count;
            else
                break;
        }
        if (count == 0) {  // one interval holds more raw values than a read may hold
            status_ = UAPLEX_BadTooManyOperations;
            return false;
        }
    }
    if (!forward) std::reverse(raw_.begin(), raw_.end());
    try {
        results_.assign(count, ua::DataValue{});
    } catch (...) {
        status_ = UAPLEX_BadOutOfMemory;
        return false;
    }
    const aggregates::ComputeResult r =
        aggregates::computeIntervals(function_, raw_, rq_, next_, results_);
    if (r.status != UAPLEX_Good) {
        status_ = r.status;
        results_.clear();
        return false;
    }
    next_ += count;
    return false;
}

bool DerivedRead::atTimePage(const uaplex_history_read_result& res) noexcept {
    const bool more = res.continuation.len > 0 && res.continuation.data != nullptr;
    const int got = append(res, phase_ == 1);
    if (got < 0) {
        if (got == -1) status_ = UAPLEX_BadAggregateInvalidInputs;
        return false;
    }
    found_ += std::size_t(got);
    const bool room = raw_.size() + kAtTimePage <= limits_.maxRawValues;
    const ua::DateTime t = times_[next_];
    if (phase_ == 0) {
        // At or before the time: two non-Bad values (the line to extrapolate along).
        if (more && found_ < 2 && room) return keepCursor(res);
        std::reverse(raw_.begin(), raw_.end());
        phase_ = 1;
        found_ = 0;
        cursor_.clear();
        if (t != UAPLEX_HISTORY_TIME_MAX) {
            readStart_ = t + 1;
            readEnd_ = UAPLEX_HISTORY_TIME_MAX;
            return true;
        }
    } else {
        // After it: the first value (simple bounds) or the first non-Bad one.
        const bool need = simple_ ? raw_.empty() || raw_.back().source_timestamp <= t : found_ < 1;
        if (more && need && room) return keepCursor(res);
    }
    try {
        results_.emplace_back();
    } catch (...) {
        status_ = UAPLEX_BadOutOfMemory;
        return false;
    }
    const aggregates::ComputeResult r =
        aggregates::valuesAtTimes(raw_, std::span<const ua::DateTime>(&times_[next_], 1), simple_,
                                  rq_, std::span<ua::DataValue>(&results_.back(), 1));
    if (r.status != UAPLEX_Good) {
        status_ = r.status;
        results_.clear();
        return false;
    }
    ++next_;
    return startTime();
}

}  // namespace uaplex::services
