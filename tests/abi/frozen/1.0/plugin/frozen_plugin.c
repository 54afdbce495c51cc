/* Plugins as a vendor built them against the 1.0 SDK: the shortest struct of every kind. It
 * is plain C compiled against tests/abi/frozen/1.0/include only, once per kind (FROZEN_KIND
 * picks the kind, FROZEN_NAME the plugin's name), and must keep loading and working in every
 * later kernel of ABI major 1.
 *
 * The descriptor, the factory and the ops table each end where a page ends, and the next
 * page is inaccessible: a kernel that reads one of them past its struct_size (instead of
 * treating later fields as absent) faults at once and the test dies.
 */
#define _DEFAULT_SOURCE /* mmap's MAP_ANONYMOUS and clock_gettime under -std=c11 */

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "uaplex/admission.h"
#include "uaplex/buffer_pool.h"
#include "uaplex/monitored_item_queue.h"
#include "uaplex/node_manager.h"
#include "uaplex/plugin.h"
#include "uaplex/request_queue.h"
#include "uaplex/transport.h"
#include "uaplex/types.h"

#define FROZEN_REQUEST_QUEUE 1
#define FROZEN_NODE_MANAGER 2
#define FROZEN_TRANSPORT 3
#define FROZEN_ADMISSION 4
#define FROZEN_BUFFER_POOL 5
#define FROZEN_MI_QUEUE 6

/* A read-only copy of `size` bytes that ends where an inaccessible page begins. */
static const void* guarded_copy(const void* src, size_t size) {
    const size_t page = (size_t)sysconf(_SC_PAGESIZE);
    unsigned char* p =
        mmap(NULL, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return NULL;
    memcpy(p + page - size, src, size);
    if (mprotect(p, page, PROT_READ) != 0 || mprotect(p + page, page, PROT_NONE) != 0) return NULL;
    return p + page - size;
}

/* A peer's struct copied at most up to the size this plugin knows; the rest stays zero. */
static inline void copy_sized(void* dst, size_t dst_size, const void* src) {
    size_t n = ((const uaplex_header*)src)->struct_size;
    memset(dst, 0, dst_size);
    memcpy(dst, src, n < dst_size ? n : dst_size);
}

static inline uaplex_status nothing(void* self) {
    (void)self;
    return UAPLEX_Good;
}

static inline uaplex_status free_self(void* self) {
    free(self);
    return UAPLEX_Good;
}

#if FROZEN_KIND == FROZEN_REQUEST_QUEUE
/* A FIFO with one lock: the 1.0 contract (completion rule, stop, cancel, timed dequeue). */
typedef struct queue {
    pthread_mutex_t mutex;
    pthread_cond_t ready;
    uaplex_request_queue_params params;
    uaplex_request_entry* head;
    uaplex_request_entry* tail;
    uint64_t count;
    int stopped;
} queue;

#define NEXT(e) ((e)->queue_private[0])

static uaplex_status rq_create(uaplex_plugin_ctx* ctx, const uaplex_request_queue_params* params,
                               void** out_self) {
    queue* q = calloc(1, sizeof *q);
    (void)ctx;
    if (!q) return UAPLEX_BadOutOfMemory;
    copy_sized(&q->params, sizeof q->params, params);
    pthread_mutex_init(&q->mutex, NULL);
    pthread_cond_init(&q->ready, NULL);
    *out_self = q;
    return UAPLEX_Good;
}

static uaplex_status rq_stop(void* self) {
    queue* q = self;
    uaplex_request_entry* e;
    pthread_mutex_lock(&q->mutex);
    q->stopped = 1;
    e = q->head;
    q->head = q->tail = NULL;
    q->count = 0;
    pthread_cond_broadcast(&q->ready);
    pthread_mutex_unlock(&q->mutex);
    while (e) { /* unlinked here: this queue completes them */
        uaplex_request_entry* next = NEXT(e);
        q->params.complete(q->params.user, e, UAPLEX_BadServerHalted);
        e = next;
    }
    return UAPLEX_Good;
}

static uaplex_status rq_destroy(void* self) {
    queue* q = self;
    pthread_cond_destroy(&q->ready);
    pthread_mutex_destroy(&q->mutex);
    free(q);
    return UAPLEX_Good;
}

static uaplex_status rq_enqueue(void* self, uaplex_request_entry* e) {
    queue* q = self;
    uaplex_status st = UAPLEX_Good;
    if (e->cancel && e->cancel->is_cancelled(e->cancel->self) != UAPLEX_Good)
        return UAPLEX_BadRequestCancelledByClient;
    pthread_mutex_lock(&q->mutex);
    if (q->stopped) {
        st = UAPLEX_BadServerHalted;
    } else if (q->count >= q->params.max_queued) {
        st = UAPLEX_BadServerTooBusy;
    } else {
        NEXT(e) = NULL;
        if (q->tail)
            NEXT(q->tail) = e;
        else
            q->head = e;
        q->tail = e;
        ++q->count;
        pthread_cond_signal(&q->ready);
    }
    pthread_mutex_unlock(&q->mutex);
    return st;
}

/* Unlinks the head; the lock is held. */
static uaplex_request_entry* rq_pop(queue* q) {
    uaplex_request_entry* e = q->head;
    q->head = NEXT(e);
    if (!q->head) q->tail = NULL;
    --q->count;
    return e;
}

static uaplex_status rq_try_dequeue(void* self, uaplex_request_entry** out) {
    queue* q = self;
    uaplex_status st = UAPLEX_Good;
    pthread_mutex_lock(&q->mutex);
    if (q->stopped)
        st = UAPLEX_BadServerHalted;
    else if (!q->head)
        st = UAPLEX_BadNothingToDo;
    else
        *out = rq_pop(q);
    pthread_mutex_unlock(&q->mutex);
    return st;
}

static uaplex_status rq_dequeue(void* self, uint32_t timeout_ms, uaplex_request_entry** out) {
    queue* q = self;
    struct timespec until;
    uaplex_status st = UAPLEX_Good;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += timeout_ms / 1000;
    until.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
    if (until.tv_nsec >= 1000000000L) {
        until.tv_sec += 1;
        until.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&q->mutex);
    for (;;) {
        if (q->stopped) {
            st = UAPLEX_BadServerHalted;
            break;
        }
        if (q->head) {
            *out = rq_pop(q);
            break;
        }
        if (timeout_ms == 0) {
            st = UAPLEX_BadTimeout;
            break;
        }
        if (timeout_ms == UINT32_MAX) {
            pthread_cond_wait(&q->ready, &q->mutex);
        } else if (pthread_cond_timedwait(&q->ready, &q->mutex, &until) != 0 && !q->head &&
                   !q->stopped) {
            st = UAPLEX_BadTimeout;
            break;
        }
    }
    pthread_mutex_unlock(&q->mutex);
    return st;
}

static uaplex_status rq_cancel(void* self, uaplex_request_entry* e, uaplex_status status) {
    queue* q = self;
    uaplex_request_entry* prev = NULL;
    uaplex_request_entry* at;
    pthread_mutex_lock(&q->mutex);
    for (at = q->head; at && at != e; at = NEXT(at)) prev = at;
    if (at) {
        if (prev)
            NEXT(prev) = NEXT(e);
        else
            q->head = NEXT(e);
        if (q->tail == e) q->tail = prev;
        --q->count;
    }
    pthread_mutex_unlock(&q->mutex);
    if (!at) return UAPLEX_BadNotFound;
    q->params.complete(q->params.user, e, status);
    return UAPLEX_Good;
}

static uaplex_status rq_count(void* self, uint64_t* out) {
    queue* q = self;
    pthread_mutex_lock(&q->mutex);
    *out = q->count;
    pthread_mutex_unlock(&q->mutex);
    return UAPLEX_Good;
}

static const uaplex_request_queue_ops rq_ops = {
    UAPLEX_HEADER_INIT(uaplex_request_queue_ops, UAPLEX_STYPE_REQUEST_QUEUE_OPS),
    nothing,
    rq_stop,
    rq_destroy,
    rq_enqueue,
    rq_try_dequeue,
    rq_dequeue,
    rq_cancel,
    rq_count,
    NULL,
    NULL};
static uaplex_request_queue_factory rq_factory = {
    UAPLEX_HEADER_INIT(uaplex_request_queue_factory, UAPLEX_STYPE_REQUEST_QUEUE_FACTORY), NULL,
    rq_create};
#define FROZEN_SLOT request_queue
#define FROZEN_OPS rq_ops
#define FROZEN_FACTORY rq_factory
#endif

#if FROZEN_KIND == FROZEN_NODE_MANAGER
/* Owns one namespace with one Double Variable that it reads, writes and browses itself. The
 * 1.0 table has no `call`: a Call on its nodes must find no method, not a later entry. */
#define FROZEN_NAMESPACE "urn:uaplex:abi-frozen-1.0"
#define FROZEN_VARIABLE "Frozen10.Double"

typedef struct node_manager {
    pthread_mutex_t mutex;
    double value;
} node_manager;

static int is_variable(const uaplex_nodeid* id) {
    const size_t n = sizeof FROZEN_VARIABLE - 1;
    return id->identifier_type == UAPLEX_ID_STRING && id->identifier.string.length == (int32_t)n &&
           memcmp(id->identifier.string.data, FROZEN_VARIABLE, n) == 0;
}

static uaplex_status nm_create(uaplex_plugin_ctx* ctx, const uaplex_node_manager_params* params,
                               void** out_self) {
    node_manager* m = calloc(1, sizeof *m);
    (void)ctx;
    (void)params;
    if (!m) return UAPLEX_BadOutOfMemory;
    pthread_mutex_init(&m->mutex, NULL);
    m->value = 1.5;
    *out_self = m;
    return UAPLEX_Good;
}

static uaplex_status nm_destroy(void* self) {
    node_manager* m = self;
    pthread_mutex_destroy(&m->mutex);
    free(m);
    return UAPLEX_Good;
}

static uaplex_status nm_namespace_count(void* self, size_t* out) {
    (void)self;
    *out = 1;
    return UAPLEX_Good;
}

static uaplex_status nm_namespace_uri(void* self, size_t index, uaplex_str* out) {
    (void)self;
    if (index != 0) return UAPLEX_BadOutOfRange;
    out->data = FROZEN_NAMESPACE;
    out->len = sizeof FROZEN_NAMESPACE - 1;
    return UAPLEX_Good;
}

static uaplex_status nm_read(void* self, size_t count, const uaplex_read_item* items,
                             struct uaplex_datavalue* const* results, uaplex_status* statuses) {
    node_manager* m = self;
    size_t i;
    /* The kernel passes one item per call: its items are longer than this plugin's. */
    for (i = 0; i < count; ++i) {
        uaplex_datavalue* out = results[i];
        statuses[i] = UAPLEX_Good;
        if (!is_variable(items[i].node_id)) {
            statuses[i] = UAPLEX_BadNodeIdUnknown;
            continue;
        }
        memset(out, 0, sizeof *out);
        out->mask = UAPLEX_DATAVALUE_VALUE;
        out->value.array_length = -1;
        if (items[i].attribute_id == 13) { /* Value */
            out->value.encoding = UAPLEX_TYPE_DOUBLE;
            pthread_mutex_lock(&m->mutex);
            out->value.value.double_ = m->value;
            pthread_mutex_unlock(&m->mutex);
        } else if (items[i].attribute_id == 2) { /* NodeClass */
            out->value.encoding = UAPLEX_TYPE_INT32;
            out->value.value.int32 = 2; /* Variable */
        } else {
            statuses[i] = UAPLEX_BadAttributeIdInvalid;
        }
    }
    return UAPLEX_Good;
}

static uaplex_status nm_write(void* self, size_t count, const uaplex_write_item* items,
                              uaplex_status* statuses) {
    node_manager* m = self;
    size_t i;
    for (i = 0; i < count; ++i) {
        const uaplex_datavalue* v = items[i].value;
        if (!is_variable(items[i].node_id))
            statuses[i] = UAPLEX_BadNodeIdUnknown;
        else if (items[i].attribute_id != 13)
            statuses[i] = UAPLEX_BadNotWritable;
        else if (!(v->mask & UAPLEX_DATAVALUE_VALUE) ||
                 (v->value.encoding & UAPLEX_VARIANT_TYPE_MASK) != UAPLEX_TYPE_DOUBLE ||
                 (v->value.encoding & UAPLEX_VARIANT_ARRAY))
            statuses[i] = UAPLEX_BadTypeMismatch;
        else {
            pthread_mutex_lock(&m->mutex);
            m->value = v->value.value.double_;
            pthread_mutex_unlock(&m->mutex);
            statuses[i] = UAPLEX_Good;
        }
    }
    return UAPLEX_Good;
}

/* The Variable's one forward reference: HasTypeDefinition BaseDataVariableType. */
static uaplex_status nm_browse(void* self, const uaplex_nodeid* node_id, uint32_t direction,
                               const uaplex_nodeid* reference_type_id, int32_t include_subtypes,
                               uaplex_reference_sink sink, void* sink_user) {
    uaplex_nodeid type_ref, type_def;
    uaplex_reference r;
    (void)self;
    (void)reference_type_id;
    (void)include_subtypes;
    if (!is_variable(node_id)) return UAPLEX_BadNodeIdUnknown;
    if (direction == 1) return UAPLEX_Good;
    memset(&type_ref, 0, sizeof type_ref);
    memset(&type_def, 0, sizeof type_def);
    type_ref.identifier.numeric = 40;
    type_def.identifier.numeric = 63;
    memset(&r, 0, sizeof r);
    r.hdr.struct_size = (uint32_t)sizeof r;
    r.hdr.type = UAPLEX_STYPE_NODE_MANAGER_REFERENCE;
    r.is_forward = 1;
    r.reference_type_id = &type_ref;
    r.target_id = &type_def;
    r.node_class = 16; /* VariableType */
    sink(sink_user, &r);
    return UAPLEX_Good;
}

static const uaplex_node_manager_ops nm_ops = {
    UAPLEX_HEADER_INIT(uaplex_node_manager_ops, UAPLEX_STYPE_NODE_MANAGER_OPS),
    nothing,
    nothing,
    nm_destroy,
    nm_namespace_count,
    nm_namespace_uri,
    nm_read,
    nm_write,
    nm_browse,
    NULL};
static uaplex_node_manager_factory nm_factory = {
    UAPLEX_HEADER_INIT(uaplex_node_manager_factory, UAPLEX_STYPE_NODE_MANAGER_FACTORY), NULL,
    nm_create};
#define FROZEN_SLOT node_manager
#define FROZEN_OPS nm_ops
#define FROZEN_FACTORY nm_factory
#endif

#if FROZEN_KIND == FROZEN_TRANSPORT
/* Serves a scheme of its own and never accepts a connection. */
typedef struct transport {
    uaplex_transport_params params;
    int listening;
} transport;

static uaplex_status tr_create(uaplex_plugin_ctx* ctx, const uaplex_transport_params* params,
                               void** out_self) {
    transport* t = calloc(1, sizeof *t);
    (void)ctx;
    if (!t) return UAPLEX_BadOutOfMemory;
    copy_sized(&t->params, sizeof t->params, params);
    *out_self = t;
    return UAPLEX_Good;
}

static uaplex_status tr_scheme(void* self, uaplex_str* out) {
    (void)self;
    out->data = "opc.frozen";
    out->len = sizeof "opc.frozen" - 1;
    return UAPLEX_Good;
}

static uaplex_status tr_listen(void* self, uaplex_str url) {
    (void)url;
    ((transport*)self)->listening = 1;
    return UAPLEX_Good;
}

static uaplex_status tr_send(void* self, uaplex_connection* c, uaplex_buffer* buffers,
                             size_t count) {
    transport* t = self;
    size_t i;
    (void)c;
    for (i = 0; i < count; ++i) /* sending is failing: the buffers still go back */
        if (t->params.pool) t->params.pool->give_back(t->params.pool_self, &buffers[i], NULL);
    return UAPLEX_BadConnectionClosed;
}

static uaplex_status tr_close(void* self, uaplex_connection* c, uaplex_status reason) {
    (void)self;
    (void)c;
    (void)reason;
    return UAPLEX_BadNotFound;
}

static uaplex_status tr_set_receiving(void* self, uaplex_connection* c, int32_t enabled) {
    (void)self;
    (void)c;
    (void)enabled;
    return UAPLEX_BadNotFound;
}

static const uaplex_transport_ops tr_ops = {
    UAPLEX_HEADER_INIT(uaplex_transport_ops, UAPLEX_STYPE_TRANSPORT_OPS),
    nothing,
    nothing,
    free_self,
    tr_scheme,
    tr_listen,
    tr_send,
    tr_close,
    tr_set_receiving};
static uaplex_transport_factory tr_factory = {
    UAPLEX_HEADER_INIT(uaplex_transport_factory, UAPLEX_STYPE_TRANSPORT_FACTORY), NULL, tr_create};
#define FROZEN_SLOT transport
#define FROZEN_OPS tr_ops
#define FROZEN_FACTORY tr_factory
#endif

#if FROZEN_KIND == FROZEN_ADMISSION
/* Admits everything: one owner, no accounting. */
static char the_owner;

static uaplex_status ad_create(uaplex_plugin_ctx* ctx, const uaplex_admission_params* params,
                               void** out_self) {
    (void)ctx;
    (void)params;
    *out_self = &the_owner;
    return UAPLEX_Good;
}

static uaplex_status ad_fair(void* self, int32_t* out) {
    (void)self;
    *out = 0;
    return UAPLEX_Good;
}

static uaplex_status ad_classify(void* self, const uaplex_admission_request_info* info,
                                 uaplex_admission_owner** out) {
    (void)self;
    (void)info;
    *out = (uaplex_admission_owner*)&the_owner;
    return UAPLEX_Good;
}

static uaplex_status ad_revalidate(void* self, uaplex_admission_owner* owner,
                                   const uaplex_admission_request_info* info) {
    (void)self;
    (void)owner;
    (void)info;
    return UAPLEX_Good;
}

static uaplex_status ad_try_acquire(void* self, uint32_t stage, uaplex_admission_owner* owner,
                                    int64_t amount, uaplex_admission_lease* lease,
                                    uint32_t* out_reason) {
    (void)self;
    (void)owner;
    (void)out_reason;
    if (amount <= 0) return UAPLEX_BadInvalidArgument;
    lease->stage = stage;
    lease->amount = amount;
    lease->released = 0;
    return UAPLEX_Good;
}

static uaplex_status ad_release(void* self, uaplex_admission_lease* lease) {
    (void)self;
    lease->released = 1;
    return UAPLEX_Good;
}

static uaplex_status ad_usage(void* self, uint32_t stage, int64_t* out) {
    (void)self;
    (void)stage;
    *out = 0;
    return UAPLEX_Good;
}

static uaplex_status ad_owner(void* self, uaplex_admission_owner* owner) {
    (void)self;
    (void)owner;
    return UAPLEX_Good;
}

static uaplex_status ad_owner_info(void* self, uaplex_admission_owner* owner, uint32_t* out_class,
                                   uint32_t* out_weight) {
    (void)self;
    (void)owner;
    *out_class = UAPLEX_CLASS_ESTABLISHED;
    *out_weight = 1;
    return UAPLEX_Good;
}

static const uaplex_admission_ops ad_ops = {
    UAPLEX_HEADER_INIT(uaplex_admission_ops, UAPLEX_STYPE_ADMISSION_OPS),
    nothing,
    nothing,
    nothing,
    ad_fair,
    ad_classify,
    ad_classify,
    ad_revalidate,
    ad_try_acquire,
    ad_release,
    ad_usage,
    ad_owner,
    ad_owner,
    ad_owner_info};
static uaplex_admission_factory ad_factory = {
    UAPLEX_HEADER_INIT(uaplex_admission_factory, UAPLEX_STYPE_ADMISSION_FACTORY), NULL, ad_create};
#define FROZEN_SLOT admission
#define FROZEN_OPS ad_ops
#define FROZEN_FACTORY ad_factory
#endif

#if FROZEN_KIND == FROZEN_BUFFER_POOL
/* Rents from malloc; a manager is just its MaxBufferSize. */
static uaplex_status bp_create(uaplex_plugin_ctx* ctx, const uaplex_buffer_pool_params* params,
                               void** out_self) {
    (void)ctx;
    (void)params;
    *out_self = calloc(1, 1);
    return *out_self ? UAPLEX_Good : UAPLEX_BadOutOfMemory;
}

static uaplex_status bp_manager_create(void* self, uaplex_str name, uint32_t max_buffer_size,
                                       uaplex_buffer_manager** out) {
    uint32_t* m = malloc(sizeof *m);
    (void)self;
    (void)name;
    if (!m) return UAPLEX_BadOutOfMemory;
    *m = max_buffer_size;
    *out = (uaplex_buffer_manager*)m;
    return UAPLEX_Good;
}

static uaplex_status bp_manager_destroy(void* self, uaplex_buffer_manager* m) {
    (void)self;
    free(m);
    return UAPLEX_Good;
}

static uaplex_status bp_size(void* self, uaplex_buffer_manager* m, uint32_t size, uint32_t* out) {
    (void)self;
    if (size > *(uint32_t*)m) return UAPLEX_BadOutOfRange;
    *out = size;
    return UAPLEX_Good;
}

static uaplex_status bp_take(void* self, uaplex_buffer_manager* m, uint32_t size, const void* owner,
                             const uaplex_cancel_token* cancel, uaplex_buffer* out) {
    (void)self;
    (void)owner;
    (void)cancel;
    if (size > *(uint32_t*)m) return UAPLEX_BadOutOfRange;
    out->data = malloc(size ? size : 1);
    if (!out->data) return UAPLEX_BadOutOfMemory;
    out->length = size;
    out->used = 0;
    out->manager = m;
    return UAPLEX_Good;
}

static uaplex_status bp_buffer(void* self, uaplex_buffer* b) {
    (void)self;
    (void)b;
    return UAPLEX_Good;
}

static uaplex_status bp_transfer(void* self, uaplex_buffer* b, const void* owner) {
    (void)self;
    (void)b;
    (void)owner;
    return UAPLEX_Good;
}

static uaplex_status bp_give_back(void* self, uaplex_buffer* b, const void* owner) {
    (void)self;
    (void)owner;
    free(b->data);
    b->data = NULL;
    return UAPLEX_Good;
}

static uaplex_status bp_stats(void* self, uint64_t* retained, uint64_t* outstanding) {
    (void)self;
    *retained = 0;
    *outstanding = 0;
    return UAPLEX_Good;
}

static const uaplex_buffer_pool_ops bp_ops = {
    UAPLEX_HEADER_INIT(uaplex_buffer_pool_ops, UAPLEX_STYPE_BUFFER_POOL_OPS),
    nothing,
    nothing,
    free_self,
    bp_manager_create,
    bp_manager_destroy,
    bp_size,
    bp_size,
    bp_take,
    bp_transfer,
    bp_buffer,
    bp_buffer,
    bp_give_back,
    bp_stats};
static uaplex_buffer_pool_factory bp_factory = {
    UAPLEX_HEADER_INIT(uaplex_buffer_pool_factory, UAPLEX_STYPE_BUFFER_POOL_FACTORY), NULL,
    bp_create};
#define FROZEN_SLOT buffer_pool
#define FROZEN_OPS bp_ops
#define FROZEN_FACTORY bp_factory
#endif

#if FROZEN_KIND == FROZEN_MI_QUEUE
/* A factory that makes no queues: the kernel's items then keep their newest value only. */
static uaplex_status mi_create(uaplex_plugin_ctx* ctx, const uaplex_mi_queue_params* params,
                               void** out_self) {
    (void)ctx;
    (void)params;
    *out_self = calloc(1, 1);
    return *out_self ? UAPLEX_Good : UAPLEX_BadOutOfMemory;
}

static uaplex_status mi_durable(void* self, int32_t* out) {
    (void)self;
    *out = 0;
    return UAPLEX_Good;
}

static uaplex_status mi_data_change(void* self, int32_t durable, uint32_t item_id, void** out_queue,
                                    const uaplex_data_change_queue_ops** out_ops) {
    (void)self;
    (void)durable;
    (void)item_id;
    (void)out_queue;
    (void)out_ops;
    return UAPLEX_BadNotSupported;
}

static uaplex_status mi_event(void* self, int32_t durable, uint32_t item_id, void** out_queue,
                              const uaplex_event_queue_ops** out_ops) {
    (void)self;
    (void)durable;
    (void)item_id;
    (void)out_queue;
    (void)out_ops;
    return UAPLEX_BadNotSupported;
}

static const uaplex_mi_queue_factory_ops mi_ops = {
    UAPLEX_HEADER_INIT(uaplex_mi_queue_factory_ops, UAPLEX_STYPE_MI_QUEUE_FACTORY_OPS),
    nothing,
    nothing,
    free_self,
    mi_durable,
    mi_data_change,
    mi_event};
static uaplex_mi_queue_factory mi_factory = {
    UAPLEX_HEADER_INIT(uaplex_mi_queue_factory, UAPLEX_STYPE_MI_QUEUE_FACTORY), NULL, mi_create};
#define FROZEN_SLOT monitored_item_queue
#define FROZEN_OPS mi_ops
#define FROZEN_FACTORY mi_factory
#endif

UAPLEX_EXPORT uaplex_status uaplex_plugin_entry(uint32_t host_abi_version,
                                                const uaplex_host_api* host,
                                                const uaplex_plugin_descriptor** out) {
    static const uaplex_plugin_descriptor* made = NULL;
    (void)host_abi_version;
    (void)host;
    if (!made) {
        uaplex_plugin_descriptor d;
        memset(&d, 0, sizeof d);
        d.hdr.struct_size = (uint32_t)sizeof d;
        d.hdr.type = UAPLEX_STYPE_PLUGIN_DESCRIPTOR;
        d.abi_major = UAPLEX_ABI_VERSION_MAJOR;
        d.abi_minor = UAPLEX_ABI_VERSION_MINOR;
        d.name = FROZEN_NAME;
        d.version = "1.0.0";
        d.description = "A plugin built against the 1.0 SDK";
        FROZEN_FACTORY.ops = guarded_copy(&FROZEN_OPS, sizeof FROZEN_OPS);
        d.FROZEN_SLOT = guarded_copy(&FROZEN_FACTORY, sizeof FROZEN_FACTORY);
        if (!FROZEN_FACTORY.ops || !d.FROZEN_SLOT) return UAPLEX_BadOutOfMemory;
        made = guarded_copy(&d, sizeof d);
        if (!made) return UAPLEX_BadOutOfMemory;
    }
    *out = made;
    return UAPLEX_Good;
}
