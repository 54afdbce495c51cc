// SPDX-License-Identifier: Apache-2.0
// buffer-pool/bounded: the bounded transport buffer pool (docs/pipeline.md, Buffer pool).
//
// Arrays come in power-of-two buckets 16 ... L, where L is the bucket of a manager's
// MaxBufferSize plus its metadata bytes. Each bucket keeps at most C arrays in a bounded
// lock-free MPMC ring, with C = clamp(64 MiB / L, 1, 1024) in every bucket, so a pool never
// retains more than about 2 * C * L bytes. Nothing is allocated up front: a rent pops from
// its bucket or allocates, a return pushes if the bucket has room or frees, so retention
// follows the peak concurrency seen. Every trim_interval_ms (default 250) half of the arrays
// a bucket held unused through the whole interval are freed, so that a burst's arrays (a
// thousand handshakes at once) do not stay for good; a steady load keeps what it uses. The
// trim timer runs only while there is something to trim: an array kept by a return arms it,
// and it stops once the pools are empty and an interval passed without a return, so an idle
// server has no trim wake-up. One pool exists per distinct (L, C) in the process and every
// manager with that L shares it. Arrays of a page or more are anonymous mappings of their
// own, not C heap blocks: see allocate_array.
#include <malloc.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <chrono>
#include <condition_variable>
#include <cstdlib>

#include <map>
#include <memory>
#include <mutex>
#include <new>
#include <set>
#include <string>
#include <vector>

#include "uaplex/cpp/kinds.hpp"
#include "uaplex/cpp/mpmc_ring.hpp"

// The opaque ABI handle; a manager is this struct.
struct uaplex_buffer_manager {
    std::string name;
    uint32_t max_buffer_size = 0;
    uint32_t meta = 0;           // metadata bytes behind the usable area (cookie, allocation id)
    std::shared_ptr<void> pool;  // the shared BoundedArrayPool (type-erased for the ABI handle)
    void* instance = nullptr;    // the plugin instance that created it
    std::atomic<uint64_t> outstanding{0};  // arrays lent and not yet returned
};

namespace {

using uaplex::sdk::Context;
using uaplex::sdk::StatusError;

constexpr uint32_t kMinBucket = 16;
constexpr uint8_t kCookieFree = 0x5A;
constexpr uint8_t kCookieLocked = 0xA5;
constexpr uint8_t kCookieReturned = 0xFF;

uint64_t pow2ceil(uint64_t n) {
    return n <= kMinBucket ? kMinBucket : std::bit_ceil(n);
}

using BoundedRing = uaplex::sdk::MpmcRing<uint8_t*>;

uint64_t page_size() {
    static const uint64_t size = [] {
        long n = ::sysconf(_SC_PAGESIZE);
        return n > 0 ? static_cast<uint64_t>(n) : uint64_t{4096};
    }();
    return size;
}

// An array of `len` (a power of two) bytes. From a page up it is a mapping of its own: freed,
// it goes back to the system at once, and a burst of them (a thousand handshakes' chunks)
// leaves no holes in the C heap between the long-lived blocks allocated in the meantime.
uint8_t* allocate_array(uint64_t len) {
    if (len < page_size()) return static_cast<uint8_t*>(::operator new(len));
    void* p = ::mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) throw std::bad_alloc();
    return static_cast<uint8_t*>(p);
}
void free_array(uint8_t* p, uint64_t len) noexcept {
    if (len < page_size())
        ::operator delete(p);
    else
        ::munmap(p, len);
}

class BoundedArrayPool {
  public:
    BoundedArrayPool(uint64_t max_length, uint32_t per_bucket)
        : max_length_(max_length), per_bucket_(per_bucket) {
        // The ring is twice the bound (a one-cell ring cannot tell full from empty); the
        // bound itself is kept by the bucket's count.
        for (uint64_t len = kMinBucket; len <= max_length_; len <<= 1)
            buckets_.push_back(std::make_unique<Bucket>(2 * per_bucket_));
    }
    ~BoundedArrayPool() {
        uint64_t len = kMinBucket;
        for (auto& b : buckets_) {
            while (uint8_t* p = b->ring.pop()) free_array(p, len);
            len <<= 1;
        }
    }
    uint64_t max_length() const { return max_length_; }
    uint32_t per_bucket() const { return per_bucket_; }
    uint64_t retained_bytes() const { return retained_.load(std::memory_order_relaxed); }

    // An array of exactly bucket(n) bytes; *allocated tells whether it is new.
    uint8_t* rent(uint64_t n, bool* allocated) {
        uint64_t len = pow2ceil(n);
        if (len <= max_length_) {
            Bucket& b = *buckets_[index(len)];
            if (uint8_t* p = b.ring.pop()) {
                uint32_t left = b.held.fetch_sub(1, std::memory_order_relaxed) - 1;
                uint32_t low = b.low.load(std::memory_order_relaxed);
                while (left < low &&
                       !b.low.compare_exchange_weak(low, left, std::memory_order_relaxed)) {
                }
                retained_.fetch_sub(len, std::memory_order_relaxed);
                *allocated = false;
                return p;
            }
            b.low.store(0, std::memory_order_relaxed);
        }
        *allocated = true;
        return allocate_array(len);
    }
    // Keeps the array if its bucket has room; false when it was freed instead.
    bool give_back(uint8_t* p, uint64_t len) {
        if (len <= max_length_ && len >= kMinBucket && std::has_single_bit(len)) {
            Bucket& b = *buckets_[index(len)];
            // Claim a place below the bound first; the CAS never writes past it.
            uint32_t held = b.held.load(std::memory_order_relaxed);
            while (held < per_bucket_ &&
                   !b.held.compare_exchange_weak(held, held + 1, std::memory_order_relaxed)) {
            }
            if (held < per_bucket_) {
                retained_.fetch_add(len, std::memory_order_relaxed);
                if (b.ring.push(p)) return true;
                retained_.fetch_sub(len, std::memory_order_relaxed);  // not reached: ring is 2C
                b.held.fetch_sub(1, std::memory_order_relaxed);
            }
        }
        free_array(p, len);
        return false;
    }

    // Frees half (rounded up) of the arrays each bucket kept unused since the last call;
    // returns the bytes freed.
    uint64_t decay() {
        uint64_t freed = 0;
        uint64_t len = kMinBucket;
        for (auto& bp : buckets_) {
            Bucket& b = *bp;
            uint32_t idle =
                b.low.exchange(b.held.load(std::memory_order_relaxed), std::memory_order_relaxed);
            for (uint32_t n = (idle + 1) / 2; n > 0; --n) {
                uint8_t* p = b.ring.pop();
                if (!p) break;
                b.held.fetch_sub(1, std::memory_order_relaxed);
                retained_.fetch_sub(len, std::memory_order_relaxed);
                free_array(p, len);
                freed += len;
            }
            len <<= 1;
        }
        return freed;
    }

  private:
    static size_t index(uint64_t len) {
        return std::countr_zero(len) - std::countr_zero(kMinBucket);
    }
    uint64_t max_length_;
    uint32_t per_bucket_;
    struct Bucket {
        explicit Bucket(uint32_t ring_size) : ring(ring_size) {}
        BoundedRing ring;
        std::atomic<uint32_t> held{0};  // arrays in the ring or about to be pushed
        std::atomic<uint32_t> low{0};   // the fewest held since the last decay
    };
    std::vector<std::unique_ptr<Bucket>> buckets_;
    std::atomic<uint64_t> retained_{0};
};

// The process-wide registry: one pool per (L, C), shared by every manager that has that L.
// A pool lives as long as a manager uses it.
std::shared_ptr<BoundedArrayPool> shared_pool(uint64_t max_length, uint32_t per_bucket) {
    static std::mutex mutex;
    static std::map<std::pair<uint64_t, uint32_t>, std::weak_ptr<BoundedArrayPool>> pools;
    std::lock_guard lock(mutex);
    auto& slot = pools[{max_length, per_bucket}];
    if (auto p = slot.lock()) return p;
    auto p = std::make_shared<BoundedArrayPool>(max_length, per_bucket);
    slot = p;
    for (auto it = pools.begin(); it != pools.end();)
        it = it->second.expired() ? pools.erase(it) : std::next(it);
    return p;
}

// Set while a thread runs give_back: a budgeted take that would wait there fails instead,
// because the return it waits for could be its own caller's.
thread_local bool t_in_return = false;

class BoundedPool final : public uaplex::sdk::BufferPool {
  public:
    BoundedPool(Context ctx, const uaplex_buffer_pool_params& params) : BufferPool(ctx, params) {
        ctx.check_known_keys({"check", "max_outstanding_bytes", "max_bucket_bytes",
                              "max_arrays_per_bucket", "trim_interval_ms"});
        check_ = params_.check;
        if (auto v = ctx.config_string("check")) {
            if (*v == "auto")
                check_ = UAPLEX_BUFFER_CHECK_AUTO;
            else if (*v == "fast")
                check_ = UAPLEX_BUFFER_CHECK_FAST;
            else if (*v == "cookie")
                check_ = UAPLEX_BUFFER_CHECK_COOKIE;
            else if (*v == "tracing")
                check_ = UAPLEX_BUFFER_CHECK_TRACING;
            else
                throw StatusError(UAPLEX_BadConfigurationError,
                                  "check must be auto, fast, cookie or tracing");
        }
        if (check_ == UAPLEX_BUFFER_CHECK_AUTO) {
#ifdef NDEBUG
            check_ = UAPLEX_BUFFER_CHECK_FAST;
#else
            check_ = UAPLEX_BUFFER_CHECK_COOKIE;
#endif
        }
        if (check_ > UAPLEX_BUFFER_CHECK_TRACING)
            throw StatusError(UAPLEX_BadConfigurationError, "unknown check kind");
        budget_ = params_.max_outstanding_bytes;
        if (auto v = ctx.config_int("max_outstanding_bytes")) {
            if (*v < 0)
                throw StatusError(UAPLEX_BadConfigurationError,
                                  "max_outstanding_bytes must be >= 0 (0 = no limit)");
            budget_ = static_cast<uint64_t>(*v);
        }
        if (auto v = ctx.config_int("max_bucket_bytes")) {
            if (*v < kMinBucket)
                throw StatusError(UAPLEX_BadConfigurationError, "max_bucket_bytes must be >= 16");
            bucket_bytes_ = static_cast<uint64_t>(*v);
        }
        if (auto v = ctx.config_int("max_arrays_per_bucket")) {
            if (*v < 1 || *v > (1 << 20))
                throw StatusError(UAPLEX_BadConfigurationError,
                                  "max_arrays_per_bucket must be 1 ... 1048576");
            max_arrays_ = static_cast<uint32_t>(*v);
        }
        if (auto v = ctx.config_int("trim_interval_ms")) {
            if (*v < 0)
                throw StatusError(UAPLEX_BadConfigurationError,
                                  "trim_interval_ms must be >= 0 (0 = never)");
            trim_interval_ms_ = static_cast<uint64_t>(*v);
        }
        auto reg = [&](const char* name, uint32_t kind) {
            uaplex_metric* m = nullptr;
            ctx.api()->metric_register(ctx.raw(), uaplex::sdk::to_str(name), kind, &m);
            return m;
        };
        m_rents_ = reg("rents", UAPLEX_METRIC_COUNTER);
        m_returns_ = reg("returns", UAPLEX_METRIC_COUNTER);
        m_allocations_ = reg("allocations", UAPLEX_METRIC_COUNTER);
        m_discards_ = reg("discards", UAPLEX_METRIC_COUNTER);
        m_outstanding_ = reg("outstanding_bytes", UAPLEX_METRIC_GAUGE);
        m_retained_ = reg("retained_bytes", UAPLEX_METRIC_GAUGE);
        m_trim_ticks_ = reg("trim_ticks", UAPLEX_METRIC_COUNTER);
    }

    uaplex_status start() override {
        std::lock_guard lock(timer_mutex_);
        timers_stopped_ = trim_interval_ms_ == 0;
        // Returns arm the timer from now on (with trimming off they never try).
        trim_armed_.store(timers_stopped_, std::memory_order_seq_cst);
        return UAPLEX_Good;
    }

    uaplex_status stop() override {
        // Cancelled outside the lock: a tick still running takes it.
        std::vector<uaplex_timer*> timers;
        {
            std::lock_guard lock(timer_mutex_);
            timers_stopped_ = true;
            trim_armed_.store(true, std::memory_order_seq_cst);  // no return arms it again
            timers.swap(trim_timers_);
        }
        for (uaplex_timer* t : timers) ctx_.api()->timer_cancel(ctx_.raw(), t);
        {
            std::lock_guard lock(limiter_mutex_);
            disposed_ = true;
        }
        limiter_cv_.notify_all();
        return UAPLEX_Good;
    }

    uaplex_status manager_create(uaplex_str name, uint32_t max_buffer_size,
                                 uaplex_buffer_manager** out) override {
        if (!out || max_buffer_size == 0) return UAPLEX_BadInvalidArgument;
        auto m = std::make_unique<uaplex_buffer_manager>();
        m->name = std::string(uaplex::sdk::to_view(name));
        m->max_buffer_size = max_buffer_size;
        m->meta = meta_bytes();
        m->instance = this;
        uint64_t top = pow2ceil(uint64_t{max_buffer_size} + m->meta);
        uint64_t c = std::clamp<uint64_t>(bucket_bytes_ / top, 1, max_arrays_);
        c = std::bit_floor(c);  // the ring needs a power of two; exact for the defaults
        auto pool = shared_pool(top, static_cast<uint32_t>(c));
        m->pool = pool;
        {
            std::lock_guard lock(pools_mutex_);
            bool known = false;
            for (auto& w : pools_seen_) known = known || w.lock() == pool;
            if (!known) pools_seen_.push_back(pool);
        }
        uint32_t suggested = suggest(*m, max_buffer_size);
        if (suggested != max_buffer_size)
            ctx_.warn("manager '" + m->name + "': MaxBufferSize " +
                      std::to_string(max_buffer_size) + " does not fill its bucket; " +
                      std::to_string(suggested) + " would");
        *out = m.release();
        return UAPLEX_Good;
    }

    uaplex_status manager_destroy(uaplex_buffer_manager* m) override {
        if (!mine(m)) return UAPLEX_BadInvalidArgument;
        if (m->outstanding.load() != 0) return UAPLEX_BadInvalidState;
        delete m;
        return UAPLEX_Good;
    }

    uaplex_status suggested_size(uaplex_buffer_manager* m, uint32_t size, uint32_t* out) override {
        if (!mine(m) || !out) return UAPLEX_BadInvalidArgument;
        if (size > m->max_buffer_size) return UAPLEX_BadOutOfRange;
        *out = suggest(*m, size);
        return UAPLEX_Good;
    }

    uaplex_status expected_size(uaplex_buffer_manager* m, uint32_t size, uint32_t* out) override {
        if (!mine(m) || !out) return UAPLEX_BadInvalidArgument;
        if (size > m->max_buffer_size) return UAPLEX_BadOutOfRange;
        *out = static_cast<uint32_t>(
            std::min<uint64_t>(pow2ceil(uint64_t{size} + m->meta), UINT32_MAX));
        return UAPLEX_Good;
    }

    uaplex_status take(uaplex_buffer_manager* m, uint32_t size, const void* /*owner*/,
                       const uaplex_cancel_token* cancel, uaplex_buffer* out) override {
        if (!mine(m) || !out) return UAPLEX_BadInvalidArgument;
        // In this order: cancellation, then size, then the rent.
        if (uaplex_status c = cancelled(cancel); c != UAPLEX_Good) return c;
        if (size > m->max_buffer_size) return UAPLEX_BadOutOfRange;
        auto* pool = static_cast<BoundedArrayPool*>(m->pool.get());
        uint64_t want = uint64_t{size} + m->meta;
        uint64_t reservation = pow2ceil(want);
        if (budget_ != 0) {
            if (uaplex_status st = reserve(reservation, cancel); st != UAPLEX_Good) return st;
        }
        bool allocated = false;
        uint8_t* p = pool->rent(want, &allocated);
        uint64_t len = pow2ceil(want);
        metric_add(m_rents_, 1);
        if (allocated) metric_add(m_allocations_, 1);
        if (budget_ != 0) {
            std::lock_guard lock(limiter_mutex_);
            active_.emplace(p, len);
        }
        if (check_ != UAPLEX_BUFFER_CHECK_FAST) {
            p[len - 1] = kCookieFree;
            if (check_ == UAPLEX_BUFFER_CHECK_TRACING) {
                uint32_t id = next_allocation_id_.fetch_add(1, std::memory_order_relaxed);
                std::memcpy(p + len - 5, &id, 4);
                std::lock_guard lock(tracing_mutex_);
                traced_.insert(p);
            }
        }
        m->outstanding.fetch_add(1, std::memory_order_relaxed);
        outstanding_bytes_.fetch_add(len, std::memory_order_relaxed);
        gauge(m_outstanding_, static_cast<int64_t>(outstanding_bytes_.load()));
        out->hdr = UAPLEX_HEADER_INIT(uaplex_buffer, UAPLEX_STYPE_BUFFER);
        out->data = p;
        out->length = len - m->meta;
        out->used = 0;
        out->manager = m;
        out->pool_private[0] = pool;
        out->pool_private[1] = reinterpret_cast<void*>(static_cast<uintptr_t>(len));
        return UAPLEX_Good;
    }

    uaplex_status lock(uaplex_buffer* b) override {
        return flip(b, kCookieFree, kCookieLocked);
    }
    uaplex_status unlock(uaplex_buffer* b) override {
        return flip(b, kCookieLocked, kCookieFree);
    }

    uaplex_status give_back(uaplex_buffer* b, const void* /*owner*/) override {
        if (!b) return UAPLEX_BadInvalidArgument;
        if (!b->data) return UAPLEX_Good;
        uaplex_buffer_manager* m = b->manager;
        if (!mine(m) || b->pool_private[0] != m->pool.get()) return UAPLEX_BadInvalidState;
        uint8_t* p = b->data;
        auto len = static_cast<uint64_t>(reinterpret_cast<uintptr_t>(b->pool_private[1]));
        if (len != b->length + m->meta) return UAPLEX_BadInvalidState;
        t_in_return = true;
        struct Reset {
            ~Reset() { t_in_return = false; }
        } reset;
        if (budget_ != 0) {
            // Only a tracked, active array may come back; anything else changes no count.
            std::lock_guard lock(limiter_mutex_);
            auto it = active_.find(p);
            if (it == active_.end() || it->second != len) return UAPLEX_BadInvalidState;
        }
        if (check_ != UAPLEX_BUFFER_CHECK_FAST) {
            if (p[len - 1] != kCookieFree) return UAPLEX_BadInvalidState;
            if (check_ == UAPLEX_BUFFER_CHECK_TRACING) {
                std::lock_guard lock(tracing_mutex_);
                if (traced_.erase(p) == 0) return UAPLEX_BadInvalidState;
            }
            p[len - 1] = kCookieReturned;  // a second return of this array is detected
        }
        if (budget_ != 0) {
            {
                std::lock_guard lock(limiter_mutex_);
                active_.erase(p);
                reserved_ -= len;
            }
            limiter_cv_.notify_all();
        }
        m->outstanding.fetch_sub(1, std::memory_order_relaxed);
        outstanding_bytes_.fetch_sub(len, std::memory_order_relaxed);
        metric_add(m_returns_, 1);
        auto* pool = static_cast<BoundedArrayPool*>(m->pool.get());
        if (pool->give_back(p, len)) {
            // Two loads while the timer runs (a steady load keeps it running). The store is
            // ordered before the load of trim_armed_: a tick that stops sees it, or this
            // return sees the timer stopped and arms it.
            if (!returned_.load(std::memory_order_relaxed))
                returned_.store(true, std::memory_order_seq_cst);
            if (!trim_armed_.load(std::memory_order_seq_cst)) arm_trim();
        } else {
            metric_add(m_discards_, 1);
        }
        b->data = nullptr;
        b->length = 0;
        gauge(m_outstanding_, static_cast<int64_t>(outstanding_bytes_.load()));
        gauge(m_retained_, static_cast<int64_t>(pool->retained_bytes()));
        return UAPLEX_Good;
    }

    // Retained: bytes held by the pools this instance's managers use (shared pools count in
    // full); outstanding: bytes this instance lent and did not get back.
    uaplex_status stats(uint64_t* retained, uint64_t* outstanding) override {
        if (retained) {
            std::lock_guard lock(pools_mutex_);
            *retained = 0;
            for (auto& w : pools_seen_)
                if (auto p = w.lock()) *retained += p->retained_bytes();
        }
        if (outstanding) *outstanding = outstanding_bytes_.load();
        return UAPLEX_Good;
    }

  private:
    // The first return into empty pools starts the trim ticks (one-shot timers, each tick
    // starts the next); a transition only, never per return under a steady load.
    void arm_trim() {
        if (trim_armed_.exchange(true, std::memory_order_acq_rel)) return;
        std::lock_guard lock(timer_mutex_);
        start_tick_locked();
    }
    // Stays armed when stopped or when the timer cannot start: returns then never try.
    void start_tick_locked() {
        if (timers_stopped_) return;
        uaplex_timer* t = nullptr;
        if (ctx_.api()->timer_start(ctx_.raw(), trim_interval_ms_, 0, &BoundedPool::trim_tick, this,
                                    &t) == UAPLEX_Good)
            trim_timers_.push_back(t);
        else
            ctx_.warn("trim timer not started: idle arrays stay until the pool stops");
    }

    // The host's timer thread: idle arrays go, and once a burst's worth (1 MiB) has gone the
    // C allocator hands the free pages back to the kernel. Then the next tick is started,
    // unless the pools are empty and nothing came back during the interval.
    static void trim_tick(void* user) {
        auto& self = *static_cast<BoundedPool*>(user);
        std::lock_guard timers(self.timer_mutex_);
        // The ticks that fired before this one are done: their handles go (a timer is never
        // cancelled from its own callback). This tick's handle is the last one.
        for (size_t i = 0; i + 1 < self.trim_timers_.size(); ++i)
            self.ctx_.api()->timer_cancel(self.ctx_.raw(), self.trim_timers_[i]);
        if (self.trim_timers_.size() > 1)
            self.trim_timers_.erase(self.trim_timers_.begin(), self.trim_timers_.end() - 1);
        if (self.timers_stopped_) return;
        uint64_t freed = 0;
        uint64_t retained = 0;
        {
            std::lock_guard lock(self.pools_mutex_);
            for (auto& w : self.pools_seen_)
                if (auto p = w.lock()) freed += p->decay();
            retained = self.retained_total();
        }
        self.metric_add(self.m_trim_ticks_, 1);
        if (freed) self.gauge(self.m_retained_, static_cast<int64_t>(retained));
        self.untrimmed_ += freed;
        if (self.untrimmed_ >= (uint64_t{1} << 20)) {
            self.untrimmed_ = 0;
#if defined(__GLIBC__)
            ::malloc_trim(0);
#endif
        }
        bool returned = self.returned_.exchange(false, std::memory_order_seq_cst);
        if (returned || retained != 0) {
            self.start_tick_locked();
            return;
        }
        self.trim_armed_.store(false, std::memory_order_seq_cst);
        // A return that saw the timer still armed did not arm it: look once more.
        if (self.returned_.load(std::memory_order_seq_cst) || self.retained_now() != 0) {
            if (!self.trim_armed_.exchange(true, std::memory_order_acq_rel))
                self.start_tick_locked();
        }
    }
    uint64_t retained_now() {
        std::lock_guard lock(pools_mutex_);
        return retained_total();
    }
    uint64_t retained_total() {
        uint64_t total = 0;
        for (auto& w : pools_seen_)
            if (auto p = w.lock()) total += p->retained_bytes();
        return total;
    }

    uint32_t meta_bytes() const {
        switch (check_) {
            case UAPLEX_BUFFER_CHECK_COOKIE:
                return 1;
            case UAPLEX_BUFFER_CHECK_TRACING:
                return 5;
            default:
                return 0;
        }
    }
    bool mine(const uaplex_buffer_manager* m) const {
        return m && m->instance == this;
    }
    // p = bucket(n), r = bucket(n + m): ask for p - m when the metadata would spill into the
    // next bucket, so the rent fills its bucket exactly.
    static uint32_t suggest(const uaplex_buffer_manager& m, uint32_t n) {
        uint64_t p = pow2ceil(n), r = pow2ceil(uint64_t{n} + m.meta);
        return p != r ? static_cast<uint32_t>(p - m.meta) : n;
    }
    static uaplex_status cancelled(const uaplex_cancel_token* cancel) {
        if (!cancel || !cancel->is_cancelled) return UAPLEX_Good;
        uaplex_status s = cancel->is_cancelled(cancel->self);
        return s == UAPLEX_Good ? UAPLEX_Good : s;
    }
    uaplex_status flip(uaplex_buffer* b, uint8_t from, uint8_t to) {
        if (!b || !b->data || !b->manager) return UAPLEX_BadInvalidArgument;
        if (check_ == UAPLEX_BUFFER_CHECK_FAST) return UAPLEX_Good;
        auto len = static_cast<uint64_t>(reinterpret_cast<uintptr_t>(b->pool_private[1]));
        uint8_t& cookie = b->data[len - 1];
        if (cookie != from) return UAPLEX_BadInvalidState;
        cookie = to;
        return UAPLEX_Good;
    }
    // The process limiter: waits (cancellably) until `bytes` fit the budget.
    uaplex_status reserve(uint64_t bytes, const uaplex_cancel_token* cancel) {
        if (bytes > budget_) return UAPLEX_BadInvalidState;
        std::unique_lock lock(limiter_mutex_);
        while (!disposed_ && reserved_ + bytes > budget_) {
            if (t_in_return) return UAPLEX_BadInvalidState;
            // Cancellation tokens are polled: registering a callback per waiting take would
            // need the token's owner to outlive this call in every caller.
            limiter_cv_.wait_for(lock, std::chrono::milliseconds(2));
            if (uaplex_status c = cancelled(cancel); c != UAPLEX_Good) return c;
        }
        if (disposed_) return UAPLEX_BadShutdown;
        reserved_ += bytes;
        return UAPLEX_Good;
    }
    void metric_add(uaplex_metric* m, int64_t d) {
        if (m) ctx_.api()->metric_add(ctx_.raw(), m, d);
    }
    void gauge(uaplex_metric* m, int64_t v) {
        if (m) ctx_.api()->metric_set(ctx_.raw(), m, v);
    }

    uint32_t check_ = UAPLEX_BUFFER_CHECK_AUTO;
    uint64_t budget_ = 0;
    uint64_t bucket_bytes_ = uint64_t{64} << 20;  // retained bytes aimed at per bucket
    uint32_t max_arrays_ = 1024;
    uint64_t trim_interval_ms_ = 250;
    // The trim timer: armed while the pools hold arrays or returns come (see arm_trim).
    std::mutex timer_mutex_;                  // arming, the ticks and stop; never per return
    std::vector<uaplex_timer*> trim_timers_;  // one-shot handles; the last is the pending tick
    bool timers_stopped_ = true;              // before start, after stop, or interval 0
    std::atomic<bool> trim_armed_{true};      // a tick is pending (or trimming is off/stopped)
    std::atomic<bool> returned_{false};       // a return kept an array since the last tick
    uint64_t untrimmed_ = 0;  // timer thread: bytes freed since the last malloc_trim
    std::atomic<uint64_t> outstanding_bytes_{0};
    std::atomic<uint32_t> next_allocation_id_{1};

    std::mutex pools_mutex_;
    std::vector<std::weak_ptr<BoundedArrayPool>> pools_seen_;

    std::mutex limiter_mutex_;
    std::condition_variable limiter_cv_;
    uint64_t reserved_ = 0;
    bool disposed_ = false;
    std::map<uint8_t*, uint64_t> active_;

    std::mutex tracing_mutex_;
    std::set<uint8_t*> traced_;

    uaplex_metric* m_rents_ = nullptr;
    uaplex_metric* m_returns_ = nullptr;
    uaplex_metric* m_allocations_ = nullptr;
    uaplex_metric* m_discards_ = nullptr;
    uaplex_metric* m_outstanding_ = nullptr;
    uaplex_metric* m_retained_ = nullptr;
    uaplex_metric* m_trim_ticks_ = nullptr;
};

}  // namespace

UAPLEX_PLUGIN(("bounded", "1.0.0", "Bounded lock-free transport buffer pool"),
              uaplex::sdk::BufferPoolFactory<BoundedPool>)
