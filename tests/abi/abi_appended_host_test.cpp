// SPDX-License-Identifier: Apache-2.0
// The plugin host built against a copy of the SDK headers in which every ops table, factory,
// params struct, descriptor, host API table and spec has one more field (append_field.py), as
// the next minor version will have it. Every plugin of today, and the frozen 1.0 and 1.1 ones,
// is then a plugin built before that version: each must load and run. A host that compared a
// struct_size with its own sizeof would refuse them all.
#include <catch2/catch.hpp>

#include <cstddef>
#include <string>

#include <uaplex/config/config.hpp>
#include <uaplex/host/plugin_host.hpp>

using namespace uaplex;

// This file sees the longer structs too (the same headers as the host it tests).
#define UAPLEX_GROWN(T) STATIC_REQUIRE(sizeof(T) == offsetof(T, appended_for_test) + sizeof(void*))

namespace {

const char* const kLibraries[] = {UAPLEX_APPENDED_TEST_LIBRARIES};

config::ServerConfig configFor(const std::string& plugins) {
    std::string text =
        "[log]\nlevel = \"warn\"\n[server]\napplication_uri = \"urn:test:uaplex\"\n" + plugins;
    return config::parseString(text, "test.toml", config::PathContext{});
}

std::string table(const std::string& name, const char* path) {
    return "[plugins." + name + "]\nlibrary = \"" + path + "\"\n";
}

// Runs a request through the slot: enqueue, dequeue, dispose.
void roundTrip(host::Host& h) {
    host::RequestQueueSlot& queue = h.requestQueue();
    queue.setCompletion([](uaplex_request_entry*, uaplex_status) {});
    uaplex_request_entry e{};
    e.hdr = UAPLEX_HEADER_INIT(uaplex_request_entry, UAPLEX_STYPE_REQUEST_ENTRY);
    e.request_id = 1;
    REQUIRE(queue.enqueue(&e) == UAPLEX_Good);
    uaplex_request_entry* out = nullptr;
    host::PluginInstance* from = nullptr;
    REQUIRE(queue.dequeue(10, &out, &from) == UAPLEX_Good);
    CHECK(out == &e);
    host::RequestQueueSlot::dispose(from, out);
}

}  // namespace

TEST_CASE("the host under test sees one more field in every versioned struct") {
    UAPLEX_GROWN(uaplex_plugin_descriptor);
    UAPLEX_GROWN(uaplex_lifecycle_ops);
    UAPLEX_GROWN(uaplex_host_api);
    UAPLEX_GROWN(uaplex_transport_ops);
    UAPLEX_GROWN(uaplex_transport_factory);
    UAPLEX_GROWN(uaplex_admission_ops);
    UAPLEX_GROWN(uaplex_request_queue_ops);
    UAPLEX_GROWN(uaplex_request_queue_params);
    UAPLEX_GROWN(uaplex_buffer_pool_ops);
    UAPLEX_GROWN(uaplex_mi_queue_factory_ops);
    UAPLEX_GROWN(uaplex_node_manager_ops);
    UAPLEX_GROWN(uaplex_event_spec);
    UAPLEX_GROWN(uaplex_method_spec);
    UAPLEX_GROWN(uaplex_condition_spec);
}

TEST_CASE("every plugin built before the appended field loads") {
    for (const char* path : kLibraries) {
        INFO(path);
        std::shared_ptr<host::PluginLibrary> lib;
        CHECK_NOTHROW(lib = host::loadLibrary(path));
        if (lib) CHECK(lib->kinds() != 0);
    }
}

TEST_CASE("1.0 plugins of every kind run in the host with the appended field") {
    host::Host h;
    h.load(
        configFor("[slots]\nrequest_queue = \"abi-frozen-1-0-request-queue\"\n"
                  "buffer_pool = \"abi-frozen-1-0-buffer-pool\"\n"
                  "admission = \"abi-frozen-1-0-admission\"\n"
                  "monitored_item_queue = \"abi-frozen-1-0-mi-queue\"\n" +
                  table("abi-frozen-1-0-request-queue", UAPLEX_FROZEN_1_0_REQUEST_QUEUE) +
                  table("abi-frozen-1-0-buffer-pool", UAPLEX_FROZEN_1_0_BUFFER_POOL) +
                  table("abi-frozen-1-0-admission", UAPLEX_FROZEN_1_0_ADMISSION) +
                  table("abi-frozen-1-0-mi-queue", UAPLEX_FROZEN_1_0_MI_QUEUE) +
                  table("abi-frozen-1-0-transport", UAPLEX_FROZEN_1_0_TRANSPORT) +
                  table("abi-frozen-1-0-node-manager", UAPLEX_FROZEN_1_0_NODE_MANAGER)));
    h.start();
    roundTrip(h);
    uaplex_transport_params tp{};
    tp.hdr = UAPLEX_HEADER_INIT(uaplex_transport_params, UAPLEX_STYPE_TRANSPORT_PARAMS);
    auto transport = h.createTransport("abi-frozen-1-0-transport", tp);
    transport->start();
    transport->stop();
    transport.reset();
    uaplex_mi_queue_params mp{};
    mp.hdr = UAPLEX_HEADER_INIT(uaplex_mi_queue_params, UAPLEX_STYPE_MI_QUEUE_PARAMS);
    REQUIRE(h.createMiQueueFactory(mp) != nullptr);
    uaplex_node_manager_params np{};
    np.hdr = UAPLEX_HEADER_INIT(uaplex_node_manager_params, UAPLEX_STYPE_NODE_MANAGER_PARAMS);
    CHECK(h.createNodeManagers(np).size() == 1);
    h.startNodeManagers();
    h.shutdown();
}

TEST_CASE("today's plugins run in the host with the appended field") {
    host::Host h;
    h.load(
        configFor("[slots]\nrequest_queue = \"fifo\"\nbuffer_pool = \"bounded\"\n"
                  "monitored_item_queue = \"mi-default\"\n" +
                  table("fifo", UAPLEX_APPENDED_FIFO) + table("bounded", UAPLEX_APPENDED_BOUNDED) +
                  table("mi-default", UAPLEX_APPENDED_MI_DEFAULT) +
                  table("transport-tcp", UAPLEX_APPENDED_TCP) +
                  table("abi-frozen-1-1", UAPLEX_APPENDED_FROZEN_1_1)));
    h.start();
    roundTrip(h);
    uaplex_transport_params tp{};
    tp.hdr = UAPLEX_HEADER_INIT(uaplex_transport_params, UAPLEX_STYPE_TRANSPORT_PARAMS);
    auto transport = h.createTransport("transport-tcp", tp);
    transport->start();
    transport->stop();
    transport.reset();
    uaplex_mi_queue_params mp{};
    mp.hdr = UAPLEX_HEADER_INIT(uaplex_mi_queue_params, UAPLEX_STYPE_MI_QUEUE_PARAMS);
    REQUIRE(h.createMiQueueFactory(mp) != nullptr);
    // The 1.1 node manager is created (its start adds nodes, which needs the address space).
    uaplex_node_manager_params np{};
    np.hdr = UAPLEX_HEADER_INIT(uaplex_node_manager_params, UAPLEX_STYPE_NODE_MANAGER_PARAMS);
    CHECK(h.createNodeManagers(np).size() == 1);
    h.shutdown();
}
