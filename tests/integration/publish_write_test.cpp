// SPDX-License-Identifier: Apache-2.0
// The subscription engine between threads: sessions that Publish while others Write the
// monitored node, served by several request workers in this process (so that ThreadSanitizer,
// `make tsan`, sees both sides). Every subscriber ends with the last value written.
#include <catch2/catch.hpp>

#include <atomic>
#include <cstdint>
#include <memory>
#include <thread>
#include <vector>

#include "in_process_server.hpp"
#include "support/client_services.hpp"
#include "support/opcua_client.hpp"

using namespace uaplex;
using test::Client;

namespace {

constexpr std::int32_t kLast = 999999;

// A subscription (publishing 50 ms) with one item on ns=1;i=1001, sampled on every change.
// Called on the test's thread only: createSubscription REQUIREs, which Catch2 does not allow
// on the writer threads (hence write() below returns its verdict).
std::uint32_t subscribe(Client& c) {
    std::uint32_t sub = test::createSubscription(c, {50, 600, 10});
    ua::MonitoredItemCreateRequest item{};
    item.itemToMonitor.nodeId = ua::numericNodeId(1, 1001);
    item.itemToMonitor.attributeId = 13;
    item.monitoringMode = ua::MonitoringMode::Reporting;
    item.requestedParameters.clientHandle = 1;
    item.requestedParameters.samplingInterval = 0;
    item.requestedParameters.queueSize = 4;
    item.requestedParameters.discardOldest = true;
    ua::CreateMonitoredItemsRequest cmi{};
    cmi.subscriptionId = sub;
    cmi.timestampsToReturn = ua::TimestampsToReturn::Neither;
    cmi.itemsToCreate = {1, &item};
    auto m = c.call(cmi);
    if (Client::result(m) != UAPLEX_Good) return 0;
    auto& r = *static_cast<ua::CreateMonitoredItemsResponse*>(m.object);
    return r.results.size() == 1 && r.results[0].statusCode == UAPLEX_Good ? sub : 0;
}

bool write(Client& c, std::int32_t value) {
    ua::WriteValue wv{};
    wv.nodeId = ua::numericNodeId(1, 1001);
    wv.attributeId = 13;
    wv.indexRange = ua::nullString();
    wv.value.mask = UAPLEX_DATAVALUE_VALUE;
    wv.value.value = ua::variantInt32(value);
    ua::WriteRequest w{};
    w.nodesToWrite = {1, &wv};
    auto m = c.call(w);
    return Client::result(m) == UAPLEX_Good &&
           static_cast<ua::WriteResponse*>(m.object)->results[0] == UAPLEX_Good;
}

// Publishes (acknowledging each message) until the value kLast arrives; false on an error
// or after 400 responses without it.
bool publishUntilLast(Client& c, std::uint32_t sub) {
    ua::SubscriptionAcknowledgement ack{sub, 0};
    for (int i = 0; i < 400; ++i) {
        ua::PublishRequest p{};
        p.requestHeader.timeoutHint = 10000;
        if (ack.sequenceNumber != 0) p.subscriptionAcknowledgements = {1, &ack};
        auto m = c.call(p, std::uint32_t(100 + i));
        if (Client::result(m) != UAPLEX_Good || m.type != enc::dataTypeOf<ua::PublishResponse>())
            return false;
        auto& r = *static_cast<ua::PublishResponse*>(m.object);
        if (r.notificationMessage.notificationData.size() == 0) continue;  // a keep-alive
        ack.sequenceNumber = r.notificationMessage.sequenceNumber;
        for (const auto& eo : r.notificationMessage.notificationData) {
            if (eo.data_type != enc::dataTypeOf<ua::DataChangeNotification>()) continue;
            for (const auto& item :
                 static_cast<const ua::DataChangeNotification*>(eo.object)->monitoredItems)
                if (item.value.value.value.int32 == kLast) return true;
        }
    }
    return false;
}

}  // namespace

TEST_CASE("sessions Publish while others Write the monitored node; each gets the last value") {
    test::InProcessServer process(
        "request_threads = 4\n"
        "[slots]\nrequest_queue = \"fair\"\nadmission = \"leases\"\nbuffer_pool = \"bounded\"\n"
        "[plugins.fair]\n[plugins.leases]\n[plugins.bounded]\n[plugins.transport-tcp]\n"
        "[plugins.benchmark]\n[access]\nanonymous_permissions = [\"All\"]\n",
        "publish_write.toml");
    constexpr int kSubscribers = 3, kWriters = 2, kWrites = 150;

    std::vector<std::unique_ptr<Client>> subscribers;
    std::vector<std::uint32_t> subs;
    for (int i = 0; i < kSubscribers; ++i) {
        auto c = std::make_unique<Client>();
        REQUIRE(c->open(process.port));
        REQUIRE(c->createSession() == UAPLEX_Good);
        subs.push_back(subscribe(*c));
        REQUIRE(subs.back() != 0);
        subscribers.push_back(std::move(c));
    }

    std::atomic<int> writesDone{0}, writersFailed{0};
    std::vector<char> sawLast(kSubscribers, 0);
    std::vector<std::thread> threads;
    for (int i = 0; i < kSubscribers; ++i)
        threads.emplace_back(
            [&, i] { sawLast[i] = publishUntilLast(*subscribers[i], subs[i]) ? 1 : 0; });
    std::vector<std::thread> writers;
    for (int w = 0; w < kWriters; ++w)
        writers.emplace_back([&, w] {
            Client c;
            if (!c.open(process.port) || c.createSession() != UAPLEX_Good) {
                ++writersFailed;
                return;
            }
            for (int k = 0; k < kWrites; ++k)
                if (write(c, w * kWrites + k)) ++writesDone;
        });
    for (auto& t : writers) t.join();
    // The last value, after every other write has completed.
    Client last;
    bool lastWritten =
        last.open(process.port) && last.createSession() == UAPLEX_Good && write(last, kLast);
    for (auto& t : threads) t.join();
    REQUIRE(lastWritten);

    CHECK(writersFailed == 0);
    CHECK(writesDone == kWriters * kWrites);
    for (int i = 0; i < kSubscribers; ++i) CHECK(sawLast[i] == 1);
}
