// SPDX-License-Identifier: Apache-2.0
// Encoding microbenchmarks. Each reports ns/op and, through a counting global allocator,
// heap allocations and bytes per operation (expected 0 in steady state).
#include "support/counting_new.hpp"
#include "support/encoding_messages.hpp"

#include <benchmark/benchmark.h>

#include <vector>

using namespace uaplex;

namespace {

// Runs body() per iteration and reports heap use per operation and throughput in wire bytes.
// The counters include the few allocations Google Benchmark itself makes per run, which
// show up as a fraction far below one per operation.
template <class Body>
void measure(benchmark::State& state, std::size_t wireBytes, Body&& body) {
    body();  // warm-up: the arena and the output buffer reach their steady-state size
    test::HeapScope heap;
    for (auto _ : state) body();
    const double iterations = double(state.iterations());
    state.counters["heap_bytes/op"] = double(heap.bytes()) / iterations;
    state.counters["allocs/op"] = double(heap.allocations()) / iterations;
    state.SetBytesProcessed(std::int64_t(state.iterations()) * std::int64_t(wireBytes));
}

void decodeBench(benchmark::State& state, const std::vector<std::uint8_t>& bytes) {
    enc::Arena arena;
    enc::DecodeLimits limits;
    arena.reset();
    if (enc::decodeMessage(bytes, arena, limits).status != UAPLEX_Good) {
        state.SkipWithError("decode failed");
        return;
    }
    measure(state, bytes.size(), [&] {
        arena.reset();
        enc::DecodedMessage m = enc::decodeMessage(bytes, arena, limits);
        benchmark::DoNotOptimize(m.object);
    });
}

template <class T>
void encodeBench(benchmark::State& state, const T& message) {
    enc::ByteBuffer buffer;
    {
        enc::BinaryWriter w(buffer);
        if (enc::encodeMessage(w, message) != UAPLEX_Good) {
            state.SkipWithError("encode failed");
            return;
        }
    }
    const std::size_t size = buffer.size();
    measure(state, size, [&] {
        buffer.clear();
        enc::BinaryWriter w(buffer);
        enc::encodeMessage(w, message);
        benchmark::DoNotOptimize(buffer.data());
    });
}

void BM_ReadRequestDecode(benchmark::State& state) {
    decodeBench(state,
                test::encodeMessageBytes(test::ReadRequestFixture(int(state.range(0))).request));
}
void BM_ReadResponseEncode(benchmark::State& state) {
    test::ReadResponseFixture f(int(state.range(0)));
    encodeBench(state, f.response);
}
void BM_WriteRequestDecode(benchmark::State& state) {
    decodeBench(state,
                test::encodeMessageBytes(test::WriteRequestFixture(int(state.range(0))).request));
}
void BM_PublishResponseEncode(benchmark::State& state) {
    test::PublishResponseFixture f(int(state.range(0)));
    encodeBench(state, f.response);
}
void BM_PublishResponseDecode(benchmark::State& state) {
    decodeBench(state, test::encodeMessageBytes(
                           test::PublishResponseFixture(int(state.range(0))).response));
}

std::vector<std::uint8_t> payload(std::size_t n) {
    std::vector<std::uint8_t> p(n);
    for (std::size_t i = 0; i < n; ++i) p[i] = std::uint8_t(i * 31);
    return p;
}

void BM_ByteString1MiBEncode(benchmark::State& state) {
    std::vector<std::uint8_t> data = payload(1u << 20);
    ua::ByteString bs = ua::makeByteString(data);
    enc::ByteBuffer buffer;
    measure(state, data.size() + 4, [&] {
        buffer.clear();
        enc::BinaryWriter w(buffer);
        enc::encode(w, bs);
        benchmark::DoNotOptimize(buffer.data());
    });
}

void BM_ByteString1MiBDecode(benchmark::State& state) {
    std::vector<std::uint8_t> data = payload(1u << 20);
    enc::ByteBuffer buffer;
    enc::BinaryWriter w(buffer);
    enc::encode(w, ua::makeByteString(data));
    std::vector<std::uint8_t> wire = buffer.toVector();
    enc::Arena arena;
    enc::DecodeLimits limits;
    measure(state, wire.size(), [&] {
        arena.reset();
        enc::BinaryReader r(wire, arena, limits);
        ua::ByteString out;
        enc::decode(r, out);
        benchmark::DoNotOptimize(out.data);
    });
}

}  // namespace

BENCHMARK(BM_ReadRequestDecode)->Arg(1)->Arg(100);
BENCHMARK(BM_ReadResponseEncode)->Arg(1)->Arg(100);
BENCHMARK(BM_WriteRequestDecode)->Arg(1)->Arg(100);
BENCHMARK(BM_PublishResponseEncode)->Arg(100);
BENCHMARK(BM_PublishResponseDecode)->Arg(100);
BENCHMARK(BM_ByteString1MiBEncode);
BENCHMARK(BM_ByteString1MiBDecode);

BENCHMARK_MAIN();
