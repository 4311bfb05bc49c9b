"""With an LLM, chat matches skills with it and keeps its rolling summary; failures fall back (keyword
match, extractive summary) and say so; loaded skills are compressed together with the history."""

from __future__ import annotations

from fake_llm import FakeBackend
from helpers import write_skills
from kb_indexer.chat.engine import ChatEngine
from kb_indexer.chat.source import open_source
from kb_indexer.llm.base import Completion, LLMBadResponse
from kb_indexer.llm.config import LLMOptions, resolve
from kb_indexer.llm.structured import LLMClient

WEATHER = {"weather-report": ("Get the weather forecast for a city.", "Call the forecast API with the city name. "
                              + "Always give the temperature in Celsius and the wind in km/h. " * 6)}


class Scripted(FakeBackend):
    """Chat answers from the queue; structured requests answered by ``json_answers`` per task (a list, in
    order; an exception instance is raised)."""

    def __init__(self, answers, json_answers):
        super().__init__(answers)
        self.json_answers = json_answers

    def complete_json(self, messages, schema, **kw):
        self._record({"kind": "complete_json", "task": kw.get("task"), "messages": [m.to_dict() for m in messages]})
        answer = self.json_answers[kw.get("task")].pop(0) if self.json_answers.get(kw.get("task")) else None
        if answer is None or isinstance(answer, Exception):
            raise answer or LLMBadResponse("no scripted answer")
        return Completion(text=answer)


def engine(db, fake, window=None):
    kb, source, note = open_source(db, False)
    client = LLMClient(resolve(LLMOptions(backend="fake", retries=0)), conn=kb.conn, backend=fake, sleep=lambda s: None)
    eng = ChatEngine(kb, source, note, client=client, window=window)
    eng.sync_skills()
    return eng


def test_skills_are_chosen_by_the_llm_and_its_failure_falls_back_to_keywords(kb, tmp_path, monkeypatch):
    write_skills(tmp_path / "skills", WEATHER)
    monkeypatch.setenv("KBINDEX_SKILLS", str(tmp_path / "skills"))
    fake = Scripted(["No skill needed.", "Sunny."],
                    {"skills_match": ['{"skills": []}', LLMBadResponse("garbled"), LLMBadResponse("garbled")]})
    eng = engine(kb.db_path, fake)
    try:
        first = list(eng.turn("is the weather forecast for Paris a good example of a city page"))
        assert not [e for e in first if e.kind == "skills"]          # the model chose none: nothing loaded
        assert "## Skill: weather-report" not in fake.calls[-1]["messages"][0]["content"]
        second = list(eng.turn("what is the weather forecast for Paris"))
        skills = next(e for e in second if e.kind == "skills").data
        assert skills["newly_loaded"] == ["weather-report"] and skills["method"] == "keyword"
        assert "garbled" in skills["fallback"] and "keyword result" in skills["fallback"]
    finally:
        eng.close()


def test_the_rolling_summary_is_the_llms_and_an_extractive_one_when_it_fails(kb):
    answers = [f"Answer {i}: batch size {100 + i} is fine." for i in range(11)]
    fake = Scripted(answers, {"context_summary": []})
    eng = engine(kb.db_path, fake)
    summaries = []
    try:
        for i in range(11):          # the summary starts once 8 turns are older than the recent ones
            if i == 10:
                fake.json_answers["context_summary"] = ['{"summary": "The user settled on batch sizes from 100."}']
            events = list(eng.turn(f"question {i}: we decided to use batch size {100 + i}"))
            summaries += [e.data for e in events if e.kind == "summary"]
    finally:
        eng.close()
    assert summaries[0]["source"] == "extractive" and "extractive summary" in summaries[0]["fallback"]
    llm = [s for s in summaries if s["source"] == "llm"]
    assert llm and llm[0]["fallback"] is None
    assert "batch sizes from 100" in fake.calls[-1]["messages"][0]["content"]   # the system message has it


def test_loaded_skills_are_dropped_or_compressed_with_the_history(kb, tmp_path, monkeypatch):
    write_skills(tmp_path / "skills", WEATHER)
    monkeypatch.setenv("KBINDEX_SKILLS", str(tmp_path / "skills"))
    fake = Scripted(["Cold."] * 6, {"skills_match": ['{"skills": [{"name": "weather-report", "reason": "x"}]}'] * 6,
                                   "context_compress_skill": ['{"summary": "Call the forecast API; Celsius, km/h."}'] * 6})
    eng = engine(kb.db_path, fake, window=800)
    try:
        long = "what is the weather forecast for Paris: " + ", ".join(f"day {i} at {i % 24}h" for i in range(90))
        events = list(eng.turn(long))
    finally:
        eng.close()
    compression = next(e for e in events if e.kind == "compression").data
    assert compression["level"] == 95
    assert any(stage["stage"] == "compress_skills" for stage in compression["stages"])
    system = fake.calls[-1]["messages"][0]["content"]
    assert "Always give the temperature" not in system             # the skill went compressed, not whole
    assert "## Skill: weather-report\n\nCall the forecast API; Celsius, km/h." in system
