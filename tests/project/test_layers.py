"""The layers of kb_indexer and what each may import (docs/design.md, "Layout"), read with ``ast`` from every module,
imports inside functions and ``TYPE_CHECKING`` blocks included (a deferred import is still a dependency).

    shared     kb_indexer/*.py (errors, limits, text, config, tokens, notices, ...) and results/: only each other
    store      store/: shared; only store/ imports the engines (store/engines/)
    llm        llm/ (model adapters: backends, options, cache, schema): shared, store
    features   index, search, learn, skills, context, enrich, embed: shared, store, llm, and each other
               with no cycle between packages; never api.py or a front end
    api        api.py, doctor.py and model_server.py: anything below
    front ends cli, mcp, chat: shared; api.py and the sub-API modules it hands out (<feature>/api.py);
               ``llm.config`` (the LLM options a user gives). chat (a conversation with a model) and
               cli/llm.py (``kbindex llm``) use the llm adapters too. cli starts mcp and chat. Never store
               or a feature's other modules.

Front ends never use the index's connection (``kb.conn``) either. No module imports another in a cycle.
Every import inside a function says why it is deferred with a ``# lazy: <reason>`` comment on its line or
the line above (start-up time, an optional dependency), and there are at most ``MAX_LAZY`` of them
(issue 28: half of the 223 there were).
"""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "kb_indexer"

STORE, LLM, API = "kb_indexer.store", "kb_indexer.llm", "kb_indexer.api"
FEATURES = ("index", "search", "learn", "skills", "context", "enrich", "embed")
#: the API layer: the facade and ``doctor`` (a check of the whole installation, beside it)
API_MODULES = (API, "kb_indexer.doctor", "kb_indexer.model_server")
#: shared packages (the typed results are shapes only, importable from anywhere)
SHARED_PACKAGES = ("results",)
FRONT_ENDS = ("cli", "mcp", "chat")
#: front-end modules that hold an LLM conversation or manage LLMs: they may use the llm adapters
LLM_USERS = ("kb_indexer.chat", "kb_indexer.cli.llm")
LLM_OPTIONS = "kb_indexer.llm.config"
MAX_LAZY = 111
LAZY = re.compile(r"#\s*lazy:\s*\S")


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
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


def _targets(module: str, node: ast.AST, is_package: bool, known: set[str]) -> set[str]:
    """The kb_indexer modules one import statement loads."""
    if isinstance(node, ast.Import):
        names = [alias.name for alias in node.names]
    elif isinstance(node, ast.ImportFrom):
        target = _resolve(module, node, is_package)
        # "from pkg import sub" imports the submodule pkg.sub when it exists, else a name of pkg
        names = [f"{target}.{a.name}" if f"{target}.{a.name}" in known else target for a in node.names]
    else:
        return set()
    out = set()
    for name in names:
        while name and name not in known:      # "import a.b.c" of a name inside a module
            name = name.rpartition(".")[0]
        if name.startswith("kb_indexer") and name != module:
            out.add(name)
    return out


def _imports(module: str, path: Path, known: set[str]) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    return {t for node in ast.walk(tree) for t in _targets(module, node, path.name == "__init__.py", known)}


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    return {name: _imports(name, path, set(modules)) for name, path in modules.items()}


def _package(module: str) -> str:
    """``kb_indexer.store.x`` -> ``store``; a top-level module (shared, api) -> its own name."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def _is_shared(module: str) -> bool:
    parts = module.split(".")
    if len(parts) > 1 and parts[1] in SHARED_PACKAGES:
        return True
    return module == "kb_indexer" or (len(parts) == 2 and not (PACKAGE / parts[1]).is_dir()
                                      and module not in (*API_MODULES, "kb_indexer.__main__"))


def _layer(module: str) -> str:
    if _is_shared(module):
        return "shared"
    if module in API_MODULES:
        return "api"
    package = _package(module)
    if package in ("store", "llm"):
        return package
    if package in FEATURES:
        return "feature"
    if package in FRONT_ENDS or module == "kb_indexer.__main__":
        return "front end"
    raise AssertionError(f"{module} is in no layer: add its package to {__file__} and to the Layout in docs/design.md")


def _in(module: str, prefix: str) -> bool:
    return module == prefix or module.startswith(prefix + ".")


def _front_end_may_import(src: str, dst: str) -> bool:
    if _is_shared(dst) or dst in API_MODULES or _package(dst) == _package(src) and _layer(dst) == "front end":
        return True
    if _layer(dst) == "feature" and dst.endswith(".api") and dst.count(".") == 2:
        return True                                   # a sub-API module (kb.skills, kb.context, ...)
    if dst == LLM_OPTIONS or (_in(dst, LLM) and any(_in(src, user) for user in LLM_USERS)):
        return True
    return (_in(src, "kb_indexer.cli") or src == "kb_indexer.__main__") and _layer(dst) == "front end"


ALLOWED = {
    "shared": lambda src, dst: _is_shared(dst),
    "store": lambda src, dst: _layer(dst) in ("shared", "store"),
    "llm": lambda src, dst: _layer(dst) in ("shared", "store", "llm"),
    "feature": lambda src, dst: _layer(dst) in ("shared", "store", "llm", "feature"),
    "api": lambda src, dst: _layer(dst) != "front end",
    "front end": _front_end_may_import,
}


def _violations() -> list[str]:
    return sorted(f"{src} ({_layer(src)}) -> {dst} ({_layer(dst)})" for src, targets in _graph().items()
                  for dst in targets if not ALLOWED[_layer(src)](src, dst))


def _components(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one node (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

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
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(found)


def _lazy_imports() -> list[tuple[str, int, bool]]:
    """(file, line, has a ``# lazy:`` reason) of every import inside a function."""
    out = []
    for path in sorted(PACKAGE.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        lines = text.splitlines()
        for fn in ast.walk(ast.parse(text, filename=str(path))):
            if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for node in ast.walk(fn):
                if isinstance(node, (ast.Import, ast.ImportFrom)):
                    near = lines[node.lineno - 2: (node.end_lineno or node.lineno)] if node.lineno > 1 else lines[:1]
                    out.append((str(path.relative_to(PACKAGE.parent)), node.lineno,
                                any(LAZY.search(line) for line in near)))
    return sorted(set(out))


# -- the checker checks what it claims ---------------------------------------------------------------------
def test_the_import_parser_sees_function_level_and_relative_imports(tmp_path):
    pkg = tmp_path / "kb_indexer" / "sub"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    src = pkg / "mod.py"
    src.write_text("import os\nfrom . import other\n\ndef f():\n    from kb_indexer.errors import KbError\n"
                   "    import kb_indexer.sub.other.thing\n")
    known = {"kb_indexer.sub", "kb_indexer.sub.mod", "kb_indexer.sub.other", "kb_indexer.errors"}
    assert _imports("kb_indexer.sub.mod", src, known) == {"kb_indexer.sub.other", "kb_indexer.errors"}


def test_the_rules_place_modules_as_the_readme_says():
    assert _layer("kb_indexer.errors") == _layer("kb_indexer.limits") == _layer("kb_indexer") == "shared"
    assert (_layer("kb_indexer.store.meta"), _layer("kb_indexer.llm.base"), _layer(API)) == ("store", "llm", "api")
    assert _layer("kb_indexer.search.query") == _layer("kb_indexer.skills.api") == "feature"
    assert _layer("kb_indexer.mcp.server") == _layer("kb_indexer.__main__") == "front end"
    may = _front_end_may_import
    assert may("kb_indexer.mcp.server", API) and may("kb_indexer.mcp.server", "kb_indexer.skills.api")
    assert may("kb_indexer.mcp.server", "kb_indexer.mcp.paging") and may("kb_indexer.cli.mcp", "kb_indexer.mcp.server")
    assert may("kb_indexer.chat.engine", "kb_indexer.llm.base") and may("kb_indexer.cli.query", LLM_OPTIONS)
    assert not may("kb_indexer.mcp.server", "kb_indexer.store.documents")
    assert not may("kb_indexer.chat.tools", "kb_indexer.search.markdown")
    assert not may("kb_indexer.cli.query", "kb_indexer.llm.base")
    assert not may("kb_indexer.mcp.server", "kb_indexer.chat.engine")
    assert not ALLOWED["llm"]("kb_indexer.llm.x", "kb_indexer.search.query")
    assert not ALLOWED["store"]("kb_indexer.store.x", "kb_indexer.llm.base")
    assert not ALLOWED["feature"]("kb_indexer.search.x", API)
    assert not ALLOWED["shared"]("kb_indexer.limits", "kb_indexer.store.meta")


def test_the_lazy_check_reads_reasons_on_the_line_or_above(tmp_path, monkeypatch):
    pkg = tmp_path / "kb_indexer"
    pkg.mkdir()
    (pkg / "m.py").write_text("import os\n\ndef f():\n    import json  # lazy: start-up\n    # lazy: optional\n"
                              "    import yaml\n    import re\n", encoding="utf-8")
    monkeypatch.setattr(sys.modules[__name__], "PACKAGE", pkg)
    assert _lazy_imports() == [("kb_indexer/m.py", 4, True), ("kb_indexer/m.py", 6, True),
                               ("kb_indexer/m.py", 7, False)]


# -- the rules ---------------------------------------------------------------------------------------------
def test_every_module_is_in_a_layer():
    modules = _modules()
    assert len(modules) > 30 and "kb_indexer.search.query" in modules
    assert {_layer(m) for m in modules} == set(ALLOWED)


def test_every_import_follows_the_layer_rules():
    assert _violations() == []


ENGINES = "kb_indexer.store.engines"


def _engine_imports() -> list[str]:
    """Imports of the engines (``store/engines/``) from outside ``store/``."""
    return sorted(f"{src} -> {dst}" for src, targets in _graph().items() for dst in targets
                  if _in(dst, ENGINES) and not _in(src, STORE))


def test_only_the_store_imports_the_engines():
    assert _engine_imports() == []


def test_no_import_cycles_between_modules():
    assert _components(_graph()) == []


def test_no_import_cycles_between_feature_packages():
    packages: dict[str, set[str]] = {}
    for src, targets in _graph().items():
        if _layer(src) == "feature":
            packages.setdefault(_package(src), set()).update(
                _package(t) for t in targets if _layer(t) == "feature" and _package(t) != _package(src))
    assert _components(packages) == []


def _connection_uses() -> list[str]:
    """Front-end lines that reach the index's SQLite connection (``kb.conn``) past the API."""
    out = []
    for name, path in _modules().items():
        if _layer(name) == "front end":
            tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
            out += [f"{name}:{node.lineno}" for node in ast.walk(tree)
                    if isinstance(node, ast.Attribute) and node.attr == "conn"]
    return sorted(set(out))


def test_front_ends_never_reach_the_connection_past_the_api():
    assert _connection_uses() == []


def test_every_import_inside_a_function_gives_its_reason():
    assert [f"{f}:{n}" for f, n, reason in _lazy_imports() if not reason] == []


def test_imports_inside_functions_are_at_most_half_of_issue_28s():
    assert len(_lazy_imports()) <= MAX_LAZY
