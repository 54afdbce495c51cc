#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Checks that the current SDK headers are binary compatible with a frozen release.

  abi_compat.py --cc CC --old DIR [--new DIR ...]

Every struct and enum of DIR/uaplex/*.h (the frozen release) is compared with the headers
found on the --new include path:
  - a program printing sizeof, offsetof of every field and the value of every enumerator
    is compiled against both; a field at another offset, a smaller struct, a changed
    enumerator value, or a field/struct/enumerator that is gone (the program does not
    compile) is a break;
  - each field's declaration (type and, for function-table entries, the signature) must be
    unchanged, whitespace and comments aside.
Appending fields, entries, structs and enumerators passes. Exit 0 compatible, 1 break,
2 usage or tool error.
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile


def strip_comments(text):
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    return re.sub(r"//[^\n]*", " ", text)


def matching_brace(text, open_at):
    depth = 0
    for i in range(open_at, len(text)):
        if text[i] == "{":
            depth += 1
        elif text[i] == "}":
            depth -= 1
            if depth == 0:
                return i
    raise ValueError("unbalanced braces")


def split_top(body, sep):
    parts, depth, cur = [], 0, []
    for ch in body:
        if ch in "({[":
            depth += 1
        elif ch in ")}]":
            depth -= 1
        if ch == sep and depth == 0:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    parts.append("".join(cur))
    return [p.strip() for p in parts if p.strip()]


def norm(s):
    return re.sub(r"\s+", " ", s).strip()


def field_name(decl):
    m = re.search(r"\(\s*\*\s*(\w+)\s*\)", decl)
    if m:
        return m.group(1)
    decl = re.sub(r"\[[^\]]*\]\s*$", "", decl.strip())
    m = re.search(r"(\w+)\s*$", decl)
    return m.group(1) if m else None


def parse(headers):
    """-> structs {c_name: [(field, decl)]}, enumerators [name]"""
    structs, enumerators = {}, []
    for path in headers:
        text = strip_comments(open(path, encoding="utf-8").read())
        text = re.sub(r"^\s*#.*$", " ", text, flags=re.M)
        for m in re.finditer(r"\b(typedef\s+)?(struct|enum)\s+(\w+)?\s*\{", text):
            kind, tag = m.group(2), m.group(3)
            close = matching_brace(text, m.end() - 1)
            body = text[m.end():close]
            if kind == "enum":
                for item in split_top(body, ","):
                    enumerators.append(item.split("=")[0].strip())
                continue
            after = re.match(r"\s*(\w+)?", text[close + 1:]).group(1)
            if tag:
                c_name = "struct " + tag
            elif m.group(1) and after:
                c_name = after
            else:
                continue  # anonymous nested struct: covered by its enclosing field
            # A nested definition inside another struct's body is reached by the outer scan
            # too; only top-level ones (typedef or tagged) are compared.
            fields = []
            for decl in split_top(body, ";"):
                decl = norm(decl)
                name = field_name(decl)
                if name:
                    fields.append((name, decl))
            structs.setdefault(c_name, fields)
    return structs, enumerators


def probe_program(headers, structs, enumerators):
    lines = ["#include <stddef.h>", "#include <stdio.h>"]
    lines += ['#include "uaplex/%s"' % os.path.basename(h) for h in headers]
    lines.append("int main(void) {")
    for c_name, fields in sorted(structs.items()):
        lines.append('  printf("S %s %%zu\\n", sizeof(%s));' % (c_name, c_name))
        for name, _ in fields:
            lines.append('  printf("F %s.%s %%zu\\n", offsetof(%s, %s));'
                         % (c_name, name, c_name, name))
    for e in enumerators:
        lines.append('  printf("E %s %%lld\\n", (long long)(%s));' % (e, e))
    lines.append("  return 0;\n}")
    return "\n".join(lines) + "\n"


def run_probe(cc, includes, source, work, tag):
    src = os.path.join(work, tag + ".c")
    exe = os.path.join(work, tag)
    with open(src, "w") as f:
        f.write(source)
    cmd = [cc, "-std=c11", "-w", "-o", exe, src] + ["-I" + i for i in includes]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        return None, r.stderr
    out = subprocess.run([exe], capture_output=True, text=True, check=True).stdout
    values = {}
    for line in out.splitlines():
        kind, key, val = line.split(" ", 2)[0], line.rsplit(" ", 1)[0][2:], line.rsplit(" ", 1)[1]
        values[(kind, key)] = int(val)
    return values, ""


def headers_in(include_dirs, names):
    found = []
    for n in names:
        for d in include_dirs:
            p = os.path.join(d, "uaplex", n)
            if os.path.exists(p):
                found.append(p)
                break
    return found


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cc", default="cc")
    ap.add_argument("--old", required=True, help="include dir of the frozen release")
    ap.add_argument("--new", action="append", required=True, help="current include dirs")
    a = ap.parse_args()

    old_headers = sorted(
        os.path.join(a.old, "uaplex", n) for n in os.listdir(os.path.join(a.old, "uaplex"))
        if n.endswith(".h") and n != "statuscodes.h")
    if not old_headers:
        print("abi_compat: no headers under %s/uaplex" % a.old)
        return 2
    structs, enumerators = parse(old_headers)
    names = [os.path.basename(h) for h in old_headers]
    new_headers = headers_in(a.new, names)
    problems = []
    if len(new_headers) != len(old_headers):
        have = {os.path.basename(h) for h in new_headers}
        problems += ["header removed: uaplex/%s" % n for n in names if n not in have]
    new_structs, _ = parse(new_headers)

    source = probe_program(old_headers, structs, enumerators)
    with tempfile.TemporaryDirectory() as work:
        old_vals, err = run_probe(a.cc, [a.old], source, work, "old")
        if old_vals is None:
            print("abi_compat: the frozen headers do not compile:\n" + err)
            return 2
        new_vals, err = run_probe(a.cc, a.new, source, work, "new")
    if new_vals is None:
        problems.append("a frozen struct field, struct or enumerator is gone:\n" + err.strip())
    else:
        for (kind, key), old in sorted(old_vals.items()):
            new = new_vals.get((kind, key))
            if kind == "S" and new < old:
                problems.append("%s shrank from %d to %d bytes" % (key, old, new))
            elif kind == "F" and new != old:
                problems.append("%s moved from offset %d to %d" % (key, old, new))
            elif kind == "E" and new != old:
                problems.append("enumerator %s changed from %d to %d" % (key, old, new))
    for c_name, fields in sorted(structs.items()):
        now = dict(new_structs.get(c_name, []))
        for name, decl in fields:
            if name in now and now[name] != decl:
                problems.append("%s.%s changed its declaration:\n  was: %s\n  now: %s"
                                % (c_name, name, decl, now[name]))
    if problems:
        print("abi_compat: INCOMPATIBLE with %s" % a.old)
        for p in problems:
            print("  - " + p)
        return 1
    print("abi_compat: compatible (%d structs, %d fields, %d enumerators checked)"
          % (len(structs), sum(len(f) for f in structs.values()), len(enumerators)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
