// SPDX-License-Identifier: Apache-2.0
// What the session layer needs to check user identity tokens (Part 4 7.41) with the server's
// key: the legacy encrypted password format and X509 identity token signatures. The
// algorithms always come from the token's (or the channel's) SecurityPolicy, never from
// the request: a client cannot pick a weaker one (rsa-1_5, rsa-sha1) than the policy's.
#pragma once

#include <uaplex/statuscodes.h>

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include <uaplex/security/crypto.hpp>

namespace uaplex::security {

// Decrypts a UserNameIdentityToken password (Part 4 7.41.2.2 legacy format: UInt32 length,
// password, server nonce) encrypted for the server key, and checks that the appended nonce
// is `serverNonce`. `encryptionAlgorithm` must be the encryption URI of `tokenPolicyUri`
// (Part 7): any other algorithm is refused before any decryption runs.
// Statuses: BadIdentityTokenInvalid (no or another algorithm, undecryptable, malformed),
// BadNonceInvalid (wrong nonce).
uaplex_status decryptUserPassword(EVP_PKEY* serverKey, std::string_view tokenPolicyUri,
                                  std::string_view encryptionAlgorithm,
                                  std::span<const std::uint8_t> encrypted,
                                  std::span<const std::uint8_t> serverNonce, std::string& password);

// Verifies an X509IdentityToken's userTokenSignature: `signature` by the token certificate's
// key over serverCertificate + serverNonce with the signature algorithm of `tokenPolicyUri`;
// `algorithm` (the SignatureData algorithm URI) must name it.
// Statuses: BadIdentityTokenInvalid (certificate unreadable), BadUserSignatureInvalid.
uaplex_status verifyX509TokenSignature(std::string_view tokenPolicyUri,
                                       std::span<const std::uint8_t> tokenCertificate,
                                       std::string_view algorithm,
                                       std::span<const std::uint8_t> signature,
                                       std::span<const std::uint8_t> serverCertificate,
                                       std::span<const std::uint8_t> serverNonce);

// The asymmetric signature algorithm of `policyUri` when `algorithmUri` names it (a
// SignatureData of a client or user token); false for any other algorithm or policy.
bool signatureAlgorithmFor(std::string_view policyUri, std::string_view algorithmUri,
                           AsymmetricSignature& out) noexcept;

// CreateSession's clientNonce on a secured channel (Part 4 5.6.2): at least 32 bytes, not all
// one byte value, and none of the last kRecentSessionNonces nonces the server accepted.
// Good or BadNonceInvalid; an accepted nonce is remembered.
inline constexpr std::size_t kRecentSessionNonces = 1024;
uaplex_status checkSessionClientNonce(std::span<const std::uint8_t> nonce) noexcept;

}  // namespace uaplex::security
