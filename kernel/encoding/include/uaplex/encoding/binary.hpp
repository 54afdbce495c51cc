// SPDX-License-Identifier: Apache-2.0
// OPC UA binary encoding (Part 6 5.2): reader, writer and the built-in type codecs.
//
// Decoding and encoding are free functions `decode(BinaryReader&, T&)` and
// `encode(BinaryWriter&, const T&)` in this namespace, overloaded for every built-in type
// and (in generated/types.hpp) every generated structure, so generated code and templates
// call them uniformly and statically - no virtual dispatch on the hot path.
#pragma once

#include <uaplex/statuscodes.h>
#include <uaplex/encoding/arena.hpp>
#include <uaplex/encoding/builtin.hpp>

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <span>
#include <type_traits>
#include <utility>
#include <vector>

namespace uaplex::enc {

static_assert(std::endian::native == std::endian::little,
              "the codec copies little-endian wire values directly");

using namespace uaplex::ua;

// Bounds applied while decoding untrusted input. Exceeding one is BadEncodingLimitsExceeded.
struct DecodeLimits {
    std::size_t maxMessageSize = 16u << 20;
    std::int32_t maxStringLength = 1 << 20;
    std::int32_t maxByteStringLength = 16 << 20;
    std::int32_t maxArrayLength = 1 << 20;
    // Variant in Variant, DataValue, DiagnosticInfo, ExtensionObject bodies, structures.
    std::uint32_t maxNestingDepth = 64;
    std::size_t maxArenaBytes = 64u << 20;
};

// Storage a ByteBuffer can rent instead of taking it from the heap (the server's buffer
// pool). `handle` is the allocator's own record of the block, given back with it.
struct BufferBlock {
    std::uint8_t* data = nullptr;
    std::size_t capacity = 0;
    alignas(8) unsigned char handle[64];  // a uaplex_buffer (the server checks the size)
};

class BufferAllocator {
  public:
    // At least `size` bytes into `out`; false when the allocator cannot (the heap serves).
    virtual bool rent(std::size_t size, BufferBlock& out) noexcept = 0;
    virtual void giveBack(BufferBlock& block) noexcept = 0;

  protected:
    ~BufferAllocator() = default;
};

// A growable byte buffer owned by the caller and reused between messages: clear() keeps the
// storage, so steady-state encoding does not touch the heap. Contents are not zero-filled.
// With an allocator its storage is rented from it and given back by release() (or on
// destruction); moving a buffer moves its storage and its allocator.
class ByteBuffer {
  public:
    ByteBuffer() = default;
    explicit ByteBuffer(std::size_t capacity) { reserve(capacity); }
    ~ByteBuffer() { release(); }
    ByteBuffer(const ByteBuffer&) = delete;
    ByteBuffer& operator=(const ByteBuffer&) = delete;
    ByteBuffer(ByteBuffer&& o) noexcept { take(o); }
    ByteBuffer& operator=(ByteBuffer&& o) noexcept {
        if (this != &o) {
            release();
            take(o);
        }
        return *this;
    }

    std::uint8_t* data() noexcept { return data_; }
    const std::uint8_t* data() const noexcept { return data_; }
    std::size_t size() const noexcept { return size_; }
    std::size_t capacity() const noexcept { return capacity_; }
    void clear() noexcept { size_ = 0; }
    void reserve(std::size_t capacity);
    std::span<const std::uint8_t> span() const noexcept { return {data_, size_}; }
    std::vector<std::uint8_t> toVector() const { return {data_, data_ + size_}; }

    // Where later storage comes from (nullptr: the heap); the current storage stays.
    void setAllocator(BufferAllocator* allocator) noexcept { allocator_ = allocator; }
    BufferAllocator* allocator() const noexcept { return allocator_; }
    // Gives the storage back (to its allocator or the heap); the buffer is empty after.
    void release() noexcept;
    // True while the storage is rented from an allocator.
    bool pooled() const noexcept { return lender_ != nullptr; }

  private:
    friend class BinaryWriter;
    // Replaces the storage with at least `capacity` bytes, keeping the contents.
    bool grow(std::size_t capacity) noexcept;
    void take(ByteBuffer& o) noexcept {
        data_ = std::exchange(o.data_, nullptr);
        size_ = std::exchange(o.size_, 0);
        capacity_ = std::exchange(o.capacity_, 0);
        allocator_ = o.allocator_;
        lender_ = std::exchange(o.lender_, nullptr);
        if (lender_) block_ = o.block_;
    }

    std::uint8_t* data_ = nullptr;
    std::size_t size_ = 0;
    std::size_t capacity_ = 0;
    BufferAllocator* allocator_ = nullptr;
    BufferAllocator* lender_ = nullptr;  // the allocator the storage is rented from
    BufferBlock block_;                  // valid while lender_ is set
};

class BinaryReader {
  public:
    BinaryReader(std::span<const std::uint8_t> input, Arena& arena,
                 const DecodeLimits& limits) noexcept
        : begin_(input.data()),
          pos_(input.data()),
          end_(input.data() + input.size()),
          arena_(&arena),
          limits_(limits) {
        if (input.size() > limits.maxMessageSize) fail(UAPLEX_BadEncodingLimitsExceeded);
    }
    BinaryReader(std::span<const std::byte> input, Arena& arena,
                 const DecodeLimits& limits) noexcept
        : BinaryReader(std::span<const std::uint8_t>(
                           reinterpret_cast<const std::uint8_t*>(input.data()), input.size()),
                       arena, limits) {}

    bool ok() const noexcept { return status_ == UAPLEX_Good; }
    uaplex_status status() const noexcept { return status_; }
    std::size_t remaining() const noexcept { return std::size_t(end_ - pos_); }
    std::size_t position() const noexcept { return std::size_t(pos_ - begin_); }
    const DecodeLimits& limits() const noexcept { return limits_; }
    Arena& arena() noexcept { return *arena_; }

    // Records the first failure; afterwards every read sees no input and yields zeros.
    void fail(uaplex_status s) noexcept {
        if (status_ == UAPLEX_Good) status_ = s;
        pos_ = end_;
    }

    bool need(std::size_t n) noexcept {
        if (remaining() >= n) [[likely]]
            return true;
        fail(UAPLEX_BadDecodingError);
        return false;
    }

    template <class T>
    T readRaw() noexcept {
        static_assert(std::is_trivially_copyable_v<T>);
        T v{};
        if (need(sizeof(T))) [[likely]] {
            std::memcpy(&v, pos_, sizeof(T));
            pos_ += sizeof(T);
        }
        return v;
    }

    // Consumes n bytes and returns a view of them (nullptr after a failure).
    const std::uint8_t* take(std::size_t n) noexcept {
        if (!need(n)) return nullptr;
        const std::uint8_t* p = pos_;
        pos_ += n;
        return p;
    }

    // Arena storage for n elements whose encodings take at least minEncodedSize bytes each.
    // Refuses before allocating when the remaining input cannot hold n such elements.
    template <class T>
    T* allocateElements(std::int32_t n, std::size_t minEncodedSize) noexcept {
        if (n > limits_.maxArrayLength) {
            fail(UAPLEX_BadEncodingLimitsExceeded);
            return nullptr;
        }
        if (std::size_t(n) * minEncodedSize > remaining()) {
            fail(UAPLEX_BadDecodingError);
            return nullptr;
        }
        return allocate<T>(std::size_t(n));
    }

    template <class T>
    T* allocate(std::size_t n = 1) noexcept {
        if (!ok()) return nullptr;
        if (n * sizeof(T) >
            limits_.maxArenaBytes - std::min(arena_->used(), limits_.maxArenaBytes)) {
            fail(UAPLEX_BadEncodingLimitsExceeded);
            return nullptr;
        }
        T* p = arena_->allocateArray<T>(n);
        if (p == nullptr) fail(UAPLEX_BadEncodingLimitsExceeded);
        return p;
    }

    // Nesting guard for recursive types; refuses past maxNestingDepth.
    bool enter() noexcept {
        if (++depth_ <= limits_.maxNestingDepth) [[likely]]
            return true;
        fail(UAPLEX_BadEncodingLimitsExceeded);
        return false;
    }
    void leave() noexcept { --depth_; }
    std::uint32_t depth() const noexcept { return depth_; }

  private:
    const std::uint8_t* begin_;
    const std::uint8_t* pos_;
    const std::uint8_t* end_;
    Arena* arena_;
    DecodeLimits limits_;  // a copy: callers often pass a temporary
    uaplex_status status_ = UAPLEX_Good;
    std::uint32_t depth_ = 0;
};

class BinaryWriter {
  public:
    // Appends to `buffer`; fails with BadEncodingLimitsExceeded past maxSize total bytes.
    explicit BinaryWriter(ByteBuffer& buffer, std::size_t maxSize = 64u << 20) noexcept
        : buf_(&buffer), maxSize_(maxSize) {}

    bool ok() const noexcept { return status_ == UAPLEX_Good; }
    uaplex_status status() const noexcept { return status_; }
    std::size_t size() const noexcept { return buf_->size_; }
    ByteBuffer& buffer() noexcept { return *buf_; }
    void fail(uaplex_status s) noexcept {
        if (status_ == UAPLEX_Good) status_ = s;
    }

    // Space for n more bytes (nullptr after a failure).
    std::uint8_t* reserve(std::size_t n) noexcept {
        if (buf_->capacity_ - buf_->size_ >= n && status_ == UAPLEX_Good) [[likely]] {
            std::uint8_t* p = buf_->data_ + buf_->size_;
            buf_->size_ += n;
            return p;
        }
        return reserveSlow(n);
    }
    template <class T>
    void writeRaw(T v) noexcept {
        static_assert(std::is_trivially_copyable_v<T>);
        if (std::uint8_t* p = reserve(sizeof(T))) [[likely]]
            std::memcpy(p, &v, sizeof(T));
    }
    void writeBytes(const void* data, std::size_t n) noexcept {
        if (n == 0) return;
        if (std::uint8_t* p = reserve(n)) std::memcpy(p, data, n);
    }
    // Overwrites 4 bytes at `offset` (used to back-fill ExtensionObject body lengths).
    void patchInt32(std::size_t offset, std::int32_t v) noexcept {
        if (ok() && offset + 4 <= buf_->size_) std::memcpy(buf_->data_ + offset, &v, 4);
    }

  private:
    std::uint8_t* reserveSlow(std::size_t n) noexcept;
    ByteBuffer* buf_;
    std::size_t maxSize_;
    uaplex_status status_ = UAPLEX_Good;
};

// ---- primitives (Part 6 5.2.2.1-5.2.2.3) ----
#define UAPLEX_ENC_PRIMITIVE(T)                                \
    inline void decode(BinaryReader& r, T& v) noexcept {       \
        v = r.readRaw<T>();                                    \
    }                                                          \
    inline void encode(BinaryWriter& w, const T& v) noexcept { \
        w.writeRaw<T>(v);                                      \
    }
UAPLEX_ENC_PRIMITIVE(std::int8_t)
UAPLEX_ENC_PRIMITIVE(std::uint8_t)
UAPLEX_ENC_PRIMITIVE(std::int16_t)
UAPLEX_ENC_PRIMITIVE(std::uint16_t)
UAPLEX_ENC_PRIMITIVE(std::int32_t)
UAPLEX_ENC_PRIMITIVE(std::uint32_t)
UAPLEX_ENC_PRIMITIVE(std::int64_t)
UAPLEX_ENC_PRIMITIVE(std::uint64_t)
UAPLEX_ENC_PRIMITIVE(float)
UAPLEX_ENC_PRIMITIVE(double)
#undef UAPLEX_ENC_PRIMITIVE

// Any non-zero byte decodes as true (Part 6 5.2.2.1); true encodes as 1.
inline void decode(BinaryReader& r, bool& v) noexcept {
    v = r.readRaw<std::uint8_t>() != 0;
}
inline void encode(BinaryWriter& w, const bool& v) noexcept {
    w.writeRaw<std::uint8_t>(v ? 1 : 0);
}

// Enumerations travel as their underlying integer (Int32, or the option set's width).
template <class E>
requires std::is_enum_v<E>
inline void decode(BinaryReader& r, E& v) noexcept {
    v = static_cast<E>(r.readRaw<std::underlying_type_t<E>>());
}
template <class E>
requires std::is_enum_v<E>
inline void encode(BinaryWriter& w, const E& v) noexcept {
    w.writeRaw(static_cast<std::underlying_type_t<E>>(v));
}

// ---- String / ByteString / XmlElement: zero-copy views into the input ----
inline void decode(BinaryReader& r, String& v) noexcept {
    std::int32_t n = r.readRaw<std::int32_t>();
    if (n < 0) {
        v = String{-1, nullptr};
        return;
    }
    if (n > r.limits().maxStringLength) {
        r.fail(UAPLEX_BadEncodingLimitsExceeded);
        v = String{-1, nullptr};
        return;
    }
    const std::uint8_t* p = r.take(std::size_t(n));
    v = p ? String{n, reinterpret_cast<const char*>(p)} : String{-1, nullptr};
}
inline void encode(BinaryWriter& w, const String& v) noexcept {
    std::int32_t n = v.length < 0 ? -1 : v.length;
    w.writeRaw(n);
    if (n > 0) w.writeBytes(v.data, std::size_t(n));
}
void decode(BinaryReader& r, ByteString& v) noexcept;
void encode(BinaryWriter& w, const ByteString& v) noexcept;

inline void decode(BinaryReader& r, Guid& v) noexcept {
    v = r.readRaw<Guid>();
}
inline void encode(BinaryWriter& w, const Guid& v) noexcept {
    w.writeRaw(v);
}
static_assert(sizeof(Guid) == 16);

void decode(BinaryReader& r, NodeId& v) noexcept;
void encode(BinaryWriter& w, const NodeId& v) noexcept;
void decode(BinaryReader& r, ExpandedNodeId& v) noexcept;
void encode(BinaryWriter& w, const ExpandedNodeId& v) noexcept;
void decode(BinaryReader& r, QualifiedName& v) noexcept;
void encode(BinaryWriter& w, const QualifiedName& v) noexcept;
void decode(BinaryReader& r, LocalizedText& v) noexcept;
void encode(BinaryWriter& w, const LocalizedText& v) noexcept;
void decode(BinaryReader& r, Variant& v) noexcept;
void encode(BinaryWriter& w, const Variant& v) noexcept;
void decode(BinaryReader& r, DataValue& v) noexcept;
void encode(BinaryWriter& w, const DataValue& v) noexcept;
void decode(BinaryReader& r, ExtensionObject& v) noexcept;
void encode(BinaryWriter& w, const ExtensionObject& v) noexcept;
void decode(BinaryReader& r, DiagnosticInfo& v) noexcept;
void encode(BinaryWriter& w, const DiagnosticInfo& v) noexcept;

// Smallest encoded size of one element, used to refuse array lengths the input cannot hold.
template <class T>
constexpr std::size_t minEncodedSize() noexcept {
    if constexpr (std::is_arithmetic_v<T> || std::is_enum_v<T>)
        return sizeof(T);
    else if constexpr (std::is_same_v<T, String> || std::is_same_v<T, ByteString>)
        return 4;
    else if constexpr (std::is_same_v<T, Guid>)
        return 16;
    else if constexpr (std::is_same_v<T, NodeId> || std::is_same_v<T, ExpandedNodeId>)
        return 2;
    else if constexpr (std::is_same_v<T, QualifiedName>)
        return 6;
    else if constexpr (std::is_same_v<T, ExtensionObject>)
        return 3;
    else if constexpr (std::is_same_v<T, LocalizedText> || std::is_same_v<T, Variant> ||
                       std::is_same_v<T, DataValue> || std::is_same_v<T, DiagnosticInfo>)
        return 1;
    else
        return T::kMinEncodedSize;  // generated structures
}

// ---- arrays: Int32 length (-1 null) followed by the elements ----
template <class T>
void decode(BinaryReader& r, Array<T>& a) noexcept {
    std::int32_t n = r.readRaw<std::int32_t>();
    if (n < 0 || !r.ok()) {
        a = Array<T>{-1, nullptr};
        return;
    }
    T* data = r.template allocateElements<T>(n, minEncodedSize<T>());
    if (data == nullptr) {
        a = Array<T>{-1, nullptr};
        return;
    }
    a = Array<T>{n, data};
    if constexpr (std::is_arithmetic_v<T> && !std::is_same_v<T, bool>) {
        const std::uint8_t* p = r.take(std::size_t(n) * sizeof(T));
        if (p != nullptr && n != 0) std::memcpy(data, p, std::size_t(n) * sizeof(T));
    } else {
        for (std::int32_t i = 0; i < n && r.ok(); ++i) decode(r, data[i]);
    }
}
template <class T>
void encode(BinaryWriter& w, const Array<T>& a) noexcept {
    std::int32_t n = a.length < 0 ? -1 : a.length;
    w.writeRaw(n);
    if constexpr (std::is_arithmetic_v<T> && !std::is_same_v<T, bool>) {
        if (n > 0) w.writeBytes(a.data, std::size_t(n) * sizeof(T));
    } else {
        for (std::int32_t i = 0; i < n && w.ok(); ++i) encode(w, a.data[i]);
    }
}

// Minimum encoded size of a value of built-in type id t (0 for Null), for Variant arrays.
std::size_t builtinMinEncodedSize(std::uint8_t typeId) noexcept;
// Size of the C representation of one array element of built-in type id t.
std::size_t builtinElementSize(std::uint8_t typeId) noexcept;

}  // namespace uaplex::enc
