// SPDX-License-Identifier: Apache-2.0
#include <uaplex/subscription/event_filter.hpp>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>
#include <random>

#include <uaplex/encoding/guid_text.hpp>
#include <uaplex/subscription/queue_handlers.hpp>
#include <uaplex/subscription/value_cell.hpp>

namespace uaplex::subscription {

namespace {

using Op = ua::FilterOperator;
constexpr uint32_t kAttrNodeId = 1, kAttrValue = 13, kMaxAttributeId = 27;
constexpr uint32_t kOperatorCount = 18;  // Equals .. BitwiseOr
// Bounds what one where clause may cost per event: elements are evaluated once each
// (memoised), and no more than this many are accepted.
constexpr size_t kMaxWhereElements = 256;

const enc::DataType& variantType() {
    static const enc::DataType* t = enc::findDataType("Variant");
    return *t;
}

uint8_t typeOf(const ua::Variant& v) {
    return v.encoding & UAPLEX_VARIANT_TYPE_MASK;
}
bool isNull(const ua::Variant& v) {
    return typeOf(v) == 0 && !(v.encoding & UAPLEX_VARIANT_ARRAY);
}
bool scalar(const ua::Variant& v) {
    return !(v.encoding & UAPLEX_VARIANT_ARRAY);
}
ua::Variant boolean(bool b) {
    return ua::variantBoolean(b);
}

// Typed views of an operand object (ExtensionObject decoded by the kernel).
template <class T>
const T* as(const ua::ExtensionObject& eo) {
    return eo.object && eo.data_type == enc::dataTypeOf<T>() ? static_cast<const T*>(eo.object)
                                                             : nullptr;
}

bool sameName(const ua::QualifiedName& a, const ua::QualifiedName& b) {
    return a.namespace_index == b.namespace_index && ua::view(a.name) == ua::view(b.name);
}

// A deep copy of `value` in `arena`: encoded, the bytes kept in the arena (decoded strings
// and byte strings point into them), decoded there.
void* copyInto(enc::Arena& arena, const enc::DataType& type, const void* value) {
    enc::ByteBuffer buf;
    if (enc::encodeValue(buf, type, value) != UAPLEX_Good) return nullptr;
    auto* bytes = static_cast<uint8_t*>(arena.allocate(buf.size() ? buf.size() : 1, 8));
    if (!bytes) return nullptr;
    std::memcpy(bytes, buf.data(), buf.size());
    void* out = nullptr;
    if (enc::decodeValue({bytes, buf.size()}, arena, enc::DecodeLimits{}, type, &out) !=
        UAPLEX_Good)
        return nullptr;
    return out;
}

bool validIndexRange(std::string_view r) {
    if (r.empty()) return true;
    bool digit = false;
    for (char c : r) {
        if (c >= '0' && c <= '9')
            digit = true;
        else if (c == ':' || c == ',') {
            if (!digit) return false;
            digit = false;
        } else
            return false;
    }
    return digit;
}

// --- numbers and text after the implicit conversions (Part 4 7.7.3) ---------------------

enum class Kind { None, Signed, Unsigned, Real };
struct Number {
    Kind kind = Kind::None;
    int64_t s = 0;
    uint64_t u = 0;
    double d = 0;
};

Number numberOf(const ua::Variant& v) {
    Number n;
    if (!scalar(v)) return n;
    switch (ua::BuiltinType(typeOf(v))) {
        case ua::BuiltinType::Boolean:
            n = {Kind::Unsigned, 0, v.value.boolean ? 1u : 0u};
            break;
        case ua::BuiltinType::SByte:
            n = {Kind::Signed, v.value.sbyte};
            break;
        case ua::BuiltinType::Byte:
            n = {Kind::Unsigned, 0, v.value.byte};
            break;
        case ua::BuiltinType::Int16:
            n = {Kind::Signed, v.value.int16};
            break;
        case ua::BuiltinType::UInt16:
            n = {Kind::Unsigned, 0, v.value.uint16};
            break;
        case ua::BuiltinType::Int32:
            n = {Kind::Signed, v.value.int32};
            break;
        case ua::BuiltinType::UInt32:
            n = {Kind::Unsigned, 0, v.value.uint32};
            break;
        case ua::BuiltinType::StatusCode:
            n = {Kind::Unsigned, 0, v.value.statuscode};
            break;
        case ua::BuiltinType::Int64:
            n = {Kind::Signed, v.value.int64};
            break;
        case ua::BuiltinType::DateTime:
            n = {Kind::Signed, v.value.datetime};
            break;
        case ua::BuiltinType::UInt64:
            n = {Kind::Unsigned, 0, v.value.uint64};
            break;
        case ua::BuiltinType::Float:
            n.kind = Kind::Real, n.d = v.value.float_;
            break;
        case ua::BuiltinType::Double:
            n.kind = Kind::Real, n.d = v.value.double_;
            break;
        default:
            break;
    }
    return n;
}

Number parseNumber(std::string_view t) {
    Number n;
    while (!t.empty() && t.front() == ' ') t.remove_prefix(1);
    while (!t.empty() && t.back() == ' ') t.remove_suffix(1);
    if (t.empty()) return n;
    const char* e = t.data() + t.size();
    if (t == "true" || t == "false") return {Kind::Unsigned, 0, t == "true" ? 1u : 0u};
    int64_t s = 0;
    if (auto r = std::from_chars(t.data(), e, s); r.ec == std::errc() && r.ptr == e)
        return {Kind::Signed, s};
    uint64_t u = 0;
    if (auto r = std::from_chars(t.data(), e, u); r.ec == std::errc() && r.ptr == e)
        return {Kind::Unsigned, 0, u};
    double d = 0;
    if (auto r = std::from_chars(t.data(), e, d); r.ec == std::errc() && r.ptr == e) {
        n.kind = Kind::Real;
        n.d = d;
    }
    return n;
}

double real(const Number& n) {
    return n.kind == Kind::Real ? n.d : n.kind == Kind::Signed ? double(n.s) : double(n.u);
}

int compareNumbers(const Number& a, const Number& b) {
    if (a.kind == Kind::Real || b.kind == Kind::Real) {
        double x = real(a), y = real(b);
        if (std::isnan(x) || std::isnan(y)) return 2;
        return x < y ? -1 : x > y ? 1 : 0;
    }
    __int128 x = a.kind == Kind::Signed ? __int128(a.s) : __int128(a.u);
    __int128 y = b.kind == Kind::Signed ? __int128(b.s) : __int128(b.u);
    return x < y ? -1 : x > y ? 1 : 0;
}

// The text form of String-like values (String, LocalizedText, QualifiedName, NodeId, Guid).
bool textOf(const ua::Variant& v, std::string& out) {
    if (!scalar(v)) return false;
    out.clear();
    switch (ua::BuiltinType(typeOf(v))) {
        case ua::BuiltinType::String:
        case ua::BuiltinType::XmlElement:
            out.assign(ua::view(v.value.string));
            return true;
        case ua::BuiltinType::LocalizedText: {
            auto* lt = static_cast<const ua::LocalizedText*>(v.value.pointer);
            if (lt) out.assign(ua::view(lt->text));
            return true;
        }
        case ua::BuiltinType::QualifiedName: {
            auto* q = static_cast<const ua::QualifiedName*>(v.value.pointer);
            if (!q) return true;
            if (q->namespace_index) out = std::to_string(q->namespace_index) + ":";
            out.append(ua::view(q->name));
            return true;
        }
        case ua::BuiltinType::NodeId:
        case ua::BuiltinType::ExpandedNodeId: {
            auto* id = static_cast<const ua::NodeId*>(v.value.pointer);  // first member
            if (!id) return true;
            if (id->namespace_index) out = "ns=" + std::to_string(id->namespace_index) + ";";
            if (id->identifier_type == UAPLEX_ID_NUMERIC)
                out += "i=" + std::to_string(id->identifier.numeric);
            else if (id->identifier_type == UAPLEX_ID_STRING)
                out.append("s=").append(ua::view(id->identifier.string));
            else
                return false;
            return true;
        }
        case ua::BuiltinType::Guid: {
            out = enc::guidText(v.value.guid);
            return true;
        }
        default:
            return false;
    }
}

bool textual(uint8_t t) {
    switch (ua::BuiltinType(t)) {
        case ua::BuiltinType::String:
        case ua::BuiltinType::XmlElement:
        case ua::BuiltinType::LocalizedText:
        case ua::BuiltinType::QualifiedName:
        case ua::BuiltinType::NodeId:
        case ua::BuiltinType::ExpandedNodeId:
        case ua::BuiltinType::Guid:
            return true;
        default:
            return false;
    }
}

bool valueEquals(const ua::Variant& a, const ua::Variant& b) {
    return compareValues(a, b) == 0;
}

// --- the where clause -------------------------------------------------------------------

uint32_t operandCountOk(Op op, size_t n) {
    switch (op) {
        case Op::IsNull:
        case Op::Not:
        case Op::OfType:
        case Op::InView:
            return n == 1;
        case Op::Between:
            return n == 3;
        case Op::InList:
            return n >= 2;
        case Op::RelatedTo:
            return n == 6;
        default:
            return n == 2;
    }
}

// The checks of a SimpleAttributeOperand (select clause or where operand).
uaplex_status checkOperand(const ua::SimpleAttributeOperand& o, const EventTypeModel& model) {
    ua::NodeId type = o.typeDefinitionId;
    bool isObjectType = false, isDataType = false;
    if (!(type.namespace_index == 0 && type.identifier_type == UAPLEX_ID_NUMERIC &&
          type.identifier.numeric == 0)) {
        if (!model.known(type, &isObjectType, &isDataType)) return UAPLEX_BadNodeIdUnknown;
        if (!isObjectType || !model.isSubtypeOf(type, ua::numericNodeId(0, kBaseEventType)))
            return UAPLEX_BadTypeDefinitionInvalid;
    } else {
        type = ua::numericNodeId(0, kBaseEventType);
    }
    if (o.attributeId == 0 || o.attributeId > kMaxAttributeId) return UAPLEX_BadAttributeIdInvalid;
    for (const auto& q : o.browsePath)
        if (q.name.length <= 0) return UAPLEX_BadBrowseNameInvalid;
    if (o.browsePath.size() == 0) {
        // The event type itself: only its NodeId (the ConditionId of a condition).
        if (o.attributeId != kAttrNodeId) return UAPLEX_BadAttributeIdInvalid;
    } else if (!(type.namespace_index == 0 && type.identifier.numeric == kBaseEventType &&
                 type.identifier_type == UAPLEX_ID_NUMERIC)) {
        // BaseEventType paths are taken as given (any subtype may hold them).
        if (!model.hasInstanceDeclaration(type, o.browsePath.span()))
            return UAPLEX_BadBrowseNameInvalid;
    }
    if (o.indexRange.length > 0 && !validIndexRange(ua::view(o.indexRange)))
        return UAPLEX_BadIndexRangeInvalid;
    return UAPLEX_Good;
}

// A 1-D index range applied to an array field (a scalar with a range is Null).
ua::Variant applyRange(const ua::Variant& v, const ua::String& range) {
    if (range.length <= 0) return v;
    std::string_view r = ua::view(range);
    if (scalar(v) || r.find(',') != std::string_view::npos || v.array_length <= 0) return {};
    uint32_t first = 0, last = 0;
    auto colon = r.find(':');
    std::from_chars(r.data(), r.data() + (colon == r.npos ? r.size() : colon), first);
    last = first;
    if (colon != r.npos) std::from_chars(r.data() + colon + 1, r.data() + r.size(), last);
    if (last < first || first >= uint32_t(v.array_length)) return {};
    last = std::min<uint32_t>(last, uint32_t(v.array_length) - 1);
    size_t es = enc::builtinElementSize(typeOf(v));
    ua::Variant out = v;
    out.encoding &= uint8_t(~UAPLEX_VARIANT_ARRAY_DIMENSIONS);
    out.dimensions = nullptr;
    out.dimensions_length = 0;
    out.array_length = int32_t(last - first + 1);
    out.value.pointer = static_cast<uint8_t*>(v.value.pointer) + es * first;
    return out;
}

ua::Variant fieldOf(const ua::SimpleAttributeOperand& o, const EventView& e,
                    const EventTypeModel& model) {
    const ua::NodeId& t = o.typeDefinitionId;
    bool base = t.namespace_index == 0 && t.identifier_type == UAPLEX_ID_NUMERIC &&
                (t.identifier.numeric == 0 || t.identifier.numeric == kBaseEventType);
    if (!base && !model.isSubtypeOf(e.eventType, t)) return {};
    if (o.attributeId == kAttrNodeId && o.browsePath.size() == 0) {
        if (!e.conditionId) return {};
        ua::Variant v = ua::makeVariant(ua::BuiltinType::NodeId);
        v.value.pointer = const_cast<ua::NodeId*>(e.conditionId);
        return v;
    }
    if (o.attributeId != kAttrValue) return {};
    const ua::Variant* f = e.find(o.browsePath.span());
    return f ? applyRange(*f, o.indexRange) : ua::Variant{};
}

struct Evaluator {
    const ua::ContentFilter& filter;
    const EventView& event;
    const EventTypeModel& model;
    enc::Arena& scratch;
    ua::Variant* memo = nullptr;  // per element, in scratch
    uint8_t* state = nullptr;     // 0 not evaluated, 1 evaluating, 2 done

    ua::Variant operand(const ua::ExtensionObject& eo, int depth) {
        if (auto* e = as<ua::ElementOperand>(eo)) return element(e->index, depth + 1);
        if (auto* l = as<ua::LiteralOperand>(eo)) return l->value;
        if (auto* s = as<ua::SimpleAttributeOperand>(eo)) return fieldOf(*s, event, model);
        return {};
    }

    static int tri(const ua::Variant& v) {  // 1 true, 0 false, -1 null
        if (typeOf(v) == uint8_t(ua::BuiltinType::Boolean) && scalar(v)) return v.value.boolean;
        return -1;
    }
    static ua::Variant fromTri(int t) { return t < 0 ? ua::Variant{} : boolean(t == 1); }

    ua::Variant element(uint32_t index, int depth) {
        if (index >= filter.elements.size() || depth > int(kMaxWhereElements)) return {};
        if (state) {
            if (state[index] == 2) return memo[index];
            if (state[index] == 1) return {};  // a loop (validation forbids them)
            state[index] = 1;
            memo[index] = compute(index, depth);
            state[index] = 2;
            return memo[index];
        }
        return compute(index, depth);
    }

    ua::Variant compute(uint32_t index, int depth) {
        const ua::ContentFilterElement& el = filter.elements[index];
        const auto& ops = el.filterOperands;
        auto arg = [&](size_t i) { return operand(ops[i], depth); };
        switch (el.filterOperator) {
            case Op::Equals: {
                ua::Variant a = arg(0), b = arg(1);
                if (isNull(a) || isNull(b)) return {};
                return boolean(compareValues(a, b) == 0);
            }
            case Op::IsNull:
                return boolean(isNull(arg(0)));
            case Op::GreaterThan:
            case Op::LessThan:
            case Op::GreaterThanOrEqual:
            case Op::LessThanOrEqual: {
                ua::Variant a = arg(0), b = arg(1);
                if (isNull(a) || isNull(b)) return {};
                int c = compareValues(a, b);
                if (c == 2) return boolean(false);
                switch (el.filterOperator) {
                    case Op::GreaterThan:
                        return boolean(c > 0);
                    case Op::LessThan:
                        return boolean(c < 0);
                    case Op::GreaterThanOrEqual:
                        return boolean(c >= 0);
                    default:
                        return boolean(c <= 0);
                }
            }
            case Op::Like: {
                ua::Variant a = arg(0), b = arg(1);
                if (isNull(a) || isNull(b)) return {};
                std::string text, pattern;
                if (!textOf(a, text) || !textOf(b, pattern)) return boolean(false);
                return boolean(likeMatch(text, pattern));
            }
            case Op::Not: {
                int t = tri(arg(0));
                return t < 0 ? ua::Variant{} : boolean(t == 0);
            }
            case Op::Between: {
                ua::Variant a = arg(0), lo = arg(1), hi = arg(2);
                if (isNull(a) || isNull(lo) || isNull(hi)) return {};
                int c1 = compareValues(a, lo), c2 = compareValues(a, hi);
                if (c1 == 2 || c2 == 2) return boolean(false);
                return boolean(c1 >= 0 && c2 <= 0);
            }
            case Op::InList: {
                ua::Variant a = arg(0);
                if (isNull(a)) return {};
                for (size_t i = 1; i < ops.size(); ++i)
                    if (valueEquals(a, arg(i))) return boolean(true);
                return boolean(false);
            }
            case Op::And: {
                int a = tri(arg(0));
                if (a == 0) return boolean(false);
                int b = tri(arg(1));
                if (b == 0) return boolean(false);
                return fromTri(a == 1 && b == 1 ? 1 : -1);
            }
            case Op::Or: {
                int a = tri(arg(0));
                if (a == 1) return boolean(true);
                int b = tri(arg(1));
                if (b == 1) return boolean(true);
                return fromTri(a == 0 && b == 0 ? 0 : -1);
            }
            case Op::Cast: {
                ua::Variant a = arg(0);
                auto* l = as<ua::LiteralOperand>(ops[1]);
                if (!l || typeOf(l->value) != uint8_t(ua::BuiltinType::NodeId)) return {};
                auto* target = static_cast<const ua::NodeId*>(l->value.value.pointer);
                return cast(a, *target);
            }
            case Op::OfType: {
                auto* l = as<ua::LiteralOperand>(ops[0]);
                if (!l || typeOf(l->value) != uint8_t(ua::BuiltinType::NodeId)) return {};
                auto* t = static_cast<const ua::NodeId*>(l->value.value.pointer);
                return boolean(t && model.isSubtypeOf(event.eventType, *t));
            }
            case Op::BitwiseAnd:
            case Op::BitwiseOr: {
                ua::Variant a = arg(0), b = arg(1);
                Number x = numberOf(a), y = numberOf(b);
                if (x.kind == Kind::None || y.kind == Kind::None || x.kind == Kind::Real ||
                    y.kind == Kind::Real)
                    return {};
                uint64_t ux = x.kind == Kind::Signed ? uint64_t(x.s) : x.u;
                uint64_t uy = y.kind == Kind::Signed ? uint64_t(y.s) : y.u;
                uint64_t r = el.filterOperator == Op::BitwiseAnd ? (ux & uy) : (ux | uy);
                // The result takes the wider of the two operand types.
                uint8_t ta = typeOf(a), tb = typeOf(b);
                uint8_t t = enc::builtinElementSize(ta) >= enc::builtinElementSize(tb) ? ta : tb;
                ua::Variant out = ua::makeVariant(ua::BuiltinType(t));
                std::memcpy(&out.value, &r, enc::builtinElementSize(t));
                return out;
            }
            default:
                return {};
        }
    }

    ua::Variant cast(const ua::Variant& a, const ua::NodeId& target) {
        if (isNull(a) || !scalar(a) || target.namespace_index != 0 ||
            target.identifier_type != UAPLEX_ID_NUMERIC)
            return {};
        uint32_t t = target.identifier.numeric;
        Number n = numberOf(a);
        std::string text;
        if (n.kind == Kind::None && textOf(a, text)) n = parseNumber(text);
        auto integral = [&](int64_t lo, uint64_t hi, ua::BuiltinType bt) -> ua::Variant {
            double d = real(n);
            if (n.kind == Kind::None || std::isnan(d)) return {};
            if (n.kind == Kind::Real) d = std::round(d);
            if (d < double(lo) || d > double(hi)) return {};
            ua::Variant out = ua::makeVariant(bt);
            if (n.kind == Kind::Real) {
                if (lo < 0)
                    out.value.int64 = int64_t(d);
                else
                    out.value.uint64 = uint64_t(d);
            } else if (n.kind == Kind::Signed) {
                if (n.s < lo || (n.s > 0 && uint64_t(n.s) > hi)) return {};
                out.value.int64 = n.s;
            } else {
                if (n.u > hi) return {};
                out.value.uint64 = n.u;
            }
            // Little-endian: the low bytes hold the narrower value.
            return out;
        };
        switch (t) {
            case 1: {  // Boolean
                if (n.kind == Kind::None) return {};
                return boolean(real(n) != 0);
            }
            case 2:
                return integral(INT8_MIN, INT8_MAX, ua::BuiltinType::SByte);
            case 3:
                return integral(0, UINT8_MAX, ua::BuiltinType::Byte);
            case 4:
                return integral(INT16_MIN, INT16_MAX, ua::BuiltinType::Int16);
            case 5:
                return integral(0, UINT16_MAX, ua::BuiltinType::UInt16);
            case 6:
                return integral(INT32_MIN, INT32_MAX, ua::BuiltinType::Int32);
            case 7:
                return integral(0, UINT32_MAX, ua::BuiltinType::UInt32);
            case 8:
                return integral(INT64_MIN, INT64_MAX, ua::BuiltinType::Int64);
            case 9:
                return integral(0, UINT64_MAX, ua::BuiltinType::UInt64);
            case 10:
            case 11: {
                if (n.kind == Kind::None) return {};
                if (t == 10) {
                    ua::Variant out = ua::makeVariant(ua::BuiltinType::Float);
                    out.value.float_ = float(real(n));
                    return out;
                }
                return ua::variantDouble(real(n));
            }
            case 12: {  // String
                if (!textOf(a, text)) {
                    if (n.kind == Kind::None) return {};
                    text = n.kind == Kind::Real     ? std::to_string(n.d)
                           : n.kind == Kind::Signed ? std::to_string(n.s)
                                                    : std::to_string(n.u);
                    if (typeOf(a) == uint8_t(ua::BuiltinType::Boolean))
                        text = a.value.boolean ? "true" : "false";
                }
                auto* mem = static_cast<char*>(scratch.allocate(text.size() + 1, 1));
                if (!mem) return {};
                std::memcpy(mem, text.data(), text.size());
                ua::Variant out = ua::makeVariant(ua::BuiltinType::String);
                out.value.string = {int32_t(text.size()), mem};
                return out;
            }
            default:
                return {};
        }
    }
};

}  // namespace

// --- EventView ---------------------------------------------------------------------------

const ua::Variant* EventView::find(std::span<const ua::QualifiedName> path) const noexcept {
    for (const auto& f : fields) {
        if (f.path.size() != path.size()) continue;
        bool same = true;
        for (size_t i = 0; same && i < path.size(); ++i) same = sameName(f.path[i], path[i]);
        if (same) return f.value;
    }
    return nullptr;
}

const ua::Variant* EventView::find(std::string_view name) const noexcept {
    for (const auto& f : fields)
        if (f.path.size() == 1 && f.path[0].namespace_index == 0 &&
            ua::view(f.path[0].name) == name)
            return f.value;
    return nullptr;
}

// --- comparisons --------------------------------------------------------------------------

int compareValues(const ua::Variant& a, const ua::Variant& b) {
    if (isNull(a) || isNull(b)) return 2;
    if (!scalar(a) || !scalar(b)) return 2;
    uint8_t ta = typeOf(a), tb = typeOf(b);
    Number x = numberOf(a), y = numberOf(b);
    std::string sa, sb;
    if (x.kind != Kind::None && y.kind != Kind::None) {
        bool da = ta == uint8_t(ua::BuiltinType::DateTime),
             db = tb == uint8_t(ua::BuiltinType::DateTime);
        if (da != db && !(da && tb == uint8_t(ua::BuiltinType::Int64)) &&
            !(db && ta == uint8_t(ua::BuiltinType::Int64)))
            return 2;  // a DateTime compares with DateTimes (and their Int64 ticks) only
        return compareNumbers(x, y);
    }
    // A String converts to the number it is compared with (numbers take precedence).
    if (x.kind != Kind::None && textOf(b, sb)) {
        y = parseNumber(sb);
        return y.kind == Kind::None ? 2 : compareNumbers(x, y);
    }
    if (y.kind != Kind::None && textOf(a, sa)) {
        x = parseNumber(sa);
        return x.kind == Kind::None ? 2 : compareNumbers(x, y);
    }
    if (ta == uint8_t(ua::BuiltinType::NodeId) && tb == ta) {
        auto* na = static_cast<const ua::NodeId*>(a.value.pointer);
        auto* nb = static_cast<const ua::NodeId*>(b.value.pointer);
        if (na && nb && ua::equal(*na, *nb)) return 0;
    }
    if (ta == uint8_t(ua::BuiltinType::Guid) && tb == ta)
        return std::memcmp(&a.value.guid, &b.value.guid, sizeof(ua::Guid)) == 0 ? 0 : 1;
    if (ta == uint8_t(ua::BuiltinType::ByteString) && tb == ta) {
        auto va = ua::view(a.value.bytestring), vb = ua::view(b.value.bytestring);
        auto o = std::lexicographical_compare_three_way(va.begin(), va.end(), vb.begin(), vb.end());
        return o < 0 ? -1 : o > 0 ? 1 : 0;
    }
    if (textual(ta) && textual(tb) && textOf(a, sa) && textOf(b, sb)) {
        int c = sa.compare(sb);
        return c < 0 ? -1 : c > 0 ? 1 : 0;
    }
    return 2;
}

bool likeMatch(std::string_view s, std::string_view p) {
    // Backtracking over the last %: linear for the common patterns, bounded by |s|*|p|.
    size_t si = 0, pi = 0, starP = std::string_view::npos, starS = 0;
    auto single = [&](size_t& pj, char c) -> int {  // 1 match, 0 no, -1 malformed
        char pc = p[pj];
        if (pc == '_') return ++pj, 1;
        if (pc == '\\' && pj + 1 < p.size()) {
            bool m = p[pj + 1] == c;
            pj += 2;
            return m;
        }
        if (pc == '[') {
            size_t end = p.find(']', pj + 1);
            if (end == std::string_view::npos) return ++pj, pc == c;
            std::string_view set = p.substr(pj + 1, end - pj - 1);
            bool negate = !set.empty() && set[0] == '^';
            if (negate) set.remove_prefix(1);
            bool in = false;
            for (size_t k = 0; k < set.size(); ++k) {
                if (k + 2 < set.size() && set[k + 1] == '-') {
                    if (c >= set[k] && c <= set[k + 2]) in = true;
                    k += 2;
                } else if (set[k] == c) {
                    in = true;
                }
            }
            pj = end + 1;
            return in != negate;
        }
        ++pj;
        return pc == c;
    };
    while (si < s.size()) {
        if (pi < p.size() && p[pi] == '%') {
            starP = ++pi;
            starS = si;
            continue;
        }
        size_t pj = pi;
        if (pi < p.size() && single(pj, s[si]) == 1) {
            pi = pj;
            ++si;
            continue;
        }
        if (starP == std::string_view::npos) return false;
        pi = starP;
        si = ++starS;
    }
    while (pi < p.size() && p[pi] == '%') ++pi;
    return pi == p.size();
}

// --- validation -----------------------------------------------------------------------------

uaplex_status validateContentFilter(const ua::ContentFilter& filter, const EventTypeModel& model,
                                    enc::Arena& arena, ua::ContentFilterResult& result) {
    size_t n = filter.elements.size();
    result.elementResults = {int32_t(n),
                             n ? arena.allocateArray<ua::ContentFilterElementResult>(n) : nullptr};
    result.elementDiagnosticInfos = {0, nullptr};
    if (n && !result.elementResults.data) return UAPLEX_BadOutOfMemory;
    bool bad = false;
    for (size_t i = 0; i < n; ++i) {
        const auto& el = filter.elements[i];
        auto& r = result.elementResults[i];
        r.operandStatusCodes = {0, nullptr};
        r.operandDiagnosticInfos = {0, nullptr};
        r.statusCode = UAPLEX_Good;
        auto op = uint32_t(el.filterOperator);
        size_t k = el.filterOperands.size();
        if (i >= kMaxWhereElements) {
            r.statusCode = UAPLEX_BadFilterElementInvalid;  // more than the server evaluates
        } else if (op >= kOperatorCount) {
            r.statusCode = UAPLEX_BadFilterOperatorInvalid;
        } else if (el.filterOperator == Op::InView || el.filterOperator == Op::RelatedTo) {
            r.statusCode = UAPLEX_BadFilterOperatorUnsupported;  // no views or graphs in events
        } else if (!operandCountOk(el.filterOperator, k)) {
            r.statusCode = UAPLEX_BadFilterOperandCountMismatch;
        } else {
            auto* codes = arena.allocateArray<ua::StatusCode>(k);
            if (!codes) return UAPLEX_BadOutOfMemory;
            bool operandBad = false;
            for (size_t j = 0; j < k; ++j) {
                const ua::ExtensionObject& eo = el.filterOperands[j];
                uaplex_status st = UAPLEX_Good;
                if (auto* e = as<ua::ElementOperand>(eo)) {
                    // Only later elements: the evaluation cannot loop.
                    if (e->index <= i || e->index >= n) st = UAPLEX_BadFilterOperandInvalid;
                } else if (auto* l = as<ua::LiteralOperand>(eo)) {
                    bool nodeIdOperand = el.filterOperator == Op::OfType ||
                                         (el.filterOperator == Op::Cast && j == 1);
                    if (nodeIdOperand) {
                        bool isObjectType = false, isDataType = false;
                        auto* id =
                            typeOf(l->value) == uint8_t(ua::BuiltinType::NodeId) && scalar(l->value)
                                ? static_cast<const ua::NodeId*>(l->value.value.pointer)
                                : nullptr;
                        // OfType names an ObjectType, Cast a DataType.
                        if (!id || !model.known(*id, &isObjectType, &isDataType) ||
                            (el.filterOperator == Op::OfType && !isObjectType) ||
                            (el.filterOperator == Op::Cast && !isDataType))
                            st = UAPLEX_BadFilterOperandInvalid;
                    }
                } else if (auto* s = as<ua::SimpleAttributeOperand>(eo)) {
                    if (el.filterOperator == Op::OfType ||
                        (el.filterOperator == Op::Cast && j == 1))
                        st = UAPLEX_BadFilterOperandInvalid;
                    else
                        st = checkOperand(*s, model);
                } else {
                    // AttributeOperand (not for events), unknown or undecodable operands.
                    st = UAPLEX_BadFilterOperandInvalid;
                }
                codes[j] = st;
                if (st != UAPLEX_Good) operandBad = true;
            }
            if (operandBad) {
                r.statusCode = UAPLEX_BadFilterOperandInvalid;
                r.operandStatusCodes = {int32_t(k), codes};
            }
        }
        if (r.statusCode != UAPLEX_Good) bad = true;
    }
    return bad ? UAPLEX_BadEventFilterInvalid : UAPLEX_Good;
}

ua::Variant evaluateContentFilter(const ua::ContentFilter& filter, const EventView& event,
                                  const EventTypeModel& model, enc::Arena& scratch) {
    if (filter.elements.size() == 0) return boolean(true);
    Evaluator ev{filter, event, model, scratch};
    size_t n = filter.elements.size();
    ev.memo = scratch.allocateArray<ua::Variant>(n);
    ev.state = scratch.allocateArray<uint8_t>(n);
    if (!ev.memo || !ev.state) return {};
    return ev.element(0, 0);
}

// --- EventFilterSpec ------------------------------------------------------------------------

uaplex_status EventFilterSpec::create(const ua::EventFilter& filter, const EventTypeModel& model,
                                      enc::Arena& arena, ua::EventFilterResult& result,
                                      std::unique_ptr<EventFilterSpec>& out) {
    auto spec = std::make_unique<EventFilterSpec>();
    size_t n = filter.selectClauses.size();
    result.selectClauseResults = {int32_t(n), n ? arena.allocateArray<ua::StatusCode>(n) : nullptr};
    result.selectClauseDiagnosticInfos = {0, nullptr};
    if (n && !result.selectClauseResults.data) return UAPLEX_BadOutOfMemory;
    spec->selectValid_.resize(n);
    size_t valid = 0;
    for (size_t i = 0; i < n; ++i) {
        uaplex_status st = checkOperand(filter.selectClauses[i], model);
        result.selectClauseResults[i] = st;
        spec->selectValid_[i] = st == UAPLEX_Good;
        valid += st == UAPLEX_Good;
    }
    uaplex_status where =
        validateContentFilter(filter.whereClause, model, arena, result.whereClauseResult);
    if (where == UAPLEX_BadOutOfMemory) return where;
    // No usable select clause, or an invalid where element: the filter is refused.
    if (where != UAPLEX_Good || valid == 0) return UAPLEX_BadEventFilterInvalid;
    // The item keeps its own copy (the request's memory goes with the request).
    void* copy = copyInto(spec->arena_, *enc::dataTypeOf<ua::EventFilter>(), &filter);
    if (!copy) return UAPLEX_BadOutOfMemory;
    spec->filter_ = static_cast<const ua::EventFilter*>(copy);
    out = std::move(spec);
    return UAPLEX_Good;
}

bool EventFilterSpec::matches(const EventView& event, const EventTypeModel& model,
                              enc::Arena& scratch) const {
    if (!filter_) return false;
    ua::Variant v = evaluateContentFilter(filter_->whereClause, event, model, scratch);
    return typeOf(v) == uint8_t(ua::BuiltinType::Boolean) && scalar(v) && v.value.boolean;
}

EventCell* EventFilterSpec::select(const EventView& event, const EventTypeModel& model,
                                   ValuePool& pool, uint64_t sourceHandle) const {
    auto* e = new EventCell;
    e->entry.hdr = UAPLEX_HEADER_INIT(uaplex_event_entry, UAPLEX_STYPE_EVENT_ENTRY);
    e->entry.source_handle = sourceHandle;
    size_t n = selectCount();
    e->cells.assign(n, nullptr);
    for (size_t i = 0; i < n; ++i) {
        if (!selectValid_[i]) continue;
        ua::Variant v = fieldOf(filter_->selectClauses[i], event, model);
        if (isNull(v)) continue;
        ua::DataValue dv{};
        dv.mask = UAPLEX_DATAVALUE_VALUE;
        dv.value = v;
        e->cells[i] = pool.copy(dv);
    }
    e->entry.field_count = uint32_t(n);
    return e;
}

void EventFilterSpec::selectInto(const EventView& event, const EventTypeModel& model,
                                 std::span<ua::Variant> out) const noexcept {
    const size_t n = std::min(selectCount(), out.size());
    for (size_t i = 0; i < n; ++i)
        out[i] = selectValid_[i] ? fieldOf(filter_->selectClauses[i], event, model) : ua::Variant{};
}

// --- OwnedEvent -----------------------------------------------------------------------------

namespace {
ua::Variant deepCopy(enc::Arena& arena, const ua::Variant& v) {
    void* out = copyInto(arena, variantType(), &v);
    return out ? *static_cast<ua::Variant*>(out) : ua::Variant{};
}
ua::NodeId copyNodeId(enc::Arena& arena, const ua::NodeId& id) {
    ua::Variant v = ua::makeVariant(ua::BuiltinType::NodeId);
    v.value.pointer = const_cast<ua::NodeId*>(&id);
    ua::Variant c = deepCopy(arena, v);
    return c.value.pointer ? *static_cast<ua::NodeId*>(c.value.pointer) : ua::NodeId{};
}
}  // namespace

void OwnedEvent::assign(const EventView& v) {
    arena_.reset();
    fields_.clear();
    type_ = copyNodeId(arena_, v.eventType);
    hasCondition_ = v.conditionId != nullptr;
    if (hasCondition_) condition_ = copyNodeId(arena_, *v.conditionId);
    hasSource_ = v.sourceNode != nullptr;
    if (hasSource_) source_ = copyNodeId(arena_, *v.sourceNode);
    for (const auto& f : v.fields) {
        auto* path = arena_.allocateArray<ua::QualifiedName>(f.path.size());
        for (size_t i = 0; i < f.path.size(); ++i) {
            path[i].namespace_index = f.path[i].namespace_index;
            auto name = ua::view(f.path[i].name);
            auto* mem = static_cast<char*>(arena_.allocate(name.size() + 1, 1));
            std::memcpy(mem, name.data(), name.size());
            path[i].name = {int32_t(name.size()), mem};
        }
        auto* val = arena_.allocateArray<ua::Variant>(1);
        *val = f.value ? deepCopy(arena_, *f.value) : ua::Variant{};
        fields_.push_back({{path, f.path.size()}, val});
    }
}

void OwnedEvent::add(std::string_view name, const ua::Variant& value) {
    auto* q = arena_.allocateArray<ua::QualifiedName>(1);
    auto* mem = static_cast<char*>(arena_.allocate(name.size() + 1, 1));
    std::memcpy(mem, name.data(), name.size());
    q->name = {int32_t(name.size()), mem};
    auto* val = arena_.allocateArray<ua::Variant>(1);
    *val = deepCopy(arena_, value);
    fields_.push_back({{q, 1}, val});
}

EventView OwnedEvent::view() const {
    EventView v;
    v.eventType = type_;
    v.conditionId = hasCondition_ ? &condition_ : nullptr;
    v.sourceNode = hasSource_ ? &source_ : nullptr;
    v.fields = fields_;
    return v;
}

void conditionKey(const ua::NodeId& id, std::string& out) {
    out.clear();
    out.push_back(char(id.namespace_index & 0xFF));
    out.push_back(char(id.namespace_index >> 8));
    out.push_back(char(id.identifier_type));
    switch (id.identifier_type) {
        case UAPLEX_ID_NUMERIC:
            out.append(reinterpret_cast<const char*>(&id.identifier.numeric),
                       sizeof id.identifier.numeric);
            break;
        case UAPLEX_ID_STRING:
            out.append(ua::view(id.identifier.string));
            break;
        case UAPLEX_ID_GUID:
            out.append(reinterpret_cast<const char*>(&id.identifier.guid), sizeof(ua::Guid));
            break;
        default: {
            auto b = ua::view(id.identifier.bytestring);
            out.append(reinterpret_cast<const char*>(b.data()), b.size());
        }
    }
}

ua::ByteString newEventId(enc::Arena& arena) {
    static thread_local std::mt19937_64 rng{std::random_device{}()};
    auto* b = static_cast<uint8_t*>(arena.allocate(16, 8));
    if (!b) return {-1, nullptr};
    uint64_t r[2] = {rng(), rng()};
    std::memcpy(b, r, 16);
    return {16, b};
}

}  // namespace uaplex::subscription

namespace uaplex::subscription {

std::unique_ptr<OwnedEvent> makeRefreshEvent(uint32_t typeId, int64_t utcNow) {
    auto ev = std::make_unique<OwnedEvent>();
    ua::NodeId type = ua::numericNodeId(0, typeId);
    ua::NodeId server = ua::numericNodeId(0, kServerObject);
    ev->setType(type);
    enc::Arena arena(4096, 256);
    ua::Variant v = ua::makeVariant(ua::BuiltinType::ByteString);
    v.value.bytestring = newEventId(arena);
    ev->add("EventId", v);
    v = ua::makeVariant(ua::BuiltinType::NodeId);
    v.value.pointer = &type;
    ev->add("EventType", v);
    v.value.pointer = &server;
    ev->add("SourceNode", v);
    ev->add("SourceName", ua::variantString("Server"));
    v = ua::makeVariant(ua::BuiltinType::DateTime);
    v.value.datetime = utcNow;
    ev->add("Time", v);
    ev->add("ReceiveTime", v);
    ua::LocalizedText msg =
        ua::makeLocalizedText("", typeId == kRefreshStartEventType ? "ConditionRefresh started"
                                                                   : "ConditionRefresh ended");
    v = ua::makeVariant(ua::BuiltinType::LocalizedText);
    v.value.pointer = &msg;
    ev->add("Message", v);
    v = ua::makeVariant(ua::BuiltinType::UInt16);
    v.value.uint16 = 1;
    ev->add("Severity", v);
    return ev;
}

}  // namespace uaplex::subscription
