"""Method selection: a known keyword or a proper noun inside a question is a name, not an identifier
("How does AlphaGo work?" goes hybrid); real identifiers still pick the keyword method; identifier-like
words boost exact matches inside hybrid instead of switching full text off."""

from __future__ import annotations

import pytest

from helpers import kw, write_doc
from kb_indexer.search.method import choose_method, is_prose
from kb_indexer.api import QueryOptions


@pytest.mark.parametrize("question,name", [
    ("How does AlphaGo work?", "AlphaGo"),
    ("What is DeepMind?", "DeepMind"),
    ("Who built AlphaGo and how was it trained", "AlphaGo"),
    ("where is MyComponent rendered", "MyComponent"),
    ("이전에 AlphaGo 관련 작업한 적 있어?", "AlphaGo"),
])
def test_proper_noun_in_a_question_is_hybrid(question, name):
    choice = choose_method("auto", question)
    assert choice.method == "hybrid", choice.reason
    assert choice.identifiers == []
    assert [(n.text, n.kind) for n in choice.names] == [(name, "proper noun")]
    assert name in choice.reason


@pytest.mark.parametrize("question,ident", [
    ("ERR_CONNECTION_REFUSED when syncing", "ERR_CONNECTION_REFUSED"),
    ("How do I fix ERR_CONNECTION_REFUSED?", "ERR_CONNECTION_REFUSED"),
    ("why does getUserById return null", "getUserById"),
    ("what changed in src/app/main.py last week", "src/app/main.py"),
    ("the server answers HTTP 404 for every page", "404"),
    ("MyComponent props", "MyComponent"),            # no question around it
    ("where is `MyComponent` rendered", "MyComponent"),   # backticks: always code
    ("How does AlphaGo handle TypeError?", "TypeError"),
])
def test_real_identifiers_still_pick_keyword(question, ident):
    choice = choose_method("auto", question)
    assert choice.method == "keyword", choice.reason
    assert ident in [i.text for i in choice.identifiers]


def test_known_keyword_is_a_name_even_without_a_question():
    known = lambda norms: {n for n in norms if n in {"alphago", "usestate"}}   # noqa: E731
    assert choose_method("auto", "AlphaGo").method == "keyword"
    choice = choose_method("auto", "AlphaGo", known=known)
    assert choice.method == "hybrid" and [(n.text, n.kind) for n in choice.names] == [("AlphaGo", "known keyword")]
    assert choose_method("auto", "useState hook", known=known).method == "hybrid"
    assert choose_method("auto", "getUserById hook", known=known).method == "keyword"


def test_a_name_does_not_make_a_bare_number_a_status_code():
    # with AlphaGo an identifier, the uncertain 404 rode along; as a name it does not
    assert choose_method("auto", "Why did AlphaGo lose 404 games?").method == "hybrid"


def test_prose_detection():
    assert is_prose("How does AlphaGo work?")
    assert is_prose("What is DeepMind?")              # two ordinary words, one a function word
    assert not is_prose("DeepMind papers")            # one ordinary word
    assert is_prose("where is MyComponent rendered")
    assert not is_prose("MyComponent props")
    assert not is_prose("XMLHttpRequest timeout")
    assert is_prose("UserService crash on startup")


@pytest.fixture
def named(small):
    k, root = small
    write_doc(root, "alphago.md", "# AlphaGo\n\nAlphaGo combines tree search with neural networks.\n",
              kw("AlphaGo", "AlphaGo"))
    write_doc(root, "go-history.md", "# Go\n\nHow the game of Go works: stones, territory and tree search.\n")
    write_doc(root, "deepmind.md", "# Lab notes\n\nDeepMind published the AlphaGo paper; how does it work?\n")
    assert k.sync()["errors"] == []
    return k


def test_alphago_question_is_hybrid_end_to_end(named):
    out = named.query("How does AlphaGo work?", options=QueryOptions(record=False, explain=True))
    q = out["query"]
    assert q["method"] == "hybrid" and q["method_requested"] == "auto"
    assert q["explain"]["names"] == [{"text": "AlphaGo", "kind": "known keyword"}]
    assert q["explain"]["identifiers"] == []
    assert out["results"][0]["filepath"] == "alphago.md"
    # full text stays on: a document without the name is found by the question's words
    assert "go-history.md" in [r["filepath"] for r in out["results"]]


def test_identifier_like_words_are_boosted_in_hybrid(named):
    hybrid = named.query("how does DeepMind tree search work",
                         options=QueryOptions(method="hybrid", record=False, explain=True))
    terms = hybrid["query"]["explain"]["fulltext_terms"]
    assert terms.count("DeepMind") + terms.count("deepmind") == 2    # once as a word, once as an exact phrase
    plain = named.query("how does DeepMind tree search work",
                        options=QueryOptions(method="fulltext", record=False, explain=True))
    assert plain["query"]["explain"]["fulltext_terms"].count("deepmind") == 1
    assert hybrid["results"][0]["filepath"] == "deepmind.md"
