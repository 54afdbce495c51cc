#include "server/buffer_pool.hpp"

#include <algorithm>
#include <atomic>
#include <new>
#include <string>

struct uaplex_buffer_manager {
    std::string name;
    std::uint32_t maxBufferSize;
    std::vector<std::uint8_t*> free;
    std::atomic<std::uint64_t> outstanding{0};
};

namespace uaplex::server {

struct PoolOps {
    static KernelBufferPool& pool(void* self) { return *static_cast<KernelBufferPool*>(self); }

    static uaplex_status start(void*) { return UAPLEX_Good; }
    static uaplex_status stop(void*) { return UAPLEX_Good; }
    static uaplex_status destroy(void*) { return UAPLEX_Good; }

    static uaplex_status managerCreate(void* self, uaplex_str name, uint32_t maxSize,
                                       uaplex_buffer_manager** out) {
        auto* m = new (std::nothrow) uaplex_buffer_manager();
        if (!m) return UAPLEX_BadOutOfMemory;
        m->name.assign(name.data ? name.data : "", name.len);
        m->maxBufferSize = maxSize;
        auto& p = pool(self);
        std::lock_guard lock(p.mutex_);
        p.managers_.push_back(m);
        *out = m;
        return UAPLEX_Good;
    }
    static uaplex_status managerDestroy(void* self, uaplex_buffer_manager* m) {
        if (m->outstanding.load() != 0) return UAPLEX_BadInvalidState;
        auto& p = pool(self);
        std::lock_guard lock(p.mutex_);
        for (auto* b : m->free) delete[] b;
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
    static uaplex_status take(void* self, uaplex_buffer_manager* m, uint32_t size, const void*,
                              const uaplex_cancel_token*, uaplex_buffer* out) {
        if (size > m->maxBufferSize) return UAPLEX_BadOutOfRange;
        std::uint8_t* data = nullptr;
        {
            auto& p = pool(self);
            std::lock_guard lock(p.mutex_);
            if (!m->free.empty()) {
                data = m->free.back();
                m->free.pop_back();
            }
        }
        if (!data) data = new (std::nothrow) std::uint8_t[m->maxBufferSize];
        if (!data) return UAPLEX_BadOutOfMemory;
        m->outstanding.fetch_add(1);
        out->hdr = UAPLEX_HEADER_INIT(uaplex_buffer, UAPLEX_STYPE_BUFFER);
        out->data = data;
        out->length = m->maxBufferSize;
        out->used = 0;
        out->manager = m;
        return UAPLEX_Good;
    }
    static uaplex_status noop(void*, uaplex_buffer*, const void*) { return UAPLEX_Good; }
    static uaplex_status lockFn(void*, uaplex_buffer*) { return UAPLEX_Good; }
    static uaplex_status giveBack(void* self, uaplex_buffer* b, const void*) {
        if (!b->data) return UAPLEX_Good;
        auto* m = b->manager;
        auto& p = pool(self);
        bool keep;
        {
            std::lock_guard lock(p.mutex_);
            keep = m->free.size() < p.maxRetained_;
            if (keep) m->free.push_back(b->data);
        }
        if (!keep) delete[] b->data;
        m->outstanding.fetch_sub(1);
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
        [](void*, uaplex_buffer*, const void*) -> uaplex_status { return UAPLEX_Good; },
        &PoolOps::lockFn,
        &PoolOps::lockFn,
        &PoolOps::giveBack,
        &PoolOps::stats,
    };
    return &table;
}

void KernelBufferPool::stats(std::uint64_t& retained, std::uint64_t& outstanding) const noexcept {
    std::lock_guard lock(mutex_);
    retained = outstanding = 0;
    for (auto* m : managers_) {
        retained += std::uint64_t(m->free.size()) * m->maxBufferSize;
        outstanding += m->outstanding.load() * m->maxBufferSize;
    }
}

KernelBufferPool::~KernelBufferPool() {
    for (auto* m : managers_) {
        for (auto* b : m->free) delete[] b;
        delete m;
    }
}

}  // namespace uaplex::server
