"""Full-text search on PostgreSQL gives FTS5's own bm25: the same documents match, with the same scores (to
1e-6 relative), for the same rows and questions as the SQLite engine: phrases, column weights, updates and
deletes, a term in most documents, unicode and diacritics, and user text that looks like FTS5 syntax."""

from __future__ import annotations

import random
import shutil
import tempfile
import uuid
from typing import Any

import pytest

pgserver = pytest.importorskip("pgserver")
psycopg = pytest.importorskip("psycopg")

from kb_indexer.search import fulltext  # noqa: E402
from kb_indexer.search.terms import content_terms, parse_text  # noqa: E402
from kb_indexer.store import fulltext as store  # noqa: E402
from kb_indexer.store.connection import connect  # noqa: E402
from kb_indexer.store.migrations import migrate  # noqa: E402
from kb_indexer.store.pg import fulltext as pg  # noqa: E402

WORDS = ("flow boundary layer heat transfer mach number shock wave pressure wing body supersonic "
         "laminar turbulent plate cone cylinder jet nozzle model theory measured computed velocity "
         "Reynolds stress buckling shell panel flutter vibration").split()
ODD = ["café", "naïve", "Ærø", "東京", "данные", "x²", "3.14", "v2.0", "HTTP/2", "don't", "q-learning",
       "a" * 70, "ﬁle", "İstanbul", "straße", "🙂ok", "Q-Learning", "cafe"]
KEYWORDS = ["boundary layer", "heat transfer", "mach number", "shock wave", "q-learning", "flutter"]
QUESTIONS = ["boundary layer flow", "heat heat transfer", "café naïve", "東京 data", "3.14 shock", "v2.0",
             "q-learning model", "mach number at the wing", "straße file", "Reynolds stress in a shell",
             "nothingmatchesthis", "CAFE naive", "Istanbul"]
# Terms that FTS5 would read as syntax if they reached it unquoted: on both engines they are plain text.
SYNTAX = [['title:flow'], ['NEAR(heat transfer)'], ['flow*'], ['"shock wave"'], ['heat AND NOT wave'],
          ['-turbulent', '^laminar'], ['{title body}: mach'], ['wing OR'], ["don't"], ['HTTP/2 x²']]
PHRASES = [["boundary layer"], ["layer heat"], ["wing body flow"], ["q-learning"], ["heat", "heat", "flow"],
           ["mach number", "shock"], ["café naïve"], ["a" * 70 + " flow"]]
WEIGHTS = [fulltext.DEFAULT_COLUMN_WEIGHTS, (1.0, 1.0, 1.0, 1.0), (5.0, 0.0, 0.5, 1.0), (0.0, 0.0, 0.0, 1.0)]


def PgConn(raw: Any) -> Any:
    """The engine's own connection (kb_indexer.store.pg.connection.PgConnection) over ``raw``."""
    from kb_indexer.config import DbUrl
    from kb_indexer.store.pg.connection import PgConnection

    return PgConnection(raw, DbUrl(raw.info.dsn))


@pytest.fixture(scope="session")
def pg_uri():
    """A PostgreSQL server for the session. Its data folder is not under pytest's temporary root: run as
    root, pgserver runs the server as another user and opens the folder's parents to it, and any pytest
    session starting meanwhile closes ``/tmp/pytest-of-root`` again (mode 0700)."""
    data = tempfile.mkdtemp(prefix="kbindex-pg-")
    try:
        server = pgserver.get_server(data, cleanup_mode="stop")
        try:
            yield server.get_uri()
        finally:
            server.cleanup()
    finally:
        shutil.rmtree(data, ignore_errors=True)


@pytest.fixture
def engines(pg_uri, tmp_path):
    """(SQLite index, PostgreSQL connection in a fresh database), both with the full-text schema."""
    name = f"kb_{uuid.uuid4().hex}"
    with psycopg.connect(pg_uri, autocommit=True) as admin:
        admin.execute(f"CREATE DATABASE {name}")
    raw = psycopg.connect(psycopg.conninfo.make_conninfo(pg_uri, dbname=name), autocommit=True)
    raw.execute("CREATE TABLE documents (id BIGINT PRIMARY KEY, filepath TEXT NOT NULL)")
    pg.create_schema(raw)
    lite = connect(tmp_path / "kbindex.db", create=True)
    migrate(lite)
    yield lite, PgConn(raw)
    lite.close()
    raw.close()
    with psycopg.connect(pg_uri, autocommit=True) as admin:
        admin.execute(f"DROP DATABASE {name}")


def _text(rng: random.Random, n: int) -> str:
    words = [rng.choice(WORDS) for _ in range(n)] + [rng.choice(ODD) for _ in range(n // 8)]
    rng.shuffle(words)
    return " ".join(words)


def _rows(rng: random.Random, ids: range) -> list[tuple[int, str, str, str, str]]:
    return [(i, _text(rng, 4), _text(rng, rng.randint(0, 12)), " ; ".join(rng.sample(KEYWORDS, 3)),
             "\n\n".join(_text(rng, rng.randint(10, 60)) for _ in range(3))) for i in ids]


def _write(lite, pgc, rows) -> None:
    for conn in (lite, pgc.raw):
        for r in rows:
            conn.execute("INSERT INTO documents (id, filepath) VALUES (%s, %s) ON CONFLICT (id) DO NOTHING"
                         if conn is pgc.raw else "INSERT OR IGNORE INTO documents (id, filepath) VALUES (?, ?)",
                         (r[0], f"d{r[0]}.md"))
    lite.execute("BEGIN")
    store.write_rows(lite, rows)
    lite.execute("COMMIT")
    store.write_rows(pgc, rows)


def _term_lists() -> list[list[str]]:
    return [content_terms(parse_text(q).words) for q in QUESTIONS] + SYNTAX + PHRASES


def _assert_same(lite, pgc, weights=fulltext.DEFAULT_COLUMN_WEIGHTS) -> int:
    compared = 0
    for terms in _term_lists():
        q = fulltext.build_query(terms)
        expected = fulltext.all_scores(lite, q, weights)
        got = fulltext.all_scores(pgc, q, weights)
        assert set(got) == set(expected), (terms, weights)
        for d, s in expected.items():
            assert got[d] == pytest.approx(s, rel=1e-6, abs=1e-12), (terms, weights, d)
        compared += len(expected)
    return compared


@pytest.fixture
def corpus(engines):
    lite, pgc = engines
    _write(lite, pgc, _rows(random.Random(29), range(1, 61)))
    return lite, pgc


@pytest.mark.parametrize("weights", WEIGHTS)
def test_postgres_scores_equal_fts5_bm25_for_every_question_and_column_weights(corpus, weights):
    lite, pgc = corpus
    assert _assert_same(lite, pgc, weights) > 200


def test_a_term_in_more_than_half_of_the_documents_scores_like_fts5(corpus):
    lite, pgc = corpus
    q = fulltext.build_query(["flow"])
    assert store.count_matching(lite, q) > 30          # IDF floored at 1e-6 by FTS5
    assert fulltext.all_scores(pgc, q) == pytest.approx(fulltext.all_scores(lite, q), rel=1e-6)


def test_phrases_match_tokens_in_a_row_in_one_column(corpus):
    lite, pgc = corpus
    for terms in (["boundary layer"], ["q-learning"], ["layer heat"]):
        q = fulltext.build_query(terms)
        assert set(fulltext.all_scores(pgc, q)) == set(fulltext.all_scores(lite, q))
    # a phrase whose tokens occur everywhere but never in a row matches nothing on either engine
    q = fulltext.build_query(["vibration vibration vibration vibration vibration"])
    assert fulltext.all_scores(pgc, q) == fulltext.all_scores(lite, q) == {}


def test_a_phrase_never_spans_two_columns_and_overlapping_matches_count_like_fts5(engines):
    lite, pgc = engines
    _write(lite, pgc, [(1, "notes on zeta", "omega theory", "", "zeta zeta zeta omega"),
                       (2, "zeta omega", "", "", "tick tick tick tick tock"),
                       (3, "other", "", "", "zeta")])
    for terms in (["omega theory"], ["on zeta omega"], ["zeta zeta"], ["tick tick tick"], ["zeta omega"]):
        q = fulltext.build_query(terms)
        expected = fulltext.all_scores(lite, q)
        assert fulltext.all_scores(pgc, q) == pytest.approx(expected, rel=1e-6), terms
    assert set(fulltext.all_scores(pgc, fulltext.build_query(["on zeta omega"]))) == set()   # title|summary


def test_a_phrase_repeated_back_to_back_counts_every_time_like_fts5(engines):
    lite, pgc = engines
    _write(lite, pgc, [(1, "", "", "", "alpha beta alpha beta alpha beta gamma"),
                       (2, "", "", "", "alpha beta gamma alpha beta gamma"),
                       (3, "", "", "", "beta alpha beta beta alpha"),
                       (4, "", "", "", "alphabeta alpha betas alpha beta")])
    for terms in (["alpha beta"], ["alpha beta gamma"], ["beta alpha beta"], ["alpha beta alpha"]):
        q = fulltext.build_query(terms)
        expected = fulltext.all_scores(lite, q)
        assert expected and fulltext.all_scores(pgc, q) == pytest.approx(expected, rel=1e-6), terms


def test_phrases_in_documents_with_ids_past_32_bits_score_like_fts5(engines):
    """A phrase's occurrences are keyed by each document's place, not its id: ids are BIGINT."""
    lite, pgc = engines
    _write(lite, pgc, [(1, "", "", "", "b c shock"), (2**31 + 5, "", "", "", "shock wave shock wave"),
                       (2**32 + 1, "", "", "", "a b c"), (2**40, "shock wave", "", "", "wave shock")])
    for terms in (["shock wave"], ["a b"], ["b c"], ["wave shock", "c"]):
        q = fulltext.build_query(terms)
        expected = fulltext.all_scores(lite, q)
        assert expected and fulltext.all_scores(pgc, q) == pytest.approx(expected, rel=1e-6), terms


def test_updates_and_deletes_keep_postgres_equal_to_fts5(corpus):
    lite, pgc = corpus
    rng = random.Random(7)
    _write(lite, pgc, _rows(rng, range(5, 25)) + _rows(rng, range(61, 71)))   # rewritten and new
    for conn in (lite, pgc.raw):
        conn.execute("DELETE FROM documents WHERE id IN (2, 3, 30, 70)")
    lite.execute("BEGIN")
    store.delete_rows(lite, [40, 41])
    lite.execute("COMMIT")
    store.delete_rows(pgc, [40, 41])
    assert _assert_same(lite, pgc) > 200
    documents, tokens = pgc.raw.execute("SELECT documents, tokens FROM text_totals").fetchone()
    assert (documents, tokens) == pgc.raw.execute("SELECT count(*), sum(length) FROM documents_text").fetchone()
    assert documents == 70 - 4 - 2


def test_scores_asked_again_follow_every_write_and_never_a_rolled_back_one(corpus):
    lite, pgc = corpus
    q = fulltext.build_query(["heat transfer", "flutter"])
    first = fulltext.all_scores(pgc, q)
    assert fulltext.all_scores(pgc, q) == first
    pgc.raw.execute("BEGIN")     # an uncommitted write, scored inside its transaction, then rolled back
    store.write_rows(pgc, [(1, "flutter flutter", "", "", "flutter heat transfer")])
    assert fulltext.all_scores(pgc, q) != first
    pgc.raw.execute("ROLLBACK")
    _write(lite, pgc, [(2, "flutter", "", "", "heat transfer of a flutter panel")])   # committed
    expected = fulltext.all_scores(lite, q)
    assert expected != first
    assert fulltext.all_scores(pgc, q) == pytest.approx(expected, rel=1e-6)


def test_clearing_the_full_text_leaves_no_postings_and_zero_totals(corpus):
    lite, pgc = corpus
    store.clear(pgc)
    assert pgc.raw.execute("SELECT documents, tokens FROM text_totals").fetchone() == (0, 0)
    assert pgc.raw.execute("SELECT count(*) FROM text_postings").fetchone()[0] == 0
    assert fulltext.all_scores(pgc, fulltext.build_query(["flow"])) == {}


def test_totals_roll_back_with_the_writing_transaction(corpus):
    lite, pgc = corpus
    before = pgc.raw.execute("SELECT documents, tokens FROM text_totals").fetchone()
    pgc.raw.execute("BEGIN")
    pgc.raw.execute("INSERT INTO documents (id, filepath) VALUES (100, 'new.md')")
    store.write_rows(pgc, _rows(random.Random(1), range(100, 101)))
    assert pgc.raw.execute("SELECT documents FROM text_totals").fetchone()[0] == before[0] + 1
    pgc.raw.execute("ROLLBACK")
    assert pgc.raw.execute("SELECT documents, tokens FROM text_totals").fetchone() == before
    assert pgc.raw.execute("SELECT count(*) FROM text_postings WHERE document_id = 100").fetchone()[0] == 0


def test_search_counts_and_stored_text_agree_between_engines(corpus):
    lite, pgc = corpus
    q = fulltext.build_query(["mach number", "shock"])
    a, b = fulltext.search(lite, q, 5), fulltext.search(pgc, q, 5)
    assert [round(s, 9) for _, s, _ in a] == [round(s, 9) for _, s, _ in b]
    assert store.count_found(lite, q, [1, 2, 999]) == store.count_found(pgc, q, [1, 2, 999])
    assert store.count_found(lite, None, [1, 2, 999]) == store.count_found(pgc, None, [1, 2, 999]) == 2
    one = fulltext.build_query(["flow"])
    assert store.count_matching(lite, one, 10) == store.count_matching(pgc, one, 10) == 10
    assert store.bodies(lite, [1, 7, 999]) == store.bodies(pgc, [1, 7, 999])
    assert sorted(store.titled_texts(lite, 3)) == sorted(store.titled_texts(pgc, 3))
    assert fulltext.scores_for(pgc, q, [1, 2, 3]) == pytest.approx(fulltext.scores_for(lite, q, [1, 2, 3]))


def test_postgres_snippets_bold_the_matches_in_the_body(engines):
    lite, pgc = engines
    _write(lite, pgc, [(1, "Heat", "", "", "Intro words here. The boundary layer separates near the trailing "
                        "edge of the wing, and heat transfer rises. Other text follows."),
                       (2, "Other", "", "", "Nothing relevant at all.")])
    q = fulltext.build_query(["boundary layer", "heat"])
    snips = fulltext.snippets(pgc, q, [1, 2])
    assert list(snips) == [1]
    assert "**boundary**" in snips[1] and "**layer**" in snips[1]
    rows = fulltext.search(pgc, q, 5)
    assert [r[0] for r in rows] == [1] and "**" in rows[0][2]
