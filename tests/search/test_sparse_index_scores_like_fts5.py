"""The sparse full-text index gives FTS5's own bm25 for every match, stays current, and is never trusted
when it cannot vouch for the full-text rows (the query then runs on FTS5 with the same results)."""

from __future__ import annotations

import json
import random
import sqlite3

import pytest

from helpers import kw, write_doc
from kb_indexer.search import fulltext
from kb_indexer.search import query as query_mod
from kb_indexer.search import sparse
from kb_indexer.store import sparse as store
from kb_indexer.store.fts_tokens import Pairs, Tokenizer
from kb_indexer.api import QueryOptions

WORDS = ("flow boundary layer heat transfer mach number shock wave pressure wing body supersonic "
         "laminar turbulent plate cone cylinder jet nozzle model theory measured computed velocity "
         "Reynolds stress buckling shell panel flutter vibration").split()
ODD = ["café", "naïve", "Ærø", "東京", "данные", "x²", "3.14", "v2.0", "HTTP/2", "don't", "q-learning",
       "a" * 70, "ﬁle", "İstanbul", "straße", "🙂ok"]
KEYWORDS = ["boundary layer", "heat transfer", "mach number", "shock wave", "q-learning", "flutter",
            "laminar flow", "turbulent"]


def _text(rng: random.Random, n: int) -> str:
    words = [rng.choice(WORDS) for _ in range(n)] + [rng.choice(ODD) for _ in range(n // 10)]
    rng.shuffle(words)
    return " ".join(words)


@pytest.fixture
def sparse_kb(small, monkeypatch):
    """40 documents, each with a keywords file, synced with the sparse index kept (no size threshold)."""
    monkeypatch.setenv("KBINDEX_SPARSE_MIN_DOCS", "0")
    handle, kbdir = small
    rng = random.Random(5)
    for i in range(40):
        body = "\n\n".join(_text(rng, rng.randint(20, 80)) for _ in range(3))
        tags = rng.sample(KEYWORDS, 3)
        write_doc(kbdir, f"f{i % 4}/d{i}.md", f"# {_text(rng, 4)}\n\n{body}\n", kw(_text(rng, 8), *tags))
    result = handle.sync()
    assert result["fulltext_index"]["built"] and result["fulltext_index"]["documents"] == 40
    return handle, kbdir


QUESTIONS = ["boundary layer flow", "heat heat transfer", "café naïve", "東京 data", "3.14 shock", "v2.0",
             "q-learning model", "mach number at the wing", "turbulent laminar flow over a plate", "straße file",
             "Reynolds stress in a shell", "nothingmatchesthis"]


def _phrases(conn) -> list[str]:
    return [r[0] for r in conn.execute("SELECT keyword FROM keywords WHERE keyword LIKE '% %'")]


def _assert_same_as_fts5(conn, terms: list[str]) -> sparse.View:
    q = fulltext.build_query(terms)
    view = sparse.open_view(conn, fulltext.DEFAULT_COLUMN_WEIGHTS, q.terms)
    assert view is not None
    got = sparse.score(conn, view, q.terms, fulltext.phrase_sql())
    expected = fulltext.all_scores(conn, q)
    scores = dict(zip(got.docs.tolist(), got.scores.tolist()))
    assert set(scores) == set(expected), terms
    for d, s in expected.items():
        assert scores[d] == pytest.approx(s, rel=1e-12, abs=1e-15), (terms, d)
    return view


def _all_term_lists(conn) -> list[list[str]]:
    from kb_indexer.search.terms import content_terms, parse_text

    out = [content_terms(parse_text(q).words) for q in QUESTIONS]
    out += [[p] for p in _phrases(conn)]                      # known two-word keywords: indexed pairs
    out += [["wing body flow"], ["flow boundary", "mach"], ["layer heat"], ["café naïve"]]  # not indexed
    out += [[w, w, "flow"] for w in ("heat", "layer")]         # a repeated term counts twice
    return out


def test_scores_are_fts5_bm25_for_words_phrases_and_unicode(sparse_kb):
    handle, _ = sparse_kb
    for terms in _all_term_lists(handle.conn):
        _assert_same_as_fts5(handle.conn, terms)


def test_known_two_word_keywords_are_answered_by_the_index(sparse_kb):
    handle, _ = sparse_kb
    view = _assert_same_as_fts5(handle.conn, ["boundary layer", "heat transfer", "flow boundary"])
    assert {"boundari layer", "heat transfer"} <= view.covered
    assert "flow boundari" not in view.covered           # not a keyword: FTS5 matches that phrase


def _results(handle, question: str, **options) -> list:
    out = handle.query(question, options=QueryOptions(record=False, explain=True, **options))
    return [(r["filepath"], r["relevance_score"], r["snippet"], r["sources"], r["score_parts"]) for r in
            out["results"]] + [out["total"], out["count"]]


@pytest.mark.parametrize("limit", [3, 10, 0])
def test_query_results_are_the_same_with_or_without_the_index(sparse_kb, monkeypatch, limit):
    handle, _ = sparse_kb
    with_index = [_results(handle, q, limit=limit) for q in QUESTIONS]
    monkeypatch.setenv("KBINDEX_SPARSE_MIN_DOCS", "1000000")
    assert [_results(handle, q, limit=limit) for q in QUESTIONS] == with_index


def test_the_query_uses_the_index_when_it_is_current(sparse_kb, monkeypatch):
    handle, _ = sparse_kb
    calls = []
    real = sparse.score
    monkeypatch.setattr(sparse, "score", lambda *a, **k: calls.append(1) or real(*a, **k))
    handle.query("boundary layer flow", options=QueryOptions(record=False))
    assert calls


def test_changes_since_the_last_sync_are_read_by_the_query(sparse_kb):
    handle, kbdir = sparse_kb
    write_doc(kbdir, "new.md", "# Fresh\n\nboundary layer café flutter zephyrine\n", kw("new", "boundary layer"))
    handle.add("new.md")
    (kbdir / "f1/d1.md").write_text("# Changed\n\nmach number mach number shock wave\n", encoding="utf-8")
    handle.update("f1/d1.md")
    (kbdir / "f2/d2.md").unlink()
    (kbdir / "f2/d2.keywords.json").unlink()
    handle.remove("f2/d2.md")
    for terms in _all_term_lists(handle.conn):
        view = _assert_same_as_fts5(handle.conn, terms)
        assert view.pending == 3
    assert [r["filepath"] for r in handle.query("zephyrine",
                                                options=QueryOptions(record=False))["results"]] == ["new.md"]
    result = handle.sync()
    assert result["fulltext_index"]["folded"] == 3
    assert _assert_same_as_fts5(handle.conn, ["flutter", "boundary layer"]).pending == 0


def test_too_many_changes_make_the_query_use_fts5(sparse_kb, monkeypatch):
    handle, kbdir = sparse_kb
    monkeypatch.setattr(store, "OVERLAY_MAX", 1)
    for i in (3, 4):
        (kbdir / f"f{i % 4}/d{i}.md").write_text(f"# N{i}\n\nzephyrine panel\n", encoding="utf-8")
        handle.update(f"f{i % 4}/d{i}.md")
    assert sparse.open_view(handle.conn, fulltext.DEFAULT_COLUMN_WEIGHTS, ("zephyrine",)) is None
    paths = [r["filepath"] for r in handle.query("zephyrine", options=QueryOptions(record=False))["results"]]
    assert sorted(paths) == ["f0/d4.md", "f3/d3.md"]


def test_a_full_text_write_without_a_log_entry_is_never_trusted(sparse_kb):
    handle, _ = sparse_kb
    conn = handle.conn
    conn.execute("UPDATE documents_fts SET body = 'zeppelin' WHERE rowid = (SELECT min(id) FROM documents)")
    conn.commit()
    assert sparse.open_view(conn, fulltext.DEFAULT_COLUMN_WEIGHTS, ("zeppelin",)) is None
    assert handle.query("zeppelin", options=QueryOptions(record=False))["count"] == 1        # FTS5 answers meanwhile
    result = handle.sync()
    assert result["fulltext_index"]["folded"] == 40                     # rebuilt from every row
    _assert_same_as_fts5(conn, ["zeppelin", "flow"])


def test_other_column_weights_use_fts5(sparse_kb):
    handle, _ = sparse_kb
    assert sparse.open_view(handle.conn, (1.0, 1.0, 1.0, 1.0), ("flow",)) is None


def test_a_killed_refresh_keeps_what_it_committed(small, monkeypatch):
    monkeypatch.setenv("KBINDEX_SPARSE_MIN_DOCS", "1000000")
    handle, kbdir = small
    rng = random.Random(1)
    for i in range(30):
        write_doc(kbdir, f"d{i}.md", f"# T{i}\n\n{_text(rng, 30)}\n", kw("s", rng.choice(KEYWORDS)))
    handle.sync()
    monkeypatch.setattr(store, "FOLD_DOCS", 10)
    real, calls = store._fold_batch, []

    def dying(*args):
        calls.append(1)
        if len(calls) == 3:
            raise KeyboardInterrupt
        return real(*args)

    monkeypatch.setattr(store, "_fold_batch", dying)
    with pytest.raises(KeyboardInterrupt):
        store.refresh(handle.conn, least=0)
    state = store.load_state(handle.conn)
    assert state.documents == 20 and state.structure is None            # two batches kept, not complete
    view = _assert_same_as_fts5(handle.conn, ["flow", "boundary layer"])  # the rest read by the query itself
    assert view.pending == 10
    monkeypatch.setattr(store, "_fold_batch", real)
    assert store.refresh(handle.conn, least=0)["folded"] == 10
    monkeypatch.setenv("KBINDEX_SPARSE_MIN_DOCS", "0")
    for terms in _all_term_lists(handle.conn):
        _assert_same_as_fts5(handle.conn, terms)


def test_many_small_segments_are_merged(sparse_kb, monkeypatch):
    handle, kbdir = sparse_kb
    monkeypatch.setattr(store, "MAX_SEGMENTS", 3)
    monkeypatch.setattr(store, "MERGED_SEGMENTS", 2)
    monkeypatch.setattr(store, "MERGE_TERMS", 3)       # several batches of terms per merge
    rng = random.Random(9)
    merged = 0
    for round_ in range(5):
        for i in rng.sample(range(40), 4):
            (kbdir / f"f{i % 4}/d{i}.md").write_text(f"# R{round_}\n\n{_text(rng, 40)}\n", encoding="utf-8")
        result = handle.sync()
        assert result["fulltext_index"]["segments"] <= 3
        merged += result["fulltext_index"]["merged"]
    assert merged >= 2
    assert handle.conn.execute("SELECT count(*) FROM sparse_segments").fetchone()[0] <= 3
    assert not handle.conn.execute("SELECT 1 FROM sparse_postings WHERE segment NOT IN "
                                   "(SELECT id FROM sparse_segments)").fetchone()
    for terms in _all_term_lists(handle.conn):
        _assert_same_as_fts5(handle.conn, terms)


def test_a_keyword_added_later_is_left_to_fts5_until_every_segment_indexed_it(sparse_kb):
    handle, kbdir = sparse_kb
    write_doc(kbdir, "late.md", "# Late\n\nshell panel buckling\n", kw("late", "shell panel"))
    handle.sync()
    view = _assert_same_as_fts5(handle.conn, ["shell panel", "boundary layer"])
    assert "shell panel" not in view.covered and "boundari layer" in view.covered
    assert handle.conn.execute("SELECT count(*) FROM sparse_pairs WHERE pair = 'shell panel'").fetchone()[0] == 1


def test_a_keyword_no_longer_known_is_not_trusted(sparse_kb):
    handle, _ = sparse_kb
    conn = handle.conn
    assert conn.execute("SELECT 1 FROM sparse_pairs WHERE pair = 'mach number'").fetchone()
    conn.execute("DELETE FROM document_keywords WHERE keyword_id = (SELECT id FROM keywords WHERE keyword = "
                 "'mach number')")
    conn.execute("DELETE FROM keywords WHERE keyword = 'mach number'")
    conn.commit()
    store.refresh(conn)
    assert not conn.execute("SELECT 1 FROM sparse_pairs WHERE pair = 'mach number'").fetchone()
    _assert_same_as_fts5(conn, ["mach number"])


def test_small_knowledge_bases_keep_no_index_and_no_log(small, monkeypatch):
    monkeypatch.delenv("KBINDEX_SPARSE_MIN_DOCS", raising=False)
    handle, kbdir = small
    for i in range(5):
        write_doc(kbdir, f"d{i}.md", f"# T{i}\n\nflow\n")
    result = handle.sync()
    assert "fulltext_index" not in result
    conn = handle.conn
    assert conn.execute("SELECT count(*) FROM fulltext_log").fetchone()[0] == 0
    assert conn.execute("SELECT count(*) FROM sparse_state").fetchone()[0] == 0


def test_a_read_only_index_answers_from_the_sparse_index(sparse_kb):
    handle, kbdir = sparse_kb
    handle.close()
    conn = sqlite3.connect(f"file:{kbdir.parent / 'kbindex.db'}?mode=ro", uri=True)
    try:
        view = _assert_same_as_fts5(conn, ["flow", "boundary layer"])
        assert view.covered == {"boundari layer"}
        with pytest.raises(sqlite3.OperationalError):
            conn.execute("DELETE FROM fulltext_log")
    finally:
        conn.close()


def test_export_leaves_the_index_out(sparse_kb):
    handle, _ = sparse_kb
    from kb_indexer.store.export import export_tables

    names = export_tables(handle.conn)
    assert not [n for n in names if n.startswith("sparse_") or n == "fulltext_log"]


def test_the_tokenizer_counts_what_fts5_indexes(small):
    handle, _ = small
    conn = handle.conn
    rng = random.Random(3)
    texts = [_text(rng, 60) for _ in range(20)] + ["UPPER lower MiXeD", "", "!!!", "a-b_c.d/e'f", " ".join(ODD)]
    conn.execute("CREATE VIRTUAL TABLE temp.t USING fts5(x, tokenize = 'porter unicode61 remove_diacritics 2')")
    conn.execute("CREATE VIRTUAL TABLE temp.tv USING fts5vocab(temp, t, instance)")
    conn.executemany("INSERT INTO temp.t (rowid, x) VALUES (?, ?)", list(enumerate(texts, 1)))
    expected: dict[int, dict[str, int]] = {}
    for doc, term in conn.execute("SELECT doc, term FROM temp.tv"):
        expected.setdefault(doc - 1, {})
        expected[doc - 1][term] = expected[doc - 1].get(term, 0) + 1
    tok = Tokenizer(conn)
    (d, _c, t, n), _ = tok.count([[x] for x in texts])
    got: dict[int, dict[str, int]] = {}
    for di, ti, ni in zip(d.tolist(), t.tolist(), n.tolist()):
        got.setdefault(di, {})[tok.names[ti]] = ni
    assert got == expected


def test_pairs_are_counted_within_a_column_only(small):
    handle, _ = small
    tok = Tokenizer(handle.conn)
    pairs = Pairs(tok, [("heat", "transfer"), ("layer", "layer")])
    _, (pd, pc, pt) = tok.count([["heat", "transfer heat transfer", "", "layer layer layer heat"]], pairs)
    found = sorted(zip(pc.tolist(), [tok.names[t] for t in pt.tolist()]))
    # not title+summary ("heat" | "transfer"); overlapping "layer layer" twice, as FTS5 counts it
    assert found == [(1, "heat transfer"), (3, "layer layer"), (3, "layer layer")]


def test_sync_reports_the_index_through_the_installed_command(project, run):
    env = {"KBINDEX_SPARSE_MIN_DOCS": "0"}
    assert run("init", cwd=project, env=env).returncode == 0
    out = run("sync", "--format", "json", cwd=project, env=env)
    assert out.returncode == 0, out.stderr
    info = out.json()["fulltext_index"]
    assert info["built"] and info["documents"] > 0 and info["segments"] == 1
    q = run("query", "monte carlo tree search", "--format", "json", cwd=project, env=env)
    assert q.returncode == 0 and q.json()["results"]
    con = sqlite3.connect(project / "kbindex.db")
    assert con.execute("SELECT documents FROM sparse_state").fetchone()[0] == info["documents"]
    con.close()


def test_query_module_reads_the_threshold_each_time(monkeypatch):
    monkeypatch.setenv("KBINDEX_SPARSE_MIN_DOCS", "7")
    assert store.min_docs() == 7
    monkeypatch.setenv("KBINDEX_SPARSE_MIN_DOCS", "no")
    assert store.min_docs() == store.MIN_DOCS
    assert query_mod.sparse_min_docs is store.min_docs
    assert json.loads(store.FORMAT)["weights"] == list(fulltext.DEFAULT_COLUMN_WEIGHTS)


def test_db_stats_describe_the_index(sparse_kb, small):
    handle, kbdir = sparse_kb
    info = handle.db_stats()["fulltext_index"]
    assert info["documents"] == 40 and info["segments"] == 1 and info["pending_documents"] == 0
    (kbdir / "f1/d1.md").write_text("# Changed\n\nflow\n", encoding="utf-8")
    handle.update("f1/d1.md")
    assert handle.db_stats()["fulltext_index"]["pending_documents"] == 1


def test_two_refreshes_at_once_fold_each_change_once(sparse_kb, monkeypatch):
    handle, kbdir = sparse_kb
    for i in (5, 6, 7):
        (kbdir / f"f{i % 4}/d{i}.md").write_text(f"# C{i}\n\nzephyrine wing {i}\n", encoding="utf-8")
        handle.update(f"f{i % 4}/d{i}.md")
    from kb_indexer.store.connection import connect

    other = connect(kbdir.parent / "kbindex.db")
    real, calls = store.read_documents, []

    def racing(*args, **kwargs):   # another process folds the same batch while this one tokenises it
        calls.append(1)
        if len(calls) == 1:
            assert store.refresh(other)["folded"] == 3
        return real(*args, **kwargs)

    monkeypatch.setattr(store, "read_documents", racing)
    try:
        assert store.refresh(handle.conn)["folded"] == 0     # its batch was folded by the other: dropped
    finally:
        other.close()
    assert handle.conn.execute("SELECT count(*) FROM sparse_segments").fetchone()[0] == 2
    view = _assert_same_as_fts5(handle.conn, ["zephyrine", "boundary layer"])
    assert view.pending == 0


def test_a_merge_committed_during_a_query_makes_it_use_fts5(sparse_kb, monkeypatch):
    handle, kbdir = sparse_kb
    rng = random.Random(2)
    for round_ in range(3):   # more segments
        for i in rng.sample(range(40), 3):
            (kbdir / f"f{i % 4}/d{i}.md").write_text(f"# R{round_}\n\n{_text(rng, 30)}\n", encoding="utf-8")
        handle.sync()
    monkeypatch.setattr(store, "MAX_SEGMENTS", 1)        # the next refresh merges
    monkeypatch.setattr(store, "MERGED_SEGMENTS", 1)
    from kb_indexer.store.connection import connect

    other = connect(kbdir.parent / "kbindex.db")
    real = sparse.score

    def racing(*args, **kwargs):   # another process's sync merges between the check and the postings read
        assert store.refresh(other)["merged"] >= 2
        return real(*args, **kwargs)

    expected = _results(handle, "boundary layer flow", limit=0)
    monkeypatch.setattr(sparse, "score", racing)
    try:
        assert _results(handle, "boundary layer flow", limit=0) == expected
    finally:
        other.close()


def test_a_document_without_a_token_is_indexed(sparse_kb):
    handle, kbdir = sparse_kb
    write_doc(kbdir, "___.md", "***\n")
    for _ in range(2):
        result = handle.sync()
        assert result["errors"] == [] and result["fulltext_index"]["documents"] == 41
    view = _assert_same_as_fts5(handle.conn, ["flow", "boundary layer"])
    assert view.documents == 41


def test_the_tokenizer_cache_can_start_afresh_mid_build(small, monkeypatch):
    from kb_indexer.store import fts_tokens

    handle, _ = small
    monkeypatch.setattr(fts_tokens, "_CACHE_MAX", 5)
    tok = Tokenizer(handle.conn)
    tok.count([["alpha beta gamma"]])
    (d, _c, t, n), _ = tok.count([["alpha delta epsilon zeta"]])    # over the cap: cleared and learned again
    assert sorted(tok.names[i] for i in t.tolist()) == ["alpha", "delta", "epsilon", "zeta"]


def test_a_pair_another_fold_does_not_know_is_not_covered(small, monkeypatch):
    monkeypatch.setenv("KBINDEX_SPARSE_MIN_DOCS", "0")
    monkeypatch.setattr(store, "FOLD_DOCS", 2)
    handle, kbdir = small
    for i in range(4):
        write_doc(kbdir, f"d{i}.md", f"# Doc {i}\n\nshock wave {i}\n", kw("s", "flow"))
    handle.sync()
    from kb_indexer.store.connection import connect, transaction

    a = connect(kbdir.parent / "kbindex.db")
    try:
        with transaction(a):
            store._start(a)                                   # process A rebuilds, its pairs known now
        tok_a = Tokenizer(a)
        pairs_a = store.known_pairs(a, tok_a)                 # ... before "shock wave" is a keyword
        write_doc(kbdir, "d0.md", "# Doc 0\n\nshock wave 0\n", kw("s", "flow", "shock wave"))
        monkeypatch.setattr("kb_indexer.index.sync.refresh_sparse", lambda conn, progress=None, **_: {"built": False})
        handle.sync()                                         # process B: the keyword, then B folds first
        tok_b = Tokenizer(handle.conn)
        assert store._fold_batch(handle.conn, tok_b, store.known_pairs(handle.conn, tok_b)) == 2
        while store._fold_batch(a, tok_a, pairs_a) > 0:       # A's later segments lack the pair
            pass
    finally:
        a.close()
    view = _assert_same_as_fts5(handle.conn, ["shock wave"])
    assert "shock wave" not in view.covered


def test_a_token_longer_than_fts5_keeps_is_indexed_and_asked(sparse_kb):
    """FTS5 cuts a token at 32,768 bytes, here inside a character (11,000 CJK characters in a row): sync, a
    later sync and a query of that run still work (the sparse index reads the cut token)."""
    handle, kbdir = sparse_kb
    write_doc(kbdir, "cjk.md", "# Kanji wall\n\n" + "漢" * 11000 + "\n")
    result = handle.sync()
    assert result["errors"] == [] and result["added"] == 1 and result["fulltext_index"]["built"]
    handle.query("漢" * 11000, options=QueryOptions(record=False))   # no error (FTS5 finds nothing either)
    hits = handle.query("kanji wall", options=QueryOptions(record=False))["results"]
    assert [h["filepath"] for h in hits] == ["cjk.md"]
    write_doc(kbdir, "more.md", "# More\n\nboundary layer\n")
    assert handle.sync()["errors"] == []
