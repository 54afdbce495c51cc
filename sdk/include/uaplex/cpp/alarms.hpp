// SPDX-License-Identifier: Apache-2.0
// C++ helpers for alarms of a plugin (host API condition_create and condition_set, since
// 1.13): create a condition of a ConditionType subtype on a source node, drive its state, and
// hear of Acknowledge, Confirm, AddComment, Enable, Disable and the shelving methods through a
// member function that may refuse them. Header-only; nothing here links to the kernel.
//
//     class Pump : public uaplex::sdk::NodeManager {
//         uaplex::sdk::Alarm overheat_;
//         uaplex_status on_alarm(const uaplex::sdk::AlarmCall& call);  // worker threads
//         uaplex_status start() override {  // create: while the node managers start
//             return overheat_.create<&Pump::on_alarm>(ctx_, spec, this);
//         }
//         void tick() { overheat_.set_active(temp > 90, 800, "too hot"); }  // any thread
//     };
#pragma once

#include <string>
#include <string_view>

#include "uaplex/cpp/address_space.hpp"
#include "uaplex/node_manager.h"

namespace uaplex::sdk {

// Namespace-0 ids of Part 9 a plugin names (types, methods, limit states).
namespace part9 {
inline constexpr uint32_t kConditionType = 2782;
inline constexpr uint32_t kAcknowledgeableConditionType = 2881;
inline constexpr uint32_t kAlarmConditionType = 2915;
inline constexpr uint32_t kExclusiveLevelAlarmType = 9482;
inline constexpr uint32_t kNonExclusiveLevelAlarmType = 10060;
inline constexpr uint32_t kOffNormalAlarmType = 10637;
inline constexpr uint32_t kEnable = 9027;
inline constexpr uint32_t kDisable = 9028;
inline constexpr uint32_t kAddComment = 9029;
inline constexpr uint32_t kAcknowledge = 9111;
inline constexpr uint32_t kConfirm = 9113;
inline constexpr uint32_t kUnshelve = 2947;
inline constexpr uint32_t kOneShotShelve = 2948;
inline constexpr uint32_t kTimedShelve = 2949;
inline constexpr uint32_t kLimitHighHigh = 9329;
inline constexpr uint32_t kLimitHigh = 9331;
inline constexpr uint32_t kLimitLow = 9333;
inline constexpr uint32_t kLimitLowLow = 9335;
}  // namespace part9

// One method call on a plugin's condition, as its callback sees it (views valid for the
// callback only).
struct AlarmCall {
    uint32_t method = 0;          // part9::kAcknowledge, ...
    std::string_view user;        // the caller: user name, certificate subject or "anonymous"
    std::string_view comment;     // AddComment, Acknowledge, Confirm: the comment's text
    std::string_view locale;      // and its locale
    double shelving_time_ms = 0;  // TimedShelve
    bool branch = false;          // the EventId names a branch, not the current state
    const uaplex_condition_call* raw = nullptr;
};

// What to create: the condition's NodeId, its type (a part9 type id), its BrowseName (the
// ConditionName) and its source (an existing node; the parent too unless `parent` is set).
struct AlarmSpec {
    uaplex_nodeid id{};
    uint32_t type = part9::kAlarmConditionType;  // a namespace-0 type; or set type_id
    const uaplex_nodeid* type_id = nullptr;      // a type of another namespace
    std::string name;
    uaplex_nodeid source{};
    const uaplex_nodeid* parent = nullptr;
    bool branches = false;  // UAPLEX_CONDITION_BRANCHES
};

namespace detail {
template <class F>
struct AlarmOwner;
template <class T>
struct AlarmOwner<uaplex_status (T::*)(const AlarmCall&)> {
    using type = T;
};
template <auto Fn>
uaplex_status alarm_trampoline(void* user, const uaplex_condition_call* call) noexcept {
    using T = typename AlarmOwner<decltype(Fn)>::type;
    T* self = static_cast<T*>(user);
    AlarmCall c;
    c.method = call->method;
    c.user = std::string_view(call->user.data ? call->user.data : "", call->user.len);
    if (call->comment != nullptr) {
        if (call->comment->text.length > 0)
            c.comment =
                std::string_view(call->comment->text.data, size_t(call->comment->text.length));
        if (call->comment->locale.length > 0)
            c.locale =
                std::string_view(call->comment->locale.data, size_t(call->comment->locale.length));
    }
    c.shelving_time_ms = call->shelving_time_ms;
    c.branch = call->branch_id != nullptr;
    c.raw = call;
    return guard(context_of(self), "alarm callback", [&] { return (self->*Fn)(c); });
}
}  // namespace detail

// A condition of the plugin. The object keeps a copy of the condition's NodeId; the callback's
// owner (`self`) must stay valid until the node manager's destroy (the kernel calls it while
// it serves requests).
class Alarm {
  public:
    Alarm() = default;
    Alarm(const Alarm&) = delete;  // the NodeId points into the object
    Alarm& operator=(const Alarm&) = delete;

    // False when the host is older than 1.13 (create and set then answer BadNotSupported).
    static bool available(const Context& ctx) noexcept {
        const auto* api = ctx.api();
        return api && UAPLEX_FIELD_OR(api, uaplex_host_api, condition_create, nullptr) != nullptr &&
               UAPLEX_FIELD_OR(api, uaplex_host_api, condition_set, nullptr) != nullptr;
    }

    // Creates the condition; calls of its methods run self->*Fn, a member
    // `uaplex_status T::fn(const AlarmCall&)` (worker threads, concurrently; no kernel lock
    // held; Bad refuses the call). While the node managers start (create or start).
    template <auto Fn>
    uaplex_status create(const Context& ctx, const AlarmSpec& spec,
                         typename detail::AlarmOwner<decltype(Fn)>::type* self) {
        return create_raw(ctx, spec, &detail::alarm_trampoline<Fn>, self);
    }
    // The same without a callback.
    uaplex_status create(const Context& ctx, const AlarmSpec& spec) {
        return create_raw(ctx, spec, nullptr, nullptr);
    }
    uaplex_status create_raw(const Context& ctx, const AlarmSpec& spec, uaplex_condition_call_fn fn,
                             void* user) {
        if (!available(ctx)) return UAPLEX_BadNotSupported;
        ctx_ = ctx;
        keep(spec.id);
        uaplex_nodeid type = numeric_id(0, spec.type);
        uaplex_qualifiedname name = qualified_name(id_.namespace_index, spec.name);
        uaplex_condition_spec c{};
        c.hdr = UAPLEX_HEADER_INIT(uaplex_condition_spec, UAPLEX_STYPE_CONDITION_SPEC);
        c.flags = spec.branches ? UAPLEX_CONDITION_BRANCHES : 0u;
        c.condition_id = &id_;
        c.type_id = spec.type_id ? spec.type_id : &type;
        c.browse_name = &name;
        c.source_id = &spec.source;
        c.parent_id = spec.parent;
        c.call = fn;
        c.user = user;
        return ctx.api()->condition_create(ctx.raw(), &c);
    }

    // The condition's NodeId (its ConditionId).
    const uaplex_nodeid& id() const noexcept { return id_; }

    // Sets what the plugin measures (any thread once the server runs; BadInvalidState before).
    uaplex_status set(const uaplex_condition_state& state) const noexcept {
        if (!available(ctx_)) return UAPLEX_BadNotSupported;
        return ctx_.api()->condition_set(ctx_.raw(), &id_, &state);
    }
    // Active or not, with the severity (1..1000) and message of the change.
    uaplex_status set_active(bool active, uint16_t severity, std::string_view message = {},
                             std::string_view locale = "en") const noexcept {
        uaplex_localizedtext text = localized_text(locale, message);
        uaplex_condition_state s = state();
        s.mask = UAPLEX_CONDITION_SET_ACTIVE | UAPLEX_CONDITION_SET_SEVERITY;
        s.active = active ? 1 : 0;
        s.severity = severity;
        if (!message.empty()) {
            s.mask |= UAPLEX_CONDITION_SET_MESSAGE;
            s.message = &text;
        }
        return set(s);
    }
    // An exclusive limit alarm's state: active in `limit` (part9::kLimitHigh, ...) or, 0,
    // inactive.
    uaplex_status set_limit(uint32_t limit, uint16_t severity,
                            std::string_view message = {}) const noexcept {
        uaplex_localizedtext text = localized_text("en", message);
        uaplex_condition_state s = state();
        s.mask = UAPLEX_CONDITION_SET_ACTIVE | UAPLEX_CONDITION_SET_SEVERITY |
                 UAPLEX_CONDITION_SET_LIMIT_STATE;
        s.active = limit != 0 ? 1 : 0;
        s.severity = severity;
        s.limit_state = limit;
        if (!message.empty()) {
            s.mask |= UAPLEX_CONDITION_SET_MESSAGE;
            s.message = &text;
        }
        return set(s);
    }
    uaplex_status set_quality(uaplex_status quality) const noexcept {
        uaplex_condition_state s = state();
        s.mask = UAPLEX_CONDITION_SET_QUALITY;
        s.quality = quality;
        return set(s);
    }
    static uaplex_condition_state state() noexcept {
        uaplex_condition_state s{};
        s.hdr = UAPLEX_HEADER_INIT(uaplex_condition_state, UAPLEX_STYPE_CONDITION_STATE);
        return s;
    }

  private:
    void keep(const uaplex_nodeid& id) {
        id_ = id;
        if (id.identifier_type == UAPLEX_ID_STRING && id.identifier.string.length > 0) {
            id_text_.assign(id.identifier.string.data, size_t(id.identifier.string.length));
            id_ = string_id(id.namespace_index, id_text_);
        }
    }
    Context ctx_{nullptr};
    uaplex_nodeid id_{};
    std::string id_text_;
};

}  // namespace uaplex::sdk
