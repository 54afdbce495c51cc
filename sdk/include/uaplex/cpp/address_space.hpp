// SPDX-License-Identifier: Apache-2.0
// C++ helpers for node managers that add their nodes to the kernel's store through the host
// API (uaplex/host.h, since 1.1): NodeId and value builders, node specs, and a small
// binary writer for the structure values plugins commonly need (Range, EUInformation,
// Argument). Header-only; nothing here links to the kernel.
#pragma once

#include <cstring>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "uaplex/cpp/kinds.hpp"
#include "uaplex/cpp/plugin.hpp"
#include "uaplex/types.h"

namespace uaplex::sdk {

// --- values (views: strings borrow their text; keep it alive for the call) ---------------

inline uaplex_string ua_string(std::string_view s) noexcept {
    return {static_cast<int32_t>(s.size()), s.data()};
}
inline uaplex_nodeid numeric_id(uint16_t ns, uint32_t id) noexcept {
    uaplex_nodeid n{};
    n.namespace_index = ns;
    n.identifier_type = UAPLEX_ID_NUMERIC;
    n.identifier.numeric = id;
    return n;
}
inline uaplex_nodeid string_id(uint16_t ns, std::string_view id) noexcept {
    uaplex_nodeid n{};
    n.namespace_index = ns;
    n.identifier_type = UAPLEX_ID_STRING;
    n.identifier.string = ua_string(id);
    return n;
}
inline uaplex_qualifiedname qualified_name(uint16_t ns, std::string_view name) noexcept {
    return {ns, ua_string(name)};
}
inline uaplex_localizedtext localized_text(std::string_view locale,
                                           std::string_view text) noexcept {
    uaplex_localizedtext t{};
    t.mask = (locale.empty() ? 0 : UAPLEX_LOCALIZEDTEXT_LOCALE) | UAPLEX_LOCALIZEDTEXT_TEXT;
    t.locale = locale.empty() ? uaplex_string{-1, nullptr} : ua_string(locale);
    t.text = ua_string(text);
    return t;
}
// A scalar Variant of an inline type (Boolean .. Double, DateTime, StatusCode, String ...).
template <class T>
uaplex_variant scalar(uint8_t builtin_type, const T& value) noexcept {
    uaplex_variant v{};
    v.encoding = builtin_type;
    v.array_length = -1;
    static_assert(sizeof(T) <= sizeof(v.value));
    std::memcpy(&v.value, &value, sizeof(T));
    return v;
}
// A scalar Variant pointing at a boxed value (NodeId, QualifiedName, LocalizedText, ...).
inline uaplex_variant boxed(uint8_t builtin_type, const void* value) noexcept {
    uaplex_variant v{};
    v.encoding = builtin_type;
    v.array_length = -1;
    v.value.pointer = const_cast<void*>(value);
    return v;
}
// A one-dimensional array Variant over `count` elements of the type's C struct.
inline uaplex_variant array(uint8_t builtin_type, int32_t count, const void* elements) noexcept {
    uaplex_variant v{};
    v.encoding = static_cast<uint8_t>(builtin_type | UAPLEX_VARIANT_ARRAY);
    v.array_length = count;
    v.value.pointer = const_cast<void*>(elements);
    return v;
}
inline uaplex_datavalue data_value(const uaplex_variant& v) noexcept {
    uaplex_datavalue d{};
    d.mask = UAPLEX_DATAVALUE_VALUE;
    d.value = v;
    return d;
}

// OPC UA binary for structure bodies (Part 6 5.2): an ExtensionObject whose body the kernel
// decodes by its encoding id.
class BinaryBody {
  public:
    BinaryBody& int32(int32_t v) { return raw(&v, 4); }
    BinaryBody& uint32(uint32_t v) { return raw(&v, 4); }
    BinaryBody& float64(double v) { return raw(&v, 8); }
    BinaryBody& string(std::string_view s) {
        int32_t n = static_cast<int32_t>(s.size());
        raw(&n, 4);
        return raw(s.data(), s.size());
    }
    BinaryBody& null_array() { return int32(-1); }
    // Numeric NodeIds only (four-byte or numeric form).
    BinaryBody& numeric_node_id(uint16_t ns, uint32_t id) {
        uint8_t form = 2;
        raw(&form, 1);
        raw(&ns, 2);
        return raw(&id, 4);
    }
    BinaryBody& localized_text(std::string_view locale, std::string_view text) {
        uint8_t mask = (locale.empty() ? 0 : 1) | 2;
        raw(&mask, 1);
        if (!locale.empty()) string(locale);
        return string(text);
    }
    const std::vector<uint8_t>& bytes() const noexcept { return bytes_; }
    // The ExtensionObject over these bytes (borrowed) with binary encoding id `encoding_id`.
    uaplex_extensionobject extension_object(uint32_t encoding_id) const noexcept {
        uaplex_extensionobject eo{};
        eo.type_id = numeric_id(0, encoding_id);
        eo.encoding = UAPLEX_EXTENSIONOBJECT_BINARY;
        eo.body = {static_cast<int32_t>(bytes_.size()), bytes_.data()};
        return eo;
    }

  private:
    BinaryBody& raw(const void* p, size_t n) {
        // Little-endian host assumed (x86-64, arm64), as the wire format.
        size_t at = bytes_.size();
        bytes_.resize(at + n);
        if (n != 0) std::memcpy(bytes_.data() + at, p, n);
        return *this;
    }
    std::vector<uint8_t> bytes_;
};

// Well-known encoding ids of namespace 0.
inline constexpr uint32_t kArgumentBinary = 298;
inline constexpr uint32_t kRangeBinary = 886;
inline constexpr uint32_t kEUInformationBinary = 889;

inline BinaryBody range_body(double low, double high) {
    BinaryBody b;
    b.float64(low).float64(high);
    return b;
}
// An Argument (Part 3 8.6) with a numeric ns0 DataType.
inline BinaryBody argument_body(std::string_view name, uint32_t data_type, int32_t value_rank,
                                std::string_view description = {}) {
    BinaryBody b;
    b.string(name).numeric_node_id(0, data_type).int32(value_rank).null_array();
    b.localized_text("", description);
    return b;
}
// EUInformation with a UNECE code (Part 8 5.6.3): unitId from the code's characters.
inline BinaryBody eu_information_body(std::string_view unece_code, std::string_view display,
                                      std::string_view description) {
    int32_t unit = 0;
    for (char c : unece_code) unit = (unit << 8) | static_cast<uint8_t>(c);
    BinaryBody b;
    b.string("http://www.opcfoundation.org/UA/units/un/cefact").int32(unit);
    b.localized_text("en", display).localized_text("en", description);
    return b;
}

// --- methods ----------------------------------------------------------------------------

// One call of a method bound with AddressSpace::implement_method (host API method_bind,
// since 1.7): the inputs, which the kernel already checked against the method's
// InputArguments (count, DataType, ValueRank), a result per input and the outputs.
class MethodCall {
  public:
    MethodCall(const uaplex_nodeid* object, const uaplex_nodeid* method, size_t count,
               const uaplex_variant* inputs, const uaplex_value_alloc* alloc,
               uaplex_status* input_results) noexcept
        : object_(object),
          method_(method),
          count_(count),
          inputs_(inputs),
          alloc_(alloc),
          results_(input_results) {}

    const uaplex_nodeid& object() const noexcept { return *object_; }
    const uaplex_nodeid& method() const noexcept { return *method_; }
    size_t input_count() const noexcept { return count_; }
    const uaplex_variant& input(size_t i) const noexcept { return inputs_[i]; }
    // The scalar input i of built-in type `type`, or false (and input i BadTypeMismatch).
    template <class T>
    bool scalar_input(size_t i, uint8_t type, T& out) noexcept {
        if (i >= count_) return false;
        const uaplex_variant& v = inputs_[i];
        if ((v.encoding & UAPLEX_VARIANT_ARRAY) != 0 ||
            (v.encoding & UAPLEX_VARIANT_TYPE_MASK) != type) {
            reject(i, UAPLEX_BadTypeMismatch);
            return false;
        }
        static_assert(sizeof(T) <= sizeof(v.value));
        std::memcpy(&out, &v.value, sizeof(T));
        return true;
    }
    // The String input i (a view of the request's memory), or false (BadTypeMismatch).
    bool string_input(size_t i, std::string_view& out) noexcept {
        uaplex_string s{};
        if (!scalar_input(i, UAPLEX_TYPE_STRING, s)) return false;
        out = s.length > 0 ? std::string_view(s.data, size_t(s.length)) : std::string_view();
        return true;
    }
    // Marks input i as the wrong one (BadOutOfRange, BadTypeMismatch, BadInvalidArgument...):
    // the client gets it in inputArgumentResults and the call answers BadInvalidArgument.
    void reject(size_t i, uaplex_status status) noexcept {
        if (i < count_ && results_ != nullptr) results_[i] = status;
        rejected_ = true;
    }
    bool rejected() const noexcept { return rejected_; }

    // Request memory (released with the request), e.g. for output strings and arrays.
    void* allocate(size_t size, size_t alignment = 8) noexcept {
        return alloc_->allocate(alloc_->self, size, alignment);
    }
    // A String Variant holding a copy of `s` in request memory (a null String if full).
    uaplex_variant string_output(std::string_view s) noexcept {
        uaplex_string out{-1, nullptr};
        if (char* p = static_cast<char*>(allocate(s.size() + 1, 1))) {
            if (!s.empty()) std::memcpy(p, s.data(), s.size());
            out = {int32_t(s.size()), p};
        }
        return scalar(UAPLEX_TYPE_STRING, out);
    }
    // The outputs (Variants copied shallowly: what they point to must be request memory or
    // outlive the request). BadOutOfMemory when the request's memory is exhausted.
    uaplex_status set_outputs(std::initializer_list<uaplex_variant> outputs) noexcept {
        auto* out = static_cast<uaplex_variant*>(
            allocate(sizeof(uaplex_variant) * (outputs.size() ? outputs.size() : 1),
                     alignof(uaplex_variant)));
        if (out == nullptr) return UAPLEX_BadOutOfMemory;
        size_t n = 0;
        for (const uaplex_variant& v : outputs) out[n++] = v;
        outputs_ = out;
        output_count_ = n;
        return UAPLEX_Good;
    }
    size_t output_count() const noexcept { return output_count_; }
    uaplex_variant* outputs() const noexcept { return outputs_; }

  private:
    const uaplex_nodeid* object_;
    const uaplex_nodeid* method_;
    size_t count_;
    const uaplex_variant* inputs_;
    const uaplex_value_alloc* alloc_;
    uaplex_status* results_;
    bool rejected_ = false;
    size_t output_count_ = 0;
    uaplex_variant* outputs_ = nullptr;
};

namespace detail {
template <class M>
struct MethodOwner;
template <class T>
struct MethodOwner<uaplex_status (T::*)(MethodCall&)> {
    using type = T;
};

// The C callback for the member function Fn of T: no exception crosses the ABI, a rejected
// input makes the status BadInvalidArgument.
template <auto Fn>
uaplex_status method_trampoline(void* user, const uaplex_nodeid* object,
                                const uaplex_nodeid* method, size_t count,
                                const uaplex_variant* inputs, const uaplex_value_alloc* alloc,
                                uaplex_status* input_results, size_t* out_count,
                                uaplex_variant** out_outputs) noexcept {
    using T = typename MethodOwner<decltype(Fn)>::type;
    T* self = static_cast<T*>(user);
    MethodCall call(object, method, count, inputs, alloc, input_results);
    const Context* ctx = nullptr;
    if constexpr (requires { self->context(); }) ctx = &self->context();
    uaplex_status st = guard(ctx, "method call", [&] { return (self->*Fn)(call); });
    if (st == UAPLEX_Good && call.rejected()) st = UAPLEX_BadInvalidArgument;
    *out_count = call.output_count();
    *out_outputs = call.outputs();
    return st;
}
}  // namespace detail

// --- store callbacks (uaplex_node_spec read, write, call) without exceptions --------------
//
// The kernel calls these C function pointers; an exception must not leave them (nothing
// catches it portably across the C ABI). Guarded<&fn>::fn wraps a plain callback of any of
// the three signatures, and ValueRead, ValueWrite and MethodRun a member function of the
// node's `user` (a T*): an exception becomes its StatusError's status or BadInternalError,
// logged through T's context() when T has one.
template <auto F>
struct Guarded;
template <class... A, uaplex_status (*F)(A...)>
struct Guarded<F> {
    static uaplex_status fn(A... a) noexcept {
        return guard(nullptr, "store callback", [&] { return F(a...); });
    }
};

namespace detail {
template <class T>
const Context* context_of(T* self) noexcept {
    if constexpr (requires { self->context(); })
        return &self->context();
    else
        return nullptr;
}
}  // namespace detail

// spec.read = &ValueRead<&T::read_value>::fn, with
// `uaplex_status T::read_value(const uaplex_nodeid&, const uaplex_value_alloc&,
// uaplex_datavalue&)`.
template <auto Fn>
struct ValueRead;
template <class T, uaplex_status (T::*Fn)(const uaplex_nodeid&, const uaplex_value_alloc&,
                                          uaplex_datavalue&)>
struct ValueRead<Fn> {
    static uaplex_status fn(void* user, const uaplex_nodeid* id, const uaplex_value_alloc* alloc,
                            uaplex_datavalue* out) noexcept {
        auto* self = static_cast<T*>(user);
        return guard(detail::context_of(self), "value read",
                     [&] { return (self->*Fn)(*id, *alloc, *out); });
    }
};

// spec.write = &ValueWrite<&T::write_value>::fn, with
// `uaplex_status T::write_value(const uaplex_nodeid&, const uaplex_datavalue&)`.
template <auto Fn>
struct ValueWrite;
template <class T, uaplex_status (T::*Fn)(const uaplex_nodeid&, const uaplex_datavalue&)>
struct ValueWrite<Fn> {
    static uaplex_status fn(void* user, const uaplex_nodeid* id,
                            const uaplex_datavalue* value) noexcept {
        auto* self = static_cast<T*>(user);
        return guard(detail::context_of(self), "value write",
                     [&] { return (self->*Fn)(*id, *value); });
    }
};

// spec.call = &MethodRun<&T::run>::fn, with `uaplex_status T::run(const uaplex_nodeid& object,
// const uaplex_nodeid& method, size_t count, const uaplex_variant* inputs,
// const uaplex_value_alloc&, size_t& out_count, uaplex_variant*& out_outputs)`. An exception
// leaves no outputs.
template <auto Fn>
struct MethodRun;
template <class T, uaplex_status (T::*Fn)(const uaplex_nodeid&, const uaplex_nodeid&, size_t,
                                          const uaplex_variant*, const uaplex_value_alloc&, size_t&,
                                          uaplex_variant*&)>
struct MethodRun<Fn> {
    static uaplex_status fn(void* user, const uaplex_nodeid* object, const uaplex_nodeid* method,
                            size_t count, const uaplex_variant* inputs,
                            const uaplex_value_alloc* alloc, size_t* out_count,
                            uaplex_variant** out_outputs) noexcept {
        auto* self = static_cast<T*>(user);
        uaplex_status st = guard(detail::context_of(self), "method call", [&] {
            return (self->*Fn)(*object, *method, count, inputs, *alloc, *out_count, *out_outputs);
        });
        if ((st & 0x80000000u) != 0) {
            *out_count = 0;
            *out_outputs = nullptr;
        }
        return st;
    }
};

// One argument of a method (Part 3 8.6) for add_arguments: a numeric ns0 DataType.
struct ArgumentDef {
    std::string_view name;
    uint32_t data_type;
    int32_t value_rank = -1;
    std::string_view description = {};
};

struct NodeSpec;

// The address-space entries of the host API for one plugin instance.
class AddressSpace {
  public:
    explicit AddressSpace(const Context& ctx) noexcept : ctx_(ctx) {}

    // False when the host is older than 1.1.
    bool available() const noexcept {
        const auto* api = ctx_.api();
        return api && UAPLEX_HAS_FIELD(api, uaplex_host_api, value_set) && api->node_add;
    }
    uaplex_status register_namespace(std::string_view uri, uint16_t* out) const noexcept {
        return ctx_.api()->namespace_register(ctx_.raw(), to_str(uri), out);
    }
    uaplex_status add(const uaplex_node_spec& spec) const noexcept {
        return ctx_.api()->node_add(ctx_.raw(), &spec);
    }
    uaplex_status add_reference(const uaplex_nodeid& source, uint32_t reference_type,
                                const uaplex_nodeid& target) const noexcept {
        uaplex_nodeid type = numeric_id(0, reference_type);
        return ctx_.api()->reference_add(ctx_.raw(), &source, &type, &target);
    }
    uaplex_status set_value(const uaplex_nodeid& node,
                            const uaplex_datavalue& value) const noexcept {
        return ctx_.api()->value_set(ctx_.raw(), &node, &value);
    }

    // --- methods of any node (host API method_bind, since 1.7) ---
    // False when the host is older than 1.7 (implement_* then answer BadNotSupported).
    bool methods_available() const noexcept {
        const auto* api = ctx_.api();
        return api && UAPLEX_FIELD_OR(api, uaplex_host_api, method_bind, nullptr) != nullptr;
    }
    uaplex_status bind_method(const uaplex_nodeid& method, const uaplex_nodeid* object_type,
                              uaplex_method_call_fn fn, void* user) const noexcept {
        if (!methods_available()) return UAPLEX_BadNotSupported;
        uaplex_method_spec spec{};
        spec.hdr = UAPLEX_HEADER_INIT(uaplex_method_spec, UAPLEX_STYPE_METHOD_SPEC);
        spec.method_id = &method;
        spec.object_type_id = object_type;
        spec.call = fn;
        spec.user = user;
        return ctx_.api()->method_bind(ctx_.raw(), &spec);
    }
    // Calls of `method` (any node, e.g. one a NodeSet2 file defined) run self->*Fn, a member
    // `uaplex_status T::fn(MethodCall&)`. Worker threads, concurrently.
    template <auto Fn>
    uaplex_status implement_method(
        const uaplex_nodeid& method,
        typename detail::MethodOwner<decltype(Fn)>::type* self) const noexcept {
        return bind_method(method, nullptr, &detail::method_trampoline<Fn>, self);
    }
    // Calls of the method `method` of `object_type` on any instance of the type or of its
    // subtypes (also of the instance's own copy of the method) run self->*Fn.
    template <auto Fn>
    uaplex_status implement_type_method(
        const uaplex_nodeid& object_type, const uaplex_nodeid& method,
        typename detail::MethodOwner<decltype(Fn)>::type* self) const noexcept {
        return bind_method(method, &object_type, &detail::method_trampoline<Fn>, self);
    }
    // Adds the InputArguments (or, `output`, OutputArguments) property `property` of
    // `method`: HasProperty, PropertyType, DataType Argument, an array of the arguments.
    uaplex_status add_arguments(const uaplex_nodeid& method, const uaplex_nodeid& property,
                                bool output, std::initializer_list<ArgumentDef> args) const;
    // Adds the read-only property `name` (a namespace-0 browse name) of `node`: HasProperty,
    // PropertyType, DataType `data_type` (ns0), scalar `value` (borrowed for the call).
    uaplex_status add_property(const uaplex_nodeid& node, const uaplex_nodeid& property,
                               std::string_view name, uint32_t data_type,
                               const uaplex_variant& value) const;
    // The EURange property of an analog item (Part 8 5.3.2): the value range a Percent
    // deadband of a monitored item refers to.
    uaplex_status add_eu_range(const uaplex_nodeid& node, const uaplex_nodeid& property, double low,
                               double high) const;
    // The EngineeringUnits property (Part 8 5.6.3), a unit by its UNECE common code ("CEL").
    uaplex_status add_engineering_units(const uaplex_nodeid& node, const uaplex_nodeid& property,
                                        std::string_view unece_code, std::string_view display,
                                        std::string_view description) const;

    // --- a model that changes while the server runs (nodes_add, nodes_delete,
    // reference_delete, since 1.12): any thread, at any time; each call is one
    // GeneralModelChangeEvent. False when the host is older than 1.12 (the calls then answer
    // BadNotSupported).
    bool model_changes_available() const noexcept {
        const auto* api = ctx_.api();
        return api && UAPLEX_FIELD_OR(api, uaplex_host_api, reference_delete, nullptr) != nullptr;
    }
    // Adds nodes[i] in order (a later one may name an earlier one as its parent); results[i]
    // (as many as nodes) is what was answered for nodes[i].
    uaplex_status add_nodes(std::span<NodeSpec> nodes, std::span<uaplex_status> results) const;
    // Deletes nodes this plugin added with their references (and, delete_target_references,
    // the references other nodes hold to them); results[i] for ids[i].
    uaplex_status delete_nodes(std::span<const uaplex_nodeid> ids, bool delete_target_references,
                               std::span<uaplex_status> results) const noexcept {
        if (!model_changes_available()) return UAPLEX_BadNotSupported;
        if (ids.size() != results.size()) return UAPLEX_BadInvalidArgument;
        return ctx_.api()->nodes_delete(ctx_.raw(), ids.data(), ids.size(),
                                        delete_target_references ? 1 : 0, results.data());
    }
    uaplex_status delete_reference(const uaplex_nodeid& source, uint32_t reference_type,
                                   const uaplex_nodeid& target, bool bidirectional) const noexcept {
        if (!model_changes_available()) return UAPLEX_BadNotSupported;
        uaplex_nodeid type = numeric_id(0, reference_type);
        return ctx_.api()->reference_delete(ctx_.raw(), &source, &type, &target,
                                            bidirectional ? 1 : 0);
    }

  private:
    Context ctx_;
};

// A uaplex_node_spec with its header set and the NodeIds it points to held by value.
struct NodeSpec {
    uaplex_node_spec spec{};
    uaplex_nodeid id{}, parent{}, reference_type{}, type_definition{}, data_type{};
    uaplex_qualifiedname browse_name{};

    NodeSpec(uint32_t node_class, const uaplex_nodeid& node_id, const uaplex_nodeid& parent_id,
             uint32_t reference, const uaplex_qualifiedname& name) noexcept
        : id(node_id),
          parent(parent_id),
          reference_type(numeric_id(0, reference)),
          browse_name(name) {
        spec.hdr = UAPLEX_HEADER_INIT(uaplex_node_spec, UAPLEX_STYPE_NODE_SPEC);
        spec.node_class = node_class;
        spec.value_rank = -1;
        spec.access_level = 1;  // CurrentRead
    }
    // Pointers refreshed on every use, so a NodeSpec may be copied or moved freely.
    const uaplex_node_spec& get() noexcept {
        spec.node_id = &id;
        spec.parent_id = &parent;
        spec.reference_type_id = &reference_type;
        spec.browse_name = &browse_name;
        if (type_definition.identifier.numeric != 0 || type_definition.namespace_index != 0)
            spec.type_definition = &type_definition;
        if (data_type.identifier.numeric != 0 || data_type.namespace_index != 0)
            spec.data_type = &data_type;
        return spec;
    }
};

inline NodeSpec object_spec(const uaplex_nodeid& id, const uaplex_nodeid& parent,
                            uint32_t reference, const uaplex_qualifiedname& name,
                            uint32_t type_definition) noexcept {
    NodeSpec s(1, id, parent, reference, name);
    s.type_definition = numeric_id(0, type_definition);
    return s;
}
inline NodeSpec variable_spec(const uaplex_nodeid& id, const uaplex_nodeid& parent,
                              uint32_t reference, const uaplex_qualifiedname& name,
                              uint32_t data_type, int32_t value_rank,
                              uint32_t access_level) noexcept {
    NodeSpec s(2, id, parent, reference, name);
    s.data_type = numeric_id(0, data_type);
    s.spec.value_rank = value_rank;
    s.spec.access_level = access_level;
    return s;
}
inline NodeSpec method_spec(const uaplex_nodeid& id, const uaplex_nodeid& parent,
                            const uaplex_qualifiedname& name, uaplex_method_fn fn,
                            void* user) noexcept {
    NodeSpec s(4, id, parent, 47 /* HasComponent */, name);
    s.spec.call = fn;
    s.spec.user = user;
    return s;
}

inline uaplex_status AddressSpace::add_nodes(std::span<NodeSpec> nodes,
                                             std::span<uaplex_status> results) const {
    if (!model_changes_available()) return UAPLEX_BadNotSupported;
    if (nodes.size() != results.size()) return UAPLEX_BadInvalidArgument;
    std::vector<const uaplex_node_spec*> specs;
    specs.reserve(nodes.size());
    for (NodeSpec& n : nodes) specs.push_back(&n.get());
    return ctx_.api()->nodes_add(ctx_.raw(), specs.data(), specs.size(), results.data());
}

inline uaplex_status AddressSpace::add_arguments(const uaplex_nodeid& method,
                                                 const uaplex_nodeid& property, bool output,
                                                 std::initializer_list<ArgumentDef> args) const {
    std::vector<BinaryBody> bodies;
    bodies.reserve(args.size());
    for (const ArgumentDef& a : args)
        bodies.push_back(argument_body(a.name, a.data_type, a.value_rank, a.description));
    std::vector<uaplex_extensionobject> eos;
    eos.reserve(bodies.size());
    for (const BinaryBody& b : bodies) eos.push_back(b.extension_object(kArgumentBinary));
    uaplex_datavalue value =
        data_value(array(UAPLEX_TYPE_EXTENSIONOBJECT, int32_t(eos.size()), eos.data()));
    NodeSpec p = variable_spec(property, method, 46 /* HasProperty */,
                               qualified_name(0, output ? "OutputArguments" : "InputArguments"),
                               296 /* Argument */, 1, 1 /* CurrentRead */);
    p.type_definition = numeric_id(0, 68);  // PropertyType
    uint32_t dims[1] = {uint32_t(eos.size())};
    p.spec.array_dimensions_count = 1;
    p.spec.array_dimensions = dims;
    p.spec.value = &value;
    return add(p.get());
}

inline uaplex_status AddressSpace::add_property(const uaplex_nodeid& node,
                                                const uaplex_nodeid& property,
                                                std::string_view name, uint32_t data_type,
                                                const uaplex_variant& value) const {
    uaplex_datavalue dv = data_value(value);
    NodeSpec p = variable_spec(property, node, 46 /* HasProperty */, qualified_name(0, name),
                               data_type, -1, 1 /* CurrentRead */);
    p.type_definition = numeric_id(0, 68);  // PropertyType
    p.spec.value = &dv;
    return add(p.get());
}

inline uaplex_status AddressSpace::add_eu_range(const uaplex_nodeid& node,
                                                const uaplex_nodeid& property, double low,
                                                double high) const {
    BinaryBody body = range_body(low, high);
    uaplex_extensionobject eo = body.extension_object(kRangeBinary);
    return add_property(node, property, "EURange", 884 /* Range */,
                        boxed(UAPLEX_TYPE_EXTENSIONOBJECT, &eo));
}

inline uaplex_status AddressSpace::add_engineering_units(const uaplex_nodeid& node,
                                                         const uaplex_nodeid& property,
                                                         std::string_view unece_code,
                                                         std::string_view display,
                                                         std::string_view description) const {
    BinaryBody body = eu_information_body(unece_code, display, description);
    uaplex_extensionobject eo = body.extension_object(kEUInformationBinary);
    return add_property(node, property, "EngineeringUnits", 887 /* EUInformation */,
                        boxed(UAPLEX_TYPE_EXTENSIONOBJECT, &eo));
}

// Base for node managers that only add nodes to the kernel's store: no owned namespaces.
class StoreNodeManager : public NodeManager {
  public:
    using NodeManager::NodeManager;
    uaplex_status namespace_count(size_t* out) override {
        *out = 0;
        return UAPLEX_Good;
    }
    uaplex_status namespace_uri(size_t, uaplex_str*) override { return UAPLEX_BadOutOfRange; }

  protected:
    AddressSpace space() const noexcept { return AddressSpace(ctx_); }
};

}  // namespace uaplex::sdk
