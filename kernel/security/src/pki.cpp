// SPDX-License-Identifier: Apache-2.0
#include <uaplex/security/pki.hpp>

#include <openssl/bio.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/rsa.h>
#include <openssl/x509v3.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <iterator>
#include <stdexcept>
#include <system_error>
#include <tuple>

#include <uaplex/security/safe_file.hpp>

namespace uaplex::security {

namespace fs = std::filesystem;

namespace {

const char* const kDirs[] = {"own/certs",           "own/private",         "trusted/certs",
                             "trusted/crl",         "issuers/certs",       "issuers/crl",
                             "rejected/certs",      "trusted-users/certs", "trusted-users/crl",
                             "issuers-users/certs", "issuers-users/crl"};

// A certificate or key is a few kB, a CA's CRL can reach megabytes: anything larger, and a
// FIFO or device planted in a store, is skipped rather than read (or waited on).
constexpr std::uintmax_t kMaxPkiFileBytes = 16u << 20;

// Trust lists may be symlinks an administrator made; the own private key is not followed.
std::vector<std::uint8_t> readFile(const fs::path& p) {
    std::string text;
    if (readWholeFile(p, {kMaxPkiFileBytes, true}, text) != ReadStatus::Ok) return {};
    return {text.begin(), text.end()};
}

bool addExtension(X509* cert, X509V3_CTX* ctx, int nid, const char* value) {
    X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, ctx, nid, value);
    if (!ext) return false;
    bool ok = X509_add_ext(cert, ext, -1) == 1;
    X509_EXTENSION_free(ext);
    return ok;
}

struct StackX509Deleter {
    void operator()(STACK_OF(X509) * s) const noexcept { sk_X509_pop_free(s, X509_free); }
};
struct StoreDeleter {
    void operator()(X509_STORE* s) const noexcept { X509_STORE_free(s); }
};
struct StoreCtxDeleter {
    void operator()(X509_STORE_CTX* s) const noexcept { X509_STORE_CTX_free(s); }
};

X509_CRL* readCrl(const fs::path& p) {
    auto bytes = readFile(p);
    const unsigned char* d = bytes.data();
    X509_CRL* crl = d2i_X509_CRL(nullptr, &d, long(bytes.size()));
    if (crl) return crl;
    BIO* bio = BIO_new_mem_buf(bytes.data(), int(bytes.size()));
    crl = bio ? PEM_read_bio_X509_CRL(bio, nullptr, nullptr, nullptr) : nullptr;
    BIO_free(bio);
    ERR_clear_error();
    return crl;
}

bool isSelfSigned(X509* x) {
    return (X509_get_extension_flags(x) & EXFLAG_SS) != 0;
}

}  // namespace

// One trust list (Part 12): trusted certificates, issuer certificates and both CRL folders,
// re-read when any file in them changes.
class Pki::TrustList {
  public:
    struct Lists {
        std::unique_ptr<X509_STORE, StoreDeleter> store;            // trusted certs + all CRLs
        std::unique_ptr<STACK_OF(X509), StackX509Deleter> issuers;  // chain helpers
    };
    TrustList(const fs::path& root, const std::string& trusted, const std::string& issuers)
        : dirs_{root / (trusted + "/certs"), root / (trusted + "/crl"), root / (issuers + "/certs"),
                root / (issuers + "/crl")} {}
    std::shared_ptr<const Lists> current() {
        std::lock_guard lock(mutex_);
        auto stamps = scan();
        if (!lists_ || stamps != stamps_) {
            lists_ = load();
            stamps_ = std::move(stamps);
        }
        return lists_;
    }

  private:
    // A file's identity and version: a rewrite in place changes size, mtime or ctime even
    // when the directory itself does not change.
    struct Stamp {
        std::string name;
        std::uint64_t inode, size;
        std::int64_t mtimeNs, ctimeNs;
        bool operator==(const Stamp&) const = default;
        bool operator<(const Stamp& o) const { return name < o.name; }
    };
    std::vector<Stamp> scan() const {
        std::vector<Stamp> out;
        std::error_code ec;
        for (const auto& dir : dirs_) {
            for (const auto& e : fs::directory_iterator(dir, ec)) {
                struct stat st {};
                if (::stat(e.path().c_str(), &st) != 0) continue;
                out.push_back({e.path().string(), std::uint64_t(st.st_ino),
                               std::uint64_t(st.st_size),
                               std::int64_t(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec,
                               std::int64_t(st.st_ctim.tv_sec) * 1000000000 + st.st_ctim.tv_nsec});
            }
        }
        std::sort(out.begin(), out.end());
        return out;
    }
    std::shared_ptr<const Lists> load() const {
        auto lists = std::make_shared<Lists>();
        lists->store.reset(X509_STORE_new());
        lists->issuers.reset(sk_X509_new_null());
        std::error_code ec;
        auto each = [&](const fs::path& dir, auto fn) {
            for (const auto& e : fs::directory_iterator(dir, ec))
                // not a `pki trust` that was killed before its rename: it promised nothing
                if (e.is_regular_file(ec) && !isReplacementTemporary(e.path())) fn(e.path());
        };
        each(dirs_[0], [&](const fs::path& p) {
            if (auto c = readCertificate(p)) X509_STORE_add_cert(lists->store.get(), c->x509.get());
        });
        each(dirs_[2], [&](const fs::path& p) {
            if (auto c = readCertificate(p)) {
                X509_up_ref(c->x509.get());
                sk_X509_push(lists->issuers.get(), c->x509.get());
            }
        });
        for (const auto& dir : {dirs_[1], dirs_[3]})
            each(dir, [&](const fs::path& p) {
                if (X509_CRL* crl = readCrl(p)) {
                    X509_STORE_add_crl(lists->store.get(), crl);
                    X509_CRL_free(crl);
                }
            });
        ERR_clear_error();
        return lists;
    }

    fs::path dirs_[4];  // trusted certs, trusted CRLs, issuer certs, issuer CRLs
    std::mutex mutex_;  // validations run on several I/O and worker threads
    std::shared_ptr<const Lists> lists_;
    std::vector<Stamp> stamps_;
};

namespace {

// The chain checks of X509_verify_cert, with the OPC UA status of the first failure. A pinned
// certificate is its own trust anchor: only the errors that say "no trusted issuer" are
// passed over, time and revocation still count.
int ignoreUntrusted(int ok, X509_STORE_CTX* ctx) {
    if (ok) return 1;
    switch (X509_STORE_CTX_get_error(ctx)) {
        case X509_V_ERR_DEPTH_ZERO_SELF_SIGNED_CERT:
        case X509_V_ERR_SELF_SIGNED_CERT_IN_CHAIN:
        case X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT:
        case X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY:
        case X509_V_ERR_UNABLE_TO_VERIFY_LEAF_SIGNATURE:
        case X509_V_ERR_CERT_UNTRUSTED:
            return 1;
        default:
            return 0;
    }
}

uaplex_status verifyChain(X509_STORE* store, STACK_OF(X509) * issuers, X509* x, bool pinned,
                          const PolicyInfo* policy) {
    std::unique_ptr<X509_STORE_CTX, StoreCtxDeleter> ctx(X509_STORE_CTX_new());
    if (!ctx || X509_STORE_CTX_init(ctx.get(), store, x, issuers) != 1)
        return UAPLEX_BadCertificateInvalid;
    // A trusted leaf needs no chain to a root (Part 12: the trust list holds peers and CAs).
    unsigned long flags = X509_V_FLAG_PARTIAL_CHAIN;
    // CA-issued certificates need their issuer's CRL (Part 12 revocation checks).
    if (!isSelfSigned(x)) flags |= X509_V_FLAG_CRL_CHECK | X509_V_FLAG_CRL_CHECK_ALL;
    X509_STORE_CTX_set_flags(ctx.get(), flags);
    if (pinned) X509_STORE_CTX_set_verify_cb(ctx.get(), ignoreUntrusted);
    // Key usage is checked by the caller with OPC UA's rules, not TLS purposes.
    int ok = X509_verify_cert(ctx.get());
    int err = X509_STORE_CTX_get_error(ctx.get());
    ERR_clear_error();
    if (ok != 1) {
        switch (err) {
            case X509_V_ERR_CERT_HAS_EXPIRED:
            case X509_V_ERR_CERT_NOT_YET_VALID:
                return UAPLEX_BadCertificateTimeInvalid;
            case X509_V_ERR_CERT_REVOKED:
                return UAPLEX_BadCertificateRevoked;
            case X509_V_ERR_UNABLE_TO_GET_CRL:
            case X509_V_ERR_CRL_HAS_EXPIRED:
            case X509_V_ERR_CRL_NOT_YET_VALID:
                return UAPLEX_BadCertificateRevocationUnknown;
            case X509_V_ERR_DEPTH_ZERO_SELF_SIGNED_CERT:
            case X509_V_ERR_SELF_SIGNED_CERT_IN_CHAIN:
            case X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT:
            case X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY:
            case X509_V_ERR_UNABLE_TO_VERIFY_LEAF_SIGNATURE:
            case X509_V_ERR_CERT_UNTRUSTED:
                return UAPLEX_BadCertificateUntrusted;
            default:
                return UAPLEX_BadCertificateInvalid;
        }
    }
    // The issuers' signature hashes count too (Part 4 6.1.3: every certificate of the
    // chain); a self-signed root's own signature is not what its trust rests on.
    STACK_OF(X509)* chain = X509_STORE_CTX_get0_chain(ctx.get());
    for (int i = 1; chain && i < sk_X509_num(chain); ++i) {
        X509* c = sk_X509_value(chain, i);
        if (isSelfSigned(c)) continue;
        if (!certificateSignatureAllowed(c, policy)) return UAPLEX_BadCertificatePolicyCheckFailed;
    }
    return UAPLEX_Good;
}

}  // namespace

bool certificateSignatureAllowed(X509* x, const PolicyInfo* policy) noexcept {
    int mdnid = NID_undef, pknid = NID_undef, bits = 0;
    std::uint32_t flags = 0;
    if (X509_get_signature_info(x, &mdnid, &pknid, &bits, &flags) != 1) return false;
    bool strong = mdnid == NID_sha256 || mdnid == NID_sha384 || mdnid == NID_sha512;
    if (strong) return true;
    // SHA-1 only where the policy itself is SHA-1 based (Basic128Rsa15, Basic256).
    return mdnid == NID_sha1 && (!policy || policy->sha1Prf);
}

bool EventBudget::allow(std::int64_t nowMs, std::uint64_t& suppressed) noexcept {
    std::lock_guard lock(mutex_);
    if (!started_ || nowMs - windowStart_ >= windowMs_ || nowMs < windowStart_) {
        started_ = true;
        windowStart_ = nowMs;
        used_ = 0;
    }
    if (used_ >= perWindow_) {
        ++suppressed_;
        return false;
    }
    ++used_;
    suppressed = suppressed_;
    suppressed_ = 0;
    return true;
}

bool createSelfSigned(const CertificateRequest& r, PkeyPtr& key, std::vector<std::uint8_t>& der,
                      std::string& error) {
    key.reset(EVP_RSA_gen(r.keyBits));
    X509Ptr cert(X509_new());
    if (!key || !cert) {
        error = "cannot generate the RSA key: " + lastError();
        return false;
    }
    X509_set_version(cert.get(), 2);
    std::uint8_t serial[16];
    randomBytes(serial);
    serial[0] &= 0x7f;  // positive
    BIGNUM* bn = BN_bin2bn(serial, sizeof serial, nullptr);
    BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(cert.get()));
    BN_free(bn);
    constexpr long kDay = 24 * 3600;
    long days = r.validDays;
    // An already expired certificate (validDays < 0) was valid for a day before.
    long from = days < 0 ? (days - 1) * kDay : -kDay;
    X509_gmtime_adj(X509_getm_notBefore(cert.get()), from);
    X509_gmtime_adj(X509_getm_notAfter(cert.get()), days * kDay);
    X509_NAME* name = X509_get_subject_name(cert.get());
    X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_UTF8,
                               reinterpret_cast<const unsigned char*>(r.commonName.c_str()), -1, -1,
                               0);
    X509_NAME_add_entry_by_txt(name, "O", MBSTRING_UTF8,
                               reinterpret_cast<const unsigned char*>("uaplex"), -1, -1, 0);
    X509_set_issuer_name(cert.get(), name);
    X509_set_pubkey(cert.get(), key.get());
    X509V3_CTX ctx;
    X509V3_set_ctx(&ctx, cert.get(), cert.get(), nullptr, nullptr, 0);
    std::string san = "URI:" + r.applicationUri;
    for (const auto& d : r.dnsNames) san += ",DNS:" + d;
    // Part 6 6.2.2: a self-signed application instance certificate may sign (keyCertSign),
    // is no CA, and serves both as server and client certificate.
    bool ok = addExtension(cert.get(), &ctx, NID_basic_constraints, "critical,CA:FALSE") &&
              addExtension(cert.get(), &ctx, NID_key_usage,
                           "critical,digitalSignature,nonRepudiation,keyEncipherment,"
                           "dataEncipherment,keyCertSign") &&
              addExtension(cert.get(), &ctx, NID_ext_key_usage, "serverAuth,clientAuth") &&
              addExtension(cert.get(), &ctx, NID_subject_key_identifier, "hash") &&
              addExtension(cert.get(), &ctx, NID_authority_key_identifier, "keyid:always") &&
              addExtension(cert.get(), &ctx, NID_subject_alt_name, san.c_str());
    if (!ok || X509_sign(cert.get(), key.get(), EVP_sha256()) == 0) {
        error = "cannot build the certificate: " + lastError();
        return false;
    }
    int len = i2d_X509(cert.get(), nullptr);
    der.resize(std::size_t(len));
    unsigned char* p = der.data();
    i2d_X509(cert.get(), &p);
    return true;
}

std::string privateKeyPem(EVP_PKEY* key) {
    BIO* bio = BIO_new(BIO_s_mem());
    std::string s;
    if (bio && PEM_write_bio_PrivateKey(bio, key, nullptr, nullptr, 0, nullptr, nullptr) == 1) {
        char* data = nullptr;
        long n = BIO_get_mem_data(bio, &data);
        s.assign(data, std::size_t(n));
    }
    BIO_free(bio);
    return s;
}

PkeyPtr readPrivateKey(const fs::path& file) {
    std::string bytes;
    if (readWholeFile(file, {kMaxPkiFileBytes, false}, bytes) != ReadStatus::Ok) return nullptr;
    BIO* bio = BIO_new_mem_buf(bytes.data(), int(bytes.size()));
    PkeyPtr key(bio ? PEM_read_bio_PrivateKey(bio, nullptr, nullptr, nullptr) : nullptr);
    BIO_free(bio);
    if (!key) {
        const auto* p = reinterpret_cast<const unsigned char*>(bytes.data());
        key.reset(d2i_AutoPrivateKey(nullptr, &p, long(bytes.size())));
    }
    OPENSSL_cleanse(bytes.data(), bytes.size());
    ERR_clear_error();
    return key;
}

std::shared_ptr<Certificate> readCertificate(const fs::path& file) {
    auto bytes = readFile(file);
    if (auto c = Certificate::fromDer(bytes)) return c;
    BIO* bio = BIO_new_mem_buf(bytes.data(), int(bytes.size()));
    X509Ptr x(bio ? PEM_read_bio_X509(bio, nullptr, nullptr, nullptr) : nullptr);
    BIO_free(bio);
    ERR_clear_error();
    if (!x) return nullptr;
    int len = i2d_X509(x.get(), nullptr);
    std::vector<std::uint8_t> der(std::size_t(len > 0 ? len : 0));
    unsigned char* p = der.data();
    i2d_X509(x.get(), &p);
    return Certificate::fromDer(der);
}

Pki::Pki(fs::path root)
    : root_(std::move(root)),
      applications_(std::make_unique<TrustList>(root_, "trusted", "issuers")),
      users_(std::make_unique<TrustList>(root_, "trusted-users", "issuers-users")) {}

Pki::~Pki() = default;

void Pki::ensureLayout() const {
    for (const char* d : kDirs) fs::create_directories(root_ / d);
    fs::permissions(root_ / "own/private", fs::perms::owner_all, fs::perm_options::replace);
}

void Pki::loadOrCreateOwn(const CertificateRequest& request) {
    ensureLayout();
    fs::path certFile = ownCertificateFile(), keyFile = ownKeyFile();
    if (fs::exists(certFile) && fs::exists(keyFile)) {
        own_ = readCertificate(certFile);
        key_ = readPrivateKey(keyFile);
        if (!own_ || !key_)
            throw std::runtime_error("pki: cannot read " + certFile.string() + " or " +
                                     keyFile.string());
        if (EVP_PKEY_eq(own_->publicKey.get(), key_.get()) != 1)
            throw std::runtime_error("pki: " + keyFile.string() + " is not the key of " +
                                     certFile.string());
        return;
    }
    std::vector<std::uint8_t> der;
    std::string error;
    if (!createSelfSigned(request, key_, der, error)) throw std::runtime_error("pki: " + error);
    // The key is 0600 from its creation, and nothing planted at either path is followed.
    std::string pem = privateKeyPem(key_.get()), err;
    bool written = replaceFile(keyFile, pem, kPrivateFileMode, err) &&
                   replaceFile(certFile, der.data(), der.size(), kPublicFileMode, err);
    OPENSSL_cleanse(pem.data(), pem.size());
    if (!written) throw std::runtime_error("pki: " + err);
    own_ = Certificate::fromDer(der);
}

void Pki::setRejectedLimits(const RejectedStoreLimits& limits) {
    std::lock_guard lock(rejectMutex_);
    rejectedLimits_ = limits;
}

bool Pki::reject(const Certificate& certificate) {
    std::lock_guard lock(rejectMutex_);
    const RejectedStoreLimits limits = rejectedLimits_;
    const std::uint64_t size = certificate.der.size();
    if (limits.maxCertificates == 0 || size > limits.maxBytes) return false;
    std::error_code ec;
    const fs::path dir = rejectedDirectory();
    fs::create_directories(dir, ec);
    const fs::path target = dir / (certificate.thumbprintHex() + ".der");
    // The same certificate again: already there, nothing is rewritten.
    if (fs::exists(fs::symlink_status(target, ec))) return false;
    // Make room: the oldest files go first (FIFO by modification time, then name).
    std::vector<std::tuple<fs::file_time_type, fs::path, std::uint64_t>> files;
    std::uint64_t bytes = 0;
    for (const auto& e : fs::directory_iterator(dir, ec)) {
        if (!e.is_regular_file(ec)) continue;
        std::uint64_t n = e.file_size(ec);
        files.emplace_back(e.last_write_time(ec), e.path(), n);
        bytes += n;
    }
    std::sort(files.begin(), files.end());
    std::size_t count = files.size();
    for (const auto& [time, path, n] : files) {
        if (count + 1 <= limits.maxCertificates && bytes + size <= limits.maxBytes) break;
        if (fs::remove(path, ec)) {
            --count;
            bytes -= n;
        }
    }
    if (count + 1 > limits.maxCertificates || bytes + size > limits.maxBytes) return false;
    // A temporary file (O_EXCL | O_NOFOLLOW, never through a link) renamed over the name: a
    // process killed meanwhile leaves no truncated certificate that would block the record.
    ReplacementFile file;
    if (!file.create(target, kPublicFileMode) ||
        !file.write(certificate.der.data(), certificate.der.size()))
        return false;
    // Eviction goes by modification time: two records within one clock tick get distinct,
    // increasing times so the order stays first in, first out.
    struct timespec now {};
    ::clock_gettime(CLOCK_REALTIME, &now);
    std::int64_t ns = std::int64_t(now.tv_sec) * 1000000000 + now.tv_nsec;
    if (ns <= lastRecordNs_) ns = lastRecordNs_ + 1000;
    lastRecordNs_ = ns;
    struct timespec times[2] = {{0, UTIME_OMIT}, {time_t(ns / 1000000000), long(ns % 1000000000)}};
    ::futimens(file.fd(), times);
    return file.commit();
}

namespace {

// Key usage rules of Part 6 6.2.2 (application instance certificates) and of user
// certificates: never a CA, keyUsage present, extendedKeyUsage (when present) naming the role.
uaplex_status checkUsage(X509* x, CertificateRole role) {
    const std::uint32_t ext = X509_get_extension_flags(x);
    if (ext & EXFLAG_CA) return UAPLEX_BadCertificateUseNotAllowed;
    std::uint32_t ku = X509_get_key_usage(x);
    if (ku == UINT32_MAX || !(ext & EXFLAG_KUSAGE)) return UAPLEX_BadCertificateUseNotAllowed;
    if (!(ku & KU_DIGITAL_SIGNATURE)) return UAPLEX_BadCertificateUseNotAllowed;
    if (role == CertificateRole::User) return UAPLEX_Good;
    if (!(ku & (KU_KEY_ENCIPHERMENT | KU_DATA_ENCIPHERMENT)))
        return UAPLEX_BadCertificateUseNotAllowed;
    if (ext & EXFLAG_XKUSAGE) {
        std::uint32_t xku = X509_get_extended_key_usage(x);
        std::uint32_t needed =
            role == CertificateRole::ServerApplication ? XKU_SSL_SERVER : XKU_SSL_CLIENT;
        if (!(xku & (needed | XKU_ANYEKU))) return UAPLEX_BadCertificateUseNotAllowed;
    }
    return UAPLEX_Good;
}

}  // namespace

namespace {

uaplex_status counted(std::array<std::atomic<std::uint64_t>, CertificateRejections::kReasons>& c,
                      uaplex_status st) noexcept {
    if (st == UAPLEX_Good) return st;
    std::size_t i = 0;
    while (i < CertificateRejections::kStatuses.size() && CertificateRejections::kStatuses[i] != st)
        ++i;
    c[i].fetch_add(1, std::memory_order_relaxed);
    return st;
}

}  // namespace

uaplex_status Pki::validate(const Certificate& certificate, std::string_view applicationUri,
                            const PolicyInfo* policy, CertificateRole role) {
    return counted(rejectedApplications_,
                   validateApplication(certificate, applicationUri, policy, role));
}

uaplex_status Pki::validateUser(const Certificate& certificate, const PolicyInfo* policy,
                                bool pinned) {
    return counted(rejectedUsers_, validateUserCertificate(certificate, policy, pinned));
}

CertificateRejections Pki::rejections() const noexcept {
    CertificateRejections r;
    for (std::size_t i = 0; i < CertificateRejections::kReasons; ++i) {
        r.applications[i] = rejectedApplications_[i].load(std::memory_order_relaxed);
        r.users[i] = rejectedUsers_[i].load(std::memory_order_relaxed);
    }
    return r;
}

uaplex_status Pki::validateApplication(const Certificate& certificate,
                                       std::string_view applicationUri, const PolicyInfo* policy,
                                       CertificateRole role) {
    X509* x = certificate.x509.get();
    // Part 4 6.1.3: the security policy check comes before the trust list check.
    if (!certificateSignatureAllowed(x, policy)) return UAPLEX_BadCertificatePolicyCheckFailed;
    auto lists = applications_->current();
    uaplex_status st = verifyChain(lists->store.get(), lists->issuers.get(), x, false, policy);
    if (st != UAPLEX_Good) return st;
    if (uaplex_status u = checkUsage(x, role); u != UAPLEX_Good) return u;
    if (!applicationUri.empty() && certificate.applicationUri() != applicationUri)
        return UAPLEX_BadCertificateUriInvalid;
    return UAPLEX_Good;
}

uaplex_status Pki::validateUserCertificate(const Certificate& certificate, const PolicyInfo* policy,
                                           bool pinned) {
    X509* x = certificate.x509.get();
    if (!certificateSignatureAllowed(x, policy)) return UAPLEX_BadCertificatePolicyCheckFailed;
    auto lists = users_->current();
    uaplex_status st = verifyChain(lists->store.get(), lists->issuers.get(), x, pinned, policy);
    if (st != UAPLEX_Good) return st;
    return checkUsage(x, CertificateRole::User);
}

}  // namespace uaplex::security
