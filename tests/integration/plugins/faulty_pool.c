// SPDX-License-Identifier: Apache-2.0
/* A buffer pool that misbehaves on purpose (faulty_kinds_test), written against the raw C ABI
 * so that its garbage reaches the kernel unfiltered. Rents below `fault_at_least` bytes are
 * served from the heap; larger ones get the fault named by `fault`:
 *   "null"     Good with data == NULL,
 *   "short"    Good with a buffer half the size asked for (a canary behind it is checked on
 *              give_back: a holder that wrote past `length` aborts the process),
 *   "reserved" the reserved-severity status 0xFFFF0000 with a usable buffer filled in.
 */
#include <stdlib.h>
#include <string.h>

#include "faulty_plugin.h"
#include "uaplex/uaplex.h"

static const uaplex_host_api* g_host;

enum { FAULT_NULL = 1, FAULT_SHORT = 2, FAULT_RESERVED = 3 };
enum { CANARY = 64 };
#define MAGIC ((void*)0x5ca1ab1e)

typedef struct pool {
    int fault;
    int64_t fault_at_least;
} pool;

struct uaplex_buffer_manager {
    uint32_t max_buffer_size;
};

static uaplex_status create(uaplex_plugin_ctx* ctx, const uaplex_buffer_pool_params* params,
                            void** out_self) {
    pool* p = (pool*)calloc(1, sizeof *p);
    uaplex_str v = {0, 0};
    (void)params;
    if (!p) return UAPLEX_BadOutOfMemory;
    p->fault_at_least = INT64_MAX;
    if (g_host->config_string(ctx, (uaplex_str){"fault", 5}, &v) == UAPLEX_Good) {
        if (str_is(v, "null")) p->fault = FAULT_NULL;
        if (str_is(v, "short")) p->fault = FAULT_SHORT;
        if (str_is(v, "reserved")) p->fault = FAULT_RESERVED;
    }
    g_host->config_int(ctx, (uaplex_str){"fault_at_least", 14}, &p->fault_at_least);
    *out_self = p;
    return UAPLEX_Good;
}

static uaplex_status manager_create(void* self, uaplex_str name, uint32_t max_buffer_size,
                                    uaplex_buffer_manager** out_manager) {
    uaplex_buffer_manager* m = (uaplex_buffer_manager*)calloc(1, sizeof *m);
    (void)self;
    (void)name;
    if (!m) return UAPLEX_BadOutOfMemory;
    m->max_buffer_size = max_buffer_size;
    *out_manager = m; /* kept for the process's life: the kernel never destroys managers */
    return UAPLEX_Good;
}

static uaplex_status manager_destroy(void* self, uaplex_buffer_manager* m) {
    (void)self;
    free(m);
    return UAPLEX_Good;
}

static uaplex_status size_same(void* self, uaplex_buffer_manager* m, uint32_t size,
                               uint32_t* out_size) {
    (void)self;
    (void)m;
    *out_size = size;
    return UAPLEX_Good;
}

/* Heap storage of `length` bytes followed by a canary the holder must not touch. */
static int lend(uaplex_buffer_manager* m, size_t length, uaplex_buffer* out) {
    uint8_t* data = (uint8_t*)malloc(length + CANARY);
    if (!data) return 0;
    memset(data + length, 0xA5, CANARY);
    out->data = data;
    out->length = length;
    out->manager = m;
    out->pool_private[0] = MAGIC;
    out->pool_private[1] = (void*)(uintptr_t)length;
    return 1;
}

static uaplex_status take(void* self, uaplex_buffer_manager* m, uint32_t size, const void* owner,
                          const uaplex_cancel_token* cancel, uaplex_buffer* out) {
    const pool* p = (const pool*)self;
    (void)owner;
    (void)cancel;
    if (size > m->max_buffer_size) return UAPLEX_BadOutOfRange;
    if (p->fault && (int64_t)size >= p->fault_at_least) {
        switch (p->fault) {
            case FAULT_NULL:
                out->data = NULL;
                out->length = size;
                out->manager = m;
                return UAPLEX_Good;
            case FAULT_SHORT:
                return lend(m, size / 2, out) ? UAPLEX_Good : UAPLEX_BadOutOfMemory;
            default:
                if (!lend(m, size, out)) return UAPLEX_BadOutOfMemory;
                return 0xFFFF0000u;
        }
    }
    return lend(m, size, out) ? UAPLEX_Good : UAPLEX_BadOutOfMemory;
}

static uaplex_status buffer_noop(void* self, uaplex_buffer* b) {
    (void)self;
    (void)b;
    return UAPLEX_Good;
}

static uaplex_status transfer(void* self, uaplex_buffer* b, const void* owner) {
    (void)self;
    (void)b;
    (void)owner;
    return UAPLEX_Good;
}

static uaplex_status give_back(void* self, uaplex_buffer* b, const void* owner) {
    size_t length;
    (void)self;
    (void)owner;
    if (!b->data) return UAPLEX_Good;
    if (b->pool_private[0] != MAGIC) return UAPLEX_BadInvalidState;
    length = (size_t)(uintptr_t)b->pool_private[1];
    for (size_t i = 0; i < CANARY; ++i)
        if (b->data[length + i] != 0xA5) abort(); /* written past what was lent */
    free(b->data);
    b->data = NULL;
    b->pool_private[0] = NULL;
    return UAPLEX_Good;
}

static uaplex_status stats(void* self, uint64_t* out_retained, uint64_t* out_outstanding) {
    (void)self;
    *out_retained = 0;
    *out_outstanding = 0;
    return UAPLEX_Good;
}

static const uaplex_buffer_pool_ops ops = {
    .hdr = UAPLEX_HEADER_INIT(uaplex_buffer_pool_ops, UAPLEX_STYPE_BUFFER_POOL_OPS),
    .start = noop,
    .stop = noop,
    .destroy = destroy,
    .manager_create = manager_create,
    .manager_destroy = manager_destroy,
    .suggested_size = size_same,
    .expected_size = size_same,
    .take = take,
    .transfer = transfer,
    .lock = buffer_noop,
    .unlock = buffer_noop,
    .give_back = give_back,
    .stats = stats};
static const uaplex_buffer_pool_factory factory = {
    UAPLEX_HEADER_INIT(uaplex_buffer_pool_factory, UAPLEX_STYPE_BUFFER_POOL_FACTORY), &ops, create};
static const uaplex_plugin_descriptor descriptor = {
    UAPLEX_HEADER_INIT(uaplex_plugin_descriptor, UAPLEX_STYPE_PLUGIN_DESCRIPTOR),
    UAPLEX_ABI_VERSION_MAJOR,
    UAPLEX_ABI_VERSION_MINOR,
    "test-faulty-pool",
    "1.0.0",
    "a buffer pool that lends garbage above a size",
    NULL,
    NULL,
    NULL,
    &factory,
    NULL,
    NULL};

UAPLEX_EXPORT uaplex_status uaplex_plugin_entry(uint32_t host_abi_version,
                                                const uaplex_host_api* host,
                                                const uaplex_plugin_descriptor** out) {
    (void)host_abi_version;
    g_host = host;
    *out = &descriptor;
    return UAPLEX_Good;
}
