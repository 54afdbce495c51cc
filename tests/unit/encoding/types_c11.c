// SPDX-License-Identifier: Apache-2.0
/* sdk/include/uaplex/types.h must compile as strict C11 (built with -pedantic -Werror). */
#include <uaplex/types.h>

#include <stddef.h>

/* The layout plugins see; the C++ side asserts the same through the shared definitions. */
_Static_assert(sizeof(uaplex_string) == 16, "uaplex_string layout");
_Static_assert(sizeof(uaplex_guid) == 16, "uaplex_guid layout");
_Static_assert(sizeof(uaplex_nodeid) == 24, "uaplex_nodeid layout");
_Static_assert(offsetof(uaplex_nodeid, identifier) == 8, "uaplex_nodeid layout");
_Static_assert(sizeof(uaplex_variant) == 40, "uaplex_variant layout");
_Static_assert(offsetof(uaplex_variant, value) == 24, "uaplex_variant layout");

int uaplex_types_c11_check(void) {
    /* The table's helpers are plain C too. */
    return (int)sizeof(struct uaplex_datavalue) + (int)uaplex_builtin_size(UAPLEX_TYPE_GUID) +
           (uaplex_builtin_name(UAPLEX_TYPE_MAX) != NULL);
}
