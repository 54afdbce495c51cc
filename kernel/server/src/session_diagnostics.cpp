// SPDX-License-Identifier: Apache-2.0
// The sessions and subscriptions as operators see them: `uaplex ctl sessions` and
// `close-session`, and the Server object's diagnostics arrays (Part 5 12.10-12.15). Read from
// the session table (shared lock) and the engine (its mutex) off the request path; the
// counters themselves are kept on the request path without locks.
#include <uaplex/server/server.hpp>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstring>

#include <uaplex/encoding/datatype.hpp>
#include <uaplex/encoding/generated/ns0.hpp>
#include <uaplex/encoding/generated/types.hpp>
#include <uaplex/encoding/guid_text.hpp>
#include <uaplex/server/service_table.hpp>
#include <uaplex/server/subscription_service.hpp>
#include <uaplex/session/identity_verifier.hpp>
#include <uaplex/session/session_manager.hpp>

namespace uaplex::server {

namespace {

bool equalsIgnoringCase(std::string_view a, std::string_view b) {
    return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
               return std::tolower(static_cast<unsigned char>(x)) ==
                      std::tolower(static_cast<unsigned char>(y));
           });
}

namespace n0 = ua::ns0;

// A copy in the Read's arena: the session may close before the response is encoded.
ua::String arenaString(enc::Arena& arena, std::string_view s) noexcept {
    if (s.empty()) return ua::makeString({});
    char* p = arena.allocateArray<char>(s.size());
    if (p == nullptr) return ua::nullString();
    std::memcpy(p, s.data(), s.size());
    return ua::String{std::int32_t(s.size()), p};
}

ua::ByteString arenaBytes(enc::Arena& arena, std::span<const std::uint8_t> b) noexcept {
    if (b.empty()) return ua::nullByteString();
    auto* p = arena.allocateArray<std::uint8_t>(b.size());
    if (p == nullptr) return ua::nullByteString();
    std::memcpy(p, b.data(), b.size());
    return ua::ByteString{std::int32_t(b.size()), p};
}

ua::DateTime fromUnixMs(std::int64_t ms) noexcept {
    return ua::kUnixEpoch + ms * (ua::kTicksPerSecond / 1000);
}

// `values` as an array of ExtensionObjects in `arena`; an empty array when memory is short.
template <class T>
ua::Variant extensionObjects(enc::Arena& arena, const std::vector<T>& values) noexcept {
    const enc::DataType* type = enc::dataTypeOf<T>();
    auto* objects = arena.allocateArray<T>(values.size());
    auto* eos = arena.allocateArray<ua::ExtensionObject>(values.size());
    if (values.empty() || objects == nullptr || eos == nullptr)
        return ua::variantArray(ua::BuiltinType::ExtensionObject, 0, nullptr);
    for (std::size_t i = 0; i < values.size(); ++i) {
        objects[i] = values[i];
        eos[i] = ua::ExtensionObject{};
        eos[i].type_id = ua::numericNodeId(0, type->binaryEncodingId);
        eos[i].encoding = UAPLEX_EXTENSIONOBJECT_BINARY;
        eos[i].data_type = type;
        eos[i].object = &objects[i];
        eos[i].body = ua::nullByteString();
    }
    return ua::variantArray(ua::BuiltinType::ExtensionObject, std::int32_t(values.size()), eos);
}

// Each counted service of SessionDiagnosticsDataType and the request type of its row.
struct CountedService {
    ua::ServiceCounterDataType ua::SessionDiagnosticsDataType::*field;
    const enc::DataType* request;
};

const std::vector<CountedService>& countedServices() {
    using D = ua::SessionDiagnosticsDataType;
    static const std::vector<CountedService> table{
        {&D::readCount, enc::dataTypeOf<ua::ReadRequest>()},
        {&D::historyReadCount, enc::dataTypeOf<ua::HistoryReadRequest>()},
        {&D::writeCount, enc::dataTypeOf<ua::WriteRequest>()},
        {&D::historyUpdateCount, enc::dataTypeOf<ua::HistoryUpdateRequest>()},
        {&D::callCount, enc::dataTypeOf<ua::CallRequest>()},
        {&D::createMonitoredItemsCount, enc::dataTypeOf<ua::CreateMonitoredItemsRequest>()},
        {&D::modifyMonitoredItemsCount, enc::dataTypeOf<ua::ModifyMonitoredItemsRequest>()},
        {&D::setMonitoringModeCount, enc::dataTypeOf<ua::SetMonitoringModeRequest>()},
        {&D::setTriggeringCount, enc::dataTypeOf<ua::SetTriggeringRequest>()},
        {&D::deleteMonitoredItemsCount, enc::dataTypeOf<ua::DeleteMonitoredItemsRequest>()},
        {&D::createSubscriptionCount, enc::dataTypeOf<ua::CreateSubscriptionRequest>()},
        {&D::modifySubscriptionCount, enc::dataTypeOf<ua::ModifySubscriptionRequest>()},
        {&D::setPublishingModeCount, enc::dataTypeOf<ua::SetPublishingModeRequest>()},
        {&D::publishCount, enc::dataTypeOf<ua::PublishRequest>()},
        {&D::republishCount, enc::dataTypeOf<ua::RepublishRequest>()},
        {&D::transferSubscriptionsCount, enc::dataTypeOf<ua::TransferSubscriptionsRequest>()},
        {&D::deleteSubscriptionsCount, enc::dataTypeOf<ua::DeleteSubscriptionsRequest>()},
        {&D::addNodesCount, enc::dataTypeOf<ua::AddNodesRequest>()},
        {&D::addReferencesCount, enc::dataTypeOf<ua::AddReferencesRequest>()},
        {&D::deleteNodesCount, enc::dataTypeOf<ua::DeleteNodesRequest>()},
        {&D::deleteReferencesCount, enc::dataTypeOf<ua::DeleteReferencesRequest>()},
        {&D::browseCount, enc::dataTypeOf<ua::BrowseRequest>()},
        {&D::browseNextCount, enc::dataTypeOf<ua::BrowseNextRequest>()},
        {&D::translateBrowsePathsToNodeIdsCount,
         enc::dataTypeOf<ua::TranslateBrowsePathsToNodeIdsRequest>()},
        {&D::queryFirstCount, enc::dataTypeOf<ua::QueryFirstRequest>()},
        {&D::queryNextCount, enc::dataTypeOf<ua::QueryNextRequest>()},
        {&D::registerNodesCount, enc::dataTypeOf<ua::RegisterNodesRequest>()},
        {&D::unregisterNodesCount, enc::dataTypeOf<ua::UnregisterNodesRequest>()},
    };
    return table;
}

const char* authenticationMechanism(session::IdentityKind k) noexcept {
    switch (k) {
        case session::IdentityKind::Anonymous:
            return "Anonymous";
        case session::IdentityKind::UserName:
            return "UserName";
        case session::IdentityKind::X509:
            return "X509Certificate";
        case session::IdentityKind::Issued:
            return "IssuedToken";
        default:
            return "";
    }
}

// The sessions that are not closed, oldest first; with `only`, the one whose SessionId has
// that GUID.
std::vector<std::shared_ptr<session::Session>> liveSessions(const session::SessionManager& m,
                                                            const ua::Guid* only = nullptr) {
    std::vector<std::shared_ptr<session::Session>> live;
    m.list(live);
    std::erase_if(live, [only](const auto& s) {
        if (s->closed()) return true;
        if (only == nullptr) return false;
        const ua::Guid g = s->sessionId().identifier.guid;
        return std::memcmp(&g, only, sizeof g) != 0;
    });
    std::stable_sort(live.begin(), live.end(), [](const auto& a, const auto& b) {
        return a->createdUnixMs() < b->createdUnixMs();
    });
    return live;
}

}  // namespace

std::size_t Server::diagnosedSessions(const ua::Guid* only, enc::Arena& arena, ua::Guid* guids,
                                      ua::String* names, std::size_t capacity) noexcept {
    try {
        std::size_t n = 0;
        for (const auto& s : liveSessions(*sessions_, only)) {
            if (n == capacity) break;
            guids[n] = s->sessionId().identifier.guid;
            names[n] = arenaString(arena, s->name());
            ++n;
        }
        return n;
    } catch (...) {
        return 0;  // out of memory: none shown
    }
}

void Server::diagnosticsArray(std::uint32_t arrayNode, const ua::Guid* only, enc::Arena& arena,
                              ua::Variant& out) noexcept {
    out = ua::variantArray(ua::BuiltinType::ExtensionObject, 0, nullptr);
    try {
        const auto live = liveSessions(*sessions_, only);
        if (arrayNode ==
            n0::Server_ServerDiagnostics_SessionsDiagnosticsSummary_SessionDiagnosticsArray) {
            const ua::DateTime utc = ua::utcNow();
            const std::int64_t nowMs = std::chrono::duration_cast<std::chrono::milliseconds>(
                                           std::chrono::steady_clock::now().time_since_epoch())
                                           .count();
            std::vector<ua::SessionDiagnosticsDataType> rows;
            rows.reserve(live.size());
            for (const auto& s : live) {
                ua::SessionDiagnosticsDataType d{};
                d.sessionId = s->sessionId();
                d.sessionName = arenaString(arena, s->name());
                d.clientDescription.applicationUri = arenaString(arena, s->applicationUri());
                d.clientDescription.productUri = arenaString(arena, s->productUri());
                d.clientDescription.applicationName = ua::LocalizedText{
                    0, ua::nullString(), arenaString(arena, s->applicationName())};
                d.clientDescription.applicationType =
                    static_cast<ua::ApplicationType>(s->applicationType());
                d.clientDescription.gatewayServerUri = ua::nullString();
                d.clientDescription.discoveryProfileUri = ua::nullString();
                d.serverUri = arenaString(arena, cfg_.server.application_uri);
                d.endpointUrl = arenaString(arena, s->endpointUrl());
                d.actualSessionTimeout = s->timeoutMs();
                d.maxResponseMessageSize = s->maxResponseMessageSize();
                d.clientConnectionTime = fromUnixMs(s->createdUnixMs());
                d.clientLastContactTime =
                    utc - (nowMs - s->lastUsedMs()) * (ua::kTicksPerSecond / 1000);
                if (subscriptions_) {
                    auto c = subscriptions_->countsOf(sessionKey(*s));
                    d.currentSubscriptionsCount = std::uint32_t(c.subscriptions);
                    d.currentMonitoredItemsCount = std::uint32_t(c.monitoredItems);
                    d.currentPublishRequestsInQueue = std::uint32_t(c.publishRequests);
                }
                const session::SessionServiceCounts& counts = s->serviceCounts();
                for (const ServiceDescriptor& row : serviceTable()) {
                    std::size_t i = serviceIndex(row);
                    d.totalRequestCount.totalCount += counts.total(i);
                    d.totalRequestCount.errorCount += counts.errors(i);
                }
                for (const CountedService& c : countedServices()) {
                    const ServiceDescriptor* row =
                        c.request ? findService(c.request->binaryEncodingId) : nullptr;
                    if (!row) continue;
                    std::size_t i = serviceIndex(*row);
                    d.*c.field = ua::ServiceCounterDataType{counts.total(i), counts.errors(i)};
                }
                d.unauthorizedRequestCount = counts.unauthorized();
                rows.push_back(d);
            }
            out = extensionObjects(arena, rows);
        } else if (
            arrayNode ==
            n0::Server_ServerDiagnostics_SessionsDiagnosticsSummary_SessionSecurityDiagnosticsArray) {
            std::vector<ua::SessionSecurityDiagnosticsDataType> rows;
            rows.reserve(live.size());
            for (const auto& s : live) {
                ua::SessionSecurityDiagnosticsDataType d{};
                session::UserIdentity who = s->identity();
                d.sessionId = s->sessionId();
                d.clientUserIdOfSession = arenaString(arena, who.name);
                auto* history = arena.allocateArray<ua::String>(1);
                if (history) {
                    history[0] = d.clientUserIdOfSession;
                    d.clientUserIdHistory = {1, history};
                }
                d.authenticationMechanism = arenaString(arena, authenticationMechanism(who.kind));
                d.encoding = arenaString(arena, "UA Binary");
                d.transportProtocol = arenaString(
                    arena, s->ownChannel()
                               ? "http://opcfoundation.org/UA-Profile/Transport/uatcp-uasc-uabinary"
                               : "http://opcfoundation.org/UA-Profile/Transport/https-uabinary");
                d.securityMode = static_cast<ua::MessageSecurityMode>(s->securityMode());
                d.securityPolicyUri = arenaString(arena, s->securityPolicyUri());
                d.clientCertificate = arenaBytes(arena, s->clientCertificate());
                rows.push_back(d);
            }
            out = extensionObjects(arena, rows);
        } else if (arrayNode == n0::Server_ServerDiagnostics_SubscriptionDiagnosticsArray &&
                   subscriptions_) {
            std::vector<std::pair<std::uint64_t, ua::NodeId>> owners;
            owners.reserve(live.size());
            for (const auto& s : live) owners.emplace_back(sessionKey(*s), s->sessionId());
            std::vector<ua::SubscriptionDiagnosticsDataType> rows;
            subscriptions_->forEachSubscription([&](const subscription::Subscription& sub) {
                ua::SubscriptionDiagnosticsDataType d{};
                bool owned = false;
                for (const auto& [key, id] : owners)
                    if (key == sub.sessionId()) {
                        d.sessionId = id;
                        owned = true;
                    }
                if (only != nullptr && !owned) return;  // another session's
                d.subscriptionId = sub.id();
                d.priority = sub.priority();
                d.publishingInterval = sub.settings().publishingInterval;
                d.maxKeepAliveCount = sub.settings().maxKeepAliveCount;
                d.maxLifetimeCount = sub.settings().lifetimeCount;
                d.maxNotificationsPerPublish = sub.settings().maxNotificationsPerPublish;
                d.publishingEnabled = sub.publishingEnabled();
                d.latePublishRequestCount = std::uint32_t(sub.latePublishRequestCount());
                d.currentKeepAliveCount = sub.keepAliveCounter();
                d.currentLifetimeCount = sub.lifetimeCounter();
                d.unacknowledgedMessageCount = std::uint32_t(sub.unacknowledgedMessageCount());
                d.monitoredItemCount = std::uint32_t(sub.itemCount());
                d.monitoringQueueOverflowCount = std::uint32_t(sub.monitoringQueueOverflowCount());
                d.discardedMessageCount = std::uint32_t(sub.discardedMessageCount());
                d.eventQueueOverFlowCount = std::uint32_t(sub.eventQueueOverflowCount());
                d.nextSequenceNumber = sub.nextSequenceNumber();
                const subscription::SubscriptionCounts& c = sub.counts();
                d.modifyCount = c.modify;
                d.enableCount = c.enable;
                d.disableCount = c.disable;
                d.republishRequestCount = c.republishRequest;
                d.republishMessageRequestCount = c.republishMessageRequest;
                d.republishMessageCount = c.republishMessage;
                d.transferRequestCount = c.transferRequest;
                d.transferredToAltClientCount = c.transferredToAltClient;
                d.transferredToSameClientCount = c.transferredToSameClient;
                d.publishRequestCount = c.publishRequest;
                d.dataChangeNotificationsCount = c.dataChangeNotifications;
                d.eventNotificationsCount = c.eventNotifications;
                d.notificationsCount = c.notifications;
                sub.forEachItem([&](const subscription::MonitoredItem& it) {
                    if (it.mode() == ua::MonitoringMode::Disabled) ++d.disabledMonitoredItemCount;
                });
                rows.push_back(d);
            });
            std::sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) {
                return a.subscriptionId < b.subscriptionId;
            });
            out = extensionObjects(arena, rows);
        }
    } catch (...) {
        // Out of memory: the empty array stands.
    }
}

std::vector<Server::SessionInfo> Server::sessionInfos() {
    const auto live = liveSessions(*sessions_);
    std::vector<SessionInfo> out;
    out.reserve(live.size());
    for (const auto& s : live) {
        SessionInfo i;
        i.sessionId =
            "ns=1;g=" + enc::guidText(s->sessionId().identifier.guid, enc::HexCase::Lower);
        i.name = s->name();
        i.applicationUri = s->applicationUri();
        i.peer = s->peer();
        i.user = s->identityKey();
        i.createdUnixMs = s->createdUnixMs();
        i.channelId = s->channelId();
        i.activated = s->activated();
        if (subscriptions_) {
            auto c = subscriptions_->countsOf(sessionKey(*s));
            i.subscriptions = c.subscriptions;
            i.monitoredItems = c.monitoredItems;
        }
        out.push_back(std::move(i));
    }
    return out;
}

bool Server::closeSessionById(std::string_view id) {
    if (id.size() > 7 && equalsIgnoringCase(id.substr(0, 7), "ns=1;g=")) id.remove_prefix(7);
    for (const auto& s : liveSessions(*sessions_))
        if (equalsIgnoringCase(enc::guidText(s->sessionId().identifier.guid, enc::HexCase::Lower),
                               id))
            return sessions_->closeSession(s);
    return false;
}

std::size_t Server::subscriptionCount() {
    return subscriptions_ ? subscriptions_->subscriptionCount() : 0;
}

std::size_t Server::monitoredItemCount() {
    return subscriptions_ ? subscriptions_->monitoredItemCount() : 0;
}

}  // namespace uaplex::server
