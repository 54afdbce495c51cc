// SPDX-License-Identifier: Apache-2.0
// ActivateSession with UserName tokens through the dispatcher: failed logins lock a user name
// out (the right password included), a guessing session is closed, and with a route the
// password check runs in the login pool: the worker returns at once, one login per session
// in flight, the answer comes later through the route.
#include <unistd.h>

#include <catch2/catch.hpp>

#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <mutex>
#include <string>
#include <thread>

#include <uaplex/config/config.hpp>
#include <uaplex/server/dispatcher.hpp>
#include <uaplex/session/server_counters.hpp>
#include <uaplex/session/user_store.hpp>

using namespace uaplex;
using namespace uaplex::server;
namespace fs = std::filesystem;

namespace {

struct NoServices final : ServiceHandler {
    session::ServerCounters c;
    void* createSessionState() override { return this; }
    void destroySessionState(void*) noexcept override {}
    session::ServerCounters& counters() noexcept override { return c; }
};

// Collects what the dispatcher sends later.
struct Route final : ResponseRoute {
    std::mutex mutex;
    std::condition_variable cv;
    std::vector<std::vector<std::uint8_t>> sent;
    void send(std::span<const std::uint8_t> body) noexcept override {
        std::lock_guard lock(mutex);
        sent.emplace_back(body.begin(), body.end());
        cv.notify_all();
    }
    std::uint32_t channelId() const noexcept override { return 1; }
    bool waitFor(std::size_t n) {
        std::unique_lock lock(mutex);
        return cv.wait_for(lock, std::chrono::seconds(30), [&] { return sent.size() >= n; });
    }
};

struct Fixture {
    fs::path dir = fs::temp_directory_path() / ("uaplex-login-" + std::to_string(getpid()));
    config::ServerConfig cfg;
    NoServices services;
    std::unique_ptr<session::SessionManager> sessions;
    std::unique_ptr<Discovery> discovery;
    std::unique_ptr<session::IdentityVerifier> verifier;
    std::unique_ptr<Dispatcher> dispatcher;
    std::shared_ptr<Route> route = std::make_shared<Route>();
    bool withRoute = false;
    std::string peer = "10.1.2.3:50000";
    enc::Arena arena, responseArena;
    enc::ByteBuffer out;
    std::vector<std::uint8_t> tokenBytes;
    ua::NodeId token = ua::numericNodeId(0, 0);

    explicit Fixture(const std::string& limits) {
        fs::create_directories(dir);
        session::writeUsersFile(dir / "users.toml",
                                {{"alice", {"Operator"}, session::hashPassword("right", 1000)}});
        cfg = config::parseString("[server.limits]\n" + limits + "\n[access]\nusers_file = \"" +
                                      (dir / "users.toml").string() +
                                      "\"\nusername_security_policy = "
                                      "\"http://opcfoundation.org/UA/SecurityPolicy#None\"\n",
                                  "test.toml", {});
        sessions = std::make_unique<session::SessionManager>(
            session::SessionLimits{10, 10000, 60000}, &services.c);
        discovery = std::make_unique<Discovery>(cfg.server);
        verifier = std::make_unique<session::IdentityVerifier>(cfg.access, nullptr);
        dispatcher = std::make_unique<Dispatcher>(cfg, *sessions, services, *discovery);
        dispatcher->setAccess(verifier.get(), nullptr);
    }
    ~Fixture() {
        dispatcher.reset();
        fs::remove_all(dir);
    }

    static std::shared_ptr<ResponseRoute> makeRoute(void* user) {
        return static_cast<Fixture*>(user)->route;
    }
    template <class T>
    enc::DecodedMessage call(T& request) {
        request.requestHeader.authenticationToken = token;
        request.requestHeader.requestHandle = 9;
        enc::ByteBuffer in;
        enc::BinaryWriter w(in);
        REQUIRE(enc::encodeMessage(w, request) == UAPLEX_Good);
        arena.reset();
        RequestContext ctx{1, 1000, 0, "opc.tcp://127.0.0.1:4840"};
        ctx.peer = peer;
        if (withRoute) {
            ctx.makeRoute = &Fixture::makeRoute;
            ctx.routeUser = this;
        }
        out.clear();
        dispatcher->handle(in.span(), ctx, arena, out);
        if (out.size() == 0) return {UAPLEX_GoodCompletesAsynchronously, nullptr, nullptr};
        responseArena.reset();
        return enc::decodeMessage(out.span(), responseArena, {});
    }
    static uaplex_status result(const enc::DecodedMessage& m) {
        if (m.status != UAPLEX_Good) return m.status;
        return static_cast<const ua::ResponseHeader*>(m.object)->serviceResult;
    }
    uaplex_status decodeSent(std::size_t i) {
        responseArena.reset();
        auto m = enc::decodeMessage(route->sent.at(i), responseArena, {});
        return result(m);
    }
    void openSession() {
        ua::CreateSessionRequest cs{};
        cs.requestedSessionTimeout = 30000;
        auto m = call(cs);
        REQUIRE(result(m) == UAPLEX_Good);
        auto& r = *static_cast<ua::CreateSessionResponse*>(m.object);
        tokenBytes.assign(r.authenticationToken.identifier.bytestring.data,
                          r.authenticationToken.identifier.bytestring.data + 32);
        token = r.authenticationToken;
        token.identifier.bytestring.data = tokenBytes.data();
    }
    enc::DecodedMessage login(std::string_view password) {
        ua::UserNameIdentityToken user{};
        user.policyId = ua::makeString("username");
        user.userName = ua::makeString("alice");
        user.password = ua::ByteString{
            std::int32_t(password.size()),
            const_cast<std::uint8_t*>(reinterpret_cast<const std::uint8_t*>(password.data()))};
        ua::ActivateSessionRequest as{};
        as.userIdentityToken.encoding = UAPLEX_EXTENSIONOBJECT_BINARY;
        as.userIdentityToken.type_id = ua::numericNodeId(0, 324);
        as.userIdentityToken.data_type = enc::dataTypeOf<ua::UserNameIdentityToken>();
        as.userIdentityToken.object = &user;
        return call(as);
    }
    uaplex_status anonymous() {
        ua::ActivateSessionRequest as{};
        return result(call(as));
    }
};

}  // namespace

TEST_CASE("failed logins: a guessing session is closed, then the user name is locked out") {
    Fixture f(
        "login_lockout_failures = 4\nmax_login_failures_per_session = 3\n"
        "login_lockout_ms = 600000");
    f.openSession();
    for (int i = 0; i < 3; ++i)
        CHECK(Fixture::result(f.login("wrong")) == UAPLEX_BadUserAccessDenied);
    // The third failure closed the session.
    CHECK(Fixture::result(f.login("right")) == UAPLEX_BadSessionIdInvalid);
    f.openSession();
    CHECK(Fixture::result(f.login("wrong")) == UAPLEX_BadUserAccessDenied);
    // Four failures for alice: locked out, the right password is refused too, unhashed.
    CHECK(Fixture::result(f.login("right")) == UAPLEX_BadUserAccessDenied);
    CHECK(f.services.c.securityRejectedSessionCount == 5);
    // Anonymous is not a guess: still served on the same session.
    CHECK(f.anonymous() == UAPLEX_Good);
}

TEST_CASE("without failures the right password logs in, and a success forgets earlier ones") {
    Fixture f("login_lockout_failures = 3");
    f.openSession();
    CHECK(Fixture::result(f.login("wrong")) == UAPLEX_BadUserAccessDenied);
    CHECK(Fixture::result(f.login("wrong")) == UAPLEX_BadUserAccessDenied);
    CHECK(Fixture::result(f.login("right")) == UAPLEX_Good);
    // From another peer: alice's failures were forgotten with her login.
    f.peer = "10.9.9.9:4000";
    f.openSession();
    CHECK(Fixture::result(f.login("wrong")) == UAPLEX_BadUserAccessDenied);
    CHECK(Fixture::result(f.login("right")) == UAPLEX_Good);
    // The first peer's are not: a third failure there locks it out, even for alice.
    f.peer = "10.1.2.3:50001";
    f.openSession();
    CHECK(Fixture::result(f.login("wrong")) == UAPLEX_BadUserAccessDenied);
    CHECK(Fixture::result(f.login("right")) == UAPLEX_BadUserAccessDenied);
}

TEST_CASE("with a route the password is checked in the login pool, answered through the route") {
    Fixture f(
        "login_failures_before_delay = 1\nlogin_delay_ms = 1000\nlogin_max_delay_ms = 1000\n"
        "password_hash_queue = 2\nmax_pending_logins_per_peer = 8");
    f.openSession();
    f.withRoute = true;
    // The worker is done at once: nothing in `out`, the answer comes through the route.
    CHECK(f.login("wrong").status == UAPLEX_GoodCompletesAsynchronously);
    REQUIRE(f.route->waitFor(1));
    CHECK(f.decodeSent(0) == UAPLEX_BadUserAccessDenied);
    // The second attempt is delayed (one failure before): it waits in the pool, holding no
    // thread, and no second login of the session may start meanwhile.
    auto start = std::chrono::steady_clock::now();
    CHECK(f.login("right").status == UAPLEX_GoodCompletesAsynchronously);
    CHECK(Fixture::result(f.login("right")) == UAPLEX_BadTooManyOperations);
    REQUIRE(f.route->waitFor(2));
    // The 1 s delay runs from the failure, a moment before start: assert it was held back.
    CHECK(std::chrono::steady_clock::now() - start >= std::chrono::milliseconds(500));
    CHECK(f.decodeSent(1) == UAPLEX_Good);
    CHECK(f.sessions->lookup(f.token)->activated());
    // A login waits in the pool as its bytes: one padded beyond 64 KiB is refused unqueued.
    f.openSession();
    {
        std::string big(100 * 1024, 'l');
        ua::String locale = ua::makeString(big);
        ua::UserNameIdentityToken user{};
        user.policyId = ua::makeString("username");
        user.userName = ua::makeString("alice");
        user.password =
            ua::ByteString{5, reinterpret_cast<std::uint8_t*>(const_cast<char*>("right"))};
        ua::ActivateSessionRequest as{};
        as.localeIds = {1, &locale};
        as.userIdentityToken.encoding = UAPLEX_EXTENSIONOBJECT_BINARY;
        as.userIdentityToken.type_id = ua::numericNodeId(0, 324);
        as.userIdentityToken.data_type = enc::dataTypeOf<ua::UserNameIdentityToken>();
        as.userIdentityToken.object = &user;
        CHECK(Fixture::result(f.call(as)) == UAPLEX_BadRequestTooLarge);
    }
    // The pool's queue is finite (2): the delayed attempts of other sessions fill it, and
    // beyond it the answer is BadTooManyOperations on the spot.
    int refused = 0;
    for (int i = 0; i < 4; ++i) {
        f.openSession();
        if (Fixture::result(f.login("wrong")) == UAPLEX_BadTooManyOperations) ++refused;
    }
    CHECK(refused >= 1);
}
