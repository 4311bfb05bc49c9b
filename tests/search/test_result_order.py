"""Result order: ties cut the same way under any --limit, exact keyword matches outrank expansion-only ones."""

from __future__ import annotations

import pytest

from kb_indexer.api import KnowledgeBase
from kb_indexer.search import fulltext
from tests.helpers import kw, write_doc
from kb_indexer.api import QueryOptions

pytestmark = pytest.mark.both_engines


@pytest.fixture
def tied(tmp_path):
    """30 documents with identical text, added in reverse path order (ids run against filepaths), and
    20 tagged 'alpha' ones (more than fulltext.PER_ROW_MAX, the many-candidates branch)."""
    root = tmp_path / "p"
    kbdir = root / "knowledge-base"
    kbdir.mkdir(parents=True)
    handle, _ = KnowledgeBase.init(root / "kbindex.db", kbdir)
    names = [f"same-{i:02d}.md" for i in range(30)]
    for name in reversed(names):
        write_doc(kbdir, name, "# Same\n\nbeta gamma delta.\n")
        handle.add(str(kbdir / name))
    for i in reversed(range(20)):
        name = f"tagged-{i:02d}.md"
        write_doc(kbdir, name, f"# Tagged {i}\n\nabout epsilon {'zeta ' * (i % 3)}\n", kw("t", "alpha"))
        handle.add(str(kbdir / name))
    yield handle, names
    handle.close()


def _paths(handle, question, limit, keywords=None, **opts):
    out = handle.query(question, keywords, QueryOptions(limit=limit, record=False, **opts))
    return [r["filepath"] for r in out["results"]], [r["relevance_score"] for r in out["results"]]


@pytest.mark.parametrize("method", ["fulltext", "hybrid"])
def test_tied_fulltext_results_are_the_first_n_of_a_larger_limit(tied, method):
    handle, names = tied
    full, scores = _paths(handle, "beta gamma", 100, method=method)
    assert full == sorted(names)                       # all tied: by filepath
    assert len(set(scores)) == 1
    for n in (1, 2, 3, 7, 29):
        assert _paths(handle, "beta gamma", n, method=method)[0] == full[:n], n


def test_ties_are_cut_by_path_in_the_many_tagged_candidates_branch(tied):
    handle, names = tied
    # 'alpha' tags 20 documents (> PER_ROW_MAX): full-text scores come from one pass over all matches.
    assert 20 > fulltext.PER_ROW_MAX
    full, _ = _paths(handle, "beta gamma", 100, keywords=["alpha"], method="hybrid")
    assert len(full) == 50
    for n in (1, 5, 20, 21, 25, 33):
        assert _paths(handle, "beta gamma", n, keywords=["alpha"], method="hybrid")[0] == full[:n], n


def test_results_are_a_prefix_of_larger_limits_on_the_bundled_kb(kb):
    for question in ("reinforcement learning", "policy gradient PPO actor critic", "how do agents learn",
                     "sqlite full text search", "testing python"):
        full, _ = _paths(kb, question, 50)
        for n in range(1, len(full) + 1):
            assert _paths(kb, question, n)[0] == full[:n], (question, n)


def test_fulltext_search_keeps_every_document_tied_with_the_last():
    import sqlite3

    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE VIRTUAL TABLE documents_fts USING fts5(title, summary, keywords, body)")
    conn.execute("CREATE TABLE documents (id INTEGER PRIMARY KEY)")   # as in an index: snippets ask its size
    for i in range(10):
        conn.execute("INSERT INTO documents_fts (rowid, title, summary, keywords, body) VALUES (?, '', '', '', ?)",
                     (i + 1, "same words here" if i < 6 else "same other words and more text"))
        conn.execute("INSERT INTO documents (id) VALUES (?)", (i + 1,))
    q = fulltext.build_query(["same"])
    rows = fulltext.search(conn, q, 2)
    assert len(rows) == 6 and {r[0] for r in rows} == set(range(1, 7))   # all six tied with the second
    assert len(fulltext.search(conn, q, 6)) == 6
    assert len(fulltext.search(conn, q, 7)) == 10
    scores = {i: 1.0 for i in range(5)} | {9: 2.0}
    assert sorted(fulltext.best_with_ties(scores, 2, 2.0)) == [0, 1, 2, 3, 4, 9]
    assert fulltext.best_with_ties({1: 3.0, 2: 2.0, 3: 1.0}, 2, 3.0) == [1, 2]


# -- 7. exact matches outrank expansion-only matches, with equal other evidence ----------------------------

@pytest.fixture
def exact_vs_expansion(small):
    handle, kbdir = small
    body = "# Policy notes\n\nPolicy gradient methods with an actor and a critic.\n"
    # The same full-text content: title, summary and body alike, and the same keyword tokens
    # (rl, reinforcement, learning, lab) in the keywords column, so bm25 is equal. The expansion-only
    # document sorts first by path, so a tie would put it first.
    write_doc(kbdir, "a-expansion-only.md", body, kw("notes", "reinforcement learning", "RL lab"))
    write_doc(kbdir, "b-exact.md", body, kw("notes", "RL", "reinforcement learning lab"))
    handle.sync()
    handle.relate("RL", "reinforcement learning", "abbreviation", "machine learning", 1.0)
    yield handle
    handle.close()


@pytest.mark.parametrize("question,keywords", [
    ("policy gradient PPO actor critic", ["RL"]),
    ("RL policy gradient", None),
    ("actor critic", ["RL"]),
])
def test_exact_match_outranks_expansion_only_with_equal_fulltext(exact_vs_expansion, question, keywords):
    out = exact_vs_expansion.query(question, keywords,
                                   options=QueryOptions(explain=True, record=False, method="hybrid"))
    by_path = {r["filepath"]: r for r in out["results"]}
    exact, expansion = by_path["b-exact.md"], by_path["a-expansion-only.md"]
    assert exact["score_parts"]["fulltext"] == expansion["score_parts"]["fulltext"]
    assert exact["score_parts"]["bm25"] == expansion["score_parts"]["bm25"]
    assert "keyword" in exact["sources"] and "keyword" not in expansion["sources"]
    assert "expansion" in expansion["sources"]
    # even the strongest expansion (an abbreviation with score 1) counts 0.8 of the keyword itself
    assert expansion["score_parts"]["keyword"] == pytest.approx(0.8)
    assert exact["relevance_score"] > expansion["relevance_score"]
    assert [r["filepath"] for r in out["results"]][:2] == ["b-exact.md", "a-expansion-only.md"]


def test_much_stronger_fulltext_may_put_an_expansion_only_document_first(kb):
    """Not a hard tier: the reviewer's query ranks the policy-gradient document (expansion-only evidence,
    by far the best full-text match) above documents tagged RL itself; that is the intended trade-off."""
    out = kb.query("policy gradient PPO actor critic", ["RL"], options=QueryOptions(explain=True, record=False))
    top = out["results"][0]
    assert top["filepath"] == "policy-gradient-methods.md"
    assert "keyword" not in top["sources"] and "expansion" in top["sources"]
    exact = [r for r in out["results"] if "keyword" in r["sources"]]
    assert exact and all(r["score_parts"]["fulltext"] < top["score_parts"]["fulltext"] - 1 / 3 for r in exact)
