// SPDX-License-Identifier: Apache-2.0
// A double-ended queue in one ring buffer: nothing allocated while it has never held an
// element, MinCapacity elements on the first push, doubling after that. std::deque reserves
// a 64-byte map and a 512-byte block at construction, which thousands of idle sessions and
// subscriptions pay for. The capacity stays (no allocation on a steady push/pop cycle) until
// shrink_to_fit(). Erasing in the middle moves the elements after it (queues here are short,
// or compacted in one pass with std::remove_if and a range erase).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <new>
#include <utility>

namespace uaplex::subscription {

template <typename T, std::size_t MinCapacity = 4>
class RingQueue {
    static_assert(MinCapacity > 0);
    static_assert(alignof(T) <= __STDCPP_DEFAULT_NEW_ALIGNMENT__);

  public:
    template <bool Const>
    class Iter {
        using Q = std::conditional_t<Const, const RingQueue, RingQueue>;

      public:
        using iterator_category = std::random_access_iterator_tag;
        using value_type = T;
        using difference_type = std::ptrdiff_t;
        using pointer = std::conditional_t<Const, const T*, T*>;
        using reference = std::conditional_t<Const, const T&, T&>;
        Iter() = default;
        Iter(Q* q, std::size_t i) : q_(q), i_(i) {}
        reference operator*() const { return (*q_)[i_]; }
        pointer operator->() const { return &(*q_)[i_]; }
        reference operator[](difference_type n) const { return (*q_)[i_ + n]; }
        Iter& operator++() { return ++i_, *this; }
        Iter operator++(int) { return Iter(q_, i_++); }
        Iter& operator--() { return --i_, *this; }
        Iter operator--(int) { return Iter(q_, i_--); }
        Iter& operator+=(difference_type n) { return i_ += n, *this; }
        Iter& operator-=(difference_type n) { return i_ -= n, *this; }
        Iter operator+(difference_type n) const { return Iter(q_, i_ + n); }
        friend Iter operator+(difference_type n, Iter it) { return it + n; }
        Iter operator-(difference_type n) const { return Iter(q_, i_ - n); }
        difference_type operator-(const Iter& o) const { return difference_type(i_ - o.i_); }
        bool operator==(const Iter& o) const { return i_ == o.i_; }
        auto operator<=>(const Iter& o) const { return i_ <=> o.i_; }
        std::size_t index() const { return i_; }

      private:
        Q* q_ = nullptr;
        std::size_t i_ = 0;
    };
    using iterator = Iter<false>;
    using const_iterator = Iter<true>;
    using value_type = T;

    RingQueue() = default;
    RingQueue(RingQueue&& o) noexcept
        : buf_(std::exchange(o.buf_, nullptr)),
          cap_(std::exchange(o.cap_, 0)),
          head_(std::exchange(o.head_, 0)),
          size_(std::exchange(o.size_, 0)) {}
    RingQueue& operator=(RingQueue&& o) noexcept {
        if (this != &o) {
            destroy();
            buf_ = std::exchange(o.buf_, nullptr);
            cap_ = std::exchange(o.cap_, 0);
            head_ = std::exchange(o.head_, 0);
            size_ = std::exchange(o.size_, 0);
        }
        return *this;
    }
    RingQueue(const RingQueue&) = delete;
    RingQueue& operator=(const RingQueue&) = delete;
    ~RingQueue() { destroy(); }

    std::size_t size() const { return size_; }
    bool empty() const { return size_ == 0; }
    std::size_t capacity() const { return cap_; }

    T& operator[](std::size_t i) { return buf_[slot(i)]; }
    const T& operator[](std::size_t i) const { return buf_[slot(i)]; }
    T& front() { return buf_[head_]; }
    const T& front() const { return buf_[head_]; }
    T& back() { return (*this)[size_ - 1]; }
    const T& back() const { return (*this)[size_ - 1]; }
    iterator begin() { return iterator(this, 0); }
    iterator end() { return iterator(this, size_); }
    const_iterator begin() const { return const_iterator(this, 0); }
    const_iterator end() const { return const_iterator(this, size_); }

    void push_back(T v) {
        if (size_ == cap_) grow();
        new (&buf_[slot(size_)]) T(std::move(v));
        ++size_;
    }
    void push_front(T v) {
        if (size_ == cap_) grow();
        head_ = head_ == 0 ? cap_ - 1 : head_ - 1;
        new (&buf_[head_]) T(std::move(v));
        ++size_;
    }
    void pop_front() {
        buf_[head_].~T();
        head_ = head_ + 1 == cap_ ? 0 : head_ + 1;
        if (--size_ == 0) head_ = 0;
    }
    void pop_back() {
        buf_[slot(size_ - 1)].~T();
        if (--size_ == 0) head_ = 0;
    }
    void clear() {
        for (std::size_t i = 0; i < size_; ++i) (*this)[i].~T();
        size_ = head_ = 0;
    }

    // Removes one element; the ones after it move up. Returns the position after it.
    iterator erase(iterator pos) { return erase(pos, pos + 1); }
    iterator erase(iterator first, iterator last) {
        std::size_t from = first.index(), to = last.index(), n = to - from;
        if (n == 0) return first;
        for (std::size_t i = to; i < size_; ++i) (*this)[i - n] = std::move((*this)[i]);
        for (std::size_t i = size_ - n; i < size_; ++i) (*this)[i].~T();
        size_ -= std::uint32_t(n);
        if (size_ == 0) head_ = 0;
        return iterator(this, from);
    }
    // Capacity for at least n elements (MinCapacity doubled, as pushes would grow it), taken
    // now by the calling thread.
    void reserve(std::size_t n) {
        if (n <= cap_) return;
        std::size_t cap = cap_ ? cap_ : MinCapacity;
        while (cap < n) {
            if (cap > UINT32_MAX / 2) throw std::bad_alloc();
            cap *= 2;
        }
        relocate(cap);
    }
    // Capacity down to the size (none when empty): after a burst, memory goes back.
    void shrink_to_fit() {
        if (cap_ == size_) return;
        if (size_ == 0) {
            destroy();
            return;
        }
        relocate(size_);
    }

  private:
    std::size_t slot(std::size_t i) const {
        std::size_t s = head_ + i;
        return s >= cap_ ? s - cap_ : s;
    }
    void grow() {
        if (cap_ > UINT32_MAX / 2) throw std::bad_alloc();
        relocate(cap_ ? cap_ * 2 : MinCapacity);
    }
    void relocate(std::size_t cap) {
        T* nb = static_cast<T*>(::operator new(cap * sizeof(T)));
        for (std::size_t i = 0; i < size_; ++i) {
            T& e = (*this)[i];
            new (&nb[i]) T(std::move(e));
            e.~T();  // NOLINT(bugprone-use-after-move): a moved-from object is still destroyed
        }
        if (buf_) ::operator delete(buf_);
        buf_ = nb;
        cap_ = std::uint32_t(cap);
        head_ = 0;
    }
    void destroy() {
        clear();
        if (buf_) ::operator delete(buf_);
        buf_ = nullptr;
        cap_ = 0;
    }

    T* buf_ = nullptr;
    std::uint32_t cap_ = 0, head_ = 0, size_ = 0;  // 24 bytes in all
};

}  // namespace uaplex::subscription
