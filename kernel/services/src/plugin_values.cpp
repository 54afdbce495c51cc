// SPDX-License-Identifier: Apache-2.0
// What a node manager hands back (read results, Call outputs, browse targets, statuses),
// checked before the encoder walks it: the encoder trusts pointers and types, so a NULL
// behind a length, a type or identifier kind that does not exist, or a reserved severity
// becomes the operation's BadInternalError instead of a crash or a broken response. Sizes
// are not capped here: a value too large for the response is BadResponseTooLarge.
#include "services_internal.hpp"

#include <atomic>

#include <uaplex/host/logging.hpp>

namespace uaplex::services {

namespace {

constexpr int kMaxNesting = 8;  // Variants and DataValues inside one another

bool stringOk(const ua::String& s) noexcept {
    return s.length <= 0 || s.data != nullptr;
}
bool bytesOk(const ua::ByteString& s) noexcept {
    return s.length <= 0 || s.data != nullptr;
}

bool localizedTextOk(const ua::LocalizedText& t) noexcept {
    return stringOk(t.locale) && stringOk(t.text);
}

bool extensionObjectOk(const ua::ExtensionObject& e) noexcept {
    if (!pluginNodeIdOk(e.type_id)) return false;
    // A decoded body (object and data_type) is what the kernel gave the plugin; else the
    // encoder writes the encoding byte and the raw body.
    if (e.object != nullptr && e.data_type != nullptr) return true;
    return e.encoding <= UAPLEX_EXTENSIONOBJECT_XML && bytesOk(e.body);
}

bool diagnosticInfoOk(const ua::DiagnosticInfo& d, int depth) noexcept {
    if (depth > kMaxNesting || !stringOk(d.additional_info)) return false;
    return d.inner_diagnostic_info == nullptr ||
           diagnosticInfoOk(*d.inner_diagnostic_info, depth + 1);
}

bool dataValueOk(const ua::DataValue& v, int depth) noexcept;
bool variantOk(const ua::Variant& v, int depth) noexcept;

// Element i of type `type` at `p` (an array's elements, or a boxed scalar when n is 1).
bool elementsOk(std::uint8_t type, const void* p, std::int32_t n, int depth) noexcept {
    if (n <= 0) return true;
    if (p == nullptr) return false;
    auto each = [&](auto check, auto* typed) {
        for (std::int32_t i = 0; i < n; ++i)
            if (!check(typed[i])) return false;
        return true;
    };
    switch (type) {
        case UAPLEX_TYPE_STRING:
        case UAPLEX_TYPE_XMLELEMENT:
            return each(stringOk, static_cast<const ua::String*>(p));
        case UAPLEX_TYPE_BYTESTRING:
            return each(bytesOk, static_cast<const ua::ByteString*>(p));
        case UAPLEX_TYPE_NODEID:
            return each(pluginNodeIdOk, static_cast<const ua::NodeId*>(p));
        case UAPLEX_TYPE_EXPANDEDNODEID:
            return each(
                [](const ua::ExpandedNodeId& e) {
                    return pluginNodeIdOk(e.node_id) && stringOk(e.namespace_uri);
                },
                static_cast<const ua::ExpandedNodeId*>(p));
        case UAPLEX_TYPE_QUALIFIEDNAME:
            return each([](const ua::QualifiedName& q) { return stringOk(q.name); },
                        static_cast<const ua::QualifiedName*>(p));
        case UAPLEX_TYPE_LOCALIZEDTEXT:
            return each(localizedTextOk, static_cast<const ua::LocalizedText*>(p));
        case UAPLEX_TYPE_EXTENSIONOBJECT:
            return each(extensionObjectOk, static_cast<const ua::ExtensionObject*>(p));
        case UAPLEX_TYPE_DATAVALUE:
            return each([&](const ua::DataValue& d) { return dataValueOk(d, depth + 1); },
                        static_cast<const ua::DataValue*>(p));
        case UAPLEX_TYPE_VARIANT:
            return each([&](const ua::Variant& d) { return variantOk(d, depth + 1); },
                        static_cast<const ua::Variant*>(p));
        case UAPLEX_TYPE_DIAGNOSTICINFO:
            return each([&](const ua::DiagnosticInfo& d) { return diagnosticInfoOk(d, depth); },
                        static_cast<const ua::DiagnosticInfo*>(p));
        default:
            return true;  // fixed-size values: nothing behind them
    }
}

bool variantOk(const ua::Variant& v, int depth) noexcept {
    if (depth > kMaxNesting) return false;
    const std::uint8_t type = v.encoding & UAPLEX_VARIANT_TYPE_MASK;
    if (type == UAPLEX_TYPE_NULL) return true;
    if (type > UAPLEX_TYPE_DIAGNOSTICINFO) return false;
    if (v.encoding & UAPLEX_VARIANT_ARRAY) {
        if ((v.encoding & UAPLEX_VARIANT_ARRAY_DIMENSIONS) && v.dimensions_length > 0 &&
            v.dimensions == nullptr)
            return false;
        return elementsOk(type, v.value.pointer, v.array_length, depth);
    }
    if (v.encoding & UAPLEX_VARIANT_ARRAY_DIMENSIONS) return false;
    switch (type) {
        case UAPLEX_TYPE_STRING:
        case UAPLEX_TYPE_XMLELEMENT:
            return stringOk(v.value.string);
        case UAPLEX_TYPE_BYTESTRING:
            return bytesOk(v.value.bytestring);
        default:
            break;
    }
    // Boxed scalars: one element behind value.pointer, which must be there.
    if (uaplex_builtin_boxed(type))
        return v.value.pointer != nullptr && elementsOk(type, v.value.pointer, 1, depth);
    return true;
}

bool dataValueOk(const ua::DataValue& v, int depth) noexcept {
    if ((v.mask & UAPLEX_DATAVALUE_STATUS) && !pluginStatusOk(v.status)) return false;
    return !(v.mask & UAPLEX_DATAVALUE_VALUE) || variantOk(v.value, depth);
}

}  // namespace

void noteThrowingCallback(const char* what) noexcept {
    static std::atomic<bool> logged{false};
    if (logged.exchange(true, std::memory_order_relaxed)) return;
    try {
        host::logger()->error(
            "a plugin's store {} callback threw an exception into the kernel: answered "
            "BadInternalError (wrap C++ callbacks with the SDK's uaplex::sdk::Guarded, "
            "ValueRead, ValueWrite or MethodRun; later exceptions are not logged)",
            what);
    } catch (...) {  // NOLINT(bugprone-empty-catch): logging is best effort here
    }
}

bool pluginStatusOk(uaplex_status status) noexcept {
    return (status & 0xC0000000u) != 0xC0000000u;  // severity 11 is reserved (Part 4 7.39)
}

bool pluginNodeIdOk(const ua::NodeId& id) noexcept {
    switch (id.identifier_type) {
        case UAPLEX_ID_NUMERIC:
        case UAPLEX_ID_GUID:
            return true;
        case UAPLEX_ID_STRING:
            return stringOk(id.identifier.string);
        case UAPLEX_ID_BYTESTRING:
            return bytesOk(id.identifier.bytestring);
        default:
            return false;
    }
}

bool pluginVariantOk(const ua::Variant& v) noexcept {
    return variantOk(v, 0);
}

bool pluginDataValueOk(const ua::DataValue& v) noexcept {
    return dataValueOk(v, 0);
}

}  // namespace uaplex::services
