#!/usr/bin/env python3
"""Compiles the library's sources that lock a mutex with Clang's thread-safety analysis as
errors (docs/style.md §6): a member marked REPRISE_GUARDED_BY read or written without its
mutex, a REPRISE_REQUIRES function called without it, fails the check.

The GCC builds ignore the annotations, so this is where they are enforced. It reuses a
build folder's compile_commands.json (any compiler) and runs `clang++ -fsyntax-only` on
every non-test `.cc` under src/ that uses base/mutex.h, itself or through its own header.

Usage: tools/check_thread_safety.py BUILD_DIR [-j N]
"""
import argparse
import concurrent.futures
import json
import pathlib
import shlex
import shutil
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
# Flags of GCC's that Clang does not take, and -Werror: only the analysis fails the check
# (other warnings are the GCC builds' to judge).
DROPPED = ("-Wno-restrict", "-Werror")


def uses_mutex(source: pathlib.Path) -> bool:
    header = source.with_suffix(".h")
    texts = [source.read_text(errors="replace")]
    if header.exists():
        texts.append(header.read_text(errors="replace"))
    return any("Mutex" in text for text in texts)


def clang_command(entry: dict) -> list:
    args = shlex.split(entry["command"]) if "command" in entry else list(entry["arguments"])
    out = ["clang++"]
    skip = False
    for arg in args[1:]:
        if skip:
            skip = False
            continue
        if arg in ("-o", "-MF", "-MT", "-MQ"):
            skip = True
            continue
        if arg in ("-c", "-MD", "-MMD") or arg == entry["file"] or arg in DROPPED:
            continue
        out.append(arg)
    return out + ["-fsyntax-only", "-Wthread-safety", "-Werror=thread-safety-analysis",
                  "-Werror=thread-safety-attributes", "-Werror=thread-safety-reference",
                  "-Wno-unknown-warning-option", entry["file"]]


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("build_dir")
    parser.add_argument("-j", type=int, default=2)
    args = parser.parse_args()
    if shutil.which("clang++") is None:
        print("check_thread_safety: clang++ not found (scripts/install-deps.sh installs it)",
              file=sys.stderr)
        return 1
    database = pathlib.Path(args.build_dir) / "compile_commands.json"
    entries = []
    for entry in json.loads(database.read_text()):
        source = pathlib.Path(entry["file"]).resolve()
        if ROOT / "src" not in source.parents or source.name.endswith("_test.cc"):
            continue
        if uses_mutex(source):
            entries.append(entry)
    if not entries:
        print(f"check_thread_safety: no sources found in {database}", file=sys.stderr)
        return 1

    def check(entry: dict):
        result = subprocess.run(clang_command(entry), cwd=entry["directory"],
                                capture_output=True, text=True)
        return entry["file"], result.returncode, result.stderr

    failures = 0
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(args.j, 1)) as pool:
        for path, code, stderr in pool.map(check, entries):
            if code != 0:
                failures += 1
                print(stderr, file=sys.stderr)
    if failures:
        print(f"check_thread_safety: {failures} of {len(entries)} files fail", file=sys.stderr)
        return 1
    print(f"check_thread_safety: ok ({len(entries)} files)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
