// SPDX-License-Identifier: Apache-2.0
// Event history (kernel/services/src/history_events.cpp) against the history-sqlite store:
// events raised on the Server object are recorded, read back with ReadEventDetails through an
// EventFilter (select and where clauses, both directions, numValuesPerNode and continuation
// points), inserted, replaced and deleted with UpdateEventDetails and DeleteEventDetails;
// the EventNotifier bits, the capabilities, the limits and the refusals.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include <uaplex/encoding/generated/ns0.hpp>

#include "support/services_fixture.hpp"

using namespace uaplex;
namespace fs = std::filesystem;

namespace {

namespace n0 = ua::ns0;
constexpr std::int64_t kSecond = 10000000;
constexpr std::int64_t kBase = 133000000000000000;  // a DateTime in 2022

void noListener(void*, std::span<const std::uint64_t>, const subscription::EventView&) {}

struct EventServer {
    fs::path db;
    test::Server s;
    const ua::NodeId server = ua::numericNodeId(0, 2253);

    explicit EventServer(const std::string& extra = "event_notifiers = [\"server\"]\n")
        : db(fs::temp_directory_path() /
             ("uaplex-history-events-" + std::to_string(::getpid()) + ".db")),
          s("", config(db, extra)) {
        s.services->setEventRaised(&noListener, this);
    }
    ~EventServer() {
        std::error_code ec;
        for (const char* ext : {"", "-wal", "-shm"}) fs::remove(db.string() + ext, ec);
    }
    static std::string config(const fs::path& db, const std::string& extra) {
        for (const char* ext : {"", "-wal", "-shm"}) fs::remove(db.string() + ext);
        return test::nodeManagerPlugins() + "[plugins.history-sqlite]\nlibrary = \"" +
               UAPLEX_HISTORY_SQLITE_PLUGIN + "\"\npath = \"" + db.string() +
               "\"\nretention_max_age_s = 0\n[history]\nplugin = \"history-sqlite\"\n"
               "nodes = [\"nsu=urn:uaplex:demo;s=Demo.Scalars.Double\"]\n" +
               extra;
    }

    // Raises a BaseEventType event from the Server object with its Time, Message, Severity.
    void raise(std::int64_t time, const std::string& message, std::uint16_t severity) {
        static const ua::QualifiedName kTime{0, {4, "Time"}};
        static const ua::QualifiedName kMessage{0, {7, "Message"}};
        static const ua::QualifiedName kSeverity{0, {8, "Severity"}};
        ua::Variant t = ua::makeVariant(ua::BuiltinType::DateTime);
        t.value.datetime = time;
        ua::Variant m = ua::makeVariant(ua::BuiltinType::LocalizedText);
        ua::LocalizedText text = ua::makeLocalizedText({}, message);
        m.value.pointer = &text;
        ua::Variant sv = ua::makeVariant(ua::BuiltinType::UInt16);
        sv.value.uint16 = severity;
        uaplex_event_field f[3] = {
            {&kTime, 1, 0, &t}, {&kMessage, 1, 0, &m}, {&kSeverity, 1, 0, &sv}};
        const ua::NodeId type = ua::numericNodeId(0, 2041);
        uaplex_event_spec spec{};
        spec.hdr = UAPLEX_HEADER_INIT(uaplex_event_spec, UAPLEX_STYPE_EVENT_SPEC);
        spec.event_type = &type;
        spec.source_node = &server;
        spec.field_count = 3;
        spec.fields = f;
        REQUIRE(s.services->raiseEvent(spec) == UAPLEX_Good);
    }

    template <class T>
    ua::ExtensionObject wrap(const T& details) {
        auto* obj = s.arena.allocateArray<T>(1);
        *obj = details;
        ua::ExtensionObject eo{};
        const enc::DataType* t = enc::dataTypeOf<T>();
        eo.type_id = ua::numericNodeId(0, t->binaryEncodingId);
        eo.encoding = UAPLEX_EXTENSIONOBJECT_BINARY;
        eo.data_type = t;
        eo.object = obj;
        return eo;
    }

    // Select clauses of BaseEventType fields by name ("" : an unknown one).
    ua::EventFilter filter(const std::vector<std::string>& names) {
        auto* sel = s.arena.allocateArray<ua::SimpleAttributeOperand>(names.size());
        for (std::size_t i = 0; i < names.size(); ++i) {
            sel[i] = ua::SimpleAttributeOperand{};
            sel[i].typeDefinitionId = ua::numericNodeId(0, 2041);
            auto* q = s.arena.allocateArray<ua::QualifiedName>(1);
            const std::string& n = names[i];
            char* mem = static_cast<char*>(s.arena.allocate(n.size() + 1, 1));
            std::memcpy(mem, n.data(), n.size());
            *q = ua::QualifiedName{0, {std::int32_t(n.size()), mem}};
            sel[i].browsePath = {1, q};
            sel[i].attributeId = 13;
            sel[i].indexRange = ua::nullString();
        }
        ua::EventFilter f{};
        f.selectClauses = {std::int32_t(names.size()), sel};
        return f;
    }
    // A where clause: Severity > `min`.
    void severityAbove(ua::EventFilter& f, std::uint16_t min) {
        auto* ops = s.arena.allocateArray<ua::ExtensionObject>(2);
        ua::SimpleAttributeOperand sev = filter({"Severity"}).selectClauses[0];
        ops[0] = wrap(sev);
        ua::LiteralOperand lit{};
        lit.value = ua::makeVariant(ua::BuiltinType::UInt16);
        lit.value.value.uint16 = min;
        ops[1] = wrap(lit);
        auto* el = s.arena.allocateArray<ua::ContentFilterElement>(1);
        *el = ua::ContentFilterElement{};
        el->filterOperator = ua::FilterOperator::GreaterThan;
        el->filterOperands = {2, ops};
        f.whereClause.elements = {1, el};
    }

    ua::HistoryReadResult read(const ua::NodeId& node, const ua::EventFilter& f, std::int64_t start,
                               std::int64_t end, std::uint32_t num = 0,
                               const ua::ByteString& cp = {-1, nullptr}, bool release = false) {
        ua::ReadEventDetails d{};
        d.numValuesPerNode = num;
        d.startTime = start;
        d.endTime = end;
        d.filter = f;
        auto* item = s.arena.allocateArray<ua::HistoryReadValueId>(1);
        *item = ua::HistoryReadValueId{};
        item->nodeId = node;
        item->indexRange = ua::nullString();
        item->dataEncoding.name = ua::nullString();
        item->continuationPoint = cp;
        ua::HistoryReadRequest req{};
        req.historyReadDetails = wrap(d);
        req.timestampsToReturn = ua::TimestampsToReturn::Source;
        req.releaseContinuationPoints = release;
        req.nodesToRead = {1, item};
        ua::HistoryReadResponse* resp = nullptr;
        REQUIRE(s.call(req, resp) == UAPLEX_Good);
        REQUIRE(resp->results.size() == 1);
        return resp->results[0];
    }
    // The events of a result: each one's fields.
    static std::vector<std::vector<ua::Variant>> events(const ua::HistoryReadResult& r) {
        std::vector<std::vector<ua::Variant>> out;
        if (r.historyData.object == nullptr) return out;
        REQUIRE(r.historyData.data_type == enc::dataTypeOf<ua::HistoryEvent>());
        const auto& he = *static_cast<const ua::HistoryEvent*>(r.historyData.object);
        for (const auto& l : he.events)
            out.emplace_back(l.eventFields.begin(), l.eventFields.end());
        return out;
    }
    static std::string message(const ua::Variant& v) {
        REQUIRE(ua::variantType(v) == ua::BuiltinType::LocalizedText);
        return std::string(ua::view(static_cast<const ua::LocalizedText*>(v.value.pointer)->text));
    }
    std::vector<std::string> messages(std::int64_t start = kBase,
                                      std::int64_t end = kBase + 100 * kSecond) {
        auto r = read(server, filter({"Message"}), start, end);
        REQUIRE(((r.statusCode) & 0x80000000u) == 0);
        std::vector<std::string> out;
        for (const auto& e : events(r)) out.push_back(message(e[0]));
        return out;
    }

    uaplex_status update(std::vector<ua::ExtensionObject> details,
                         std::vector<ua::HistoryUpdateResult>& out) {
        auto* d = s.arena.allocateArray<ua::ExtensionObject>(details.size());
        std::copy(details.begin(), details.end(), d);
        ua::HistoryUpdateRequest req{};
        req.historyUpdateDetails = {std::int32_t(details.size()), d};
        ua::HistoryUpdateResponse* resp = nullptr;
        out.clear();
        uaplex_status st = s.call(req, resp);
        if (st == UAPLEX_Good) out.assign(resp->results.begin(), resp->results.end());
        return st;
    }
    ua::HistoryUpdateResult updateOne(const ua::ExtensionObject& details) {
        std::vector<ua::HistoryUpdateResult> r;
        REQUIRE(update({details}, r) == UAPLEX_Good);
        REQUIRE(r.size() == 1);
        return r[0];
    }
    // UpdateEventDetails of events with EventType, Time, Message and (non-empty) EventId.
    struct Ev {
        std::int64_t time;
        std::string message;
        ua::ByteString id{-1, nullptr};
    };
    ua::ExtensionObject updateDetails(ua::PerformUpdateType perform, const std::vector<Ev>& evs,
                                      bool withTime = true) {
        ua::UpdateEventDetails d{};
        d.nodeId = server;
        d.performInsertReplace = perform;
        d.filter = filter({"EventType", "Time", "Message", "EventId"});
        auto* lists = s.arena.allocateArray<ua::HistoryEventFieldList>(evs.size());
        for (std::size_t i = 0; i < evs.size(); ++i) {
            auto* f = s.arena.allocateArray<ua::Variant>(4);
            f[0] = ua::makeVariant(ua::BuiltinType::NodeId);
            f[0].value.pointer = s.arena.allocateArray<ua::NodeId>(1);
            *static_cast<ua::NodeId*>(f[0].value.pointer) = ua::numericNodeId(0, 2041);
            f[1] = ua::Variant{};
            if (withTime) {
                f[1] = ua::makeVariant(ua::BuiltinType::DateTime);
                f[1].value.datetime = evs[i].time;
            }
            f[2] = ua::makeVariant(ua::BuiltinType::LocalizedText);
            auto* t = s.arena.allocateArray<ua::LocalizedText>(1);
            char* mem = static_cast<char*>(s.arena.allocate(evs[i].message.size() + 1, 1));
            std::memcpy(mem, evs[i].message.data(), evs[i].message.size());
            *t = ua::makeLocalizedText({}, std::string_view(mem, evs[i].message.size()));
            f[2].value.pointer = t;
            f[3] = ua::Variant{};
            if (evs[i].id.length > 0) {
                f[3] = ua::makeVariant(ua::BuiltinType::ByteString);
                f[3].value.bytestring = evs[i].id;
            }
            lists[i].eventFields = {4, f};
        }
        d.eventData = {std::int32_t(evs.size()), lists};
        return wrap(d);
    }
    ua::ExtensionObject deleteDetails(const std::vector<ua::ByteString>& ids) {
        ua::DeleteEventDetails d{};
        d.nodeId = server;
        auto* a = s.arena.allocateArray<ua::ByteString>(ids.size());
        std::copy(ids.begin(), ids.end(), a);
        d.eventIds = {std::int32_t(ids.size()), a};
        return wrap(d);
    }
    // The EventIds of the stored events, in time order.
    std::vector<ua::ByteString> eventIds() {
        auto r = read(server, filter({"EventId"}), kBase, kBase + 100 * kSecond);
        std::vector<ua::ByteString> out;
        for (const auto& e : events(r)) {
            REQUIRE(ua::variantType(e[0]) == ua::BuiltinType::ByteString);
            out.push_back(e[0].value.bytestring);
        }
        return out;
    }
};

std::vector<uaplex_status> results(const ua::HistoryUpdateResult& r) {
    return {r.operationResults.begin(), r.operationResults.end()};
}

}  // namespace

TEST_CASE("event history: raised events are read back through the filter's clauses") {
    EventServer h;
    h.raise(kBase + 1 * kSecond, "one", 100);
    h.raise(kBase + 2 * kSecond, "two", 700);
    h.raise(kBase + 3 * kSecond, "three", 900);
    // Select: Message, Severity, Time and a field no event has (null, Part 4 7.22.3).
    auto r = h.read(h.server, h.filter({"Message", "Severity", "Time", "NoSuchField"}), kBase,
                    kBase + 100 * kSecond);
    REQUIRE(r.statusCode == UAPLEX_Good);
    CHECK(r.continuationPoint.length <= 0);
    auto ev = EventServer::events(r);
    REQUIRE(ev.size() == 3);
    CHECK(EventServer::message(ev[0][0]) == "one");
    CHECK(ev[1][1].value.uint16 == 700);
    CHECK(ev[2][2].value.datetime == kBase + 3 * kSecond);
    CHECK(ua::variantType(ev[0][3]) == ua::BuiltinType::Null);

    // The where clause: Severity > 500.
    auto f = h.filter({"Message"});
    h.severityAbove(f, 500);
    auto w = EventServer::events(h.read(h.server, f, kBase, kBase + 100 * kSecond));
    REQUIRE(w.size() == 2);
    CHECK(EventServer::message(w[0][0]) == "two");

    // Backward (endTime before startTime), and numValuesPerNode with one time: no point.
    CHECK(h.messages(kBase + 100 * kSecond, kBase) ==
          std::vector<std::string>{"three", "two", "one"});
    auto newest = h.read(h.server, h.filter({"Message"}), 0, kBase + 100 * kSecond, 1);
    REQUIRE(EventServer::events(newest).size() == 1);
    CHECK(EventServer::message(EventServer::events(newest)[0][0]) == "three");
    CHECK(newest.continuationPoint.length <= 0);

    // numValuesPerNode with both times: pages behind continuation points.
    std::vector<std::string> paged;
    ua::ByteString cp{-1, nullptr};
    for (int pages = 0;; ++pages) {
        REQUIRE(pages < 5);
        auto p = h.read(h.server, h.filter({"Message"}), kBase, kBase + 100 * kSecond, 2, cp);
        REQUIRE(((p.statusCode) & 0x80000000u) == 0);
        for (const auto& e : EventServer::events(p)) paged.push_back(EventServer::message(e[0]));
        if (p.continuationPoint.length <= 0) break;
        cp = p.continuationPoint;
    }
    CHECK(paged == std::vector<std::string>{"one", "two", "three"});
    // A point is used once; a released one is gone.
    auto first = h.read(h.server, h.filter({"Message"}), kBase, kBase + 100 * kSecond, 1);
    REQUIRE(first.continuationPoint.length > 0);
    h.read(h.server, h.filter({"Message"}), kBase, kBase + 100 * kSecond, 1,
           first.continuationPoint, true);
    CHECK(h.read(h.server, h.filter({"Message"}), kBase, kBase + 100 * kSecond, 1,
                 first.continuationPoint)
              .statusCode == UAPLEX_BadContinuationPointInvalid);
    // No events in the range.
    CHECK(h.read(h.server, h.filter({"Message"}), kBase - 10 * kSecond, kBase).statusCode ==
          UAPLEX_GoodNoData);
}

TEST_CASE("event history: EventNotifier bits, capabilities and refusals") {
    EventServer h(
        "event_notifiers = [\"server\"]\nmax_events_per_node = 42\n"
        "max_events_per_update = 2\n");
    // SubscribeToEvents, HistoryRead, HistoryWrite.
    CHECK(h.s.read(h.server, 12).value.value.byte == (1 | 4 | 8));
    auto boolean = [&](std::uint32_t id) {
        ua::DataValue dv = h.s.read(ua::numericNodeId(0, id));
        REQUIRE(ua::variantType(dv.value) == ua::BuiltinType::Boolean);
        return bool(dv.value.value.boolean);
    };
    CHECK(boolean(n0::HistoryServerCapabilities_AccessHistoryEventsCapability));
    CHECK(boolean(n0::HistoryServerCapabilities_InsertEventCapability));
    CHECK(boolean(n0::HistoryServerCapabilities_ReplaceEventCapability));
    CHECK(boolean(n0::HistoryServerCapabilities_UpdateEventCapability));
    CHECK(boolean(n0::HistoryServerCapabilities_DeleteEventCapability));
    CHECK(h.s.read(ua::numericNodeId(0, n0::HistoryServerCapabilities_MaxReturnEventValues))
              .value.value.uint32 == 42);

    const auto all = [&] { return h.filter({"Message"}); };
    const std::int64_t end = kBase + 100 * kSecond;
    const std::uint16_t demo = h.s.namespaceIndex("urn:uaplex:demo");
    // A Variable has no event history; an Object that is not recorded has none either.
    CHECK(h.read(ua::stringNodeId(demo, "Demo.Scalars.Double"), all(), kBase, end).statusCode ==
          UAPLEX_BadNotReadable);
    CHECK(h.read(ua::numericNodeId(0, 85), all(), kBase, end).statusCode ==
          UAPLEX_BadHistoryOperationUnsupported);
    CHECK(h.read(ua::numericNodeId(0, 999999), all(), kBase, end).statusCode ==
          UAPLEX_BadNodeIdUnknown);
    CHECK(h.read(h.server, h.filter({}), kBase, end).statusCode == UAPLEX_BadEventFilterInvalid);
    CHECK(h.read(h.server, all(), kBase, 0).statusCode == UAPLEX_BadInvalidTimestampArgument);
    // More eventData than max_events_per_update.
    CHECK(h.updateOne(h.updateDetails(ua::PerformUpdateType::Insert,
                                      {{kBase, "a"}, {kBase, "b"}, {kBase, "c"}}))
              .statusCode == UAPLEX_BadTooManyOperations);
    CHECK(h.updateOne(h.updateDetails(ua::PerformUpdateType::Remove, {{kBase, "a"}})).statusCode ==
          UAPLEX_BadHistoryOperationInvalid);
    // Events of an Object that is not recorded.
    ua::DeleteEventDetails d{};
    d.nodeId = ua::numericNodeId(0, 85);
    CHECK(h.updateOne(h.wrap(d)).statusCode == UAPLEX_BadHistoryOperationUnsupported);
}

TEST_CASE("event history: a recorded namespace-0 Object other than the Server gets its bits") {
    // The Objects folder alone is recorded: its bits must not show on the Server object.
    EventServer h("event_notifiers = [\"nsu=http://opcfoundation.org/UA/;i=85\"]\n");
    CHECK(h.s.read(ua::numericNodeId(0, 85), 12).value.value.byte == (4 | 8));
    CHECK(h.s.read(h.server, 12).value.value.byte == 1);  // SubscribeToEvents only
    CHECK(h.read(h.server, h.filter({"Message"}), kBase, kBase + 100 * kSecond).statusCode ==
          UAPLEX_BadHistoryOperationUnsupported);
}

TEST_CASE("event history: without event_notifiers nothing is offered") {
    EventServer h("");
    CHECK(h.s.read(h.server, 12).value.value.byte == 1);  // SubscribeToEvents only
    h.raise(kBase + kSecond, "one", 100);
    CHECK(h.read(h.server, h.filter({"Message"}), kBase, kBase + 100 * kSecond).statusCode ==
          UAPLEX_BadHistoryOperationUnsupported);
    ua::DataValue dv =
        h.s.read(ua::numericNodeId(0, n0::HistoryServerCapabilities_AccessHistoryEventsCapability));
    CHECK_FALSE(dv.value.value.boolean);
    CHECK(h.s.read(ua::numericNodeId(0, n0::HistoryServerCapabilities_MaxReturnEventValues))
              .value.value.uint32 == 0);
}

TEST_CASE("event history: insert, replace and update by EventId; delete by EventIds") {
    using S = std::vector<uaplex_status>;
    EventServer h;
    h.raise(kBase + 1 * kSecond, "raised", 100);
    // An insert names no EventId: the server gives one. Time is required.
    auto ins = h.updateOne(
        h.updateDetails(ua::PerformUpdateType::Insert, {{kBase + 2 * kSecond, "inserted"}}));
    REQUIRE(ins.statusCode == UAPLEX_Good);
    CHECK(results(ins) == S{UAPLEX_GoodEntryInserted});
    CHECK(results(h.updateOne(h.updateDetails(ua::PerformUpdateType::Insert, {{kBase, "no time"}},
                                              false))) == S{UAPLEX_BadArgumentsMissing});
    CHECK(h.messages() == std::vector<std::string>{"raised", "inserted"});
    auto ids = h.eventIds();
    REQUIRE(ids.size() == 2);

    // Replace by EventId (the time moves with it); an unknown EventId has no entry; an
    // insert of an existing one is refused; update does either.
    const std::uint8_t unknownBytes[16] = {9, 9, 9};
    const ua::ByteString unknown{16, const_cast<std::uint8_t*>(unknownBytes)};
    CHECK(results(h.updateOne(h.updateDetails(
              ua::PerformUpdateType::Replace,
              {{kBase + 5 * kSecond, "replaced", ids[0]}, {kBase, "x", unknown}}))) ==
          S{UAPLEX_GoodEntryReplaced, UAPLEX_BadNoEntryExists});
    CHECK(results(h.updateOne(
              h.updateDetails(ua::PerformUpdateType::Insert, {{kBase, "again", ids[1]}}))) ==
          S{UAPLEX_BadEntryExists});
    CHECK(results(h.updateOne(h.updateDetails(ua::PerformUpdateType::Update,
                                              {{kBase + 3 * kSecond, "updated", ids[1]},
                                               {kBase + 4 * kSecond, "new", unknown}}))) ==
          S{UAPLEX_GoodEntryReplaced, UAPLEX_GoodEntryInserted});
    CHECK(h.messages() == std::vector<std::string>{"updated", "new", "replaced"});

    // Delete by EventIds: per id Good or BadEventIdUnknown.
    const std::uint8_t noneBytes[4] = {1, 2, 3, 4};
    auto del = h.updateOne(
        h.deleteDetails({ids[0], ua::ByteString{4, const_cast<std::uint8_t*>(noneBytes)}}));
    REQUIRE(del.statusCode == UAPLEX_Good);
    CHECK(results(del) == S{UAPLEX_Good, UAPLEX_BadEventIdUnknown});
    CHECK(h.messages() == std::vector<std::string>{"updated", "new"});
}
