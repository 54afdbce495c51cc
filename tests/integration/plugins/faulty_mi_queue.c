// SPDX-License-Identifier: Apache-2.0
/* A monitored-item queue factory that misbehaves on purpose (faulty_mi_queue_test), written
 * against the raw C ABI so that its garbage reaches the kernel unfiltered. Its data change
 * queues are plain rings, except those reset to `fault_queue_size` entries, which then answer
 * with the fault named by `fault`:
 *   "null-outputs" dequeue and peek return Good without a value (the ring keeps its values),
 *   "reserved"     every entry returns 0xFFFF0000: enqueue keeps nothing, items_in_queue
 *                  claims 0xFFFFFFFF entries, dequeue and peek write a wild pointer.
 * Event queues are not served (BadNotSupported).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "faulty_plugin.h"
#include "uaplex/uaplex.h"

static const uaplex_host_api* g_host;

enum { FAULT_NONE = 0, FAULT_NULL_OUTPUTS = 1, FAULT_RESERVED = 2 };
#define RESERVED ((uaplex_status)0xFFFF0000u)
#define WILD ((struct uaplex_datavalue*)(uintptr_t)0x10)

typedef struct factory {
    uaplex_mi_queue_params params;
    int fault;
    int64_t fault_queue_size;
} factory;

typedef struct entry {
    struct uaplex_datavalue* value;
    uaplex_status error;
} entry;

typedef struct ring {
    const factory* f;
    entry* slots;
    uint32_t size, head, count;
    int fault; /* set by reset */
} ring;

static void drop(ring* r, struct uaplex_datavalue* v) {
    r->f->params.release_value(r->f->params.user, v);
}

static void clear(ring* r) {
    for (uint32_t i = 0; i < r->count; ++i) drop(r, r->slots[(r->head + i) % r->size].value);
    r->head = r->count = 0;
}

static uaplex_status q_destroy(void* self) {
    ring* r = (ring*)self;
    clear(r);
    free(r->slots);
    free(r);
    return UAPLEX_Good;
}

static uaplex_status q_reset(void* self, uint32_t queue_size, int32_t keep_errors) {
    ring* r = (ring*)self;
    entry* slots = NULL;
    (void)keep_errors;
    if (queue_size && !(slots = (entry*)calloc(queue_size, sizeof *slots)))
        return UAPLEX_BadOutOfMemory;
    clear(r);
    free(r->slots);
    r->slots = slots;
    r->size = queue_size;
    r->fault = (int64_t)queue_size == r->f->fault_queue_size ? r->f->fault : FAULT_NONE;
    return UAPLEX_Good;
}

static uaplex_status q_enqueue(void* self, struct uaplex_datavalue* v, uaplex_status error) {
    ring* r = (ring*)self;
    if (r->fault == FAULT_RESERVED) return RESERVED; /* the value stays the caller's */
    if (r->size == 0) return UAPLEX_BadInvalidState;
    if (r->count == r->size) {
        drop(r, r->slots[r->head].value);
        r->head = (r->head + 1) % r->size;
        --r->count;
    }
    r->slots[(r->head + r->count) % r->size] = (entry){v, error};
    ++r->count;
    return UAPLEX_Good;
}

static uaplex_status q_overwrite_newest(void* self, struct uaplex_datavalue* v,
                                        uaplex_status error) {
    ring* r = (ring*)self;
    entry* newest;
    if (r->fault == FAULT_RESERVED) return RESERVED;
    if (r->count == 0) return UAPLEX_BadInvalidState;
    newest = &r->slots[(r->head + r->count - 1) % r->size];
    drop(r, newest->value);
    *newest = (entry){v, error};
    return UAPLEX_Good;
}

static uaplex_status q_dequeue(void* self, struct uaplex_datavalue** out_value,
                               uaplex_status* out_error) {
    ring* r = (ring*)self;
    if (r->fault == FAULT_RESERVED) {
        *out_value = WILD;
        return RESERVED;
    }
    if (r->fault == FAULT_NULL_OUTPUTS) {
        *out_value = NULL;
        *out_error = UAPLEX_Good;
        return UAPLEX_Good;
    }
    if (r->count == 0) return UAPLEX_BadNothingToDo;
    *out_value = r->slots[r->head].value;
    *out_error = r->slots[r->head].error;
    r->head = (r->head + 1) % r->size;
    --r->count;
    return UAPLEX_Good;
}

static uaplex_status peek(ring* r, uint32_t at, struct uaplex_datavalue** out_value,
                          uaplex_status* out_error) {
    if (r->fault == FAULT_RESERVED) {
        *out_value = WILD;
        return RESERVED;
    }
    if (r->fault == FAULT_NULL_OUTPUTS) {
        *out_value = NULL;
        return UAPLEX_Good;
    }
    if (r->count == 0) return UAPLEX_BadNothingToDo;
    *out_value = r->slots[(r->head + at) % r->size].value;
    *out_error = r->slots[(r->head + at) % r->size].error;
    return UAPLEX_Good;
}

static uaplex_status q_peek_oldest(void* self, struct uaplex_datavalue** out_value,
                                   uaplex_status* out_error) {
    return peek((ring*)self, 0, out_value, out_error);
}

static uaplex_status q_peek_newest(void* self, struct uaplex_datavalue** out_value,
                                   uaplex_status* out_error) {
    ring* r = (ring*)self;
    return peek(r, r->count ? r->count - 1 : 0, out_value, out_error);
}

static uaplex_status q_items_in_queue(void* self, uint32_t* out_count) {
    ring* r = (ring*)self;
    if (r->fault == FAULT_RESERVED) {
        *out_count = 0xFFFFFFFFu;
        return RESERVED;
    }
    *out_count = r->count;
    return UAPLEX_Good;
}

static uaplex_status q_queue_size(void* self, uint32_t* out_size) {
    *out_size = ((ring*)self)->size;
    return UAPLEX_Good;
}

static const uaplex_data_change_queue_ops queue_ops = {
    .hdr = UAPLEX_HEADER_INIT(uaplex_data_change_queue_ops, UAPLEX_STYPE_DATA_CHANGE_QUEUE_OPS),
    .destroy = q_destroy,
    .reset = q_reset,
    .enqueue = q_enqueue,
    .overwrite_newest = q_overwrite_newest,
    .dequeue = q_dequeue,
    .peek_oldest = q_peek_oldest,
    .peek_newest = q_peek_newest,
    .items_in_queue = q_items_in_queue,
    .queue_size = q_queue_size};

static uaplex_status create(uaplex_plugin_ctx* ctx, const uaplex_mi_queue_params* params,
                            void** out_self) {
    factory* f = (factory*)calloc(1, sizeof *f);
    uaplex_str v = {0, 0};
    if (!f) return UAPLEX_BadOutOfMemory;
    f->params = *params;
    f->fault_queue_size = -1;
    if (g_host->config_string(ctx, (uaplex_str){"fault", 5}, &v) == UAPLEX_Good) {
        if (str_is(v, "null-outputs")) f->fault = FAULT_NULL_OUTPUTS;
        if (str_is(v, "reserved")) f->fault = FAULT_RESERVED;
    }
    g_host->config_int(ctx, (uaplex_str){"fault_queue_size", 16}, &f->fault_queue_size);
    *out_self = f;
    return UAPLEX_Good;
}

static uaplex_status supports_durable(void* self, int32_t* out_supported) {
    (void)self;
    *out_supported = 0;
    return UAPLEX_Good;
}

static uaplex_status create_data_change_queue(void* self, int32_t durable, uint32_t item_id,
                                              void** out_queue,
                                              const uaplex_data_change_queue_ops** out_ops) {
    ring* r;
    (void)item_id;
    if (durable) return UAPLEX_BadInvalidArgument;
    if (!(r = (ring*)calloc(1, sizeof *r))) return UAPLEX_BadOutOfMemory;
    r->f = (const factory*)self;
    *out_queue = r;
    *out_ops = &queue_ops;
    return UAPLEX_Good;
}

static uaplex_status create_event_queue(void* self, int32_t durable, uint32_t item_id,
                                        void** out_queue, const uaplex_event_queue_ops** out_ops) {
    (void)self;
    (void)durable;
    (void)item_id;
    (void)out_queue;
    (void)out_ops;
    return UAPLEX_BadNotSupported;
}

static const uaplex_mi_queue_factory_ops ops = {
    .hdr = UAPLEX_HEADER_INIT(uaplex_mi_queue_factory_ops, UAPLEX_STYPE_MI_QUEUE_FACTORY_OPS),
    .start = noop,
    .stop = noop,
    .destroy = destroy,
    .supports_durable = supports_durable,
    .create_data_change_queue = create_data_change_queue,
    .create_event_queue = create_event_queue};
static const uaplex_mi_queue_factory mi_factory = {
    UAPLEX_HEADER_INIT(uaplex_mi_queue_factory, UAPLEX_STYPE_MI_QUEUE_FACTORY), &ops, create};
static const uaplex_plugin_descriptor descriptor = {
    UAPLEX_HEADER_INIT(uaplex_plugin_descriptor, UAPLEX_STYPE_PLUGIN_DESCRIPTOR),
    UAPLEX_ABI_VERSION_MAJOR,
    UAPLEX_ABI_VERSION_MINOR,
    "test-faulty-miq",
    "1.0.0",
    "a monitored-item queue factory whose queues of one size answer garbage",
    NULL,
    NULL,
    NULL,
    NULL,
    &mi_factory,
    NULL};

UAPLEX_EXPORT uaplex_status uaplex_plugin_entry(uint32_t host_abi_version,
                                                const uaplex_host_api* host,
                                                const uaplex_plugin_descriptor** out) {
    (void)host_abi_version;
    g_host = host;
    *out = &descriptor;
    return UAPLEX_Good;
}
