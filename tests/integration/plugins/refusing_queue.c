// SPDX-License-Identifier: Apache-2.0
/* A request-queue plugin whose create always refuses, built with different descriptors:
 * twice into one directory (two libraries claiming the same plugin name), and for a future
 * ABI major version (the host must refuse it by name). */
#include "uaplex/uaplex.h"

#ifndef PLUGIN_NAME
#define PLUGIN_NAME "test-dup"
#define PLUGIN_VERSION "1.0.0"
#define PLUGIN_DESCRIPTION "duplicate name"
#endif
#ifndef PLUGIN_ABI_MAJOR
#define PLUGIN_ABI_MAJOR UAPLEX_ABI_VERSION_MAJOR
#define PLUGIN_ABI_MINOR UAPLEX_ABI_VERSION_MINOR
#endif

static uaplex_status create(uaplex_plugin_ctx* ctx, const uaplex_request_queue_params* p,
                            void** out) {
    (void)ctx;
    (void)p;
    (void)out;
    return UAPLEX_BadNotSupported;
}
static uaplex_status noop(void* self) {
    (void)self;
    return UAPLEX_Good;
}
static const uaplex_request_queue_ops ops = {
    .hdr = UAPLEX_HEADER_INIT(uaplex_request_queue_ops, UAPLEX_STYPE_REQUEST_QUEUE_OPS),
    .start = noop,
    .stop = noop,
    .destroy = noop};
static const uaplex_request_queue_factory factory = {
    UAPLEX_HEADER_INIT(uaplex_request_queue_factory, UAPLEX_STYPE_REQUEST_QUEUE_FACTORY), &ops,
    create};
static const uaplex_plugin_descriptor descriptor = {
    UAPLEX_HEADER_INIT(uaplex_plugin_descriptor, UAPLEX_STYPE_PLUGIN_DESCRIPTOR),
    PLUGIN_ABI_MAJOR,
    PLUGIN_ABI_MINOR,
    PLUGIN_NAME,
    PLUGIN_VERSION,
    PLUGIN_DESCRIPTION,
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
    (void)host;
    *out = &descriptor;
    return UAPLEX_Good;
}
