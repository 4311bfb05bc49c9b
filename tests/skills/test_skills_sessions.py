"""`skills match --session`: turns, loading, eviction after N turns unless still relevant, the cap's order,
`skills session` (show, reset), `skills load` within a budget, and two processes in one session at once."""

from __future__ import annotations

import json
import subprocess
import sys
import threading

import pytest

from helpers import skills_index

from kb_indexer.errors import NotFoundError, UsageError
from tests.conftest import REPO

SKILLS = {
    "samsung-smart-tv": ("Control Samsung smart TVs: power, volume, apps.", "Use the SmartThings API. " * 40),
    "spotify-player": ("Play music on Spotify, manage playlists and queue songs.", "Spotify steps. " * 10),
    "weather": ("Weather forecast for any city.", "Call the forecast service."),
    "pdf-forms": ("Fill PDF forms.", "Use pdftk."),
    "home-lights": ("Switch the lights of a smart home on and off, dim them.", "Hue bridge."),
    "git-helper": ("Commit, rebase and merge with git.", "git steps."),
}


@pytest.fixture
def db(tmp_path):
    return skills_index(tmp_path, SKILLS)


@pytest.fixture
def skills_kb(db):
    from kb_indexer.api import KnowledgeBase

    with KnowledgeBase.open(db) as handle:
        yield handle


def turn(skills_kb, message, **kw):
    return skills_kb.skills.match(message, session="s1", **kw)["session"]


def test_each_match_is_one_turn_and_matched_skills_load(skills_kb):
    s = turn(skills_kb, "turn the samsung tv off")
    assert (s["turn"], s["loaded"], s["newly_loaded"], s["evicted"]) == (1, ["samsung-smart-tv"], ["samsung-smart-tv"], [])
    s = turn(skills_kb, "samsung tv volume up")
    assert s["turn"] == 2 and s["newly_loaded"] == [] and s["skills"][0]["match_count"] == 2
    shown = skills_kb.skills.session("s1")
    assert [m["message"] for m in shown["messages"]] == ["turn the samsung tv off", "samsung tv volume up"]
    assert shown["skills"][0] == {"name": "samsung-smart-tv", "priority": "active", "match_count": 2,
                                  "last_matched_turn": 2, "loaded": True}


def test_a_skill_not_matched_in_n_turns_is_evicted(skills_kb):
    turn(skills_kb, "turn the samsung tv off")
    s = turn(skills_kb, "weather forecast for Paris")
    assert s["loaded"] == ["weather", "samsung-smart-tv"]            # active first
    assert {x["name"]: x["priority"] for x in s["skills"]} == {"weather": "active", "samsung-smart-tv": "relevant"}
    turn(skills_kb, "fill the pdf forms please")
    s = turn(skills_kb, "commit and rebase with git")                         # turn 4: samsung last matched at 1
    assert s["evicted"] == ["samsung-smart-tv"] and "samsung-smart-tv" not in s["loaded"]
    s = turn(skills_kb, "merge the git branch, then commit")                  # turn 5: weather last matched at 2
    assert s["evicted"] == ["weather"]


def test_evict_after_is_a_setting(skills_kb):
    turn(skills_kb, "turn the samsung tv off", evict_after=1)
    s = turn(skills_kb, "weather forecast for Paris", evict_after=1)
    assert s["evicted"] == ["samsung-smart-tv"] and s["loaded"] == ["weather"]


def test_a_skill_still_relevant_to_the_recent_messages_is_kept(skills_kb):
    def conversation(sid, last):
        for m in ("turn the samsung tv off", "weather forecast for Paris", "and the samsung remote", last):
            out = skills_kb.skills.match(m, session=sid)
        return out

    out = conversation("kept", "is the tv on already")   # one shared word per message: no match alone ...
    assert out["matched"] == [] and skills_kb.skills.match("and the samsung remote")["matched"] == []
    s = out["session"]                                     # ... but the last three together name the TV skill
    assert s["turn"] == 4 and s["evicted"] == [] and "samsung-smart-tv" in s["loaded"]
    assert {x["name"]: x["priority"] for x in s["skills"]}["samsung-smart-tv"] == "relevant"
    s = conversation("gone", "what time is it")["session"]   # the same, without the second word
    assert s["evicted"] == ["samsung-smart-tv"]


def test_the_cap_evicts_relevant_before_active_then_least_used_then_least_recent(skills_kb):
    cap = {"max_loaded": 3, "evict_after": 10}                          # only the cap evicts here
    turn(skills_kb, "samsung tv off", **cap)
    turn(skills_kb, "samsung tv on", **cap)                                     # samsung: 2 matches
    turn(skills_kb, "weather forecast for Paris", **cap)                        # weather: 1 match, turn 3
    turn(skills_kb, "fill the pdf forms", **cap)                                # pdf: 1 match, turn 4
    s = turn(skills_kb, "commit with git", **cap)                               # git active; 3 relevant, one must go
    assert s["evicted"] == ["weather"]               # relevant, fewest matches, oldest last match
    assert s["loaded"] == ["git-helper", "samsung-smart-tv", "pdf-forms"]
    s = turn(skills_kb, "merge with git, then the spotify playlists and queue songs", max_loaded=1, top=3, evict_after=10)
    assert s["loaded"] == ["git-helper"]             # both active: git has more matches
    assert set(s["evicted"]) == {"spotify-player", "samsung-smart-tv", "pdf-forms"}
    assert "spotify-player" not in s["newly_loaded"]


def test_load_prints_bodies_most_important_first_within_the_budget(skills_kb):
    turn(skills_kb, "samsung tv off")
    turn(skills_kb, "samsung tv on")
    turn(skills_kb, "weather forecast for Paris")
    turn(skills_kb, "fill the pdf forms")
    full = skills_kb.skills.load("s1")
    assert [s["name"] for s in full["skills"]] == ["pdf-forms", "samsung-smart-tv", "weather"]
    assert full["left_out"] == [] and full["tokens"] == sum(s["tokens"] for s in full["skills"])
    assert full["markdown"].startswith("## Skill: pdf-forms\n\nFill PDF forms.\n\nUse pdftk.")
    tv = next(s for s in full["skills"] if s["name"] == "samsung-smart-tv")
    assert tv["tokens"] > 250                         # the long body: ~1,000 characters / 4
    cut = skills_kb.skills.load("s1", budget=full["skills"][0]["tokens"] + 20)
    assert [s["name"] for s in cut["skills"]] == ["pdf-forms", "weather"]   # the TV skill did not fit
    assert cut["left_out"] == [{"name": "samsung-smart-tv", "reason": "budget", "tokens": tv["tokens"]}]
    assert cut["tokens"] <= cut["budget"]


def test_reset_forgets_the_session(skills_kb):
    turn(skills_kb, "samsung tv off")
    assert skills_kb.skills.session("s1", reset=True) == {"action": "reset", "id": "s1", "existed": True}
    with pytest.raises(NotFoundError):
        skills_kb.skills.session("s1")
    assert turn(skills_kb, "weather forecast")["turn"] == 1
    assert skills_kb.skills.session("nope", reset=True)["existed"] is False


def test_bad_session_arguments_are_usage_errors(skills_kb):
    with pytest.raises(UsageError):
        skills_kb.skills.match("tv", session="  ")
    with pytest.raises(UsageError):
        skills_kb.skills.match("tv", session="s", max_loaded=0)
    with pytest.raises(NotFoundError):
        skills_kb.skills.load("never-started")


def test_two_threads_with_separate_connections_get_turns_1_and_2(db):
    from kb_indexer.api import KnowledgeBase

    barrier, results, errors = threading.Barrier(2), [], []

    def worker(message):
        try:
            with KnowledgeBase.open(db) as k:
                barrier.wait()
                results.append(k.skills.match(message, session="shared")["session"]["turn"])
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(m,)) for m in ("samsung tv off", "weather forecast")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == [] and sorted(results) == [1, 2]


def test_two_processes_matching_in_one_session_at_once(db):
    code = ("import sys, json; from kb_indexer.api import KnowledgeBase\n"
            "with KnowledgeBase.open(sys.argv[1]) as k:\n"
            "    print(json.dumps(k.skills.match(sys.argv[2], session='p')['session']))\n")
    env = {"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"}
    procs = [subprocess.Popen([sys.executable, "-c", code, str(db), m], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, env=env)
             for m in ("samsung tv off", "weather forecast")]
    outs = [p.communicate(timeout=60) for p in procs]
    assert all(p.returncode == 0 for p in procs), [o[1] for o in outs]
    sessions = [json.loads(o[0]) for o in outs]
    assert sorted(s["turn"] for s in sessions) == [1, 2]
    from kb_indexer.api import KnowledgeBase
    with KnowledgeBase.open(db) as k:
        shown = k.skills.session("p")
    assert shown["turn"] == 2 and sorted(shown["loaded"]) == ["samsung-smart-tv", "weather"]


def test_cli_session_show_load_and_reset(run, db):
    env = {"PYTHONPATH": str(REPO)}
    res = run("skills", "match", "samsung tv off", "--no-llm", "--session", "c", "--db", db, "-f", "json", env=env)
    assert res.returncode == 0, res.stderr
    assert res.json()["session"]["turn"] == 1
    shown = run("skills", "session", "c", "--db", db, "-f", "json", env=env).json()
    assert shown["loaded"] == ["samsung-smart-tv"]
    md = run("skills", "load", "--session", "c", "--db", db, env=env)
    assert md.returncode == 0 and md.stdout.startswith("## Skill: samsung-smart-tv\n")
    cut = run("skills", "load", "--session", "c", "--budget", "10", "--db", db, env=env)
    assert cut.stdout == "" and "left out" in cut.stderr
    data = run("skills", "load", "--session", "c", "--format", "json", "--db", db, env=env).json()
    assert data["skills"][0]["name"] == "samsung-smart-tv"
    assert run("skills", "session", "c", "--reset", "--db", db, "-f", "json", env=env).json()["existed"] is True
    gone = run("skills", "session", "c", "--db", db, "-f", "json", env=env)
    assert gone.returncode == 1 and gone.error()["code"] == "not_found"
