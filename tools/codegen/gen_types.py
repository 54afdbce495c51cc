#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Generates the C++ types and codecs of every structure and enumeration in Opc.Ua.Types.bsd.

usage: gen_types.py Opc.Ua.Types.bsd NodeIds.csv OUT_DIR PARTS [MODULE NAMESPACE]

MODULE (default "types") names the outputs, NAMESPACE (default uaplex::ua) holds the types;
tests use them to generate extra schemas next to the standard one.

Writes, under OUT_DIR:
  include/uaplex/encoding/generated/ns0.hpp    constexpr ns0 NodeId constants (NodeIds.csv)
  include/uaplex/encoding/generated/types.hpp  enum class per enumeration, struct per
                                               structure, codec declarations
  src/types_<k>.cpp (k < PARTS)                codecs and field descriptors, split so the
                                               parts compile in parallel
  src/types_registry.cpp                       the DataType table and its sorted indexes

Structures are flattened (base type fields first); `NoOfX` length fields fold into an
Array<T> member; structures with opc:Bit fields get an encodingMask (optional fields) and
structures whose fields carry SwitchValue get a switchField (unions).
"""
import csv
import keyword
import re
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

OPC = "{http://opcfoundation.org/BinarySchema/}"

# Wire type name -> (C++ type, FieldKind, built-in id)
BUILTINS = {
    "Boolean": ("Boolean", "Boolean"), "SByte": ("SByte", "SByte"), "Byte": ("Byte", "Byte"),
    "Int16": ("Int16", "Int16"), "UInt16": ("UInt16", "UInt16"), "Int32": ("Int32", "Int32"),
    "UInt32": ("UInt32", "UInt32"), "Int64": ("Int64", "Int64"), "UInt64": ("UInt64", "UInt64"),
    "Float": ("Float", "Float"), "Double": ("Double", "Double"), "String": ("String", "String"),
    "CharArray": ("String", "String"), "DateTime": ("DateTime", "DateTime"),
    "Guid": ("Guid", "Guid"), "ByteString": ("ByteString", "ByteString"),
    "XmlElement": ("XmlElement", "XmlElement"), "NodeId": ("NodeId", "NodeId"),
    "ExpandedNodeId": ("ExpandedNodeId", "ExpandedNodeId"),
    "StatusCode": ("StatusCode", "StatusCode"), "QualifiedName": ("QualifiedName", "QualifiedName"),
    "LocalizedText": ("LocalizedText", "LocalizedText"),
    "ExtensionObject": ("ExtensionObject", "ExtensionObject"), "DataValue": ("DataValue", "DataValue"),
    "Variant": ("Variant", "Variant"), "DiagnosticInfo": ("DiagnosticInfo", "DiagnosticInfo"),
}
BUILTIN_MIN = {
    "Boolean": 1, "SByte": 1, "Byte": 1, "Int16": 2, "UInt16": 2, "Int32": 4, "UInt32": 4,
    "Int64": 8, "UInt64": 8, "Float": 4, "Double": 8, "String": 4, "DateTime": 8, "Guid": 16,
    "ByteString": 4, "XmlElement": 4, "NodeId": 2, "ExpandedNodeId": 2, "StatusCode": 4,
    "QualifiedName": 6, "LocalizedText": 1, "ExtensionObject": 3, "DataValue": 1, "Variant": 1,
    "DiagnosticInfo": 1,
}
# Built-in type ids, in Variant order; the registry lists these first.
BUILTIN_ORDER = ["Boolean", "SByte", "Byte", "Int16", "UInt16", "Int32", "UInt32", "Int64",
                 "UInt64", "Float", "Double", "String", "DateTime", "Guid", "ByteString",
                 "XmlElement", "NodeId", "ExpandedNodeId", "StatusCode", "QualifiedName",
                 "LocalizedText", "ExtensionObject", "DataValue", "Variant", "DiagnosticInfo"]
# Structures the BSD describes that are built-in types, handled by hand-written codecs.
SKIP_STRUCTS = {"XmlElement", "TwoByteNodeId", "FourByteNodeId", "NumericNodeId",
                "StringNodeId", "GuidNodeId", "ByteStringNodeId", "NodeId", "ExpandedNodeId",
                "DiagnosticInfo", "QualifiedName", "LocalizedText", "DataValue",
                "ExtensionObject", "Variant"}
SKIP_ENUMS = {"NodeIdType"}
CPP_RESERVED = set(keyword.kwlist) | {
    "alignas", "alignof", "and", "asm", "auto", "bool", "case", "catch", "char", "class",
    "const", "constexpr", "default", "delete", "do", "double", "enum", "explicit", "export",
    "extern", "float", "friend", "goto", "inline", "int", "long", "mutable", "namespace", "new",
    "noexcept", "operator", "private", "protected", "public", "register", "short", "signed",
    "sizeof", "static", "struct", "switch", "template", "this", "throw", "typedef", "typeid",
    "typename", "union", "unsigned", "using", "virtual", "void", "volatile", "while", "xor",
    "concept", "requires", "module", "import", "char8_t", "int8_t", "uint8_t", "errno",
}


def ident(name: str) -> str:
    s = re.sub(r"[^A-Za-z0-9_]", "_", name)
    if s[0].isdigit():
        s = "_" + s
    return s + "_" if s in CPP_RESERVED else s


def lower_camel(name: str) -> str:
    return ident(name[0].lower() + name[1:])


class Field:
    def __init__(self, name, type_name, is_array, opt_bit=-1, switch_value=0):
        self.name = lower_camel(name)
        self.type_name = type_name  # wire type name without prefix
        self.is_array = is_array
        self.opt_bit = opt_bit
        self.switch_value = switch_value


class Struct:
    def __init__(self, name):
        self.name = name
        self.fields = []
        self.kind = "Structure"


def strip(tn: str) -> str:
    return tn.split(":", 1)[1] if ":" in tn else tn


def parse(bsd: Path):
    root = ET.parse(bsd).getroot()
    raw_structs, enums = {}, []
    for el in root:
        tag = el.tag.replace(OPC, "")
        name = el.get("Name")
        if tag == "StructuredType" and name not in SKIP_STRUCTS:
            raw_structs[name] = el
        elif tag == "EnumeratedType" and name not in SKIP_ENUMS:
            values = [(ident(v.get("Name")), int(v.get("Value")))
                      for v in el.findall(OPC + "EnumeratedValue")]
            bits = int(el.get("LengthInBits", "32"))
            option_set = el.get("IsOptionSet") == "true"
            enums.append((name, values, bits, option_set))

    def own_fields(el):
        fields = [f for f in el.findall(OPC + "Field")]
        length_fields = {f.get("LengthField") for f in fields if f.get("LengthField")}
        bits, out, bit_pos, kind = {}, [], 0, "Structure"
        if any(f.get("SwitchValue") for f in fields):
            kind = "Union"
        for f in fields:
            fname, tn = f.get("Name"), strip(f.get("TypeName"))
            if tn == "Bit":
                bits[fname] = bit_pos
                bit_pos += int(f.get("Length", "1"))
                kind = "Union" if kind == "Union" else "StructureWithOptionalFields"
                continue
            if fname in length_fields:
                continue
            if kind == "Union" and fname == "SwitchField":
                continue
            if kind == "StructureWithOptionalFields" and fname == "EncodingMask":
                continue
            sw = f.get("SwitchField")
            opt_bit = bits.get(sw, -1) if (sw and f.get("SwitchValue") is None) else -1
            sv = int(f.get("SwitchValue", "0"))
            out.append(Field(fname, tn, f.get("LengthField") is not None, opt_bit, sv))
        return kind, out

    structs = {}

    def build(name):
        if name in structs:
            return structs[name]
        el = raw_structs[name]
        s = Struct(name)
        base = el.get("BaseType")
        if base and base.startswith("tns:") and strip(base) in raw_structs:
            s.fields = list(build(strip(base)).fields)
        kind, fields = own_fields(el)
        s.kind = kind
        # The schema usually repeats inherited fields (SourceType=...); keep each once.
        have = {f.name for f in fields}
        s.fields = [f for f in s.fields if f.name not in have] + fields
        structs[name] = s
        return s

    for n in raw_structs:
        build(n)
    return structs, enums


def main() -> int:
    if len(sys.argv) not in (5, 7):
        print(__doc__, file=sys.stderr)
        return 2
    bsd, ids_csv, out_dir, parts = Path(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3]), int(sys.argv[4])
    module, ns = (sys.argv[5], sys.argv[6]) if len(sys.argv) == 7 else ("types", "uaplex::ua")
    header = f"<uaplex/encoding/generated/{module}.hpp>"
    structs, enums = parse(bsd)
    enum_map = {e[0]: e for e in enums}

    node_ids = []
    with ids_csv.open(newline="") as f:
        for row in csv.reader(f):
            if len(row) >= 3:
                node_ids.append((row[0].strip(), int(row[1]), row[2].strip()))
    id_by_name = {n: i for n, i, _ in node_ids}

    # Order structures so by-value members are defined before use.
    ordered, seen = [], set()

    def visit(name):
        if name in seen:
            return
        seen.add(name)
        for f in structs[name].fields:
            if not f.is_array and f.type_name in structs:
                visit(f.type_name)
        ordered.append(structs[name])

    for name in sorted(structs):
        visit(name)

    enum_names = sorted(enum_map)
    # Registry index: built-ins, then enumerations, then structures.
    index = {}
    for i, n in enumerate(BUILTIN_ORDER):
        index[n] = i
    for n in enum_names:
        index[n] = len(index)
    for s in ordered:
        index[s.name] = len(index)
    total = len(index)

    def cpp_type(tn):
        if tn in BUILTINS:
            return BUILTINS[tn][0]
        if tn in enum_map or tn in structs:
            return tn
        raise SystemExit(f"gen_types.py: unknown type {tn}")

    def enum_underlying(e):
        _, _, bits, option_set = e
        if option_set:
            return {8: "std::uint8_t", 16: "std::uint16_t", 32: "std::uint32_t", 64: "std::uint64_t"}[bits]
        return "std::int32_t"

    def enum_width(e):
        return (e[2] // 8) if e[3] else 4

    min_size = {}

    def min_of(tn):
        if tn in BUILTIN_MIN:
            return BUILTIN_MIN["String" if tn == "CharArray" else tn]
        if tn in enum_map:
            return enum_width(enum_map[tn])
        if tn not in min_size:
            s = structs[tn]
            if s.kind == "Union":
                min_size[tn] = 4
            else:
                total_ = 4 if s.kind == "StructureWithOptionalFields" else 0
                for f in s.fields:
                    if f.opt_bit >= 0:
                        continue
                    total_ += 4 if f.is_array else min_of(f.type_name)
                min_size[tn] = total_
        return min_size[tn]

    gen_inc = out_dir / "include/uaplex/encoding/generated"
    gen_src = out_dir / "src"
    gen_inc.mkdir(parents=True, exist_ok=True)
    gen_src.mkdir(parents=True, exist_ok=True)
    banner = "// Generated by tools/codegen/gen_types.py from schema/. Do not edit."

    # ---- ns0.hpp ----
    h = [banner, "#pragma once", "", "#include <cstdint>", "",
         "// Every ns0 NodeId of NodeIds.csv (numeric identifiers in namespace 0).",
         "namespace uaplex::ua::ns0 {"]
    seen_ids = set()
    for n, i, _ in node_ids:
        c = ident(n)
        if c in seen_ids:
            continue
        seen_ids.add(c)
        h.append(f"inline constexpr std::uint32_t {c} = {i};")
    h += ["}  // namespace uaplex::ua::ns0", ""]
    if module == "types":
        write_if_changed(gen_inc / "ns0.hpp", "\n".join(h))

    # ---- types.hpp ----
    h = [banner, "#pragma once", "", "#include <uaplex/encoding/datatype.hpp>", "",
         "#include <cstddef>", "#include <cstdint>", "",
         f"namespace {ns}::detail {{",
         f"inline constexpr std::size_t kDataTypeCount = {total};",
         "extern const uaplex::enc::DataType kDataTypes[kDataTypeCount];",
         f"}}  // namespace {ns}::detail", "",
         f"namespace {ns} {{"]
    if ns != "uaplex::ua":
        h.append("using namespace uaplex::ua;")
    h.append("")
    for n in enum_names:
        e = enum_map[n]
        h.append(f"enum class {n} : {enum_underlying(e)} {{")
        for vn, vv in e[1]:
            h.append(f"    {vn} = {vv},")
        h.append("};")
    h.append("")
    for s in ordered:
        h.append(f"struct {s.name};")
    h.append("")
    for s in ordered:
        h.append(f"struct {s.name} {{")
        if s.kind == "StructureWithOptionalFields":
            h.append("    UInt32 encodingMask;  // bit i set: optional field with bit i present")
        if s.kind == "Union":
            h.append("    UInt32 switchField;  // 0: no member; n: the member with switch value n")
        for f in s.fields:
            t = cpp_type(f.type_name)
            h.append(f"    {'Array<' + t + '>' if f.is_array else t} {f.name};")
        h.append(f"    static constexpr std::size_t kMinEncodedSize = {min_of(s.name)};")
        h.append("};")
    h += ["", "// Codecs (found by argument-dependent lookup) and descriptors of the structures."]
    for s in ordered:
        h.append(f"void decode(uaplex::enc::BinaryReader& r, {s.name}& v) noexcept;")
        h.append(f"void encode(uaplex::enc::BinaryWriter& w, const {s.name}& v) noexcept;")
        h.append(f"inline const uaplex::enc::DataType* dataTypeOf(const {s.name}*) noexcept {{ "
                 f"return &detail::kDataTypes[{index[s.name]}]; }}")
    h += [f"}}  // namespace {ns}", ""]
    write_if_changed(gen_inc / f"{module}.hpp", "\n".join(h))

    def field_kind(tn):
        if tn in BUILTINS:
            return "FieldKind::" + BUILTINS[tn][1]
        return "FieldKind::Enumeration" if tn in enum_map else "FieldKind::Structure"

    # ---- parts: codecs and field descriptors ----
    chunks = [ordered[i::parts] for i in range(parts)]
    for k, chunk in enumerate(chunks):
        c = [banner, f"#include {header}", "",
             "#include <cstddef>", "",
             f"namespace {ns} {{", "using uaplex::enc::BinaryReader;", "using uaplex::enc::BinaryWriter;", ""]
        for s in chunk:
            # decode
            v_ = "v" if s.fields or s.kind != "Structure" else ""
            w_ = "w" if s.fields or s.kind != "Structure" else ""
            c.append(f"void decode(BinaryReader& r, {s.name}& {v_}) noexcept {{")
            c.append("    if (!r.enter()) return;")
            if s.kind == "StructureWithOptionalFields":
                c.append("    decode(r, v.encodingMask);")
            if s.kind == "Union":
                c.append("    decode(r, v.switchField);")
                c.append("    switch (v.switchField) {")
                c.append("        case 0: break;")
                for f in s.fields:
                    if f.switch_value:
                        c.append(f"        case {f.switch_value}: decode(r, v.{f.name}); break;")
                c.append("        default: r.fail(UAPLEX_BadDecodingError); break;")
                c.append("    }")
            else:
                for f in s.fields:
                    if f.opt_bit >= 0:
                        c.append(f"    if (v.encodingMask & (1u << {f.opt_bit})) decode(r, v.{f.name});")
                    else:
                        c.append(f"    decode(r, v.{f.name});")
            c.append("    r.leave();")
            c.append("}")
            # encode
            c.append(f"void encode(BinaryWriter& {w_}, const {s.name}& {v_}) noexcept {{")
            if s.kind == "StructureWithOptionalFields":
                c.append("    encode(w, v.encodingMask);")
            if s.kind == "Union":
                c.append("    encode(w, v.switchField);")
                c.append("    switch (v.switchField) {")
                for f in s.fields:
                    if f.switch_value:
                        c.append(f"        case {f.switch_value}: encode(w, v.{f.name}); break;")
                c.append("        case 0: break;")
                c.append("        default: w.fail(UAPLEX_BadEncodingError); break;")
                c.append("    }")
            else:
                for f in s.fields:
                    if f.opt_bit >= 0:
                        c.append(f"    if (v.encodingMask & (1u << {f.opt_bit})) encode(w, v.{f.name});")
                    else:
                        c.append(f"    encode(w, v.{f.name});")
            c.append("}")
        c += ["", "namespace detail {", "using namespace uaplex::enc;"]
        for s in chunk:
            if not s.fields:
                continue
            c.append(f"extern const FieldDescriptor kFields_{s.name}[{len(s.fields)}];")
            c.append(f"const FieldDescriptor kFields_{s.name}[{len(s.fields)}] = {{")
            for f in s.fields:
                tp = f"&kDataTypes[{index[f.type_name]}]" if f.type_name in index and f.type_name not in BUILTINS else "nullptr"
                c.append(f'    {{"{f.name}", offsetof({s.name}, {f.name}), {field_kind(f.type_name)}, '
                         f'{"true" if f.is_array else "false"}, {f.opt_bit}, {f.switch_value}, {tp}}},')
            c.append("};")
        c += ["}  // namespace detail", f"}}  // namespace {ns}", ""]
        write_if_changed(gen_src / f"{module}_{k}.cpp", "\n".join(c))

    # ---- registry ----
    c = [banner, f"#include {header}", "",
         "#include <cstddef>", "#include <cstdint>", "",
         f"namespace {ns}::detail {{", "using namespace uaplex::enc;", "",
         "template <class T>",
         "void decodeThunk(BinaryReader& r, void* p) noexcept { decode(r, *static_cast<T*>(p)); }",
         "template <class T>",
         "void encodeThunk(BinaryWriter& w, const void* p) noexcept { encode(w, *static_cast<const T*>(p)); }",
         ""]
    for s in ordered:
        if s.fields:
            c.append(f"extern const FieldDescriptor kFields_{s.name}[{len(s.fields)}];")
    for n in enum_names:
        e = enum_map[n]
        if e[1]:
            c.append(f"const EnumValue kEnum_{n}[] = {{" +
                     ", ".join(f'{{"{vn}", {vv}}}' for vn, vv in e[1]) + "};")
    c.append("")
    c.append("const DataType kDataTypes[kDataTypeCount] = {")
    rows = []
    for i, n in enumerate(BUILTIN_ORDER):
        t = BUILTINS[n][0]
        rows.append((n, id_by_name.get(n, 0), 0))
        c.append(f'    {{"{n}", {id_by_name.get(n, 0)}, 0, sizeof({t}), alignof({t}), TypeKind::BuiltIn, '
                 f'{i + 1}, {BUILTIN_MIN[n]}, 0, nullptr, 0, nullptr, 0, &decodeThunk<{t}>, &encodeThunk<{t}>}},')
    for n in enum_names:
        e = enum_map[n]
        vals = f"kEnum_{n}, {len(e[1])}" if e[1] else "nullptr, 0"
        rows.append((n, id_by_name.get(n, 0), 0))
        c.append(f'    {{"{n}", {id_by_name.get(n, 0)}, 0, sizeof({n}), alignof({n}), TypeKind::Enumeration, '
                 f'{enum_width(e)}, {enum_width(e)}, 0, nullptr, 0, {vals}, &decodeThunk<{n}>, &encodeThunk<{n}>}},')
    for s in ordered:
        enc_id = id_by_name.get(s.name + "_Encoding_DefaultBinary", 0)
        rows.append((s.name, id_by_name.get(s.name, 0), enc_id))
        fields = f"kFields_{s.name}, {len(s.fields)}" if s.fields else "nullptr, 0"
        sel = {"StructureWithOptionalFields": f"offsetof({s.name}, encodingMask)",
               "Union": f"offsetof({s.name}, switchField)"}.get(s.kind, "0")
        c.append(f'    {{"{s.name}", {id_by_name.get(s.name, 0)}, {enc_id}, sizeof({s.name}), alignof({s.name}), '
                 f'TypeKind::{s.kind}, 0, {min_of(s.name)}, {sel}, {fields}, nullptr, 0, '
                 f'&decodeThunk<{s.name}>, &encodeThunk<{s.name}>, '
                 f'{id_by_name.get(s.name + "_Encoding_DefaultJson", 0)}}},')
    c.append("};")
    by_name = sorted(range(total), key=lambda i: rows[i][0])
    by_type = sorted((i for i in range(total) if rows[i][1]), key=lambda i: rows[i][1])
    by_enc = sorted((i for i in range(total) if rows[i][2]), key=lambda i: rows[i][2])
    for label, lst in (("ByName", by_name), ("ByTypeId", by_type), ("ByEncodingId", by_enc)):
        c.append(f"extern const std::uint16_t kIndex{label}[{len(lst)}];")
        c.append(f"const std::uint16_t kIndex{label}[{len(lst)}] = {{" + ", ".join(map(str, lst)) + "};")
        c.append(f"extern const std::size_t kIndex{label}Count;")
        c.append(f"const std::size_t kIndex{label}Count = {len(lst)};")
    c += [f"}}  // namespace {ns}::detail", ""]
    write_if_changed(gen_src / f"{module}_registry.cpp", "\n".join(c))
    return 0


def write_if_changed(path: Path, text: str) -> None:
    # Keeps timestamps of unchanged outputs so dependants do not rebuild needlessly.
    if path.exists() and path.read_text() == text:
        return
    path.write_text(text)


if __name__ == "__main__":
    sys.exit(main())
