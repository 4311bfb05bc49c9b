"""`kbindex learned suggestions`: typed relations suggested from the query log for a person to accept. A refine chain
(an attempt that found nothing helpful, refined into one that did) suggests its replaced terms as an abbreviation or
a synonym; two questions helped by the same document suggest their distinctive terms as related concepts. One
query alone suggests nothing; accepting writes a person's relation that then expands queries; a dismissed
suggestion, an existing relation and one a person deleted are not suggested; a member cannot accept on PostgreSQL."""

from __future__ import annotations

import pytest

from kb_indexer.errors import UsageError
from kb_indexer.learn.suggest import is_initials, relation_type, replacements, suggestion_key
from tests.helpers import kw, login_role, write_doc

pytestmark = pytest.mark.both_engines

DOCS = {
    "fulltext.md": ("# Full text search\n\nFull text search ranks documents by BM25 over an inverted index.\n",
                    kw("full text search", "full text search", "bm25", "inverted index")),
    "cars.md": ("# Car repair\n\nHow to fix a car: change the oil, check the brakes.\n",
                kw("car repair", "car", "repair", "brakes")),
    "garden.md": ("# Gardening\n\nTomatoes need sun and water.\n", kw("gardening", "gardening", "tomatoes")),
}


@pytest.fixture
def kbase(small):
    kb, root = small
    for rel, (text, keywords) in DOCS.items():
        write_doc(root, rel, text, keywords)
    assert kb.sync()["errors"] == []
    kb.learning.set_policy(min_askers=1)   # one asker's index (PostgreSQL's default asks for two)
    return kb


def _refined(kb, question: str, keywords: list[str], helpful: str) -> int:
    """A question whose first attempt finds nothing helpful, refined with ``keywords`` into one that finds
    ``helpful``, marked helpful."""
    first = kb.query(question)
    qid = first["query_id"]
    assert helpful not in [r["filepath"] for r in first["results"]]
    found = kb.learning.refine(qid, keywords)
    assert helpful in [r["filepath"] for r in found["results"]]
    kb.learning.feedback(qid, [helpful])
    return qid


def _asked(kb, question: str, helpful: str) -> int:
    qid = kb.query(question)["query_id"]
    kb.learning.feedback(qid, [helpful])
    return qid


def _pairs(kb) -> dict[tuple[str, str], dict]:
    return {(s["keyword1"], s["keyword2"]): s for s in kb.learning.suggestions(limit=0)["suggestions"]}


def _fts_chains(kb) -> list[int]:
    return [_refined(kb, "fts howto", ["full text search"], "fulltext.md"),
            _refined(kb, "what is fts", ["full text search"], "fulltext.md")]


def test_the_type_rule_and_the_terms_a_refine_replaced():
    assert is_initials("fts", "full text search") and is_initials("llms", "large language models")
    assert not is_initials("fts", "fast search") and not is_initials("full text search", "fts")
    assert relation_type("full text search", "fts", True) == "abbreviation"
    assert relation_type("automobile", "car", True) == "synonym"
    assert relation_type("automobile", "car", False) == "related_concept"
    assert replacements(["fts", "howto"], ["full text search"]) == [("fts", "full text search", True)]
    assert replacements(["automobile", "fixing"], ["car", "fixing"]) == [("automobile", "car", True)]
    assert replacements(["search"], ["tree search"]) == []           # one term inside the other
    assert replacements(["agents"], ["agent"]) == []                 # one term, two spellings
    assert suggestion_key("FTS", "full text search") == suggestion_key("full text search", "fts")


def test_refine_chains_suggest_an_abbreviation_with_their_evidence(kbase):
    qids = _fts_chains(kbase)
    s = _pairs(kbase)[("fts", "full text search")]
    assert s["type"] == "abbreviation" and s["sources"] == ["refine"] and s["query_ids"] == sorted(qids)
    assert s["questions"] == ["fts howto", "what is fts"] and len(s["askers"]) == 1
    assert "initials" in s["reason"] and "in 2 queries a refine replaced 'fts' with 'full text search'" in s["reason"]
    again = kbase.learning.suggestions()
    assert again["suggestions"][0]["key"] == s["key"] and again["min_queries"] == 2


def test_refine_chains_that_swap_one_word_suggest_a_synonym(kbase):
    _refined(kbase, "automobile noises", ["car", "noises"], "cars.md")
    _refined(kbase, "automobile warranty", ["car", "warranty"], "cars.md")
    assert _pairs(kbase)[("automobile", "car")]["type"] == "synonym"


def test_questions_helped_by_the_same_document_suggest_related_concepts(kbase):
    qids = [_asked(kbase, "car maintenance", "cars.md"), _asked(kbase, "vehicle maintenance", "cars.md")]
    s = _pairs(kbase)[("car", "vehicle")]
    assert s["type"] == "related_concept" and s["sources"] == ["co_helpful"] and s["query_ids"] == sorted(qids)
    assert "same helpful document" in s["reason"]


def test_one_query_alone_suggests_nothing(kbase):
    _refined(kbase, "fts howto", ["full text search"], "fulltext.md")
    _asked(kbase, "vehicle maintenance", "cars.md")
    assert kbase.learning.suggestions()["total"] == 0


def test_the_learning_policy_judges_the_askers_as_for_learn(kbase, index_engine):
    _fts_chains(kbase)
    kbase.learning.set_policy(min_askers=2)
    out = kbase.learning.suggestions()
    # one asker is too few; on PostgreSQL this one is the owner, whose marks are enough (as for learn)
    assert out["total"] == (1 if index_engine == "postgres" else 0) and out["min_askers"] == 2


def test_an_accepted_suggestion_is_a_persons_relation_that_expands_queries(kbase):
    _fts_chains(kbase)
    before = [r["filepath"] for r in kbase.query("fts")["results"]]
    key = _pairs(kbase)[("fts", "full text search")]["key"]
    out = kbase.learning.accept_suggestions([key, "nosuchkey"])
    assert out["count"] == 1 and out["not_suggested"] == ["nosuchkey"]
    assert out["accepted"][0]["type"] == "abbreviation" and out["accepted"][0]["keyword1"] == "fts"
    related = {r["keyword"]: r for r in kbase.similar("fts")["similar_keywords"]}
    assert related["full text search"]["similarity_type"] == "abbreviation"
    author = kbase.conn.execute("SELECT origin_kind, author FROM keyword_similarities WHERE id = ?",
                                (out["accepted"][0]["id"],)).fetchone()
    assert author[0] == "person" and author[1] == kbase.conn.execute("SELECT kb_asker()").fetchone()[0]
    assert "fulltext.md" not in before and "fulltext.md" in [r["filepath"] for r in kbase.query("fts")["results"]]
    assert kbase.learning.suggestions()["total"] == 0


def test_a_dismissed_suggestion_is_not_suggested_again(kbase):
    _fts_chains(kbase)
    key = _pairs(kbase)[("fts", "full text search")]["key"]
    assert kbase.learning.dismiss_suggestions([key]) == {"dismissed": [key], "count": 1, "not_suggested": []}
    _refined(kbase, "fts explained", ["full text search"], "fulltext.md")
    assert kbase.learning.suggestions()["total"] == 0
    assert kbase.learning.accept_suggestions([key])["not_suggested"] == [key]


def test_an_existing_or_deleted_relation_is_not_suggested(kbase):
    _fts_chains(kbase)
    _refined(kbase, "automobile noises", ["car", "noises"], "cars.md")
    _refined(kbase, "automobile warranty", ["car", "warranty"], "cars.md")
    kbase.relate("fts", "full text search", "synonym", "search engines")
    kbase.relate("automobile", "car", "synonym", "vehicles")
    kbase.unrelate("automobile", "car")
    assert kbase.learning.suggestions()["total"] == 0


def test_keys_must_be_given(kbase):
    with pytest.raises(UsageError):
        kbase.learning.accept_suggestions([])
    with pytest.raises(UsageError):
        kbase.learning.dismiss_suggestions("fts")   # type: ignore[arg-type]


@pytest.mark.sqlite_only("the command line over one file; the PostgreSQL roles are tested below")
def test_the_command_line_lists_accepts_and_dismisses(kbase, run):
    _fts_chains(kbase)
    _asked(kbase, "car maintenance", "cars.md")
    _asked(kbase, "vehicle maintenance", "cars.md")
    db = str(kbase.db_path)
    table = run("learned", "suggestions", "--db", db)
    assert table.returncode == 0 and "abbreviation" in table.stdout and "related_concept" in table.stdout
    listed = run("learned", "suggestions", "--db", db, "-f", "json").json()["suggestions"]
    keys = {s["type"]: s["key"] for s in listed}
    bad = run("learned", "suggestions", keys["abbreviation"], "--db", db, "-f", "json")
    assert bad.returncode == 2 and bad.error()["code"] == "usage" and bad.stdout == ""
    both = run("learned", "suggestions", "--accept", "--dismiss", "x", "--db", db, "-f", "json")
    assert both.returncode == 2
    out = run("learned", "suggestions", "--accept", keys["abbreviation"], "--db", db, "-f", "json")
    assert out.returncode == 0 and out.json()["count"] == 1, out.stderr
    out = run("learned", "suggestions", "--dismiss", keys["related_concept"], "nokey", "--db", db)
    assert out.returncode == 0 and "nokey" in out.stderr
    assert run("learned", "suggestions", "--db", db, "-f", "json").json()["total"] == 0


MEMBER = ["GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO {role}",
          "GRANT USAGE ON ALL SEQUENCES IN SCHEMA public TO {role}"]


@pytest.mark.sqlite_only("starts its own PostgreSQL roles (runs once, not per engine)")
def test_on_postgres_two_members_chains_are_suggested_and_only_a_curator_accepts(pg_url, tmp_path, run):
    import psycopg

    root = tmp_path / "kb"
    for rel, (text, keywords) in DOCS.items():
        write_doc(root, rel, text, keywords)
    assert run("init", "--db", pg_url, "--kb", root).returncode == 0
    assert run("sync", "--db", pg_url).returncode == 0
    with psycopg.connect(pg_url, autocommit=True) as conn:
        if conn.execute("SELECT 1 FROM pg_roles WHERE rolname = 'kb_curator'").fetchone() is None:
            try:
                conn.execute("CREATE ROLE kb_curator NOLOGIN")
            except psycopg.errors.DuplicateObject:   # another test made it meanwhile
                pass
    alice, bob = login_role(pg_url, list(MEMBER), "alice"), login_role(pg_url, list(MEMBER), "bob")
    carol = login_role(pg_url, MEMBER + ["GRANT kb_curator TO {role}"], "carol")
    def chain(url: str, question: str) -> None:
        assert run("query", question, "--db", url, "-f", "json").returncode == 0
        assert run("refine", "--last", "-k", "full text search", "--db", url, "-f", "json").returncode == 0
        res = run("feedback", "--last", "--helpful", "fulltext.md", "--db", url, "-f", "json")
        assert res.returncode == 0, res.stderr
    chain(alice, "fts howto")
    chain(alice, "fts explained")
    alone = run("learned", "suggestions", "--db", alice, "-f", "json").json()
    assert alone["total"] == 0          # one member's two queries: too few askers for the default policy
    chain(bob, "what is fts")
    chain(bob, "fts basics")            # two askers, neither above the default max_share (0.5)
    listed = run("learned", "suggestions", "--db", alice, "-f", "json").json()
    assert listed["min_askers"] == 2 and len(listed["suggestions"]) == 1
    s = listed["suggestions"][0]
    assert (s["keyword1"], s["keyword2"], s["type"]) == ("fts", "full text search", "abbreviation")
    assert len(s["askers"]) == 2
    for verb in ("--accept", "--dismiss"):
        refused = run("learned", "suggestions", verb, s["key"], "--db", alice, "-f", "json")
        assert refused.returncode == 1 and refused.error()["code"] == "not_allowed", refused.stderr
    accepted = run("learned", "suggestions", "--accept", s["key"], "--db", carol, "-f", "json")
    assert accepted.returncode == 0 and accepted.json()["count"] == 1, accepted.stderr
    related = run("similar", "fts", "--db", alice, "-f", "json").json()["similar_keywords"]
    assert [r["keyword"] for r in related] == ["full text search"]


def test_the_results_have_their_declared_types(kbase):
    pydantic = pytest.importorskip("pydantic")
    from kb_indexer import results

    _fts_chains(kbase)
    _asked(kbase, "car maintenance", "cars.md")
    _asked(kbase, "vehicle maintenance", "cars.md")
    listed = kbase.learning.suggestions()
    assert listed["count"] == 2
    pydantic.TypeAdapter(results.SuggestionsResult).validate_python(listed, strict=True)
    keys = [s["key"] for s in listed["suggestions"]]
    pydantic.TypeAdapter(results.SuggestionsDismissResult).validate_python(
        kbase.learning.dismiss_suggestions(keys[1:]), strict=True)
    pydantic.TypeAdapter(results.SuggestionsAcceptResult).validate_python(
        kbase.learning.accept_suggestions(keys[:1]), strict=True)


def test_a_questions_terms_are_its_keywords_phrases_and_content_words():
    from kb_indexer.learn.suggest import attempt_terms

    assert attempt_terms('how does "fts" rank', "[]", '{"keywords_from": "question"}') == ["fts", "rank"]
    assert attempt_terms("full text search for notes", '["full text search"]', '{"keywords_from": "question"}') \
        == ["full text search", "notes"]
    assert attempt_terms("anything", '["Full Text Search"]', '{"keywords_from": "given"}') == ["full text search"]
