#!/usr/bin/env python3
"""The stages' layering, as CMake declares it, holds in the sources and in the docs.

  layering_test.py LAYERS_TXT SRC_DIR ARCHITECTURE_MD

LAYERS_TXT (generated/layers.txt, written by CMakeLists.txt): "<folder>: <folders it links>" per
stage. Fails, listing every violation, when
  - a file of src/ includes a header of a folder its own folder does not depend on (directly or
    through the stages it depends on): an include that climbs a layer or crosses to a sibling;
  - a folder of src/ with sources is no stage;
  - docs/ARCHITECTURE.md's "Layers" block differs from what CMake declares.
"""
import pathlib
import re
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.MULTILINE)


def parse_layers(text):
    layers = {}
    for line in text.splitlines():
        line = line.strip()
        if not line:
            continue
        folder, _, deps = line.partition(":")
        layers[folder.strip()] = sorted(deps.split())
    return layers


def reachable(layers, folder):
    seen, todo = set(), [folder]
    while todo:
        for dep in layers.get(todo.pop(), []):
            if dep not in seen:
                seen.add(dep)
                todo.append(dep)
    return seen


def documented_layers(markdown):
    match = re.search(r"^## Layers\n.*?^```\n(.*?)^```", markdown, re.MULTILINE | re.DOTALL)
    return parse_layers(match.group(1)) if match else None


def main():
    layers_file, src, doc = (pathlib.Path(arg) for arg in sys.argv[1:4])
    layers = parse_layers(layers_file.read_text())
    problems = []

    documented = documented_layers(doc.read_text())
    if documented is None:
        problems.append(f"{doc}: no '## Layers' section with a ``` block")
    elif documented != layers:
        for folder in sorted(set(documented) | set(layers)):
            if documented.get(folder) != layers.get(folder):
                problems.append(f"{doc}: Layers says {folder}: {documented.get(folder)}, "
                                f"CMakeLists.txt {layers.get(folder)}")

    for path in sorted(src.rglob("*")):
        if path.suffix not in (".h", ".cpp", ".c", ".in") or not path.is_file():
            continue
        folder = path.parent.relative_to(src).as_posix()
        if folder not in layers:
            problems.append(f"{path}: folder {folder} is no stage of CMakeLists.txt")
            continue
        allowed = reachable(layers, folder) | {folder}
        for include in INCLUDE.findall(path.read_text(errors="replace")):
            target = pathlib.PurePosixPath(include).parent.as_posix()
            if "/" not in include or not (src / target).is_dir():
                continue  # a file beside it, or a generated header
            if target not in allowed:
                problems.append(f"{path}: includes {include}, but {folder} does not depend on "
                                f"{target} (it depends on: {' '.join(sorted(allowed - {folder}))})")

    for problem in problems:
        print(problem)
    print(f"layering: {len(layers)} stages, {len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
