// SPDX-License-Identifier: Apache-2.0
// A misbehaving node manager (plugins/faulty_nm.cpp) in the real executable: each fault
// (an exception, a reserved status, a value that cannot be encoded, a NULL result with Good,
// an invalid NodeId, a huge string, a slow read) gives that operation a Bad status, the other
// operations of the request and other sessions are served, and the server stays up.
#include <catch2/catch.hpp>

#include <chrono>
#include <filesystem>
#include <future>
#include <string>
#include <thread>

#include "support/client_services.hpp"
#include "support/opcua_client.hpp"
#include "support/server_process.hpp"

using namespace uaplex;
using test::Client;

namespace {

constexpr uaplex_status kReservedSeverity = 0xFFFF0000u;

test::ServerProcess& server() {
    static test::ServerProcess s("faulty", [](std::uint16_t port, const std::filesystem::path&) {
        return test::configHead(port, "error") +
               "request_threads = 2\n"
               "[server.limits]\nmax_message_size = 1048576\nmax_array_length = 65536\n"
               "[access]\nanonymous_permissions = [\"All\"]\n"
               "[slots]\nrequest_queue = \"fifo\"\n"
               "[plugins.fifo]\n[plugins.transport-tcp]\n"
               "[plugins.test-faulty]\nlibrary = \"" UAPLEX_FAULTY_PLUGIN "\"\n";
    });
    return s;
}

struct Session {
    Client c;
    std::uint16_t ns = 0;
    Session() {
        REQUIRE(c.open(server().port));
        REQUIRE(c.createSession() == UAPLEX_Good);
        ns = test::namespaceIndex(c, "urn:uaplex:test-faulty");
    }
    ua::NodeId node(const char* name) const { return ua::stringNodeId(ns, name); }
};

// The server answers, and a Good node of the faulty manager still reads 42.
void stillServed(Session& s) {
    REQUIRE(server().alive());
    ua::DataValue v = test::readOne(s.c, s.node("Good"));
    CHECK(v.status == UAPLEX_Good);
    CHECK(v.value.value.int32 == 42);
    test::legitimateClientServed(server().port);
}

bool isBad(uaplex_status st) {
    return (st & 0xC0000000u) == 0x80000000u;
}

}  // namespace

TEST_CASE("faulty node manager: each bad Read item is Bad, the items beside it are Good") {
    Session s;
    const char* faults[] = {"Throw",     "ReservedStatus", "InvalidType",  "NullString",
                            "NullArray", "NullBoxed",      "InvalidNodeId"};
    for (const char* fault : faults) {
        INFO(fault);
        // The faulty item between two Good ones: only it fails.
        ua::ReadValueId ids[3]{};
        ids[0].nodeId = s.node("Good");
        ids[1].nodeId = s.node(fault);
        ids[2].nodeId = ua::numericNodeId(0, 2259);  // Server_ServerStatus_State
        for (auto& id : ids) id.attributeId = 13;
        ua::ReadRequest r{};
        r.nodesToRead = {3, ids};
        auto m = s.c.call(r);
        REQUIRE(Client::result(m) == UAPLEX_Good);
        const auto& results = static_cast<ua::ReadResponse*>(m.object)->results;
        REQUIRE(results.size() == 3);
        CHECK(results[0].status == UAPLEX_Good);
        CHECK(results[0].value.value.int32 == 42);
        CHECK(results[1].status == UAPLEX_BadInternalError);
        CHECK((results[1].value.encoding & UAPLEX_VARIANT_TYPE_MASK) == UAPLEX_TYPE_NULL);
        CHECK(results[2].status == UAPLEX_Good);
    }
    stillServed(s);
}

TEST_CASE("faulty node manager: a value larger than a response is refused, not sent") {
    Session s;
    ua::ReadValueId id{};
    id.nodeId = s.node("HugeString");
    id.attributeId = 13;
    ua::ReadRequest r{};
    r.nodesToRead = {1, &id};
    auto m = s.c.call(r);
    REQUIRE(m.object != nullptr);
    CHECK(Client::result(m) == UAPLEX_BadResponseTooLarge);
    stillServed(s);
}

TEST_CASE("faulty node manager: a slow Read holds one worker, other sessions are served") {
    Session slow;
    ua::ReadValueId id{};
    id.nodeId = slow.node("Slow");
    id.attributeId = 13;
    ua::ReadRequest r{};
    r.nodesToRead = {1, &id};
    REQUIRE(slow.c.send(r, 77));
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    // The other worker answers another session while the first one sleeps in the plugin.
    Session other;
    auto t0 = std::chrono::steady_clock::now();
    ua::DataValue v = test::readOne(other.c, other.node("Good"));
    CHECK(v.status == UAPLEX_Good);
    CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::milliseconds(1000));
    auto m = slow.c.receiveResponse();
    REQUIRE(m.object != nullptr);
    CHECK(Client::result(m) == UAPLEX_Good);
    CHECK(static_cast<ua::ReadResponse*>(m.object)->results[0].value.value.int32 == 42);
}

TEST_CASE("faulty node manager: a bad Write status becomes BadInternalError") {
    Session s;
    CHECK(test::writeInt32(s.c, s.node("Good"), 1) == UAPLEX_Good);
    CHECK(test::writeInt32(s.c, s.node("Throw"), 1) == UAPLEX_BadInternalError);
    CHECK(test::writeInt32(s.c, s.node("ReservedStatus"), 1) == UAPLEX_BadInternalError);
    stillServed(s);
}

namespace {

ua::BrowseResult browseOne(Session& s, const char* name) {
    ua::BrowseDescription bd{};
    bd.nodeId = s.node(name);
    bd.browseDirection = ua::BrowseDirection::Forward;
    bd.referenceTypeId = ua::numericNodeId(0, 0);  // every reference type
    bd.resultMask = 63;
    ua::BrowseRequest br{};
    br.nodesToBrowse = {1, &bd};
    auto m = s.c.call(br);
    REQUIRE(Client::result(m) == UAPLEX_Good);
    const auto& results = static_cast<ua::BrowseResponse*>(m.object)->results;
    REQUIRE(results.size() == 1);
    return results[0];
}

}  // namespace

TEST_CASE(
    "faulty node manager: a bad Browse answer gives BadInternalError or drops the reference") {
    Session s;
    ua::BrowseResult good = browseOne(s, "Good");
    CHECK(good.statusCode == UAPLEX_Good);
    CHECK(good.references.size() == 1);
    CHECK(browseOne(s, "Throw").statusCode == UAPLEX_BadInternalError);
    CHECK(browseOne(s, "ReservedStatus").statusCode == UAPLEX_BadInternalError);
    for (const char* fault : {"NullTarget", "NullString", "InvalidNodeId"}) {
        INFO(fault);
        ua::BrowseResult r = browseOne(s, fault);
        CHECK(r.statusCode == UAPLEX_BadInternalError);
        CHECK(r.references.size() == 0);
    }
    // The target's ByteString was borrowed for the sink call only: the kernel kept a copy.
    ua::BrowseResult bytes = browseOne(s, "ByteStringTarget");
    CHECK(bytes.statusCode == UAPLEX_Good);
    REQUIRE(bytes.references.size() == 1);
    const ua::NodeId& target = bytes.references[0].nodeId.node_id;
    REQUIRE(target.identifier_type == UAPLEX_ID_BYTESTRING);
    REQUIRE(target.identifier.bytestring.length == 4);
    CHECK(target.identifier.bytestring.data[0] == 1);
    CHECK(target.identifier.bytestring.data[3] == 4);
    // Millions of references from one node: the kernel stops at max_array_length.
    ua::BrowseResult flood = browseOne(s, "Flood");
    CHECK(flood.statusCode == UAPLEX_BadInternalError);
    stillServed(s);
}

namespace {

ua::CallMethodResult callOne(Session& s, const char* name) {
    ua::Variant arg = ua::variantInt32(1);
    ua::CallMethodRequest m{};
    m.objectId = s.node(name);
    m.methodId = s.node("Method");
    m.inputArguments = {1, &arg};
    ua::CallRequest req{};
    req.methodsToCall = {1, &m};
    auto r = s.c.call(req);
    REQUIRE(Client::result(r) == UAPLEX_Good);
    const auto& results = static_cast<ua::CallResponse*>(r.object)->results;
    REQUIRE(results.size() == 1);
    return results[0];
}

}  // namespace

TEST_CASE("faulty node manager: bad Call outputs or statuses give BadInternalError") {
    Session s;
    ua::CallMethodResult good = callOne(s, "Good");
    CHECK(good.statusCode == UAPLEX_Good);
    REQUIRE(good.outputArguments.size() == 1);
    CHECK(good.outputArguments[0].value.int32 == 7);
    for (const char* fault : {"Throw", "ReservedStatus", "NullOutputs", "CountTooBig",
                              "InvalidOutput", "NullStringOutput", "ReservedInputResult"}) {
        INFO(fault);
        ua::CallMethodResult r = callOne(s, fault);
        CHECK(isBad(r.statusCode));
        CHECK(r.statusCode == UAPLEX_BadInternalError);
        CHECK(r.outputArguments.size() == 0);
    }
    stillServed(s);
}

namespace {

ua::CallMethodResult callStore(Client& c, std::uint16_t ns, const char* method) {
    ua::CallMethodRequest m{};
    m.objectId = ua::stringNodeId(ns, "Methods");
    m.methodId = ua::stringNodeId(ns, method);
    ua::CallRequest req{};
    req.methodsToCall = {1, &m};
    auto r = c.call(req);
    REQUIRE(Client::result(r) == UAPLEX_Good);
    const auto& results = static_cast<ua::CallResponse*>(r.object)->results;
    REQUIRE(results.size() == 1);
    return results[0];
}

}  // namespace

TEST_CASE("faulty node manager: an exception from a store callback never ends the server") {
    Session s;
    std::uint16_t ns = test::namespaceIndex(s.c, "urn:uaplex:test-faulty-store");
    REQUIRE(ns != 0);
    auto node = [&](const char* name) { return ua::stringNodeId(ns, name); };
    CHECK(test::readOne(s.c, node("Good")).value.value.int32 == 42);
    // Unguarded C++ callbacks: the kernel catches what crosses the C ABI (Itanium ABI).
    CHECK(test::readOne(s.c, node("RawThrow")).status == UAPLEX_BadInternalError);
    CHECK(test::writeInt32(s.c, node("RawThrow"), 1) == UAPLEX_BadInternalError);
    ua::CallMethodResult raw = callStore(s.c, ns, "RawThrow.Call");
    CHECK(raw.statusCode == UAPLEX_BadInternalError);
    CHECK(raw.outputArguments.size() == 0);
    // The SDK's guards: nothing reaches the kernel; a StatusError gives its status.
    CHECK(test::readOne(s.c, node("GuardedThrow")).status == UAPLEX_BadInternalError);
    CHECK(test::writeInt32(s.c, node("GuardedThrow"), 1) == UAPLEX_BadInternalError);
    CHECK(callStore(s.c, ns, "GuardedThrow.Call").statusCode == UAPLEX_BadInternalError);
    CHECK(test::readOne(s.c, node("MemberThrow")).status == UAPLEX_BadDeviceFailure);
    CHECK(test::writeInt32(s.c, node("MemberThrow"), 1) == UAPLEX_BadInternalError);
    CHECK(callStore(s.c, ns, "MemberThrow.Call").statusCode == UAPLEX_BadInternalError);
    CHECK(test::readOne(s.c, node("Good")).value.value.int32 == 42);
    stillServed(s);
}
