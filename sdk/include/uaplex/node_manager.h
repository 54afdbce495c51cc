// SPDX-License-Identifier: Apache-2.0
/* Node managers (plugins/node-manager: demo, benchmark, nodeset; vendor ones): serve the
 * nodes of one or more namespaces. OPC UA values are the types of uaplex/types.h.
 *
 * Two ways to serve nodes, freely mixed:
 *  - add them to the kernel's store through the host API (namespace_register, node_add,
 *    reference_add, value_set): the kernel answers every service; a Variable holds a stored
 *    value or has read/write callbacks, a Method has a call callback (uaplex_node_spec);
 *  - own a namespace (namespace_count/namespace_uri) and answer read, write, browse and call
 *    for the nodes of it that are not in the store (large or external address spaces).
 */
#ifndef UAPLEX_NODE_MANAGER_H
#define UAPLEX_NODE_MANAGER_H

#include "uaplex/plugin.h"

UAPLEX_BEGIN_DECLS

struct uaplex_nodeid;
struct uaplex_variant;
struct uaplex_datavalue;
struct uaplex_qualifiedname;
struct uaplex_localizedtext;
struct uaplex_extensionobject;

/* Memory for values handed back to the kernel (strings, arrays, boxed scalars): it lives in
 * the request's arena and is released with the request; never freed by the plugin. */
typedef struct uaplex_value_alloc {
    void* self;
    /* NULL when the request's memory limit is reached. Same thread as the callback; for an
     * asynchronous operation (since 1.8) any thread until its complete is called. */
    void* (*allocate)(void* self, size_t size, size_t alignment);
} uaplex_value_alloc;

/* The completion of an asynchronous operation (since 1.8): the kernel hands one to each
 * `*_async` entry below (borrowed for the call: copy it by value). The entry returns
 * GoodCompletesAsynchronously when it will finish later; it then fills the operation's
 * results and calls complete(self, token, status) exactly once, from any thread, with the
 * status the synchronous entry would have returned. Any other return finishes the operation
 * at once (complete is not called). complete never blocks for long; it may encode and send
 * the request's response on the calling thread when this was its last pending operation.
 * The items, results, statuses and `alloc` of the operation stay valid until complete is
 * called, also after the kernel answered the request otherwise (its TimeoutHint passed, it
 * was cancelled, its session closed): the operation then still occupies its slot of
 * [server.limits] max_async_operations until completed. A second complete, or one with a
 * token that is not pending, returns BadInvalidState and changes nothing. Every pending
 * operation must be completed before the node manager's stop returns. */
typedef struct uaplex_completion {
    uaplex_header hdr; /* UAPLEX_STYPE_COMPLETION */
    uint32_t reserved0;
    void* self;     /* the kernel's */
    uint64_t token; /* names the operation: a slot and its generation */
    /* Any thread, once per operation. */
    uaplex_status (*complete)(void* self, uint64_t token, uaplex_status status);
    /* Good while the kernel waits for the operation; once the request was answered otherwise,
     * the status it was answered with (BadTimeout, BadRequestCancelledByRequest,
     * BadSessionClosed, BadServerHalted): the operation may stop early, but must still
     * complete. Any thread; must not block. */
    uaplex_status (*status)(void* self, uint64_t token);
} uaplex_completion;

/* Reads a Variable's value for the kernel: fills *out (mask, value, status, source
 * timestamp); storage beyond *out comes from `alloc`. Worker threads, and for monitored
 * items the sampling thread of the node manager that added the node; must not block long. */
typedef uaplex_status (*uaplex_value_read_fn)(void* user, const struct uaplex_nodeid* node_id,
                                              const uaplex_value_alloc* alloc,
                                              struct uaplex_datavalue* out);
/* Receives a written value after the kernel checked type, rank and access (`value` borrowed
 * for the call). Good lets the kernel store it (when the node has no read callback). */
typedef uaplex_status (*uaplex_value_write_fn)(void* user, const struct uaplex_nodeid* node_id,
                                               const struct uaplex_datavalue* value);
/* Runs a Method after the kernel checked the inputs against its InputArguments property.
 * Outputs: *out_outputs (from `alloc`) with *out_output_count entries. Worker threads. */
typedef uaplex_status (*uaplex_method_fn)(void* user, const struct uaplex_nodeid* object_id,
                                          const struct uaplex_nodeid* method_id, size_t input_count,
                                          const struct uaplex_variant* inputs,
                                          const uaplex_value_alloc* alloc, size_t* out_output_count,
                                          struct uaplex_variant** out_outputs);

/* The asynchronous forms of the three callbacks above (since 1.8, uaplex_node_spec): the same
 * arguments and a completion (see uaplex_completion); node_id, alloc, out, value and inputs
 * stay valid until complete is called. Worker threads; must not block: the worker goes on
 * with other requests while the operation is pending. */
typedef uaplex_status (*uaplex_value_read_async_fn)(void* user, const struct uaplex_nodeid* node_id,
                                                    const uaplex_value_alloc* alloc,
                                                    struct uaplex_datavalue* out,
                                                    const uaplex_completion* completion);
typedef uaplex_status (*uaplex_value_write_async_fn)(void* user,
                                                     const struct uaplex_nodeid* node_id,
                                                     const struct uaplex_datavalue* value,
                                                     const uaplex_completion* completion);

/* Runs a Method bound with the host API method_bind (since 1.7), after the kernel checked the
 * inputs against the method's InputArguments property (count: BadArgumentsMissing,
 * BadTooManyArguments; each DataType and ValueRank: BadTypeMismatch). input_results[i]
 * (kernel-owned, input_count entries, Good on entry) says which input is wrong
 * (BadTypeMismatch, BadOutOfRange, ...); any Bad entry makes the operation's status
 * BadInvalidArgument (Part 4 5.11.2). Outputs: *out_outputs (from `alloc`) with
 * *out_output_count entries. Worker threads, concurrently; may block for the request only. */
typedef uaplex_status (*uaplex_method_call_fn)(
    void* user, const struct uaplex_nodeid* object_id, const struct uaplex_nodeid* method_id,
    size_t input_count, const struct uaplex_variant* inputs, const uaplex_value_alloc* alloc,
    uaplex_status* input_results, size_t* out_output_count, struct uaplex_variant** out_outputs);

/* An implementation of a Method of any node in the store or in namespace 0, also of nodes
 * another plugin (e.g. the NodeSet2 loader) added (host API method_bind, since 1.7);
 * borrowed for the call (the kernel copies the NodeIds).
 *  - object_type_id NULL: calls of the Method `method_id` run `call`, on every Object the
 *    method is a component of (directly or through its type hierarchy);
 *  - object_type_id set: `method_id` is a Method of that ObjectType; calls on any Object
 *    whose type is the ObjectType or one of its subtypes run `call`, for `method_id` itself
 *    and for the Object's own copy of it (a Method component with the same BrowseName).
 * A store Method's own `call` (uaplex_node_spec) comes first, then a binding by NodeId, then
 * the binding of the most derived type. A bound Method is executable. */
typedef struct uaplex_method_spec {
    uaplex_header hdr; /* UAPLEX_STYPE_METHOD_SPEC */
    uint32_t reserved0;
    const struct uaplex_nodeid* method_id;
    const struct uaplex_nodeid* object_type_id; /* NULL: by method NodeId only */
    uaplex_method_call_fn call;
    void* user; /* passed to call */
} uaplex_method_spec;

/* A node to add to the kernel's store (host API node_add, since 1.1); everything borrowed for
 * the call (the kernel copies). Unused fields are zero. */
typedef struct uaplex_node_spec {
    uaplex_header hdr;   /* UAPLEX_STYPE_NODE_SPEC */
    uint32_t node_class; /* 1 Object, 2 Variable, 4 Method */
    const struct uaplex_nodeid* node_id;
    /* The parent and the reference parent -> node (e.g. Organizes i=35, HasComponent i=47,
     * HasProperty i=46); NULL parent: none. The inverse reference is added too. */
    const struct uaplex_nodeid* parent_id;
    const struct uaplex_nodeid* reference_type_id;
    /* HasTypeDefinition of Objects and Variables; NULL: BaseObjectType (i=58) or
     * BaseDataVariableType (i=63). */
    const struct uaplex_nodeid* type_definition;
    const struct uaplex_qualifiedname* browse_name;
    const struct uaplex_localizedtext* display_name; /* NULL: the browse name's text */
    const struct uaplex_localizedtext* description;  /* NULL: none */
    uint32_t write_mask;
    uint32_t event_notifier; /* Objects */
    /* Variables. */
    const struct uaplex_nodeid* data_type; /* NULL: BaseDataType (i=24) */
    int32_t value_rank;
    uint32_t array_dimensions_count;
    const uint32_t* array_dimensions;
    uint32_t access_level;      /* AccessLevel bits */
    uint32_t user_access_level; /* UserAccessLevel bits; 0: the same as access_level */
    double minimum_sampling_interval;
    const struct uaplex_datavalue* value; /* initial stored value; NULL: empty (null Variant) */
    uaplex_value_read_fn read;            /* non-NULL: Value reads call it */
    uaplex_value_write_fn write;          /* non-NULL: Value writes call it */
    /* Methods (Executable and UserExecutable are true unless method_flags says otherwise). */
    uaplex_method_fn call;
    void* user;            /* passed to read, write and call */
    uint32_t method_flags; /* UAPLEX_METHOD_NOT_EXECUTABLE: Executable false (BadNotExecutable) */
    uint32_t reserved1;

    /* --- since 1.2: type nodes ---
     * node_class may also be 8 ObjectType, 16 VariableType (value, data_type, value_rank,
     * array_dimensions as for Variables), 32 ReferenceType or 64 DataType; type nodes get no
     * HasTypeDefinition. The kernel reads these fields only when struct_size covers them. */
    int32_t is_abstract;                             /* IsAbstract of type nodes (non-zero: true) */
    int32_t symmetric;                               /* Symmetric of ReferenceTypes */
    const struct uaplex_localizedtext* inverse_name; /* ReferenceTypes; NULL: none */
    /* DataTypes: the DataTypeDefinition attribute, an ExtensionObject with a binary body
     * (StructureDefinition, encoding i=122, or EnumDefinition, i=123); NULL: none. */
    const struct uaplex_extensionobject* data_type_definition;

    /* --- since 1.8: asynchronous callbacks ---
     * Non-NULL: Value reads (writes) of the Variable call it instead of read (write), and the
     * worker is not held while it is pending (uaplex_completion). Reads without a request to
     * answer later (subscription sampling) call the synchronous `read`; a store node with
     * only read_async answers those BadNotSupported (an owned namespace's read_async serves
     * its sampling, see uaplex_node_manager_ops). */
    uaplex_value_read_async_fn read_async;
    uaplex_value_write_async_fn write_async;

    /* --- since 1.11 ---
     * Variables: non-zero makes the Historizing attribute true; with [history] historizing =
     * true the kernel records the node's changes into the history store (docs/configuration.md
     * "Historical access"). */
    uint32_t historizing;
    uint32_t reserved2;
} uaplex_node_spec;

#define UAPLEX_METHOD_NOT_EXECUTABLE 0x1u

/* EventNotifier bits of uaplex_node_spec.event_notifier (Part 3 5.4): items may subscribe to
 * the object's events. */
#define UAPLEX_EVENT_NOTIFIER_SUBSCRIBE 0x1u

/* One field of an event (host API raise_event, since 1.3): its browse path relative to
 * the event type ("Severity", or "EnabledState" then "Id") and its value; borrowed. */
typedef struct uaplex_event_field {
    const struct uaplex_qualifiedname* browse_path;
    uint32_t browse_path_length;
    uint32_t reserved0;
    const struct uaplex_variant* value;
} uaplex_event_field;

/* An event to raise (since 1.3); everything borrowed for the call (the kernel copies what it
 * queues). The kernel adds EventId (16 random bytes), Time and ReceiveTime (now) when absent, and
 * EventType and SourceNode from the fields below when absent. */
typedef struct uaplex_event_spec {
    uaplex_header hdr; /* UAPLEX_STYPE_EVENT_SPEC */
    uint32_t field_count;
    const struct uaplex_nodeid* event_type;  /* BaseEventType (i=2041) or a subtype */
    const struct uaplex_nodeid* source_node; /* routes the event: see host API raise_event */
    /* Conditions (ConditionType subtypes): the condition's NodeId, the ConditionId of
     * select clauses; with a Retain field that is true the kernel keeps the event for
     * ConditionRefresh until one with Retain false arrives. NULL for other events. A
     * condition the kernel holds (added without an EnabledState of its own, see
     * docs/architecture.md "Alarms and Conditions") takes the event as a report: its
     * ActiveState/Id, Severity, Message and Quality change the kernel's state, which raises
     * the condition's event with its own EnabledState, AckedState, Retain, ... */
    const struct uaplex_nodeid* condition_id;
    const uaplex_event_field* fields; /* field_count entries */
} uaplex_event_spec;

/* One Read operation; borrowed for the call. */
typedef struct uaplex_read_item {
    uaplex_header hdr; /* UAPLEX_STYPE_NODE_MANAGER_READ_ITEM */
    uint32_t attribute_id;
    const struct uaplex_nodeid* node_id;
    uaplex_str index_range; /* empty when none */
    double max_age_ms;
    /* --- since 1.1 --- */
    /* Memory for boxed values, strings and arrays of the result. */
    const uaplex_value_alloc* alloc;
} uaplex_read_item;

/* One Write operation; borrowed for the call. For an attribute other than Value (13) the
 * kernel has already checked the session's WriteAttribute permission, the bit of the
 * node's WriteMask (read through ops->read, attribute 6; BadNotWritable when clear or not
 * answered), that index_range is empty and that the value has the attribute's DataType. */
typedef struct uaplex_write_item {
    uaplex_header hdr; /* UAPLEX_STYPE_NODE_MANAGER_WRITE_ITEM */
    uint32_t attribute_id;
    const struct uaplex_nodeid* node_id;
    uaplex_str index_range;
    const struct uaplex_datavalue* value;
} uaplex_write_item;

/* One reference found by browse; borrowed for the sink call. */
typedef struct uaplex_reference {
    uaplex_header hdr; /* UAPLEX_STYPE_NODE_MANAGER_REFERENCE */
    int32_t is_forward;
    const struct uaplex_nodeid* reference_type_id;
    const struct uaplex_nodeid* target_id;
    uint32_t node_class;
} uaplex_reference;

/* Receives browse results; Bad stops the browse (e.g. the continuation limit). Same
 * thread as the browse call (browse_async: any thread, one call at a time, until complete);
 * must not block. */
typedef uaplex_status (*uaplex_reference_sink)(void* user, const uaplex_reference* reference);

/* Receives a change of a node attribute the kernel asked the node manager to report
 * (ops->monitor answered Good): the items watching it take it as a stored value's change
 * (sampling interval, deadband, queue). Good: handed to them; GoodNoData: no item watches it
 * (yet, or any more), dropped. Any thread, also from inside monitor; never waits for a
 * plugin's read (it takes only the kernel's short locks). `value` borrowed for the call. */
typedef uaplex_status (*uaplex_value_change_sink)(void* user, const struct uaplex_nodeid* node_id,
                                                  uint32_t attribute_id,
                                                  const struct uaplex_datavalue* value);

typedef struct uaplex_node_manager_params {
    uaplex_header hdr; /* UAPLEX_STYPE_NODE_MANAGER_PARAMS */
    uint32_t reserved0;
    /* Set by hosts of ABI 1.9 and later (NULL before: they sample every item). */
    uaplex_value_change_sink value_changed;
    void* user;
} uaplex_node_manager_params;

typedef struct uaplex_node_manager_ops {
    uaplex_header hdr; /* UAPLEX_STYPE_NODE_MANAGER_OPS */
    /* lifecycle (see uaplex_lifecycle_ops); start builds the nodes. */
    uaplex_status (*start)(void* self);
    uaplex_status (*stop)(void* self);
    uaplex_status (*destroy)(void* self);

    /* Namespace URIs served, in order; *out borrowed until destroy. Host main thread. */
    uaplex_status (*namespace_count)(void* self, size_t* out_count);
    uaplex_status (*namespace_uri)(void* self, size_t index, uaplex_str* out_uri);
    /* Reads `count` items: results[i] (kernel-owned, filled by the manager) and
     * statuses[i]. The call's own status is Bad only if no item was processed. Worker
     * threads (Read; the first sample of CreateMonitoredItems), and the node manager's
     * sampling thread: one call per sampling tick with all its due monitored nodes (since
     * 1.9) unless read_async is set. May block for the duration of the request only; a slow
     * sampling read delays this node manager's monitored items only, and at server stop one
     * that has not returned within [server.limits] sampling_stop_timeout_ms is left behind
     * (its thread is let go, the library stays loaded). */
    uaplex_status (*read)(void* self, size_t count, const uaplex_read_item* items,
                          struct uaplex_datavalue* const* results, uaplex_status* statuses);
    /* Writes `count` items; statuses[i] per item. Worker threads. */
    uaplex_status (*write)(void* self, size_t count, const uaplex_write_item* items,
                           uaplex_status* statuses);
    /* Calls sink for each reference of `node_id` in `direction` (0 forward, 1 inverse,
     * 2 both) whose type is `reference_type_id` (NULL = all). Worker threads (Browse,
     * BrowseNext when browse_async is NULL; TranslateBrowsePathsToNodeIds always). */
    uaplex_status (*browse)(void* self, const struct uaplex_nodeid* node_id, uint32_t direction,
                            const struct uaplex_nodeid* reference_type_id, int32_t include_subtypes,
                            uaplex_reference_sink sink, void* sink_user);
    /* Starts (enabled 1: the first monitored item watches the node's attribute) or stops
     * (0: the last one is gone) reporting its changes through params->value_changed. Good
     * to `enabled`: the node manager pushes every change and the kernel no longer samples
     * the node; anything else (or NULL): the kernel samples it with read. Called by hosts
     * of ABI 1.9 and later, for plugins built against 1.9 or later (an older plugin's
     * stub is never called), on the node manager's sampling thread (one per node
     * manager, which also runs its sampling reads), never under a kernel lock; it must not
     * block long. Not for items with an IndexRange (those are sampled). */
    uaplex_status (*monitor)(void* self, const struct uaplex_nodeid* node_id, uint32_t attribute_id,
                             int32_t enabled);
    /* --- since 1.1 --- */
    /* Calls a Method of an owned namespace; outputs from `alloc`, input_results[i] per input
     * (kernel-owned, input_count entries). NULL: BadNotImplemented. Worker threads. */
    uaplex_status (*call)(void* self, const struct uaplex_nodeid* object_id,
                          const struct uaplex_nodeid* method_id, size_t input_count,
                          const struct uaplex_variant* inputs, const uaplex_value_alloc* alloc,
                          uaplex_status* input_results, size_t* out_output_count,
                          struct uaplex_variant** out_outputs);
    /* --- since 1.8: asynchronous operations ---
     * The entries above with a completion (uaplex_completion): the kernel calls an `_async`
     * entry instead of its synchronous form when it has a request to answer later (Read,
     * Write, Call, Browse, BrowseNext); the worker then serves other requests while the
     * operation is pending. Items, results, statuses, alloc, the node ids and the outputs
     * stay valid until complete is called. Worker threads; must not block. NULL: the
     * synchronous entry. A request with several operations is answered when the last
     * completes; its TimeoutHint, Cancel and session close answer it earlier (the pending
     * operations must still complete).
     * Subscription sampling (the node manager's sampling thread) also calls read_async when
     * set (hosts after uaplex 0.1.0; no ABI change, see call_async below): one call per
     * tick with all due items; the tick's batch stays out (the manager's items skip ticks)
     * until it completes, and an item's first sample is the next tick's instead of a probe
     * read on the CreateMonitoredItems worker (so an unknown node is reported in the samples'
     * status, not as the item's creation status). Its completion's status() stays Good. */
    uaplex_status (*read_async)(void* self, size_t count, const uaplex_read_item* items,
                                struct uaplex_datavalue* const* results, uaplex_status* statuses,
                                const uaplex_completion* completion);
    uaplex_status (*write_async)(void* self, size_t count, const uaplex_write_item* items,
                                 uaplex_status* statuses, const uaplex_completion* completion);
    uaplex_status (*call_async)(void* self, const struct uaplex_nodeid* object_id,
                                const struct uaplex_nodeid* method_id, size_t input_count,
                                const struct uaplex_variant* inputs,
                                const uaplex_value_alloc* alloc, uaplex_status* input_results,
                                size_t* out_output_count, struct uaplex_variant** out_outputs,
                                const uaplex_completion* completion);
    /* call_async: a Method of an owned namespace (input_results, outputs and alloc as for
     * call, valid until complete; the kernel checks them as for call when it completes).
     * Called by hosts after uaplex 0.1.0 (reserved before; same ABI 1.9: the entry's
     * contract was the one above from 1.8 on, and the SDK's factories left it NULL). */
    /* browse with a completion: `sink` may be called from any thread until complete, one
     * call at a time (never after). The kernel collects the references, then pages them as
     * for browse (continuation points; BrowseNext calls browse_async again). On the
     * completing thread it may call the node manager's `read` for the BrowseName and
     * DisplayName of the targets: complete without holding a lock that read takes. Called
     * by hosts after uaplex 0.1.0 (reserved before, as call_async). */
    uaplex_status (*browse_async)(void* self, const struct uaplex_nodeid* node_id,
                                  uint32_t direction, const struct uaplex_nodeid* reference_type_id,
                                  int32_t include_subtypes, uaplex_reference_sink sink,
                                  void* sink_user, const uaplex_completion* completion);
} uaplex_node_manager_ops;

typedef struct uaplex_node_manager_factory {
    uaplex_header hdr; /* UAPLEX_STYPE_NODE_MANAGER_FACTORY */
    const uaplex_node_manager_ops* ops;
    /* Host main thread; params borrowed until destroy. */
    uaplex_status (*create)(uaplex_plugin_ctx* ctx, const uaplex_node_manager_params* params,
                            void** out_self);
} uaplex_node_manager_factory;

/* --- since 1.13: alarms from plugins ---
 * A plugin creates conditions of its own (host API condition_create) whose state the kernel
 * keeps (docs/architecture.md "Alarms and Conditions"): it drives what it measures with
 * condition_set (active, severity, message, quality, the limit state), and hears of what
 * clients do (Acknowledge, Confirm, AddComment, Enable, Disable, the shelving methods) through
 * its uaplex_condition_call_fn, which may refuse the call. */

/* uaplex_condition_spec.flags */
/* The condition keeps branches (Part 9 5.5.2): a state still unacknowledged when the alarm
 * changes state again stays acknowledgeable as a branch of its own. */
#define UAPLEX_CONDITION_BRANCHES 0x1u

/* A method a client called on a plugin's condition (borrowed for the callback). */
typedef struct uaplex_condition_call {
    uaplex_header hdr; /* UAPLEX_STYPE_CONDITION_CALL */
    /* The namespace-0 NodeId number of the method: Enable 9027, Disable 9028, AddComment
     * 9029, Acknowledge 9111, Confirm 9113, Unshelve 2947, OneShotShelve 2948, TimedShelve
     * 2949. */
    uint32_t method;
    uint32_t reserved0;
    const struct uaplex_nodeid* condition_id;
    /* AddComment, Acknowledge, Confirm: the EventId the client named and its comment (NULL
     * when none); empty and NULL for the other methods. */
    uaplex_bytes event_id;
    const struct uaplex_localizedtext* comment;
    /* Who calls: the session's user name, certificate subject or "anonymous" (the
     * condition's ClientUserId once the call succeeds). */
    uaplex_str user;
    double shelving_time_ms; /* TimedShelve's ShelvingTime; 0 otherwise */
    /* The branch the EventId names (BranchId); NULL for the condition's current state. */
    const struct uaplex_nodeid* branch_id;
} uaplex_condition_call;

/* Called when a client calls a method on the condition, after the kernel checked it (the
 * method belongs to the condition's type, the session may Call it, the inputs, the EventId,
 * the state: a call the kernel refuses never reaches the plugin) and before the state
 * changes. Good (or any non-Bad status) lets the change happen; a Bad status refuses the
 * call: the client gets that status and nothing changes. Worker threads (the one serving the
 * Call), concurrently for calls of several sessions; no kernel lock is held, so it may call
 * condition_set; it holds the worker: must not block long. A change the callback allowed
 * can still be refused when another call changed the state in between (the client then gets
 * that state's status). */
typedef uaplex_status (*uaplex_condition_call_fn)(void* user, const uaplex_condition_call* call);

/* A condition to create (host API condition_create); everything borrowed for the call (the
 * kernel copies). */
typedef struct uaplex_condition_spec {
    uaplex_header hdr; /* UAPLEX_STYPE_CONDITION_SPEC */
    uint32_t flags;    /* UAPLEX_CONDITION_BRANCHES */
    uint32_t reserved0;
    /* The condition's NodeId (a new node; the kernel adds its state variables below it, as
     * `<id>.<Name>`), its type (ConditionType i=2782 or a subtype: AlarmConditionType i=2915,
     * ExclusiveLevelAlarmType i=9482, OffNormalAlarmType i=10637, ...) and its BrowseName
     * (the ConditionName). */
    const struct uaplex_nodeid* condition_id;
    const struct uaplex_nodeid* type_id;
    const struct uaplex_qualifiedname* browse_name;
    /* The source whose events it is (SourceNode, SourceName; HasCondition source ->
     * condition): an existing node. */
    const struct uaplex_nodeid* source_id;
    /* The node the condition hangs below (HasComponent); NULL: the source. */
    const struct uaplex_nodeid* parent_id;
    uaplex_condition_call_fn call; /* NULL: the kernel answers the methods alone */
    void* user; /* passed to call; valid until the node manager's destroy */
} uaplex_condition_spec;

/* uaplex_condition_state.mask: the fields condition_set changes. */
#define UAPLEX_CONDITION_SET_ACTIVE 0x1u
#define UAPLEX_CONDITION_SET_SEVERITY 0x2u
#define UAPLEX_CONDITION_SET_MESSAGE 0x4u
#define UAPLEX_CONDITION_SET_QUALITY 0x8u
#define UAPLEX_CONDITION_SET_LIMIT_STATE 0x10u

/* What a plugin measures of its condition (host API condition_set); borrowed for the call. */
typedef struct uaplex_condition_state {
    uaplex_header hdr; /* UAPLEX_STYPE_CONDITION_STATE */
    uint32_t mask;     /* UAPLEX_CONDITION_SET_*: the fields below that are set */
    int32_t active;    /* alarms: ActiveState (non-zero: active; a new activation is to be
                        * acknowledged and confirmed again) */
    uint16_t severity; /* 1..1000 (clamped) */
    uint16_t reserved0;
    uaplex_status quality;
    const struct uaplex_localizedtext* message;
    /* Exclusive limit alarms: LimitState/CurrentState, the namespace-0 NodeId number of the
     * state (HighHigh 9329, High 9331, Low 9333, LowLow 9335) or 0 for none. */
    uint32_t limit_state;
    uint32_t field_count;
    /* Fields of the condition's type beyond these (HighLimit, a non-exclusive alarm's
     * HighState/Id, ...): kept and passed on in this and every later event. */
    const uaplex_event_field* fields;
} uaplex_condition_state;

UAPLEX_END_DECLS

#endif /* UAPLEX_NODE_MANAGER_H */
