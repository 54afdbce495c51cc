// SPDX-License-Identifier: Apache-2.0
// An evaluation allocates nothing, changed or not: counted by a replaced operator new (its
// own executable).
#include <catch2/catch.hpp>

#include <uaplex/conditions/limit_evaluator.hpp>

#include "support/counting_new.hpp"

using namespace uaplex;
using namespace uaplex::conditions;

TEST_CASE("limit evaluation allocates nothing") {
    LimitAlarmSpec s;
    s.kind = AlarmKind::NonExclusiveLevel;
    s.limits[0] = {true, 90.0, 900};
    s.limits[1] = {true, 80.0, 700};
    s.limits[2] = {true, 20.0, 300};
    s.limits[3] = {true, 10.0, 600};
    s.deadband = 1.0;
    s.onDelay = 10;
    LimitEvaluator e(s);
    test::HeapScope heap;
    std::size_t changes = 0;
    for (int i = 0; i < 10000; ++i) {
        const double v = (i % 200) / 2.0;  // sweeps 0..99.5 across every limit
        changes += e.update(v, 1000 + i) ? 1 : 0;
        changes += e.tick(1000 + i) ? 1 : 0;
        (void)e.nextDeadline();
        (void)e.severity();
    }
    CHECK(changes > 0);
    CHECK(heap.allocations() == 0);
}
