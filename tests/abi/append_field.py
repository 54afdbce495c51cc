#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""append_field.py SDK_INCLUDE OUT_INCLUDE: copies the SDK headers and appends one field to
every ops table, factory, params struct, descriptor, host API table and spec, as the next
minor version would. The plugin host built against the copy (abi_appended_host_test) sees
every plugin as built before that version."""
import pathlib
import re
import shutil
import sys

# Structs the host reads from plugins, or plugins read from the host, by their size.
VERSIONED = re.compile(r"uaplex_\w+_(ops|factory|params|descriptor|api|spec)$")


def append(text: str) -> tuple[str, int]:
    count = 0

    def grow(m: re.Match) -> str:
        nonlocal count
        if not VERSIONED.match(m.group(1)):
            return m.group(0)
        count += 1
        return m.group(0).replace(
            "\n} " + m.group(1) + ";",
            "\n    /* --- since the next minor version --- */\n"
            "    void* appended_for_test;\n} " + m.group(1) + ";")

    out = re.sub(r"typedef struct (\w+) \{\n    uaplex_header hdr;.*?\n\} \1;", grow, text,
                 flags=re.S)
    return out, count


def main() -> int:
    src, dst = pathlib.Path(sys.argv[1]) / "uaplex", pathlib.Path(sys.argv[2]) / "uaplex"
    shutil.rmtree(dst, ignore_errors=True)
    shutil.copytree(src, dst)
    total = 0
    for header in sorted(dst.glob("*.h")):
        text, n = append(header.read_text())
        header.write_text(text)
        total += n
    if total < 20:  # every kind's ops, factory and params, and more
        print(f"append_field: only {total} structs grown", file=sys.stderr)
        return 1
    (dst.parent / "appended.stamp").write_text(f"{total}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
