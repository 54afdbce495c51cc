// SPDX-License-Identifier: Apache-2.0
#include "uaplex/pipeline/buffer_pool.hpp"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <memory>
#include <new>
#include <string>

#include <uaplex/host/logging.hpp>

// One size class. Free blocks form a stack of slot indices (1-based; 0 = empty) whose head
// carries a version tag in its upper 32 bits, so a pop racing with pop-push cannot succeed
// on a stale head (ABA).
struct uaplex_buffer_manager {
    uaplex_buffer_manager(std::uint32_t size, std::uint32_t slots)
        : maxBufferSize(size),
          capacity(slots),
          blocks(new std::uint8_t*[slots]()),
          next(new std::atomic<std::uint32_t>[slots]) {}
    ~uaplex_buffer_manager() {
        for (std::uint32_t i = 0; i < std::min(created.load(), capacity); ++i) delete[] blocks[i];
    }
    std::string name;
    std::uint32_t maxBufferSize;
    std::uint32_t capacity;
    std::unique_ptr<std::uint8_t*[]> blocks;  // written once per slot, before first use
    std::unique_ptr<std::atomic<std::uint32_t>[]> next;
    std::atomic<std::uint64_t> head{0};
    std::atomic<std::uint32_t> created{0};
    std::atomic<std::uint64_t> outstanding{0};

    std::uint32_t pop() noexcept {
        std::uint64_t h = head.load(std::memory_order_acquire);
        for (;;) {
            std::uint32_t idx = std::uint32_t(h);
            if (idx == 0) return 0;
            std::uint32_t n = next[idx - 1].load(std::memory_order_relaxed);
            std::uint64_t nh = std::uint64_t(n) | (((h >> 32) + 1) << 32);
            if (head.compare_exchange_weak(h, nh, std::memory_order_acq_rel,
                                           std::memory_order_acquire))
                return idx;
        }
    }
    void push(std::uint32_t idx) noexcept {
        std::uint64_t h = head.load(std::memory_order_relaxed);
        for (;;) {
            next[idx - 1].store(std::uint32_t(h), std::memory_order_relaxed);
            std::uint64_t nh = std::uint64_t(idx) | (((h >> 32) + 1) << 32);
            if (head.compare_exchange_weak(h, nh, std::memory_order_release,
                                           std::memory_order_relaxed))
                return;
        }
    }
};

namespace uaplex::pipeline {

struct PoolOps {
    static KernelBufferPool& pool(void* self) { return *static_cast<KernelBufferPool*>(self); }

    static uaplex_status start(void*) { return UAPLEX_Good; }
    static uaplex_status stop(void*) { return UAPLEX_Good; }
    static uaplex_status destroy(void*) { return UAPLEX_Good; }

    static uaplex_status managerCreate(void* self, uaplex_str name, uint32_t maxSize,
                                       uaplex_buffer_manager** out) {
        auto& p = pool(self);
        auto* m = new (std::nothrow) uaplex_buffer_manager(maxSize, p.maxRetained_);
        if (!m) return UAPLEX_BadOutOfMemory;
        m->name.assign(name.data ? name.data : "", name.len);
        std::lock_guard lock(p.managersMutex_);
        p.managers_.push_back(m);
        *out = m;
        return UAPLEX_Good;
    }
    static uaplex_status managerDestroy(void* self, uaplex_buffer_manager* m) {
        if (m->outstanding.load() != 0) return UAPLEX_BadInvalidState;
        auto& p = pool(self);
        std::lock_guard lock(p.managersMutex_);
        p.managers_.erase(std::remove(p.managers_.begin(), p.managers_.end(), m),
                          p.managers_.end());
        delete m;
        return UAPLEX_Good;
    }
    static uaplex_status suggestedSize(void*, uaplex_buffer_manager* m, uint32_t size,
                                       uint32_t* out) {
        if (size > m->maxBufferSize) return UAPLEX_BadOutOfRange;
        *out = m->maxBufferSize;
        return UAPLEX_Good;
    }
    static uaplex_status take(void*, uaplex_buffer_manager* m, uint32_t size, const void*,
                              const uaplex_cancel_token*, uaplex_buffer* out) {
        if (size > m->maxBufferSize) return UAPLEX_BadOutOfRange;
        std::uint8_t* data = nullptr;
        std::uint32_t slot = m->pop();
        if (slot != 0) {
            data = m->blocks[slot - 1];
        } else if (m->created.load(std::memory_order_relaxed) < m->capacity) {
            std::uint32_t i = m->created.fetch_add(1);
            if (i < m->capacity) {
                // On failure the slot stays empty for good (never handed out twice).
                data = new (std::nothrow) std::uint8_t[m->maxBufferSize];
                if (!data) return UAPLEX_BadOutOfMemory;
                m->blocks[i] = data;
                slot = i + 1;
            }
        }
        if (data == nullptr) {  // beyond the retained blocks: a one-off block
            data = new (std::nothrow) std::uint8_t[m->maxBufferSize];
            if (!data) return UAPLEX_BadOutOfMemory;
        }
        m->outstanding.fetch_add(1, std::memory_order_relaxed);
        out->hdr = UAPLEX_HEADER_INIT(uaplex_buffer, UAPLEX_STYPE_BUFFER);
        out->data = data;
        out->length = m->maxBufferSize;
        out->used = 0;
        out->manager = m;
        out->pool_private[0] = reinterpret_cast<void*>(std::uintptr_t(slot));
        out->pool_private[1] = nullptr;
        return UAPLEX_Good;
    }
    static uaplex_status transfer(void*, uaplex_buffer*, const void*) { return UAPLEX_Good; }
    static uaplex_status lockFn(void*, uaplex_buffer*) { return UAPLEX_Good; }
    static uaplex_status giveBack(void*, uaplex_buffer* b, const void*) {
        if (!b->data) return UAPLEX_Good;
        auto* m = b->manager;
        auto slot = std::uint32_t(reinterpret_cast<std::uintptr_t>(b->pool_private[0]));
        if (slot != 0)
            m->push(slot);
        else
            delete[] b->data;
        m->outstanding.fetch_sub(1, std::memory_order_relaxed);
        b->data = nullptr;
        return UAPLEX_Good;
    }
    static uaplex_status stats(void* self, uint64_t* retained, uint64_t* outstanding) {
        pool(self).stats(*retained, *outstanding);
        return UAPLEX_Good;
    }
};

const uaplex_buffer_pool_ops* KernelBufferPool::ops() noexcept {
    static const uaplex_buffer_pool_ops table{
        UAPLEX_HEADER_INIT(uaplex_buffer_pool_ops, UAPLEX_STYPE_BUFFER_POOL_OPS),
        &PoolOps::start,
        &PoolOps::stop,
        &PoolOps::destroy,
        &PoolOps::managerCreate,
        &PoolOps::managerDestroy,
        &PoolOps::suggestedSize,
        &PoolOps::suggestedSize,
        &PoolOps::take,
        &PoolOps::transfer,
        &PoolOps::lockFn,
        &PoolOps::lockFn,
        &PoolOps::giveBack,
        &PoolOps::stats,
    };
    return &table;
}

void KernelBufferPool::stats(std::uint64_t& retained, std::uint64_t& outstanding) const noexcept {
    std::lock_guard lock(managersMutex_);
    retained = outstanding = 0;
    for (auto* m : managers_) {
        retained += std::uint64_t(std::min(m->created.load(), m->capacity)) * m->maxBufferSize;
        outstanding += m->outstanding.load() * m->maxBufferSize;
    }
}

KernelBufferPool::~KernelBufferPool() {
    for (auto* m : managers_) delete m;
}

namespace {
bool isBad(uaplex_status st) {
    return (st & 0xC0000000u) == 0x80000000u;
}
}  // namespace

// The lifecycle is the host's (it starts and stops the plugin itself); the rest is forwarded,
// with take's answer checked.
struct CheckedPoolOps {
    static CheckedBufferPool& of(void* s) { return *static_cast<CheckedBufferPool*>(s); }
    static uaplex_status lifecycle(void*) { return UAPLEX_BadInvalidState; }
    static uaplex_status managerCreate(void* s, uaplex_str name, std::uint32_t max,
                                       uaplex_buffer_manager** out) {
        auto& p = of(s);
        *out = nullptr;
        uaplex_status st = p.ops_->manager_create(p.self_, name, max, out);
        if (st == UAPLEX_Good && *out) return UAPLEX_Good;
        *out = nullptr;
        return isBad(st) ? st : UAPLEX_BadInternalError;
    }
    static uaplex_status managerDestroy(void* s, uaplex_buffer_manager* m) {
        return of(s).ops_->manager_destroy(of(s).self_, m);
    }
    static uaplex_status suggestedSize(void* s, uaplex_buffer_manager* m, std::uint32_t size,
                                       std::uint32_t* out) {
        return of(s).ops_->suggested_size(of(s).self_, m, size, out);
    }
    static uaplex_status expectedSize(void* s, uaplex_buffer_manager* m, std::uint32_t size,
                                      std::uint32_t* out) {
        return of(s).ops_->expected_size(of(s).self_, m, size, out);
    }
    static uaplex_status take(void* s, uaplex_buffer_manager* m, std::uint32_t size,
                              const void* owner, const uaplex_cancel_token* cancel,
                              uaplex_buffer* out) {
        auto& p = of(s);
        uaplex_status st = p.ops_->take(p.self_, m, size, owner, cancel, out);
        if (st == UAPLEX_Good && out->data && out->length >= size) return UAPLEX_Good;
        if (st == UAPLEX_Good) {
            // Good without the bytes asked for: what was lent goes back, the rent fails.
            warnOnce(size, out->data ? "fewer bytes than asked for" : "no bytes");
            if (out->data) p.ops_->give_back(p.self_, out, owner);
            st = UAPLEX_BadOutOfMemory;
        } else if (!isBad(st)) {
            warnOnce(size, "a status that is not Bad");
            st = UAPLEX_BadInternalError;
        }
        out->data = nullptr;  // nothing lent: a holder's give_back is then a no-op
        out->length = 0;
        return st;
    }
    static uaplex_status transfer(void* s, uaplex_buffer* b, const void* owner) {
        return of(s).ops_->transfer(of(s).self_, b, owner);
    }
    static uaplex_status lock(void* s, uaplex_buffer* b) {
        return of(s).ops_->lock(of(s).self_, b);
    }
    static uaplex_status unlock(void* s, uaplex_buffer* b) {
        return of(s).ops_->unlock(of(s).self_, b);
    }
    static uaplex_status giveBack(void* s, uaplex_buffer* b, const void* owner) {
        if (!b->data) return UAPLEX_Good;
        return of(s).ops_->give_back(of(s).self_, b, owner);
    }
    static uaplex_status stats(void* s, std::uint64_t* retained, std::uint64_t* outstanding) {
        return of(s).ops_->stats(of(s).self_, retained, outstanding);
    }
    static void warnOnce(std::uint32_t size, const char* what) {
        static std::atomic<bool> warned{false};
        if (!warned.exchange(true))
            uaplex::host::logger()->warn(
                "buffer pool: a rent of {} bytes answered with {}; such rents fail (logged once)",
                size, what);
    }
};

const uaplex_buffer_pool_ops* CheckedBufferPool::ops() noexcept {
    static const uaplex_buffer_pool_ops table{
        UAPLEX_HEADER_INIT(uaplex_buffer_pool_ops, UAPLEX_STYPE_BUFFER_POOL_OPS),
        &CheckedPoolOps::lifecycle,
        &CheckedPoolOps::lifecycle,
        &CheckedPoolOps::lifecycle,
        &CheckedPoolOps::managerCreate,
        &CheckedPoolOps::managerDestroy,
        &CheckedPoolOps::suggestedSize,
        &CheckedPoolOps::expectedSize,
        &CheckedPoolOps::take,
        &CheckedPoolOps::transfer,
        &CheckedPoolOps::lock,
        &CheckedPoolOps::unlock,
        &CheckedPoolOps::giveBack,
        &CheckedPoolOps::stats,
    };
    return &table;
}

bool PoolBufferAllocator::rent(std::size_t size, enc::BufferBlock& out) noexcept {
    static_assert(sizeof(uaplex_buffer) <= sizeof(out.handle));
    if (size > UINT32_MAX) return false;
    uaplex_buffer b{};
    // No cancellation token: a pool with a process budget may wait here, as for chunks.
    if (ops_->take(self_, manager_, std::uint32_t(size), this, nullptr, &b) != UAPLEX_Good)
        return false;
    std::memcpy(out.handle, &b, sizeof b);
    out.data = b.data;
    out.capacity = b.length;
    return true;
}

void PoolBufferAllocator::giveBack(enc::BufferBlock& block) noexcept {
    uaplex_buffer b;
    std::memcpy(&b, block.handle, sizeof b);
    ops_->give_back(self_, &b, this);
    block.data = nullptr;
    block.capacity = 0;
}

}  // namespace uaplex::pipeline
