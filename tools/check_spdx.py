#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Fails when a tracked source file of the project has no SPDX license line near its top.

Data that is not the project's (schema/, the frozen SDK copies, fuzz corpora) is exempt."""
import os
import subprocess
import sys

TAG = "SPDX-License-Identifier: Apache-2.0"
EXEMPT = ("schema/", "tests/abi/frozen/", "tests/fuzz/corpus/", "tests/unit/encoding/schema/")
SOURCE_EXT = {".c", ".h", ".cpp", ".hpp", ".inc", ".js", ".py", ".sh", ".cmake", ".toml", ".in"}


def tracked(root):
    try:
        out = subprocess.run(["git", "-C", root, "ls-files"], capture_output=True, text=True,
                             check=True).stdout
        return out.split()
    except (OSError, subprocess.CalledProcessError):
        files = []
        for d, dirs, names in os.walk(root):
            dirs[:] = [x for x in dirs if x not in (".git", "build", "node_modules")]
            files += [os.path.relpath(os.path.join(d, n), root) for n in names]
        return files


def missing(root):
    """The tracked sources under root without TAG in their first 400 characters."""
    found = []
    for f in tracked(root):
        if f.startswith(EXEMPT) or "node_modules" in f:
            continue
        base = os.path.basename(f)
        if os.path.splitext(f)[1] not in SOURCE_EXT and base not in ("CMakeLists.txt",
                                                                         "Makefile"):
            continue
        path = os.path.join(root, f)
        if os.path.islink(path) or not os.path.isfile(path):
            continue
        with open(path, encoding="utf-8", errors="replace") as fh:
            head = fh.read(400)
        if TAG not in head:
            found.append(f)
    return found


def self_test():
    """A scratch tree (not a git checkout): the untagged source is reported, the tagged one
    and a file that is not a source are not."""
    import tempfile
    with tempfile.TemporaryDirectory() as d:
        with open(os.path.join(d, "tagged.cpp"), "w") as f:
            f.write("// " + TAG + "\nint a;\n")
        with open(os.path.join(d, "untagged.cpp"), "w") as f:
            f.write("int b;\n")
        with open(os.path.join(d, "notes.txt"), "w") as f:
            f.write("no tag\n")
        found = missing(d)
        print(f"self-test: reported {found}")
        return 0 if found == ["untagged.cpp"] else 1


def main():
    if sys.argv[1:] == ["--self-test"]:
        return self_test()
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..")
    found = missing(root)
    for f in found:
        print(f"{f}: no '{TAG}' line in its first lines")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
