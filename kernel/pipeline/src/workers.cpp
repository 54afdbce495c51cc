// SPDX-License-Identifier: Apache-2.0
// The workers (dequeue, execute through Dispatch, encode, send) and the deadline sweep.
#include <uaplex/pipeline/connection.hpp>
#include <uaplex/pipeline/pipeline.hpp>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include <chrono>
#include <limits>
#include <thread>

#include <uaplex/host/logging.hpp>
#include <uaplex/host/plugin_host.hpp>
#include <uaplex/security/crypto.hpp>
#include <uaplex/session/request_registry.hpp>
#include <uaplex/session/session_services.hpp>

namespace uaplex::pipeline {

using host::logger;
using ua::utcNow;

void Pipeline::workerLoop(Worker& w) {
    // OpenSSL sets up a thread's random generator on its first use: now, not inside the first
    // CreateSession this worker serves.
    std::uint8_t warm[1];
    security::randomBytes(warm);
    std::uint32_t fastEmpty = 0;
    while (running_.load(std::memory_order_relaxed)) {
        uaplex_request_entry* e = nullptr;
        host::PluginInstance* from = nullptr;
        // Waits until a request comes, stop() stops the queue or a swap retires it (the slot
        // bounds the wait on a queue that cannot be woken): no wake-up while idle.
        std::int64_t asked = monotonicMs();
        uaplex_status st =
            host_.requestQueue().dequeue(std::numeric_limits<uint32_t>::max(), &e, &from);
        if (st == UAPLEX_Good && e) {
            fastEmpty = 0;
            execute(*static_cast<PendingRequest*>(e->kernel_private), w, from);
        } else if (st == UAPLEX_BadServerHalted) {
            std::this_thread::sleep_for(std::chrono::milliseconds(20));  // no queue installed
        } else if (monotonicMs() - asked > 1) {
            fastEmpty = 0;  // it waited: a swap's wake-up or a bounded wait's end
        } else if (++fastEmpty > kFastEmptyDequeues) {
            // A queue whose dequeue returns at once without an entry (any status, also Good
            // with NULL) would spin the worker: it sleeps between tries instead.
            noteSpinningQueue(st);
            std::this_thread::sleep_for(std::chrono::milliseconds(kSpinBackoffMs));
        }
    }
}

void Pipeline::noteSpinningQueue(uaplex_status st) noexcept {
    if (spinLogged_.exchange(true, std::memory_order_relaxed)) return;
    try {
        logger()->error(
            "request_queue '{}': dequeue returns at once without a request (status "
            "0x{:08X}); workers back off {} ms between tries",
            host_.requestQueue().pluginName(), st, kSpinBackoffMs);
    } catch (...) {  // NOLINT(bugprone-empty-catch): logging is best effort here
    }
}

// After a bulk deletion gave the heap back (trimHeap), the worker's arena
// drops the blocks its largest request made it grow; otherwise one relaxed load.
static void shrinkAfterHeapTrim(Worker& w) noexcept {
    std::uint32_t n = heapTrimCount();
    if (n == w.heapTrims) return;
    w.heapTrims = n;
    w.arena.shrink();
}

void Pipeline::execute(PendingRequest& r, Worker& w, host::PluginInstance* queue) noexcept {
    std::int64_t waited = steadyNs() - r.queuedNs;
    queueWaits_.count(w.index, waited > 0 ? std::uint64_t(waited) : 0);
    auto c = std::move(r.connection);
    if (c->gone()) {
        host::RequestQueueSlot::dispose(queue, &r.entry);
        c->release(&r);
        return;
    }
    if (r.registry) r.registry->executing(r.tracked);
    session::RequestContext ctx{c->channelId(), monotonicMs(), utcNow(), c->endpointUrl,
                                &c->sessionCache};
    ctx.channelSecurity = c->channel.security();
    ctx.peer = c->peer;
    ctx.sharedChannel = c->httpsChannelId != 0;
    ctx.securityMode = c->channel.securityMode();
    ctx.admissionOwner = r.owner;
    RouteSource route{&c, r.secureRequestId};
    ctx.makeRoute = &RouteSource::make;
    ctx.routeUser = &route;
    DeferSource defer{&r, &c, queue};
    ctx.defer = &DeferSource::make;
    ctx.deferUser = &defer;
    w.arena.reset();
    w.out.clear();
    std::uint32_t handle = r.entry.request_handle;
    bool handedOver = false;
    // Expired while queued but dequeued before the sweep could unlink it: not executed.
    if (r.tracked.cancelStatus.load(std::memory_order_acquire) != UAPLEX_BadTimeout) {
        handle = dispatch_.execute(dispatch_.self, r.body.span(), ctx, w.arena, w.out);
        handedOver = w.out.size() == 0;  // Publish: answered later through its route
    }
    if (defer.parked) {
        // An asynchronous operation answers it (ParkedRequest), maybe already on another
        // thread: the request and its entry are no longer this worker's.
        if (w.out.allocator()) w.out.release();
        shrinkAfterHeapTrim(w);
        return;
    }
    // A request past its deadline answers BadTimeout, also when it expired while executing
    // (services are short and not interrupted; the result is dropped).
    if (!handedOver && r.tracked.cancelStatus.load(std::memory_order_acquire) == UAPLEX_BadTimeout)
        session::encodeFault(handle, UAPLEX_BadTimeout, ctx.utc, w.out);
    std::uint32_t requestId = r.secureRequestId;
    // Its leases go back before the response is sent, so that the next request can run.
    host::RequestQueueSlot::dispose(queue, &r.entry);
    if (handedOver) {
        c->release(&r);
        if (w.out.allocator()) w.out.release();
        shrinkAfterHeapTrim(w);
        return;
    }
    // The response is encoded: recycle the request before sending, so that the client's
    // next request finds it free (a request-response client then needs one per connection).
    c->release(&r);
    uaplex_status st = c->sendResponse(requestId, w.out.span(), w.chunks);
    if (st == UAPLEX_BadResponseTooLarge) {
        session::encodeFault(handle, UAPLEX_BadResponseTooLarge, ctx.utc, w.out);
        c->sendResponse(requestId, w.out.span(), w.chunks);
    }
    // The chunks hold their own copy: the encoding goes back to the pool.
    if (w.out.allocator()) w.out.release();
    shrinkAfterHeapTrim(w);
}

void Pipeline::deadlineLoop() {
    session::QueuedCanceller canceller{&Pipeline::unlinkQueued, this};
    while (deadlines_.waitForDeadlines()) {
        std::int64_t now = monotonicMs();
        std::uint32_t n = sessions_.expireRequests(now, canceller);
        {
            // The connection table's lock is taken by accept/close and this sweep only.
            std::lock_guard lock(connectionsMutex_);
            for (auto& [p, c] : connections_) n += c->requests.expire(now, canceller);
        }
        if (n) logger()->debug("{} request(s) past their TimeoutHint", n);
        std::this_thread::sleep_for(std::chrono::milliseconds(session::DeadlineMonitor::kPeriodMs));
    }
}

namespace {
std::atomic<std::uint32_t> heapTrims{0};
}  // namespace

void trimHeap() noexcept {
#if defined(__GLIBC__)
    ::malloc_trim(0);
#endif
    heapTrims.fetch_add(1, std::memory_order_relaxed);
}

std::uint32_t heapTrimCount() noexcept {
    return heapTrims.load(std::memory_order_relaxed);
}

}  // namespace uaplex::pipeline
