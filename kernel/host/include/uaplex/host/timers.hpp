// SPDX-License-Identifier: Apache-2.0
// One thread serves every plugin timer: a deadline-ordered set, so no timer costs a thread.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

namespace uaplex::host {

class TimerService {
  public:
    using Clock = std::chrono::steady_clock;
    using Fn = void (*)(void*);

    TimerService() { spare_.reserve(kSpareNodes); }  // the spares never grow
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
    using Timers = std::map<uint64_t, Timer>;
    // A timer that fired once or was cancelled leaves its node here for the next start: a
    // plugin that re-arms on every tick allocates nothing once warm (at most kSpareNodes kept).
    void recycle(Timers::node_type node);
    static constexpr std::size_t kSpareNodes = 64;

    Timers timers_;
    std::vector<Timers::node_type> spare_;
    uint64_t next_id_ = 1;
    uint64_t running_ = 0;  // id of the callback being run, 0 when none
    std::thread::id runner_id_;
    bool stopping_ = false;
    std::thread thread_;
};

}  // namespace uaplex::host
