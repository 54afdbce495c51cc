#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Generates the compact namespace-0 image from schema/Opc.Ua.NodeSet2.xml.

The image is a set of constant tables (nodes, references, a string pool and a blob of
OPC UA binary encoded values) that the kernel's address space indexes at start without
copying. References are emitted in both directions, so Browse can answer either way.
Attribute values (Value, DataTypeDefinition, RolePermissions) are stored as OPC UA
binary: a Variant for Value, an ExtensionObject for DataTypeDefinition and a Variant
array of ExtensionObjects for RolePermissions.

usage: gen_ns0.py Opc.Ua.NodeSet2.xml Opc.Ua.Types.bsd NodeIds.csv out.cpp
"""
import base64
import csv
import datetime
import struct
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

UANS = "{http://opcfoundation.org/UA/2011/03/UANodeSet.xsd}"
UAX = "{http://opcfoundation.org/UA/2008/02/Types.xsd}"
OPCBSD = "{http://opcfoundation.org/BinarySchema/}"

NODE_CLASS = {
    "UAObject": 1, "UAVariable": 2, "UAMethod": 4, "UAObjectType": 8,
    "UAVariableType": 16, "UAReferenceType": 32, "UADataType": 64, "UAView": 128,
}

# Flags of a node record; must match kernel/addressspace/include/uaplex/addressspace/ns0_image.h.
F_ABSTRACT, F_SYMMETRIC, F_EXECUTABLE, F_HISTORIZING, F_NOLOOPS = 1, 2, 4, 8, 16

# Built-in type ids (Part 6 5.1.2).
BUILTIN = {
    "Boolean": 1, "SByte": 2, "Byte": 3, "Int16": 4, "UInt16": 5, "Int32": 6, "UInt32": 7,
    "Int64": 8, "UInt64": 9, "Float": 10, "Double": 11, "String": 12, "DateTime": 13,
    "Guid": 14, "ByteString": 15, "XmlElement": 16, "NodeId": 17, "ExpandedNodeId": 18,
    "StatusCode": 19, "QualifiedName": 20, "LocalizedText": 21, "ExtensionObject": 22,
    "DataValue": 23, "Variant": 24, "DiagnosticInfo": 25,
}


class Encoder:
    """OPC UA binary encoder for the value shapes that appear in NodeSet2 files."""

    def __init__(self, bsd_types, encoding_ids, aliases):
        self.bsd = bsd_types
        self.encoding_ids = encoding_ids
        self.aliases = aliases

    # -- primitives ------------------------------------------------------------------
    @staticmethod
    def string(s):
        if s is None:
            return struct.pack("<i", -1)
        b = s.encode("utf-8")
        return struct.pack("<i", len(b)) + b

    @staticmethod
    def bytestring(b):
        if b is None:
            return struct.pack("<i", -1)
        return struct.pack("<i", len(b)) + b

    def parse_nodeid(self, text):
        text = (text or "").strip()
        text = self.aliases.get(text, text)
        ns = 0
        if text.startswith("ns="):
            head, text = text.split(";", 1)
            ns = int(head[3:])
        kind, ident = text[0], text[2:]
        return ns, kind, ident

    def nodeid(self, text):
        if text is None or text.strip() == "":
            return bytes([0, 0])
        ns, kind, ident = self.parse_nodeid(text)
        if kind == "i":
            v = int(ident)
            if ns == 0 and v <= 0xFF:
                return bytes([0, v])
            if ns <= 0xFF and v <= 0xFFFF:
                return struct.pack("<BBH", 1, ns, v)
            return struct.pack("<BHI", 2, ns, v)
        if kind == "s":
            return struct.pack("<BH", 3, ns) + self.string(ident)
        if kind == "g":
            return struct.pack("<BH", 4, ns) + self.guid(ident)
        if kind == "b":
            return struct.pack("<BH", 5, ns) + self.bytestring(base64.b64decode(ident))
        raise ValueError(f"bad NodeId {text!r}")

    @staticmethod
    def guid(text):
        t = text.strip().strip("{}")
        p = t.split("-")
        d4 = bytes.fromhex(p[3] + p[4])
        return struct.pack("<IHH", int(p[0], 16), int(p[1], 16), int(p[2], 16)) + d4

    @staticmethod
    def datetime(text):
        dt = datetime.datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
        epoch = datetime.datetime(1601, 1, 1, tzinfo=datetime.timezone.utc)
        delta = dt - epoch
        ticks = (delta.days * 86400 + delta.seconds) * 10_000_000 + delta.microseconds * 10
        return struct.pack("<q", ticks)

    def localized_text(self, elem):
        locale = text = None
        if elem is not None:
            le, te = find_local(elem, "Locale"), find_local(elem, "Text")
            locale = le.text or "" if le is not None and le.text else None
            text = te.text or "" if te is not None else None
        mask = (1 if locale else 0) | (2 if text is not None else 0)
        out = bytes([mask])
        if mask & 1:
            out += self.string(locale)
        if mask & 2:
            out += self.string(text)
        return out

    def qualified_name(self, elem):
        ns_e, name_e = find_local(elem, "NamespaceIndex"), find_local(elem, "Name")
        ns = int(ns_e.text) if ns_e is not None and ns_e.text else 0
        return struct.pack("<H", ns) + self.string(name_e.text if name_e is not None else None)

    def nodeid_elem(self, elem):
        ident = find_local(elem, "Identifier") if elem is not None else None
        return self.nodeid(ident.text if ident is not None else None)

    # -- scalar by type name, from an XML element --------------------------------------
    def scalar(self, type_name, elem):
        txt = (elem.text or "").strip() if elem is not None else ""
        if type_name == "Boolean":
            return struct.pack("<?", txt.lower() == "true")
        ints = {"SByte": "<b", "Byte": "<B", "Int16": "<h", "UInt16": "<H", "Int32": "<i",
                "UInt32": "<I", "Int64": "<q", "UInt64": "<Q", "StatusCode": "<I"}
        if type_name in ints:
            return struct.pack(ints[type_name], int(txt or "0", 0))
        if type_name == "Float":
            return struct.pack("<f", float(txt or "0"))
        if type_name == "Double":
            return struct.pack("<d", float(txt or "0"))
        if type_name == "String":
            return self.string(elem.text if elem is not None and elem.text is not None else
                               ("" if elem is not None and not is_nil(elem) else None))
        if type_name == "DateTime":
            return self.datetime(txt) if txt else struct.pack("<q", 0)
        if type_name == "Guid":
            s = find_local(elem, "String")
            return self.guid(s.text if s is not None else txt)
        if type_name == "ByteString":
            return self.bytestring(base64.b64decode("".join(txt.split())) if txt else None)
        if type_name == "NodeId":
            return self.nodeid_elem(elem)
        if type_name == "LocalizedText":
            return self.localized_text(elem)
        if type_name == "QualifiedName":
            return self.qualified_name(elem)
        if type_name == "ExtensionObject":
            return self.extension_object(elem)
        if type_name in self.bsd:
            return self.structure(type_name, elem)
        raise ValueError(f"unsupported scalar type {type_name}")

    def extension_object(self, elem):
        type_id = find_local(elem, "TypeId")
        body = find_local(elem, "Body")
        if body is None or len(body) == 0:
            return self.nodeid(None) + bytes([0])
        inner = body[0]
        name = local(inner.tag)
        enc_id = self.encoding_ids.get(name)
        if enc_id is None:
            raise ValueError(f"no binary encoding id for {name} (TypeId {ET.tostring(type_id)})")
        payload = self.structure(name, inner)
        return self.nodeid(f"i={enc_id}") + bytes([1]) + struct.pack("<i", len(payload)) + payload

    def structure(self, name, elem):
        fields = self.bsd[name]
        out = b""
        lengths = {f[2] for f in fields if f[2]}
        for fname, ftype, length_field in fields:
            if fname in lengths:
                continue  # emitted with its array
            child = find_local(elem, fname) if elem is not None else None
            if length_field:
                items = list(child) if child is not None else []
                out += struct.pack("<i", len(items) if child is not None else -1)
                for it in items:
                    out += self.scalar(ftype, it)
            elif ftype in self.enum_types:
                txt = (child.text or "0").strip() if child is not None else "0"
                out += struct.pack("<i", int(txt.rsplit("_", 1)[-1]))
            else:
                out += self.scalar(ftype, child)
        return out

    # -- Variant from a <Value> child -------------------------------------------------
    def variant(self, elem):
        tag = local(elem.tag)
        if tag.startswith("ListOf"):
            tname = tag[6:]
            items = list(elem)
            body = b"".join(self.scalar(tname, it) for it in items)
            return bytes([BUILTIN[tname] | 0x80]) + struct.pack("<i", len(items)) + body
        return bytes([BUILTIN[tag]]) + self.scalar(tag, elem)


def local(tag):
    return tag.split("}", 1)[1] if "}" in tag else tag


def find_local(elem, name):
    if elem is None:
        return None
    for c in elem:
        if local(c.tag) == name:
            return c
    return None


def is_nil(elem):
    return any(k.endswith("}nil") and v == "true" for k, v in elem.attrib.items())


def parse_bsd(path):
    """Structured types as name -> [(field, type, lengthField)], and enumerated names."""
    root = ET.parse(path).getroot()
    structs, enums = {}, set()
    for t in root:
        if local(t.tag) == "StructuredType":
            fields = []
            for f in t:
                if local(f.tag) != "Field":
                    continue
                fields.append((f.get("Name"), f.get("TypeName").split(":")[1], f.get("LengthField")))
            structs[t.get("Name")] = fields
        elif local(t.tag) == "EnumeratedType":
            enums.add(t.get("Name"))
    return structs, enums


class StringPool:
    def __init__(self):
        self.data = bytearray()
        self.index = {}

    def add(self, s):
        if s is None:
            return (0, 0xFFFFFFFF)  # null string
        b = s.encode("utf-8")
        if b not in self.index:
            self.index[b] = len(self.data)
            self.data += b
        return (self.index[b], len(b))


def c_bytes(data, per_line=24):
    lines = []
    for i in range(0, len(data), per_line):
        lines.append("    " + ",".join(str(x) for x in data[i:i + per_line]) + ",")
    return "\n".join(lines) if lines else "    0,"


def main():
    if len(sys.argv) != 5:
        print(__doc__, file=sys.stderr)
        return 2
    nodeset, bsd_path, nodeids_path, out = sys.argv[1:]
    root = ET.parse(nodeset).getroot()
    aliases = {a.get("Alias"): a.text.strip() for a in root.find(UANS + "Aliases")}
    structs, enums = parse_bsd(bsd_path)
    encoding_ids = {}
    with open(nodeids_path, newline="") as f:
        for row in csv.reader(f):
            if len(row) >= 2 and row[0].endswith("_Encoding_DefaultBinary"):
                encoding_ids[row[0][: -len("_Encoding_DefaultBinary")]] = int(row[1])
    enc = Encoder(structs, encoding_ids, aliases)
    enc.enum_types = enums

    def numeric(text):
        ns, kind, ident = enc.parse_nodeid(text)
        if ns != 0 or kind != "i":
            raise ValueError(f"namespace 0 image expects numeric ns=0 ids, got {text}")
        return int(ident)

    nodes = {}
    refs = {}  # node id -> ordered set of (refType, target, isForward)
    for elem in root:
        tag = local(elem.tag)
        if tag not in NODE_CLASS:
            continue
        nid = numeric(elem.get("NodeId"))
        nodes[nid] = elem
        refs.setdefault(nid, {})
    for nid, elem in nodes.items():
        r = find_local(elem, "References")
        for ref in (r if r is not None else []):
            rtype = numeric(ref.get("ReferenceType"))
            target = numeric(ref.text)
            forward = ref.get("IsForward", "true").lower() != "false"
            refs[nid][(rtype, target, forward)] = None
            if target in nodes:
                refs.setdefault(target, {})[(rtype, nid, not forward)] = None

    # Supertype chain, for DataTypeDefinition kinds and base types.
    HAS_SUBTYPE, HAS_ENCODING = 45, 38
    parent = {}
    for nid, rs in refs.items():
        for (rtype, target, forward) in rs:
            if rtype == HAS_SUBTYPE and not forward:
                parent[nid] = target

    def is_subtype(nid, ancestor):
        while nid is not None:
            if nid == ancestor:
                return True
            nid = parent.get(nid)
        return False

    strings = StringPool()
    blob = bytearray()

    def add_blob(b):
        if b is None:
            return (0, 0)
        off = len(blob)
        blob.extend(b)
        return (off, len(b))

    def definition(nid, elem):
        d = find_local(elem, "Definition")
        if d is None or is_subtype(nid, 29) is False and len(list(d)) == 0:
            return None
        fields = [f for f in d if local(f.tag) == "Field"]
        if is_subtype(nid, 29) or d.get("IsOptionSet") == "true":
            body = struct.pack("<i", len(fields))
            for f in fields:
                desc = find_local(f, "Description")
                dn = f.find(UANS + "DisplayName")
                body += struct.pack("<q", int(f.get("Value", "0")))
                body += enc.localized_text(dn) if dn is not None else enc.localized_text_plain(f.get("Name"))
                body += enc.localized_text(desc) if desc is not None else bytes([0])
                body += enc.string(f.get("Name"))
            enc_id = encoding_ids["EnumDefinition"]
        else:
            if not is_subtype(nid, 22):
                return None
            optional = any(f.get("IsOptional") == "true" for f in fields)
            subtyped = any(f.get("AllowSubTypes") == "true" for f in fields)
            if d.get("IsUnion") == "true":
                stype = 4 if subtyped else 2
            else:
                stype = 3 if subtyped else (1 if optional else 0)
            default_enc = None
            for (rtype, target, forward) in refs.get(nid, {}):
                if rtype == HAS_ENCODING and forward and target in nodes and \
                        nodes[target].get("BrowseName") == "Default Binary":
                    default_enc = target
            body = enc.nodeid(f"i={default_enc}" if default_enc else None)
            body += enc.nodeid(f"i={parent[nid]}" if nid in parent else None)
            body += struct.pack("<i", stype) + struct.pack("<i", len(fields))
            for f in fields:
                desc = find_local(f, "Description")
                body += enc.string(f.get("Name"))
                body += enc.localized_text(desc) if desc is not None else bytes([0])
                body += enc.nodeid(f.get("DataType", "i=24"))
                body += struct.pack("<i", int(f.get("ValueRank", "-1")))
                dims = [int(x) for x in f.get("ArrayDimensions", "").split(",") if x.strip()]
                body += struct.pack("<i", len(dims) if dims else -1)
                body += b"".join(struct.pack("<I", x) for x in dims)
                body += struct.pack("<I", int(f.get("MaxStringLength", "0")))
                body += struct.pack("<?", f.get("IsOptional") == "true")
            enc_id = encoding_ids["StructureDefinition"]
        return enc.nodeid(f"i={enc_id}") + bytes([1]) + struct.pack("<i", len(body)) + body

    def role_permissions(elem):
        rp = find_local(elem, "RolePermissions")
        if rp is None:
            return None
        items = [x for x in rp if local(x.tag) == "RolePermission"]
        out = bytes([BUILTIN["ExtensionObject"] | 0x80]) + struct.pack("<i", len(items))
        for it in items:
            body = enc.nodeid(it.text) + struct.pack("<I", int(it.get("Permissions", "0")))
            out += enc.nodeid(f"i={encoding_ids['RolePermissionType']}") + bytes([1])
            out += struct.pack("<i", len(body)) + body
        return out

    def text_of(elem, name):
        e = find_local(elem, name)
        return None if e is None else (e.text or "")

    node_rows, ref_rows = [], []
    for nid in sorted(nodes):
        elem = nodes[nid]
        cls = NODE_CLASS[local(elem.tag)]
        flags = 0
        if elem.get("IsAbstract") == "true":
            flags |= F_ABSTRACT
        if elem.get("Symmetric") == "true":
            flags |= F_SYMMETRIC
        if cls == 4 and elem.get("Executable", "true") != "false":
            flags |= F_EXECUTABLE
        if elem.get("Historizing") == "true":
            flags |= F_HISTORIZING
        if elem.get("ContainsNoLoops") == "true":
            flags |= F_NOLOOPS
        browse = elem.get("BrowseName")
        bns = 0
        if ":" in browse and browse.split(":", 1)[0].isdigit():
            bns, browse = int(browse.split(":", 1)[0]), browse.split(":", 1)[1]
        dn = text_of(elem, "DisplayName")
        value_elem = find_local(elem, "Value")
        value = enc.variant(value_elem[0]) if value_elem is not None and len(value_elem) else None
        data_type = numeric(elem.get("DataType", "i=24")) if cls in (2, 16) else 0
        dims = [int(x) for x in elem.get("ArrayDimensions", "").split(",") if x.strip()]
        dims_blob = struct.pack("<i", len(dims)) + b"".join(struct.pack("<I", x) for x in dims) \
            if dims else None
        first = len(ref_rows)
        for (rtype, target, forward) in refs[nid]:
            ref_rows.append((rtype, target, 1 if forward else 0))
        row = dict(
            id=nid, cls=cls, flags=flags,
            access=int(elem.get("AccessLevel", "1")) if cls == 2 else 0,
            notifier=int(elem.get("EventNotifier", "0")) if cls in (1, 128) else 0,
            rank=int(elem.get("ValueRank", "-1")) if cls in (2, 16) else 0,
            data_type=data_type,
            bns=bns, browse=strings.add(browse), display=strings.add(dn),
            desc=strings.add(text_of(elem, "Description")),
            inverse=strings.add(text_of(elem, "InverseName")) if cls == 32 else strings.add(None),
            first=first, count=len(ref_rows) - first,
            value=add_blob(value), dims=add_blob(dims_blob),
            definition=add_blob(definition(nid, elem) if cls == 64 else None),
            roles=add_blob(role_permissions(elem)),
            restrictions=int(elem.get("AccessRestrictions", "0")),
            min_sampling=float(elem.get("MinimumSamplingInterval", "0")),
        )
        node_rows.append(row)

    model = root.find(UANS + "Models")[0]
    lines = [
        "// Generated by tools/codegen/gen_ns0.py from schema/Opc.Ua.NodeSet2.xml. Do not edit.",
        '#include <uaplex/addressspace/ns0_image.h>',
        "",
        "namespace uaplex::addressspace::ns0 {",
        "namespace {",
        "constexpr char kStringData[] = {",
        c_bytes(strings.data) if strings.data else "    0,",
        "};",
        "constexpr unsigned char kBlobData[] = {",
        c_bytes(blob),
        "};",
        "constexpr NodeRecord kNodeData[] = {",
    ]

    def s(p):
        return f"{{{p[0]}u, {p[1]}u}}"

    for r in node_rows:
        lines.append(
            f"    {{{r['id']}u, {r['cls']}, {r['flags']}, {r['access']}, {r['notifier']}, {r['rank']}, "
            f"{r['data_type']}u, {r['bns']}, {s(r['browse'])}, {s(r['display'])}, {s(r['desc'])}, "
            f"{s(r['inverse'])}, {r['first']}u, {r['count']}u, {s(r['value'])}, {s(r['dims'])}, "
            f"{s(r['definition'])}, {s(r['roles'])}, {r['restrictions']}, {r['min_sampling']!r}}},")
    lines += ["};", "constexpr ReferenceRecord kReferenceData[] = {"]
    for (rtype, target, fwd) in ref_rows:
        lines.append(f"    {{{rtype}u, {target}u, {fwd}}},")
    lines += [
        "};",
        "}  // namespace",
        "",
        "const Image kImage = {",
        f"    kNodeData, {len(node_rows)}u, kReferenceData, {len(ref_rows)}u,",
        f"    kStringData, {len(strings.data)}u, kBlobData, {len(blob)}u,",
        f'    "{model.get("ModelUri")}", "{model.get("Version")}", "{model.get("PublicationDate")}",',
        "};",
        "}  // namespace uaplex::addressspace::ns0",
        "",
    ]
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    Path(out).write_text("\n".join(lines))
    print(f"ns0 image: {len(node_rows)} nodes, {len(ref_rows)} references, "
          f"{len(strings.data)} string bytes, {len(blob)} value bytes")
    return 0


def _localized_text_plain(self, text):
    return bytes([2]) + self.string(text) if text is not None else bytes([0])


Encoder.localized_text_plain = _localized_text_plain

if __name__ == "__main__":
    sys.exit(main())
