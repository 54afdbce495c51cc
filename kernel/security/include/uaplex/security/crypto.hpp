// SPDX-License-Identifier: Apache-2.0
// The cryptography of the OPC UA security policies (Part 7 policy definitions, Part 6 6.7):
// the policy table, the key derivation (P_SHA1 / P_SHA256), RSA signatures and block-wise RSA
// encryption, and X.509 certificates in DER. OpenSSL 3 does the work.
#pragma once

#include <openssl/evp.h>
#include <openssl/sha.h>
#include <openssl/x509.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace uaplex::security {

enum class AsymmetricSignature { RsaPkcs15Sha1, RsaPkcs15Sha256, RsaPssSha256 };
enum class AsymmetricEncryption { RsaPkcs15, RsaOaepSha1, RsaOaepSha256 };

// One SecurityPolicy (Part 7): algorithms and sizes.
struct PolicyInfo {
    std::string_view uri;
    std::string_view name;  // the fragment after '#', as configured
    bool deprecated;        // Basic128Rsa15, Basic256: off unless configured explicitly
    bool sha1Prf;           // P_SHA1 (legacy) instead of P_SHA256; also HMAC-SHA1
    std::size_t signingKeyLength;
    std::size_t encryptingKeyLength;  // AES-128 or AES-256 CBC
    std::size_t nonceLength;
    std::uint32_t minKeyBits, maxKeyBits;  // asymmetric key sizes allowed
    AsymmetricSignature signature;
    AsymmetricEncryption encryption;
    std::string_view signatureUri;   // SignatureData.algorithm
    std::string_view encryptionUri;  // UserIdentityToken.encryptionAlgorithm
    std::uint8_t securityLevel;      // relative strength for EndpointDescription.securityLevel
    std::size_t symmetricSignatureSize() const noexcept { return sha1Prf ? 20 : 32; }
    static constexpr std::size_t kBlockSize = 16;  // AES
};

const PolicyInfo* findPolicy(std::string_view uriOrName) noexcept;
std::span<const PolicyInfo> policies() noexcept;

// P_SHA256 / P_SHA1 of TLS (RFC 5246 5) as Part 6 6.7.5 uses it: fills `out`.
bool pHash(bool sha1, std::span<const std::uint8_t> secret, std::span<const std::uint8_t> seed,
           std::span<std::uint8_t> out) noexcept;

// A keyed HMAC (SHA-1 or SHA-256) reused for many messages.
class Hmac {
  public:
    Hmac() = default;
    Hmac(const Hmac&) = delete;
    Hmac& operator=(const Hmac&) = delete;
    ~Hmac();
    bool init(bool sha1, std::span<const std::uint8_t> key) noexcept;
    // HMAC of the concatenation of `parts` into out[0..size()).
    bool compute(std::initializer_list<std::span<const std::uint8_t>> parts,
                 std::uint8_t* out) noexcept;
    std::size_t size() const noexcept { return size_; }

  private:
    static constexpr std::size_t kBlock = 64;
    struct Sha1States {
        SHA_CTX inner, outer;
    };
    struct Sha256States {
        SHA256_CTX inner, outer;
    };
    union {
        Sha1States sha1;
        Sha256States sha256;
    } state_{};
    bool sha1_ = false, ready_ = false;
    std::size_t size_ = 0;
};

bool randomBytes(std::span<std::uint8_t> out) noexcept;

struct PkeyDeleter {
    void operator()(EVP_PKEY* p) const noexcept { EVP_PKEY_free(p); }
};
struct X509Deleter {
    void operator()(X509* p) const noexcept { X509_free(p); }
};
using PkeyPtr = std::unique_ptr<EVP_PKEY, PkeyDeleter>;
using X509Ptr = std::unique_ptr<X509, X509Deleter>;

using Thumbprint = std::array<std::uint8_t, 20>;  // SHA-1 of the DER

// A parsed certificate and its DER.
struct Certificate {
    X509Ptr x509;
    PkeyPtr publicKey;
    std::vector<std::uint8_t> der;
    Thumbprint thumbprint{};

    // The first certificate of a DER blob (a chain is several concatenated); null if invalid.
    static std::shared_ptr<Certificate> fromDer(std::span<const std::uint8_t> der);
    std::size_t keyBytes() const noexcept;
    std::string subject() const;
    std::string applicationUri() const;  // the first URI of subjectAltName
    std::string thumbprintHex() const;
};

// RSA modulus size in bytes.
std::size_t rsaKeyBytes(EVP_PKEY* key) noexcept;
// Plaintext bytes per RSA block for `encryption` and a key of keyBytes.
std::size_t plainBlockSize(AsymmetricEncryption encryption, std::size_t keyBytes) noexcept;

// Signs the concatenation of `parts`; `signature` must have rsaKeyBytes(key) bytes.
bool rsaSign(AsymmetricSignature algorithm, EVP_PKEY* key,
             std::initializer_list<std::span<const std::uint8_t>> parts,
             std::span<std::uint8_t> signature) noexcept;
bool rsaVerify(AsymmetricSignature algorithm, EVP_PKEY* key,
               std::initializer_list<std::span<const std::uint8_t>> parts,
               std::span<const std::uint8_t> signature) noexcept;
// Block-wise RSA (each plainBlockSize input block becomes one keyBytes output block).
// `out` must have room for every block; `written` returns the bytes written.
bool rsaEncrypt(AsymmetricEncryption algorithm, EVP_PKEY* key, std::span<const std::uint8_t> in,
                std::span<std::uint8_t> out, std::size_t& written) noexcept;
bool rsaDecrypt(AsymmetricEncryption algorithm, EVP_PKEY* key, std::span<const std::uint8_t> in,
                std::span<std::uint8_t> out, std::size_t& written) noexcept;
// RSA private-key decryptions run so far (tests check that refused input never reaches one).
std::uint64_t rsaDecryptions() noexcept;

// The last OpenSSL error as text (for logs and the CLI).
std::string lastError();

}  // namespace uaplex::security
