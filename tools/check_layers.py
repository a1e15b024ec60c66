#!/usr/bin/env python3
"""Fails when a file under src/ includes a header from a layer it may not depend on.

The layer table is docs/design.md's §11. Three of its folders are the command line's own, never
included by the engine library (what an app embeds): `convert/` (importers and make-model: GGUF
writing on top of the tokenizer and model layers), `workload/` (the benchmark workloads built
from real texts) and `tools/` (the reuse, speed and accuracy benchmarks, the inspector's report,
bench serve's recall oracle: measurement built on the public API, include/reprise/, and nothing
of the engine's sources); `api/` is the C API over the engine's public C++ API. Includes are
rooted at src/, so `#include "gguf/gguf_file.h"` names the gguf layer.
"""
import pathlib
import re
import sys

DESIGN = pathlib.Path(__file__).resolve().parent.parent / "docs" / "design.md"
ROW = re.compile(r"^\|\s*([a-z_]+)\s*\|[^|]*\|\s*([a-z_, ]+)\s*\|\s*$")


def read_layer_table(design: pathlib.Path) -> dict:
    """The "folder | what | may use" table under design.md's "## 11. Layout"."""
    allowed = {}
    in_layout = False
    for line in design.read_text().splitlines():
        if line.startswith("## "):
            in_layout = line.startswith("## 11. Layout")
            continue
        match = ROW.match(line) if in_layout else None
        if not match or match.group(1) == "folder":
            continue
        uses = {name.strip() for name in match.group(2).split(",")}
        allowed[match.group(1)] = set() if uses == {"std"} else uses
    return allowed


INCLUDE = re.compile(r'^\s*#\s*include\s+"([a-z_]+)/')


def main() -> int:
    root = pathlib.Path(__file__).resolve().parent.parent / "src"
    ALLOWED = read_layer_table(DESIGN)
    errors = []
    if len(ALLOWED) < 10:
        print(f"{DESIGN}: the layer table of §11 was not found", file=sys.stderr)
        return 1
    for layer, uses in sorted(ALLOWED.items()):
        for used in sorted(uses - set(ALLOWED)):
            errors.append(f"{DESIGN}: layer '{layer}' may use '{used}', which is not a layer")
    for folder in sorted(p.name for p in root.iterdir() if p.is_dir()):
        if folder not in ALLOWED:
            errors.append(f"{DESIGN}: folder src/{folder} is not in the layer table")
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
