// SPDX-License-Identifier: Apache-2.0
/* The plugin entry symbol and descriptor.
 *
 * A plugin library exports exactly one symbol, `uaplex_plugin_entry`. The host calls it once
 * after loading, with its ABI version and its API table; the plugin returns a descriptor in
 * static storage that names it and lists one factory per plugin kind it provides. The host
 * refuses a descriptor whose abi_major differs from its own.
 */
#ifndef UAPLEX_PLUGIN_H
#define UAPLEX_PLUGIN_H

#include "uaplex/abi.h"
#include "uaplex/host.h"

UAPLEX_BEGIN_DECLS

#define UAPLEX_PLUGIN_ENTRY_SYMBOL "uaplex_plugin_entry"

/* Plugin kinds; a descriptor may provide several. */
typedef enum uaplex_plugin_kind {
    UAPLEX_KIND_TRANSPORT = 1u << 0,
    UAPLEX_KIND_ADMISSION = 1u << 1,
    UAPLEX_KIND_REQUEST_QUEUE = 1u << 2,
    UAPLEX_KIND_BUFFER_POOL = 1u << 3,
    UAPLEX_KIND_MONITORED_ITEM_QUEUE = 1u << 4,
    UAPLEX_KIND_NODE_MANAGER = 1u << 5,
    /* since 1.10 */
    UAPLEX_KIND_PUBSUB = 1u << 7, /* uaplex/pubsub.h */
    /* since 1.11 */
    UAPLEX_KIND_HISTORY = 1u << 6 /* uaplex/history.h */
} uaplex_plugin_kind;

/* Lifecycle entries shared by every kind. Each kind's ops table starts with exactly these
 * fields (tests/abi pins the offsets), so the host drives any instance through this view.
 *   create (in the factory) -> start -> ... -> stop -> destroy
 * start: called once before any other entry; may block briefly (binds, threads).
 * stop: idempotent; afterwards the instance completes or rejects pending work and accepts
 *   no new work; may block until its own threads have finished. Not called concurrently
 *   with start or destroy.
 * destroy: frees `self`; called once, after stop, when no other call into the instance can
 *   be running. */
typedef struct uaplex_lifecycle_ops {
    uaplex_header hdr;
    uaplex_status (*start)(void* self);
    uaplex_status (*stop)(void* self);
    uaplex_status (*destroy)(void* self);
} uaplex_lifecycle_ops;

struct uaplex_transport_factory;
struct uaplex_admission_factory;
struct uaplex_request_queue_factory;
struct uaplex_buffer_pool_factory;
struct uaplex_mi_queue_factory;
struct uaplex_node_manager_factory;
struct uaplex_pubsub_factory;
struct uaplex_history_factory;

typedef struct uaplex_plugin_descriptor {
    uaplex_header hdr;  /* UAPLEX_STYPE_PLUGIN_DESCRIPTOR */
    uint32_t abi_major; /* UAPLEX_ABI_VERSION_MAJOR the plugin was built with */
    uint32_t abi_minor;
    /* NUL-terminated, static storage. `name` is how TOML refers to the plugin:
     * [a-z0-9_-], unique among all libraries the host can see. */
    const char* name;
    const char* version;
    const char* description;
    /* One factory per kind provided, NULL otherwise; static storage. */
    const struct uaplex_transport_factory* transport;
    const struct uaplex_admission_factory* admission;
    const struct uaplex_request_queue_factory* request_queue;
    const struct uaplex_buffer_pool_factory* buffer_pool;
    const struct uaplex_mi_queue_factory* monitored_item_queue;
    const struct uaplex_node_manager_factory* node_manager;
    /* --- since 1.10 --- */
    const struct uaplex_pubsub_factory* pubsub;
    /* --- since 1.11 --- */
    const struct uaplex_history_factory* history;
} uaplex_plugin_descriptor;

/* The exported entry. host_abi_version is UAPLEX_ABI_VERSION of the host; `host` stays valid
 * until the library is unloaded. On success *out_descriptor points to static storage.
 * Called on the host's main thread, possibly again after a reload; must be idempotent. */
typedef uaplex_status (*uaplex_plugin_entry_fn)(uint32_t host_abi_version,
                                                const uaplex_host_api* host,
                                                const uaplex_plugin_descriptor** out_descriptor);

UAPLEX_END_DECLS

#endif /* UAPLEX_PLUGIN_H */
