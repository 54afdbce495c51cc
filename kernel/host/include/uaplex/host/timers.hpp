// SPDX-License-Identifier: Apache-2.0
// One thread serves every plugin timer: a deadline-ordered set, so no timer costs a thread.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <thread>

namespace uaplex::host {

class TimerService {
  public:
    using Clock = std::chrono::steady_clock;
    using Fn = void (*)(void*);

    TimerService() = default;
    ~TimerService();
    TimerService(const TimerService&) = delete;
    TimerService& operator=(const TimerService&) = delete;

    uint64_t start(std::chrono::milliseconds delay, std::chrono::milliseconds period, Fn fn,
                   void* user);
    // Returns when the callback is not running and never will again. Called from the
    // timer's own callback it only prevents further runs.
    void cancel(uint64_t id);
    size_t active() const;

  private:
    struct Timer {
        Clock::time_point due;
        std::chrono::milliseconds period;
        Fn fn;
        void* user;
    };
    void run();

    mutable std::mutex mutex_;
    std::condition_variable wake_;
    std::condition_variable idle_;
    std::map<uint64_t, Timer> timers_;
    uint64_t next_id_ = 1;
    uint64_t running_ = 0;  // id of the callback being run, 0 when none
    std::thread::id runner_id_;
    bool stopping_ = false;
    std::thread thread_;
};

}  // namespace uaplex::host
