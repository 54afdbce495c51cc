// SPDX-License-Identifier: Apache-2.0
// The Server object (Part 5 6.3.1): its variables are namespace-0 nodes of the image whose
// values are computed when read (status, time, capabilities, diagnostics).
#include <uaplex/encoding/generated/ns0.hpp>
#include <uaplex/version.hpp>

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "services_internal.hpp"

#ifndef UAPLEX_BUILD_NUMBER
#define UAPLEX_BUILD_NUMBER "0"
#endif
#ifndef UAPLEX_BUILD_EPOCH
#define UAPLEX_BUILD_EPOCH "0"
#endif

namespace uaplex::services {

namespace {

namespace n0 = ua::ns0;

ua::Variant stringArray(enc::Arena& arena, const std::vector<std::string>& items) {
    auto* data = arena.allocateArray<ua::String>(items.size());
    if (data == nullptr && !items.empty()) return ua::Variant{};
    // Copied into the arena: callers may pass temporaries ({cfg.server.application_uri}).
    for (std::size_t i = 0; i < items.size(); ++i) {
        char* p = arena.allocateArray<char>(items[i].empty() ? 1 : items[i].size());
        if (p == nullptr) return ua::Variant{};
        std::memcpy(p, items[i].data(), items[i].size());
        data[i] = ua::String{std::int32_t(items[i].size()), p};
    }
    return ua::variantArray(ua::BuiltinType::String, std::int32_t(items.size()), data);
}

template <class T>
ua::Variant extensionObject(enc::Arena& arena, const T& value) {
    const enc::DataType* type = enc::dataTypeOf<T>();
    auto* object = arenaNew(arena, value);
    auto* eo = arena.allocateArray<ua::ExtensionObject>(1);
    if (object == nullptr || eo == nullptr) return ua::Variant{};
    eo->type_id = ua::numericNodeId(0, type->binaryEncodingId);
    eo->encoding = UAPLEX_EXTENSIONOBJECT_BINARY;
    eo->data_type = type;
    eo->object = object;
    eo->body = ua::nullByteString();
    ua::Variant v = ua::makeVariant(ua::BuiltinType::ExtensionObject);
    v.value.pointer = eo;
    return v;
}

ua::Variant scalarUInt32(std::uint32_t x) {
    return ua::variantUInt32(x);
}

}  // namespace

void ServiceSet::Impl::buildServerObject() {
    const auto& s = cfg.server;
    const auto& l = s.limits;
    auto set = [&](std::uint32_t id, addressspace::ComputedValue fn) {
        space.setComputedValue(id, std::move(fn));
    };
    auto constant = [&](std::uint32_t id, ua::Variant v) {
        set(id, [v](enc::Arena&, ua::Variant& out) { out = v; });
    };
    const ua::DateTime buildDate =
        ua::dateTimeFromUnixSeconds(std::strtoll(UAPLEX_BUILD_EPOCH, nullptr, 10));
    auto buildInfo = [this, buildDate] {
        ua::BuildInfo b{};
        b.productUri = ua::makeString(cfg.server.product_uri);
        b.manufacturerName = ua::makeString(cfg.server.manufacturer_name);
        b.productName = ua::makeString(cfg.server.product_name);
        b.softwareVersion = ua::makeString(kVersion);
        b.buildNumber = ua::makeString(UAPLEX_BUILD_NUMBER);
        b.buildDate = buildDate;
        return b;
    };

    // ServerStatus and its components.
    set(n0::Server_ServerStatus, [this, buildInfo](enc::Arena& arena, ua::Variant& out) {
        ua::ServerStatusDataType st{};
        st.startTime = startTime;
        st.currentTime = now();
        st.state = static_cast<ua::ServerState>(state.load(std::memory_order_relaxed));
        st.buildInfo = buildInfo();
        st.secondsTillShutdown = 0;
        st.shutdownReason = ua::LocalizedText{0, ua::nullString(), ua::nullString()};
        out = extensionObject(arena, st);
    });
    set(n0::Server_ServerStatus_StartTime, [this](enc::Arena&, ua::Variant& out) {
        out = ua::makeVariant(ua::BuiltinType::DateTime);
        out.value.datetime = startTime;
    });
    set(n0::Server_ServerStatus_CurrentTime, [this](enc::Arena&, ua::Variant& out) {
        out = ua::makeVariant(ua::BuiltinType::DateTime);
        out.value.datetime = now();
    });
    set(n0::Server_ServerStatus_State, [this](enc::Arena&, ua::Variant& out) {
        out = ua::variantInt32(state.load(std::memory_order_relaxed));
    });
    set(n0::Server_ServerStatus_BuildInfo, [buildInfo](enc::Arena& arena, ua::Variant& out) {
        out = extensionObject(arena, buildInfo());
    });
    constant(n0::Server_ServerStatus_BuildInfo_ProductUri, ua::variantString(s.product_uri));
    constant(n0::Server_ServerStatus_BuildInfo_ManufacturerName,
             ua::variantString(s.manufacturer_name));
    constant(n0::Server_ServerStatus_BuildInfo_ProductName, ua::variantString(s.product_name));
    constant(n0::Server_ServerStatus_BuildInfo_SoftwareVersion, ua::variantString(kVersion));
    constant(n0::Server_ServerStatus_BuildInfo_BuildNumber, ua::variantString(UAPLEX_BUILD_NUMBER));
    {
        ua::Variant v = ua::makeVariant(ua::BuiltinType::DateTime);
        v.value.datetime = buildDate;
        constant(n0::Server_ServerStatus_BuildInfo_BuildDate, v);
    }
    constant(n0::Server_ServerStatus_SecondsTillShutdown, scalarUInt32(0));
    set(n0::Server_ServerStatus_ShutdownReason, [](enc::Arena& arena, ua::Variant& out) {
        static const ua::LocalizedText none{0, ua::nullString(), ua::nullString()};
        auto* text = arenaNew(arena, none);
        out = ua::makeVariant(ua::BuiltinType::LocalizedText);
        out.value.pointer = text;
    });

    // The namespace table grows while node managers start; read it at read time.
    set(n0::Server_NamespaceArray, [this](enc::Arena& arena, ua::Variant& out) {
        out = stringArray(arena, space.namespaces());
    });
    set(n0::Server_ServerArray, [this](enc::Arena& arena, ua::Variant& out) {
        out = stringArray(arena, {cfg.server.application_uri});
    });
    {
        ua::Variant v = ua::makeVariant(ua::BuiltinType::Byte);
        v.value.byte = 255;  // fully able to serve
        constant(n0::Server_ServiceLevel, v);
    }

    // ServerCapabilities: what the limits in [server.limits] enforce.
    {
        // Micro Embedded Device 2017 (Part 7): Nano plus the Embedded DataChange Subscription
        // facet (per session one subscription of two items, two queued Publish requests) and
        // two parallel sessions. Limits below those leave the server a Nano one.
        const auto allows = [](std::uint32_t limit, std::uint32_t need) {
            return limit == 0 || limit >= need;  // 0: no limit
        };
        const bool micro =
            l.max_sessions >= 2 && l.max_subscriptions >= 2 && allows(l.max_monitored_items, 4) &&
            allows(l.max_monitored_items_per_subscription, 2) &&
            allows(l.max_monitored_items_per_call, 2) && l.max_publish_requests_per_session >= 2;
        std::vector<std::string> profiles{
            micro ? "http://opcfoundation.org/UA-Profile/Server/MicroEmbeddedDevice2017"
                  : "http://opcfoundation.org/UA-Profile/Server/NanoEmbeddedDevice2017"};
        set(n0::Server_ServerCapabilities_ServerProfileArray,
            [profiles](enc::Arena& arena, ua::Variant& out) {
                out = stringArray(arena, profiles);
            });
    }
    set(n0::Server_ServerCapabilities_LocaleIdArray, [](enc::Arena& arena, ua::Variant& out) {
        static const std::vector<std::string> locales{"en"};
        out = stringArray(arena, locales);
    });
    constant(n0::Server_ServerCapabilities_MinSupportedSampleRate,
             ua::variantDouble(double(l.min_sampling_interval_ms)));
    constant(n0::Server_ServerCapabilities_MaxSubscriptions, scalarUInt32(l.max_subscriptions));
    constant(n0::Server_ServerCapabilities_MaxSubscriptionsPerSession,
             scalarUInt32(l.max_subscriptions_per_session));
    constant(n0::Server_ServerCapabilities_MaxMonitoredItems, scalarUInt32(l.max_monitored_items));
    constant(n0::Server_ServerCapabilities_MaxMonitoredItemsPerSubscription,
             scalarUInt32(l.max_monitored_items_per_subscription));
    constant(n0::Server_ServerCapabilities_MaxMonitoredItemsQueueSize,
             scalarUInt32(std::max(l.max_monitored_item_queue_size, l.max_event_queue_size)));
    constant(n0::Server_ServerCapabilities_OperationLimits_MaxMonitoredItemsPerCall,
             scalarUInt32(l.max_monitored_items_per_call));
    {
        ua::Variant v = ua::makeVariant(ua::BuiltinType::UInt16);
        v.value.uint16 = std::uint16_t(l.max_browse_continuation_points);
        constant(n0::Server_ServerCapabilities_MaxBrowseContinuationPoints, v);
        v.value.uint16 = 0;
        constant(n0::Server_ServerCapabilities_MaxQueryContinuationPoints, v);
        // [history]: per session (0: HistoryRead is not served).
        v.value.uint16 =
            cfg.history.enabled
                ? std::uint16_t(std::min<std::uint32_t>(cfg.history.max_continuation_points, 65535))
                : 0;
        constant(n0::Server_ServerCapabilities_MaxHistoryContinuationPoints, v);
    }
    constant(n0::Server_ServerCapabilities_MaxArrayLength,
             scalarUInt32(std::uint32_t(l.max_array_length)));
    constant(n0::Server_ServerCapabilities_MaxStringLength,
             scalarUInt32(std::uint32_t(l.max_string_length)));
    constant(n0::Server_ServerCapabilities_MaxByteStringLength,
             scalarUInt32(std::uint32_t(l.max_bytestring_length)));
    constant(n0::Server_ServerCapabilities_MaxSessions, scalarUInt32(l.max_sessions));
    constant(n0::Server_ServerCapabilities_OperationLimits_MaxNodesPerRead,
             scalarUInt32(l.max_nodes_per_read));
    constant(n0::Server_ServerCapabilities_OperationLimits_MaxNodesPerWrite,
             scalarUInt32(l.max_nodes_per_write));
    constant(n0::Server_ServerCapabilities_OperationLimits_MaxNodesPerMethodCall,
             scalarUInt32(l.max_nodes_per_method_call));
    constant(n0::Server_ServerCapabilities_OperationLimits_MaxNodesPerNodeManagement,
             scalarUInt32(l.max_nodes_per_node_management));
    constant(n0::Server_ServerCapabilities_OperationLimits_MaxNodesPerBrowse,
             scalarUInt32(l.max_nodes_per_browse));
    constant(n0::Server_ServerCapabilities_OperationLimits_MaxNodesPerRegisterNodes,
             scalarUInt32(l.max_nodes_per_register_nodes));
    constant(n0::Server_ServerCapabilities_OperationLimits_MaxNodesPerTranslateBrowsePathsToNodeIds,
             scalarUInt32(l.max_nodes_per_translate));

    // ServerDiagnostics: the summary from the session layer's counters.
    set(n0::Server_ServerDiagnostics_ServerDiagnosticsSummary,
        [this](enc::Arena& arena, ua::Variant& out) {
            ua::ServerDiagnosticsSummaryDataType d{};
            const ServerCounters& c = counters;
            d.serverViewCount = c.serverViewCount.load();
            d.currentSessionCount = c.currentSessionCount.load();
            d.cumulatedSessionCount = c.cumulatedSessionCount.load();
            d.securityRejectedSessionCount = c.securityRejectedSessionCount.load();
            d.rejectedSessionCount = c.rejectedSessionCount.load();
            d.sessionTimeoutCount = c.sessionTimeoutCount.load();
            d.sessionAbortCount = c.sessionAbortCount.load();
            d.currentSubscriptionCount = c.currentSubscriptionCount.load();
            d.cumulatedSubscriptionCount = c.cumulatedSubscriptionCount.load();
            d.publishingIntervalCount = c.publishingIntervalCount.load();
            d.securityRejectedRequestsCount = c.securityRejectedRequestsCount.load();
            d.rejectedRequestsCount = c.rejectedRequestsCount.load();
            out = extensionObject(arena, d);
        });
    auto counter = [&](std::uint32_t id, std::atomic<std::uint32_t> ServerCounters::*field) {
        set(id, [this, field](enc::Arena&, ua::Variant& out) {
            out = ua::variantUInt32((counters.*field).load(std::memory_order_relaxed));
        });
    };
    counter(n0::Server_ServerDiagnostics_ServerDiagnosticsSummary_ServerViewCount,
            &ServerCounters::serverViewCount);
    counter(n0::Server_ServerDiagnostics_ServerDiagnosticsSummary_CurrentSessionCount,
            &ServerCounters::currentSessionCount);
    counter(n0::Server_ServerDiagnostics_ServerDiagnosticsSummary_CumulatedSessionCount,
            &ServerCounters::cumulatedSessionCount);
    counter(n0::Server_ServerDiagnostics_ServerDiagnosticsSummary_SecurityRejectedSessionCount,
            &ServerCounters::securityRejectedSessionCount);
    counter(n0::Server_ServerDiagnostics_ServerDiagnosticsSummary_RejectedSessionCount,
            &ServerCounters::rejectedSessionCount);
    counter(n0::Server_ServerDiagnostics_ServerDiagnosticsSummary_SessionTimeoutCount,
            &ServerCounters::sessionTimeoutCount);
    counter(n0::Server_ServerDiagnostics_ServerDiagnosticsSummary_SessionAbortCount,
            &ServerCounters::sessionAbortCount);
    counter(n0::Server_ServerDiagnostics_ServerDiagnosticsSummary_CurrentSubscriptionCount,
            &ServerCounters::currentSubscriptionCount);
    counter(n0::Server_ServerDiagnostics_ServerDiagnosticsSummary_CumulatedSubscriptionCount,
            &ServerCounters::cumulatedSubscriptionCount);
    counter(n0::Server_ServerDiagnostics_ServerDiagnosticsSummary_PublishingIntervalCount,
            &ServerCounters::publishingIntervalCount);
    counter(n0::Server_ServerDiagnostics_ServerDiagnosticsSummary_SecurityRejectedRequestsCount,
            &ServerCounters::securityRejectedRequestsCount);
    counter(n0::Server_ServerDiagnostics_ServerDiagnosticsSummary_RejectedRequestsCount,
            &ServerCounters::rejectedRequestsCount);
    counters.diagnosticsEnabled.store(cfg.server.diagnostics, std::memory_order_relaxed);
    set(n0::Server_ServerDiagnostics_EnabledFlag, [this](enc::Arena&, ua::Variant& out) {
        out = ua::variantBoolean(counters.diagnosticsEnabled.load(std::memory_order_relaxed));
    });

    // The Server object's other variables that the nodeset leaves without a value: a client
    // reading the whole object gets a typed answer for each. Limits of services that arrive
    // later read 0 (no limit stated) until those services set them.
    constant(n0::Server_ServerCapabilities_OperationLimits_MaxNodesPerHistoryReadData,
             scalarUInt32(cfg.history.enabled ? cfg.history.max_nodes_per_read : 0));
    constant(n0::Server_ServerCapabilities_OperationLimits_MaxNodesPerHistoryUpdateData,
             scalarUInt32(cfg.history.enabled ? cfg.history.max_nodes_per_update : 0));
    for (std::uint32_t id :
         {n0::Server_ServerCapabilities_OperationLimits_MaxNodesPerHistoryReadEvents,
          n0::Server_ServerCapabilities_OperationLimits_MaxNodesPerHistoryUpdateEvents,
          n0::Server_ServerCapabilities_OperationLimits_MaxNodesPerNodeManagement,
          n0::Server_ServerCapabilities_MaxSelectClauseParameters,
          n0::Server_ServerCapabilities_MaxWhereClauseParameters, n0::Server_UrisVersion})
        constant(id, scalarUInt32(0));
    // [audit] enabled: the session, write and certificate Audit events are raised (Part 5 6.4).
    constant(n0::Server_Auditing, ua::variantBoolean(cfg.audit.enabled));
    constant(n0::Server_ServerRedundancy_RedundancySupport, ua::variantInt32(0));  // None
    {
        ua::Variant v = ua::makeVariant(ua::BuiltinType::DateTime);
        v.value.datetime = 0;
        constant(n0::Server_EstimatedReturnTime, v);
    }
    set(n0::Server_LocalTime, [](enc::Arena& arena, ua::Variant& out) {
        out = extensionObject(arena, ua::TimeZoneDataType{});  // UTC
    });
    // Empty lists: no software certificates, conformance units or sampling diagnostics kept.
    auto empty = [&](std::uint32_t id, ua::BuiltinType type) {
        constant(id, ua::variantArray(type, 0, nullptr));
    };
    empty(n0::Server_ServerCapabilities_SoftwareCertificates, ua::BuiltinType::ExtensionObject);
    empty(n0::Server_ServerCapabilities_ConformanceUnits, ua::BuiltinType::QualifiedName);
    empty(n0::Server_ServerDiagnostics_SamplingIntervalDiagnosticsArray,
          ua::BuiltinType::ExtensionObject);
    // One SessionDiagnosticsObject per session under SessionsDiagnosticsSummary
    // (session_nodes.cpp), shaped by the image's placeholder.
    sessionNodes = std::make_unique<SessionNodes>(space);
    // The sessions' and subscriptions' diagnostics: from the server that knows them.
    for (std::uint32_t id :
         {n0::Server_ServerDiagnostics_SubscriptionDiagnosticsArray,
          n0::Server_ServerDiagnostics_SessionsDiagnosticsSummary_SessionDiagnosticsArray,
          n0::Server_ServerDiagnostics_SessionsDiagnosticsSummary_SessionSecurityDiagnosticsArray})
        set(id, [this, id](enc::Arena& arena, ua::Variant& out) {
            auto fn = diagnosticsArrays.load(std::memory_order_acquire);
            if (fn && counters.diagnosticsEnabled.load(std::memory_order_relaxed))
                fn(diagnosticsArraysUser, id, nullptr, arena, out);
            else
                out = ua::variantArray(ua::BuiltinType::ExtensionObject, 0, nullptr);
        });
}

}  // namespace uaplex::services
