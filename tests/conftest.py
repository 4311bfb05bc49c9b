"""Shared fixtures: a temporary copy of the bundled knowledge base, indexed; CLI runners."""

from __future__ import annotations

import functools
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path

import pytest

from kb_indexer.settings import SETTINGS

REPO = Path(__file__).resolve().parent.parent
BUNDLED_KB = REPO / "knowledge-base"
BUNDLED_SIMILARITIES = REPO / "similarities.json"
SHARED = REPO.parent / "shared"
#: The scripted LLM double, registered as backend "fake" through the plugin hook (in this process
#: and in every `kbindex` process a test starts, which inherit the environment).
FAKE_LLM_PLUGIN = Path(__file__).resolve().parent / "fake_llm.py"


@pytest.fixture(autouse=True)
def _isolate_env(monkeypatch, tmp_path):
    """No test reads the developer's index, KB, .env or LLM settings."""
    # every variable kbindex reads (kb_indexer.settings declares them), and the others its backends read
    for var in (*SETTINGS, "OLLAMA_HOST", "GEMINI_API_KEY", "GOOGLE_API_KEY", "OPENAI_API_KEY",
                "KBINDEX_FAKE_EMBED"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("KBINDEX_LLM_PLUGINS", str(FAKE_LLM_PLUGIN))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "xdg-state"))   # roots remembered by init (roots.py)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg-data"))     # chat store, history, exports (chat/source.py)
    # Every process a test starts imports this checkout's kb_indexer, whatever is installed.
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])))
    monkeypatch.chdir(tmp_path)


#: ``KBINDEX_TEST_ENGINE=postgres`` makes the fixtures below that create an index (kb, small, empty_kb)
#: create it in a fresh database of a PostgreSQL server the tests start (pgserver), so the same tests run
#: on the PostgreSQL engine.
TEST_ENGINE = os.environ.get("KBINDEX_TEST_ENGINE", "sqlite")


@pytest.fixture(scope="session")
def pg_server():
    """A PostgreSQL 16 server for this test session (the ``pgserver`` package of the dev extra), stopped at
    the end. Skips the test when pgserver or psycopg is not installed. Its data folder is a temporary folder
    of its own (not under pytest's, which the server's own user may not enter when the tests run as root)."""
    pgserver = pytest.importorskip("pgserver")
    pytest.importorskip("psycopg")
    pgdata = tempfile.mkdtemp(prefix="kbindex-pgdata-")
    server = pgserver.get_server(pgdata, cleanup_mode="stop")
    yield server
    server.cleanup()
    shutil.rmtree(pgdata, ignore_errors=True)


def _database_url(server_uri: str, name: str) -> str:
    """The server URL (``postgresql://user:@/postgres?host=...``) with another database name."""
    head, _, query = server_uri.partition("?")
    base = head.rsplit("/", 1)[0]
    return f"{base}/{name}" + (f"?{query}" if query else "")


@pytest.fixture
def pg_url(pg_server):
    """The URL of a fresh, empty PostgreSQL database (dropped after the test)."""
    import psycopg

    name = f"kb_{uuid.uuid4().hex[:12]}"
    admin = pg_server.get_uri()
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    yield _database_url(admin, name)
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture(params=["sqlite", "postgres"])
def engine_db(request, tmp_path):
    """Where a test's index lives, once per engine: an SQLite file path, or a fresh PostgreSQL URL."""
    if request.param == "sqlite":
        return str(tmp_path / "engine" / "kbindex.db")
    return request.getfixturevalue("pg_url")


#: Modules marked ``both_engines`` (``pytestmark = pytest.mark.both_engines``: the store- and API-level
#: tests) run each test that builds an index with the fixtures below once per engine, ``[sqlite]`` and
#: ``[postgres]``, in the plain ``pytest`` run. A test of such a module marked ``sqlite_only(reason)``
#: checks an SQLite-only thing (the .db file, its PRAGMAs, FTS5 tables) and runs on SQLite only.
BOTH_ENGINES = "both_engines"
SQLITE_ONLY = "sqlite_only"


def pytest_configure(config):
    config.addinivalue_line("markers", f"{BOTH_ENGINES}: the module's index-building fixtures (kb, small, "
                                       "empty_kb) run each test on SQLite and on PostgreSQL")
    config.addinivalue_line("markers", f"{SQLITE_ONLY}(reason): the test checks an SQLite-only thing; it runs "
                                       "on SQLite only (skipped under KBINDEX_TEST_ENGINE=postgres)")


def pytest_generate_tests(metafunc):
    """``index_engine`` takes both engines' values in a ``both_engines`` module (but for its ``sqlite_only``
    tests); elsewhere it is ``KBINDEX_TEST_ENGINE``'s (SQLite by default) and test names stay as they are."""
    if "index_engine" not in metafunc.fixturenames or TEST_ENGINE != "sqlite":
        return
    both = metafunc.definition.get_closest_marker(BOTH_ENGINES) is not None
    if both and metafunc.definition.get_closest_marker(SQLITE_ONLY) is None:
        metafunc.parametrize("index_engine", ["sqlite", "postgres"], indirect=True)


#: Fixtures that start the real llama.cpp server with SmolLM2-135M (tests/llm/conftest.py, tests/chat/).
REAL_MODEL_FIXTURES = frozenset(("llama_server", "llama_embed_server", "smollm"))
#: Modules whose tests start processes (MCP servers over stdio and HTTP, pytest itself): tens of seconds each on
#: a small machine. With the tests that ask for the ``run`` fixture (the ``kbindex`` command as a process), the
#: fast loop leaves them out; plain ``pytest`` runs them. The fast loop tests the same commands in-process (the
#: ``cli`` runner, the API).
SLOW_MODULES = frozenset((
    "test_plain_pytest_collection.py", "test_stress_tests_skip_with_one_flag.py",
    "test_the_fast_loop_leaves_out_the_slow_tiers.py", "test_mcp_server.py",
    "test_mcp_initialize_is_answered_before_the_sdk_loads.py", "test_mcp_resources_list_in_pages.py",
    "test_mcp_http_limits_connections_and_header_time.py", "test_mcp_http_requires_the_bearer_token.py",
    "test_mcp_cursor_belongs_to_its_call.py", "test_mcp_http_survives_running_out_of_descriptors.py",
    "test_mcp_http_without_a_token_answers_only_its_own_origin.py", "test_mcp_http_serves_many_clients_at_once.py",
    "test_mcp_read_only_server_records_nothing.py", "test_mcp_skill_resource_reads_only_its_own_file.py",
    "test_mcp_reports_semantic_fallback_and_unknown_arguments.py",
))
#: Tests (``module::function``) of that kind in modules whose other tests are quick: the documentation's console
#: examples, each run as processes, and LLM faults that wait out real timeouts (stalled and trickling servers).
SLOW_TESTS = frozenset((
    "test_docs_examples.py::test_console_example_runs_as_shown",
    "test_llm_faults.py::test_similar_and_query_fall_back_on_every_fault",
))


def _uses_postgres(item) -> bool:
    """The test reaches the PostgreSQL server: through ``pg_server`` (``pg_url`` and the fixtures built on it),
    a ``[postgres]`` parametrisation (``engine_db``, ``index_engine`` in a ``both_engines`` module), or an
    index-building fixture under ``KBINDEX_TEST_ENGINE=postgres``."""
    names = getattr(item, "fixturenames", ())
    if "pg_server" in names:
        return True
    params = getattr(getattr(item, "callspec", None), "params", {})
    if any(params.get(name) == "postgres" for name in ("engine_db", "index_engine")):
        return True
    return TEST_ENGINE == "postgres" and "index_engine" in names


def _mark_tiers(items) -> None:
    """The tiers: ``postgres`` and ``real_model`` tests, the ``stress`` run, the tests that run the ``kbindex``
    command as a process (the ``run`` fixture), :data:`SLOW_MODULES` and :data:`SLOW_TESTS` are ``slow``;
    ``python -m pytest -q -m "not slow"`` is the fast loop."""
    for item in items:
        names = getattr(item, "fixturenames", ())
        slow = (item.get_closest_marker("stress") is not None or "run" in names
                or item.path.name in SLOW_MODULES
                or f"{item.path.name}::{getattr(item, 'originalname', item.name)}" in SLOW_TESTS)
        if _uses_postgres(item):
            item.add_marker(pytest.mark.postgres)
            slow = True
        if item.get_closest_marker("real_model") is not None or REAL_MODEL_FIXTURES.intersection(names):
            item.add_marker(pytest.mark.real_model)
            slow = True
        if slow:
            item.add_marker(pytest.mark.slow)


def pytest_collection_modifyitems(config, items):
    """The tiers (:func:`_mark_tiers`); under ``KBINDEX_TEST_ENGINE=postgres`` a ``sqlite_only`` test is skipped,
    with its reason."""
    _mark_tiers(items)
    if TEST_ENGINE == "sqlite":
        return
    for item in items:
        marker = item.get_closest_marker(SQLITE_ONLY)
        if marker is not None:
            reason = marker.args[0] if marker.args else marker.kwargs.get("reason", "SQLite only")
            item.add_marker(pytest.mark.skip(reason=f"SQLite only: {reason}"))


_MISSING = re.compile(r"No module named '([\w.]+)'")
_OURS = frozenset(("kb_indexer", "tests", "helpers", "conftest", "bench"))
# What `pip install -e '.[dev]'` installs (pyproject.toml), by import name: with all of them present the
# environment is complete, and a module that cannot be imported is a defect, not a skip.
_DEV_IMPORTS = ("typer", "rich", "dotenv", "ollama", "httpx", "yaml", "snowballstemmer", "prompt_toolkit", "numpy",
                "bm25s", "mcp", "psycopg", "tokenizers", "threadpoolctl")


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector):
    """In an environment without kbindex's dependencies (a bare ``pytest`` outside the dev environment), a test
    module that cannot import a package is skipped, naming the package, rather than failing collection: the one
    rule for every module. In the dev environment, and for a missing module of kbindex or of the tests, a
    failure stays a failure."""
    outcome = yield
    report = outcome.get_result()
    if not report.failed or not isinstance(collector, pytest.Module) or _dev_environment():
        return
    found = _MISSING.search(str(report.longrepr))
    top = found.group(1).split(".")[0] if found else None
    if top is None or top in _OURS or _installed(top):
        return
    report.outcome = "skipped"
    report.longrepr = (str(collector.path), 0, f"Skipped: {top} is not installed (pip install -e '.[dev]')")


@functools.lru_cache(maxsize=1)
def _dev_environment() -> bool:
    return all(_installed(name) for name in _DEV_IMPORTS)


def _installed(name: str) -> bool:
    """A package of that import name is installed: not only a folder of the tests that bears its name (tests/mcp/,
    tests/llm/, a namespace package while tests/ is on sys.path)."""
    spec = importlib.util.find_spec(name)
    return spec is not None and spec.origin is not None


@pytest.fixture
def index_engine(request) -> str:
    """The engine the index-building fixtures (kb, small, empty_kb) use for this test: ``sqlite`` or
    ``postgres`` (see :func:`pytest_generate_tests`). A test may ask for it to reach the index the same way
    on both engines."""
    return getattr(request, "param", TEST_ENGINE)


def _index_target(request, path: Path):
    """``path`` (the SQLite file a fixture would create), or a fresh PostgreSQL database when the test's
    ``index_engine`` is PostgreSQL."""
    return request.getfixturevalue("pg_url") if request.getfixturevalue("index_engine") == "postgres" else path


@pytest.fixture
def project(tmp_path) -> Path:
    """A project folder holding a copy of the bundled knowledge-base/ and similarities.json."""
    root = tmp_path / "project"
    shutil.copytree(BUNDLED_KB, root / "knowledge-base")
    shutil.copy(BUNDLED_SIMILARITIES, root / "similarities.json")
    return root


@pytest.fixture
def kb(project, request, index_engine):
    """An initialised and synced KnowledgeBase over the bundled KB copy."""
    from kb_indexer.api import KnowledgeBase

    handle, _ = KnowledgeBase.init(_index_target(request, project / "kbindex.db"), project / "knowledge-base")
    result = handle.sync()
    assert result["errors"] == [], result["errors"]
    yield handle
    handle.close()


@pytest.fixture
def small(tmp_path, request, index_engine):
    """(KnowledgeBase, KB folder) over an empty knowledge base, for tests that write their own files."""
    from kb_indexer.api import KnowledgeBase

    root = tmp_path / "p"
    kbdir = root / "knowledge-base"
    kbdir.mkdir(parents=True)
    handle, _ = KnowledgeBase.init(_index_target(request, root / "kbindex.db"), kbdir)
    yield handle, kbdir
    handle.close()


@pytest.fixture
def empty_kb(tmp_path, request, index_engine):
    """An initialised index over an empty knowledge base folder."""
    from kb_indexer.api import KnowledgeBase

    root = tmp_path / "empty"
    (root / "knowledge-base").mkdir(parents=True)
    handle, _ = KnowledgeBase.init(_index_target(request, root / "kbindex.db"), root / "knowledge-base")
    yield handle
    handle.close()


def kbindex_exe() -> list[str]:
    """This checkout's own ``kbindex`` (never a stale install first on PATH): ``kbindex.py`` puts the
    checkout first on ``sys.path``; ``PYTHONPATH`` (set for every test) does the same for children."""
    return [sys.executable, str(REPO / "kbindex.py")]


class Result:
    def __init__(self, proc: subprocess.CompletedProcess):
        self.returncode = proc.returncode
        self.stdout = proc.stdout
        self.stderr = proc.stderr

    def json(self):
        return json.loads(self.stdout)

    def error(self):
        return json.loads(self.stderr)["error"]


@pytest.fixture
def run():
    """Run the installed ``kbindex`` command in a subprocess."""

    def _run(*args: str, cwd: Path | None = None, env: dict | None = None, input: str | None = None,
             timeout: float = 60) -> Result:
        full_env = dict(os.environ)
        if env:
            full_env.update(env)
        proc = subprocess.run(kbindex_exe() + [str(a) for a in args], cwd=cwd, env=full_env, input=input,
                              capture_output=True, text=True, timeout=timeout)
        return Result(proc)

    return _run


@pytest.fixture
def cli():
    """Invoke the Typer app in-process with CliRunner (stdout and stderr kept apart)."""
    from typer.testing import CliRunner

    from kb_indexer.cli import app

    runner = CliRunner()

    def _cli(*args: str, input: str | None = None):
        return runner.invoke(app, [str(a) for a in args], input=input)

    return _cli
