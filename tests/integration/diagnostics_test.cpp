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
#include <uaplex/encoding/guid_text.hpp>

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

// One reference as browsed, with the target's NodeId kept.
struct Ref {
    std::uint32_t type = 0;
    bool forward = false;
    std::int32_t nodeClass = 0;
    std::uint16_t ns = 0;
    std::uint8_t kind = 0;
    std::uint32_t numeric = 0;
    ua::Guid guid{};
    std::string text;
    std::uint16_t nameNs = 0;
    std::string name;
    std::uint32_t typeDefinition = 0;
    ua::NodeId nodeId() const {
        ua::NodeId id{};
        id.namespace_index = ns;
        id.identifier_type = kind;
        if (kind == UAPLEX_ID_NUMERIC) id.identifier.numeric = numeric;
        if (kind == UAPLEX_ID_GUID) id.identifier.guid = guid;
        if (kind == UAPLEX_ID_STRING)
            id.identifier.string = ua::String{std::int32_t(text.size()), text.data()};
        return id;
    }
};

std::pair<uaplex_status, std::vector<Ref>> browse(Client& c, const ua::NodeId& node,
                                                  ua::BrowseDirection direction) {
    ua::BrowseDescription d{};
    d.nodeId = node;
    d.browseDirection = direction;
    d.includeSubtypes = true;
    d.resultMask = 63;
    ua::BrowseRequest r{};
    r.nodesToBrowse = {1, &d};
    auto m = c.call(r, ++handle);
    REQUIRE(Client::result(m) == UAPLEX_Good);
    const auto& result = static_cast<ua::BrowseResponse*>(m.object)->results[0];
    std::vector<Ref> out;
    for (const auto& rd : result.references) {
        Ref x;
        x.type = rd.referenceTypeId.identifier.numeric;
        x.forward = rd.isForward;
        x.nodeClass = std::int32_t(rd.nodeClass);
        const ua::NodeId& id = rd.nodeId.node_id;
        x.ns = id.namespace_index;
        x.kind = id.identifier_type;
        if (x.kind == UAPLEX_ID_NUMERIC) x.numeric = id.identifier.numeric;
        if (x.kind == UAPLEX_ID_GUID) x.guid = id.identifier.guid;
        if (x.kind == UAPLEX_ID_STRING) x.text = std::string(ua::view(id.identifier.string));
        x.nameNs = rd.browseName.namespace_index;
        x.name = std::string(ua::view(rd.browseName.name));
        x.typeDefinition = rd.typeDefinition.node_id.identifier.numeric;
        out.push_back(std::move(x));
    }
    return {result.statusCode, out};
}

const Ref* named(const std::vector<Ref>& refs, std::string_view name) {
    for (const Ref& r : refs)
        if (r.forward && r.name == name) return &r;
    return nullptr;
}

ua::NodeId sessionObject(const Client& c) {
    ua::NodeId id{};
    id.namespace_index = 1;
    id.identifier_type = UAPLEX_ID_GUID;
    id.identifier.guid = c.sessionGuid();
    return id;
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

TEST_CASE("diagnostics: a SessionDiagnosticsObject per session, from creation to close") {
    auto server = startServer();
    REQUIRE(server.alive());
    Client a, b, auditor;
    REQUIRE(a.open(server.port));
    REQUIRE(a.createSession() == UAPLEX_Good);
    REQUIRE(b.open(server.port));
    REQUIRE(b.createSession() == UAPLEX_Good);
    REQUIRE(auditor.open(server.port));
    Client::UserName token("username", "auditor", "audit-secret");
    REQUIRE(auditor.createSessionAs(&token.eo) == UAPLEX_Good);
    const ua::NodeId summary =
        ua::numericNodeId(0, n0::Server_ServerDiagnostics_SessionsDiagnosticsSummary);

    // SessionsDiagnosticsSummary has one object per session, its NodeId the SessionId.
    auto [st, objects] = browse(b, summary, ua::BrowseDirection::Forward);
    REQUIRE(st == UAPLEX_Good);
    const Ref* ofA = nullptr;
    std::size_t sessions = 0;
    for (const Ref& r : objects) {
        if (r.ns != 1 || r.kind != UAPLEX_ID_GUID) continue;
        ++sessions;
        CHECK(r.type == 47);  // HasComponent
        CHECK(r.nodeClass == 1);
        CHECK(r.typeDefinition == n0::SessionDiagnosticsObjectType);
        if (std::memcmp(&r.guid, &a.sessionGuid(), sizeof r.guid) == 0) ofA = &r;
    }
    CHECK(sessions == 3);
    REQUIRE(ofA != nullptr);
    CHECK(ofA->name == "integration");
    CHECK(ofA->nameNs == 1);
    const ua::NodeId objectA = sessionObject(a);

    // Its attributes, as a client reads them.
    CHECK(test::readOne(b, objectA, 2).value.value.int32 == 1);  // NodeClass Object
    {
        auto dv = test::readOne(b, objectA, 1);
        REQUIRE(dv.status == UAPLEX_Good);
        CHECK(ua::equal(*static_cast<const ua::NodeId*>(dv.value.value.pointer), objectA));
    }
    {
        auto dv = test::readOne(b, objectA, 4);
        REQUIRE(dv.status == UAPLEX_Good);
        CHECK(ua::view(static_cast<const ua::LocalizedText*>(dv.value.value.pointer)->text) ==
              "integration");
    }
    CHECK(test::readOne(b, objectA, 13).status == UAPLEX_BadAttributeIdInvalid);

    // Its references: back to SessionsDiagnosticsSummary, its type, its three components.
    auto [st2, refs] = browse(b, objectA, ua::BrowseDirection::Both);
    REQUIRE(st2 == UAPLEX_Good);
    bool up = false, type = false;
    for (const Ref& r : refs) {
        up = up || (!r.forward && r.type == 47 && r.ns == 0 &&
                    r.numeric == n0::Server_ServerDiagnostics_SessionsDiagnosticsSummary);
        type = type || (r.forward && r.type == 40 && r.numeric == n0::SessionDiagnosticsObjectType);
    }
    CHECK(up);
    CHECK(type);
    const Ref* diag = named(refs, "SessionDiagnostics");
    const Ref* security = named(refs, "SessionSecurityDiagnostics");
    const Ref* subs = named(refs, "SubscriptionDiagnosticsArray");
    REQUIRE(diag != nullptr);
    REQUIRE(security != nullptr);
    REQUIRE(subs != nullptr);
    CHECK(diag->typeDefinition == n0::SessionDiagnosticsVariableType);
    const ua::NodeId diagId = diag->nodeId();
    const Ref securityRef = *security, subsRef = *subs;

    // SessionDiagnostics: the array's row of that session, and its members as variables.
    reads(a, 4);
    auto rowOf = [&](Client& c) {
        auto dv = test::readOne(c, diagId);
        REQUIRE(dv.status == UAPLEX_Good);
        REQUIRE((dv.value.encoding & UAPLEX_VARIANT_TYPE_MASK) == UAPLEX_TYPE_EXTENSIONOBJECT);
        auto* eo = static_cast<const ua::ExtensionObject*>(dv.value.value.pointer);
        REQUIRE(eo->data_type == enc::dataTypeOf<ua::SessionDiagnosticsDataType>());
        return *static_cast<const ua::SessionDiagnosticsDataType*>(eo->object);
    };
    {
        const auto row = rowOf(b);
        CHECK(sameGuid(row.sessionId, a.sessionGuid()));
        CHECK(row.readCount.totalCount == 4);
    }
    reads(a, 2);
    CHECK(rowOf(b).readCount.totalCount == 6);
    {
        auto dv = test::readOne(b, diagId, 14);  // DataType
        REQUIRE(dv.status == UAPLEX_Good);
        CHECK(static_cast<const ua::NodeId*>(dv.value.value.pointer)->identifier.numeric ==
              n0::SessionDiagnosticsDataType);
    }
    auto [st3, members] = browse(b, diagId, ua::BrowseDirection::Forward);
    REQUIRE(st3 == UAPLEX_Good);
    CHECK(members.size() >= 43);
    const Ref* readCount = named(members, "ReadCount");
    const Ref* client = named(members, "ClientDescription");
    REQUIRE(readCount != nullptr);
    REQUIRE(client != nullptr);
    const Ref readCountRef = *readCount, clientRef = *client;
    {
        auto dv = test::readOne(b, readCountRef.nodeId());
        REQUIRE(dv.status == UAPLEX_Good);
        auto* eo = static_cast<const ua::ExtensionObject*>(dv.value.value.pointer);
        REQUIRE(eo->data_type == enc::dataTypeOf<ua::ServiceCounterDataType>());
        CHECK(static_cast<const ua::ServiceCounterDataType*>(eo->object)->totalCount == 6);
    }
    {
        auto dv = test::readOne(b, clientRef.nodeId());
        REQUIRE(dv.status == UAPLEX_Good);
        auto* eo = static_cast<const ua::ExtensionObject*>(dv.value.value.pointer);
        REQUIRE(eo->data_type == enc::dataTypeOf<ua::ApplicationDescription>());
    }
    CHECK(test::readOne(b, readCountRef.nodeId(), 2).value.value.int32 == 2);  // Variable
    CHECK(test::writeInt32(b, readCountRef.nodeId(), 1) == UAPLEX_BadNotWritable);

    // The security diagnostics are the security_diagnostics_roles', as the array.
    CHECK(test::readOne(b, securityRef.nodeId()).status == UAPLEX_BadUserAccessDenied);
    {
        auto dv = test::readOne(auditor, securityRef.nodeId());
        REQUIRE(dv.status == UAPLEX_Good);
        auto* eo = static_cast<const ua::ExtensionObject*>(dv.value.value.pointer);
        REQUIRE(eo->data_type == enc::dataTypeOf<ua::SessionSecurityDiagnosticsDataType>());
        CHECK(ua::view(static_cast<const ua::SessionSecurityDiagnosticsDataType*>(eo->object)
                           ->authenticationMechanism) == "Anonymous");
    }

    // SubscriptionDiagnosticsArray: this session's subscriptions only.
    const std::uint32_t sub = test::createSubscription(a);
    test::createSubscription(b);
    {
        auto dv = test::readOne(b, subsRef.nodeId());
        REQUIRE(dv.status == UAPLEX_Good);
        REQUIRE(dv.value.array_length == 1);
        auto* eo = static_cast<const ua::ExtensionObject*>(dv.value.value.pointer);
        CHECK(
            static_cast<const ua::SubscriptionDiagnosticsDataType*>(eo[0].object)->subscriptionId ==
            sub);
    }

    // TranslateBrowsePathsToNodeIds finds it by the session name.
    {
        ua::RelativePathElement e[2]{};
        e[0].referenceTypeId = ua::numericNodeId(0, 47);
        e[0].targetName = ua::QualifiedName{1, ua::makeString("integration")};
        e[1].referenceTypeId = ua::numericNodeId(0, 47);
        e[1].targetName = ua::QualifiedName{0, ua::makeString("SessionDiagnostics")};
        ua::BrowsePath path{};
        path.startingNode = summary;
        path.relativePath.elements = {2, e};
        ua::TranslateBrowsePathsToNodeIdsRequest t{};
        t.browsePaths = {1, &path};
        auto m = b.call(t, ++handle);
        REQUIRE(Client::result(m) == UAPLEX_Good);
        const auto& r =
            static_cast<ua::TranslateBrowsePathsToNodeIdsResponse*>(m.object)->results[0];
        REQUIRE(r.statusCode == UAPLEX_Good);
        CHECK(r.targets.length == 3);  // every session here is named "integration"
    }

    // Closed: the object and its nodes are gone.
    ua::CloseSessionRequest close{};
    close.deleteSubscriptions = true;
    REQUIRE(Client::result(a.call(close, ++handle)) == UAPLEX_Good);
    CHECK(test::readOne(b, objectA, 2).status == UAPLEX_BadNodeIdUnknown);
    CHECK(test::readOne(b, diagId).status == UAPLEX_BadNodeIdUnknown);
    CHECK(test::readOne(b, readCountRef.nodeId()).status == UAPLEX_BadNodeIdUnknown);
    CHECK(browse(b, objectA, ua::BrowseDirection::Both).first == UAPLEX_BadNodeIdUnknown);
    auto [st4, after] = browse(b, summary, ua::BrowseDirection::Forward);
    REQUIRE(st4 == UAPLEX_Good);
    for (const Ref& r : after)
        CHECK_FALSE((r.kind == UAPLEX_ID_GUID &&
                     std::memcmp(&r.guid, &a.sessionGuid(), sizeof r.guid) == 0));

    // EnabledFlag off: no objects, as the arrays read empty.
    REQUIRE(writeEnabledFlag(auditor, false) == UAPLEX_Good);
    CHECK(test::readOne(b, sessionObject(b), 2).status == UAPLEX_BadNodeIdUnknown);
    std::size_t left = 0;
    for (const Ref& r : browse(b, summary, ua::BrowseDirection::Forward).second)
        left += r.kind == UAPLEX_ID_GUID;
    CHECK(left == 0);
    REQUIRE(writeEnabledFlag(auditor, true) == UAPLEX_Good);
    CHECK(test::readOne(b, sessionObject(b), 2).value.value.int32 == 1);
}

TEST_CASE("diagnostics: the diagnostics arrays and a session's counters can be monitored") {
    // The engine reads a new item's node under its own lock; these values read the engine.
    auto server = startServer();
    REQUIRE(server.alive());
    Client a;
    REQUIRE(a.open(server.port));
    REQUIRE(a.createSession() == UAPLEX_Good);
    const std::uint32_t sub = test::createSubscription(a);
    std::string readCount =
        enc::guidText(a.sessionGuid(), enc::HexCase::Lower) + ".SessionDiagnostics.ReadCount";
    ua::NodeId counter{};
    counter.namespace_index = 1;
    counter.identifier_type = UAPLEX_ID_STRING;
    counter.identifier.string = ua::String{std::int32_t(readCount.size()), readCount.data()};
    std::vector<ua::MonitoredItemCreateRequest> items(3);
    items[0].itemToMonitor.nodeId =
        ua::numericNodeId(0, n0::Server_ServerDiagnostics_SubscriptionDiagnosticsArray);
    items[1].itemToMonitor.nodeId = ua::numericNodeId(
        0, n0::Server_ServerDiagnostics_SessionsDiagnosticsSummary_SessionDiagnosticsArray);
    items[2].itemToMonitor.nodeId = counter;
    for (std::uint32_t i = 0; i < items.size(); ++i) {
        items[i].itemToMonitor.attributeId = 13;
        items[i].monitoringMode = ua::MonitoringMode::Reporting;
        items[i].requestedParameters.clientHandle = i;
        items[i].requestedParameters.samplingInterval = 100;
        items[i].requestedParameters.queueSize = 1;
    }
    ua::CreateMonitoredItemsRequest create{};
    create.subscriptionId = sub;
    create.timestampsToReturn = ua::TimestampsToReturn::Both;
    create.itemsToCreate = {3, items.data()};
    auto m = a.call(create, ++handle);
    REQUIRE(Client::result(m) == UAPLEX_Good);
    const auto& created = *static_cast<ua::CreateMonitoredItemsResponse*>(m.object);
    REQUIRE(created.results.length == 3);
    for (const auto& r : created.results) CHECK(r.statusCode == UAPLEX_Good);
    ua::PublishRequest publish{};
    auto pm = a.call(publish, ++handle);
    REQUIRE(Client::result(pm) == UAPLEX_Good);
    const auto& msg = static_cast<ua::PublishResponse*>(pm.object)->notificationMessage;
    REQUIRE(msg.notificationData.length == 1);
    const auto* change =
        static_cast<const ua::DataChangeNotification*>(msg.notificationData[0].object);
    CHECK(change->monitoredItems.length == 3);
    CHECK(server.alive());
}

TEST_CASE("diagnostics: DiscardedMessageCount and EventQueueOverflowCount read as provoked") {
    // [audit] on: each CreateSession and ActivateSession raises an event on the Server object.
    auto server =
        test::ServerProcess("diagnostics-overflow", [](std::uint16_t port, const fs::path&) {
            return test::configHead(port) +
                   "[slots]\nrequest_queue = \"fifo\"\nmonitored_item_queue = \"mi-default\"\n"
                   "[plugins.fifo]\n[plugins.transport-tcp]\n[plugins.mi-default]\n"
                   "[audit]\nenabled = true\n";
        });
    REQUIRE(server.alive());
    Client a, b;
    REQUIRE(a.open(server.port));
    REQUIRE(a.createSession() == UAPLEX_Good);
    REQUIRE(b.open(server.port));
    REQUIRE(b.createSession() == UAPLEX_Good);

    // a: ServerStatus.CurrentTime changes every publishing interval; a never acknowledges, so
    // past the retransmission queue's ten messages each new one drops the oldest.
    const std::uint32_t discarding = test::createSubscription(a, {100, 3000, 10}, ++handle);
    ua::MonitoredItemCreateRequest clock{};
    clock.itemToMonitor.nodeId = ua::numericNodeId(0, 2258);
    clock.itemToMonitor.attributeId = 13;
    clock.monitoringMode = ua::MonitoringMode::Reporting;
    clock.requestedParameters.clientHandle = 1;
    clock.requestedParameters.samplingInterval = 50;
    clock.requestedParameters.queueSize = 1;
    ua::CreateMonitoredItemsRequest create{};
    create.subscriptionId = discarding;
    create.timestampsToReturn = ua::TimestampsToReturn::Both;
    create.itemsToCreate = {1, &clock};
    REQUIRE(Client::result(a.call(create, ++handle)) == UAPLEX_Good);
    std::uint32_t messages = 0;
    while (messages < 13) {
        ua::PublishRequest publish{};  // no acknowledgements
        auto pm = a.call(publish, ++handle);
        REQUIRE(Client::result(pm) == UAPLEX_Good);
        if (static_cast<ua::PublishResponse*>(pm.object)
                ->notificationMessage.notificationData.length > 0)
            ++messages;
    }

    // b: an event item with a queue of one on the Server object, not published while the
    // sessions of c and d raise four events.
    const std::uint32_t overflowing = test::createSubscription(b, {100, 3000, 10}, ++handle);
    ua::QualifiedName typeName{0, ua::makeString("EventType")};
    ua::SimpleAttributeOperand select{};
    select.typeDefinitionId = ua::numericNodeId(0, 2041);
    select.browsePath = {1, &typeName};
    select.attributeId = 13;
    select.indexRange = ua::nullString();
    ua::EventFilter filter{};
    filter.selectClauses = {1, &select};
    filter.whereClause.elements = {0, nullptr};
    ua::MonitoredItemCreateRequest events{};
    events.itemToMonitor.nodeId = ua::numericNodeId(0, 2253);
    events.itemToMonitor.attributeId = 12;
    events.itemToMonitor.indexRange = ua::nullString();
    events.monitoringMode = ua::MonitoringMode::Reporting;
    events.requestedParameters.clientHandle = 2;
    events.requestedParameters.queueSize = 1;
    events.requestedParameters.discardOldest = true;
    auto& eo = events.requestedParameters.filter;
    eo.encoding = UAPLEX_EXTENSIONOBJECT_BINARY;
    eo.type_id = ua::numericNodeId(0, enc::dataTypeOf<ua::EventFilter>()->binaryEncodingId);
    eo.data_type = enc::dataTypeOf<ua::EventFilter>();
    eo.object = &filter;
    create.subscriptionId = overflowing;
    create.itemsToCreate = {1, &events};
    auto cm = b.call(create, ++handle);
    REQUIRE(Client::result(cm) == UAPLEX_Good);
    REQUIRE(static_cast<ua::CreateMonitoredItemsResponse*>(cm.object)->results[0].statusCode ==
            UAPLEX_Good);
    {
        Client c, d;
        REQUIRE(c.open(server.port));
        REQUIRE(c.createSession() == UAPLEX_Good);
        REQUIRE(d.open(server.port));
        REQUIRE(d.createSession() == UAPLEX_Good);
    }

    auto rows = [&](Client& reader, const ua::NodeId& node) {
        ua::ReadValueId id{};
        id.nodeId = node;
        id.attributeId = 13;
        ua::ReadRequest read{};
        read.nodesToRead = {1, &id};
        auto m = reader.call(read, ++handle);
        REQUIRE(Client::result(m) == UAPLEX_Good);
        const ua::DataValue& dv = static_cast<ua::ReadResponse*>(m.object)->results[0];
        REQUIRE(dv.status == UAPLEX_Good);
        std::vector<std::pair<std::uint32_t, std::pair<std::uint32_t, std::uint32_t>>> out;
        auto* rows = static_cast<const ua::ExtensionObject*>(dv.value.value.pointer);
        for (std::int32_t i = 0; i < dv.value.array_length; ++i) {
            const auto* r = static_cast<const ua::SubscriptionDiagnosticsDataType*>(rows[i].object);
            out.push_back(
                {r->subscriptionId, {r->discardedMessageCount, r->eventQueueOverFlowCount}});
        }
        return out;
    };
    auto countsOf = [](const auto& list, std::uint32_t id) {
        for (const auto& [sub, counts] : list)
            if (sub == id) return counts;
        FAIL("subscription " << id << " not listed");
        return std::pair<std::uint32_t, std::uint32_t>{};
    };
    // Through the Server's SubscriptionDiagnosticsArray: thirteen messages kept ten.
    const auto all =
        rows(b, ua::numericNodeId(0, n0::Server_ServerDiagnostics_SubscriptionDiagnosticsArray));
    CHECK(countsOf(all, discarding).first == 3);
    CHECK(countsOf(all, discarding).second == 0);
    CHECK(countsOf(all, overflowing).first == 0);
    // Four events, one kept: three lost.
    CHECK(countsOf(all, overflowing).second == 3);

    // Through each session's own SessionDiagnosticsObject: only its subscription.
    auto ofSessionObject = [&](const Client& owner) {
        std::string text = enc::guidText(owner.sessionGuid(), enc::HexCase::Lower) +
                           ".SubscriptionDiagnosticsArray";
        ua::NodeId id{};
        id.namespace_index = 1;
        id.identifier_type = UAPLEX_ID_STRING;
        id.identifier.string = ua::String{std::int32_t(text.size()), text.data()};
        return rows(b, id);
    };
    const auto ofA = ofSessionObject(a);
    REQUIRE(ofA.size() == 1);
    CHECK(ofA[0].first == discarding);
    CHECK(ofA[0].second.first == 3);
    const auto ofB = ofSessionObject(b);
    REQUIRE(ofB.size() == 1);
    CHECK(ofB[0].first == overflowing);
    CHECK(ofB[0].second.second == 3);
}
