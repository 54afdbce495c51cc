// The certificate store (Part 12 / Part 6 6.2): the application instance certificate and its
// private key, and the trust lists that decide which peers may connect.
//
// Layout under the PKI directory:
//   own/certs/uaplex.der, own/private/uaplex.pem    the application instance certificate
//   trusted/certs, trusted/crl                      trusted peers and CAs, their CRLs
//   issuers/certs, issuers/crl                      CAs that may complete a chain (not trusted)
//   rejected/certs                                  peers refused as untrusted, to review
// The trust lists are re-read when a directory's modification time changes, checked at each
// validation: moving a file from rejected/ to trusted/ takes effect without a restart.
#pragma once

#include <uaplex/statuscodes.h>

#include <cstdint>
#include <filesystem>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "security/crypto.hpp"

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

class Pki {
  public:
    explicit Pki(std::filesystem::path root);

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

    // Validates a peer certificate: chain to trusted/ (with issuers/), validity period, key
    // usage, revocation, and (if not empty) the application URI. Statuses:
    // BadCertificateUntrusted (copied to rejected/certs), BadCertificateTimeInvalid,
    // BadCertificateUseNotAllowed, BadCertificateUriInvalid, BadCertificateRevoked,
    // BadCertificateRevocationUnknown, BadCertificateInvalid.
    uaplex_status validate(const Certificate& certificate, std::string_view applicationUri = {});

    // Copies a DER certificate into rejected/certs (named by thumbprint).
    void reject(const Certificate& certificate) const;

  private:
    void rescanIfChanged();
    std::filesystem::path root_;
    std::shared_ptr<Certificate> own_;
    PkeyPtr key_;
    std::mutex mutex_;  // connects from several I/O threads
    struct Lists;
    std::shared_ptr<Lists> lists_;
    std::vector<std::filesystem::file_time_type> stamps_;
};

}  // namespace uaplex::security
