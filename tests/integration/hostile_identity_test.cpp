// SPDX-License-Identifier: Apache-2.0
// Hostile clients against the real `uaplex`: X509 user identity tokens. A certificate that
// only carries a mapped subject (freshly self-signed, over SecurityPolicy None) gets no roles;
// CA-issued certificates of the user trust list and pinned ones do, unless expired, revoked,
// or signed with another algorithm than the token policy's. Legitimate clients keep working.
#include <catch2/catch.hpp>

#include <sstream>

#include <uaplex/security/crypto.hpp>
#include "support/client_services.hpp"
#include "support/server_process.hpp"
#include "support/test_certificates.hpp"

using namespace uaplex;
using test::Client;
using test::IssueOptions;
using test::TestIdentity;

namespace {

constexpr const char* kSha256 = "http://www.w3.org/2001/04/xmldsig-more#rsa-sha256";
constexpr const char* kSha1 = "http://www.w3.org/2000/09/xmldsig#rsa-sha1";
constexpr long kRevokedSerial = 66;

// The user CA, its users and the pinned certificates (made once: RSA key generation is slow).
struct Users {
    TestIdentity ca, operatorByCa, revoked, expiredPinned, pinned, spoofed;
    Users() {
        IssueOptions o;
        o.name = {{"O", "plant"}, {"CN", "Plant user CA"}};
        o.ca = true;
        o.keyUsage = "critical,keyCertSign,cRLSign";
        ca = test::issueCertificate(o);
        IssueOptions u;
        u.name = {{"O", "plant"}, {"CN", "operator-1"}};
        u.serial = 11;
        operatorByCa = test::issueCertificate(u, &ca);
        u.serial = kRevokedSerial;
        revoked = test::issueCertificate(u, &ca);
        // The attacker's: the mapped subject, self-signed, a key of its own.
        u.serial = 12;
        spoofed = test::issueCertificate(u);
        IssueOptions p;
        p.name = {{"O", "plant"}, {"CN", "pinned"}};
        p.serial = 13;
        pinned = test::issueCertificate(p);
        p.serial = 14;
        p.validSeconds = -3600;
        expiredPinned = test::issueCertificate(p);
        REQUIRE(ca.cert);
        REQUIRE(operatorByCa.cert);
        REQUIRE(revoked.cert);
        REQUIRE(spoofed.cert);
        REQUIRE(pinned.cert);
        REQUIRE(expiredPinned.cert);
    }
};

const Users& users() {
    static Users u;
    return u;
}

std::string upperHex(const security::Certificate& c) {
    std::string h = c.thumbprintHex();
    for (auto& ch : h) ch = char(std::toupper(static_cast<unsigned char>(ch)));
    return h;
}

// A plant configuration: Anonymous may only browse the demo namespace, a `subject`
// mapping makes operator-1 an Operator, two pinned certificates (one expired).
test::ServerProcess& identityServer() {
    static test::ServerProcess s("hostile-identity", [](std::uint16_t port,
                                                        const std::filesystem::path& dir) {
        const Users& u = users();
        auto pki = dir / "pki";
        test::writeBytes(pki / "trusted-users/certs/ca.der", u.ca.cert->der);
        test::writeBytes(pki / "trusted-users/crl/ca.crl", test::makeCrl(u.ca, {kRevokedSerial}));
        std::ostringstream t;
        t << test::configHead(port) << "application_uri = \"urn:hostile:identity\"\n"
          << "security = [{policy = \"None\"}, {policy = \"Basic256Sha256\"}]\n"
          << "pki_dir = \"" << pki.string() << "\"\n"
          << "[access]\nanonymous_roles = [\"Anonymous\"]\n"
          << "[[access.rules]]\nnamespace = \"urn:uaplex:demo\"\nroles = [\"Anonymous\"]\n"
          << "permissions = [\"Browse\"]\n"
          << "[[access.rules]]\nnamespace = \"urn:uaplex:demo\"\nroles = [\"Operator\"]\n"
          << "permissions = [\"Browse\", \"Read\", \"Write\"]\n"
          << "[[access.certificates]]\nsubject = \"CN=operator-1,O=plant\"\n"
          << "roles = [\"Operator\"]\n"
          << "[[access.certificates]]\nthumbprint = \"" << upperHex(*u.pinned.cert) << "\"\n"
          << "roles = [\"Operator\"]\n"
          << "[[access.certificates]]\nthumbprint = \"" << upperHex(*u.expiredPinned.cert)
          << "\"\nroles = [\"Operator\"]\n"
          << "[slots]\nrequest_queue = \"fifo\"\n"
          << "[plugins.fifo]\n[plugins.transport-tcp]\n[plugins.demo]\n";
        return t.str();
    });
    return s;
}

// ActivateSession with an X509IdentityToken of `user`, signed (serverCertificate +
// serverNonce) with `algorithm`.
uaplex_status activateX509(Client& c, const TestIdentity& user, const char* algorithm = kSha256) {
    ua::X509IdentityToken token{};
    token.policyId = ua::makeString("certificate");
    token.certificateData = ua::ByteString{std::int32_t(user.cert->der.size()),
                                           const_cast<std::uint8_t*>(user.cert->der.data())};
    std::vector<std::uint8_t> sig(user.cert->keyBytes());
    auto kind = std::string_view(algorithm) == kSha1
                    ? security::AsymmetricSignature::RsaPkcs15Sha1
                    : security::AsymmetricSignature::RsaPkcs15Sha256;
    REQUIRE(security::rsaSign(kind, user.key.get(), {c.serverCertificate(), c.serverNonce()}, sig));
    ua::ActivateSessionRequest as{};
    as.userIdentityToken.encoding = UAPLEX_EXTENSIONOBJECT_BINARY;
    as.userIdentityToken.type_id = ua::numericNodeId(0, 327);
    as.userIdentityToken.data_type = enc::dataTypeOf<ua::X509IdentityToken>();
    as.userIdentityToken.object = &token;
    as.userTokenSignature.algorithm = ua::makeString(algorithm);
    as.userTokenSignature.signature = ua::ByteString{std::int32_t(sig.size()), sig.data()};
    return Client::result(c.call(as));
}

// The demo's writable Int32: refused unless the session's roles may write it.
uaplex_status writeInt32(Client& c, std::int32_t value) {
    return test::writeInt32(c, ua::stringNodeId(test::demoNamespace(c), "Demo.Scalars.Int32"),
                            value);
}

}  // namespace

TEST_CASE("hostile identity: a self-signed certificate with a mapped subject gets no roles") {
    auto& s = identityServer();
    REQUIRE(s.alive());
    // The exploit over SecurityPolicy None: CreateSession, then the spoofed X509 token.
    for (int i = 0; i < 10; ++i) {
        Client a;
        REQUIRE(a.open(s.port));
        REQUIRE(a.createSessionOnly() == UAPLEX_Good);
        REQUIRE(!a.serverCertificate().empty());
        CHECK(activateX509(a, users().spoofed) == UAPLEX_BadIdentityTokenRejected);
        if (i == 0) {
            // Still only Anonymous: the demo Int32 is not writable.
            REQUIRE(a.activateSession() == UAPLEX_Good);
            CHECK(writeInt32(a, 1) == UAPLEX_BadUserAccessDenied);
        }
        test::legitimateClientServed(s.port);
    }
    CHECK(s.alive());
}

TEST_CASE("hostile identity: user CA and pinned certificates, expired, revoked, wrong algorithm") {
    auto& s = identityServer();
    const Users& u = users();
    auto fresh = [&] {
        auto c = std::make_unique<Client>();
        REQUIRE(c->open(s.port));
        REQUIRE(c->createSessionOnly() == UAPLEX_Good);
        return c;
    };
    {
        // The legitimate operator: issued by the trusted user CA, mapped by subject.
        auto c = fresh();
        REQUIRE(activateX509(*c, u.operatorByCa) == UAPLEX_Good);
        CHECK(writeInt32(*c, 42) == UAPLEX_Good);
    }
    {
        auto c = fresh();
        CHECK(activateX509(*c, u.revoked) == UAPLEX_BadIdentityTokenRejected);
    }
    {
        // Pinned by thumbprint, valid: accepted; expired: refused (Part 4 6.1.3 validity
        // period, the rejection is the token's).
        auto c = fresh();
        CHECK(activateX509(*c, u.pinned) == UAPLEX_Good);
        auto d = fresh();
        CHECK(activateX509(*d, u.expiredPinned) == UAPLEX_BadIdentityTokenRejected);
    }
    {
        // rsa-sha1 although the token policy is Basic256Sha256.
        auto c = fresh();
        CHECK(activateX509(*c, u.operatorByCa, kSha1) == UAPLEX_BadUserSignatureInvalid);
        CHECK(activateX509(*c, u.operatorByCa) == UAPLEX_Good);
    }
    test::legitimateClientServed(s.port);
}
