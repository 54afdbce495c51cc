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
    const Timer t{Clock::now() + delay, period, fn, user};
    if (spare_.empty()) {
        timers_[id] = t;
    } else {
        Timers::node_type node = std::move(spare_.back());
        spare_.pop_back();
        node.key() = id;
        node.mapped() = t;
        timers_.insert(std::move(node));
    }
    wake_.notify_all();
    return id;
}

void TimerService::cancel(uint64_t id) {
    std::unique_lock lock(mutex_);
    if (auto it = timers_.find(id); it != timers_.end()) recycle(timers_.extract(it));
    if (std::this_thread::get_id() == runner_id_) return;
    idle_.wait(lock, [&] { return running_ != id; });
}

void TimerService::recycle(Timers::node_type node) {
    if (spare_.size() < kSpareNodes) spare_.push_back(std::move(node));
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
            recycle(timers_.extract(next));
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
