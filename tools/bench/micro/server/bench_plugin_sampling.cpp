// SPDX-License-Identifier: Apache-2.0
// Node-manager sampling and pushed changes, with the server in this process (the test-sampling
// node manager of tests/integration/plugins) and opc.tcp subscribers on our encoder:
//  (a) the notification rate of 4 sessions (10 items each on a stored value set every 10 ms)
//      alone and while another session has 10 items on a 20 ms-per-read node, sampled every
//      50 ms; and the slowest of 20 CreateMonitoredItems meanwhile;
//  (b) one node's changes, 100 per second, to 10 sessions x 1,000 items (sampling 0, queue 10):
//      through params.value_changed against value_set of a stored value. The CPU figure is the
//      whole process (server, pusher and the subscribers decoding), the same for both.
// Usage: bench_plugin_sampling [--seconds N]
#include <dlfcn.h>
#include <sys/resource.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "in_process_server.hpp"
#include "support/opcua_client.hpp"

using namespace uaplex;
using test::Client;
using Clock = std::chrono::steady_clock;

namespace {

uaplex_status (*pushFn)(std::int32_t);
uaplex_status (*valueSetFn)(std::int32_t);

double cpuSeconds() {
    rusage u{};
    getrusage(RUSAGE_SELF, &u);
    return double(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
           double(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

std::uint32_t createSubscription(Client& c, double interval) {
    ua::CreateSubscriptionRequest cs{};
    cs.requestedPublishingInterval = interval;
    cs.requestedLifetimeCount = 600;
    cs.requestedMaxKeepAliveCount = 10;
    cs.publishingEnabled = true;
    auto m = c.call(cs);
    if (Client::result(m) != UAPLEX_Good) return 0;
    return static_cast<ua::CreateSubscriptionResponse*>(m.object)->subscriptionId;
}

// `count` items on ns;i=node+k*step; true when all were created.
bool createItems(Client& c, std::uint16_t ns, std::uint32_t sub, std::uint32_t node,
                 std::uint32_t step, int count, double sampling, std::uint32_t queue) {
    for (int done = 0; done < count;) {
        int n = std::min(count - done, 1000);
        std::vector<ua::MonitoredItemCreateRequest> items(static_cast<std::size_t>(n));
        for (int i = 0; i < n; ++i) {
            auto& it = items[std::size_t(i)];
            it.itemToMonitor.nodeId = ua::numericNodeId(ns, node + std::uint32_t(done + i) * step);
            it.itemToMonitor.attributeId = 13;
            it.monitoringMode = ua::MonitoringMode::Reporting;
            it.requestedParameters.clientHandle = std::uint32_t(done + i);
            it.requestedParameters.samplingInterval = sampling;
            it.requestedParameters.queueSize = queue;
            it.requestedParameters.discardOldest = true;
        }
        ua::CreateMonitoredItemsRequest cmi{};
        cmi.subscriptionId = sub;
        cmi.timestampsToReturn = ua::TimestampsToReturn::Both;
        cmi.itemsToCreate = {n, items.data()};
        auto m = c.call(cmi);
        if (Client::result(m) != UAPLEX_Good) return false;
        for (const auto& r : static_cast<ua::CreateMonitoredItemsResponse*>(m.object)->results)
            if (r.statusCode != UAPLEX_Good) return false;
        done += n;
    }
    return true;
}

// A session publishing with 3 requests outstanding, counting the data changes it receives.
struct Subscriber {
    Client client;
    std::uint32_t sub = 0;
    std::atomic<std::uint64_t> notifications{0};
    std::atomic<bool> stop{false};
    std::thread thread;

    bool open(std::uint16_t port) {
        return client.open(port) && client.createSession() == UAPLEX_Good;
    }
    void start() {
        thread = std::thread([this] {
            ua::SubscriptionAcknowledgement ack{sub, 0};
            std::uint32_t handle = 1;
            auto send = [&] {
                ua::PublishRequest p{};
                if (ack.sequenceNumber) p.subscriptionAcknowledgements = {1, &ack};
                client.send(p, handle++);
                ack.sequenceNumber = 0;
            };
            for (int i = 0; i < 3; ++i) send();
            while (!stop.load()) {
                auto m = client.receiveResponse();
                if (Client::result(m) != UAPLEX_Good ||
                    m.type != enc::dataTypeOf<ua::PublishResponse>())
                    return;
                auto& r = *static_cast<ua::PublishResponse*>(m.object);
                std::uint64_t n = 0;
                for (const auto& eo : r.notificationMessage.notificationData)
                    if (eo.data_type == enc::dataTypeOf<ua::DataChangeNotification>())
                        n += std::uint64_t(static_cast<const ua::DataChangeNotification*>(eo.object)
                                               ->monitoredItems.size());
                notifications += n;
                if (r.notificationMessage.notificationData.size() > 0)
                    ack = {r.subscriptionId, r.notificationMessage.sequenceNumber};
                send();
            }
        });
    }
    void finish() {
        stop = true;
        if (thread.joinable()) thread.join();
    }
};

std::uint64_t total(const std::vector<std::unique_ptr<Subscriber>>& subs) {
    std::uint64_t n = 0;
    for (const auto& s : subs) n += s->notifications.load();
    return n;
}

// Calls `change(v++)` every `periodMs` until stopped.
struct Changer {
    std::atomic<bool> stop{false};
    std::thread thread;
    void start(uaplex_status (*change)(std::int32_t), int periodMs) {
        thread = std::thread([this, change, periodMs] {
            std::int32_t v = 1;
            auto next = Clock::now();
            while (!stop.load()) {
                change(v++);
                next += std::chrono::milliseconds(periodMs);
                std::this_thread::sleep_until(next);
            }
        });
    }
    void finish() {
        stop = true;
        if (thread.joinable()) thread.join();
    }
};

double rate(const std::vector<std::unique_ptr<Subscriber>>& subs, double seconds, double* cpu) {
    std::uint64_t n0 = total(subs);
    double c0 = cpuSeconds();
    auto t0 = Clock::now();
    std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
    double dt = std::chrono::duration<double>(Clock::now() - t0).count();
    if (cpu) *cpu = cpuSeconds() - c0;
    return double(total(subs) - n0) / dt;
}

std::uint16_t namespaceOf(Client& c) {
    ua::ReadValueId id{};
    id.nodeId = ua::numericNodeId(0, 2255);
    id.attributeId = 13;
    ua::ReadRequest r{};
    r.nodesToRead = {1, &id};
    auto m = c.call(r);
    if (Client::result(m) != UAPLEX_Good) return 0;
    const auto& v = static_cast<ua::ReadResponse*>(m.object)->results[0].value;
    auto* s = static_cast<const ua::String*>(v.value.pointer);
    for (std::int32_t i = 0; i < v.array_length; ++i)
        if (ua::view(s[i]) == "urn:uaplex:test-sampling") return std::uint16_t(i);
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    double seconds = 3;
    for (int i = 1; i + 1 < argc; ++i)
        if (std::strcmp(argv[i], "--seconds") == 0) seconds = std::atof(argv[++i]);
    test::InProcessServer process(
        "request_threads = 4\n[server.limits]\nmax_monitored_items_per_session = 20000\n"
        "[slots]\nrequest_queue = \"fifo\"\nmonitored_item_queue = \"mi-default\"\n"
        "[plugins.fifo]\n[plugins.mi-default]\n[plugins.transport-tcp]\n"
        "[plugins.test-sampling]\nlibrary = \"" UAPLEX_SAMPLING_PLUGIN
        "\"\n[access]\nanonymous_permissions = [\"All\"]\n",
        "bench_plugin_sampling.toml");
    void* lib = dlopen(UAPLEX_SAMPLING_PLUGIN, RTLD_NOW | RTLD_NOLOAD);
    if (!lib) return std::fprintf(stderr, "plugin not loaded\n"), 1;
    pushFn = reinterpret_cast<uaplex_status (*)(std::int32_t)>(dlsym(lib, "test_sampling_push"));
    valueSetFn =
        reinterpret_cast<uaplex_status (*)(std::int32_t)>(dlsym(lib, "test_sampling_value_set"));
    Client probe;
    if (!probe.open(process.port) || probe.createSession() != UAPLEX_Good) return 1;
    const std::uint16_t ns = namespaceOf(probe);

    // (a) Other subscriptions next to 10 items on a slow register.
    {
        std::vector<std::unique_ptr<Subscriber>> subs;
        for (int i = 0; i < 4; ++i) {
            auto s = std::make_unique<Subscriber>();
            if (!s->open(process.port)) return 1;
            s->sub = createSubscription(s->client, 100);
            if (!createItems(s->client, ns, s->sub, 900, 0, 10, 0, 10)) return 1;
            s->start();
            subs.push_back(std::move(s));
        }
        Changer writer;
        writer.start(valueSetFn, 10);
        std::this_thread::sleep_for(std::chrono::milliseconds(500));
        double alone = rate(subs, seconds, nullptr);
        Client slow;
        if (!slow.open(process.port) || slow.createSession() != UAPLEX_Good) return 1;
        std::uint32_t slowSub = createSubscription(slow, 100);
        if (!createItems(slow, ns, slowSub, 101, 1, 10, 50, 1)) return 1;
        std::this_thread::sleep_for(std::chrono::milliseconds(500));
        double with = rate(subs, seconds, nullptr);
        // CreateMonitoredItems of another session on the stored node meanwhile.
        double worstMs = 0;
        Client other;
        if (!other.open(process.port) || other.createSession() != UAPLEX_Good) return 1;
        std::uint32_t otherSub = createSubscription(other, 100);
        for (int i = 0; i < 20; ++i) {
            auto t0 = Clock::now();
            if (!createItems(other, ns, otherSub, 900, 0, 1, 0, 1)) return 1;
            worstMs = std::max(
                worstMs, std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
        }
        writer.finish();
        for (auto& s : subs) s->finish();
        std::printf(
            "sampling: other sessions' notifications/s alone %.0f, with 10 items on a "
            "20 ms node %.0f (ratio %.3f); slowest CreateMonitoredItems meanwhile %.2f ms\n",
            alone, with, alone > 0 ? with / alone : 0.0, worstMs);
    }

    // (b) Fan-out of one node's changes: stored values, then pushed ones.
    for (bool pushed : {false, true}) {
        std::uint32_t node = pushed ? 500 : 900;
        std::vector<std::unique_ptr<Subscriber>> subs;
        for (int i = 0; i < 10; ++i) {
            auto s = std::make_unique<Subscriber>();
            if (!s->open(process.port)) return 1;
            s->sub = createSubscription(s->client, 100);
            if (!createItems(s->client, ns, s->sub, node, 0, 1000, 0, 10)) return 1;
            subs.push_back(std::move(s));
        }
        if (pushed) {  // the kernel takes the node's changes as pushed once monitor answered
            auto until = Clock::now() + std::chrono::seconds(5);
            while (pushFn(0) != UAPLEX_Good && Clock::now() < until)
                std::this_thread::sleep_for(std::chrono::milliseconds(5));
        }
        for (auto& s : subs) s->start();
        Changer changer;
        changer.start(pushed ? pushFn : valueSetFn, 10);
        std::this_thread::sleep_for(std::chrono::milliseconds(1000));
        double cpu = 0;
        double r = rate(subs, seconds, &cpu);
        changer.finish();
        for (auto& s : subs) s->finish();
        std::printf(
            "fan-out %s: %.0f notifications/s, process CPU %.3f cores, %.3f us per "
            "notification\n",
            pushed ? "value_changed" : "value_set", r, cpu / seconds,
            r > 0 ? cpu / seconds / r * 1e6 : 0.0);
    }
    return 0;
}
