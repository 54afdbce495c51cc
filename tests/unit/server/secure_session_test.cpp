// SPDX-License-Identifier: Apache-2.0
// Discovery and session services on a secured channel: endpoints per policy and mode with the
// server certificate, CreateSession's serverSignature and certificate checks, ActivateSession's
// clientSignature (Part 4 5.6.2, 5.6.3).
#include <unistd.h>

#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <vector>

#include <uaplex/node_manager.h>
#include <uaplex/config/config.hpp>
#include <uaplex/security/pki.hpp>
#include <uaplex/server/audit_trail.hpp>
#include <uaplex/server/dispatcher.hpp>
#include <uaplex/session/server_counters.hpp>

using namespace uaplex;
using namespace uaplex::server;
namespace fs = std::filesystem;

namespace {

struct NoServices final : ServiceHandler {
    session::ServerCounters c;
    std::vector<std::uint32_t> events;  // the types of the events raised
    uaplex_status raiseEvent(const uaplex_event_spec& spec) noexcept override {
        events.push_back(spec.event_type->identifier.numeric);
        return UAPLEX_Good;
    }
    void* createSessionState() override { return this; }
    void destroySessionState(void*) noexcept override {}
    session::ServerCounters& counters() noexcept override { return c; }
};

// What the dispatcher reads of a secured channel: its policy and the client certificate.
struct FakeChannelSecurity final : securechannel::ChannelSecurity {
    std::vector<std::uint8_t> remote;
    std::string_view uri() const noexcept override {
        return "http://opcfoundation.org/UA/SecurityPolicy#Basic256Sha256";
    }
    std::size_t nonceLength() const noexcept override { return 32; }
    uaplex_status openAsymmetric(std::span<std::uint8_t>, std::size_t,
                                 std::span<const std::uint8_t>, std::span<const std::uint8_t>,
                                 std::size_t&) noexcept override {
        return UAPLEX_BadNotImplemented;
    }
    std::span<const std::uint8_t> localCertificate() const noexcept override { return {}; }
    std::span<const std::uint8_t> remoteThumbprint() const noexcept override { return {}; }
    std::span<const std::uint8_t> remoteCertificate() const noexcept override { return remote; }
    std::size_t asymmetricSize(std::size_t, std::size_t) const noexcept override { return 0; }
    uaplex_status secureAsymmetric(std::span<std::uint8_t>, std::size_t,
                                   std::size_t&) noexcept override {
        return UAPLEX_BadNotImplemented;
    }
    bool randomNonce(std::span<std::uint8_t>) noexcept override { return false; }
    uaplex_status deriveKeys(std::uint32_t, std::span<const std::uint8_t>,
                             std::span<const std::uint8_t>) noexcept override {
        return UAPLEX_BadNotImplemented;
    }
    std::size_t symmetricOverhead(securechannel::SecurityMode) const noexcept override { return 0; }
    uaplex_status verifySymmetric(std::uint32_t, securechannel::SecurityMode,
                                  std::span<std::uint8_t>, std::size_t,
                                  std::size_t&) noexcept override {
        return UAPLEX_BadNotImplemented;
    }
    uaplex_status secureSymmetric(std::uint32_t, securechannel::SecurityMode,
                                  std::span<std::uint8_t>, std::size_t,
                                  std::size_t&) noexcept override {
        return UAPLEX_BadNotImplemented;
    }
};

struct Client {
    security::PkeyPtr key;
    std::shared_ptr<security::Certificate> cert;
    explicit Client(std::string uri) {
        security::CertificateRequest r;
        r.applicationUri = std::move(uri);
        std::vector<std::uint8_t> der;
        std::string error;
        REQUIRE(security::createSelfSigned(r, key, der, error));
        cert = security::Certificate::fromDer(der);
    }
};

ua::ByteString bytes(const std::vector<std::uint8_t>& v) {
    return ua::ByteString{std::int32_t(v.size()), const_cast<std::uint8_t*>(v.data())};
}

struct Fixture {
    fs::path root =
        fs::temp_directory_path() / ("uaplex-secure-session-" + std::to_string(getpid()));
    config::ServerConfig cfg = config::parseString(
        "[server]\napplication_uri = \"urn:test:server\"\n"
        "endpoints = [\"opc.tcp://127.0.0.1:4840\"]\n"
        "security = [{policy = \"None\"}, {policy = \"Basic256Sha256\"}]\n",
        "test.toml", {});
    security::Pki pki{root};
    NoServices services;
    session::SessionManager sessions{{10, 10000, 60000}, &services.c};
    std::unique_ptr<Discovery> discovery;
    std::unique_ptr<Dispatcher> dispatcher;
    FakeChannelSecurity channel;
    Client client{"urn:test:client"};
    enc::Arena arena, responseArena;
    enc::ByteBuffer out;
    std::vector<std::uint8_t> tokenBytes;
    ua::NodeId token = ua::numericNodeId(0, 0);
    std::vector<std::uint8_t> serverNonce;
    // The channel requests come over.
    std::uint32_t channelId = 1;
    bool secured = true;
    securechannel::SecurityMode mode = securechannel::SecurityMode::SignAndEncrypt;

    Fixture() {
        security::CertificateRequest r;
        r.applicationUri = "urn:test:server";
        pki.loadOrCreateOwn(r);
        discovery = std::make_unique<Discovery>(cfg.server, pki.own().get());
        dispatcher = std::make_unique<Dispatcher>(cfg, sessions, services, *discovery);
        dispatcher->setPki(&pki);
        channel.remote = client.cert->der;
    }
    ~Fixture() { fs::remove_all(root); }

    template <class T>
    enc::DecodedMessage call(T& request) {
        request.requestHeader.authenticationToken = token;
        enc::ByteBuffer in;
        enc::BinaryWriter w(in);
        REQUIRE(enc::encodeMessage(w, request) == UAPLEX_Good);
        arena.reset();
        RequestContext ctx{channelId, 1000, 0, "opc.tcp://127.0.0.1:4840"};
        ctx.channelSecurity = secured ? &channel : nullptr;
        ctx.securityMode = secured ? mode : securechannel::SecurityMode::None;
        dispatcher->handle(in.span(), ctx, arena, out);
        responseArena.reset();
        return enc::decodeMessage(out.span(), responseArena, {});
    }
    static uaplex_status result(const enc::DecodedMessage& m) {
        REQUIRE(m.status == UAPLEX_Good);
        return static_cast<const ua::ResponseHeader*>(m.object)->serviceResult;
    }
    enc::DecodedMessage createSession(const std::vector<std::uint8_t>& certificate,
                                      std::string_view uri, std::size_t nonceLength = 32,
                                      const std::vector<std::uint8_t>* fixedNonce = nullptr) {
        // A random nonce: constant and repeated ones are refused.
        std::vector<std::uint8_t> nonce(nonceLength);
        REQUIRE(security::randomBytes(nonce));
        if (fixedNonce) nonce = *fixedNonce;
        ua::CreateSessionRequest cs{};
        cs.requestedSessionTimeout = 30000;
        cs.clientDescription.applicationUri = ua::makeString(uri);
        cs.clientCertificate = bytes(certificate);
        cs.clientNonce = bytes(nonce);
        auto m = call(cs);
        if (result(m) != UAPLEX_Good) return m;
        auto& r = *static_cast<ua::CreateSessionResponse*>(m.object);
        // serverSignature: the server key over clientCertificate + clientNonce.
        CHECK(ua::view(r.serverSignature.algorithm) ==
              "http://www.w3.org/2001/04/xmldsig-more#rsa-sha256");
        CHECK(security::rsaVerify(
            security::AsymmetricSignature::RsaPkcs15Sha256, pki.own()->publicKey.get(),
            {certificate, nonce},
            {r.serverSignature.signature.data, std::size_t(r.serverSignature.signature.length)}));
        CHECK(std::vector<std::uint8_t>(r.serverCertificate.data,
                                        r.serverCertificate.data + r.serverCertificate.length) ==
              pki.own()->der);
        tokenBytes.assign(r.authenticationToken.identifier.bytestring.data,
                          r.authenticationToken.identifier.bytestring.data + 32);
        token = r.authenticationToken;
        token.identifier.bytestring.data = tokenBytes.data();
        serverNonce.assign(r.serverNonce.data, r.serverNonce.data + r.serverNonce.length);
        return m;
    }
    uaplex_status activate(bool tamper, bool sha1 = false, const Client* signer = nullptr) {
        const Client& by = signer ? *signer : client;
        std::vector<std::uint8_t> sig(by.cert->keyBytes());
        REQUIRE(security::rsaSign(sha1 ? security::AsymmetricSignature::RsaPkcs15Sha1
                                       : security::AsymmetricSignature::RsaPkcs15Sha256,
                                  by.key.get(), {pki.own()->der, serverNonce}, sig));
        if (tamper) sig[10] ^= 1;
        ua::ActivateSessionRequest as{};
        as.clientSignature.algorithm =
            ua::makeString(sha1 ? "http://www.w3.org/2000/09/xmldsig#rsa-sha1"
                                : "http://www.w3.org/2001/04/xmldsig-more#rsa-sha256");
        as.clientSignature.signature = bytes(sig);
        as.userTokenSignature.algorithm = ua::nullString();
        as.userTokenSignature.signature = ua::nullByteString();
        auto m = call(as);
        if (result(m) == UAPLEX_Good) {
            // The next activation signs the nonce this one returned.
            auto& r = *static_cast<ua::ActivateSessionResponse*>(m.object);
            serverNonce.assign(r.serverNonce.data, r.serverNonce.data + r.serverNonce.length);
        }
        return result(m);
    }
};

}  // namespace

TEST_CASE("GetEndpoints lists each policy and mode with the server certificate") {
    Fixture f;
    ua::GetEndpointsRequest ge{};
    auto m = f.call(ge);
    REQUIRE(Fixture::result(m) == UAPLEX_Good);
    auto& r = *static_cast<ua::GetEndpointsResponse*>(m.object);
    REQUIRE(r.endpoints.size() == 3);
    CHECK(r.endpoints[0].securityMode == ua::MessageSecurityMode::None_);
    CHECK(r.endpoints[1].securityMode == ua::MessageSecurityMode::Sign);
    CHECK(r.endpoints[2].securityMode == ua::MessageSecurityMode::SignAndEncrypt);
    CHECK(r.endpoints[0].securityLevel < r.endpoints[1].securityLevel);
    CHECK(r.endpoints[1].securityLevel < r.endpoints[2].securityLevel);
    for (std::size_t i = 1; i < 3; ++i) {
        CHECK(ua::view(r.endpoints[i].securityPolicyUri) ==
              "http://opcfoundation.org/UA/SecurityPolicy#Basic256Sha256");
        CHECK(std::size_t(r.endpoints[i].serverCertificate.length) == f.pki.own()->der.size());
    }
}

TEST_CASE("CreateSession signs, ActivateSession checks the client signature") {
    Fixture f;
    REQUIRE(Fixture::result(f.createSession(f.client.cert->der, "urn:test:client")) == UAPLEX_Good);
    SECTION("a good signature activates") {
        CHECK(f.activate(false) == UAPLEX_Good);
    }
    SECTION("an rsa-sha1 signature on a Basic256Sha256 channel is refused") {
        CHECK(f.activate(false, true) == UAPLEX_BadApplicationSignatureInvalid);
        CHECK(f.activate(false) == UAPLEX_Good);
    }
    SECTION("a bad signature is BadApplicationSignatureInvalid") {
        CHECK(f.activate(true) == UAPLEX_BadApplicationSignatureInvalid);
        // And the session is still not activated: the right signature works afterwards.
        CHECK(f.activate(false) == UAPLEX_Good);
    }
}

TEST_CASE("CreateSession refuses certificates and nonces that do not fit") {
    Fixture f;
    CHECK(Fixture::result(f.createSession(f.client.cert->der, "urn:test:other")) ==
          UAPLEX_BadCertificateUriInvalid);
    Client other("urn:test:client");
    CHECK(Fixture::result(f.createSession(other.cert->der, "urn:test:client")) ==
          UAPLEX_BadCertificateInvalid);
    CHECK(Fixture::result(f.createSession(f.client.cert->der, "urn:test:client", 16)) ==
          UAPLEX_BadNonceInvalid);
    // Too little entropy: all zero, one repeated byte, a nonce sent before.
    std::vector<std::uint8_t> zeros(32, 0), same(32, 0x5c), used(32);
    REQUIRE(security::randomBytes(used));
    CHECK(Fixture::result(f.createSession(f.client.cert->der, "urn:test:client", 32, &zeros)) ==
          UAPLEX_BadNonceInvalid);
    CHECK(Fixture::result(f.createSession(f.client.cert->der, "urn:test:client", 32, &same)) ==
          UAPLEX_BadNonceInvalid);
    CHECK(Fixture::result(f.createSession(f.client.cert->der, "urn:test:client", 32, &used)) ==
          UAPLEX_Good);
    CHECK(Fixture::result(f.createSession(f.client.cert->der, "urn:test:client", 32, &used)) ==
          UAPLEX_BadNonceInvalid);
}

TEST_CASE("a secured session moves only to a channel of its certificate and no weaker mode") {
    Fixture f;
    REQUIRE(Fixture::result(f.createSession(f.client.cert->der, "urn:test:client")) == UAPLEX_Good);
    REQUIRE(f.activate(false) == UAPLEX_Good);
    // Whoever has the AuthenticationToken, on a None channel without a client signature.
    f.channelId = 2;
    f.secured = false;
    ua::ActivateSessionRequest none{};
    CHECK(Fixture::result(f.call(none)) == UAPLEX_BadSecureChannelIdInvalid);
    // On a SignAndEncrypt channel of another (trusted) certificate, signing with its own key.
    Client other("urn:test:client");
    f.channel.remote = other.cert->der;
    f.channelId = 3;
    f.secured = true;
    CHECK(f.activate(false, false, &other) == UAPLEX_BadSecureChannelIdInvalid);
    // The session's own certificate, but Sign only: a weaker mode.
    f.channel.remote = f.client.cert->der;
    f.mode = securechannel::SecurityMode::Sign;
    f.channelId = 4;
    CHECK(f.activate(false) == UAPLEX_BadSecureChannelIdInvalid);
    // The victim's channel keeps the session.
    std::shared_ptr<session::Session> s;
    CHECK(f.sessions.resolve(f.token, 1, 1000, s) == UAPLEX_Good);
    // A reconnect of the same client (certificate and mode) may take it over (Part 4 5.6.3).
    f.mode = securechannel::SecurityMode::SignAndEncrypt;
    f.channelId = 5;
    CHECK(f.activate(true) == UAPLEX_BadApplicationSignatureInvalid);
    CHECK(f.activate(false) == UAPLEX_Good);
    CHECK(f.sessions.resolve(f.token, 5, 1000, s) == UAPLEX_Good);
    CHECK(f.sessions.resolve(f.token, 1, 1000, s) == UAPLEX_BadSecureChannelIdInvalid);
}

TEST_CASE("[audit]: a refused CreateSession certificate raises its AuditCertificate event") {
    Fixture f;
    config::ServerConfig cfg = f.cfg;
    cfg.audit.enabled = true;  // events only, no log file
    AuditTrail trail(cfg, f.services);
    f.dispatcher->setAudit(&trail);
    auto count = [&](std::uint32_t type) {
        return std::count(f.services.events.begin(), f.services.events.end(), type);
    };
    CHECK(Fixture::result(f.createSession(f.client.cert->der, "urn:test:other")) ==
          UAPLEX_BadCertificateUriInvalid);
    CHECK(count(2082) == 1);  // AuditCertificateDataMismatchEventType
    Client other("urn:test:client");
    CHECK(Fixture::result(f.createSession(other.cert->der, "urn:test:client")) ==
          UAPLEX_BadCertificateInvalid);
    CHECK(count(2086) == 1);  // AuditCertificateInvalidEventType
    CHECK(count(2071) == 2);  // and both CreateSessions, refused
    f.dispatcher->setAudit(nullptr);
}
