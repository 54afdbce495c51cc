// SPDX-License-Identifier: Apache-2.0
// The kernel's buffer pool, used while no buffer-pool plugin fills the slot. Each manager
// hands out fixed-size blocks (its MaxBufferSize) from a lock-free stack: up to
// `maxRetainedPerManager` blocks are created on demand and then reused forever; beyond that a
// rent allocates a block that is freed on return. A block's stack slot travels in the
// buffer's pool_private[0], so renting and returning never take a lock. Served through the
// uaplex_buffer_pool_ops table like a plugin.
#pragma once

#include <uaplex/buffer_pool.h>
#include <uaplex/encoding/binary.hpp>

#include <cstdint>
#include <mutex>
#include <vector>

namespace uaplex::pipeline {

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

// A buffer-pool plugin as the kernel and the transports use it: the same table, but a rent is
// Good only with at least the bytes asked for. A plugin's Good without data or with fewer
// bytes becomes BadOutOfMemory (a short buffer goes back to the plugin), a status that is not
// Bad becomes BadInternalError, and a Good manager_create without a manager is a failure: the
// one message or channel fails, never a write past the buffer (docs/plugin-guide.md).
class CheckedBufferPool {
  public:
    CheckedBufferPool(const uaplex_buffer_pool_ops* ops, void* self) noexcept
        : ops_(ops), self_(self) {}
    static const uaplex_buffer_pool_ops* ops() noexcept;
    void* self() noexcept { return this; }

  private:
    friend struct CheckedPoolOps;
    const uaplex_buffer_pool_ops* ops_;
    void* self_;
};

// Serves ByteBuffer storage (assembled requests, response encodings) from one manager of a
// buffer pool, so that messages live in pooled arrays like the chunks that carry them. A
// size the manager cannot serve makes the buffer fall back to the heap.
class PoolBufferAllocator final : public enc::BufferAllocator {
  public:
    PoolBufferAllocator(const uaplex_buffer_pool_ops* ops, void* self,
                        uaplex_buffer_manager* manager) noexcept
        : ops_(ops), self_(self), manager_(manager) {}
    bool rent(std::size_t size, enc::BufferBlock& out) noexcept override;
    void giveBack(enc::BufferBlock& block) noexcept override;

  private:
    const uaplex_buffer_pool_ops* ops_;
    void* self_;
    uaplex_buffer_manager* manager_;
};

}  // namespace uaplex::pipeline
