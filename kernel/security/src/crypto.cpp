// SPDX-License-Identifier: Apache-2.0
// The keyed-state HMAC below uses the low-level SHA API (deprecated, still supported).
#define OPENSSL_SUPPRESS_DEPRECATED
#include <uaplex/security/crypto.hpp>

#include <openssl/sha.h>

#include <openssl/core_names.h>
#include <openssl/err.h>
#include <openssl/rand.h>
#include <openssl/rsa.h>
#include <openssl/x509v3.h>
#include <uaplex/encoding/hex.hpp>

#include <atomic>
#include <cstring>

namespace uaplex::security {

namespace {

constexpr std::string_view kRsaSha1 = "http://www.w3.org/2000/09/xmldsig#rsa-sha1";
constexpr std::string_view kRsaSha256 = "http://www.w3.org/2001/04/xmldsig-more#rsa-sha256";
constexpr std::string_view kRsaPssSha256 = "http://opcfoundation.org/UA/security/rsa-pss-sha2-256";
constexpr std::string_view kRsa15 = "http://www.w3.org/2001/04/xmlenc#rsa-1_5";
constexpr std::string_view kRsaOaep = "http://www.w3.org/2001/04/xmlenc#rsa-oaep";
constexpr std::string_view kRsaOaepSha256 =
    "http://opcfoundation.org/UA/security/rsa-oaep-sha2-256";

// Part 7: key lengths, nonce lengths and algorithms of each policy.
constexpr PolicyInfo kPolicies[] = {
    {"http://opcfoundation.org/UA/SecurityPolicy#Basic256Sha256", "Basic256Sha256", false, false,
     32, 32, 32, 2048, 4096, AsymmetricSignature::RsaPkcs15Sha256,
     AsymmetricEncryption::RsaOaepSha1, kRsaSha256, kRsaOaep, 30},
    {"http://opcfoundation.org/UA/SecurityPolicy#Aes128_Sha256_RsaOaep", "Aes128_Sha256_RsaOaep",
     false, false, 32, 16, 32, 2048, 4096, AsymmetricSignature::RsaPkcs15Sha256,
     AsymmetricEncryption::RsaOaepSha1, kRsaSha256, kRsaOaep, 20},
    {"http://opcfoundation.org/UA/SecurityPolicy#Aes256_Sha256_RsaPss", "Aes256_Sha256_RsaPss",
     false, false, 32, 32, 32, 2048, 4096, AsymmetricSignature::RsaPssSha256,
     AsymmetricEncryption::RsaOaepSha256, kRsaPssSha256, kRsaOaepSha256, 40},
    {"http://opcfoundation.org/UA/SecurityPolicy#Basic128Rsa15", "Basic128Rsa15", true, true, 16,
     16, 16, 1024, 2048, AsymmetricSignature::RsaPkcs15Sha1, AsymmetricEncryption::RsaPkcs15,
     kRsaSha1, kRsa15, 5},
    {"http://opcfoundation.org/UA/SecurityPolicy#Basic256", "Basic256", true, true, 24, 32, 32,
     1024, 2048, AsymmetricSignature::RsaPkcs15Sha1, AsymmetricEncryption::RsaOaepSha1, kRsaSha1,
     kRsaOaep, 10},
};

const EVP_MD* digestOf(AsymmetricSignature a) noexcept {
    return a == AsymmetricSignature::RsaPkcs15Sha1 ? EVP_sha1() : EVP_sha256();
}

bool setupSignature(EVP_PKEY_CTX* pctx, AsymmetricSignature a) noexcept {
    if (a != AsymmetricSignature::RsaPssSha256)
        return EVP_PKEY_CTX_set_rsa_padding(pctx, RSA_PKCS1_PADDING) > 0;
    // RSA-PSS with SHA-256, MGF1-SHA-256 and a 32-byte salt (Part 7 RsaPssSha256).
    return EVP_PKEY_CTX_set_rsa_padding(pctx, RSA_PKCS1_PSS_PADDING) > 0 &&
           EVP_PKEY_CTX_set_rsa_pss_saltlen(pctx, 32) > 0 &&
           EVP_PKEY_CTX_set_rsa_mgf1_md(pctx, EVP_sha256()) > 0;
}

bool setupEncryption(EVP_PKEY_CTX* pctx, AsymmetricEncryption a) noexcept {
    switch (a) {
        case AsymmetricEncryption::RsaPkcs15:
            return EVP_PKEY_CTX_set_rsa_padding(pctx, RSA_PKCS1_PADDING) > 0;
        case AsymmetricEncryption::RsaOaepSha1:
            return EVP_PKEY_CTX_set_rsa_padding(pctx, RSA_PKCS1_OAEP_PADDING) > 0 &&
                   EVP_PKEY_CTX_set_rsa_oaep_md(pctx, EVP_sha1()) > 0 &&
                   EVP_PKEY_CTX_set_rsa_mgf1_md(pctx, EVP_sha1()) > 0;
        case AsymmetricEncryption::RsaOaepSha256:
            return EVP_PKEY_CTX_set_rsa_padding(pctx, RSA_PKCS1_OAEP_PADDING) > 0 &&
                   EVP_PKEY_CTX_set_rsa_oaep_md(pctx, EVP_sha256()) > 0 &&
                   EVP_PKEY_CTX_set_rsa_mgf1_md(pctx, EVP_sha256()) > 0;
    }
    return false;
}

struct PctxDeleter {
    void operator()(EVP_PKEY_CTX* p) const noexcept { EVP_PKEY_CTX_free(p); }
};
struct MdCtxDeleter {
    void operator()(EVP_MD_CTX* p) const noexcept { EVP_MD_CTX_free(p); }
};

}  // namespace

const PolicyInfo* findPolicy(std::string_view uri) noexcept {
    for (const auto& p : kPolicies)
        if (p.uri == uri || p.name == uri) return &p;
    return nullptr;
}

std::span<const PolicyInfo> policies() noexcept {
    return kPolicies;
}

bool pHash(bool sha1, std::span<const std::uint8_t> secret, std::span<const std::uint8_t> seed,
           std::span<std::uint8_t> out) noexcept {
    // A(0) = seed, A(i) = HMAC(secret, A(i-1)); output = HMAC(secret, A(1) + seed) + ...
    Hmac mac;
    if (!mac.init(sha1, secret)) return false;
    const std::size_t mdLen = sha1 ? 20 : 32;
    std::uint8_t a[64], block[64];
    if (!mac.compute({seed}, a)) return false;
    for (std::size_t done = 0; done < out.size();) {
        if (!mac.compute({std::span<const std::uint8_t>(a, mdLen), seed}, block)) return false;
        std::size_t n = std::min(mdLen, out.size() - done);
        std::memcpy(out.data() + done, block, n);
        done += n;
        if (!mac.compute({std::span<const std::uint8_t>(a, mdLen)}, a)) return false;
    }
    return true;
}

Hmac::~Hmac() {
    OPENSSL_cleanse(&state_, sizeof state_);
}

bool Hmac::init(bool sha1, std::span<const std::uint8_t> key) noexcept {
    sha1_ = sha1;
    size_ = sha1 ? 20 : 32;
    // RFC 2104: keys longer than the block are hashed first; both SHA-1 and SHA-256 use
    // 64-byte blocks. The keyed inner and outer states are kept: a message then costs two
    // state copies and no allocation (the EVP digest contexts of OpenSSL 3 allocate on
    // every re-initialisation).
    std::uint8_t k[kBlock] = {}, ipad[kBlock], opad[kBlock];
    if (key.size() > kBlock) {
        unsigned len = 0;
        if (EVP_Digest(key.data(), key.size(), k, &len, sha1 ? EVP_sha1() : EVP_sha256(),
                       nullptr) != 1)
            return false;
    } else if (!key.empty()) {
        std::memcpy(k, key.data(), key.size());
    }
    for (std::size_t i = 0; i < kBlock; ++i) {
        ipad[i] = std::uint8_t(k[i] ^ 0x36);
        opad[i] = std::uint8_t(k[i] ^ 0x5c);
    }
    OPENSSL_cleanse(k, sizeof k);
    bool ok = sha1 ? SHA1_Init(&state_.sha1.inner) == 1 &&
                         SHA1_Update(&state_.sha1.inner, ipad, kBlock) == 1 &&
                         SHA1_Init(&state_.sha1.outer) == 1 &&
                         SHA1_Update(&state_.sha1.outer, opad, kBlock) == 1
                   : SHA256_Init(&state_.sha256.inner) == 1 &&
                         SHA256_Update(&state_.sha256.inner, ipad, kBlock) == 1 &&
                         SHA256_Init(&state_.sha256.outer) == 1 &&
                         SHA256_Update(&state_.sha256.outer, opad, kBlock) == 1;
    OPENSSL_cleanse(ipad, sizeof ipad);
    OPENSSL_cleanse(opad, sizeof opad);
    ready_ = ok;
    return ok;
}

bool Hmac::compute(std::initializer_list<std::span<const std::uint8_t>> parts,
                   std::uint8_t* out) noexcept {
    if (!ready_) return false;
    std::uint8_t inner[32];
    if (sha1_) {
        SHA_CTX c = state_.sha1.inner;
        for (auto p : parts) SHA1_Update(&c, p.data(), p.size());
        SHA1_Final(inner, &c);
        c = state_.sha1.outer;
        SHA1_Update(&c, inner, 20);
        SHA1_Final(out, &c);
        OPENSSL_cleanse(&c, sizeof c);
    } else {
        SHA256_CTX c = state_.sha256.inner;
        for (auto p : parts) SHA256_Update(&c, p.data(), p.size());
        SHA256_Final(inner, &c);
        c = state_.sha256.outer;
        SHA256_Update(&c, inner, 32);
        SHA256_Final(out, &c);
        OPENSSL_cleanse(&c, sizeof c);
    }
    return true;
}

bool randomBytes(std::span<std::uint8_t> out) noexcept {
    return out.empty() || RAND_bytes(out.data(), int(out.size())) == 1;
}

std::shared_ptr<Certificate> Certificate::fromDer(std::span<const std::uint8_t> der) {
    if (der.empty()) return nullptr;
    const unsigned char* p = der.data();
    X509Ptr x(d2i_X509(nullptr, &p, long(der.size())));
    if (!x) return nullptr;
    auto c = std::make_shared<Certificate>();
    std::size_t used = std::size_t(p - der.data());
    c->der.assign(der.data(), der.data() + used);
    c->publicKey.reset(X509_get_pubkey(x.get()));
    if (!c->publicKey || EVP_PKEY_get_base_id(c->publicKey.get()) != EVP_PKEY_RSA) return nullptr;
    unsigned len = 0;
    if (!EVP_Digest(c->der.data(), c->der.size(), c->thumbprint.data(), &len, EVP_sha1(), nullptr))
        return nullptr;
    c->x509 = std::move(x);
    return c;
}

std::size_t Certificate::keyBytes() const noexcept {
    return rsaKeyBytes(publicKey.get());
}

std::string Certificate::subject() const {
    char buf[512];
    X509_NAME_oneline(X509_get_subject_name(x509.get()), buf, sizeof buf);
    return buf;
}

std::string Certificate::applicationUri() const {
    std::string uri;
    auto* names = static_cast<GENERAL_NAMES*>(
        X509_get_ext_d2i(x509.get(), NID_subject_alt_name, nullptr, nullptr));
    if (!names) return uri;
    for (int i = 0; i < sk_GENERAL_NAME_num(names); ++i) {
        const GENERAL_NAME* n = sk_GENERAL_NAME_value(names, i);
        if (n->type == GEN_URI) {
            const ASN1_IA5STRING* s = n->d.uniformResourceIdentifier;
            uri.assign(reinterpret_cast<const char*>(ASN1_STRING_get0_data(s)),
                       std::size_t(ASN1_STRING_length(s)));
            break;
        }
    }
    GENERAL_NAMES_free(names);
    return uri;
}

std::string Certificate::thumbprintHex() const {
    return enc::toHex(thumbprint);
}

std::size_t rsaKeyBytes(EVP_PKEY* key) noexcept {
    return key ? std::size_t(EVP_PKEY_get_size(key)) : 0;
}

std::size_t plainBlockSize(AsymmetricEncryption encryption, std::size_t keyBytes) noexcept {
    std::size_t overhead = encryption == AsymmetricEncryption::RsaPkcs15     ? 11
                           : encryption == AsymmetricEncryption::RsaOaepSha1 ? 42
                                                                             : 66;
    return keyBytes > overhead ? keyBytes - overhead : 0;
}

bool rsaSign(AsymmetricSignature algorithm, EVP_PKEY* key,
             std::initializer_list<std::span<const std::uint8_t>> parts,
             std::span<std::uint8_t> signature) noexcept {
    std::unique_ptr<EVP_MD_CTX, MdCtxDeleter> ctx(EVP_MD_CTX_new());
    EVP_PKEY_CTX* pctx = nullptr;
    if (!ctx || EVP_DigestSignInit(ctx.get(), &pctx, digestOf(algorithm), nullptr, key) != 1 ||
        !setupSignature(pctx, algorithm))
        return false;
    for (auto part : parts)
        if (EVP_DigestSignUpdate(ctx.get(), part.data(), part.size()) != 1) return false;
    std::size_t len = signature.size();
    return EVP_DigestSignFinal(ctx.get(), signature.data(), &len) == 1 && len == signature.size();
}

bool rsaVerify(AsymmetricSignature algorithm, EVP_PKEY* key,
               std::initializer_list<std::span<const std::uint8_t>> parts,
               std::span<const std::uint8_t> signature) noexcept {
    std::unique_ptr<EVP_MD_CTX, MdCtxDeleter> ctx(EVP_MD_CTX_new());
    EVP_PKEY_CTX* pctx = nullptr;
    if (!ctx || EVP_DigestVerifyInit(ctx.get(), &pctx, digestOf(algorithm), nullptr, key) != 1 ||
        !setupSignature(pctx, algorithm))
        return false;
    for (auto part : parts)
        if (EVP_DigestVerifyUpdate(ctx.get(), part.data(), part.size()) != 1) return false;
    bool ok = EVP_DigestVerifyFinal(ctx.get(), signature.data(), signature.size()) == 1;
    ERR_clear_error();
    return ok;
}

bool rsaEncrypt(AsymmetricEncryption algorithm, EVP_PKEY* key, std::span<const std::uint8_t> in,
                std::span<std::uint8_t> out, std::size_t& written) noexcept {
    written = 0;
    const std::size_t keyBytes = rsaKeyBytes(key);
    const std::size_t block = plainBlockSize(algorithm, keyBytes);
    if (block == 0) return false;
    std::unique_ptr<EVP_PKEY_CTX, PctxDeleter> ctx(EVP_PKEY_CTX_new(key, nullptr));
    if (!ctx || EVP_PKEY_encrypt_init(ctx.get()) != 1 || !setupEncryption(ctx.get(), algorithm))
        return false;
    for (std::size_t i = 0; i < in.size(); i += block) {
        std::size_t n = std::min(block, in.size() - i);
        std::size_t len = out.size() - written;
        if (len < keyBytes ||
            EVP_PKEY_encrypt(ctx.get(), out.data() + written, &len, in.data() + i, n) != 1)
            return false;
        written += len;
    }
    return true;
}

namespace {
std::atomic<std::uint64_t> gRsaDecryptions{0};
}

std::uint64_t rsaDecryptions() noexcept {
    return gRsaDecryptions.load(std::memory_order_relaxed);
}

bool rsaDecrypt(AsymmetricEncryption algorithm, EVP_PKEY* key, std::span<const std::uint8_t> in,
                std::span<std::uint8_t> out, std::size_t& written) noexcept {
    gRsaDecryptions.fetch_add(1, std::memory_order_relaxed);
    written = 0;
    const std::size_t keyBytes = rsaKeyBytes(key);
    if (keyBytes == 0 || in.size() % keyBytes != 0) return false;
    std::unique_ptr<EVP_PKEY_CTX, PctxDeleter> ctx(EVP_PKEY_CTX_new(key, nullptr));
    if (!ctx || EVP_PKEY_decrypt_init(ctx.get()) != 1 || !setupEncryption(ctx.get(), algorithm))
        return false;
    std::uint8_t plain[1024];  // RSA keys up to 8192 bits
    if (keyBytes > sizeof plain) return false;
    for (std::size_t i = 0; i < in.size(); i += keyBytes) {
        std::size_t len = sizeof plain;
        if (EVP_PKEY_decrypt(ctx.get(), plain, &len, in.data() + i, keyBytes) != 1) {
            ERR_clear_error();
            return false;
        }
        if (out.size() - written < len) return false;
        // In place is safe: plaintext blocks are shorter than the ciphertext blocks.
        std::memcpy(out.data() + written, plain, len);
        written += len;
    }
    return true;
}

std::string lastError() {
    unsigned long e = ERR_get_error();
    if (e == 0) return "unknown OpenSSL error";
    char buf[256];
    ERR_error_string_n(e, buf, sizeof buf);
    ERR_clear_error();
    return buf;
}

}  // namespace uaplex::security
