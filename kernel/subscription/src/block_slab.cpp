// SPDX-License-Identifier: Apache-2.0
#include <uaplex/subscription/block_slab.hpp>

#include <sys/mman.h>

#include <cstdlib>

namespace uaplex::subscription {

namespace {

size_t roundUp(size_t n, size_t a) {
    return (n + a - 1) & ~(a - 1);
}

}  // namespace

BlockSlab::BlockSlab(size_t blockSize, size_t align) {
    if (align < alignof(void*)) align = alignof(void*);
    blockSize_ = roundUp(blockSize < sizeof(void*) ? sizeof(void*) : blockSize, align);
    headerBytes_ = roundUp(sizeof(Chunk), align);
    perChunk_ = (kChunkBytes - headerBytes_) / blockSize_;
}

BlockSlab::~BlockSlab() {
    // The engine frees every block first, so every chunk left is on the partial list.
    while (partial_) {
        Chunk* c = partial_;
        unlink(c);
        ::munmap(c, kChunkBytes);
    }
}

BlockSlab::Chunk* BlockSlab::map() noexcept {
    // Twice the size, then the unaligned head and tail go back: the chunk of a block is its
    // address rounded down.
    void* p = ::mmap(nullptr, 2 * kChunkBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                     -1, 0);
    if (p == MAP_FAILED) return nullptr;
    auto base = reinterpret_cast<uintptr_t>(p);
    uintptr_t aligned = roundUp(base, kChunkBytes);
    if (aligned > base) ::munmap(p, aligned - base);
    uintptr_t end = base + 2 * kChunkBytes;
    if (end > aligned + kChunkBytes)
        ::munmap(reinterpret_cast<void*>(aligned + kChunkBytes), end - aligned - kChunkBytes);
    auto* c = reinterpret_cast<Chunk*>(aligned);
    *c = Chunk{nullptr, nullptr, nullptr, 0, 0, false};
    ++chunks_;
    return c;
}

void BlockSlab::unlink(Chunk* c) noexcept {
    if (c->prev)
        c->prev->next = c->next;
    else
        partial_ = c->next;
    if (c->next) c->next->prev = c->prev;
    c->prev = c->next = nullptr;
    c->listed = false;
}

void BlockSlab::pushFront(Chunk* c) noexcept {
    c->prev = nullptr;
    c->next = partial_;
    if (partial_) partial_->prev = c;
    partial_ = c;
    c->listed = true;
}

void* BlockSlab::allocate() noexcept {
    if (!partial_) {
        Chunk* c = map();
        if (!c) return nullptr;
        pushFront(c);
    }
    Chunk* c = partial_;
    void* b;
    if (c->freeList) {
        b = c->freeList;
        c->freeList = *static_cast<void**>(b);
    } else {
        b = firstBlock(c) + size_t(c->bumped) * blockSize_;  // pages are touched in order
        ++c->bumped;
    }
    ++c->used;
    ++live_;
    if (c->used == perChunk_) unlink(c);  // full
    return b;
}

void BlockSlab::release(void* block) noexcept {
    if (!block) return;
    auto* c = reinterpret_cast<Chunk*>(reinterpret_cast<uintptr_t>(block) & ~(kChunkBytes - 1));
    --live_;
    if (--c->used == 0) {
        if (chunks_ > 1) {  // the last block: the chunk goes back to the kernel
            if (c->listed) unlink(c);
            ::munmap(c, kChunkBytes);
            --chunks_;
            return;
        }
        // The only chunk stays mapped (one item created and deleted over and over maps
        // nothing), its pages past the header given back.
        c->freeList = nullptr;
        c->bumped = 0;
        ::madvise(reinterpret_cast<char*>(c) + 4096, kChunkBytes - 4096, MADV_DONTNEED);
        if (!c->listed) pushFront(c);
        return;
    }
    *static_cast<void**>(block) = c->freeList;
    c->freeList = block;
    if (!c->listed) pushFront(c);
}

}  // namespace uaplex::subscription
