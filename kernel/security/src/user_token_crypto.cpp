// SPDX-License-Identifier: Apache-2.0
#include <uaplex/security/user_token_crypto.hpp>

#include <array>
#include <cstring>
#include <mutex>
#include <vector>

#include <uaplex/security/channel_security.hpp>

namespace uaplex::security {

bool signatureAlgorithmFor(std::string_view policyUri, std::string_view algorithmUri,
                           AsymmetricSignature& out) noexcept {
    const PolicyInfo* policy = findPolicy(policyUri);
    if (!policy || policy->signatureUri != algorithmUri) return false;
    out = policy->signature;
    return true;
}

uaplex_status decryptUserPassword(EVP_PKEY* serverKey, std::string_view tokenPolicyUri,
                                  std::string_view encryptionAlgorithm,
                                  std::span<const std::uint8_t> encrypted,
                                  std::span<const std::uint8_t> serverNonce,
                                  std::string& password) {
    password.clear();
    // The token policy decides the algorithm; PKCS#1 v1.5 (a padding oracle on the server
    // key) only runs where Basic128Rsa15 is that policy.
    const PolicyInfo* policy = findPolicy(tokenPolicyUri);
    if (!policy || policy->encryptionUri != encryptionAlgorithm || !serverKey)
        return UAPLEX_BadIdentityTokenInvalid;
    std::vector<std::uint8_t> plain(encrypted.size());
    std::size_t n = 0;
    if (!rsaDecrypt(policy->encryption, serverKey, encrypted, plain, n) || n < 4)
        return UAPLEX_BadIdentityTokenInvalid;
    std::uint32_t length;
    std::memcpy(&length, plain.data(), 4);
    if (length > n - 4 || length < serverNonce.size()) return UAPLEX_BadIdentityTokenInvalid;
    const std::uint8_t* nonce = plain.data() + 4 + length - serverNonce.size();
    if (serverNonce.empty() || std::memcmp(nonce, serverNonce.data(), serverNonce.size()) != 0)
        return UAPLEX_BadNonceInvalid;
    password.assign(reinterpret_cast<const char*>(plain.data() + 4), length - serverNonce.size());
    return UAPLEX_Good;
}

uaplex_status verifyX509TokenSignature(std::string_view tokenPolicyUri,
                                       std::span<const std::uint8_t> tokenCertificate,
                                       std::string_view algorithm,
                                       std::span<const std::uint8_t> signature,
                                       std::span<const std::uint8_t> serverCertificate,
                                       std::span<const std::uint8_t> serverNonce) {
    auto cert = Certificate::fromDer(tokenCertificate);
    if (!cert) return UAPLEX_BadIdentityTokenInvalid;
    AsymmetricSignature a;
    if (!signatureAlgorithmFor(tokenPolicyUri, algorithm, a)) return UAPLEX_BadUserSignatureInvalid;
    return rsaVerify(a, cert->publicKey.get(), {serverCertificate, serverNonce}, signature)
               ? UAPLEX_Good
               : UAPLEX_BadUserSignatureInvalid;
}

uaplex_status checkSessionClientNonce(std::span<const std::uint8_t> nonce) noexcept {
    if (nonce.size() < 32 || !nonceLooksRandom(nonce)) return UAPLEX_BadNonceInvalid;
    // The recent nonces by SHA-256 prefix (16 bytes: a collision of random nonces is out of
    // reach); CreateSession is no steady-state request, a lock is fine here.
    using Digest = std::array<std::uint8_t, 16>;
    static std::mutex mutex;
    static std::array<Digest, kRecentSessionNonces> recent{};
    static std::size_t next = 0, used = 0;
    std::uint8_t md[EVP_MAX_MD_SIZE];
    unsigned len = 0;
    if (EVP_Digest(nonce.data(), nonce.size(), md, &len, EVP_sha256(), nullptr) != 1)
        return UAPLEX_BadNonceInvalid;
    Digest d;
    std::memcpy(d.data(), md, d.size());
    std::lock_guard lock(mutex);
    for (std::size_t i = 0; i < used; ++i)
        if (recent[i] == d) return UAPLEX_BadNonceInvalid;
    recent[next] = d;
    next = (next + 1) % recent.size();
    if (used < recent.size()) ++used;
    return UAPLEX_Good;
}

}  // namespace uaplex::security
