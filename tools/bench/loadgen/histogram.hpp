// SPDX-License-Identifier: Apache-2.0
// A log-bucketed latency histogram in nanoseconds: exact below 128 ns, then 64 linear
// sub-buckets per power of two (relative error below 1/64, about 1.6 %). Fixed size, no
// allocation while recording, mergeable.
#pragma once

#include <algorithm>
#include <array>
#include <bit>
#include <cstdint>

namespace uaplex::bench {

class Histogram {
  public:
    static constexpr int kSubBits = 7;                            // 128 exact values, then
    static constexpr std::uint64_t kHalf = 1u << (kSubBits - 1);  // 64 sub-buckets per octave
    static constexpr int kMaxShift = 40;                          // up to ~2^47 ns (39 hours)
    static constexpr std::size_t kBuckets = (kMaxShift + 2) * kHalf;

    void record(std::uint64_t ns) noexcept {
        ++counts_[index(ns)];
        ++total_;
        max_ = std::max(max_, ns);
        min_ = std::min(min_, ns);
    }
    void merge(const Histogram& o) noexcept {
        for (std::size_t i = 0; i < kBuckets; ++i) counts_[i] += o.counts_[i];
        total_ += o.total_;
        max_ = std::max(max_, o.max_);
        min_ = std::min(min_, o.min_);
    }
    void clear() noexcept { *this = Histogram{}; }

    std::uint64_t count() const noexcept { return total_; }
    std::uint64_t max() const noexcept { return total_ ? max_ : 0; }
    std::uint64_t min() const noexcept { return total_ ? min_ : 0; }

    // The smallest recorded bucket value v such that at least q (0..1) of the samples are
    // <= v, reported as the bucket's upper bound (never above the exact maximum).
    std::uint64_t quantile(double q) const noexcept {
        if (total_ == 0) return 0;
        auto rank = std::uint64_t(q * double(total_) + 0.5);
        rank = std::clamp<std::uint64_t>(rank, 1, total_);
        std::uint64_t seen = 0;
        for (std::size_t i = 0; i < kBuckets; ++i) {
            seen += counts_[i];
            if (seen >= rank) return std::min(upperBound(i), max_);
        }
        return max_;
    }

    static std::size_t index(std::uint64_t v) noexcept {
        if (v < 2 * kHalf) return std::size_t(v);
        int shift = int(std::bit_width(v)) - kSubBits;  // >= 1
        if (shift > kMaxShift) return kBuckets - 1;
        return std::size_t(shift) * kHalf + std::size_t(v >> shift);
    }
    static std::uint64_t upperBound(std::size_t i) noexcept {
        if (i < 2 * kHalf) return i;
        std::size_t shift = i / kHalf - 1;
        std::uint64_t sub = i - shift * kHalf;  // in [64, 128)
        return ((sub + 1) << shift) - 1;
    }

  private:
    std::array<std::uint64_t, kBuckets> counts_{};
    std::uint64_t total_ = 0;
    std::uint64_t max_ = 0;
    std::uint64_t min_ = ~std::uint64_t(0);
};

}  // namespace uaplex::bench
