// SPDX-License-Identifier: Apache-2.0
// NumericRange (Part 4 7.27) on hand-built values: matrices (ArrayDimensions) for Read and
// Write, and String arrays whose last range dimension indexes into the elements.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "services_internal.hpp"

using namespace uaplex;
using services::IndexRange;

namespace {

IndexRange parse(std::string_view text) {
    IndexRange r;
    ua::String s{std::int32_t(text.size()), text.data()};
    REQUIRE(services::parseIndexRange(s, r) == UAPLEX_Good);
    return r;
}

ua::Variant matrix(std::vector<std::int32_t>& values, std::vector<std::int32_t>& dims) {
    ua::Variant v =
        ua::variantArray(ua::BuiltinType::Int32, std::int32_t(values.size()), values.data());
    v.dimensions_length = std::int32_t(dims.size());
    v.dimensions = dims.data();
    return v;
}

std::vector<std::int32_t> elements(const ua::Variant& v) {
    auto* p = static_cast<const std::int32_t*>(v.value.pointer);
    return {p, p + v.array_length};
}

std::vector<std::int32_t> dimsOf(const ua::Variant& v) {
    return {v.dimensions, v.dimensions + v.dimensions_length};
}

// A 3 x 4 matrix whose element [i][j] is 10 * i + j.
struct Matrix34 {
    std::vector<std::int32_t> values;
    std::vector<std::int32_t> dims{3, 4};
    Matrix34() {
        for (int i = 0; i < 3; ++i)
            for (int j = 0; j < 4; ++j) values.push_back(10 * i + j);
    }
    ua::Variant variant() { return matrix(values, dims); }
};

std::vector<std::string> strings(const ua::Variant& v) {
    std::vector<std::string> out;
    auto* p = static_cast<const ua::String*>(v.value.pointer);
    for (std::int32_t i = 0; i < v.array_length; ++i) out.emplace_back(ua::view(p[i]));
    return out;
}

}  // namespace

TEST_CASE("IndexRange: parsing follows Part 4 7.27") {
    IndexRange r = parse("1:2,0:1");
    REQUIRE(r.count == 2);
    CHECK(r.dims[0].first == 1);
    CHECK(r.dims[0].last == 2);
    CHECK(r.dims[1].first == 0);
    CHECK(r.dims[1].last == 1);
    for (std::string_view bad : {"1:1", "2:1", "1:2,", ",1", "1:2,3:3", "1,2,3,4,5", "-1", "a"}) {
        IndexRange x;
        ua::String s{std::int32_t(bad.size()), bad.data()};
        CHECK(services::parseIndexRange(s, x) == UAPLEX_BadIndexRangeInvalid);
    }
}

TEST_CASE("IndexRange: Read of a matrix selects a sub-matrix with its dimensions") {
    enc::Arena arena(1 << 20, 4096);
    Matrix34 m;
    ua::Variant v = m.variant();
    REQUIRE(services::readIndexRange(arena, parse("1:2,0:1"), v) == UAPLEX_Good);
    CHECK(elements(v) == std::vector<std::int32_t>{10, 11, 20, 21});
    CHECK(dimsOf(v) == std::vector<std::int32_t>{2, 2});

    v = m.variant();
    REQUIRE(services::readIndexRange(arena, parse("2,1:3"), v) == UAPLEX_Good);
    CHECK(elements(v) == std::vector<std::int32_t>{21, 22, 23});
    CHECK(dimsOf(v) == std::vector<std::int32_t>{1, 3});

    // An upper bound past the end gives what there is.
    v = m.variant();
    REQUIRE(services::readIndexRange(arena, parse("0:9,3:9"), v) == UAPLEX_Good);
    CHECK(elements(v) == std::vector<std::int32_t>{3, 13, 23});
    CHECK(dimsOf(v) == std::vector<std::int32_t>{3, 1});
    // The source is untouched.
    CHECK(m.values[5] == 11);

    // A lower bound past the end, or a range of the wrong rank: no data.
    for (std::string_view r : {"3,0", "0,4", "1", "0,0,0"}) {
        v = m.variant();
        CHECK(services::readIndexRange(arena, parse(r), v) == UAPLEX_BadIndexRangeNoData);
    }
}

TEST_CASE("IndexRange: Read of a three-dimensional matrix") {
    enc::Arena arena(1 << 20, 4096);
    std::vector<std::int32_t> values(2 * 3 * 4);
    for (std::size_t i = 0; i < values.size(); ++i) values[i] = std::int32_t(i);
    std::vector<std::int32_t> dims{2, 3, 4};
    ua::Variant v = matrix(values, dims);
    REQUIRE(services::readIndexRange(arena, parse("1,0:1,2:3"), v) == UAPLEX_Good);
    // [1][0][2] = 12 + 2, [1][0][3], [1][1][2] = 12 + 4 + 2, [1][1][3]
    CHECK(elements(v) == std::vector<std::int32_t>{14, 15, 18, 19});
    CHECK(dimsOf(v) == std::vector<std::int32_t>{1, 2, 2});
}

TEST_CASE("IndexRange: Read into the elements of a String array") {
    enc::Arena arena(1 << 20, 4096);
    std::vector<ua::String> items{ua::makeString("abcdef"), ua::makeString("xy"),
                                  ua::makeString("012345")};
    auto array = [&] {
        return ua::variantArray(ua::BuiltinType::String, std::int32_t(items.size()), items.data());
    };
    ua::Variant v = array();
    REQUIRE(services::readIndexRange(arena, parse("0:1,2:3"), v) == UAPLEX_Good);
    // "xy" has nothing at 2:3: an empty element.
    CHECK(strings(v) == std::vector<std::string>{"cd", ""});
    v = array();
    REQUIRE(services::readIndexRange(arena, parse("1:2,1:4"), v) == UAPLEX_Good);
    CHECK(strings(v) == std::vector<std::string>{"y", "1234"});
    CHECK(ua::view(items[0]) == "abcdef");

    // A String matrix (2 x 2) with a third dimension into the elements.
    std::vector<std::int32_t> dims{2, 2};
    std::vector<ua::String> grid{ua::makeString("aaaa"), ua::makeString("bbbb"),
                                 ua::makeString("cccc"), ua::makeString("dxyz")};
    v = ua::variantArray(ua::BuiltinType::String, 4, grid.data());
    v.dimensions_length = 2;
    v.dimensions = dims.data();
    REQUIRE(services::readIndexRange(arena, parse("1,0:1,1:2"), v) == UAPLEX_Good);
    CHECK(strings(v) == std::vector<std::string>{"cc", "xy"});
    CHECK(dimsOf(v) == std::vector<std::int32_t>{1, 2});

    // No extra dimension into numbers.
    Matrix34 m;
    v = m.variant();
    CHECK(services::readIndexRange(arena, parse("0,0,0:1"), v) == UAPLEX_BadIndexRangeNoData);
}

TEST_CASE("IndexRange: Write of a sub-matrix") {
    enc::Arena arena(1 << 20, 4096);
    Matrix34 m;
    std::vector<std::int32_t> patch{-1, -2, -3, -4};
    std::vector<std::int32_t> patchDims{2, 2};
    ua::Variant in = matrix(patch, patchDims);

    ua::Variant cur = m.variant();
    REQUIRE(services::writeIndexRange(arena, parse("1:2,2:3"), cur, in) == UAPLEX_Good);
    CHECK(elements(cur) == std::vector<std::int32_t>{0, 1, 2, 3, 10, 11, -1, -2, 20, 21, -3, -4});
    CHECK(dimsOf(cur) == std::vector<std::int32_t>{3, 4});
    CHECK(m.values[6] == 12);  // the stored value is replaced by the caller, not here

    // The written value must have the range's shape.
    cur = m.variant();
    CHECK(services::writeIndexRange(arena, parse("0:1,0:2"), cur, in) ==
          UAPLEX_BadIndexRangeInvalid);
    std::vector<std::int32_t> flatDims{4, 1};
    ua::Variant wrongShape = matrix(patch, flatDims);
    cur = m.variant();
    CHECK(services::writeIndexRange(arena, parse("1:2,2:3"), cur, wrongShape) ==
          UAPLEX_BadIndexRangeInvalid);
    // Past the end (even only the upper bound) or the wrong rank: no data.
    cur = m.variant();
    CHECK(services::writeIndexRange(arena, parse("2:3,0:1"), cur, in) ==
          UAPLEX_BadIndexRangeNoData);
    cur = m.variant();
    CHECK(services::writeIndexRange(arena, parse("1:2"), cur, in) == UAPLEX_BadIndexRangeNoData);
    // Another type.
    std::vector<double> d(4);
    ua::Variant doubles = ua::variantArray(ua::BuiltinType::Double, 4, d.data());
    cur = m.variant();
    CHECK(services::writeIndexRange(arena, parse("1:2,2:3"), cur, doubles) ==
          UAPLEX_BadTypeMismatch);
}

TEST_CASE("IndexRange: Write into the elements of a String array") {
    enc::Arena arena(1 << 20, 4096);
    std::vector<ua::String> items{ua::makeString("abcdef"), ua::makeString("ghijkl"),
                                  ua::makeString("mnopqr")};
    std::vector<ua::String> parts{ua::makeString("XY"), ua::makeString("ZW")};
    ua::Variant in = ua::variantArray(ua::BuiltinType::String, 2, parts.data());
    ua::Variant cur = ua::variantArray(ua::BuiltinType::String, 3, items.data());
    REQUIRE(services::writeIndexRange(arena, parse("0:1,2:3"), cur, in) == UAPLEX_Good);
    CHECK(strings(cur) == std::vector<std::string>{"abXYef", "ghZWkl", "mnopqr"});
    CHECK(ua::view(items[0]) == "abcdef");

    // Parts of the wrong length, or a target too short.
    std::vector<ua::String> longParts{ua::makeString("XYZ"), ua::makeString("ZW")};
    ua::Variant bad = ua::variantArray(ua::BuiltinType::String, 2, longParts.data());
    cur = ua::variantArray(ua::BuiltinType::String, 3, items.data());
    CHECK(services::writeIndexRange(arena, parse("0:1,2:3"), cur, bad) ==
          UAPLEX_BadIndexRangeInvalid);
    cur = ua::variantArray(ua::BuiltinType::String, 3, items.data());
    CHECK(services::writeIndexRange(arena, parse("0:1,5:6"), cur, in) ==
          UAPLEX_BadIndexRangeNoData);
    // One element per selected row.
    cur = ua::variantArray(ua::BuiltinType::String, 3, items.data());
    CHECK(services::writeIndexRange(arena, parse("0:2,2:3"), cur, in) ==
          UAPLEX_BadIndexRangeInvalid);
}
