// SPDX-License-Identifier: Apache-2.0
#include "monitored_item_access.hpp"

namespace uaplex::server {

std::uint32_t monitoringPermission(std::uint32_t attributeId) noexcept {
    constexpr std::uint32_t kEventNotifier = 12, kValue = 13;
    if (attributeId == kEventNotifier) return session::kPermReceiveEvents;
    if (attributeId == kValue) return session::kPermRead;
    return session::kPermBrowse;
}

uaplex_status createMonitoredItemsChecked(SubscriptionService& subscriptions, std::uint64_t session,
                                          std::string_view identity,
                                          const session::AccessView& access,
                                          const ua::CreateMonitoredItemsRequest& request,
                                          enc::Arena& arena, const enc::DataType*& responseType,
                                          void*& response) noexcept {
    const std::size_t n = request.itemsToCreate.size();
    auto allowed = [&](std::size_t i) {
        const ua::ReadValueId& item = request.itemsToCreate[i].itemToMonitor;
        std::uint32_t need = monitoringPermission(item.attributeId);
        return (access.permissions(item.nodeId) & need) == need;
    };
    // As Read answers: a node the session may not Browse is unknown to it.
    auto deniedStatus = [&](std::size_t i) {
        const ua::ReadValueId& item = request.itemsToCreate[i].itemToMonitor;
        return (access.permissions(item.nodeId) & session::kPermBrowse) ? UAPLEX_BadUserAccessDenied
                                                                        : UAPLEX_BadNodeIdUnknown;
    };
    std::size_t denied = 0;
    for (std::size_t i = 0; i < n; ++i) denied += !allowed(i);
    if (denied == 0)
        return subscriptions.createMonitoredItems(session, identity, request, arena, responseType,
                                                  response);

    // The permitted items go to the engine; its results are spread back into place.
    ua::CreateMonitoredItemsResponse* inner = nullptr;
    if (denied < n) {
        auto* items = arena.allocateArray<ua::MonitoredItemCreateRequest>(n - denied);
        if (!items) return UAPLEX_BadOutOfMemory;
        std::size_t k = 0;
        for (std::size_t i = 0; i < n; ++i)
            if (allowed(i)) items[k++] = request.itemsToCreate[i];
        ua::CreateMonitoredItemsRequest part = request;
        part.itemsToCreate = {std::int32_t(k), items};
        const enc::DataType* innerType = nullptr;
        void* innerResponse = nullptr;
        uaplex_status st = subscriptions.createMonitoredItems(session, identity, part, arena,
                                                              innerType, innerResponse);
        if (st != UAPLEX_Good) return st;
        inner = static_cast<ua::CreateMonitoredItemsResponse*>(innerResponse);
        if (!inner || inner->results.size() != k) return UAPLEX_BadInternalError;
    }
    auto* resp = arena.allocateArray<ua::CreateMonitoredItemsResponse>(1);
    auto* results = arena.allocateArray<ua::MonitoredItemCreateResult>(n);
    if (!resp || !results) return UAPLEX_BadOutOfMemory;
    std::size_t k = 0;
    for (std::size_t i = 0; i < n; ++i) {
        if (allowed(i)) {
            results[i] = inner->results[k++];
            continue;
        }
        results[i] = ua::MonitoredItemCreateResult{};
        results[i].statusCode = deniedStatus(i);
    }
    resp->results = {std::int32_t(n), results};
    resp->diagnosticInfos = {-1, nullptr};
    responseType = enc::dataTypeOf<ua::CreateMonitoredItemsResponse>();
    response = resp;
    return UAPLEX_Good;
}

}  // namespace uaplex::server
