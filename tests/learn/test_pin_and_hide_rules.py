"""Pin and hide rules (`kbindex rules`, kb.rules): a rule fires for every question that has all of its terms; in
`query` and `search` a pinned document comes first (pulled in if the question did not find it) and names its rule,
a hidden one is left out and listed; learning moves nothing past a rule; a bad path writes nothing. On both engines,
and on PostgreSQL with real roles: a member may list rules, not make them; a curator may."""

from __future__ import annotations

import json

import pytest

from kb_indexer.errors import KbError, NotFoundError, UsageError
from kb_indexer.llm.config import LLMOptions
from kb_indexer.search import rerank as stage

pytestmark = pytest.mark.both_engines

QUESTION = "how does alphago work"
OTHER = "what is supervised learning"
PINNED = "reward-shaping.md"


def _paths(out) -> list[str]:
    return [r["filepath"] for r in out["results"]]


def test_a_pin_puts_the_document_first_for_a_matching_question_and_not_for_an_unrelated_one(kb):
    before_other = _paths(kb.query(OTHER))
    assert _paths(kb.query(QUESTION))[0] != PINNED
    made = kb.rules.pin("alphago", PINNED, reason="the team's pick")
    assert made["created"] is True and made["rule"]["terms"] == ["alphago"] and made["rule"]["indexed"] is True
    out = kb.query(QUESTION)
    first = out["results"][0]
    assert first["filepath"] == PINNED and first["rule"]["id"] == made["rule"]["id"]
    assert first["rule"]["action"] == "pin" and first["rule"]["reason"] == "the team's pick"
    assert "rule" in first["sources"] and first["reasoning"].startswith(f"Pinned by rule {made['rule']['id']}")
    assert _paths(out).count(PINNED) == 1
    other = kb.query(OTHER)
    assert _paths(other) == before_other and not any("rule" in r for r in other["results"])


def test_a_rule_fires_when_all_its_terms_are_among_the_questions(kb):
    kb.rules.pin("AlphaGo moves", PINNED)
    assert _paths(kb.query("how does AlphaGo choose its move?"))[0] == PINNED     # case and plurals folded
    assert _paths(kb.query("alphago"))[0] != PINNED                              # one of its two terms only


def test_a_pinned_document_the_question_did_not_find_is_pulled_in_first(kb):
    question = "sqlite full text search"
    assert "temporal-difference-learning.md" not in _paths(kb.query(question))
    kb.rules.pin("sqlite", "temporal-difference-learning.md")
    kb.rules.pin("full text", PINNED)
    out = kb.query(question, options=None)
    assert _paths(out)[:2] == ["temporal-difference-learning.md", PINNED]      # in rule id order
    first = out["results"][0]
    assert first["sources"] == ["rule"] and first["source"] == "keyword_search"
    assert out["keyword_search_count"] + out["grep_search_count"] == out["count"]


def test_hide_leaves_the_document_out_and_the_json_lists_it(kb):
    from kb_indexer.api import QueryOptions

    shown = _paths(kb.query(QUESTION, options=QueryOptions(limit=3)))
    assert shown[0] == "alphago-architecture.md"
    rule = kb.rules.hide("alphago", "alphago-architecture.md", reason="outdated")["rule"]
    out = kb.query(QUESTION, options=QueryOptions(limit=3))
    assert "alphago-architecture.md" not in _paths(out) and out["count"] == 3    # the next result takes its place
    assert out["hidden_by_rules"] == [{"filepath": "alphago-architecture.md", "rule_id": rule["id"]}]
    assert "hidden_by_rules" not in kb.query(OTHER)


def test_a_hide_wins_over_a_pin_of_the_same_document(kb):
    kb.rules.pin("alphago", PINNED)
    kb.rules.hide("alphago work", PINNED)
    assert PINNED not in _paths(kb.query(QUESTION))
    assert _paths(kb.query("alphago architecture"))[0] == PINNED


def test_explain_names_every_rule_that_fired(kb):
    from kb_indexer.api import QueryOptions

    pin = kb.rules.pin("alphago", PINNED)["rule"]
    hide = kb.rules.hide("alphago", "alphago-architecture.md")["rule"]
    kb.rules.pin("supervised", "fine-tuning-llms.md")
    out = kb.query(QUESTION, options=QueryOptions(explain=True))
    fired = out["query"]["explain"]["rules"]
    assert [(r["id"], r["action"], r["filepath"]) for r in fired] == [
        (pin["id"], "pin", PINNED), (hide["id"], "hide", "alphago-architecture.md")]
    assert out["results"][0]["rule"]["id"] == pin["id"] and "score_parts" in out["results"][0]


def test_removing_a_rule_undoes_it(kb):
    before = _paths(kb.query(QUESTION))
    rule = kb.rules.hide("alphago", "alphago-architecture.md")["rule"]
    assert _paths(kb.query(QUESTION)) != before
    assert kb.rules.remove(rule["id"])["removed"]["id"] == rule["id"]
    assert _paths(kb.query(QUESTION)) == before and kb.rules.list() == {"rules": [], "count": 0}
    with pytest.raises(NotFoundError):
        kb.rules.remove(rule["id"])


def test_learn_does_not_override_a_rule(kb):
    kb.rules.hide("alphago", "alphago-architecture.md")
    kb.rules.pin("alphago", PINNED)
    for question in (QUESTION, "how does alphago work exactly", "alphago how does it work"):
        qid = kb.query(question)["query_id"]
        kb.learning.feedback(qid, helpful=["alphago-architecture.md"], not_helpful=[PINNED])
    kb.learning.learn()
    assert kb.learning.learned_list()["learned"]                       # something was learned ...
    out = kb.query(QUESTION)
    assert "alphago-architecture.md" not in _paths(out) and _paths(out)[0] == PINNED   # ... and the rules hold


def test_search_applies_the_rules_too(kb):
    before = kb.search(["reinforcement learning"])
    assert PINNED in [r["filepath"] for r in before["results"]]
    assert "transformer-architecture.md" not in [r["filepath"] for r in before["results"]]
    hide = kb.rules.hide("reinforcement", PINNED)["rule"]
    kb.rules.pin("learning", "transformer-architecture.md")
    out = kb.search(["reinforcement learning"])
    assert out["results"][0]["filepath"] == "transformer-architecture.md"
    assert out["results"][0]["rule"]["action"] == "pin"
    assert PINNED not in [r["filepath"] for r in out["results"]]
    assert out["hidden_by_rules"] == [{"filepath": PINNED, "rule_id": hide["id"]}]
    assert out["total"] == before["total"] and out["count"] == len(out["results"])
    assert [r["filepath"] for r in kb.search(["reinforcement learning"], limit=1)["results"]] == [
        "transformer-architecture.md"]
    assert "rule" not in kb.search(["reward"])["results"][0]


def test_a_rerank_leaves_the_pins_on_top(kb, tmp_path, monkeypatch):
    script = tmp_path / "llm-script.json"
    monkeypatch.setenv("KBINDEX_FAKE_LLM", str(script))
    monkeypatch.delenv("KBINDEX_RERANK", raising=False)
    kb.rules.pin("alphago", PINNED)
    rest = len(kb.query(QUESTION)["results"]) - 1
    top = min(stage.TOP_K, rest)
    script.write_text(json.dumps([{"json": {str(i + 1): (10 if i == top - 1 else 0) for i in range(top)}}]))
    out = kb.query(QUESTION, llm=LLMOptions(backend="fake"), rerank="llm")
    assert out["rerank"]["used"] is True and out["rerank"]["top_k"] == top
    assert out["results"][0]["filepath"] == PINNED and out["results"][0]["ranked_by"] == "rule"
    assert all(r["ranked_by"] != "rule" for r in out["results"][1:])


def test_a_path_that_is_not_indexed_or_outside_the_root_is_refused_and_nothing_is_written(kb, tmp_path):
    with pytest.raises(NotFoundError):
        kb.rules.pin("alphago", "no-such-note.md")
    outside = tmp_path / "outside.md"
    outside.write_text("# Outside\n", encoding="utf-8")
    with pytest.raises(KbError) as refused:
        kb.rules.hide("alphago", str(outside))
    assert refused.value.code == "outside_kb"
    with pytest.raises(UsageError):
        kb.rules.pin("the of and", PINNED)                         # stopwords only: it would match everything
    assert kb.rules.list()["count"] == 0


def test_the_same_rule_twice_is_kept_once_and_listed_with_who_and_when(kb):
    first = kb.rules.pin("AlphaGo", PINNED, reason="why")
    again = kb.rules.pin("alphago", PINNED)
    assert again["created"] is False and again["rule"]["id"] == first["rule"]["id"]
    listed = kb.rules.list()
    assert listed["count"] == 1
    rule = listed["rules"][0]
    assert rule["author"] and rule["created_at"] and rule["reason"] == "why" and rule["pattern"] == "AlphaGo"


def test_rules_travel_with_export_and_import(kb):
    rule = kb.rules.pin("alphago", PINNED, reason="why")["rule"]
    data = kb.export()
    assert [r["filepath"] for r in data["tables"]["search_rules"]] == [PINNED]
    kb.rules.remove(rule["id"])
    kb.import_(data, force=True)
    assert [r["id"] for r in kb.rules.list()["rules"]] == [rule["id"]]
    assert _paths(kb.query(QUESTION))[0] == PINNED


# -- the command line -------------------------------------------------------------------------------------------
@pytest.fixture
def indexed(project, run):
    assert run("init", "-f", "json", cwd=project).returncode == 0
    assert run("sync", "-f", "json", cwd=project).returncode == 0
    return project


def test_cli_rules_pin_list_remove_and_json_errors(indexed, run):
    made = run("rules", "pin", "alphago", PINNED, "--reason", "pick", "-f", "json", cwd=indexed)
    assert made.returncode == 0, made.stderr
    rule_id = made.json()["rule"]["id"]
    out = run("query", QUESTION, "-f", "json", "--no-stale-check", cwd=indexed).json()
    assert out["results"][0]["filepath"] == PINNED and out["results"][0]["rule"]["id"] == rule_id
    assert run("rules", "list", "-f", "json", cwd=indexed).json()["count"] == 1
    assert run("rules", "list", cwd=indexed).returncode == 0
    markdown = run("query", QUESTION, "--format", "markdown", "--no-stale-check", cwd=indexed).stdout
    assert f"### Result 1 - pinned by rule {rule_id} (rule)" in markdown
    missing = run("rules", "hide", "alphago", "no-such-note.md", "-f", "json", cwd=indexed)
    assert missing.returncode == 1 and missing.stdout == "" and missing.error()["code"] == "not_found"
    outside = run("rules", "pin", "alphago", "../similarities.json", "-f", "json", cwd=indexed / "knowledge-base")
    assert outside.returncode == 1 and outside.error()["code"] == "outside_kb"
    empty = run("rules", "pin", "the", PINNED, "-f", "json", cwd=indexed)
    assert empty.returncode == 2 and empty.error()["code"] == "usage"
    assert run("rules", "list", "-f", "json", cwd=indexed).json()["count"] == 1   # nothing else written
    gone = run("rules", "remove", str(rule_id), "-f", "json", cwd=indexed)
    assert gone.returncode == 0 and gone.json()["removed"]["id"] == rule_id
    again = run("rules", "remove", str(rule_id), "-f", "json", cwd=indexed)
    assert again.returncode == 1 and again.error()["code"] == "not_found"


# -- roles on PostgreSQL ------------------------------------------------------------------------------------------
@pytest.fixture
def team(pg_url, project, run):
    from tests.helpers import login_role
    from tests.helpers import MEMBER, READER, curator_group

    assert run("init", "--db", pg_url, "--kb", project / "knowledge-base").returncode == 0
    assert run("sync", "--db", pg_url).returncode == 0
    curator_group(pg_url)
    return {"member": login_role(pg_url, list(MEMBER), "alice"),
            "curator": login_role(pg_url, MEMBER + ["GRANT kb_curator TO {role}"], "carol"),
            "reader": login_role(pg_url, [*READER], "reader"), "owner": pg_url}


def test_on_postgresql_a_member_cannot_pin_a_curator_can_and_everyone_lists(team, run):
    import psycopg

    member = run("rules", "pin", "alphago", PINNED, "--db", team["member"], "-f", "json")
    assert member.returncode == 1 and member.error()["code"] == "not_allowed", member.stderr
    assert "rules pin needs the curator role" in member.error()["message"]
    reader = run("rules", "hide", "alphago", PINNED, "--db", team["reader"], "-f", "json")
    assert reader.returncode == 1 and reader.error()["code"] == "read_only"
    curator = run("rules", "pin", "alphago", PINNED, "--db", team["curator"], "-f", "json")
    assert curator.returncode == 0, curator.stderr
    rule = curator.json()["rule"]
    assert rule["author"] == team["curator"].split("://", 1)[1].split("@", 1)[0]
    for role in ("member", "reader"):
        listed = run("rules", "list", "--db", team[role], "-f", "json")
        assert listed.returncode == 0 and [r["id"] for r in listed.json()["rules"]] == [rule["id"]], listed.stderr
        out = run("query", QUESTION, "--db", team[role], "-f", "json")
        assert out.returncode == 0 and out.json()["results"][0]["rule"]["id"] == rule["id"], out.stderr
    removed = run("rules", "remove", str(rule["id"]), "--db", team["member"], "-f", "json")
    assert removed.returncode == 1 and removed.error()["code"] == "not_allowed"
    with psycopg.connect(team["member"], autocommit=True) as conn:   # the server refuses it past kbindex too
        assert conn.execute("DELETE FROM search_rules").rowcount == 0
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute("INSERT INTO search_rules (action, pattern, terms, filepath) "
                         "VALUES ('hide', 'x', '[\"x\"]', 'x.md')")
    assert run("rules", "remove", str(rule["id"]), "--db", team["curator"], "-f", "json").returncode == 0
