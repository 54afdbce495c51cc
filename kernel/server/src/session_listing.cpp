// SPDX-License-Identifier: Apache-2.0
// The operator's view of the sessions (`uaplex ctl sessions`, `close-session`): read from the
// session table and the engine off the request path.
#include <uaplex/server/server.hpp>

#include <algorithm>
#include <cctype>
#include <cstdio>

#include <uaplex/server/service_table.hpp>
#include <uaplex/server/subscription_service.hpp>
#include <uaplex/session/identity_verifier.hpp>
#include <uaplex/session/session_manager.hpp>

namespace uaplex::server {

namespace {

// Part 6 5.1.3's text form of a Guid, lower case.
std::string guidText(const ua::Guid& g) {
    char buf[40];
    std::snprintf(buf, sizeof buf, "%08x-%04x-%04x-%02x%02x-%02x%02x%02x%02x%02x%02x",
                  unsigned(g.data1), unsigned(g.data2), unsigned(g.data3), g.data4[0], g.data4[1],
                  g.data4[2], g.data4[3], g.data4[4], g.data4[5], g.data4[6], g.data4[7]);
    return buf;
}

bool equalsIgnoringCase(std::string_view a, std::string_view b) {
    return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
               return std::tolower(static_cast<unsigned char>(x)) ==
                      std::tolower(static_cast<unsigned char>(y));
           });
}

}  // namespace

std::vector<Server::SessionInfo> Server::sessionInfos() {
    std::vector<std::shared_ptr<session::Session>> live;
    sessions_->list(live);
    std::vector<SessionInfo> out;
    out.reserve(live.size());
    for (const auto& s : live) {
        if (s->closed()) continue;
        SessionInfo i;
        i.sessionId = "ns=1;g=" + guidText(s->sessionId().identifier.guid);
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
    std::stable_sort(out.begin(), out.end(), [](const SessionInfo& a, const SessionInfo& b) {
        return a.createdUnixMs < b.createdUnixMs;
    });
    return out;
}

bool Server::closeSessionById(std::string_view id) {
    if (id.size() > 7 && equalsIgnoringCase(id.substr(0, 7), "ns=1;g=")) id.remove_prefix(7);
    std::vector<std::shared_ptr<session::Session>> live;
    sessions_->list(live);
    for (const auto& s : live)
        if (equalsIgnoringCase(guidText(s->sessionId().identifier.guid), id))
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
