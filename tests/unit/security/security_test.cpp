// SPDX-License-Identifier: Apache-2.0
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

#include <uaplex/security/channel_security.hpp>
#include <uaplex/security/pki.hpp>
#include <uaplex/security/user_token_crypto.hpp>
#include "support/fake_channel.hpp"
#include "support/test_certificates.hpp"

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

using Identity = test::TestIdentity;

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

// A nonce as a client makes it (the channel refuses constant ones).
std::vector<std::uint8_t> randomNonce(std::size_t n) {
    std::vector<std::uint8_t> v(n);
    REQUIRE(randomBytes(v));
    return v;
}

void deriveBoth(Pair& p, std::uint32_t token, const PolicyInfo& policy) {
    auto cn = randomNonce(policy.nonceLength), sn = randomNonce(policy.nonceLength);
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
    bool record = false;  // the verdict asks to record a proven refusal
    int validations = 0, proven = 0;
    std::unique_ptr<securechannel::ChannelSecurity> create(std::string_view uri) override {
        if (uri != policy->uri) return nullptr;
        return makeChannelSecurity(
            *policy, server->cert, server->key.get(),
            [this](const Certificate&) {
                ++validations;
                return PeerVerdict(verdict, record);
            },
            [this](const Certificate&) { ++proven; });
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
        : policy(p), clientNonce(randomNonce(p.nonceLength)) {
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
    c.clientNonce = randomNonce(policy.nonceLength);
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
    // Validation records nothing (the channel records after the proof of possession).
    fs::path rejected = root / "rejected/certs" / (client.thumbprintHex() + ".der");
    CHECK(!fs::exists(rejected));
    CHECK(pki.reject(client));
    REQUIRE(fs::exists(rejected));
    fs::rename(rejected, root / "trusted/certs" / rejected.filename());
    CHECK(pki.validate(client) == UAPLEX_Good);
    CHECK(pki.validate(client, "urn:test:client") == UAPLEX_Good);
    CHECK(pki.validate(client, "urn:test:other") == UAPLEX_BadCertificateUriInvalid);

    // A complete copy that `uaplex pki trust` wrote but was killed before renaming is not
    // trusted: only the rename commits the trust.
    Identity pending = makeIdentity("urn:test:pending", 2048, 30);
    fs::path temp =
        root / "trusted/certs" / (pending.cert->thumbprintHex() + ".der.0011223344556677.tmp");
    std::ofstream(temp, std::ios::binary)
        .write(reinterpret_cast<const char*>(pending.cert->der.data()),
               std::streamsize(pending.cert->der.size()));
    CHECK(pki.validate(*pending.cert) == UAPLEX_BadCertificateUntrusted);
    fs::rename(temp, root / "trusted/certs" / (pending.cert->thumbprintHex() + ".der"));
    CHECK(pki.validate(*pending.cert) == UAPLEX_Good);

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
               bool ca, long serial, const char* extendedKeyUsage = nullptr,
               const EVP_MD* digest = EVP_sha256(), long validSeconds = 30 * 86400) {
    Identity id;
    id.key.reset(EVP_RSA_gen(2048));
    X509Ptr x(X509_new());
    X509_set_version(x.get(), 2);
    ASN1_INTEGER_set(X509_get_serialNumber(x.get()), serial);
    // A negative validity: expired, valid for an hour before.
    X509_gmtime_adj(X509_getm_notBefore(x.get()), validSeconds < 0 ? validSeconds - 3600 : -3600);
    X509_gmtime_adj(X509_getm_notAfter(x.get()), validSeconds);
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
    if (keyUsage) add(NID_key_usage, keyUsage);
    if (extendedKeyUsage) add(NID_ext_key_usage, extendedKeyUsage);
    add(NID_subject_key_identifier, "hash");
    if (uri) add(NID_subject_alt_name, std::string("URI:") + uri);
    REQUIRE(X509_sign(x.get(), issuer ? issuer->key.get() : id.key.get(), digest) > 0);
    std::vector<std::uint8_t> der(std::size_t(i2d_X509(x.get(), nullptr)));
    unsigned char* p = der.data();
    i2d_X509(x.get(), &p);
    id.cert = Certificate::fromDer(der);
    REQUIRE(id.cert);
    return id;
}

// A CRL of `ca` revoking `serials`.
void writeCrl(const fs::path& file, const Identity& ca, const std::vector<long>& serials) {
    auto der = test::makeCrl(ca, serials);
    REQUIRE(!der.empty());
    test::writeBytes(file, der);
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
    // The same file rewritten in place, the directory's time put back: the per-file stamps
    // still see the change.
    auto dirTime = fs::last_write_time(root / "trusted/crl");
    writeCrl(root / "trusted/crl/ca.crl", ca, {7});
    fs::last_write_time(root / "trusted/crl", dirTime);
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
    struct Case {
        const char* uri;
        AsymmetricEncryption algorithm;
        const char* policy;  // the token policy whose algorithm it is
    };
    for (auto [uri, algorithm, policyName] :
         {Case{"http://www.w3.org/2001/04/xmlenc#rsa-oaep", AsymmetricEncryption::RsaOaepSha1,
               "Basic256Sha256"},
          Case{"http://opcfoundation.org/UA/security/rsa-oaep-sha2-256",
               AsymmetricEncryption::RsaOaepSha256, "Aes256_Sha256_RsaPss"},
          Case{"http://www.w3.org/2001/04/xmlenc#rsa-1_5", AsymmetricEncryption::RsaPkcs15,
               "Basic128Rsa15"}}) {
        INFO(uri);
        std::string_view tokenPolicy = findPolicy(policyName)->uri;
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
        CHECK(decryptUserPassword(server.key.get(), tokenPolicy, uri, encrypted, serverNonce,
                                  password) == UAPLEX_Good);
        CHECK(password == secret);
        CHECK(decryptUserPassword(server.key.get(), tokenPolicy, uri, encrypted, nonce(32, 0x78),
                                  password) == UAPLEX_BadNonceInvalid);
        encrypted[3] ^= 1;
        CHECK(decryptUserPassword(server.key.get(), tokenPolicy, uri, encrypted, serverNonce,
                                  password) == UAPLEX_BadIdentityTokenInvalid);
    }
    std::string password;
    CHECK(decryptUserPassword(server.key.get(), findPolicy("Basic256Sha256")->uri, "urn:unknown",
                              {}, serverNonce, password) == UAPLEX_BadIdentityTokenInvalid);

    const Identity& user = clientId();
    std::vector<std::uint8_t> sig(user.cert->keyBytes());
    REQUIRE(rsaSign(AsymmetricSignature::RsaPkcs15Sha256, user.key.get(),
                    {server.cert->der, serverNonce}, sig));
    const char* sha256 = "http://www.w3.org/2001/04/xmldsig-more#rsa-sha256";
    std::string_view b256 = findPolicy("Basic256Sha256")->uri;
    CHECK(verifyX509TokenSignature(b256, user.cert->der, sha256, sig, server.cert->der,
                                   serverNonce) == UAPLEX_Good);
    CHECK(verifyX509TokenSignature(b256, user.cert->der, sha256, sig, server.cert->der,
                                   nonce(32, 1)) == UAPLEX_BadUserSignatureInvalid);
    CHECK(verifyX509TokenSignature(b256, {}, sha256, sig, server.cert->der, serverNonce) ==
          UAPLEX_BadIdentityTokenInvalid);
}

// --- The hardening work: user-token algorithms, nonces, the rejected store, validation ---

namespace {

// A scratch PKI whose own certificate is serverId() (so SecuredChannel's client can talk to
// a real Provider).
struct ScratchPki {
    fs::path root;
    std::unique_ptr<Pki> pki;
    explicit ScratchPki(const char* name)
        : root(fs::temp_directory_path() /
               (std::string("uaplex-") + name + "-" + std::to_string(::getpid()))) {
        fs::remove_all(root);
        pki = std::make_unique<Pki>(root);
        pki->ensureLayout();
        writeDer(pki->ownCertificateFile(), *serverId().cert);
        std::ofstream(pki->ownKeyFile()) << privateKeyPem(serverId().key.get());
        CertificateRequest r;
        pki->loadOrCreateOwn(r);
        REQUIRE(pki->own()->der == serverId().cert->der);
    }
    ~ScratchPki() {
        std::error_code ec;
        fs::remove_all(root, ec);
    }
    std::size_t rejectedFiles() const {
        std::size_t n = 0;
        std::error_code ec;
        for (auto it = fs::directory_iterator(root / "rejected/certs", ec);
             it != fs::directory_iterator(); it.increment(ec))
            ++n;
        return n;
    }
};

std::vector<std::uint8_t> legacyPassword(const std::string& secret,
                                         const std::vector<std::uint8_t>& serverNonce) {
    std::vector<std::uint8_t> plain(4);
    std::uint32_t length = std::uint32_t(secret.size() + serverNonce.size());
    std::memcpy(plain.data(), &length, 4);
    plain.insert(plain.end(), secret.begin(), secret.end());
    plain.insert(plain.end(), serverNonce.begin(), serverNonce.end());
    return plain;
}

}  // namespace

TEST_CASE("user tokens: the token policy picks the algorithms, not the client") {
    const Identity& server = serverId();
    auto serverNonce = randomNonce(32);
    auto plain = legacyPassword("s3cret", serverNonce);
    std::vector<std::uint8_t> rsa15(1024), oaep(1024);
    std::size_t n = 0;
    REQUIRE(
        rsaEncrypt(AsymmetricEncryption::RsaPkcs15, server.cert->publicKey.get(), plain, rsa15, n));
    rsa15.resize(n);
    REQUIRE(rsaEncrypt(AsymmetricEncryption::RsaOaepSha1, server.cert->publicKey.get(), plain, oaep,
                       n));
    oaep.resize(n);
    const char* kRsa15 = "http://www.w3.org/2001/04/xmlenc#rsa-1_5";
    const char* kOaep = "http://www.w3.org/2001/04/xmlenc#rsa-oaep";
    std::string_view b256 = findPolicy("Basic256Sha256")->uri;
    std::string_view pss = findPolicy("Aes256_Sha256_RsaPss")->uri;
    std::string_view legacy = findPolicy("Basic128Rsa15")->uri;
    std::string password;
    // rsa-1_5 for a Basic256Sha256 token policy: refused before any RSA decryption.
    auto before = rsaDecryptions();
    CHECK(decryptUserPassword(server.key.get(), b256, kRsa15, rsa15, serverNonce, password) ==
          UAPLEX_BadIdentityTokenInvalid);
    CHECK(decryptUserPassword(server.key.get(), pss, kOaep, oaep, serverNonce, password) ==
          UAPLEX_BadIdentityTokenInvalid);
    CHECK(decryptUserPassword(server.key.get(), securechannel::kSecurityPolicyNone, kOaep, oaep,
                              serverNonce, password) == UAPLEX_BadIdentityTokenInvalid);
    CHECK(rsaDecryptions() == before);
    CHECK(password.empty());
    // The policy's own algorithm works; rsa-1_5 where Basic128Rsa15 is the token policy.
    CHECK(decryptUserPassword(server.key.get(), b256, kOaep, oaep, serverNonce, password) ==
          UAPLEX_Good);
    CHECK(decryptUserPassword(server.key.get(), legacy, kRsa15, rsa15, serverNonce, password) ==
          UAPLEX_Good);
    CHECK(password == "s3cret");

    // Signatures: rsa-sha1 is not accepted under a SHA-256 policy.
    const Identity& user = clientId();
    std::vector<std::uint8_t> sha1Sig(user.cert->keyBytes()), sha256Sig(user.cert->keyBytes());
    REQUIRE(rsaSign(AsymmetricSignature::RsaPkcs15Sha1, user.key.get(),
                    {server.cert->der, serverNonce}, sha1Sig));
    REQUIRE(rsaSign(AsymmetricSignature::RsaPkcs15Sha256, user.key.get(),
                    {server.cert->der, serverNonce}, sha256Sig));
    const char* kSha1 = "http://www.w3.org/2000/09/xmldsig#rsa-sha1";
    const char* kSha256 = "http://www.w3.org/2001/04/xmldsig-more#rsa-sha256";
    CHECK(verifyX509TokenSignature(b256, user.cert->der, kSha1, sha1Sig, server.cert->der,
                                   serverNonce) == UAPLEX_BadUserSignatureInvalid);
    CHECK(verifyX509TokenSignature(pss, user.cert->der, kSha256, sha256Sig, server.cert->der,
                                   serverNonce) == UAPLEX_BadUserSignatureInvalid);
    CHECK(verifyX509TokenSignature(b256, user.cert->der, kSha256, sha256Sig, server.cert->der,
                                   serverNonce) == UAPLEX_Good);
    CHECK(verifyX509TokenSignature(findPolicy("Basic256")->uri, user.cert->der, kSha1, sha1Sig,
                                   server.cert->der, serverNonce) == UAPLEX_Good);
    AsymmetricSignature a;
    CHECK(!signatureAlgorithmFor(b256, kSha1, a));
    CHECK(!signatureAlgorithmFor(securechannel::kSecurityPolicyNone, kSha256, a));
    CHECK(signatureAlgorithmFor(b256, kSha256, a));
    CHECK(a == AsymmetricSignature::RsaPkcs15Sha256);
}

TEST_CASE("nonces: constant or repeated client nonces are refused") {
    const PolicyInfo& policy = *findPolicy("Basic256Sha256");
    Pair p = makePair(policy);
    auto serverNonce = randomNonce(32);
    CHECK(p.server->deriveKeys(1, nonce(32, 0), serverNonce) == UAPLEX_BadNonceInvalid);
    CHECK(p.server->deriveKeys(1, nonce(32, 0xab), serverNonce) == UAPLEX_BadNonceInvalid);
    auto good = randomNonce(32);
    CHECK(p.server->deriveKeys(1, good, serverNonce) == UAPLEX_Good);
    // The same nonce again on this channel (a renewal replaying it).
    CHECK(p.server->deriveKeys(2, good, randomNonce(32)) == UAPLEX_BadNonceInvalid);
    CHECK(p.server->deriveKeys(2, randomNonce(32), randomNonce(32)) == UAPLEX_Good);

    SECTION("in OpenSecureChannel") {
        SecuredChannel c(policy);
        c.clientNonce = nonce(32, 0);
        c.feed(securedOpen(*c.client, policy, 0, 1, ua::SecurityTokenRequestType::Issue,
                           ua::MessageSecurityMode::SignAndEncrypt, c.clientNonce, *clientId().cert,
                           *serverId().cert));
        CHECK(c.out.failed == UAPLEX_BadNonceInvalid);
        CHECK(!c.channel->isOpen());
    }
    SECTION("a renewal with the issue's nonce") {
        SecuredChannel c(policy);
        c.open(ua::MessageSecurityMode::SignAndEncrypt);
        c.feed(securedOpen(*c.client, policy, 42, c.seq++, ua::SecurityTokenRequestType::Renew,
                           ua::MessageSecurityMode::SignAndEncrypt, c.clientNonce, *clientId().cert,
                           *serverId().cert));
        CHECK(c.out.failed == UAPLEX_BadNonceInvalid);
    }
    SECTION("in CreateSession") {
        CHECK(checkSessionClientNonce(nonce(32, 0)) == UAPLEX_BadNonceInvalid);
        CHECK(checkSessionClientNonce(nonce(64, 7)) == UAPLEX_BadNonceInvalid);
        CHECK(checkSessionClientNonce(randomNonce(16)) == UAPLEX_BadNonceInvalid);
        auto n = randomNonce(32);
        CHECK(checkSessionClientNonce(n) == UAPLEX_Good);
        CHECK(checkSessionClientNonce(n) == UAPLEX_BadNonceInvalid);
        CHECK(checkSessionClientNonce(randomNonce(32)) == UAPLEX_Good);
    }
}

TEST_CASE("rejected store: bounded in count and bytes, oldest first, never rewritten") {
    ScratchPki s("rejected-bound");
    Pki& pki = *s.pki;
    pki.setRejectedLimits({5, 1u << 20});
    std::vector<Identity> certs;
    for (int i = 0; i < 12; ++i) {
        certs.push_back(makeIdentity("urn:test:untrusted:" + std::to_string(i)));
        CHECK(pki.validate(*certs.back().cert) == UAPLEX_BadCertificateUntrusted);
        CHECK(pki.reject(*certs.back().cert));
        CHECK(s.rejectedFiles() <= 5);
    }
    CHECK(s.rejectedFiles() == 5);
    // The last five are kept (first in, first out).
    for (int i = 0; i < 12; ++i)
        CHECK(fs::exists(pki.rejectedDirectory() / (certs[i].cert->thumbprintHex() + ".der")) ==
              (i >= 7));
    // The same certificate again: no rewrite, nothing evicted.
    fs::path last = pki.rejectedDirectory() / (certs[11].cert->thumbprintHex() + ".der");
    auto stamp = fs::last_write_time(last);
    CHECK(!pki.reject(*certs[11].cert));
    CHECK(fs::last_write_time(last) == stamp);
    CHECK(s.rejectedFiles() == 5);
    // Bytes: room for two certificates only.
    pki.setRejectedLimits({100, 2 * certs[0].cert->der.size() + 10});
    for (int i = 0; i < 4; ++i) pki.reject(*certs[i].cert);
    CHECK(s.rejectedFiles() == 2);
    std::uintmax_t bytes = 0;
    for (const auto& e : fs::directory_iterator(pki.rejectedDirectory())) bytes += e.file_size();
    CHECK(bytes <= 2 * certs[0].cert->der.size() + 10);
    // 0 records nothing.
    pki.setRejectedLimits({0, 1u << 20});
    CHECK(!pki.reject(*certs[5].cert));
}

TEST_CASE("rejected store: a certificate is recorded only once the OPN proved its key") {
    const PolicyInfo& policy = *findPolicy("Basic256Sha256");
    SECTION("the channel asks for the record only after the signature verified") {
        SecuredChannel c(policy);
        c.provider.verdict = UAPLEX_BadSecurityChecksFailed;
        c.provider.record = true;
        auto v = securedOpen(*c.client, policy, 0, 1, ua::SecurityTokenRequestType::Issue,
                             ua::MessageSecurityMode::SignAndEncrypt, c.clientNonce,
                             *clientId().cert, *serverId().cert);
        v[v.size() - 10] ^= 1;  // the signature no longer verifies
        c.feed(v);
        CHECK(c.out.failed == UAPLEX_BadSecurityChecksFailed);
        CHECK(c.provider.proven == 0);
        SecuredChannel d(policy);
        d.provider.verdict = UAPLEX_BadSecurityChecksFailed;
        d.provider.record = true;
        d.feed(securedOpen(*d.client, policy, 0, 1, ua::SecurityTokenRequestType::Issue,
                           ua::MessageSecurityMode::SignAndEncrypt, d.clientNonce, *clientId().cert,
                           *serverId().cert));
        CHECK(d.out.failed == UAPLEX_BadSecurityChecksFailed);
        CHECK(d.provider.proven == 1);
        CHECK(!d.channel->isOpen());
    }
    SECTION("with the real store: only the proven certificate is on disk") {
        ScratchPki s("rejected-proof");
        Provider provider(*s.pki, {{&policy, true, true}});
        std::vector<uaplex_status> refused;
        provider.onRefused = [&](uaplex_status st, const Certificate&) { refused.push_back(st); };
        auto attempt = [&](const Identity& client, bool tamper) {
            auto server = provider.create(policy.uri);
            REQUIRE(server);
            auto clientSec =
                makeClientChannelSecurity(policy, client.cert, client.key.get(), serverId().cert);
            auto v = securedOpen(*clientSec, policy, 0, 1, ua::SecurityTokenRequestType::Issue,
                                 ua::MessageSecurityMode::SignAndEncrypt, randomNonce(32),
                                 *client.cert, *serverId().cert);
            if (tamper) v[v.size() - 10] ^= 1;
            enc::Arena arena(1 << 16);
            enc::DecodeLimits limits;
            enc::BinaryReader r(std::span<const std::uint8_t>(v), arena, limits);
            r.take(12);
            ua::String uri;
            ua::ByteString cert, thumb;
            enc::decode(r, uri);
            enc::decode(r, cert);
            enc::decode(r, thumb);
            std::size_t bodyEnd = 0;
            return server->openAsymmetric(v, r.position(), {cert.data, std::size_t(cert.length)},
                                          {thumb.data, std::size_t(thumb.length)}, bodyEnd);
        };
        Identity forger = makeIdentity("urn:test:forger");
        for (int i = 0; i < 5; ++i) CHECK(attempt(forger, true) == UAPLEX_BadSecurityChecksFailed);
        CHECK(s.rejectedFiles() == 0);
        CHECK(refused.size() == 5);
        CHECK(refused.front() == UAPLEX_BadCertificateUntrusted);
        CHECK(attempt(clientId(), false) == UAPLEX_BadSecurityChecksFailed);
        CHECK(s.rejectedFiles() == 1);
        CHECK(fs::exists(s.pki->rejectedDirectory() / (clientId().cert->thumbprintHex() + ".der")));
        // Trusted now: the channel opens.
        fs::rename(s.pki->rejectedDirectory() / (clientId().cert->thumbprintHex() + ".der"),
                   s.root / "trusted/certs/client.der");
        CHECK(attempt(clientId(), false) == UAPLEX_Good);
    }
}

TEST_CASE("renewal re-validates the client certificate") {
    const PolicyInfo& policy = *findPolicy("Basic256Sha256");
    SECTION("a verdict that changed ends the channel at renewal") {
        SecuredChannel c(policy);
        c.open(ua::MessageSecurityMode::SignAndEncrypt);
        CHECK(c.provider.validations == 1);
        c.provider.verdict = UAPLEX_BadCertificateTimeInvalid;
        c.clientNonce = randomNonce(policy.nonceLength);
        c.feed(securedOpen(*c.client, policy, 42, c.seq++, ua::SecurityTokenRequestType::Renew,
                           ua::MessageSecurityMode::SignAndEncrypt, c.clientNonce, *clientId().cert,
                           *serverId().cert));
        CHECK(c.provider.validations == 2);
        CHECK(c.out.failed == UAPLEX_BadCertificateTimeInvalid);
    }
    SECTION("a certificate removed from trusted/ ends the channel at renewal") {
        ScratchPki s("renewal");
        writeDer(s.root / "trusted/certs/client.der", *clientId().cert);
        Provider provider(*s.pki, {{&policy, true, true}});
        securechannel::ChannelLimits limits;
        limits.security = &provider;
        limits.offersNone = false;
        test::FakeOutput out;
        securechannel::SecureChannel channel(limits, out);
        securechannel::Negotiated n;
        n.sendBufferSize = 65535;
        channel.setNegotiated(n);
        auto client = makeClientChannelSecurity(policy, clientId().cert, clientId().key.get(),
                                                serverId().cert);
        auto feedOpen = [&](ua::SecurityTokenRequestType type, std::uint32_t seq) {
            auto clientNonce = randomNonce(32);
            auto chunk =
                securedOpen(*client, policy, type == ua::SecurityTokenRequestType::Issue ? 0 : 42,
                            seq, type, ua::MessageSecurityMode::SignAndEncrypt, clientNonce,
                            *clientId().cert, *serverId().cert);
            channel.onChunk(chunk, securechannel::Clock{1000, 0}, 42);
            if (out.failed != UAPLEX_Good) return;
            auto opened = readOpen(*client, out.sent.back());
            REQUIRE(client->deriveKeys(opened.tokenId, clientNonce, opened.serverNonce) ==
                    UAPLEX_Good);
        };
        feedOpen(ua::SecurityTokenRequestType::Issue, 1);
        REQUIRE(out.failed == UAPLEX_Good);
        REQUIRE(channel.isOpen());
        feedOpen(ua::SecurityTokenRequestType::Renew, 2);
        REQUIRE(out.failed == UAPLEX_Good);
        fs::remove(s.root / "trusted/certs/client.der");
        feedOpen(ua::SecurityTokenRequestType::Renew, 3);
        CHECK(out.failed == UAPLEX_BadSecurityChecksFailed);
    }
}

TEST_CASE("PKI: signature hash, extendedKeyUsage, CA and keyUsage rules") {
    ScratchPki s("rules");
    Pki& pki = *s.pki;
    const char* usage = "critical,digitalSignature,nonRepudiation,keyEncipherment,dataEncipherment";
    const PolicyInfo* b256 = findPolicy("Basic256Sha256");
    const PolicyInfo* legacy = findPolicy("Basic256");
    auto trusted = [&](const Identity& id, const char* file) {
        writeDer(s.root / "trusted/certs" / file, *id.cert);
        return id.cert;
    };
    Identity good = issue("good", "urn:test:good", nullptr, usage, false, 1, "clientAuth");
    trusted(good, "good.der");
    CHECK(pki.validate(*good.cert, {}, b256) == UAPLEX_Good);

    // A SHA-1 signed certificate: only under the SHA-1 policies.
    Identity sha1 = issue("sha1", "urn:test:sha1", nullptr, usage, false, 2, nullptr, EVP_sha1());
    trusted(sha1, "sha1.der");
    CHECK(pki.validate(*sha1.cert, {}, b256) == UAPLEX_BadCertificatePolicyCheckFailed);
    CHECK(pki.validate(*sha1.cert, {}, findPolicy("Aes256_Sha256_RsaPss")) ==
          UAPLEX_BadCertificatePolicyCheckFailed);
    CHECK(pki.validate(*sha1.cert, {}, legacy) == UAPLEX_Good);

    // extendedKeyUsage, when present, names the role.
    Identity serverOnly =
        issue("server-only", "urn:test:so", nullptr, usage, false, 3, "serverAuth");
    trusted(serverOnly, "server-only.der");
    CHECK(pki.validate(*serverOnly.cert, {}, b256) == UAPLEX_BadCertificateUseNotAllowed);
    CHECK(pki.validate(*serverOnly.cert, {}, b256, CertificateRole::ServerApplication) ==
          UAPLEX_Good);
    Identity noEku = issue("no-eku", "urn:test:noeku", nullptr, usage, false, 4);
    trusted(noEku, "no-eku.der");
    CHECK(pki.validate(*noEku.cert, {}, b256) == UAPLEX_Good);

    // A CA certificate is no application instance certificate, even trusted.
    Identity ca =
        issue("a CA", "urn:test:ca", nullptr,
              "critical,digitalSignature,keyEncipherment,dataEncipherment,keyCertSign", true, 5);
    trusted(ca, "ca.der");
    CHECK(pki.validate(*ca.cert, {}, b256) == UAPLEX_BadCertificateUseNotAllowed);

    // keyUsage is required (Part 6 6.2.2).
    Identity noKu = issue("no-ku", "urn:test:noku", nullptr, nullptr, false, 6);
    trusted(noKu, "no-ku.der");
    CHECK(pki.validate(*noKu.cert, {}, b256) == UAPLEX_BadCertificateUseNotAllowed);

    // The server's own kind of certificate passes (self-signed, CA:FALSE, keyCertSign).
    writeDer(s.root / "trusted/certs/client.der", *clientId().cert);
    CHECK(pki.validate(*clientId().cert, "urn:test:client", b256) == UAPLEX_Good);
}

TEST_CASE("PKI: user certificates chain to the user trust list, pinned ones still validate") {
    ScratchPki s("users");
    Pki& pki = *s.pki;
    const PolicyInfo* b256 = findPolicy("Basic256Sha256");
    const char* userUsage = "critical,digitalSignature,nonRepudiation";
    Identity userCa = issue("User CA", nullptr, nullptr, "critical,keyCertSign,cRLSign", true, 1);
    Identity alice = issue("alice", nullptr, &userCa, userUsage, false, 11, "clientAuth");
    Identity bob = issue("bob", nullptr, &userCa, userUsage, false, 12);
    Identity selfSigned = issue("alice", nullptr, nullptr, userUsage, false, 13);
    // No user CA yet.
    CHECK(pki.validateUser(*alice.cert, b256, false) == UAPLEX_BadCertificateUntrusted);
    // Trusted for channels is not trusted for users.
    writeDer(s.root / "trusted/certs/user-ca.der", *userCa.cert);
    writeCrl(s.root / "trusted/crl/user-ca.crl", userCa, {});
    CHECK(pki.validateUser(*alice.cert, b256, false) == UAPLEX_BadCertificateUntrusted);
    writeDer(s.root / "trusted-users/certs/user-ca.der", *userCa.cert);
    writeCrl(s.root / "trusted-users/crl/user-ca.crl", userCa, {12});
    CHECK(pki.validateUser(*alice.cert, b256, false) == UAPLEX_Good);
    CHECK(pki.validateUser(*bob.cert, b256, false) == UAPLEX_BadCertificateRevoked);
    CHECK(pki.validateUser(*bob.cert, b256, true) == UAPLEX_BadCertificateRevoked);
    CHECK(pki.validateUser(*selfSigned.cert, b256, false) == UAPLEX_BadCertificateUntrusted);
    // Pinned: no chain needed, but time and usage still count.
    CHECK(pki.validateUser(*selfSigned.cert, b256, true) == UAPLEX_Good);
    Identity expired =
        issue("old", nullptr, nullptr, userUsage, false, 14, nullptr, EVP_sha256(), -3600);
    CHECK(pki.validateUser(*expired.cert, b256, true) == UAPLEX_BadCertificateTimeInvalid);
    Identity encipherOnly = issue("enc", nullptr, nullptr, "critical,keyEncipherment", false, 15);
    CHECK(pki.validateUser(*encipherOnly.cert, b256, true) == UAPLEX_BadCertificateUseNotAllowed);
    Identity sha1 = issue("sha1", nullptr, nullptr, userUsage, false, 16, nullptr, EVP_sha1());
    CHECK(pki.validateUser(*sha1.cert, b256, true) == UAPLEX_BadCertificatePolicyCheckFailed);
    CHECK(pki.validateUser(*userCa.cert, b256, true) == UAPLEX_BadCertificateUseNotAllowed);
}
