#!/usr/bin/env python3
"""Fails when a file under src/ includes a header from a layer it may not depend on.

The rows of STYLE.md §2's table as written, plus three folders of the command line's own that
the engine library (what an app embeds) never includes: `convert/` (importers and make-model:
GGUF writing on top of the tokenizer and model layers), `workload/` (the benchmark workloads
built from real texts) and `tools/` (the reuse, speed and accuracy benchmarks, the inspector's
report, bench serve's recall oracle: measurement built on the public API, include/reprise/,
and nothing of the engine's sources); and `api/`, the C API over the engine's public C++ API. `model` also reads `kernels/` (the packed weight formats it loads
into), which STYLE.md reaches through `graph`. Includes are rooted at src/, so
`#include "gguf/gguf_file.h"` names the gguf layer.
"""
import pathlib
import re
import sys

ALLOWED = {
    "base": set(),
    "kernels": {"base"},
    "gguf": {"base"},
    "kv": {"base"},
    "graph": {"base", "kernels"},
    "model": {"base", "gguf", "kernels", "graph"},
    "tokenizer": {"base", "gguf"},
    "store": {"base", "kv"},
    "reuse": {"base", "kv"},
    "convert": {"base", "gguf", "kernels", "tokenizer", "model"},
    "workload": {"base"},
    "engine": {"base", "gguf", "kernels", "graph", "model", "tokenizer", "kv", "store", "reuse"},
    # The public API (include/reprise/, not a folder of src/) and, of the layers, only base,
    # the workloads and reuse's recall oracle (a pure function of token ids).
    "tools": {"base", "workload", "reuse"},
    "api": {"engine", "base"},
    "server": {"engine", "base"},
    "cli": {"engine", "server", "base", "tools", "convert", "workload"},
}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([a-z_]+)/')


def main() -> int:
    root = pathlib.Path(__file__).resolve().parent.parent / "src"
    errors = []
    for path in sorted(root.rglob("*")):
        if path.suffix not in (".h", ".cc"):
            continue
        layer = path.relative_to(root).parts[0]
        if layer not in ALLOWED:
            errors.append(f"{path}: folder '{layer}' is not in the layer table")
            continue
        allowed = ALLOWED[layer] | {layer}
        for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            match = INCLUDE.match(line)
            if not match:
                continue
            target = match.group(1)
            if target in ALLOWED and target not in allowed and not path.name.endswith("_test.cc"):
                errors.append(f"{path}:{number}: layer '{layer}' may not include '{target}/'")
    for error in errors:
        print(error, file=sys.stderr)
    if errors:
        return 1
    print("check_layers: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
