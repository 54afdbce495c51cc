// SPDX-License-Identifier: Apache-2.0
// The secure channel's security for the RSA/AES policies (Part 6 6.7.2-6.7.5): asymmetric
// OpenSecureChannel chunks (RSA sign + encrypt with the sender certificate and the receiver
// thumbprint), derived symmetric keys per token, AES-CBC and HMAC for MSG/CLO. Cipher and MAC
// contexts live as long as the channel: securing a message allocates nothing.
#pragma once

#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include <uaplex/securechannel/security_policy.hpp>
#include <uaplex/security/crypto.hpp>
#include <uaplex/security/pki.hpp>

namespace uaplex::security {

struct OfferedPolicy {
    const PolicyInfo* policy;  // null: None
    bool sign = false;
    bool signAndEncrypt = false;
};

// What a channel learns of a peer certificate: the status the peer gets, and whether the
// certificate goes to the rejected store once the OPN proved possession of its key.
struct PeerVerdict {
    uaplex_status status = UAPLEX_Good;
    bool recordWhenProven = false;
    PeerVerdict(uaplex_status s = UAPLEX_Good, bool record = false) noexcept  // NOLINT: implicit
        : status(s), recordWhenProven(record) {}
};
using PeerValidator = std::function<PeerVerdict(const Certificate&)>;
// Called with a refused certificate whose OPN signature verified with its key.
using ProvenRefusal = std::function<void(const Certificate&)>;

class Provider final : public securechannel::SecurityProvider {
  public:
    // `pki` holds the own certificate and validates peers; must outlive the provider.
    Provider(Pki& pki, std::vector<OfferedPolicy> offered);
    std::unique_ptr<securechannel::ChannelSecurity> create(std::string_view policyUri) override;
    bool offers(std::string_view policyUri,
                securechannel::SecurityMode mode) const noexcept override;
    Pki& pki() noexcept { return pki_; }
    // A client certificate was refused (logged by the caller's sink): audit reason and
    // subject. Runs for every refused OPN, before any proof of possession: rate-limit it.
    std::function<void(uaplex_status, const Certificate&)> onRefused;
    // An untrusted certificate that proved its key was written to rejected/certs.
    std::function<void(const Certificate&)> onRecorded;

  private:
    Pki& pki_;
    std::vector<OfferedPolicy> offered_;
};

// One policy's channel security with an explicit own certificate and key (tests use it
// without a Pki; `validate` then decides about the peer certificate, at the first OPN and at
// every renewal). `proven` gets a refused certificate with recordWhenProven once the OPN's
// signature verified with its key; the peer still gets the verdict's status.
std::unique_ptr<securechannel::ChannelSecurity> makeChannelSecurity(
    const PolicyInfo& policy, std::shared_ptr<Certificate> own, EVP_PKEY* ownKey,
    PeerValidator validate, ProvenRefusal proven = {});

// Whether a peer's nonce looks random: refused when all its bytes are equal (all zero
// included). Part 6 6.7.4: the nonces seed the channel keys.
bool nonceLooksRandom(std::span<const std::uint8_t> nonce) noexcept;

// The client side of a channel to `server` (the project's test client).
std::unique_ptr<securechannel::ChannelSecurity> makeClientChannelSecurity(
    const PolicyInfo& policy, std::shared_ptr<Certificate> own, EVP_PKEY* ownKey,
    std::shared_ptr<Certificate> server);

}  // namespace uaplex::security
