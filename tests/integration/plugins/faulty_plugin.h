// SPDX-License-Identifier: Apache-2.0
// What the raw C test plugins that misbehave on purpose share: a TOML string compared with a
// literal, and the lifecycle entries that do nothing (start, stop) or free the instance.
#pragma once

#include <stdlib.h>
#include <string.h>

#include "uaplex/uaplex.h"

static inline int str_is(uaplex_str s, const char* lit) {
    return s.len == strlen(lit) && memcmp(s.data, lit, s.len) == 0;
}

static inline uaplex_status noop(void* self) {
    (void)self;
    return UAPLEX_Good;
}

static inline uaplex_status destroy(void* self) {
    free(self);
    return UAPLEX_Good;
}
