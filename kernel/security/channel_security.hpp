// The secure channel's security for the RSA/AES policies (Part 6 6.7.2-6.7.5): asymmetric
// OpenSecureChannel chunks (RSA sign + encrypt with the sender certificate and the receiver
// thumbprint), derived symmetric keys per token, AES-CBC and HMAC for MSG/CLO. Cipher and MAC
// contexts live as long as the channel: securing a message allocates nothing.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "securechannel/security_policy.hpp"
#include "security/crypto.hpp"
#include "security/pki.hpp"

namespace uaplex::security {

struct OfferedPolicy {
    const PolicyInfo* policy;  // null: None
    bool sign = false;
    bool signAndEncrypt = false;
};

class Provider final : public securechannel::SecurityProvider {
  public:
    // `pki` holds the own certificate and validates peers; must outlive the provider.
    Provider(Pki& pki, std::vector<OfferedPolicy> offered);
    std::unique_ptr<securechannel::ChannelSecurity> create(std::string_view policyUri) override;
    bool offers(std::string_view policyUri,
                securechannel::SecurityMode mode) const noexcept override;
    Pki& pki() noexcept { return pki_; }
    // A client certificate was refused (logged by the caller's sink): audit reason and subject.
    std::function<void(uaplex_status, const Certificate&)> onRefused;

  private:
    Pki& pki_;
    std::vector<OfferedPolicy> offered_;
};

// One policy's channel security with an explicit own certificate and key (tests use it
// without a Pki; `validate` then decides about the peer certificate).
std::unique_ptr<securechannel::ChannelSecurity> makeChannelSecurity(
    const PolicyInfo& policy, std::shared_ptr<Certificate> own, EVP_PKEY* ownKey,
    std::function<uaplex_status(const Certificate&)> validate);

// The client side of a channel to `server` (the project's test client).
std::unique_ptr<securechannel::ChannelSecurity> makeClientChannelSecurity(
    const PolicyInfo& policy, std::shared_ptr<Certificate> own, EVP_PKEY* ownKey,
    std::shared_ptr<Certificate> server);

}  // namespace uaplex::security
