// SPDX-License-Identifier: Apache-2.0
// A vector that keeps its first N elements inline and moves to the heap only beyond them:
// per-request results of bounded typical size (Publish acknowledgements) without an
// allocation per request. Elements are trivially copyable.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <vector>

namespace uaplex::subscription {

template <typename T, std::size_t N>
class InlineVector {
    static_assert(std::is_trivially_copyable_v<T>);

  public:
    void push_back(const T& v) {
        if (size_ < N) {
            inline_[size_++] = v;
            return;
        }
        if (size_ == N) heap_.assign(inline_.begin(), inline_.end());
        heap_.push_back(v);
        ++size_;
    }
    std::size_t size() const { return size_; }
    bool empty() const { return size_ == 0; }
    T* data() { return size_ <= N ? inline_.data() : heap_.data(); }
    const T* data() const { return size_ <= N ? inline_.data() : heap_.data(); }
    const T& operator[](std::size_t i) const { return data()[i]; }
    const T* begin() const { return data(); }
    const T* end() const { return data() + size_; }
    void clear() {
        size_ = 0;
        heap_.clear();
    }

  private:
    std::size_t size_ = 0;
    std::array<T, N> inline_{};
    std::vector<T> heap_;  // all elements once there are more than N
};

}  // namespace uaplex::subscription
