// SPDX-License-Identifier: Apache-2.0
#include "uaplex/conditions/delay_timer.hpp"

#include <chrono>

namespace uaplex::conditions {

namespace {

void initHead(DelayEntry& head) noexcept {
    if (head.next == nullptr) head.prev = head.next = &head;
}

void pushBack(DelayEntry& head, DelayEntry& e) noexcept {
    initHead(head);
    e.prev = head.prev;
    e.next = &head;
    head.prev->next = &e;
    head.prev = &e;
}

}  // namespace

DelayTimer::~DelayTimer() {
    stop();
}

void DelayTimer::unlink(DelayEntry& e) noexcept {
    e.prev->next = e.next;
    e.next->prev = e.prev;
    e.prev = e.next = nullptr;
}

void DelayTimer::schedule(DelayEntry& e, ua::DateTime at) noexcept {
    bool wake = false;
    {
        std::lock_guard lock(mutex_);
        if (e.next != nullptr) {
            unlink(e);
            --pending_;
        }
        e.at = at;
        if (at == 0) return;
        // A deadline in a slot run() has passed already is due at its next run.
        if (at / kResolution <= lastTick_)
            pushBack(due_, e);
        else
            pushBack(slots_[slotOf(at)], e);
        wake = pending_++ == 0;
    }
    if (wake) cv_.notify_all();
}

void DelayTimer::run(ua::DateTime now) {
    std::unique_lock lock(mutex_);
    const std::int64_t nowTick = now / kResolution;
    // The slots from the last visit to now, each once at most (a slot holds the deadlines of
    // every turn: those of a later turn stay).
    std::int64_t from = lastTick_ + 1;
    if (nowTick - lastTick_ >= std::int64_t(kSlots)) from = nowTick - std::int64_t(kSlots) + 1;
    for (std::int64_t t = from; t <= nowTick; ++t) {
        DelayEntry& head = slots_[std::size_t(std::uint64_t(t) % kSlots)];
        if (head.next == nullptr) continue;
        for (DelayEntry* e = head.next; e != &head;) {
            DelayEntry* next = e->next;
            if (e->at <= now) {
                unlink(*e);
                pushBack(due_, *e);
            }
            e = next;
        }
    }
    // The current slot may hold deadlines later in this tick: it is visited again next time.
    if (nowTick - 1 > lastTick_) lastTick_ = nowTick - 1;
    initHead(due_);
    while (due_.next != &due_) {
        DelayEntry& e = *due_.next;
        unlink(e);
        e.at = 0;
        --pending_;
        lock.unlock();
        fire_(user_, e, now);
        lock.lock();
    }
}

void DelayTimer::start() {
    std::lock_guard lock(mutex_);
    if (!thread_.joinable() && !stop_) thread_ = std::thread([this] { loop(); });
}

void DelayTimer::stop() noexcept {
    {
        std::lock_guard lock(mutex_);
        stop_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();
}

std::size_t DelayTimer::pending() const noexcept {
    std::lock_guard lock(mutex_);
    return pending_;
}

void DelayTimer::loop() {
    std::unique_lock lock(mutex_);
    while (!stop_) {
        if (pending_ == 0) {
            cv_.wait(lock, [&] { return stop_ || pending_ > 0; });
            continue;
        }
        if (cv_.wait_for(lock, std::chrono::microseconds(kResolution / 10), [&] { return stop_; }))
            break;
        lock.unlock();
        run(ua::utcNow());
        lock.lock();
    }
}

}  // namespace uaplex::conditions
