// SPDX-License-Identifier: Apache-2.0
// Fixed-size blocks in chunks mapped from the kernel, for monitored items: a block carries no
// allocator header, and a chunk is unmapped as soon as its last block is freed, so deleting
// many items gives their pages back whatever the C allocator keeps of its own heap.
// Not thread-safe: the engine runs under one lock.
#pragma once

#include <cstddef>
#include <cstdint>

namespace uaplex::subscription {

class BlockSlab {
  public:
    // `blockSize` is rounded up to `align` (a power of two, at most 64).
    BlockSlab(size_t blockSize, size_t align);
    ~BlockSlab();  // unmaps every chunk; blocks still out become invalid
    BlockSlab(const BlockSlab&) = delete;
    BlockSlab& operator=(const BlockSlab&) = delete;

    // An uninitialized block; nullptr when the kernel refuses a chunk.
    void* allocate() noexcept;
    // A block from allocate() of this slab.
    void release(void* block) noexcept;

    size_t blockSize() const { return blockSize_; }
    size_t blocksPerChunk() const { return perChunk_; }
    size_t chunkCount() const { return chunks_; }
    size_t liveBlocks() const { return live_; }
    static constexpr size_t kChunkBytes = size_t(1) << 18;  // 256 KiB, aligned to its size

  private:
    struct Chunk {
        Chunk* prev;  // in the list of chunks with a free block
        Chunk* next;
        void* freeList;   // released blocks of this chunk
        uint32_t used;    // blocks handed out
        uint32_t bumped;  // blocks ever handed out (the rest is untouched)
        bool listed;
    };
    Chunk* map() noexcept;
    void unlink(Chunk* c) noexcept;
    void pushFront(Chunk* c) noexcept;
    char* firstBlock(Chunk* c) const { return reinterpret_cast<char*>(c) + headerBytes_; }

    size_t blockSize_, headerBytes_, perChunk_;
    Chunk* partial_ = nullptr;  // chunks with at least one free block
    size_t chunks_ = 0, live_ = 0;
};

}  // namespace uaplex::subscription
