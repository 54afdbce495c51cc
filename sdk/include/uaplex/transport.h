// SPDX-License-Identifier: Apache-2.0
/* Transports (plugins/transport: transport-tcp, transport-https): own sockets and move
 * bytes. The kernel does chunk assembly and security; a transport only frames what its
 * scheme needs, delivers received bytes in pool buffers and sends buffers it is handed.
 */
#ifndef UAPLEX_TRANSPORT_H
#define UAPLEX_TRANSPORT_H

#include "uaplex/buffer_pool.h"
#include "uaplex/plugin.h"

UAPLEX_BEGIN_DECLS

/* Opaque connection, owned by the transport; valid until the kernel's on_closed returns. */
typedef struct uaplex_connection uaplex_connection;

/* What a UACP Hello/Acknowledge exchange settled for one connection (Part 6 7.1.2.3), as
 * seen from the server. Borrowed for the on_hello call. Since 1.0, appended. */
typedef struct uaplex_transport_negotiated {
    uaplex_header hdr;            /* UAPLEX_STYPE_TRANSPORT_NEGOTIATED */
    uint32_t protocol_version;    /* the client's ProtocolVersion */
    uint32_t receive_buffer_size; /* largest chunk the server accepts (ACK ReceiveBufferSize) */
    uint32_t send_buffer_size;    /* largest chunk the server may send (ACK SendBufferSize) */
    uint32_t max_message_size;    /* largest response the client accepts; 0 = no limit */
    uint32_t max_chunk_count;     /* chunks per response the client accepts; 0 = no limit */
    uint32_t reserved0;
    uaplex_str endpoint_url; /* the Hello's EndpointUrl */
} uaplex_transport_negotiated;

/* The kernel's side of a transport; borrowed until destroy. All callbacks run on the
 * transport's I/O threads, must not block, and may call back into the transport.
 *
 * An opc.tcp transport speaks UACP itself (Hello, Acknowledge, Error, ReverseHello) and
 * delivers only whole secure-conversation chunks (OPN, MSG, CLO; header included) whose
 * size it has checked against the negotiated receive buffer size. */
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
    /* --- since 1.0, appended --- */
    uint32_t max_message_size;       /* MaxMessageSize in Acknowledge; 0 = no limit */
    uint32_t max_chunk_count;        /* MaxChunkCount in Acknowledge; 0 = no limit */
    uint32_t max_connections;        /* open connections; more are closed at accept */
    uint32_t max_pending_handshakes; /* connections before secure_channel_opened */
    uint32_t handshake_timeout_ms;   /* such a connection is closed after this time */
    uint32_t reserved1;
    /* ServerUri for ReverseHello; borrowed until destroy. */
    uaplex_str server_uri;
    /* Hello accepted and Acknowledge sent; `negotiated` borrowed for the call. A Bad result
     * closes the connection with an Error message carrying it. May be NULL. */
    uaplex_status (*on_hello)(void* user, void* connection_user,
                              const uaplex_transport_negotiated* negotiated);
    /* --- since 1.4: transports without UASC (opc.https) --- */
    /* One whole request message arrived (an HTTP POST body; Part 6 7.4): `encoding` says
     * how (uaplex_transport_body). The body is `count` buffers in order; their ownership
     * passes to the kernel. The kernel answers every request with exactly one send() whose
     * buffers together are the whole response body, in the request's encoding, in request
     * order; a body that does not decode is answered with a ServiceFault. The connection
     * belongs to the endpoint's one shared SecureChannel. May be NULL. */
    uaplex_status (*on_request)(void* user, void* connection_user, uint32_t encoding,
                                uaplex_buffer* buffers, size_t count);
    /* Writes the server's metrics in the Prometheus text format to `out` (capacity bytes,
     * caller-owned); *out_len = the bytes the text needs. BadOutOfRange when it does not
     * fit (call again with a larger buffer). Any thread. May be NULL. */
    uaplex_status (*write_metrics)(void* user, char* out, size_t capacity, size_t* out_len);
    /* --- since 1.6: connection slots and send queues --- */
    /* Open connections from one remote address (IPv4-mapped IPv6 counts as IPv4); more
     * are refused like connections beyond max_connections. 0 = max_connections. */
    uint32_t max_connections_per_peer;
    /* A connection that has sent no Hello by then is closed; at most handshake_timeout_ms.
     * 0 = handshake_timeout_ms. */
    uint32_t hello_timeout_ms;
    /* Bytes queued for sending on one connection: above the high-water mark the transport
     * stops reading from the connection until the queue drains to half of it; above the
     * maximum the connection is closed (Error Bad_TcpNotEnoughResources where it can still
     * be written). 0 = the transport's default. */
    uint32_t send_queue_high_water_bytes;
    uint32_t max_send_queue_bytes;
} uaplex_transport_params;

/* How a request body passed to on_request is encoded. */
typedef enum uaplex_transport_body {
    UAPLEX_TRANSPORT_BODY_BINARY = 0, /* encoding NodeId + body (application/octet-stream) */
    UAPLEX_TRANSPORT_BODY_JSON = 1    /* a JSON ExtensionObject (application/opcua+uajson) */
} uaplex_transport_body;

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
    /* Closes after pending sends; on_closed follows, never from inside this call (nor from
     * inside send). A Bad `reason` is told to the peer where the protocol can carry it
     * (opc.tcp: a UACP Error message with it as the error). Any thread; must not block. */
    uaplex_status (*close)(void* self, uaplex_connection* connection, uaplex_status reason);
    /* Pauses or resumes reading from a connection (back-pressure). Any thread.
     * Reserved: not called by the kernel yet. */
    uaplex_status (*set_receiving)(void* self, uaplex_connection* connection, int32_t enabled);
    /* --- since 1.0, appended --- */
    /* The kernel opened a secure channel on the connection: it no longer counts as a pending
     * handshake and the handshake timeout no longer applies. Any thread; must not block. */
    uaplex_status (*secure_channel_opened)(void* self, uaplex_connection* connection);
    /* Reverse connect (Part 6 7.1.3): connects out to `client_url` and sends ReverseHello
     * with the params' server_uri and `endpoint_url` (both borrowed for the call); retries
     * with backoff while the transport runs, and again after the connection closes. The
     * connection then behaves as an accepted one (on_accepted, Hello, ...). Host main
     * thread. */
    uaplex_status (*reverse_connect)(void* self, uaplex_str client_url, uaplex_str endpoint_url);
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
