// SPDX-License-Identifier: Apache-2.0
// The clocks the subscription engine reads, injected so that tests run on a fake clock.
#pragma once

#include <cstdint>
#include <utility>

namespace uaplex::subscription {

class Clock {
  public:
    virtual ~Clock() = default;
    virtual int64_t monoMs() const = 0;  // monotonic, whole milliseconds
    virtual int64_t utcNow() const = 0;  // OPC UA DateTime (100 ns ticks since 1601)
};

// A clock the test moves by hand.
class FakeClock final : public Clock {
  public:
    // Each reading moves the clock on by `stepPerRead` ms (work that takes time), 0: stands.
    int64_t monoMs() const override { return std::exchange(mono, mono + stepPerRead); }
    int64_t utcNow() const override { return utcBase + mono * 10000; }
    void advance(int64_t ms) { mono += ms; }
    mutable int64_t mono = 0;
    int64_t stepPerRead = 0;
    int64_t utcBase = 133000000000000000;  // an arbitrary date in 2022
};

}  // namespace uaplex::subscription
