// SPDX-License-Identifier: Apache-2.0
/* Buffer pools (plugins/buffer-pool: bounded): rent and return the byte arrays that carry
 * UASC chunks, keep retained memory bounded, and optionally cap the bytes outstanding per
 * process. A pool serves buffer managers; each manager has a name and a MaxBufferSize.
 */
#ifndef UAPLEX_BUFFER_POOL_H
#define UAPLEX_BUFFER_POOL_H

#include "uaplex/plugin.h"

UAPLEX_BEGIN_DECLS

/* Opaque manager, owned by the pool; freed by manager_destroy. */
typedef struct uaplex_buffer_manager uaplex_buffer_manager;

/* A rented buffer. The struct itself is caller storage; the bytes belong to the pool that
 * lent them and go back to it through give_back (never freed by anyone else). */
typedef struct uaplex_buffer {
    uaplex_header hdr; /* UAPLEX_STYPE_BUFFER */
    uint32_t reserved0;
    uint8_t* data;
    size_t length;                  /* usable bytes (>= the size asked for) */
    size_t used;                    /* bytes filled by the holder; the pool ignores it */
    uaplex_buffer_manager* manager; /* the manager that lent it */
    void* pool_private[2];
} uaplex_buffer;

typedef enum uaplex_buffer_check {
    UAPLEX_BUFFER_CHECK_AUTO = 0,   /* fast in release builds, cookie in debug builds */
    UAPLEX_BUFFER_CHECK_FAST = 1,   /* no metadata */
    UAPLEX_BUFFER_CHECK_COOKIE = 2, /* a trailing cookie byte detects misuse */
    UAPLEX_BUFFER_CHECK_TRACING = 3 /* cookie plus an allocation id */
} uaplex_buffer_check;

typedef struct uaplex_buffer_pool_params {
    uaplex_header hdr;              /* UAPLEX_STYPE_BUFFER_POOL_PARAMS */
    uint32_t check;                 /* uaplex_buffer_check */
    uint64_t max_outstanding_bytes; /* per-process budget; 0 = no limit */
} uaplex_buffer_pool_params;

typedef struct uaplex_buffer_pool_ops {
    uaplex_header hdr; /* UAPLEX_STYPE_BUFFER_POOL_OPS */
    /* lifecycle (see uaplex_lifecycle_ops); stop fails every waiting take with
     * BadShutdown. */
    uaplex_status (*start)(void* self);
    uaplex_status (*stop)(void* self);
    uaplex_status (*destroy)(void* self);

    /* Creates a manager (name borrowed for the call). Any thread. */
    uaplex_status (*manager_create)(void* self, uaplex_str name, uint32_t max_buffer_size,
                                    uaplex_buffer_manager** out_manager);
    /* Destroys a manager with no buffer outstanding (else BadInvalidState). Any thread.
     * Reserved: not called by the kernel yet (its managers live as long as the pool). */
    uaplex_status (*manager_destroy)(void* self, uaplex_buffer_manager* manager);
    /* Size to ask for so that a rent fills its bucket exactly; BadOutOfRange when size > the
     * manager's MaxBufferSize. Any thread; must not block. Reserved: not called by the
     * kernel yet. */
    uaplex_status (*suggested_size)(void* self, uaplex_buffer_manager* manager, uint32_t size,
                                    uint32_t* out_size);
    /* Upper bound of the next rent's length for `size`. Any thread; must not block.
     * Reserved: not called by the kernel yet. */
    uaplex_status (*expected_size)(void* self, uaplex_buffer_manager* manager, uint32_t size,
                                   uint32_t* out_size);
    /* Rents at least `size` bytes into *out (caller storage). `owner` tags the holder for
     * checking builds (borrowed for the call). Errors: BadOutOfRange,
     * BadRequestCancelledByClient (or the token's status) when `cancel` fired,
     * BadInvalidState (budget exceeded or re-entrant wait). Blocks only when a budget is
     * configured and exhausted (cancellable): never call with a budget from an I/O thread.
     * Otherwise any thread, lock-free. */
    uaplex_status (*take)(void* self, uaplex_buffer_manager* manager, uint32_t size,
                          const void* owner, const uaplex_cancel_token* cancel, uaplex_buffer* out);
    /* Passes holding of `buffer` to `owner`. Any thread; must not block. Reserved: not
     * called by the kernel yet. */
    uaplex_status (*transfer)(void* self, uaplex_buffer* buffer, const void* owner);
    /* Marks the buffer in use by an outstanding operation (checking builds: a locked buffer
     * cannot be given back). Double lock or unlock gives BadInvalidState. Reserved: not
     * called by the kernel yet. */
    uaplex_status (*lock)(void* self, uaplex_buffer* buffer);
    uaplex_status (*unlock)(void* self, uaplex_buffer* buffer);
    /* Returns the bytes to the pool that lent them; a buffer with data == NULL is a no-op.
     * Foreign or double returns give BadInvalidState and change nothing. Any thread;
     * must not block; lock-free. */
    uaplex_status (*give_back)(void* self, uaplex_buffer* buffer, const void* owner);
    /* Bytes retained by the pool and outstanding to holders. Any thread. Reserved: not
     * called by the kernel yet. */
    uaplex_status (*stats)(void* self, uint64_t* out_retained, uint64_t* out_outstanding);
} uaplex_buffer_pool_ops;

typedef struct uaplex_buffer_pool_factory {
    uaplex_header hdr; /* UAPLEX_STYPE_BUFFER_POOL_FACTORY */
    const uaplex_buffer_pool_ops* ops;
    /* Host main thread; params borrowed until destroy. */
    uaplex_status (*create)(uaplex_plugin_ctx* ctx, const uaplex_buffer_pool_params* params,
                            void** out_self);
} uaplex_buffer_pool_factory;

UAPLEX_END_DECLS

#endif /* UAPLEX_BUFFER_POOL_H */
