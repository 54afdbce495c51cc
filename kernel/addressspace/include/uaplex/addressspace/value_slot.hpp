// SPDX-License-Identifier: Apache-2.0
// The stored value of a Variable: the Variant kept in its binary encoding (so any value,
// however nested, is one contiguous copy) plus status and timestamps, behind a per-value
// spin lock held only for a memcpy. Reads decode into the request's arena; in steady state
// neither a read nor a write of a same-sized value touches the heap.
#pragma once

#include <uaplex/encoding/encoding.hpp>

#include <atomic>
#include <cstdint>
#include <vector>

namespace uaplex::addressspace {

class ValueSlot {
  public:
    // Decodes the current value into `arena` (status, source/server timestamps and their
    // masks as stored). Bad only when the arena is exhausted.
    uaplex_status read(enc::Arena& arena, ua::DataValue& out) const noexcept;
    // Stores `value` (its Variant, status and timestamps as present in the mask).
    uaplex_status store(const ua::DataValue& value) noexcept;
    // Bumped by every store; lets subscriptions see a change without comparing values.
    std::uint32_t version() const noexcept { return version_.load(std::memory_order_acquire); }

  private:
    void lock() const noexcept;
    void unlock() const noexcept { busy_.store(false, std::memory_order_release); }

    mutable std::atomic<bool> busy_{false};
    std::atomic<std::uint32_t> version_{0};
    std::uint8_t mask_ = 0;  // DataValue mask bits other than VALUE
    ua::StatusCode status_ = 0;
    ua::DateTime sourceTimestamp_ = 0;
    ua::DateTime serverTimestamp_ = 0;
    std::uint16_t sourcePicoseconds_ = 0;
    std::vector<std::uint8_t> bytes_;  // binary Variant; empty = null Variant
};

// The descriptor of the built-in Variant type (cached).
const enc::DataType& variantType() noexcept;

}  // namespace uaplex::addressspace
