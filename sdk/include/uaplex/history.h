// SPDX-License-Identifier: Apache-2.0
/* History stores (plugins/history: sqlite, postgres; since 1.11): keep the values of
 * recorded Variables (and, since 1.14, the events of recorded notifiers) and answer
 * Historical Access (Part 11) raw reads, updates and deletes for them.
 *
 * The kernel records: it hands each change of a recorded Variable (stored value writes,
 * pushed plugin values) to `store`, and it serves HistoryRead and HistoryUpdate, checking
 * access, bounds and continuation points, and asking the store for raw values.
 *
 * Values cross as uaplex_history_value: the time fields of a DataValue plus its Variant in
 * the OPC UA binary encoding (Part 6 5.2.2.16), which the kernel encodes and decodes; the
 * store keeps those bytes as they are and never needs to understand them.
 *
 * A node is named by `node_key`, a text the kernel builds from the NodeId with its namespace
 * URI ("nsu=urn:example;s=Demo.Ramp", or "i=2258" in namespace 0), so a stored history stays
 * the node's when namespace indexes change between runs. The store indexes by it.
 *
 * Reads, updates and deletes complete asynchronously (uaplex_completion of node_manager.h):
 * an entry returns GoodCompletesAsynchronously when it will finish later, fills its result,
 * and calls complete(self, token, status) exactly once, from any thread (its own database
 * thread, typically); a kernel worker never waits for a database round trip. Any other
 * return finishes the operation at once (complete is not called). The request, its result
 * and `alloc` stay valid until complete is called. Every pending operation is completed
 * before stop returns.
 */
#ifndef UAPLEX_HISTORY_H
#define UAPLEX_HISTORY_H

#include "uaplex/node_manager.h"

UAPLEX_BEGIN_DECLS

/* DateTime bounds of an open time range (since 1.11). */
#define UAPLEX_HISTORY_TIME_MIN INT64_MIN
#define UAPLEX_HISTORY_TIME_MAX INT64_MAX

/* One value of a node's history (since 1.11). Everything borrowed: for store and update for
 * the call; in a read result from the read's `alloc`. */
typedef struct uaplex_history_value {
    uaplex_header hdr;        /* UAPLEX_STYPE_HISTORY_VALUE */
    uaplex_str node_key;      /* store: the node; read results: empty */
    int64_t source_timestamp; /* DateTime; the value's time: what reads order and select by */
    int64_t server_timestamp; /* DateTime; 0 when none */
    uint32_t status;          /* the DataValue's StatusCode (Good when it had none) */
    uint16_t source_picoseconds;
    uint16_t server_picoseconds;
    /* The Variant in OPC UA binary; empty: a null Variant (no value). Opaque to the store. */
    uaplex_bytes value;
} uaplex_history_value;

typedef enum uaplex_history_read_flags {
    /* Also the bounding values (Part 11 4.4, returnBounds): before the first value of the
     * range, the value at start_time or else the last one before it (towards the read's
     * direction: the first one after it for a backward read); after the last, the value at
     * end_time or else the first one beyond it. A bound that does not exist is a value with
     * status BadBoundNotFound, no Variant and the bound's time as its source_timestamp. */
    UAPLEX_HISTORY_READ_BOUNDS = 1u << 0
} uaplex_history_read_flags;

/* A raw read of one node (since 1.11): the values whose source_timestamp lies in the half-open
 * range from start_time (inclusive) towards end_time (exclusive), in that direction: oldest
 * first when start_time < end_time, newest first when start_time > end_time (start_time ==
 * end_time: the values at exactly that time). Values of the same time come in the order they
 * were stored (reversed for a backward read). Borrowed until complete is called. */
typedef struct uaplex_history_read {
    uaplex_header hdr; /* UAPLEX_STYPE_HISTORY_READ */
    uint32_t flags;    /* uaplex_history_read_flags */
    /* At most this many values (bounds included) in this call, > 0; the store may return
     * fewer, with a continuation. */
    uint32_t max_values;
    uaplex_str node_key;
    /* The node as this run names it (for logs); NULL when the kernel does not pass it. */
    const struct uaplex_nodeid* node_id;
    int64_t start_time;
    int64_t end_time;
    /* Empty: the read starts. Otherwise a continuation this store returned for a read with
     * the same node_key, times and flags: the read goes on after the values it returned.
     * A continuation must be self-contained (the store keeps no state for it, so it needs no
     * release) and is checked: one the store cannot use gives BadContinuationPointInvalid. */
    uaplex_bytes continuation;
    /* Memory for the result (values, their bytes, the continuation); any thread until
     * complete. */
    const uaplex_value_alloc* alloc;
} uaplex_history_read;

/* What a read returns (since 1.11); kernel-owned, zero on entry, filled by the store. */
typedef struct uaplex_history_read_result {
    uaplex_header hdr; /* UAPLEX_STYPE_HISTORY_READ_RESULT */
    uint32_t value_count;
    uint32_t reserved0;
    uaplex_history_value* values; /* value_count entries, from the read's alloc */
    /* From the read's alloc, at most UAPLEX_HISTORY_MAX_CONTINUATION bytes; empty: the read
     * is complete. */
    uaplex_bytes continuation;
} uaplex_history_read_result;

/* The largest continuation a store may return (since 1.11). */
#define UAPLEX_HISTORY_MAX_CONTINUATION 256u

/* PerformUpdateType (Part 11 6.8.3) of an update (since 1.11). */
typedef enum uaplex_history_perform {
    UAPLEX_HISTORY_INSERT = 1,  /* only where no value has the time: else BadEntryExists */
    UAPLEX_HISTORY_REPLACE = 2, /* only where a value has the time: else BadNoEntryExists */
    UAPLEX_HISTORY_UPDATE = 3   /* replace or insert */
} uaplex_history_perform;

/* An update of one node's values (since 1.11): each value replaces or joins the values of
 * its source_timestamp, as `perform` says. Borrowed until complete is called. */
typedef struct uaplex_history_update {
    uaplex_header hdr; /* UAPLEX_STYPE_HISTORY_UPDATE */
    uint32_t perform;  /* uaplex_history_perform */
    uint32_t value_count;
    uaplex_str node_key;
    const struct uaplex_nodeid* node_id;
    const uaplex_history_value* values; /* node_key of each is ignored: the update's counts */
    /* value_count entries, kernel-owned, Good on entry: the store sets each to
     * GoodEntryInserted, GoodEntryReplaced, BadEntryExists or BadNoEntryExists. */
    uaplex_status* results;
} uaplex_history_update;

/* A delete of one node's values whose source_timestamp lies in [start_time, end_time)
 * (since 1.11). Borrowed until complete is called. */
typedef struct uaplex_history_delete {
    uaplex_header hdr; /* UAPLEX_STYPE_HISTORY_DELETE */
    uint32_t reserved0;
    uaplex_str node_key;
    const struct uaplex_nodeid* node_id;
    int64_t start_time;
    int64_t end_time;
    uint64_t deleted; /* out: how many values went */
} uaplex_history_delete;

/* What the kernel gives a store at creation (since 1.11); borrowed until destroy. */
typedef struct uaplex_history_params {
    uaplex_header hdr; /* UAPLEX_STYPE_HISTORY_PARAMS */
    /* The most values the kernel asks for in one read (max_values never exceeds it), > 0. */
    uint32_t max_values_per_read;
    uint32_t reserved0;
} uaplex_history_params;

/* --- events (since 1.14) ---------------------------------------------------------------
 * A store that has the event entries of uaplex_history_ops keeps the events of recorded event
 * notifiers (Objects whose EventNotifier has HistoryRead) too. An event crosses as its
 * notifier's key (a node_key), its EventId, Time and ReceiveTime, its EventType's key and its
 * fields: a block of bytes the kernel encodes (the binary Variants of a fixed field set it
 * chooses) and decodes; the store keeps them as they are. Reads select and order by `time`. */

/* One event of a notifier's history (since 1.14). Everything borrowed: for store_events and
 * update_events for the call; in a read result from the read's `alloc`. */
typedef struct uaplex_history_event {
    uaplex_header hdr;       /* UAPLEX_STYPE_HISTORY_EVENT */
    uaplex_str notifier_key; /* store_events: the notifier; update and read results: empty */
    int64_t time;            /* DateTime; the event's Time: what reads order and select by */
    int64_t receive_time;    /* DateTime; its ReceiveTime */
    uaplex_bytes event_id;   /* the EventId (1..64 bytes): what updates and deletes match */
    uaplex_str event_type;   /* the EventType's key, as a node_key; opaque to the store */
    uaplex_bytes fields;     /* the encoded fields; opaque to the store */
} uaplex_history_event;

/* A read of one notifier's events (since 1.14): those whose time lies in the half-open range
 * from start_time (inclusive) towards end_time (exclusive), in that direction, as a raw read
 * (uaplex_history_read) selects values; events of the same time in the order they were stored
 * (reversed backward). No bounds. Borrowed until complete is called. */
typedef struct uaplex_history_event_read {
    uaplex_header hdr;   /* UAPLEX_STYPE_HISTORY_EVENT_READ */
    uint32_t reserved0;  /* 0 */
    uint32_t max_events; /* at most this many in this call, > 0; fewer with a continuation */
    uaplex_str notifier_key;
    const struct uaplex_nodeid* notifier_id; /* for logs; NULL when not passed */
    int64_t start_time;
    int64_t end_time;
    /* Empty: the read starts; else a continuation this store returned for a read with the
     * same notifier_key and times (self-contained, checked: BadContinuationPointInvalid). */
    uaplex_bytes continuation;
    const uaplex_value_alloc* alloc; /* memory for the result; any thread until complete */
} uaplex_history_event_read;

/* What an event read returns (since 1.14); kernel-owned, zero on entry, filled by the store. */
typedef struct uaplex_history_event_read_result {
    uaplex_header hdr; /* UAPLEX_STYPE_HISTORY_EVENT_READ_RESULT */
    uint32_t event_count;
    uint32_t reserved0;
    uaplex_history_event* events; /* event_count entries, from the read's alloc */
    /* From the read's alloc, at most UAPLEX_HISTORY_MAX_CONTINUATION bytes; empty: done. */
    uaplex_bytes continuation;
} uaplex_history_event_read_result;

/* An update of one notifier's events keyed by EventId (since 1.14, Part 11 6.9.4): insert
 * only where no event of the notifier has the EventId (else BadEntryExists), replace only
 * where one has (else BadNoEntryExists: the stored event is replaced whole, time included),
 * update does either. Borrowed until complete is called. */
typedef struct uaplex_history_event_update {
    uaplex_header hdr; /* UAPLEX_STYPE_HISTORY_EVENT_UPDATE */
    uint32_t perform;  /* uaplex_history_perform */
    uint32_t event_count;
    uaplex_str notifier_key;
    const struct uaplex_nodeid* notifier_id;
    const uaplex_history_event* events; /* notifier_key of each is ignored */
    /* event_count entries, kernel-owned, Good on entry: the store sets each to
     * GoodEntryInserted, GoodEntryReplaced, BadEntryExists or BadNoEntryExists. */
    uaplex_status* results;
} uaplex_history_event_update;

/* A delete of one notifier's events by EventId (since 1.14, Part 11 6.9.7). Borrowed until
 * complete is called. */
typedef struct uaplex_history_event_delete {
    uaplex_header hdr; /* UAPLEX_STYPE_HISTORY_EVENT_DELETE */
    uint32_t event_count;
    uint32_t reserved0;
    uaplex_str notifier_key;
    const struct uaplex_nodeid* notifier_id;
    const uaplex_bytes* event_ids; /* event_count entries */
    /* event_count entries, kernel-owned, Good on entry: the store sets each it finds no
     * event of to BadEventIdUnknown. */
    uaplex_status* results;
} uaplex_history_event_delete;

typedef struct uaplex_history_ops {
    uaplex_header hdr; /* UAPLEX_STYPE_HISTORY_OPS */
    /* lifecycle (see uaplex_lifecycle_ops). start opens the store (may block: files,
     * threads); stop writes what is queued, completes every pending operation and accepts
     * nothing more (store: BadServerHalted; others complete at once with BadServerHalted). */
    uaplex_status (*start)(void* self);
    uaplex_status (*stop)(void* self);
    uaplex_status (*destroy)(void* self);

    /* Queues `count` values (borrowed for the call: the store copies them) to be written in
     * batches on the store's own thread. Good: all queued. BadResourceUnavailable: the queue
     * is full; the first *out_accepted values were queued, the others are not and the store
     * counts them (metric "dropped"), it never waits for room. Any thread, also the kernel's
     * value-change path: must not block, must not wait for I/O. */
    uaplex_status (*store)(void* self, size_t count, const uaplex_history_value* values,
                           size_t* out_accepted);
    /* A raw read (see uaplex_history_read); completes with Good (also with no value),
     * BadContinuationPointInvalid, or a Bad status of the store (BadInternalError,
     * BadResourceUnavailable; BadDataUnavailable while its database is unreachable, as
     * updates and deletes then). Values queued by store before the read are seen by it. Any
     * thread; must not block. */
    uaplex_status (*read_raw)(void* self, const uaplex_history_read* read,
                              uaplex_history_read_result* result,
                              const uaplex_completion* completion);
    /* An update (see uaplex_history_update); completes with Good when each result is set.
     * Any thread; must not block. NULL: updates are not supported. */
    uaplex_status (*update)(void* self, const uaplex_history_update* update,
                            const uaplex_completion* completion);
    /* A delete (see uaplex_history_delete); completes with Good (delete->deleted set). Any
     * thread; must not block. NULL: deletes are not supported. */
    uaplex_status (*delete_raw)(void* self, uaplex_history_delete* del,
                                const uaplex_completion* completion);

    /* Events (since 1.14; check each with UAPLEX_HAS_FIELD and for NULL: a store without them
     * keeps no events, and the kernel answers event history with
     * BadHistoryOperationUnsupported). store_events queues as store does, with the same
     * rules (Good, or BadResourceUnavailable with *out_accepted a prefix, counted, never
     * waits; any thread, also the kernel's event path). */
    uaplex_status (*store_events)(void* self, size_t count, const uaplex_history_event* events,
                                  size_t* out_accepted);
    /* An event read (see uaplex_history_event_read); completes as read_raw. Any thread; must
     * not block. */
    uaplex_status (*read_events)(void* self, const uaplex_history_event_read* read,
                                 uaplex_history_event_read_result* result,
                                 const uaplex_completion* completion);
    /* An update (see uaplex_history_event_update); completes with Good when each result is
     * set. Any thread; must not block. NULL: event updates are not supported. */
    uaplex_status (*update_events)(void* self, const uaplex_history_event_update* update,
                                   const uaplex_completion* completion);
    /* A delete (see uaplex_history_event_delete); completes with Good when each result is
     * set. Any thread; must not block. NULL: event deletes are not supported. */
    uaplex_status (*delete_events)(void* self, const uaplex_history_event_delete* del,
                                   const uaplex_completion* completion);
} uaplex_history_ops;

typedef struct uaplex_history_factory {
    uaplex_header hdr; /* UAPLEX_STYPE_HISTORY_FACTORY */
    const uaplex_history_ops* ops;
    /* Creates an instance in *out_self (owned by the host until destroy). `params` is
     * borrowed until destroy. Host main thread. */
    uaplex_status (*create)(uaplex_plugin_ctx* ctx, const uaplex_history_params* params,
                            void** out_self);
} uaplex_history_factory;

UAPLEX_END_DECLS

#endif /* UAPLEX_HISTORY_H */
