// SPDX-License-Identifier: Apache-2.0
#include <uaplex/encoding/arena.hpp>

#include <algorithm>
#include <new>

namespace uaplex::enc {

namespace {
// Blocks grow geometrically up to this size; larger requests get a block of their own size.
constexpr std::size_t kMaxGrowBlock = std::size_t(1) << 20;
}  // namespace

Arena::~Arena() {
    for (Block* b = head_; b != nullptr;) {
        Block* next = b->next;
        ::operator delete(b);
        b = next;
    }
}

void Arena::enter(Block* b) noexcept {
    current_ = b;
    ptr_ = b->begin();
    end_ = ptr_ + b->size;
}

void Arena::reset() noexcept {
    used_ = 0;
    if (head_ != nullptr) enter(head_);
}

void Arena::shrink() noexcept {
    reset();
    if (head_ == nullptr) return;
    for (Block* b = head_->next; b != nullptr;) {
        Block* next = b->next;
        ::operator delete(b);
        b = next;
    }
    head_->next = nullptr;
    reserved_ = head_->size;
    nextBlockSize_ = std::min(head_->size * 2, kMaxGrowBlock);
}

void Arena::release() noexcept {
    std::size_t first = head_ != nullptr ? head_->size : nextBlockSize_;
    for (Block* b = head_; b != nullptr;) {
        Block* next = b->next;
        ::operator delete(b);
        b = next;
    }
    head_ = current_ = nullptr;
    ptr_ = end_ = nullptr;
    used_ = reserved_ = 0;
    nextBlockSize_ = first;
}

void* Arena::allocateSlow(std::size_t size, std::size_t align) noexcept {
    // Worst-case bytes a fresh block needs for this request (block starts are 16-aligned).
    std::size_t need = size + (align > 16 ? align : 0);
    if (need < size || used_ + size > maxBytes_ || used_ + size < used_) return nullptr;
    if (ptr_ != nullptr) {
        auto p = reinterpret_cast<std::uintptr_t>(ptr_);
        std::uintptr_t aligned = (p + (align - 1)) & ~(std::uintptr_t(align) - 1);
        std::size_t inCurrent = (aligned - p) + size;
        if (inCurrent <= std::size_t(end_ - ptr_)) {
            // Fits, but the limit check in the fast path refused it.
            if (used_ + inCurrent > maxBytes_) return nullptr;
        }
    }
    // Reuse the following blocks of the chain kept by reset() when large enough.
    Block* next = current_ != nullptr ? current_->next : head_;
    while (next != nullptr && next->size < need) next = next->next;
    if (next == nullptr) {
        std::size_t blockSize = std::max(need, nextBlockSize_);
        void* mem = ::operator new(sizeof(Block) + blockSize, std::nothrow);
        if (mem == nullptr) return nullptr;
        next = static_cast<Block*>(mem);
        next->size = blockSize;
        reserved_ += blockSize;
        nextBlockSize_ = std::min(nextBlockSize_ * 2, kMaxGrowBlock);
        if (current_ == nullptr) {
            next->next = head_;
            head_ = next;
        } else {
            next->next = current_->next;
            current_->next = next;
        }
    } else if (current_ != nullptr && current_->next != next) {
        // Move the suitable block right after the current one so the chain order follows use.
        Block* prev = current_;
        while (prev->next != next) prev = prev->next;
        prev->next = next->next;
        next->next = current_->next;
        current_->next = next;
    }
    enter(next);
    auto p = reinterpret_cast<std::uintptr_t>(ptr_);
    std::uintptr_t aligned = (p + (align - 1)) & ~(std::uintptr_t(align) - 1);
    std::size_t used = (aligned - p) + size;
    if (used_ + used > maxBytes_) return nullptr;
    ptr_ += used;
    used_ += used;
    return reinterpret_cast<void*>(aligned);
}

}  // namespace uaplex::enc
