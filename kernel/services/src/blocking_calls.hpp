// SPDX-License-Identifier: Apache-2.0
// Node managers whose synchronous entries may block ([plugins.<name>] blocking_threads,
// docs/pipeline.md "Blocking node managers"): their Value reads and writes, of owned
// namespaces and of store nodes with read/write callbacks, run on threads of the manager's
// own and complete like the asynchronous entries do, so a slow device holds none of the
// kernel's workers. Each manager has its lane: a FIFO of operations and its threads.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "services_internal.hpp"

namespace uaplex::services {

struct AsyncPart;
class AsyncRequest;

class BlockingCalls {
  public:
    // `capacity`: the operations a lane holds at once (every one also holds a completion
    // slot, so max_async_operations is enough); `stopBound`: how long stop waits for a call.
    BlockingCalls(CompletionTable& completions, std::uint32_t capacity,
                  std::chrono::milliseconds stopBound);
    ~BlockingCalls();
    BlockingCalls(const BlockingCalls&) = delete;
    BlockingCalls& operator=(const BlockingCalls&) = delete;

    // Before serving: a lane of `threads` threads for the plugin instance `ctx`; `code` is an
    // address in its library (kept loaded when a thread is left behind at stop).
    void addLane(const void* ctx, const void* code, const std::string& name, std::uint32_t threads);
    // Whether the plugin instance's synchronous calls go to a lane. Any thread.
    bool offloads(const void* ctx) const noexcept { return laneOf(ctx) != nullptr; }
    // Queues a read or write part (its request's reference held by the caller's count); false
    // when the lane is full or stopping: the caller completes it with BadResourceUnavailable.
    bool submit(AsyncPart* part, AsyncRequest* request) noexcept;
    // Completes what is queued with BadServerHalted and waits up to stopBound for the calls
    // in progress; a thread still inside a call is left behind (its library kept loaded).
    void stop() noexcept;

  private:
    struct Job {
        AsyncPart* part = nullptr;
        AsyncRequest* request = nullptr;
    };
    struct Lane {
        const void* ctx = nullptr;
        const void* code = nullptr;
        std::string name;
        std::mutex mutex;
        std::condition_variable wake;
        std::condition_variable idle;
        std::vector<Job> ring;  // fixed capacity, allocated once
        std::size_t head = 0, count = 0;
        std::uint32_t busy = 0, running = 0;
        bool stopping = false;
        bool abandoned = false;  // stop gave up waiting: the threads complete nothing more
        std::vector<std::thread> threads;
    };
    Lane* laneOf(const void* ctx) const noexcept {
        for (const auto& l : lanes_)
            if (l->ctx == ctx) return l.get();
        return nullptr;
    }
    void run(Lane& lane) noexcept;
    void execute(const Job& job, Lane& lane) noexcept;

    CompletionTable& completions_;
    std::uint32_t capacity_;
    std::chrono::milliseconds stopBound_;
    std::vector<std::unique_ptr<Lane>> lanes_;
    bool stopped_ = false;
};

}  // namespace uaplex::services
