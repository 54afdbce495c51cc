// SPDX-License-Identifier: Apache-2.0
// Representative service messages for the allocation test and the benchmarks.
#pragma once

#include <uaplex/encoding/encoding.hpp>

#include <cstdint>
#include <vector>

namespace uaplex::test {

// Storage for a ReadResponse / WriteRequest / PublishResponse built without an arena.
struct ReadResponseFixture {
    std::vector<ua::DataValue> values;
    ua::ReadResponse response{};

    explicit ReadResponseFixture(int n) : values(std::size_t(n)) {
        for (int i = 0; i < n; ++i) {
            ua::DataValue& d = values[std::size_t(i)];
            d.mask = UAPLEX_DATAVALUE_VALUE | UAPLEX_DATAVALUE_SOURCE_TIMESTAMP |
                     UAPLEX_DATAVALUE_SERVER_TIMESTAMP;
            d.value = ua::variantDouble(i * 0.5);
            d.source_timestamp = 133000000000000000 + i;
            d.server_timestamp = 133000000000000001 + i;
        }
        response.responseHeader.timestamp = 133000000000000000;
        response.responseHeader.requestHandle = 7;
        response.responseHeader.stringTable = {-1, nullptr};
        response.responseHeader.additionalHeader.type_id = ua::numericNodeId(0, 0);
        response.results = {n, values.data()};
        response.diagnosticInfos = {-1, nullptr};
    }
};

struct ReadRequestFixture {
    std::vector<ua::ReadValueId> nodes;
    ua::ReadRequest request{};

    explicit ReadRequestFixture(int n) : nodes(std::size_t(n)) {
        for (int i = 0; i < n; ++i) {
            ua::ReadValueId& r = nodes[std::size_t(i)];
            r.nodeId = ua::stringNodeId(2, "Demo.Dynamic.Scalar.Double");
            r.attributeId = 13;
            r.indexRange = ua::nullString();
            r.dataEncoding = ua::QualifiedName{0, ua::nullString()};
        }
        request.requestHeader.authenticationToken = ua::numericNodeId(1, 42424242);
        request.requestHeader.timestamp = 133000000000000000;
        request.requestHeader.requestHandle = 7;
        request.requestHeader.auditEntryId = ua::nullString();
        request.requestHeader.timeoutHint = 10000;
        request.requestHeader.additionalHeader.type_id = ua::numericNodeId(0, 0);
        request.timestampsToReturn = ua::TimestampsToReturn::Both;
        request.nodesToRead = {n, nodes.data()};
    }
};

struct WriteRequestFixture {
    std::vector<ua::WriteValue> nodes;
    ua::WriteRequest request{};

    explicit WriteRequestFixture(int n) : nodes(std::size_t(n)) {
        for (int i = 0; i < n; ++i) {
            ua::WriteValue& w = nodes[std::size_t(i)];
            w.nodeId = ua::numericNodeId(2, 5000 + std::uint32_t(i));
            w.attributeId = 13;
            w.indexRange = ua::nullString();
            w.value.mask = UAPLEX_DATAVALUE_VALUE;
            w.value.value = ua::variantInt32(i);
        }
        request.requestHeader.authenticationToken = ua::numericNodeId(1, 42424242);
        request.requestHeader.auditEntryId = ua::nullString();
        request.requestHeader.additionalHeader.type_id = ua::numericNodeId(0, 0);
        request.nodesToWrite = {n, nodes.data()};
    }
};

// A PublishResponse carrying one DataChangeNotification with n MonitoredItemNotifications.
struct PublishResponseFixture {
    std::vector<ua::MonitoredItemNotification> items;
    ua::DataChangeNotification dataChange{};
    ua::ExtensionObject notificationData{};
    std::uint32_t available = 1;
    ua::PublishResponse response{};

    explicit PublishResponseFixture(int n) : items(std::size_t(n)) {
        for (int i = 0; i < n; ++i) {
            ua::MonitoredItemNotification& m = items[std::size_t(i)];
            m.clientHandle = std::uint32_t(i);
            m.value.mask = UAPLEX_DATAVALUE_VALUE | UAPLEX_DATAVALUE_SOURCE_TIMESTAMP;
            m.value.value = ua::variantDouble(i);
            m.value.source_timestamp = 133000000000000000 + i;
        }
        dataChange.monitoredItems = {n, items.data()};
        dataChange.diagnosticInfos = {-1, nullptr};
        notificationData.type_id =
            ua::numericNodeId(0, ua::ns0::DataChangeNotification_Encoding_DefaultBinary);
        notificationData.encoding = UAPLEX_EXTENSIONOBJECT_BINARY;
        notificationData.data_type = enc::dataTypeOf<ua::DataChangeNotification>();
        notificationData.object = &dataChange;
        response.responseHeader.stringTable = {-1, nullptr};
        response.responseHeader.additionalHeader.type_id = ua::numericNodeId(0, 0);
        response.subscriptionId = 1;
        response.availableSequenceNumbers = {1, &available};
        response.moreNotifications = false;
        response.notificationMessage.sequenceNumber = 1;
        response.notificationMessage.publishTime = 133000000000000000;
        response.notificationMessage.notificationData = {1, &notificationData};
        response.results = {0, nullptr};
        response.diagnosticInfos = {-1, nullptr};
    }
};

template <class T>
std::vector<std::uint8_t> encodeMessageBytes(const T& message) {
    enc::ByteBuffer buf;
    enc::BinaryWriter w(buf);
    enc::encodeMessage(w, message);
    return buf.toVector();
}

}  // namespace uaplex::test
