"""The LLM cache and doctor go through KnowledgeBase, like every other command (issue 8 scope)."""

from __future__ import annotations

from fake_llm import FakeBackend

from kb_indexer.api import KnowledgeBase
from kb_indexer.llm.config import LLMOptions, resolve
from kb_indexer.llm.structured import LLMClient

SCHEMA = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"],
          "additionalProperties": False}


def test_cache_stats_and_clear_through_the_api(empty_kb):
    client = LLMClient(resolve(LLMOptions(backend="fake")), conn=empty_kb.conn,
                       backend=FakeBackend([{"ok": True}, {"ok": False}]))
    client.structured("task_a", [{"role": "user", "content": "a"}], SCHEMA, max_tokens=8)
    client.structured("task_b", [{"role": "user", "content": "b"}], SCHEMA, max_tokens=8)
    stats = empty_kb.cache_stats()
    assert stats["entries"] == 2 and {g["task"] for g in stats["by_task"]} == {"task_a", "task_b"}
    assert empty_kb.cache_clear(task="task_a") == {"removed": 1, "task": "task_a", "backend": None, "model": None}
    assert empty_kb.cache_stats()["entries"] == 1
    assert empty_kb.cache_clear()["removed"] == 1 and empty_kb.cache_stats()["entries"] == 0


def test_doctor_through_the_api(empty_kb, tmp_path):
    report = KnowledgeBase.doctor(empty_kb.db_path, LLMOptions(backend="none"))
    assert report["llm"]["backend"] == "none" and report["database"]["exists"] is True
    missing = KnowledgeBase.doctor(tmp_path / "nowhere.db", LLMOptions(backend="none"))
    assert missing["ok"] is False and missing["database"]["exists"] is False
