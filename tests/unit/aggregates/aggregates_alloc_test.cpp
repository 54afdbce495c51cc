// SPDX-License-Identifier: Apache-2.0
// compute() allocates nothing, whatever the aggregate and the number of values.
#include <catch2/catch.hpp>

#include <uaplex/statuscodes.h>
#include <uaplex/aggregates/aggregates.hpp>
#include "support/counting_new.hpp"

#include <vector>

using namespace uaplex;
using namespace uaplex::aggregates;

TEST_CASE("no aggregate allocates while computing") {
    std::vector<ua::DataValue> raw(10000);
    for (std::size_t i = 0; i < raw.size(); ++i) {
        ua::DataValue& d = raw[i];
        d.mask =
            UAPLEX_DATAVALUE_VALUE | UAPLEX_DATAVALUE_STATUS | UAPLEX_DATAVALUE_SOURCE_TIMESTAMP;
        d.source_timestamp = UAPLEX_DATETIME_UNIX_EPOCH + static_cast<ua::DateTime>(i) * 10000000;
        d.status = i % 7 == 3 ? UAPLEX_Bad : (i % 11 == 5 ? UAPLEX_Uncertain : UAPLEX_Good);
        d.value.encoding = UAPLEX_TYPE_INT32;
        d.value.array_length = -1;
        d.value.value.int32 = static_cast<std::int32_t>(i % 100);
    }
    ProcessedRequest rq;
    rq.startTime = raw.front().source_timestamp - 5000000;
    rq.endTime = raw.back().source_timestamp + 5000000;
    rq.processingIntervalMs = 100000;  // 10000 s by 100 s: 100 intervals
    std::vector<ua::DataValue> out(200);
    for (std::size_t k = 0; k < kAggregateFunctionCount; ++k) {
        auto f = static_cast<AggregateFunction>(k);
        INFO("function " << k);
        std::size_t allocations = 0;
        ComputeResult r{};
        {
            test::HeapScope heap;
            r = compute(f, raw, rq, out);
            allocations = heap.allocations();
        }
        CHECK(r.status == UAPLEX_Good);
        CHECK(r.written == 100);
        CHECK(allocations == 0);
    }
}
