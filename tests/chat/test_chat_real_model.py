"""A chat turn against a real model (llama-cpp-python serving SmolLM2-135M, as in tests/llm/): the model
is asked to choose the skills and answers; whatever a 135M model makes of the request, the turn completes
and says how the skills were chosen (by the model, or the keyword fallback with its reason)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from helpers import write_skills
from kb_indexer.chat.engine import ChatEngine
from kb_indexer.llm.config import LLMOptions

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "llm"))
from llm_server import start_llama_server, stop  # noqa: E402 - tests/llm is not a package

@pytest.fixture(scope="module")
def smollm(tmp_path_factory):
    proc, url, reason = start_llama_server(tmp_path_factory.mktemp("llama") / "server.log")
    if reason:
        pytest.skip(reason)
    yield url
    stop(proc)

def test_a_turn_with_a_real_model_matches_skills_and_reports_token_use(kb, smollm, tmp_path, monkeypatch):
    write_skills(tmp_path / "skills", {"weather-report": ("Get the weather forecast for a city.",
                                                          "Call the forecast API with the city name.")})
    monkeypatch.setenv("KBINDEX_SKILLS", str(tmp_path / "skills"))
    monkeypatch.setenv("KBINDEX_CHAT_DB", str(tmp_path / "chat.db"))
    monkeypatch.setenv("KBINDEX_OPENAI_BASE_URL", smollm)
    monkeypatch.setenv("KBINDEX_LLM_MAX_TOKENS", "48")       # a short answer: the test is about the turn
    eng = ChatEngine.open(kb.db_path, llm=LLMOptions(backend="openai", timeout=120, retries=0), window=4096)
    try:
        eng.check_llm()
        events = list(eng.turn("what is the weather forecast for Paris tomorrow"))
    finally:
        eng.close()
    kinds = [e.kind for e in events]
    assert kinds[-1] == "done", [e.data for e in events if e.kind == "error"]
    skills = [e.data for e in events if e.kind == "skills"]
    if skills:                                  # the model may rightly choose none
        assert skills[0]["method"] == "llm" or skills[0]["fallback"]
    usage = events[-1].data["usage"]
    assert usage["prompt_tokens"] > 0 and usage["total_tokens"] >= usage["prompt_tokens"]
