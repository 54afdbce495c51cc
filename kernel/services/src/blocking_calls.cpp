// SPDX-License-Identifier: Apache-2.0
#include "blocking_calls.hpp"

#include <dlfcn.h>

#include <uaplex/host/logging.hpp>

#include "async_operations.hpp"

namespace uaplex::services {

BlockingCalls::BlockingCalls(CompletionTable& completions, std::uint32_t capacity,
                             std::chrono::milliseconds stopBound)
    : completions_(completions), capacity_(capacity ? capacity : 1), stopBound_(stopBound) {}

BlockingCalls::~BlockingCalls() {
    stop();
}

void BlockingCalls::addLane(const void* ctx, const void* code, const std::string& name,
                            std::uint32_t threads) {
    auto lane = std::make_unique<Lane>();
    lane->ctx = ctx;
    lane->code = code;
    lane->name = name;
    lane->ring.resize(capacity_);
    Lane& l = *lane;
    lanes_.push_back(std::move(lane));
    l.threads.reserve(threads);
    for (std::uint32_t i = 0; i < threads; ++i) {
        {
            std::lock_guard lock(l.mutex);
            ++l.running;
        }
        l.threads.emplace_back([this, &l] { run(l); });
    }
}

bool BlockingCalls::submit(AsyncPart* part, AsyncRequest* request) noexcept {
    const void* ctx = part->owner != nullptr ? part->owner->ctx : part->node->callbacks.owner;
    Lane* lane = laneOf(ctx);
    if (lane == nullptr) return false;
    {
        std::lock_guard lock(lane->mutex);
        if (lane->stopping || lane->count == lane->ring.size()) return false;
        lane->ring[(lane->head + lane->count) % lane->ring.size()] = Job{part, request};
        ++lane->count;
    }
    lane->wake.notify_one();
    return true;
}

void BlockingCalls::run(Lane& lane) noexcept {
    std::unique_lock lock(lane.mutex);
    for (;;) {
        lane.wake.wait(lock, [&] { return lane.stopping || lane.count > 0; });
        if (lane.stopping) break;  // stop() answers what is still queued
        Job job = lane.ring[lane.head];
        lane.head = (lane.head + 1) % lane.ring.size();
        --lane.count;
        ++lane.busy;
        lock.unlock();
        execute(job, lane);
        lock.lock();
        --lane.busy;
    }
    --lane.running;
    lane.idle.notify_all();
}

void BlockingCalls::execute(const Job& job, Lane& lane) noexcept {
    AsyncPart& p = *job.part;
    AsyncRequest& r = *job.request;
    const uaplex_completion c = p.completion;
    // Answered otherwise meanwhile (its TimeoutHint passed, cancelled, session closed): the
    // device is not asked for a result nobody waits for.
    uaplex_status st = c.status(c.self, c.token);
    if (st == UAPLEX_Good) {
        switch (p.kind) {
            case AsyncPart::Kind::OwnerRead:
                st = storeCallback("read", [&] {
                    return p.owner->ops->read(p.owner->self, p.count,
                                              static_cast<const uaplex_read_item*>(p.items),
                                              p.results, p.statuses);
                });
                break;
            case AsyncPart::Kind::StoreRead: {
                ua::DataValue& out = r.readResults[p.index];
                out = ua::DataValue{};
                st = storeCallback("read", [&] {
                    return p.node->callbacks.read(p.node->callbacks.user, &p.node->id, &r.alloc,
                                                  &out);
                });
                break;
            }
            case AsyncPart::Kind::OwnerWrite:
                st = storeCallback("write", [&] {
                    return p.owner->ops->write(p.owner->self, p.count,
                                               static_cast<const uaplex_write_item*>(p.items),
                                               p.statuses);
                });
                break;
            case AsyncPart::Kind::StoreWrite:
                st = storeCallback("write", [&] {
                    return p.node->callbacks.write(p.node->callbacks.user, &p.node->id, &p.value);
                });
                break;
            case AsyncPart::Kind::OwnerCall: {
                const auto& m = *static_cast<const ua::CallMethodRequest*>(p.items);
                st = storeCallback("call", [&] {
                    return p.owner->ops->call(p.owner->self, &m.objectId, &m.methodId, p.count,
                                              m.inputArguments.data, &r.alloc, p.statuses,
                                              &p.outCount, &p.outputs);
                });
                break;
            }
            case AsyncPart::Kind::OwnerBrowse: {
                PendingBrowse& b = *p.browse;
                st = storeCallback("browse", [&] {
                    return p.owner->ops->browse(p.owner->self, b.nodeId,
                                                std::uint32_t(b.cp.direction), b.referenceType,
                                                b.cp.includeSubtypes, b.sink, &b);
                });
                break;
            }
            default:
                st = UAPLEX_BadInternalError;
                break;
        }
    }
    // A thread left behind at stop completes nothing: the table may be gone.
    std::lock_guard lock(lane.mutex);
    if (!lane.abandoned) completions_.completeNow(c, st);
}

void BlockingCalls::stop() noexcept {
    if (stopped_) return;
    stopped_ = true;
    for (auto& owned : lanes_) {
        Lane& lane = *owned;
        std::unique_lock lock(lane.mutex);
        lane.stopping = true;
        lane.wake.notify_all();
        // What no thread took is answered now, without calling the plugin.
        while (lane.count > 0) {
            const Job job = lane.ring[lane.head];
            lane.head = (lane.head + 1) % lane.ring.size();
            --lane.count;
            completions_.completeNow(job.part->completion, UAPLEX_BadServerHalted);
        }
        const bool exited = lane.idle.wait_for(lock, stopBound_, [&] { return lane.running == 0; });
        if (!exited) lane.abandoned = true;
        lock.unlock();
        if (exited) {
            for (auto& t : lane.threads) t.join();
            continue;
        }
        for (auto& t : lane.threads) t.detach();
        // The threads may return into the plugin's code: its library stays loaded, and the
        // lane they use is kept.
        Dl_info info{};
        if (lane.code != nullptr && dladdr(lane.code, &info) != 0 && info.dli_fname != nullptr)
            (void)dlopen(info.dli_fname, RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE);
        try {
            host::logger()->warn(
                "node manager '{}': a blocking call did not return within "
                "sampling_stop_timeout_ms ({} ms); its thread is left behind",
                lane.name, stopBound_.count());
        } catch (...) {  // NOLINT(bugprone-empty-catch): logging is best effort here
        }
        (void)owned.release();
    }
}

}  // namespace uaplex::services
