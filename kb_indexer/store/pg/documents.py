"""Writing a document and its keywords on PostgreSQL in fewer round trips than the portable path of
:mod:`kb_indexer.store.documents` (same rows, same order, same values).

On SQLite a statement costs microseconds; on a server every statement is a round trip (and, on a loaded
machine, a wait for the server process to be scheduled). ``sync`` writes thousands of documents, so:

* a document is inserted or updated by one ``INSERT ... ON CONFLICT (filepath) DO UPDATE ... RETURNING``;
  a new one's keyword rows go in the same statement (a data-modifying CTE);
* an edited document's keyword rows are replaced and its keywords text read back in one round trip (pipeline);
* the keywords of a document not yet known to this command are looked up in one statement and the new ones
  inserted in one more (instead of a lookup, and an insert, per keyword).
"""

from __future__ import annotations

from typing import Any, Sequence

from kb_indexer.store.pg import NUL_STAND_IN   # (not .connection: this module imports no psycopg)

#: A document, inserted or updated (``created`` is true for an insert: ``xmax`` is 0 only for a row this
#: statement inserted), with a new document's keyword rows (the arrays, in order; none for an update).
_UPSERT = (
    "WITH d AS (INSERT INTO documents (filepath, title, summary, content_hash, stat_sig, keywords_file, "
    "created_at, updated_at, text_hash) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (filepath) DO UPDATE SET "
    "title = excluded.title, summary = excluded.summary, content_hash = excluded.content_hash, "
    "stat_sig = excluded.stat_sig, keywords_file = excluded.keywords_file, updated_at = excluded.updated_at, "
    "text_hash = coalesce(excluded.text_hash, documents.text_hash) RETURNING id, (xmax = 0) AS created), "
    "k AS (INSERT INTO document_keywords (document_id, keyword_id, category, source, weight) "
    "SELECT d.id, u.kid, u.category, u.source, u.weight FROM d CROSS JOIN "
    "unnest(?::bigint[], ?::text[], ?::text[], ?::float8[]) WITH ORDINALITY AS u(kid, category, source, weight, n) "
    "WHERE d.created ORDER BY u.n) "
    "SELECT id, created FROM d"
)


def _text(value: str | None) -> str | None:
    return value.replace("\x00", NUL_STAND_IN) if value is not None and "\x00" in value else value


def upsert(conn: Any, values: Sequence[Any], links: list[tuple[int, str | None, str, float]]) -> tuple[int, bool]:
    """Insert or update the document ``values`` (filepath, title, summary, content_hash, stat_sig,
    keywords_file, created_at, updated_at, text_hash); a new one gets ``links`` (keyword id, category,
    source, weight) as its keyword rows in the same statement. Returns (id, created)."""
    arrays = ([k for k, _, _, _ in links], [_text(c) for _, c, _, _ in links], [s for _, _, s, _ in links],
              [w for _, _, _, w in links])
    row = conn.execute(_UPSERT, (*values, *arrays)).fetchone()
    return int(row[0]), bool(row[1])


def keyword_ids(conn: Any, norms: list[str], displays: dict[str, str],
                categories: dict[str, str | None]) -> dict[str, tuple[int, str]]:
    """``{keyword: (id, display)}`` for ``norms`` (normalised, distinct): the stored ones in one statement, the
    others inserted in one more (with ``displays`` / ``categories``)."""
    got = {r[0]: (int(r[1]), r[2]) for r in conn.execute(
        "SELECT keyword, id, display FROM keywords WHERE keyword = ANY(?::text[])", ([_text(n) for n in norms],))}
    missing = [n for n in norms if _text(n) not in got]
    if missing:
        rows = conn.execute(
            "INSERT INTO keywords (keyword, display, category) SELECT keyword, display, category FROM unnest(?::text[], ?::text[], ?::text[]) "
            "WITH ORDINALITY AS u(keyword, display, category, n) ORDER BY n "
            "RETURNING keyword, id, display",
            ([_text(n) for n in missing], [_text(displays[n]) for n in missing],
             [_text(categories[n]) for n in missing])).fetchall()
        got.update({r[0]: (int(r[1]), r[2]) for r in rows})
    return {n: got[_text(n)] for n in norms}


def relink(conn: Any, doc_id: int, rows: list[tuple[Any, ...]], link_sql: str, text_sql: str) -> str:
    """A stored document's keyword rows replaced by ``rows`` (its learned ones kept, ``link_sql`` upserts them)
    and its keywords text (``text_sql``) read back, in one round trip: the statements as
    :mod:`kb_indexer.store.documents` runs them one by one, in a pipeline."""
    with conn.pipelined():
        conn.execute("DELETE FROM document_keywords WHERE document_id = ? AND source != 'learned'", (doc_id,))
        conn.executemany(link_sql, rows)
        shown = conn.execute(text_sql, (doc_id,))
    return " ; ".join(r[0] for r in shown.fetchall())
