// SPDX-License-Identifier: Apache-2.0
// Read and Write through the ServiceSet: attributes per NodeClass, IndexRange, timestamps,
// service-level checks, type/rank/access checks; the Server object.
#include <catch2/catch.hpp>

#include <uaplex/encoding/generated/ns0.hpp>

#include <algorithm>
#include <atomic>
#include <set>
#include <thread>

#include "support/services_fixture.hpp"

using namespace uaplex;
using uaplex::test::Server;

namespace {

ua::NodeId n0(std::uint32_t id) {
    return ua::numericNodeId(0, id);
}
ua::NodeId bench(std::uint32_t id) {
    return ua::numericNodeId(1, id);
}
std::int32_t int32Of(const ua::DataValue& dv) {
    REQUIRE((dv.value.encoding & UAPLEX_VARIANT_TYPE_MASK) == UAPLEX_TYPE_INT32);
    return dv.value.value.int32;
}
std::uint32_t uint32Of(const ua::DataValue& dv) {
    REQUIRE((dv.value.encoding & UAPLEX_VARIANT_TYPE_MASK) == UAPLEX_TYPE_UINT32);
    return dv.value.value.uint32;
}

}  // namespace

TEST_CASE("Read: every attribute of each NodeClass, BadAttributeIdInvalid otherwise") {
    Server s;
    // Objects (Object), Server_ServerStatus_State (Variable), BaseObjectType (ObjectType),
    // BaseDataVariableType (VariableType), HasComponent (ReferenceType), Int32 (DataType),
    // Server_GetMonitoredItems (Method), and a benchmark variable.
    struct Case {
        ua::NodeId id;
        std::uint8_t nodeClass;
    };
    const Case cases[] = {{n0(85), 1},  {n0(2259), 2}, {n0(58), 8},    {n0(63), 16},
                          {n0(47), 32}, {n0(6), 64},   {n0(11492), 4}, {bench(1001), 2}};
    // Attributes each class must answer Good (Part 3 Tables 4..); the optional ones that the
    // node may lack (DataTypeDefinition, RolePermissions) are left out.
    const std::vector<std::uint32_t> common{1, 2, 3, 4, 5, 6, 7, 26};
    const std::map<std::uint8_t, std::vector<std::uint32_t>> specific{
        {1, {12}},
        {2, {13, 14, 15, 16, 17, 18, 19, 20, 27}},
        {4, {21, 22}},
        {8, {8}},
        {16, {8, 13, 14, 15, 16}},
        {32, {8, 9, 10}},
        {64, {8}},
    };
    for (const Case& c : cases) {
        std::set<std::uint32_t> valid(common.begin(), common.end());
        for (auto a : specific.at(c.nodeClass)) valid.insert(a);
        for (std::uint32_t attr = 1; attr <= 27; ++attr) {
            ua::DataValue dv = s.read(c.id, attr);
            INFO("node class " << int(c.nodeClass) << " attribute " << attr);
            if (valid.count(attr)) {
                CHECK(dv.status == UAPLEX_Good);
            } else if (attr != 23 && attr != 24 && attr != 25) {
                CHECK(dv.status == UAPLEX_BadAttributeIdInvalid);
            }
        }
        CHECK(s.read(c.id, 2).value.value.int32 == c.nodeClass);
    }
    CHECK(s.read(n0(85), 0).status == UAPLEX_BadAttributeIdInvalid);
    CHECK(s.read(n0(85), 999).status == UAPLEX_BadAttributeIdInvalid);
    // DataTypeDefinition of a structure, RolePermissions where the nodeset has none.
    ua::DataValue def = s.read(n0(884), 23);  // Range
    CHECK(def.status == UAPLEX_Good);
    CHECK((def.value.encoding & UAPLEX_VARIANT_TYPE_MASK) == UAPLEX_TYPE_EXTENSIONOBJECT);
    CHECK(s.read(n0(6), 23).status == UAPLEX_BadAttributeIdInvalid);
}

TEST_CASE("Read: attribute values of namespace-0 nodes") {
    Server s;
    ua::DataValue bn = s.read(n0(2253), 3);
    auto* q = static_cast<ua::QualifiedName*>(bn.value.value.pointer);
    CHECK(ua::view(q->name) == "Server");
    ua::DataValue inv = s.read(n0(47), 10);
    CHECK(ua::view(static_cast<ua::LocalizedText*>(inv.value.value.pointer)->text) ==
          "ComponentOf");
    CHECK(s.read(n0(58), 8).value.value.boolean == false);
    CHECK(s.read(n0(26), 8).value.value.boolean == true);  // Number is abstract
    CHECK(s.read(n0(2259), 15).value.value.int32 == -1);
    auto* dt = static_cast<ua::NodeId*>(s.read(n0(2259), 14).value.value.pointer);
    CHECK(dt->identifier.numeric == 852);  // ServerState
    CHECK(s.read(bench(1001), 17).value.value.byte == 3);
    CHECK(s.read(n0(11492), 21).value.value.boolean == true);
}

TEST_CASE("Read: unknown nodes, service-level checks and operation limits") {
    Server s("max_nodes_per_read = 4");
    CHECK(s.read(ua::numericNodeId(0, 999999), 1).status == UAPLEX_BadNodeIdUnknown);
    CHECK(s.read(ua::numericNodeId(1, 999999), 1).status == UAPLEX_BadNodeIdUnknown);
    CHECK(s.read(ua::numericNodeId(77, 1), 13).status == UAPLEX_BadNodeIdUnknown);
    CHECK(s.read(ua::stringNodeId(1, "nope"), 13).status == UAPLEX_BadNodeIdUnknown);
    CHECK(s.read(n0(85), 13).status == UAPLEX_BadAttributeIdInvalid);  // an Object's Value

    auto items = s.arena.allocateArray<ua::ReadValueId>(5);
    for (int i = 0; i < 5; ++i) {
        items[i].nodeId = bench(1001);
        items[i].attributeId = 13;
        items[i].indexRange = ua::nullString();
        items[i].dataEncoding.name = ua::nullString();
    }
    ua::ReadResponse* resp = nullptr;
    ua::ReadRequest req{};
    req.nodesToRead = {5, items};
    CHECK(s.call(req, resp) == UAPLEX_BadTooManyOperations);
    req.nodesToRead = {0, nullptr};
    CHECK(s.call(req, resp) == UAPLEX_BadNothingToDo);
    req.nodesToRead = {1, items};
    req.maxAge = -1;
    CHECK(s.call(req, resp) == UAPLEX_BadMaxAgeInvalid);
    req.maxAge = 0;
    req.timestampsToReturn = static_cast<ua::TimestampsToReturn>(7);
    CHECK(s.call(req, resp) == UAPLEX_BadTimestampsToReturnInvalid);
    req.timestampsToReturn = ua::TimestampsToReturn::Neither;

    // DataEncoding: only "Default Binary" for Values.
    items[0].dataEncoding = uaplex::test::qn(0, "Default XML");
    REQUIRE(s.call(req, resp) == UAPLEX_Good);
    CHECK(resp->results[0].status == UAPLEX_BadDataEncodingUnsupported);
    items[0].dataEncoding = uaplex::test::qn(0, "Default Binary");
    REQUIRE(s.call(req, resp) == UAPLEX_Good);
    CHECK(resp->results[0].status == UAPLEX_Good);
    items[0].attributeId = 3;
    REQUIRE(s.call(req, resp) == UAPLEX_Good);
    CHECK(resp->results[0].status == UAPLEX_BadDataEncodingInvalid);
}

TEST_CASE("Read: TimestampsToReturn") {
    Server s;
    using TS = ua::TimestampsToReturn;
    auto has = [](const ua::DataValue& dv, std::uint8_t bit) { return (dv.mask & bit) != 0; };
    ua::DataValue both = s.read(bench(1001), 13, {}, TS::Both);
    CHECK(has(both, UAPLEX_DATAVALUE_SOURCE_TIMESTAMP));
    CHECK(has(both, UAPLEX_DATAVALUE_SERVER_TIMESTAMP));
    ua::DataValue src = s.read(bench(1001), 13, {}, TS::Source);
    CHECK(has(src, UAPLEX_DATAVALUE_SOURCE_TIMESTAMP));
    CHECK_FALSE(has(src, UAPLEX_DATAVALUE_SERVER_TIMESTAMP));
    ua::DataValue srv = s.read(bench(1001), 13, {}, TS::Server);
    CHECK_FALSE(has(srv, UAPLEX_DATAVALUE_SOURCE_TIMESTAMP));
    CHECK(has(srv, UAPLEX_DATAVALUE_SERVER_TIMESTAMP));
    ua::DataValue none = s.read(bench(1001), 13, {}, TS::Neither);
    CHECK_FALSE(has(none, UAPLEX_DATAVALUE_SOURCE_TIMESTAMP));
    CHECK_FALSE(has(none, UAPLEX_DATAVALUE_SERVER_TIMESTAMP));
    // Non-Value attributes carry no source timestamp.
    CHECK_FALSE(has(s.read(bench(1001), 3, {}, TS::Both), UAPLEX_DATAVALUE_SOURCE_TIMESTAMP));
}

TEST_CASE("Read and Write with IndexRange") {
    Server s;
    std::vector<std::int32_t> full(100);
    for (int i = 0; i < 100; ++i) full[i] = i * 3;
    REQUIRE(s.write(bench(2001), ua::variantArray(ua::BuiltinType::Int32, 100, full.data())) ==
            UAPLEX_Good);
    auto elements = [](const ua::DataValue& dv) {
        auto* p = static_cast<std::int32_t*>(dv.value.value.pointer);
        return std::vector<std::int32_t>(p, p + dv.value.array_length);
    };
    CHECK(elements(s.read(bench(2001), 13, "10:12")) == std::vector<std::int32_t>{30, 33, 36});
    CHECK(elements(s.read(bench(2001), 13, "99")) == std::vector<std::int32_t>{297});
    CHECK(elements(s.read(bench(2001), 13, "98:120")) == std::vector<std::int32_t>{294, 297});
    CHECK(s.read(bench(2001), 13, "200:210").status == UAPLEX_BadIndexRangeNoData);
    CHECK(s.read(bench(2001), 13, "5:5").status == UAPLEX_BadIndexRangeInvalid);
    CHECK(s.read(bench(2001), 13, "x").status == UAPLEX_BadIndexRangeInvalid);
    CHECK(s.read(bench(2001), 13, "3:1").status == UAPLEX_BadIndexRangeInvalid);
    CHECK(s.read(bench(1001), 13, "0:1").status == UAPLEX_BadIndexRangeNoData);  // scalar
    CHECK(s.read(bench(1001), 3, "0").status == UAPLEX_BadIndexRangeNoData);     // not Value

    std::int32_t two[2] = {-5, -6};
    CHECK(s.write(bench(2001), ua::variantArray(ua::BuiltinType::Int32, 2, two), "5:6") ==
          UAPLEX_Good);
    auto back = elements(s.read(bench(2001)));
    CHECK(back[4] == 12);
    CHECK(back[5] == -5);
    CHECK(back[6] == -6);
    CHECK(back[7] == 21);
    CHECK(s.write(bench(2001), ua::variantArray(ua::BuiltinType::Int32, 1, two), "0:2") ==
          UAPLEX_BadIndexRangeInvalid);
    CHECK(s.write(bench(2001), ua::variantArray(ua::BuiltinType::Int32, 2, two), "150:151") ==
          UAPLEX_BadIndexRangeNoData);

    // Strings: a substring of a scalar.
    std::uint16_t d = s.namespaceIndex("urn:uaplex:demo");
    ua::NodeId str = ua::stringNodeId(d, "Demo.Scalars.String");
    REQUIRE(s.write(str, ua::variantString("abcdef")) == UAPLEX_Good);
    ua::DataValue sub = s.read(str, 13, "1:3");
    REQUIRE(sub.status == UAPLEX_Good);
    CHECK(ua::view(sub.value.value.string) == "bcd");
    CHECK(s.write(str, ua::variantString("XY"), "4:5") == UAPLEX_Good);
    CHECK(ua::view(s.read(str).value.value.string) == "abcdXY");
}

TEST_CASE("Write: type, rank, access and attribute checks") {
    Server s;
    std::uint16_t d = s.namespaceIndex("urn:uaplex:demo");
    auto demo = [&](std::string_view id) { return ua::stringNodeId(d, id); };

    CHECK(s.write(bench(1001), ua::variantInt32(42)) == UAPLEX_Good);
    CHECK(int32Of(s.read(bench(1001))) == 42);
    ua::Variant byte = ua::makeVariant(ua::BuiltinType::Byte);
    byte.value.byte = 7;
    CHECK(s.write(bench(1001), byte) == UAPLEX_BadTypeMismatch);  // Byte into Int32
    CHECK(s.write(bench(1001), ua::variantDouble(1.5)) == UAPLEX_BadTypeMismatch);
    std::int32_t pair[2] = {1, 2};
    CHECK(s.write(bench(1001), ua::variantArray(ua::BuiltinType::Int32, 2, pair)) ==
          UAPLEX_BadTypeMismatch);  // array into a scalar
    CHECK(s.write(bench(2001), ua::variantInt32(1)) ==
          UAPLEX_BadTypeMismatch);  // scalar into array
    CHECK(s.write(demo("Demo.Scalars.Boolean"), ua::variantInt32(1)) == UAPLEX_BadTypeMismatch);
    CHECK(s.write(demo("Demo.Scalars.BaseDataType"), ua::variantString("any")) == UAPLEX_Good);
    CHECK(s.write(demo("Demo.Scalars.Double"), ua::variantDouble(2.5)) == UAPLEX_Good);

    // Read-only and namespace-0 values.
    CHECK(s.write(demo("Demo.Counter"), ua::variantUInt32(5)) == UAPLEX_BadNotWritable);
    CHECK(s.write(demo("Demo.Dynamic"), ua::variantDouble(5)) == UAPLEX_BadNotWritable);
    CHECK(s.write(n0(2267), byte) == UAPLEX_BadNotWritable);
    CHECK(s.write(demo("Demo.NoSuchNode"), ua::variantInt32(1)) == UAPLEX_BadNodeIdUnknown);
    CHECK(s.write(demo("Demo"), ua::variantInt32(1)) == UAPLEX_BadAttributeIdInvalid);

    // Other attributes: not writable without a WriteMask bit.
    CHECK(s.write(bench(1001), ua::variantString("x"), {}, 4) == UAPLEX_BadNotWritable);
    CHECK(s.write(bench(1001), ua::variantInt32(1), {}, 999) == UAPLEX_BadAttributeIdInvalid);

    // Status and timestamps need StatusWrite / TimestampWrite in AccessLevel.
    ua::WriteValue wv{};
    wv.nodeId = bench(1001);
    wv.attributeId = 13;
    wv.indexRange = ua::nullString();
    wv.value.mask = UAPLEX_DATAVALUE_VALUE | UAPLEX_DATAVALUE_STATUS;
    wv.value.value = ua::variantInt32(3);
    wv.value.status = UAPLEX_UncertainInitialValue;
    CHECK(s.writeValue(wv) == UAPLEX_BadWriteNotSupported);
    wv.value.mask = UAPLEX_DATAVALUE_VALUE | UAPLEX_DATAVALUE_SOURCE_TIMESTAMP;
    wv.value.source_timestamp = 130000000000000000LL;
    CHECK(s.writeValue(wv) == UAPLEX_BadWriteNotSupported);

    // Write limits.
    Server limited("max_nodes_per_write = 1");
    auto* items = limited.arena.allocateArray<ua::WriteValue>(2);
    ua::WriteRequest req{};
    req.nodesToWrite = {2, items};
    ua::WriteResponse* resp = nullptr;
    CHECK(limited.call(req, resp) == UAPLEX_BadTooManyOperations);
    req.nodesToWrite = {0, nullptr};
    CHECK(limited.call(req, resp) == UAPLEX_BadNothingToDo);
}

TEST_CASE("The Server object is alive") {
    Server s("max_nodes_per_read = 1234\nmax_browse_continuation_points = 7");
    namespace ns = ua::ns0;
    // ServerStatus.State follows setState; CurrentTime ticks.
    CHECK(s.read(n0(ns::Server_ServerStatus_State)).value.value.int32 == 0);
    s.services->setState(services::ServerState::Shutdown);
    CHECK(s.read(n0(ns::Server_ServerStatus_State)).value.value.int32 == 4);
    ua::DateTime t1 = s.read(n0(ns::Server_ServerStatus_CurrentTime)).value.value.datetime;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    ua::DateTime t2 = s.read(n0(ns::Server_ServerStatus_CurrentTime)).value.value.datetime;
    CHECK(t2 > t1);
    CHECK(s.read(n0(ns::Server_ServerStatus_StartTime)).value.value.datetime <= t1);

    ua::DataValue status = s.read(n0(ns::Server_ServerStatus));
    REQUIRE((status.value.encoding & UAPLEX_VARIANT_TYPE_MASK) == UAPLEX_TYPE_EXTENSIONOBJECT);
    auto* eo = static_cast<ua::ExtensionObject*>(status.value.value.pointer);
    REQUIRE(eo->data_type == enc::dataTypeOf<ua::ServerStatusDataType>());
    auto* st = static_cast<ua::ServerStatusDataType*>(eo->object);
    CHECK(ua::view(st->buildInfo.productUri) == "urn:uaplex");
    CHECK(ua::view(st->buildInfo.softwareVersion) == UAPLEX_TEST_VERSION);
    CHECK(st->buildInfo.buildDate > 0);
    CHECK(ua::view(s.read(n0(ns::Server_ServerStatus_BuildInfo_ProductName)).value.value.string) ==
          "uaplex");

    // NamespaceArray: ns0, the application URI, the demo's namespace.
    ua::DataValue nsArray = s.read(n0(ns::Server_NamespaceArray));
    REQUIRE(nsArray.value.array_length == 3);
    auto* uris = static_cast<ua::String*>(nsArray.value.value.pointer);
    CHECK(ua::view(uris[0]) == "http://opcfoundation.org/UA/");
    CHECK(ua::view(uris[1]) == "urn:test:uaplex");
    CHECK(ua::view(uris[2]) == "urn:uaplex:demo");
    ua::DataValue servers = s.read(n0(ns::Server_ServerArray));
    REQUIRE(servers.value.array_length == 1);
    CHECK(s.read(n0(ns::Server_ServiceLevel)).value.value.byte == 255);

    // ServerCapabilities from [server.limits].
    CHECK(uint32Of(s.read(n0(ns::Server_ServerCapabilities_OperationLimits_MaxNodesPerRead))) ==
          1234);
    CHECK(uint32Of(s.read(n0(ns::Server_ServerCapabilities_OperationLimits_MaxNodesPerBrowse))) ==
          s.cfg.server.limits.max_nodes_per_browse);
    CHECK(
        s.read(n0(ns::Server_ServerCapabilities_MaxBrowseContinuationPoints)).value.value.uint16 ==
        7);
    CHECK(uint32Of(s.read(n0(ns::Server_ServerCapabilities_MaxArrayLength))) ==
          std::uint32_t(s.cfg.server.limits.max_array_length));
    CHECK(uint32Of(s.read(n0(ns::Server_ServerCapabilities_MaxStringLength))) ==
          std::uint32_t(s.cfg.server.limits.max_string_length));
    CHECK(uint32Of(s.read(n0(ns::Server_ServerCapabilities_MaxByteStringLength))) ==
          std::uint32_t(s.cfg.server.limits.max_bytestring_length));
    auto profileOf = [](Server& server) {
        ua::DataValue p = server.read(n0(ua::ns0::Server_ServerCapabilities_ServerProfileArray));
        REQUIRE(p.value.array_length == 1);
        return std::string(ua::view(static_cast<ua::String*>(p.value.value.pointer)[0]));
    };
    CHECK(profileOf(s) == "http://opcfoundation.org/UA-Profile/Server/MicroEmbeddedDevice2017");
    // One session, or one queued Publish request, is below Micro Embedded Device 2017.
    Server single("max_sessions = 1");
    CHECK(profileOf(single) == "http://opcfoundation.org/UA-Profile/Server/NanoEmbeddedDevice2017");
    Server onePublish("max_publish_requests_per_session = 1");
    CHECK(profileOf(onePublish) ==
          "http://opcfoundation.org/UA-Profile/Server/NanoEmbeddedDevice2017");
    CHECK(s.read(n0(ns::Server_ServerCapabilities_LocaleIdArray)).value.array_length == 1);
    CHECK(s.read(n0(ns::Server_ServerCapabilities_MinSupportedSampleRate)).status == UAPLEX_Good);

    // ServerDiagnosticsSummary from the counters.
    s.services->counters().currentSessionCount = 3;
    s.services->counters().cumulatedSessionCount = 11;
    CHECK(uint32Of(s.read(
              n0(ns::Server_ServerDiagnostics_ServerDiagnosticsSummary_CurrentSessionCount))) == 3);
    ua::DataValue sum = s.read(n0(ns::Server_ServerDiagnostics_ServerDiagnosticsSummary));
    auto* sumEo = static_cast<ua::ExtensionObject*>(sum.value.value.pointer);
    REQUIRE(sumEo->data_type == enc::dataTypeOf<ua::ServerDiagnosticsSummaryDataType>());
    CHECK(
        static_cast<ua::ServerDiagnosticsSummaryDataType*>(sumEo->object)->cumulatedSessionCount ==
        11);
    CHECK(s.read(n0(ns::Server_ServerDiagnostics_EnabledFlag)).value.value.boolean == true);

    // Encodable: the whole ServerStatus goes through the binary encoder.
    enc::ByteBuffer out;
    CHECK(enc::encodeValue(out, *enc::findDataType("DataValue"), &status) == UAPLEX_Good);
}

TEST_CASE("the Server object's own variables have typed, encodable values") {
    Server s;
    // The Server object, ServerStatus, ServerCapabilities, OperationLimits, ServerDiagnostics
    // and its summary, ServerRedundancy: their Variables one level down (the optional
    // PubSub/namespace sub-objects of the nodeset are not the server's live state).
    std::size_t variables = 0;
    for (std::uint32_t parent : {2253u, 2256u, 2260u, 2268u, 11704u, 2274u, 2275u, 3706u, 2296u}) {
        ua::BrowseResult r = s.browse(n0(parent));
        REQUIRE(r.statusCode == UAPLEX_Good);
        for (const auto& ref : r.references) {
            if (ref.nodeClass != ua::NodeClass::Variable) continue;
            ++variables;
            ua::DataValue dv = s.read(ref.nodeId.node_id);
            INFO("ns=0;i=" << ref.nodeId.node_id.identifier.numeric << " "
                           << ua::view(ref.browseName.name));
            CHECK(dv.status == UAPLEX_Good);
            CHECK((dv.value.encoding & UAPLEX_VARIANT_TYPE_MASK) != 0);
            enc::ByteBuffer out;
            CHECK(enc::encodeValue(out, *enc::findDataType("DataValue"), &dv) == UAPLEX_Good);
        }
    }
    CHECK(variables > 50);
}

TEST_CASE("Demo values change on the timer") {
    Server s;
    std::uint16_t d = s.namespaceIndex("urn:uaplex:demo");
    ua::NodeId counter = ua::stringNodeId(d, "Demo.Counter");
    std::uint32_t c1 = uint32Of(s.read(counter));
    // At 100 ms per step, two steps take 200 ms; a loaded machine gets up to 3 s.
    std::uint32_t c2 = c1;
    for (int i = 0; i < 30 && c2 < c1 + 2; ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
        c2 = uint32Of(s.read(counter));
    }
    CHECK(c2 >= c1 + 2);
    ua::DataValue dyn = s.read(ua::stringNodeId(d, "Demo.Dynamic"));
    CHECK((dyn.value.encoding & UAPLEX_VARIANT_TYPE_MASK) == UAPLEX_TYPE_DOUBLE);
    CHECK(std::abs(dyn.value.value.double_) <= 100.0);
}

TEST_CASE("concurrent Reads and Writes from several workers see whole values") {
    Server s;
    // Each worker writes arrays whose elements all equal one number; a torn value would mix.
    std::atomic<int> bad{0}, reads{0};
    auto worker = [&](int seed) {
        enc::Arena arena;
        std::vector<std::int32_t> elements(100);
        for (int i = 0; i < 2000; ++i) {
            arena.reset();
            std::fill(elements.begin(), elements.end(), seed * 100000 + i);
            ua::WriteValue wv{};
            wv.nodeId = ua::numericNodeId(1, 2001 + (i % 3));
            wv.attributeId = 13;
            wv.indexRange = ua::nullString();
            wv.value.mask = UAPLEX_DATAVALUE_VALUE;
            wv.value.value = ua::variantArray(ua::BuiltinType::Int32, 100, elements.data());
            ua::WriteRequest w{};
            w.nodesToWrite = {1, &wv};
            services::ServiceCall wc{arena, nullptr, enc::dataTypeOf<ua::WriteRequest>(), &w};
            if (s.services->write(wc) != UAPLEX_Good) ++bad;
            ua::ReadValueId rv{};
            rv.nodeId = ua::numericNodeId(1, 2001 + ((i + 1) % 3));
            rv.attributeId = 13;
            rv.indexRange = ua::nullString();
            rv.dataEncoding.name = ua::nullString();
            ua::ReadRequest r{};
            r.nodesToRead = {1, &rv};
            services::ServiceCall rc{arena, nullptr, enc::dataTypeOf<ua::ReadRequest>(), &r};
            if (s.services->read(rc) != UAPLEX_Good) {
                ++bad;
                continue;
            }
            const ua::Variant& v = static_cast<ua::ReadResponse*>(rc.response)->results[0].value;
            auto* p = static_cast<std::int32_t*>(v.value.pointer);
            if (v.array_length != 100 ||
                !std::all_of(p, p + 100, [&](std::int32_t x) { return x == p[0]; }))
                ++bad;
            ++reads;
        }
    };
    std::thread a(worker, 1), b(worker, 2), c(worker, 3);
    a.join();
    b.join();
    c.join();
    CHECK(bad.load() == 0);
    CHECK(reads.load() == 6000);
}
