// SPDX-License-Identifier: Apache-2.0
// The Server object's diagnostics arrays against the running executable:
// SessionDiagnosticsArray shows each session with its per-service counts as it works,
// SubscriptionDiagnosticsArray its subscriptions, and SessionSecurityDiagnosticsArray is for
// the security_diagnostics_roles only; EnabledFlag turns the counting and the arrays off and
// on, written by a diagnostics admin only.
#include <catch2/catch.hpp>

#include <cstring>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include <uaplex/encoding/generated/ns0.hpp>

#include "support/client_services.hpp"
#include "support/opcua_client.hpp"
#include "support/server_process.hpp"

using namespace uaplex;
using test::Client;
namespace fs = std::filesystem;
namespace n0 = ua::ns0;

namespace {

std::uint32_t handle = 100;

test::ServerProcess startServer() {
    return test::ServerProcess("diagnostics", [](std::uint16_t port, const fs::path& dir) {
        fs::path users = dir / "users.toml";
        std::string add = std::string(UAPLEX_EXE) +
                          " users add auditor --roles SecurityAdmin --password audit-secret "
                          "--iterations 1000 --file " +
                          users.string() + " >/dev/null";
        REQUIRE(std::system(add.c_str()) == 0);
        std::ostringstream t;
        t << test::configHead(port)
          << "[slots]\nrequest_queue = \"fifo\"\nmonitored_item_queue = \"mi-default\"\n"
          << "[plugins.fifo]\n[plugins.transport-tcp]\n[plugins.mi-default]\n"
          << "[access]\nusers_file = \"" << users.string() << "\"\n";
        return t.str();
    });
}

// The array `node` as read by `c`: its status and the decoded structures.
template <class T>
std::pair<uaplex_status, std::vector<T>> readArray(Client& c, std::uint32_t node) {
    std::vector<ua::ReadValueId> ids(1);
    ids[0].nodeId = ua::numericNodeId(0, node);
    ids[0].attributeId = 13;
    ua::ReadRequest read{};
    read.nodesToRead = {1, ids.data()};
    auto m = c.call(read, ++handle);
    REQUIRE(Client::result(m) == UAPLEX_Good);
    const auto& r = *static_cast<ua::ReadResponse*>(m.object);
    REQUIRE(r.results.length == 1);
    const ua::DataValue& dv = r.results.data[0];
    std::vector<T> out;
    if (dv.status != UAPLEX_Good) return {dv.status, out};
    REQUIRE(dv.value.array_length >= 0);
    auto* eos = static_cast<const ua::ExtensionObject*>(dv.value.value.pointer);
    for (std::int32_t i = 0; i < dv.value.array_length; ++i) {
        REQUIRE(eos[i].object != nullptr);
        REQUIRE(eos[i].data_type == enc::dataTypeOf<T>());
        out.push_back(*static_cast<const T*>(eos[i].object));
    }
    return {UAPLEX_Good, out};
}

uaplex_status writeEnabledFlag(Client& c, const ua::Variant& value, const char* range = nullptr) {
    ua::WriteValue wv{};
    wv.nodeId = ua::numericNodeId(0, n0::Server_ServerDiagnostics_EnabledFlag);
    wv.attributeId = 13;
    wv.indexRange = range ? ua::makeString(range) : ua::nullString();
    wv.value.value = value;
    wv.value.mask = UAPLEX_DATAVALUE_VALUE;
    ua::WriteRequest w{};
    w.nodesToWrite = {1, &wv};
    auto m = c.call(w, ++handle);
    REQUIRE(Client::result(m) == UAPLEX_Good);
    return static_cast<ua::WriteResponse*>(m.object)->results.data[0];
}
uaplex_status writeEnabledFlag(Client& c, bool on) {
    return writeEnabledFlag(c, ua::variantBoolean(on));
}

bool sameGuid(const ua::NodeId& id, const ua::Guid& g) {
    return id.namespace_index == 1 && id.identifier_type == UAPLEX_ID_GUID &&
           std::memcmp(&id.identifier.guid, &g, sizeof g) == 0;
}

template <class T>
const T* ofSession(const std::vector<T>& rows, const Client& c) {
    for (const T& r : rows)
        if (sameGuid(r.sessionId, c.sessionGuid())) return &r;
    return nullptr;
}

void reads(Client& c, int n) {
    std::vector<ua::ReadValueId> ids(1);
    for (int i = 0; i < n; ++i) {
        auto read = test::readServerState(ids);
        REQUIRE(Client::result(c.call(read, ++handle)) == UAPLEX_Good);
    }
}

}  // namespace

TEST_CASE("diagnostics: each session and subscription appears with counters that follow its work") {
    auto server = startServer();
    REQUIRE(server.alive());
    Client a, b;
    REQUIRE(a.open(server.port));
    REQUIRE(a.createSession() == UAPLEX_Good);
    REQUIRE(b.open(server.port));
    REQUIRE(b.createSession() == UAPLEX_Good);

    reads(a, 5);
    ua::ReadRequest none{};  // no nodes: a ServiceFault, an error of Read
    REQUIRE(Client::result(a.call(none, ++handle)) == UAPLEX_BadNothingToDo);
    const std::uint32_t sub = test::createSubscription(a);
    std::vector<ua::MonitoredItemCreateRequest> items(2);
    for (std::uint32_t i = 0; i < items.size(); ++i) {
        items[i].itemToMonitor.nodeId = ua::numericNodeId(0, 2259);
        items[i].itemToMonitor.attributeId = 13;
        items[i].monitoringMode = ua::MonitoringMode::Reporting;
        items[i].requestedParameters.clientHandle = i;
        items[i].requestedParameters.samplingInterval = 1000;
        items[i].requestedParameters.queueSize = 1;
    }
    ua::CreateMonitoredItemsRequest create{};
    create.subscriptionId = sub;
    create.timestampsToReturn = ua::TimestampsToReturn::Both;
    create.itemsToCreate = {2, items.data()};
    REQUIRE(Client::result(a.call(create, ++handle)) == UAPLEX_Good);

    // b reads them: a's session, its counts, b's own session beside it.
    auto [st, sessions] = readArray<ua::SessionDiagnosticsDataType>(
        b, n0::Server_ServerDiagnostics_SessionsDiagnosticsSummary_SessionDiagnosticsArray);
    REQUIRE(st == UAPLEX_Good);
    CHECK(sessions.size() == 2);
    const auto* da = ofSession(sessions, a);
    REQUIRE(da != nullptr);
    REQUIRE(ofSession(sessions, b) != nullptr);
    CHECK(ua::view(da->sessionName) == "integration");
    CHECK(ua::view(da->endpointUrl) == "opc.tcp://127.0.0.1:" + std::to_string(server.port));
    CHECK(da->actualSessionTimeout == 60000);
    CHECK(da->clientConnectionTime > 0);
    CHECK(da->clientLastContactTime >= da->clientConnectionTime);
    CHECK(da->readCount.totalCount == 6);
    CHECK(da->readCount.errorCount == 1);
    CHECK(da->createSubscriptionCount.totalCount == 1);
    CHECK(da->createMonitoredItemsCount.totalCount == 1);
    CHECK(da->writeCount.totalCount == 0);
    CHECK(da->totalRequestCount.totalCount == 8);
    CHECK(da->totalRequestCount.errorCount == 1);
    CHECK(da->currentSubscriptionsCount == 1);
    CHECK(da->currentMonitoredItemsCount == 2);
    CHECK(ofSession(sessions, b)->currentSubscriptionsCount == 0);

    // More work shows on the next read; b's own Read of the array counts for b.
    reads(a, 3);
    auto [st2, again] = readArray<ua::SessionDiagnosticsDataType>(
        b, n0::Server_ServerDiagnostics_SessionsDiagnosticsSummary_SessionDiagnosticsArray);
    REQUIRE(st2 == UAPLEX_Good);
    REQUIRE(ofSession(again, a) != nullptr);
    CHECK(ofSession(again, a)->readCount.totalCount == 9);
    CHECK(ofSession(again, b)->readCount.totalCount == 1);

    // The subscription's own counters: a modify, a disable and an enable, a Publish that
    // takes the two items' first values, a Republish of that message.
    ua::ModifySubscriptionRequest modify{};
    modify.subscriptionId = sub;
    modify.requestedPublishingInterval = 1000;
    modify.requestedLifetimeCount = 3000;
    modify.requestedMaxKeepAliveCount = 10;
    REQUIRE(Client::result(a.call(modify, ++handle)) == UAPLEX_Good);
    std::uint32_t subIds[1] = {sub};
    for (bool on : {false, true}) {
        ua::SetPublishingModeRequest mode{};
        mode.publishingEnabled = on;
        mode.subscriptionIds = {1, subIds};
        REQUIRE(Client::result(a.call(mode, ++handle)) == UAPLEX_Good);
    }
    ua::PublishRequest publish{};
    auto pm = a.call(publish, ++handle);
    REQUIRE(Client::result(pm) == UAPLEX_Good);
    const std::uint32_t seq =
        static_cast<ua::PublishResponse*>(pm.object)->notificationMessage.sequenceNumber;
    ua::RepublishRequest republish{};
    republish.subscriptionId = sub;
    republish.retransmitSequenceNumber = seq;
    REQUIRE(Client::result(a.call(republish, ++handle)) == UAPLEX_Good);

    auto [st3, subs] = readArray<ua::SubscriptionDiagnosticsDataType>(
        b, n0::Server_ServerDiagnostics_SubscriptionDiagnosticsArray);
    REQUIRE(st3 == UAPLEX_Good);
    REQUIRE(subs.size() == 1);
    CHECK(sameGuid(subs[0].sessionId, a.sessionGuid()));
    CHECK(subs[0].subscriptionId == sub);
    CHECK(subs[0].monitoredItemCount == 2);
    CHECK(subs[0].publishingInterval == 1000);
    CHECK(subs[0].publishingEnabled);
    CHECK(subs[0].nextSequenceNumber == seq + 1);
    CHECK(subs[0].modifyCount == 1);
    CHECK(subs[0].disableCount == 1);
    CHECK(subs[0].enableCount == 1);
    CHECK(subs[0].publishRequestCount == 1);
    CHECK(subs[0].dataChangeNotificationsCount == 2);
    CHECK(subs[0].notificationsCount == 2);
    CHECK(subs[0].eventNotificationsCount == 0);
    CHECK(subs[0].republishRequestCount == 1);
    CHECK(subs[0].republishMessageCount == 1);
    CHECK(subs[0].unacknowledgedMessageCount == 1);
    CHECK(subs[0].disabledMonitoredItemCount == 0);

    // a closes: its session and subscription are gone from the arrays.
    ua::CloseSessionRequest close{};
    close.deleteSubscriptions = true;
    REQUIRE(Client::result(a.call(close, ++handle)) == UAPLEX_Good);
    auto [st4, after] = readArray<ua::SessionDiagnosticsDataType>(
        b, n0::Server_ServerDiagnostics_SessionsDiagnosticsSummary_SessionDiagnosticsArray);
    CHECK(after.size() == 1);
    CHECK(ofSession(after, a) == nullptr);
    CHECK(readArray<ua::SubscriptionDiagnosticsDataType>(
              b, n0::Server_ServerDiagnostics_SubscriptionDiagnosticsArray)
              .second.empty());
}

TEST_CASE("diagnostics: the security diagnostics are for SecurityAdmin only") {
    auto server = startServer();
    REQUIRE(server.alive());
    Client anonymous, auditor;
    REQUIRE(anonymous.open(server.port));
    REQUIRE(anonymous.createSession() == UAPLEX_Good);
    REQUIRE(auditor.open(server.port));
    Client::UserName token("username", "auditor", "audit-secret");
    REQUIRE(auditor.createSessionAs(&token.eo) == UAPLEX_Good);

    constexpr std::uint32_t kSecurity =
        n0::Server_ServerDiagnostics_SessionsDiagnosticsSummary_SessionSecurityDiagnosticsArray;
    CHECK(readArray<ua::SessionSecurityDiagnosticsDataType>(anonymous, kSecurity).first ==
          UAPLEX_BadUserAccessDenied);
    auto [st, rows] = readArray<ua::SessionSecurityDiagnosticsDataType>(auditor, kSecurity);
    REQUIRE(st == UAPLEX_Good);
    REQUIRE(rows.size() == 2);
    const auto* mine = ofSession(rows, auditor);
    const auto* theirs = ofSession(rows, anonymous);
    REQUIRE(mine != nullptr);
    REQUIRE(theirs != nullptr);
    CHECK(ua::view(mine->authenticationMechanism) == "UserName");
    CHECK(ua::view(mine->clientUserIdOfSession) == "auditor");
    CHECK(ua::view(theirs->authenticationMechanism) == "Anonymous");
    CHECK(ua::view(theirs->securityPolicyUri) == "http://opcfoundation.org/UA/SecurityPolicy#None");
    CHECK(theirs->securityMode == ua::MessageSecurityMode::None_);
    CHECK(ua::view(theirs->transportProtocol) ==
          "http://opcfoundation.org/UA-Profile/Transport/uatcp-uasc-uabinary");
    // The session diagnostics stay readable by everyone.
    CHECK(readArray<ua::SessionDiagnosticsDataType>(
              anonymous,
              n0::Server_ServerDiagnostics_SessionsDiagnosticsSummary_SessionDiagnosticsArray)
              .first == UAPLEX_Good);
}

TEST_CASE("diagnostics: EnabledFlag, written by an admin, stops and resumes the counting") {
    auto server = startServer();
    REQUIRE(server.alive());
    Client worker, auditor;
    REQUIRE(worker.open(server.port));
    REQUIRE(worker.createSession() == UAPLEX_Good);
    REQUIRE(auditor.open(server.port));
    Client::UserName token("username", "auditor", "audit-secret");
    REQUIRE(auditor.createSessionAs(&token.eo) == UAPLEX_Good);
    constexpr std::uint32_t kSessions =
        n0::Server_ServerDiagnostics_SessionsDiagnosticsSummary_SessionDiagnosticsArray;
    auto flag = [&] {
        return test::readOne(worker, ua::numericNodeId(0, n0::Server_ServerDiagnostics_EnabledFlag))
            .value.value.boolean;
    };
    CHECK(flag());

    CHECK(writeEnabledFlag(worker, false) == UAPLEX_BadUserAccessDenied);  // not an admin
    CHECK(flag());
    reads(worker, 2);  // with the two flag() reads: 4 Reads
    REQUIRE(writeEnabledFlag(auditor, false) == UAPLEX_Good);
    CHECK_FALSE(flag());
    CHECK(readArray<ua::SessionDiagnosticsDataType>(auditor, kSessions).second.empty());
    reads(worker, 4);  // not counted
    // Only a scalar Boolean without a range turns it on again.
    CHECK(writeEnabledFlag(auditor, ua::variantInt32(1)) == UAPLEX_BadTypeMismatch);
    CHECK(writeEnabledFlag(auditor, ua::variantBoolean(true), "0") == UAPLEX_BadIndexRangeInvalid);
    CHECK_FALSE(flag());
    REQUIRE(writeEnabledFlag(auditor, true) == UAPLEX_Good);
    auto [st, rows] = readArray<ua::SessionDiagnosticsDataType>(auditor, kSessions);
    REQUIRE(st == UAPLEX_Good);
    const auto* w = ofSession(rows, worker);
    REQUIRE(w != nullptr);
    CHECK(w->readCount.totalCount == 4);  // the reads while off are not in it
    CHECK(w->writeCount.totalCount == 1);
    CHECK(w->writeCount.errorCount == 0);  // a refused operation is no ServiceFault
}
