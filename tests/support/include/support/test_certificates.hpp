// SPDX-License-Identifier: Apache-2.0
// Certificates and OpenSecureChannel requests for the hostile-client tests: X.509 made with
// the OpenSSL API (self-signed or CA-issued, any key usage, digest and validity), CRLs, and
// an OPN Issue secured for a server certificate with the project's client channel security.
#pragma once

#include <openssl/x509v3.h>

#include <uaplex/encoding/encoding.hpp>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include <uaplex/security/channel_security.hpp>
#include <uaplex/security/crypto.hpp>
#include <uaplex/security/pki.hpp>

namespace uaplex::test {

struct TestIdentity {
    security::PkeyPtr key;
    std::shared_ptr<security::Certificate> cert;
};

struct IssueOptions {
    std::vector<std::pair<std::string, std::string>> name;  // in DN order, e.g. {"O", "plant"}
    const char* uri = nullptr;                              // subjectAltName URI
    const char* keyUsage = "critical,digitalSignature,nonRepudiation";
    const char* extendedKeyUsage = nullptr;
    bool ca = false;
    long serial = 1;
    long validSeconds = 30 * 86400;  // negative: expired that long ago
    std::uint32_t keyBits = 2048;
};

// A certificate signed by `issuer` (self-signed when null); null when OpenSSL fails.
inline TestIdentity issueCertificate(const IssueOptions& o, const TestIdentity* issuer = nullptr) {
    TestIdentity id;
    id.key.reset(EVP_RSA_gen(o.keyBits));
    security::X509Ptr x(X509_new());
    if (!id.key || !x) return {};
    X509_set_version(x.get(), 2);
    ASN1_INTEGER_set(X509_get_serialNumber(x.get()), o.serial);
    X509_gmtime_adj(X509_getm_notBefore(x.get()),
                    o.validSeconds < 0 ? o.validSeconds - 3600 : -3600);
    X509_gmtime_adj(X509_getm_notAfter(x.get()), o.validSeconds);
    X509_NAME* name = X509_get_subject_name(x.get());
    for (const auto& [k, v] : o.name)
        X509_NAME_add_entry_by_txt(name, k.c_str(), MBSTRING_UTF8,
                                   reinterpret_cast<const unsigned char*>(v.c_str()), -1, -1, 0);
    X509_set_issuer_name(x.get(), issuer ? X509_get_subject_name(issuer->cert->x509.get()) : name);
    X509_set_pubkey(x.get(), id.key.get());
    X509V3_CTX ctx;
    X509V3_set_ctx(&ctx, issuer ? issuer->cert->x509.get() : x.get(), x.get(), nullptr, nullptr, 0);
    auto add = [&](int nid, const std::string& value) {
        X509_EXTENSION* e = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value.c_str());
        if (!e) return false;
        X509_add_ext(x.get(), e, -1);
        X509_EXTENSION_free(e);
        return true;
    };
    add(NID_basic_constraints, o.ca ? "critical,CA:TRUE" : "critical,CA:FALSE");
    if (o.keyUsage) add(NID_key_usage, o.keyUsage);
    if (o.extendedKeyUsage) add(NID_ext_key_usage, o.extendedKeyUsage);
    add(NID_subject_key_identifier, "hash");
    if (o.uri) add(NID_subject_alt_name, std::string("URI:") + o.uri);
    if (X509_sign(x.get(), issuer ? issuer->key.get() : id.key.get(), EVP_sha256()) <= 0) return {};
    std::vector<std::uint8_t> der(std::size_t(i2d_X509(x.get(), nullptr)));
    unsigned char* p = der.data();
    i2d_X509(x.get(), &p);
    id.cert = security::Certificate::fromDer(der);
    return id;
}

inline void writeBytes(const std::filesystem::path& file, const std::vector<std::uint8_t>& bytes) {
    std::filesystem::create_directories(file.parent_path());
    std::ofstream(file, std::ios::binary)
        .write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
}

// A CRL of `ca` revoking `serials`, in DER; empty when OpenSSL cannot sign it.
inline std::vector<std::uint8_t> makeCrl(const TestIdentity& ca, const std::vector<long>& serials) {
    X509_CRL* crl = X509_CRL_new();
    X509_CRL_set_version(crl, 1);
    X509_CRL_set_issuer_name(crl, X509_get_subject_name(ca.cert->x509.get()));
    ASN1_TIME* now = X509_gmtime_adj(nullptr, -60);
    ASN1_TIME* next = X509_gmtime_adj(nullptr, 86400);
    X509_CRL_set1_lastUpdate(crl, now);
    X509_CRL_set1_nextUpdate(crl, next);
    for (long s : serials) {
        X509_REVOKED* r = X509_REVOKED_new();
        ASN1_INTEGER* n = ASN1_INTEGER_new();
        ASN1_INTEGER_set(n, s);
        X509_REVOKED_set_serialNumber(r, n);
        X509_REVOKED_set_revocationDate(r, now);
        X509_CRL_add0_revoked(crl, r);
        ASN1_INTEGER_free(n);
    }
    X509_CRL_sort(crl);
    std::vector<std::uint8_t> der;
    if (X509_CRL_sign(crl, ca.key.get(), EVP_sha256()) > 0) {
        der.resize(std::size_t(i2d_X509_CRL(crl, nullptr)));
        unsigned char* p = der.data();
        i2d_X509_CRL(crl, &p);
    }
    ASN1_TIME_free(now);
    ASN1_TIME_free(next);
    X509_CRL_free(crl);
    return der;
}

// The asymmetric header of an OPN Issue for `policy`: sender certificate and the receiver's
// thumbprint; `sealed` is the rest (sequence header, body, padding and signature, encrypted),
// or any bytes a hostile client sends instead.
inline std::vector<std::uint8_t> opnChunk(std::string_view policyUri,
                                          const std::vector<std::uint8_t>& senderCertificate,
                                          const security::Thumbprint& receiver,
                                          const std::vector<std::uint8_t>& sealed) {
    enc::ByteBuffer b;
    enc::BinaryWriter w(b);
    w.writeBytes("OPNF", 4);
    w.writeRaw<std::uint32_t>(0);
    w.writeRaw<std::uint32_t>(0);
    enc::encode(w, ua::makeString(policyUri));
    enc::encode(w, ua::ByteString{std::int32_t(senderCertificate.size()),
                                  const_cast<std::uint8_t*>(senderCertificate.data())});
    enc::encode(w, ua::ByteString{20, const_cast<std::uint8_t*>(receiver.data())});
    auto v = b.toVector();
    v.insert(v.end(), sealed.begin(), sealed.end());
    std::uint32_t size = std::uint32_t(v.size());
    std::memcpy(v.data() + 4, &size, 4);
    return v;
}

// A real OPN Issue (SignAndEncrypt) from `client` to the server certificate `server`.
inline std::vector<std::uint8_t> securedOpn(const security::PolicyInfo& policy,
                                            const TestIdentity& client,
                                            const std::shared_ptr<security::Certificate>& server,
                                            const std::vector<std::uint8_t>& clientNonce) {
    auto sec = security::makeClientChannelSecurity(policy, client.cert, client.key.get(), server);
    enc::ByteBuffer b;
    enc::BinaryWriter w(b);
    w.writeBytes("OPNF", 4);
    w.writeRaw<std::uint32_t>(0);
    w.writeRaw<std::uint32_t>(0);
    enc::encode(w, ua::makeString(policy.uri));
    enc::encode(w, ua::ByteString{std::int32_t(client.cert->der.size()),
                                  const_cast<std::uint8_t*>(client.cert->der.data())});
    enc::encode(w, ua::ByteString{20, const_cast<std::uint8_t*>(server->thumbprint.data())});
    std::size_t offset = b.size();
    w.writeRaw<std::uint32_t>(1);  // sequence number
    w.writeRaw<std::uint32_t>(1);  // request id
    ua::OpenSecureChannelRequest req{};
    req.requestHeader.authenticationToken = ua::numericNodeId(0, 0);
    req.requestHeader.auditEntryId = ua::nullString();
    req.requestType = ua::SecurityTokenRequestType::Issue;
    req.securityMode = ua::MessageSecurityMode::SignAndEncrypt;
    req.clientNonce = ua::ByteString{std::int32_t(clientNonce.size()),
                                     const_cast<std::uint8_t*>(clientNonce.data())};
    req.requestedLifetime = 60000;
    enc::encodeMessage(w, req);
    auto v = b.toVector();
    std::size_t length = v.size();
    v.resize(sec->asymmetricSize(offset, length - offset));
    if (sec->secureAsymmetric(v, offset, length) != UAPLEX_Good) return {};
    v.resize(length);
    return v;
}

}  // namespace uaplex::test
