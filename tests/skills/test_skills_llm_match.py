"""`skills match` with an LLM (scripted backend): the model chooses among the keyword candidates; every
failure is the keyword result with a fallback_reason; answers are cached across opens."""

from __future__ import annotations

import json

import pytest

from fake_llm import FakeBackend
from helpers import skills_index, matched_names as names
from kb_indexer.llm.base import LLMTimeout, LLMUnavailable
from kb_indexer.llm.config import LLMOptions, resolve
from kb_indexer.llm.structured import LLMClient

SKILLS = {
    "samsung-smart-tv": "Control Samsung smart TVs: power, volume, apps.",
    "spotify-player": "Play music on Spotify, manage playlists and queue songs.",
    "weather": "Weather forecast for any city.",
    "pdf-forms": "Fill PDF forms.",
    "home-lights": "Switch the lights of a smart home on and off, dim them, change their colour.",
    "music-theory": "Explain chords, scales and harmony of music.",
}


@pytest.fixture
def env(tmp_path):
    db = skills_index(tmp_path, {name: (desc, f"Body of {name}.") for name, desc in SKILLS.items()})
    return db, tmp_path / "skills"


def _open(db):
    from kb_indexer.api import KnowledgeBase
    return KnowledgeBase.open(db)


def _client(kb, *answers) -> tuple[LLMClient, FakeBackend]:
    fake = FakeBackend(list(answers))
    config = resolve(LLMOptions(backend="fake", retries=0))
    return LLMClient(config, conn=kb.conn, backend=fake, sleep=lambda s: None), fake


def _match(db, message, *answers, **kw):
    with _open(db) as kb:
        client, fake = _client(kb, *answers)
        return kb.skills.match(message, use_llm=True, client=client, **kw), fake



def test_valid_answer_is_the_llm_result_with_reasons(env):
    db, _ = env
    out, fake = _match(db, "put some songs on, I want to dance",
                       {"skills": [{"name": "spotify-player", "reason": "wants music played"}]})
    assert out["method"] == "llm" and out["fallback_reason"] is None
    assert out["matched"] == [{"name": "spotify-player", "description": SKILLS["spotify-player"],
                               "score": out["matched"][0]["score"], "source": "llm", "reason": "wants music played"}]
    assert out["cache"] == {"hit": False} and len(fake.calls) == 1
    assert out["prompt_tokens_estimate"] > 0
    assert "spotify-player" in [c["name"] for c in out["candidates"]]
    prompt = fake.calls[0]["messages"][-1]["content"]
    assert "put some songs on, I want to dance" in prompt and "Body of" not in prompt   # no bodies


def test_a_paraphrase_with_a_weak_keyword_score_still_reaches_the_llm(env):
    db, _ = env
    message = "could you play something relaxing"     # one shared word: no keyword match
    keyword = _open(db).skills.match(message)
    assert keyword["matched"] == []
    out, fake = _match(db, message, {"skills": [{"name": "spotify-player", "reason": "play music"}]})
    assert names(out) == ["spotify-player"] and out["method"] == "llm"


def test_empty_answer_is_matched_empty_with_method_llm(env):
    db, _ = env
    out, _ = _match(db, "the weather was nice at the music festival", {"skills": []})
    assert out["matched"] == [] and out["method"] == "llm" and out["fallback_reason"] is None


def test_invented_names_are_dropped(env):
    db, _ = env
    out, _ = _match(db, "turn the samsung tv off", {"skills": [{"name": "tv-remote-pro", "reason": "x"},
                                                              {"name": "samsung-smart-tv", "reason": "tv"}]})
    assert names(out) == ["samsung-smart-tv"] and out["llm"]["dropped"] == ["tv-remote-pro"]


def test_a_real_skill_outside_the_candidates_is_dropped_too(env):
    db, _ = env
    out, _ = _match(db, "turn the samsung tv off", {"skills": [{"name": "pdf-forms", "reason": "x"}]},
                    candidates=1)
    assert [c["name"] for c in out["candidates"]] == ["samsung-smart-tv"]
    assert out["method"] == "keyword" and "not a candidate" in out["fallback_reason"]


def test_all_names_invented_falls_back_to_keyword(env):
    db, _ = env
    out, _ = _match(db, "turn the samsung tv off", {"skills": [{"name": "tv-remote-pro", "reason": "x"}]})
    assert out["method"] == "keyword" and names(out) == ["samsung-smart-tv"]
    assert "invented: tv-remote-pro" in out["fallback_reason"]
    assert out["matched"][0]["source"] == "keyword"


def test_invalid_json_falls_back_after_the_repair_attempt(env):
    db, _ = env
    out, fake = _match(db, "turn the samsung tv off", "not json at all", '{"skills": [{"name": 3}]}')
    assert len(fake.calls) == 2                      # the answer, then one repair attempt
    assert out["method"] == "keyword" and names(out) == ["samsung-smart-tv"]
    assert "invalid answer" in out["fallback_reason"] and out["prompt_tokens_estimate"] > 0


@pytest.mark.parametrize("error", [LLMTimeout("no answer in 5s"), LLMUnavailable("connection refused"),
                                   RuntimeError("sdk exploded")])
def test_timeout_or_error_falls_back(env, error):
    db, _ = env
    out, _ = _match(db, "turn the samsung tv off", error)
    assert out["method"] == "keyword" and names(out) == ["samsung-smart-tv"]
    assert out["fallback_reason"].startswith("LLM fake (fake-model) not used:")


def test_answer_is_cached_across_two_opens_and_keys_on_message_and_candidates(env):
    db, root = env
    answer = {"skills": [{"name": "samsung-smart-tv", "reason": "tv"}]}
    first, fake1 = _match(db, "turn the samsung tv off", answer)
    again, fake2 = _match(db, "  turn the samsung   tv off ")   # nothing queued: must be a cache hit
    assert fake1.calls and fake2.calls == []
    assert again["cache"] == {"hit": True} and names(again) == names(first) and again["method"] == "llm"
    other, fake3 = _match(db, "turn the samsung tv on", answer)   # another message: a miss
    assert other["cache"] == {"hit": False} and len(fake3.calls) == 1
    (root / "samsung-smart-tv" / "SKILL.md").write_text(
        "---\nname: samsung-smart-tv\ndescription: Control Samsung TVs and soundbars.\n---\n", encoding="utf-8")
    with _open(db) as kb:
        kb.skills.sync()
    changed, fake4 = _match(db, "turn the samsung tv off", answer)   # a candidate's description changed
    assert changed["cache"] == {"hit": False} and len(fake4.calls) == 1


def test_the_prompt_holds_only_the_k_best_candidates(env):
    db, _ = env
    out, fake = _match(db, "smart home music: play songs, switch lights, samsung tv, weather", {"skills": []},
                       candidates=2)
    prompt = fake.calls[0]["messages"][-1]["content"]
    listed = [line.split(":")[0].split(". ", 1)[1] for line in prompt.splitlines() if line[:1].isdigit()]
    assert len(listed) == 2 and listed == [c["name"] for c in out["candidates"]]
    listing = prompt.split("Skills:", 1)[1]
    assert sum(name in listing for name in SKILLS) == 2


def test_no_candidate_means_no_call(env):
    db, _ = env
    out, fake = _match(db, "hello, how are you?")
    assert fake.calls == [] and out["matched"] == [] and out["method"] == "keyword"
    assert out["fallback_reason"] is None and out["llm"]["called"] is False


def test_cli_with_scripted_backend_through_a_process(run, env, tmp_path):
    from tests.conftest import REPO

    db, _ = env
    script = tmp_path / "answers.json"
    script.write_text(json.dumps([{"json": {"skills": [{"name": "weather", "reason": "asks for a forecast"}]}}]))
    proc_env = {"PYTHONPATH": str(REPO), "KBINDEX_FAKE_LLM": str(script)}
    res = run("skills", "match", "will it rain in Paris tomorrow? weather please", "--llm-backend", "fake",
              "--db", db, "--format", "json", env=proc_env)
    assert res.returncode == 0, res.stderr
    out = res.json()
    assert out["method"] == "llm" and names(out) == ["weather"] and out["matched"][0]["source"] == "llm"
    assert "warning" not in res.stderr


def test_an_answer_longer_than_top_is_cut_not_rejected(env):
    db, _ = env
    answer = {"skills": [{"name": n, "reason": "r"} for n in ("samsung-smart-tv", "home-lights", "spotify-player")]}
    out, fake = _match(db, "smart home: samsung tv off, lights on, play songs on spotify", answer, top=2)
    assert len(fake.calls) == 1 and out["fallback_reason"] is None and out["method"] == "llm"
    assert names(out) == ["samsung-smart-tv", "home-lights"]
    assert "at most 2" in fake.calls[0]["messages"][-1]["content"]


def test_cache_hit_names_the_model_too(env):
    """No model configured (the server's default answers): a hit is answered without a backend, and
    names the model of its cache key instead of null."""
    import dataclasses

    db, _ = env
    answer = {"skills": [{"name": "samsung-smart-tv", "reason": "tv"}]}
    config = dataclasses.replace(resolve(LLMOptions(backend="fake", retries=0)), model=None)
    with _open(db) as kb:
        client = LLMClient(config, conn=kb.conn, backend=FakeBackend([answer]), sleep=lambda s: None)
        first = kb.skills.match("turn the samsung tv off", use_llm=True, client=client)
    with _open(db) as kb:
        client = LLMClient(config, conn=kb.conn, sleep=lambda s: None)     # no backend is made for a hit
        again = kb.skills.match("turn the samsung tv off", use_llm=True, client=client)
    assert first["llm"]["model"] == "fake-model" and first["cache"] == {"hit": False}
    assert again["cache"] == {"hit": True}
    assert again["llm"]["model"] == "server-default@" + (config.base_url or "fake") != "server-default@None"


def test_candidates_after_a_fallback_are_what_was_sent(env):
    db, _ = env
    message = "could you play something relaxing"
    keyword = _open(db).skills.match(message)
    out, fake = _match(db, message, LLMTimeout("no answer in 5s"))
    sent = fake.calls[0]["messages"][-1]["content"].split("Skills:", 1)[1]
    assert out["method"] == "keyword" and out["fallback_reason"]
    assert [c["name"] for c in out["candidates"]] != [c["name"] for c in keyword["candidates"]]
    assert out["candidates"] and all(f". {c['name']}:" in sent for c in out["candidates"])


def test_the_fallback_names_the_model_the_server_named(env):
    """A server's default model is known only once it answers: the fallback text named "default model" while the
    JSON's llm.model named it."""
    db, _ = env

    class Named(FakeBackend):
        def _next(self):
            self.model = "smollm2-135m-instruct"   # as an OpenAI-compatible server names its model
            return super()._next()

    with _open(db) as kb:
        config = resolve(LLMOptions(backend="fake", retries=0))
        fake = Named([LLMTimeout("no answer in 5s")], model=None)
        client = LLMClient(config, conn=kb.conn, backend=fake, sleep=lambda s: None)
        out = kb.skills.match("turn the samsung tv off", use_llm=True, client=client)
    assert out["llm"]["model"] == "smollm2-135m-instruct"
    assert out["fallback_reason"].startswith("LLM fake (smollm2-135m-instruct) not used:")
