"""kb_indexer.settings declares every ``KBINDEX_*`` variable once: the code reads none past it, each
declared default is the one the code uses when the variable is unset, and the documentation's table is
the declarations' (docs/configuration-and-security.md, "Environment variables")."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from kb_indexer import settings
from kb_indexer.settings import SETTINGS

REPO = Path(__file__).resolve().parents[2]
PACKAGE = REPO / "kb_indexer"
CONFIG_DOC = REPO / "docs" / "configuration-and-security.md"
BEGIN, END = "<!-- settings-table:", "<!-- settings-table: end -->"
#: a name as the code and the docs write it; a prefix such as ``KBINDEX_EMBED_*`` ends with "_"
NAME = re.compile(r"\bKBINDEX_[A-Z0-9_]+")
#: variables of the test suite and the benchmarks only (documented for contributors, never read by kb_indexer)
TEST_ONLY = {"KBINDEX_TEST_ENGINE", "KBINDEX_FAKE_EMBED", "KBINDEX_BENCH_DATA"}


def _names_in(text: str) -> set[str]:
    return {name for name in NAME.findall(text) if not name.endswith("_")}


def _documented_table() -> str:
    text = CONFIG_DOC.read_text(encoding="utf-8")
    start = text.index(BEGIN)
    start = text.index("\n", start) + 1
    return text[start:text.index(END, start)]


def test_the_documentation_table_is_the_declarations():
    assert _documented_table() == settings.markdown_table(), (
        f"{CONFIG_DOC.name}: replace the table between the settings-table comments with the output of "
        "python -c 'from kb_indexer.settings import markdown_table; print(markdown_table(), end=\"\")'")


def test_every_variable_the_docs_name_is_declared():
    docs = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
    named = {name: path.name for path in docs for name in _names_in(path.read_text(encoding="utf-8"))}
    assert {name: where for name, where in named.items() if name not in SETTINGS and name not in TEST_ONLY} == {}


def test_every_variable_the_code_names_is_declared():
    named = {name: str(path.relative_to(REPO)) for path in sorted(PACKAGE.rglob("*.py"))
             for name in _names_in(path.read_text(encoding="utf-8"))}
    assert {name: where for name, where in named.items() if name not in SETTINGS} == {}
    used = {name for path in sorted(PACKAGE.rglob("*.py")) if path.name != "settings.py"
            for name in _names_in(path.read_text(encoding="utf-8"))}
    assert set(SETTINGS) - used == set(), "declared, but no module uses it"


def _reads_past_settings(path: Path) -> list[str]:
    """``os.environ.get(X)``, ``os.getenv(X)``, ``os.environ[X]`` and ``X in os.environ`` of a ``KBINDEX_*`` name,
    given as a string or as a module-level constant holding one."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    constants = {target.id for node in tree.body if isinstance(node, ast.Assign)
                 and isinstance(node.value, ast.Constant) and str(node.value.value).startswith("KBINDEX_")
                 for target in node.targets if isinstance(target, ast.Name)}

    def kbindex(node: ast.AST) -> bool:
        return (isinstance(node, ast.Constant) and str(node.value).startswith("KBINDEX_")
                or isinstance(node, ast.Name) and node.id in constants)

    def environ(node: ast.AST) -> bool:
        return isinstance(node, ast.Attribute) and node.attr == "environ" or isinstance(node, ast.Name) \
            and node.id == "environ"

    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and node.args and kbindex(node.args[0]) and isinstance(node.func, ast.Attribute) \
                and (node.func.attr in ("get", "pop", "setdefault") and environ(node.func.value)
                     or node.func.attr == "getenv"):
            out.append(f"{path.name}:{node.lineno}")
        elif isinstance(node, ast.Subscript) and environ(node.value) and kbindex(node.slice):
            out.append(f"{path.name}:{node.lineno}")
        elif isinstance(node, ast.Compare) and kbindex(node.left) and any(environ(c) for c in node.comparators):
            out.append(f"{path.name}:{node.lineno}")
    return out


def test_the_checker_sees_each_way_of_reading_the_environment(tmp_path):
    src = tmp_path / "m.py"
    src.write_text('import os\nVAR = "KBINDEX_X"\na = os.environ.get(VAR, "")\nb = os.getenv("KBINDEX_Y")\n'
                   'c = os.environ["KBINDEX_Z"]\nd = VAR in os.environ\ne = os.environ.get("HOME")\n')
    assert _reads_past_settings(src) == ["m.py:3", "m.py:4", "m.py:5", "m.py:6"]


def test_no_module_reads_a_kbindex_variable_past_settings():
    assert [hit for path in sorted(PACKAGE.rglob("*.py")) if path.name != "settings.py"
            for hit in _reads_past_settings(path)] == []


def test_an_undeclared_name_is_refused():
    with pytest.raises(KeyError, match="KBINDEX_NOPE is not declared"):
        settings.raw("KBINDEX_NOPE")


def test_a_setting_is_read_at_each_call(monkeypatch):
    from kb_indexer.store.sparse import min_docs

    monkeypatch.setenv("KBINDEX_SPARSE_MIN_DOCS", "5")
    assert min_docs() == 5
    monkeypatch.setenv("KBINDEX_SPARSE_MIN_DOCS", " 7 ")
    assert (min_docs(), settings.raw("KBINDEX_SPARSE_MIN_DOCS"), settings.text("KBINDEX_SPARSE_MIN_DOCS")) \
        == (7, " 7 ", "7")
    monkeypatch.delenv("KBINDEX_SPARSE_MIN_DOCS")
    assert (settings.raw("KBINDEX_SPARSE_MIN_DOCS"), settings.flag("KBINDEX_SPARSE_MIN_DOCS")) == ("", False)


def _unset_all(monkeypatch, tmp_path):
    for name in SETTINGS:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)   # no .env here
    from kb_indexer.llm.config import reset_env_cache

    reset_env_cache()
    monkeypatch.setattr("kb_indexer.llm.config._env_file", None)


def test_each_declared_default_is_the_one_the_code_uses(monkeypatch, tmp_path):
    from kb_indexer.index.reader import read_seconds
    from kb_indexer.limits import max_doc_bytes
    from kb_indexer.llm.config import LLMOptions, resolve
    from kb_indexer.search.rerank import resolve as rerank
    from kb_indexer.store.errors import busy_timeout_ms
    from kb_indexer.store.sparse import min_docs

    _unset_all(monkeypatch, tmp_path)
    llm, openai = resolve(), resolve(LLMOptions(backend="openai"))
    used = {"KBINDEX_MAX_DOC_BYTES": max_doc_bytes(), "KBINDEX_READ_SECONDS": read_seconds(),
            "KBINDEX_SPARSE_MIN_DOCS": min_docs(), "KBINDEX_BUSY_TIMEOUT": busy_timeout_ms() / 1000,
            "KBINDEX_LLM_BACKEND": llm.backend, "KBINDEX_LLM_TIMEOUT": llm.timeout,
            "KBINDEX_LLM_RETRIES": llm.retries, "KBINDEX_LLM_MAX_TOKENS": llm.max_tokens_cap,
            "KBINDEX_OPENAI_BASE_URL": openai.base_url, "KBINDEX_RERANK": "off" if rerank(None) is None else "on"}
    assert used == {name: SETTINGS[name].default for name in used}
    others = {name: s.default for name, s in SETTINGS.items() if name not in used}
    assert others == dict.fromkeys(others), "a default no test above compares with the code's"


def test_a_dotenv_may_set_only_the_settings_declared_so():
    from kb_indexer.llm.envfile import ALLOWED

    assert {name for name in ALLOWED if name.startswith("KBINDEX_")} == settings.dotenv_names()
    doc = CONFIG_DOC.read_text(encoding="utf-8")
    allowed_line = doc[doc.index("- It may set only:"):doc.index("Any other", doc.index("- It may set only:"))]
    assert {n for n in _names_in(allowed_line)} == settings.dotenv_names()


def test_every_kind_is_a_known_one():
    assert {s.kind for s in SETTINGS.values()} <= set(settings.KINDS)
