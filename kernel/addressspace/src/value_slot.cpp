// SPDX-License-Identifier: Apache-2.0
#include <uaplex/addressspace/value_slot.hpp>

#include <cstring>
#include <thread>

namespace uaplex::addressspace {

const enc::DataType& variantType() noexcept {
    static const enc::DataType* t = enc::findDataType("Variant");
    return *t;
}

void ValueSlot::lock() const noexcept {
    // Held for a copy of a few bytes; spinning beats parking a thread here.
    while (busy_.exchange(true, std::memory_order_acquire)) {
        while (busy_.load(std::memory_order_relaxed)) std::this_thread::yield();
    }
}

uaplex_status ValueSlot::read(enc::Arena& arena, ua::DataValue& out) const noexcept {
    out = ua::DataValue{};
    lock();
    std::size_t n = bytes_.size();
    auto* copy = static_cast<std::uint8_t*>(arena.allocate(n == 0 ? 1 : n, 8));
    if (copy == nullptr) {
        unlock();
        return UAPLEX_BadOutOfMemory;
    }
    if (n != 0) std::memcpy(copy, bytes_.data(), n);
    out.mask = mask_;
    out.status = status_;
    out.source_timestamp = sourceTimestamp_;
    out.server_timestamp = serverTimestamp_;
    out.source_picoseconds = sourcePicoseconds_;
    unlock();
    out.mask |= UAPLEX_DATAVALUE_VALUE;
    if (n == 0) return UAPLEX_Good;  // null Variant
    // Strings in the decoded value point into the arena copy, not into the slot.
    enc::BinaryReader reader(std::span<const std::uint8_t>(copy, n), arena, enc::DecodeLimits{});
    enc::decode(reader, out.value);
    return reader.status();
}

uaplex_status ValueSlot::store(const ua::DataValue& value) noexcept {
    thread_local enc::ByteBuffer scratch;
    scratch.clear();
    bool hasValue = (value.mask & UAPLEX_DATAVALUE_VALUE) != 0 &&
                    (value.value.encoding & UAPLEX_VARIANT_TYPE_MASK) != 0;
    if (hasValue) {
        uaplex_status st = enc::encodeValue(scratch, variantType(), &value.value);
        if (st != UAPLEX_Good) return st;
    }
    lock();
    try {
        bytes_.assign(scratch.data(), scratch.data() + scratch.size());
    } catch (...) {
        unlock();
        return UAPLEX_BadOutOfMemory;
    }
    mask_ = value.mask & ~UAPLEX_DATAVALUE_VALUE;
    status_ = (value.mask & UAPLEX_DATAVALUE_STATUS) ? value.status : 0;
    sourceTimestamp_ =
        (value.mask & UAPLEX_DATAVALUE_SOURCE_TIMESTAMP) ? value.source_timestamp : 0;
    serverTimestamp_ =
        (value.mask & UAPLEX_DATAVALUE_SERVER_TIMESTAMP) ? value.server_timestamp : 0;
    sourcePicoseconds_ = value.source_picoseconds;
    unlock();
    version_.fetch_add(1, std::memory_order_acq_rel);
    return UAPLEX_Good;
}

}  // namespace uaplex::addressspace
