// SPDX-License-Identifier: Apache-2.0
// The host API table as a plugin sees it: configuration view, metrics, clocks, timers and
// allocation.
#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstring>
#include <thread>

#include <uaplex/host/host_api.hpp>
#include "uaplex/node_manager.h"
#include "uaplex/types.h"

namespace {
uaplex_str s(const char* text) {
    return {text, std::strlen(text)};
}

struct Fixture {
    uaplex::host::Services services;
    uaplex_plugin_ctx ctx;
    const uaplex_host_api* api = uaplex::host::hostApiTable();
    Fixture() {
        ctx.name = "probe";
        ctx.services = &services;
        ctx.settings = toml::parse("n = 42\nf = 1.5\nb = true\nt = \"text\"\n[sub]\nk = 7\n");
        for (auto&& [k, v] : ctx.settings) ctx.keys.emplace_back(k.str());
    }
};
}  // namespace

TEST_CASE_METHOD(Fixture, "the table identifies itself") {
    CHECK(api->hdr.struct_size == sizeof(uaplex_host_api));
    CHECK(api->hdr.type == UAPLEX_STYPE_HOST_API);
    CHECK(api->abi_version == UAPLEX_ABI_VERSION);
}

TEST_CASE_METHOD(Fixture, "configuration view: typed reads, paths, missing keys, mismatches") {
    int64_t i = 0;
    double d = 0;
    int32_t b = 0;
    uaplex_str str{};
    uint32_t type = 0;
    CHECK(api->config_int(&ctx, s("n"), &i) == UAPLEX_Good);
    CHECK(i == 42);
    CHECK(api->config_int(&ctx, s("sub.k"), &i) == UAPLEX_Good);
    CHECK(i == 7);
    CHECK(api->config_float(&ctx, s("f"), &d) == UAPLEX_Good);
    CHECK(d == 1.5);
    CHECK(api->config_float(&ctx, s("n"), &d) == UAPLEX_Good);  // integers widen
    CHECK(api->config_bool(&ctx, s("b"), &b) == UAPLEX_Good);
    CHECK(b == 1);
    CHECK(api->config_string(&ctx, s("t"), &str) == UAPLEX_Good);
    CHECK(std::string(str.data, str.len) == "text");
    CHECK(api->config_int(&ctx, s("missing"), &i) == UAPLEX_BadNotFound);
    CHECK(api->config_int(&ctx, s("t"), &i) == UAPLEX_BadTypeMismatch);
    CHECK(api->config_type(&ctx, s("sub"), &type) == UAPLEX_Good);
    CHECK(type == UAPLEX_CONFIG_TABLE);
    size_t n = 0;
    CHECK(api->config_key_count(&ctx, &n) == UAPLEX_Good);
    CHECK(n == 5);
    CHECK(api->config_key_at(&ctx, 0, &str) == UAPLEX_Good);
    CHECK(std::string(str.data, str.len) == "b");
    CHECK(api->config_key_at(&ctx, 5, &str) == UAPLEX_BadOutOfRange);
}

TEST_CASE_METHOD(Fixture, "metrics are named after the plugin") {
    uaplex_metric* c = nullptr;
    uaplex_metric* g = nullptr;
    REQUIRE(api->metric_register(&ctx, s("calls"), UAPLEX_METRIC_COUNTER, &c) == UAPLEX_Good);
    REQUIRE(api->metric_register(&ctx, s("depth"), UAPLEX_METRIC_GAUGE, &g) == UAPLEX_Good);
    CHECK(api->metric_add(&ctx, c, 3) == UAPLEX_Good);
    CHECK(api->metric_add(&ctx, c, -1) == UAPLEX_BadInvalidArgument);
    CHECK(api->metric_set(&ctx, c, 9) == UAPLEX_BadNotSupported);
    CHECK(api->metric_set(&ctx, g, 9) == UAPLEX_Good);
    int64_t v = 0;
    CHECK(services.metrics.value("probe.calls", v));
    CHECK(v == 3);
    CHECK(services.metrics.value("probe.depth", v));
    CHECK(v == 9);
}

TEST_CASE_METHOD(Fixture, "clocks: monotonic advances, UTC is an OPC UA DateTime") {
    uint64_t a = 0, b = 0;
    int64_t utc = 0;
    api->monotonic_ns(&ctx, &a);
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    api->monotonic_ns(&ctx, &b);
    CHECK(b - a >= 2000000u);
    REQUIRE(api->utc_now(&ctx, &utc) == UAPLEX_Good);
    // 2020-01-01 is 132223104000000000 ticks after 1601-01-01.
    CHECK(utc > 132223104000000000LL);
}

TEST_CASE_METHOD(Fixture, "timers fire, repeat, and do not run after cancel returns") {
    static std::atomic<int> fired{0};
    fired = 0;
    uaplex_timer* t = nullptr;
    REQUIRE(api->timer_start(
                &ctx, 1, 2, [](void*) { fired.fetch_add(1); }, nullptr, &t) == UAPLEX_Good);
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
    while (fired.load() < 3 && std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    CHECK(fired.load() >= 3);
    CHECK(api->timer_cancel(&ctx, t) == UAPLEX_Good);
    int after = fired.load();
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    CHECK(fired.load() == after);
    CHECK(api->timer_cancel(&ctx, t) == UAPLEX_BadNotFound);
}

TEST_CASE_METHOD(Fixture, "allocation honours alignment") {
    void* p = nullptr;
    REQUIRE(api->mem_alloc(&ctx, 100, 64, &p) == UAPLEX_Good);
    CHECK(reinterpret_cast<uintptr_t>(p) % 64 == 0);
    CHECK(api->mem_free(&ctx, p) == UAPLEX_Good);
    CHECK(api->mem_alloc(&ctx, 8, 3, &p) == UAPLEX_BadInvalidArgument);
}

TEST_CASE_METHOD(Fixture, "raise_event (minor version 3) checks its spec and needs the services") {
    REQUIRE(UAPLEX_HAS_FIELD(api, uaplex_host_api, raise_event));
    REQUIRE(api->raise_event != nullptr);
    CHECK(UAPLEX_ABI_MINOR_OF(api->abi_version) >= 3);
    uaplex_nodeid type{}, source{};
    type.identifier.numeric = 2041;
    source.identifier.numeric = 2253;
    uaplex_event_spec spec{};
    spec.hdr = UAPLEX_HEADER_INIT(uaplex_event_spec, UAPLEX_STYPE_EVENT_SPEC);
    spec.event_type = &type;
    spec.source_node = &source;
    CHECK(api->raise_event(&ctx, nullptr) == UAPLEX_BadInvalidArgument);
    spec.field_count = 1;  // fields missing
    CHECK(api->raise_event(&ctx, &spec) == UAPLEX_BadInvalidArgument);
    spec.field_count = 0;
    spec.hdr.struct_size = 8;  // an older, shorter struct
    CHECK(api->raise_event(&ctx, &spec) == UAPLEX_BadInvalidArgument);
    spec.hdr.struct_size = sizeof spec;
    CHECK(api->raise_event(&ctx, &spec) == UAPLEX_BadInvalidState);  // no address space yet
}
