"""The import graph of the project's own modules has no cycle.

Every import statement counts, module-level and inside functions alike (so an
import moved into a function to dodge a cycle still fails here); only imports
under `if TYPE_CHECKING:` are left out, since they never run. `from pkg import
name` counts as an import of pkg.name when that is a module, else of pkg itself.
"""
import ast
import os

from tests.conftest import REPO_ROOT

PACKAGES = ("sampler", "unigraph", "pipelines")


def project_modules() -> dict[str, str]:
    """Dotted module name -> file, for every .py file of the project's packages."""
    modules = {}
    for package in PACKAGES:
        for folder, _, files in os.walk(os.path.join(REPO_ROOT, package)):
            for name in files:
                if name.endswith(".py"):
                    path = os.path.join(folder, name)
                    dotted = os.path.relpath(path, REPO_ROOT)[:-3].replace(os.sep, ".")
                    modules[dotted.removesuffix(".__init__")] = path
    return modules


def _runtime_nodes(tree: ast.AST):
    """Every node except those under `if TYPE_CHECKING:`."""
    stack = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.If) and getattr(node.test, "id", None) == "TYPE_CHECKING":
            stack.extend(node.orelse)
            continue
        yield node
        stack.extend(ast.iter_child_nodes(node))


def imports_of(module: str, path: str, modules: dict[str, str]) -> set[str]:
    def known(name: str):
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name or None

    package = module if path.endswith("__init__.py") else module.rpartition(".")[0]
    found = set()
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read(), path)
    for node in _runtime_nodes(tree):
        if isinstance(node, ast.Import):
            found.update(filter(None, (known(alias.name) for alias in node.names)))
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package
                for _ in range(node.level - 1):
                    parent = parent.rpartition(".")[0]
                base = f"{parent}.{base}" if base else parent
            for alias in node.names:
                full = f"{base}.{alias.name}"
                target = full if full in modules else known(base)
                if target:
                    found.add(target)
    found.discard(module)
    return found


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle as a path [a, b, ..., a], or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node):
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return path[path.index(nxt):] + [nxt]
            if nxt not in state:
                cycle = visit(nxt)
                if cycle:
                    return cycle
        path.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state:
            cycle = visit(node)
            if cycle:
                return cycle
    return None


def test_no_import_cycles():
    modules = project_modules()
    graph = {m: imports_of(m, p, modules) for m, p in modules.items()}
    cycle = find_cycle(graph)
    assert cycle is None, "import cycle: " + " -> ".join(cycle)


def test_the_checker_finds_a_function_level_cycle(tmp_path):
    (tmp_path / "a.py").write_text("import b\n")
    (tmp_path / "b.py").write_text("def f():\n    from a import x\n")
    (tmp_path / "c.py").write_text("from typing import TYPE_CHECKING\n"
                                   "if TYPE_CHECKING:\n    import a\n")
    modules = {name: str(tmp_path / f"{name}.py") for name in ("a", "b", "c")}
    graph = {m: imports_of(m, p, modules) for m, p in modules.items()}
    assert graph == {"a": {"b"}, "b": {"a"}, "c": set()}
    assert find_cycle(graph) == ["a", "b", "a"]


# Packages in the order data flows; a module may import from its own package or
# an earlier one, never a later one (docs/architecture.md, "The flow" and
# "unigraph's packages").
LAYERS = [
    # sampler.numpy_cpu imports nothing of the project: `import sampler` runs it first.
    ("unigraph.errors", "unigraph.interrupts", "unigraph.protos", "sampler.numpy_cpu"),
    ("unigraph.columnar",),
    ("unigraph.storage",),
    ("unigraph.encoding",),
    ("unigraph.store_manifest",),
    ("unigraph.schema", "unigraph.timestamps"),
    ("unigraph.tables",),
    ("unigraph.beam",),
    # Graphs of other kinds brought into the unigraph, and a unigraph's checks.
    ("unigraph.importers", "unigraph.check"),
    ("sampler.graph_tensor",),
    ("sampler.plan",),
    ("sampler.core",),
    ("sampler.output",),
    ("sampler.job",),
    ("sampler.store",),
    ("sampler.features",),
    ("sampler.beam", "sampler.memory"),
    ("sampler.minibatch",),
    ("sampler.run", "sampler.api"),
    ("sampler.training", "sampler.torch", "sampler.dgl"),
    # The commands, then the benchmarks that run them, then the maintainers' tools.
    ("pipelines",),
    ("pipelines.bench",),
    ("pipelines.tools",),
]


TOP_PACKAGES = ("sampler", "unigraph")


def layer_of(module: str) -> int:
    """The layer of the longest package that holds the module (pipelines.bench.x is in
    pipelines.bench's layer, not pipelines')."""
    holders = [(len(p), index) for index, packages in enumerate(LAYERS) for p in packages
               if module == p or module.startswith(p + ".")]
    if not holders:
        raise AssertionError(f"{module}: in no layer of tests/test_imports.py; add its package")
    return max(holders)[1]


def test_packages_import_only_earlier_layers():
    modules = project_modules()
    wrong = []
    for module, path in sorted(modules.items()):
        if module in TOP_PACKAGES:
            continue  # a top package's docstring only
        for imported in sorted(imports_of(module, path, modules)):
            if imported not in TOP_PACKAGES and layer_of(imported) > layer_of(module):
                wrong.append(f"{module} imports {imported}")
    assert not wrong, "; ".join(wrong)
