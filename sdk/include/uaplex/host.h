// SPDX-License-Identifier: Apache-2.0
/* The host API table: everything a plugin may ask of the kernel. Plugins link to nothing
 * in the kernel; logging, clocks, timers, metrics, allocation and configuration come
 * through this table. It is append-only: each group of entries added after 1.0 sits below
 * its `since 1.N` line (address space since 1.1, events since 1.3, a model that changes
 * while the server runs since 1.12, alarms since 1.13).
 *
 * Every entry takes the plugin context the host handed to the plugin's factory `create`
 * (it identifies the plugin: its name goes into each log line, its TOML table is the
 * configuration view). The context stays valid until the instance's destroy returns.
 */
#ifndef UAPLEX_HOST_H
#define UAPLEX_HOST_H

#include "uaplex/abi.h"

UAPLEX_BEGIN_DECLS

/* Opaque, owned by the host: one per plugin instance. */
typedef struct uaplex_plugin_ctx uaplex_plugin_ctx;
/* Opaque host objects; handles are owned by the host and freed by the matching entry. */
typedef struct uaplex_timer uaplex_timer;
typedef struct uaplex_metric uaplex_metric;
/* Address-space types (uaplex/types.h, uaplex/node_manager.h), only pointed to here. */
struct uaplex_nodeid;
struct uaplex_datavalue;
struct uaplex_node_spec;
struct uaplex_event_spec;
struct uaplex_method_spec;
struct uaplex_condition_spec;
struct uaplex_condition_state;

typedef enum uaplex_log_level {
    UAPLEX_LOG_TRACE = 0,
    UAPLEX_LOG_DEBUG = 1,
    UAPLEX_LOG_INFO = 2,
    UAPLEX_LOG_WARN = 3,
    UAPLEX_LOG_ERROR = 4,
    UAPLEX_LOG_CRITICAL = 5,
    UAPLEX_LOG_OFF = 6
} uaplex_log_level;

typedef enum uaplex_metric_kind {
    UAPLEX_METRIC_COUNTER = 1, /* monotonically increasing; add only */
    UAPLEX_METRIC_GAUGE = 2    /* set or add (may go down) */
} uaplex_metric_kind;

typedef enum uaplex_config_type {
    UAPLEX_CONFIG_NONE = 0,
    UAPLEX_CONFIG_BOOL = 1,
    UAPLEX_CONFIG_INTEGER = 2,
    UAPLEX_CONFIG_FLOAT = 3,
    UAPLEX_CONFIG_STRING = 4,
    UAPLEX_CONFIG_ARRAY = 5,
    UAPLEX_CONFIG_TABLE = 6
} uaplex_config_type;

/* Timer callback: runs on the host's timer thread; must not block. */
typedef void (*uaplex_timer_fn)(void* user);

typedef struct uaplex_host_api {
    uaplex_header hdr;    /* UAPLEX_STYPE_HOST_API */
    uint32_t abi_version; /* UAPLEX_ABI_VERSION of the host */
    uint32_t reserved0;

    /* --- logging --- */
    /* Logs `message` (borrowed for the call) at `level`; the plugin's name is added by the
     * host. Any thread; does not block on I/O for stdout/stderr sinks. */
    uaplex_status (*log)(uaplex_plugin_ctx* ctx, uint32_t level, uaplex_str message);
    /* *out_level = the lowest level that is currently logged, so callers can skip
     * formatting. Any thread; must not block. */
    uaplex_status (*log_level)(uaplex_plugin_ctx* ctx, uint32_t* out_level);

    /* --- clocks --- */
    /* Monotonic time in nanoseconds since an arbitrary origin. Any thread; must not block. */
    uaplex_status (*monotonic_ns)(uaplex_plugin_ctx* ctx, uint64_t* out_ns);
    /* UTC as an OPC UA DateTime: 100 ns intervals since 1601-01-01. Tests may substitute a
     * fake clock here, so plugins read time only through these two entries. */
    uaplex_status (*utc_now)(uaplex_plugin_ctx* ctx, int64_t* out_datetime);

    /* --- timers --- */
    /* Runs fn(user) after `delay_ms`, then every `period_ms` if period_ms > 0. The handle is
     * owned by the host until timer_cancel. Any thread. */
    uaplex_status (*timer_start)(uaplex_plugin_ctx* ctx, uint64_t delay_ms, uint64_t period_ms,
                                 uaplex_timer_fn fn, void* user, uaplex_timer** out_timer);
    /* Cancels and frees the timer. When it returns the callback is not running and never
     * runs again. Any thread except the timer's own callback. Every timer of a plugin must
     * be cancelled before its destroy returns. */
    uaplex_status (*timer_cancel)(uaplex_plugin_ctx* ctx, uaplex_timer* timer);

    /* --- metrics --- */
    /* Registers (or finds) the metric "<plugin>.<name>" (name borrowed for the call). The
     * handle lives as long as the host; updating it is lock-free. Any thread. */
    uaplex_status (*metric_register)(uaplex_plugin_ctx* ctx, uaplex_str name, uint32_t kind,
                                     uaplex_metric** out_metric);
    /* Adds delta (counters: delta >= 0). Any thread; must not block; lock-free. */
    uaplex_status (*metric_add)(uaplex_plugin_ctx* ctx, uaplex_metric* metric, int64_t delta);
    /* Sets a gauge. Any thread; must not block; lock-free. */
    uaplex_status (*metric_set)(uaplex_plugin_ctx* ctx, uaplex_metric* metric, int64_t value);

    /* --- allocation --- */
    /* Allocates `size` bytes aligned to `alignment` (a power of two, or 0 for the default).
     * Owned by the caller; free only with mem_free. Any thread. */
    uaplex_status (*mem_alloc)(uaplex_plugin_ctx* ctx, size_t size, size_t alignment,
                               void** out_ptr);
    /* Frees memory from mem_alloc; NULL is a no-op. Any thread. */
    uaplex_status (*mem_free)(uaplex_plugin_ctx* ctx, void* ptr);

    /* --- configuration: read-only view of the plugin's TOML table --- */
    /* Keys are dotted paths relative to the plugin's table ("limits.max_queued"), borrowed
     * for the call. A missing key gives BadNotFound, a value of another type
     * BadTypeMismatch. Integers that do not fit give BadOutOfRange. Any thread. */
    uaplex_status (*config_type)(uaplex_plugin_ctx* ctx, uaplex_str key, uint32_t* out_type);
    uaplex_status (*config_bool)(uaplex_plugin_ctx* ctx, uaplex_str key, int32_t* out_value);
    uaplex_status (*config_int)(uaplex_plugin_ctx* ctx, uaplex_str key, int64_t* out_value);
    uaplex_status (*config_float)(uaplex_plugin_ctx* ctx, uaplex_str key, double* out_value);
    /* *out_value is borrowed from the host and stays valid until the instance is destroyed. */
    uaplex_status (*config_string)(uaplex_plugin_ctx* ctx, uaplex_str key, uaplex_str* out_value);
    /* Enumerates the top-level keys of the plugin's table (sorted by name): *out_count, then
     * key i (borrowed until destroy); index past the end gives BadOutOfRange. */
    uaplex_status (*config_key_count)(uaplex_plugin_ctx* ctx, size_t* out_count);
    uaplex_status (*config_key_at)(uaplex_plugin_ctx* ctx, size_t index, uaplex_str* out_key);
    /* The plugin declares that it does not know `key`; the host warns once, naming the
     * plugin, the key and the file position. Any thread. */
    uaplex_status (*config_unknown_key)(uaplex_plugin_ctx* ctx, uaplex_str key);

    /* --- since 1.1: address space ---
     * Nodes are added while node managers start (create or start, host main thread). Since
     * 1.12 node_add and reference_add also work once the server runs, from any thread (each
     * call is one change: one GeneralModelChangeEvent); structure changes are serialised by
     * the host, lookups never wait for them. Once the server runs a ReferenceType node is
     * refused (BadNodeClassInvalid). */
    /* *out_index = the namespace index of `uri` (borrowed for the call), registering it in
     * NamespaceArray if new. The server's own ApplicationUri gives 1. */
    uaplex_status (*namespace_register)(uaplex_plugin_ctx* ctx, uaplex_str uri,
                                        uint16_t* out_index);
    /* Adds a node to the kernel's store (see uaplex_node_spec). BadNodeIdExists,
     * BadParentNodeIdInvalid, BadNodeClassInvalid, BadInvalidArgument on failure,
     * BadResourceUnavailable when the store holds [server.limits] max_store_nodes. */
    uaplex_status (*node_add)(uaplex_plugin_ctx* ctx, const struct uaplex_node_spec* spec);
    /* Adds source --reference_type--> target and its inverse; either end may be a namespace-0
     * node. BadNodeIdUnknown when source is unknown. */
    uaplex_status (*reference_add)(uaplex_plugin_ctx* ctx, const struct uaplex_nodeid* source,
                                   const struct uaplex_nodeid* reference_type,
                                   const struct uaplex_nodeid* target);
    /* Replaces the stored value of a Variable (value borrowed; copied). No type check: the
     * plugin knows its nodes. Any thread; never blocks for long. */
    uaplex_status (*value_set)(uaplex_plugin_ctx* ctx, const struct uaplex_nodeid* node_id,
                               const struct uaplex_datavalue* value);

    /* --- since 1.3: events --- */
    /* Raises an event (see uaplex_event_spec; borrowed for the call). It reaches the event
     * items on its source node, on the source's notifiers (inverse HasEventSource and
     * HasNotifier, transitively) and on the Server object. BadNodeIdUnknown for an unknown
     * source, BadTypeDefinitionInvalid when the type is not BaseEventType or a subtype.
     * Any thread once the server runs; BadInvalidState before. */
    uaplex_status (*raise_event)(uaplex_plugin_ctx* ctx, const struct uaplex_event_spec* event);

    /* --- since 1.7: methods of any node --- */
    /* Implements a Method the plugin need not own: by its NodeId, or for all instances of an
     * ObjectType and its subtypes (see uaplex_method_spec; borrowed for the call). While node
     * managers start (create or start, host main thread); BadInvalidState once the server
     * runs. The method node may come from a node manager that starts later. BadEntryExists
     * for a second binding of the same method (and type), BadNodeClassInvalid when a known
     * method_id is no Method or a known object_type_id no ObjectType, BadInvalidArgument for
     * a NULL method_id or call. */
    uaplex_status (*method_bind)(uaplex_plugin_ctx* ctx, const struct uaplex_method_spec* spec);

    /* --- since 1.12: a model that changes while the server runs ---
     * Any thread, before or after the server starts; serialised with the other structure
     * changes. Each call is one change: once the server runs the Server object raises one
     * GeneralModelChangeEvent for it (its Changes name every node and reference end). A
     * plugin checks their presence against the table's struct_size (UAPLEX_HAS_FIELD). */
    /* Adds `count` nodes (specs[i] and what it points to borrowed for the call; NULL entries
     * answer BadInvalidArgument) in order, so a later spec may name an earlier one as its
     * parent. results[i] (caller's array of count) is what node_add answers for specs[i].
     * Returns Good when every item was tried, BadTooManyOperations above [server.limits]
     * max_nodes_per_node_management (nothing added), BadInvalidArgument for NULL arrays. */
    uaplex_status (*nodes_add)(uaplex_plugin_ctx* ctx, const struct uaplex_node_spec* const* specs,
                               size_t count, uaplex_status* results);
    /* Deletes `count` stored nodes this plugin added (node_ids borrowed for the call) with
     * their references and the other ends of those; with delete_target_references != 0 also
     * the references other nodes hold to them (Part 4 5.7.4). results[i]: Good,
     * BadNodeIdUnknown (not in the store, or twice in the call), BadUserAccessDenied (added
     * by someone else, or held by [persistence], [history] or [[alarms]]),
     * BadNodeClassInvalid (a ReferenceType). Monitored items of a deleted Variable get a
     * BadNodeIdUnknown data change. Memory comes back once no reader holds the node. Returns
     * as nodes_add does. */
    uaplex_status (*nodes_delete)(uaplex_plugin_ctx* ctx, const struct uaplex_nodeid* node_ids,
                                  size_t count, int32_t delete_target_references,
                                  uaplex_status* results);
    /* Deletes source --reference_type--> target (forward at the source; all borrowed for the
     * call) and, with delete_bidirectional != 0, its inverse at the target. The source must
     * be a node this plugin added or a namespace-0 node. BadSourceNodeIdInvalid (unknown
     * source), BadUserAccessDenied (another's node), BadReferenceTypeIdInvalid,
     * BadNotFound (no such reference). */
    uaplex_status (*reference_delete)(uaplex_plugin_ctx* ctx, const struct uaplex_nodeid* source,
                                      const struct uaplex_nodeid* reference_type,
                                      const struct uaplex_nodeid* target,
                                      int32_t delete_bidirectional);

    /* --- since 1.13: alarms from plugins --- */
    /* Creates a condition (see uaplex_condition_spec; borrowed for the call): the kernel adds
     * its Object below the parent, HasCondition from the source, and its state variables,
     * keeps its state and serves its methods, calling spec->call first. While node managers
     * start (create or start, host main thread); once the server runs, BadInvalidState
     * (the kernel takes conditions into its table when it starts). BadNodeIdExists, BadNodeIdUnknown (source or parent),
     * BadTypeDefinitionInvalid (no ConditionType subtype), BadInvalidArgument (NULL
     * condition_id, type_id, browse_name or source_id, or a struct shorter than its 1.13
     * layout). Beyond [server.limits] max_conditions a condition is logged when the server
     * starts and not served. */
    uaplex_status (*condition_create)(uaplex_plugin_ctx* ctx,
                                      const struct uaplex_condition_spec* spec);
    /* Sets what the plugin measures of a condition the kernel holds (see
     * uaplex_condition_state; borrowed for the call): the kernel changes its state and raises
     * its event (while enabled). Any thread once the server runs (BadInvalidState before);
     * it takes the condition table's locks briefly and never calls a plugin's condition
     * callback. BadNodeIdUnknown for a condition the kernel does not hold,
     * BadInvalidArgument for a NULL argument or a struct shorter than its 1.13 layout. */
    uaplex_status (*condition_set)(uaplex_plugin_ctx* ctx, const struct uaplex_nodeid* condition_id,
                                   const struct uaplex_condition_state* state);
} uaplex_host_api;

UAPLEX_END_DECLS

#endif /* UAPLEX_HOST_H */
