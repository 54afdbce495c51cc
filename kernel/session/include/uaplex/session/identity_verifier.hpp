// SPDX-License-Identifier: Apache-2.0
// User identity tokens of ActivateSession (Part 4 5.6.3, 7.41): which token policies the
// endpoints offer, and the check of a token against them, the users file and the
// certificate mappings. The cryptography a token may need (a UserName password encrypted
// for the server, an X509 token's signature) is behind IdentityCrypto, which the secure
// channel's security policies implement.
#pragma once

#include <uaplex/statuscodes.h>
#include <uaplex/encoding/encoding.hpp>

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <uaplex/config/config.hpp>
#include <uaplex/session/access_control.hpp>
#include <uaplex/session/user_store.hpp>

namespace uaplex::session {

// The kind of a decoded UserIdentityToken (Part 4 7.41).
enum class IdentityKind { Anonymous, UserName, X509, Issued, Invalid };

// Who a session acts for once activated.
struct UserIdentity {
    IdentityKind kind = IdentityKind::Anonymous;
    // Comparable identity: "anonymous", "user:<name>" or "x509:<SHA-1 thumbprint>". Equal
    // keys are the same user (a transfer to another channel, TransferSubscriptions).
    std::string key = "anonymous";
    std::string name;  // the user name or the certificate's subject
    RoleMask roles = kAnonymousRole;
};

// The cryptography of identity tokens (implemented with the secure channel's policies).
class IdentityCrypto {
  public:
    virtual ~IdentityCrypto() = default;
    // Decrypts a UserNameIdentityToken password encrypted with the server's key under
    // `securityPolicyUri` / `encryptionAlgorithm`, in the legacy format (Part 4 7.41.2.2:
    // UInt32 length, password, serverNonce); checks that the nonce is `serverNonce` and
    // returns only the password. BadIdentityTokenInvalid when it cannot.
    virtual uaplex_status decryptPassword(std::string_view securityPolicyUri,
                                          std::string_view encryptionAlgorithm,
                                          std::span<const std::uint8_t> secret,
                                          std::span<const std::uint8_t> serverNonce,
                                          std::string& password) noexcept = 0;
    // Verifies an X509IdentityToken's userTokenSignature: `signature` by the key of
    // `userCertificate` over serverCertificate + serverNonce, with the signature algorithm of
    // `securityPolicyUri` (`algorithm` must name it). BadUserSignatureInvalid when it does
    // not verify or names another algorithm.
    virtual uaplex_status verifyX509TokenSignature(
        std::string_view securityPolicyUri, std::span<const std::uint8_t> userCertificate,
        std::string_view algorithm, std::span<const std::uint8_t> signature,
        std::span<const std::uint8_t> serverCertificate,
        std::span<const std::uint8_t> serverNonce) noexcept = 0;
    // Validates a user certificate (Part 4 6.1.3) against the user trust list: chain (unless
    // `pinned`: the configuration names this certificate by thumbprint), validity period,
    // revocation, key usage, signature hash for `securityPolicyUri`. Good, or the
    // BadCertificate* status of the first failed check.
    virtual uaplex_status validateUserCertificate(std::string_view securityPolicyUri,
                                                  std::span<const std::uint8_t> userCertificate,
                                                  bool pinned) noexcept = 0;
};

// Until the channel's security policies provide the cryptography: no encrypted password
// decrypts and no token signature verifies.
class NoIdentityCrypto final : public IdentityCrypto {
  public:
    uaplex_status decryptPassword(std::string_view, std::string_view, std::span<const std::uint8_t>,
                                  std::span<const std::uint8_t>, std::string&) noexcept override {
        return UAPLEX_BadIdentityTokenInvalid;
    }
    uaplex_status verifyX509TokenSignature(std::string_view, std::span<const std::uint8_t>,
                                           std::string_view, std::span<const std::uint8_t>,
                                           std::span<const std::uint8_t>,
                                           std::span<const std::uint8_t>) noexcept override {
        return UAPLEX_BadUserSignatureInvalid;
    }
    uaplex_status validateUserCertificate(std::string_view, std::span<const std::uint8_t>,
                                          bool) noexcept override {
        return UAPLEX_BadCertificateUntrusted;
    }
};

// A UserTokenPolicy the endpoints offer.
struct TokenPolicy {
    std::string_view policyId;
    IdentityKind kind;
    std::string securityPolicyUri;  // empty: the endpoint's
};

inline constexpr std::string_view kAnonymousPolicyId = "anonymous";
inline constexpr std::string_view kUserNamePolicyId = "username";
inline constexpr std::string_view kCertificatePolicyId = "certificate";
inline constexpr std::string_view kSecurityPolicyNoneUri =
    "http://opcfoundation.org/UA/SecurityPolicy#None";

// What ActivateSession hands to the check besides the token.
struct ActivationContext {
    const ua::SignatureData* userTokenSignature = nullptr;
    std::span<const std::uint8_t> serverNonce;        // the last one sent to the client
    std::span<const std::uint8_t> serverCertificate;  // empty while the channel has none
    std::string_view channelSecurityPolicyUri = kSecurityPolicyNoneUri;
};

// SHA-1 thumbprint (upper-case hex) and RFC 2253 subject of a DER certificate; false when
// it does not parse.
bool certificateIdentity(std::span<const std::uint8_t> der, std::string& thumbprint,
                         std::string& subject);

class IdentityVerifier {
  public:
    // Reads the users file (throws UserStoreError). `crypto` null: NoIdentityCrypto.
    IdentityVerifier(const config::AccessSection& cfg, std::shared_ptr<IdentityCrypto> crypto);

    const std::vector<TokenPolicy>& policies() const noexcept { return policies_; }
    // Checks `token` (an ExtensionObject as decoded; a null one is anonymous). Good with
    // `out` filled; otherwise BadIdentityTokenInvalid (malformed, unknown policyId, not
    // decryptable), BadIdentityTokenRejected (a token kind the server does not accept, an
    // unmapped certificate, a user certificate that fails validation), BadUserAccessDenied
    // (wrong user name or password), BadUserSignatureInvalid. May take milliseconds
    // (password hashing).
    uaplex_status verify(const ua::ExtensionObject& token, const ActivationContext& ctx,
                         UserIdentity& out) const noexcept;
    // Re-reads the users file (SIGHUP); throws UserStoreError and keeps the old users.
    void reloadUsers();
    // The policy of tokens whose policy names none, on a channel with SecurityPolicy None
    // (Part 4 7.41: the password is then encrypted with the server certificate anyway).
    void setNoneTokenPolicyUri(std::string uri) { noneTokenPolicyUri_ = std::move(uri); }

  private:
    const TokenPolicy* policy(IdentityKind kind) const noexcept;
    config::AccessSection cfg_;
    RoleMask anonymousRoles_;
    std::vector<TokenPolicy> policies_;
    std::unique_ptr<UserStore> users_;
    std::shared_ptr<IdentityCrypto> crypto_;
    std::string noneTokenPolicyUri_;
    std::string_view tokenPolicyUri(const TokenPolicy& p,
                                    std::string_view channelPolicyUri) const noexcept {
        if (!p.securityPolicyUri.empty()) return p.securityPolicyUri;
        if (channelPolicyUri == kSecurityPolicyNoneUri && !noneTokenPolicyUri_.empty())
            return noneTokenPolicyUri_;
        return channelPolicyUri;
    }
};

}  // namespace uaplex::session
