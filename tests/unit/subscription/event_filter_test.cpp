// SPDX-License-Identifier: Apache-2.0
// The ContentFilter evaluator (Part 4 7.7): every operator, the implicit conversions, Like
// wildcards, three-valued logic, the per-element results of validation, and the EventFilter's
// select clauses (7.22.3).
#include <catch2/catch.hpp>

#include <uaplex/subscription/queue_handlers.hpp>
#include <uaplex/subscription/value_cell.hpp>
#include "fake_model.hpp"
#include "filter_builder.hpp"

using namespace uaplex;
using namespace uaplex::subscription;
using namespace uaplex::subscription::test;
using BT = ua::BuiltinType;

namespace {

// -1 null, 0 false, 1 true; 2 for a non-Boolean value.
int eval(Builder& b, TestEvent& e) {
    FakeModel model;
    enc::Arena scratch;
    ua::ContentFilter f = b.filter();
    ua::ContentFilterResult r{};
    REQUIRE(validateContentFilter(f, model, b.arena, r) == UAPLEX_Good);
    ua::Variant v = evaluateContentFilter(f, e.view(), model, scratch);
    if ((v.encoding & UAPLEX_VARIANT_TYPE_MASK) == 0) return -1;
    if ((v.encoding & UAPLEX_VARIANT_TYPE_MASK) != uint8_t(BT::Boolean)) return 2;
    return v.value.boolean ? 1 : 0;
}

int binary(Op op, const ua::Variant& a, const ua::Variant& c) {
    Builder b;
    b.add(op, {b.lit(a), b.lit(c)});
    TestEvent e;
    return eval(b, e);
}

ua::Variant i32(int32_t x) {
    return Builder::scalar(BT::Int32, x);
}
ua::Variant u16(uint16_t x) {
    return Builder::scalar(BT::UInt16, x);
}
ua::Variant dbl(double x) {
    return ua::variantDouble(x);
}

}  // namespace

TEST_CASE("Equals converts numbers to the wider type and Strings to numbers") {
    Builder b;
    CHECK(binary(Op::Equals, i32(5), dbl(5.0)) == 1);
    CHECK(binary(Op::Equals, i32(5), dbl(5.5)) == 0);
    CHECK(binary(Op::Equals, u16(7), Builder::scalar(BT::Int64, int64_t(7))) == 1);
    CHECK(binary(Op::Equals, b.text("42"), i32(42)) == 1);
    CHECK(binary(Op::Equals, b.text("4x2"), i32(42)) == 0);  // no conversion: false
    CHECK(binary(Op::Equals, b.text("abc"), b.text("abc")) == 1);
    CHECK(binary(Op::Equals, b.nodeId(2041), b.nodeId(2041)) == 1);
    CHECK(binary(Op::Equals, b.nodeId(2041), b.nodeId(2042)) == 0);
    CHECK(binary(Op::Equals, b.nodeId(85), b.text("i=85")) == 1);  // NodeId as its text
    CHECK(binary(Op::Equals, Builder::scalar(BT::Boolean, true), i32(1)) == 1);
}

TEST_CASE("comparisons order across signedness and precision") {
    CHECK(binary(Op::GreaterThan, Builder::scalar(BT::UInt64, uint64_t(1) << 63),
                 Builder::scalar(BT::Int64, int64_t(-1))) == 1);
    CHECK(binary(Op::LessThan, Builder::scalar(BT::Int64, int64_t(-1)),
                 Builder::scalar(BT::UInt64, uint64_t(0))) == 1);
    CHECK(binary(Op::GreaterThanOrEqual, u16(500), u16(500)) == 1);
    CHECK(binary(Op::GreaterThanOrEqual, u16(499), dbl(499.5)) == 0);
    CHECK(binary(Op::LessThanOrEqual, Builder::scalar(BT::Float, 1.5f), dbl(1.5)) == 1);
    CHECK(binary(Op::LessThan, dbl(std::nan("")), dbl(1)) == 0);  // NaN orders with nothing
    Builder b;
    CHECK(binary(Op::LessThan, b.text("abc"), b.text("abd")) == 1);
    CHECK(binary(Op::GreaterThan, b.nodeId(1), i32(0)) == 0);  // not comparable: false
}

TEST_CASE("a Null operand makes a comparison Null, IsNull tests it") {
    CHECK(binary(Op::Equals, ua::Variant{}, i32(1)) == -1);
    CHECK(binary(Op::GreaterThan, i32(1), ua::Variant{}) == -1);
    Builder b;
    b.add(Op::IsNull, {b.attr("Message")});
    TestEvent e;
    CHECK(eval(b, e) == 1);
    e.set("Message", b.text("x"));
    CHECK(eval(b, e) == 0);
}

TEST_CASE("Like: % _ [list] [^list] and escapes") {
    CHECK(likeMatch("Demo event 12", "Demo event %"));
    CHECK(likeMatch("Demo event 12", "%event%"));
    CHECK_FALSE(likeMatch("Demo event 12", "event%"));
    CHECK(likeMatch("abc", "a_c"));
    CHECK_FALSE(likeMatch("abbc", "a_c"));
    CHECK(likeMatch("a7c", "a[0-9]c"));
    CHECK_FALSE(likeMatch("axc", "a[0-9]c"));
    CHECK(likeMatch("axc", "a[^0-9]c"));
    CHECK(likeMatch("b", "[abc]"));
    CHECK(likeMatch("100%", "100\\%"));
    CHECK_FALSE(likeMatch("1000", "100\\%"));
    CHECK(likeMatch("", "%"));
    CHECK(likeMatch("aXbXc", "a%b%c"));
    Builder b;
    CHECK(binary(Op::Like, b.text("HighAlarm"), b.text("High%")) == 1);
    CHECK(binary(Op::Like, b.text("LowAlarm"), b.text("High%")) == 0);
}

TEST_CASE("Not, And, Or use three-valued logic") {
    auto logic = [](Op op, int a, int c) {
        Builder b;
        auto v = [&](int t) {
            return t < 0 ? b.lit(ua::Variant{}) : b.lit(ua::variantBoolean(t == 1));
        };
        b.add(op, {v(a), v(c)});
        TestEvent e;
        return eval(b, e);
    };
    CHECK(logic(Op::And, 1, 1) == 1);
    CHECK(logic(Op::And, 1, 0) == 0);
    CHECK(logic(Op::And, -1, 0) == 0);
    CHECK(logic(Op::And, -1, 1) == -1);
    CHECK(logic(Op::Or, -1, 1) == 1);
    CHECK(logic(Op::Or, -1, 0) == -1);
    CHECK(logic(Op::Or, 0, 0) == 0);
    Builder b;
    b.add(Op::Not, {b.elem(1)});
    b.add(Op::Equals, {b.lit(i32(1)), b.lit(i32(2))});
    TestEvent e;
    CHECK(eval(b, e) == 1);
    Builder n;
    n.add(Op::Not, {n.lit(ua::Variant{})});
    CHECK(eval(n, e) == -1);
}

TEST_CASE("Between and InList") {
    Builder b;
    b.add(Op::Between, {b.attr("Severity"), b.lit(u16(400)), b.lit(u16(600))});
    TestEvent e;
    e.set("Severity", u16(500));
    CHECK(eval(b, e) == 1);
    e.values[0] = u16(600);
    CHECK(eval(b, e) == 1);  // inclusive
    e.values[0] = u16(601);
    CHECK(eval(b, e) == 0);
    Builder l;
    l.add(Op::InList, {l.attr("Severity"), l.lit(i32(100)), l.lit(dbl(601)), l.lit(l.text("7"))});
    CHECK(eval(l, e) == 1);
    e.values[0] = u16(7);
    CHECK(eval(l, e) == 1);
    e.values[0] = u16(8);
    CHECK(eval(l, e) == 0);
}

TEST_CASE("Cast converts to the DataType named by the literal") {
    FakeModel model;
    enc::Arena scratch;  // holds the String results
    auto cast = [&](const ua::Variant& v, uint32_t type, ua::Variant& out) {
        Builder b;
        b.add(Op::Cast, {b.lit(v), b.lit(b.nodeId(type))});
        ua::ContentFilter f = b.filter();
        ua::ContentFilterResult r{};
        REQUIRE(validateContentFilter(f, model, b.arena, r) == UAPLEX_Good);
        TestEvent e;
        out = evaluateContentFilter(f, e.view(), model, scratch);
        return out.encoding & UAPLEX_VARIANT_TYPE_MASK;
    };
    ua::Variant out{};
    Builder b;
    REQUIRE(cast(b.text("42"), 6, out) == uint8_t(BT::Int32));
    CHECK(out.value.int32 == 42);
    REQUIRE(cast(dbl(3.7), 6, out) == uint8_t(BT::Int32));
    CHECK(out.value.int32 == 4);
    CHECK(cast(i32(300), 3, out) == 0);  // out of Byte range: Null
    REQUIRE(cast(i32(-5), 2, out) == uint8_t(BT::SByte));
    CHECK(out.value.sbyte == -5);
    REQUIRE(cast(i32(12), 12, out) == uint8_t(BT::String));
    CHECK(ua::view(out.value.string) == "12");
    REQUIRE(cast(i32(0), 1, out) == uint8_t(BT::Boolean));
    CHECK_FALSE(out.value.boolean);
    // Cast inside a comparison: "500" as UInt16 equals Severity.
    Builder c;
    c.add(Op::Equals, {c.attr("Severity"), c.elem(1)});
    c.add(Op::Cast, {c.lit(c.text("500")), c.lit(c.nodeId(5))});
    TestEvent e;
    e.set("Severity", u16(500));
    CHECK(eval(c, e) == 1);
}

TEST_CASE("OfType follows the event type's supertypes") {
    Builder b;
    b.add(Op::OfType, {b.lit(b.nodeId(2782))});
    TestEvent alarm(2915), system(2130);
    CHECK(eval(b, alarm) == 1);
    CHECK(eval(b, system) == 0);
}

TEST_CASE("BitwiseAnd and BitwiseOr keep the wider integer type") {
    FakeModel model;
    Builder b;
    b.add(Op::Equals, {b.elem(1), b.lit(i32(0x0C))});
    b.add(Op::BitwiseAnd, {b.lit(Builder::scalar(BT::Byte, uint8_t(0x0F))), b.lit(i32(0x3C))});
    TestEvent e;
    CHECK(eval(b, e) == 1);
    Builder o;
    o.add(Op::BitwiseOr, {o.lit(u16(0x0100)), o.lit(Builder::scalar(BT::Byte, uint8_t(1)))});
    ua::ContentFilter f = o.filter();
    enc::Arena scratch;
    ua::Variant v = evaluateContentFilter(f, e.view(), model, scratch);
    CHECK((v.encoding & UAPLEX_VARIANT_TYPE_MASK) == uint8_t(BT::UInt16));
    CHECK(v.value.uint16 == 0x0101);
    Builder d;
    d.add(Op::BitwiseAnd, {d.lit(dbl(1)), d.lit(i32(1))});
    CHECK(eval(d, e) == -1);  // not integers: Null
}

TEST_CASE("validation gives a result per element and per operand") {
    FakeModel model;
    Builder b;
    b.add(Op(99), {b.lit(i32(1))});                                       // 0
    b.add(Op::InView, {b.lit(b.nodeId(85))});                             // 1
    b.add(Op::Equals, {b.lit(i32(1))});                                   // 2
    b.add(Op::Not, {b.elem(1)});                                          // 3: backwards
    b.add(Op::Equals, {b.wrap(ua::AttributeOperand{}), b.lit(i32(1))});   // 4
    b.add(Op::OfType, {b.lit(b.nodeId(85))});                             // 5: not a type
    b.add(Op::Equals, {b.attr("Severity"), b.elem(99)});                  // 6: past the end
    b.add(Op::Cast, {b.lit(i32(1)), b.lit(b.nodeId(2041))});              // 7: not a DataType
    b.add(Op::Equals, {b.wrap(b.operand("Nope", 2782)), b.lit(i32(1))});  // 8: bad path
    b.add(Op::And, {b.lit(ua::variantBoolean(true)), b.lit(ua::variantBoolean(true))});  // 9
    ua::ContentFilter f = b.filter();
    ua::ContentFilterResult r{};
    CHECK(validateContentFilter(f, model, b.arena, r) == UAPLEX_BadEventFilterInvalid);
    REQUIRE(r.elementResults.size() == 10);
    auto& e = r.elementResults;
    CHECK(e[0].statusCode == UAPLEX_BadFilterOperatorInvalid);
    CHECK(e[1].statusCode == UAPLEX_BadFilterOperatorUnsupported);
    CHECK(e[2].statusCode == UAPLEX_BadFilterOperandCountMismatch);
    CHECK(e[3].statusCode == UAPLEX_BadFilterOperandInvalid);
    REQUIRE(e[3].operandStatusCodes.size() == 1);
    CHECK(e[3].operandStatusCodes[0] == UAPLEX_BadFilterOperandInvalid);
    CHECK(e[4].statusCode == UAPLEX_BadFilterOperandInvalid);
    REQUIRE(e[4].operandStatusCodes.size() == 2);
    CHECK(e[4].operandStatusCodes[0] == UAPLEX_BadFilterOperandInvalid);
    CHECK(e[4].operandStatusCodes[1] == UAPLEX_Good);
    CHECK(e[5].statusCode == UAPLEX_BadFilterOperandInvalid);
    CHECK(e[6].operandStatusCodes[1] == UAPLEX_BadFilterOperandInvalid);
    CHECK(e[7].statusCode == UAPLEX_BadFilterOperandInvalid);
    CHECK(e[8].operandStatusCodes[0] == UAPLEX_BadBrowseNameInvalid);
    CHECK(e[9].statusCode == UAPLEX_Good);
    CHECK(e[9].operandStatusCodes.size() == 0);  // empty when the operands are fine
}

TEST_CASE("select clauses: per-clause status, Null for what the event lacks, ConditionId") {
    FakeModel model;
    Builder b;
    std::vector<ua::SimpleAttributeOperand> sel{
        b.operand("Severity"),                 // 0
        b.operand("Message"),                  // 1: absent from the event
        b.operand("Severity", 9999),           // 2: unknown type
        b.operand("Severity", 85),             // 3: not an event type
        b.operand("Severity", 2041, 0),        // 4: attribute 0
        b.operand("ActiveState/Id", 2915),     // 5: Alarm path
        b.operand("NoSuchField", 2782),        // 6: not in ConditionType
        b.operand("Severity", 2041, 13, "x"),  // 7: bad IndexRange
        b.operand("", 2782, 1),                // 8: ConditionId
        b.operand("ActiveState/Id", 2041),     // 9: any path under BaseEventType
    };
    ua::EventFilter filter{};
    filter.selectClauses = {int32_t(sel.size()), sel.data()};
    ua::EventFilterResult result{};
    std::unique_ptr<EventFilterSpec> spec;
    REQUIRE(EventFilterSpec::create(filter, model, b.arena, result, spec) == UAPLEX_Good);
    auto& r = result.selectClauseResults;
    REQUIRE(r.size() == sel.size());
    CHECK(r[0] == UAPLEX_Good);
    CHECK(r[1] == UAPLEX_Good);
    CHECK(r[2] == UAPLEX_BadNodeIdUnknown);
    CHECK(r[3] == UAPLEX_BadTypeDefinitionInvalid);
    CHECK(r[4] == UAPLEX_BadAttributeIdInvalid);
    CHECK(r[5] == UAPLEX_Good);
    CHECK(r[6] == UAPLEX_BadBrowseNameInvalid);
    CHECK(r[7] == UAPLEX_BadIndexRangeInvalid);
    CHECK(r[8] == UAPLEX_Good);
    CHECK(r[9] == UAPLEX_Good);

    TestEvent alarm(2915);
    alarm.set("Severity", u16(700)).set("ActiveState/Id", ua::variantBoolean(true));
    alarm.condition = ua::stringNodeId(2, "Alarm");
    alarm.isCondition = true;
    ValuePool pool;
    EventCell* cell = spec->select(alarm.view(), model, pool, 1);
    REQUIRE(cell->cells.size() == sel.size());
    REQUIRE(cell->cells[0]);
    CHECK(cell->cells[0]->dv.value.value.uint16 == 700);
    CHECK(cell->cells[1] == nullptr);  // Message: Null
    CHECK(cell->cells[2] == nullptr);  // invalid clauses select Null
    REQUIRE(cell->cells[5]);
    CHECK(cell->cells[5]->dv.value.value.boolean);
    REQUIRE(cell->cells[8]);
    CHECK((cell->cells[8]->dv.value.encoding & UAPLEX_VARIANT_TYPE_MASK) == uint8_t(BT::NodeId));
    for (ValueCell* c : cell->cells)
        if (c) pool.release(c);
    delete cell;

    // A plain event is no alarm: the AlarmConditionType clause is Null there.
    TestEvent plain;
    plain.set("ActiveState/Id", ua::variantBoolean(true));
    cell = spec->select(plain.view(), model, pool, 2);
    CHECK(cell->cells[5] == nullptr);
    CHECK(cell->cells[9] != nullptr);  // BaseEventType ignores the type
    for (ValueCell* c : cell->cells)
        if (c) pool.release(c);
    delete cell;
}

TEST_CASE("a filter without a valid select clause, or with a bad where element, is refused") {
    FakeModel model;
    Builder b;
    std::vector<ua::SimpleAttributeOperand> bad{b.operand("Severity", 85)};
    ua::EventFilter filter{};
    filter.selectClauses = {1, bad.data()};
    ua::EventFilterResult result{};
    std::unique_ptr<EventFilterSpec> spec;
    CHECK(EventFilterSpec::create(filter, model, b.arena, result, spec) ==
          UAPLEX_BadEventFilterInvalid);
    CHECK_FALSE(spec);

    std::vector<ua::SimpleAttributeOperand> good{b.operand("Severity")};
    filter.selectClauses = {1, good.data()};
    b.add(Op::Equals, {b.attr("Severity")});
    filter.whereClause = b.filter();
    CHECK(EventFilterSpec::create(filter, model, b.arena, result, spec) ==
          UAPLEX_BadEventFilterInvalid);
    REQUIRE(result.whereClauseResult.elementResults.size() == 1);
    CHECK(result.whereClauseResult.elementResults[0].statusCode ==
          UAPLEX_BadFilterOperandCountMismatch);
}

TEST_CASE("the filter keeps its own copy of the request's strings") {
    FakeModel model;
    std::unique_ptr<EventFilterSpec> spec;
    {
        Builder b;
        std::vector<ua::SimpleAttributeOperand> sel{b.operand("Severity")};
        b.add(Op::Like, {b.attr("Message"), b.lit(b.text("Demo%"))});
        ua::EventFilter filter{};
        filter.selectClauses = {1, sel.data()};
        filter.whereClause = b.filter();
        ua::EventFilterResult result{};
        REQUIRE(EventFilterSpec::create(filter, model, b.arena, result, spec) == UAPLEX_Good);
    }  // the request's memory is gone
    Builder b;
    TestEvent e;
    e.set("Severity", u16(1)).set("Message", b.text("Demo event 1"));
    enc::Arena scratch;
    CHECK(spec->matches(e.view(), model, scratch));
    e.values[1] = b.text("Other");
    CHECK_FALSE(spec->matches(e.view(), model, scratch));
}

TEST_CASE("hostile where clauses: shared sub-elements are evaluated once, size is bounded") {
    // Element i is And(i+1, i+1): 2^200 evaluations without memoisation.
    Builder b;
    for (uint32_t i = 0; i < 200; ++i) b.add(Op::And, {b.elem(i + 1), b.elem(i + 1)});
    b.add(Op::Equals, {b.lit(i32(1)), b.lit(i32(1))});
    TestEvent e;
    CHECK(eval(b, e) == 1);

    FakeModel model;
    Builder big;
    for (uint32_t i = 0; i < 300; ++i) big.add(Op::IsNull, {big.lit(i32(1))});
    ua::ContentFilter f = big.filter();
    ua::ContentFilterResult r{};
    CHECK(validateContentFilter(f, model, big.arena, r) == UAPLEX_BadEventFilterInvalid);
    CHECK(r.elementResults[0].statusCode == UAPLEX_Good);
    CHECK(r.elementResults[299].statusCode == UAPLEX_BadFilterElementInvalid);
}
