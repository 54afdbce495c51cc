// The kernel's buffer pool, used when no buffer-pool plugin fills the slot: one free list per
// manager of fixed-size blocks (the manager's MaxBufferSize), so a steady stream of chunks
// reuses the same blocks. Retained blocks per manager are bounded; beyond that a returned
// block is freed. Served through the uaplex_buffer_pool_ops table like a plugin.
#pragma once

#include <uaplex/buffer_pool.h>

#include <cstdint>
#include <mutex>
#include <vector>

namespace uaplex::server {

class KernelBufferPool {
  public:
    explicit KernelBufferPool(std::size_t maxRetainedPerManager = 1024) noexcept
        : maxRetained_(maxRetainedPerManager) {}
    ~KernelBufferPool();
    KernelBufferPool(const KernelBufferPool&) = delete;
    KernelBufferPool& operator=(const KernelBufferPool&) = delete;

    static const uaplex_buffer_pool_ops* ops() noexcept;
    void* self() noexcept { return this; }

    // Bytes retained in free lists and lent out (for tests and diagnostics).
    void stats(std::uint64_t& retained, std::uint64_t& outstanding) const noexcept;

  private:
    friend struct PoolOps;
    std::size_t maxRetained_;
    mutable std::mutex mutex_;  // guards the managers' free lists (short critical sections)
    std::vector<uaplex_buffer_manager*> managers_;
};

}  // namespace uaplex::server
