// SPDX-License-Identifier: Apache-2.0
// Aggregates over 1,000,000 raw values (one a second, Double, about 1 in 50 Bad and 1 in 30
// Uncertain), in one interval and in 1,000: time per processed read and heap use per read
// (expected 0: the caller owns the input and the output).
#include "support/counting_new.hpp"

#include <uaplex/statuscodes.h>
#include <uaplex/aggregates/aggregates.hpp>

#include <benchmark/benchmark.h>

#include <vector>

using namespace uaplex;
using namespace uaplex::aggregates;

namespace {

constexpr std::size_t kValues = 1000000;
constexpr ua::DateTime kSecond = UAPLEX_DATETIME_TICKS_PER_SECOND;
constexpr ua::DateTime kStart = UAPLEX_DATETIME_UNIX_EPOCH + INT64_C(1700000000) * kSecond;

const std::vector<ua::DataValue>& rawValues() {
    static const std::vector<ua::DataValue> raw = [] {
        std::vector<ua::DataValue> v(kValues);
        for (std::size_t i = 0; i < kValues; ++i) {
            ua::DataValue& d = v[i];
            d.mask = UAPLEX_DATAVALUE_VALUE | UAPLEX_DATAVALUE_STATUS |
                     UAPLEX_DATAVALUE_SOURCE_TIMESTAMP;
            d.source_timestamp = kStart + static_cast<ua::DateTime>(i) * kSecond;
            d.status = i % 50 == 7 ? UAPLEX_Bad : (i % 30 == 11 ? UAPLEX_Uncertain : UAPLEX_Good);
            d.value.encoding = UAPLEX_TYPE_DOUBLE;
            d.value.array_length = -1;
            d.value.value.double_ = static_cast<double>(i % 1000) * 0.5;
        }
        return v;
    }();
    return raw;
}

// state.range(0): the number of intervals over the 1,000,000 s of data.
void processed(benchmark::State& state, AggregateFunction f) {
    const auto& raw = rawValues();
    const auto intervals = static_cast<std::size_t>(state.range(0));
    ProcessedRequest rq;
    rq.startTime = kStart;
    rq.endTime = kStart + static_cast<ua::DateTime>(kValues) * kSecond;
    rq.processingIntervalMs = intervals == 1 ? 0 : 1000.0 * double(kValues) / double(intervals);
    std::vector<ua::DataValue> out(intervals);
    if (compute(f, raw, rq, out).written != intervals) {
        state.SkipWithError("compute failed");
        return;
    }
    test::HeapScope heap;
    for (auto _ : state) {
        ComputeResult r = compute(f, raw, rq, out);
        benchmark::DoNotOptimize(r);
        benchmark::DoNotOptimize(out.data());
    }
    const double iterations = double(state.iterations());
    state.counters["heap_bytes/op"] = double(heap.bytes()) / iterations;
    state.counters["allocs/op"] = double(heap.allocations()) / iterations;
    state.SetItemsProcessed(std::int64_t(state.iterations()) * std::int64_t(kValues));
}

// 1,000,000 values, all Bad but the first and the last, and 1,000 intervals after the last
// with sloped extrapolation: each extrapolates along the same two values across the Bad run.
void BM_InterpolativeAfterBadRun(benchmark::State& state) {
    static const std::vector<ua::DataValue> raw = [] {
        std::vector<ua::DataValue> v = rawValues();
        for (std::size_t i = 1; i + 1 < v.size(); ++i) v[i].status = UAPLEX_Bad;
        v.front().status = UAPLEX_Good;
        v.back().status = UAPLEX_Good;
        return v;
    }();
    ProcessedRequest rq;
    rq.startTime = raw.back().source_timestamp;
    rq.endTime = rq.startTime + static_cast<ua::DateTime>(kValues) * kSecond;
    rq.processingIntervalMs = 1000.0 * double(kValues) / 1000.0;
    rq.configuration.useSlopedExtrapolation = true;
    std::vector<ua::DataValue> out(1000);
    for (auto _ : state) {
        ComputeResult r = compute(AggregateFunction::Interpolative, raw, rq, out);
        benchmark::DoNotOptimize(r);
        benchmark::DoNotOptimize(out.data());
    }
}

void BM_Average(benchmark::State& state) {
    processed(state, AggregateFunction::Average);
}
void BM_TimeAverage(benchmark::State& state) {
    processed(state, AggregateFunction::TimeAverage);
}
void BM_TimeAverage2(benchmark::State& state) {
    processed(state, AggregateFunction::TimeAverage2);
}
void BM_Maximum2(benchmark::State& state) {
    processed(state, AggregateFunction::Maximum2);
}

}  // namespace

BENCHMARK(BM_Average)->Arg(1)->Arg(1000)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_TimeAverage)->Arg(1)->Arg(1000)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_TimeAverage2)->Arg(1)->Arg(1000)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Maximum2)->Arg(1)->Arg(1000)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_InterpolativeAfterBadRun)->Unit(benchmark::kMillisecond);

BENCHMARK_MAIN();
