// kernel/security: key derivation, symmetric and asymmetric chunk security per policy, the
// secure channel with a secured policy (tampering, replay, token renewal), the PKI's
// validation, and the user identity token helpers.
#include <catch2/catch.hpp>

#include <uaplex/encoding/encoding.hpp>

#include <unistd.h>
#include <cstring>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "../securechannel/fake_channel.hpp"
#include "security/channel_security.hpp"
#include "security/identity.hpp"
#include "security/pki.hpp"

#include <openssl/x509v3.h>

using namespace uaplex;
using namespace uaplex::security;
using securechannel::SecurityMode;
namespace fs = std::filesystem;

namespace {

std::vector<std::uint8_t> hex(std::string_view s) {
    std::vector<std::uint8_t> v;
    for (std::size_t i = 0; i + 1 < s.size(); i += 2)
        v.push_back(std::uint8_t(std::stoul(std::string(s.substr(i, 2)), nullptr, 16)));
    return v;
}

struct Identity {
    PkeyPtr key;
    std::shared_ptr<Certificate> cert;
};

Identity makeIdentity(std::string uri, std::uint32_t bits = 2048, int days = 30) {
    CertificateRequest r;
    r.applicationUri = std::move(uri);
    r.dnsNames = {"localhost"};
    r.keyBits = bits;
    r.validDays = days;
    Identity id;
    std::vector<std::uint8_t> der;
    std::string error;
    REQUIRE(createSelfSigned(r, id.key, der, error));
    id.cert = Certificate::fromDer(der);
    REQUIRE(id.cert);
    return id;
}

const Identity& serverId() {
    static Identity id = makeIdentity("urn:test:server");
    return id;
}
const Identity& clientId() {
    static Identity id = makeIdentity("urn:test:client");
    return id;
}

struct Pair {
    std::unique_ptr<securechannel::ChannelSecurity> server, client;
};

Pair makePair(const PolicyInfo& policy, const Identity& s = serverId(),
              const Identity& c = clientId()) {
    Pair p;
    p.server = makeChannelSecurity(policy, s.cert, s.key.get(), nullptr);
    p.client = makeClientChannelSecurity(policy, c.cert, c.key.get(), s.cert);
    return p;
}

std::vector<std::uint8_t> nonce(std::size_t n, std::uint8_t fill) {
    return std::vector<std::uint8_t>(n, fill);
}

void deriveBoth(Pair& p, std::uint32_t token, const PolicyInfo& policy) {
    auto cn = nonce(policy.nonceLength, 0x11), sn = nonce(policy.nonceLength, 0x22);
    REQUIRE(p.server->deriveKeys(token, cn, sn) == UAPLEX_Good);
    REQUIRE(p.client->deriveKeys(token, cn, sn) == UAPLEX_Good);
}

// A MSG chunk secured by `sender`; the buffer is sized for the overhead.
std::vector<std::uint8_t> securedMsg(securechannel::ChannelSecurity& sender, SecurityMode mode,
                                     std::uint32_t channelId, std::uint32_t token,
                                     std::uint32_t seq, std::uint32_t requestId,
                                     const std::vector<std::uint8_t>& body) {
    auto v = test::msgChunk("MSGF", channelId, token, seq, requestId, body);
    std::size_t length = v.size();
    v.resize(v.size() + sender.symmetricOverhead(mode));
    REQUIRE(sender.secureSymmetric(token, mode, v, 16, length) == UAPLEX_Good);
    v.resize(length);
    return v;
}

}  // namespace

TEST_CASE("P_SHA256 matches the TLS 1.2 PRF test vector") {
    auto secret = hex("9bbe436ba940f017b17652849a71db35");
    std::string label = "test label";
    std::vector<std::uint8_t> seed(label.begin(), label.end());
    auto s2 = hex("a0ba9f936cda311827a6f796ffd5198c");
    seed.insert(seed.end(), s2.begin(), s2.end());
    std::vector<std::uint8_t> out(100);
    REQUIRE(pHash(false, secret, seed, out));
    CHECK(out == hex("e3f229ba727be17b8d122620557cd453c2aab21d07c3d495329b52d4e61edb5a6b301791e90d"
                     "35c9c9a46b4e14baf9af0fa022f7077def17abfd3797c0564bab4fbc91666e9def9b97fce34f"
                     "796789baa48082d122ee42c5a72e5a5110fff70187347b66"));
}

TEST_CASE("symmetric chunks round-trip for every policy and mode") {
    std::vector<std::uint8_t> body(8 + 301);
    for (std::size_t i = 0; i < body.size(); ++i) body[i] = std::uint8_t(i * 7);
    for (const auto& policy : policies()) {
        for (SecurityMode mode : {SecurityMode::Sign, SecurityMode::SignAndEncrypt}) {
            INFO(policy.name << " mode " << int(mode));
            Pair p = makePair(policy);
            deriveBoth(p, 1, policy);
            auto v = securedMsg(*p.client, mode, 5, 1, 1, 9, body);
            const std::size_t sig = policy.symmetricSignatureSize();
            if (mode == SecurityMode::SignAndEncrypt) {
                // Padding makes the encrypted part a whole number of AES blocks.
                CHECK((v.size() - 16) % 16 == 0);
                // Encrypted: the body is not readable on the wire.
                CHECK(std::memcmp(v.data() + 24 + 8, body.data() + 8, 64) != 0);
            } else {
                CHECK(v.size() == 24 + body.size() + sig);
            }
            CHECK(test::get32(v, 4) == v.size());
            std::size_t bodyLength = 0;
            REQUIRE(p.server->verifySymmetric(1, mode, v, 16, bodyLength) == UAPLEX_Good);
            REQUIRE(bodyLength == 8 + body.size());
            CHECK(std::memcmp(v.data() + 24, body.data(), body.size()) == 0);
            // And the server's direction.
            auto back = securedMsg(*p.server, mode, 5, 1, 1, 9, body);
            REQUIRE(p.client->verifySymmetric(1, mode, back, 16, bodyLength) == UAPLEX_Good);
            // Client keys do not verify server messages.
            auto again = securedMsg(*p.server, mode, 5, 1, 2, 9, body);
            CHECK(p.server->verifySymmetric(1, mode, again, 16, bodyLength) ==
                  UAPLEX_BadSecurityChecksFailed);
        }
    }
}

TEST_CASE("a tampered symmetric chunk or bad padding fails the checks") {
    const PolicyInfo& policy = *findPolicy("Basic256Sha256");
    std::vector<std::uint8_t> body(8 + 40, 0x5a);
    for (SecurityMode mode : {SecurityMode::Sign, SecurityMode::SignAndEncrypt}) {
        Pair p = makePair(policy);
        deriveBoth(p, 1, policy);
        for (std::size_t at : {std::size_t(5), std::size_t(30), std::size_t(0)}) {
            auto v = securedMsg(*p.client, mode, 5, 1, 1, 9, body);
            std::size_t pos = at == 0 ? v.size() - 1 : at;  // header, body, signature
            v[pos] ^= 0x01;
            std::size_t bodyLength = 0;
            CHECK(p.server->verifySymmetric(1, mode, v, 16, bodyLength) ==
                  UAPLEX_BadSecurityChecksFailed);
        }
        auto v = securedMsg(*p.client, mode, 5, 1, 1, 9, body);
        std::size_t bodyLength = 0;
        CHECK(p.server->verifySymmetric(2, mode, v, 16, bodyLength) ==
              UAPLEX_BadSecureChannelTokenUnknown);
        // Truncated to a non-block length.
        v.pop_back();
        CHECK(p.server->verifySymmetric(1, mode, v, 16, bodyLength) ==
              UAPLEX_BadSecurityChecksFailed);
    }
}

TEST_CASE("nonces of the wrong length are refused") {
    const PolicyInfo& policy = *findPolicy("Aes128_Sha256_RsaOaep");
    Pair p = makePair(policy);
    CHECK(p.server->deriveKeys(1, nonce(16, 1), nonce(32, 2)) == UAPLEX_BadNonceInvalid);
}

namespace {

// An OPN chunk as a client writes it, secured with `client`.
std::vector<std::uint8_t> securedOpen(securechannel::ChannelSecurity& client,
                                      const PolicyInfo& policy, std::uint32_t channelId,
                                      std::uint32_t seq, ua::SecurityTokenRequestType type,
                                      ua::MessageSecurityMode mode,
                                      const std::vector<std::uint8_t>& clientNonce,
                                      const Certificate& clientCert, const Certificate& server) {
    enc::ByteBuffer b;
    enc::BinaryWriter w(b);
    w.writeBytes("OPNF", 4);
    w.writeRaw<std::uint32_t>(0);
    w.writeRaw<std::uint32_t>(channelId);
    enc::encode(w, ua::makeString(policy.uri));
    enc::encode(w, ua::ByteString{std::int32_t(clientCert.der.size()),
                                  const_cast<std::uint8_t*>(clientCert.der.data())});
    enc::encode(w, ua::ByteString{20, const_cast<std::uint8_t*>(server.thumbprint.data())});
    std::size_t offset = b.size();
    w.writeRaw<std::uint32_t>(seq);
    w.writeRaw<std::uint32_t>(1);
    ua::OpenSecureChannelRequest req{};
    req.requestHeader.authenticationToken = ua::numericNodeId(0, 0);
    req.requestHeader.auditEntryId = ua::nullString();
    req.requestType = type;
    req.securityMode = mode;
    req.clientNonce = ua::ByteString{std::int32_t(clientNonce.size()),
                                     const_cast<std::uint8_t*>(clientNonce.data())};
    req.requestedLifetime = 60000;
    enc::encodeMessage(w, req);
    auto v = b.toVector();
    std::size_t length = v.size();
    v.resize(client.asymmetricSize(offset, length - offset));
    REQUIRE(client.secureAsymmetric(v, offset, length) == UAPLEX_Good);
    v.resize(length);
    return v;
}

struct OpenResult {
    std::uint32_t channelId = 0, tokenId = 0;
    std::vector<std::uint8_t> serverNonce;
};

OpenResult readOpen(securechannel::ChannelSecurity& client, std::vector<std::uint8_t> chunk) {
    enc::Arena arena(1 << 20);
    enc::DecodeLimits limits;
    enc::BinaryReader r(std::span<const std::uint8_t>(chunk), arena, limits);
    r.take(12);
    ua::String uri;
    ua::ByteString cert, thumb;
    enc::decode(r, uri);
    enc::decode(r, cert);
    enc::decode(r, thumb);
    std::size_t offset = r.position();
    std::size_t bodyEnd = 0;
    REQUIRE(client.openAsymmetric(chunk, offset, {cert.data, std::size_t(cert.length)},
                                  {thumb.data, std::size_t(thumb.length)}, bodyEnd) == UAPLEX_Good);
    auto m = enc::decodeMessage({chunk.data() + offset + 8, bodyEnd - offset - 8}, arena, limits);
    REQUIRE(m.status == UAPLEX_Good);
    REQUIRE(m.type == enc::dataTypeOf<ua::OpenSecureChannelResponse>());
    const auto& resp = *static_cast<ua::OpenSecureChannelResponse*>(m.object);
    OpenResult out;
    out.channelId = resp.securityToken.channelId;
    out.tokenId = resp.securityToken.tokenId;
    out.serverNonce.assign(resp.serverNonce.data, resp.serverNonce.data + resp.serverNonce.length);
    return out;
}

struct TestProvider final : securechannel::SecurityProvider {
    const PolicyInfo* policy;
    const Identity* server;
    uaplex_status verdict = UAPLEX_Good;
    std::unique_ptr<securechannel::ChannelSecurity> create(std::string_view uri) override {
        if (uri != policy->uri) return nullptr;
        return makeChannelSecurity(*policy, server->cert, server->key.get(),
                                   [this](const Certificate&) { return verdict; });
    }
    bool offers(std::string_view uri, SecurityMode mode) const noexcept override {
        return uri == policy->uri && mode != SecurityMode::None;
    }
};

struct SecuredChannel {
    const PolicyInfo& policy;
    TestProvider provider;
    test::FakeOutput out;
    std::unique_ptr<securechannel::SecureChannel> channel;
    std::unique_ptr<securechannel::ChannelSecurity> client;
    std::vector<std::uint8_t> clientNonce;
    OpenResult opened;
    std::uint32_t seq = 1;

    SecuredChannel(const PolicyInfo& p, const Identity& server = serverId())
        : policy(p), clientNonce(p.nonceLength, 0x33) {
        provider.policy = &p;
        provider.server = &server;
        securechannel::ChannelLimits limits;
        limits.security = &provider;
        limits.offersNone = false;
        channel = std::make_unique<securechannel::SecureChannel>(limits, out);
        securechannel::Negotiated n;
        n.sendBufferSize = 65535;
        channel->setNegotiated(n);
        client = makeClientChannelSecurity(p, clientId().cert, clientId().key.get(), server.cert);
    }
    securechannel::SecureChannel::Event feed(std::vector<std::uint8_t> chunk,
                                             std::int64_t nowMs = 1000) {
        return channel->onChunk(chunk, securechannel::Clock{nowMs, 0}, 42);
    }
    void open(ua::MessageSecurityMode mode,
              ua::SecurityTokenRequestType type = ua::SecurityTokenRequestType::Issue) {
        std::size_t before = out.sent.size();
        feed(securedOpen(*client, policy, type == ua::SecurityTokenRequestType::Issue ? 0 : 42,
                         seq++, type, mode, clientNonce, *clientId().cert, *provider.server->cert));
        REQUIRE(out.failed == UAPLEX_Good);
        REQUIRE(out.sent.size() == before + 1);
        opened = readOpen(*client, out.sent.back());
        REQUIRE(client->deriveKeys(opened.tokenId, clientNonce, opened.serverNonce) == UAPLEX_Good);
    }
};

}  // namespace

TEST_CASE("a secured channel opens, serves messages and closes on tampering or replay") {
    for (const char* name : {"Basic256Sha256", "Aes128_Sha256_RsaOaep", "Aes256_Sha256_RsaPss",
                             "Basic128Rsa15", "Basic256"}) {
        const PolicyInfo& policy = *findPolicy(name);
        INFO(name);
        SecuredChannel c(policy);
        c.open(ua::MessageSecurityMode::SignAndEncrypt);
        CHECK(c.out.wasOpened);
        CHECK(c.opened.channelId == 42);
        CHECK(c.opened.serverNonce.size() == policy.nonceLength);
        CHECK(c.channel->securityMode() == SecurityMode::SignAndEncrypt);
        std::vector<std::uint8_t> body(100, 0x42);
        auto msg = securedMsg(*c.client, SecurityMode::SignAndEncrypt, 42, c.opened.tokenId,
                              c.seq++, 7, body);
        REQUIRE(c.feed(msg) == securechannel::SecureChannel::Event::Message);
        CHECK(c.channel->assembledBody().size() == body.size());

        // The response is secured with the server keys.
        std::vector<uaplex_buffer> scratch;
        REQUIRE(c.channel->sendMessage(7, body, scratch) == UAPLEX_Good);
        auto resp = c.out.sent.back();
        std::size_t bodyLength = 0;
        REQUIRE(c.client->verifySymmetric(c.opened.tokenId, SecurityMode::SignAndEncrypt, resp, 16,
                                          bodyLength) == UAPLEX_Good);
        CHECK(bodyLength == 8 + body.size());

        SECTION("a replayed sequence number closes the channel") {
            c.feed(msg);
            CHECK(c.out.failed == UAPLEX_BadSequenceNumberInvalid);
        }
        SECTION("a tampered signature closes the channel") {
            auto bad = securedMsg(*c.client, SecurityMode::SignAndEncrypt, 42, c.opened.tokenId,
                                  c.seq++, 8, body);
            bad[bad.size() - 3] ^= 0x80;
            c.feed(bad);
            CHECK(c.out.failed == UAPLEX_BadSecurityChecksFailed);
        }
        SECTION("a sequence gap closes the channel") {
            auto gap = securedMsg(*c.client, SecurityMode::SignAndEncrypt, 42, c.opened.tokenId,
                                  c.seq + 5, 8, body);
            c.feed(gap);
            CHECK(c.out.failed == UAPLEX_BadSequenceNumberInvalid);
        }
    }
}

TEST_CASE("Sign mode: the body travels in clear, signed") {
    const PolicyInfo& policy = *findPolicy("Basic256Sha256");
    SecuredChannel c(policy);
    c.open(ua::MessageSecurityMode::Sign);
    std::vector<std::uint8_t> body(50, 0x61);
    auto msg = securedMsg(*c.client, SecurityMode::Sign, 42, c.opened.tokenId, c.seq++, 7, body);
    CHECK(std::memcmp(msg.data() + 24, body.data(), body.size()) == 0);
    REQUIRE(c.feed(msg) == securechannel::SecureChannel::Event::Message);
    // A SignAndEncrypt-secured chunk on a Sign channel fails.
    auto enc =
        securedMsg(*c.client, SecurityMode::SignAndEncrypt, 42, c.opened.tokenId, c.seq++, 8, body);
    c.feed(enc);
    CHECK(c.out.failed == UAPLEX_BadSecurityChecksFailed);
}

TEST_CASE("token renewal: the old token is accepted until the new one is used") {
    const PolicyInfo& policy = *findPolicy("Aes256_Sha256_RsaPss");
    SecuredChannel c(policy);
    c.open(ua::MessageSecurityMode::SignAndEncrypt);
    std::uint32_t oldToken = c.opened.tokenId;
    c.clientNonce.assign(policy.nonceLength, 0x44);
    c.open(ua::MessageSecurityMode::SignAndEncrypt, ua::SecurityTokenRequestType::Renew);
    std::uint32_t newToken = c.opened.tokenId;
    REQUIRE(newToken != oldToken);
    std::vector<std::uint8_t> body(20, 1);
    auto mode = SecurityMode::SignAndEncrypt;
    REQUIRE(c.feed(securedMsg(*c.client, mode, 42, oldToken, c.seq++, 1, body)) ==
            securechannel::SecureChannel::Event::Message);
    REQUIRE(c.feed(securedMsg(*c.client, mode, 42, newToken, c.seq++, 2, body)) ==
            securechannel::SecureChannel::Event::Message);
    // The server now answers with the new token's keys.
    std::vector<uaplex_buffer> scratch;
    REQUIRE(c.channel->sendMessage(2, body, scratch) == UAPLEX_Good);
    CHECK(test::get32(c.out.sent.back(), 12) == newToken);
    std::size_t bodyLength = 0;
    CHECK(c.client->verifySymmetric(newToken, mode, c.out.sent.back(), 16, bodyLength) ==
          UAPLEX_Good);
    c.feed(securedMsg(*c.client, mode, 42, oldToken, c.seq++, 3, body));
    CHECK(c.out.failed == UAPLEX_BadSecureChannelTokenUnknown);
}

TEST_CASE("OpenSecureChannel refusals") {
    const PolicyInfo& policy = *findPolicy("Basic256Sha256");
    SECTION("an untrusted certificate") {
        SecuredChannel c(policy);
        c.provider.verdict = UAPLEX_BadSecurityChecksFailed;
        c.feed(securedOpen(*c.client, policy, 0, 1, ua::SecurityTokenRequestType::Issue,
                           ua::MessageSecurityMode::SignAndEncrypt, c.clientNonce, *clientId().cert,
                           *serverId().cert));
        CHECK(c.out.failed == UAPLEX_BadSecurityChecksFailed);
        CHECK(!c.channel->isOpen());
    }
    SECTION("a wrong receiver thumbprint") {
        SecuredChannel c(policy);
        c.feed(securedOpen(*c.client, policy, 0, 1, ua::SecurityTokenRequestType::Issue,
                           ua::MessageSecurityMode::SignAndEncrypt, c.clientNonce, *clientId().cert,
                           *clientId().cert));
        CHECK(c.out.failed == UAPLEX_BadCertificateInvalid);
    }
    SECTION("a short client nonce") {
        SecuredChannel c(policy);
        c.feed(securedOpen(*c.client, policy, 0, 1, ua::SecurityTokenRequestType::Issue,
                           ua::MessageSecurityMode::SignAndEncrypt, nonce(8, 1), *clientId().cert,
                           *serverId().cert));
        CHECK(c.out.failed == UAPLEX_BadNonceInvalid);
    }
    SECTION("mode None with a secured policy") {
        SecuredChannel c(policy);
        c.feed(securedOpen(*c.client, policy, 0, 1, ua::SecurityTokenRequestType::Issue,
                           ua::MessageSecurityMode::None_, c.clientNonce, *clientId().cert,
                           *serverId().cert));
        CHECK(c.out.failed == UAPLEX_BadSecurityModeRejected);
    }
    SECTION("a tampered OPN") {
        SecuredChannel c(policy);
        auto v = securedOpen(*c.client, policy, 0, 1, ua::SecurityTokenRequestType::Issue,
                             ua::MessageSecurityMode::SignAndEncrypt, c.clientNonce,
                             *clientId().cert, *serverId().cert);
        v[v.size() - 10] ^= 1;
        c.feed(v);
        CHECK(c.out.failed == UAPLEX_BadSecurityChecksFailed);
    }
    SECTION("policy None when not offered") {
        SecuredChannel c(policy);
        c.feed(test::openChunk(0, 1, 1, ua::SecurityTokenRequestType::Issue, 30000));
        CHECK(c.out.failed == UAPLEX_BadSecurityPolicyRejected);
    }
}

TEST_CASE("4096-bit keys: asymmetric chunks carry the extra padding byte") {
    static Identity big = makeIdentity("urn:test:big", 4096);
    const PolicyInfo& policy = *findPolicy("Basic256Sha256");
    SecuredChannel c(policy, big);
    c.open(ua::MessageSecurityMode::SignAndEncrypt);
    CHECK(c.out.sent.back().size() > 1024);
    std::vector<std::uint8_t> body(10, 1);
    REQUIRE(c.feed(securedMsg(*c.client, SecurityMode::SignAndEncrypt, 42, c.opened.tokenId,
                              c.seq++, 1, body)) == securechannel::SecureChannel::Event::Message);
}

TEST_CASE("PKI: trust lists, rejected copies, validity, URI") {
    fs::path root = fs::temp_directory_path() / ("uaplex-pki-test-" + std::to_string(::getpid()));
    fs::remove_all(root);
    Pki pki(root);
    CertificateRequest r;
    r.applicationUri = "urn:test:own";
    pki.loadOrCreateOwn(r);
    REQUIRE(pki.own());
    CHECK(pki.own()->applicationUri() == "urn:test:own");
    CHECK(fs::exists(root / "own/private/uaplex.pem"));
    // Loading again keeps the same certificate.
    Pki again(root);
    again.loadOrCreateOwn(r);
    CHECK(again.own()->der == pki.own()->der);

    const Certificate& client = *clientId().cert;
    CHECK(pki.validate(client) == UAPLEX_BadCertificateUntrusted);
    fs::path rejected = root / "rejected/certs" / (client.thumbprintHex() + ".der");
    REQUIRE(fs::exists(rejected));
    fs::rename(rejected, root / "trusted/certs" / rejected.filename());
    CHECK(pki.validate(client) == UAPLEX_Good);
    CHECK(pki.validate(client, "urn:test:client") == UAPLEX_Good);
    CHECK(pki.validate(client, "urn:test:other") == UAPLEX_BadCertificateUriInvalid);

    Identity expired = makeIdentity("urn:test:expired", 2048, -1);
    std::ofstream(root / "trusted/certs/expired.der", std::ios::binary)
        .write(reinterpret_cast<const char*>(expired.cert->der.data()),
               std::streamsize(expired.cert->der.size()));
    CHECK(pki.validate(*expired.cert) == UAPLEX_BadCertificateTimeInvalid);
    fs::remove_all(root);
}

namespace {

// A certificate signed by `issuer` (self-signed when null) with `keyUsage` (OpenSSL syntax).
Identity issue(const char* cn, const char* uri, const Identity* issuer, const char* keyUsage,
               bool ca, long serial) {
    Identity id;
    id.key.reset(EVP_RSA_gen(2048));
    X509Ptr x(X509_new());
    X509_set_version(x.get(), 2);
    ASN1_INTEGER_set(X509_get_serialNumber(x.get()), serial);
    X509_gmtime_adj(X509_getm_notBefore(x.get()), -3600);
    X509_gmtime_adj(X509_getm_notAfter(x.get()), 30 * 86400);
    X509_NAME* name = X509_get_subject_name(x.get());
    X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_UTF8,
                               reinterpret_cast<const unsigned char*>(cn), -1, -1, 0);
    X509_set_issuer_name(x.get(), issuer ? X509_get_subject_name(issuer->cert->x509.get()) : name);
    X509_set_pubkey(x.get(), id.key.get());
    X509V3_CTX ctx;
    X509V3_set_ctx(&ctx, issuer ? issuer->cert->x509.get() : x.get(), x.get(), nullptr, nullptr, 0);
    auto add = [&](int nid, std::string value) {
        X509_EXTENSION* e = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value.c_str());
        REQUIRE(e);
        X509_add_ext(x.get(), e, -1);
        X509_EXTENSION_free(e);
    };
    add(NID_basic_constraints, ca ? "critical,CA:TRUE" : "critical,CA:FALSE");
    add(NID_key_usage, keyUsage);
    add(NID_subject_key_identifier, "hash");
    if (uri) add(NID_subject_alt_name, std::string("URI:") + uri);
    REQUIRE(X509_sign(x.get(), issuer ? issuer->key.get() : id.key.get(), EVP_sha256()) > 0);
    std::vector<std::uint8_t> der(std::size_t(i2d_X509(x.get(), nullptr)));
    unsigned char* p = der.data();
    i2d_X509(x.get(), &p);
    id.cert = Certificate::fromDer(der);
    REQUIRE(id.cert);
    return id;
}

// A CRL of `ca` revoking `serials`.
void writeCrl(const fs::path& file, const Identity& ca, std::vector<long> serials) {
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
    REQUIRE(X509_CRL_sign(crl, ca.key.get(), EVP_sha256()) > 0);
    std::vector<std::uint8_t> der(std::size_t(i2d_X509_CRL(crl, nullptr)));
    unsigned char* p = der.data();
    i2d_X509_CRL(crl, &p);
    std::ofstream(file, std::ios::binary)
        .write(reinterpret_cast<const char*>(der.data()), std::streamsize(der.size()));
    ASN1_TIME_free(now);
    ASN1_TIME_free(next);
    X509_CRL_free(crl);
}

void writeDer(const fs::path& file, const Certificate& c) {
    std::ofstream(file, std::ios::binary)
        .write(reinterpret_cast<const char*>(c.der.data()), std::streamsize(c.der.size()));
}

}  // namespace

TEST_CASE("PKI: CA-issued certificates, revocation lists and key usage") {
    fs::path root = fs::temp_directory_path() / ("uaplex-pki-ca-" + std::to_string(::getpid()));
    fs::remove_all(root);
    Pki pki(root);
    pki.ensureLayout();
    const char* leafUsage =
        "critical,digitalSignature,nonRepudiation,keyEncipherment,dataEncipherment";
    Identity ca = issue("Test CA", nullptr, nullptr, "critical,keyCertSign,cRLSign", true, 1);
    Identity leaf = issue("leaf", "urn:test:leaf", &ca, leafUsage, false, 7);
    Identity other = issue("other", "urn:test:other", &ca, leafUsage, false, 8);

    // The CA only among the issuers: the chain completes, but nothing is trusted.
    writeDer(root / "issuers/certs/ca.der", *ca.cert);
    CHECK(pki.validate(*leaf.cert) == UAPLEX_BadCertificateUntrusted);
    fs::rename(root / "issuers/certs/ca.der", root / "trusted/certs/ca.der");
    // Trusted CA, but no CRL of it: revocation unknown.
    CHECK(pki.validate(*leaf.cert) == UAPLEX_BadCertificateRevocationUnknown);
    writeCrl(root / "trusted/crl/ca.crl", ca, {});
    CHECK(pki.validate(*leaf.cert) == UAPLEX_Good);
    CHECK(pki.validate(*leaf.cert, "urn:test:leaf") == UAPLEX_Good);
    writeCrl(root / "trusted/crl/ca.crl", ca, {7});
    // The same file rewritten: the directory does not change, so touch it as a tool would.
    fs::last_write_time(root / "trusted/crl", fs::file_time_type::clock::now());
    CHECK(pki.validate(*leaf.cert) == UAPLEX_BadCertificateRevoked);
    CHECK(pki.validate(*other.cert) == UAPLEX_Good);

    // A trusted self-signed certificate that may not encipher keys.
    Identity signOnly = issue("sign-only", "urn:test:sign", nullptr,
                              "critical,digitalSignature,keyCertSign", false, 9);
    writeDer(root / "trusted/certs/sign-only.der", *signOnly.cert);
    CHECK(pki.validate(*signOnly.cert) == UAPLEX_BadCertificateUseNotAllowed);
    fs::remove_all(root);
}

TEST_CASE("UserName password decryption (legacy format) and X509 token signatures") {
    const Identity& server = serverId();
    auto serverNonce = nonce(32, 0x77);
    std::string secret = "s3cret-password";
    for (auto [uri, algorithm] :
         {std::pair{"http://www.w3.org/2001/04/xmlenc#rsa-oaep", AsymmetricEncryption::RsaOaepSha1},
          std::pair{"http://opcfoundation.org/UA/security/rsa-oaep-sha2-256",
                    AsymmetricEncryption::RsaOaepSha256},
          std::pair{"http://www.w3.org/2001/04/xmlenc#rsa-1_5", AsymmetricEncryption::RsaPkcs15}}) {
        INFO(uri);
        std::vector<std::uint8_t> plain(4);
        std::uint32_t length = std::uint32_t(secret.size() + serverNonce.size());
        std::memcpy(plain.data(), &length, 4);
        plain.insert(plain.end(), secret.begin(), secret.end());
        plain.insert(plain.end(), serverNonce.begin(), serverNonce.end());
        std::vector<std::uint8_t> encrypted(1024);
        std::size_t n = 0;
        REQUIRE(rsaEncrypt(algorithm, server.cert->publicKey.get(), plain, encrypted, n));
        encrypted.resize(n);
        std::string password;
        CHECK(decryptUserPassword(server.key.get(), uri, encrypted, serverNonce, password) ==
              UAPLEX_Good);
        CHECK(password == secret);
        CHECK(decryptUserPassword(server.key.get(), uri, encrypted, nonce(32, 0x78), password) ==
              UAPLEX_BadNonceInvalid);
        encrypted[3] ^= 1;
        CHECK(decryptUserPassword(server.key.get(), uri, encrypted, serverNonce, password) ==
              UAPLEX_BadIdentityTokenInvalid);
    }
    std::string password;
    CHECK(decryptUserPassword(server.key.get(), "urn:unknown", {}, serverNonce, password) ==
          UAPLEX_BadIdentityTokenInvalid);

    const Identity& user = clientId();
    std::vector<std::uint8_t> sig(user.cert->keyBytes());
    REQUIRE(rsaSign(AsymmetricSignature::RsaPkcs15Sha256, user.key.get(),
                    {server.cert->der, serverNonce}, sig));
    const char* sha256 = "http://www.w3.org/2001/04/xmldsig-more#rsa-sha256";
    CHECK(verifyX509TokenSignature(user.cert->der, sha256, sig, server.cert->der, serverNonce) ==
          UAPLEX_Good);
    CHECK(verifyX509TokenSignature(user.cert->der, sha256, sig, server.cert->der, nonce(32, 1)) ==
          UAPLEX_BadUserSignatureInvalid);
    CHECK(verifyX509TokenSignature({}, sha256, sig, server.cert->der, serverNonce) ==
          UAPLEX_BadIdentityTokenInvalid);
}
