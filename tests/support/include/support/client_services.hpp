// SPDX-License-Identifier: Apache-2.0
// The services the integration tests call again and again through test::Client: a
// namespace's index, one Read, one Int32 Write, a subscription, and the check that a
// legitimate client is still served. Each REQUIREs a Good service result.
#pragma once

#include <catch2/catch.hpp>

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "support/opcua_client.hpp"

namespace uaplex::test {

// The index of `uri` in the server's NamespaceArray; the test fails if it is not there.
inline std::uint16_t namespaceIndex(Client& c, std::string_view uri, std::uint32_t handle = 1) {
    ua::ReadValueId id{};
    id.nodeId = ua::numericNodeId(0, 2255);  // NamespaceArray
    id.attributeId = 13;
    ua::ReadRequest r{};
    r.nodesToRead = {1, &id};
    auto m = c.call(r, handle);
    REQUIRE(Client::result(m) == UAPLEX_Good);
    const auto& v = static_cast<ua::ReadResponse*>(m.object)->results[0].value;
    auto* s = static_cast<const ua::String*>(v.value.pointer);
    for (std::int32_t i = 0; i < v.array_length; ++i)
        if (ua::view(s[i]) == uri) return std::uint16_t(i);
    FAIL("no namespace " << uri);
    return 0;
}

// The namespace of the demo node manager (docs/nodemanagers.md).
inline std::uint16_t demoNamespace(Client& c) {
    return namespaceIndex(c, "urn:uaplex:demo");
}

// One attribute of one node (Value by default). The result points into the client's
// decoded response: valid until its next call.
inline ua::DataValue readOne(Client& c, const ua::NodeId& node, std::uint32_t attribute = 13,
                             std::uint32_t handle = 1) {
    ua::ReadValueId id{};
    id.nodeId = node;
    id.attributeId = attribute;
    ua::ReadRequest r{};
    r.nodesToRead = {1, &id};
    auto m = c.call(r, handle);
    REQUIRE(Client::result(m) == UAPLEX_Good);
    return static_cast<ua::ReadResponse*>(m.object)->results[0];
}

// The Value of one node set to an Int32; the operation's status.
inline uaplex_status writeInt32(Client& c, const ua::NodeId& node, std::int32_t value) {
    ua::WriteValue wv{};
    wv.nodeId = node;
    wv.attributeId = 13;
    wv.indexRange = ua::nullString();
    wv.value.mask = UAPLEX_DATAVALUE_VALUE;
    wv.value.value = ua::variantInt32(value);
    ua::WriteRequest w{};
    w.nodesToWrite = {1, &wv};
    auto m = c.call(w);
    REQUIRE(Client::result(m) == UAPLEX_Good);
    return static_cast<ua::WriteResponse*>(m.object)->results[0];
}

// A publishing subscription; its id.
struct SubscriptionParams {
    double publishingInterval = 1000;
    std::uint32_t lifetimeCount = 3000;
    std::uint32_t maxKeepAliveCount = 10;
};
inline std::uint32_t createSubscription(Client& c, const SubscriptionParams& p = {},
                                        std::uint32_t handle = 1) {
    ua::CreateSubscriptionRequest cs{};
    cs.requestedPublishingInterval = p.publishingInterval;
    cs.requestedLifetimeCount = p.lifetimeCount;
    cs.requestedMaxKeepAliveCount = p.maxKeepAliveCount;
    cs.publishingEnabled = true;
    auto m = c.call(cs, handle);
    REQUIRE(Client::result(m) == UAPLEX_Good);
    return static_cast<ua::CreateSubscriptionResponse*>(m.object)->subscriptionId;
}

// A legitimate anonymous client, next to an attack: a session and a Read of the server state.
inline void legitimateClientServed(std::uint16_t port) {
    Client c;
    REQUIRE(c.open(port));
    REQUIRE(c.createSession() == UAPLEX_Good);
    std::vector<ua::ReadValueId> ids(1);
    auto read = readServerState(ids);
    auto m = c.call(read);
    REQUIRE(Client::result(m) == UAPLEX_Good);
    CHECK(static_cast<ua::ReadResponse*>(m.object)->results[0].status == UAPLEX_Good);
}

// One event item on the Server object (its EventNotifier) in `subscriptionId`, selecting
// `select` (an EventFilter without a where clause), clientHandle 7, queue 1000; REQUIREs Good.
inline void monitorServerEvents(Client& c, std::uint32_t subscriptionId,
                                std::span<ua::SimpleAttributeOperand> select,
                                std::uint32_t handle) {
    ua::EventFilter filter{};
    filter.selectClauses = {std::int32_t(select.size()), select.data()};
    filter.whereClause.elements = {0, nullptr};
    ua::MonitoredItemCreateRequest item{};
    item.itemToMonitor.nodeId = ua::numericNodeId(0, 2253);  // the Server object
    item.itemToMonitor.attributeId = 12;                     // EventNotifier
    item.itemToMonitor.indexRange = ua::nullString();
    item.monitoringMode = ua::MonitoringMode::Reporting;
    item.requestedParameters.clientHandle = 7;
    item.requestedParameters.queueSize = 1000;
    item.requestedParameters.discardOldest = true;
    auto& eo = item.requestedParameters.filter;
    eo.encoding = UAPLEX_EXTENSIONOBJECT_BINARY;
    eo.type_id = ua::numericNodeId(0, enc::dataTypeOf<ua::EventFilter>()->binaryEncodingId);
    eo.data_type = enc::dataTypeOf<ua::EventFilter>();
    eo.object = &filter;
    ua::CreateMonitoredItemsRequest cmi{};
    cmi.subscriptionId = subscriptionId;
    cmi.timestampsToReturn = ua::TimestampsToReturn::Both;
    cmi.itemsToCreate = {1, &item};
    auto m = c.call(cmi, handle);
    REQUIRE(Client::result(m) == UAPLEX_Good);
    REQUIRE(static_cast<ua::CreateMonitoredItemsResponse*>(m.object)->results[0].statusCode ==
            UAPLEX_Good);
}

}  // namespace uaplex::test
