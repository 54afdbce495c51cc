// SPDX-License-Identifier: Apache-2.0
// Alarms of a plugin (host API condition_create / condition_set, ABI 1.13) end to end, in one
// process: the test-alarm node manager creates its ExclusiveLevelAlarmType condition while it
// starts and raises it once the server runs; a client subscribed to the Server object's events
// sees it, acknowledges it with the event's EventId over opc.tcp; the plugin's callback sees
// the comment and the user, and refuses the first attempt with a status the client gets; the
// acknowledgement's event still carries the plugin's LimitState. A condition_create once the
// server runs is BadInvalidState.
#include <catch2/catch.hpp>

#include <dlfcn.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "in_process_server.hpp"
#include "support/client_services.hpp"
#include "support/opcua_client.hpp"

using namespace uaplex;
using test::Client;

namespace {

std::uint32_t handle = 10;

struct AlarmPlugin {
    uaplex_status (*raise)(std::uint32_t, std::uint16_t);
    int (*last)(std::uint32_t*, char*, std::size_t, char*, std::size_t);
    void (*answer)(uaplex_status);
    uaplex_status (*createLate)();
};

AlarmPlugin alarmPlugin() {
    void* lib = dlopen(UAPLEX_ALARM_PLUGIN, RTLD_NOW | RTLD_NOLOAD);  // the server loaded it
    REQUIRE(lib != nullptr);
    AlarmPlugin p{};
    p.raise = reinterpret_cast<uaplex_status (*)(std::uint32_t, std::uint16_t)>(
        dlsym(lib, "test_alarm_raise"));
    p.last = reinterpret_cast<int (*)(std::uint32_t*, char*, std::size_t, char*, std::size_t)>(
        dlsym(lib, "test_alarm_last"));
    p.answer = reinterpret_cast<void (*)(uaplex_status)>(dlsym(lib, "test_alarm_answer"));
    p.createLate = reinterpret_cast<uaplex_status (*)()>(dlsym(lib, "test_alarm_create_late"));
    REQUIRE((p.raise && p.last && p.answer && p.createLate));
    return p;
}

// The selected fields of one event.
struct Seen {
    std::vector<std::uint8_t> eventId;
    std::string condition;  // ConditionId's string identifier
    bool acked = true;
    std::uint32_t limitState = 0;
    std::string comment, user;
};

constexpr int kFields = 6;

void subscribe(Client& c) {
    std::uint32_t sub = test::createSubscription(c, {50, 600, 5}, ++handle);
    ua::QualifiedName eventId{0, ua::makeString("EventId")};
    ua::QualifiedName acked[2] = {{0, ua::makeString("AckedState")}, {0, ua::makeString("Id")}};
    ua::QualifiedName limit[3] = {{0, ua::makeString("LimitState")},
                                  {0, ua::makeString("CurrentState")},
                                  {0, ua::makeString("Id")}};
    ua::QualifiedName comment{0, ua::makeString("Comment")};
    ua::QualifiedName user{0, ua::makeString("ClientUserId")};
    ua::SimpleAttributeOperand select[kFields]{};
    auto field = [&](int i, std::uint32_t type, ua::QualifiedName* path, std::int32_t length,
                     std::uint32_t attribute) {
        select[i].typeDefinitionId = ua::numericNodeId(0, type);
        select[i].browsePath = {length, path};
        select[i].attributeId = attribute;
        select[i].indexRange = ua::nullString();
    };
    field(0, 2041, &eventId, 1, 13);
    field(1, 2782, nullptr, 0, 1);  // the ConditionId: NodeId of the ConditionType itself
    field(2, 2881, acked, 2, 13);
    field(3, 9341, limit, 3, 13);  // ExclusiveLimitAlarmType
    field(4, 2782, &comment, 1, 13);
    field(5, 2782, &user, 1, 13);
    test::monitorServerEvents(c, sub, select, ++handle);
}

// Publishes until an event of `condition` arrives (at most 3 s); REQUIREs one.
Seen nextEvent(Client& c, std::string_view condition) {
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(3);
    while (std::chrono::steady_clock::now() < until) {
        ua::PublishRequest p{};
        p.subscriptionAcknowledgements = {0, nullptr};
        auto m = c.call(p, ++handle);
        REQUIRE(Client::result(m) == UAPLEX_Good);
        for (const auto& eo :
             static_cast<ua::PublishResponse*>(m.object)->notificationMessage.notificationData) {
            if (eo.data_type != enc::dataTypeOf<ua::EventNotificationList>()) continue;
            for (const auto& e : static_cast<const ua::EventNotificationList*>(eo.object)->events) {
                REQUIRE(e.eventFields.size() == kFields);
                Seen s;
                const ua::Variant& cond = e.eventFields[1];
                if (ua::variantType(cond) != ua::BuiltinType::NodeId) continue;
                const auto* id = static_cast<const ua::NodeId*>(cond.value.pointer);
                if (id->identifier_type != UAPLEX_ID_STRING) continue;
                s.condition = std::string(ua::view(id->identifier.string));
                if (s.condition != condition) continue;
                auto b = ua::view(e.eventFields[0].value.bytestring);
                s.eventId.assign(b.begin(), b.end());
                s.acked = e.eventFields[2].value.boolean;
                if (ua::variantType(e.eventFields[3]) == ua::BuiltinType::NodeId)
                    s.limitState = static_cast<const ua::NodeId*>(e.eventFields[3].value.pointer)
                                       ->identifier.numeric;
                if (ua::variantType(e.eventFields[4]) == ua::BuiltinType::LocalizedText)
                    s.comment = std::string(ua::view(
                        static_cast<const ua::LocalizedText*>(e.eventFields[4].value.pointer)
                            ->text));
                if (ua::variantType(e.eventFields[5]) == ua::BuiltinType::String)
                    s.user = std::string(ua::view(e.eventFields[5].value.string));
                return s;
            }
        }
    }
    FAIL("no event of " << condition);
    return {};
}

uaplex_status acknowledge(Client& c, const ua::NodeId& condition, std::vector<std::uint8_t> eventId,
                          std::string_view comment) {
    ua::Variant in[2];
    in[0] = ua::makeVariant(ua::BuiltinType::ByteString);
    in[0].value.bytestring = ua::ByteString{std::int32_t(eventId.size()), eventId.data()};
    ua::LocalizedText text = ua::makeLocalizedText("en", comment);
    in[1] = ua::makeVariant(ua::BuiltinType::LocalizedText);
    in[1].value.pointer = &text;
    ua::CallMethodRequest m{};
    m.objectId = condition;
    m.methodId = ua::numericNodeId(0, 9111);
    m.inputArguments = {2, in};
    ua::CallRequest r{};
    r.methodsToCall = {1, &m};
    auto msg = c.call(r, ++handle);
    REQUIRE(Client::result(msg) == UAPLEX_Good);
    const auto& resp = *static_cast<const ua::CallResponse*>(msg.object);
    REQUIRE(resp.results.size() == 1);
    return resp.results[0].statusCode;
}

}  // namespace

TEST_CASE("a plugin's alarm: raised, acknowledged by a client, the plugin's callback decides") {
    test::InProcessServer process(
        "[slots]\nrequest_queue = \"fifo\"\nmonitored_item_queue = \"mi-default\"\n"
        "[plugins.fifo]\n[plugins.transport-tcp]\n"
        "[plugins.mi-default]\n[plugins.test-alarm]\nlibrary = \"" UAPLEX_ALARM_PLUGIN
        "\"\n"
        "[access]\nanonymous_permissions = [\"All\"]\n",  // anonymous may Call
        "alarm.toml");
    AlarmPlugin plugin = alarmPlugin();
    Client c;
    REQUIRE(c.open(process.port));
    REQUIRE(c.createSession() == UAPLEX_Good);
    const std::uint16_t ns = test::namespaceIndex(c, "urn:uaplex:test-alarm", ++handle);
    REQUIRE(ns != 0xFFFF);
    const ua::NodeId overheat = ua::stringNodeId(ns, "Pump.Overheat");
    // The kernel made its state variables.
    CHECK(test::readOne(c, ua::stringNodeId(ns, "Pump.Overheat.AckedState.Id"), 13, ++handle)
              .value.value.boolean);
    subscribe(c);

    REQUIRE(plugin.raise(9331 /* High */, 700) == UAPLEX_Good);
    Seen raised = nextEvent(c, "Pump.Overheat");
    CHECK_FALSE(raised.acked);
    CHECK(raised.limitState == 9331);
    REQUIRE(raised.eventId.size() == 16);

    // The plugin refuses: the client gets its status, nothing changes.
    plugin.answer(UAPLEX_BadUserAccessDenied);
    CHECK(acknowledge(c, overheat, raised.eventId, "not yet") == UAPLEX_BadUserAccessDenied);
    std::uint32_t method = 0;
    char comment[64] = {}, user[64] = {};
    CHECK(plugin.last(&method, comment, sizeof comment, user, sizeof user) == 1);
    CHECK(method == 9111);
    CHECK(std::string(comment) == "not yet");
    CHECK(std::string(user) == "anonymous");
    CHECK_FALSE(test::readOne(c, ua::stringNodeId(ns, "Pump.Overheat.AckedState.Id"), 13, ++handle)
                    .value.value.boolean);

    // Allowed: acknowledged, with the comment and the user in the event.
    plugin.answer(UAPLEX_Good);
    REQUIRE(acknowledge(c, overheat, raised.eventId, "seen by the operator") == UAPLEX_Good);
    CHECK(plugin.last(&method, comment, sizeof comment, user, sizeof user) == 2);
    CHECK(std::string(comment) == "seen by the operator");
    Seen ack = nextEvent(c, "Pump.Overheat");
    CHECK(ack.acked);
    CHECK(ack.comment == "seen by the operator");
    CHECK(ack.user == "anonymous");
    CHECK(ack.limitState == 9331);  // the plugin's LimitState, kept for the method's event
    // A second Acknowledge is the kernel's refusal: the plugin does not hear of it.
    CHECK(acknowledge(c, overheat, ack.eventId, "again") == UAPLEX_BadConditionBranchAlreadyAcked);
    CHECK(plugin.last(&method, comment, sizeof comment, user, sizeof user) == 2);

    // Cleared: inactive, LimitState none.
    REQUIRE(plugin.raise(0, 700) == UAPLEX_Good);
    Seen cleared = nextEvent(c, "Pump.Overheat");
    CHECK(cleared.limitState == 0);

    // The sealed store takes no new condition.
    CHECK(plugin.createLate() == UAPLEX_BadInvalidState);
}
