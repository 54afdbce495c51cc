// SPDX-License-Identifier: Apache-2.0
#include "security_posture.hpp"

#include <string_view>

namespace uaplex::server {

namespace {
constexpr std::string_view kNoneUri = "http://opcfoundation.org/UA/SecurityPolicy#None";
}

std::vector<std::string> insecureSettings(const config::ServerConfig& cfg, bool hasCertificate,
                                          const session::AccessPolicy& policy) {
    std::vector<std::string> out;
    const auto& s = cfg.server;
    const auto& a = cfg.access;
    bool none = false;
    std::string legacy;
    for (const auto& o : s.security) {
        none = none || o.policy == "None";
        if (o.policy == "Basic128Rsa15" || o.policy == "Basic256")
            legacy += (legacy.empty() ? "" : ", ") + o.policy;
    }
    // Under strict a None offer is discovery only (sessions over it are refused).
    if (none && !s.strict())
        out.push_back(
            "insecure: [server] security offers SecurityPolicy None for sessions: their "
            "messages are neither signed nor encrypted and CreateSession's endpoint list can be "
            "downgraded (use security_profile = \"strict\" to keep None for discovery only)");
    if (!legacy.empty())
        out.push_back("insecure: [server] security offers the deprecated policies " + legacy +
                      " (SHA-1, RSA-PKCS#1 v1.5); use Basic256Sha256 or the Aes* policies");
    if (a.anonymous) {
        auto view = policy.view(session::roleMask(a.anonymous_roles));
        std::uint32_t granted = view->grantedOutsideNamespace0();
        std::string what;
        if (granted & session::kPermWrite) what = "Write";
        if (granted & session::kPermCall) what += what.empty() ? "Call" : " and Call";
        if (!what.empty())
            out.push_back("insecure: Anonymous sessions are granted " + what +
                          " ([access] anonymous_permissions, anonymous_roles or rules): any "
                          "client that reaches the server may change values or run methods");
    }
    if (!a.users_file.empty()) {
        if (!hasCertificate)
            out.push_back(
                "insecure: [access] users_file is used without an application "
                "certificate: passwords travel in clear (configure a secure policy "
                "in [server] security)");
        else if (a.username_security_policy == kNoneUri)
            out.push_back(
                "insecure: [access] username_security_policy is None: passwords "
                "travel in clear on every endpoint");
    }
    return out;
}

}  // namespace uaplex::server
