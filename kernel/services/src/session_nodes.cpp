// SPDX-License-Identifier: Apache-2.0
// The SessionDiagnosticsObject of each session (Part 5 6.3.4, 6.3.5) under
// Server.ServerDiagnostics.SessionsDiagnosticsSummary. Nothing of them is stored: a lookup of
// one of their NodeIds asks the session table (through the server's DiagnosedSessionsFn) and
// answers from the image's placeholder tree (attributes, references) and the server's rows
// of that session (values), so they come and go with the sessions and need no change of the
// sealed address space. Only a NodeId of namespace 1 that the store does not hold is parsed.
#include <uaplex/encoding/generated/ns0.hpp>
#include <uaplex/encoding/generated/types.hpp>
#include <uaplex/encoding/guid_text.hpp>

#include <algorithm>
#include <cctype>
#include <cstring>

#include "services_internal.hpp"

namespace uaplex::services {

namespace {

namespace n0 = ua::ns0;

// SessionsDiagnosticsSummaryType's <ClientName> (OptionalPlaceholder): the shape of each.
constexpr std::uint32_t kPlaceholder = n0::SessionsDiagnosticsSummaryType_ClientName_Placeholder;
constexpr std::uint32_t kSummary = n0::Server_ServerDiagnostics_SessionsDiagnosticsSummary;
constexpr std::uint32_t kSessionArray =
    n0::Server_ServerDiagnostics_SessionsDiagnosticsSummary_SessionDiagnosticsArray;
constexpr std::uint32_t kSecurityArray =
    n0::Server_ServerDiagnostics_SessionsDiagnosticsSummary_SessionSecurityDiagnosticsArray;
constexpr std::uint32_t kSubscriptionArray =
    n0::Server_ServerDiagnostics_SubscriptionDiagnosticsArray;
constexpr std::uint32_t kHasModellingRule = 37;

bool hexNibble(char c, unsigned& v) noexcept {
    if (c >= '0' && c <= '9') {
        v = unsigned(c - '0');
    } else if (c >= 'a' && c <= 'f') {
        v = unsigned(c - 'a' + 10);
    } else if (c >= 'A' && c <= 'F') {
        v = unsigned(c - 'A' + 10);
    } else {
        return false;
    }
    return true;
}

// "XXXXXXXX-XXXX-XXXX-XXXX-XXXXXXXXXXXX" (Part 6 5.1.3), either case.
bool parseGuid(std::string_view s, ua::Guid& g) noexcept {
    if (s.size() != enc::kGuidTextSize) return false;
    std::size_t i = 0;
    auto take = [&](int digits, std::uint64_t& out) {
        out = 0;
        for (int d = 0; d < digits; ++d) {
            unsigned v = 0;
            if (!hexNibble(s[i++], v)) return false;
            out = (out << 4) | v;
        }
        return true;
    };
    auto dash = [&] { return s[i++] == '-'; };
    std::uint64_t a = 0, b = 0, c = 0, x = 0;
    if (!take(8, a) || !dash() || !take(4, b) || !dash() || !take(4, c) || !dash()) return false;
    g.data1 = std::uint32_t(a);
    g.data2 = std::uint16_t(b);
    g.data3 = std::uint16_t(c);
    for (int k = 0; k < 8; ++k) {
        if (k == 2 && !dash()) return false;
        if (!take(2, x)) return false;
        g.data4[k] = std::uint8_t(x);
    }
    return true;
}

// The row structure of a Server array whose members the nodes below its variable show.
const enc::DataType* rowType(std::uint32_t array) noexcept {
    if (array == kSessionArray) return enc::dataTypeOf<ua::SessionDiagnosticsDataType>();
    if (array == kSecurityArray) return enc::dataTypeOf<ua::SessionSecurityDiagnosticsDataType>();
    return nullptr;
}

// A member of a row (in the arena) as a Variant pointing to it.
bool memberValue(enc::Arena& arena, const enc::FieldDescriptor& f, const std::uint8_t* p,
                 ua::Variant& out) noexcept {
    if (f.kind == enc::FieldKind::Structure) {
        if (f.isArray || f.type == nullptr) return false;
        auto* eo = arena.allocateArray<ua::ExtensionObject>(1);
        if (eo == nullptr) return false;
        *eo = ua::ExtensionObject{};
        eo->type_id = ua::numericNodeId(0, f.type->binaryEncodingId);
        eo->encoding = UAPLEX_EXTENSIONOBJECT_BINARY;
        eo->data_type = f.type;
        eo->object = const_cast<std::uint8_t*>(p);
        eo->body = ua::nullByteString();
        out = ua::makeVariant(ua::BuiltinType::ExtensionObject);
        out.value.pointer = eo;
        return true;
    }
    if (f.kind == enc::FieldKind::Enumeration) {
        if (f.isArray || f.type == nullptr) return false;
        // Stored as its underlying integer of builtinId bytes; the values are not negative.
        std::int64_t v = 0;
        if (f.type->builtinId == 1) {
            std::uint8_t x = 0;
            std::memcpy(&x, p, 1);
            v = x;
        } else if (f.type->builtinId == 2) {
            std::uint16_t x = 0;
            std::memcpy(&x, p, 2);
            v = x;
        } else if (f.type->builtinId == 8) {
            std::memcpy(&v, p, 8);
        } else {
            std::int32_t x = 0;
            std::memcpy(&x, p, 4);
            v = x;
        }
        out = ua::variantInt32(std::int32_t(v));
        return true;
    }
    const auto type = static_cast<ua::BuiltinType>(f.kind);
    if (f.isArray) {
        ua::Array<std::uint8_t> a{};
        std::memcpy(&a, p, sizeof a);
        out = ua::variantArray(type, a.length, a.data);
        return true;
    }
    out = ua::makeVariant(type);
    const std::uint8_t id = std::uint8_t(f.kind);
    const bool inline_ =
        (id >= UAPLEX_TYPE_BOOLEAN && id <= UAPLEX_TYPE_XMLELEMENT) || id == UAPLEX_TYPE_STATUSCODE;
    if (inline_)
        std::memcpy(&out.value, p, uaplex_builtin_size(id));
    else
        out.value.pointer = const_cast<std::uint8_t*>(p);
    return true;
}

}  // namespace

SessionNodes::SessionNodes(const AddressSpace& space) {
    NodeRef object = space.find(ua::numericNodeId(0, kPlaceholder));
    if (!object) return;
    entries_.push_back(Entry{kPlaceholder, -1, {}, kSummary, nullptr, object.nodeClass()});
    std::vector<std::uint32_t> children;
    for (std::size_t i = 0; i < entries_.size(); ++i) {
        const Entry parent = entries_[i];       // a copy: entries_ grows below
        if (parent.field != nullptr) continue;  // members have no members of their own here
        children.clear();
        space.forEachReference(
            space.find(ua::numericNodeId(0, parent.id)),
            [&](std::uint32_t type, bool forward, const ua::NodeId& target) {
                if (forward &&
                    (type == addressspace::kHasComponent || type == addressspace::kHasProperty) &&
                    target.namespace_index == 0 && target.identifier_type == UAPLEX_ID_NUMERIC)
                    children.push_back(target.identifier.numeric);
            });
        for (std::uint32_t id : children) {
            NodeRef c = space.find(ua::numericNodeId(0, id));
            if (!c) continue;
            const std::string_view name = ua::view(space.browseNameOf(c).name);
            if (name.empty()) continue;
            Entry e;
            e.id = id;
            e.parent = std::int32_t(i);
            e.path =
                parent.path.empty() ? std::string(name) : parent.path + "." + std::string(name);
            e.nodeClass = c.nodeClass();
            if (i == 0) {
                if (name == "SessionDiagnostics")
                    e.array = kSessionArray;
                else if (name == "SessionSecurityDiagnostics")
                    e.array = kSecurityArray;
                else if (name == "SubscriptionDiagnosticsArray")
                    e.array = kSubscriptionArray;
                else
                    continue;  // nothing the server keeps
            } else {
                const enc::DataType* row = rowType(parent.array);
                if (row == nullptr) continue;
                std::string member(name);
                member[0] = char(std::tolower(static_cast<unsigned char>(member[0])));
                e.field = row->field(member);
                if (e.field == nullptr) continue;  // a component the row does not have
                e.array = parent.array;
            }
            entries_.push_back(std::move(e));
        }
    }
}

bool SessionNodes::parse(const ua::NodeId& id, ua::Guid& session,
                         std::uint32_t& entry) const noexcept {
    if (entries_.empty() || id.namespace_index != 1) return false;
    if (id.identifier_type == UAPLEX_ID_GUID) {
        session = id.identifier.guid;
        entry = 0;
        return true;
    }
    if (id.identifier_type != UAPLEX_ID_STRING) return false;
    const std::int32_t n = id.identifier.string.length;
    if (n <= std::int32_t(enc::kGuidTextSize) + 1 || id.identifier.string.data == nullptr)
        return false;
    const std::string_view s(id.identifier.string.data, std::size_t(n));
    if (s[enc::kGuidTextSize] != '.' || !parseGuid(s.substr(0, enc::kGuidTextSize), session))
        return false;
    const std::string_view path = s.substr(enc::kGuidTextSize + 1);
    for (std::size_t i = 1; i < entries_.size(); ++i)
        if (entries_[i].path == path) {
            entry = std::uint32_t(i);
            return true;
        }
    return false;
}

bool SessionNodes::nodeId(enc::Arena& arena, const ua::Guid& session, std::uint32_t entry,
                          ua::NodeId& out) const noexcept {
    out = ua::NodeId{};
    out.namespace_index = 1;
    if (entry == 0) {
        out.identifier_type = UAPLEX_ID_GUID;
        out.identifier.guid = session;
        return true;
    }
    const std::string& path = entries_[entry].path;
    const std::size_t size = enc::kGuidTextSize + 1 + path.size();
    char* text = arena.allocateArray<char>(size);
    if (text == nullptr) return false;
    enc::formatGuid(session, std::span<char, enc::kGuidTextSize>(text, enc::kGuidTextSize),
                    enc::HexCase::Lower);
    text[enc::kGuidTextSize] = '.';
    std::memcpy(text + enc::kGuidTextSize + 1, path.data(), path.size());
    out.identifier_type = UAPLEX_ID_STRING;
    out.identifier.string = ua::String{std::int32_t(size), text};
    return true;
}

std::int32_t SessionNodes::entryOf(std::uint32_t id) const noexcept {
    for (std::size_t i = 0; i < entries_.size(); ++i)
        if (entries_[i].id == id) return std::int32_t(i);
    return -1;
}

bool ServiceSet::Impl::sessionDiagnosed(const ua::Guid& session, enc::Arena& arena,
                                        ua::String* name) const noexcept {
    if (!counters.diagnosticsEnabled.load(std::memory_order_relaxed)) return false;
    auto fn = diagnosedSessions.load(std::memory_order_acquire);
    if (fn == nullptr) return false;
    ua::Guid found{};
    ua::String n = ua::nullString();
    if (fn(diagnosticsArraysUser, &session, arena, &found, &n, 1) != 1) return false;
    if (name != nullptr) *name = n;
    return true;
}

std::uint32_t ServiceSet::Impl::nodePermissions(const session::AccessView* access,
                                                const ua::NodeId& id) const noexcept {
    if (access == nullptr) return config::kAllPermissions;
    SessionNodeRef ref;
    if (isSessionNode(id, ref))
        return access->permissions(ua::numericNodeId(0, sessionNodes->entry(ref.entry).array));
    return access->permissions(id);
}

ua::NodeId ServiceSet::Impl::sessionNodeType(const ua::NodeId& id) const noexcept {
    SessionNodeRef ref;
    if (!isSessionNode(id, ref)) return ua::NodeId{};
    return space.typeDefinitionOf(
        space.find(ua::numericNodeId(0, sessionNodes->entry(ref.entry).id)));
}

void ServiceSet::Impl::readSessionNode(enc::Arena& arena, const ua::NodeId& id,
                                       const SessionNodeRef& ref, std::uint32_t attr,
                                       const ua::String& indexRange, std::int32_t timestamps,
                                       ua::DataValue& out,
                                       const session::AccessView* access) noexcept {
    auto fail = [&](uaplex_status st) {
        out = ua::DataValue{};
        out.mask = UAPLEX_DATAVALUE_STATUS;
        out.status = st;
    };
    const SessionNodes::Entry& e = sessionNodes->entry(ref.entry);
    const std::uint32_t perms = nodePermissions(access, id);
    if (!(perms & session::kPermBrowse)) return fail(UAPLEX_BadNodeIdUnknown);
    ua::String name = ua::nullString();
    if (!sessionDiagnosed(ref.session, arena, &name)) return fail(UAPLEX_BadNodeIdUnknown);
    const ua::NodeId shape = ua::numericNodeId(0, e.id);

    if (attr == kAttrValue && e.nodeClass == addressspace::kVariable) {
        IndexRange range;
        if (parseIndexRange(indexRange, range) != UAPLEX_Good)
            return fail(UAPLEX_BadIndexRangeInvalid);
        if (!(perms & session::kPermRead)) return fail(UAPLEX_BadUserAccessDenied);
        auto fn = diagnosticsArrays.load(std::memory_order_acquire);
        if (fn == nullptr) return fail(UAPLEX_BadNodeIdUnknown);
        ua::Variant rows = ua::variantArray(ua::BuiltinType::ExtensionObject, 0, nullptr);
        fn(diagnosticsArraysUser, e.array, &ref.session, arena, rows);
        out = ua::DataValue{};
        out.mask = UAPLEX_DATAVALUE_VALUE;
        if (e.array == n0::Server_ServerDiagnostics_SubscriptionDiagnosticsArray) {
            out.value = rows;  // this session's subscriptions
        } else {
            if (rows.array_length < 1 || rows.value.pointer == nullptr)
                return fail(UAPLEX_BadNodeIdUnknown);  // closed meanwhile
            auto* row = static_cast<ua::ExtensionObject*>(rows.value.pointer);
            if (e.field == nullptr) {
                out.value = ua::makeVariant(ua::BuiltinType::ExtensionObject);
                out.value.value.pointer = row;
            } else if (row->object == nullptr ||
                       !memberValue(arena, *e.field,
                                    static_cast<const std::uint8_t*>(row->object) + e.field->offset,
                                    out.value)) {
                return fail(UAPLEX_BadOutOfMemory);
            }
        }
        finishValueRead(arena, UAPLEX_Good, range, timestamps, out);
        return;
    }
    // Every other attribute is the placeholder's, but for the object's names and each
    // node's own NodeId.
    readAttribute(arena, shape, attr, indexRange, timestamps, out, nullptr);
    if ((out.mask & UAPLEX_DATAVALUE_STATUS) && out.status != UAPLEX_Good) return;
    switch (attr) {
        case kAttrNodeId: {
            ua::NodeId own{};
            ua::NodeId* boxed = nullptr;
            if (!sessionNodes->nodeId(arena, ref.session, ref.entry, own) ||
                (boxed = arenaNew(arena, own)) == nullptr)
                return fail(UAPLEX_BadOutOfMemory);
            out.value = ua::makeVariant(ua::BuiltinType::NodeId);
            out.value.value.pointer = boxed;
            break;
        }
        case kAttrBrowseName:
            if (ref.entry == 0) {
                auto* q = arenaNew(arena, ua::QualifiedName{1, name});
                if (q == nullptr) return fail(UAPLEX_BadOutOfMemory);
                out.value.value.pointer = q;
            }
            break;
        case kAttrDisplayName:
            if (ref.entry == 0) {
                auto* t = arenaNew(
                    arena, ua::LocalizedText{UAPLEX_LOCALIZEDTEXT_TEXT, ua::nullString(), name});
                if (t == nullptr) return fail(UAPLEX_BadOutOfMemory);
                out.value.value.pointer = t;
            }
            break;
        case kAttrUserAccessLevel:
            // Read only, and only with the array's Read permission.
            out.value.value.byte &= std::uint8_t(~0x02u);
            if (!(perms & session::kPermRead)) out.value.value.byte &= std::uint8_t(~0x01u);
            break;
        default:
            break;
    }
}

bool ServiceSet::Impl::sessionNodeReferences(enc::Arena& arena, const SessionNodeRef& ref,
                                             std::vector<BrowseHit>& hits) const {
    if (!sessionDiagnosed(ref.session, arena, nullptr)) return false;
    const SessionNodes::Entry& e = sessionNodes->entry(ref.entry);
    NodeRef shape = space.find(ua::numericNodeId(0, e.id));
    bool full = false;
    space.forEachReference(shape, [&](std::uint32_t type, bool forward, const ua::NodeId& target) {
        if (type == kHasModellingRule || full) return;
        NodeRef t = space.find(target);
        const std::uint8_t nc = t ? t.nodeClass() : 0;
        if (type == addressspace::kHasTypeDefinition) {
            if (forward) hits.push_back(BrowseHit{type, true, target, nc});
            return;
        }
        const std::int32_t other =
            target.namespace_index == 0 && target.identifier_type == UAPLEX_ID_NUMERIC
                ? sessionNodes->entryOf(target.identifier.numeric)
                : -1;
        if (other >= 0) {
            const bool child = forward && sessionNodes->entry(std::uint32_t(other)).parent ==
                                              std::int32_t(ref.entry);
            const bool parent = !forward && other == e.parent;
            if (!child && !parent) return;
            ua::NodeId id{};
            if (!sessionNodes->nodeId(arena, ref.session, std::uint32_t(other), id)) {
                full = true;
                return;
            }
            hits.push_back(BrowseHit{type, forward, id, nc});
            return;
        }
        // The object's place: SessionsDiagnosticsSummary of the Server object, not the type.
        if (ref.entry == 0 && !forward && type == addressspace::kHasComponent)
            hits.push_back(
                BrowseHit{type, false, ua::numericNodeId(0, kSummary), addressspace::kObject});
    });
    if (full) throw std::bad_alloc();
    return true;
}

void ServiceSet::Impl::sessionObjectReferences(enc::Arena& arena,
                                               std::vector<BrowseHit>& hits) const {
    if (!sessionNodes || !counters.diagnosticsEnabled.load(std::memory_order_relaxed)) return;
    auto fn = diagnosedSessions.load(std::memory_order_acquire);
    if (fn == nullptr) return;
    // At most max_sessions of them: the table holds no more.
    const std::size_t capacity = std::max<std::uint32_t>(cfg.server.limits.max_sessions, 1);
    auto* guids = arena.allocateArray<ua::Guid>(capacity);
    auto* names = arena.allocateArray<ua::String>(capacity);
    if (guids == nullptr || names == nullptr) throw std::bad_alloc();
    const std::size_t n = fn(diagnosticsArraysUser, nullptr, arena, guids, names, capacity);
    for (std::size_t i = 0; i < n; ++i) {
        ua::NodeId id{};
        sessionNodes->nodeId(arena, guids[i], 0, id);
        hits.push_back(BrowseHit{addressspace::kHasComponent, true, id, addressspace::kObject});
    }
}

}  // namespace uaplex::services
