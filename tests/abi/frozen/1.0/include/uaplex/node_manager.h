/* Node managers (demo, benchmark layout, NodeSet2 loader, vendor ones): serve the nodes of
 * one or more namespaces. OPC UA values are the types of uaplex/types.h, only pointed to
 * here; helpers to build and read them arrive in the host API with address-space access.
 */
#ifndef UAPLEX_NODE_MANAGER_H
#define UAPLEX_NODE_MANAGER_H

#include "uaplex/plugin.h"

UAPLEX_BEGIN_DECLS

struct uaplex_nodeid;
struct uaplex_variant;
struct uaplex_datavalue;

/* One Read operation; borrowed for the call. */
typedef struct uaplex_read_item {
    uaplex_header hdr; /* UAPLEX_STYPE_NODE_MANAGER_READ_ITEM */
    uint32_t attribute_id;
    const struct uaplex_nodeid* node_id;
    uaplex_str index_range; /* empty when none */
    double max_age_ms;
} uaplex_read_item;

/* One Write operation; borrowed for the call. */
typedef struct uaplex_write_item {
    uaplex_header hdr; /* UAPLEX_STYPE_NODE_MANAGER_WRITE_ITEM */
    uint32_t attribute_id;
    const struct uaplex_nodeid* node_id;
    uaplex_str index_range;
    const struct uaplex_datavalue* value;
} uaplex_write_item;

/* One reference found by browse; borrowed for the sink call. */
typedef struct uaplex_reference {
    uaplex_header hdr; /* UAPLEX_STYPE_NODE_MANAGER_REFERENCE */
    int32_t is_forward;
    const struct uaplex_nodeid* reference_type_id;
    const struct uaplex_nodeid* target_id;
    uint32_t node_class;
} uaplex_reference;

/* Receives browse results; Bad stops the browse (e.g. the continuation limit). Same
 * thread as the browse call; must not block. */
typedef uaplex_status (*uaplex_reference_sink)(void* user, const uaplex_reference* reference);

/* Receives value changes of monitored nodes. Any thread; must not block. `value` borrowed. */
typedef uaplex_status (*uaplex_value_change_sink)(void* user, const struct uaplex_nodeid* node_id,
                                                  uint32_t attribute_id,
                                                  const struct uaplex_datavalue* value);

typedef struct uaplex_node_manager_params {
    uaplex_header hdr; /* UAPLEX_STYPE_NODE_MANAGER_PARAMS */
    uint32_t reserved0;
    uaplex_value_change_sink value_changed;
    void* user;
} uaplex_node_manager_params;

typedef struct uaplex_node_manager_ops {
    uaplex_header hdr; /* UAPLEX_STYPE_NODE_MANAGER_OPS */
    /* lifecycle (see uaplex_lifecycle_ops); start builds the nodes. */
    uaplex_status (*start)(void* self);
    uaplex_status (*stop)(void* self);
    uaplex_status (*destroy)(void* self);

    /* Namespace URIs served, in order; *out borrowed until destroy. Host main thread. */
    uaplex_status (*namespace_count)(void* self, size_t* out_count);
    uaplex_status (*namespace_uri)(void* self, size_t index, uaplex_str* out_uri);
    /* Reads `count` items: results[i] (kernel-owned, filled by the manager) and
     * statuses[i]. The call's own status is Bad only if no item was processed. Worker
     * threads; may block for the duration of the request only. */
    uaplex_status (*read)(void* self, size_t count, const uaplex_read_item* items,
                          struct uaplex_datavalue* const* results, uaplex_status* statuses);
    /* Writes `count` items; statuses[i] per item. Worker threads. */
    uaplex_status (*write)(void* self, size_t count, const uaplex_write_item* items,
                           uaplex_status* statuses);
    /* Calls sink for each reference of `node_id` in `direction` (0 forward, 1 inverse,
     * 2 both) whose type is `reference_type_id` (NULL = all). Worker threads. */
    uaplex_status (*browse)(void* self, const struct uaplex_nodeid* node_id, uint32_t direction,
                            const struct uaplex_nodeid* reference_type_id, int32_t include_subtypes,
                            uaplex_reference_sink sink, void* sink_user);
    /* Starts or stops reporting changes of a node's attribute through
     * params->value_changed (for event-driven items instead of sampling). NULL: the kernel
     * samples with read. Any thread. */
    uaplex_status (*monitor)(void* self, const struct uaplex_nodeid* node_id, uint32_t attribute_id,
                             int32_t enabled);
} uaplex_node_manager_ops;

typedef struct uaplex_node_manager_factory {
    uaplex_header hdr; /* UAPLEX_STYPE_NODE_MANAGER_FACTORY */
    const uaplex_node_manager_ops* ops;
    /* Host main thread; params borrowed until destroy. */
    uaplex_status (*create)(uaplex_plugin_ctx* ctx, const uaplex_node_manager_params* params,
                            void** out_self);
} uaplex_node_manager_factory;

UAPLEX_END_DECLS

#endif /* UAPLEX_NODE_MANAGER_H */
