// SPDX-License-Identifier: Apache-2.0
// Discovery (Part 4 5.4): the server's ApplicationDescription and EndpointDescriptions, built
// from [server] for GetEndpoints, FindServers and CreateSession.
#pragma once

#include <uaplex/session/identity_verifier.hpp>

#include <uaplex/encoding/encoding.hpp>

#include <string>
#include <string_view>
#include <vector>

#include <uaplex/config/config.hpp>
#include <uaplex/security/crypto.hpp>

namespace uaplex::server {

inline constexpr std::string_view kTransportProfileUaTcp =
    "http://opcfoundation.org/UA-Profile/Transport/uatcp-uasc-uabinary";
// opc.https endpoints (Part 6 7.4.4); the same endpoint also takes JSON bodies.
inline constexpr std::string_view kTransportProfileHttpsBinary =
    "http://opcfoundation.org/UA-Profile/Transport/https-uabinary";

class Discovery {
  public:
    // `certificate`: the application instance certificate (null when only None is offered).
    Discovery(const config::ServerSection& server,
              const security::Certificate* certificate = nullptr);
    // The UserTokenPolicies every endpoint offers (set before the server starts; default:
    // Anonymous only).
    void setTokenPolicies(std::vector<session::TokenPolicy> policies) {
        tokenPolicies_ = std::move(policies);
    }
    // The policy that secures UserName passwords and X509 token signatures on None
    // endpoints (empty: none, passwords travel in clear there).
    void setNoneTokenPolicyUri(std::string uri) { noneTokenPolicyUri_ = std::move(uri); }

    // Endpoints in the arena. A wildcard host (0.0.0.0, [::]) is replaced by the host the
    // client asked for in `clientUrl` (or this machine's name). profileUris filters by
    // transport profile (empty: all).
    ua::Array<ua::EndpointDescription> endpoints(enc::Arena& arena, std::string_view clientUrl,
                                                 const ua::Array<ua::String>& profileUris) const;
    // The ApplicationDescription, discoveryUrls with the same host substitution.
    ua::ApplicationDescription application(enc::Arena& arena, std::string_view clientUrl) const;
    // FindServers: our description unless serverUris filters it out.
    ua::Array<ua::ApplicationDescription> servers(enc::Arena& arena, std::string_view clientUrl,
                                                  const ua::Array<ua::String>& serverUris) const;

    // The endpoint URL with a wildcard host replaced (exposed for tests).
    std::string substituteHost(std::string_view endpoint, std::string_view clientUrl) const;

  private:
    ua::String copy(enc::Arena& arena, std::string_view s) const;

    std::string applicationUri_, productUri_, applicationName_, hostname_;
    std::vector<std::string> endpointUrls_;
    std::vector<session::TokenPolicy> tokenPolicies_{
        {session::kAnonymousPolicyId, session::IdentityKind::Anonymous, {}}};
    // One entry per offered policy and mode (None: policy null).
    struct Offer {
        const security::PolicyInfo* policy;
        ua::MessageSecurityMode mode;
        std::uint8_t level;
    };
    std::vector<Offer> offers_;
    std::vector<std::uint8_t> certificate_;
    std::string noneTokenPolicyUri_;
};

}  // namespace uaplex::server
