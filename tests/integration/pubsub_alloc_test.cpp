// SPDX-License-Identifier: Apache-2.0
// The [pubsub] change path does not touch the heap: a publisher over a server in this process
// (its plugin created, not started: no broker, no publishing thread) takes 10,000 value
// changes of its fields, after a warm-up, with every allocation of the process counted.
#include <catch2/catch.hpp>

#include <cstdint>

#include <uaplex/config/config.hpp>
#include <uaplex/host/plugin_host.hpp>
#include <uaplex/subscription/subscription_manager.hpp>
#include "in_process_server.hpp"
#include "pubsub_publisher.hpp"

#include "support/counting_new.hpp"

using namespace uaplex;

TEST_CASE("the pubsub change path does not allocate") {
    test::InProcessServer process(
        "[slots]\nrequest_queue = \"fifo\"\n[plugins.fifo]\n[plugins.transport-tcp]\n"
        "[plugins.benchmark]\n[plugins.mqtt]\nport = 1\n",
        "pubsub_alloc.toml");
    // The section the server itself does not have (so no publisher of its own runs).
    auto cfg = config::parseString(
                   "[plugins.mqtt]\n[pubsub]\nplugin = \"mqtt\"\npublisher_id = \"p\"\n"
                   "[[pubsub.data_sets]]\nname = \"D\"\nfields = [{ name = \"A\", node = "
                   "\"ns=1;i=1001\" }, { name = \"B\", node = \"ns=1;i=1002\" }, { name = "
                   "\"A2\", node = \"ns=1;i=1001\" }]\n[[pubsub.writer_groups]]\nname = \"G\"\n"
                   "writer_group_id = 1\n[[pubsub.writer_groups.writers]]\nname = \"W\"\n"
                   "data_set_writer_id = 1\ndata_set = \"D\"\n",
                   "pubsub.toml", {})
                   .pubsub;
    server::PubSubPublisher publisher(cfg, process.host, *process.services);

    std::uint64_t handles[2] = {};
    for (int i = 0; i < 2; ++i) {
        ua::ReadValueId id{};
        id.nodeId = ua::numericNodeId(1, std::uint32_t(1001 + i));
        id.attributeId = 13;
        id.indexRange = ua::nullString();
        REQUIRE(process.services->valueSource()->resolve(id, &handles[i]) == UAPLEX_Good);
    }
    ua::DataValue dv{};
    dv.mask = UAPLEX_DATAVALUE_VALUE | UAPLEX_DATAVALUE_SOURCE_TIMESTAMP;
    dv.source_timestamp = ua::utcNow();
    for (int i = 0; i < 100; ++i) {  // warm-up: the thread's encode buffer
        dv.value = ua::variantInt32(i);
        publisher.valueChanged(handles[i & 1], dv);
    }
    test::HeapScope scope;
    for (int i = 0; i < 10000; ++i) {
        dv.value = i % 3 ? ua::variantInt32(i) : ua::variantDouble(i * 0.5);
        publisher.valueChanged(handles[i & 1], dv);
        publisher.valueChanged(0x10, dv);  // a handle no field has
    }
    CHECK(scope.allocations() == 0);
    CHECK(publisher.counters().fieldOverflow.load() == 0);
}
