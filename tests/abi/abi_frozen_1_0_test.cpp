// SPDX-License-Identifier: Apache-2.0
// Plugins built against the 1.0 SDK (tests/abi/frozen/1.0), one of every kind, in the current
// kernel: each loads into its slot and runs, and the kernel treats every entry after a 1.0
// table as absent (the plugins' tables end where an inaccessible page begins).
#include <catch2/catch.hpp>

#include <string>

#include "support/services_fixture.hpp"

using namespace uaplex;

namespace {

std::string table(const std::string& name, const char* path) {
    return "[plugins." + name + "]\nlibrary = \"" + path + "\"\n";
}

// Every slot and kind taken by a 1.0 plugin.
std::string frozenPlugins() {
    return "[slots]\nrequest_queue = \"abi-frozen-1-0-request-queue\"\n"
           "buffer_pool = \"abi-frozen-1-0-buffer-pool\"\n"
           "admission = \"abi-frozen-1-0-admission\"\n"
           "monitored_item_queue = \"abi-frozen-1-0-mi-queue\"\n" +
           table("abi-frozen-1-0-request-queue", UAPLEX_FROZEN_1_0_REQUEST_QUEUE) +
           table("abi-frozen-1-0-buffer-pool", UAPLEX_FROZEN_1_0_BUFFER_POOL) +
           table("abi-frozen-1-0-admission", UAPLEX_FROZEN_1_0_ADMISSION) +
           table("abi-frozen-1-0-mi-queue", UAPLEX_FROZEN_1_0_MI_QUEUE) +
           table("abi-frozen-1-0-transport", UAPLEX_FROZEN_1_0_TRANSPORT) +
           table("abi-frozen-1-0-node-manager", UAPLEX_FROZEN_1_0_NODE_MANAGER);
}

uaplex_status completed = UAPLEX_Good;

}  // namespace

TEST_CASE("a plugin of every kind built against the 1.0 headers loads into its slot") {
    test::Server s("", frozenPlugins());
    s.host.start();
    REQUIRE(s.host.bufferPool() != nullptr);
    REQUIRE(s.host.admission() != nullptr);
    CHECK(s.host.requestQueue().pluginName() == "abi-frozen-1-0-request-queue");

    // The request queue: the slot probed it for wake_waiters (1.5), which it does not have.
    host::RequestQueueSlot& queue = s.host.requestQueue();
    queue.setCompletion([](uaplex_request_entry*, uaplex_status st) { completed = st; });
    uaplex_request_entry e{};
    e.hdr = UAPLEX_HEADER_INIT(uaplex_request_entry, UAPLEX_STYPE_REQUEST_ENTRY);
    e.request_id = 1;
    REQUIRE(queue.enqueue(&e) == UAPLEX_Good);
    uint64_t count = 0;
    CHECK(queue.count(&count) == UAPLEX_Good);
    CHECK(count == 1);
    uaplex_request_entry* out = nullptr;
    host::PluginInstance* from = nullptr;
    // A long wait on a queue without wake_waiters is cut into bounded ones; an entry is there.
    REQUIRE(queue.dequeue(UINT32_MAX, &out, &from) == UAPLEX_Good);
    CHECK(out == &e);
    host::RequestQueueSlot::dispose(from, out);  // a 1.0 queue with no dispose entry
    REQUIRE(queue.enqueue(&e) == UAPLEX_Good);
    CHECK(queue.cancel(&e, UAPLEX_BadRequestCancelledByClient) == UAPLEX_Good);
    CHECK(completed == UAPLEX_BadRequestCancelledByClient);

    // The buffer pool, through its 1.0 table.
    const auto* pool = s.host.bufferPool()->ops<uaplex_buffer_pool_ops>();
    void* poolSelf = s.host.bufferPool()->self();
    uaplex_buffer_manager* manager = nullptr;
    REQUIRE(pool->manager_create(poolSelf, {"t", 1}, 4096, &manager) == UAPLEX_Good);
    uaplex_buffer b{};
    b.hdr = UAPLEX_HEADER_INIT(uaplex_buffer, UAPLEX_STYPE_BUFFER);
    REQUIRE(pool->take(poolSelf, manager, 100, nullptr, nullptr, &b) == UAPLEX_Good);
    CHECK(b.length >= 100);
    CHECK(pool->give_back(poolSelf, &b, nullptr) == UAPLEX_Good);
    CHECK(pool->manager_destroy(poolSelf, manager) == UAPLEX_Good);

    // The transport the server would create for an endpoint of its scheme.
    auto names = s.host.transportPlugins();
    REQUIRE(names.size() == 1);
    uaplex_transport_params tp{};
    tp.hdr = UAPLEX_HEADER_INIT(uaplex_transport_params, UAPLEX_STYPE_TRANSPORT_PARAMS);
    auto transport = s.host.createTransport(names[0], tp);
    transport->start();
    const auto* tops = transport->ops<uaplex_transport_ops>();
    uaplex_str scheme{};
    CHECK(tops->scheme(transport->self(), &scheme) == UAPLEX_Good);
    CHECK(std::string(scheme.data, scheme.len) == "opc.frozen");
    CHECK_FALSE(UAPLEX_HAS_FIELD(tops, uaplex_transport_ops, secure_channel_opened));
    CHECK(UAPLEX_FIELD_OR(tops, uaplex_transport_ops, reverse_connect, nullptr) == nullptr);
    transport->stop();
    transport.reset();

    // The monitored-item queue factory, which makes no queues.
    uaplex_mi_queue_params mp{};
    mp.hdr = UAPLEX_HEADER_INIT(uaplex_mi_queue_params, UAPLEX_STYPE_MI_QUEUE_PARAMS);
    auto factory = s.host.createMiQueueFactory(mp);
    REQUIRE(factory != nullptr);
    factory->start();
    factory->stop();
}

TEST_CASE("the services serve a 1.0 node manager's namespace and find no call entry in it") {
    test::Server s("", table("abi-frozen-1-0-node-manager", UAPLEX_FROZEN_1_0_NODE_MANAGER));
    std::uint16_t ns = s.namespaceIndex("urn:uaplex:abi-frozen-1.0");
    REQUIRE(ns != 0xFFFF);
    const ua::NodeId variable = ua::stringNodeId(ns, "Frozen10.Double");

    ua::DataValue v = s.read(variable);
    REQUIRE(v.status == UAPLEX_Good);
    CHECK(v.value.value.double_ == 1.5);
    ua::Variant two{};
    two.encoding = UAPLEX_TYPE_DOUBLE;
    two.array_length = -1;
    two.value.double_ = 2.5;
    CHECK(s.write(variable, two) == UAPLEX_Good);
    CHECK(s.read(variable).value.value.double_ == 2.5);

    ua::BrowseResult r =
        s.browse(variable, 0, ua::BrowseDirection::Forward, ua::numericNodeId(0, 40), false);
    REQUIRE(r.statusCode == UAPLEX_Good);
    REQUIRE(r.references.size() == 1);
    CHECK(r.references[0].nodeId.node_id.identifier.numeric == 63);

    // `call` arrived in 1.1: the kernel must not read it from a 1.0 table.
    ua::CallMethodRequest m{};
    m.objectId = variable;
    m.methodId = ua::stringNodeId(ns, "Frozen10.NoMethod");
    ua::CallRequest req{};
    req.methodsToCall = {1, &m};
    ua::CallResponse* resp = nullptr;
    REQUIRE(s.call(req, resp) == UAPLEX_Good);
    REQUIRE(resp->results.size() == 1);
    CHECK(resp->results[0].statusCode == UAPLEX_BadNodeIdUnknown);
}
