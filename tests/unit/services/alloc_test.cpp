// SPDX-License-Identifier: Apache-2.0
// A steady-state Read and Write of a benchmark scalar allocate nothing from the heap: the
// response lives in the call's arena and the stored value is overwritten in place. Recording
// the changes a node manager pushes ([history]) allocates nothing either.
#include <catch2/catch.hpp>

#include <filesystem>
#include <string>
#include <vector>

#include <unistd.h>

#include <uaplex/encoding/generated/types.hpp>

#include "sampling_plugin.hpp"
#include "support/counting_new.hpp"
#include "support/services_fixture.hpp"

using namespace uaplex;

TEST_CASE("steady-state scalar Read and Write do not touch the heap") {
    // The benchmark plugin only: the demo's timer thread would be counted too.
    test::Server s("", test::benchmarkPlugin());
    ua::ReadValueId item{};
    item.nodeId = ua::numericNodeId(1, 1042);
    item.attributeId = 13;
    item.indexRange = ua::nullString();
    item.dataEncoding.name = ua::nullString();
    ua::ReadRequest read{};
    read.timestampsToReturn = ua::TimestampsToReturn::Both;
    read.nodesToRead = {1, &item};

    ua::WriteValue wv{};
    wv.nodeId = item.nodeId;
    wv.attributeId = 13;
    wv.indexRange = ua::nullString();
    wv.value.mask = UAPLEX_DATAVALUE_VALUE;
    ua::WriteRequest write{};
    write.nodesToWrite = {1, &wv};

    enc::Arena arena;
    // No Catch assertions inside: only the services run while the heap is counted.
    auto cycle = [&](std::int32_t value) {
        arena.reset();
        wv.value.value = ua::variantInt32(value);
        services::ServiceCall w{arena, s.session.get(), enc::dataTypeOf<ua::WriteRequest>(),
                                &write};
        if (s.services->write(w) != UAPLEX_Good) return false;
        if (static_cast<ua::WriteResponse*>(w.response)->results[0] != UAPLEX_Good) return false;
        services::ServiceCall r{arena, s.session.get(), enc::dataTypeOf<ua::ReadRequest>(), &read};
        if (s.services->read(r) != UAPLEX_Good) return false;
        const ua::DataValue& dv = static_cast<ua::ReadResponse*>(r.response)->results[0];
        return dv.status == UAPLEX_Good && dv.value.value.int32 == value;
    };
    bool ok = true;
    for (int i = 0; i < 10; ++i) ok = cycle(i) && ok;  // warm-up: arena blocks, scratch buffer
    REQUIRE(ok);
    test::HeapScope heap;
    for (int i = 0; i < 1000; ++i) ok = cycle(i * 7) && ok;
    std::size_t allocations = heap.allocations(), bytes = heap.bytes();
    CHECK(ok);
    CHECK(allocations == 0);
    CHECK(bytes == 0);
}

TEST_CASE("a write that leaves a configured alarm's state as it is allocates nothing") {
    test::Server s("", test::benchmarkPlugin() +
                           "[[alarms]]\nname = \"A\"\ntype = \"non_exclusive_level\"\n"
                           "source = \"ns=1;i=1042\"\nhigh_high = 2000000\nhigh = 1000000\n"
                           "low = -1000000\ndeadband = 10\n");
    ua::WriteValue wv{};
    wv.nodeId = ua::numericNodeId(1, 1042);
    wv.attributeId = 13;
    wv.indexRange = ua::nullString();
    wv.value.mask = UAPLEX_DATAVALUE_VALUE;
    ua::WriteRequest write{};
    write.nodesToWrite = {1, &wv};
    enc::Arena arena;
    auto cycle = [&](std::int32_t value) {
        arena.reset();
        wv.value.value = ua::variantInt32(value);
        services::ServiceCall w{arena, s.session.get(), enc::dataTypeOf<ua::WriteRequest>(),
                                &write};
        return s.services->write(w) == UAPLEX_Good &&
               static_cast<ua::WriteResponse*>(w.response)->results[0] == UAPLEX_Good;
    };
    bool ok = true;
    for (int i = 0; i < 10; ++i) ok = cycle(i) && ok;
    ok = cycle(1500000) && ok;  // High active: a change, its event (allocates)
    REQUIRE(ok);
    test::HeapScope heap;
    // Within High and its deadband, then within the normal band: no state change.
    for (int i = 0; i < 500; ++i) ok = cycle(1000000 - (i % 10)) && ok;
    std::size_t allocations = heap.allocations();
    CHECK(ok);
    CHECK(allocations == 0);
}

TEST_CASE(
    "writes of a deviation alarm's source and setpoint that leave its state allocate "
    "nothing") {
    test::Server s("", test::benchmarkPlugin() +
                           "[[alarms]]\nname = \"D\"\ntype = \"non_exclusive_deviation\"\n"
                           "source = \"ns=1;i=1042\"\nsetpoint = \"ns=1;i=1043\"\n"
                           "high_high = 2000\nhigh = 1000\nlow = -1000\ndeadband = 10\n");
    ua::WriteValue wv[2]{};
    for (std::uint32_t i = 0; i < 2; ++i) {
        wv[i].nodeId = ua::numericNodeId(1, 1042 + i);
        wv[i].attributeId = 13;
        wv[i].indexRange = ua::nullString();
        wv[i].value.mask = UAPLEX_DATAVALUE_VALUE;
    }
    ua::WriteRequest write{};
    write.nodesToWrite = {2, wv};
    enc::Arena arena;
    auto cycle = [&](std::int32_t value, std::int32_t setpoint) {
        arena.reset();
        wv[0].value.value = ua::variantInt32(value);
        wv[1].value.value = ua::variantInt32(setpoint);
        services::ServiceCall w{arena, s.session.get(), enc::dataTypeOf<ua::WriteRequest>(),
                                &write};
        if (s.services->write(w) != UAPLEX_Good) return false;
        const auto* r = static_cast<ua::WriteResponse*>(w.response);
        return r->results[0] == UAPLEX_Good && r->results[1] == UAPLEX_Good;
    };
    bool ok = true;
    for (int i = 0; i < 10; ++i) ok = cycle(i, 0) && ok;
    ok = cycle(1500, 0) && ok;     // High active: a change, its event (allocates)
    ok = cycle(6000, 5000) && ok;  // HighHigh, then High again once the setpoint is written
    REQUIRE(ok);
    test::HeapScope heap;
    // Source and setpoint move together: the deviation stays within High and its deadband.
    for (int i = 0; i < 500; ++i) ok = cycle(5000 + 1000 - (i % 10), 5000) && ok;
    std::size_t allocations = heap.allocations();
    CHECK(ok);
    CHECK(allocations == 0);
}

namespace {
// A history database of the test's own.
struct HistoryDb {
    std::filesystem::path path = std::filesystem::temp_directory_path() /
                                 ("uaplex-history-pushed-" + std::to_string(::getpid()) + ".db");
    HistoryDb() { clean(); }
    ~HistoryDb() { clean(); }
    void clean() {
        std::error_code ec;
        for (const char* s : {"", "-wal", "-shm"}) std::filesystem::remove(path.string() + s, ec);
    }
};
}  // namespace

TEST_CASE("pushed changes of an owned namespace are recorded, without allocating") {
    HistoryDb db;
    // The store writes only when 64 values are queued (or on a read): in between its thread
    // sleeps, so what the heap counts is the pushing thread's.
    test::Server s("", std::string("[plugins.test-sampling]\nlibrary = \"") +
                           UAPLEX_SAMPLING_PLUGIN + "\"\n[plugins.history-sqlite]\nlibrary = \"" +
                           UAPLEX_HISTORY_SQLITE_PLUGIN + "\"\npath = \"" + db.path.string() +
                           "\"\nqueue_capacity = 64\nbatch_size = 64\nflush_interval_ms = 60000\n"
                           "[history]\nplugin = \"history-sqlite\"\n"
                           "nodes = [\"nsu=urn:uaplex:test-sampling;i=500\"]\n");
    const test::SamplingPlugin plugin = test::samplingPlugin();
    // The recorder switched the node manager's pushes on (no monitored item asked for them).
    REQUIRE(plugin.waitMonitor(1, 0, 5000));
    const std::uint16_t ns = s.namespaceIndex("urn:uaplex:test-sampling");
    const ua::DateTime now = ua::utcNow();
    ua::ReadRawModifiedDetails raw{};
    raw.startTime = now - ua::DateTime(3600) * 10000000;
    raw.endTime = now + ua::DateTime(3600) * 10000000;
    ua::HistoryReadValueId item{};
    item.nodeId = ua::numericNodeId(ns, 500);
    item.indexRange = ua::nullString();
    item.dataEncoding.name = ua::nullString();
    item.continuationPoint = {-1, nullptr};
    ua::HistoryReadRequest req{};
    req.historyReadDetails.data_type = enc::dataTypeOf<ua::ReadRawModifiedDetails>();
    req.historyReadDetails.object = &raw;
    req.timestampsToReturn = ua::TimestampsToReturn::Source;
    req.nodesToRead = {1, &item};
    // The values recorded so far (the read also makes the store write what is queued).
    auto recorded = [&] {
        std::vector<std::int32_t> out;
        s.arena.reset();
        services::ServiceCall c{s.arena, s.session.get(), enc::dataTypeOf<ua::HistoryReadRequest>(),
                                &req};
        REQUIRE(s.services->historyRead(c) == UAPLEX_Good);
        const auto& r = static_cast<ua::HistoryReadResponse*>(c.response)->results[0];
        REQUIRE((r.statusCode == UAPLEX_Good || r.statusCode == UAPLEX_GoodNoData));
        if (r.historyData.object == nullptr) return out;
        for (const auto& dv : static_cast<const ua::HistoryData*>(r.historyData.object)->dataValues)
            out.push_back(dv.value.value.int32);
        return out;
    };
    bool ok = true;
    std::int32_t next = 1;
    auto push = [&](int n) {
        for (int i = 0; i < n; ++i) ok = plugin.push(next++) == UAPLEX_Good && ok;
    };
    push(64);  // two rounds through the store's queue: its slots keep their capacity
    (void)recorded();
    push(64);
    (void)recorded();
    test::HeapScope heap;
    push(60);
    const std::size_t allocations = heap.allocations();
    CHECK(ok);
    CHECK(allocations == 0);
    const std::vector<std::int32_t> values = recorded();
    REQUIRE(values.size() == 188);  // every pushed change, in order
    for (std::int32_t i = 0; i < 188; ++i) CHECK(values[std::size_t(i)] == i + 1);
}

TEST_CASE("events raised on a recorded notifier are recorded, without allocating") {
    HistoryDb db;
    // As above: the store writes only when 64 events are queued, or on a read.
    test::Server s("", test::benchmarkPlugin() + "[plugins.history-sqlite]\nlibrary = \"" +
                           UAPLEX_HISTORY_SQLITE_PLUGIN + "\"\npath = \"" + db.path.string() +
                           "\"\nqueue_capacity = 64\nbatch_size = 64\nflush_interval_ms = 60000\n"
                           "retention_max_age_s = 0\n[history]\nplugin = \"history-sqlite\"\n"
                           "event_notifiers = [\"server\"]\n");
    s.services->setEventRaised(
        [](void*, std::span<const std::uint64_t>, const subscription::EventView&) {}, nullptr);
    const ua::NodeId server = ua::numericNodeId(0, 2253);
    const ua::NodeId type = ua::numericNodeId(0, 2041);
    static const ua::QualifiedName kTime{0, {4, const_cast<char*>("Time")}};
    static const ua::QualifiedName kSeverity{0, {8, const_cast<char*>("Severity")}};
    const ua::DateTime base = ua::utcNow();
    bool ok = true;
    std::uint16_t next = 1;
    auto raise = [&](int n) {
        for (int i = 0; i < n; ++i, ++next) {
            ua::Variant t = ua::makeVariant(ua::BuiltinType::DateTime);
            t.value.datetime = base + next;
            ua::Variant sv = ua::makeVariant(ua::BuiltinType::UInt16);
            sv.value.uint16 = next;
            uaplex_event_field f[2] = {{&kTime, 1, 0, &t}, {&kSeverity, 1, 0, &sv}};
            uaplex_event_spec spec{};
            spec.hdr = UAPLEX_HEADER_INIT(uaplex_event_spec, UAPLEX_STYPE_EVENT_SPEC);
            spec.event_type = &type;
            spec.source_node = &server;
            spec.field_count = 2;
            spec.fields = f;
            ok = s.services->raiseEvent(spec) == UAPLEX_Good && ok;
        }
    };
    // The Severities recorded so far (the read also makes the store write what is queued).
    ua::SimpleAttributeOperand select{};
    select.typeDefinitionId = type;
    select.browsePath = {1, const_cast<ua::QualifiedName*>(&kSeverity)};
    select.attributeId = 13;
    select.indexRange = ua::nullString();
    ua::ReadEventDetails details{};
    details.startTime = base - 10000000;
    details.endTime = base + 10000000;
    details.filter.selectClauses = {1, &select};
    ua::HistoryReadValueId item{};
    item.nodeId = server;
    item.indexRange = ua::nullString();
    item.dataEncoding.name = ua::nullString();
    item.continuationPoint = {-1, nullptr};
    ua::HistoryReadRequest req{};
    req.historyReadDetails.type_id =
        ua::numericNodeId(0, enc::dataTypeOf<ua::ReadEventDetails>()->binaryEncodingId);
    req.historyReadDetails.encoding = UAPLEX_EXTENSIONOBJECT_BINARY;
    req.historyReadDetails.data_type = enc::dataTypeOf<ua::ReadEventDetails>();
    req.historyReadDetails.object = &details;
    req.timestampsToReturn = ua::TimestampsToReturn::Source;
    req.nodesToRead = {1, &item};
    auto recorded = [&] {
        std::vector<std::uint16_t> out;
        s.arena.reset();
        services::ServiceCall c{s.arena, s.session.get(), enc::dataTypeOf<ua::HistoryReadRequest>(),
                                &req};
        REQUIRE(s.services->historyRead(c) == UAPLEX_Good);
        const auto& r = static_cast<ua::HistoryReadResponse*>(c.response)->results[0];
        REQUIRE((r.statusCode == UAPLEX_Good || r.statusCode == UAPLEX_GoodNoData));
        if (r.historyData.object == nullptr) return out;
        for (const auto& l : static_cast<const ua::HistoryEvent*>(r.historyData.object)->events)
            out.push_back(l.eventFields.size() == 1 ? l.eventFields[0].value.uint16 : 0);
        return out;
    };
    raise(64);  // two rounds through the store's queue: its slots keep their capacity
    (void)recorded();
    raise(64);
    (void)recorded();
    test::HeapScope heap;
    raise(60);
    const std::size_t allocations = heap.allocations();
    CHECK(ok);
    CHECK(allocations == 0);
    const std::vector<std::uint16_t> severities = recorded();
    REQUIRE(severities.size() == 188);  // every raised event, in order
    for (std::uint16_t i = 0; i < 188; ++i) CHECK(severities[i] == i + 1);
}
