#include <uaplex/encoding/binary.hpp>

#include <algorithm>
#include <new>

namespace uaplex::enc {

void ByteBuffer::reserve(std::size_t capacity) {
    if (capacity <= capacity_) return;
    std::unique_ptr<std::uint8_t[]> bigger(new std::uint8_t[capacity]);
    if (size_ != 0) std::memcpy(bigger.get(), data_.get(), size_);
    data_ = std::move(bigger);
    capacity_ = capacity;
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
    std::uint8_t* bigger = new (std::nothrow) std::uint8_t[want];
    if (bigger == nullptr) {
        fail(UAPLEX_BadOutOfMemory);
        return nullptr;
    }
    if (size != 0) std::memcpy(bigger, buf_->data_.get(), size);
    buf_->data_.reset(bigger);
    buf_->capacity_ = want;
    buf_->size_ = size + n;
    return bigger + size;
}

}  // namespace uaplex::enc
