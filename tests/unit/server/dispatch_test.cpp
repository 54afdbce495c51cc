// SPDX-License-Identifier: Apache-2.0
// Dispatch: discovery without a session, session services, the statuses of requests without
// a usable session, routing to the services, unsupported and undecodable requests, the
// service table's rows and counters.
#include <catch2/catch.hpp>

#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <uaplex/config/config.hpp>
#include <uaplex/server/dispatcher.hpp>
#include <uaplex/server/service_table.hpp>
#include <uaplex/session/server_counters.hpp>

using namespace uaplex;
using namespace uaplex::server;

namespace {

// Answers Read with one Good DataValue per node; counts calls.
struct FakeServices final : ServiceHandler {
    int calls = 0;
    int states = 0;
    session::ServerCounters c;
    void* createSessionState() override { return &++states; }
    void destroySessionState(void*) noexcept override { --states; }
    static uaplex_status read(void* self, enc::Arena& arena, void* state,
                              const session::AccessView*, const void* req,
                              const session::RequestContext*, std::uint32_t,
                              const enc::DataType*& rtype, void*& resp) noexcept {
        ++static_cast<FakeServices*>(self)->calls;
        if (state == nullptr) return UAPLEX_BadInternalError;
        auto& r = *static_cast<const ua::ReadRequest*>(req);
        auto* out = arena.allocateArray<ua::ReadResponse>(1);
        auto* values = arena.allocateArray<ua::DataValue>(r.nodesToRead.size());
        for (std::size_t i = 0; i < r.nodesToRead.size(); ++i) {
            values[i].mask = UAPLEX_DATAVALUE_VALUE;
            values[i].value = ua::variantInt32(std::int32_t(i) + 100);
        }
        out->results = {std::int32_t(r.nodesToRead.size()), values};
        rtype = enc::dataTypeOf<ua::ReadResponse>();
        resp = out;
        return UAPLEX_Good;
    }
    NodeServices nodeServices() noexcept override {
        NodeServices n;
        n.self = this;
        n.read = &read;
        return n;
    }
    session::ServerCounters& counters() noexcept override { return c; }
};

struct Fixture {
    config::ServerConfig cfg = config::parseString(
        "[server]\napplication_uri = \"urn:test:uaplex\"\n"
        "endpoints = [\"opc.tcp://0.0.0.0:4840\", \"opc.tcp://[::]:4841\"]\n",
        "test.toml", {});
    FakeServices services;
    session::SessionManager sessions{{10, 10000, 60000},
                                     &services.c,
                                     {[this] { return services.createSessionState(); },
                                      [this](void* p) { services.destroySessionState(p); }}};
    Discovery discovery{cfg.server};
    Dispatcher dispatcher{cfg, sessions, services, discovery};
    enc::Arena arena;
    enc::Arena responseArena;
    enc::ByteBuffer out;
    ua::NodeId token = ua::numericNodeId(0, 0);
    std::uint32_t channel = 1;

    template <class T>
    enc::DecodedMessage call(T& request, std::uint32_t onChannel = 0) {
        request.requestHeader.authenticationToken = token;
        request.requestHeader.requestHandle = 77;
        enc::ByteBuffer in;
        enc::BinaryWriter w(in);
        REQUIRE(enc::encodeMessage(w, request) == UAPLEX_Good);
        return raw(in.toVector(), onChannel);
    }
    enc::DecodedMessage raw(std::vector<std::uint8_t> bytes, std::uint32_t onChannel = 0) {
        arena.reset();
        RequestContext ctx{onChannel ? onChannel : channel, 1000, 0, "opc.tcp://myhost:4840"};
        dispatcher.handle(bytes, ctx, arena, out);
        responseArena.reset();
        return enc::decodeMessage(out.span(), responseArena, {});
    }
    static uaplex_status result(const enc::DecodedMessage& m) {
        REQUIRE(m.status == UAPLEX_Good);
        return static_cast<const ua::ResponseHeader*>(m.object)->serviceResult;
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
    std::vector<std::uint8_t> tokenBytes;
};

ua::ReadRequest readOne() {
    static ua::ReadValueId id{};
    id.nodeId = ua::numericNodeId(0, 2259);
    id.attributeId = 13;
    ua::ReadRequest r{};
    r.nodesToRead = {1, &id};
    return r;
}

}  // namespace

TEST_CASE("GetEndpoints and FindServers answer without a session") {
    Fixture f;
    ua::GetEndpointsRequest ge{};
    ge.endpointUrl = ua::makeString("opc.tcp://plant-7:4840");
    auto m = f.call(ge);
    REQUIRE(Fixture::result(m) == UAPLEX_Good);
    REQUIRE(m.type == enc::dataTypeOf<ua::GetEndpointsResponse>());
    auto& r = *static_cast<ua::GetEndpointsResponse*>(m.object);
    REQUIRE(r.endpoints.size() == 2);
    CHECK(ua::view(r.endpoints[0].endpointUrl) == "opc.tcp://plant-7:4840");
    CHECK(ua::view(r.endpoints[1].endpointUrl) == "opc.tcp://plant-7:4841");
    CHECK(r.endpoints[0].securityMode == ua::MessageSecurityMode::None_);
    CHECK(ua::view(r.endpoints[0].securityPolicyUri) ==
          "http://opcfoundation.org/UA/SecurityPolicy#None");
    CHECK(ua::view(r.endpoints[0].transportProfileUri) == kTransportProfileUaTcp);
    REQUIRE(r.endpoints[0].userIdentityTokens.size() == 1);
    CHECK(r.endpoints[0].userIdentityTokens[0].tokenType == ua::UserTokenType::Anonymous);
    CHECK(ua::view(r.endpoints[0].userIdentityTokens[0].policyId) == "anonymous");
    CHECK(ua::view(r.endpoints[0].server.applicationUri) == "urn:test:uaplex");

    ua::String profiles[] = {
        ua::makeString("http://opcfoundation.org/UA-Profile/Transport/https-uabinary")};
    ge.profileUris = {1, profiles};
    m = f.call(ge);
    CHECK(static_cast<ua::GetEndpointsResponse*>(m.object)->endpoints.size() == 0);

    ua::FindServersRequest fs{};
    m = f.call(fs);
    REQUIRE(Fixture::result(m) == UAPLEX_Good);
    auto& s = *static_cast<ua::FindServersResponse*>(m.object);
    REQUIRE(s.servers.size() == 1);
    CHECK(s.servers[0].applicationType == ua::ApplicationType::Server);
    REQUIRE(s.servers[0].discoveryUrls.size() == 2);
    CHECK(ua::view(s.servers[0].discoveryUrls[0]) == "opc.tcp://myhost:4840");  // from Hello
    ua::String other[] = {ua::makeString("urn:someone:else")};
    fs.serverUris = {1, other};
    m = f.call(fs);
    CHECK(static_cast<ua::FindServersResponse*>(m.object)->servers.size() == 0);
}

TEST_CASE("session-bound requests: unknown token, before activation, other channel") {
    Fixture f;
    auto read = readOne();
    CHECK(Fixture::result(f.call(read)) == UAPLEX_BadSessionIdInvalid);
    f.openSession();
    CHECK(Fixture::result(f.call(read)) == UAPLEX_BadSessionNotActivated);
    ua::ActivateSessionRequest as{};
    CHECK(Fixture::result(f.call(as, 2)) == UAPLEX_BadSecureChannelIdInvalid);
    auto m = f.call(as);
    REQUIRE(Fixture::result(m) == UAPLEX_Good);
    CHECK(static_cast<ua::ActivateSessionResponse*>(m.object)->serverNonce.length == 32);
    CHECK(Fixture::result(f.call(read, 2)) == UAPLEX_BadSecureChannelIdInvalid);
    CHECK(f.services.calls == 0);
}

TEST_CASE("Read reaches the services with the session's state; the response header is filled") {
    Fixture f;
    f.openSession();
    ua::ActivateSessionRequest as{};
    ua::AnonymousIdentityToken anon{ua::makeString("anonymous")};
    as.userIdentityToken.encoding = UAPLEX_EXTENSIONOBJECT_BINARY;
    as.userIdentityToken.type_id = ua::numericNodeId(0, 321);
    as.userIdentityToken.data_type = enc::dataTypeOf<ua::AnonymousIdentityToken>();
    as.userIdentityToken.object = &anon;
    REQUIRE(Fixture::result(f.call(as)) == UAPLEX_Good);
    auto read = readOne();
    auto m = f.call(read);
    REQUIRE(Fixture::result(m) == UAPLEX_Good);
    REQUIRE(m.type == enc::dataTypeOf<ua::ReadResponse>());
    auto& r = *static_cast<ua::ReadResponse*>(m.object);
    CHECK(r.responseHeader.requestHandle == 77);
    REQUIRE(r.results.size() == 1);
    CHECK(r.results[0].value.value.int32 == 100);
    CHECK(f.services.calls == 1);

    ua::CancelRequest cancel{};
    m = f.call(cancel);
    REQUIRE(Fixture::result(m) == UAPLEX_Good);
    CHECK(static_cast<ua::CancelResponse*>(m.object)->cancelCount == 0);

    ua::CreateSubscriptionRequest sub{};
    CHECK(Fixture::result(f.call(sub)) == UAPLEX_BadServiceUnsupported);

    ua::CloseSessionRequest close{};
    close.deleteSubscriptions = true;
    CHECK(Fixture::result(f.call(close)) == UAPLEX_Good);
    CHECK(Fixture::result(f.call(read)) == UAPLEX_BadSessionIdInvalid);
    CHECK(f.services.c.currentSessionCount == 0);
}

TEST_CASE("UserName and X509 identities are rejected; an unknown identity is invalid") {
    Fixture f;
    f.openSession();
    ua::ActivateSessionRequest as{};
    ua::UserNameIdentityToken user{};
    user.policyId = ua::makeString("username");
    user.userName = ua::makeString("operator");
    as.userIdentityToken.encoding = UAPLEX_EXTENSIONOBJECT_BINARY;
    as.userIdentityToken.type_id = ua::numericNodeId(0, 324);
    as.userIdentityToken.data_type = enc::dataTypeOf<ua::UserNameIdentityToken>();
    as.userIdentityToken.object = &user;
    CHECK(Fixture::result(f.call(as)) == UAPLEX_BadIdentityTokenRejected);
    ua::X509IdentityToken cert{};
    as.userIdentityToken.type_id = ua::numericNodeId(0, 327);
    as.userIdentityToken.data_type = enc::dataTypeOf<ua::X509IdentityToken>();
    as.userIdentityToken.object = &cert;
    CHECK(Fixture::result(f.call(as)) == UAPLEX_BadIdentityTokenRejected);
}

TEST_CASE("undecodable requests and non-requests get a ServiceFault") {
    Fixture f;
    auto m = f.raw({0x01, 0x00, 0x77, 0x02, 0xFF});
    REQUIRE(m.type == enc::dataTypeOf<ua::ServiceFault>());
    CHECK(Fixture::result(m) == UAPLEX_BadDecodingError);
    ua::ReadResponse notARequest{};
    enc::ByteBuffer in;
    enc::BinaryWriter w(in);
    enc::encodeMessage(w, notARequest);
    m = f.raw(in.toVector());
    CHECK(Fixture::result(m) == UAPLEX_BadServiceUnsupported);
    // A truncated Read keeps its RequestHandle in the fault.
    auto read = readOne();
    read.requestHeader.requestHandle = 5;
    enc::ByteBuffer full;
    enc::BinaryWriter fw(full);
    read.requestHeader.authenticationToken = ua::numericNodeId(0, 0);
    enc::encodeMessage(fw, read);
    auto bytes = full.toVector();
    bytes.resize(bytes.size() - 3);
    m = f.raw(bytes);
    CHECK(Fixture::result(m) == UAPLEX_BadDecodingError);
    CHECK(static_cast<ua::ResponseHeader*>(m.object)->requestHandle == 5);
}

TEST_CASE("CreateSession at max_sessions answers BadTooManySessions") {
    Fixture f;
    // Over two channels: one channel holds at most 8 sessions before their activation.
    for (int i = 0; i < 10; ++i) {
        f.channel = 1 + std::uint32_t(i / 5);
        f.openSession();
    }
    ua::CreateSessionRequest cs{};
    CHECK(Fixture::result(f.call(cs)) == UAPLEX_BadTooManySessions);
}

TEST_CASE("decoding limits come from [server.limits]; 0 is no limit") {
    Fixture f;
    CHECK(f.dispatcher.decodeLimits().maxStringLength == f.cfg.server.limits.max_string_length);
    auto cfg = config::parseString(
        "[server.limits]\nmax_string_length = 0\nmax_bytestring_length = 0\n"
        "max_array_length = 300\n",
        "test.toml", {});
    Dispatcher d{cfg, f.sessions, f.services, f.discovery};
    CHECK(d.decodeLimits().maxStringLength == INT32_MAX);
    CHECK(d.decodeLimits().maxByteStringLength == INT32_MAX);
    CHECK(d.decodeLimits().maxArrayLength == 300);
}

TEST_CASE("CreateSession: unactivated sessions per channel are capped and close with it") {
    Fixture f;
    ua::CreateSessionRequest cs{};
    std::string huge(1 << 20, 'n');
    cs.sessionName = ua::makeString(huge);
    for (int i = 0; i < 8; ++i) REQUIRE(Fixture::result(f.call(cs)) == UAPLEX_Good);
    CHECK(Fixture::result(f.call(cs)) == UAPLEX_BadTooManySessions);
    CHECK(Fixture::result(f.call(cs, 2)) == UAPLEX_Good);  // another channel
    CHECK(f.sessions.channelClosed(1) == 8);
    CHECK(f.sessions.count() == 1);
}

TEST_CASE("service table: one row per service, sorted by its request's encoding id") {
    std::set<std::uint32_t> ids;
    std::set<std::string_view> names;
    std::set<const enc::DataType*> requests, responses;
    std::uint32_t previous = 0;
    for (const ServiceDescriptor& row : serviceTable()) {
        INFO(row.name);
        CHECK(row.requestEncodingId > previous);
        previous = row.requestEncodingId;
        CHECK(ids.insert(row.requestEncodingId).second);
        CHECK(names.insert(row.name).second);
        REQUIRE(row.requestType() != nullptr);
        REQUIRE(row.responseType() != nullptr);
        CHECK(requests.insert(row.requestType()).second);
        CHECK(responses.insert(row.responseType()).second);
        // The key is the request type's own binary encoding id, its name the type's.
        CHECK(row.requestType()->binaryEncodingId == row.requestEncodingId);
        CHECK(std::string(row.requestType()->name) == std::string(row.name) + "Request");
        CHECK(std::string(row.responseType()->name) == std::string(row.name) + "Response");
        CHECK(row.handler != nullptr);
        CHECK(findService(row.requestEncodingId) == &row);
        CHECK(&serviceTable()[serviceIndex(row)] == &row);
    }
    CHECK(ids.size() == serviceTable().size());
    CHECK(findService(0) == nullptr);
    // Just outside the table's id range, and the largest id, find nothing.
    CHECK(findService(serviceTable().front().requestEncodingId - 1) == nullptr);
    CHECK(findService(serviceTable().back().requestEncodingId + 1) == nullptr);
    CHECK(findService(0xFFFFFFFFu) == nullptr);
    CHECK(findService(enc::dataTypeOf<ua::QueryFirstRequest>()->binaryEncodingId) == nullptr);
    CHECK(findService(ua::ns0::HistoryReadRequest_Encoding_DefaultBinary)->session ==
          SessionUse::Activated);
    CHECK(findService(ua::ns0::HistoryUpdateRequest_Encoding_DefaultBinary)->session ==
          SessionUse::Activated);
    // NodeManagement (Part 4 5.7) with an activated session.
    for (std::uint32_t id : {ua::ns0::AddNodesRequest_Encoding_DefaultBinary,
                             ua::ns0::AddReferencesRequest_Encoding_DefaultBinary,
                             ua::ns0::DeleteNodesRequest_Encoding_DefaultBinary,
                             ua::ns0::DeleteReferencesRequest_Encoding_DefaultBinary}) {
        REQUIRE(findService(id) != nullptr);
        CHECK(findService(id)->session == SessionUse::Activated);
    }
    // Discovery needs no session; the session services find theirs; the rest need one.
    CHECK(findService(ua::ns0::GetEndpointsRequest_Encoding_DefaultBinary)->session ==
          SessionUse::None);
    CHECK(findService(ua::ns0::ActivateSessionRequest_Encoding_DefaultBinary)->session ==
          SessionUse::Own);
    CHECK(findService(ua::ns0::ReadRequest_Encoding_DefaultBinary)->session ==
          SessionUse::Activated);
    // The admission classes; only Cancel bypasses the request queue.
    CHECK(findService(ua::ns0::CreateSessionRequest_Encoding_DefaultBinary)->admission ==
          AdmissionClass::SessionEstablishment);
    CHECK(findService(ua::ns0::CloseSessionRequest_Encoding_DefaultBinary)->admission ==
          AdmissionClass::Control);
    CHECK(findService(ua::ns0::PublishRequest_Encoding_DefaultBinary)->admission ==
          AdmissionClass::Request);
    std::size_t inline_ = 0;
    for (const ServiceDescriptor& row : serviceTable()) inline_ += row.onIoThread;
    CHECK(inline_ == 1);
    CHECK(findService(ua::ns0::CancelRequest_Encoding_DefaultBinary)->onIoThread);
}

TEST_CASE("service table: a request without a row is BadServiceUnsupported; rows count") {
    Fixture f;
    ua::HistoryReadRequest history{};
    // Without a session it learns nothing about which services exist.
    CHECK(Fixture::result(f.call(history)) == UAPLEX_BadSessionIdInvalid);
    f.openSession();
    ua::ActivateSessionRequest as{};
    REQUIRE(Fixture::result(f.call(as)) == UAPLEX_Good);
    CHECK(Fixture::result(f.call(history)) == UAPLEX_BadServiceUnsupported);

    auto countOf = [&](std::uint32_t id) { return f.dispatcher.serviceCounts(*findService(id)); };
    const std::uint32_t read = ua::ns0::ReadRequest_Encoding_DefaultBinary;
    auto r = readOne();
    REQUIRE(Fixture::result(f.call(r)) == UAPLEX_Good);
    CHECK(countOf(read).requests == 1);
    CHECK(countOf(read).errors == 0);
    CHECK(Fixture::result(f.call(r, 2)) == UAPLEX_BadSecureChannelIdInvalid);
    CHECK(countOf(read).requests == 2);
    CHECK(countOf(read).errors == 1);
    CHECK(countOf(ua::ns0::CreateSessionRequest_Encoding_DefaultBinary).requests == 1);
    CHECK(countOf(ua::ns0::ActivateSessionRequest_Encoding_DefaultBinary).requests == 1);
    // Without a subscription engine the subscription rows answer BadServiceUnsupported.
    ua::CreateSubscriptionRequest sub{};
    CHECK(Fixture::result(f.call(sub)) == UAPLEX_BadServiceUnsupported);
    CHECK(countOf(ua::ns0::CreateSubscriptionRequest_Encoding_DefaultBinary).errors == 1);
}

TEST_CASE("service table: counts from many threads add up, each thread on lines of its own") {
    // Every worker counts every request: a thread that shared a cache line with another
    // would pass it back and forth on each one.
    static_assert(alignof(ServiceCounters) >= 64);
    static_assert(sizeof(ServiceCounters) >= ServiceCounters::kShards * 64);
    auto counters = std::make_unique<ServiceCounters>();
    constexpr int kThreads = 2 * int(ServiceCounters::kShards) + 3;  // shards are reused
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t)
        threads.emplace_back([&counters, t] {
            for (int i = 0; i < 1000; ++i) {
                counters->countRequest(3);
                if (i % 10 == 0) counters->countError(3);
                counters->countRequest(std::size_t(t) % kMaxServiceRows);
            }
        });
    for (auto& t : threads) t.join();
    std::uint64_t row3 = 0;
    for (int t = 0; t < kThreads; ++t) row3 += std::size_t(t) % kMaxServiceRows == 3 ? 1000 : 0;
    CHECK(counters->read(3).requests == kThreads * 1000 + row3);
    CHECK(counters->read(3).errors == kThreads * 100);
    CHECK(counters->read(0).requests == 1000);
    CHECK(counters->read(kMaxServiceRows - 1).errors == 0);
}
