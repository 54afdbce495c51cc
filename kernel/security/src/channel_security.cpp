// SPDX-License-Identifier: Apache-2.0
#include <uaplex/security/channel_security.hpp>

#include <openssl/crypto.h>

#include <cstring>

namespace uaplex::security {

using securechannel::SecurityMode;

namespace {

void writeU32(std::uint8_t* p, std::uint32_t v) noexcept {
    std::memcpy(p, &v, 4);
}

struct CipherCtxDeleter {
    void operator()(EVP_CIPHER_CTX* c) const noexcept { EVP_CIPHER_CTX_free(c); }
};

// The symmetric keys of one token for one direction (Part 6 6.7.5).
struct DirectionKeys {
    Hmac mac;
    std::uint8_t key[32];
    std::uint8_t iv[16];
};

struct TokenKeys {
    std::uint32_t tokenId = 0;
    DirectionKeys receive, send;
};

class RsaAesChannel final : public securechannel::ChannelSecurity {
  public:
    RsaAesChannel(const PolicyInfo& policy, std::shared_ptr<Certificate> own, EVP_PKEY* ownKey,
                  PeerValidator validate, ProvenRefusal proven, bool client)
        : policy_(policy),
          own_(std::move(own)),
          ownKey_(ownKey),
          validate_(std::move(validate)),
          proven_(std::move(proven)),
          client_(client),
          cipher_(policy.encryptingKeyLength == 16 ? EVP_aes_128_cbc() : EVP_aes_256_cbc()),
          decrypt_(EVP_CIPHER_CTX_new()),
          encrypt_(EVP_CIPHER_CTX_new()) {
        // The cipher is fixed once; each chunk then only sets key and IV (no allocation).
        ready_ = decrypt_ && encrypt_ &&
                 EVP_DecryptInit_ex(decrypt_.get(), cipher_, nullptr, nullptr, nullptr) == 1 &&
                 EVP_EncryptInit_ex(encrypt_.get(), cipher_, nullptr, nullptr, nullptr) == 1;
    }

    std::string_view uri() const noexcept override { return policy_.uri; }
    std::size_t nonceLength() const noexcept override { return policy_.nonceLength; }

    void setRemote(std::shared_ptr<Certificate> remote) { remote_ = std::move(remote); }

    uaplex_status openAsymmetric(std::span<std::uint8_t> chunk, std::size_t encryptedOffset,
                                 std::span<const std::uint8_t> senderCertificate,
                                 std::span<const std::uint8_t> receiverThumbprint,
                                 std::size_t& bodyEnd) noexcept override {
        if (!own_ || !ownKey_) return UAPLEX_BadSecurityChecksFailed;
        std::shared_ptr<Certificate> sender;
        try {
            sender = Certificate::fromDer(senderCertificate);
        } catch (...) {
            return UAPLEX_BadOutOfMemory;
        }
        if (!sender) return UAPLEX_BadCertificateInvalid;
        PeerVerdict verdict;
        if (remote_) {
            // A renewal comes from the certificate the channel was opened with, and that
            // certificate must still pass: removed from the trust list, expired or revoked
            // since, it ends the channel here.
            if (sender->der != remote_->der) return UAPLEX_BadCertificateInvalid;
        } else {
            std::size_t bits = sender->keyBytes() * 8;
            if (bits < policy_.minKeyBits || bits > policy_.maxKeyBits)
                return UAPLEX_BadCertificatePolicyCheckFailed;
        }
        if (validate_) {
            try {
                verdict = validate_(*sender);
            } catch (...) {
                return UAPLEX_BadOutOfMemory;  // the store could not be read
            }
            // Refused: the peer gets the status now, unless the certificate is to be recorded,
            // which needs the proof of possession below first.
            if (verdict.status != UAPLEX_Good && (!verdict.recordWhenProven || remote_ || !proven_))
                return verdict.status;
        }
        if (receiverThumbprint.size() != own_->thumbprint.size() ||
            std::memcmp(receiverThumbprint.data(), own_->thumbprint.data(), 20) != 0)
            return refused(verdict, UAPLEX_BadCertificateInvalid);
        if (encryptedOffset > chunk.size()) return refused(verdict, UAPLEX_BadSecurityChecksFailed);
        std::size_t plain = 0;
        auto cipherText = chunk.subspan(encryptedOffset);
        if (!rsaDecrypt(policy_.encryption, ownKey_, cipherText, cipherText, plain))
            return refused(verdict, UAPLEX_BadSecurityChecksFailed);
        const std::size_t sigSize = sender->keyBytes();
        const bool extra = own_->keyBytes() > 256;
        if (plain < sigSize + 1 + extra + 8)
            return refused(verdict, UAPLEX_BadSecurityChecksFailed);
        std::size_t sigStart = encryptedOffset + plain - sigSize;
        if (!rsaVerify(policy_.signature, sender->publicKey.get(), {chunk.first(sigStart)},
                       chunk.subspan(sigStart, sigSize)))
            return refused(verdict, UAPLEX_BadSecurityChecksFailed);
        if (verdict.status != UAPLEX_Good) {
            // The sender holds the certificate's key: only now is it worth keeping for review.
            try {
                proven_(*sender);
            } catch (...) {
            }
            return verdict.status;
        }
        std::size_t padEnd = sigStart;
        std::size_t count = 0;
        if (extra) count = std::size_t(chunk[--padEnd]) << 8;
        std::uint8_t low = chunk[padEnd - 1];
        count |= low;
        if (count + 1 > padEnd - encryptedOffset - 8) return UAPLEX_BadSecurityChecksFailed;
        for (std::size_t i = padEnd - 1 - count; i < padEnd; ++i)
            if (chunk[i] != low) return UAPLEX_BadSecurityChecksFailed;
        bodyEnd = padEnd - 1 - count;
        if (!remote_) remote_ = std::move(sender);
        return UAPLEX_Good;
    }

    std::span<const std::uint8_t> localCertificate() const noexcept override {
        return own_ ? std::span<const std::uint8_t>(own_->der) : std::span<const std::uint8_t>{};
    }
    std::span<const std::uint8_t> remoteThumbprint() const noexcept override {
        return remote_ ? std::span<const std::uint8_t>(remote_->thumbprint)
                       : std::span<const std::uint8_t>{};
    }
    std::span<const std::uint8_t> remoteCertificate() const noexcept override {
        return remote_ ? std::span<const std::uint8_t>(remote_->der)
                       : std::span<const std::uint8_t>{};
    }

    // Padding count and block counts of an asymmetric chunk (Part 6 6.7.2.5).
    struct AsymmetricLayout {
        std::size_t padding, extra, sigSize, plainTotal, cipherTotal;
    };
    AsymmetricLayout layout(std::size_t plainLength) const noexcept {
        AsymmetricLayout l{};
        const std::size_t remoteBytes = remote_ ? remote_->keyBytes() : 0;
        const std::size_t block = plainBlockSize(policy_.encryption, remoteBytes);
        l.sigSize = rsaKeyBytes(ownKey_);
        l.extra = remoteBytes > 256 ? 1 : 0;
        if (block == 0) return l;
        std::size_t x = plainLength + 1 + l.extra + l.sigSize;
        l.padding = (block - x % block) % block;
        l.plainTotal = x + l.padding;
        l.cipherTotal = l.plainTotal / block * remoteBytes;
        return l;
    }

    std::size_t asymmetricSize(std::size_t encryptedOffset,
                               std::size_t plainLength) const noexcept override {
        auto l = layout(plainLength);
        return encryptedOffset + std::max(l.plainTotal, l.cipherTotal);
    }

    uaplex_status secureAsymmetric(std::span<std::uint8_t> buffer, std::size_t encryptedOffset,
                                   std::size_t& length) noexcept override {
        if (!remote_ || !ownKey_) return UAPLEX_BadSecurityChecksFailed;
        auto l = layout(length - encryptedOffset);
        if (l.cipherTotal == 0 || buffer.size() < encryptedOffset + l.plainTotal ||
            buffer.size() < encryptedOffset + l.cipherTotal)
            return UAPLEX_BadInternalError;
        std::uint8_t* p = buffer.data();
        std::size_t n = length;
        std::uint8_t low = std::uint8_t(l.padding & 0xff);
        p[n++] = low;
        std::memset(p + n, low, l.padding);
        n += l.padding;
        if (l.extra) p[n++] = std::uint8_t(l.padding >> 8);
        writeU32(p + 4, std::uint32_t(encryptedOffset + l.cipherTotal));
        if (!rsaSign(policy_.signature, ownKey_, {buffer.first(n)}, buffer.subspan(n, l.sigSize)))
            return UAPLEX_BadSecurityChecksFailed;
        n += l.sigSize;
        try {
            std::vector<std::uint8_t> out(l.cipherTotal);
            std::size_t written = 0;
            if (!rsaEncrypt(policy_.encryption, remote_->publicKey.get(),
                            buffer.subspan(encryptedOffset, n - encryptedOffset), out, written) ||
                written != l.cipherTotal)
                return UAPLEX_BadSecurityChecksFailed;
            std::memcpy(p + encryptedOffset, out.data(), written);
        } catch (...) {
            return UAPLEX_BadOutOfMemory;
        }
        length = encryptedOffset + l.cipherTotal;
        return UAPLEX_Good;
    }

    bool randomNonce(std::span<std::uint8_t> out) noexcept override { return randomBytes(out); }

    uaplex_status deriveKeys(std::uint32_t tokenId, std::span<const std::uint8_t> clientNonce,
                             std::span<const std::uint8_t> serverNonce) noexcept override {
        if (clientNonce.size() != policy_.nonceLength || serverNonce.size() != policy_.nonceLength)
            return UAPLEX_BadNonceInvalid;
        // The peer's nonce seeds the keys: one without entropy, or one this channel has seen
        // in a recent OPN, is refused (a replayed or constant nonce repeats the keys).
        auto remoteNonce = client_ ? serverNonce : clientNonce;
        if (!nonceLooksRandom(remoteNonce) || remoteNonce.size() > kNonceMax)
            return UAPLEX_BadNonceInvalid;
        for (const auto& seen : recentNonces_)
            if (seen.length == remoteNonce.size() &&
                std::memcmp(seen.bytes, remoteNonce.data(), seen.length) == 0)
                return UAPLEX_BadNonceInvalid;
        // Replace the older of the two slots; the other stays for the overlap.
        TokenKeys& slot = tokens_[0].tokenId == 0                   ? tokens_[0]
                          : tokens_[1].tokenId == 0                 ? tokens_[1]
                          : tokens_[0].tokenId < tokens_[1].tokenId ? tokens_[0]
                                                                    : tokens_[1];
        // Client keys: secret ServerNonce, seed ClientNonce; server keys the other way round.
        DirectionKeys& clientSide = client_ ? slot.send : slot.receive;
        DirectionKeys& serverSide = client_ ? slot.receive : slot.send;
        if (!derive(serverNonce, clientNonce, clientSide) ||
            !derive(clientNonce, serverNonce, serverSide))
            return UAPLEX_BadSecurityChecksFailed;
        slot.tokenId = tokenId;
        auto& keep = recentNonces_[nextNonce_++ % kRecentNonces];
        keep.length = remoteNonce.size();
        std::memcpy(keep.bytes, remoteNonce.data(), remoteNonce.size());
        return UAPLEX_Good;
    }

    std::size_t symmetricOverhead(SecurityMode mode) const noexcept override {
        std::size_t sig = policy_.symmetricSignatureSize();
        return mode == SecurityMode::SignAndEncrypt ? sig + PolicyInfo::kBlockSize : sig;
    }

    uaplex_status verifySymmetric(std::uint32_t tokenId, SecurityMode mode,
                                  std::span<std::uint8_t> chunk, std::size_t bodyOffset,
                                  std::size_t& bodyLength) noexcept override {
        TokenKeys* t = find(tokenId);
        if (!t) return UAPLEX_BadSecureChannelTokenUnknown;
        const std::size_t sig = policy_.symmetricSignatureSize();
        if (chunk.size() < bodyOffset + 8 + sig) return UAPLEX_BadSecurityChecksFailed;
        const bool encrypted = mode == SecurityMode::SignAndEncrypt;
        if (encrypted) {
            std::size_t n = chunk.size() - bodyOffset;
            if (n % PolicyInfo::kBlockSize != 0) return UAPLEX_BadSecurityChecksFailed;
            int out = 0;
            if (!ready_ ||
                EVP_DecryptInit_ex(decrypt_.get(), nullptr, nullptr, t->receive.key,
                                   t->receive.iv) != 1 ||
                EVP_CIPHER_CTX_set_padding(decrypt_.get(), 0) != 1 ||
                EVP_DecryptUpdate(decrypt_.get(), chunk.data() + bodyOffset, &out,
                                  chunk.data() + bodyOffset, int(n)) != 1)
                return UAPLEX_BadSecurityChecksFailed;
        }
        std::size_t sigStart = chunk.size() - sig;
        std::uint8_t mac[64];
        if (!t->receive.mac.compute({chunk.first(sigStart)}, mac) ||
            CRYPTO_memcmp(mac, chunk.data() + sigStart, sig) != 0)
            return UAPLEX_BadSecurityChecksFailed;
        std::size_t end = sigStart;
        if (encrypted) {
            std::uint8_t count = chunk[end - 1];
            if (std::size_t(count) + 1 > end - bodyOffset - 8)
                return UAPLEX_BadSecurityChecksFailed;
            for (std::size_t i = end - 1 - count; i < end; ++i)
                if (chunk[i] != count) return UAPLEX_BadSecurityChecksFailed;
            end -= std::size_t(count) + 1;
        }
        bodyLength = end - bodyOffset;
        return UAPLEX_Good;
    }

    uaplex_status secureSymmetric(std::uint32_t tokenId, SecurityMode mode,
                                  std::span<std::uint8_t> chunk, std::size_t bodyOffset,
                                  std::size_t& length) noexcept override {
        TokenKeys* t = find(tokenId);
        if (!t) return UAPLEX_BadSecureChannelTokenUnknown;
        const std::size_t sig = policy_.symmetricSignatureSize();
        const bool encrypted = mode == SecurityMode::SignAndEncrypt;
        std::uint8_t* p = chunk.data();
        std::size_t n = length;
        if (encrypted) {
            std::size_t x = n - bodyOffset + 1 + sig;
            std::size_t pad =
                (PolicyInfo::kBlockSize - x % PolicyInfo::kBlockSize) % PolicyInfo::kBlockSize;
            if (chunk.size() < n + 1 + pad + sig) return UAPLEX_BadInternalError;
            std::memset(p + n, int(pad), pad + 1);
            n += pad + 1;
        } else if (chunk.size() < n + sig) {
            return UAPLEX_BadInternalError;
        }
        writeU32(p + 4, std::uint32_t(n + sig));
        if (!t->send.mac.compute({chunk.first(n)}, p + n)) return UAPLEX_BadSecurityChecksFailed;
        n += sig;
        if (encrypted) {
            int out = 0;
            if (!ready_ ||
                EVP_EncryptInit_ex(encrypt_.get(), nullptr, nullptr, t->send.key, t->send.iv) !=
                    1 ||
                EVP_CIPHER_CTX_set_padding(encrypt_.get(), 0) != 1 ||
                EVP_EncryptUpdate(encrypt_.get(), p + bodyOffset, &out, p + bodyOffset,
                                  int(n - bodyOffset)) != 1)
                return UAPLEX_BadSecurityChecksFailed;
        }
        length = n;
        return UAPLEX_Good;
    }

  private:
    // The peer gets the verdict's status when it had one; otherwise the check's.
    static uaplex_status refused(const PeerVerdict& verdict, uaplex_status st) noexcept {
        return verdict.status != UAPLEX_Good ? verdict.status : st;
    }
    bool derive(std::span<const std::uint8_t> secret, std::span<const std::uint8_t> seed,
                DirectionKeys& k) noexcept {
        const std::size_t s = policy_.signingKeyLength, e = policy_.encryptingKeyLength;
        std::uint8_t material[32 + 32 + 16];
        std::span<std::uint8_t> out(material, s + e + PolicyInfo::kBlockSize);
        if (!pHash(policy_.sha1Prf, secret, seed, out)) return false;
        std::memcpy(k.key, material + s, e);
        std::memcpy(k.iv, material + s + e, PolicyInfo::kBlockSize);
        return k.mac.init(policy_.sha1Prf, {material, s});
    }
    TokenKeys* find(std::uint32_t tokenId) noexcept {
        for (auto& t : tokens_)
            if (t.tokenId == tokenId && tokenId != 0) return &t;
        return nullptr;
    }

    const PolicyInfo& policy_;
    std::shared_ptr<Certificate> own_;
    EVP_PKEY* ownKey_;
    PeerValidator validate_;
    ProvenRefusal proven_;
    bool client_;
    std::shared_ptr<Certificate> remote_;
    const EVP_CIPHER* cipher_;
    std::unique_ptr<EVP_CIPHER_CTX, CipherCtxDeleter> decrypt_, encrypt_;
    TokenKeys tokens_[2];
    // The peer nonces of the last OPNs (issue and renewals).
    static constexpr std::size_t kNonceMax = 64, kRecentNonces = 4;
    struct SeenNonce {
        std::size_t length = 0;
        std::uint8_t bytes[kNonceMax];
    };
    SeenNonce recentNonces_[kRecentNonces];
    std::size_t nextNonce_ = 0;
    bool ready_ = false;
};

}  // namespace

bool nonceLooksRandom(std::span<const std::uint8_t> nonce) noexcept {
    if (nonce.empty()) return false;
    for (std::uint8_t b : nonce)
        if (b != nonce[0]) return true;
    return false;
}

std::unique_ptr<securechannel::ChannelSecurity> makeChannelSecurity(
    const PolicyInfo& policy, std::shared_ptr<Certificate> own, EVP_PKEY* ownKey,
    PeerValidator validate, ProvenRefusal proven) {
    return std::make_unique<RsaAesChannel>(policy, std::move(own), ownKey, std::move(validate),
                                           std::move(proven), false);
}

std::unique_ptr<securechannel::ChannelSecurity> makeClientChannelSecurity(
    const PolicyInfo& policy, std::shared_ptr<Certificate> own, EVP_PKEY* ownKey,
    std::shared_ptr<Certificate> server) {
    auto c =
        std::make_unique<RsaAesChannel>(policy, std::move(own), ownKey, nullptr, nullptr, true);
    c->setRemote(std::move(server));
    return c;
}

Provider::Provider(Pki& pki, std::vector<OfferedPolicy> offered)
    : pki_(pki), offered_(std::move(offered)) {}

std::unique_ptr<securechannel::ChannelSecurity> Provider::create(std::string_view policyUri) {
    for (const auto& o : offered_) {
        if (!o.policy || o.policy->uri != policyUri) continue;
        const PolicyInfo* policy = o.policy;
        return makeChannelSecurity(
            *policy, pki_.own(), pki_.privateKey(),
            [this, policy](const Certificate& c) -> PeerVerdict {
                uaplex_status st = pki_.validate(c, {}, policy);
                if (st == UAPLEX_Good) return st;
                if (onRefused) onRefused(st, c);
                // Part 6: an untrusted peer sees only BadSecurityChecksFailed (the reason is
                // audited); its certificate is kept for review once it proved its key.
                if (st == UAPLEX_BadCertificateUntrusted)
                    return PeerVerdict(UAPLEX_BadSecurityChecksFailed, true);
                return st;
            },
            [this](const Certificate& c) {
                if (pki_.reject(c) && onRecorded) onRecorded(c);
            });
    }
    return nullptr;
}

bool Provider::offers(std::string_view policyUri, SecurityMode mode) const noexcept {
    for (const auto& o : offered_) {
        if (!o.policy) {
            if (policyUri == securechannel::kSecurityPolicyNone && mode == SecurityMode::None)
                return true;
            continue;
        }
        if (o.policy->uri != policyUri) continue;
        if ((mode == SecurityMode::Sign && o.sign) ||
            (mode == SecurityMode::SignAndEncrypt && o.signAndEncrypt))
            return true;
    }
    return false;
}

}  // namespace uaplex::security
