// SPDX-License-Identifier: Apache-2.0
#include <uaplex/host/host_api.hpp>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <string_view>

#include <uaplex/host/logging.hpp>
#include "uaplex/types.h"

namespace uaplex::host {

Metric* Metrics::getOrCreate(const std::string& name, uint32_t kind) {
    std::lock_guard lock(mutex_);
    auto& slot = metrics_[name];
    if (!slot) {
        slot = std::make_unique<Metric>();
        slot->kind = kind;
    }
    return slot.get();
}

bool Metrics::value(const std::string& name, int64_t& out) const {
    std::lock_guard lock(mutex_);
    auto it = metrics_.find(name);
    if (it == metrics_.end()) return false;
    out = it->second->value.load();
    return true;
}

std::vector<std::pair<std::string, int64_t>> Metrics::snapshot() const {
    std::lock_guard lock(mutex_);
    std::vector<std::pair<std::string, int64_t>> out;
    for (const auto& [k, v] : metrics_) out.emplace_back(k, v->value.load());
    return out;
}

std::vector<Metrics::Sample> Metrics::samples() const {
    std::vector<Sample> out;
    std::lock_guard lock(mutex_);
    out.reserve(metrics_.size());
    for (const auto& [k, v] : metrics_)
        out.push_back(Sample{k, v->value.load(std::memory_order_relaxed), v->kind});
    return out;
}

namespace {

// uaplex_log_level values are spdlog's level numbers, so levels pass through unchanged.
constexpr bool sameLevel(int ours, spdlog::level::level_enum theirs) {
    return ours == static_cast<int>(theirs);
}
static_assert(sameLevel(UAPLEX_LOG_TRACE, spdlog::level::trace) &&
              sameLevel(UAPLEX_LOG_DEBUG, spdlog::level::debug) &&
              sameLevel(UAPLEX_LOG_INFO, spdlog::level::info) &&
              sameLevel(UAPLEX_LOG_WARN, spdlog::level::warn) &&
              sameLevel(UAPLEX_LOG_ERROR, spdlog::level::err) &&
              sameLevel(UAPLEX_LOG_CRITICAL, spdlog::level::critical) &&
              sameLevel(UAPLEX_LOG_OFF, spdlog::level::off));

std::string_view view(uaplex_str s) {
    return s.data ? std::string_view(s.data, s.len) : "";
}

// Any exception inside the host is turned into a status as well: the table is C.
template <typename Fn>
uaplex_status guarded(Fn&& fn) noexcept {
    try {
        return fn();
    } catch (...) {
        return UAPLEX_BadInternalError;
    }
}

uaplex_status api_log(uaplex_plugin_ctx* ctx, uint32_t level, uaplex_str message) {
    if (!ctx) return UAPLEX_BadInvalidArgument;
    return guarded([&] {
        if (level > UAPLEX_LOG_CRITICAL) level = UAPLEX_LOG_CRITICAL;
        logger()->log(static_cast<spdlog::level::level_enum>(level), "[{}] {}", ctx->name,
                      view(message));
        return UAPLEX_Good;
    });
}

uaplex_status api_log_level(uaplex_plugin_ctx* ctx, uint32_t* out) {
    if (!ctx || !out) return UAPLEX_BadInvalidArgument;
    *out = static_cast<uint32_t>(logger()->level());
    return UAPLEX_Good;
}

uaplex_status api_monotonic_ns(uaplex_plugin_ctx*, uint64_t* out) {
    if (!out) return UAPLEX_BadInvalidArgument;
    *out = static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                     std::chrono::steady_clock::now().time_since_epoch())
                                     .count());
    return UAPLEX_Good;
}

uaplex_status api_utc_now(uaplex_plugin_ctx*, int64_t* out) {
    if (!out) return UAPLEX_BadInvalidArgument;
    auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                  std::chrono::system_clock::now().time_since_epoch())
                  .count();
    *out = UAPLEX_DATETIME_UNIX_EPOCH + ns / 100;  // DateTime ticks are 100 ns
    return UAPLEX_Good;
}

uaplex_status api_timer_start(uaplex_plugin_ctx* ctx, uint64_t delay_ms, uint64_t period_ms,
                              uaplex_timer_fn fn, void* user, uaplex_timer** out) {
    if (!ctx || !fn || !out) return UAPLEX_BadInvalidArgument;
    return guarded([&] {
        uint64_t id = ctx->services->timers.start(std::chrono::milliseconds(delay_ms),
                                                  std::chrono::milliseconds(period_ms), fn, user);
        {
            std::lock_guard lock(ctx->mutex);
            ctx->timers.push_back(id);
        }
        *out = reinterpret_cast<uaplex_timer*>(static_cast<uintptr_t>(id));
        return UAPLEX_Good;
    });
}

uaplex_status api_timer_cancel(uaplex_plugin_ctx* ctx, uaplex_timer* timer) {
    if (!ctx || !timer) return UAPLEX_BadInvalidArgument;
    return guarded([&] {
        auto id = static_cast<uint64_t>(reinterpret_cast<uintptr_t>(timer));
        {
            std::lock_guard lock(ctx->mutex);
            auto it = std::find(ctx->timers.begin(), ctx->timers.end(), id);
            if (it == ctx->timers.end()) return UAPLEX_BadNotFound;
            *it = ctx->timers.back();
            ctx->timers.pop_back();
        }
        ctx->services->timers.cancel(id);
        return UAPLEX_Good;
    });
}

uaplex_status api_metric_register(uaplex_plugin_ctx* ctx, uaplex_str name, uint32_t kind,
                                  uaplex_metric** out) {
    if (!ctx || !out || !name.data || name.len == 0) return UAPLEX_BadInvalidArgument;
    if (kind != UAPLEX_METRIC_COUNTER && kind != UAPLEX_METRIC_GAUGE)
        return UAPLEX_BadInvalidArgument;
    return guarded([&] {
        Metric* m =
            ctx->services->metrics.getOrCreate(ctx->name + "." + std::string(view(name)), kind);
        *out = reinterpret_cast<uaplex_metric*>(m);
        return UAPLEX_Good;
    });
}

uaplex_status api_metric_add(uaplex_plugin_ctx*, uaplex_metric* metric, int64_t delta) {
    if (!metric) return UAPLEX_BadInvalidArgument;
    auto* m = reinterpret_cast<Metric*>(metric);
    if (m->kind == UAPLEX_METRIC_COUNTER && delta < 0) return UAPLEX_BadInvalidArgument;
    m->value.fetch_add(delta, std::memory_order_relaxed);
    return UAPLEX_Good;
}

uaplex_status api_metric_set(uaplex_plugin_ctx*, uaplex_metric* metric, int64_t value) {
    if (!metric) return UAPLEX_BadInvalidArgument;
    auto* m = reinterpret_cast<Metric*>(metric);
    if (m->kind != UAPLEX_METRIC_GAUGE) return UAPLEX_BadNotSupported;
    m->value.store(value, std::memory_order_relaxed);
    return UAPLEX_Good;
}

uaplex_status api_mem_alloc(uaplex_plugin_ctx*, size_t size, size_t alignment, void** out) {
    if (!out) return UAPLEX_BadInvalidArgument;
    if (alignment == 0) alignment = alignof(std::max_align_t);
    if ((alignment & (alignment - 1)) != 0) return UAPLEX_BadInvalidArgument;
    if (alignment < sizeof(void*)) alignment = sizeof(void*);
    void* p = nullptr;
    if (posix_memalign(&p, alignment, size ? size : 1) != 0) return UAPLEX_BadOutOfMemory;
    *out = p;
    return UAPLEX_Good;
}

uaplex_status api_mem_free(uaplex_plugin_ctx*, void* p) {
    std::free(p);
    return UAPLEX_Good;
}

const toml::node* find(uaplex_plugin_ctx* ctx, uaplex_str key) {
    if (!ctx || !key.data) return nullptr;
    return ctx->settings.at_path(view(key)).node();
}

uaplex_status api_config_type(uaplex_plugin_ctx* ctx, uaplex_str key, uint32_t* out) {
    if (!out) return UAPLEX_BadInvalidArgument;
    return guarded([&] {
        const toml::node* n = find(ctx, key);
        if (!n) return UAPLEX_BadNotFound;
        switch (n->type()) {
            case toml::node_type::boolean:
                *out = UAPLEX_CONFIG_BOOL;
                break;
            case toml::node_type::integer:
                *out = UAPLEX_CONFIG_INTEGER;
                break;
            case toml::node_type::floating_point:
                *out = UAPLEX_CONFIG_FLOAT;
                break;
            case toml::node_type::string:
                *out = UAPLEX_CONFIG_STRING;
                break;
            case toml::node_type::array:
                *out = UAPLEX_CONFIG_ARRAY;
                break;
            case toml::node_type::table:
                *out = UAPLEX_CONFIG_TABLE;
                break;
            default:
                *out = UAPLEX_CONFIG_NONE;
                break;  // dates and times
        }
        return UAPLEX_Good;
    });
}

uaplex_status api_config_bool(uaplex_plugin_ctx* ctx, uaplex_str key, int32_t* out) {
    if (!out) return UAPLEX_BadInvalidArgument;
    return guarded([&] {
        const toml::node* n = find(ctx, key);
        if (!n) return UAPLEX_BadNotFound;
        if (!n->is_boolean()) return UAPLEX_BadTypeMismatch;
        *out = n->as_boolean()->get() ? 1 : 0;
        return UAPLEX_Good;
    });
}

uaplex_status api_config_int(uaplex_plugin_ctx* ctx, uaplex_str key, int64_t* out) {
    if (!out) return UAPLEX_BadInvalidArgument;
    return guarded([&] {
        const toml::node* n = find(ctx, key);
        if (!n) return UAPLEX_BadNotFound;
        if (!n->is_integer()) return UAPLEX_BadTypeMismatch;
        *out = n->as_integer()->get();
        return UAPLEX_Good;
    });
}

uaplex_status api_config_float(uaplex_plugin_ctx* ctx, uaplex_str key, double* out) {
    if (!out) return UAPLEX_BadInvalidArgument;
    return guarded([&] {
        const toml::node* n = find(ctx, key);
        if (!n) return UAPLEX_BadNotFound;
        if (n->is_integer()) {
            *out = static_cast<double>(n->as_integer()->get());
        } else if (n->is_floating_point()) {
            *out = n->as_floating_point()->get();
        } else {
            return UAPLEX_BadTypeMismatch;
        }
        return UAPLEX_Good;
    });
}

uaplex_status api_config_string(uaplex_plugin_ctx* ctx, uaplex_str key, uaplex_str* out) {
    if (!out) return UAPLEX_BadInvalidArgument;
    return guarded([&] {
        const toml::node* n = find(ctx, key);
        if (!n) return UAPLEX_BadNotFound;
        if (!n->is_string()) return UAPLEX_BadTypeMismatch;
        // The settings table is never modified after create, so the storage is stable.
        const std::string& s = n->as_string()->get();
        *out = uaplex_str{s.data(), s.size()};
        return UAPLEX_Good;
    });
}

uaplex_status api_config_key_count(uaplex_plugin_ctx* ctx, size_t* out) {
    if (!ctx || !out) return UAPLEX_BadInvalidArgument;
    *out = ctx->keys.size();
    return UAPLEX_Good;
}

uaplex_status api_config_key_at(uaplex_plugin_ctx* ctx, size_t index, uaplex_str* out) {
    if (!ctx || !out) return UAPLEX_BadInvalidArgument;
    if (index >= ctx->keys.size()) return UAPLEX_BadOutOfRange;
    *out = uaplex_str{ctx->keys[index].data(), ctx->keys[index].size()};
    return UAPLEX_Good;
}

uaplex_status api_config_unknown_key(uaplex_plugin_ctx* ctx, uaplex_str key) {
    if (!ctx || !key.data) return UAPLEX_BadInvalidArgument;
    return guarded([&] {
        std::string k(view(key));
        {
            std::lock_guard lock(ctx->mutex);
            if (!ctx->warned_keys.insert(k).second) return UAPLEX_Good;
        }
        std::string where = ctx->position;
        if (auto it = ctx->key_positions.find(k); it != ctx->key_positions.end())
            where = it->second;
        logger()->warn("{}: unknown key '{}' in [plugins.{}] (ignored by plugin '{}')", where, k,
                       ctx->name, ctx->name);
        return UAPLEX_Good;
    });
}

// --- address space: forwarded to the hooks the services installed ---

AddressSpaceHooks* hooks(uaplex_plugin_ctx* ctx) {
    return ctx && ctx->services ? ctx->services->address_space.load(std::memory_order_acquire)
                                : nullptr;
}

uaplex_status api_namespace_register(uaplex_plugin_ctx* ctx, uaplex_str uri, uint16_t* out) {
    auto* h = hooks(ctx);
    if (!out || !uri.data) return UAPLEX_BadInvalidArgument;
    return h ? h->namespaceRegister(ctx, uri, out) : UAPLEX_BadInvalidState;
}

uaplex_status api_node_add(uaplex_plugin_ctx* ctx, const uaplex_node_spec* spec) {
    auto* h = hooks(ctx);
    if (!spec) return UAPLEX_BadInvalidArgument;
    return h ? h->nodeAdd(ctx, spec) : UAPLEX_BadInvalidState;
}

uaplex_status api_reference_add(uaplex_plugin_ctx* ctx, const uaplex_nodeid* source,
                                const uaplex_nodeid* reference_type, const uaplex_nodeid* target) {
    auto* h = hooks(ctx);
    if (!source || !reference_type || !target) return UAPLEX_BadInvalidArgument;
    return h ? h->referenceAdd(ctx, source, reference_type, target) : UAPLEX_BadInvalidState;
}

uaplex_status api_value_set(uaplex_plugin_ctx* ctx, const uaplex_nodeid* node_id,
                            const uaplex_datavalue* value) {
    auto* h = hooks(ctx);
    if (!node_id || !value) return UAPLEX_BadInvalidArgument;
    return h ? h->valueSet(ctx, node_id, value) : UAPLEX_BadInvalidState;
}

uaplex_status api_raise_event(uaplex_plugin_ctx* ctx, const uaplex_event_spec* spec) {
    auto* h = hooks(ctx);
    if (!spec || !UAPLEX_HAS_FIELD(spec, uaplex_event_spec, fields) || !spec->event_type ||
        !spec->source_node || (spec->field_count && !spec->fields))
        return UAPLEX_BadInvalidArgument;
    return h ? h->raiseEvent(ctx, spec) : UAPLEX_BadInvalidState;
}

uaplex_status api_method_bind(uaplex_plugin_ctx* ctx, const uaplex_method_spec* spec) {
    auto* h = hooks(ctx);
    if (!spec || !UAPLEX_HAS_FIELD(spec, uaplex_method_spec, user) || !spec->method_id ||
        !spec->call)
        return UAPLEX_BadInvalidArgument;
    return h ? h->methodBind(ctx, spec) : UAPLEX_BadInvalidState;
}

uaplex_status api_nodes_add(uaplex_plugin_ctx* ctx, const uaplex_node_spec* const* specs,
                            size_t count, uaplex_status* results) {
    auto* h = hooks(ctx);
    if ((count > 0 && (!specs || !results))) return UAPLEX_BadInvalidArgument;
    return h ? h->nodesAdd(ctx, specs, count, results) : UAPLEX_BadInvalidState;
}

uaplex_status api_nodes_delete(uaplex_plugin_ctx* ctx, const uaplex_nodeid* ids, size_t count,
                               int32_t delete_target_references, uaplex_status* results) {
    auto* h = hooks(ctx);
    if ((count > 0 && (!ids || !results))) return UAPLEX_BadInvalidArgument;
    return h ? h->nodesDelete(ctx, ids, count, delete_target_references != 0, results)
             : UAPLEX_BadInvalidState;
}

uaplex_status api_reference_delete(uaplex_plugin_ctx* ctx, const uaplex_nodeid* source,
                                   const uaplex_nodeid* reference_type, const uaplex_nodeid* target,
                                   int32_t delete_bidirectional) {
    auto* h = hooks(ctx);
    if (!source || !reference_type || !target) return UAPLEX_BadInvalidArgument;
    return h ? h->referenceDelete(ctx, source, reference_type, target, delete_bidirectional != 0)
             : UAPLEX_BadInvalidState;
}

uaplex_status api_condition_create(uaplex_plugin_ctx* ctx, const uaplex_condition_spec* spec) {
    auto* h = hooks(ctx);
    if (!spec || !UAPLEX_HAS_FIELD(spec, uaplex_condition_spec, user) || !spec->condition_id ||
        !spec->type_id || !spec->browse_name || !spec->source_id)
        return UAPLEX_BadInvalidArgument;
    return h ? h->conditionCreate(ctx, spec) : UAPLEX_BadInvalidState;
}

uaplex_status api_condition_set(uaplex_plugin_ctx* ctx, const uaplex_nodeid* condition,
                                const uaplex_condition_state* state) {
    auto* h = hooks(ctx);
    if (!condition || !state || !UAPLEX_HAS_FIELD(state, uaplex_condition_state, fields) ||
        (state->field_count && !state->fields))
        return UAPLEX_BadInvalidArgument;
    return h ? h->conditionSet(ctx, condition, state) : UAPLEX_BadInvalidState;
}

const uaplex_host_api kTable = {
    UAPLEX_HEADER_INIT(uaplex_host_api, UAPLEX_STYPE_HOST_API),
    UAPLEX_ABI_VERSION,
    0,
    &api_log,
    &api_log_level,
    &api_monotonic_ns,
    &api_utc_now,
    &api_timer_start,
    &api_timer_cancel,
    &api_metric_register,
    &api_metric_add,
    &api_metric_set,
    &api_mem_alloc,
    &api_mem_free,
    &api_config_type,
    &api_config_bool,
    &api_config_int,
    &api_config_float,
    &api_config_string,
    &api_config_key_count,
    &api_config_key_at,
    &api_config_unknown_key,
    &api_namespace_register,
    &api_node_add,
    &api_reference_add,
    &api_value_set,
    &api_raise_event,
    &api_method_bind,
    &api_nodes_add,
    &api_nodes_delete,
    &api_reference_delete,
    &api_condition_create,
    &api_condition_set,
};

}  // namespace

const uaplex_host_api* hostApiTable() {
    return &kTable;
}

}  // namespace uaplex::host
