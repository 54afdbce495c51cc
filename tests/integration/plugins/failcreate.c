// SPDX-License-Identifier: Apache-2.0
/* A request queue whose create refuses its configuration. */
#include "uaplex/uaplex.h"

static const uaplex_host_api* g_host;

static uaplex_status create(uaplex_plugin_ctx* ctx, const uaplex_request_queue_params* p,
                            void** out) {
    static const char msg[] = "refusing to start: this plugin always fails create";
    (void)p;
    (void)out;
    uaplex_str s = {msg, sizeof msg - 1};
    g_host->log(ctx, UAPLEX_LOG_ERROR, s);
    return UAPLEX_BadConfigurationError;
}
static uaplex_status noop(void* self) {
    (void)self;
    return UAPLEX_Good;
}
static uaplex_status enqueue(void* self, uaplex_request_entry* e) {
    (void)self;
    (void)e;
    return UAPLEX_BadNotSupported;
}
static uaplex_status try_dequeue(void* self, uaplex_request_entry** out) {
    (void)self;
    *out = NULL;
    return UAPLEX_BadNothingToDo;
}
static uaplex_status cancel(void* self, uaplex_request_entry* e, uaplex_status st) {
    (void)self;
    (void)e;
    (void)st;
    return UAPLEX_BadNotFound;
}
static uaplex_status count(void* self, uint64_t* out) {
    (void)self;
    *out = 0;
    return UAPLEX_Good;
}
static const uaplex_request_queue_ops ops = {
    .hdr = UAPLEX_HEADER_INIT(uaplex_request_queue_ops, UAPLEX_STYPE_REQUEST_QUEUE_OPS),
    .start = noop,
    .stop = noop,
    .destroy = noop,
    .enqueue = enqueue,
    .try_dequeue = try_dequeue,
    .cancel = cancel,
    .count = count};
static const uaplex_request_queue_factory factory = {
    UAPLEX_HEADER_INIT(uaplex_request_queue_factory, UAPLEX_STYPE_REQUEST_QUEUE_FACTORY), &ops,
    create};
static const uaplex_plugin_descriptor descriptor = {
    UAPLEX_HEADER_INIT(uaplex_plugin_descriptor, UAPLEX_STYPE_PLUGIN_DESCRIPTOR),
    UAPLEX_ABI_VERSION_MAJOR,
    UAPLEX_ABI_VERSION_MINOR,
    "test-failcreate",
    "1.0.0",
    "create always fails",
    NULL,
    NULL,
    &factory,
    NULL,
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
