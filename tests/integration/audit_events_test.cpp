// SPDX-License-Identifier: Apache-2.0
// [audit] against the real `uaplex` process: a client subscribed to the Server object with an
// EventFilter selecting EventType, Status, ClientUserId and SessionId receives the Audit events
// of a second client's CreateSession, ActivateSession, Write and Cancel, and a failed
// ActivateSession (wrong password) with Status false; the JSON lines log has one parseable line
// per event and no password in it. Server_Auditing reads true. An OpenSecureChannel with an
// untrusted client certificate raises AuditCertificateUntrustedEventType.
#include <catch2/catch.hpp>

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "support/client_services.hpp"
#include "support/opcua_client.hpp"
#include "support/raw_http.hpp"
#include "support/server_process.hpp"
#include "support/test_certificates.hpp"

using namespace uaplex;
using test::Client;

namespace {

namespace fs = std::filesystem;

std::uint32_t handle = 100;

constexpr std::uint32_t kAuditEventType = 2052;
constexpr std::uint32_t kAuditSessionEventType = 2069;
constexpr std::uint32_t kAuditCreateSession = 2071;
constexpr std::uint32_t kAuditActivateSession = 2075;
constexpr std::uint32_t kAuditCancel = 2078;
constexpr std::uint32_t kAuditWriteUpdate = 2100;
constexpr std::uint32_t kAuditUrlMismatch = 2748;
constexpr std::uint32_t kAuditConditionEnable = 2803;
constexpr std::uint32_t kAuditUpdateMethod = 2127;
constexpr std::uint32_t kAuditHistoryValueUpdate = 3006;
constexpr std::uint32_t kAuditHistoryRawModifyDelete = 3014;
constexpr std::uint32_t kAuditHistoryAtTimeDelete = 3019;
constexpr std::uint32_t kAuditHistoryEventUpdate = 2999;
constexpr std::uint32_t kAuditHistoryEventDelete = 3022;

fs::path usersFile(const fs::path& dir) {
    fs::path f = dir / "users.toml";
    std::string add = std::string(UAPLEX_EXE) +
                      " users add operator --roles Operator --password op-secret "
                      "--iterations 1000 --file " +
                      f.string() + " >/dev/null";
    REQUIRE(std::system(add.c_str()) == 0);
    return f;
}

std::uint16_t adminPort() {
    static const std::uint16_t port = test::freePort();
    return port;
}

// A sample of the admin listener's /metrics; -1 when absent.
double metric(const std::string& sample) {
    auto reply = test::httpGet(adminPort(), "/metrics");
    REQUIRE(reply.status == 200);
    auto at = reply.body.find("\n" + sample + " ");
    if (at == std::string::npos) return -1;
    return std::stod(reply.body.substr(at + sample.size() + 2));
}

test::ServerProcess startServer() {
    return test::ServerProcess("audit-events", [](std::uint16_t port, const fs::path& dir) {
        std::ostringstream t;
        t << test::configHead(port)
          << "[slots]\nrequest_queue = \"fifo\"\nmonitored_item_queue = \"mi-default\"\n"
          << "[plugins.fifo]\n[plugins.transport-tcp]\n[plugins.mi-default]\n[plugins.demo]\n"
          << "[access]\nusers_file = \"" << usersFile(dir).string() << "\"\n"
          << "[audit]\nenabled = true\nfile = \"audit.jsonl\"\nformat = \"json\"\n"
          << "[admin]\nenabled = true\nlisten = \"127.0.0.1:" << adminPort() << "\"\n";
        return t.str();
    });
}

// One received event: the four fields selected.
struct Seen {
    std::uint32_t type = 0;
    bool status = false;
    std::string user;
    bool hasSession = false;
};

std::uint32_t subscribeToServerEvents(Client& c) {
    std::uint32_t sub = test::createSubscription(c, {100, 600, 5}, ++handle);
    ua::QualifiedName names[4] = {{0, ua::makeString("EventType")},
                                  {0, ua::makeString("Status")},
                                  {0, ua::makeString("ClientUserId")},
                                  {0, ua::makeString("SessionId")}};
    const std::uint32_t types[4] = {2041, kAuditEventType, kAuditEventType, kAuditSessionEventType};
    ua::SimpleAttributeOperand select[4]{};
    for (int i = 0; i < 4; ++i) {
        select[i].typeDefinitionId = ua::numericNodeId(0, types[i]);
        select[i].browsePath = {1, &names[i]};
        select[i].attributeId = 13;
        select[i].indexRange = ua::nullString();
    }
    test::monitorServerEvents(c, sub, select, ++handle);
    return sub;
}

void publishEvents(Client& c, std::vector<Seen>& out) {
    ua::PublishRequest p{};
    p.subscriptionAcknowledgements = {0, nullptr};
    auto m = c.call(p, ++handle);
    REQUIRE(Client::result(m) == UAPLEX_Good);
    for (const auto& eo :
         static_cast<ua::PublishResponse*>(m.object)->notificationMessage.notificationData) {
        if (eo.data_type != enc::dataTypeOf<ua::EventNotificationList>()) continue;
        for (const auto& e : static_cast<const ua::EventNotificationList*>(eo.object)->events) {
            REQUIRE(e.eventFields.size() == 4);
            Seen s;
            const ua::Variant& type = e.eventFields[0];
            if ((type.encoding & UAPLEX_VARIANT_TYPE_MASK) == UAPLEX_TYPE_NODEID)
                s.type = static_cast<const ua::NodeId*>(type.value.pointer)->identifier.numeric;
            const ua::Variant& st = e.eventFields[1];
            s.status =
                (st.encoding & UAPLEX_VARIANT_TYPE_MASK) == UAPLEX_TYPE_BOOLEAN && st.value.boolean;
            const ua::Variant& user = e.eventFields[2];
            if ((user.encoding & UAPLEX_VARIANT_TYPE_MASK) == UAPLEX_TYPE_STRING)
                s.user = std::string(ua::view(user.value.string));
            s.hasSession =
                (e.eventFields[3].encoding & UAPLEX_VARIANT_TYPE_MASK) == UAPLEX_TYPE_NODEID;
            out.push_back(s);
        }
    }
}

bool has(const std::vector<Seen>& seen, std::uint32_t type, bool status, std::string_view user) {
    for (const Seen& s : seen)
        if (s.type == type && s.status == status && (user.empty() || s.user == user)) return true;
    return false;
}

std::string slurp(const fs::path& f) {
    std::ifstream in(f);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

}  // namespace

TEST_CASE("audit: Audit events reach a client subscribed to the Server object and the log") {
    test::ServerProcess s = startServer();
    Client watcher;
    REQUIRE(watcher.open(s.port));
    REQUIRE(watcher.createSession() == UAPLEX_Good);
    ua::DataValue auditing = test::readOne(watcher, ua::numericNodeId(0, 2994), 13, ++handle);
    REQUIRE((auditing.value.encoding & UAPLEX_VARIANT_TYPE_MASK) == UAPLEX_TYPE_BOOLEAN);
    CHECK(auditing.value.value.boolean);  // Server_Auditing
    subscribeToServerEvents(watcher);

    // A second client: an Operator's session, a write and a cancel.
    Client op;
    REQUIRE(op.open(s.port));
    Client::UserName operatorToken("username", "operator", "op-secret");
    REQUIRE(op.createSessionAs(&operatorToken.eo) == UAPLEX_Good);
    const std::uint16_t demo = test::demoNamespace(op);
    CHECK(test::writeInt32(op, ua::stringNodeId(demo, "Demo.Scalars.Int32"), 42) == UAPLEX_Good);
    ua::CancelRequest cancel{};
    cancel.requestHandle = 4242;
    CHECK(Client::result(op.call(cancel, ++handle)) == UAPLEX_Good);
    // Disable of the demo's LevelAlarm, a condition method (Part 9 AuditConditionEnable).
    ua::CallMethodRequest disable{};
    disable.objectId = ua::stringNodeId(demo, "Demo.Events.LevelAlarm");
    disable.methodId = ua::numericNodeId(0, 9028);
    disable.inputArguments = {0, nullptr};
    ua::CallRequest callReq{};
    callReq.methodsToCall = {1, &disable};
    CHECK(Client::result(op.call(callReq, ++handle)) == UAPLEX_Good);
    // A third: the wrong password.
    Client bad;
    REQUIRE(bad.open(s.port));
    REQUIRE(bad.createSessionOnly() == UAPLEX_Good);
    Client::UserName wrong("username", "operator", "wrong-secret");
    CHECK(bad.activateAs(wrong.eo) != UAPLEX_Good);
    // A fourth names an endpoint the server does not have.
    Client lost;
    REQUIRE(lost.open(s.port));
    ua::CreateSessionRequest cs{};
    cs.endpointUrl = ua::makeString("opc.tcp://elsewhere.example:1");
    cs.sessionName = ua::makeString("lost");
    cs.requestedSessionTimeout = 60000;
    CHECK(Client::result(lost.call(cs, ++handle)) == UAPLEX_Good);

    std::vector<Seen> seen;
    auto all = [&] {
        return has(seen, kAuditCreateSession, true, "") &&
               has(seen, kAuditActivateSession, true, "operator") &&
               has(seen, kAuditWriteUpdate, true, "operator") &&
               has(seen, kAuditCancel, true, "operator") &&
               has(seen, kAuditConditionEnable, true, "operator") &&
               has(seen, kAuditActivateSession, false, "operator") &&
               has(seen, kAuditUrlMismatch, true, "");
    };
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (std::chrono::steady_clock::now() < deadline && !all()) publishEvents(watcher, seen);
    INFO("events received: " << seen.size());
    CHECK(has(seen, kAuditCreateSession, true, ""));
    CHECK(has(seen, kAuditActivateSession, true, "operator"));
    CHECK(has(seen, kAuditWriteUpdate, true, "operator"));
    CHECK(has(seen, kAuditCancel, true, "operator"));
    CHECK(has(seen, kAuditConditionEnable, true, "operator"));
    CHECK(has(seen, kAuditActivateSession, false, "operator"));  // the wrong password
    CHECK(has(seen, kAuditUrlMismatch, true, ""));
    // The AuditSessionEventType subtypes name their session (a refused CreateSession has none).
    for (const Seen& e : seen) {
        INFO("event type " << e.type << " status " << e.status);
        if (((e.type == kAuditCreateSession || e.type == kAuditUrlMismatch) && e.status) ||
            e.type == kAuditActivateSession || e.type == kAuditCancel)
            CHECK(e.hasSession);
    }

    // The log: the writer runs on its own thread; every line is one JSON object.
    const fs::path log = s.dir / "audit.jsonl";
    std::map<std::string, int> counts;
    deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    std::string text;
    while (std::chrono::steady_clock::now() < deadline) {
        text = slurp(log);
        if (text.find("AuditCancelEventType") != std::string::npos &&
            text.find("\"Status\":false") != std::string::npos)
            break;
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    CHECK(text.find("op-secret") == std::string::npos);
    CHECK(text.find("wrong-secret") == std::string::npos);
    const fs::path summary = s.dir / "summary.txt";
    std::string check =
        std::string(UAPLEX_PYTHON) +
        " -c 'import json,sys,collections\n"
        "c=collections.Counter()\n"
        "for l in open(sys.argv[1]):\n"
        "  r=json.loads(l); c[r[\"EventType\"]+\" \"+str(r[\"Status\"]).lower()]+=1\n"
        "print(\"\\n\".join(k+\"=\"+str(v) for k,v in c.items()))' " +
        log.string() + " > " + summary.string();
    REQUIRE(std::system(check.c_str()) == 0);  // every line parses
    std::ifstream in(summary);
    for (std::string line; std::getline(in, line);) {
        auto eq = line.find('=');
        if (eq != std::string::npos) counts[line.substr(0, eq)] = std::stoi(line.substr(eq + 1));
    }
    CHECK(counts["AuditCreateSessionEventType true"] >= 3);  // watcher, op, bad
    CHECK(counts["AuditActivateSessionEventType true"] >= 2);
    CHECK(counts["AuditActivateSessionEventType false"] == 1);
    CHECK(counts["AuditWriteUpdateEventType true"] == 1);
    // The Int32 written (type 6) and the Int32 it replaced.
    CHECK_THAT(text, Catch::Contains("\"NewValue\":\"type 6\",\"OldValue\":\"type 6\""));
    CHECK(counts["AuditCancelEventType true"] == 1);
    CHECK(counts["AuditUrlMismatchEventType true"] == 1);
    CHECK(counts["AuditConditionEnableEventType true"] == 1);
    // The counters: every event raised, nothing dropped.
    CHECK(metric("uaplex_audit_events_total") >= 8);
    CHECK(metric("uaplex_audit_records_dropped_total") == 0);
    CHECK(s.alive());
}

TEST_CASE("audit: off by default, Server_Auditing reads false and no event is raised") {
    test::ServerProcess s("audit-off", [](std::uint16_t port, const fs::path&) {
        return test::configHead(port) +
               "[slots]\nrequest_queue = \"fifo\"\nmonitored_item_queue = \"mi-default\"\n"
               "[plugins.fifo]\n[plugins.transport-tcp]\n[plugins.mi-default]\n";
    });
    Client watcher;
    REQUIRE(watcher.open(s.port));
    REQUIRE(watcher.createSession() == UAPLEX_Good);
    ua::DataValue auditing = test::readOne(watcher, ua::numericNodeId(0, 2994), 13, ++handle);
    CHECK_FALSE(auditing.value.value.boolean);
    subscribeToServerEvents(watcher);
    Client other;
    REQUIRE(other.open(s.port));
    REQUIRE(other.createSession() == UAPLEX_Good);
    std::vector<Seen> seen;
    for (int i = 0; i < 3; ++i) publishEvents(watcher, seen);
    CHECK(seen.empty());
}

TEST_CASE("audit: an untrusted client certificate at OpenSecureChannel raises its event") {
    test::ServerProcess s("audit-pki", [](std::uint16_t port, const fs::path& dir) {
        std::ostringstream t;
        t << test::configHead(port) << "application_uri = \"urn:audit:pki\"\n"
          << "security = [{policy = \"None\"}, {policy = \"Basic256Sha256\"}]\n"
          << "pki_dir = \"" << (dir / "pki").string() << "\"\n"
          << "[slots]\nrequest_queue = \"fifo\"\nmonitored_item_queue = \"mi-default\"\n"
          << "[plugins.fifo]\n[plugins.transport-tcp]\n[plugins.mi-default]\n"
          << "[audit]\nenabled = true\nfile = \"audit.jsonl\"\nformat = \"json\"\n";
        return t.str();
    });
    Client watcher;
    REQUIRE(watcher.open(s.port));
    REQUIRE(watcher.createSession() == UAPLEX_Good);
    subscribeToServerEvents(watcher);

    auto server = security::readCertificate(s.dir / "pki/own/certs/uaplex.der");
    REQUIRE(server);
    test::IssueOptions o;
    o.name = {{"O", "stranger"}, {"CN", "untrusted"}};
    o.keyUsage = "critical,digitalSignature,nonRepudiation,keyEncipherment,dataEncipherment";
    auto stranger = test::issueCertificate(o);
    REQUIRE(stranger.cert);
    std::vector<std::uint8_t> sealed(2 * 256);
    REQUIRE(security::randomBytes(sealed));
    Client c;
    REQUIRE(c.connect(s.port, 10000));
    REQUIRE(c.sendRaw(Client::hello("opc.tcp://127.0.0.1:" + std::to_string(s.port))));
    REQUIRE(c.receive().size() == 28);
    REQUIRE(c.sendRaw(test::opnChunk(security::findPolicy("Basic256Sha256")->uri,
                                     stranger.cert->der, server->thumbprint, sealed)));
    c.receive();  // ERR

    constexpr std::uint32_t kUntrusted = 2087;  // AuditCertificateUntrustedEventType
    std::vector<Seen> seen;
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (std::chrono::steady_clock::now() < deadline && !has(seen, kUntrusted, false, ""))
        publishEvents(watcher, seen);
    CHECK(has(seen, kUntrusted, false, ""));
    std::string text;
    deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (std::chrono::steady_clock::now() < deadline &&
           text.find("AuditCertificateUntrustedEventType") == std::string::npos) {
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
        text = slurp(s.dir / "audit.jsonl");
    }
    CHECK_THAT(text, Catch::Contains("AuditCertificateUntrustedEventType") &&
                         Catch::Contains(stranger.cert->thumbprintHex()));
    CHECK(s.alive());
}

TEST_CASE("audit: a reload with another [audit] says it needs a restart and changes nothing") {
    auto toml = [](std::uint16_t port, const fs::path& dir, bool audit) {
        return "[log]\nlevel = \"info\"\nsink = \"file\"\nfile = \"" +
               (dir / "uaplex.log").string() + "\"\n" +
               test::configHead(port).substr(test::configHead(port).find("[host]")) +
               "[slots]\nrequest_queue = \"fifo\"\n[plugins.fifo]\n[plugins.transport-tcp]\n" +
               (audit ? "[audit]\nenabled = true\n" : "");
    };
    test::ServerProcess s("audit-reload", [&](std::uint16_t port, const fs::path& dir) {
        return toml(port, dir, false);
    });
    REQUIRE(s.alive());
    std::ofstream(s.dir / "test.toml") << toml(s.port, s.dir, true);
    ::kill(s.pid, SIGHUP);
    auto logHas = [&](const std::string& what) {
        return slurp(s.dir / "uaplex.log").find(what) != std::string::npos;
    };
    for (int i = 0; i < 100 && !logHas("take effect after a restart"); ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    CHECK(logHas("take effect after a restart"));
    Client c;
    REQUIRE(c.open(s.port));
    REQUIRE(c.createSession() == UAPLEX_Good);
    ua::DataValue auditing = test::readOne(c, ua::numericNodeId(0, 2994), 13, ++handle);
    CHECK_FALSE(auditing.value.value.boolean);  // still the running configuration's
}

TEST_CASE("audit: writes and calls completed later and method calls raise their events") {
    test::ServerProcess s("audit-async", [](std::uint16_t port, const fs::path& dir) {
        std::ostringstream t;
        t << test::configHead(port)
          << "[slots]\nrequest_queue = \"fifo\"\nmonitored_item_queue = \"mi-default\"\n"
          << "[plugins.fifo]\n[plugins.transport-tcp]\n[plugins.mi-default]\n"
          << "[plugins.test-asyncread]\nlibrary = \"" << UAPLEX_ASYNCREAD_PLUGIN << "\"\n"
          << "delay_ms = 50\n"
          << "[access]\nusers_file = \"" << usersFile(dir).string() << "\"\n"
          << "[audit]\nenabled = true\nfile = \"audit.jsonl\"\nformat = \"json\"\n";
        return t.str();
    });
    Client watcher;
    REQUIRE(watcher.open(s.port));
    REQUIRE(watcher.createSession() == UAPLEX_Good);
    subscribeToServerEvents(watcher);
    Client op;
    REQUIRE(op.open(s.port));
    Client::UserName operatorToken("username", "operator", "op-secret");
    REQUIRE(op.createSessionAs(&operatorToken.eo) == UAPLEX_Good);
    const std::uint16_t ns = test::namespaceIndex(op, "urn:uaplex:test-async", ++handle);
    REQUIRE(ns != 0);

    // write_async: answered after delay_ms, from the plugin's thread.
    CHECK(test::writeInt32(op, ua::stringNodeId(ns, "Delayed"), 7) == UAPLEX_Good);
    // call_async (2x after delay_ms), and one answered at once.
    ua::Variant in = ua::variantInt32(21);
    ua::CallMethodRequest calls[2]{};
    calls[0].objectId = ua::stringNodeId(ns, "Object");
    calls[0].methodId = ua::stringNodeId(ns, "DelayedMethod");
    calls[0].inputArguments = {1, &in};
    calls[1].objectId = ua::stringNodeId(ns, "Object");
    calls[1].methodId = ua::stringNodeId(ns, "SyncMethod");
    calls[1].inputArguments = {0, nullptr};
    ua::CallRequest callReq{};
    callReq.methodsToCall = {2, calls};
    auto m = op.call(callReq, ++handle);
    REQUIRE(Client::result(m) == UAPLEX_Good);
    const auto& results = static_cast<ua::CallResponse*>(m.object)->results;
    REQUIRE(results.length == 2);
    CHECK(results[0].statusCode == UAPLEX_Good);
    // A method that is no component of the object: the call fails, the event says so.
    ua::CallMethodRequest wrong{};
    wrong.objectId = ua::numericNodeId(0, 2253);  // Server
    wrong.methodId = ua::numericNodeId(0, 11492 + 100000);
    wrong.inputArguments = {0, nullptr};
    ua::CallRequest wrongReq{};
    wrongReq.methodsToCall = {1, &wrong};
    REQUIRE(Client::result(op.call(wrongReq, ++handle)) == UAPLEX_Good);

    std::vector<Seen> seen;
    auto count = [&](std::uint32_t type, bool status) {
        std::size_t n = 0;
        for (const Seen& e : seen)
            n += e.type == type && e.status == status && e.user == "operator";
        return n;
    };
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (std::chrono::steady_clock::now() < deadline &&
           (count(kAuditWriteUpdate, true) < 1 || count(kAuditUpdateMethod, true) < 2 ||
            count(kAuditUpdateMethod, false) < 1))
        publishEvents(watcher, seen);
    CHECK(count(kAuditWriteUpdate, true) == 1);
    CHECK(count(kAuditUpdateMethod, true) == 2);
    CHECK(count(kAuditUpdateMethod, false) == 1);

    // The log has the same records, with the written value and the method's arguments.
    std::string text;
    deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (std::chrono::steady_clock::now() < deadline &&
           text.find("\"Status\":false") == std::string::npos) {
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
        text = slurp(s.dir / "audit.jsonl");
    }
    CHECK_THAT(text, Catch::Contains("\"EventType\":\"AuditWriteUpdateEventType\"") &&
                         Catch::Contains("\"NewValue\":\"type 6\"") &&
                         Catch::Contains("DelayedMethod") &&
                         Catch::Contains("\"InputArguments\":\"1 arguments\"") &&
                         Catch::Contains("\"OutputArguments\":\"1 arguments\""));
    CHECK(s.alive());
}

namespace {

// A server recording into history-sqlite (`history`: the [history] keys besides plugin) with
// [audit] on, a watcher subscribed to the Server object's events and a session of operator.
struct HistoryAudit {
    test::ServerProcess s;
    Client watcher;
    Client op;
    HistoryAudit(const char* name, std::string history)
        : s(name, [history](std::uint16_t port, const fs::path& dir) {
              std::ostringstream t;
              t << test::configHead(port)
                << "[slots]\nrequest_queue = \"fifo\"\nmonitored_item_queue = \"mi-default\"\n"
                << "[plugins.fifo]\n[plugins.transport-tcp]\n[plugins.mi-default]\n"
                << "[plugins.demo]\n[plugins.history-sqlite]\npath = \""
                << (dir / "history.db").string() << "\"\n"
                << "[history]\nplugin = \"history-sqlite\"\n"
                << history << "[access]\nusers_file = \"" << usersFile(dir).string() << "\"\n"
                << "[audit]\nenabled = true\nfile = \"audit.jsonl\"\nformat = \"json\"\n";
              return t.str();
          }) {
        REQUIRE(watcher.open(s.port));
        REQUIRE(watcher.createSession() == UAPLEX_Good);
        subscribeToServerEvents(watcher);
        REQUIRE(op.open(s.port));
        Client::UserName operatorToken("username", "operator", "op-secret");
        REQUIRE(op.createSessionAs(&operatorToken.eo) == UAPLEX_Good);
    }
};

// A decoded HistoryUpdateDetails structure as the request carries it.
ua::ExtensionObject decoded(const enc::DataType* t, void* object) {
    ua::ExtensionObject eo{};
    eo.type_id = ua::numericNodeId(0, t->binaryEncodingId);
    eo.encoding = UAPLEX_EXTENSIONOBJECT_BINARY;
    eo.data_type = t;
    eo.object = object;
    return eo;
}

}  // namespace

TEST_CASE("audit: a HistoryUpdate, answered after the store, raises one event per entry") {
    HistoryAudit h("audit-history", "nodes = [\"nsu=urn:uaplex:demo;s=Demo.Scalars.Double\"]\n");
    test::ServerProcess& s = h.s;
    Client& watcher = h.watcher;
    Client& op = h.op;
    const std::uint16_t demo = test::namespaceIndex(op, "urn:uaplex:demo", ++handle);
    const ua::NodeId node = ua::stringNodeId(demo, "Demo.Scalars.Double");
    const std::int64_t t0 = 133000000000000000;

    ua::DataValue dv{};
    dv.mask = UAPLEX_DATAVALUE_VALUE | UAPLEX_DATAVALUE_SOURCE_TIMESTAMP;
    dv.value = ua::variantDouble(1.5);
    dv.source_timestamp = t0;
    ua::UpdateDataDetails insert{};
    insert.nodeId = node;
    insert.performInsertReplace = ua::PerformUpdateType::Insert;
    insert.updateValues = {1, &dv};
    ua::DateTime at = t0 + 10000000;  // no value there: BadNoEntryExists, Status still true
    ua::DeleteAtTimeDetails atTime{};
    atTime.nodeId = node;
    atTime.reqTimes = {1, &at};
    ua::DeleteRawModifiedDetails raw{};
    raw.nodeId = node;
    raw.startTime = t0;
    raw.endTime = t0 + 1;
    ua::DeleteRawModifiedDetails modified = raw;  // refused: modified values are not kept
    modified.isDeleteModified = true;
    ua::ExtensionObject details[4] = {
        decoded(enc::dataTypeOf<ua::UpdateDataDetails>(), &insert),
        decoded(enc::dataTypeOf<ua::DeleteAtTimeDetails>(), &atTime),
        decoded(enc::dataTypeOf<ua::DeleteRawModifiedDetails>(), &raw),
        decoded(enc::dataTypeOf<ua::DeleteRawModifiedDetails>(), &modified)};
    ua::HistoryUpdateRequest req{};
    req.historyUpdateDetails = {4, details};
    auto m = op.call(req, ++handle);
    REQUIRE(Client::result(m) == UAPLEX_Good);
    const auto& results = static_cast<ua::HistoryUpdateResponse*>(m.object)->results;
    REQUIRE(results.length == 4);
    CHECK(results[0].statusCode == UAPLEX_Good);
    CHECK(results[2].statusCode == UAPLEX_Good);
    CHECK(results[3].statusCode == UAPLEX_BadHistoryOperationUnsupported);

    std::vector<Seen> seen;
    auto count = [&](std::uint32_t type, bool status) {
        std::size_t n = 0;
        for (const Seen& e : seen)
            n += e.type == type && e.status == status && e.user == "operator";
        return n;
    };
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (std::chrono::steady_clock::now() < deadline &&
           (count(kAuditHistoryValueUpdate, true) < 1 ||
            count(kAuditHistoryAtTimeDelete, true) < 1 ||
            count(kAuditHistoryRawModifyDelete, true) < 1 ||
            count(kAuditHistoryRawModifyDelete, false) < 1))
        publishEvents(watcher, seen);
    CHECK(count(kAuditHistoryValueUpdate, true) == 1);
    CHECK(count(kAuditHistoryAtTimeDelete, true) == 1);
    CHECK(count(kAuditHistoryRawModifyDelete, true) == 1);
    CHECK(count(kAuditHistoryRawModifyDelete, false) == 1);

    std::string text;
    deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (std::chrono::steady_clock::now() < deadline &&
           text.find("AuditHistoryAtTimeDeleteEventType") == std::string::npos) {
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
        text = slurp(s.dir / "audit.jsonl");
    }
    CHECK_THAT(text, Catch::Contains("\"EventType\":\"AuditHistoryValueUpdateEventType\"") &&
                         Catch::Contains("\"NewValues\":\"1 values\"") &&
                         Catch::Contains("\"ReqTimes\":\"1 times\"") &&
                         Catch::Contains("AuditHistoryRawModifyDeleteEventType"));
    CHECK(s.alive());
}

TEST_CASE("audit: a HistoryUpdate of events raises event update and delete audit events") {
    HistoryAudit h("audit-history-events", "event_notifiers = [\"server\"]\n");
    test::ServerProcess& s = h.s;
    Client& watcher = h.watcher;
    Client& op = h.op;
    const ua::NodeId server = ua::numericNodeId(0, 2253);

    // One event inserted: EventType, Time and Message given, the server picks the EventId.
    ua::QualifiedName names[3] = {{0, ua::makeString("EventType")},
                                  {0, ua::makeString("Time")},
                                  {0, ua::makeString("Message")}};
    ua::SimpleAttributeOperand select[3]{};
    for (int i = 0; i < 3; ++i) {
        select[i].typeDefinitionId = ua::numericNodeId(0, 2041);
        select[i].browsePath = {1, &names[i]};
        select[i].attributeId = 13;
        select[i].indexRange = ua::nullString();
    }
    ua::NodeId baseEvent = ua::numericNodeId(0, 2041);
    ua::LocalizedText message = ua::makeLocalizedText("", "inserted");
    ua::Variant fields[3] = {ua::makeVariant(ua::BuiltinType::NodeId),
                             ua::makeVariant(ua::BuiltinType::DateTime),
                             ua::makeVariant(ua::BuiltinType::LocalizedText)};
    fields[0].value.pointer = &baseEvent;
    fields[1].value.datetime = 133000000000000000;
    fields[2].value.pointer = &message;
    ua::HistoryEventFieldList list{};
    list.eventFields = {3, fields};
    ua::UpdateEventDetails insert{};
    insert.nodeId = server;
    insert.performInsertReplace = ua::PerformUpdateType::Insert;
    insert.filter.selectClauses = {3, select};
    insert.eventData = {1, &list};
    std::uint8_t unknownId[16] = {1, 2, 3};
    ua::ByteString id{16, unknownId};
    ua::DeleteEventDetails remove{};
    remove.nodeId = server;
    remove.eventIds = {1, &id};
    ua::ExtensionObject details[2] = {decoded(enc::dataTypeOf<ua::UpdateEventDetails>(), &insert),
                                      decoded(enc::dataTypeOf<ua::DeleteEventDetails>(), &remove)};
    ua::HistoryUpdateRequest req{};
    req.historyUpdateDetails = {2, details};
    auto m = op.call(req, ++handle);
    REQUIRE(Client::result(m) == UAPLEX_Good);
    const auto& results = static_cast<ua::HistoryUpdateResponse*>(m.object)->results;
    REQUIRE(results.length == 2);
    CHECK(results[0].statusCode == UAPLEX_Good);

    std::vector<Seen> seen;
    auto count = [&](std::uint32_t type) {
        std::size_t n = 0;
        for (const Seen& e : seen) n += e.type == type && e.user == "operator";
        return n;
    };
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (std::chrono::steady_clock::now() < deadline &&
           (count(kAuditHistoryEventUpdate) < 1 || count(kAuditHistoryEventDelete) < 1))
        publishEvents(watcher, seen);
    CHECK(count(kAuditHistoryEventUpdate) == 1);
    CHECK(count(kAuditHistoryEventDelete) == 1);
    CHECK(has(seen, kAuditHistoryEventUpdate, true, "operator"));

    std::string text;
    deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (std::chrono::steady_clock::now() < deadline &&
           text.find("AuditHistoryEventDeleteEventType") == std::string::npos) {
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
        text = slurp(s.dir / "audit.jsonl");
    }
    CHECK_THAT(text, Catch::Contains("\"EventType\":\"AuditHistoryEventUpdateEventType\"") &&
                         Catch::Contains("\"Filter\":\"3 select clauses\"") &&
                         Catch::Contains("\"NewValues\":\"1 events\"") &&
                         Catch::Contains("\"EventType\":\"AuditHistoryEventDeleteEventType\"") &&
                         Catch::Contains("\"EventIds\":\"1 events\""));
    CHECK(s.alive());
}
