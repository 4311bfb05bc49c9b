"""The chat store (free-mode sessions) and the chat input history hold a person's conversations: kbindex
creates them readable and writable by their owner only (0600; their folder 0700 when kbindex creates it),
whatever the umask, and takes group and other permissions away from existing ones. A knowledge base's
index is a project file: it keeps the user's umask, so that a team can share it."""

from __future__ import annotations

import json
import os
import stat
from contextlib import contextmanager
from pathlib import Path

from kb_indexer.api import KnowledgeBase
from kb_indexer.chat.source import open_source
from kb_indexer.chat.terminal import open_history
from tests.conftest import REPO


@contextmanager
def umask(value: int):
    old = os.umask(value)
    try:
        yield
    finally:
        os.umask(old)


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def sqlite_files(db: Path) -> list[Path]:
    return [p for p in (db, db.with_name(db.name + "-wal"), db.with_name(db.name + "-shm")) if p.exists()]


def test_a_free_mode_chat_creates_its_store_and_history_private(run, tmp_path):
    script = tmp_path / "llm-script.json"
    script.write_text(json.dumps([{"text": "Hello there."}]))
    store, history = tmp_path / "data" / "kbindex" / "chat.db", tmp_path / "hist" / "kbindex" / "chat_history"
    env = {"PYTHONPATH": str(REPO), "KBINDEX_FAKE_LLM": str(script), "KBINDEX_LLM_RETRIES": "0",
           "KBINDEX_CHAT_DB": str(store), "KBINDEX_CHAT_HISTORY": str(history)}
    with umask(0o022):
        res = run("chat", "--llm-backend", "fake", "--free", input="hello\n", env=env)
    assert res.returncode == 0, res.stderr
    assert "Hello there." in res.stdout
    assert [mode(p) for p in sqlite_files(store)] == [0o600] * len(sqlite_files(store))
    assert mode(store.parent) == 0o700
    with umask(0o022):
        opened, warning = open_history(history)
    assert warning is None
    assert mode(history) == 0o600 and mode(history.parent) == 0o700


def test_an_existing_store_and_history_lose_group_and_other_permissions(tmp_path, monkeypatch):
    store = tmp_path / "chat.db"
    kb, _ = KnowledgeBase.init(store, tmp_path)
    kb.context.add("s1", role="user", text="something private")
    files = sqlite_files(store)
    for p in files:
        p.chmod(0o644)
    history = tmp_path / "chat_history"
    history.write_text("\n# 2024\n+my secret question\n")
    history.chmod(0o664)
    monkeypatch.setenv("KBINDEX_CHAT_DB", str(store))
    handle, source, _ = open_source(None, True)
    try:
        assert source.db == store
        assert [mode(p) for p in files] == [0o600] * len(files)
        assert handle.context.show("s1")["count"] == 1           # the same store, content kept
    finally:
        handle.close()
        kb.close()
    open_history(history)
    assert mode(history) == 0o600 and "my secret question" in history.read_text()


def test_a_knowledge_base_index_keeps_the_users_umask(run, tmp_path):
    (tmp_path / "kb").mkdir()
    with umask(0o022):
        res = run("init", "--db", tmp_path / "kbindex.db", "--kb", tmp_path / "kb", cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    assert mode(tmp_path / "kbindex.db") == 0o644
