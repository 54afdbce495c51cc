// SPDX-License-Identifier: Apache-2.0
// PubSub conformance (uaplex/pubsub.h), through the C ABI only, with the broker away: the
// lifecycle, argument checks, the bounded buffer and its drop counter, concurrent publishers,
// and (since 1.14) subscribe's contract and the receive counters.
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "plugin_fixture.hpp"

namespace {

using Loaded =
    uaplex::conformance::Loaded<uaplex_pubsub_factory, uaplex_pubsub_params, uaplex_pubsub_ops>;

std::string settingsText() {
    const char* s = std::getenv("UAPLEX_PUBSUB_SETTINGS");
    REQUIRE(s != nullptr);
    std::string out;
    for (const char* p = s; *p; ++p) {  // ctest passes "\n" through literally
        if (p[0] == '\\' && p[1] == 'n') {
            out += '\n';
            ++p;
        } else {
            out += *p;
        }
    }
    return out;
}

std::size_t buffered() {
    const char* s = std::getenv("UAPLEX_PUBSUB_BUFFERED");
    REQUIRE(s != nullptr);
    return std::size_t(std::stoul(s));
}

const std::string kPublisher = "conformance";
const std::string kStatus = "opcua/json/status/conformance";
const std::string kOnline = "{\"Status\":2}", kOffline = "{\"Status\":0}";

struct PubSub : Loaded {
    explicit PubSub(bool start_it = true, bool take_messages = true) {
        auto lib = uaplex::conformance::library_from_env("UAPLEX_PUBSUB_PLUGIN");
        const auto* factory =
            UAPLEX_FIELD_OR(&lib->descriptor(), uaplex_plugin_descriptor, pubsub, nullptr);
        REQUIRE(factory != nullptr);
        REQUIRE((lib->kinds() & UAPLEX_KIND_PUBSUB) != 0);
        params.hdr = UAPLEX_HEADER_INIT(uaplex_pubsub_params, UAPLEX_STYPE_PUBSUB_PARAMS);
        params.publisher_id = {kPublisher.data(), kPublisher.size()};
        params.status_topic = {kStatus.data(), kStatus.size()};
        params.status_online = {reinterpret_cast<const uint8_t*>(kOnline.data()), kOnline.size()};
        params.status_offline = {reinterpret_cast<const uint8_t*>(kOffline.data()),
                                 kOffline.size()};
        if (take_messages) {
            params.message_received = [](void* user, const uaplex_pubsub_message*) {
                static_cast<PubSub*>(user)->received.fetch_add(1);
            };
            params.message_user = this;
        }
        load(lib, *factory, toml::parse(settingsText()), start_it);
    }
    uaplex_status publish(std::string_view topic, std::string_view payload, uint32_t qos = 1,
                          uint32_t flags = 0) {
        uaplex_pubsub_message m{};
        m.hdr = UAPLEX_HEADER_INIT(uaplex_pubsub_message, UAPLEX_STYPE_PUBSUB_MESSAGE);
        m.topic = {topic.data(), topic.size()};
        m.payload = {reinterpret_cast<const uint8_t*>(payload.data()), payload.size()};
        m.qos = qos;
        m.flags = flags;
        return ops->publish(self, &m);
    }
    uaplex_status subscribe(std::string_view filter, uint32_t qos = 1) {
        REQUIRE(UAPLEX_FIELD_OR(ops, uaplex_pubsub_ops, subscribe, nullptr) != nullptr);
        return ops->subscribe(self, {filter.data(), filter.size()}, qos);
    }
    std::atomic<uint64_t> received{0};
    uaplex_pubsub_stats stats() {
        uaplex_pubsub_stats s{};
        s.hdr = UAPLEX_HEADER_INIT(uaplex_pubsub_stats, UAPLEX_STYPE_PUBSUB_STATS);
        REQUIRE(ops->stats(self, &s) == UAPLEX_Good);
        return s;
    }
};

}  // namespace

TEST_CASE("a pubsub plugin starts without its broker and stops idempotently") {
    PubSub p;
    auto s = p.stats();
    CHECK(s.connected == 0);
    CHECK(s.accepted == 0);
    CHECK(s.dropped == 0);
    const auto t0 = std::chrono::steady_clock::now();
    REQUIRE(p.ops->stop(p.self) == UAPLEX_Good);
    REQUIRE(p.ops->stop(p.self) == UAPLEX_Good);
    p.started = false;
    // Stop is bounded even while the plugin is retrying its connection.
    CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(10));
}

TEST_CASE("publish before start and after stop is BadInvalidState") {
    PubSub p(false);
    CHECK(p.publish("opcua/json/data/x", "{}") == UAPLEX_BadInvalidState);
    REQUIRE(p.ops->start(p.self) == UAPLEX_Good);
    p.started = true;
    CHECK(p.publish("opcua/json/data/x", "{}") == UAPLEX_Good);
    p.stop();
    CHECK(p.publish("opcua/json/data/x", "{}") == UAPLEX_BadInvalidState);
}

TEST_CASE("publish refuses hostile arguments") {
    PubSub p;
    CHECK(p.ops->publish(p.self, nullptr) == UAPLEX_BadInvalidArgument);
    CHECK(p.publish("", "{}") == UAPLEX_BadInvalidArgument);
    CHECK(p.publish("opcua/+/data", "{}") == UAPLEX_BadInvalidArgument);
    CHECK(p.publish("opcua/#", "{}") == UAPLEX_BadInvalidArgument);
    CHECK(p.publish(std::string_view("a\0b", 3), "{}") == UAPLEX_BadInvalidArgument);
    CHECK(p.publish("opcua/\xff\xfe", "{}") == UAPLEX_BadInvalidArgument);
    CHECK(p.publish("opcua/json/data/x", "{}", 2) == UAPLEX_BadInvalidArgument);
    CHECK(p.publish(std::string(70000, 'a'), "{}") == UAPLEX_BadInvalidArgument);
    const char* max = std::getenv("UAPLEX_PUBSUB_MAX_MESSAGE");
    REQUIRE(max != nullptr);
    const std::size_t limit = std::stoul(max);
    CHECK(p.publish("opcua/json/data/x", std::string(limit + 1, 'x')) ==
          UAPLEX_BadEncodingLimitsExceeded);
    CHECK(p.publish("opcua/json/data/x", std::string(limit, 'x')) == UAPLEX_Good);
    // A message struct from a writer shorter than the first release.
    uaplex_pubsub_message m{};
    m.hdr = UAPLEX_HEADER_INIT(uaplex_pubsub_message, UAPLEX_STYPE_PUBSUB_MESSAGE);
    m.hdr.struct_size = offsetof(uaplex_pubsub_message, qos);
    m.topic = {"a", 1};
    CHECK(p.ops->publish(p.self, &m) == UAPLEX_BadInvalidArgument);
    CHECK(p.stats().accepted == 1);
}

TEST_CASE("the buffer is bounded while the broker is away; drops are counted") {
    PubSub p;
    const std::size_t n = buffered();
    for (std::size_t i = 0; i < n; ++i)
        REQUIRE(p.publish("opcua/json/data/x", "{\"i\":" + std::to_string(i) + "}") == UAPLEX_Good);
    CHECK(p.publish("opcua/json/data/x", "{}") == UAPLEX_BadResourceUnavailable);
    CHECK(p.publish("opcua/json/data/x", "{}", 0) == UAPLEX_BadResourceUnavailable);
    auto s = p.stats();
    CHECK(s.accepted == n);
    CHECK(s.dropped == 2);
    CHECK(s.buffered == n);
    CHECK(s.connected == 0);
    CHECK(p.metric("dropped") == 2);
}

TEST_CASE("concurrent publishers: every message is accepted or counted as dropped") {
    PubSub p;
    constexpr int kThreads = 4, kEach = 500;
    std::atomic<uint64_t> good{0}, full{0}, other{0};
    std::vector<std::thread> threads;
    threads.reserve(kThreads);
    for (int t = 0; t < kThreads; ++t)
        threads.emplace_back([&, t] {
            const std::string topic = "opcua/json/data/t" + std::to_string(t);
            for (int i = 0; i < kEach; ++i) {
                uaplex_status st = p.publish(topic, "{}", uint32_t(i & 1));
                (st == UAPLEX_Good                     ? good
                 : st == UAPLEX_BadResourceUnavailable ? full
                                                       : other)
                    .fetch_add(1);
                uaplex_pubsub_stats s{};
                s.hdr = UAPLEX_HEADER_INIT(uaplex_pubsub_stats, UAPLEX_STYPE_PUBSUB_STATS);
                p.ops->stats(p.self, &s);
            }
        });
    for (auto& t : threads) t.join();
    auto s = p.stats();
    CHECK(other == 0);
    CHECK(good == buffered());
    CHECK(s.accepted == good);
    CHECK(s.dropped == full);
    CHECK(good + full == uint64_t(kThreads) * kEach);
}

TEST_CASE("subscribe (1.14): filters checked, before start only") {
    PubSub p(false);
    CHECK(p.subscribe("opcua/json/data/#") == UAPLEX_Good);
    CHECK(p.subscribe("opcua/+/data/pub/+/+", 0) == UAPLEX_Good);
    CHECK(p.subscribe("opcua/uadp/data/pub/group/writer") == UAPLEX_Good);
    CHECK(p.subscribe("") == UAPLEX_BadInvalidArgument);
    CHECK(p.subscribe("opcua/#/data") == UAPLEX_BadInvalidArgument);
    CHECK(p.subscribe("opcua/data#") == UAPLEX_BadInvalidArgument);
    CHECK(p.subscribe("opcua/da+ta") == UAPLEX_BadInvalidArgument);
    CHECK(p.subscribe(std::string_view("a\0b", 3)) == UAPLEX_BadInvalidArgument);
    CHECK(p.subscribe("opcua/\xff\xfe") == UAPLEX_BadInvalidArgument);
    CHECK(p.subscribe("opcua/json/data/x", 2) == UAPLEX_BadInvalidArgument);
    CHECK(p.subscribe(std::string(70000, 'a')) == UAPLEX_BadInvalidArgument);
    REQUIRE(p.ops->start(p.self) == UAPLEX_Good);
    p.started = true;
    CHECK(p.subscribe("opcua/json/data/late") == UAPLEX_BadInvalidState);
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    auto s = p.stats();
    CHECK(s.received == 0);  // the broker is away: nothing arrives
    CHECK(s.received_dropped == 0);
    CHECK(p.received == 0);
}

TEST_CASE("subscribe (1.14): the number of filters is bounded") {
    const char* max = std::getenv("UAPLEX_PUBSUB_MAX_SUBSCRIPTIONS");
    if (!max) return;  // the plugin's limit is not configured by this suite's settings
    PubSub p(false);
    const std::size_t limit = std::stoul(max);
    for (std::size_t i = 0; i < limit; ++i)
        REQUIRE(p.subscribe("opcua/json/data/w" + std::to_string(i)) == UAPLEX_Good);
    CHECK(p.subscribe("opcua/json/data/one-more") == UAPLEX_BadResourceUnavailable);
}

TEST_CASE("stats (1.14): a 1.13 caller's shorter struct is filled up to its size") {
    PubSub p;
    uaplex_pubsub_stats s{};
    s.hdr = UAPLEX_HEADER_INIT(uaplex_pubsub_stats, UAPLEX_STYPE_PUBSUB_STATS);
    s.hdr.struct_size = offsetof(uaplex_pubsub_stats, received);
    s.received = 77;
    s.received_dropped = 78;
    REQUIRE(p.ops->stats(p.self, &s) == UAPLEX_Good);
    CHECK(s.received == 77);
    CHECK(s.received_dropped == 78);
}
