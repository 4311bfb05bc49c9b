"""Session ids (skill match sessions and context sessions, one rule): 1 to 200 printable characters.
A control character (ESC, NUL, newline, C1), a format character (bidi override, zero-width) or an
over-long id is bad usage: exit 2 with a clear message (a JSON error object under --format json), and
nothing is written."""

from __future__ import annotations

import json

import pytest

from helpers import skills_index

from kb_indexer.errors import UsageError

SKILLS = {"weather": ("Weather forecast for any city.", "Call the forecast service."),
          "home-lights": ("Switch the lights of a smart home on and off, dim them.", "Hue bridge.")}

BAD_IDS = ["s\x1b[2J", "s\x1b]0;pwned\x07", "s\x00", "s\x9b1m", "line\nbreak", "rtl\u202eeviL", "x" * 201, "  "]


@pytest.fixture
def db(tmp_path):
    return skills_index(tmp_path, SKILLS)


@pytest.fixture
def skills_kb(db):
    from kb_indexer.api import KnowledgeBase

    with KnowledgeBase.open(db) as handle:
        yield handle


def _sessions(skills_kb) -> tuple[int, int]:
    """(skill match sessions, context sessions) in the index."""
    skills = skills_kb.conn.execute("SELECT count(*) FROM skill_sessions").fetchone()[0]
    return skills, skills_kb.context.sessions()["count"]


@pytest.mark.parametrize("sid", BAD_IDS, ids=repr)
def test_a_bad_session_id_is_refused_by_skills_and_context_alike(skills_kb, sid):
    calls = [lambda: skills_kb.skills.match("weather in Paris", session=sid), lambda: skills_kb.skills.session(sid),
             lambda: skills_kb.skills.load(sid), lambda: skills_kb.context.add(sid, role="user", text="hello"),
             lambda: skills_kb.context.build(sid, "hello", use_llm=False, record=True), lambda: skills_kb.context.show(sid)]
    for call in calls:
        with pytest.raises(UsageError, match="session id"):
            call()
    assert _sessions(skills_kb) == (0, 0)


def test_a_printable_id_with_spaces_and_other_scripts_is_accepted(skills_kb):
    sid = "chat 2024-06 · 日本語 ✓"
    assert skills_kb.skills.match("weather in Paris", session=sid)["session"]["turn"] == 1
    skills_kb.context.add(sid, role="user", text="hello")
    assert skills_kb.context.show(sid)["count"] == 1


@pytest.mark.parametrize("args", [
    ("skills", "match", "weather in Paris", "--session", "s\x1b[2J"),
    ("skills", "session", "s\x07"),
    ("skills", "load", "--session", "s\x9b1m"),
    ("context", "add", "--session", "s\x1b]0;pwned\x07", "--role", "user", "hello"),
], ids=lambda a: " ".join(a[:2]))
def test_on_the_command_line_it_is_bad_usage_with_a_json_error(cli, db, args):
    res = cli(*args, "--db", db, "--format", "json")
    assert res.exit_code == 2, res.output
    error = json.loads(res.stderr)["error"]
    assert error["code"] == "usage" and "session id must be printable" in error["message"]
    plain = cli(*args, "--db", db)
    assert plain.exit_code == 2 and "session id must be printable" in plain.stderr
    assert "\x1b" not in plain.stderr and "\x07" not in plain.stderr


@pytest.mark.parametrize("sid", ["\u3164", "a\u115fb", "\u2800", "s\ue000", "s\u0378", "s\uffff", "\uff531",
                                 "s\u00a01"], ids=["hangul-filler", "choseong-filler", "braille-blank",
                                                   "private-use", "unassigned", "noncharacter", "fullwidth",
                                                   "no-break-space"])
def test_blank_looking_private_unassigned_or_unnormalised_ids_are_refused(sid):
    from kb_indexer.errors import UsageError
    from kb_indexer.limits import check_session_id

    with pytest.raises(UsageError):
        check_session_id(sid)
