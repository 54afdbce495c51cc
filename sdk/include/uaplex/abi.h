// SPDX-License-Identifier: Apache-2.0
/* uaplex plugin ABI: version, common struct header, borrowed views.
 *
 * Rules every ABI header follows (docs/architecture.md explains why):
 * - Plain C11. No C++ type, exception or STL object crosses the boundary.
 * - Every struct that crosses starts with uaplex_header {struct_size, type}. A reader
 *   touches only fields that lie below struct_size; structs only grow at the end; no field
 *   is ever conditional. UAPLEX_HAS_FIELD() is the check for a field added after 1.0, and
 *   UAPLEX_FIELD_OR() reads such a field with its value for "absent".
 * - Function tables are append-only. A NULL entry means "not supported". Each entry
 *   takes an opaque `void* self` first and returns a uaplex_status.
 * - A field or entry appended after a struct's first release sits below a line
 *   `--- since 1.N ---` (the minor version whose headers first had it); everything above
 *   the first such line is the struct's first release, which a reader may require.
 *   `since 1.0, appended` marks fields added after the first 1.0 headers but before 1.1:
 *   a plugin built against the first 1.0 headers lacks them, so they are optional too.
 * - An entry marked "reserved: not called by the kernel yet" is part of the ABI (it keeps
 *   its place) but no kernel of this major version calls it so far; implementing it has no
 *   effect.
 * - Ownership is stated on every entry: "borrowed" inputs are valid for the call only;
 *   memory is freed by the side that allocated it; buffers go back to the pool that lent
 *   them.
 * - Threading is stated on every entry: "any thread", "must not block", "I/O thread only".
 */
#ifndef UAPLEX_ABI_H
#define UAPLEX_ABI_H

#include <stddef.h>
#include <stdint.h>

#include "uaplex/statuscodes.h"

#ifdef __cplusplus
#define UAPLEX_EXTERN_C extern "C"
#define UAPLEX_BEGIN_DECLS extern "C" {
#define UAPLEX_END_DECLS }
#else
#define UAPLEX_EXTERN_C
#define UAPLEX_BEGIN_DECLS
#define UAPLEX_END_DECLS
#endif

/* Symbols a plugin library exports (plugins build with hidden visibility). */
#define UAPLEX_EXPORT UAPLEX_EXTERN_C __attribute__((visibility("default")))

/* A major change breaks binary compatibility; a minor change only appends. */
#define UAPLEX_ABI_VERSION_MAJOR 1u
#define UAPLEX_ABI_VERSION_MINOR 14u
#define UAPLEX_ABI_VERSION ((UAPLEX_ABI_VERSION_MAJOR << 16) | UAPLEX_ABI_VERSION_MINOR)
#define UAPLEX_ABI_MAJOR_OF(v) (((uint32_t)(v)) >> 16)
#define UAPLEX_ABI_MINOR_OF(v) (((uint32_t)(v)) & 0xFFFFu)

UAPLEX_BEGIN_DECLS

/* Type tags of ABI structs (the `type` field of uaplex_header). Values never change. */
typedef enum uaplex_struct_type {
    UAPLEX_STYPE_UNSPECIFIED = 0,
    UAPLEX_STYPE_HOST_API = 1,
    UAPLEX_STYPE_PLUGIN_DESCRIPTOR = 2,
    UAPLEX_STYPE_CANCEL_TOKEN = 3,
    UAPLEX_STYPE_BUFFER = 4,
    UAPLEX_STYPE_TRANSPORT_FACTORY = 100,
    UAPLEX_STYPE_TRANSPORT_OPS = 101,
    UAPLEX_STYPE_TRANSPORT_PARAMS = 102,
    UAPLEX_STYPE_TRANSPORT_NEGOTIATED = 103,
    UAPLEX_STYPE_ADMISSION_FACTORY = 200,
    UAPLEX_STYPE_ADMISSION_OPS = 201,
    UAPLEX_STYPE_ADMISSION_PARAMS = 202,
    UAPLEX_STYPE_ADMISSION_REQUEST_INFO = 203,
    UAPLEX_STYPE_ADMISSION_LEASE = 204,
    UAPLEX_STYPE_REQUEST_QUEUE_FACTORY = 300,
    UAPLEX_STYPE_REQUEST_QUEUE_OPS = 301,
    UAPLEX_STYPE_REQUEST_QUEUE_PARAMS = 302,
    UAPLEX_STYPE_REQUEST_ENTRY = 303,
    UAPLEX_STYPE_BUFFER_POOL_FACTORY = 400,
    UAPLEX_STYPE_BUFFER_POOL_OPS = 401,
    UAPLEX_STYPE_BUFFER_POOL_PARAMS = 402,
    UAPLEX_STYPE_MI_QUEUE_FACTORY = 500,
    UAPLEX_STYPE_MI_QUEUE_FACTORY_OPS = 501,
    UAPLEX_STYPE_MI_QUEUE_PARAMS = 502,
    UAPLEX_STYPE_DATA_CHANGE_QUEUE_OPS = 503,
    UAPLEX_STYPE_EVENT_QUEUE_OPS = 504,
    UAPLEX_STYPE_EVENT_ENTRY = 505,
    UAPLEX_STYPE_NODE_MANAGER_FACTORY = 600,
    UAPLEX_STYPE_NODE_MANAGER_OPS = 601,
    UAPLEX_STYPE_NODE_MANAGER_PARAMS = 602,
    UAPLEX_STYPE_NODE_MANAGER_READ_ITEM = 603,
    UAPLEX_STYPE_NODE_MANAGER_WRITE_ITEM = 604,
    UAPLEX_STYPE_NODE_MANAGER_REFERENCE = 605,
    UAPLEX_STYPE_NODE_SPEC = 606,
    UAPLEX_STYPE_EVENT_SPEC = 607,
    UAPLEX_STYPE_METHOD_SPEC = 608, /* since 1.7 */
    UAPLEX_STYPE_COMPLETION = 609,  /* since 1.8 */
    UAPLEX_STYPE_CONDITION_SPEC = 610,  /* since 1.13 */
    UAPLEX_STYPE_CONDITION_STATE = 611, /* since 1.13 */
    UAPLEX_STYPE_CONDITION_CALL = 612,  /* since 1.13 */
    UAPLEX_STYPE_PUBSUB_FACTORY = 800, /* since 1.10 */
    UAPLEX_STYPE_PUBSUB_OPS = 801,     /* since 1.10 */
    UAPLEX_STYPE_PUBSUB_PARAMS = 802,  /* since 1.10 */
    UAPLEX_STYPE_PUBSUB_MESSAGE = 803, /* since 1.10 */
    UAPLEX_STYPE_PUBSUB_STATS = 804,   /* since 1.10 */
    UAPLEX_STYPE_HISTORY_FACTORY = 700,     /* since 1.11 */
    UAPLEX_STYPE_HISTORY_OPS = 701,         /* since 1.11 */
    UAPLEX_STYPE_HISTORY_PARAMS = 702,      /* since 1.11 */
    UAPLEX_STYPE_HISTORY_VALUE = 703,       /* since 1.11 */
    UAPLEX_STYPE_HISTORY_READ = 704,        /* since 1.11 */
    UAPLEX_STYPE_HISTORY_READ_RESULT = 705, /* since 1.11 */
    UAPLEX_STYPE_HISTORY_UPDATE = 706,      /* since 1.11 */
    UAPLEX_STYPE_HISTORY_DELETE = 707,      /* since 1.11 */
    UAPLEX_STYPE_HISTORY_EVENT = 708,             /* since 1.14 */
    UAPLEX_STYPE_HISTORY_EVENT_READ = 709,        /* since 1.14 */
    UAPLEX_STYPE_HISTORY_EVENT_READ_RESULT = 710, /* since 1.14 */
    UAPLEX_STYPE_HISTORY_EVENT_UPDATE = 711,      /* since 1.14 */
    UAPLEX_STYPE_HISTORY_EVENT_DELETE = 712,      /* since 1.14 */
    UAPLEX_STYPE_FORCE_32BIT = 0x7FFFFFFF
} uaplex_struct_type;

/* The first member of every ABI struct. */
typedef struct uaplex_header {
    uint32_t struct_size; /* sizeof the struct as the writer compiled it */
    uint32_t type;        /* a uaplex_struct_type */
} uaplex_header;

/* Initialiser of the header of an ABI struct of type T with type tag `tag`. */
#define UAPLEX_HEADER_INIT(T, tag) \
    { (uint32_t)sizeof(T), (uint32_t)(tag) }

/* True when the struct or function table pointed to by `p` (of type T, as the reader was
 * compiled) holds `field`, judged by the size its writer gave it (hdr.struct_size). This is
 * the one presence check on both sides of the ABI: a reader never compares struct_size with
 * its own sizeof(T), which grows with every append and would refuse older writers. */
#define UAPLEX_HAS_FIELD(p, T, field) \
    ((p)->hdr.struct_size >= offsetof(T, field) + sizeof(((T*)0)->field))

/* The value of `field` when UAPLEX_HAS_FIELD holds, else `absent` (NULL for an entry, the
 * documented default for a value): how a reader treats a field its writer did not have. */
#define UAPLEX_FIELD_OR(p, T, field, absent) (UAPLEX_HAS_FIELD(p, T, field) ? (p)->field : (absent))

/* A borrowed string: not NUL-terminated in general; valid for as long as the owner says. */
typedef struct uaplex_str {
    const char* data;
    size_t len;
} uaplex_str;

/* A borrowed byte string. */
typedef struct uaplex_bytes {
    const uint8_t* data;
    size_t len;
} uaplex_bytes;

/* A cancellation token owned by the kernel (e.g. the request's or the server's). It stays
 * valid for the call it is passed to, and for as long as a registration on it exists. */
typedef struct uaplex_cancel_token {
    uaplex_header hdr;
    void* self;
    /* Good when not cancelled, otherwise the cancellation status (e.g.
     * BadRequestCancelledByClient). Any thread; must not block. */
    uaplex_status (*is_cancelled)(void* self);
    /* Calls fn(user, status) once on cancellation (at once if already cancelled), on the
     * cancelling thread; fn must not block. *out_registration identifies it for unregister.
     * Any thread. */
    uaplex_status (*register_callback)(void* self, void (*fn)(void* user, uaplex_status status),
                                       void* user, uint64_t* out_registration);
    /* After it returns the callback is not running and will not run. Any thread, except
     * from inside the callback itself. */
    uaplex_status (*unregister_callback)(void* self, uint64_t registration);
} uaplex_cancel_token;

UAPLEX_END_DECLS

#endif /* UAPLEX_ABI_H */
