// SPDX-License-Identifier: Apache-2.0
#include <uaplex/server/pki_identity_crypto.hpp>

#include <uaplex/security/user_token_crypto.hpp>

namespace uaplex::server {

uaplex_status PkiIdentityCrypto::decryptPassword(std::string_view securityPolicyUri,
                                                 std::string_view encryptionAlgorithm,
                                                 std::span<const std::uint8_t> secret,
                                                 std::span<const std::uint8_t> serverNonce,
                                                 std::string& password) noexcept {
    if (!pki_.privateKey()) return UAPLEX_BadIdentityTokenInvalid;
    try {
        uaplex_status st =
            security::decryptUserPassword(pki_.privateKey(), securityPolicyUri, encryptionAlgorithm,
                                          secret, serverNonce, password);
        return st == UAPLEX_Good ? st : UAPLEX_BadIdentityTokenInvalid;
    } catch (...) {
        return UAPLEX_BadIdentityTokenInvalid;
    }
}

uaplex_status PkiIdentityCrypto::verifyX509TokenSignature(
    std::string_view securityPolicyUri, std::span<const std::uint8_t> userCertificate,
    std::string_view algorithm, std::span<const std::uint8_t> signature,
    std::span<const std::uint8_t> serverCertificate,
    std::span<const std::uint8_t> serverNonce) noexcept {
    try {
        return security::verifyX509TokenSignature(securityPolicyUri, userCertificate, algorithm,
                                                  signature, serverCertificate, serverNonce);
    } catch (...) {
        return UAPLEX_BadUserSignatureInvalid;
    }
}

uaplex_status PkiIdentityCrypto::validateUserCertificate(
    std::string_view securityPolicyUri, std::span<const std::uint8_t> userCertificate,
    bool pinned) noexcept {
    try {
        auto cert = security::Certificate::fromDer(userCertificate);
        if (!cert) return UAPLEX_BadCertificateInvalid;
        uaplex_status st =
            pki_.validateUser(*cert, security::findPolicy(securityPolicyUri), pinned);
        if (st != UAPLEX_Good && onRefused) onRefused(st, *cert);
        return st;
    } catch (...) {
        return UAPLEX_BadCertificateInvalid;
    }
}

}  // namespace uaplex::server
