// SPDX-License-Identifier: Apache-2.0
#include <uaplex/encoding/uadp.hpp>

namespace uaplex::enc::uadp {

namespace {

constexpr std::uint8_t kUadpVersion = 1;
constexpr std::uint8_t kPublisherIdString = 4;

}  // namespace

void writeNetworkHeader(BinaryWriter& w, const NetworkHeader& h, std::uint16_t dataSetWriterId) {
    const std::uint32_t m = h.contentMask;
    const bool publisherId = (m & kNmPublisherId) != 0;
    const bool groupHeader = (m & kNmGroupHeader) != 0;
    const bool payloadHeader = (m & kNmPayloadHeader) != 0;
    const bool timestamp = (m & kNmTimestamp) != 0;
    const bool pico = (m & kNmPicoSeconds) != 0;
    // ExtendedFlags1 carries the PublisherId type (String is not the default Byte) and the
    // extended header's flags.
    const bool ext1 = publisherId || timestamp || pico;
    // UADPVersion/Flags: bits 0-3 UADPVersion, 4 PublisherId, 5 GroupHeader, 6 PayloadHeader,
    // 7 ExtendedFlags1.
    std::uint8_t flags = kUadpVersion;
    if (publisherId) flags |= 0x10;
    if (groupHeader) flags |= 0x20;
    if (payloadHeader) flags |= 0x40;
    if (ext1) flags |= 0x80;
    encode(w, flags);
    if (ext1) {
        // ExtendedFlags1: bits 0-2 PublisherId type, 3 DataSetClassId, 4 Security,
        // 5 Timestamp, 6 PicoSeconds, 7 ExtendedFlags2.
        std::uint8_t e1 = publisherId ? kPublisherIdString : 0;
        if (timestamp) e1 |= 0x20;
        if (pico) e1 |= 0x40;
        encode(w, e1);
    }
    if (publisherId) encode(w, ua::makeString(h.publisherId));
    if (groupHeader) {
        // GroupFlags: 0 WriterGroupId, 1 GroupVersion, 2 NetworkMessageNumber, 3 SequenceNumber.
        std::uint8_t g = 0;
        if (m & kNmWriterGroupId) g |= 0x01;
        if (m & kNmGroupVersion) g |= 0x02;
        if (m & kNmNetworkMessageNumber) g |= 0x04;
        if (m & kNmSequenceNumber) g |= 0x08;
        encode(w, g);
        if (m & kNmWriterGroupId) encode(w, h.writerGroupId);
        if (m & kNmGroupVersion) encode(w, h.groupVersion);
        if (m & kNmNetworkMessageNumber) encode(w, h.networkMessageNumber);
        if (m & kNmSequenceNumber) encode(w, h.sequenceNumber);
    }
    if (payloadHeader) {
        encode(w, std::uint8_t(1));  // Count
        encode(w, dataSetWriterId);  // DataSetWriterIds[1]
    }
    if (timestamp) encode(w, h.timestamp);
    if (pico) encode(w, std::uint16_t(0));
}

std::size_t writeDataSetHeader(BinaryWriter& w, const DataSetHeader& h) {
    const std::uint32_t m = h.contentMask;
    const bool timestamp = (m & kDsTimestamp) != 0;
    const bool pico = timestamp && (m & kDsPicoSeconds) != 0;
    const bool flags2 = h.type != MessageType::KeyFrame || timestamp;
    // DataSetFlags1: 0 valid, 1-2 Field Encoding, 3 SequenceNumber, 4 Status,
    // 5 MajorVersion, 6 MinorVersion, 7 DataSetFlags2.
    std::uint8_t f1 = 0x01;
    if (h.fieldContentMask != 0) f1 |= std::uint8_t(FieldEncoding::DataValue) << 1;
    if (m & kDsSequenceNumber) f1 |= 0x08;
    if (m & kDsStatus) f1 |= 0x10;
    if (m & kDsMajorVersion) f1 |= 0x20;
    if (m & kDsMinorVersion) f1 |= 0x40;
    if (flags2) f1 |= 0x80;
    encode(w, f1);
    if (flags2) {
        // DataSetFlags2: 0-3 the DataSetMessage type, 4 Timestamp, 5 PicoSeconds.
        std::uint8_t f2 = std::uint8_t(h.type);
        if (timestamp) f2 |= 0x10;
        if (pico) f2 |= 0x20;
        encode(w, f2);
    }
    if (m & kDsSequenceNumber) encode(w, h.sequenceNumber);
    if (timestamp) encode(w, h.timestamp);
    if (pico) encode(w, std::uint16_t(0));
    if (m & kDsStatus) encode(w, h.status);
    if (m & kDsMajorVersion) encode(w, h.majorVersion);
    if (m & kDsMinorVersion) encode(w, h.minorVersion);
    if (h.type == MessageType::KeepAlive) return SIZE_MAX;  // no fields
    const std::size_t at = w.size();
    encode(w, std::uint16_t(0));  // FieldCount, patched
    return at;
}

void patchFieldCount(BinaryWriter& w, std::size_t offset, std::uint16_t count) noexcept {
    if (!w.ok() || offset + 2 > w.size()) return;
    std::memcpy(w.buffer().data() + offset, &count, 2);
}

void writeField(BinaryWriter& w, std::uint32_t fieldContentMask, const ua::DataValue& v) {
    const bool bad = (v.mask & UAPLEX_DATAVALUE_STATUS) && (v.status & 0x80000000u) != 0;
    if (fieldContentMask == 0) {
        if (bad) {
            ua::Variant s{};
            s.encoding = std::uint8_t(UAPLEX_TYPE_STATUSCODE);
            s.value.statuscode = v.status;
            encode(w, s);
        } else if (v.mask & UAPLEX_DATAVALUE_VALUE) {
            encode(w, v.value);
        } else {
            encode(w, ua::Variant{});
        }
        return;
    }
    ua::DataValue d{};
    if (v.mask & UAPLEX_DATAVALUE_VALUE) {
        d.mask |= UAPLEX_DATAVALUE_VALUE;
        d.value = v.value;
    }
    if ((fieldContentMask & kFieldStatusCode) && (v.mask & UAPLEX_DATAVALUE_STATUS) &&
        v.status != UAPLEX_Good) {
        d.mask |= UAPLEX_DATAVALUE_STATUS;
        d.status = v.status;
    }
    if ((fieldContentMask & kFieldSourceTimestamp) &&
        (v.mask & UAPLEX_DATAVALUE_SOURCE_TIMESTAMP)) {
        d.mask |= UAPLEX_DATAVALUE_SOURCE_TIMESTAMP;
        d.source_timestamp = v.source_timestamp;
        if ((fieldContentMask & kFieldSourcePicoSeconds) &&
            (v.mask & UAPLEX_DATAVALUE_SOURCE_PICOSECONDS)) {
            d.mask |= UAPLEX_DATAVALUE_SOURCE_PICOSECONDS;
            d.source_picoseconds = v.source_picoseconds;
        }
    }
    if ((fieldContentMask & kFieldServerTimestamp) &&
        (v.mask & UAPLEX_DATAVALUE_SERVER_TIMESTAMP)) {
        d.mask |= UAPLEX_DATAVALUE_SERVER_TIMESTAMP;
        d.server_timestamp = v.server_timestamp;
        if ((fieldContentMask & kFieldServerPicoSeconds) &&
            (v.mask & UAPLEX_DATAVALUE_SERVER_PICOSECONDS)) {
            d.mask |= UAPLEX_DATAVALUE_SERVER_PICOSECONDS;
            d.server_picoseconds = v.server_picoseconds;
        }
    }
    encode(w, d);
}

namespace {

// One DataSetMessage from r (its bytes only: the caller bounds r to the message's size).
void decodeDataSetMessage(BinaryReader& r, DataSetMessage& m) noexcept {
    std::uint8_t f1 = 0, f2 = 0;
    decode(r, f1);
    m.valid = (f1 & 0x01) != 0;
    const std::uint8_t enc = (f1 >> 1) & 0x03;
    if (enc == 3) return r.fail(UAPLEX_BadDecodingError);  // reserved
    if (enc == 1) return r.fail(UAPLEX_BadNotSupported);   // RawData needs the metadata
    m.encoding = FieldEncoding(enc);
    if (f1 & 0x80) decode(r, f2);
    if ((f2 & 0x0F) > 3) return r.fail(UAPLEX_BadNotSupported);
    m.type = MessageType(f2 & 0x0F);
    if (m.type == MessageType::Event) return r.fail(UAPLEX_BadNotSupported);
    m.hasSequenceNumber = (f1 & 0x08) != 0;
    m.hasStatus = (f1 & 0x10) != 0;
    m.hasMajorVersion = (f1 & 0x20) != 0;
    m.hasMinorVersion = (f1 & 0x40) != 0;
    m.hasTimestamp = (f2 & 0x10) != 0;
    if (m.hasSequenceNumber) decode(r, m.sequenceNumber);
    if (m.hasTimestamp) decode(r, m.timestamp);
    if (f2 & 0x20) decode(r, m.picoSeconds);
    if (m.hasStatus) decode(r, m.status);
    if (m.hasMajorVersion) decode(r, m.majorVersion);
    if (m.hasMinorVersion) decode(r, m.minorVersion);
    if (!r.ok() || !m.valid || m.type == MessageType::KeepAlive) return;
    decode(r, m.fieldCount);
    if (!r.ok() || m.fieldCount == 0) return;
    const bool delta = m.type == MessageType::DeltaFrame;
    // Each field takes at least one byte (a Variant's or DataValue's mask), a delta frame's two
    // more for its index: refuse before allocating what the input cannot hold.
    auto* values = r.allocateElements<ua::DataValue>(m.fieldCount, delta ? 3 : 1);
    std::uint16_t* indexes = delta ? r.allocate<std::uint16_t>(m.fieldCount) : nullptr;
    if (!values || (delta && !indexes)) return;
    for (std::uint16_t i = 0; i < m.fieldCount && r.ok(); ++i) {
        if (delta) decode(r, indexes[i]);
        values[i] = ua::DataValue{};
        if (m.encoding == FieldEncoding::Variant) {
            decode(r, values[i].value);
            values[i].mask = UAPLEX_DATAVALUE_VALUE;
        } else {
            decode(r, values[i]);
        }
    }
    m.values = values;
    m.fieldIndexes = indexes;
}

}  // namespace

uaplex_status decodeNetworkMessage(std::span<const std::uint8_t> input, Arena& arena,
                                   const DecodeLimits& limits, NetworkMessage& out) noexcept {
    out = NetworkMessage{};
    BinaryReader r(input, arena, limits);
    std::uint8_t flags = 0, e1 = 0, e2 = 0;
    decode(r, flags);
    if (!r.ok()) return r.status();
    out.version = flags & 0x0F;
    if (out.version != kUadpVersion) return UAPLEX_BadNotSupported;
    if (flags & 0x80) decode(r, e1);
    if (e1 & 0x80) decode(r, e2);
    if (e1 & 0x10) return UAPLEX_BadNotSupported;                // Security
    if (e2 & 0x01) return UAPLEX_BadNotSupported;                // a chunk
    if (e2 & 0x02) return UAPLEX_BadNotSupported;                // PromotedFields
    if (((e2 >> 2) & 0x07) != 0) return UAPLEX_BadNotSupported;  // discovery messages
    if (e2 & 0xE0) return UAPLEX_BadDecodingError;               // reserved bits
    out.hasPublisherId = (flags & 0x10) != 0;
    out.publisherIdType = e1 & 0x07;
    if (out.hasPublisherId) {
        switch (out.publisherIdType) {
            case 0: {
                std::uint8_t v = 0;
                decode(r, v);
                out.publisherIdNumber = v;
                break;
            }
            case 1: {
                std::uint16_t v = 0;
                decode(r, v);
                out.publisherIdNumber = v;
                break;
            }
            case 2: {
                std::uint32_t v = 0;
                decode(r, v);
                out.publisherIdNumber = v;
                break;
            }
            case 3:
                decode(r, out.publisherIdNumber);
                break;
            case 4: {
                ua::String s{};
                decode(r, s);
                if (s.length > 0) out.publisherIdString = {s.data, std::size_t(s.length)};
                break;
            }
            default:
                return UAPLEX_BadDecodingError;
        }
    }
    if (e1 & 0x08) (void)r.take(16);  // DataSetClassId, a Guid
    out.hasGroupHeader = (flags & 0x20) != 0;
    if (out.hasGroupHeader) {
        std::uint8_t g = 0;
        decode(r, g);
        if (g & 0xF0) return r.ok() ? UAPLEX_BadDecodingError : r.status();
        out.hasWriterGroupId = (g & 0x01) != 0;
        out.hasGroupVersion = (g & 0x02) != 0;
        out.hasNetworkMessageNumber = (g & 0x04) != 0;
        out.hasSequenceNumber = (g & 0x08) != 0;
        if (out.hasWriterGroupId) decode(r, out.writerGroupId);
        if (out.hasGroupVersion) decode(r, out.groupVersion);
        if (out.hasNetworkMessageNumber) decode(r, out.networkMessageNumber);
        if (out.hasSequenceNumber) decode(r, out.sequenceNumber);
    }
    const bool payloadHeader = (flags & 0x40) != 0;
    std::uint16_t* writerIds = nullptr;
    if (payloadHeader) {
        decode(r, out.count);
        if (!r.ok()) return r.status();
        if (out.count == 0) return UAPLEX_BadDecodingError;
        writerIds = r.allocateElements<std::uint16_t>(out.count, 2);
        for (std::uint8_t i = 0; i < out.count && r.ok(); ++i) decode(r, writerIds[i]);
    } else {
        out.count = 1;  // without a PayloadHeader: one DataSetMessage
    }
    out.hasTimestamp = (e1 & 0x20) != 0;
    if (out.hasTimestamp) decode(r, out.timestamp);
    if (e1 & 0x40) decode(r, out.picoSeconds);
    if (!r.ok()) return r.status();
    // Sizes, when there are several DataSetMessages.
    std::uint16_t* sizes = nullptr;
    if (payloadHeader && out.count > 1) {
        sizes = r.allocateElements<std::uint16_t>(out.count, 2);
        for (std::uint8_t i = 0; i < out.count && r.ok(); ++i) decode(r, sizes[i]);
    }
    out.messages = r.allocate<DataSetMessage>(out.count);
    if (!r.ok()) return r.status();
    for (std::uint8_t i = 0; i < out.count; ++i) {
        DataSetMessage& m = out.messages[i];
        m = DataSetMessage{};
        m.dataSetWriterId = writerIds ? writerIds[i] : 0;
        // The message's own bytes: Sizes[i], or the rest of the input for the last one.
        const std::size_t size = sizes ? sizes[i] : r.remaining();
        const std::uint8_t* bytes = r.take(size);
        if (!r.ok()) return r.status();
        BinaryReader sub(std::span<const std::uint8_t>(bytes, size), arena, limits);
        decodeDataSetMessage(sub, m);
        if (!sub.ok()) return sub.status();
        if (m.valid && sub.remaining() != 0) return UAPLEX_BadDecodingError;
    }
    if (r.remaining() != 0) return UAPLEX_BadDecodingError;
    return UAPLEX_Good;
}

}  // namespace uaplex::enc::uadp
