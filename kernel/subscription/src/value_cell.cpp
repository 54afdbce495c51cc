// SPDX-License-Identifier: Apache-2.0
#include <uaplex/subscription/value_cell.hpp>

#include <cstring>
#include <new>

namespace uaplex::subscription {
namespace {

// Element size of a numeric-like built-in type held raw (fixed size, no pointers), or 0.
uint32_t rawSize(uint8_t t) {
    switch (t) {
        case UAPLEX_TYPE_BOOLEAN:
        case UAPLEX_TYPE_SBYTE:
        case UAPLEX_TYPE_BYTE:
        case UAPLEX_TYPE_INT16:
        case UAPLEX_TYPE_UINT16:
        case UAPLEX_TYPE_INT32:
        case UAPLEX_TYPE_UINT32:
        case UAPLEX_TYPE_FLOAT:
        case UAPLEX_TYPE_STATUSCODE:
        case UAPLEX_TYPE_INT64:
        case UAPLEX_TYPE_UINT64:
        case UAPLEX_TYPE_DOUBLE:
        case UAPLEX_TYPE_DATETIME:
            return uint32_t(uaplex_builtin_size(t));
        default:
            return 0;
    }
}

bool inlineScalar(uint8_t t) {
    return t == UAPLEX_TYPE_NULL || rawSize(t) != 0 || t == UAPLEX_TYPE_GUID;
}

double numberAt(uint8_t t, const void* p) {
    switch (t) {
        case UAPLEX_TYPE_SBYTE:
            return *static_cast<const int8_t*>(p);
        case UAPLEX_TYPE_BYTE:
            return *static_cast<const uint8_t*>(p);
        case UAPLEX_TYPE_INT16:
            return *static_cast<const int16_t*>(p);
        case UAPLEX_TYPE_UINT16:
            return *static_cast<const uint16_t*>(p);
        case UAPLEX_TYPE_INT32:
            return *static_cast<const int32_t*>(p);
        case UAPLEX_TYPE_UINT32:
            return *static_cast<const uint32_t*>(p);
        case UAPLEX_TYPE_INT64:
            return double(*static_cast<const int64_t*>(p));
        case UAPLEX_TYPE_UINT64:
            return double(*static_cast<const uint64_t*>(p));
        case UAPLEX_TYPE_FLOAT:
            return *static_cast<const float*>(p);
        case UAPLEX_TYPE_DOUBLE:
            return *static_cast<const double*>(p);
        default:
            return 0;
    }
}

const enc::DataType& variantType() {
    static const enc::DataType* t = enc::findDataType("Variant");
    return *t;
}

}  // namespace

bool ValueCell::isNumeric() const {
    uint8_t t = type();
    return t >= UAPLEX_TYPE_SBYTE && t <= UAPLEX_TYPE_DOUBLE && payload != Payload::Encoded;
}

double ValueCell::number(uint32_t i) const {
    if (payload == Payload::RawArray) return numberAt(type(), bytes + i * rawSize(type()));
    return numberAt(type(), &dv.value.value);
}

// A free cell links to the next through its value's pointer word.
static ValueCell*& nextFree(ValueCell* c) {
    return reinterpret_cast<ValueCell*&>(c->dv.value.value.pointer);
}

ValuePool::~ValuePool() {
    trim();
}

void ValuePool::trim() noexcept {
    while (free_) {
        ValueCell* c = free_;
        free_ = nextFree(c);
        std::free(c->bytes);
        delete c;
    }
    freeCount_ = 0;
}

ValueCell* ValuePool::acquire() {
    ValueCell* c = free_;
    if (c) {
        free_ = nextFree(c);
        --freeCount_;
    } else {
        c = new ValueCell();
    }
    c->byteCount = 0;
    c->payload = ValueCell::Payload::Inline;
    ++live_;
    return c;
}

bool ValuePool::reserve(ValueCell* c, uint32_t n) {
    if (n <= c->capacity) return true;
    auto* p = static_cast<uint8_t*>(std::realloc(c->bytes, n));
    if (!p) return false;
    c->bytes = p;
    c->capacity = n;
    return true;
}

void ValuePool::release(ValueCell* c) noexcept {
    if (!c) return;
    --live_;
    if (freeCount_ >= maxFree_) {
        std::free(c->bytes);
        delete c;
        return;
    }
    nextFree(c) = free_;
    free_ = c;
    ++freeCount_;
}

ValueCell* ValuePool::copy(const ua::DataValue& v) {
    ValueCell* c = acquire();
    c->dv = v;
    const ua::Variant& var = v.value;
    uint8_t t = var.encoding & UAPLEX_VARIANT_TYPE_MASK;
    bool array = (var.encoding & UAPLEX_VARIANT_ARRAY) != 0;
    bool dims = (var.encoding & UAPLEX_VARIANT_ARRAY_DIMENSIONS) != 0;
    if (!(v.mask & UAPLEX_DATAVALUE_VALUE) || (!array && inlineScalar(t))) return c;
    if (array && !dims && rawSize(t) && var.array_length >= 0) {
        uint32_t n = uint32_t(var.array_length) * rawSize(t);
        if (!reserve(c, n ? n : 1)) return release(c), nullptr;
        if (n) std::memcpy(c->bytes, var.value.pointer, n);
        c->byteCount = n;
        c->payload = ValueCell::Payload::RawArray;
        c->dv.value.value.pointer = nullptr;
        return c;
    }
    scratch_.clear();
    if (enc::encodeValue(scratch_, variantType(), &var) != UAPLEX_Good ||
        !reserve(c, uint32_t(scratch_.size())))
        return release(c), nullptr;
    std::memcpy(c->bytes, scratch_.data(), scratch_.size());
    c->byteCount = uint32_t(scratch_.size());
    c->payload = ValueCell::Payload::Encoded;
    c->dv.value.value.pointer = nullptr;
    c->dv.value.dimensions = nullptr;
    return c;
}

ValueCell* ValuePool::copy(const ValueCell& src) {
    ValueCell* c = acquire();
    c->dv = src.dv;
    c->payload = src.payload;
    if (src.byteCount) {
        if (!reserve(c, src.byteCount)) return release(c), nullptr;
        std::memcpy(c->bytes, src.bytes, src.byteCount);
    }
    c->byteCount = src.byteCount;
    return c;
}

bool ValuePool::assignContents(ValueCell& dst, const ValueCell& src) {
    if (src.byteCount) {
        if (!reserve(&dst, src.byteCount)) return false;
        std::memcpy(dst.bytes, src.bytes, src.byteCount);
    }
    dst.dv = src.dv;
    dst.payload = src.payload;
    dst.byteCount = src.byteCount;
    return true;
}

void ValuePool::swapContents(ValueCell& a, ValueCell& b) noexcept {
    std::swap(a.dv, b.dv);
    std::swap(a.bytes, b.bytes);
    std::swap(a.byteCount, b.byteCount);
    std::swap(a.capacity, b.capacity);
    std::swap(a.payload, b.payload);
}

bool ValuePool::materialize(const ValueCell& c, enc::Arena& arena, ua::DataValue& out) {
    out = c.dv;
    if (c.payload == ValueCell::Payload::RawArray) {
        void* p = arena.allocate(c.byteCount ? c.byteCount : 1, 8);
        if (!p) return false;
        if (c.byteCount) std::memcpy(p, c.bytes, c.byteCount);
        out.value.value.pointer = p;
    } else if (c.payload == ValueCell::Payload::Encoded) {
        // Decoded strings are views into their input: decode from a copy in the arena, so the
        // message stays whole when the cell goes back to the pool and is reused.
        auto* bytes = static_cast<std::uint8_t*>(arena.allocate(c.byteCount ? c.byteCount : 1, 8));
        if (!bytes) return false;
        if (c.byteCount) std::memcpy(bytes, c.bytes, c.byteCount);
        void* decoded = nullptr;
        enc::DecodeLimits limits;
        if (enc::decodeValue({bytes, c.byteCount}, arena, limits, variantType(), &decoded) !=
            UAPLEX_Good)
            return false;
        out.value = *static_cast<ua::Variant*>(decoded);
    }
    return true;
}

bool sameValue(const ValueCell& a, const ValueCell& b) {
    bool hasA = a.dv.mask & UAPLEX_DATAVALUE_VALUE, hasB = b.dv.mask & UAPLEX_DATAVALUE_VALUE;
    if (!hasA || !hasB) return hasA == hasB;
    if (a.dv.value.encoding != b.dv.value.encoding || a.payload != b.payload) return false;
    if (a.payload != ValueCell::Payload::Inline)
        return a.byteCount == b.byteCount &&
               (a.byteCount == 0 || std::memcmp(a.bytes, b.bytes, a.byteCount) == 0) &&
               a.dv.value.array_length == b.dv.value.array_length;
    uint8_t t = a.type();
    if (t == UAPLEX_TYPE_FLOAT)
        return a.dv.value.value.float_ == b.dv.value.value.float_;  // NaN never equal
    if (t == UAPLEX_TYPE_DOUBLE) return a.dv.value.value.double_ == b.dv.value.value.double_;
    if (t == UAPLEX_TYPE_GUID)
        return std::memcmp(&a.dv.value.value.guid, &b.dv.value.value.guid, sizeof(ua::Guid)) == 0;
    uint32_t n = rawSize(t);
    return n == 0 || std::memcmp(&a.dv.value.value, &b.dv.value.value, n) == 0;
}

}  // namespace uaplex::subscription
