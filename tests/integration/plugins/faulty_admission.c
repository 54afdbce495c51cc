// SPDX-License-Identifier: Apache-2.0
/* An admission provider that misbehaves on purpose (faulty_kinds_test), written against the
 * raw C ABI so that its garbage reaches the kernel unfiltered. Connections and requests from a
 * peer whose address starts with `fault_peer` get the fault named by `fault`; everyone else is
 * admitted without limits:
 *   "reserved-classify" classify(_connection) returns 0xFFFF0000 (with an owner filled in),
 *   "null-owner"        classify(_connection) returns Good without an owner,
 *   "acquire-status"    try_acquire for that peer's owner returns `acquire_status`
 *                       (default 0xFFFF0000) and never fills the lease: at every stage, or
 *                       only at stage `acquire_stage` when that is set.
 */
#include <stdlib.h>
#include <string.h>

#include "faulty_plugin.h"
#include "uaplex/uaplex.h"

static const uaplex_host_api* g_host;

enum { FAULT_NONE = 0, FAULT_RESERVED_CLASSIFY = 1, FAULT_NULL_OWNER = 2, FAULT_ACQUIRE = 3 };

/* Two static owners: reference counting is a no-op, and an owner's identity tells a faulty
 * peer's requests from the others'. */
struct uaplex_admission_owner {
    int faulty;
};
static uaplex_admission_owner g_good = {0};
static uaplex_admission_owner g_faulty = {1};

typedef struct provider {
    int fault;
    char peer[64];
    size_t peer_len;
    uaplex_status acquire_status;
    int64_t acquire_stage; /* -1: every stage */
} provider;

static uaplex_status create(uaplex_plugin_ctx* ctx, const uaplex_admission_params* params,
                            void** out_self) {
    provider* p = (provider*)calloc(1, sizeof *p);
    uaplex_str v = {0, 0};
    int64_t st = (int64_t)0xFFFF0000u;
    (void)params;
    if (!p) return UAPLEX_BadOutOfMemory;
    if (g_host->config_string(ctx, (uaplex_str){"fault", 5}, &v) == UAPLEX_Good) {
        if (str_is(v, "reserved-classify")) p->fault = FAULT_RESERVED_CLASSIFY;
        if (str_is(v, "null-owner")) p->fault = FAULT_NULL_OWNER;
        if (str_is(v, "acquire-status")) p->fault = FAULT_ACQUIRE;
    }
    if (g_host->config_string(ctx, (uaplex_str){"fault_peer", 10}, &v) == UAPLEX_Good &&
        v.len < sizeof p->peer) {
        memcpy(p->peer, v.data, v.len);
        p->peer_len = v.len;
    }
    g_host->config_int(ctx, (uaplex_str){"acquire_status", 14}, &st);
    p->acquire_status = (uaplex_status)st;
    p->acquire_stage = -1;
    g_host->config_int(ctx, (uaplex_str){"acquire_stage", 13}, &p->acquire_stage);
    *out_self = p;
    return UAPLEX_Good;
}

static uaplex_status use_fair_scheduling(void* self, int32_t* out_fair) {
    (void)self;
    *out_fair = 1;
    return UAPLEX_Good;
}

static int from_faulty_peer(const provider* p, const uaplex_admission_request_info* info) {
    return p->peer_len && info->peer_address.len >= p->peer_len &&
           memcmp(info->peer_address.data, p->peer, p->peer_len) == 0;
}

static uaplex_status classify(void* self, const uaplex_admission_request_info* info,
                              uaplex_admission_owner** out_owner) {
    const provider* p = (const provider*)self;
    if (!from_faulty_peer(p, info)) {
        *out_owner = &g_good;
        return UAPLEX_Good;
    }
    switch (p->fault) {
        case FAULT_RESERVED_CLASSIFY:
            *out_owner = &g_faulty;
            return 0xFFFF0000u;
        case FAULT_NULL_OWNER:
            *out_owner = NULL;
            return UAPLEX_Good;
        default:
            *out_owner = &g_faulty;
            return UAPLEX_Good;
    }
}

static uaplex_status revalidate(void* self, uaplex_admission_owner* owner,
                                const uaplex_admission_request_info* info) {
    const provider* p = (const provider*)self;
    (void)info;
    return owner == &g_faulty && p->fault == FAULT_ACQUIRE ? p->acquire_status : UAPLEX_Good;
}

static uaplex_status try_acquire(void* self, uint32_t stage, uaplex_admission_owner* owner,
                                 int64_t amount, uaplex_admission_lease* lease,
                                 uint32_t* out_reason) {
    const provider* p = (const provider*)self;
    if (owner == &g_faulty && p->fault == FAULT_ACQUIRE &&
        (p->acquire_stage < 0 || p->acquire_stage == (int64_t)stage))
        return p->acquire_status;
    lease->stage = stage;
    lease->released = 0;
    lease->amount = amount;
    *out_reason = UAPLEX_ADMISSION_OK;
    return UAPLEX_Good;
}

static uaplex_status release(void* self, uaplex_admission_lease* lease) {
    (void)self;
    lease->released = 1;
    return UAPLEX_Good;
}

static uaplex_status usage(void* self, uint32_t stage, int64_t* out_usage) {
    (void)self;
    (void)stage;
    *out_usage = 0;
    return UAPLEX_Good;
}

static uaplex_status owner_ref(void* self, uaplex_admission_owner* owner) {
    (void)self;
    (void)owner;
    return UAPLEX_Good;
}

static uaplex_status owner_info(void* self, uaplex_admission_owner* owner, uint32_t* out_class,
                                uint32_t* out_weight) {
    (void)self;
    (void)owner;
    *out_class = UAPLEX_CLASS_ESTABLISHED;
    *out_weight = 1;
    return UAPLEX_Good;
}

static const uaplex_admission_ops ops = {
    .hdr = UAPLEX_HEADER_INIT(uaplex_admission_ops, UAPLEX_STYPE_ADMISSION_OPS),
    .start = noop,
    .stop = noop,
    .destroy = destroy,
    .use_fair_scheduling = use_fair_scheduling,
    .classify_connection = classify,
    .classify = classify,
    .revalidate = revalidate,
    .try_acquire = try_acquire,
    .release = release,
    .usage = usage,
    .owner_retain = owner_ref,
    .owner_release = owner_ref,
    .owner_info = owner_info,
    .tracked_owners = NULL,
    .owner_usage = NULL,
    .owner_group = NULL};
static const uaplex_admission_factory factory = {
    UAPLEX_HEADER_INIT(uaplex_admission_factory, UAPLEX_STYPE_ADMISSION_FACTORY), &ops, create};
static const uaplex_plugin_descriptor descriptor = {
    UAPLEX_HEADER_INIT(uaplex_plugin_descriptor, UAPLEX_STYPE_PLUGIN_DESCRIPTOR),
    UAPLEX_ABI_VERSION_MAJOR,
    UAPLEX_ABI_VERSION_MINOR,
    "test-faulty-admission",
    "1.0.0",
    "an admission provider that answers one peer with garbage",
    NULL,
    &factory,
    NULL,
    NULL,
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
