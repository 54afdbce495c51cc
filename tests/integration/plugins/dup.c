/* Built twice into one directory: two libraries claiming the same plugin name. */
#include "uaplex/uaplex.h"

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
    UAPLEX_ABI_VERSION_MAJOR,
    UAPLEX_ABI_VERSION_MINOR,
    "test-dup",
    "1.0.0",
    "duplicate name",
    NULL,
    NULL,
    &factory,
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
