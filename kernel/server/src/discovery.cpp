// SPDX-License-Identifier: Apache-2.0
#include <uaplex/server/discovery.hpp>

#include <unistd.h>

#include <cstring>

#include <uaplex/securechannel/security_policy.hpp>
#include <uaplex/session/session_manager.hpp>

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

Discovery::Discovery(const config::ServerSection& server, const security::Certificate* certificate)
    : applicationUri_(server.application_uri),
      productUri_(server.product_uri),
      applicationName_(server.application_name),
      endpointUrls_(server.endpoints) {
    if (certificate) certificate_ = certificate->der;
    for (const auto& o : server.security) {
        const security::PolicyInfo* p = security::findPolicy(o.policy);
        if (!p) {
            // Strict: None serves GetEndpoints and FindServers only; no session endpoint.
            if (!server.strict()) offers_.push_back({nullptr, ua::MessageSecurityMode::None_, 0});
            continue;
        }
        // securityLevel: the policy's strength; encryption ranks above signing only.
        for (const auto& m : o.modes) {
            bool encrypt = m == "SignAndEncrypt";
            offers_.push_back(
                {p,
                 encrypt ? ua::MessageSecurityMode::SignAndEncrypt : ua::MessageSecurityMode::Sign,
                 std::uint8_t(p->securityLevel + (encrypt ? 100 : 0))});
        }
    }
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
    char* p = arena.allocateArray<char>(s.empty() ? 1 : s.size());
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
    // Token policies for secured endpoints (empty securityPolicyUri: the endpoint's) and for
    // None endpoints, where a password or token signature needs a policy of its own.
    std::size_t np = tokenPolicies_.size();
    auto* policy = arena.allocateArray<ua::UserTokenPolicy>(np);
    auto* policyNone = arena.allocateArray<ua::UserTokenPolicy>(np);
    if (np && (!policy || !policyNone)) return {0, nullptr};
    for (std::size_t k = 0; k < np; ++k) {
        const auto& tp = tokenPolicies_[k];
        policy[k].policyId = copy(arena, tp.policyId);
        policy[k].tokenType =
            tp.kind == session::IdentityKind::UserName ? ua::UserTokenType::UserName
            : tp.kind == session::IdentityKind::X509   ? ua::UserTokenType::Certificate
                                                       : ua::UserTokenType::Anonymous;
        policy[k].issuedTokenType = ua::nullString();
        policy[k].issuerEndpointUrl = ua::nullString();
        policy[k].securityPolicyUri =
            tp.securityPolicyUri.empty() ? ua::nullString() : copy(arena, tp.securityPolicyUri);
        policyNone[k] = policy[k];
        if (tp.securityPolicyUri.empty() && tp.kind != session::IdentityKind::Anonymous &&
            !noneTokenPolicyUri_.empty())
            policyNone[k].securityPolicyUri = copy(arena, noneTokenPolicyUri_);
    }
    // opc.tcp: one endpoint per offered policy and mode; opc.https: one, None/None.
    std::size_t n = 0;
    for (const auto& url : endpointUrls_)
        if (serves(url)) n += url.rfind("opc.https:", 0) == 0 ? 1 : offers_.size();
    auto* eps = arena.allocateArray<ua::EndpointDescription>(n);
    if (!eps && n) return {0, nullptr};
    ua::ByteString cert{std::int32_t(certificate_.size()),
                        const_cast<std::uint8_t*>(certificate_.data())};
    if (certificate_.empty()) cert = ua::nullByteString();
    std::size_t i = 0;
    for (const auto& url : endpointUrls_) {
        if (!serves(url)) continue;
        ua::String endpointUrl = copy(arena, substituteHost(url, clientUrl));
        if (url.rfind("opc.https:", 0) == 0) {
            // HTTPS (Part 6 7.4.1): TLS secures the bytes; SecurityPolicy None and mode None.
            auto& e = eps[i++];
            e.endpointUrl = endpointUrl;
            e.server = app;
            e.serverCertificate = cert;
            e.securityMode = ua::MessageSecurityMode::None_;
            e.securityPolicyUri = ua::makeString(securechannel::kSecurityPolicyNone);
            e.userIdentityTokens = {std::int32_t(np), policyNone};
            e.transportProfileUri = ua::makeString(kTransportProfileHttpsBinary);
            e.securityLevel = 0;
            continue;
        }
        for (const auto& o : offers_) {
            auto& e = eps[i++];
            e.endpointUrl = endpointUrl;
            e.server = app;
            e.serverCertificate = cert;
            e.securityMode = o.mode;
            e.securityPolicyUri =
                ua::makeString(o.policy ? o.policy->uri : securechannel::kSecurityPolicyNone);
            e.userIdentityTokens = {std::int32_t(np), o.policy ? policy : policyNone};
            e.transportProfileUri = ua::makeString(kTransportProfileUaTcp);
            e.securityLevel = o.level;  // None: 0, the least secure
        }
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
