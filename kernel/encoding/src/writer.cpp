// SPDX-License-Identifier: Apache-2.0
#include <uaplex/encoding/binary.hpp>

#include <algorithm>
#include <new>

namespace uaplex::enc {

void ByteBuffer::reserve(std::size_t capacity) {
    if (capacity <= capacity_) return;
    if (!grow(capacity)) throw std::bad_alloc();
}

void ByteBuffer::release() noexcept {
    if (lender_) {
        lender_->giveBack(block_);
    } else {
        delete[] data_;
    }
    data_ = nullptr;
    size_ = capacity_ = 0;
    lender_ = nullptr;
}

bool ByteBuffer::grow(std::size_t capacity) noexcept {
    BufferBlock block;
    bool pooled = allocator_ != nullptr && allocator_->rent(capacity, block);
    if (!pooled) {
        // Without an allocator, or when it cannot serve the size: the heap.
        block.data = new (std::nothrow) std::uint8_t[capacity];
        if (block.data == nullptr) return false;
        block.capacity = capacity;
    }
    if (size_ != 0) std::memcpy(block.data, data_, size_);
    std::size_t size = size_;
    release();
    data_ = block.data;
    size_ = size;
    capacity_ = block.capacity;
    if (pooled) {
        lender_ = allocator_;
        block_ = block;
    }
    return true;
}

std::uint8_t* BinaryWriter::reserveSlow(std::size_t n) noexcept {
    if (status_ != UAPLEX_Good) return nullptr;
    std::size_t size = buf_->size_;
    if (n > maxSize_ || size > maxSize_ - n) {
        fail(UAPLEX_BadEncodingLimitsExceeded);
        return nullptr;
    }
    // Grow geometrically so a message costs O(log n) allocations the first time only.
    std::size_t want = std::max<std::size_t>({size + n, buf_->capacity_ * 2, 256});
    want = std::min(want, std::max(maxSize_, size + n));
    if (!buf_->grow(want)) {
        fail(UAPLEX_BadOutOfMemory);
        return nullptr;
    }
    buf_->size_ = size + n;
    return buf_->data_ + size;
}

}  // namespace uaplex::enc
