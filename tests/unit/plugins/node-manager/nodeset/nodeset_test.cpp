// SPDX-License-Identifier: Apache-2.0
// The NodeSet2 loader's own parts: the XML reader refuses hostile input with the right line,
// and the definition-driven codec writes the OPC UA binary of structures and refuses bodies
// that do not decode by their definition.
#include <catch2/catch.hpp>

#include <cstring>
#include <string>

#include "values.hpp"
#include "xml_reader.hpp"

using namespace uaplex::nodeset;

namespace {

uint32_t error_line(const std::string& xml) {
    try {
        parse_xml(xml);
    } catch (const XmlError& e) {
        return e.line();
    }
    return 0;
}

std::string error_text(const std::string& xml) {
    try {
        parse_xml(xml);
    } catch (const XmlError& e) {
        return e.what();
    }
    return "";
}

ValueContext context(const TypeRegistry& types, Store& store) {
    return ValueContext{types, store, [](uint32_t i) { return uint16_t(i + 1); },
                        [](std::string_view) { return uint16_t(9); }};
}

// A structure {Count Int32, Name String, Values Double[], Inner Range} in namespace 2.
TypeDef sample_type() {
    TypeDef t;
    t.kind = TypeDef::Structure;
    t.name = "Sample";
    t.id = NodeIdV::numeric(2, 100);
    t.binary_encoding = NodeIdV::numeric(2, 101);
    t.xml_encoding = NodeIdV::numeric(2, 102);
    auto field = [](const char* n, uint32_t type, int32_t rank = -1) {
        FieldDef f;
        f.name = n;
        f.data_type = NodeIdV::numeric(0, type);
        f.value_rank = rank;
        return f;
    };
    t.fields = {field("Count", 6), field("Name", 12), field("Values", 11, 1), field("Inner", 884)};
    return t;
}

}  // namespace

TEST_CASE("the XML reader keeps lines, attributes, text and entities") {
    XmlElement root = parse_xml(
        "<?xml version=\"1.0\"?>\n<!-- c -->\n<a x=\"1 &amp; 2\">\n  <b:c>t&lt;&#65;&#x42;</b:c>"
        "<![CDATA[<raw>]]>\n  <d/>\n</a>\n");
    REQUIRE(root.name == "a");
    REQUIRE(root.line == 3);
    REQUIRE(*root.attribute("x") == "1 & 2");
    REQUIRE(root.children.size() == 2);
    CHECK(root.children[0].name == "c");  // prefix removed
    CHECK(root.children[0].text == "t<AB");
    CHECK(root.children[0].line == 4);
    CHECK(root.children[1].line == 5);
    CHECK(root.text.find("<raw>") != std::string::npos);
}

TEST_CASE("the XML reader refuses hostile and malformed input at its line") {
    CHECK(error_line("<a>\n<b>\n</c>\n</a>") == 3);
    CHECK(error_text("<?xml version=\"1.0\"?>\n<!DOCTYPE a [<!ENTITY x \"y\">]><a/>")
              .find("DOCTYPE") != std::string::npos);
    CHECK(error_line("<a>\n&bogus;</a>") == 2);
    CHECK(error_line("<a x='1' x='2'/>") == 1);
    CHECK(error_line("<a>\n\n<b>") == 3);  // unterminated: reported where the reader stopped
    CHECK(error_line("<a>&#0;</a>") == 1);
    CHECK(error_line("<a>&#x110000;</a>") == 1);
    CHECK(error_line("<a/><b/>") == 1);
    CHECK(error_line("") == 1);
    // Depth is bounded, not recursed into without limit.
    std::string deep;
    for (int i = 0; i < 100000; ++i) deep += "<a>";
    CHECK(error_text(deep).find("nested too deeply") != std::string::npos);
    XmlLimits small;
    small.max_elements = 3;
    CHECK_THROWS_AS(parse_xml("<a><b/><c/><d/></a>", small), XmlError);
}

TEST_CASE("NodeId text: forms, namespace remapping, errors") {
    auto remap = [](uint32_t i) { return uint16_t(i + 4); };
    auto uri = [](std::string_view) { return uint16_t(7); };
    NodeIdV a = parse_node_id("ns=1;i=42", remap, uri);
    CHECK(a.ns == 5);
    CHECK(a.num == 42);
    NodeIdV b = parse_node_id("s=Hello;World", remap, uri);
    CHECK(b.kind == UAPLEX_ID_STRING);
    CHECK(b.text == "Hello;World");
    CHECK(parse_node_id("nsu=urn:x;i=1", remap, uri).ns == 7);
    CHECK(parse_node_id("g=09087e75-8e5e-499b-954f-f2a9603db28a", remap, uri).guid.data1 ==
          0x09087e75u);
    CHECK_THROWS(parse_node_id("x=1", remap, uri));
    CHECK_THROWS(parse_node_id("ns=70000;i=1", remap, uri));
    CHECK_THROWS(parse_node_id("i=12abc", remap, uri));
}

TEST_CASE("a structure encodes by its definition and validates") {
    TypeRegistry types;
    types.add(sample_type());
    Store store;
    ValueContext ctx = context(types, store);
    XmlElement body = parse_xml(
        "<Sample><Count>-3</Count><Name>pump</Name>"
        "<Values><Double>1</Double><Double>2.5</Double></Values>"
        "<Inner><Low>0</Low><High>10</High></Inner></Sample>");
    const TypeDef& t = *types.find(NodeIdV::numeric(2, 100));
    std::string bin = encode_structure(t, body, ctx);
    // Int32 -3 | String "pump" | Double[2] | Range{0, 10}
    REQUIRE(bin.size() == 4 + 4 + 4 + 4 + 16 + 16);
    int32_t count;
    std::memcpy(&count, bin.data(), 4);
    CHECK(count == -3);
    CHECK(bin.substr(8, 4) == "pump");
    double high;
    std::memcpy(&high, bin.data() + bin.size() - 8, 8);
    CHECK(high == 10);

    std::string why;
    const auto* p = reinterpret_cast<const uint8_t*>(bin.data());
    CHECK(validate_structure(t, p, bin.size(), types, why));
    // Truncated, or with bytes left over, or a lying array length: refused.
    CHECK_FALSE(validate_structure(t, p, bin.size() - 1, types, why));
    std::string longer = bin + "x";
    CHECK_FALSE(validate_structure(t, reinterpret_cast<const uint8_t*>(longer.data()),
                                   longer.size(), types, why));
    CHECK(why.find("after the end") != std::string::npos);
    std::string lying = bin;
    int32_t huge = 0x7FFFFFFF;
    std::memcpy(lying.data() + 12, &huge, 4);
    CHECK_FALSE(validate_structure(t, reinterpret_cast<const uint8_t*>(lying.data()), lying.size(),
                                   types, why));
}

TEST_CASE("absent fields encode their defaults; unknown field types are errors") {
    TypeRegistry types;
    types.add(sample_type());
    Store store;
    ValueContext ctx = context(types, store);
    const TypeDef& t = *types.find(NodeIdV::numeric(2, 100));
    std::string bin = encode_structure(t, parse_xml("<Sample/>"), ctx);
    // 0 | null String | null array | Range{0, 0}
    CHECK(bin.size() == 4 + 4 + 4 + 16);
    TypeDef bad = sample_type();
    bad.id = NodeIdV::numeric(2, 200);
    bad.binary_encoding = NodeIdV::numeric(2, 201);
    bad.xml_encoding = NodeIdV::numeric(2, 202);
    bad.fields[0].data_type = NodeIdV::numeric(3, 1);
    types.add(bad);
    CHECK_THROWS_AS(encode_structure(*types.find(NodeIdV::numeric(2, 200)),
                                     parse_xml("<Sample><Count>1</Count></Sample>"), ctx),
                    ValueError);
}

TEST_CASE("XML values become variants: scalars, lists, ExtensionObjects by encoding id") {
    TypeRegistry types;
    Store store;
    ValueContext ctx = context(types, store);
    uaplex_variant d = xml_to_variant(parse_xml("<Double>2.5</Double>"), ctx);
    CHECK(d.encoding == UAPLEX_TYPE_DOUBLE);
    CHECK(d.value.double_ == 2.5);
    uaplex_variant dt = xml_to_variant(parse_xml("<DateTime>1601-01-01T00:00:01Z</DateTime>"), ctx);
    CHECK(dt.value.datetime == 10000000);
    uaplex_variant list =
        xml_to_variant(parse_xml("<ListOfString><String>a</String><String/></ListOfString>"), ctx);
    CHECK(list.encoding == (UAPLEX_TYPE_STRING | UAPLEX_VARIANT_ARRAY));
    REQUIRE(list.array_length == 2);
    CHECK(static_cast<uaplex_string*>(list.value.pointer)[1].length == 0);
    uaplex_variant eo = xml_to_variant(
        parse_xml("<ExtensionObject><TypeId><Identifier>i=885</Identifier></TypeId>"
                  "<Body><Range><Low>1</Low><High>2</High></Range></Body></ExtensionObject>"),
        ctx);
    auto* x = static_cast<uaplex_extensionobject*>(eo.value.pointer);
    CHECK(x->type_id.identifier.numeric == 886);  // stored with the binary encoding id
    CHECK(x->body.length == 16);
    CHECK_THROWS_AS(xml_to_variant(parse_xml("<Int32>12x</Int32>"), ctx), ValueError);
    CHECK_THROWS_AS(xml_to_variant(parse_xml("<Byte>256</Byte>"), ctx), ValueError);
    CHECK_THROWS_AS(xml_to_variant(parse_xml("<Nope>1</Nope>"), ctx), ValueError);
}
