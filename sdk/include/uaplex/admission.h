// SPDX-License-Identifier: Apache-2.0
/* Admission providers (plugins/admission: leases): fail-fast, server-wide accounting per
 * stage with owner ceilings and protected class floors. A provider never waits and never
 * revokes; leases are released by their holder.
 */
#ifndef UAPLEX_ADMISSION_H
#define UAPLEX_ADMISSION_H

#include "uaplex/plugin.h"

UAPLEX_BEGIN_DECLS

/* Opaque owner issued by the provider; reference counted through owner_retain/release. */
typedef struct uaplex_admission_owner uaplex_admission_owner;

typedef enum uaplex_admission_stage {
    UAPLEX_STAGE_CONNECTION = 0,
    UAPLEX_STAGE_HANDSHAKE = 1,
    UAPLEX_STAGE_REASSEMBLY_BYTES = 2,
    UAPLEX_STAGE_SESSION_ESTABLISHMENT = 3,
    UAPLEX_STAGE_REQUEST_QUEUE = 4,
    UAPLEX_STAGE_REQUEST_EXECUTION = 5,
    UAPLEX_STAGE_REQUEST_QUEUE_BYTES = 6,
    UAPLEX_STAGE_PARKED_REQUEST = 7,
    UAPLEX_STAGE_COUNT = 8
} uaplex_admission_stage;

typedef enum uaplex_admission_class {
    UAPLEX_CLASS_BOOTSTRAP = 0,
    UAPLEX_CLASS_ESTABLISHED = 1,
    UAPLEX_CLASS_RECONNECT = 2,
    UAPLEX_CLASS_TRUSTED = 3,
    UAPLEX_CLASS_CONTROL = 4
} uaplex_admission_class;

/* Why an acquire failed (the status is BadServerTooBusy or BadResourceUnavailable). */
typedef enum uaplex_admission_failure {
    UAPLEX_ADMISSION_OK = 0,
    UAPLEX_ADMISSION_CAPACITY = 1,
    UAPLEX_ADMISSION_OWNER_LIMIT = 2,
    UAPLEX_ADMISSION_OWNER_TABLE_FULL = 3,
    UAPLEX_ADMISSION_INVALID_OWNER = 4
} uaplex_admission_failure;

typedef enum uaplex_admission_request_flags {
    UAPLEX_ADMISSION_SESSION_ESTABLISHMENT = 1u << 0, /* CreateSession / ActivateSession */
    UAPLEX_ADMISSION_CONTROL = 1u << 1,               /* Cancel / CloseSession */
    UAPLEX_ADMISSION_SESSION_VERIFIED = 1u << 2       /* the token names a live session */
} uaplex_admission_request_flags;

/* What the kernel knows about a connection or request; borrowed for the call. Key
 * material (user id, certificate) is sensitive: providers hash it and never log it. */
typedef struct uaplex_admission_request_info {
    uaplex_header hdr; /* UAPLEX_STYPE_ADMISSION_REQUEST_INFO */
    uint32_t secure_channel_id;
    uint32_t flags;                  /* uaplex_admission_request_flags */
    uaplex_str peer_address;         /* "ip:port"; IPv4-mapped addresses not yet normalised */
    uaplex_str security_policy_uri;  /* empty for a connection without a channel */
    uaplex_bytes client_certificate; /* empty when none */
    uaplex_bytes session_binding;    /* opaque kernel id of the bound session, or empty */
    uaplex_str user_id;              /* verified user identity, or empty */
} uaplex_admission_request_info;

/* A lease, stored by the caller (no allocation per grant). The provider fills it on Good;
 * release reverses exactly what it recorded and is idempotent. */
typedef struct uaplex_admission_lease {
    uaplex_header hdr; /* UAPLEX_STYPE_ADMISSION_LEASE */
    uint32_t stage;
    uint32_t released; /* 0 while held; set by release */
    int64_t amount;
    void* provider_private[4];
} uaplex_admission_lease;

/* Called after capacity was released at `stage`, outside the provider's locks. Any thread;
 * must not block. */
typedef void (*uaplex_capacity_available_fn)(void* user, uint32_t stage);

typedef struct uaplex_admission_params {
    uaplex_header hdr; /* UAPLEX_STYPE_ADMISSION_PARAMS */
    /* Server limits the plan is derived from. */
    uint32_t max_channel_count;
    uint32_t max_session_count;
    uint32_t max_concurrent_session_establishment;
    uint32_t max_queued_request_count;
    uint32_t max_request_thread_count;
    uint32_t max_message_size;
    uint64_t reassembly_budget_bytes;
    uaplex_capacity_available_fn capacity_available;
    void* user;
} uaplex_admission_params;

typedef struct uaplex_admission_ops {
    uaplex_header hdr; /* UAPLEX_STYPE_ADMISSION_OPS */
    /* lifecycle (see uaplex_lifecycle_ops); start fails on an invalid plan. */
    uaplex_status (*start)(void* self);
    uaplex_status (*stop)(void* self);
    uaplex_status (*destroy)(void* self);

    /* *out = 0 only in the shared-only profile. Any thread; must not block. */
    uaplex_status (*use_fair_scheduling)(void* self, int32_t* out_fair);
    /* Owner for a new connection (*out_owner owned by the caller: owner_release it). I/O
     * thread; must not block. */
    uaplex_status (*classify_connection)(void* self, const uaplex_admission_request_info* info,
                                         uaplex_admission_owner** out_owner);
    /* Owner for a decoded request; same ownership. Any thread; must not block. */
    uaplex_status (*classify)(void* self, const uaplex_admission_request_info* info,
                              uaplex_admission_owner** out_owner);
    /* Good, or BadServerTooBusy / BadSecureChannelIdInvalid / BadSessionIdInvalid when the
     * request may no longer run for this owner. Any thread; must not block. */
    uaplex_status (*revalidate)(void* self, uaplex_admission_owner* owner,
                                const uaplex_admission_request_info* info);
    /* Charges `amount` (> 0, else BadInvalidArgument) at `stage` for `owner` (borrowed),
     * filling the caller's *lease. Failure: BadServerTooBusy with *out_reason set, and no
     * counter changed. Any thread; must not block (lock-free on the common path). */
    uaplex_status (*try_acquire)(void* self, uint32_t stage, uaplex_admission_owner* owner,
                                 int64_t amount, uaplex_admission_lease* lease,
                                 uint32_t* out_reason);
    /* Returns a lease; a second release is a no-op. Raises capacity_available after the
     * counters changed. Any thread; must not block. */
    uaplex_status (*release)(void* self, uaplex_admission_lease* lease);
    /* Current total usage of `stage`. Any thread; must not block. Reserved: not called by
     * the kernel yet. */
    uaplex_status (*usage)(void* self, uint32_t stage, int64_t* out_usage);
    /* Owner reference counting. Any thread; must not block. */
    uaplex_status (*owner_retain)(void* self, uaplex_admission_owner* owner);
    uaplex_status (*owner_release)(void* self, uaplex_admission_owner* owner);
    /* The owner's class and weight (>= 1), for schedulers. Any thread; must not block. */
    uaplex_status (*owner_info)(void* self, uaplex_admission_owner* owner, uint32_t* out_class,
                                uint32_t* out_weight);
    /* --- since 1.0, appended --- */
    /* Number of owner keys that currently hold at least one lease (the owner table's
     * entries). Any thread; must not block. May be NULL. Reserved: not called by the kernel
     * yet. */
    uaplex_status (*tracked_owners)(void* self, uint64_t* out_count);
    /* What `owner`'s key currently uses at `stage`. Any thread; must not block. May be
     * NULL. Reserved: not called by the kernel yet. */
    uaplex_status (*owner_usage)(void* self, uaplex_admission_owner* owner, uint32_t stage,
                                 int64_t* out_usage);
    /* *out_group is equal for owners that share accounting (the same key) while any of them
     * lives; schedulers keep one queue per group. Any thread; must not block. May be NULL
     * (then each owner object is its own group). */
    uaplex_status (*owner_group)(void* self, uaplex_admission_owner* owner, uint64_t* out_group);
} uaplex_admission_ops;

typedef struct uaplex_admission_factory {
    uaplex_header hdr; /* UAPLEX_STYPE_ADMISSION_FACTORY */
    const uaplex_admission_ops* ops;
    /* Host main thread; params borrowed until destroy. */
    uaplex_status (*create)(uaplex_plugin_ctx* ctx, const uaplex_admission_params* params,
                            void** out_self);
} uaplex_admission_factory;

UAPLEX_END_DECLS

#endif /* UAPLEX_ADMISSION_H */
