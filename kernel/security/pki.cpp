#include "security/pki.hpp"

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/rsa.h>
#include <openssl/x509v3.h>

#include <fstream>
#include <iterator>
#include <stdexcept>
#include <system_error>

namespace uaplex::security {

namespace fs = std::filesystem;

namespace {

const char* const kDirs[] = {"own/certs",     "own/private", "trusted/certs", "trusted/crl",
                             "issuers/certs", "issuers/crl", "rejected/certs"};
// The directories whose changes trigger a rescan.
const char* const kWatched[] = {"trusted/certs", "trusted/crl", "issuers/certs", "issuers/crl"};

std::vector<std::uint8_t> readFile(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), {}};
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

struct Pki::Lists {
    std::unique_ptr<X509_STORE, StoreDeleter> store;            // trusted certs + all CRLs
    std::unique_ptr<STACK_OF(X509), StackX509Deleter> issuers;  // chain helpers
    bool hasCrls = false;
};

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
    auto bytes = readFile(file);
    BIO* bio = BIO_new_mem_buf(bytes.data(), int(bytes.size()));
    PkeyPtr key(bio ? PEM_read_bio_PrivateKey(bio, nullptr, nullptr, nullptr) : nullptr);
    BIO_free(bio);
    if (!key) {
        const unsigned char* p = bytes.data();
        key.reset(d2i_AutoPrivateKey(nullptr, &p, long(bytes.size())));
    }
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

Pki::Pki(fs::path root) : root_(std::move(root)) {}

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
    {
        std::ofstream out(keyFile, std::ios::binary | std::ios::trunc);
        std::string pem = privateKeyPem(key_.get());
        out.write(pem.data(), std::streamsize(pem.size()));
        if (!out) throw std::runtime_error("pki: cannot write " + keyFile.string());
    }
    fs::permissions(keyFile, fs::perms::owner_read | fs::perms::owner_write,
                    fs::perm_options::replace);
    std::ofstream out(certFile, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(der.data()), std::streamsize(der.size()));
    if (!out) throw std::runtime_error("pki: cannot write " + certFile.string());
    own_ = Certificate::fromDer(der);
}

void Pki::rescanIfChanged() {
    std::vector<fs::file_time_type> stamps;
    std::error_code ec;
    for (const char* d : kWatched) stamps.push_back(fs::last_write_time(root_ / d, ec));
    if (lists_ && stamps == stamps_) return;
    auto lists = std::make_shared<Lists>();
    lists->store.reset(X509_STORE_new());
    lists->issuers.reset(sk_X509_new_null());
    auto each = [&](const char* dir, auto fn) {
        for (const auto& e : fs::directory_iterator(root_ / dir, ec))
            if (e.is_regular_file(ec)) fn(e.path());
    };
    each("trusted/certs", [&](const fs::path& p) {
        if (auto c = readCertificate(p)) X509_STORE_add_cert(lists->store.get(), c->x509.get());
    });
    each("issuers/certs", [&](const fs::path& p) {
        if (auto c = readCertificate(p)) {
            X509_up_ref(c->x509.get());
            sk_X509_push(lists->issuers.get(), c->x509.get());
        }
    });
    for (const char* dir : {"trusted/crl", "issuers/crl"})
        each(dir, [&](const fs::path& p) {
            if (X509_CRL* crl = readCrl(p)) {
                X509_STORE_add_crl(lists->store.get(), crl);
                X509_CRL_free(crl);
                lists->hasCrls = true;
            }
        });
    ERR_clear_error();
    lists_ = std::move(lists);
    stamps_ = std::move(stamps);
}

void Pki::reject(const Certificate& certificate) const {
    std::error_code ec;
    fs::create_directories(root_ / "rejected/certs", ec);
    std::ofstream out(root_ / "rejected/certs" / (certificate.thumbprintHex() + ".der"),
                      std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(certificate.der.data()),
              std::streamsize(certificate.der.size()));
}

uaplex_status Pki::validate(const Certificate& certificate, std::string_view applicationUri) {
    X509* x = certificate.x509.get();
    std::shared_ptr<Lists> lists;
    {
        std::lock_guard lock(mutex_);
        rescanIfChanged();
        lists = lists_;
    }
    std::unique_ptr<X509_STORE_CTX, StoreCtxDeleter> ctx(X509_STORE_CTX_new());
    if (!ctx || X509_STORE_CTX_init(ctx.get(), lists->store.get(), x, lists->issuers.get()) != 1)
        return UAPLEX_BadCertificateInvalid;
    // A trusted leaf needs no chain to a root (Part 12: the trust list holds peers and CAs).
    unsigned long flags = X509_V_FLAG_PARTIAL_CHAIN;
    // CA-issued certificates need their issuer's CRL (Part 12 revocation checks).
    if (!isSelfSigned(x)) flags |= X509_V_FLAG_CRL_CHECK | X509_V_FLAG_CRL_CHECK_ALL;
    X509_STORE_CTX_set_flags(ctx.get(), flags);
    // Key usage is checked below with OPC UA's rules, not TLS purposes.
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
                reject(certificate);
                return UAPLEX_BadCertificateUntrusted;
            default:
                return UAPLEX_BadCertificateInvalid;
        }
    }
    // An untrusted but otherwise fine certificate still needs a valid period (checked by
    // X509_verify_cert); key usage: application instance certificates sign and encrypt.
    std::uint32_t ku = X509_get_key_usage(x);
    if (ku != UINT32_MAX &&
        (!(ku & KU_DIGITAL_SIGNATURE) || !(ku & (KU_KEY_ENCIPHERMENT | KU_DATA_ENCIPHERMENT))))
        return UAPLEX_BadCertificateUseNotAllowed;
    if (!applicationUri.empty() && certificate.applicationUri() != applicationUri)
        return UAPLEX_BadCertificateUriInvalid;
    return UAPLEX_Good;
}

}  // namespace uaplex::security
