"""A `.env` saved with a UTF-8 byte-order mark (as Windows editors do) keeps its first line: the mark is
not read as part of the first name."""

from __future__ import annotations


import pytest

from kb_indexer.llm import config
from kb_indexer.llm.config import resolve


@pytest.fixture
def dotenv_on(dotenv_on, monkeypatch):
    for name in ("KBINDEX_LLM_BACKEND", "KBINDEX_LLM_MODEL"):
        monkeypatch.delenv(name, raising=False)
    config.reset_env_cache()


def test_the_first_line_after_a_bom_is_read(tmp_path, monkeypatch, dotenv_on):
    (tmp_path / ".env").write_bytes("\ufeffKBINDEX_LLM_BACKEND=openai\nKBINDEX_LLM_MODEL=m1\n".encode("utf-8"))
    monkeypatch.chdir(tmp_path)
    c = resolve()
    assert (c.backend, c.sources["backend"]) == ("openai", ".env")
    assert (c.model, c.sources["model"]) == ("m1", ".env")
