// SPDX-License-Identifier: Apache-2.0
/* uaplex allocation-counting shim for benchmarks, loaded with LD_PRELOAD.
 *
 * Counts every malloc, calloc, realloc, posix_memalign, aligned_alloc, memalign, valloc
 * and free of the process (C++ operator new and delete reach malloc and free, so they are
 * counted too), and the bytes requested. On SIGUSR1 it appends one line
 *
 *     allocshim pid=<pid> allocs=<n> frees=<n> bytes=<n>
 *
 * to the file named by UAPLEX_ALLOCSHIM_OUT (stderr when unset). The harness sends SIGUSR1
 * at the start and at the end of the measured window and divides the difference by the
 * requests completed in between. The real allocator is glibc's (__libc_malloc & co). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

extern void* __libc_malloc(size_t size);
extern void* __libc_calloc(size_t n, size_t size);
extern void* __libc_realloc(void* p, size_t size);
extern void __libc_free(void* p);
extern void* __libc_memalign(size_t alignment, size_t size);

/* One cache line each, so that threads counting different things do not share one. */
static _Alignas(64) atomic_uint_fast64_t g_allocs;
static _Alignas(64) atomic_uint_fast64_t g_frees;
static _Alignas(64) atomic_uint_fast64_t g_bytes;

static inline void counted(size_t size) {
    atomic_fetch_add_explicit(&g_allocs, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&g_bytes, size, memory_order_relaxed);
}

void* malloc(size_t size) {
    counted(size);
    return __libc_malloc(size);
}

void* calloc(size_t n, size_t size) {
    counted(n * size);
    return __libc_calloc(n, size);
}

void* realloc(void* p, size_t size) {
    if (p == NULL) {
        counted(size);
    } else if (size == 0) {
        atomic_fetch_add_explicit(&g_frees, 1, memory_order_relaxed);
    } else {
        counted(size); /* a resize is an allocation for our purpose */
    }
    return __libc_realloc(p, size);
}

void free(void* p) {
    if (p != NULL) atomic_fetch_add_explicit(&g_frees, 1, memory_order_relaxed);
    __libc_free(p);
}

void* memalign(size_t alignment, size_t size) {
    counted(size);
    return __libc_memalign(alignment, size);
}

void* aligned_alloc(size_t alignment, size_t size) {
    counted(size);
    return __libc_memalign(alignment, size);
}

int posix_memalign(void** out, size_t alignment, size_t size) {
    if (alignment < sizeof(void*) || (alignment & (alignment - 1)) != 0) return EINVAL;
    counted(size);
    void* p = __libc_memalign(alignment, size);
    if (p == NULL) return ENOMEM;
    *out = p;
    return 0;
}

void* valloc(size_t size) {
    counted(size);
    return __libc_memalign((size_t)sysconf(_SC_PAGESIZE), size);
}

/* ---- SIGUSR1: append the counters (async-signal-safe: no stdio, no allocation) ---- */

static char g_path[4096];

static size_t put(char* out, const char* s) {
    size_t n = strlen(s);
    memcpy(out, s, n);
    return n;
}

static size_t putNumber(char* out, uint64_t v) {
    char tmp[24];
    size_t n = 0;
    do {
        tmp[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v != 0);
    for (size_t i = 0; i < n; ++i) out[i] = tmp[n - 1 - i];
    return n;
}

static void report(int sig) {
    (void)sig;
    int saved = errno;
    char line[160];
    size_t n = put(line, "allocshim pid=");
    n += putNumber(line + n, (uint64_t)getpid());
    n += put(line + n, " allocs=");
    n += putNumber(line + n, atomic_load_explicit(&g_allocs, memory_order_relaxed));
    n += put(line + n, " frees=");
    n += putNumber(line + n, atomic_load_explicit(&g_frees, memory_order_relaxed));
    n += put(line + n, " bytes=");
    n += putNumber(line + n, atomic_load_explicit(&g_bytes, memory_order_relaxed));
    line[n++] = '\n';
    int fd = 2;
    if (g_path[0] != '\0') fd = open(g_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd >= 0) {
        ssize_t ignored = write(fd, line, n);
        (void)ignored;
        if (fd != 2) close(fd);
    }
    errno = saved;
}

__attribute__((constructor)) static void install(void) {
    const char* path = getenv("UAPLEX_ALLOCSHIM_OUT");
    if (path != NULL && strlen(path) < sizeof g_path) strcpy(g_path, path);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = report;
    sa.sa_flags = SA_RESTART;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGUSR1, &sa, NULL);
}
