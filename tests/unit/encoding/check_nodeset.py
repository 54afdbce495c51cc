#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Checks the generated structure descriptors against Opc.Ua.NodeSet2.xml.

The generator reads Opc.Ua.Types.bsd; the NodeSet2 DataTypeDefinitions are an independent
description of the same structures (own fields only, inheritance through HasSubtype), so
agreement on field order, names, types and array-ness checks the generator's flattening,
NoOfX folding and type mapping.

usage: check_nodeset.py Opc.Ua.NodeSet2.xml DUMP_EXECUTABLE
"""
import subprocess
import sys
import xml.etree.ElementTree as ET

NS = "{http://opcfoundation.org/UA/2011/03/UANodeSet.xsd}"
STRUCTURE, BASE_DATA_TYPE, ENUMERATION = 22, 24, 29


def node_num(s):
    return int(s.split("i=")[1]) if s and "i=" in s and "ns=" not in s else None


def main() -> int:
    root = ET.parse(sys.argv[1]).getroot()
    aliases = {a.get("Alias"): a.text for a in root.iter(NS + "Alias")}
    parent, browse, by_name, definition = {}, {}, {}, {}
    for dt in root.iter(NS + "UADataType"):
        i = node_num(dt.get("NodeId"))
        if i is None:
            continue
        browse[i] = dt.get("BrowseName")
        by_name[dt.get("BrowseName")] = i
        for ref in dt.iter(NS + "Reference"):
            if ref.get("ReferenceType") == "HasSubtype" and ref.get("IsForward") == "false":
                parent[i] = node_num(ref.text)
        d = dt.find(NS + "Definition")
        if d is not None:
            definition[i] = d

    def resolve(t):
        """The built-in id a DataType is encoded as."""
        seen = set()
        while t is not None and t not in seen:
            seen.add(t)
            if t == ENUMERATION:
                return 6  # Int32
            if t <= 25:
                return BASE_DATA_TYPE if t in (BASE_DATA_TYPE,) else t
            if t in (26, 27, 28):  # Number, Integer, UInteger: abstract, carried as Variant
                return BASE_DATA_TYPE
            t = parent.get(t)
        return None

    def all_fields(i):
        chain = []
        while i is not None and i != STRUCTURE and i != 12756:  # Structure, Union
            chain.append(i)
            i = parent.get(i)
        fields = []
        for t in reversed(chain):
            d = definition.get(t)
            if d is not None:
                fields += d.findall(NS + "Field")
        return fields

    dump = subprocess.run([sys.argv[2]], capture_output=True, text=True, check=True).stdout
    ours, enums = {}, {}
    for line in dump.splitlines():
        if line.startswith("= "):
            _, ename, width, vname, value = line.split()
            enums.setdefault(ename, []).append((vname, int(value)))
            continue
        tname, kind, fname, fkind, ftype, arr, opt = line.split()
        ours.setdefault(tname, [])
        if fname != "-":
            ours[tname].append((fname, int(fkind), ftype, arr == "1", int(opt)))

    errors, checked = [], 0
    for tname, fields in ours.items():
        i = by_name.get(tname)
        if i is None or i not in definition:
            continue  # abstract bases without a definition in the NodeSet
        expected = all_fields(i)
        if len(expected) != len(fields):
            errors.append(f"{tname}: {len(fields)} fields, NodeSet2 has {len(expected)}")
            continue
        for (fname, fkind, ftype, arr, opt), e in zip(fields, expected):
            ename = e.get("Name")
            if fname.rstrip("_").lower() != ename.lower():
                errors.append(f"{tname}.{fname}: NodeSet2 names it {ename}")
            e_arr = int(e.get("ValueRank", "-1")) >= 1
            if arr != e_arr:
                errors.append(f"{tname}.{fname}: array {arr}, NodeSet2 ValueRank {e.get('ValueRank')}")
            if (e.get("IsOptional") == "true") != (opt >= 0):
                errors.append(f"{tname}.{fname}: optional mismatch")
            dt_ref = e.get("DataType", "i=24")  # BaseDataType when absent
            t = node_num(aliases.get(dt_ref, dt_ref))
            if t is not None and browse.get(t) == ftype:
                continue  # same named structure or enumeration
            want = resolve(t)
            got = fkind if fkind <= 25 else None
            if fkind == 31 and want == STRUCTURE:
                got = STRUCTURE  # a structure where the NodeSet allows subtypes
            if fkind == 30:  # an option set enumeration stored as its integer
                got = want if browse.get(t) == ftype else 6
            if got != want and not (got == 22 and want == STRUCTURE):
                errors.append(f"{tname}.{fname}: kind {fkind}/{ftype}, NodeSet2 {browse.get(t)} -> {want}")
        checked += 1
    enum_checked = 0
    for ename, values in enums.items():
        i = by_name.get(ename)
        if i is None or i not in definition:
            errors.append(f"{ename}: no enumeration definition in the NodeSet")
            continue
        expected = [(f.get("Name"), int(f.get("Value", "0"))) for f in definition[i].findall(NS + "Field")]
        if parent.get(i) != ENUMERATION:
            # An option set: the NodeSet numbers the bits, the BSD lists the masks (and None).
            expected = [(n, 1 << v) for n, v in expected]
            values = [(n, v) for n, v in values if not (n == "None_" and v == 0)]
        if sorted(v for _, v in values) != sorted(v for _, v in expected) or \
                {n.rstrip("_") for n, _ in values} != {n for n, _ in expected}:
            errors.append(f"{ename}: values {values} differ from NodeSet {expected}")
        enum_checked += 1
    for e in errors:
        print(e)
    print(f"checked {enum_checked} enumerations")
    print(f"checked {checked} structures against {sys.argv[1].rsplit('/', 1)[-1]}, {len(errors)} mismatches")
    return 1 if errors or checked < 250 else 0


if __name__ == "__main__":
    sys.exit(main())
