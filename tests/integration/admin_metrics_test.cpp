// SPDX-License-Identifier: Apache-2.0
// The admin listener of the real `uaplex` executable: /metrics in the Prometheus text format
// (checked by a strict parser of the format written here) counts the work a client did;
// /health and /ready answer; the https transport's paths are untouched.
#include <catch2/catch.hpp>

#include <chrono>
#include <cmath>
#include <csignal>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "support/client_services.hpp"
#include "support/opcua_client.hpp"
#include "support/raw_http.hpp"
#include "support/server_process.hpp"

using namespace uaplex;
using test::Client;

namespace {

// ---- A strict parser of the text exposition format 0.0.4 ---------------------------------

struct Sample {
    std::string name;
    std::map<std::string, std::string> labels;
    double value = 0;
};

struct Exposition {
    std::map<std::string, std::string> types;  // family -> counter, gauge, histogram, ...
    std::vector<Sample> samples;
    std::vector<std::string> errors;

    // The value of the sample `name` with exactly `labels`; NaN when absent.
    double value(const std::string& name,
                 const std::map<std::string, std::string>& labels = {}) const {
        for (const auto& s : samples)
            if (s.name == name && s.labels == labels) return s.value;
        return std::nan("");
    }
};

bool isNameStart(char c) {
    return std::isalpha(static_cast<unsigned char>(c)) || c == '_' || c == ':';
}
bool isNameChar(char c) {
    return isNameStart(c) || std::isdigit(static_cast<unsigned char>(c));
}

bool validMetricName(const std::string& n) {
    if (n.empty() || !isNameStart(n[0])) return false;
    for (char c : n)
        if (!isNameChar(c)) return false;
    return true;
}

bool validLabelName(const std::string& n) {
    if (n.empty() || !(std::isalpha(static_cast<unsigned char>(n[0])) || n[0] == '_')) return false;
    for (char c : n)
        if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) return false;
    return n.rfind("__", 0) != 0;
}

bool parseValue(const std::string& t, double& out) {
    if (t == "+Inf") return out = INFINITY, true;
    if (t == "-Inf") return out = -INFINITY, true;
    if (t == "NaN") return out = NAN, true;
    if (t.empty()) return false;
    char* end = nullptr;
    out = std::strtod(t.c_str(), &end);
    return end == t.c_str() + t.size();
}

// The family a sample belongs to: its own name, or for a histogram the name without
// _bucket/_sum/_count.
std::string familyOf(const std::string& name, const std::map<std::string, std::string>& types) {
    if (types.count(name)) return name;
    for (const char* suffix : {"_bucket", "_sum", "_count"}) {
        std::string s = suffix;
        if (name.size() > s.size() && name.compare(name.size() - s.size(), s.size(), s) == 0) {
            std::string base = name.substr(0, name.size() - s.size());
            auto it = types.find(base);
            if (it != types.end() && it->second == "histogram") return base;
        }
    }
    return "";
}

Exposition parse(const std::string& text) {
    Exposition e;
    auto err = [&e](std::size_t line, const std::string& what) {
        e.errors.push_back("line " + std::to_string(line) + ": " + what);
    };
    if (text.empty() || text.back() != '\n') err(0, "the text does not end with a newline");
    std::set<std::string> helped, closed, seenSeries;
    std::string current;  // the family whose samples may follow
    std::istringstream in(text);
    std::string line;
    std::size_t no = 0;
    while (std::getline(in, line)) {
        ++no;
        if (line.empty()) {
            err(no, "empty line");
            continue;
        }
        if (line[0] == '#') {
            std::istringstream l(line);
            std::string hash, kind, name;
            l >> hash >> kind >> name;
            if (kind != "HELP" && kind != "TYPE") {
                err(no, "a comment other than HELP or TYPE");
                continue;
            }
            if (!validMetricName(name)) err(no, "bad metric name '" + name + "'");
            if (closed.count(name)) err(no, "family " + name + " appears twice");
            if (current != name && !current.empty()) closed.insert(current);
            current = name;
            if (kind == "HELP") {
                if (!helped.insert(name).second) err(no, "second HELP for " + name);
                if (line.size() <= 7 + name.size() + 1) err(no, "HELP without text");
            } else {
                std::string type, rest;
                l >> type >> rest;
                static const std::set<std::string> types{"counter", "gauge", "histogram", "summary",
                                                         "untyped"};
                if (!types.count(type) || !rest.empty()) err(no, "bad TYPE '" + type + "'");
                if (e.types.count(name)) err(no, "second TYPE for " + name);
                e.types[name] = type;
                if (type == "counter" &&
                    (name.size() < 6 || name.compare(name.size() - 6, 6, "_total") != 0))
                    err(no, "counter " + name + " does not end in _total");
            }
            continue;
        }
        Sample s;
        std::size_t i = 0;
        while (i < line.size() && isNameChar(line[i])) ++i;
        s.name = line.substr(0, i);
        if (!validMetricName(s.name)) {
            err(no, "bad sample name");
            continue;
        }
        std::string series = s.name + "{";
        if (i < line.size() && line[i] == '{') {
            ++i;
            bool ok = true;
            while (ok && i < line.size() && line[i] != '}') {
                std::size_t k = i;
                while (i < line.size() && line[i] != '=') ++i;
                std::string lname = line.substr(k, i - k);
                if (!validLabelName(lname) || i + 1 >= line.size() || line[i + 1] != '"') {
                    ok = false;
                    break;
                }
                i += 2;
                std::string v;
                while (i < line.size() && line[i] != '"') {
                    if (line[i] == '\\') {
                        if (i + 1 >= line.size()) {
                            ok = false;
                            break;
                        }
                        char n = line[i + 1];
                        if (n == '\\' || n == '"')
                            v += n;
                        else if (n == 'n')
                            v += '\n';
                        else
                            ok = false;
                        i += 2;
                    } else {
                        v += line[i++];
                    }
                }
                if (!ok || i >= line.size()) {
                    ok = false;
                    break;
                }
                ++i;  // closing quote
                if (!s.labels.emplace(lname, v).second) ok = false;
                if (i < line.size() && line[i] == ',')
                    ++i;
                else if (i < line.size() && line[i] != '}')
                    ok = false;
            }
            if (!ok || i >= line.size()) {
                err(no, "bad label set");
                continue;
            }
            ++i;  // '}'
        }
        for (const auto& [k, v] : s.labels) series += k + "=" + v + ",";
        if (i >= line.size() || line[i] != ' ') {
            err(no, "no space before the value");
            continue;
        }
        std::string rest = line.substr(i + 1);
        std::string valueText = rest.substr(0, rest.find(' '));  // a timestamp may follow
        if (!parseValue(valueText, s.value)) err(no, "bad value '" + valueText + "'");
        std::string family = familyOf(s.name, e.types);
        if (family.empty() || family != current)
            err(no, "sample " + s.name + " outside its family's block");
        if (!seenSeries.insert(series).second) err(no, "sample " + series + "} twice");
        if (e.types.count(family) && e.types.at(family) == "counter" && !(s.value >= 0))
            err(no, "negative counter");
        e.samples.push_back(std::move(s));
    }
    // Histograms: per label set, le ascending, cumulative counts non-decreasing, the last
    // bucket +Inf and equal to _count.
    for (const auto& [family, type] : e.types) {
        if (type != "histogram") continue;
        std::map<std::map<std::string, std::string>, std::vector<std::pair<double, double>>>
            buckets;
        for (const auto& s : e.samples) {
            if (s.name != family + "_bucket") continue;
            auto labels = s.labels;
            auto le = labels.find("le");
            double bound = 0;
            if (le == labels.end() || !parseValue(le->second, bound)) {
                err(0, family + "_bucket without a valid le");
                continue;
            }
            labels.erase(le);
            buckets[labels].emplace_back(bound, s.value);
        }
        if (buckets.empty()) err(0, "histogram " + family + " without buckets");
        for (const auto& [labels, list] : buckets) {
            for (std::size_t k = 1; k < list.size(); ++k) {
                if (!(list[k].first > list[k - 1].first)) err(0, family + ": le not ascending");
                if (list[k].second < list[k - 1].second) err(0, family + ": buckets decrease");
            }
            if (list.empty() || !std::isinf(list.back().first))
                err(0, family + ": the last bucket is not +Inf");
            else if (list.back().second != e.value(family + "_count", labels))
                err(0, family + ": +Inf bucket differs from _count");
            if (std::isnan(e.value(family + "_sum", labels))) err(0, family + ": no _sum");
        }
    }
    return e;
}

std::string tomlOf(std::uint16_t port, std::uint16_t adminPort) {
    return test::configHead(port) +
           "[slots]\nrequest_queue = \"fifo\"\n[plugins.fifo]\n[plugins.transport-tcp]\n"
           "[admin]\nenabled = true\nlisten = \"127.0.0.1:" +
           std::to_string(adminPort) + "\"\n";
}

}  // namespace

TEST_CASE("the strict parser refuses what the format does not allow") {
    CHECK(parse("# HELP a_total A.\n# TYPE a_total counter\na_total 1\n").errors.empty());
    CHECK(!parse("a 1\n").errors.empty());                             // no TYPE
    CHECK(!parse("# TYPE a counter\na 1\n").errors.empty());           // no _total
    CHECK(!parse("# TYPE a gauge\na{x=\"1} 1\n").errors.empty());      // open quote
    CHECK(!parse("# TYPE a gauge\na{x=\"1\"} one\n").errors.empty());  // bad value
    CHECK(!parse("# TYPE a gauge\na 1\na 2\n").errors.empty());        // twice
    CHECK(!parse("# TYPE a gauge\na 1").errors.empty());               // no newline
    CHECK(!parse("# TYPE h histogram\nh_bucket{le=\"1\"} 2\nh_bucket{le=\"+Inf\"} 1\n"
                 "h_sum 1\nh_count 1\n")
               .errors.empty());  // decreasing
    CHECK(!parse("# TYPE h histogram\nh_bucket{le=\"+Inf\"} 2\nh_sum 1\nh_count 1\n")
               .errors.empty());  // +Inf != count
}

TEST_CASE("metrics count the work done; health and ready answer") {
    const std::uint16_t adminPort = test::freePort();
    test::ServerProcess server("admin",
                               [adminPort](std::uint16_t port, const std::filesystem::path&) {
                                   return tomlOf(port, adminPort);
                               });
    REQUIRE(server.alive());

    auto health = test::httpGet(adminPort, "/health");
    CHECK(health.status == 200);
    // The server accepted a client connection: every transport listens.
    CHECK(test::httpGet(adminPort, "/ready").status == 200);
    CHECK(test::httpGet(adminPort, "/nothing").status == 404);
    CHECK(test::httpGet(adminPort, "/metrics", "Content-Length: 0\r\n", "POST").status == 405);

    constexpr int kReads = 25;
    constexpr int kFailing = 3;
    Client c;
    REQUIRE(c.open(server.port));
    REQUIRE(c.createSession() == UAPLEX_Good);
    std::vector<ua::ReadValueId> ids(1);
    for (int i = 0; i < kReads; ++i) {
        auto read = test::readServerState(ids);
        REQUIRE(Client::result(c.call(read)) == UAPLEX_Good);
    }
    // One subscription with two monitored items.
    const std::uint32_t sub = test::createSubscription(c);
    std::vector<ua::MonitoredItemCreateRequest> items(2);
    for (std::uint32_t i = 0; i < items.size(); ++i) {
        auto& it = items[i];
        it.itemToMonitor.nodeId = ua::numericNodeId(0, 2259);
        it.itemToMonitor.attributeId = 13;
        it.monitoringMode = ua::MonitoringMode::Reporting;
        it.requestedParameters.clientHandle = i;
        it.requestedParameters.samplingInterval = 1000;
        it.requestedParameters.queueSize = 1;
        it.requestedParameters.discardOldest = true;
    }
    ua::CreateMonitoredItemsRequest create{};
    create.subscriptionId = sub;
    create.timestampsToReturn = ua::TimestampsToReturn::Both;
    create.itemsToCreate = {std::int32_t(items.size()), items.data()};
    REQUIRE(Client::result(c.call(create)) == UAPLEX_Good);
    // Reads without a session: ServiceFaults.
    Client stranger;
    REQUIRE(stranger.open(server.port));
    for (int i = 0; i < kFailing; ++i) {
        auto read = test::readServerState(ids);
        REQUIRE(Client::result(stranger.call(read)) == UAPLEX_BadSessionIdInvalid);
    }

    auto m = test::httpGet(adminPort, "/metrics");
    REQUIRE(m.status == 200);
    CHECK(test::headerOf(m, "Content-Type").rfind("text/plain; version=0.0.4", 0) == 0);
    Exposition e = parse(m.body);
    for (const auto& error : e.errors) UNSCOPED_INFO(error);
    CHECK(e.errors.empty());

    CHECK(e.types["uaplex_service_requests_total"] == "counter");
    CHECK(e.types["uaplex_service_duration_seconds"] == "histogram");
    CHECK(e.value("uaplex_service_requests_total", {{"service", "Read"}}) == kReads + kFailing);
    CHECK(e.value("uaplex_service_faults_total", {{"service", "Read"}}) == kFailing);
    CHECK(e.value("uaplex_service_responses_total", {{"service", "Read"}, {"status", "Good"}}) ==
          kReads);
    CHECK(e.value("uaplex_service_responses_total",
                  {{"service", "Read"}, {"status", "BadSessionIdInvalid"}}) == kFailing);
    CHECK(std::isnan(e.value("uaplex_service_responses_total",
                             {{"service", "Write"}, {"status", "Good"}})));  // none: no series
    // Every request that reached a service went through the request queue, and only those.
    CHECK(e.types["uaplex_request_queue_wait_seconds"] == "histogram");
    double served = 0;
    for (const auto& sample : e.samples)
        if (sample.name == "uaplex_service_requests_total") served += sample.value;
    CHECK(e.value("uaplex_request_queue_wait_seconds_count") == served);
    CHECK(served >= kReads + kFailing + 4);
    CHECK(e.value("uaplex_service_requests_total", {{"service", "CreateSession"}}) == 1);
    CHECK(e.value("uaplex_service_requests_total", {{"service", "ActivateSession"}}) == 1);
    CHECK(e.value("uaplex_service_faults_total", {{"service", "ActivateSession"}}) == 0);
    CHECK(e.value("uaplex_service_duration_seconds_count", {{"service", "Read"}}) ==
          kReads + kFailing);
    CHECK(e.value("uaplex_service_duration_seconds_bucket",
                  {{"service", "Read"}, {"le", "+Inf"}}) == kReads + kFailing);
    CHECK(e.value("uaplex_service_duration_seconds_count", {{"service", "Write"}}) == 0);
    CHECK(e.value("uaplex_sessions") == 1);
    CHECK(e.value("uaplex_sessions_created_total") == 1);
    CHECK(e.value("uaplex_subscriptions") == 1);
    CHECK(e.value("uaplex_subscriptions_created_total") == 1);
    CHECK(e.value("uaplex_monitored_items") == 2);
    CHECK(e.value("uaplex_service_requests_total", {{"service", "CreateMonitoredItems"}}) == 1);
    CHECK(e.value("uaplex_connections") >= 2);
    CHECK(e.value("uaplex_ready") == 1);
    CHECK(e.value("uaplex_request_queue_depth") == 0);
    // The fifo queue's own metrics, from the host API registry.
    CHECK(e.types["uaplex_plugin_fifo_enqueued_total"] == "counter");
    CHECK(e.value("uaplex_plugin_fifo_enqueued_total") >= kReads);
    CHECK(e.types["uaplex_plugin_fifo_depth"] == "gauge");

    // HEAD: the headers only.
    auto head = test::httpGet(adminPort, "/metrics", {}, "HEAD");
    CHECK(head.status == 200);
    CHECK(head.body.empty());
}

TEST_CASE("a reload with another [admin] says it needs a restart and keeps the listener") {
    const std::uint16_t adminPort = test::freePort();
    auto toml = [adminPort](std::uint16_t port, const std::filesystem::path& dir,
                            const std::string& extra) {
        return "[log]\nlevel = \"info\"\nsink = \"file\"\nfile = \"" +
               (dir / "uaplex.log").string() + "\"\n" +
               tomlOf(port, adminPort).substr(tomlOf(port, adminPort).find("[host]")) + extra;
    };
    test::ServerProcess server(
        "admin-reload",
        [&](std::uint16_t port, const std::filesystem::path& dir) { return toml(port, dir, ""); });
    REQUIRE(server.alive());
    REQUIRE(test::httpGet(adminPort, "/metrics").status == 200);
    std::ofstream(server.dir / "test.toml")
        << toml(server.port, server.dir, "token = \"0123456789abcdef0123\"\n");
    ::kill(server.pid, SIGHUP);
    auto logHas = [&](const std::string& what) {
        std::ifstream in(server.dir / "uaplex.log");
        std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
        return all.find(what) != std::string::npos;
    };
    // Warnings are flushed at once (info lines may still be buffered).
    for (int i = 0; i < 100 && !logHas("take effect after a restart"); ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    CHECK(logHas("take effect after a restart"));
    // The running listener keeps its settings: still no token asked.
    CHECK(test::httpGet(adminPort, "/metrics").status == 200);
}
