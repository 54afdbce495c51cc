// SPDX-License-Identifier: Apache-2.0
#include <uaplex/host/timers.hpp>

namespace uaplex::host {

TimerService::~TimerService() {
    {
        std::lock_guard lock(mutex_);
        stopping_ = true;
    }
    wake_.notify_all();
    if (thread_.joinable()) thread_.join();
}

uint64_t TimerService::start(std::chrono::milliseconds delay, std::chrono::milliseconds period,
                             Fn fn, void* user) {
    std::lock_guard lock(mutex_);
    if (!thread_.joinable()) thread_ = std::thread([this] { run(); });
    uint64_t id = next_id_++;
    timers_[id] = Timer{Clock::now() + delay, period, fn, user};
    wake_.notify_all();
    return id;
}

void TimerService::cancel(uint64_t id) {
    std::unique_lock lock(mutex_);
    timers_.erase(id);
    if (std::this_thread::get_id() == runner_id_) return;
    idle_.wait(lock, [&] { return running_ != id; });
}

size_t TimerService::active() const {
    std::lock_guard lock(mutex_);
    return timers_.size();
}

void TimerService::run() {
    std::unique_lock lock(mutex_);
    runner_id_ = std::this_thread::get_id();
    while (!stopping_) {
        // The earliest deadline; a linear scan is fine for the handful of plugin timers.
        auto next = timers_.end();
        for (auto it = timers_.begin(); it != timers_.end(); ++it)
            if (next == timers_.end() || it->second.due < next->second.due) next = it;
        if (next == timers_.end()) {
            wake_.wait(lock);
            continue;
        }
        if (next->second.due > Clock::now()) {
            wake_.wait_until(lock, next->second.due);
            continue;
        }
        uint64_t id = next->first;
        Timer t = next->second;
        if (t.period.count() > 0) {
            next->second.due = t.due + t.period;
        } else {
            timers_.erase(next);
        }
        running_ = id;
        lock.unlock();
        t.fn(t.user);
        lock.lock();
        running_ = 0;
        idle_.notify_all();
    }
}

}  // namespace uaplex::host
