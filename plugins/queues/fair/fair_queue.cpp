// queues/fair: the fair request queue of the pipeline spec (section 3).
//
// With an admission provider every request holds leases: RequestQueue (1) and
// RequestQueueBytes (request_cost) from admission, ParkedRequest (1) for a parkable request
// when held Publish requests are decoupled, and RequestExecution (1) from dispatch until its
// park point or its end. Weighted mode keeps one FIFO per owner group and serves the groups
// in a round, each for as many turns as its weight; several workers select at once, each
// unlinking its candidate under the queue lock and running the checks outside it. Global
// FIFO mode (or no provider) keeps one FIFO and one selector, so a blocked head is never
// overtaken. A head refused execution goes back to its admission-order place and its owner
// is not retried until the version (admissions, removals, execution releases) moves on.
//
// Completion: whoever unlinks an entry owns it. The queue completes entries it unlinks for
// cancel, stop or a failed dispatch check; a dispatched entry is the caller's.
#include <condition_variable>
#include <deque>
#include <limits>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "uaplex/cpp/kinds.hpp"

namespace {

using uaplex::sdk::Context;
using uaplex::sdk::StatusError;

enum LeaseIndex { kQueueLease = 0, kBytesLease, kParkedLease, kExecLease, kLeaseCount };

// Per-entry state that outlives the link (leases are held until dispose). Slots are
// recycled through a free list, so the steady state does not allocate.
struct Slot {
    uaplex_request_entry* entry = nullptr;
    void* queue = nullptr;
    uint64_t seq = 0;
    uint64_t group = 0;
    uaplex_admission_lease leases[kLeaseCount]{};
    bool held[kLeaseCount]{};
    uint64_t registration = 0;
    bool registered = false;
    Slot* next_free = nullptr;
};

// One owner group's FIFO and its place in the round.
struct OwnerFifo {
    uint64_t group = 0;
    uaplex_request_entry* head = nullptr;
    uaplex_request_entry* tail = nullptr;
    uint32_t weight = 1;
    uint32_t turns = 1;
    uint64_t failed_version = 0;  // refused execution at this version (0: never)
    bool in_round = false;
    // Selections of this owner in flight (several may run at once; a refused one is
    // relinked in admission order). The FIFO is not freed while one runs.
    uint32_t selecting = 0;
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
        global_.in_round = true;
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

    ~FairQueue() override {
        for (auto& [g, f] : fifos_) delete f;
        while (Slot* s = free_) {
            free_ = s->next_free;
            delete s;
        }
    }

    uaplex_status start() override {
        ctx_.info(std::string(weighted_ ? "weighted" : "global FIFO") + " mode, max_queued " +
                  std::to_string(capacity_) + (adm_ ? ", with admission leases" : ""));
        return UAPLEX_Good;
    }

    uaplex_status stop() override {
        std::vector<uaplex_request_entry*> halted;
        {
            std::lock_guard lock(mutex_);
            stopped_ = true;
            stopped_flag_.store(true, std::memory_order_release);
            for (OwnerFifo* f : round_snapshot())
                while (f->head) halted.push_back(unlink_locked(f->head));
            while (global_.head) halted.push_back(unlink_locked(global_.head));
        }
        ready_.notify_all();
        for (auto* e : halted) finish(e, UAPLEX_BadServerHalted, true);
        return UAPLEX_Good;
    }

    uaplex_status enqueue(uaplex_request_entry* e) override {
        if (!e) return UAPLEX_BadInvalidArgument;
        // 1-3: fast paths; step 7 decides.
        if (is_cancelled(e)) return UAPLEX_BadRequestCancelledByClient;
        if (stopped_flag_.load(std::memory_order_acquire)) return UAPLEX_BadServerHalted;
        if (count_.load(std::memory_order_acquire) >= capacity_) return reject();
        Slot* s = alloc_slot();
        s->entry = e;
        s->queue = this;
        e->queue_private[kSlot] = s;
        e->queue_private[kLinked] = nullptr;
        // 5: the admission leases.
        if (adm_ && e->owner) {
            bool ok = acquire(s, kQueueLease, UAPLEX_STAGE_REQUEST_QUEUE, 1) &&
                      acquire(s, kBytesLease, UAPLEX_STAGE_REQUEST_QUEUE_BYTES,
                              static_cast<int64_t>(cost_));
            if (ok && decouple_ && (e->flags & UAPLEX_REQUEST_PARKABLE))
                ok = acquire(s, kParkedLease, UAPLEX_STAGE_PARKED_REQUEST, 1);
            if (!ok) {
                drop_slot(e);
                return reject();
            }
        }
        // 6: cancellation unlinks and completes the queued request.
        if (e->cancel && e->cancel->register_callback) {
            if (e->cancel->register_callback(e->cancel->self, &FairQueue::on_cancel, s,
                                             &s->registration) == UAPLEX_Good)
                s->registered = true;
        }
        // 7: decided under the lock; on failure the caller completes the request.
        uaplex_status st = UAPLEX_Good;
        {
            std::lock_guard lock(mutex_);
            if (stopped_)
                st = UAPLEX_BadServerHalted;
            else if (is_cancelled(e))
                st = UAPLEX_BadRequestCancelledByClient;
            else if (count_.load() >= capacity_)
                st = UAPLEX_BadServerTooBusy;
            else
                link_locked(e, s);  // 8
        }
        if (st != UAPLEX_Good) {
            unregister(s);
            drop_slot(e);
            if (st == UAPLEX_BadServerTooBusy) metric_add(m_rejected_, 1);
            return st;
        }
        metric_add(m_enqueued_, 1);
        ready_.notify_one();
        return UAPLEX_Good;
    }

    uaplex_status try_dequeue(uaplex_request_entry** out) override {
        if (!out) return UAPLEX_BadInvalidArgument;
        *out = nullptr;
        // Global FIFO: one selection at a time, so the blocked head is never overtaken.
        std::unique_lock<std::mutex> selector;
        if (!weighted_) selector = std::unique_lock(selector_mutex_);
        size_t budget = std::numeric_limits<size_t>::max();  // attempts in this pass
        for (;;) {
            uaplex_request_entry* e = nullptr;
            OwnerFifo* f = nullptr;
            uint64_t version = 0;
            std::vector<uaplex_request_entry*>* cancelled = &scratch_cancelled();
            {
                std::lock_guard lock(mutex_);
                if (stopped_) return UAPLEX_BadServerHalted;
                if (budget == std::numeric_limits<size_t>::max())
                    budget = weighted_ ? round_.size() : 1;
                if (budget == 0) return UAPLEX_BadNothingToDo;
                f = pick_locked(*cancelled);
                if (f) {
                    e = unlink_locked(f->head, false);
                    ++f->selecting;
                    version = version_;
                    if (f->turns > 0) --f->turns;  // the grant's weighted turn
                    if (f->turns == 0) rotate_locked(f);
                }
            }
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
                    --budget;  // one execution attempt per FIFO and pass
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
        for (;;) {
            uint64_t seen;
            {
                std::lock_guard lock(mutex_);
                seen = epoch_;
            }
            uaplex_status st = try_dequeue(out);
            if (st != UAPLEX_BadNothingToDo) return st;
            std::unique_lock lock(mutex_);
            // Woken by a version change (admission, removal, execution release) or stop.
            auto changed = [&] { return stopped_ || epoch_ != seen; };
            if (forever) {
                ready_.wait(lock, changed);
            } else if (!ready_.wait_until(lock, deadline, changed)) {
                return UAPLEX_BadTimeout;
            }
        }
    }

    uaplex_status cancel(uaplex_request_entry* e, uaplex_status status) override {
        return cancel_entry(e, status, true);
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
        {
            std::lock_guard lock(mutex_);
            if (e->queue_private[kLinked] != this) return UAPLEX_BadNotFound;
            unlink_locked(e);
        }
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

    Slot* alloc_slot() {
        {
            std::lock_guard lock(free_mutex_);
            if (Slot* s = free_) {
                free_ = s->next_free;
                *s = Slot{};
                return s;
            }
        }
        return new Slot();
    }
    void free_slot(Slot* s) {
        std::lock_guard lock(free_mutex_);
        s->next_free = free_;
        free_ = s;
    }

    uaplex_status reject() {
        metric_add(m_rejected_, 1);
        return UAPLEX_BadServerTooBusy;
    }

    uint64_t group_of(uaplex_request_entry* e) {
        uint64_t g = reinterpret_cast<uintptr_t>(e->owner);
        if (adm_ && e->owner &&
            adm_->hdr.struct_size >=
                offsetof(uaplex_admission_ops, owner_group) + sizeof(adm_->owner_group) &&
            adm_->owner_group) {
            uint64_t id = 0;
            if (adm_->owner_group(adm_self_, e->owner, &id) == UAPLEX_Good) g = id;
        }
        return g;
    }

    OwnerFifo* fifo_for(uaplex_request_entry* e, Slot* s) {
        if (!weighted_) return &global_;
        auto it = fifos_.try_emplace(s->group, nullptr).first;
        if (!it->second) {
            it->second = new OwnerFifo();
            it->second->group = s->group;
        }
        OwnerFifo* f = it->second;
        if (!f->in_round) {
            uint32_t cls = 0, weight = 1;
            if (adm_ && e->owner) adm_->owner_info(adm_self_, e->owner, &cls, &weight);
            f->weight = f->turns = std::max<uint32_t>(weight, 1);
            f->failed_version = 0;
            f->in_round = true;
            round_.push_back(f);
        }
        return f;
    }

    void link_locked(uaplex_request_entry* e, Slot* s) {
        s->seq = ++next_seq_;
        s->group = weighted_ ? group_of(e) : 0;
        OwnerFifo* f = fifo_for(e, s);
        e->queue_private[kPrev] = f->tail;
        e->queue_private[kNext] = nullptr;
        if (f->tail)
            f->tail->queue_private[kNext] = e;
        else
            f->head = e;
        f->tail = e;
        e->queue_private[kLinked] = this;
        count_.fetch_add(1);
        ++version_;
        ++epoch_;
        gauge(m_depth_, static_cast<int64_t>(count_.load()));
    }

    // Puts a head refused execution back at its admission-order place; its owner waits
    // for the next version and goes to the end of the round.
    void relink_refused(uaplex_request_entry* e, OwnerFifo* f, uint64_t version) {
        metric_add(m_refused_, 1);
        bool halted = false;
        {
            std::lock_guard lock(mutex_);
            if (stopped_) {
                halted = true;
            } else {
                Slot* s = slot(e);
                if (weighted_ && !f->in_round) {
                    f->in_round = true;
                    round_.push_back(f);
                }
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
                f->turns = f->weight;
                --f->selecting;
                if (weighted_) rotate_locked(f);
            }
        }
        if (halted) {
            done_selecting(f);
            finish(e, UAPLEX_BadServerHalted, true);
        }
    }

    // The owner's selection ended: its next head may be selected, so wake a waiter.
    void done_selecting(OwnerFifo* f) {
        bool wake = false;
        {
            std::lock_guard lock(mutex_);
            --f->selecting;
            if (f->head) {
                ++epoch_;
                wake = true;
            }
        }
        if (wake) ready_.notify_one();
    }

    // The first FIFO in round order whose owner has not failed at the current version.
    // Cancelled heads met on the way are unlinked into `cancelled` and use no turn.
    OwnerFifo* pick_locked(std::vector<uaplex_request_entry*>& cancelled) {
        auto usable = [&](OwnerFifo* f) {
            while (f->head && is_cancelled(f->head)) cancelled.push_back(unlink_locked(f->head));
            return f->head && f->failed_version != version_;
        };
        if (!weighted_) return usable(&global_) ? &global_ : nullptr;
        for (size_t i = 0; i < round_.size(); ++i) {
            OwnerFifo* f = round_[i];
            if (usable(f)) return f;
        }
        return nullptr;
    }

    // `removal`: a cancel or stop took the entry out (a new version); a selection is not one,
    // or an owner refused at this version would be retried at once.
    uaplex_request_entry* unlink_locked(uaplex_request_entry* e, bool removal = true) {
        OwnerFifo* f = weighted_ ? fifos_.at(slot(e)->group) : &global_;
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
        if (removal) {
            ++version_;
            ++epoch_;
        }
        if (weighted_ && !f->head) remove_from_round_locked(f);
        gauge(m_depth_, static_cast<int64_t>(count_.load()));
        return e;
    }

    void rotate_locked(OwnerFifo* f) {
        f->turns = f->weight;
        if (!weighted_ || !f->in_round) return;
        for (size_t i = 0; i < round_.size(); ++i)
            if (round_[i] == f) {
                round_.erase(round_.begin() + static_cast<std::ptrdiff_t>(i));
                break;
            }
        round_.push_back(f);
    }
    void remove_from_round_locked(OwnerFifo* f) {
        for (size_t i = 0; i < round_.size(); ++i)
            if (round_[i] == f) {
                round_.erase(round_.begin() + static_cast<std::ptrdiff_t>(i));
                break;
            }
        f->in_round = false;
        // Bound the groups kept for reuse: drop idle ones when there are many.
        if (fifos_.size() > 4 * size_t{capacity_} + 64) {
            for (auto it = fifos_.begin(); it != fifos_.end();)
                if (!it->second->in_round && it->second->selecting == 0 && it->second != f) {
                    delete it->second;
                    it = fifos_.erase(it);
                } else {
                    ++it;
                }
        }
    }
    std::vector<OwnerFifo*> round_snapshot() { return {round_.begin(), round_.end()}; }

    // Execution capacity changed: wake one waiter, unless nothing is queued.
    void bump_version() {
        {
            std::lock_guard lock(mutex_);
            ++version_;
            ++epoch_;
            if (count_.load() == 0) return;
        }
        ready_.notify_one();
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

    uint32_t capacity_;
    const uaplex_admission_ops* adm_ = nullptr;
    void* adm_self_ = nullptr;
    uint64_t cost_ = 0;
    bool decouple_ = false;
    bool weighted_ = false;

    std::mutex mutex_;  // the FIFOs, the round, the version
    std::condition_variable ready_;
    std::mutex selector_mutex_;  // global FIFO mode: one selection at a time
    bool stopped_ = false;
    std::atomic<bool> stopped_flag_{false};
    std::atomic<uint64_t> count_{0};
    uint64_t version_ = 1;  // admissions, removals, execution releases: failed marks expire
    uint64_t epoch_ = 0;    // every change a waiter may act on (version, ended selections)
    uint64_t next_seq_ = 0;
    OwnerFifo global_;
    std::unordered_map<uint64_t, OwnerFifo*> fifos_;
    // A vector, not a deque: rotating owners through a deque walks it forward and allocates
    // a new block every few dozen turns; the vector stops growing at the peak owner count.
    std::vector<OwnerFifo*> round_;

    std::mutex free_mutex_;
    Slot* free_ = nullptr;

    uaplex_metric* m_enqueued_ = nullptr;
    uaplex_metric* m_rejected_ = nullptr;
    uaplex_metric* m_refused_ = nullptr;
    uaplex_metric* m_depth_ = nullptr;
};

}  // namespace

UAPLEX_PLUGIN(("fair", "1.0.0", "Fair request queue: weighted across owners, or global FIFO"),
              uaplex::sdk::RequestQueueFactory<FairQueue>)
