#!/usr/bin/python3
"""The one-way dependencies of daqx, checked on the tree and the build (README.md, "executive/").

Fails (exit 1, each finding on a line) when:
- a module of the build (MODULE_DIR/*.so) needs a daqx library other than libdaqx_api, libdaqx_mempool and
  libdaqx_services (readelf -d): a module sees only the API, as one built out of tree does;
- a file in executive/ includes a header of a layer above its own (runtime < control < program and tools);
- files in executive/ include each other, directly or round a longer cycle (a header and its source count as one).

Usage: dependency_check.py SOURCE_DIR MODULE_DIR
"""

import os
import re
import subprocess
import sys

MODULE_LIBRARIES = {"libdaqx_api", "libdaqx_mempool", "libdaqx_services"}

# Layers of executive/, lowest first; a file may include its own layer's headers and those below.
LAYERS = [("executive/runtime/", 0, "runtime"), ("executive/control/", 1, "control"),
          ("executive/program/", 2, "program"), ("executive/tools/", 2, "tools")]
# Where quoted includes are looked for besides the including file's folder (the targets' include directories).
INCLUDE_ROOTS = ["executive/runtime/include", "executive/control/include", "executive/tools/console",
                 "executive/tools/launch"]
SOURCE_SUFFIXES = (".cpp", ".hpp", ".h", ".cc")
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.MULTILINE)


def module_findings(module_dir):
    findings = []
    modules = sorted(f for f in os.listdir(module_dir) if f.endswith(".so")) if os.path.isdir(module_dir) else []
    if not modules:
        return [f"{module_dir}: no module (*.so) to check: build the modules first"]
    for name in modules:
        path = os.path.join(module_dir, name)
        dynamic = subprocess.run(["readelf", "-d", path], capture_output=True, text=True, check=True).stdout
        for needed in re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", dynamic):
            library = needed.split(".so")[0]
            if library.startswith("libdaqx_") and library not in MODULE_LIBRARIES:
                findings.append(f"{path}: needs {needed}; a module may need only "
                                f"{', '.join(sorted(MODULE_LIBRARIES))}")
    return findings


def layer_of(relative):
    for prefix, rank, name in LAYERS:
        if relative.startswith(prefix):
            return rank, name
    return None


def executive_files(source_dir):
    files = []
    for root, _, names in os.walk(os.path.join(source_dir, "executive")):
        files += [os.path.relpath(os.path.join(root, n), source_dir) for n in names if n.endswith(SOURCE_SUFFIXES)]
    return sorted(files)


def resolve(source_dir, including, target):
    """The file of executive/ an include names (relative to SOURCE_DIR), or None for one from elsewhere."""
    for base in [os.path.dirname(including)] + INCLUDE_ROOTS:
        candidate = os.path.normpath(os.path.join(base, target))
        if os.path.isfile(os.path.join(source_dir, candidate)):
            return candidate
    return None


def include_graph(source_dir):
    graph = {}
    for relative in executive_files(source_dir):
        with open(os.path.join(source_dir, relative), encoding="utf-8") as text:
            targets = INCLUDE.findall(text.read())
        graph[relative] = [found for t in targets if (found := resolve(source_dir, relative, t)) is not None]
    return graph


def layer_findings(graph):
    findings = []
    for including, included in graph.items():
        mine = layer_of(including)
        for target in included:
            theirs = layer_of(target)
            if mine and theirs and theirs[0] > mine[0]:
                findings.append(f"{including}: includes {target}, of {theirs[1]}, a layer above {mine[1]}")
    return findings


def unit(path):
    return os.path.splitext(path)[0]


def cycle_findings(graph):
    """Strongly connected components of more than one unit (Tarjan), each as a cycle of files."""
    edges = {}
    for including, included in graph.items():
        edges.setdefault(unit(including), set()).update(unit(t) for t in included if unit(t) != unit(including))
    index, low, stack, on_stack, components = {}, {}, [], set(), []

    def visit(node):
        # Iterative, so that a deep include chain cannot reach Python's recursion limit.
        work = [(node, iter(sorted(edges.get(node, ()))))]
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        while work:
            current, successors = work[-1]
            advanced = False
            for successor in successors:
                if successor not in index:
                    index[successor] = low[successor] = len(index)
                    stack.append(successor)
                    on_stack.add(successor)
                    work.append((successor, iter(sorted(edges.get(successor, ())))))
                    advanced = True
                    break
                if successor in on_stack:
                    low[current] = min(low[current], index[successor])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[current])
            if low[current] == index[current]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == current:
                        break
                if len(component) > 1:
                    components.append(sorted(component))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return [f"include cycle: {' <-> '.join(component)} (a header and its source count as one)"
            for component in components]


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    source_dir, module_dir = sys.argv[1], sys.argv[2]
    if not os.path.isdir(os.path.join(source_dir, "executive")):
        sys.exit(f"{source_dir}: no executive/ folder here")
    graph = include_graph(source_dir)
    findings = module_findings(module_dir) + layer_findings(graph) + cycle_findings(graph)
    for finding in findings:
        print(finding)
    print(f"checked {len(graph)} files of executive/ and the modules of {module_dir}: "
          f"{len(findings)} finding{'' if len(findings) == 1 else 's'}")
    sys.exit(1 if findings else 0)


if __name__ == "__main__":
    main()
