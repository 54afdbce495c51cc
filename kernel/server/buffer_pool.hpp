// The kernel's buffer pool, used while no buffer-pool plugin fills the slot. Each manager
// hands out fixed-size blocks (its MaxBufferSize) from a lock-free stack: up to
// `maxRetainedPerManager` blocks are created on demand and then reused forever; beyond that a
// rent allocates a block that is freed on return. A block's stack slot travels in the
// buffer's pool_private[0], so renting and returning never take a lock. Served through the
// uaplex_buffer_pool_ops table like a plugin.
#pragma once

#include <uaplex/buffer_pool.h>

#include <cstdint>
#include <mutex>
#include <vector>

namespace uaplex::server {

class KernelBufferPool {
  public:
    explicit KernelBufferPool(std::uint32_t maxRetainedPerManager = 1024) noexcept
        : maxRetained_(maxRetainedPerManager) {}
    ~KernelBufferPool();
    KernelBufferPool(const KernelBufferPool&) = delete;
    KernelBufferPool& operator=(const KernelBufferPool&) = delete;

    static const uaplex_buffer_pool_ops* ops() noexcept;
    void* self() noexcept { return this; }

    // Bytes held in reusable blocks and lent out (for tests and diagnostics).
    void stats(std::uint64_t& retained, std::uint64_t& outstanding) const noexcept;

  private:
    friend struct PoolOps;
    std::uint32_t maxRetained_;
    mutable std::mutex managersMutex_;  // manager creation and destruction only
    std::vector<uaplex_buffer_manager*> managers_;
};

}  // namespace uaplex::server
