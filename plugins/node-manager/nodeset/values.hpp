// SPDX-License-Identifier: Apache-2.0
// NodeSet2 values and structures: NodeIds as the loader keeps them, the DataTypes it knows
// (built-in types, a few namespace-0 structures, and every DataTypeDefinition of the loaded
// files), XML values (<Value> with uax: elements) turned into uaplex variants, and the
// definition-driven binary codec for structure bodies (encode from XML, decode to validate).
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "uaplex/types.h"
#include "xml_reader.hpp"

namespace uaplex::nodeset {

// A value error at an element: reported as file:line by the loader.
struct ValueError : std::runtime_error {
    ValueError(std::uint32_t l, const std::string& w) : std::runtime_error(w), line(l) {}
    std::uint32_t line;
};

// A NodeId with owned identifier text, in server namespace indices.
struct NodeIdV {
    std::uint16_t ns = 0;
    std::uint8_t kind = UAPLEX_ID_NUMERIC;
    std::uint32_t num = 0;
    std::string text;  // string and bytestring identifiers
    uaplex_guid guid{};
    bool null() const noexcept { return ns == 0 && kind == UAPLEX_ID_NUMERIC && num == 0; }
    std::string key() const;
    uaplex_nodeid raw() const noexcept;  // views `text`
    static NodeIdV numeric(std::uint16_t ns, std::uint32_t id) {
        NodeIdV n;
        n.ns = ns;
        n.num = id;
        return n;
    }
};

// Parses "i=..", "ns=N;s=..", "g=..", "b=.." (N already a server index after `remap`).
// nsu= forms resolve through `uri_index`. Throws std::invalid_argument.
NodeIdV parse_node_id(std::string_view text,
                      const std::function<std::uint16_t(std::uint32_t)>& remap,
                      const std::function<std::uint16_t(std::string_view)>& uri_index);

struct FieldDef {
    std::string name;
    NodeIdV data_type;
    std::int32_t value_rank = -1;
    std::vector<std::uint32_t> array_dimensions;
    std::uint32_t max_string_length = 0;
    bool optional = false;
    std::string description_locale, description;
    // Enumerations.
    std::int64_t value = 0;
    std::string display_name;
};

struct TypeDef {
    enum Kind { Builtin, Enumeration, Structure } kind = Builtin;
    std::uint8_t builtin = 0;  // Builtin: the built-in type id
    // StructureDefinition.structureType (Part 3 8.48), as encoded.
    enum StructureType : std::int32_t { Plain = 0, WithOptionalFields = 1, Union = 2 };
    std::int32_t structure_type = Plain;
    std::string name;
    NodeIdV id, base, binary_encoding, xml_encoding;
    std::vector<FieldDef> fields;
};

// Every DataType the codec can encode. Namespace 0: the built-in types, their common
// subtypes, and the structures companion specifications use in values (Argument,
// EnumValueType, Range, EUInformation).
class TypeRegistry {
  public:
    TypeRegistry();
    void add(TypeDef t);
    const TypeDef* find(const NodeIdV& id) const;
    // By binary or XML encoding id.
    const TypeDef* by_encoding(const NodeIdV& id) const;

  private:
    const TypeDef* find_key(const std::string& k) const {
        auto it = types_.find(k);
        return it == types_.end() ? nullptr : &it->second;
    }
    std::unordered_map<std::string, TypeDef> types_;
    std::unordered_map<std::string, std::string> encodings_;
};

// Memory for converted values: lives until the loader is done with node_add.
class Store {
  public:
    void* alloc(std::size_t n) {
        blocks_.emplace_back(new std::uint64_t[(n + 7) / 8 + 1]());
        return blocks_.back().get();
    }
    const std::string& keep(std::string s) { return strings_.emplace_back(std::move(s)); }

  private:
    std::vector<std::unique_ptr<std::uint64_t[]>> blocks_;
    std::deque<std::string> strings_;
};

struct ValueContext {
    const TypeRegistry& types;
    Store& store;
    std::function<std::uint16_t(std::uint32_t)> remap;  // file namespace index -> server
    std::function<std::uint16_t(std::string_view)> uri_index;
};

// The <Value> element's child (e.g. <String>, <ListOfExtensionObject>) as a variant.
uaplex_variant xml_to_variant(const XmlElement& typed, ValueContext& ctx);

// The binary body of a structure of type `t` from its XML body element.
std::string encode_structure(const TypeDef& t, const XmlElement& body, ValueContext& ctx,
                             int depth = 0);
// Decodes a binary body of type `t` completely; false (with `why`) when it does not fit.
bool validate_structure(const TypeDef& t, const std::uint8_t* data, std::size_t size,
                        const TypeRegistry& types, std::string& why);

// Binary DataTypeDefinition bodies (StructureDefinition i=122, EnumDefinition i=123).
std::string structure_definition_body(const TypeDef& t);
std::string enum_definition_body(const TypeDef& t);

}  // namespace uaplex::nodeset
