"""A PostgreSQL index written before positions were stored (its documents' token lines in
``documents_text.tokens``, postings without positions) is upgraded by migration m004: every posting gets the
positions a fresh write gives it, the token lines are dropped, and phrases score as FTS5 scores them."""

from __future__ import annotations

import pytest

psycopg = pytest.importorskip("psycopg")

from kb_indexer.store.pg import fulltext as pg  # noqa: E402
from kb_indexer.store.pg import fulltext_schema  # noqa: E402
from kb_indexer.store.pg.migrations import MIGRATIONS  # noqa: E402
from kb_indexer.store.sparse import COLUMN_WEIGHTS  # noqa: E402

ROWS = [
    (1, "Shock waves", "a shock wave summary", "shock wave, flutter", "The shock wave met a shock wave. wave shock"),
    (2, "Élan vital", "", "", "élan vital and Élan Vital again; vital élan"),
    (3, "a b a b a", "", "", "a b a b a b"),
    (4, "nothing here", "", "", "wave. Shock"),   # the phrase's tokens split by the end of a sentence: still a row
    (5, "", "", "shock", "wave at the start of the body"),   # across two columns: no phrase
]


def _token_lines(text_columns: list[str]) -> str:
    """A document's token lines as m002 wrote them: per column ``" tok tok … "``, one line per column."""
    tok = pg.tokenizer()
    return "\n".join(" " + " ".join(tok.names[i] for i in ids.tolist()) + " " if len(ids) else " "
                     for ids in tok.column_ids(text_columns))


def test_the_upgrade_stores_the_positions_a_fresh_write_gives(pg_url):
    assert "m004_text_positions" in [name for name, _ in MIGRATIONS]
    raw = psycopg.connect(pg_url, autocommit=True)
    try:
        raw.execute("CREATE TABLE documents (id BIGINT PRIMARY KEY, filepath TEXT NOT NULL)")
        raw.execute("INSERT INTO documents SELECT i, 'd' || i FROM generate_series(1, 5) i")
        pg.create_schema(raw)
        pg.write_rows(raw, ROWS)
        fresh = raw.execute("SELECT * FROM text_postings ORDER BY term, document_id").fetchall()
        questions = [["shock wave"], ["élan vital"], ["a b a"], ["wave shock"], ["shock wave", "vital"]]
        pg.forget()
        before = [pg.all_scores(raw, q, COLUMN_WEIGHTS) for q in questions]
        assert before[0] and before[1] and before[2] and 5 not in before[3]

        # the index as m002 left it: token lines, no positions
        raw.execute("ALTER TABLE documents_text ADD COLUMN tokens TEXT NOT NULL DEFAULT ''")
        for row in ROWS:
            raw.execute("UPDATE documents_text SET tokens = %s WHERE document_id = %s",
                        (_token_lines([c for c in row[1:]]), row[0]))
        raw.execute("ALTER TABLE text_postings DROP COLUMN positions")

        fulltext_schema.add_positions(raw, batch=2)   # what m004 runs, a few documents at a time

        assert raw.execute("SELECT * FROM text_postings ORDER BY term, document_id").fetchall() == fresh
        assert raw.execute("SELECT count(*) FROM information_schema.columns WHERE table_name = 'documents_text' "
                           "AND column_name = 'tokens'").fetchone()[0] == 0
        pg.forget()
        assert [pg.all_scores(raw, q, COLUMN_WEIGHTS) for q in questions] == before
        fulltext_schema.add_positions(raw)   # again: nothing to do
        assert raw.execute("SELECT * FROM text_postings ORDER BY term, document_id").fetchall() == fresh
    finally:
        raw.close()
