// SPDX-License-Identifier: Apache-2.0
// Pooled copies of DataValues for monitored-item queues and last values. A cell holds scalars
// of the inline types directly; numeric arrays are copied raw and any other payload is kept
// encoded, so a cell never points into memory its producer owns. Cells are recycled with
// their payload buffers: a steady stream of values does not allocate.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <vector>

#include "uaplex/encoding/encoding.hpp"

namespace uaplex::subscription {

struct ValueCell {
    enum class Payload : uint8_t { Inline, RawArray, Encoded };
    ua::DataValue dv{};  // first member: the queue ABI sees &dv
    uint8_t* bytes = nullptr;
    uint32_t byteCount = 0, capacity = 0;
    Payload payload = Payload::Inline;

    static ValueCell* of(uaplex_datavalue* v) { return reinterpret_cast<ValueCell*>(v); }
    uint8_t type() const { return dv.value.encoding & UAPLEX_VARIANT_TYPE_MASK; }
    bool isNumeric() const;
    // The value as a double (scalars) or element i (raw arrays); numeric types only.
    double number(uint32_t i = 0) const;
    int32_t arrayLength() const {
        return payload == Payload::RawArray ? dv.value.array_length : -1;
    }
};
static_assert(std::is_standard_layout_v<ValueCell>);

class ValuePool {
  public:
    explicit ValuePool(size_t maxFree = 4096) : maxFree_(maxFree) {}
    ~ValuePool();
    ValuePool(const ValuePool&) = delete;
    ValuePool& operator=(const ValuePool&) = delete;

    // A deep copy of v; nullptr when it cannot be encoded.
    ValueCell* copy(const ua::DataValue& v);
    ValueCell* copy(const ValueCell& c);
    void release(ValueCell* c) noexcept;
    // Exchanges two cells' contents (buffers included): a cell embedded in an item takes a
    // pooled one's value without copying.
    static void swapContents(ValueCell& a, ValueCell& b) noexcept;
    // Copies src's value into dst in place, reusing dst's payload buffer; false when out of
    // memory (dst is then unchanged).
    bool assignContents(ValueCell& dst, const ValueCell& src);
    // Writes the value into `out`, with out-of-line parts (strings too) allocated in `arena`:
    // `out` does not refer to the cell.
    static bool materialize(const ValueCell& c, enc::Arena& arena, ua::DataValue& out);
    size_t live() const { return live_; }
    // Frees the recycled cells (after a bulk deletion; the pool grows again on demand).
    void trim() noexcept;

  private:
    ValueCell* acquire();
    bool reserve(ValueCell* c, uint32_t n);

    ValueCell* free_ = nullptr;
    size_t freeCount_ = 0, maxFree_, live_ = 0;
    enc::ByteBuffer scratch_;
};

// Equality of two cells' values (same type, same payload bytes), the DataChangeFilter's
// "unequal" for non-numeric types.
bool sameValue(const ValueCell& a, const ValueCell& b);

}  // namespace uaplex::subscription
