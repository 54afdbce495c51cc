#include "security/identity.hpp"

#include <cstring>
#include <vector>

namespace uaplex::security {

bool signatureAlgorithmOf(std::string_view uri, AsymmetricSignature& out) noexcept {
    for (const auto& p : policies())
        if (p.signatureUri == uri) {
            out = p.signature;
            return true;
        }
    return false;
}

uaplex_status decryptUserPassword(EVP_PKEY* serverKey, std::string_view encryptionAlgorithm,
                                  std::span<const std::uint8_t> encrypted,
                                  std::span<const std::uint8_t> serverNonce,
                                  std::string& password) {
    password.clear();
    if (encryptionAlgorithm.empty()) {
        password.assign(reinterpret_cast<const char*>(encrypted.data()), encrypted.size());
        return UAPLEX_Good;
    }
    const PolicyInfo* policy = nullptr;
    for (const auto& p : policies())
        if (p.encryptionUri == encryptionAlgorithm) policy = &p;
    if (!policy || !serverKey) return UAPLEX_BadIdentityTokenInvalid;
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

uaplex_status verifyX509TokenSignature(std::span<const std::uint8_t> tokenCertificate,
                                       std::string_view algorithm,
                                       std::span<const std::uint8_t> signature,
                                       std::span<const std::uint8_t> serverCertificate,
                                       std::span<const std::uint8_t> serverNonce) {
    auto cert = Certificate::fromDer(tokenCertificate);
    if (!cert) return UAPLEX_BadIdentityTokenInvalid;
    AsymmetricSignature a;
    if (!signatureAlgorithmOf(algorithm, a)) return UAPLEX_BadUserSignatureInvalid;
    return rsaVerify(a, cert->publicKey.get(), {serverCertificate, serverNonce}, signature)
               ? UAPLEX_Good
               : UAPLEX_BadUserSignatureInvalid;
}

}  // namespace uaplex::security
