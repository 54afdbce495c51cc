// SPDX-License-Identifier: Apache-2.0
// Identity-token cryptography with the application instance key and certificate, and the
// user trust list of the certificate store (X509 identity tokens).
#pragma once

#include <functional>

#include <uaplex/security/pki.hpp>
#include <uaplex/session/identity_verifier.hpp>

namespace uaplex::server {

class PkiIdentityCrypto final : public session::IdentityCrypto {
  public:
    explicit PkiIdentityCrypto(security::Pki& pki) : pki_(pki) {}
    uaplex_status decryptPassword(std::string_view securityPolicyUri,
                                  std::string_view encryptionAlgorithm,
                                  std::span<const std::uint8_t> secret,
                                  std::span<const std::uint8_t> serverNonce,
                                  std::string& password) noexcept override;
    uaplex_status verifyX509TokenSignature(
        std::string_view securityPolicyUri, std::span<const std::uint8_t> userCertificate,
        std::string_view algorithm, std::span<const std::uint8_t> signature,
        std::span<const std::uint8_t> serverCertificate,
        std::span<const std::uint8_t> serverNonce) noexcept override;
    uaplex_status validateUserCertificate(std::string_view securityPolicyUri,
                                          std::span<const std::uint8_t> userCertificate,
                                          bool pinned) noexcept override;
    // A user certificate was refused: the reason (the client sees BadIdentityTokenRejected).
    std::function<void(uaplex_status, const security::Certificate&)> onRefused;

  private:
    security::Pki& pki_;
};

}  // namespace uaplex::server
