#include "securechannel/security_policy.hpp"

namespace uaplex::securechannel {

const SecurityPolicy* findSecurityPolicy(std::string_view uri) noexcept {
    static const SecurityPolicyNone none;
    if (uri == none.uri()) return &none;
    return nullptr;
}

}  // namespace uaplex::securechannel
