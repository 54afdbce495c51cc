// SPDX-License-Identifier: Apache-2.0
// Per-request bump allocator. Decoded messages live here; one reset() frees them all.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <utility>

namespace uaplex::enc {

// A chain of blocks handed out by bumping a pointer. reset() rewinds to the first block but
// keeps every block, so a steady request pattern allocates from the heap only while warming
// up. A byte limit bounds what one request may take; past it allocate() returns nullptr.
class Arena {
  public:
    explicit Arena(std::size_t maxBytes = std::numeric_limits<std::size_t>::max(),
                   std::size_t firstBlockSize = 4096) noexcept
        : maxBytes_(maxBytes), nextBlockSize_(firstBlockSize) {}
    Arena(const Arena&) = delete;
    Arena& operator=(const Arena&) = delete;
    ~Arena();

    // Uninitialised storage of `size` bytes aligned to `align` (a power of two), or nullptr
    // when the byte limit would be exceeded or the system is out of memory.
    void* allocate(std::size_t size, std::size_t align) noexcept {
        auto p = reinterpret_cast<std::uintptr_t>(ptr_);
        std::uintptr_t aligned = (p + (align - 1)) & ~(std::uintptr_t(align) - 1);
        std::size_t need = (aligned - p) + size;
        if (ptr_ != nullptr && need <= std::size_t(end_ - ptr_) && used_ + need <= maxBytes_) {
            ptr_ += need;
            used_ += need;
            return reinterpret_cast<void*>(aligned);
        }
        return allocateSlow(size, align);
    }

    // Zero-initialised array of n trivially-copyable T.
    template <class T>
    T* allocateArray(std::size_t n) noexcept {
        if (n > (std::numeric_limits<std::size_t>::max() / sizeof(T))) return nullptr;
        void* p = allocate(n * sizeof(T), alignof(T));
        if (p != nullptr && n != 0) std::memset(p, 0, n * sizeof(T));
        return static_cast<T*>(p);
    }

    // Releases everything allocated since the last reset; keeps the blocks.
    void reset() noexcept;
    // reset(), and the blocks after the first go back to the heap (after a rare large use).
    void shrink() noexcept;
    // Every block goes back to the heap; the arena stays usable (it takes a new block).
    void release() noexcept;
    // Exchanges everything with `other`: what either handed out stays valid, now held by the
    // other (a request that outlives its worker takes the worker's arena this way).
    void swap(Arena& other) noexcept {
        std::swap(head_, other.head_);
        std::swap(current_, other.current_);
        std::swap(ptr_, other.ptr_);
        std::swap(end_, other.end_);
        std::swap(used_, other.used_);
        std::swap(reserved_, other.reserved_);
        std::swap(maxBytes_, other.maxBytes_);
        std::swap(nextBlockSize_, other.nextBlockSize_);
    }

    std::size_t used() const noexcept { return used_; }
    std::size_t maxBytes() const noexcept { return maxBytes_; }
    void setMaxBytes(std::size_t maxBytes) noexcept { maxBytes_ = maxBytes; }
    // Bytes held from the heap (all blocks), for diagnostics and tests.
    std::size_t reservedBytes() const noexcept { return reserved_; }

  private:
    struct Block {
        Block* next;
        std::size_t size;  // usable bytes after the header
        std::byte* begin() noexcept { return reinterpret_cast<std::byte*>(this + 1); }
    };
    void* allocateSlow(std::size_t size, std::size_t align) noexcept;
    void enter(Block* b) noexcept;

    Block* head_ = nullptr;
    Block* current_ = nullptr;
    std::byte* ptr_ = nullptr;
    std::byte* end_ = nullptr;
    std::size_t used_ = 0;
    std::size_t reserved_ = 0;
    std::size_t maxBytes_;
    std::size_t nextBlockSize_;
};

}  // namespace uaplex::enc
