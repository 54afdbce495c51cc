// SPDX-License-Identifier: Apache-2.0
// The monotonic millisecond clock that the kernel and the plugins share, so that due times
// and ages computed on one side mean the same on the other. Header-only.
#pragma once

#include <chrono>
#include <cstdint>

namespace uaplex::sdk {

// std::chrono::steady_clock in whole milliseconds since its (arbitrary) epoch. Any thread.
inline std::int64_t monotonic_ms() noexcept {
    return std::chrono::duration_cast<std::chrono::milliseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

}  // namespace uaplex::sdk
