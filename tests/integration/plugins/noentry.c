// SPDX-License-Identifier: Apache-2.0
/* A shared library in a plugin directory that lacks the uaplex entry symbol. */
int uaplex_test_not_an_entry(void);
__attribute__((visibility("default"))) int uaplex_test_not_an_entry(void) {
    return 42;
}
