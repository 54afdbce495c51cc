// SPDX-License-Identifier: Apache-2.0
// HistoryUpdate (kernel/services/src/history_update.cpp) against the history-sqlite store:
// UpdateDataDetails insert/replace/update with their per-value results, DeleteRawModified and
// DeleteAtTime, each read back with HistoryRead; the refusals (Remove, modified values, events,
// a node not recorded, no permission, the [history] limits); the history information model.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include <uaplex/aggregates/aggregates.hpp>

#include "support/services_fixture.hpp"

using namespace uaplex;
namespace fs = std::filesystem;

namespace {

constexpr std::int64_t kSecond = 10000000;
constexpr std::int64_t kBase = 133000000000000000;  // a DateTime in 2022

struct HistoryServer {
    fs::path db;
    test::Server s;
    std::uint16_t demo = 0;
    ua::NodeId recorded{}, unrecorded{};

    explicit HistoryServer(const std::string& extra = "")
        : db(fs::temp_directory_path() /
             ("uaplex-history-update-" + std::to_string(::getpid()) + ".db")),
          s("", config(db, extra)) {
        demo = s.namespaceIndex("urn:uaplex:demo");
        recorded = ua::stringNodeId(demo, "Demo.Scalars.Double");
        unrecorded = ua::stringNodeId(demo, "Demo.Scalars.Int32");
    }
    ~HistoryServer() {
        std::error_code ec;
        fs::remove(db, ec);
        fs::remove(db.string() + "-wal", ec);
        fs::remove(db.string() + "-shm", ec);
    }
    static std::string config(const fs::path& db, const std::string& extra) {
        fs::remove(db);
        return test::nodeManagerPlugins() + "[plugins.history-sqlite]\nlibrary = \"" +
               UAPLEX_HISTORY_SQLITE_PLUGIN + "\"\npath = \"" + db.string() +
               "\"\n[history]\nplugin = \"history-sqlite\"\n"
               "nodes = [\"nsu=urn:uaplex:demo;s=Demo.Scalars.Double\"]\n" +
               extra;
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

    // One HistoryUpdate of `details`; the service's status and the results.
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

    ua::ExtensionObject data(const ua::NodeId& node, ua::PerformUpdateType perform,
                             const std::vector<std::pair<std::int64_t, double>>& values) {
        auto* dvs = s.arena.allocateArray<ua::DataValue>(values.size());
        for (std::size_t i = 0; i < values.size(); ++i) {
            dvs[i] = ua::DataValue{};
            dvs[i].mask = UAPLEX_DATAVALUE_VALUE | UAPLEX_DATAVALUE_SOURCE_TIMESTAMP;
            dvs[i].value = ua::variantDouble(values[i].second);
            dvs[i].source_timestamp = values[i].first;
        }
        ua::UpdateDataDetails d{};
        d.nodeId = node;
        d.performInsertReplace = perform;
        d.updateValues = {std::int32_t(values.size()), dvs};
        return wrap(d);
    }
    ua::ExtensionObject deleteRaw(const ua::NodeId& node, std::int64_t start, std::int64_t end,
                                  bool modified = false) {
        ua::DeleteRawModifiedDetails d{};
        d.nodeId = node;
        d.isDeleteModified = modified;
        d.startTime = start;
        d.endTime = end;
        return wrap(d);
    }
    ua::ExtensionObject deleteAt(const ua::NodeId& node, const std::vector<std::int64_t>& times) {
        auto* t = s.arena.allocateArray<ua::DateTime>(times.size());
        std::copy(times.begin(), times.end(), t);
        ua::DeleteAtTimeDetails d{};
        d.nodeId = node;
        d.reqTimes = {std::int32_t(times.size()), t};
        return wrap(d);
    }

    // The raw history of the recorded node in [kBase, kBase + 100 s): (time, value) pairs.
    std::vector<std::pair<std::int64_t, double>> history() {
        ua::ReadRawModifiedDetails d{};
        d.startTime = kBase;
        d.endTime = kBase + 100 * kSecond;
        auto* item = s.arena.allocateArray<ua::HistoryReadValueId>(1);
        *item = ua::HistoryReadValueId{};
        item->nodeId = recorded;
        item->indexRange = ua::nullString();
        item->dataEncoding.name = ua::nullString();
        item->continuationPoint = {-1, nullptr};
        ua::HistoryReadRequest req{};
        req.historyReadDetails = wrap(d);
        req.timestampsToReturn = ua::TimestampsToReturn::Source;
        req.nodesToRead = {1, item};
        ua::HistoryReadResponse* resp = nullptr;
        REQUIRE(s.call(req, resp) == UAPLEX_Good);
        REQUIRE(resp->results.size() == 1);
        std::vector<std::pair<std::int64_t, double>> out;
        const ua::HistoryReadResult& r = resp->results[0];
        if (r.statusCode == UAPLEX_GoodNoData) return out;
        REQUIRE(r.statusCode == UAPLEX_Good);
        const auto* hd = static_cast<const ua::HistoryData*>(r.historyData.object);
        for (const ua::DataValue& dv : hd->dataValues)
            out.emplace_back(dv.source_timestamp, dv.value.value.double_);
        return out;
    }
};

std::vector<uaplex_status> results(const ua::HistoryUpdateResult& r) {
    return {r.operationResults.begin(), r.operationResults.end()};
}

using V = std::vector<std::pair<std::int64_t, double>>;
using S = std::vector<uaplex_status>;

}  // namespace

TEST_CASE("history update: insert, replace and update answer per value and read back") {
    HistoryServer h;
    const std::int64_t t1 = kBase + kSecond, t2 = kBase + 2 * kSecond, t3 = kBase + 3 * kSecond;
    // The recorded node says it may be updated: AccessLevel HistoryRead | HistoryWrite.
    CHECK((h.s.read(h.recorded, 17).value.value.byte & 12) == 12);
    CHECK((h.s.read(h.unrecorded, 17).value.value.byte & 12) == 0);

    auto r = h.updateOne(h.data(h.recorded, ua::PerformUpdateType::Insert, {{t1, 1}, {t2, 2}}));
    CHECK(r.statusCode == UAPLEX_Good);
    CHECK(results(r) == S{UAPLEX_GoodEntryInserted, UAPLEX_GoodEntryInserted});
    CHECK(h.history() == V{{t1, 1}, {t2, 2}});

    // Insert where a value exists: BadEntryExists, the value stays.
    r = h.updateOne(h.data(h.recorded, ua::PerformUpdateType::Insert, {{t1, 10}, {t3, 3}}));
    CHECK(results(r) == S{UAPLEX_BadEntryExists, UAPLEX_GoodEntryInserted});
    CHECK(h.history() == V{{t1, 1}, {t2, 2}, {t3, 3}});

    // Replace only where one exists.
    r = h.updateOne(
        h.data(h.recorded, ua::PerformUpdateType::Replace, {{t2, 20}, {kBase + 4 * kSecond, 4}}));
    CHECK(results(r) == S{UAPLEX_GoodEntryReplaced, UAPLEX_BadNoEntryExists});
    CHECK(h.history() == V{{t1, 1}, {t2, 20}, {t3, 3}});

    // Update replaces or inserts.
    r = h.updateOne(
        h.data(h.recorded, ua::PerformUpdateType::Update, {{t3, 30}, {kBase + 5 * kSecond, 5}}));
    CHECK(results(r) == S{UAPLEX_GoodEntryReplaced, UAPLEX_GoodEntryInserted});
    CHECK(h.history() == V{{t1, 1}, {t2, 20}, {t3, 30}, {kBase + 5 * kSecond, 5}});

    // A value of another type, and one without a SourceTimestamp, go nowhere.
    auto eo = h.data(h.recorded, ua::PerformUpdateType::Update, {{t1, 0}, {t2, 0}});
    auto* d = static_cast<ua::UpdateDataDetails*>(eo.object);
    d->updateValues.data[0].value = ua::variantInt32(7);
    d->updateValues.data[1].mask &= ~UAPLEX_DATAVALUE_SOURCE_TIMESTAMP;
    r = h.updateOne(eo);
    CHECK(results(r) == S{UAPLEX_BadTypeMismatch, UAPLEX_BadInvalidTimestamp});
    CHECK(h.history() == V{{t1, 1}, {t2, 20}, {t3, 30}, {kBase + 5 * kSecond, 5}});

    // Remove is no PerformUpdateType of UpdateDataDetails.
    r = h.updateOne(h.data(h.recorded, ua::PerformUpdateType::Remove, {{t1, 1}}));
    CHECK(r.statusCode == UAPLEX_BadHistoryOperationInvalid);
    CHECK(r.operationResults.size() == 0);
}

TEST_CASE("history update: delete raw and delete at time, read back") {
    HistoryServer h;
    V all;
    for (int i = 1; i <= 6; ++i) all.emplace_back(kBase + i * kSecond, double(i));
    REQUIRE(h.updateOne(h.data(h.recorded, ua::PerformUpdateType::Insert, all)).statusCode ==
            UAPLEX_Good);
    REQUIRE(h.history() == all);

    // [2 s, 4 s): the values at 2 and 3 go.
    auto r = h.updateOne(h.deleteRaw(h.recorded, kBase + 2 * kSecond, kBase + 4 * kSecond));
    CHECK(r.statusCode == UAPLEX_Good);
    CHECK(h.history() == V{all[0], all[3], all[4], all[5]});
    // Nothing left there: BadNoData. startTime == endTime deletes the value at that time.
    r = h.updateOne(h.deleteRaw(h.recorded, kBase + 2 * kSecond, kBase + 4 * kSecond));
    CHECK(r.statusCode == UAPLEX_BadNoData);
    r = h.updateOne(h.deleteRaw(h.recorded, kBase + 4 * kSecond, kBase + 4 * kSecond));
    CHECK(r.statusCode == UAPLEX_Good);
    CHECK(h.history() == V{all[0], all[4], all[5]});
    // Missing or reversed times; modified values are not kept.
    CHECK(h.updateOne(h.deleteRaw(h.recorded, 0, kBase)).statusCode ==
          UAPLEX_BadInvalidTimestampArgument);
    CHECK(h.updateOne(h.deleteRaw(h.recorded, kBase + kSecond, kBase)).statusCode ==
          UAPLEX_BadInvalidTimestampArgument);
    CHECK(h.updateOne(h.deleteRaw(h.recorded, kBase, kBase + 9 * kSecond, true)).statusCode ==
          UAPLEX_BadHistoryOperationUnsupported);

    // Delete at time: one result per time, BadNoEntryExists where no value has it.
    r = h.updateOne(h.deleteAt(h.recorded, {kBase + 5 * kSecond, kBase + 2 * kSecond,
                                            kBase + kSecond, kBase + 5 * kSecond}));
    CHECK(r.statusCode == UAPLEX_Good);
    CHECK(results(r) ==
          S{UAPLEX_Good, UAPLEX_BadNoEntryExists, UAPLEX_Good, UAPLEX_BadNoEntryExists});
    CHECK(h.history() == V{all[5]});
}

TEST_CASE("history update: refusals per node and past the [history] limits") {
    HistoryServer h("max_nodes_per_update = 3\nmax_values_per_update = 4\n");
    // OperationLimits MaxNodesPerHistoryUpdateData states the limit.
    CHECK(h.s.read(ua::numericNodeId(0, 12167)).value.value.uint32 == 3);
    const std::int64_t t = kBase + kSecond;
    std::vector<ua::HistoryUpdateResult> r;
    ua::UpdateEventDetails ev{};
    ev.nodeId = ua::numericNodeId(0, 2253);
    ev.performInsertReplace = ua::PerformUpdateType::Insert;
    REQUIRE(h.update({h.data(h.unrecorded, ua::PerformUpdateType::Insert, {{t, 1}}),
                      h.data(ua::stringNodeId(h.demo, "Demo.NoSuchNode"),
                             ua::PerformUpdateType::Insert, {{t, 1}}),
                      h.wrap(ev)},
                     r) == UAPLEX_Good);
    REQUIRE(r.size() == 3);
    CHECK(r[0].statusCode == UAPLEX_BadHistoryOperationUnsupported);  // not recorded
    CHECK(r[1].statusCode == UAPLEX_BadNodeIdUnknown);
    // Event entries mixed with value entries are not served.
    CHECK(r[2].statusCode == UAPLEX_BadHistoryOperationUnsupported);
    // Details of no HistoryUpdate type.
    ua::ReadRawModifiedDetails notUpdate{};
    CHECK(h.updateOne(h.wrap(notUpdate)).statusCode == UAPLEX_BadHistoryOperationInvalid);

    // The limits: nodes, and values and times together.
    auto one = h.deleteAt(h.recorded, {t});
    CHECK(h.update({one, one, one, one}, r) == UAPLEX_BadTooManyOperations);
    CHECK(h.update({}, r) == UAPLEX_BadNothingToDo);
    CHECK(h.update({h.data(h.recorded, ua::PerformUpdateType::Insert, {{t, 1}, {t + 1, 2}}),
                    h.deleteAt(h.recorded, {t, t + 1, t + 2})},
                   r) == UAPLEX_BadTooManyOperations);
    CHECK(h.update({h.data(h.recorded, ua::PerformUpdateType::Insert, {{t, 1}, {t + 1, 2}}),
                    h.deleteAt(h.recorded, {t, t + 2})},
                   r) == UAPLEX_Good);
    CHECK(results(r[1]) == S{UAPLEX_Good, UAPLEX_BadNoEntryExists});
}

TEST_CASE("history update: InsertHistory, ModifyHistory and DeleteHistory are checked") {
    HistoryServer h;
    config::AccessSection a;
    config::AccessRule insert;
    insert.namespace_uri = "urn:uaplex:demo";
    insert.roles = {"Operator"};
    insert.permissions = session::kPermBrowse | session::kPermRead | session::kPermReadHistory |
                         session::kPermInsertHistory;
    config::AccessRule none = insert;
    none.roles = {"Observer"};
    none.permissions = session::kPermBrowse | session::kPermRead | session::kPermReadHistory;
    a.rules = {insert, none};
    session::AccessPolicy policy(a, h.s.services->namespaceUris());
    auto inserter = policy.view(1u << config::roleIndex("Operator"));
    auto observer = policy.view(1u << config::roleIndex("Observer"));
    const std::int64_t t = kBase + kSecond;

    h.s.access = observer.get();
    CHECK((h.s.read(h.recorded, 18).value.value.byte & 8) == 0);  // UserAccessLevel
    CHECK(h.updateOne(h.data(h.recorded, ua::PerformUpdateType::Insert, {{t, 1}})).statusCode ==
          UAPLEX_BadUserAccessDenied);
    h.s.access = inserter.get();
    CHECK((h.s.read(h.recorded, 18).value.value.byte & 8) == 8);
    CHECK(h.updateOne(h.data(h.recorded, ua::PerformUpdateType::Insert, {{t, 1}})).statusCode ==
          UAPLEX_Good);
    CHECK(h.updateOne(h.data(h.recorded, ua::PerformUpdateType::Replace, {{t, 2}})).statusCode ==
          UAPLEX_BadUserAccessDenied);
    CHECK(h.updateOne(h.data(h.recorded, ua::PerformUpdateType::Update, {{t, 2}})).statusCode ==
          UAPLEX_BadUserAccessDenied);
    CHECK(h.updateOne(h.deleteAt(h.recorded, {t})).statusCode == UAPLEX_BadUserAccessDenied);
    h.s.access = nullptr;
    CHECK(h.history() == V{{t, 1}});
}

TEST_CASE("history model: HistoryServerCapabilities, AggregateFunctions, HA Configuration") {
    using ua::BuiltinType;
    auto organized = [](test::Server& s, std::uint32_t folder) {
        auto r = s.browse(ua::numericNodeId(0, folder), 0, ua::BrowseDirection::Forward,
                          ua::numericNodeId(0, 35));
        REQUIRE(r.statusCode == UAPLEX_Good);
        return r.references.size();
    };
    auto boolean = [](test::Server& s, std::uint32_t id) {
        ua::DataValue dv = s.read(ua::numericNodeId(0, id));
        REQUIRE(dv.status == UAPLEX_Good);
        REQUIRE(ua::variantType(dv.value) == BuiltinType::Boolean);
        return bool(dv.value.value.boolean);
    };
    {
        test::Server none;                  // no [history]: nothing is offered
        CHECK_FALSE(boolean(none, 11193));  // AccessHistoryDataCapability
        CHECK_FALSE(boolean(none, 11196));  // InsertDataCapability
        CHECK_FALSE(boolean(none, 11199));  // DeleteRawCapability
        CHECK_FALSE(boolean(none, 19091));  // ServerTimestampSupported
        CHECK(none.read(ua::numericNodeId(0, 11273)).value.value.uint32 == 0);
        CHECK(organized(none, 11201) == 0);
        // AggregateFilters compute the aggregates anyway.
        CHECK(organized(none, 2997) == aggregates::kAggregateFunctionCount);
    }
    HistoryServer h(
        "stepped = true\nmin_time_interval_ms = 250\nexception_deviation = 0.5\n"
        "percent_data_bad = 30\npercent_data_good = 80\nmax_values_per_node = 77\n");
    test::Server& s = h.s;
    for (std::uint32_t id : {11193u, 11196u, 11197u, 11198u, 11199u, 11200u, 19091u})
        CHECK(boolean(s, id));
    for (std::uint32_t id : {11242u, 11281u, 11282u, 11283u, 11502u, 11275u})
        CHECK_FALSE(boolean(s, id));
    CHECK(s.read(ua::numericNodeId(0, 11273)).value.value.uint32 == 77);  // MaxReturnDataValues
    CHECK(organized(s, 11201) == aggregates::kAggregateFunctionCount);
    CHECK(organized(s, 2997) == aggregates::kAggregateFunctionCount);

    // The recorded Variable's HA Configuration, through HasHistoricalConfiguration.
    auto hdcRefs = s.browse(h.recorded, 0, ua::BrowseDirection::Forward, ua::numericNodeId(0, 56));
    REQUIRE(hdcRefs.references.size() == 1);
    CHECK(ua::view(hdcRefs.references[0].browseName.name) == "HA Configuration");
    CHECK(hdcRefs.references[0].typeDefinition.node_id.identifier.numeric == 2318);
    const ua::NodeId hdc = hdcRefs.references[0].nodeId.node_id;
    CHECK(s.browse(h.unrecorded, 0, ua::BrowseDirection::Forward, ua::numericNodeId(0, 56))
              .references.size() == 0);
    std::map<std::string, ua::Variant> props;
    auto collect = [&](const ua::NodeId& node) {
        for (const auto& ref :
             s.browse(node, 0, ua::BrowseDirection::Forward, ua::numericNodeId(0, 46)).references) {
            ua::DataValue dv = s.read(ref.nodeId.node_id);
            REQUIRE(dv.status == UAPLEX_Good);
            props[std::string(ua::view(ref.browseName.name))] = dv.value;
        }
    };
    collect(hdc);
    auto agg = s.browse(hdc, 0, ua::BrowseDirection::Forward, ua::numericNodeId(0, 47));
    REQUIRE(agg.references.size() == 1);
    CHECK(ua::view(agg.references[0].browseName.name) == "AggregateConfiguration");
    collect(agg.references[0].nodeId.node_id);
    CHECK(props.at("Stepped").value.boolean);
    CHECK(props.at("MinTimeInterval").value.double_ == 250);
    CHECK(props.at("MaxTimeInterval").value.double_ == 0);
    CHECK(props.at("ExceptionDeviation").value.double_ == 0.5);
    CHECK(props.at("ExceptionDeviationFormat").value.int32 == 0);  // AbsoluteValue
    CHECK(props.at("TreatUncertainAsBad").value.boolean);
    CHECK(props.at("PercentDataBad").value.byte == 30);
    CHECK(props.at("PercentDataGood").value.byte == 80);
    CHECK_FALSE(props.at("UseSlopedExtrapolation").value.boolean);
}

TEST_CASE("history update: a recorded node of an owned namespace takes updates and deletes") {
    const fs::path db = fs::temp_directory_path() /
                        ("uaplex-history-update-owned-" + std::to_string(::getpid()) + ".db");
    fs::remove(db);
    {
        test::Server s("", std::string("[plugins.test-sampling]\nlibrary = \"") +
                               UAPLEX_SAMPLING_PLUGIN +
                               "\"\n[plugins.history-sqlite]\nlibrary = \"" +
                               UAPLEX_HISTORY_SQLITE_PLUGIN + "\"\npath = \"" + db.string() +
                               "\"\n[history]\nplugin = \"history-sqlite\"\n"
                               "nodes = [\"nsu=urn:uaplex:test-sampling;i=500\"]\n");
        const ua::NodeId node =
            ua::numericNodeId(s.namespaceIndex("urn:uaplex:test-sampling"), 500);
        ua::DataValue dv{};
        dv.mask = UAPLEX_DATAVALUE_VALUE | UAPLEX_DATAVALUE_SOURCE_TIMESTAMP;
        dv.value = ua::variantInt32(5);
        dv.source_timestamp = kBase;
        ua::UpdateDataDetails d{};
        d.nodeId = node;
        d.performInsertReplace = ua::PerformUpdateType::Insert;
        d.updateValues = {1, &dv};
        ua::DateTime t = kBase;
        ua::DeleteAtTimeDetails del{};
        del.nodeId = node;
        del.reqTimes = {1, &t};
        ua::ExtensionObject details[3]{};
        details[0].data_type = enc::dataTypeOf<ua::UpdateDataDetails>();
        details[0].object = &d;
        details[1] = details[0];  // the same time again: it exists now
        details[2].data_type = enc::dataTypeOf<ua::DeleteAtTimeDetails>();
        details[2].object = &del;
        for (int k = 0; k < 3; ++k) {
            ua::HistoryUpdateRequest req{};
            req.historyUpdateDetails = {1, &details[k]};
            ua::HistoryUpdateResponse* resp = nullptr;
            REQUIRE(s.call(req, resp) == UAPLEX_Good);
            REQUIRE(resp->results.size() == 1);
            const ua::HistoryUpdateResult& r = resp->results[0];
            CHECK(r.statusCode == UAPLEX_Good);
            REQUIRE(r.operationResults.size() == 1);
            const uaplex_status want[3] = {UAPLEX_GoodEntryInserted, UAPLEX_BadEntryExists,
                                           UAPLEX_Good};
            CHECK(r.operationResults[0] == want[k]);
        }
    }
    std::error_code ec;
    for (const char* x : {"", "-wal", "-shm"}) fs::remove(db.string() + x, ec);
}

TEST_CASE("history recording: MinTimeInterval, ExceptionDeviation and MaxTimeInterval") {
    // Values are recorded in the order they are written, through one queue: once a later
    // write to another node is in the store, an earlier one that was not is left out.
    const fs::path db =
        fs::temp_directory_path() / ("uaplex-history-filter-" + std::to_string(::getpid()) + ".db");
    auto config = [&](const std::string& filter) {
        fs::remove(db);
        return test::nodeManagerPlugins() + "[plugins.history-sqlite]\nlibrary = \"" +
               UAPLEX_HISTORY_SQLITE_PLUGIN + "\"\npath = \"" + db.string() +
               "\"\n[history]\nplugin = \"history-sqlite\"\n"
               "nodes = [\"nsu=urn:uaplex:demo;s=Demo.Scalars.Double\", "
               "\"nsu=urn:uaplex:demo;s=Demo.Scalars.Float\"]\n" +
               filter;
    };
    auto history = [](test::Server& s, const ua::NodeId& node) {
        ua::ReadRawModifiedDetails d{};
        d.startTime = ua::utcNow() - 3600 * kSecond;
        d.endTime = ua::utcNow() + 3600 * kSecond;
        auto* obj = s.arena.allocateArray<ua::ReadRawModifiedDetails>(1);
        *obj = d;
        ua::ExtensionObject eo{};
        const enc::DataType* t = enc::dataTypeOf<ua::ReadRawModifiedDetails>();
        eo.type_id = ua::numericNodeId(0, t->binaryEncodingId);
        eo.encoding = UAPLEX_EXTENSIONOBJECT_BINARY;
        eo.data_type = t;
        eo.object = obj;
        auto* item = s.arena.allocateArray<ua::HistoryReadValueId>(1);
        *item = ua::HistoryReadValueId{};
        item->nodeId = node;
        item->indexRange = ua::nullString();
        item->dataEncoding.name = ua::nullString();
        item->continuationPoint = {-1, nullptr};
        ua::HistoryReadRequest req{};
        req.historyReadDetails = eo;
        req.timestampsToReturn = ua::TimestampsToReturn::Both;
        req.nodesToRead = {1, item};
        ua::HistoryReadResponse* resp = nullptr;
        REQUIRE(s.call(req, resp) == UAPLEX_Good);
        std::vector<double> out;
        const ua::HistoryReadResult& r = resp->results[0];
        if (r.statusCode == UAPLEX_GoodNoData) return out;
        REQUIRE(r.statusCode == UAPLEX_Good);
        for (const ua::DataValue& dv :
             static_cast<const ua::HistoryData*>(r.historyData.object)->dataValues)
            out.push_back(ua::variantType(dv.value) == ua::BuiltinType::Float
                              ? double(dv.value.value.float_)
                              : dv.value.value.double_);
        return out;
    };
    // Polls (bounded) until `node`'s history holds `value`.
    auto until = [&](test::Server& s, const ua::NodeId& node, double value) {
        for (int i = 0; i < 500; ++i) {
            auto h = history(s, node);
            if (std::find(h.begin(), h.end(), value) != h.end()) return;
            ::usleep(10000);
        }
        FAIL("value " << value << " never recorded");
    };
    auto f32 = [](float v) {
        ua::Variant x = ua::makeVariant(ua::BuiltinType::Float);
        x.value.float_ = v;
        return x;
    };

    SECTION("ExceptionDeviation: smaller changes are left out") {
        test::Server s("", config("exception_deviation = 0.5\n"));
        const std::uint16_t demo = s.namespaceIndex("urn:uaplex:demo");
        const ua::NodeId d = ua::stringNodeId(demo, "Demo.Scalars.Double");
        for (double v : {1.0, 1.2, 1.49, 2.0, 2.1, 1.6, 10.0})
            REQUIRE(s.write(d, ua::variantDouble(v)) == UAPLEX_Good);
        until(s, d, 10.0);
        CHECK(history(s, d) == std::vector<double>{1.0, 2.0, 10.0});
    }
    SECTION("MinTimeInterval: nothing closer to the last recorded value than that") {
        test::Server s("", config("min_time_interval_ms = 600000\n"));
        const std::uint16_t demo = s.namespaceIndex("urn:uaplex:demo");
        const ua::NodeId d = ua::stringNodeId(demo, "Demo.Scalars.Double");
        const ua::NodeId f = ua::stringNodeId(demo, "Demo.Scalars.Float");
        for (double v : {1.0, 7.0, 8.0}) REQUIRE(s.write(d, ua::variantDouble(v)) == UAPLEX_Good);
        REQUIRE(s.write(f, f32(3.0F)) == UAPLEX_Good);  // another node: its first value
        until(s, f, 3.0);
        CHECK(history(s, d) == std::vector<double>{1.0});
    }
    SECTION("MaxTimeInterval: an unchanged value is recorded again") {
        test::Server s("", config("max_time_interval_ms = 50\n"));
        const std::uint16_t demo = s.namespaceIndex("urn:uaplex:demo");
        const ua::NodeId d = ua::stringNodeId(demo, "Demo.Scalars.Double");
        REQUIRE(s.write(d, ua::variantDouble(4.5)) == UAPLEX_Good);
        std::vector<double> h;
        for (int i = 0; i < 500 && h.size() < 3; ++i) {
            ::usleep(10000);
            h = history(s, d);
        }
        REQUIRE(h.size() >= 3);  // the write, then its repeats
        for (double v : h) CHECK(v == 4.5);
    }
    SECTION("none of them: every change is recorded") {
        test::Server s("", config(""));
        const std::uint16_t demo = s.namespaceIndex("urn:uaplex:demo");
        const ua::NodeId d = ua::stringNodeId(demo, "Demo.Scalars.Double");
        for (double v : {1.0, 1.2, 10.0}) REQUIRE(s.write(d, ua::variantDouble(v)) == UAPLEX_Good);
        until(s, d, 10.0);
        CHECK(history(s, d) == std::vector<double>{1.0, 1.2, 10.0});
    }
    std::error_code ec;
    fs::remove(db, ec);
    fs::remove(db.string() + "-wal", ec);
    fs::remove(db.string() + "-shm", ec);
}
