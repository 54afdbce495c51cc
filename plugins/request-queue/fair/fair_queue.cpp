// SPDX-License-Identifier: Apache-2.0
// request-queue/fair: the fair request queue (docs/pipeline.md, Request queue).
//
// With an admission provider every request holds leases: RequestQueue (1) and
// RequestQueueBytes (request_cost) from admission, ParkedRequest (1) for a parkable request
// when held Publish requests are decoupled, and RequestExecution (1) from dispatch until its
// park point or its end. Weighted mode keeps one FIFO per owner group, each under its own
// lock, and serves the groups in rounds (deficit round robin): in a round each group has as
// many turns as its weight, taken one after the other; a group that used its turns waits in
// the next round's ring, and a round ends only when none of its groups is left in its ring
// or held by a worker, so a worker paused while holding a group never lets the others run
// ahead of the weights. Rings, round counter and counts are atomics, so requests of
// different groups share no lock. Global FIFO mode (or no provider) keeps one FIFO and one
// selector, so a blocked head is never overtaken. A head refused execution goes back to its
// admission-order place and its group waits, outside the rounds, until the version
// (admissions, removals, execution releases) moves on.
//
// Completion: whoever unlinks an entry owns it. The queue completes entries it unlinks for
// cancel, stop or a failed dispatch check; a dispatched entry is the caller's.
#include <linux/futex.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <bit>
#include <chrono>
#include <climits>
#include <ctime>
#include <limits>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <thread>
#include <vector>

#include "uaplex/cpp/clock.hpp"
#include "uaplex/cpp/kinds.hpp"
#include "uaplex/cpp/mpmc_ring.hpp"
#include "uaplex/cpp/spare_pool.hpp"

namespace {

using uaplex::sdk::Context;
using uaplex::sdk::StatusError;

enum LeaseIndex { kQueueLease = 0, kBytesLease, kParkedLease, kExecLease, kLeaseCount };

struct OwnerFifo;

// Per-entry state that outlives the link (leases are held until dispose). Slots are
// recycled through the queue's one lock-free free ring, so the steady state does not
// allocate and what is kept follows the requests in flight at once, not each group's peak
// (a group per session, most of them idle with a parked Publish).
struct Slot {
    uaplex_request_entry* entry = nullptr;
    void* queue = nullptr;
    OwnerFifo* fifo = nullptr;  // the group the entry was queued in (its free list too)
    uint64_t seq = 0;
    uaplex_admission_lease leases[kLeaseCount]{};
    bool held[kLeaseCount]{};
    uint64_t registration = 0;
    bool registered = false;
};

// Where a group is in the rounds (changed under its lock).
enum Where : int8_t { kIdle = -1, kRing0 = 0, kRing1 = 1, kFailed = 2 };

// One owner group's FIFO, its place in the rounds and its recycled slots. Its lock is taken
// only by requests of this group. Nodes live as long as the queue; an idle node is given to
// another group of its bucket when the bucket grows.
struct OwnerFifo {
    std::mutex mutex;
    std::atomic<uint64_t> group{0};
    std::atomic<bool> assigned{false};
    OwnerFifo* next_in_bucket = nullptr;  // set before publication, then constant
    uaplex_request_entry* head = nullptr;
    uaplex_request_entry* tail = nullptr;
    uint32_t weight = 1;
    uint32_t credits = 1;         // turns left in the current round
    uint64_t failed_version = 0;  // refused execution at this version (0: never)
    Where where = kIdle;
    uint32_t selecting = 0;  // selections in flight (a refused one is relinked)
    uint32_t pins = 0;       // enqueues between lookup and link: the node keeps its group
    uint64_t next_seq = 0;
};

// The group FIFOs' storage. A node lives as long as the queue (lookups walk a bucket without
// its lock), so nodes are made in mappings of their own, kChunkBytes each, never between the
// heap's blocks: made one by one on the thread that queues a group's first request (the
// transport's, among its connections' blocks) and kept after those are freed, each would keep
// a heap page resident after a burst of sessions is gone. Taken under a lock of its own, on
// a group's first request only.
class FifoArena {
  public:
    FifoArena() = default;
    FifoArena(const FifoArena&) = delete;
    FifoArena& operator=(const FifoArena&) = delete;
    ~FifoArena() {
        while (chunk_) {
            Chunk* next = chunk_->next;
            auto* nodes = nodesOf(chunk_);
            for (size_t i = 0; i < chunk_->used; ++i) nodes[i].~OwnerFifo();
            ::munmap(chunk_, kChunkBytes);
            chunk_ = next;
        }
    }
    OwnerFifo* make() {
        std::lock_guard lock(mutex_);
        if (!chunk_ || chunk_->used == kPerChunk) {
            void* m = ::mmap(nullptr, kChunkBytes, PROT_READ | PROT_WRITE,
                             MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
            if (m == MAP_FAILED) throw std::bad_alloc();
            chunk_ = new (m) Chunk{chunk_, 0};
        }
        return new (nodesOf(chunk_) + chunk_->used++) OwnerFifo();
    }

  private:
    struct Chunk {
        Chunk* next;
        size_t used;
    };
    static constexpr size_t kChunkBytes = 64 * 1024;
    static constexpr size_t kHeader =
        (sizeof(Chunk) + alignof(OwnerFifo) - 1) / alignof(OwnerFifo) * alignof(OwnerFifo);
    static constexpr size_t kPerChunk = (kChunkBytes - kHeader) / sizeof(OwnerFifo);
    static OwnerFifo* nodesOf(Chunk* c) {
        return reinterpret_cast<OwnerFifo*>(reinterpret_cast<unsigned char*>(c) + kHeader);
    }
    std::mutex mutex_;
    Chunk* chunk_ = nullptr;
};

// A ring of groups that waits for a place: a ring holds every group at most once, so it
// fills only past its size in distinct active groups.
class OwnerRing : public uaplex::sdk::MpmcRing<OwnerFifo*> {
  public:
    using MpmcRing::MpmcRing;
    void push_wait(OwnerFifo* f) {
        while (!push(f)) std::this_thread::yield();
    }
};

class FairQueue final : public uaplex::sdk::RequestQueue {
  public:
    FairQueue(Context ctx, const uaplex_request_queue_params& params)
        : RequestQueue(ctx, params), capacity_(params_.max_queued) {
        ctx.check_known_keys({"max_queued", "mode"});
        if (auto v = ctx.config_int("max_queued")) {
            if (*v <= 0 || *v > std::numeric_limits<uint32_t>::max())
                throw StatusError(UAPLEX_BadConfigurationError,
                                  "max_queued must be between 1 and 4294967295");
            capacity_ = static_cast<uint32_t>(*v);
        }
        if (capacity_ == 0) throw StatusError(UAPLEX_BadConfigurationError, "capacity is 0");
        adm_ = params_.admission;
        adm_self_ = params_.admission_self;
        cost_ = params_.request_cost;
        decouple_ = (params_.flags & UAPLEX_REQUEST_QUEUE_DECOUPLE_PARKED) != 0;
        if (adm_) {
            if (cost_ == 0)
                throw StatusError(UAPLEX_BadConfigurationError,
                                  "request_cost must be > 0 with an admission provider");
            int32_t fair = 1;
            if (adm_->use_fair_scheduling) adm_->use_fair_scheduling(adm_self_, &fair);
            weighted_ = fair != 0;
        }
        if (auto m = ctx.config_string("mode")) {
            if (*m == "fifo")
                weighted_ = false;
            else if (*m != "weighted")
                throw StatusError(UAPLEX_BadConfigurationError, "mode must be weighted or fifo");
        }
        if (weighted_) {
            // Groups in a ring have queued work (or had it): at most max_queued of them,
            // plus groups emptied by cancellation before a worker passes them.
            size_t ring = std::bit_ceil(std::min<uint64_t>(2 * uint64_t{capacity_} + 64, 1u << 16));
            for (auto& r : rings_) r = std::make_unique<OwnerRing>(ring);
            failed_ = std::make_unique<OwnerRing>(ring);
        }
        global_.assigned = true;
        // Slots in use: the queued requests and those between dequeue and dispose (at most
        // one per worker); more than fit are freed when they come back.
        free_slots_ = std::make_unique<SlotPool>(
            std::bit_ceil(std::min<uint64_t>(uint64_t{capacity_} + 256, 1u << 16)), kSlotReserve);
        auto reg = [&](const char* name, uint32_t kind) {
            uaplex_metric* m = nullptr;
            ctx.api()->metric_register(ctx.raw(), uaplex::sdk::to_str(name), kind, &m);
            return m;
        };
        m_enqueued_ = reg("enqueued", UAPLEX_METRIC_COUNTER);
        m_rejected_ = reg("rejected", UAPLEX_METRIC_COUNTER);
        m_refused_ = reg("execution_refused", UAPLEX_METRIC_COUNTER);
        m_depth_ = reg("depth", UAPLEX_METRIC_GAUGE);
    }

    ~FairQueue() override = default;  // the group FIFOs go with fifos_

    uaplex_status start() override {
        ctx_.info(std::string(weighted_ ? "weighted" : "global FIFO") + " mode, max_queued " +
                  std::to_string(capacity_) + (adm_ ? ", with admission leases" : ""));
        return UAPLEX_Good;
    }

    uaplex_status stop() override {
        stopped_.store(true);
        std::vector<uaplex_request_entry*> halted;
        auto halt = [&](OwnerFifo* f) {
            std::lock_guard lock(f->mutex);
            while (f->head) halted.push_back(unlink_locked(f, f->head));
        };
        halt(&global_);
        for (auto& b : buckets_)
            for (OwnerFifo* f = b.head.load(); f; f = f->next_in_bucket) halt(f);
        wake(INT_MAX);
        for (auto* e : halted) finish(e, UAPLEX_BadServerHalted, true);
        return UAPLEX_Good;
    }

    uaplex_status enqueue(uaplex_request_entry* e) override {
        if (!e) return UAPLEX_BadInvalidArgument;
        // 1-3: fast paths; step 7 decides.
        if (is_cancelled(e)) return UAPLEX_BadRequestCancelledByClient;
        if (stopped_.load(std::memory_order_acquire)) return UAPLEX_BadServerHalted;
        if (count_.load(std::memory_order_acquire) >= capacity_) return reject();
        // The group's FIFO, pinned to its group until the link, and a slot from it.
        OwnerFifo* f = &global_;
        Slot* s = nullptr;
        if (weighted_) {
            f = lock_group(group_of(e));
        } else {
            f->mutex.lock();
        }
        ++f->pins;
        f->mutex.unlock();
        s = pop_slot();
        s->entry = e;
        s->queue = this;
        s->fifo = f;
        e->queue_private[kLinked] = nullptr;
        std::atomic_ref<void*>(e->queue_private[kSlot]).store(s);
        // 5: the admission leases.
        bool ok = true;
        if (adm_ && e->owner) {
            ok = acquire(s, kQueueLease, UAPLEX_STAGE_REQUEST_QUEUE, 1) &&
                 acquire(s, kBytesLease, UAPLEX_STAGE_REQUEST_QUEUE_BYTES,
                         static_cast<int64_t>(cost_));
            if (ok && decouple_ && (e->flags & UAPLEX_REQUEST_PARKABLE))
                ok = acquire(s, kParkedLease, UAPLEX_STAGE_PARKED_REQUEST, 1);
        }
        // 6: cancellation unlinks and completes the queued request.
        if (ok && e->cancel && e->cancel->register_callback) {
            if (e->cancel->register_callback(e->cancel->self, &FairQueue::on_cancel, s,
                                             &s->registration) == UAPLEX_Good)
                s->registered = true;
        }
        // 7: decided under the group's lock; on failure the caller completes the request.
        uaplex_status st = ok ? UAPLEX_Good : UAPLEX_BadServerTooBusy;
        {
            std::lock_guard lock(f->mutex);
            --f->pins;
            if (st != UAPLEX_Good)
                ;
            else if (stopped_.load())
                st = UAPLEX_BadServerHalted;
            else if (is_cancelled(e))
                st = UAPLEX_BadRequestCancelledByClient;
            else if (!claim_place())
                st = UAPLEX_BadServerTooBusy;
            else
                link_locked(f, e, s);  // 8
        }
        if (st != UAPLEX_Good) {
            unregister(s);
            drop_slot(e);
            if (st == UAPLEX_BadServerTooBusy) metric_add(m_rejected_, 1);
            return st;
        }
        metric_add(m_enqueued_, 1);
        gauge(m_depth_, static_cast<int64_t>(count_.load()));
        version_.fetch_add(1);
        notify();
        return UAPLEX_Good;
    }

    uaplex_status try_dequeue(uaplex_request_entry** out) override {
        if (!out) return UAPLEX_BadInvalidArgument;
        *out = nullptr;
        // Global FIFO: one selection at a time, so the blocked head is never overtaken.
        std::unique_lock<std::mutex> selector;
        if (!weighted_) selector = std::unique_lock(selector_mutex_);
        size_t budget = std::numeric_limits<size_t>::max();  // refusals in this pass
        for (;;) {
            if (stopped_.load(std::memory_order_acquire)) return UAPLEX_BadServerHalted;
            if (budget == std::numeric_limits<size_t>::max())
                budget = weighted_ ? static_cast<size_t>(active_.load()) + 1 : 1;
            if (budget == 0) return UAPLEX_BadNothingToDo;
            std::vector<uaplex_request_entry*>* cancelled = &scratch_cancelled();
            uint64_t version = 0;
            uaplex_request_entry* e = nullptr;
            OwnerFifo* f = weighted_ ? pick_weighted(*cancelled, &e, &version)
                                     : pick_global(*cancelled, &e, &version);
            for (auto* c : *cancelled) finish(c, UAPLEX_BadRequestCancelledByClient, true);
            cancelled->clear();
            if (!e) return UAPLEX_BadNothingToDo;
            // 1. cancelled since it was picked.
            if (is_cancelled(e)) {
                done_selecting(f);
                finish(e, UAPLEX_BadRequestCancelledByClient, true);
                continue;
            }
            // 2. the kernel re-checks the owner and the session.
            if (params_.revalidate) {
                uaplex_status r = params_.revalidate(params_.user, e);
                if (r != UAPLEX_Good) {
                    done_selecting(f);
                    finish(e, r, true);
                    continue;
                }
            }
            // 3. the execution lease.
            auto* s = slot(e);
            if (adm_ && e->owner) {
                uint32_t reason = 0;
                auto& l = s->leases[kExecLease];
                l = uaplex_admission_lease{};
                l.hdr = UAPLEX_HEADER_INIT(uaplex_admission_lease, UAPLEX_STYPE_ADMISSION_LEASE);
                uaplex_status a = adm_->try_acquire(adm_self_, UAPLEX_STAGE_REQUEST_EXECUTION,
                                                    e->owner, 1, &l, &reason);
                if (a == UAPLEX_BadServerTooBusy) {
                    relink_refused(e, f, version);
                    --budget;  // one execution attempt per group and pass
                    continue;
                }
                if (a != UAPLEX_Good) {
                    ctx_.error("admission provider failed the execution grant");
                    done_selecting(f);
                    finish(e, UAPLEX_BadInternalError, true);
                    continue;
                }
                s->held[kExecLease] = true;
            }
            // Granted: the queue lease goes; cost, parked and execution stay with the entry.
            done_selecting(f);
            release_lease(s, kQueueLease);
            // Cancelled while the grant ran: never executed.
            if (is_cancelled(e)) {
                release_lease(s, kExecLease);
                bump_version();
                finish(e, UAPLEX_BadRequestCancelledByClient, true);
                continue;
            }
            unregister(s);
            *out = e;
            return UAPLEX_Good;
        }
    }

    uaplex_status dequeue(uint32_t timeout_ms, uaplex_request_entry** out) override {
        if (!out) return UAPLEX_BadInvalidArgument;
        const bool forever = timeout_ms == std::numeric_limits<uint32_t>::max();
        auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
        const uint32_t woken = wake_calls_.load();
        for (;;) {
            uint32_t seen = epoch_.load();
            uaplex_status st = try_dequeue(out);
            if (st != UAPLEX_BadNothingToDo) return st;
            trim_slots_when_idle();
            // Woken by a change a worker may act on (admission, removal, execution release,
            // a group handed back or a new round), stop or wake_waiters.
            waiters_.fetch_add(1);
            if (stopped_.load()) {
                waiters_.fetch_sub(1);
                continue;
            }
            if (wake_calls_.load() != woken) {
                waiters_.fetch_sub(1);
                return UAPLEX_BadTimeout;
            }
            if (forever) {
                futex_wait(seen, nullptr);
            } else {
                auto left = deadline - std::chrono::steady_clock::now();
                if (left <= std::chrono::nanoseconds(0)) {
                    waiters_.fetch_sub(1);
                    return UAPLEX_BadTimeout;
                }
                auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(left).count();
                timespec ts{static_cast<time_t>(ns / 1000000000),
                            static_cast<long>(ns % 1000000000)};
                futex_wait(seen, &ts);
            }
            waiters_.fetch_sub(1);
        }
    }

    uaplex_status cancel(uaplex_request_entry* e, uaplex_status status) override {
        return cancel_entry(e, status, true);
    }

    // The host retires this queue: every waiting dequeue returns (BadTimeout).
    uaplex_status wake_waiters() override {
        wake_calls_.fetch_add(1);
        wake(INT_MAX);
        return UAPLEX_Good;
    }

    uaplex_status count(uint64_t* out) override {
        if (!out) return UAPLEX_BadInvalidArgument;
        *out = count_.load();
        return UAPLEX_Good;
    }

    // The park point: the worker is free, so another request may run.
    uaplex_status release_execution(uaplex_request_entry* e) override {
        Slot* s = e ? slot(e) : nullptr;
        if (!s) return UAPLEX_BadInvalidArgument;
        if (release_lease(s, kExecLease)) bump_version();
        return UAPLEX_Good;
    }

    uaplex_status dispose(uaplex_request_entry* e) override {
        if (!e) return UAPLEX_BadInvalidArgument;
        Slot* s = take_slot(e);
        if (!s) return UAPLEX_Good;  // disposed already
        bool exec = release_lease(s, kExecLease);
        for (int i = 0; i < kLeaseCount; ++i) release_lease(s, i);
        free_slot(s);
        if (exec) bump_version();
        return UAPLEX_Good;
    }

  private:
    // queue_private words: previous, next, the slot, and this queue while linked.
    enum { kPrev = 0, kNext = 1, kSlot = 2, kLinked = 3 };
    static uaplex_request_entry* link(uaplex_request_entry* e, int which) {
        return static_cast<uaplex_request_entry*>(e->queue_private[which]);
    }
    static Slot* slot(uaplex_request_entry* e) {
        return static_cast<Slot*>(std::atomic_ref<void*>(e->queue_private[kSlot]).load());
    }
    static Slot* take_slot(uaplex_request_entry* e) {
        return static_cast<Slot*>(
            std::atomic_ref<void*>(e->queue_private[kSlot]).exchange(nullptr));
    }
    static bool is_cancelled(uaplex_request_entry* e) {
        return e->cancel && e->cancel->is_cancelled &&
               e->cancel->is_cancelled(e->cancel->self) != UAPLEX_Good;
    }

    static void on_cancel(void* user, uaplex_status) {
        auto* s = static_cast<Slot*>(user);
        // Inside the token's callback: the registration is spent, so no unregister.
        static_cast<FairQueue*>(s->queue)->cancel_entry(s->entry,
                                                        UAPLEX_BadRequestCancelledByClient, false);
    }

    uaplex_status cancel_entry(uaplex_request_entry* e, uaplex_status status, bool unreg) {
        if (!e) return UAPLEX_BadInvalidArgument;
        Slot* s = slot(e);
        if (!s) return UAPLEX_BadNotFound;
        OwnerFifo* f = s->fifo;
        {
            std::lock_guard lock(f->mutex);
            if (e->queue_private[kLinked] != this || slot(e) != s || s->fifo != f)
                return UAPLEX_BadNotFound;
            unlink_locked(f, e);
        }
        version_.fetch_add(1);
        epoch_.fetch_add(1);
        finish(e, status, unreg);
        return UAPLEX_Good;
    }

    // Completes an entry the queue unlinked itself: returns its leases first.
    void finish(uaplex_request_entry* e, uaplex_status status, bool unreg) {
        Slot* s = slot(e);
        if (s && unreg) unregister(s);
        bool exec = false;
        if (Slot* t = take_slot(e)) {
            exec = release_lease(t, kExecLease);
            for (int i = 0; i < kLeaseCount; ++i) release_lease(t, i);
            free_slot(t);
        }
        if (exec) bump_version();
        complete(e, status);
    }

    bool acquire(Slot* s, int index, uint32_t stage, int64_t amount) {
        auto& l = s->leases[index];
        l = uaplex_admission_lease{};
        l.hdr = UAPLEX_HEADER_INIT(uaplex_admission_lease, UAPLEX_STYPE_ADMISSION_LEASE);
        uint32_t reason = 0;
        if (adm_->try_acquire(adm_self_, stage, s->entry->owner, amount, &l, &reason) !=
            UAPLEX_Good)
            return false;
        s->held[index] = true;
        return true;
    }
    // Each lease goes back once; true if this call returned it.
    bool release_lease(Slot* s, int index) {
        if (!s->held[index]) return false;
        s->held[index] = false;
        adm_->release(adm_self_, &s->leases[index]);
        return true;
    }
    void unregister(Slot* s) {
        if (!s->registered) return;
        s->registered = false;
        s->entry->cancel->unregister_callback(s->entry->cancel->self, s->registration);
    }
    void drop_slot(uaplex_request_entry* e) {
        if (Slot* s = take_slot(e)) {
            for (int i = 0; i < kLeaseCount; ++i) release_lease(s, i);
            free_slot(s);
        }
    }

    Slot* pop_slot() {
        Slot* s = free_slots_->take();
        if (!s) return free_slots_->make();
        *s = Slot{};
        return s;
    }
    void free_slot(Slot* s) { free_slots_->put(s); }
    // A worker that finds nothing queued: at most every kSlotTrimMs, the slots a burst left
    // unused since the last look go back (their mappings with them).
    void trim_slots_when_idle() {
        int64_t now = uaplex::sdk::monotonic_ms();
        int64_t last = slots_trimmed_ms_.load(std::memory_order_relaxed);
        if (now - last < kSlotTrimMs ||
            !slots_trimmed_ms_.compare_exchange_strong(last, now, std::memory_order_relaxed))
            return;
        free_slots_->trim();
    }

    uaplex_status reject() {
        metric_add(m_rejected_, 1);
        return UAPLEX_BadServerTooBusy;
    }

    // A place below max_queued, claimed before the link.
    bool claim_place() {
        uint64_t n = count_.load();
        while (n < capacity_)
            if (count_.compare_exchange_weak(n, n + 1)) return true;
        return false;
    }

    uint64_t group_of(uaplex_request_entry* e) {
        uint64_t g = reinterpret_cast<uintptr_t>(e->owner);
        // owner_group was appended after the first 1.0 headers; absent: each owner is its own
        // group.
        const auto group = adm_ && e->owner
                               ? UAPLEX_FIELD_OR(adm_, uaplex_admission_ops, owner_group, nullptr)
                               : nullptr;
        if (group) {
            uint64_t id = 0;
            if (group(adm_self_, e->owner, &id) == UAPLEX_Good) g = id;
        }
        return g;
    }

    // The group's FIFO, locked. Found without a shared lock; a group seen for the first time
    // (or after its idle node was reused) takes its bucket's lock once.
    OwnerFifo* lock_group(uint64_t g) {
        Bucket& b = buckets_[(g * 0x9E3779B97F4A7C15ull) >> (64 - kBucketBits)];
        for (;;) {
            OwnerFifo* f = find(b, g);
            if (!f) break;
            f->mutex.lock();
            if (f->assigned.load() && f->group.load() == g) return f;
            f->mutex.unlock();  // reused for another group meanwhile
        }
        std::lock_guard lock(b.mutex);
        for (;;) {
            OwnerFifo* f = find(b, g);
            if (!f) break;
            f->mutex.lock();
            if (f->assigned.load() && f->group.load() == g) return f;
            f->mutex.unlock();
        }
        // Reuse an idle node of this bucket when the bucket has grown.
        size_t n = 0;
        for (OwnerFifo* f = b.head.load(); f; f = f->next_in_bucket) ++n;
        if (n >= kReuseAfter) {
            for (OwnerFifo* f = b.head.load(); f; f = f->next_in_bucket) {
                if (!f->mutex.try_lock()) continue;
                if (!f->assigned.load() ||
                    (f->where == kIdle && !f->head && f->selecting == 0 && f->pins == 0)) {
                    f->assigned.store(false);
                    f->group.store(g);
                    f->assigned.store(true);
                    f->next_seq = 0;
                    f->failed_version = 0;
                    return f;
                }
                f->mutex.unlock();
            }
        }
        auto* f = fifos_.make();
        f->group.store(g);
        f->assigned.store(true);
        f->mutex.lock();
        f->next_in_bucket = b.head.load();
        b.head.store(f);
        return f;
    }
    struct Bucket;
    static OwnerFifo* find(Bucket& b, uint64_t g) {
        for (OwnerFifo* f = b.head.load(); f; f = f->next_in_bucket)
            if (f->assigned.load() && f->group.load() == g) return f;
        return nullptr;
    }

    // Links at the tail; an idle group joins the current round.
    void link_locked(OwnerFifo* f, uaplex_request_entry* e, Slot* s) {
        s->seq = ++f->next_seq;
        e->queue_private[kPrev] = f->tail;
        e->queue_private[kNext] = nullptr;
        if (f->tail)
            f->tail->queue_private[kNext] = e;
        else
            f->head = e;
        f->tail = e;
        e->queue_private[kLinked] = this;
        if (!weighted_ || f->where != kIdle) return;
        uint32_t cls = 0, weight = 1;
        if (adm_ && e->owner) adm_->owner_info(adm_self_, e->owner, &cls, &weight);
        f->weight = f->credits = std::max<uint32_t>(weight, 1);
        f->failed_version = 0;
        join_round_locked(f, static_cast<int>(round_.load() & 1));
    }

    // Puts the group in ring `p`, counted in that round's groups before it is visible.
    void join_round_locked(OwnerFifo* f, int p) {
        f->where = static_cast<Where>(p);
        active_.fetch_add(1);
        pending_[p].fetch_add(1);
        rings_[p]->push_wait(f);
    }

    // The group leaves round ring `p` (emptied, or refused execution); the last group of
    // the round starts the next one.
    void leave_round(int p, uint64_t r) {
        active_.fetch_sub(1);
        if (pending_[p].fetch_sub(1) == 1) advance(r);
    }
    void advance(uint64_t r) {
        if (!round_.compare_exchange_strong(r, r + 1)) return;
        if (pending_[(r + 1) & 1].load() > 0) notify();
    }

    // Deficit round robin: the group with turns left in the current round, the one that
    // just had a turn first. Cancelled heads met on the way are unlinked into `cancelled`
    // and use no turn. Returns the group (its selection counted) with the unlinked head.
    OwnerFifo* pick_weighted(std::vector<uaplex_request_entry*>& cancelled,
                             uaplex_request_entry** out, uint64_t* version) {
        drain_failed();
        for (int guard = 0; guard < 1 << 20; ++guard) {
            uint64_t r = round_.load();
            int p = static_cast<int>(r & 1);
            OwnerFifo* f = front_[p].exchange(nullptr);
            if (!f) f = rings_[p]->pop();
            if (!f) {
                // Nothing left in this round: start the next once no group of it is held.
                if (pending_[p].load() == 0 && pending_[p ^ 1].load() > 0) {
                    advance(r);
                    continue;
                }
                return nullptr;
            }
            if (round_.load() != r) {  // taken from the next round's ring: put it back
                rings_[p]->push_wait(f);
                continue;
            }
            std::unique_lock lock(f->mutex);
            while (f->head && is_cancelled(f->head)) {
                cancelled.push_back(unlink_locked(f, f->head));
                version_.fetch_add(1);
                epoch_.fetch_add(1);
            }
            if (!f->head) {
                f->where = kIdle;
                lock.unlock();
                leave_round(p, r);
                continue;
            }
            uint64_t v = version_.load();
            if (f->failed_version == v) {
                // Refused execution at this version: out of the rounds until it moves on.
                f->where = kFailed;
                failed_count_.fetch_add(1);
                failed_->push_wait(f);
                lock.unlock();
                leave_round(p, r);
                continue;
            }
            *out = unlink_locked(f, f->head);
            ++f->selecting;
            *version = v;
            if (f->credits > 0) --f->credits;
            if (!f->head) {
                f->where = kIdle;
                lock.unlock();
                leave_round(p, r);
            } else if (f->credits > 0) {
                // Its next turn comes first (unless another group holds that place).
                OwnerFifo* expected = nullptr;
                if (!front_[p].compare_exchange_strong(expected, f)) rings_[p]->push_wait(f);
            } else {
                // Turns used: the group waits for the next round.
                f->credits = f->weight;
                f->where = static_cast<Where>(p ^ 1);
                pending_[p ^ 1].fetch_add(1);
                rings_[p ^ 1]->push_wait(f);
                lock.unlock();
                if (pending_[p].fetch_sub(1) == 1) advance(r);
            }
            return f;
        }
        return nullptr;
    }

    OwnerFifo* pick_global(std::vector<uaplex_request_entry*>& cancelled,
                           uaplex_request_entry** out, uint64_t* version) {
        OwnerFifo* f = &global_;
        std::lock_guard lock(f->mutex);
        while (f->head && is_cancelled(f->head)) {
            cancelled.push_back(unlink_locked(f, f->head));
            version_.fetch_add(1);
            epoch_.fetch_add(1);
        }
        uint64_t v = version_.load();
        if (!f->head || f->failed_version == v) return nullptr;
        *out = unlink_locked(f, f->head);
        ++f->selecting;
        *version = v;
        return f;
    }

    // Groups refused execution rejoin the current round once the version has moved on.
    void drain_failed() {
        if (failed_count_.load() == 0) return;
        uint64_t v = version_.load();
        if (drained_at_.exchange(v) == v) return;
        for (int64_t n = failed_count_.load(); n > 0; --n) {
            OwnerFifo* f = failed_->pop();
            if (!f) break;
            std::lock_guard lock(f->mutex);
            if (f->failed_version == version_.load() && f->head) {
                failed_->push_wait(f);  // refused at this version still
                continue;
            }
            failed_count_.fetch_sub(1);
            if (!f->head) {
                f->where = kIdle;
                continue;
            }
            f->credits = f->weight;
            join_round_locked(f, static_cast<int>(round_.load() & 1));
        }
    }

    // Puts a head refused execution back at its admission-order place; its group waits
    // for the next version.
    void relink_refused(uaplex_request_entry* e, OwnerFifo* f, uint64_t version) {
        metric_add(m_refused_, 1);
        bool halted = false;
        {
            std::lock_guard lock(f->mutex);
            if (stopped_.load()) {
                halted = true;
            } else {
                Slot* s = slot(e);
                uaplex_request_entry* after = nullptr;  // the last entry admitted before e
                for (auto* x = f->head; x && slot(x)->seq < s->seq; x = link(x, kNext)) after = x;
                uaplex_request_entry* before = after ? link(after, kNext) : f->head;
                e->queue_private[kPrev] = after;
                e->queue_private[kNext] = before;
                if (after)
                    after->queue_private[kNext] = e;
                else
                    f->head = e;
                if (before)
                    before->queue_private[kPrev] = e;
                else
                    f->tail = e;
                e->queue_private[kLinked] = this;
                count_.fetch_add(1);
                f->failed_version = version;
                f->credits = f->weight;
                --f->selecting;
                if (weighted_ && f->where == kIdle) {
                    // Emptied by this selection: it waits outside the rounds.
                    f->where = kFailed;
                    failed_count_.fetch_add(1);
                    failed_->push_wait(f);
                }
            }
        }
        if (halted) {
            done_selecting(f);
            finish(e, UAPLEX_BadServerHalted, true);
            return;
        }
        // The version moved on while the grant ran: the group may be retried at once.
        if (version_.load() != version) drained_at_.store(0);
    }

    // The group's selection ended: its next head may be selected, so wake a waiter.
    void done_selecting(OwnerFifo* f) {
        bool more = false;
        {
            std::lock_guard lock(f->mutex);
            --f->selecting;
            more = f->head != nullptr;
        }
        if (more) notify();
    }

    // Unlinks an entry of `f` (under its lock).
    uaplex_request_entry* unlink_locked(OwnerFifo* f, uaplex_request_entry* e) {
        auto* prev = link(e, kPrev);
        auto* next = link(e, kNext);
        if (prev)
            prev->queue_private[kNext] = next;
        else
            f->head = next;
        if (next)
            next->queue_private[kPrev] = prev;
        else
            f->tail = prev;
        e->queue_private[kPrev] = e->queue_private[kNext] = e->queue_private[kLinked] = nullptr;
        count_.fetch_sub(1);
        return e;
    }

    // Execution capacity changed: wake one waiter, unless nothing is queued.
    void bump_version() {
        version_.fetch_add(1);
        epoch_.fetch_add(1);
        if (count_.load() == 0) return;
        wake(1);
    }
    void notify() {
        epoch_.fetch_add(1);
        wake(1);
    }
    void wake(int n) {
        if (n == INT_MAX) epoch_.fetch_add(1);
        if (waiters_.load() == 0) return;
        syscall(SYS_futex, reinterpret_cast<uint32_t*>(&epoch_), FUTEX_WAKE_PRIVATE, n, nullptr,
                nullptr, 0);
    }
    void futex_wait(uint32_t seen, const timespec* ts) {
        syscall(SYS_futex, reinterpret_cast<uint32_t*>(&epoch_), FUTEX_WAIT_PRIVATE, seen, ts,
                nullptr, 0);
    }

    static std::vector<uaplex_request_entry*>& scratch_cancelled() {
        thread_local std::vector<uaplex_request_entry*> v;
        return v;
    }

    void metric_add(uaplex_metric* m, int64_t d) {
        if (m) ctx_.api()->metric_add(ctx_.raw(), m, d);
    }
    void gauge(uaplex_metric* m, int64_t v) {
        if (m) ctx_.api()->metric_set(ctx_.raw(), m, v);
    }

    static constexpr int kBucketBits = 8;
    // A bucket with this many FIFOs gives an idle one to a new group: a session with only
    // parked Publish requests is idle, so thousands of sessions need few FIFOs.
    static constexpr size_t kReuseAfter = 2;
    struct Bucket {
        std::mutex mutex;  // a group's first request only
        std::atomic<OwnerFifo*> head{nullptr};
    };

    uint32_t capacity_;
    const uaplex_admission_ops* adm_ = nullptr;
    void* adm_self_ = nullptr;
    uint64_t cost_ = 0;
    bool decouple_ = false;
    bool weighted_ = false;

    std::mutex selector_mutex_;  // global FIFO mode: one selection at a time
    std::atomic<bool> stopped_{false};
    alignas(64) std::atomic<uint64_t> count_{0};
    alignas(64) std::atomic<uint64_t> version_{1};  // admissions, removals, execution releases
    alignas(64) std::atomic<uint32_t> epoch_{0};    // futex word: every change a waiter may act on
    std::atomic<int32_t> waiters_{0};
    std::atomic<uint32_t> wake_calls_{0};  // wake_waiters calls: a dequeue that saw one returns
    OwnerFifo global_;
    FifoArena fifos_;  // the buckets' nodes; destroyed after every use of them
    Bucket buckets_[1 << kBucketBits];
    using SlotPool = uaplex::sdk::SparePool<Slot>;
    static constexpr size_t kSlotReserve = 64;
    static constexpr int64_t kSlotTrimMs = 250;
    std::unique_ptr<SlotPool> free_slots_;
    std::atomic<int64_t> slots_trimmed_ms_{0};

    // The rounds: ring round_ & 1 holds the current round's groups, the other ring the
    // groups that used their turns; pending_ counts each ring's groups, held ones included.
    alignas(64) std::atomic<uint64_t> round_{0};
    std::atomic<int64_t> pending_[2]{};
    std::atomic<OwnerFifo*> front_[2]{};
    std::atomic<int64_t> active_{0};
    std::unique_ptr<OwnerRing> rings_[2];
    std::unique_ptr<OwnerRing> failed_;  // groups refused execution, waiting for a new version
    std::atomic<int64_t> failed_count_{0};
    std::atomic<uint64_t> drained_at_{0};

    uaplex_metric* m_enqueued_ = nullptr;
    uaplex_metric* m_rejected_ = nullptr;
    uaplex_metric* m_refused_ = nullptr;
    uaplex_metric* m_depth_ = nullptr;
};

}  // namespace

UAPLEX_PLUGIN(("fair", "1.0.0", "Fair request queue: weighted across owners, or global FIFO"),
              uaplex::sdk::RequestQueueFactory<FairQueue>)
