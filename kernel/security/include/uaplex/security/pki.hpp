// SPDX-License-Identifier: Apache-2.0
// The certificate store (Part 12 / Part 6 6.2): the application instance certificate and its
// private key, and the trust lists that decide which peers may connect.
//
// Layout under the PKI directory:
//   own/certs/uaplex.der, own/private/uaplex.pem    the application instance certificate
//   trusted/certs, trusted/crl                      trusted peers and CAs, their CRLs
//   issuers/certs, issuers/crl                      CAs that may complete a chain (not trusted)
//   rejected/certs                                  peers refused as untrusted, to review
//   trusted-users/certs, trusted-users/crl          user certificates and user CAs (X509
//   issuers-users/certs, issuers-users/crl          identity tokens), their own trust list
// The trust lists are re-read when a file in them changes (name, size, inode, mtime or ctime
// of each file), checked at each validation: moving a file from rejected/ to trusted/, or
// rewriting one in place, takes effect without a restart.
#pragma once

#include <uaplex/statuscodes.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <uaplex/security/crypto.hpp>

namespace uaplex::security {

struct CertificateRequest {
    std::string applicationUri;
    std::string commonName = "uaplex";
    std::vector<std::string> dnsNames;  // subjectAltName DNS entries
    std::uint32_t keyBits = 2048;
    std::int32_t validDays = 365 * 5;  // negative: already expired (tests)
};

// A new self-signed application instance certificate (Part 6 6.2.2) and its key.
bool createSelfSigned(const CertificateRequest& request, PkeyPtr& key,
                      std::vector<std::uint8_t>& der, std::string& error);
// PEM text of a private key (PKCS#8, unencrypted).
std::string privateKeyPem(EVP_PKEY* key);
PkeyPtr readPrivateKey(const std::filesystem::path& file);
// A DER or PEM certificate file.
std::shared_ptr<Certificate> readCertificate(const std::filesystem::path& file);

// Bounds of rejected/certs: every OPN with an untrusted certificate may add one file.
struct RejectedStoreLimits {
    std::uint32_t maxCertificates = 100;  // files; the oldest go first; 0: record none
    std::uint64_t maxBytes = 4u << 20;    // sum of the files' sizes
};

// Whose certificate a validation is about (Part 6 6.2.2 key usages per role).
enum class CertificateRole { ClientApplication, ServerApplication, User };

// Whether a certificate's own signature hash fits `policy` (Part 7 CertificateSignatureAlgorithm:
// SHA-256 or stronger; SHA-1 only under the legacy Basic128Rsa15 and Basic256). A null policy
// allows SHA-1 too.
bool certificateSignatureAllowed(X509* certificate, const PolicyInfo* policy) noexcept;

// At most `perWindow` events per `windowMs` (log lines of refused peers); the rest are counted.
class EventBudget {
  public:
    EventBudget(std::uint32_t perWindow, std::int64_t windowMs) noexcept
        : perWindow_(perWindow), windowMs_(windowMs) {}
    // True when the event may be reported; `suppressed` returns how many were not since the
    // last reported one.
    bool allow(std::int64_t nowMs, std::uint64_t& suppressed) noexcept;

  private:
    std::mutex mutex_;
    std::uint32_t perWindow_;
    std::int64_t windowMs_;
    std::int64_t windowStart_ = 0;
    std::uint32_t used_ = 0;
    std::uint64_t suppressed_ = 0;
    bool started_ = false;
};

// Failed certificate validations since start (the metrics), by the status they gave.
struct CertificateRejections {
    static constexpr std::size_t kReasons = 9;
    // The status each cell counts; the last cell counts any other.
    static constexpr std::array<uaplex_status, kReasons - 1> kStatuses = {
        UAPLEX_BadCertificatePolicyCheckFailed, UAPLEX_BadCertificateUntrusted,
        UAPLEX_BadCertificateTimeInvalid,       UAPLEX_BadCertificateUseNotAllowed,
        UAPLEX_BadCertificateUriInvalid,        UAPLEX_BadCertificateRevoked,
        UAPLEX_BadCertificateRevocationUnknown, UAPLEX_BadCertificateInvalid};
    std::array<std::uint64_t, kReasons> applications{};  // validate()
    std::array<std::uint64_t, kReasons> users{};         // validateUser()
};

class Pki {
  public:
    explicit Pki(std::filesystem::path root);
    ~Pki();

    // Creates the directory layout when missing.
    void ensureLayout() const;
    // Loads own/ or, when missing, creates the certificate for `request`. Throws
    // std::runtime_error with a one-line message.
    void loadOrCreateOwn(const CertificateRequest& request);
    const std::filesystem::path& root() const noexcept { return root_; }
    std::filesystem::path ownCertificateFile() const { return root_ / "own/certs/uaplex.der"; }
    std::filesystem::path ownKeyFile() const { return root_ / "own/private/uaplex.pem"; }

    const std::shared_ptr<Certificate>& own() const noexcept { return own_; }
    EVP_PKEY* privateKey() const noexcept { return key_.get(); }

    // Validates a peer's application instance certificate (Part 4 6.1.3): its signature hash
    // against `policy`, the chain to trusted/ (with issuers/), validity period, revocation,
    // no CA certificate, key usage (digitalSignature and key or data encipherment, required),
    // extendedKeyUsage when present (clientAuth for a client, serverAuth for a server), and
    // (if not empty) the application URI. Statuses: BadCertificatePolicyCheckFailed,
    // BadCertificateUntrusted, BadCertificateTimeInvalid, BadCertificateUseNotAllowed,
    // BadCertificateUriInvalid, BadCertificateRevoked, BadCertificateRevocationUnknown,
    // BadCertificateInvalid. Records nothing: see reject().
    uaplex_status validate(const Certificate& certificate, std::string_view applicationUri = {},
                           const PolicyInfo* policy = nullptr,
                           CertificateRole role = CertificateRole::ClientApplication);

    // Validates a user certificate of an X509 identity token against the user trust list
    // (trusted-users/, issuers-users/): signature hash against the token's `policy`, chain,
    // validity period, revocation, no CA, keyUsage with digitalSignature. `pinned`: the
    // configuration names this very certificate (by thumbprint), so it needs no chain to the
    // user trust list, but everything else still applies. Statuses as validate().
    uaplex_status validateUser(const Certificate& certificate, const PolicyInfo* policy,
                               bool pinned);

    // Copies a DER certificate into rejected/certs (named by thumbprint), within the store's
    // limits: the oldest files are removed to make room, a thumbprint already there is not
    // rewritten. True when a file was written.
    bool reject(const Certificate& certificate);
    // Counted by validate() and validateUser() (relaxed atomics, any thread).
    CertificateRejections rejections() const noexcept;
    void setRejectedLimits(const RejectedStoreLimits& limits);
    std::filesystem::path rejectedDirectory() const { return root_ / "rejected/certs"; }
    std::filesystem::path trustedUsersDirectory() const { return root_ / "trusted-users/certs"; }

  private:
    class TrustList;
    std::filesystem::path root_;
    std::shared_ptr<Certificate> own_;
    PkeyPtr key_;
    std::unique_ptr<TrustList> applications_, users_;
    std::mutex rejectMutex_;  // I/O threads record refused peers
    RejectedStoreLimits rejectedLimits_;
    std::int64_t lastRecordNs_ = 0;  // the last record's modification time
    using Counts = std::array<std::atomic<std::uint64_t>, CertificateRejections::kReasons>;
    Counts rejectedApplications_{}, rejectedUsers_{};
    uaplex_status validateApplication(const Certificate& certificate,
                                      std::string_view applicationUri, const PolicyInfo* policy,
                                      CertificateRole role);
    uaplex_status validateUserCertificate(const Certificate& certificate, const PolicyInfo* policy,
                                          bool pinned);
};

}  // namespace uaplex::security
