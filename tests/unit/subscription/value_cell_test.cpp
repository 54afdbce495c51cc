// SPDX-License-Identifier: Apache-2.0
// Value cells: a materialized value belongs to its arena, not to the pooled cell.
#include <catch2/catch.hpp>

#include <string_view>

#include <uaplex/encoding/arena.hpp>
#include <uaplex/subscription/value_cell.hpp>

using namespace uaplex;
using namespace uaplex::subscription;

namespace {

ua::DataValue stringValue(std::string_view s) {
    ua::DataValue dv{};
    dv.mask = UAPLEX_DATAVALUE_VALUE;
    dv.value.encoding = UAPLEX_TYPE_STRING;
    dv.value.value.string = ua::makeString(s);
    return dv;
}

}  // namespace

TEST_CASE("a materialized string keeps its text when the cell is reused for another value") {
    // A retained NotificationMessage (Publish, Republish) is built this way and outlives the
    // cell it was built from.
    ValuePool pool;
    ValueCell* cell = pool.copy(stringValue("first value"));
    REQUIRE(cell);
    enc::Arena arena;
    ua::DataValue out{};
    REQUIRE(ValuePool::materialize(*cell, arena, out));
    pool.release(cell);
    ValueCell* reused = pool.copy(stringValue("other value"));
    REQUIRE(reused == cell);  // the pool hands the same cell and buffer out again
    CHECK(ua::view(out.value.value.string) == "first value");
    pool.release(reused);
}
