// SPDX-License-Identifier: Apache-2.0
// The Part 13 aggregates: one result DataValue per processing interval, computed from the
// raw DataValues of one variable. No allocation: the caller owns the input and the output.
#pragma once

#include <uaplex/encoding/builtin.hpp>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>

namespace uaplex::ua {
struct AggregateConfiguration;  // the wire structure (encoding/generated/types.hpp)
}

namespace uaplex::aggregates {

// The aggregates served, each an AggregateFunction object of namespace 0.
enum class AggregateFunction : std::uint8_t {
    Interpolative,
    Average,
    TimeAverage,
    TimeAverage2,
    Total,
    Total2,
    Minimum,
    Maximum,
    MinimumActualTime,
    MaximumActualTime,
    Range,
    Minimum2,
    Maximum2,
    Count,
    Start,
    End,
    Delta,
    DurationGood,
    DurationBad,
    PercentGood,
    PercentBad,
    WorstQuality,
    WorstQuality2,
};
inline constexpr std::size_t kAggregateFunctionCount = 23;

// The numeric ns=0 NodeId of the AggregateFunction object (AggregateFunction_Average = 2342).
std::uint32_t aggregateNodeId(AggregateFunction function) noexcept;
// The function a requested NodeId names; nullopt for any other NodeId (the caller answers
// Bad_AggregateNotSupported).
std::optional<AggregateFunction> aggregateFromNodeId(const ua::NodeId& id) noexcept;

// Part 13 4.2.1.2 AggregateConfiguration; the defaults are those of the type.
struct AggregateConfiguration {
    bool treatUncertainAsBad = true;
    std::uint8_t percentDataBad = 100;
    std::uint8_t percentDataGood = 100;
    bool useSlopedExtrapolation = false;
};
// The configuration a ReadProcessedDetails or an AggregateFilter asks for: the variable's
// (or the server's) when useServerCapabilitiesDefaults is set, else the request's own.
AggregateConfiguration effectiveConfiguration(const ua::AggregateConfiguration& requested,
                                              const AggregateConfiguration& defaults) noexcept;
// Good, or Bad_AggregateConfigurationRejected: a percentage above 100, or
// PercentDataGood < 100 - PercentDataBad (Part 13 4.2.1.2: the two must leave no gap where
// an interval is neither Good, Uncertain nor Bad).
ua::StatusCode checkConfiguration(const AggregateConfiguration& configuration) noexcept;

// The time domain and options of one ReadProcessedDetails entry (Part 11 6.5.4).
struct ProcessedRequest {
    ua::DateTime startTime = 0;
    ua::DateTime endTime = 0;         // before startTime: intervals run backwards, latest first
    double processingIntervalMs = 0;  // 0: one interval over the whole domain
    AggregateConfiguration configuration;
    bool stepped = false;  // the variable's Stepped property (Part 11 5.3.2)
    // The time up to which the history of the variable is complete (the time of the last
    // collection). Time after it is "after end of data". 0: the last raw value's timestamp.
    ua::DateTime endOfData = 0;
};

// The aggregate bits of a StatusCode (Part 4 7.39, InfoType DataValue, Part 13 5.3.3).
inline constexpr std::uint32_t kInfoTypeDataValue = 0x00000400u;
inline constexpr std::uint32_t kHistorianCalculated = 0x00000001u;
inline constexpr std::uint32_t kHistorianInterpolated = 0x00000002u;
inline constexpr std::uint32_t kHistorianPartial = 0x00000004u;
inline constexpr std::uint32_t kHistorianExtraData = 0x00000008u;
inline constexpr std::uint32_t kHistorianMultiValue = 0x00000010u;

// How many intervals the request makes: Good with `count` set, or Bad_InvalidArgument
// (startTime == endTime, a negative, NaN or infinite interval, one below 100 ns), or
// Bad_TooManyOperations when the count exceeds `maxIntervals`.
ua::StatusCode intervalCount(const ProcessedRequest& request, std::size_t maxIntervals,
                             std::size_t& count) noexcept;

struct ComputeResult {
    ua::StatusCode status;  // Good, or the operation's Bad status (nothing written)
    std::size_t written;    // results in `out`, one per interval, in request order
};

// Computes `function` over `raw` for every interval of `request` into out[0..count).
//
// `raw`: the raw values of the variable, source timestamps strictly increasing, including
// the bounding values around the time domain (the value at or before the earliest interval
// edge and the one after the latest, when they exist). Values of Good or Uncertain severity
// hold a numeric scalar (Boolean, integers, Float, Double); Bad values may hold anything.
// A raw value whose status is Bad_NoData marks a span without data until the next raw value.
//
// Refused, nothing written: Bad_AggregateConfigurationRejected (checkConfiguration),
// Bad_InvalidArgument (intervalCount), Bad_TooManyOperations (more intervals than
// out.size(): out.size() is the caller's bound), Bad_AggregateInvalidInputs (timestamps not
// strictly increasing, a missing source timestamp, a non-numeric Good or Uncertain value).
//
// The results own nothing: a value copied from a raw value is a scalar numeric Variant.
// Thread: any; the call keeps no state.
ComputeResult compute(AggregateFunction function, std::span<const ua::DataValue> raw,
                      const ProcessedRequest& request, std::span<ua::DataValue> out) noexcept;

// compute() for the intervals [first, first + out.size()) of `request` only, the others
// skipped: a history read pages through a long request with it, each call over the raw
// values of its own intervals (and their bounds). Bad_TooManyOperations when the range
// runs past the request's last interval; the other refusals as compute().
ComputeResult computeIntervals(AggregateFunction function, std::span<const ua::DataValue> raw,
                               const ProcessedRequest& request, std::size_t first,
                               std::span<ua::DataValue> out) noexcept;

// The value at each of `times` (ReadAtTimeDetails, Part 11 6.5.5.2) into out[0..times.size()):
// a raw value at the time as stored (Raw), else the bound Interpolative computes there
// (simpleBounds false: interpolated bounds, 3.1.8) or the simple bound (true: 3.1.9), with
// the Interpolated bit, Good or Uncertain_DataSubNormal; Bad_NoData where there is none.
// `request` gives the configuration, stepped and endOfData (its times are not used); `raw`
// as for compute. Times in any order. Refusals as compute() (Bad_TooManyOperations: `out`
// smaller than `times`).
ComputeResult valuesAtTimes(std::span<const ua::DataValue> raw, std::span<const ua::DateTime> times,
                            bool simpleBounds, const ProcessedRequest& request,
                            std::span<ua::DataValue> out) noexcept;

}  // namespace uaplex::aggregates
