// SPDX-License-Identifier: Apache-2.0
// X509 user identity tokens end to end in the kernel: IdentityVerifier with a `subject` and a
// `thumbprint` mapping, the real PkiIdentityCrypto and certificate store, real certificates
// and token signatures. Only certificates the user trust list validates get their roles.
#include <unistd.h>

#include <catch2/catch.hpp>

#include <filesystem>

#include <uaplex/config/access_names.hpp>
#include <uaplex/server/pki_identity_crypto.hpp>
#include "support/test_certificates.hpp"

using namespace uaplex;
namespace fs = std::filesystem;

namespace {

constexpr const char* kSha256 = "http://www.w3.org/2001/04/xmldsig-more#rsa-sha256";

struct Fixture {
    fs::path root = fs::temp_directory_path() / ("uaplex-user-certs-" + std::to_string(getpid()));
    security::Pki pki{root};
    test::TestIdentity ca, byCa, revoked, encipherOnly, spoofed, pinned, expiredPinned;
    std::shared_ptr<server::PkiIdentityCrypto> crypto;
    std::unique_ptr<session::IdentityVerifier> verifier;
    std::vector<uaplex_status> refusals;

    Fixture() {
        fs::remove_all(root);
        security::CertificateRequest r;
        r.applicationUri = "urn:test:server";
        pki.loadOrCreateOwn(r);
        test::IssueOptions o;
        o.name = {{"O", "plant"}, {"CN", "user CA"}};
        o.ca = true;
        o.keyUsage = "critical,keyCertSign,cRLSign";
        ca = test::issueCertificate(o);
        test::IssueOptions u;
        u.name = {{"O", "plant"}, {"CN", "operator-1"}};
        u.serial = 2;
        byCa = test::issueCertificate(u, &ca);
        u.serial = 3;
        revoked = test::issueCertificate(u, &ca);
        u.serial = 4;
        u.keyUsage = "critical,keyEncipherment";
        encipherOnly = test::issueCertificate(u, &ca);
        u.serial = 5;
        u.keyUsage = "critical,digitalSignature";
        spoofed = test::issueCertificate(u);  // self-signed, the mapped subject
        test::IssueOptions p;
        p.name = {{"O", "plant"}, {"CN", "pinned"}};
        p.serial = 6;
        pinned = test::issueCertificate(p);
        p.serial = 7;
        p.validSeconds = -60;
        expiredPinned = test::issueCertificate(p);
        for (auto* id : {&ca, &byCa, &revoked, &encipherOnly, &spoofed, &pinned, &expiredPinned})
            REQUIRE(id->cert);
        test::writeBytes(root / "trusted-users/certs/ca.der", ca.cert->der);
        test::writeBytes(root / "trusted-users/crl/ca.crl", test::makeCrl(ca, {3}));

        config::AccessSection cfg;
        cfg.certificates.push_back({"", "CN=operator-1,O=plant", {"Operator"}});
        cfg.certificates.push_back({thumb(pinned), "", {"Engineer"}});
        cfg.certificates.push_back({thumb(expiredPinned), "", {"Engineer"}});
        crypto = std::make_shared<server::PkiIdentityCrypto>(pki);
        crypto->onRefused = [this](uaplex_status st, const security::Certificate&) {
            refusals.push_back(st);
        };
        verifier = std::make_unique<session::IdentityVerifier>(cfg, crypto);
    }
    ~Fixture() {
        std::error_code ec;
        fs::remove_all(root, ec);
    }
    static std::string thumb(const test::TestIdentity& id) {
        std::string h = id.cert->thumbprintHex();
        for (auto& c : h) c = char(std::toupper(static_cast<unsigned char>(c)));
        return h;
    }
    uaplex_status activate(const test::TestIdentity& user, session::UserIdentity& out) {
        std::vector<std::uint8_t> nonce(32);
        REQUIRE(security::randomBytes(nonce));
        std::vector<std::uint8_t> sig(user.cert->keyBytes());
        REQUIRE(security::rsaSign(security::AsymmetricSignature::RsaPkcs15Sha256, user.key.get(),
                                  {pki.own()->der, nonce}, sig));
        ua::X509IdentityToken t{ua::makeString("certificate"),
                                ua::ByteString{std::int32_t(user.cert->der.size()),
                                               const_cast<std::uint8_t*>(user.cert->der.data())}};
        ua::ExtensionObject eo{};
        eo.encoding = UAPLEX_EXTENSIONOBJECT_BINARY;
        eo.data_type = enc::dataTypeOf<ua::X509IdentityToken>();
        eo.object = &t;
        ua::SignatureData s{ua::makeString(kSha256),
                            ua::ByteString{std::int32_t(sig.size()), sig.data()}};
        session::ActivationContext ctx;
        ctx.userTokenSignature = &s;
        ctx.serverNonce = nonce;
        ctx.serverCertificate = pki.own()->der;
        ctx.channelSecurityPolicyUri = "http://opcfoundation.org/UA/SecurityPolicy#Basic256Sha256";
        return verifier->verify(eo, ctx, out);
    }
};

session::RoleMask role(std::string_view name) {
    return 1u << config::roleIndex(name);
}

}  // namespace

TEST_CASE("X509 users: only certificates the user trust list validates get their roles") {
    Fixture f;
    session::UserIdentity id;
    // A freshly self-signed certificate with the mapped subject: no roles.
    CHECK(f.activate(f.spoofed, id) == UAPLEX_BadIdentityTokenRejected);
    REQUIRE(!f.refusals.empty());
    CHECK(f.refusals.back() == UAPLEX_BadCertificateUntrusted);
    // Issued by the trusted user CA, the same subject: Operator.
    REQUIRE(f.activate(f.byCa, id) == UAPLEX_Good);
    CHECK((id.roles & role("Operator")) != 0);
    // Revoked by the CA's CRL.
    CHECK(f.activate(f.revoked, id) == UAPLEX_BadIdentityTokenRejected);
    CHECK(f.refusals.back() == UAPLEX_BadCertificateRevoked);
    // No digitalSignature in its key usage.
    CHECK(f.activate(f.encipherOnly, id) == UAPLEX_BadIdentityTokenRejected);
    CHECK(f.refusals.back() == UAPLEX_BadCertificateUseNotAllowed);
    // Pinned by thumbprint: valid gets its roles without a chain, expired does not.
    REQUIRE(f.activate(f.pinned, id) == UAPLEX_Good);
    CHECK((id.roles & role("Engineer")) != 0);
    CHECK(f.activate(f.expiredPinned, id) == UAPLEX_BadIdentityTokenRejected);
    CHECK(f.refusals.back() == UAPLEX_BadCertificateTimeInvalid);
}
