// SPDX-License-Identifier: Apache-2.0
// Writes of attributes other than Value: the node's WriteMask and the session's UserWriteMask
// decide (Part 3 5.2.7, 5.2.8), in the store and for a plugin's own namespace; a written
// DisplayName is what Read and Browse return, also while other threads read it.
#include <catch2/catch.hpp>

#include <atomic>
#include <cmath>
#include <thread>

#include "support/services_fixture.hpp"

using namespace uaplex;

namespace {

std::string probe() {
    return std::string("[plugins.svc-probe]\nlibrary = \"") + UAPLEX_PROBE_PLUGIN + "\"\n";
}

constexpr std::uint32_t kBrowseName = 3, kDisplayName = 4, kDescription = 5, kWriteMask = 6,
                        kUserWriteMask = 7, kEventNotifier = 12, kValue = 13, kDataType = 14,
                        kValueRank = 15, kArrayDimensions = 16, kAccessLevel = 17,
                        kUserAccessLevel = 18, kMinimumSamplingInterval = 19, kHistorizing = 20,
                        kAccessLevelEx = 27;

ua::Variant text(ua::LocalizedText& storage, std::string_view locale, std::string_view t) {
    storage = ua::makeLocalizedText(locale, t);
    ua::Variant v = ua::makeVariant(ua::BuiltinType::LocalizedText);
    v.value.pointer = &storage;
    return v;
}

std::string_view textOf(const ua::DataValue& dv) {
    REQUIRE(dv.status == UAPLEX_Good);
    REQUIRE(ua::variantType(dv.value) == ua::BuiltinType::LocalizedText);
    return ua::view(static_cast<const ua::LocalizedText*>(dv.value.value.pointer)->text);
}

}  // namespace

TEST_CASE("Write: DisplayName, Description and WriteMask obey the node's WriteMask") {
    test::Server s("", probe());
    std::uint16_t ns = s.namespaceIndex("urn:uaplex:probe");
    ua::NodeId node = ua::stringNodeId(ns, "Writable");
    ua::LocalizedText lt{};
    REQUIRE(s.read(node, kWriteMask).value.value.uint32 == ((1u << 6) | (1u << 20)));

    CHECK(s.write(node, text(lt, "de", "Schreibbar"), {}, kDisplayName) == UAPLEX_Good);
    ua::DataValue dv = s.read(node, kDisplayName);
    CHECK(textOf(dv) == "Schreibbar");
    CHECK(ua::view(static_cast<const ua::LocalizedText*>(dv.value.value.pointer)->locale) == "de");
    // Browse shows the new name too.
    ua::BrowseResult r = s.browse(ua::stringNodeId(ns, "Probe"), 0, ua::BrowseDirection::Forward,
                                  ua::numericNodeId(0, 47));
    bool seen = false;
    for (const auto& ref : r.references)
        seen = seen || ua::view(ref.displayName.text) == "Schreibbar";
    CHECK(seen);

    // Description's bit is not set; BrowseName's neither; namespace 0 has no WriteMask.
    CHECK(s.write(node, text(lt, "", "changed"), {}, kDescription) == UAPLEX_BadNotWritable);
    CHECK(textOf(s.read(node, kDescription)) == "fixed");
    ua::QualifiedName qn{ns, ua::makeString("Other")};
    ua::Variant name = ua::makeVariant(ua::BuiltinType::QualifiedName);
    name.value.pointer = &qn;
    CHECK(s.write(node, name, {}, kBrowseName) == UAPLEX_BadNotWritable);
    CHECK(s.write(ua::numericNodeId(0, 85), text(lt, "", "x"), {}, kDisplayName) ==
          UAPLEX_BadNotWritable);
    // Wrong types, an IndexRange.
    CHECK(s.write(node, ua::variantString("plain"), {}, kDisplayName) == UAPLEX_BadTypeMismatch);
    // No IndexRange for attributes other than Value (Part 4 5.10.4), nor status/timestamps.
    CHECK(s.write(node, text(lt, "", "x"), "1", kDisplayName) == UAPLEX_BadWriteNotSupported);
    ua::WriteValue stamped{};
    stamped.nodeId = node;
    stamped.attributeId = kDisplayName;
    stamped.indexRange = ua::nullString();
    stamped.value.mask = UAPLEX_DATAVALUE_VALUE | UAPLEX_DATAVALUE_SOURCE_TIMESTAMP;
    stamped.value.value = text(lt, "", "stamped");
    stamped.value.source_timestamp = 1;
    CHECK(s.writeValue(stamped) == UAPLEX_BadWriteNotSupported);
    CHECK(s.write(node, ua::variantInt32(1), {}, kWriteMask) == UAPLEX_BadTypeMismatch);

    // Clearing the WriteMask closes DisplayName (and the WriteMask itself).
    CHECK(s.write(node, ua::variantUInt32(0), {}, kWriteMask) == UAPLEX_Good);
    CHECK(s.read(node, kWriteMask).value.value.uint32 == 0);
    CHECK(s.write(node, text(lt, "", "again"), {}, kDisplayName) == UAPLEX_BadNotWritable);
    CHECK(s.write(node, ua::variantUInt32(1u << 6), {}, kWriteMask) == UAPLEX_BadNotWritable);
    CHECK(textOf(s.read(node, kDisplayName)) == "Schreibbar");
}

TEST_CASE("Write: the UserWriteMask is the WriteMask restricted by the session's permissions") {
    test::Server s("", probe());
    std::uint16_t ns = s.namespaceIndex("urn:uaplex:probe");
    ua::NodeId node = ua::stringNodeId(ns, "Writable");
    config::AccessSection a;
    config::AccessRule look;
    look.namespace_uri = "urn:uaplex:probe";
    look.roles = {"Observer"};
    look.permissions = session::kPermBrowse | session::kPermRead | session::kPermWrite;
    config::AccessRule edit = look;
    edit.roles = {"Operator"};
    edit.permissions = look.permissions | session::kPermWriteAttribute;
    a.rules = {look, edit};
    session::AccessPolicy policy(a, s.services->namespaceUris());
    auto observer = policy.view(1u << config::roleIndex("Observer"));
    auto operatorView = policy.view(1u << config::roleIndex("Operator"));
    ua::LocalizedText lt{};

    s.access = observer.get();
    CHECK(s.read(node, kUserWriteMask).value.value.uint32 == 0);
    CHECK(s.write(node, text(lt, "", "observed"), {}, kDisplayName) == UAPLEX_BadUserAccessDenied);
    s.access = operatorView.get();
    CHECK(s.read(node, kUserWriteMask).value.value.uint32 == ((1u << 6) | (1u << 20)));
    CHECK(s.write(node, text(lt, "", "operated"), {}, kDisplayName) == UAPLEX_Good);
    s.access = nullptr;
    CHECK(textOf(s.read(node, kDisplayName)) == "operated");
}

TEST_CASE("Write: an owned namespace's attribute writes need the plugin's WriteMask bit") {
    test::Server s("", probe());
    std::uint16_t owned = s.namespaceIndex("urn:uaplex:probe-owned");
    ua::NodeId calls = ua::stringNodeId(owned, "Owned.Calls");
    ua::LocalizedText lt{};
    std::int32_t before = s.read(calls).value.value.int32;
    // Owned has no WriteMask bit: the plugin's write is not called (only its WriteMask read).
    CHECK(s.write(ua::stringNodeId(owned, "Owned"), text(lt, "", "x"), {}, kDisplayName) ==
          UAPLEX_BadNotWritable);
    CHECK(s.read(calls).value.value.int32 == before + 1);
    // Owned.Value's DisplayName is writable: the write reaches the plugin.
    CHECK(s.write(ua::stringNodeId(owned, "Owned.Value"), text(lt, "", "x"), {}, kDisplayName) ==
          UAPLEX_Good);
    CHECK(s.read(calls).value.value.int32 == before + 3);
    CHECK(textOf(s.read(ua::stringNodeId(owned, "Owned.Value"), kDisplayName)) == "x");
    // The kernel checks the attribute's type and refuses an IndexRange before the plugin.
    CHECK(s.write(ua::stringNodeId(owned, "Owned.Value"), ua::variantString("x"), {},
                  kDisplayName) == UAPLEX_BadTypeMismatch);
    CHECK(s.write(ua::stringNodeId(owned, "Owned.Value"), text(lt, "", "y"), "0", kDisplayName) ==
          UAPLEX_BadWriteNotSupported);
    CHECK(s.read(calls).value.value.int32 == before + 6);  // three WriteMask reads only
    // Without WriteAttribute neither the plugin's write nor its WriteMask read runs, and the
    // plugin's UserWriteMask is cut to what the session may do.
    config::AccessSection a;
    config::AccessRule look;
    look.namespace_uri = "urn:uaplex:probe-owned";
    look.roles = {"Observer"};
    look.permissions = session::kPermBrowse | session::kPermRead | session::kPermWrite;
    a.rules = {look};
    session::AccessPolicy policy(a, s.services->namespaceUris());
    auto observer = policy.view(1u << config::roleIndex("Observer"));
    s.access = observer.get();
    CHECK(s.write(ua::stringNodeId(owned, "Owned.Value"), text(lt, "", "z"), {}, kDisplayName) ==
          UAPLEX_BadUserAccessDenied);
    CHECK(s.read(ua::stringNodeId(owned, "Owned.Value"), kUserWriteMask).value.value.uint32 == 0);
    s.access = nullptr;
    CHECK(s.read(calls).value.value.int32 == before + 7);  // the UserWriteMask read
    CHECK(s.read(ua::stringNodeId(owned, "Owned.Value"), kUserWriteMask).value.value.uint32 ==
          (1u << 6));
}

TEST_CASE("Write: each attribute of a Variable whose WriteMask opens them all") {
    test::Server s("", probe());
    std::uint16_t ns = s.namespaceIndex("urn:uaplex:probe");
    ua::NodeId node = ua::stringNodeId(ns, "Editable");
    ua::LocalizedText lt{};
    auto byte = [](std::uint8_t b) {
        ua::Variant v = ua::makeVariant(ua::BuiltinType::Byte);
        v.value.byte = b;
        return v;
    };
    auto dbl = [](double d) {
        ua::Variant v = ua::makeVariant(ua::BuiltinType::Double);
        v.value.double_ = d;
        return v;
    };
    // Description, AccessLevel, UserAccessLevel, ValueRank, MinimumSamplingInterval.
    CHECK(s.write(node, text(lt, "en", "edited"), {}, kDescription) == UAPLEX_Good);
    CHECK(textOf(s.read(node, kDescription)) == "edited");
    CHECK(s.write(node, byte(1), {}, kAccessLevel) == UAPLEX_Good);
    CHECK(s.read(node, kAccessLevel).value.value.byte == 1);
    CHECK(s.read(node, kAccessLevelEx).value.value.uint32 == 1);
    CHECK(s.write(node, ua::variantInt32(5)) == UAPLEX_BadNotWritable);  // CurrentWrite gone
    CHECK(s.write(node, byte(3), {}, kAccessLevel) == UAPLEX_Good);
    CHECK(s.write(node, byte(1), {}, kUserAccessLevel) == UAPLEX_Good);
    CHECK(s.read(node, kUserAccessLevel).value.value.byte == 1);
    CHECK(s.write(node, ua::variantInt32(5)) == UAPLEX_BadUserAccessDenied);
    CHECK(s.write(node, byte(3), {}, kUserAccessLevel) == UAPLEX_Good);
    CHECK(s.write(node, ua::variantInt32(5)) == UAPLEX_Good);
    CHECK(s.write(node, ua::variantUInt32(3), {}, kAccessLevelEx) == UAPLEX_Good);
    CHECK(s.write(node, ua::variantInt32(1), {}, kValueRank) == UAPLEX_Good);
    CHECK(s.read(node, kValueRank).value.value.int32 == 1);
    CHECK(s.write(node, ua::variantInt32(5)) == UAPLEX_BadTypeMismatch);  // now an array
    CHECK(s.write(node, dbl(250), {}, kMinimumSamplingInterval) == UAPLEX_Good);
    CHECK(s.read(node, kMinimumSamplingInterval).value.value.double_ == 250);
    // Values out of the attribute's range.
    CHECK(s.write(node, byte(0x80), {}, kAccessLevel) == UAPLEX_BadOutOfRange);
    CHECK(s.write(node, ua::variantUInt32(1u << 8), {}, kAccessLevelEx) == UAPLEX_BadOutOfRange);
    CHECK(s.write(node, ua::variantInt32(-4), {}, kValueRank) == UAPLEX_BadOutOfRange);
    CHECK(s.write(node, dbl(-2), {}, kMinimumSamplingInterval) == UAPLEX_BadOutOfRange);
    CHECK(s.write(node, dbl(std::nan("")), {}, kMinimumSamplingInterval) == UAPLEX_BadOutOfRange);
    CHECK(s.write(node, ua::variantUInt32(1u << 26), {}, kWriteMask) == UAPLEX_BadOutOfRange);
    CHECK(s.read(node, kValueRank).value.value.int32 == 1);
    // Wrong types.
    CHECK(s.write(node, ua::variantInt32(1), {}, kAccessLevel) == UAPLEX_BadTypeMismatch);
    CHECK(s.write(node, byte(1), {}, kValueRank) == UAPLEX_BadTypeMismatch);
    // Open in the WriteMask, but not kept writable by the store: BadWriteNotSupported.
    ua::QualifiedName qn{ns, ua::makeString("Renamed")};
    ua::Variant name = ua::makeVariant(ua::BuiltinType::QualifiedName);
    name.value.pointer = &qn;
    CHECK(s.write(node, name, {}, kBrowseName) == UAPLEX_BadWriteNotSupported);
    ua::NodeId dt = ua::numericNodeId(0, 11);
    ua::Variant dataType = ua::makeVariant(ua::BuiltinType::NodeId);
    dataType.value.pointer = &dt;
    CHECK(s.write(node, dataType, {}, kDataType) == UAPLEX_BadWriteNotSupported);
    std::uint32_t dims[1] = {3};
    CHECK(s.write(node, ua::variantArray(ua::BuiltinType::UInt32, 1, dims), {}, kArrayDimensions) ==
          UAPLEX_BadWriteNotSupported);
    ua::Variant yes = ua::makeVariant(ua::BuiltinType::Boolean);
    yes.value.boolean = true;
    CHECK(s.write(node, yes, {}, kHistorizing) == UAPLEX_BadWriteNotSupported);
    CHECK(s.write(node, ua::variantUInt32(0), {}, kUserWriteMask) == UAPLEX_BadWriteNotSupported);
    // An attribute a Variable does not have.
    CHECK(s.write(node, byte(1), {}, kEventNotifier) == UAPLEX_BadAttributeIdInvalid);
}

TEST_CASE("Write: an Object's EventNotifier and a VariableType's default Value") {
    test::Server s("", probe());
    std::uint16_t ns = s.namespaceIndex("urn:uaplex:probe");
    ua::Variant one = ua::makeVariant(ua::BuiltinType::Byte);
    one.value.byte = 1;
    ua::NodeId notifier = ua::stringNodeId(ns, "Notifier");
    CHECK(s.read(notifier, kEventNotifier).value.value.byte == 0);
    CHECK(s.write(notifier, one, {}, kEventNotifier) == UAPLEX_Good);
    CHECK(s.read(notifier, kEventNotifier).value.value.byte == 1);
    one.value.byte = 2;  // a reserved bit
    CHECK(s.write(notifier, one, {}, kEventNotifier) == UAPLEX_BadOutOfRange);
    // Writable: the Probe object has no WriteMask bit.
    CHECK(s.write(ua::stringNodeId(ns, "Probe"), one, {}, kEventNotifier) == UAPLEX_BadNotWritable);

    ua::NodeId typed = ua::stringNodeId(ns, "Typed");
    CHECK(s.write(typed, ua::variantInt32(9)) == UAPLEX_Good);
    CHECK(s.read(typed).value.value.int32 == 9);
    CHECK(s.write(typed, ua::variantString("nine")) == UAPLEX_BadTypeMismatch);
    // ValueForVariableType is the only bit: the type's DisplayName stays.
    ua::LocalizedText lt{};
    CHECK(s.write(typed, text(lt, "", "x"), {}, kDisplayName) == UAPLEX_BadNotWritable);
    // Namespace 0's VariableTypes are constant.
    CHECK(s.write(ua::numericNodeId(0, 63), ua::variantInt32(1)) == UAPLEX_BadNotWritable);
}

TEST_CASE("Write: a DisplayName replaced while other threads read and browse it") {
    test::Server s("", probe());
    std::uint16_t ns = s.namespaceIndex("urn:uaplex:probe");
    ua::NodeId node = ua::stringNodeId(ns, "Writable");
    std::atomic<bool> stop{false};
    std::atomic<int> bad{0};
    // Readers use their own arenas: each sees one whole text or the other, never a mix.
    auto reader = [&] {
        enc::Arena arena;
        while (!stop.load()) {
            arena.reset();
            auto* item = arena.allocateArray<ua::ReadValueId>(1);
            *item = ua::ReadValueId{};
            item->nodeId = node;
            item->attributeId = kDisplayName;
            item->indexRange = ua::nullString();
            item->dataEncoding.name = ua::nullString();
            ua::ReadRequest req{};
            req.nodesToRead = {1, item};
            services::ServiceCall c{arena, nullptr, enc::dataTypeOf<ua::ReadRequest>(), &req};
            if (s.services->read(c) != UAPLEX_Good) {
                ++bad;
                continue;
            }
            const auto& dv = static_cast<ua::ReadResponse*>(c.response)->results[0];
            auto t = ua::view(static_cast<const ua::LocalizedText*>(dv.value.value.pointer)->text);
            if (t != "Writable" && t != "short" && t != std::string(200, 'L')) ++bad;
        }
    };
    std::thread r1(reader), r2(reader);
    const std::string longText(200, 'L');
    ua::LocalizedText lt{};
    for (int i = 0; i < 2000; ++i) {
        REQUIRE(s.write(node, text(lt, "", i % 2 ? std::string_view(longText) : "short"), {},
                        kDisplayName) == UAPLEX_Good);
        s.arena.reset();
    }
    stop = true;
    r1.join();
    r2.join();
    CHECK(bad.load() == 0);
}
