// SPDX-License-Identifier: Apache-2.0
// The ABI seen from C++: the same layout pins as the C check, and the C++ helper layer's
// trampolines (no exception crosses; a throwing entry gives BadInternalError).
#include <catch2/catch.hpp>
#include <cstddef>
#include <stdexcept>
#include <string>
#include <vector>

#include "uaplex/cpp/clock.hpp"
#include "uaplex/cpp/kinds.hpp"
#include "uaplex/cpp/peer_address.hpp"
#include "uaplex/uaplex.h"

#if defined(__LP64__)
#define UAPLEX_PIN_SIZE(T, n) static_assert(sizeof(T) == (n), "size of " #T)
#define UAPLEX_PIN_OFFSET(T, f, n) static_assert(offsetof(T, f) == (n), "offset of " #T "." #f)
#include "layout_pins.inc"
#endif

namespace {

// A minimal host table that records log lines, so the helper's error path is observable.
std::vector<std::string> g_lines;
uaplex_status fake_log(uaplex_plugin_ctx*, uint32_t level, uaplex_str m) {
    g_lines.push_back(std::to_string(level) + " " + std::string(m.data, m.len));
    return UAPLEX_Good;
}
uaplex_host_api make_host() {
    uaplex_host_api api{};
    api.hdr = UAPLEX_HEADER_INIT(uaplex_host_api, UAPLEX_STYPE_HOST_API);
    api.abi_version = UAPLEX_ABI_VERSION;
    api.log = &fake_log;
    return api;
}

class Probe final : public uaplex::sdk::RequestQueue {
  public:
    Probe(uaplex::sdk::Context ctx, const uaplex_request_queue_params& p) : RequestQueue(ctx, p) {}
    uaplex_status enqueue(uaplex_request_entry*) override { throw std::runtime_error("boom"); }
    uaplex_status try_dequeue(uaplex_request_entry**) override {
        throw uaplex::sdk::StatusError(UAPLEX_BadServerHalted, "halted");
    }
    uaplex_status dequeue(uint32_t, uaplex_request_entry**) override { throw 42; }
    uaplex_status cancel(uaplex_request_entry*, uaplex_status) override {
        return UAPLEX_BadNotFound;
    }
    uaplex_status count(uint64_t* out) override {
        *out = 7;
        return UAPLEX_Good;
    }
};

}  // namespace

UAPLEX_PLUGIN(("probe", "0.0.1", "helper test"), uaplex::sdk::RequestQueueFactory<Probe>)

TEST_CASE("every ops table starts with the lifecycle entries") {
    STATIC_REQUIRE(offsetof(uaplex_request_queue_ops, destroy) ==
                   offsetof(uaplex_lifecycle_ops, destroy));
    STATIC_REQUIRE(offsetof(uaplex_node_manager_ops, start) ==
                   offsetof(uaplex_lifecycle_ops, start));
    STATIC_REQUIRE(offsetof(uaplex_transport_ops, stop) == offsetof(uaplex_lifecycle_ops, stop));
}

TEST_CASE("UAPLEX_HAS_FIELD respects the writer's struct size") {
    uaplex_plugin_descriptor d{};
    d.hdr = UAPLEX_HEADER_INIT(uaplex_plugin_descriptor, UAPLEX_STYPE_PLUGIN_DESCRIPTOR);
    CHECK(UAPLEX_HAS_FIELD(&d, uaplex_plugin_descriptor, node_manager));
    d.hdr.struct_size = offsetof(uaplex_plugin_descriptor, node_manager);
    CHECK_FALSE(UAPLEX_HAS_FIELD(&d, uaplex_plugin_descriptor, node_manager));
    CHECK(UAPLEX_HAS_FIELD(&d, uaplex_plugin_descriptor, monitored_item_queue));
}

TEST_CASE("the export macro builds a descriptor and the trampolines never throw") {
    static const uaplex_host_api host = make_host();
    const uaplex_plugin_descriptor* d = nullptr;
    REQUIRE(uaplex_plugin_entry(UAPLEX_ABI_VERSION, &host, &d) == UAPLEX_Good);
    REQUIRE(d != nullptr);
    CHECK(std::string(d->name) == "probe");
    CHECK(std::string(d->version) == "0.0.1");
    CHECK(d->abi_major == UAPLEX_ABI_VERSION_MAJOR);
    CHECK(d->hdr.struct_size == sizeof(uaplex_plugin_descriptor));
    REQUIRE(d->request_queue != nullptr);
    CHECK(d->transport == nullptr);
    CHECK(d->node_manager == nullptr);

    uaplex_request_queue_params params{};
    params.hdr = UAPLEX_HEADER_INIT(uaplex_request_queue_params, UAPLEX_STYPE_REQUEST_QUEUE_PARAMS);
    params.max_queued = 4;
    void* self = nullptr;
    auto* ctx = reinterpret_cast<uaplex_plugin_ctx*>(&params);  // opaque; only passed back
    REQUIRE(d->request_queue->create(ctx, &params, &self) == UAPLEX_Good);
    const uaplex_request_queue_ops* ops = d->request_queue->ops;
    g_lines.clear();

    uaplex_request_entry e{};
    uaplex_request_entry* out = nullptr;
    CHECK(ops->enqueue(self, &e) == UAPLEX_BadInternalError);
    CHECK(ops->try_dequeue(self, &out) == UAPLEX_BadServerHalted);
    CHECK(ops->dequeue(self, 0, &out) == UAPLEX_BadInternalError);
    uint64_t n = 0;
    CHECK(ops->count(self, &n) == UAPLEX_Good);
    CHECK(n == 7);
    CHECK(ops->release_execution(self, &e) == UAPLEX_BadNotSupported);
    REQUIRE(g_lines.size() == 3);
    CHECK(g_lines[0] == "4 plugin entry: exception: boom");
    CHECK(g_lines[1] == "4 plugin entry: halted");
    CHECK(g_lines[2] == "4 plugin entry: unknown exception");
    CHECK(ops->start(self) == UAPLEX_Good);
    CHECK(ops->stop(self) == UAPLEX_Good);
    CHECK(ops->destroy(self) == UAPLEX_Good);
}

TEST_CASE("peer_host: one key per peer address, whatever the transport wrote") {
    using uaplex::sdk::peer_host;
    CHECK(peer_host("192.0.2.7:4840") == "192.0.2.7");
    CHECK(peer_host("192.0.2.7") == "192.0.2.7");
    CHECK(peer_host("[2001:DB8::1]:4840") == "2001:db8::1");
    CHECK(peer_host("2001:db8::1") == "2001:db8::1");  // bare IPv6: several colons, no port
    CHECK(peer_host("[::ffff:192.0.2.7]:4840") == "192.0.2.7");
    CHECK(peer_host("[::1") == "::1");  // no closing bracket: the rest
    CHECK(peer_host("").empty());
    // A transport's address is not trusted to be short: the key is bounded.
    CHECK(peer_host(std::string(1000, 'a')).size() == uaplex::sdk::kMaxPeerHost);
    CHECK(peer_host("[" + std::string(1000, 'b') + "]:1").size() == uaplex::sdk::kMaxPeerHost);
}

TEST_CASE("monotonic_ms never goes back") {
    std::int64_t a = uaplex::sdk::monotonic_ms();
    std::int64_t b = uaplex::sdk::monotonic_ms();
    CHECK(b >= a);
}
