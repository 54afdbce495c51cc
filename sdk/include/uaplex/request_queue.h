// SPDX-License-Identifier: Apache-2.0
/* Request queues (plugins/request-queue: fifo, fair): bounded admission of decoded requests,
 * ordering across owners, and hand-off to the kernel's workers. The kernel owns the request
 * entries; the queue links them through the entry's queue_private words, so queueing never
 * allocates.
 *
 * Completion rule: whoever unlinks an entry owns its completion. The queue completes an
 * entry (through params->complete) only when it unlinks it itself for cancel or stop; an
 * entry it hands out through dequeue is the caller's to complete; a rejected enqueue is
 * completed by the caller. Each entry is completed exactly once.
 */
#ifndef UAPLEX_REQUEST_QUEUE_H
#define UAPLEX_REQUEST_QUEUE_H

#include "uaplex/admission.h"
#include "uaplex/plugin.h"

UAPLEX_BEGIN_DECLS

typedef enum uaplex_request_flags {
    /* The request may park without a worker (a held Publish). */
    UAPLEX_REQUEST_PARKABLE = 1u << 0
} uaplex_request_flags;

typedef enum uaplex_request_queue_flags {
    /* Held Publish requests park without a worker (DecoupleHeldPublishRequests): a
     * parkable request also takes a ParkedRequest lease. */
    UAPLEX_REQUEST_QUEUE_DECOUPLE_PARKED = 1u << 0
} uaplex_request_queue_flags;

/* A decoded request, owned by the kernel. Valid from enqueue until it is completed. */
typedef struct uaplex_request_entry {
    uaplex_header hdr;       /* UAPLEX_STYPE_REQUEST_ENTRY */
    uint32_t request_id;     /* the kernel's id, never 0 */
    uint32_t request_handle; /* RequestHeader.requestHandle, for logs */
    uint32_t flags;          /* uaplex_request_flags */
    uint32_t service_type;   /* numeric NodeId of the request's encoding */
    uint64_t cost;           /* bytes to charge at RequestQueueBytes (MaxMessageSize) */
    /* Admission owner (NULL without a provider): borrowed, valid while the entry lives. */
    uaplex_admission_owner* owner;
    /* Cancellation of this request by the client or by the session. */
    const uaplex_cancel_token* cancel;
    /* Owned by the queue while the entry is linked in it; the kernel never reads them. */
    void* queue_private[4];
    /* Owned by the kernel; queues never touch it. */
    void* kernel_private;
} uaplex_request_entry;

/* What the kernel gives a queue at creation; borrowed, valid until destroy returns. */
typedef struct uaplex_request_queue_params {
    uaplex_header hdr;   /* UAPLEX_STYPE_REQUEST_QUEUE_PARAMS */
    uint32_t max_queued; /* MaxQueuedRequestCount, > 0; a plugin's own setting may lower it */
    uint32_t reserved0;
    /* Completes an entry the queue unlinked itself (cancel, stop, failed revalidation).
     * Any thread; must not block; never call it with a lock held that enqueue takes. */
    uaplex_status (*complete)(void* user, uaplex_request_entry* entry, uaplex_status status);
    /* Re-checks the entry's owner and session before dispatch (Good to dispatch). Any
     * thread; must not block. May be NULL (no check). */
    uaplex_status (*revalidate)(void* user, uaplex_request_entry* entry);
    void* user;
    /* The admission provider the queue charges and schedules with, or NULL (shared FIFO).
     * Borrowed until destroy. */
    void* admission_self;
    const struct uaplex_admission_ops* admission;
    /* --- since 1.0, appended --- */
    uint32_t flags; /* uaplex_request_queue_flags */
    uint32_t reserved1;
    /* Bytes charged at RequestQueueBytes per request (MaxMessageSize); a queue that charges
     * bytes refuses 0 at create. */
    uint64_t request_cost;
} uaplex_request_queue_params;

typedef struct uaplex_request_queue_ops {
    uaplex_header hdr; /* UAPLEX_STYPE_REQUEST_QUEUE_OPS */
    /* lifecycle (see uaplex_lifecycle_ops). stop: rejects later enqueues with
     * BadServerHalted, completes every queued entry with BadServerHalted exactly once and
     * wakes every waiting dequeue, which then returns BadServerHalted. */
    uaplex_status (*start)(void* self);
    uaplex_status (*stop)(void* self);
    uaplex_status (*destroy)(void* self);

    /* Admits `entry` (owned by the kernel; linked by the queue on Good). Errors, in this
     * order: BadRequestCancelledByClient (already cancelled), BadServerHalted (stopped),
     * BadServerTooBusy (full or no admission lease). On error the entry is not linked and
     * the caller completes it. Any thread; must not block. */
    uaplex_status (*enqueue)(void* self, uaplex_request_entry* entry);
    /* Unlinks the next entry to run into *out_entry, now owned by the caller. Empty gives
     * BadNothingToDo; stopped gives BadServerHalted. Any thread; must not block. */
    uaplex_status (*try_dequeue)(void* self, uaplex_request_entry** out_entry);
    /* Like try_dequeue but waits up to timeout_ms (0 = do not wait; UINT32_MAX = until
     * stop). Timeout gives BadTimeout. Worker threads only; blocks. */
    uaplex_status (*dequeue)(void* self, uint32_t timeout_ms, uaplex_request_entry** out_entry);
    /* If `entry` is still queued, unlinks it and completes it with `status`; otherwise
     * BadNotFound and nothing happens. Any thread; must not block. */
    uaplex_status (*cancel)(void* self, uaplex_request_entry* entry, uaplex_status status);
    /* Number of queued entries. Any thread; must not block. */
    uaplex_status (*count)(void* self, uint64_t* out_count);
    /* Releases the execution lease of a running entry at its park point: the kernel calls
     * it on the worker when a request parks for an asynchronous operation, before anything
     * else can answer it; dispose follows when it is answered. NULL when the queue does not
     * charge execution. Any thread; must not block. */
    uaplex_status (*release_execution)(void* self, uaplex_request_entry* entry);
    /* The kernel is done with a dispatched entry: returns its remaining leases (idempotent).
     * NULL when the queue holds no per-entry state after dequeue. Any thread. */
    uaplex_status (*dispose)(void* self, uaplex_request_entry* entry);
    /* --- since 1.5 --- */
    /* Every dequeue waiting now returns soon with BadTimeout; nothing else
     * changes, and a dequeue called later may wait again. The host calls it (repeatedly)
     * while it retires a queue that workers wait on without a timeout; it calls it once
     * after create too, to learn whether the queue supports it. NULL or BadNotSupported:
     * the host waits with bounded timeouts instead. Any thread; must not block. */
    uaplex_status (*wake_waiters)(void* self);
} uaplex_request_queue_ops;

typedef struct uaplex_request_queue_factory {
    uaplex_header hdr; /* UAPLEX_STYPE_REQUEST_QUEUE_FACTORY */
    const uaplex_request_queue_ops* ops;
    /* Creates an instance in *out_self (owned by the host until destroy). `params` is
     * borrowed until destroy. Host main thread. */
    uaplex_status (*create)(uaplex_plugin_ctx* ctx, const uaplex_request_queue_params* params,
                            void** out_self);
} uaplex_request_queue_factory;

UAPLEX_END_DECLS

#endif /* UAPLEX_REQUEST_QUEUE_H */
