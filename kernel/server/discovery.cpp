#include "server/discovery.hpp"

#include <unistd.h>

#include <cstring>

#include "securechannel/security_policy.hpp"
#include "session/session_manager.hpp"

namespace uaplex::server {

namespace {

// host part of "scheme://host:port/path" (brackets kept) and the rest after it.
bool splitHost(std::string_view url, std::string_view& prefix, std::string_view& host,
               std::string_view& rest) {
    auto scheme = url.find("://");
    if (scheme == std::string_view::npos) return false;
    std::size_t start = scheme + 3;
    std::size_t end;
    if (start < url.size() && url[start] == '[') {
        end = url.find(']', start);
        if (end == std::string_view::npos) return false;
        ++end;
    } else {
        end = url.find_first_of(":/", start);
        if (end == std::string_view::npos) end = url.size();
    }
    prefix = url.substr(0, start);
    host = url.substr(start, end - start);
    rest = url.substr(end);
    return !host.empty();
}

bool isWildcard(std::string_view host) {
    return host == "0.0.0.0" || host == "[::]" || host == "[0:0:0:0:0:0:0:0]";
}

}  // namespace

Discovery::Discovery(const config::ServerSection& server)
    : applicationUri_(server.application_uri),
      productUri_(server.product_uri),
      applicationName_(server.application_name),
      endpointUrls_(server.endpoints) {
    char name[256] = {};
    if (gethostname(name, sizeof name - 1) == 0 && name[0])
        hostname_ = name;
    else
        hostname_ = "localhost";
}

std::string Discovery::substituteHost(std::string_view endpoint, std::string_view clientUrl) const {
    std::string_view prefix, host, rest;
    if (!splitHost(endpoint, prefix, host, rest) || !isWildcard(host)) return std::string(endpoint);
    std::string_view cprefix, chost, crest;
    std::string_view use = hostname_;
    if (splitHost(clientUrl, cprefix, chost, crest) && !isWildcard(chost)) use = chost;
    return std::string(prefix) + std::string(use) + std::string(rest);
}

ua::String Discovery::copy(enc::Arena& arena, std::string_view s) const {
    char* p = arena.allocateArray<char>(s.size() ? s.size() : 1);
    if (!p) return ua::nullString();
    std::memcpy(p, s.data(), s.size());
    return ua::String{std::int32_t(s.size()), p};
}

ua::ApplicationDescription Discovery::application(enc::Arena& arena,
                                                  std::string_view clientUrl) const {
    ua::ApplicationDescription d{};
    d.applicationUri = ua::makeString(applicationUri_);
    d.productUri = ua::makeString(productUri_);
    d.applicationName = ua::makeLocalizedText("", applicationName_);
    d.applicationType = ua::ApplicationType::Server;
    d.gatewayServerUri = ua::nullString();
    d.discoveryProfileUri = ua::nullString();
    auto* urls = arena.allocateArray<ua::String>(endpointUrls_.size());
    for (std::size_t i = 0; i < endpointUrls_.size(); ++i)
        urls[i] = copy(arena, substituteHost(endpointUrls_[i], clientUrl));
    d.discoveryUrls = {std::int32_t(endpointUrls_.size()), urls};
    return d;
}

ua::Array<ua::EndpointDescription> Discovery::endpoints(
    enc::Arena& arena, std::string_view clientUrl, const ua::Array<ua::String>& profileUris) const {
    // Which transports the client asked for (all when it names none).
    bool wantTcp = profileUris.length <= 0, wantHttps = profileUris.length <= 0;
    for (const auto& p : profileUris) {
        wantTcp = wantTcp || ua::view(p) == kTransportProfileUaTcp;
        wantHttps = wantHttps || ua::view(p) == kTransportProfileHttpsBinary;
    }
    auto serves = [&](const std::string& url) {
        return (wantTcp && url.rfind("opc.tcp:", 0) == 0) ||
               (wantHttps && url.rfind("opc.https:", 0) == 0);
    };
    ua::ApplicationDescription app = application(arena, clientUrl);
    auto* policy = arena.allocateArray<ua::UserTokenPolicy>(1);
    policy[0].policyId = ua::makeString(session::SessionManager::kAnonymousPolicyId);
    policy[0].tokenType = ua::UserTokenType::Anonymous;
    policy[0].issuedTokenType = ua::nullString();
    policy[0].issuerEndpointUrl = ua::nullString();
    policy[0].securityPolicyUri = ua::nullString();
    std::size_t n = 0;
    for (const auto& url : endpointUrls_) n += serves(url);
    auto* eps = arena.allocateArray<ua::EndpointDescription>(n);
    std::size_t i = 0;
    for (const auto& url : endpointUrls_) {
        if (!serves(url)) continue;
        bool https = url.rfind("opc.https:", 0) == 0;
        auto& e = eps[i++];
        e.endpointUrl = copy(arena, substituteHost(url, clientUrl));
        e.server = app;
        e.serverCertificate = ua::nullByteString();
        e.securityMode = ua::MessageSecurityMode::None_;
        e.securityPolicyUri = ua::makeString(securechannel::kSecurityPolicyNone);
        e.userIdentityTokens = {1, policy};
        // HTTPS (Part 6 7.4.1): TLS secures the bytes; SecurityPolicy None and mode None.
        e.transportProfileUri =
            ua::makeString(https ? kTransportProfileHttpsBinary : kTransportProfileUaTcp);
        e.securityLevel = 0;  // None: the least secure
    }
    return {std::int32_t(n), eps};
}

ua::Array<ua::ApplicationDescription> Discovery::servers(
    enc::Arena& arena, std::string_view clientUrl, const ua::Array<ua::String>& serverUris) const {
    if (serverUris.length > 0) {
        bool match = false;
        for (const auto& u : serverUris) match = match || ua::view(u) == applicationUri_;
        if (!match) return {0, nullptr};
    }
    auto* d = arena.allocateArray<ua::ApplicationDescription>(1);
    d[0] = application(arena, clientUrl);
    return {1, d};
}

}  // namespace uaplex::server
