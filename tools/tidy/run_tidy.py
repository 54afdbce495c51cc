#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Runs clang-tidy (the checks of .clang-tidy) on the kernel and plugin sources of a build.

The files come from the build's compile_commands.json, so moved or added sources are
picked up without a list here. Exits 1 on any warning (each printed once, even when a
header is reached from several sources), 2 when clang-tidy is missing.
"""
import argparse
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor

DIAG = re.compile(r"^(.+?):(\d+):(\d+): (warning|error): (.*)$")
# GCC options clang does not know (uaplex_plugin() builds with -fno-gnu-unique): dropped from
# the copy of the compile commands clang-tidy reads, or it refuses the whole source.
GCC_ONLY = {"-fno-gnu-unique"}


def clang_commands(entries, out_dir):
    """The compile commands without GCC_ONLY options, written to out_dir."""
    for e in entries:
        if "arguments" in e:
            e["arguments"] = [a for a in e["arguments"] if a not in GCC_ONLY]
        else:
            e["command"] = shlex.join(a for a in shlex.split(e["command"]) if a not in GCC_ONLY)
    with open(os.path.join(out_dir, "compile_commands.json"), "w") as f:
        json.dump(entries, f)


def sources(entries, root, folders):
    picked = set()
    for e in entries:
        path = os.path.realpath(os.path.join(e["directory"], e["file"]))
        rel = os.path.relpath(path, root)
        if rel.split(os.sep, 1)[0] in folders:
            picked.add(path)
    return sorted(picked)


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--build", required=True, help="build folder with compile_commands.json")
    ap.add_argument("--root", default=os.path.realpath(os.path.join(here, "..", "..")))
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--clang-tidy", default="clang-tidy-14")
    ap.add_argument("--folders", default="kernel,plugins", help="top-level folders to check")
    ap.add_argument("files", nargs="*", help="only these sources (default: all of --folders)")
    args = ap.parse_args()

    tidy = shutil.which(args.clang_tidy)
    if tidy is None:
        print(f"{args.clang_tidy} not found: install it (tools/bootstrap/bootstrap.sh)")
        return 2
    root = os.path.realpath(args.root)
    with open(os.path.join(args.build, "compile_commands.json")) as f:
        entries = json.load(f)
    files = [os.path.realpath(f) for f in args.files] or sources(
        entries, root, set(args.folders.split(",")))
    if not files:
        print("no sources found in compile_commands.json")
        return 2

    commands = tempfile.TemporaryDirectory(prefix="uaplex-tidy-")
    clang_commands(entries, commands.name)

    def run(path):
        started = time.monotonic()
        p = subprocess.run([tidy, "-p", commands.name, "--quiet", path],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        return path, p.returncode, p.stdout, time.monotonic() - started

    started = time.monotonic()
    seen, findings, failed, slowest = set(), [], [], []
    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        for path, rc, out, took in pool.map(run, files):
            slowest.append((took, os.path.relpath(path, root)))
            lines = out.splitlines()
            for i, line in enumerate(lines):
                m = DIAG.match(line)
                if not m:
                    continue
                key = (os.path.realpath(m.group(1)), m.group(2), m.group(3), m.group(5))
                if key in seen:
                    continue
                seen.add(key)
                # The diagnostic with its source line and caret.
                findings.append("\n".join(lines[i:i + 3]))
            if rc != 0 and not any(DIAG.match(l) for l in lines):
                failed.append(f"{os.path.relpath(path, root)}: clang-tidy exited {rc}\n{out}")

    for f in findings:
        print(f)
    for f in failed:
        print(f)
    slowest.sort(reverse=True)
    print(f"tidy: {len(files)} sources, {len(findings)} findings, "
          f"{time.monotonic() - started:.0f} s with {args.jobs} jobs; slowest: " +
          ", ".join(f"{n} {t:.0f} s" for t, n in slowest[:3]))
    return 1 if findings or failed else 0


if __name__ == "__main__":
    sys.exit(main())
