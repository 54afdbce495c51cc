// SPDX-License-Identifier: Apache-2.0
// Configured limit alarms at scale (issue figure, docs/performance.md "Alarms"): the `uaplex`
// executable with N stored Double variables (a NodeSet2 file this bench writes) and one
// `[[alarms]]` exclusive level alarm on each; a writer client flips R variables per second
// across the High limit and back, so every write is one state change (one event); a second
// client subscribes to the Server object's events. Reported: start-up time and RSS, events
// received against state changes written, event delivery latency (receive time minus the
// event's Time, so it includes the publishing interval) p50/p99, and the server's CPU.
// Usage: bench_alarms [--alarms N] [--rate R] [--seconds S] [--interval MS]
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "support/opcua_client.hpp"
#include "support/server_process.hpp"

using namespace uaplex;
using test::Client;
using Clock = std::chrono::steady_clock;
namespace fs = std::filesystem;

namespace {

constexpr const char* kUri = "urn:uaplex:bench:alarms";

// 100 ns ticks since 1601-01-01 (DateTime), now.
std::int64_t nowTicks() {
    using namespace std::chrono;
    return duration_cast<nanoseconds>(system_clock::now().time_since_epoch()).count() / 100 +
           116444736000000000LL;
}

// The server's CPU seconds (utime + stime of /proc/<pid>/stat).
double cpuOf(pid_t pid) {
    std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    auto close = text.rfind(')');
    if (close == std::string::npos) return 0;
    std::istringstream rest(text.substr(close + 2));
    std::string field;
    unsigned long long utime = 0, stime = 0;
    for (int i = 3; i <= 15 && rest >> field; ++i) {
        if (i == 14) utime = std::stoull(field);
        if (i == 15) stime = std::stoull(field);
    }
    return double(utime + stime) / double(::sysconf(_SC_CLK_TCK));
}

void writeNodeSet(const fs::path& file, int n) {
    std::ofstream x(file);
    x << "<?xml version=\"1.0\" encoding=\"utf-8\"?>\n"
         "<UANodeSet xmlns=\"http://opcfoundation.org/UA/2011/03/UANodeSet.xsd\" "
         "xmlns:uax=\"http://opcfoundation.org/UA/2008/02/Types.xsd\">\n"
         "<NamespaceUris><Uri>"
      << kUri
      << "</Uri></NamespaceUris>\n"
         "<Aliases><Alias Alias=\"Organizes\">i=35</Alias><Alias "
         "Alias=\"HasComponent\">i=47</Alias>"
         "<Alias Alias=\"HasTypeDefinition\">i=40</Alias><Alias Alias=\"Double\">i=11</Alias>"
         "</Aliases>\n"
         "<UAObject NodeId=\"ns=1;i=1\" BrowseName=\"1:BenchAlarms\"><DisplayName>BenchAlarms"
         "</DisplayName><References><Reference ReferenceType=\"Organizes\" "
         "IsForward=\"false\">i=85</Reference><Reference "
         "ReferenceType=\"HasTypeDefinition\">i=61</Reference></References></UAObject>\n";
    for (int i = 0; i < n; ++i) {
        const int id = 1000 + i;
        x << "<UAVariable NodeId=\"ns=1;i=" << id << "\" BrowseName=\"1:V" << id
          << "\" ParentNodeId=\"ns=1;i=1\" DataType=\"Double\" AccessLevel=\"3\" "
             "UserAccessLevel=\"3\"><DisplayName>V"
          << id
          << "</DisplayName><References><Reference ReferenceType=\"HasComponent\" "
             "IsForward=\"false\">ns=1;i=1</Reference><Reference "
             "ReferenceType=\"HasTypeDefinition\">i=63</Reference></References>"
             "<Value><uax:Double>0</uax:Double></Value></UAVariable>\n";
    }
    x << "</UANodeSet>\n";
}

std::string config(std::uint16_t port, const fs::path& dir, int n) {
    writeNodeSet(dir / "bench-alarms.xml", n);
    std::ostringstream t;
    t << test::configHead(port) << "[server.limits]\nmax_conditions = " << n
      << "\nmax_event_queue_size = 100000\nmax_notifications_per_publish = 0\n"
         "min_publishing_interval_ms = 10\n"
         "[slots]\nrequest_queue = \"fifo\"\nmonitored_item_queue = \"mi-default\"\n"
         "[plugins.fifo]\n[plugins.transport-tcp]\n[plugins.mi-default]\n"
         "[plugins.nodeset]\nfiles = [\""
      << (dir / "bench-alarms.xml").string()
      << "\"]\n[access]\nanonymous_permissions = [\"All\"]\n";
    for (int i = 0; i < n; ++i)
        t << "[[alarms]]\nname = \"A" << i
          << "\"\ntype = \"exclusive_level\"\nsource = \"nsu=" << kUri << ";i=" << 1000 + i
          << "\"\nhigh = 50.0\nlow = -50.0\n";
    return t.str();
}

std::uint32_t subscribe(Client& c, double interval, double& revised) {
    ua::CreateSubscriptionRequest cs{};
    cs.requestedPublishingInterval = interval;
    cs.requestedLifetimeCount = 6000;
    cs.requestedMaxKeepAliveCount = 100;
    cs.publishingEnabled = true;
    auto m = c.call(cs);
    if (Client::result(m) != UAPLEX_Good) return 0;
    const auto& r = *static_cast<ua::CreateSubscriptionResponse*>(m.object);
    revised = r.revisedPublishingInterval;
    return r.subscriptionId;
}

// The Server object's events with their Time (BaseEventType); queue as large as allowed.
bool monitorEvents(Client& c, std::uint32_t sub) {
    ua::QualifiedName name{0, ua::makeString("Time")};
    ua::SimpleAttributeOperand select{};
    select.typeDefinitionId = ua::numericNodeId(0, 2041);
    select.browsePath = {1, &name};
    select.attributeId = 13;
    select.indexRange = ua::nullString();
    ua::EventFilter filter{};
    filter.selectClauses = {1, &select};
    filter.whereClause.elements = {0, nullptr};
    ua::MonitoredItemCreateRequest item{};
    item.itemToMonitor.nodeId = ua::numericNodeId(0, 2253);
    item.itemToMonitor.attributeId = 12;
    item.itemToMonitor.indexRange = ua::nullString();
    item.monitoringMode = ua::MonitoringMode::Reporting;
    item.requestedParameters.clientHandle = 7;
    item.requestedParameters.queueSize = 100000;
    item.requestedParameters.discardOldest = true;
    auto& eo = item.requestedParameters.filter;
    eo.encoding = UAPLEX_EXTENSIONOBJECT_BINARY;
    eo.type_id = ua::numericNodeId(0, enc::dataTypeOf<ua::EventFilter>()->binaryEncodingId);
    eo.data_type = enc::dataTypeOf<ua::EventFilter>();
    eo.object = &filter;
    ua::CreateMonitoredItemsRequest cmi{};
    cmi.subscriptionId = sub;
    cmi.timestampsToReturn = ua::TimestampsToReturn::Both;
    cmi.itemsToCreate = {1, &item};
    auto m = c.call(cmi);
    return Client::result(m) == UAPLEX_Good &&
           static_cast<ua::CreateMonitoredItemsResponse*>(m.object)->results[0].statusCode ==
               UAPLEX_Good;
}

double percentile(std::vector<double>& v, double p) {
    if (v.empty()) return 0;
    std::sort(v.begin(), v.end());
    return v[std::min(v.size() - 1, std::size_t(p * double(v.size())))];
}

}  // namespace

int main(int argc, char** argv) {
    int alarms = 100000, rate = 10000, seconds = 10;
    double interval = 50;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!std::strcmp(argv[i], "--alarms")) alarms = std::atoi(argv[i + 1]);
        if (!std::strcmp(argv[i], "--rate")) rate = std::atoi(argv[i + 1]);
        if (!std::strcmp(argv[i], "--seconds")) seconds = std::atoi(argv[i + 1]);
        if (!std::strcmp(argv[i], "--interval")) interval = std::atof(argv[i + 1]);
    }
    alarms = std::max(alarms, 1);
    const auto t0 = Clock::now();
    test::ServerProcess server(
        "bench-alarms",
        [&](std::uint16_t port, const fs::path& dir) { return config(port, dir, alarms); }, {},
        3600);
    Client sub;
    if (!server.alive() || !sub.open(server.port) || sub.createSession() != UAPLEX_Good) {
        std::fprintf(stderr, "bench_alarms: the server did not start\n");
        return 1;
    }
    const double startup = std::chrono::duration<double>(Clock::now() - t0).count();
    const long rssStart = server.rssKb();
    double revised = 0;
    const std::uint32_t sid = subscribe(sub, interval, revised);
    if (sid == 0 || !monitorEvents(sub, sid)) {
        std::fprintf(stderr, "bench_alarms: no event subscription\n");
        return 1;
    }
    std::uint16_t ns = 0;
    {
        ua::ReadValueId id{};
        id.nodeId = ua::numericNodeId(0, 2255);  // NamespaceArray
        id.attributeId = 13;
        ua::ReadRequest r{};
        r.nodesToRead = {1, &id};
        auto m = sub.call(r);
        if (Client::result(m) == UAPLEX_Good) {
            const ua::Variant& v = static_cast<ua::ReadResponse*>(m.object)->results[0].value;
            const auto* names = static_cast<const ua::String*>(v.value.pointer);
            for (std::int32_t k = 0; k < v.array_length; ++k)
                if (ua::view(names[k]) == kUri) ns = std::uint16_t(k);
        }
    }
    if (ns == 0) {
        std::fprintf(stderr, "bench_alarms: namespace %s not found\n", kUri);
        return 1;
    }

    std::atomic<bool> stop{false};
    std::atomic<long> written{0}, failed{0};
    // The writer: every 10 ms a batch of rate/100 writes, walking the variables; each pass
    // alternates 100 (above High: active) and 0 (normal: inactive).
    std::thread writer([&] {
        Client w;
        if (!w.open(server.port) || w.createSession() != UAPLEX_Good) {
            failed = 1;
            return;
        }
        const int batch = std::max(1, rate / 100);
        std::vector<ua::WriteValue> values(static_cast<std::size_t>(batch));
        long next = 0;
        auto tick = Clock::now();
        while (!stop.load()) {
            for (int j = 0; j < batch; ++j, ++next) {
                const long pass = next / alarms;
                ua::WriteValue& wv = values[std::size_t(j)];
                wv = ua::WriteValue{};
                wv.nodeId = ua::numericNodeId(ns, std::uint32_t(1000 + next % alarms));
                wv.attributeId = 13;
                wv.indexRange = ua::nullString();
                wv.value.mask = UAPLEX_DATAVALUE_VALUE;
                wv.value.value = ua::makeVariant(ua::BuiltinType::Double);
                wv.value.value.value.double_ = (pass % 2 == 0) ? 100.0 : 0.0;
            }
            ua::WriteRequest req{};
            req.nodesToWrite = {batch, values.data()};
            auto m = w.call(req);
            if (Client::result(m) != UAPLEX_Good) {
                ++failed;
            } else {
                for (const auto& s : static_cast<ua::WriteResponse*>(m.object)->results) {
                    if (s != UAPLEX_Good && failed.fetch_add(1) == 0)
                        std::fprintf(stderr, "bench_alarms: a write answered 0x%08X\n", s);
                    if (s == UAPLEX_Good) ++written;
                }
            }
            tick += std::chrono::milliseconds(10);
            std::this_thread::sleep_until(tick);
        }
    });

    std::vector<double> latencyMs;
    latencyMs.reserve(std::size_t(rate) * std::size_t(seconds + 2));
    long events = 0;
    const double cpu0 = cpuOf(server.pid);
    const auto start = Clock::now();
    ua::SubscriptionAcknowledgement ack{};
    while (Clock::now() - start < std::chrono::seconds(seconds)) {
        ua::PublishRequest p{};
        if (ack.sequenceNumber != 0) p.subscriptionAcknowledgements = {1, &ack};
        auto m = sub.call(p);
        if (Client::result(m) != UAPLEX_Good) break;
        const std::int64_t received = nowTicks();
        const auto& r = *static_cast<ua::PublishResponse*>(m.object);
        if (r.notificationMessage.notificationData.size() != 0)
            ack = {r.subscriptionId, r.notificationMessage.sequenceNumber};
        for (const auto& eo : r.notificationMessage.notificationData) {
            if (eo.data_type != enc::dataTypeOf<ua::EventNotificationList>()) continue;
            for (const auto& e : static_cast<const ua::EventNotificationList*>(eo.object)->events) {
                ++events;
                if (e.eventFields.size() == 1 &&
                    (e.eventFields[0].encoding & UAPLEX_VARIANT_TYPE_MASK) == UAPLEX_TYPE_DATETIME)
                    latencyMs.push_back(double(received - e.eventFields[0].value.datetime) / 1e4);
            }
        }
    }
    const double wall = std::chrono::duration<double>(Clock::now() - start).count();
    const double cpu = cpuOf(server.pid) - cpu0;
    stop = true;
    writer.join();
    const long rssEnd = server.rssKb();
    const double p50 = percentile(latencyMs, 0.5), p99 = percentile(latencyMs, 0.99);
    const double worst = latencyMs.empty() ? 0.0 : latencyMs.back();
    std::printf(
        "alarms %d, rate %d/s, %d s, publishing interval %.0f ms (revised %.0f)\n"
        "  start-up %.2f s, RSS %.1f MB at start, %.1f MB at end\n"
        "  state changes written %ld (%.0f/s), write errors %ld, events received %ld (%.0f/s)\n"
        "  event delivery latency p50 %.1f ms, p99 %.1f ms, max %.1f ms\n"
        "  server CPU %.3f cores (%.1f us per event)\n",
        alarms, rate, seconds, interval, revised, startup, double(rssStart) / 1024.0,
        double(rssEnd) / 1024.0, written.load(), double(written.load()) / wall, failed.load(),
        events, double(events) / wall, p50, p99, worst, cpu / wall,
        events > 0 ? cpu * 1e6 / double(events) : 0.0);
    return failed.load() == 0 && events > 0 ? 0 : 1;
}
