// SPDX-License-Identifier: Apache-2.0
// The threads that decode opc.https JSON requests, so that the transport's single I/O
// thread never runs the decoder: a fixed number of threads and a queue bounded by the bytes
// of JSON text it holds (queued and being decoded).
#pragma once

#include <algorithm>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace uaplex::pipeline {

class JsonDecodePool {
  public:
    enum class Posted { Queued, Full, Stopped };

    JsonDecodePool(std::uint32_t threads, std::size_t maxHeldBytes) : maxHeld_(maxHeldBytes) {
        for (std::uint32_t i = 0; i < std::max<std::uint32_t>(threads, 1); ++i)
            threads_.emplace_back([this] { run(); });
    }
    ~JsonDecodePool() { stop(); }
    JsonDecodePool(const JsonDecodePool&) = delete;
    JsonDecodePool& operator=(const JsonDecodePool&) = delete;

    // Full when the held bytes would pass the bound; a job is always taken when nothing is
    // held, so one request of any admitted size gets through.
    Posted post(std::size_t bytes, std::function<void()> job) {
        {
            std::lock_guard lock(mutex_);
            if (stopped_) return Posted::Stopped;
            if (held_ != 0 && held_ + bytes > maxHeld_) return Posted::Full;
            held_ += bytes;
            queue_.push_back({bytes, std::move(job)});
        }
        wake_.notify_one();
        return Posted::Queued;
    }

    // The running jobs finish; the queued ones are dropped (their connections are closing).
    void stop() noexcept {
        std::deque<Job> dropped;
        {
            std::lock_guard lock(mutex_);
            stopped_ = true;
            dropped.swap(queue_);
        }
        dropped.clear();
        wake_.notify_all();
        for (auto& t : threads_)
            if (t.joinable()) t.join();
        threads_.clear();
    }

    bool stopped() const {
        std::lock_guard lock(mutex_);
        return stopped_;
    }
    std::size_t heldBytes() const {
        std::lock_guard lock(mutex_);
        return held_;
    }

  private:
    struct Job {
        std::size_t bytes;
        std::function<void()> run;
    };

    void run() {
        std::unique_lock lock(mutex_);
        for (;;) {
            wake_.wait(lock, [this] { return stopped_ || !queue_.empty(); });
            if (stopped_) return;
            Job job = std::move(queue_.front());
            queue_.pop_front();
            lock.unlock();
            job.run();
            job.run = nullptr;  // what the job held goes before its bytes are released
            lock.lock();
            held_ -= job.bytes;
        }
    }

    mutable std::mutex mutex_;
    std::condition_variable wake_;
    std::deque<Job> queue_;
    std::vector<std::thread> threads_;
    std::size_t held_ = 0;
    const std::size_t maxHeld_;
    bool stopped_ = false;
};

}  // namespace uaplex::pipeline
