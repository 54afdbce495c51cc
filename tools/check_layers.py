#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The kernel's layers: every part may include and link only the parts below it.

Scans every #include in kernel/ and plugins/ and the link lines of kernel/*/CMakeLists.txt
and plugins/**/CMakeLists.txt. A kernel file may include its own part, a lower part and the
SDK; a plugin file may include the SDK, its own folder and plugin helper folders (folders
under plugins/ that build no plugin, such as plugins/queues/mi-common), never the kernel.

Usage: check_layers.py [--root DIR]   exit 1 and one line per violation
       check_layers.py --self-test    feeds violations in a scratch tree, expects each found
"""
import argparse
import re
import sys
import tempfile
from pathlib import Path

# Bottom to top; docs/architecture.md ("The kernel's layers") draws the same order.
LAYERS = [
    "encoding",
    "aggregates",
    "config",
    "host",
    "admin",
    "addressspace",
    "securechannel",
    "security",
    "session",
    "pipeline",
    "subscription",
    "conditions",
    "services",
    "server",
    "main",  # kernel/*.cpp: the executable
]
RANK = {part: i for i, part in enumerate(LAYERS)}
SOURCE_SUFFIXES = {".c", ".cc", ".cpp", ".h", ".hpp", ".inc"}
INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]', re.M)
LINK = re.compile(r"target_link_libraries\s*\(\s*(\S+)([^)]*)\)", re.S)
PLUGIN_CALL = re.compile(r"^\s*uaplex_plugin\s*\(", re.M)


def kernel_part_of(root, path):
    """The layer a file under kernel/ belongs to."""
    rel = path.relative_to(root / "kernel").parts
    return rel[0] if len(rel) > 1 else "main"


def included_part(root, path, quote, name):
    """The kernel part an include names, 'sdk', 'other' (outside kernel and sdk, but in
    the repository) or None (a system or third-party header)."""
    parts = Path(name).parts
    if parts and parts[0] == "uaplex" and len(parts) > 2 and parts[1] in RANK:
        return parts[1]
    if (root / "sdk" / "include" / name).is_file():
        return "sdk"
    if parts and parts[0] in RANK and parts[0] != "main" and (root / "kernel" / parts[0]).is_dir():
        return parts[0]  # the old "part/x.hpp" form
    if quote == '"':
        target = (path.parent / name).resolve()
        if target.is_file():
            try:
                rel = target.relative_to(root.resolve())
            except ValueError:
                return "other"
            if rel.parts[0] == "kernel":
                return kernel_part_of(root.resolve(), target)
            if rel.parts[0] == "sdk":
                return "sdk"
            return "other:" + str(rel)
    return None


def sources(folder):
    return sorted(p for p in folder.rglob("*") if p.suffix in SOURCE_SUFFIXES and p.is_file())


def check_kernel(root, errors):
    for path in sources(root / "kernel"):
        own = kernel_part_of(root, path)
        if own not in RANK:
            errors.append(f"{path.relative_to(root)}: kernel/{own} is not a known layer")
            continue
        text = path.read_text(errors="replace")
        for m in INCLUDE.finditer(text):
            line = text.count("\n", 0, m.start()) + 1
            target = included_part(root, path, m.group(1), m.group(2))
            where = f"{path.relative_to(root)}:{line}"
            if target is None or target == "sdk":
                continue
            if target == "other" or target.startswith("other:"):
                errors.append(f"{where}: the kernel includes {m.group(2)} from outside kernel/ and sdk/")
            elif target not in RANK:
                errors.append(f"{where}: {m.group(2)} is in no known layer")
            elif RANK[target] > RANK[own]:
                errors.append(f"{where}: {own} includes {m.group(2)} of the higher layer {target}")


def target_owner(root):
    """uaplex_* library target -> the kernel part whose CMakeLists.txt defines it."""
    owner = {}
    for cml in sorted((root / "kernel").glob("*/CMakeLists.txt")):
        for m in re.finditer(r"add_library\s*\(\s*(uaplex_\w+)", cml.read_text()):
            owner[m.group(1)] = cml.parent.name
    return owner


def check_kernel_links(root, errors):
    owner = target_owner(root)
    for cml in sorted((root / "kernel").glob("*/CMakeLists.txt")):
        text = cml.read_text()
        for m in LINK.finditer(text):
            src = owner.get(m.group(1))
            if src is None or src not in RANK:
                continue
            for dep in re.findall(r"\buaplex_\w+", m.group(2)):
                dst = owner.get(dep)
                if dst in RANK and RANK[dst] > RANK[src]:
                    line = text.count("\n", 0, m.start()) + 1
                    errors.append(f"{cml.relative_to(root)}:{line}: {m.group(1)} links {dep} "
                                  f"of the higher layer {dst}")


def plugin_folder(root, path):
    """The nearest folder holding the CMakeLists.txt that builds the file's plugin, or the
    file's own folder for helper folders."""
    for folder in path.parents:
        if folder == root / "plugins":
            break
        cml = folder / "CMakeLists.txt"
        if cml.is_file() and PLUGIN_CALL.search(cml.read_text()):
            return folder
    return path.parent


def is_helper_folder(root, folder):
    """A folder under plugins/ that builds no plugin: shared sources, held to the same rules."""
    cml = folder / "CMakeLists.txt"
    return not (cml.is_file() and PLUGIN_CALL.search(cml.read_text()))


def check_plugins(root, errors):
    plugins = root / "plugins"
    if not plugins.is_dir():
        return
    kernel_targets = set(target_owner(root))
    for path in sources(plugins):
        own = plugin_folder(root, path)
        text = path.read_text(errors="replace")
        for m in INCLUDE.finditer(text):
            line = text.count("\n", 0, m.start()) + 1
            where = f"{path.relative_to(root)}:{line}"
            name = m.group(2)
            target = included_part(root, path, m.group(1), name)
            if target in RANK:
                errors.append(f"{where}: a plugin includes the kernel's {name}")
                continue
            if target == "other":
                errors.append(f"{where}: a plugin includes {name} from outside the repository")
                continue
            if target is None or target == "sdk":
                # Not found next to the file: a helper folder on the plugin's include path,
                # a system header, or nothing in the repository.
                continue
            rel = Path(target[len("other:"):])
            resolved = root / rel
            inside = own in resolved.parents
            helper = (rel.parts[0] == "plugins" and is_helper_folder(root, resolved.parent))
            if not (inside or helper):
                errors.append(f"{where}: a plugin includes {rel}, outside sdk/ and its own folder")
    for cml in sorted(plugins.rglob("CMakeLists.txt")):
        text = cml.read_text()
        for m in re.finditer(r"\buaplex_\w+|\bkernel/", text):
            token = m.group(0)
            if token == "kernel/" or token in kernel_targets:
                line = text.count("\n", 0, m.start()) + 1
                errors.append(f"{cml.relative_to(root)}:{line}: a plugin's build names the "
                              f"kernel ({token})")


def check(root):
    errors = []
    check_kernel(root, errors)
    check_kernel_links(root, errors)
    check_plugins(root, errors)
    return errors


def self_test():
    """Each case is a scratch tree with one file added: a violation must be reported, and a
    lawful include must not."""
    base = {
        "sdk/include/uaplex/abi.h": "",
        "kernel/session/CMakeLists.txt": "add_library(uaplex_session STATIC src/a.cpp)\n",
        "kernel/session/include/uaplex/session/session_manager.hpp": "",
        "kernel/session/src/a.cpp": "#include <uaplex/session/session_manager.hpp>\n#include <uaplex/abi.h>\n",
        "kernel/server/CMakeLists.txt": "add_library(uaplex_server STATIC src/s.cpp)\n"
        "target_link_libraries(uaplex_server PUBLIC uaplex_session)\n",
        "kernel/server/include/uaplex/server/server.hpp": "",
        "kernel/server/src/s.cpp": "#include <uaplex/server/server.hpp>\n#include <uaplex/session/session_manager.hpp>\n",
        "plugins/queues/common/ring.hpp": "#include <uaplex/abi.h>\n",
        "plugins/queues/fifo/CMakeLists.txt": "uaplex_plugin(fifo SOURCES fifo.cpp)\n",
        "plugins/queues/fifo/fifo.cpp": '#include <uaplex/abi.h>\n#include "../common/ring.hpp"\n#include <vector>\n',
        "tests/helper.hpp": "",
    }
    cases = [
        ("lawful tree", {}, False),
        ("session includes a server header",
         {"kernel/session/src/b.cpp": "#include <uaplex/server/server.hpp>\n"}, True),
        ("session includes a server header the old way",
         {"kernel/session/src/b.cpp": '#include "server/server.hpp"\n'}, True),
        ("session climbs by a relative path",
         {"kernel/session/src/b.cpp": '#include "../../server/include/uaplex/server/server.hpp"\n'}, True),
        ("the kernel includes a test header",
         {"kernel/server/src/t.cpp": '#include "../../../tests/helper.hpp"\n'}, True),
        ("session links the server",
         {"kernel/session/CMakeLists.txt": "add_library(uaplex_session STATIC src/a.cpp)\n"
          "target_link_libraries(uaplex_session PUBLIC uaplex_server)\n"}, True),
        ("a plugin includes a kernel header",
         {"plugins/queues/fifo/k.cpp": "#include <uaplex/session/session_manager.hpp>\n"}, True),
        ("a plugin includes another plugin's file",
         {"plugins/queues/lifo/CMakeLists.txt": "uaplex_plugin(lifo SOURCES lifo.cpp)\n",
          "plugins/queues/lifo/lifo.hpp": "",
          "plugins/queues/fifo/k.cpp": '#include "../lifo/lifo.hpp"\n'}, True),
        ("a plugin includes a test header",
         {"plugins/queues/fifo/k.cpp": '#include "../../../tests/helper.hpp"\n'}, True),
        ("a plugin's build links the kernel",
         {"plugins/queues/fifo/CMakeLists.txt": "uaplex_plugin(fifo SOURCES fifo.cpp LIBS uaplex_session)\n"}, True),
        ("a plugin's build adds a kernel include path",
         {"plugins/queues/fifo/CMakeLists.txt": "uaplex_plugin(fifo SOURCES fifo.cpp)\n"
          "target_include_directories(fifo PRIVATE ${PROJECT_SOURCE_DIR}/kernel/session/include)\n"}, True),
    ]
    failed = 0
    for title, extra, expect_errors in cases:
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp)
            for rel, text in {**base, **extra}.items():
                (root / rel).parent.mkdir(parents=True, exist_ok=True)
                (root / rel).write_text(text)
            errors = check(root)
            ok = bool(errors) == expect_errors
            print(f"{'ok  ' if ok else 'FAIL'} {title}: {len(errors)} violation(s)")
            for e in errors:
                print(f"       {e}")
            failed += not ok
    return 1 if failed else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--root", type=Path, default=Path(__file__).resolve().parent.parent)
    ap.add_argument("--self-test", action="store_true")
    args = ap.parse_args()
    if args.self_test:
        return self_test()
    errors = check(args.root.resolve())
    for e in errors:
        print(e)
    if errors:
        print(f"{len(errors)} layer violation(s); the order, bottom to top: {' < '.join(LAYERS)}")
        return 1
    print(f"layers hold: {' < '.join(LAYERS)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
