// SPDX-License-Identifier: Apache-2.0
// Methods of nodes a plugin does not own (host API method_bind): by a method's NodeId, by a
// type's method for every instance of the type and its subtypes, found through the type
// hierarchy; arguments checked against InputArguments first, a result per argument.
#include <catch2/catch.hpp>

#include <uaplex/host/host_api.hpp>
#include "support/services_fixture.hpp"

using namespace uaplex;

namespace {

std::string probe() {
    return std::string("[plugins.svc-probe]\nlibrary = \"") + UAPLEX_PROBE_PLUGIN + "\"\n";
}

ua::NodeId n0(std::uint32_t id) {
    return ua::numericNodeId(0, id);
}

ua::CallMethodResult callMethod(test::Server& s, const ua::NodeId& object, const ua::NodeId& method,
                                std::vector<ua::Variant> inputs) {
    auto* in = s.arena.allocateArray<ua::Variant>(inputs.size());
    for (std::size_t i = 0; i < inputs.size(); ++i) in[i] = inputs[i];
    auto* m = s.arena.allocateArray<ua::CallMethodRequest>(1);
    *m = ua::CallMethodRequest{};
    m->objectId = object;
    m->methodId = method;
    m->inputArguments = {std::int32_t(inputs.size()), in};
    ua::CallRequest req{};
    req.methodsToCall = {1, m};
    ua::CallResponse* resp = nullptr;
    REQUIRE(s.call(req, resp) == UAPLEX_Good);
    return resp->results[0];
}

struct Probe {
    test::Server s{"", probe()};
    std::uint16_t ns = s.namespaceIndex("urn:uaplex:probe");
    ua::NodeId id(std::string_view name) const { return ua::stringNodeId(ns, name); }
};

}  // namespace

TEST_CASE("Call: a type's bound method runs on instances of subtypes and on their copies") {
    Probe p;
    ua::NodeId instance = p.id("Instance"), calibrate = p.id("ProbeType.Calibrate");
    // Instance is a ProbeSubType; Calibrate is a component of the supertype ProbeType only.
    ua::CallMethodResult r =
        callMethod(p.s, instance, calibrate, {ua::variantDouble(2.5), ua::variantUInt32(4)});
    REQUIRE(r.statusCode == UAPLEX_Good);
    REQUIRE(r.outputArguments.size() == 1);
    CHECK(r.outputArguments[0].value.double_ == 10.0);
    // The instance's own copy (same BrowseName) runs the type's implementation too.
    r = callMethod(p.s, instance, p.id("Instance.Calibrate"),
                   {ua::variantDouble(3), ua::variantUInt32(3)});
    REQUIRE(r.statusCode == UAPLEX_Good);
    CHECK(r.outputArguments[0].value.double_ == 9.0);
    // Not a component of Other or of its type.
    CHECK(callMethod(p.s, p.id("Other"), calibrate, {ua::variantDouble(1), ua::variantUInt32(1)})
              .statusCode == UAPLEX_BadMethodInvalid);
    // A bound method is executable, although the node says otherwise.
    CHECK(p.s.read(calibrate, 21).value.value.boolean == false);  // bound by type only
    CHECK(p.s.read(p.id("Probe.Checked"), 21).value.value.boolean == true);
    CHECK(p.s.read(p.id("Probe.Checked"), 22).value.value.boolean == true);
}

TEST_CASE("Call: per-argument results from the plugin and from the kernel's checks") {
    Probe p;
    ua::NodeId instance = p.id("Instance"), calibrate = p.id("ProbeType.Calibrate");
    ua::CallMethodResult r =
        callMethod(p.s, instance, calibrate, {ua::variantDouble(11), ua::variantUInt32(1)});
    CHECK(r.statusCode == UAPLEX_BadInvalidArgument);
    REQUIRE(r.inputArgumentResults.size() == 2);
    CHECK(r.inputArgumentResults[0] == UAPLEX_BadOutOfRange);
    CHECK(r.inputArgumentResults[1] == UAPLEX_Good);
    CHECK(r.outputArguments.size() == 0);

    // The kernel checks count and types before the plugin runs.
    CHECK(callMethod(p.s, instance, calibrate, {ua::variantDouble(1)}).statusCode ==
          UAPLEX_BadArgumentsMissing);
    CHECK(callMethod(p.s, instance, calibrate,
                     {ua::variantDouble(1), ua::variantUInt32(1), ua::variantUInt32(1)})
              .statusCode == UAPLEX_BadTooManyArguments);
    r = callMethod(p.s, instance, calibrate, {ua::variantDouble(1), ua::variantInt32(1)});
    CHECK(r.statusCode == UAPLEX_BadInvalidArgument);
    REQUIRE(r.inputArgumentResults.size() == 2);
    CHECK(r.inputArgumentResults[0] == UAPLEX_Good);
    CHECK(r.inputArgumentResults[1] == UAPLEX_BadTypeMismatch);

    // By NodeId: the plugin returns Good with rejected inputs; the kernel answers
    // BadInvalidArgument and both wrong inputs.
    ua::NodeId probe = p.id("Probe"), checked = p.id("Probe.Checked");
    r = callMethod(p.s, probe, checked, {ua::variantString(""), ua::variantInt32(11)});
    CHECK(r.statusCode == UAPLEX_BadInvalidArgument);
    REQUIRE(r.inputArgumentResults.size() == 2);
    CHECK(r.inputArgumentResults[0] == UAPLEX_BadInvalidArgument);
    CHECK(r.inputArgumentResults[1] == UAPLEX_BadOutOfRange);
    r = callMethod(p.s, probe, checked, {ua::variantString("pump"), ua::variantInt32(3)});
    REQUIRE(r.statusCode == UAPLEX_Good);
    REQUIRE(r.outputArguments.size() == 1);
    CHECK(ua::view(r.outputArguments[0].value.string) == "pump");
}

TEST_CASE("Call: a standard method of a supertype (Acknowledge) on a condition instance") {
    Probe p;
    // Alarm is an AlarmConditionType; Acknowledge (i=9111) is a component of the supertype
    // AcknowledgeableConditionType, which the probe implements for all its instances.
    static std::uint8_t eventId[4] = {1, 2, 3, 4};
    ua::Variant id = ua::makeVariant(ua::BuiltinType::ByteString);
    id.value.bytestring = ua::ByteString{4, eventId};
    static ua::LocalizedText comment = ua::makeLocalizedText("en", "seen");
    ua::Variant text = ua::makeVariant(ua::BuiltinType::LocalizedText);
    text.value.pointer = &comment;
    ua::CallMethodResult r = callMethod(p.s, p.id("Alarm"), n0(9111), {id, text});
    CHECK(r.statusCode == UAPLEX_Good);
    // Arguments of the ns0 method are checked against its InputArguments too.
    r = callMethod(p.s, p.id("Alarm"), n0(9111), {text, text});
    CHECK(r.statusCode == UAPLEX_BadInvalidArgument);
    REQUIRE(r.inputArgumentResults.size() == 2);
    CHECK(r.inputArgumentResults[0] == UAPLEX_BadTypeMismatch);
    // Not on an Object outside the type hierarchy.
    CHECK(callMethod(p.s, p.id("Other"), n0(9111), {id, text}).statusCode ==
          UAPLEX_BadMethodInvalid);
}

TEST_CASE("Call: the type hierarchy walk ends on a HasSubtype cycle") {
    Probe p;
    // Looped's type LoopB and LoopA are each other's supertype; Calibrate is in neither.
    CHECK(callMethod(p.s, p.id("Looped"), p.id("ProbeType.Calibrate"),
                     {ua::variantDouble(1), ua::variantUInt32(1)})
              .statusCode == UAPLEX_BadMethodInvalid);
}

TEST_CASE("method_bind: refusals, and nothing once the server runs") {
    Probe p;
    ua::DataValue dv = p.s.read(p.id("BindStatuses"));
    REQUIRE(dv.value.array_length == 5);
    const auto* st = static_cast<const ua::StatusCode*>(dv.value.value.pointer);
    CHECK(st[0] == UAPLEX_BadEntryExists);       // the same method twice
    CHECK(st[1] == UAPLEX_BadNodeClassInvalid);  // an Object is no Method
    CHECK(st[2] == UAPLEX_BadEntryExists);       // a method with its own implementation
    CHECK(st[3] == UAPLEX_BadEntryExists);       // the same type method twice
    CHECK(st[4] == UAPLEX_BadNodeClassInvalid);  // an Object is no ObjectType

    const uaplex_host_api* api = host::hostApiTable();
    REQUIRE(UAPLEX_HAS_FIELD(api, uaplex_host_api, method_bind));
    uaplex_plugin_ctx ctx;
    ctx.name = "probe";
    ctx.services = &p.s.host.services();
    ua::NodeId m = p.id("Probe.Checked");
    uaplex_method_spec spec{};
    spec.hdr = UAPLEX_HEADER_INIT(uaplex_method_spec, UAPLEX_STYPE_METHOD_SPEC);
    spec.method_id = &m;
    CHECK(api->method_bind(&ctx, &spec) == UAPLEX_BadInvalidArgument);  // no call
    CHECK(api->method_bind(&ctx, nullptr) == UAPLEX_BadInvalidArgument);
    spec.method_id = nullptr;
    CHECK(api->method_bind(&ctx, &spec) == UAPLEX_BadInvalidArgument);
    spec.method_id = &m;
    spec.call = [](void*, const uaplex_nodeid*, const uaplex_nodeid*, size_t, const uaplex_variant*,
                   const uaplex_value_alloc*, uaplex_status*, size_t*,
                   uaplex_variant**) -> uaplex_status { return UAPLEX_Good; };
    ua::NodeId other = p.id("Other.Method");
    spec.method_id = &other;
    CHECK(api->method_bind(&ctx, &spec) == UAPLEX_BadInvalidState);
    spec.hdr.struct_size = offsetof(uaplex_method_spec, user);  // shorter than 1.7's
    CHECK(api->method_bind(&ctx, &spec) == UAPLEX_BadInvalidArgument);
}
