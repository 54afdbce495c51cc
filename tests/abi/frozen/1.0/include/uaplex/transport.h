/* Transports (plugins: transport-tcp, transport-https): own sockets and move bytes. The
 * kernel does chunk assembly and security; a transport only frames what its scheme needs,
 * delivers received bytes in pool buffers and sends buffers it is handed.
 */
#ifndef UAPLEX_TRANSPORT_H
#define UAPLEX_TRANSPORT_H

#include "uaplex/buffer_pool.h"
#include "uaplex/plugin.h"

UAPLEX_BEGIN_DECLS

/* Opaque connection, owned by the transport; valid until the kernel's on_closed returns. */
typedef struct uaplex_connection uaplex_connection;

/* The kernel's side of a transport; borrowed until destroy. All callbacks run on the
 * transport's I/O threads, must not block, and may call back into the transport. */
typedef struct uaplex_transport_params {
    uaplex_header hdr;            /* UAPLEX_STYPE_TRANSPORT_PARAMS */
    uint32_t receive_buffer_size; /* bytes; the kernel's negotiated chunk limit */
    uint32_t send_buffer_size;
    /* Pool the transport rents receive buffers from; borrowed until destroy. */
    void* pool_self;
    const uaplex_buffer_pool_ops* pool;
    uaplex_buffer_manager* pool_manager;
    /* A connection was accepted. *out_connection_user is the kernel's per-connection
     * context, passed back in the other callbacks. A Bad result refuses the connection
     * (the transport closes it). `peer` borrowed for the call. */
    uaplex_status (*on_accepted)(void* user, uaplex_connection* connection, uaplex_str endpoint_url,
                                 uaplex_str peer, void** out_connection_user);
    /* Bytes arrived. Ownership of `buffer` (and of its bytes) passes to the kernel, which
     * gives it back to the pool. */
    uaplex_status (*on_received)(void* user, void* connection_user, uaplex_buffer* buffer);
    /* The connection is gone (status says why). No callback for it follows. */
    uaplex_status (*on_closed)(void* user, void* connection_user, uaplex_status reason);
    void* user;
} uaplex_transport_params;

typedef struct uaplex_transport_ops {
    uaplex_header hdr; /* UAPLEX_STYPE_TRANSPORT_OPS */
    /* lifecycle (see uaplex_lifecycle_ops); stop closes every endpoint and connection
     * (on_closed with BadShutdown) before it returns. */
    uaplex_status (*start)(void* self);
    uaplex_status (*stop)(void* self);
    uaplex_status (*destroy)(void* self);

    /* URL scheme served ("opc.tcp"); *out borrowed until destroy. Any thread. */
    uaplex_status (*scheme)(void* self, uaplex_str* out_scheme);
    /* Starts listening on `endpoint_url` (borrowed for the call), e.g.
     * "opc.tcp://0.0.0.0:4840". BadResourceUnavailable when the address is taken. Host
     * main thread; may block briefly. */
    uaplex_status (*listen)(void* self, uaplex_str endpoint_url);
    /* Queues buffers for sending in order. Ownership of the buffers passes to the
     * transport, which gives each back to its pool after the write (or on failure). Any
     * thread; must not block. */
    uaplex_status (*send)(void* self, uaplex_connection* connection, uaplex_buffer* buffers,
                          size_t count);
    /* Closes after pending sends; on_closed follows. Any thread; must not block. */
    uaplex_status (*close)(void* self, uaplex_connection* connection, uaplex_status reason);
    /* Pauses or resumes reading from a connection (back-pressure). Any thread. */
    uaplex_status (*set_receiving)(void* self, uaplex_connection* connection, int32_t enabled);
} uaplex_transport_ops;

typedef struct uaplex_transport_factory {
    uaplex_header hdr; /* UAPLEX_STYPE_TRANSPORT_FACTORY */
    const uaplex_transport_ops* ops;
    /* Host main thread; params borrowed until destroy. */
    uaplex_status (*create)(uaplex_plugin_ctx* ctx, const uaplex_transport_params* params,
                            void** out_self);
} uaplex_transport_factory;

UAPLEX_END_DECLS

#endif /* UAPLEX_TRANSPORT_H */
