// SPDX-License-Identifier: Apache-2.0
/* PubSub transports (plugins/pubsub: mqtt), since 1.10: carry the NetworkMessages that the
 * kernel's publishers encode (OPC UA Part 14, [pubsub] in the configuration) to a
 * message-oriented middleware. The kernel owns the PubSub model (PublishedDataSets,
 * DataSetWriters, WriterGroups) and the message mapping (JSON); a plugin of this kind only
 * moves opaque payloads to topics, keeps a bounded buffer while its broker is away, and
 * maintains the Publisher's status message (online on connect, offline as the last will).
 *
 * Since 1.14 the kind also receives: the kernel's DataSetReaders subscribe to topic filters
 * (ops.subscribe) and the plugin hands every message that arrives on them to
 * params.message_received.
 *
 * Instances: the kernel creates one instance per [pubsub.connections.<name>] whose
 * `plugin` names a plugin of this kind; the instance's settings are that plugin's
 * [plugins.<name>] table.
 */
#ifndef UAPLEX_PUBSUB_H
#define UAPLEX_PUBSUB_H

#include "uaplex/plugin.h"

UAPLEX_BEGIN_DECLS

/* Delivery guarantee asked of the middleware for one message. */
typedef enum uaplex_pubsub_qos {
    UAPLEX_PUBSUB_QOS_AT_MOST_ONCE = 0, /* best effort (MQTT QoS 0) */
    UAPLEX_PUBSUB_QOS_AT_LEAST_ONCE = 1 /* acknowledged, resent after a reconnect (QoS 1) */
} uaplex_pubsub_qos;

/* uaplex_pubsub_message.flags */
#define UAPLEX_PUBSUB_RETAIN 0x1u /* the broker keeps the last message of the topic */

/* One message to publish, or (since 1.14) one message received. Caller storage; every view
 * is borrowed for the call: the callee copies what it keeps. */
typedef struct uaplex_pubsub_message {
    uaplex_header hdr;    /* UAPLEX_STYPE_PUBSUB_MESSAGE */
    uaplex_str topic;     /* not empty; no wildcard characters */
    uaplex_bytes payload; /* may be empty */
    uint32_t qos;         /* a uaplex_pubsub_qos */
    uint32_t flags;       /* UAPLEX_PUBSUB_RETAIN (received: the broker's retained copy) */
} uaplex_pubsub_message;

/* Counters of one instance. Caller storage: the caller sets hdr (its size) and the plugin
 * fills the fields that lie below it. */
typedef struct uaplex_pubsub_stats {
    uaplex_header hdr;   /* UAPLEX_STYPE_PUBSUB_STATS */
    uint64_t accepted;   /* publish calls answered Good */
    uint64_t sent;       /* messages handed to the middleware (QoS 1: acknowledged) */
    uint64_t dropped;    /* messages dropped because the bounded buffer was full */
    uint64_t buffered;   /* messages waiting now (buffered plus in flight) */
    uint64_t reconnects; /* successful connects after the first */
    uint32_t connected;  /* 1 while connected to the middleware, else 0 */
    uint32_t reserved0;
    /* since 1.14 */
    uint64_t received;         /* messages handed to message_received */
    uint64_t received_dropped; /* received messages dropped: above the plugin's receive size
                                * limit, or no message_received */
} uaplex_pubsub_stats;

typedef struct uaplex_pubsub_params {
    uaplex_header hdr; /* UAPLEX_STYPE_PUBSUB_PARAMS */
    uint32_t reserved0;
    /* The PublisherId as text (Part 14 6.2.7.1), e.g. for the client id. Borrowed until
     * destroy. */
    uaplex_str publisher_id;
    /* The Publisher's status message: on every connect the plugin publishes status_online
     * to status_topic (QoS 1, retained) before any other message; it registers
     * status_offline as the connection's last will (QoS 1, retained), and publishes it
     * itself at stop. An empty status_topic: no status message. Borrowed until destroy. */
    uaplex_str status_topic;
    uaplex_bytes status_online;
    uaplex_bytes status_offline;
    /* Told when the connection comes up (1) or goes down (0), e.g. to send key frames
     * after a reconnect. Called on the plugin's thread; must not block and must not call
     * back into the instance except publish. NULL: not told. */
    void (*connection_changed)(void* user, uint32_t connected);
    void* user;
    /* since 1.14: a message arrived on a topic that matches one of the subscribe calls'
     * filters. *msg and its views are borrowed for the call (the callee copies what it
     * keeps); msg->qos is the delivery's QoS, msg->flags UAPLEX_PUBSUB_RETAIN for a retained
     * copy. Called on the plugin's thread, one message at a time and in the order received;
     * must not block and must not call back into the instance except publish and stats.
     * Messages above the plugin's receive size limit are dropped before this call and
     * counted in stats.received_dropped. NULL: received messages are dropped and counted. */
    void (*message_received)(void* user, const uaplex_pubsub_message* msg);
    void* message_user;
} uaplex_pubsub_params;

typedef struct uaplex_pubsub_ops {
    uaplex_header hdr; /* UAPLEX_STYPE_PUBSUB_OPS */
    /* lifecycle (see uaplex_lifecycle_ops): start connects in the background (it does not
     * wait for the middleware: an absent broker is not an error); stop publishes the
     * offline status when connected, disconnects and joins the plugin's threads (bounded
     * by the plugin's settings); messages still buffered are discarded. */
    uaplex_status (*start)(void* self);
    uaplex_status (*stop)(void* self);
    uaplex_status (*destroy)(void* self);

    /* Queues *msg for sending; topic and payload are copied (borrowed for the call).
     * Good: accepted (sent now or buffered while the middleware is away).
     * BadResourceUnavailable: the bounded buffer is full; the message is dropped, counted
     * in stats.dropped and logged. BadInvalidArgument: empty topic, wildcard in the topic
     * or an unknown qos. BadEncodingLimitsExceeded: larger than the plugin's message size
     * limit. BadInvalidState: not started, or stopped. Any thread; must not block. */
    uaplex_status (*publish)(void* self, const uaplex_pubsub_message* msg);
    /* Fills *out (caller storage; the caller sets out->hdr). Any thread; must not block. */
    uaplex_status (*stats)(void* self, uaplex_pubsub_stats* out);

    /* since 1.14: receive the messages of the queues that topic_filter names (a queue name of
     * the middleware: for MQTT a topic filter, '+' one level, '#' the rest; borrowed for the
     * call) with the given uaplex_pubsub_qos as the highest QoS of their delivery; each
     * message goes once to params.message_received. Host main thread, after create
     * and before start. The plugin subscribes on every connect, so subscriptions survive
     * reconnects and broker restarts. Good; BadInvalidArgument: empty or malformed filter,
     * invalid UTF-8 or an unknown qos; BadResourceUnavailable: more filters than the
     * plugin's limit; BadInvalidState: already started. A table without this entry (a 1.13
     * plugin) cannot receive. */
    uaplex_status (*subscribe)(void* self, uaplex_str topic_filter, uint32_t qos);
} uaplex_pubsub_ops;

typedef struct uaplex_pubsub_factory {
    uaplex_header hdr; /* UAPLEX_STYPE_PUBSUB_FACTORY */
    const uaplex_pubsub_ops* ops;
    /* Validates the settings (BadConfigurationError on an unknown key or a value out of
     * range). Host main thread; params borrowed until destroy. */
    uaplex_status (*create)(uaplex_plugin_ctx* ctx, const uaplex_pubsub_params* params,
                            void** out_self);
} uaplex_pubsub_factory;

UAPLEX_END_DECLS

#endif /* UAPLEX_PUBSUB_H */
