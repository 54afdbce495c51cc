// SPDX-License-Identifier: Apache-2.0
// The start-up check of the security posture (docs/security.md, "Secure defaults and the
// strict profile"): one warning line per insecure setting in force, so that an operator who
// keeps one does so knowingly.
#pragma once

#include <string>
#include <vector>

#include <uaplex/config/config.hpp>
#include <uaplex/session/access_control.hpp>

namespace uaplex::server {

// `hasCertificate`: the server has an application instance certificate. `policy`: the
// compiled [access] rules (what Anonymous may do).
std::vector<std::string> insecureSettings(const config::ServerConfig& cfg, bool hasCertificate,
                                          const session::AccessPolicy& policy);

}  // namespace uaplex::server
