// SPDX-License-Identifier: Apache-2.0
/* Compiled as C11 with -Wall -Wextra -pedantic -Werror: every ABI header must be plain C,
 * and the layout pins hold for a C compiler too. */
#include "uaplex/abi.h"
#include "uaplex/admission.h"
#include "uaplex/buffer_pool.h"
#include "uaplex/history.h"
#include "uaplex/host.h"
#include "uaplex/monitored_item_queue.h"
#include "uaplex/node_manager.h"
#include "uaplex/plugin.h"
#include "uaplex/pubsub.h"
#include "uaplex/request_queue.h"
#include "uaplex/transport.h"
#include "uaplex/uaplex.h"

#include <stdio.h>
#include <string.h>

#if defined(__LP64__)
#define UAPLEX_PIN_SIZE(T, n) _Static_assert(sizeof(T) == (n), "size of " #T)
#define UAPLEX_PIN_OFFSET(T, f, n) _Static_assert(offsetof(T, f) == (n), "offset of " #T "." #f)
#include "layout_pins.inc"
#endif

/* Every kind's ops table starts with the lifecycle entries, so the host can drive any
 * instance through uaplex_lifecycle_ops. */
#define UAPLEX_PIN_LIFECYCLE(T)                                                      \
    _Static_assert(offsetof(T, start) == offsetof(uaplex_lifecycle_ops, start), #T); \
    _Static_assert(offsetof(T, stop) == offsetof(uaplex_lifecycle_ops, stop), #T);   \
    _Static_assert(offsetof(T, destroy) == offsetof(uaplex_lifecycle_ops, destroy), #T)
UAPLEX_PIN_LIFECYCLE(uaplex_transport_ops);
UAPLEX_PIN_LIFECYCLE(uaplex_admission_ops);
UAPLEX_PIN_LIFECYCLE(uaplex_request_queue_ops);
UAPLEX_PIN_LIFECYCLE(uaplex_buffer_pool_ops);
UAPLEX_PIN_LIFECYCLE(uaplex_mi_queue_factory_ops);
UAPLEX_PIN_LIFECYCLE(uaplex_node_manager_ops);
UAPLEX_PIN_LIFECYCLE(uaplex_history_ops);

/* Every factory has the same shape: header, ops, create. */
#define UAPLEX_PIN_FACTORY(T)                      \
    _Static_assert(offsetof(T, ops) == 8, #T);     \
    _Static_assert(offsetof(T, create) == 16, #T); \
    _Static_assert(sizeof(T) == 24, #T)
UAPLEX_PIN_FACTORY(uaplex_transport_factory);
UAPLEX_PIN_FACTORY(uaplex_admission_factory);
UAPLEX_PIN_FACTORY(uaplex_request_queue_factory);
UAPLEX_PIN_FACTORY(uaplex_buffer_pool_factory);
UAPLEX_PIN_FACTORY(uaplex_mi_queue_factory);
UAPLEX_PIN_FACTORY(uaplex_node_manager_factory);
UAPLEX_PIN_FACTORY(uaplex_history_factory);

static uaplex_status fake_reverse_connect(void* self, uaplex_str client, uaplex_str endpoint) {
    (void)self;
    (void)client;
    (void)endpoint;
    return UAPLEX_Good;
}

int main(void) {
    /* A reader compiled against a newer header must see an older, shorter struct as
     * lacking the appended field. */
    uaplex_plugin_descriptor d;
    int failures = 0;
    memset(&d, 0, sizeof d);
    d.hdr.struct_size = (uint32_t)sizeof d;
    d.hdr.type = UAPLEX_STYPE_PLUGIN_DESCRIPTOR;
    if (!UAPLEX_HAS_FIELD(&d, uaplex_plugin_descriptor, node_manager)) ++failures;
    d.hdr.struct_size = (uint32_t)offsetof(uaplex_plugin_descriptor, node_manager);
    if (UAPLEX_HAS_FIELD(&d, uaplex_plugin_descriptor, node_manager)) ++failures;
    if (UAPLEX_ABI_MAJOR_OF(UAPLEX_ABI_VERSION) != UAPLEX_ABI_VERSION_MAJOR) ++failures;
    if (UAPLEX_ABI_MINOR_OF(UAPLEX_ABI_VERSION) != UAPLEX_ABI_VERSION_MINOR) ++failures;
    if (UAPLEX_ABI_VERSION_MINOR != 14u)
        ++failures; /* 1.14: pubsub receive, event history (1.13: alarms from plugins) */
    {
        /* A pubsub plugin built for 1.13 has a shorter table: it cannot subscribe; a 1.13
         * kernel's params have no message_received. */
        uaplex_pubsub_ops o;
        uaplex_pubsub_params p;
        memset(&o, 0, sizeof o);
        memset(&p, 0, sizeof p);
        o.hdr.struct_size = (uint32_t)offsetof(uaplex_pubsub_ops, subscribe);
        if (UAPLEX_FIELD_OR(&o, uaplex_pubsub_ops, subscribe, NULL) != NULL) ++failures;
        if (!UAPLEX_HAS_FIELD(&o, uaplex_pubsub_ops, stats)) ++failures;
        p.hdr.struct_size = (uint32_t)offsetof(uaplex_pubsub_params, message_received);
        if (UAPLEX_HAS_FIELD(&p, uaplex_pubsub_params, message_user)) ++failures;
        p.hdr.struct_size = (uint32_t)sizeof p;
        if (!UAPLEX_HAS_FIELD(&p, uaplex_pubsub_params, message_user)) ++failures;
    }
    {
        /* A host built for 1.12 has a shorter table: the condition entries are not there. */
        uaplex_host_api h;
        memset(&h, 0, sizeof h);
        h.hdr.struct_size = (uint32_t)offsetof(uaplex_host_api, condition_create);
        if (UAPLEX_FIELD_OR(&h, uaplex_host_api, condition_create, NULL) != NULL) ++failures;
        if (UAPLEX_HAS_FIELD(&h, uaplex_host_api, condition_set)) ++failures;
        h.hdr.struct_size = (uint32_t)sizeof h;
        if (!UAPLEX_HAS_FIELD(&h, uaplex_host_api, condition_set)) ++failures;
    }
    {
        /* A 1.10 descriptor is shorter: it provides no history store. */
        uaplex_plugin_descriptor old;
        memset(&old, 0, sizeof old);
        old.hdr.struct_size = (uint32_t)offsetof(uaplex_plugin_descriptor, history);
        if (UAPLEX_FIELD_OR(&old, uaplex_plugin_descriptor, history, NULL) != NULL) ++failures;
        old.hdr.struct_size = (uint32_t)sizeof old;
        if (!UAPLEX_HAS_FIELD(&old, uaplex_plugin_descriptor, history)) ++failures;
    }
    {
        /* A 1.13 history store has a shorter table: the event entries are not there. */
        uaplex_history_ops o;
        memset(&o, 0, sizeof o);
        o.hdr.struct_size = (uint32_t)offsetof(uaplex_history_ops, store_events);
        if (UAPLEX_FIELD_OR(&o, uaplex_history_ops, read_events, NULL) != NULL) ++failures;
        if (!UAPLEX_HAS_FIELD(&o, uaplex_history_ops, delete_raw)) ++failures;
        o.hdr.struct_size = (uint32_t)sizeof o;
        if (!UAPLEX_HAS_FIELD(&o, uaplex_history_ops, delete_events)) ++failures;
    }
    {
        /* A node manager built for 1.7 has a shorter table: read_async is not there. */
        uaplex_node_manager_ops o;
        memset(&o, 0, sizeof o);
        o.hdr.struct_size = (uint32_t)offsetof(uaplex_node_manager_ops, read_async);
        if (UAPLEX_FIELD_OR(&o, uaplex_node_manager_ops, read_async, NULL) != NULL) ++failures;
        if (UAPLEX_HAS_FIELD(&o, uaplex_node_manager_ops, call)) {
        } else {
            ++failures;
        }
        o.hdr.struct_size = (uint32_t)sizeof o;
        if (!UAPLEX_HAS_FIELD(&o, uaplex_node_manager_ops, browse_async)) ++failures;
    }
    {
        /* A host built for 1.11 has a shorter table: the 1.12 entries are not there. */
        uaplex_host_api h;
        memset(&h, 0, sizeof h);
        h.hdr.struct_size = (uint32_t)offsetof(uaplex_host_api, nodes_add);
        if (UAPLEX_HAS_FIELD(&h, uaplex_host_api, nodes_add)) ++failures;
        h.hdr.struct_size = (uint32_t)sizeof h;
        if (!UAPLEX_HAS_FIELD(&h, uaplex_host_api, reference_delete)) ++failures;
    }
    {
        /* A host built for 1.6 has a shorter table: method_bind is not there. */
        uaplex_host_api h;
        memset(&h, 0, sizeof h);
        h.hdr.struct_size = (uint32_t)offsetof(uaplex_host_api, method_bind);
        if (UAPLEX_HAS_FIELD(&h, uaplex_host_api, method_bind)) ++failures;
        h.hdr.struct_size = (uint32_t)sizeof h;
        if (!UAPLEX_HAS_FIELD(&h, uaplex_host_api, method_bind)) ++failures;
    }
    {
        /* A host built for 1.2 has a shorter table: raise_event is not there. */
        uaplex_host_api h;
        memset(&h, 0, sizeof h);
        h.hdr.struct_size = (uint32_t)offsetof(uaplex_host_api, raise_event);
        if (UAPLEX_HAS_FIELD(&h, uaplex_host_api, raise_event)) ++failures;
        h.hdr.struct_size = (uint32_t)sizeof h;
        if (!UAPLEX_HAS_FIELD(&h, uaplex_host_api, raise_event)) ++failures;
    }
    {
        /* A 1.0 transport's tables read by this host: the later entry and fields are absent,
         * and UAPLEX_FIELD_OR gives NULL or the default for them. */
        uaplex_transport_ops t;
        uaplex_transport_params p;
        memset(&t, 0, sizeof t);
        memset(&p, 0, sizeof p);
        t.reverse_connect = fake_reverse_connect;
        t.hdr.struct_size = (uint32_t)offsetof(uaplex_transport_ops, secure_channel_opened);
        if (UAPLEX_FIELD_OR(&t, uaplex_transport_ops, reverse_connect, NULL) != NULL) ++failures;
        t.hdr.struct_size = (uint32_t)sizeof t;
        if (UAPLEX_FIELD_OR(&t, uaplex_transport_ops, reverse_connect, NULL) !=
            fake_reverse_connect)
            ++failures;
        p.max_connections = 7;
        p.hdr.struct_size = (uint32_t)offsetof(uaplex_transport_params, max_message_size);
        if (UAPLEX_FIELD_OR(&p, uaplex_transport_params, max_connections, 100u) != 100u) ++failures;
        p.hdr.struct_size = (uint32_t)sizeof p;
        if (UAPLEX_FIELD_OR(&p, uaplex_transport_params, max_connections, 100u) != 7u) ++failures;
    }
    if (!UAPLEX_STATUS_IS_BAD(UAPLEX_BadInternalError)) ++failures;
    if (failures) fprintf(stderr, "abi_c_check: %d failures\n", failures);
    return failures ? 1 : 0;
}
