// SPDX-License-Identifier: Apache-2.0
// Access checks the dispatcher applies in front of services that do not see the session's
// permissions themselves: CreateMonitoredItems (Part 4 5.12.2: an item on a Value without
// Read, or an event item without ReceiveEvents, is BadUserAccessDenied).
#pragma once

#include <uaplex/encoding/encoding.hpp>

#include <cstdint>
#include <string_view>

#include <uaplex/server/subscription_service.hpp>
#include <uaplex/session/access_control.hpp>

namespace uaplex::server {

// The permission an item on `attributeId` of a node needs.
std::uint32_t monitoringPermission(std::uint32_t attributeId) noexcept;

// CreateMonitoredItems with the items `access` denies answered BadUserAccessDenied (or
// BadNodeIdUnknown when the session may not even Browse the node) and the others created
// by `subscriptions`, results in request order.
uaplex_status createMonitoredItemsChecked(SubscriptionService& subscriptions, std::uint64_t session,
                                          std::string_view identity,
                                          const session::AccessView& access,
                                          const ua::CreateMonitoredItemsRequest& request,
                                          enc::Arena& arena, const enc::DataType*& responseType,
                                          void*& response) noexcept;

}  // namespace uaplex::server
