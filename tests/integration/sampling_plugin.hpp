// SPDX-License-Identifier: Apache-2.0
// The test-sampling plugin's exported entry points (plugins/sampling.cpp), found in the
// library the in-process server loaded; shared by the sampling and blocking-call tests.
#pragma once

#include <catch2/catch.hpp>

#include <dlfcn.h>

#include <cstddef>
#include <cstdint>

#include "uaplex/types.h"

namespace uaplex::test {

struct SamplingPlugin {
    void (*gate)(int);
    int (*waitBlocked)(int, int);
    std::size_t (*readCounts)(std::size_t*, std::size_t);
    int (*waitMonitor)(int, int, int);
    uaplex_status (*push)(std::int32_t);
    uaplex_status (*valueSet)(std::int32_t);
};

inline SamplingPlugin samplingPlugin() {
    void* lib = dlopen(UAPLEX_SAMPLING_PLUGIN, RTLD_NOW | RTLD_NOLOAD);  // the server loaded it
    REQUIRE(lib != nullptr);
    SamplingPlugin p{};
    p.gate = reinterpret_cast<void (*)(int)>(dlsym(lib, "test_sampling_gate"));
    p.waitBlocked = reinterpret_cast<int (*)(int, int)>(dlsym(lib, "test_sampling_wait_blocked"));
    p.readCounts = reinterpret_cast<std::size_t (*)(std::size_t*, std::size_t)>(
        dlsym(lib, "test_sampling_read_counts"));
    p.waitMonitor =
        reinterpret_cast<int (*)(int, int, int)>(dlsym(lib, "test_sampling_wait_monitor"));
    p.push = reinterpret_cast<uaplex_status (*)(std::int32_t)>(dlsym(lib, "test_sampling_push"));
    p.valueSet =
        reinterpret_cast<uaplex_status (*)(std::int32_t)>(dlsym(lib, "test_sampling_value_set"));
    REQUIRE((p.gate && p.waitBlocked && p.readCounts && p.waitMonitor && p.push && p.valueSet));
    return p;
}

}  // namespace uaplex::test
