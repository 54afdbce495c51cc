// SPDX-License-Identifier: Apache-2.0
// Hostile clients against the session services of the real `uaplex` executable: a flood of
// CreateSession on one channel (capped, with 1 MiB names that must not pin memory), sessions
// that outlive neither their channel nor the short unactivated timeout, TransferSubscriptions
// between anonymous sessions, and password guessing (lockout, a closed session, and the Reads
// of another client while two attackers pipeline guesses). Each attack also checks that a
// legitimate client is served during and after it.
#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "support/opcua_client.hpp"
#include "support/server_process.hpp"
#include "support/test_certificates.hpp"

using namespace uaplex;
using test::Client;

namespace {

// A server on None with `limits` in [server.limits] and `extra` appended (sections).
test::ServerProcess startServer(const std::string& tag, const std::string& limits,
                                const std::string& extra = "",
                                const std::string& security = "[{ policy = \"None\" }]") {
    auto toml = [limits, extra, security](std::uint16_t port, const std::filesystem::path& dir) {
        std::ostringstream s;
        s << test::configHead(port,
                              std::getenv("HOSTILE_LOG") ? std::getenv("HOSTILE_LOG") : "warn")
          << "security = " << security << "\n"
          << "pki_dir = \"" << (dir / "pki").string() << "\"\n"
          << "[server.limits]\n"
          << limits << "\n"
          << "[slots]\nrequest_queue = \"fair\"\nadmission = \"leases\"\n"
          << "buffer_pool = \"bounded\"\n"
          << "[plugins.fair]\n[plugins.leases]\n[plugins.bounded]\n[plugins.transport-tcp]\n"
          << extra;
        return s.str();
    };
    return test::ServerProcess(tag, toml);
}

ua::CreateSessionRequest createRequest(const std::string& url, const std::string& name) {
    ua::CreateSessionRequest cs{};
    cs.endpointUrl = ua::makeString(url);
    cs.sessionName = ua::makeString(name);
    cs.requestedSessionTimeout = 3600000;  // asks for an hour
    return cs;
}

// A ServerDiagnosticsSummary counter (CurrentSessionCount by default) as `c` reads it.
std::uint32_t summaryCounter(Client& c, std::uint32_t node) {
    ua::ReadValueId id{};
    id.nodeId = ua::numericNodeId(0, node);
    id.attributeId = 13;
    ua::ReadRequest r{};
    r.nodesToRead = {1, &id};
    auto m = c.call(r);
    REQUIRE(Client::result(m) == UAPLEX_Good);
    return static_cast<ua::ReadResponse*>(m.object)->results[0].value.value.uint32;
}
std::uint32_t currentSessions(Client& c) { return summaryCounter(c, 2277); }

// Polls `f` every 50 ms for up to `seconds`: true once it holds.
template <class F>
bool eventually(F f, int seconds = 30) {
    auto until = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
    while (std::chrono::steady_clock::now() < until) {
        if (f()) return true;
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return f();
}

// Hello + OPN with a long receive timeout: delayed answers are part of these tests.
bool openSlow(Client& c, std::uint16_t port) {
    return c.connect(port, 60000) &&
           c.openOnConnected("opc.tcp://127.0.0.1:" + std::to_string(port));
}

bool readsOk(Client& c, int n) {
    std::vector<ua::ReadValueId> ids(1);
    for (int i = 0; i < n; ++i) {
        auto read = test::readServerState(ids);
        if (Client::result(c.call(read)) != UAPLEX_Good) return false;
    }
    return true;
}

}  // namespace

TEST_CASE("hostile sessions: 1000 CreateSession on one channel are capped, others are served") {
    // The unactivated timeout is long here: only the channel's close can end them.
    auto server = startServer("hostile-flood", "unactivated_session_timeout_ms = 600000");
    Client watcher;
    REQUIRE(openSlow(watcher, server.port));
    REQUIRE(watcher.createSession() == UAPLEX_Good);
    Client attacker;
    REQUIRE(openSlow(attacker, server.port));
    int good = 0, refused = 0;
    for (int batch = 0; batch < 20; ++batch) {
        // 50 pipelined CreateSession, then their answers.
        for (int i = 0; i < 50; ++i) {
            auto cs = createRequest(attacker.url(), "flood");
            REQUIRE(attacker.send(cs, std::uint32_t(batch * 50 + i + 1)));
        }
        for (int i = 0; i < 50; ++i) {
            auto st = Client::result(attacker.receiveResponse());
            if (st == UAPLEX_Good)
                ++good;
            else if (st == UAPLEX_BadTooManySessions)
                ++refused;
        }
        if (batch == 10) {
            // During the flood a legitimate client on another connection gets its session.
            Client legit;
            REQUIRE(openSlow(legit, server.port));
            CHECK(legit.createSession() == UAPLEX_Good);
            CHECK(readsOk(legit, 3));
        }
    }
    CHECK(good == 8);  // max_unactivated_sessions_per_channel
    CHECK(refused == 992);
    // The watcher's, the legitimate client's (activated: it outlives its connection) and the
    // attacker's eight.
    CHECK(currentSessions(watcher) == 2 + 8);
    // The attacker leaves: its never-activated sessions go with its channel, at once.
    attacker.disconnect();
    CHECK(eventually([&] { return currentSessions(watcher) == 2; }));
    Client after;
    REQUIRE(openSlow(after, server.port));
    CHECK(after.createSession() == UAPLEX_Good);
    CHECK(readsOk(after, 3));
    CHECK(server.alive());
}

TEST_CASE("hostile sessions: CreateSession takes a session_establishment lease until activation") {
    // The leases plugin's stage with room for two new clients at once (the Bootstrap floor
    // and one shared place); the kernel's own caps are far above that here.
    auto server = startServer("hostile-lease", "",
                              "[plugins.leases.stages.session_establishment]\ntotal = 3\n");
    Client a, b, c;
    REQUIRE(openSlow(a, server.port));
    REQUIRE(openSlow(b, server.port));
    REQUIRE(openSlow(c, server.port));
    REQUIRE(a.createSessionOnly() == UAPLEX_Good);
    REQUIRE(b.createSessionOnly() == UAPLEX_Good);
    CHECK(c.createSessionOnly() == UAPLEX_BadTooManySessions);
    // The activation gives the lease back: the next client gets in.
    REQUIRE(a.activateSession() == UAPLEX_Good);
    CHECK(c.createSessionOnly() == UAPLEX_Good);
    Client d;
    REQUIRE(openSlow(d, server.port));
    CHECK(d.createSessionOnly() == UAPLEX_BadTooManySessions);
    // So does the close of a channel with a session never activated.
    b.disconnect();
    Client legit;
    REQUIRE(openSlow(legit, server.port));
    CHECK(eventually([&] { return legit.createSessionOnly() == UAPLEX_Good; }));
    CHECK(legit.activateSession() == UAPLEX_Good);
    CHECK(readsOk(legit, 3));
    CHECK(readsOk(a, 3));
}

TEST_CASE("hostile sessions: 1 MiB SessionNames do not pin memory") {
    auto server = startServer("hostile-names", "unactivated_session_timeout_ms = 600000");
    Client legit;
    REQUIRE(openSlow(legit, server.port));
    REQUIRE(legit.createSession() == UAPLEX_Good);
    REQUIRE(readsOk(legit, 10));
    const long before = server.rssKb();
    REQUIRE(before > 0);
    // 64 CreateSession with a 1 MiB name each over 8 channels (64 MiB of names kept without
    // the caps and the cut): the peer's cap keeps 32 sessions, each name cut to 256 bytes.
    const std::string huge((1 << 20) - 64, 'x');
    std::vector<std::unique_ptr<Client>> attackers;
    int good = 0;
    for (int c = 0; c < 8; ++c) {
        attackers.push_back(std::make_unique<Client>());
        auto& a = *attackers.back();
        REQUIRE(openSlow(a, server.port));
        for (int i = 0; i < 8; ++i) {
            auto cs = createRequest(a.url(), huge);
            if (Client::result(a.call(cs)) == UAPLEX_Good) ++good;
        }
    }
    CHECK(good == 32);  // max_unactivated_sessions_per_peer
    // The legitimate client (the same peer address here) was activated before: still served.
    CHECK(readsOk(legit, 3));
    const long after = server.rssKb();
    WARN("VmRSS before " << before << " kB, after 64 x 1 MiB SessionNames " << after << " kB");
    // Without the cut 32 sessions alone keep 32 MiB of names; message buffers may grow a few.
    CHECK(after - before < 24 * 1024);
    CHECK(server.alive());
}

TEST_CASE("hostile sessions: a never-activated session times out whatever it asked for") {
    auto server = startServer("hostile-timeout", "unactivated_session_timeout_ms = 1000");
    Client watcher;
    REQUIRE(openSlow(watcher, server.port));
    REQUIRE(watcher.createSession() == UAPLEX_Good);
    Client idle;
    REQUIRE(openSlow(idle, server.port));
    auto cs = createRequest(idle.url(), "idle");
    auto m = idle.call(cs);
    REQUIRE(Client::result(m) == UAPLEX_Good);
    CHECK(static_cast<ua::CreateSessionResponse*>(m.object)->revisedSessionTimeout == 3600000);
    CHECK(currentSessions(watcher) == 2);
    // Its channel stays open, yet the session goes after about a second, not an hour.
    CHECK(eventually([&] { return currentSessions(watcher) == 1; }));
    Client legit;
    REQUIRE(openSlow(legit, server.port));
    CHECK(legit.createSession() == UAPLEX_Good);
}

TEST_CASE("hostile sessions: TransferSubscriptions between anonymous sessions is refused") {
    auto server = startServer("hostile-transfer", "");
    Client victim, attacker;
    REQUIRE(openSlow(victim, server.port));
    REQUIRE(victim.createSession() == UAPLEX_Good);
    REQUIRE(openSlow(attacker, server.port));
    REQUIRE(attacker.createSession() == UAPLEX_Good);
    auto subscribe = [](Client& c) {
        ua::CreateSubscriptionRequest cs{};
        cs.requestedPublishingInterval = 100;
        cs.requestedLifetimeCount = 100;
        cs.requestedMaxKeepAliveCount = 10;
        cs.publishingEnabled = true;
        auto m = c.call(cs);
        REQUIRE(Client::result(m) == UAPLEX_Good);
        return static_cast<ua::CreateSubscriptionResponse*>(m.object)->subscriptionId;
    };
    const std::uint32_t victimId = subscribe(victim);
    // Ids are drawn at random: the attacker's own ids say nothing about the victim's.
    std::set<std::uint32_t> own;
    for (int i = 0; i < 5; ++i) own.insert(subscribe(attacker));
    int neighbours = 0;
    for (std::uint32_t id : own) neighbours += own.count(id + 1) + (id + 1 == victimId);
    CHECK(neighbours == 0);
    // Even knowing the id, an anonymous session on None takes nothing (Part 4 5.13.7).
    std::uint32_t ids[] = {victimId};
    ua::TransferSubscriptionsRequest t{};
    t.subscriptionIds = {1, ids};
    auto m = attacker.call(t);
    REQUIRE(Client::result(m) == UAPLEX_Good);
    auto& r = *static_cast<ua::TransferSubscriptionsResponse*>(m.object);
    REQUIRE(r.results.size() == 1);
    CHECK(r.results[0].statusCode == UAPLEX_BadUserAccessDenied);
    // The victim still owns it: its Publish is answered for that subscription.
    ua::PublishRequest p{};
    auto pm = victim.call(p);
    REQUIRE(Client::result(pm) == UAPLEX_Good);
    CHECK(static_cast<ua::PublishResponse*>(pm.object)->subscriptionId == victimId);
    // The Server object counts them (CurrentSubscriptionCount, CumulatedSubscriptionCount).
    CHECK(summaryCounter(victim, 2285) == 6);
    CHECK(summaryCounter(victim, 2286) == 6);
}

namespace {

// A users file with alice (password "right"), written by the executable itself.
std::string usersFile(const std::filesystem::path& dir) {
    std::filesystem::create_directories(dir);
    auto f = dir / "users.toml";
    std::string add = std::string(UAPLEX_EXE) +
                      " users add alice --roles Operator --password right --iterations 100000 "
                      "--file " +
                      f.string() + " >/dev/null";
    REQUIRE(std::system(add.c_str()) == 0);
    return "[access]\nusers_file = \"" + f.string() +
           "\"\nusername_security_policy = \"http://opcfoundation.org/UA/SecurityPolicy#None\"\n";
}

struct TempDir {
    std::filesystem::path path = std::filesystem::temp_directory_path() /
                                 ("uaplex-hostile-users-" + std::to_string(::getpid()));
    ~TempDir() {
        std::error_code ec;
        std::filesystem::remove_all(path, ec);
    }
};

}  // namespace

TEST_CASE("hostile sessions: password guesses are delayed, then locked out, the guesser closed") {
    TempDir dir;
    auto server = startServer("hostile-guess",
                              "login_failures_before_delay = 2\nlogin_delay_ms = 200\n"
                              "login_max_delay_ms = 400\nlogin_lockout_failures = 6\n"
                              "login_lockout_ms = 600000\nmax_login_failures_per_session = 3",
                              usersFile(dir.path));
    Client anon;
    REQUIRE(openSlow(anon, server.port));
    REQUIRE(anon.createSession() == UAPLEX_Good);
    Client guesser;
    REQUIRE(openSlow(guesser, server.port));
    Client::UserName wrong("username", "alice", "wrong");
    Client::UserName right("username", "alice", "right");
    // Three wrong passwords on one session: refused, and the session is closed.
    CHECK(guesser.createSessionAs(&wrong.eo) == UAPLEX_BadUserAccessDenied);
    CHECK(guesser.activateAs(wrong.eo) == UAPLEX_BadUserAccessDenied);
    auto start = std::chrono::steady_clock::now();
    CHECK(guesser.activateAs(wrong.eo) == UAPLEX_BadUserAccessDenied);
    // The third came after two failures: answered no sooner than the delay.
    CHECK(std::chrono::steady_clock::now() - start >= std::chrono::milliseconds(190));
    CHECK(guesser.activateAs(right.eo) == UAPLEX_BadSessionIdInvalid);
    // A new session: three more failures make six for alice, then she is locked out.
    CHECK(guesser.createSessionAs(&wrong.eo) == UAPLEX_BadUserAccessDenied);
    CHECK(guesser.activateAs(wrong.eo) == UAPLEX_BadUserAccessDenied);
    Client second;
    REQUIRE(openSlow(second, server.port));
    CHECK(second.createSessionAs(&wrong.eo) == UAPLEX_BadUserAccessDenied);
    // Locked out: the right password is refused too, from any session.
    start = std::chrono::steady_clock::now();
    CHECK(second.activateAs(right.eo) == UAPLEX_BadUserAccessDenied);
    CHECK(std::chrono::steady_clock::now() - start >=
          std::chrono::milliseconds(390));  // ms rounding
    Client third;
    REQUIRE(openSlow(third, server.port));
    CHECK(third.createSessionAs(&right.eo) == UAPLEX_BadUserAccessDenied);
    // Anonymous clients are served all along.
    CHECK(readsOk(anon, 5));
    CHECK(third.activateSession() == UAPLEX_Good);
    CHECK(readsOk(third, 3));
}

TEST_CASE("hostile sessions: Reads are answered while two attackers pipeline guesses") {
    TempDir dir;
    // Guessing without delays or lockout: only the login pool (one hashing thread, a finite
    // queue, one login per session and four per peer at once) stands between the guesses and
    // the request workers.
    auto server = startServer("hostile-cpu",
                              "login_delay_ms = 0\nlogin_lockout_failures = 1000000\n"
                              "max_login_failures_per_session = 1000000",
                              usersFile(dir.path));
    Client legit;
    REQUIRE(openSlow(legit, server.port));
    REQUIRE(legit.createSession() == UAPLEX_Good);
    std::atomic<bool> stop{false};
    std::atomic<int> guesses{0}, busy{0}, checked{0}, ready{0};
    auto attack = [&] {
        Client a;
        if (!openSlow(a, server.port)) return;
        Client::UserName wrong("username", "alice", "wrong");
        if (a.createSessionAs(&wrong.eo) != UAPLEX_BadUserAccessDenied) return;
        ++ready;
        ua::ActivateSessionRequest as{};
        as.userIdentityToken = wrong.eo;
        std::uint32_t handle = 1;
        while (!stop) {
            // Eight guesses pipelined, then their answers.
            for (int i = 0; i < 8; ++i)
                if (!a.send(as, handle++)) return;
            for (int i = 0; i < 8; ++i) {
                auto st = Client::result(a.receiveResponse());
                if (st == UAPLEX_BadTooManyOperations)
                    ++busy;
                else
                    ++checked;
                ++guesses;
            }
        }
    };
    std::thread a1(attack), a2(attack);
    REQUIRE(eventually([&] { return ready == 2; }));
    // While they guess (at least 20 passwords checked), the legitimate client's Reads are
    // all answered.
    int reads = 0;
    bool allGood = true;
    std::chrono::steady_clock::duration slowest{};
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (allGood && (reads < 200 || checked < 20) && std::chrono::steady_clock::now() < until) {
        auto t0 = std::chrono::steady_clock::now();
        allGood = readsOk(legit, 1);
        slowest = std::max(slowest, std::chrono::steady_clock::now() - t0);
        ++reads;
    }
    const int during = checked;
    stop = true;
    a1.join();
    a2.join();
    WARN("guesses answered "
         << guesses << " (" << during << " during " << reads << " Reads, the slowest "
         << std::chrono::duration_cast<std::chrono::milliseconds>(slowest).count()
         << " ms), BadTooManyOperations " << busy);
    CHECK(allGood);
    CHECK(reads >= 200);
    CHECK(during >= 20);
    // The guesses beyond one per session were refused at once, not hashed on a worker.
    CHECK(busy > 0);
    CHECK(server.alive());
}

namespace {

// A client on Basic256Sha256 SignAndEncrypt, made of the project's client channel security
// (test::Client only carries the bytes): OPN, secured MSG chunks, CreateSession with its
// certificate and nonce, ActivateSession with the clientSignature.
class SecureClient {
  public:
    SecureClient(test::TestIdentity& id, std::shared_ptr<security::Certificate> server)
        : id_(id), server_(std::move(server)) {}

    bool open(std::uint16_t port) {
        const auto* policy =
            security::findPolicy("http://opcfoundation.org/UA/SecurityPolicy#Basic256Sha256");
        if (!policy || !raw_.connect(port, 60000)) return false;
        url_ = "opc.tcp://127.0.0.1:" + std::to_string(port);
        if (!raw_.sendRaw(Client::hello(url_, 65535, 65535))) return false;
        auto ack = raw_.receive();
        if (ack.size() != 28 || std::memcmp(ack.data(), "ACK", 3) != 0) return false;
        std::vector<std::uint8_t> clientNonce(32);
        if (!security::randomBytes(clientNonce)) return false;
        sec_ = security::makeClientChannelSecurity(*policy, id_.cert, id_.key.get(), server_);
        if (!raw_.sendRaw(test::securedOpn(*policy, id_, server_, clientNonce))) return false;
        auto chunk = raw_.receive();
        if (chunk.size() < 12 || std::memcmp(chunk.data(), "OPNF", 4) != 0) return false;
        enc::Arena arena(1 << 20);
        enc::DecodeLimits limits;
        enc::BinaryReader r(std::span<const std::uint8_t>(chunk), arena, limits);
        r.take(12);
        ua::String uri;
        ua::ByteString cert, thumb;
        enc::decode(r, uri);
        enc::decode(r, cert);
        enc::decode(r, thumb);
        std::size_t offset = r.position(), bodyEnd = 0;
        if (sec_->openAsymmetric(chunk, offset, {cert.data, std::size_t(cert.length)},
                                 {thumb.data, std::size_t(thumb.length)}, bodyEnd) != UAPLEX_Good)
            return false;
        auto m =
            enc::decodeMessage({chunk.data() + offset + 8, bodyEnd - offset - 8}, arena, limits);
        if (m.status != UAPLEX_Good || m.type != enc::dataTypeOf<ua::OpenSecureChannelResponse>())
            return false;
        const auto& resp = *static_cast<ua::OpenSecureChannelResponse*>(m.object);
        channelId_ = resp.securityToken.channelId;
        tokenId_ = resp.securityToken.tokenId;
        std::vector<std::uint8_t> serverNonce(resp.serverNonce.data,
                                              resp.serverNonce.data + resp.serverNonce.length);
        return sec_->deriveKeys(tokenId_, clientNonce, serverNonce) == UAPLEX_Good;
    }

    template <class T>
    enc::DecodedMessage call(T& request) {
        request.requestHeader.authenticationToken = token_;
        request.requestHeader.requestHandle = requestId_;
        request.requestHeader.timeoutHint = 30000;
        enc::ByteBuffer body;
        enc::BinaryWriter w(body);
        enc::encodeMessage(w, request);
        // One chunk: the requests here are small.
        std::vector<std::uint8_t> v(24 + body.size());
        std::memcpy(v.data(), "MSGF", 4);
        Client::put(v, 4, std::uint32_t(v.size()));
        Client::put(v, 8, channelId_);
        Client::put(v, 12, tokenId_);
        Client::put(v, 16, ++seq_);
        Client::put(v, 20, requestId_++);
        std::memcpy(v.data() + 24, body.data(), body.size());
        std::size_t length = v.size();
        v.resize(v.size() + sec_->symmetricOverhead(kMode));
        if (sec_->secureSymmetric(tokenId_, kMode, v, 16, length) != UAPLEX_Good)
            return {UAPLEX_BadInternalError, nullptr, nullptr};
        v.resize(length);
        if (!raw_.sendRaw(v)) return {UAPLEX_BadConnectionClosed, nullptr, nullptr};
        response_.clear();
        for (;;) {
            auto c = raw_.receive();
            if (c.empty()) return {UAPLEX_BadConnectionClosed, nullptr, nullptr};
            if (std::memcmp(c.data(), "ERR", 3) == 0) return {Client::get(c, 8), nullptr, nullptr};
            std::size_t bodyLength = 0;
            if (sec_->verifySymmetric(tokenId_, kMode, c, 16, bodyLength) != UAPLEX_Good)
                return {UAPLEX_BadSecurityChecksFailed, nullptr, nullptr};
            response_.insert(response_.end(), c.begin() + 24, c.begin() + 16 + bodyLength);
            if (c[3] == 'F') break;
            if (c[3] == 'A') return {UAPLEX_BadRequestCancelledByClient, nullptr, nullptr};
        }
        arena_.reset();
        return enc::decodeMessage(response_, arena_, enc::DecodeLimits{});
    }

    // CreateSession (certificate, ApplicationUri, nonce) and an anonymous ActivateSession
    // signed with the client key over serverCertificate + serverNonce.
    uaplex_status createSession(std::string_view applicationUri) {
        std::vector<std::uint8_t> nonce(32);
        security::randomBytes(nonce);
        ua::CreateSessionRequest cs{};
        cs.clientDescription.applicationUri = ua::makeString(applicationUri);
        cs.endpointUrl = ua::makeString(url_);
        cs.sessionName = ua::makeString("secure victim");
        cs.clientCertificate = bytes(id_.cert->der);
        cs.clientNonce = bytes(nonce);
        cs.requestedSessionTimeout = 60000;
        auto m = call(cs);
        if (Client::result(m) != UAPLEX_Good) return Client::result(m);
        auto& r = *static_cast<ua::CreateSessionResponse*>(m.object);
        tokenBytes_.assign(r.authenticationToken.identifier.bytestring.data,
                           r.authenticationToken.identifier.bytestring.data + 32);
        token_ = r.authenticationToken;
        token_.identifier.bytestring.data = tokenBytes_.data();
        serverNonce_.assign(r.serverNonce.data, r.serverNonce.data + r.serverNonce.length);
        return activate();
    }
    uaplex_status activate() {
        std::vector<std::uint8_t> sig(id_.cert->keyBytes());
        if (!security::rsaSign(security::AsymmetricSignature::RsaPkcs15Sha256, id_.key.get(),
                               {server_->der, serverNonce_}, sig))
            return UAPLEX_BadInternalError;
        ua::ActivateSessionRequest as{};
        as.clientSignature.algorithm =
            ua::makeString("http://www.w3.org/2001/04/xmldsig-more#rsa-sha256");
        as.clientSignature.signature = bytes(sig);
        ua::AnonymousIdentityToken anon{ua::makeString("anonymous")};
        as.userIdentityToken.encoding = UAPLEX_EXTENSIONOBJECT_BINARY;
        as.userIdentityToken.type_id = ua::numericNodeId(0, 321);
        as.userIdentityToken.data_type = enc::dataTypeOf<ua::AnonymousIdentityToken>();
        as.userIdentityToken.object = &anon;
        auto m = call(as);
        if (Client::result(m) == UAPLEX_Good) {
            auto& r = *static_cast<ua::ActivateSessionResponse*>(m.object);
            serverNonce_.assign(r.serverNonce.data, r.serverNonce.data + r.serverNonce.length);
        }
        return Client::result(m);
    }
    const std::vector<std::uint8_t>& tokenBytes() const { return tokenBytes_; }
    // Takes another client's session (its AuthenticationToken and last nonce).
    void useSession(const SecureClient& other) {
        tokenBytes_ = other.tokenBytes_;
        serverNonce_ = other.serverNonce_;
        token_ = ua::NodeId{};
        token_.identifier_type = UAPLEX_ID_BYTESTRING;
        token_.identifier.bytestring =
            ua::ByteString{std::int32_t(tokenBytes_.size()), tokenBytes_.data()};
    }
    uaplex_status read() {
        std::vector<ua::ReadValueId> ids(1);
        auto r = test::readServerState(ids);
        return Client::result(call(r));
    }

  private:
    static constexpr auto kMode = securechannel::SecurityMode::SignAndEncrypt;
    static ua::ByteString bytes(const std::vector<std::uint8_t>& v) {
        return ua::ByteString{std::int32_t(v.size()), const_cast<std::uint8_t*>(v.data())};
    }
    test::TestIdentity& id_;
    std::shared_ptr<security::Certificate> server_;
    std::unique_ptr<securechannel::ChannelSecurity> sec_;
    Client raw_;
    std::string url_;
    std::uint32_t channelId_ = 0, tokenId_ = 0, seq_ = 1, requestId_ = 2;
    ua::NodeId token_ = ua::numericNodeId(0, 0);
    std::vector<std::uint8_t> tokenBytes_, serverNonce_, response_;
    enc::Arena arena_;
};

// An ActivateSession for the session `token` names, with `identity` (null: anonymous) and no
// client signature, as someone who only has the AuthenticationToken sends it.
std::vector<std::uint8_t> hijack(const std::vector<std::uint8_t>& token) {
    ua::ActivateSessionRequest as{};
    as.requestHeader.authenticationToken.identifier_type = UAPLEX_ID_BYTESTRING;
    as.requestHeader.authenticationToken.identifier.bytestring =
        ua::ByteString{std::int32_t(token.size()), const_cast<std::uint8_t*>(token.data())};
    as.requestHeader.requestHandle = 66;
    ua::AnonymousIdentityToken anon{ua::makeString("anonymous")};
    as.userIdentityToken.encoding = UAPLEX_EXTENSIONOBJECT_BINARY;
    as.userIdentityToken.type_id = ua::numericNodeId(0, 321);
    as.userIdentityToken.data_type = enc::dataTypeOf<ua::AnonymousIdentityToken>();
    as.userIdentityToken.object = &anon;
    enc::ByteBuffer body;
    enc::BinaryWriter w(body);
    enc::encodeMessage(w, as);
    return body.toVector();
}

}  // namespace

TEST_CASE("hostile sessions: a SignAndEncrypt session is not taken over from a None channel") {
    auto server = startServer("hostile-binding", "", "",
                              "[{ policy = \"None\" }, { policy = \"Basic256Sha256\" }]");
    auto serverCertificate = security::readCertificate(server.dir / "pki/own/certs/uaplex.der");
    REQUIRE(serverCertificate);
    auto trusted = [&](const char* cn, const char* uri, long serial) {
        test::IssueOptions o;
        o.name = {{"O", "plant"}, {"CN", cn}};
        o.uri = uri;
        o.serial = serial;
        o.keyUsage = "critical,digitalSignature,nonRepudiation,keyEncipherment,dataEncipherment";
        auto id = test::issueCertificate(o);
        REQUIRE(id.cert);
        test::writeBytes(server.dir / "pki/trusted/certs" / (std::string(cn) + ".der"),
                         id.cert->der);
        return id;
    };
    auto victimId = trusted("victim", "urn:hostile:victim", 1);
    auto otherId = trusted("other", "urn:hostile:other", 2);
    // The victim: an anonymous session on a SignAndEncrypt channel of its own certificate.
    SecureClient victim(victimId, serverCertificate);
    REQUIRE(victim.open(server.port));
    REQUIRE(victim.createSession("urn:hostile:victim") == UAPLEX_Good);
    REQUIRE(victim.read() == UAPLEX_Good);
    // Whoever learnt the AuthenticationToken activates it over None, without a signature.
    Client attacker;
    REQUIRE(openSlow(attacker, server.port));
    CHECK(Client::result(attacker.callRaw(hijack(victim.tokenBytes()))) ==
          UAPLEX_BadSecureChannelIdInvalid);
    // A SignAndEncrypt channel of another trusted certificate, signing with its own key.
    SecureClient other(otherId, serverCertificate);
    REQUIRE(other.open(server.port));
    other.useSession(victim);
    CHECK(other.activate() == UAPLEX_BadSecureChannelIdInvalid);
    CHECK(other.read() == UAPLEX_BadSecureChannelIdInvalid);
    // The victim keeps its session, and a legitimate client is served.
    CHECK(victim.read() == UAPLEX_Good);
    Client legit;
    REQUIRE(openSlow(legit, server.port));
    CHECK(legit.createSession() == UAPLEX_Good);
    CHECK(readsOk(legit, 3));
    // The victim itself, reconnected (same certificate and mode), may take its session over.
    SecureClient again(victimId, serverCertificate);
    REQUIRE(again.open(server.port));
    again.useSession(victim);
    CHECK(again.activate() == UAPLEX_Good);
    CHECK(again.read() == UAPLEX_Good);
}
