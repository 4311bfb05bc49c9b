"""Layering: lower layers never import higher ones, and no two modules import each other in a cycle.

Imports are read with ``ast`` from every module of kb_indexer, including imports inside functions and
``TYPE_CHECKING`` blocks (a deferred import is still a dependency). Layers, lowest first:

    errors/limits/text/config/tokens  <  store  <  llm  <  index  <  search  <  embed/learn
    <  skills/context/enrich/doctor  <  api  <  chat/mcp  <  cli

(chat and mcp are front ends over the Python API, like the CLI.)

(llm holds adapters only -- backends, registry, cache, schema and structured output, settings -- so every
feature may use it; it uses store only for its cache.)
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "kb_indexer"

LAYERS: list[tuple[str, ...]] = [
    ("kb_indexer", "kb_indexer.errors", "kb_indexer.limits", "kb_indexer.text", "kb_indexer.config",
     "kb_indexer.tokens"),
    ("kb_indexer.store",),
    ("kb_indexer.llm",),
    ("kb_indexer.index",),
    ("kb_indexer.search",),
    ("kb_indexer.embed", "kb_indexer.learn"),
    ("kb_indexer.skills", "kb_indexer.context", "kb_indexer.enrich", "kb_indexer.doctor"),
    ("kb_indexer.api",),
    ("kb_indexer.chat", "kb_indexer.mcp"),
    ("kb_indexer.cli", "kb_indexer.__main__"),
]

# Known violations on main, each being removed right now by the named engineer. The test EXPECTS each of
# these to still be present (strict): when a fix lands the test fails until its entry is deleted here, so
# this list can only shrink. The integrator empties it at merge.
KNOWN_UPWARD: dict[tuple[str, str], str] = {
}
KNOWN_CYCLES: dict[frozenset[str], str] = {
}


def _module_name(path: Path) -> str:
    rel = path.relative_to(PACKAGE.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def _resolve(module: str, node: ast.ImportFrom, is_package: bool) -> str:
    if not node.level:
        return node.module or ""
    base = module.split(".") if is_package else module.split(".")[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _imports(module: str, path: Path, known: set[str]) -> set[str]:
    """Modules of kb_indexer that ``module`` imports anywhere in its source."""
    found: set[str] = set()
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            target = _resolve(module, node, path.name == "__init__.py")
            # "from pkg import sub" imports the submodule pkg.sub when it exists, else a name of pkg
            names = [f"{target}.{a.name}" if f"{target}.{a.name}" in known else target for a in node.names]
        else:
            continue
        for name in names:
            while name and name not in known:      # "import a.b.c" of a name inside a module
                name = name.rpartition(".")[0]
            if name.startswith("kb_indexer") and name != module:
                found.add(name)
    return found


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    return {name: _imports(name, path, set(modules)) for name, path in modules.items()}


def _layer(module: str) -> int:
    best, rank = -1, None
    for i, prefixes in enumerate(LAYERS):
        for prefix in prefixes:
            if (module == prefix or module.startswith(prefix + ".")) and len(prefix) > best:
                best, rank = len(prefix), i
    assert rank is not None, f"{module} is in no layer: add it to LAYERS in {__file__}"
    return rank


def _upward_edges() -> set[tuple[str, str]]:
    return {(src, dst) for src, targets in _graph().items() for dst in targets if _layer(dst) > _layer(src)}


def _cycles() -> list[frozenset[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    graph = _graph()
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[frozenset[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = set()
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.add(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(frozenset(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_the_import_parser_sees_function_level_and_relative_imports(tmp_path):
    pkg = tmp_path / "kb_indexer" / "sub"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    src = pkg / "mod.py"
    src.write_text("import os\nfrom . import other\n\ndef f():\n    from kb_indexer.errors import KbError\n"
                   "    import kb_indexer.sub.other.thing\n")
    known = {"kb_indexer.sub", "kb_indexer.sub.mod", "kb_indexer.sub.other", "kb_indexer.errors"}
    assert _imports("kb_indexer.sub.mod", src, known) == {"kb_indexer.sub.other", "kb_indexer.errors"}


def test_every_module_is_in_a_layer():
    modules = _modules()
    assert len(modules) > 30 and "kb_indexer.search.query" in modules
    assert all(0 <= _layer(m) < len(LAYERS) for m in modules)


def test_lower_layers_never_import_higher_ones():
    upward = _upward_edges()
    unexpected = sorted(upward - set(KNOWN_UPWARD))
    assert unexpected == [], "upward imports (lower layer imports a higher one): " + ", ".join(
        f"{a} -> {b}" for a, b in unexpected)


@pytest.mark.parametrize("edge", sorted(KNOWN_UPWARD), ids=lambda e: f"{e[0]}->{e[1]}")
def test_known_upward_import_is_still_listed_only_while_present(edge):
    """Strict expectation: once the owner's fix lands, delete the entry from KNOWN_UPWARD."""
    assert edge in _upward_edges(), f"{edge} is fixed ({KNOWN_UPWARD[edge]}): remove it from KNOWN_UPWARD"


def test_search_does_not_import_learn_and_store_does_not_import_index():
    bad = {(a, b) for a, targets in _graph().items() for b in targets
           if (a.startswith("kb_indexer.search") and b.startswith("kb_indexer.learn"))
           or (a.startswith("kb_indexer.store") and b.startswith("kb_indexer.index"))}
    assert bad - set(KNOWN_UPWARD) == set()


def _known_cycle(component: frozenset[str]) -> bool:
    return any(component <= known for known in KNOWN_CYCLES)


def test_no_import_cycles_between_modules():
    cycles = [sorted(c) for c in _cycles() if not _known_cycle(c)]
    assert cycles == [], f"import cycles: {cycles}"


@pytest.mark.parametrize("cycle", sorted(KNOWN_CYCLES, key=sorted), ids=lambda c: "+".join(sorted(c)))
def test_known_cycle_is_still_listed_only_while_present(cycle):
    """Strict expectation: once the owner's fix lands, delete the entry from KNOWN_CYCLES."""
    assert any(c <= cycle for c in _cycles()), f"cycle {sorted(cycle)} is gone: remove it from KNOWN_CYCLES"
