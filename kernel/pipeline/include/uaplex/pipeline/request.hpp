// SPDX-License-Identifier: Apache-2.0
// The request pipeline's records (docs/pipeline.md): a request between the I/O thread that
// assembled it and the worker that answers it, the pool of released records every
// connection shares, and a worker's scratch.
#pragma once

#include <uaplex/admission.h>
#include <uaplex/buffer_pool.h>
#include <uaplex/request_queue.h>
#include <uaplex/cpp/spare_pool.hpp>
#include <uaplex/encoding/encoding.hpp>

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include <uaplex/session/request_registry.hpp>
#include <uaplex/session/session_manager.hpp>

namespace uaplex::pipeline {

class Connection;

// The request records that exist in the process (in flight or kept for reuse); tests.
std::size_t pendingRequestObjects() noexcept;

// A decoded-to-be request between the I/O thread and a worker. The entry comes first so the
// queue's entry pointer is the request's. Recycled through the RequestPool: no allocation
// per request.
struct PendingRequest {
    uaplex_request_entry entry{};
    std::shared_ptr<Connection> connection;
    enc::ByteBuffer body;
    std::uint32_t secureRequestId = 0;
    std::int64_t queuedNs = 0;  // steady clock when it went into the request queue
    // The session the request names, when it resolves on arrival: the request is in its
    // registry (findable by Cancel) until it is released.
    std::shared_ptr<session::Session> session;
    session::TrackedRequest tracked;
    // Where `tracked` is registered: the session's registry, or the connection's for a
    // request without a usable session (GetEndpoints, CreateSession...); null if neither.
    session::RequestRegistry* registry = nullptr;
    // Admission: the owner the request is charged to (retained), the classification flags
    // and whether it was classified with a session binding (revalidated before dispatch).
    uaplex_admission_owner* owner = nullptr;
    std::uint32_t admissionFlags = 0;
    bool bound = false;
    // While an asynchronous operation answers it later (docs/pipeline.md, "Asynchronous
    // operations"): reset when the request is released, after it left its registry.
    std::shared_ptr<class ParkedRequest> parked;

    PendingRequest();
    ~PendingRequest();
    PendingRequest(const PendingRequest&) = delete;
    PendingRequest& operator=(const PendingRequest&) = delete;
};

// A request record kept for reuse keeps a heap body up to this size (a single chunk).
inline constexpr std::size_t kKeptBodyBytes = 65536;

// The requests no connection uses right now, for any connection (a lock-free ring): what is
// kept follows the requests in flight at once, not each connection's peak (two Publish sent
// together made every connection keep two for good, most of them idle).
struct RequestPool {
    RequestPool(std::size_t capacity, std::size_t reserve) : free(capacity, reserve) {}
    PendingRequest* acquire() {
        if (PendingRequest* r = free.take()) return r;
        return free.make();
    }
    void release(PendingRequest* r) noexcept { free.put(r); }
    sdk::SparePool<PendingRequest> free;
};

// The heap trim (the policy is the server's housekeeping). After a bulk deletion (many
// monitored items or subscriptions freed) the C allocator keeps the freed pages: trimHeap
// gives them back, outside any engine lock.
void trimHeap() noexcept;
// How often the heap was given back: a worker that sees it change drops the arena blocks a
// large request made it grow.
std::uint32_t heapTrimCount() noexcept;

// Per-worker scratch reused for every request: arena, encode buffer, chunk buffer list.
// How long requests waited in the request queue, from enqueue to the worker that took them
// (a swap's moves included): per bound of kQueueWaitBoundsNs (not cumulative; the last cell
// counts those above every bound) and the sum. Each worker counts in a shard of its own
// (relaxed atomics, own cache lines); a read sums them. No lock, no allocation.
inline constexpr std::array<std::uint64_t, 16> kQueueWaitBoundsNs = {
    10'000,        50'000,        100'000,        250'000,       500'000,     1'000'000,
    2'500'000,     10'000'000,    25'000'000,     100'000'000,   250'000'000, 1'000'000'000,
    2'500'000'000, 5'000'000'000, 10'000'000'000, 30'000'000'000};
struct QueueWaits {
    std::array<std::uint64_t, kQueueWaitBoundsNs.size() + 1> buckets{};
    std::uint64_t sumNs = 0;
};
class QueueWaitHistogram {
  public:
    static constexpr std::size_t kShards = 16;
    void count(std::size_t shard, std::uint64_t ns) noexcept {
        std::size_t b = 0;
        while (b < kQueueWaitBoundsNs.size() && ns > kQueueWaitBoundsNs[b]) ++b;
        Shard& s = shards_[shard % kShards];
        s.buckets[b].fetch_add(1, std::memory_order_relaxed);
        s.sumNs.fetch_add(ns, std::memory_order_relaxed);
    }
    QueueWaits read() const noexcept {
        QueueWaits sum;
        for (const Shard& s : shards_) {
            for (std::size_t b = 0; b < sum.buckets.size(); ++b)
                sum.buckets[b] += s.buckets[b].load(std::memory_order_relaxed);
            sum.sumNs += s.sumNs.load(std::memory_order_relaxed);
        }
        return sum;
    }

  private:
    struct alignas(64) Shard {
        std::array<std::atomic<std::uint64_t>, kQueueWaitBoundsNs.size() + 1> buckets{};
        std::atomic<std::uint64_t> sumNs{0};
    };
    std::array<Shard, kShards> shards_;
};

struct Worker {
    std::size_t index = 0;  // its shard of the pipeline's QueueWaitHistogram
    enc::Arena arena{64u << 20, 64 * 1024};
    enc::ByteBuffer out{64 * 1024};
    std::vector<uaplex_buffer> chunks;
    std::uint32_t heapTrims = 0;  // heapTrimCount() when the arena was last shrunk
    // Sized before the first request: the queue may hand any idle worker a request, so a
    // worker's first request is no warm-up.
    Worker() {
        arena.allocate(1, 1);
        arena.reset();
        chunks.reserve(8);
    }
};

}  // namespace uaplex::pipeline
