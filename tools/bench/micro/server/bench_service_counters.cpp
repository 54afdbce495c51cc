// SPDX-License-Identifier: Apache-2.0
// The service table's counters as the workers write them: every thread counts every request,
// on one busy row (all threads Read) or on neighbouring rows (each thread its own service).
// "Adjacent" is one pair of atomics per row, rows next to each other (the layout the sharded
// ServiceCounters replaced); compare the two under ->Threads(2).
#include <benchmark/benchmark.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>

#include <uaplex/server/service_table.hpp>

namespace {

using uaplex::server::kMaxServiceRows;
using uaplex::server::ServiceCounters;

struct Adjacent {
    struct Cell {
        std::atomic<std::uint64_t> requests{0};
        std::atomic<std::uint64_t> errors{0};
    };
    std::array<Cell, kMaxServiceRows> cells;
    void countRequest(std::size_t row) noexcept {
        cells[row].requests.fetch_add(1, std::memory_order_relaxed);
    }
};

Adjacent adjacent;
ServiceCounters& sharded() {
    static auto c = std::make_unique<ServiceCounters>();
    return *c;
}

template <class Counters>
void count(benchmark::State& state, Counters& counters, bool ownRow) {
    const std::size_t row = ownRow ? std::size_t(state.thread_index()) % kMaxServiceRows : 11;
    for (auto _ : state) counters.countRequest(row);
    state.SetItemsProcessed(state.iterations());
}

void BM_AdjacentOneRow(benchmark::State& s) {
    count(s, adjacent, false);
}
void BM_AdjacentOwnRow(benchmark::State& s) {
    count(s, adjacent, true);
}
void BM_ShardedOneRow(benchmark::State& s) {
    count(s, sharded(), false);
}
void BM_ShardedOwnRow(benchmark::State& s) {
    count(s, sharded(), true);
}

}  // namespace

BENCHMARK(BM_AdjacentOneRow)->Threads(1)->Threads(2)->UseRealTime();
BENCHMARK(BM_AdjacentOwnRow)->Threads(1)->Threads(2)->UseRealTime();
BENCHMARK(BM_ShardedOneRow)->Threads(1)->Threads(2)->UseRealTime();
BENCHMARK(BM_ShardedOwnRow)->Threads(1)->Threads(2)->UseRealTime();

BENCHMARK_MAIN();
