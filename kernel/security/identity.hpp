// What the session layer needs to check user identity tokens (Part 4 7.41) with the server's
// key: the legacy encrypted password format and X509 identity token signatures.
#pragma once

#include <uaplex/statuscodes.h>

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "security/crypto.hpp"

namespace uaplex::security {

// Decrypts a UserNameIdentityToken password (Part 4 7.41.2.2 legacy format: UInt32 length,
// password, server nonce) encrypted with `encryptionAlgorithm` (rsa-oaep, rsa-oaep-sha2-256,
// rsa-1_5 URIs) for the server key, and checks that the appended nonce is `serverNonce`.
// An empty algorithm means the password is not encrypted (then it is returned as is).
// Statuses: BadIdentityTokenInvalid (unknown algorithm, undecryptable, malformed),
// BadNonceInvalid (wrong nonce).
uaplex_status decryptUserPassword(EVP_PKEY* serverKey, std::string_view encryptionAlgorithm,
                                  std::span<const std::uint8_t> encrypted,
                                  std::span<const std::uint8_t> serverNonce, std::string& password);

// Verifies an X509IdentityToken's userTokenSignature: `signature` by the token certificate's
// key over serverCertificate + serverNonce with `algorithm` (the SignatureData algorithm URI).
// Statuses: BadIdentityTokenInvalid (certificate unreadable), BadUserSignatureInvalid.
uaplex_status verifyX509TokenSignature(std::span<const std::uint8_t> tokenCertificate,
                                       std::string_view algorithm,
                                       std::span<const std::uint8_t> signature,
                                       std::span<const std::uint8_t> serverCertificate,
                                       std::span<const std::uint8_t> serverNonce);

// The asymmetric signature algorithm of a SignatureData algorithm URI; false if unknown.
bool signatureAlgorithmOf(std::string_view uri, AsymmetricSignature& out) noexcept;

}  // namespace uaplex::security
