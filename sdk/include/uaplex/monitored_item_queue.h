// SPDX-License-Identifier: Apache-2.0
/* Monitored-item queue factories (plugins/monitored-item-queue: mi-default, mi-ring): the
 * queues that hold a monitored item's pending data changes or events. Values are OPC UA
 * types defined in uaplex/types.h and only pointed to here. Ownership of an enqueued value
 * passes to the queue; it comes back to the kernel on dequeue, or through params->release_*
 * when the queue drops it (overflow, reset, overwrite, destroy). Queues are not thread-safe:
 * the owning monitored item serialises every call. Enqueue is O(1).
 */
#ifndef UAPLEX_MONITORED_ITEM_QUEUE_H
#define UAPLEX_MONITORED_ITEM_QUEUE_H

#include "uaplex/plugin.h"

UAPLEX_BEGIN_DECLS

struct uaplex_datavalue;
struct uaplex_variant;

/* One queued event: the selected fields and the identity of the source. */
typedef struct uaplex_event_entry {
    uaplex_header hdr; /* UAPLEX_STYPE_EVENT_ENTRY */
    uint32_t field_count;
    uint64_t source_handle;               /* identity compared by contains_event */
    struct uaplex_variant* const* fields; /* field_count pointers */
    void* kernel_private;
} uaplex_event_entry;

typedef struct uaplex_mi_queue_params {
    uaplex_header hdr; /* UAPLEX_STYPE_MI_QUEUE_PARAMS */
    /* Frees values and events the queue drops. Called from inside queue entries (same
     * thread); must not block; must not call back into the queue. */
    uaplex_status (*release_value)(void* user, struct uaplex_datavalue* value);
    uaplex_status (*release_event)(void* user, uaplex_event_entry* event);
    void* user;
} uaplex_mi_queue_params;

/* A data change queue (ring buffer). `self` is the queue. */
typedef struct uaplex_data_change_queue_ops {
    uaplex_header hdr; /* UAPLEX_STYPE_DATA_CHANGE_QUEUE_OPS */
    /* Releases every value still queued, then frees the queue. */
    uaplex_status (*destroy)(void* self);
    /* Drops the contents and sets the size; errors are kept only when keep_errors. May be
     * slow (allocates). */
    uaplex_status (*reset)(void* self, uint32_t queue_size, int32_t keep_errors);
    /* Appends (value owned by the queue now; error is Good when none). Full: the oldest is
     * dropped. Before reset or at size 0: BadInvalidState (the value stays the caller's). */
    uaplex_status (*enqueue)(void* self, struct uaplex_datavalue* value, uaplex_status error);
    /* Replaces the newest entry; empty: BadInvalidState. */
    uaplex_status (*overwrite_newest)(void* self, struct uaplex_datavalue* value,
                                      uaplex_status error);
    /* Removes the oldest into *out_value (owned by the caller). Empty: BadNothingToDo. */
    uaplex_status (*dequeue)(void* self, struct uaplex_datavalue** out_value,
                             uaplex_status* out_error);
    /* Borrowed views of the oldest and newest entries; empty: BadNothingToDo. */
    uaplex_status (*peek_oldest)(void* self, struct uaplex_datavalue** out_value,
                                 uaplex_status* out_error);
    uaplex_status (*peek_newest)(void* self, struct uaplex_datavalue** out_value,
                                 uaplex_status* out_error);
    uaplex_status (*items_in_queue)(void* self, uint32_t* out_count);
    /* Reserved: not called by the kernel yet (it keeps the size it set). */
    uaplex_status (*queue_size)(void* self, uint32_t* out_size);
} uaplex_data_change_queue_ops;

/* An event queue (FIFO). `self` is the queue. */
typedef struct uaplex_event_queue_ops {
    uaplex_header hdr; /* UAPLEX_STYPE_EVENT_QUEUE_OPS */
    uaplex_status (*destroy)(void* self);
    /* Shrinking keeps the newest `size` entries if discard_oldest, else the oldest. */
    uaplex_status (*set_queue_size)(void* self, uint32_t queue_size, int32_t discard_oldest);
    /* *out = 1 when an entry with this source identity is within the plugin's duplicate
     * window of 1000 entries: the newest 1000 as documented here (mi-ring), or the oldest
     * 1000 as the reference server scans (mi-default, kept for parity). The two agree up
     * to 1000 entries. */
    uaplex_status (*contains_event)(void* self, uint64_t source_handle, int32_t* out_found);
    /* Appends (owned by the queue now). Size 0: BadInternalError. Full: oldest dropped. */
    uaplex_status (*enqueue)(void* self, uaplex_event_entry* event);
    /* Removes the oldest (owned by the caller). Empty: BadNothingToDo. */
    uaplex_status (*dequeue)(void* self, uaplex_event_entry** out_event);
    uaplex_status (*items_in_queue)(void* self, uint32_t* out_count);
} uaplex_event_queue_ops;

/* The factory instance. */
typedef struct uaplex_mi_queue_factory_ops {
    uaplex_header hdr; /* UAPLEX_STYPE_MI_QUEUE_FACTORY_OPS */
    /* lifecycle (see uaplex_lifecycle_ops); every queue is destroyed before stop. */
    uaplex_status (*start)(void* self);
    uaplex_status (*stop)(void* self);
    uaplex_status (*destroy)(void* self);

    /* *out = 1 when durable queues (durable subscriptions) are served. Any thread.
     * Reserved: not called by the kernel yet (it creates non-durable queues only). */
    uaplex_status (*supports_durable)(void* self, int32_t* out_supported);
    /* A new empty queue for monitored item `item_id`: *out_queue owned by the caller until
     * its destroy, *out_ops static. durable without support: BadInvalidArgument. Any
     * thread (subscription engine). */
    uaplex_status (*create_data_change_queue)(void* self, int32_t durable, uint32_t item_id,
                                              void** out_queue,
                                              const uaplex_data_change_queue_ops** out_ops);
    uaplex_status (*create_event_queue)(void* self, int32_t durable, uint32_t item_id,
                                        void** out_queue, const uaplex_event_queue_ops** out_ops);
} uaplex_mi_queue_factory_ops;

typedef struct uaplex_mi_queue_factory {
    uaplex_header hdr; /* UAPLEX_STYPE_MI_QUEUE_FACTORY */
    const uaplex_mi_queue_factory_ops* ops;
    /* Host main thread; params borrowed until destroy. */
    uaplex_status (*create)(uaplex_plugin_ctx* ctx, const uaplex_mi_queue_params* params,
                            void** out_self);
} uaplex_mi_queue_factory;

UAPLEX_END_DECLS

#endif /* UAPLEX_MONITORED_ITEM_QUEUE_H */
