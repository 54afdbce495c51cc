#include "test_util.hpp"

#include <catch2/catch.hpp>

TEST_CASE("placeholder alloc", "[alloc]") { CHECK(true); }
