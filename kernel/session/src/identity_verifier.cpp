// SPDX-License-Identifier: Apache-2.0
#include <uaplex/session/identity_verifier.hpp>

#include <openssl/evp.h>
#include <openssl/x509.h>
#include <uaplex/encoding/hex.hpp>

namespace uaplex::session {

namespace {

template <class T>
bool is(const ua::ExtensionObject& eo) noexcept {
    return eo.object != nullptr && eo.data_type == enc::dataTypeOf<T>();
}

std::span<const std::uint8_t> bytes(const ua::ByteString& b) noexcept {
    return b.length > 0 && b.data ? std::span<const std::uint8_t>(b.data, std::size_t(b.length))
                                  : std::span<const std::uint8_t>{};
}

}  // namespace

bool certificateIdentity(std::span<const std::uint8_t> der, std::string& thumbprint,
                         std::string& subject) {
    if (der.empty() || der.size() > (1u << 20)) return false;
    const unsigned char* p = der.data();
    X509* cert = d2i_X509(nullptr, &p, long(der.size()));
    if (!cert) return false;
    // The thumbprint is over the DER bytes the client sent (the whole certificate).
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int n = 0;
    bool ok = EVP_Digest(der.data(), std::size_t(p - der.data()), md, &n, EVP_sha1(), nullptr) == 1;
    thumbprint.clear();
    if (ok) enc::appendHex(thumbprint, {md, n}, enc::HexCase::Upper);
    subject.clear();
    if (ok) {
        BIO* bio = BIO_new(BIO_s_mem());
        ok = bio && X509_NAME_print_ex(bio, X509_get_subject_name(cert), 0, XN_FLAG_RFC2253) >= 0;
        if (ok) {
            char* data = nullptr;
            long len = BIO_get_mem_data(bio, &data);
            subject.assign(data, std::size_t(len));
        }
        BIO_free(bio);
    }
    X509_free(cert);
    return ok;
}

IdentityVerifier::IdentityVerifier(const config::AccessSection& cfg,
                                   std::shared_ptr<IdentityCrypto> crypto)
    : cfg_(cfg), anonymousRoles_(roleMask(cfg.anonymous_roles)), crypto_(std::move(crypto)) {
    if (!crypto_) crypto_ = std::make_shared<NoIdentityCrypto>();
    if (cfg_.anonymous) policies_.push_back({kAnonymousPolicyId, IdentityKind::Anonymous, {}});
    if (!cfg_.users_file.empty()) {
        users_ = std::make_unique<UserStore>(cfg_.users_file);
        policies_.push_back(
            {kUserNamePolicyId, IdentityKind::UserName, cfg_.username_security_policy});
    }
    if (!cfg_.certificates.empty())
        policies_.push_back(
            {kCertificatePolicyId, IdentityKind::X509, cfg_.certificate_security_policy});
}

void IdentityVerifier::reloadUsers() {
    if (users_) users_->reload();
}

const TokenPolicy* IdentityVerifier::policy(IdentityKind kind) const noexcept {
    for (const auto& p : policies_)
        if (p.kind == kind) return &p;
    return nullptr;
}

uaplex_status IdentityVerifier::verify(const ua::ExtensionObject& token,
                                       const ActivationContext& ctx,
                                       UserIdentity& out) const noexcept {
    try {
        // A token of a kind no policy offers is rejected; a known kind with a policyId the
        // server did not publish is invalid (Part 4 5.6.3, 7.41).
        auto check = [&](IdentityKind kind, const ua::String& policyId,
                         const TokenPolicy*& p) -> uaplex_status {
            p = policy(kind);
            if (!p) return UAPLEX_BadIdentityTokenRejected;
            // An empty policyId on an anonymous token is tolerated (older clients).
            if (kind == IdentityKind::Anonymous && policyId.length <= 0) return UAPLEX_Good;
            return ua::view(policyId) == p->policyId ? UAPLEX_Good : UAPLEX_BadIdentityTokenInvalid;
        };
        const TokenPolicy* p = nullptr;
        bool nullToken = token.object == nullptr && token.encoding == UAPLEX_EXTENSIONOBJECT_NOBODY;
        if (nullToken || is<ua::AnonymousIdentityToken>(token)) {
            ua::String none = ua::nullString();
            const ua::String& id =
                nullToken ? none
                          : static_cast<const ua::AnonymousIdentityToken*>(token.object)->policyId;
            if (uaplex_status st = check(IdentityKind::Anonymous, id, p); st != UAPLEX_Good)
                return st;
            out = UserIdentity{IdentityKind::Anonymous, "anonymous", {}, anonymousRoles_};
            return UAPLEX_Good;
        }
        if (is<ua::UserNameIdentityToken>(token)) {
            const auto& t = *static_cast<const ua::UserNameIdentityToken*>(token.object);
            if (uaplex_status st = check(IdentityKind::UserName, t.policyId, p); st != UAPLEX_Good)
                return st;
            // Bounds keep a hostile token from making the hash expensive.
            if (t.userName.length <= 0 || t.userName.length > 256 || t.password.length > 4096)
                return UAPLEX_BadIdentityTokenInvalid;
            std::string_view policyUri = tokenPolicyUri(*p, ctx.channelSecurityPolicyUri);
            std::string password;
            if (t.encryptionAlgorithm.length <= 0) {
                // A password in clear only where the policy says None.
                if (policyUri != kSecurityPolicyNoneUri) return UAPLEX_BadIdentityTokenInvalid;
                auto b = bytes(t.password);
                password.assign(reinterpret_cast<const char*>(b.data()), b.size());
            } else {
                uaplex_status st =
                    crypto_->decryptPassword(policyUri, ua::view(t.encryptionAlgorithm),
                                             bytes(t.password), ctx.serverNonce, password);
                if (st != UAPLEX_Good) return st;
            }
            std::vector<std::string> roles;
            std::string_view name = ua::view(t.userName);
            // Unknown name and wrong password answer alike.
            if (!users_ || !users_->authenticate(name, password, roles))
                return UAPLEX_BadUserAccessDenied;
            out = UserIdentity{IdentityKind::UserName, "user:" + std::string(name),
                               std::string(name), roleMask(roles) | kAuthenticatedUserRole};
            return UAPLEX_Good;
        }
        if (is<ua::X509IdentityToken>(token)) {
            const auto& t = *static_cast<const ua::X509IdentityToken*>(token.object);
            if (uaplex_status st = check(IdentityKind::X509, t.policyId, p); st != UAPLEX_Good)
                return st;
            std::string thumbprint, subject;
            if (!certificateIdentity(bytes(t.certificateData), thumbprint, subject))
                return UAPLEX_BadIdentityTokenInvalid;
            // A thumbprint mapping pins this very certificate; a subject mapping only names
            // who a certificate of the user trust list is (anyone can mint the subject).
            const config::CertificateUser* mapping = nullptr;
            for (const auto& c : cfg_.certificates)
                if (!c.thumbprint.empty() && c.thumbprint == thumbprint) {
                    mapping = &c;
                    break;
                }
            const bool pinned = mapping != nullptr;
            for (const auto& c : cfg_.certificates)
                if (!mapping && c.thumbprint.empty() && c.subject == subject) mapping = &c;
            if (!mapping) return UAPLEX_BadIdentityTokenRejected;
            std::string_view policyUri = tokenPolicyUri(*p, ctx.channelSecurityPolicyUri);
            // Part 4 6.1.3 before any role: trusted (or pinned), in its validity period, not
            // revoked, a user certificate's key usage. Every failure is the token's rejection
            // (ActivateSession's results name no certificate statuses).
            if (uaplex_status st =
                    crypto_->validateUserCertificate(policyUri, bytes(t.certificateData), pinned);
                st != UAPLEX_Good)
                return UAPLEX_BadIdentityTokenRejected;
            const ua::SignatureData* sig = ctx.userTokenSignature;
            if (!sig || sig->signature.length <= 0) return UAPLEX_BadUserSignatureInvalid;
            uaplex_status st = crypto_->verifyX509TokenSignature(
                policyUri, bytes(t.certificateData), ua::view(sig->algorithm),
                bytes(sig->signature), ctx.serverCertificate, ctx.serverNonce);
            if (st != UAPLEX_Good) return st;
            out = UserIdentity{IdentityKind::X509, "x509:" + thumbprint, subject,
                               roleMask(mapping->roles) | kAuthenticatedUserRole};
            return UAPLEX_Good;
        }
        if (is<ua::IssuedIdentityToken>(token)) return UAPLEX_BadIdentityTokenRejected;
        return UAPLEX_BadIdentityTokenInvalid;
    } catch (...) {
        return UAPLEX_BadOutOfMemory;
    }
}

}  // namespace uaplex::session
