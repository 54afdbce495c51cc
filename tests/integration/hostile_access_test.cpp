// SPDX-License-Identifier: Apache-2.0
// Hostile clients against the real `uaplex` process: access control. An anonymous session
// without ReceiveEvents on the demo alarm's source subscribes to the Server object (which
// every event reaches) and asks for a ConditionRefresh: it gets the events it may see (the
// periodic "Demo event N" from Demo.Events) and never the alarm from Demo.Dynamic, while an
// Operator session gets both. And an anonymous session reading a node manager's nodes it may
// not see causes no read callback and cannot tell them from missing ones.
#include <catch2/catch.hpp>

#include <chrono>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "support/client_services.hpp"
#include "support/opcua_client.hpp"
#include "support/server_process.hpp"

using namespace uaplex;
using test::Client;

namespace {

namespace fs = std::filesystem;

std::uint32_t handle = 100;

fs::path usersFile(const fs::path& dir) {
    fs::path f = dir / "users.toml";
    std::string add = std::string(UAPLEX_EXE) +
                      " users add operator --roles Operator --password op-secret "
                      "--iterations 1000 --file " +
                      f.string() + " >/dev/null";
    REQUIRE(std::system(add.c_str()) == 0);
    return f;
}

// Anonymous may Browse and Read the demo namespace and receive the events of Demo.Events
// only; an Operator also receives those of every other demo node (the alarm's source,
// Demo.Dynamic). In the probe's own namespace Anonymous may see only Owned.Calls.
test::ServerProcess startServer() {
    return test::ServerProcess("hostile-access", [](std::uint16_t port, const fs::path& dir) {
        std::ostringstream t;
        t << test::configHead(port)
          << "[slots]\nrequest_queue = \"fifo\"\nmonitored_item_queue = \"mi-default\"\n"
          << "[plugins.fifo]\n[plugins.transport-tcp]\n[plugins.mi-default]\n"
          << "[plugins.demo]\nevent_interval_ms = 100\n"
          << "[plugins.svc-probe]\nlibrary = \"" UAPLEX_PROBE_PLUGIN "\"\n"
          << "[access]\nusers_file = \"" << usersFile(dir).string() << "\"\n"
          << "[[access.rules]]\nnamespace = \"urn:uaplex:demo\"\nroles = [\"Anonymous\"]\n"
          << "permissions = [\"Browse\", \"Read\"]\n"
          << "[[access.rules]]\nnamespace = \"urn:uaplex:demo\"\nroles = [\"Operator\"]\n"
          << "permissions = [\"Browse\", \"Read\", \"ReceiveEvents\"]\n"
          << "[[access.rules]]\nnamespace = \"urn:uaplex:demo\"\nnode = \"s=Demo.Events\"\n"
          << "roles = [\"Anonymous\", \"Operator\"]\n"
          << "permissions = [\"Browse\", \"Read\", \"ReceiveEvents\"]\n"
          << "[[access.rules]]\nnamespace = \"urn:uaplex:probe-owned\"\nroles = [\"Operator\"]\n"
          << "permissions = [\"All\"]\n"
          << "[[access.rules]]\nnamespace = \"urn:uaplex:probe-owned\"\n"
          << "node = \"s=Owned.Calls\"\nroles = [\"Anonymous\", \"Operator\"]\n"
          << "permissions = [\"Browse\", \"Read\"]\n";
        return t.str();
    });
}

// A subscription with one event item on the Server object selecting SourceNode.
std::uint32_t subscribeToServerEvents(Client& c) {
    ua::CreateSubscriptionRequest cs{};
    cs.requestedPublishingInterval = 100;
    cs.requestedLifetimeCount = 600;
    cs.requestedMaxKeepAliveCount = 5;
    cs.publishingEnabled = true;
    auto m = c.call(cs, ++handle);
    REQUIRE(Client::result(m) == UAPLEX_Good);
    std::uint32_t sub = static_cast<ua::CreateSubscriptionResponse*>(m.object)->subscriptionId;

    ua::QualifiedName sourceNode{0, ua::makeString("SourceNode")};
    ua::SimpleAttributeOperand select{};
    select.typeDefinitionId = ua::numericNodeId(0, 2041);  // BaseEventType
    select.browsePath = {1, &sourceNode};
    select.attributeId = 13;
    select.indexRange = ua::nullString();
    test::monitorServerEvents(c, sub, {&select, 1}, ++handle);
    return sub;
}

// The SourceNodes of the events one Publish brings (string ids; "" for other ids).
std::vector<std::string> publishSources(Client& c) {
    ua::PublishRequest p{};
    p.subscriptionAcknowledgements = {0, nullptr};
    auto m = c.call(p, ++handle);
    REQUIRE(Client::result(m) == UAPLEX_Good);
    std::vector<std::string> out;
    for (const auto& eo :
         static_cast<ua::PublishResponse*>(m.object)->notificationMessage.notificationData) {
        if (eo.data_type != enc::dataTypeOf<ua::EventNotificationList>()) continue;
        for (const auto& e : static_cast<const ua::EventNotificationList*>(eo.object)->events) {
            REQUIRE(e.eventFields.size() == 1);
            const ua::Variant& v = e.eventFields[0];
            std::string id;
            if ((v.encoding & UAPLEX_VARIANT_TYPE_MASK) == UAPLEX_TYPE_NODEID) {
                const auto* n = static_cast<const ua::NodeId*>(v.value.pointer);
                if (n->identifier_type == UAPLEX_ID_STRING)
                    id = std::string(ua::view(n->identifier.string));
            }
            out.push_back(id);
        }
    }
    return out;
}

uaplex_status conditionRefresh(Client& c, std::uint32_t sub) {
    ua::Variant arg = ua::makeVariant(ua::BuiltinType::UInt32);
    arg.value.uint32 = sub;
    ua::CallMethodRequest m{};
    m.objectId = ua::numericNodeId(0, 2782);  // ConditionType
    m.methodId = ua::numericNodeId(0, 3875);  // ConditionRefresh
    m.inputArguments = {1, &arg};
    ua::CallRequest req{};
    req.methodsToCall = {1, &m};
    auto r = c.call(req, ++handle);
    REQUIRE(Client::result(r) == UAPLEX_Good);
    return static_cast<ua::CallResponse*>(r.object)->results[0].statusCode;
}

}  // namespace

TEST_CASE(
    "hostile access: events through the Server object respect ReceiveEvents on their "
    "source, ConditionRefresh too") {
    test::ServerProcess s = startServer();
    Client anon, op;
    REQUIRE(anon.open(s.port));
    REQUIRE(anon.createSession() == UAPLEX_Good);
    REQUIRE(op.open(s.port));
    Client::UserName operatorToken("username", "operator", "op-secret");
    REQUIRE(op.createSessionAs(&operatorToken.eo) == UAPLEX_Good);
    std::uint32_t anonSub = subscribeToServerEvents(anon);
    std::uint32_t opSub = subscribeToServerEvents(op);

    // Until the Operator has seen two of the alarm's events (it changes state every 5 s; the
    // demo's first report may be of the inactive alarm, which is not retained, every later one
    // is, as nobody acknowledges it) and both the periodic events: at most 30 s on a loaded
    // machine.
    std::multiset<std::string> anonSeen, opSeen;
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (std::chrono::steady_clock::now() < deadline &&
           (opSeen.count("Demo.Dynamic") < 2 || !anonSeen.count("Demo.Events"))) {
        for (const auto& id : publishSources(anon)) anonSeen.insert(id);
        for (const auto& id : publishSources(op)) opSeen.insert(id);
    }
    INFO("anonymous saw " << anonSeen.size() << " events, the Operator " << opSeen.size());
    CHECK(opSeen.count("Demo.Dynamic") > 0);  // the alarm reached the allowed session
    CHECK(opSeen.count("Demo.Events") > 0);
    CHECK(anonSeen.count("Demo.Events") > 0);  // the events it may see still arrive
    CHECK(anonSeen.count("Demo.Dynamic") == 0);

    // ConditionRefresh: the retained alarm is replayed to the Operator only.
    REQUIRE(conditionRefresh(anon, anonSub) == UAPLEX_Good);
    REQUIRE(conditionRefresh(op, opSub) == UAPLEX_Good);
    std::multiset<std::string> anonRefresh, opRefresh;
    for (int i = 0; i < 5; ++i) {
        for (const auto& id : publishSources(anon)) anonRefresh.insert(id);
        for (const auto& id : publishSources(op)) opRefresh.insert(id);
    }
    CHECK(opRefresh.count("Demo.Dynamic") > 0);
    CHECK(anonRefresh.count("Demo.Dynamic") == 0);
    CHECK(s.alive());
}

TEST_CASE(
    "hostile access: reads a session may not make run no node-manager callback and "
    "answer like a missing node") {
    test::ServerProcess s = startServer();
    Client anon, op;
    REQUIRE(anon.open(s.port));
    REQUIRE(anon.createSession() == UAPLEX_Good);
    REQUIRE(op.open(s.port));
    Client::UserName operatorToken("username", "operator", "op-secret");
    REQUIRE(op.createSessionAs(&operatorToken.eo) == UAPLEX_Good);
    const std::uint16_t owned = test::namespaceIndex(anon, "urn:uaplex:probe-owned", ++handle);
    const ua::NodeId calls = ua::stringNodeId(owned, "Owned.Calls");
    const ua::NodeId value = ua::stringNodeId(owned, "Owned.Value");
    const ua::NodeId missing = ua::stringNodeId(owned, "Owned.Missing");

    auto callbacks = [&] {
        ua::DataValue dv = test::readOne(anon, calls, 13, ++handle);
        REQUIRE(dv.status == UAPLEX_Good);
        return dv.value.value.int32;
    };
    const std::int32_t before = callbacks();
    for (int i = 0; i < 200; ++i) {  // a probing client
        CHECK(test::readOne(anon, value, 13, ++handle).status == UAPLEX_BadNodeIdUnknown);
        CHECK(test::readOne(anon, missing, 13, ++handle).status == UAPLEX_BadNodeIdUnknown);
    }
    CHECK(callbacks() == before);  // no device read happened for it
    // The permitted session is served, one callback each.
    ua::DataValue dv = test::readOne(op, value, 13, ++handle);
    CHECK(dv.status == UAPLEX_Good);
    CHECK(callbacks() == before + 1);
    CHECK(s.alive());
}
