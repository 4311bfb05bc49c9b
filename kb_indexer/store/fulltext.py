"""The full-text index of documents, on either engine: every read and write of it goes through here.

SQLite keeps it in ``documents_fts`` (FTS5, ``porter unicode61 remove_diacritics 2``, ranked by FTS5's
``bm25()``: :mod:`kb_indexer.store.engines.sqlite`); PostgreSQL in the tables of
:mod:`kb_indexer.store.pg.fulltext` (the same tokens and the same bm25, from the index's own statistics:
:mod:`kb_indexer.store.engines.postgres`). Each function calls the connection's engine
(:func:`kb_indexer.store.engines.engine_of`); features never write FTS5 syntax or SQL against the full-text
tables.

A query is a :class:`TextQuery`: plain ``terms`` (a term of several tokens is a phrase) and, for FTS5, their
``match`` expression (string literals OR-ed: :mod:`kb_indexer.search.fulltext` builds both). Scores are
bm25, higher is better. A snippet is ``None`` when the caller is to make one itself from the body (a body
over ``max_chars`` on SQLite, where FTS5's ``snippet()`` costs the square of its matches; always on PostgreSQL).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ContextManager

from kb_indexer.store.dbapi import Connection
from kb_indexer.store.engines import engine_of
from kb_indexer.store.engines.shapes import FtsRow as Row, TextQuery
from kb_indexer.store.engines.sqlite import phrase_sql as _phrase_sql

if TYPE_CHECKING:
    from kb_indexer.store.fts_tokens import Tokenizer

__all__ = ["Row", "TextQuery", "all_scores", "bodies", "body", "clear", "count_each", "count_found", "count_matching",
           "delete_rows", "heads", "one_read", "phrase_scores", "phrase_sql", "ranked", "scores_of", "snippets",
           "titled_texts", "tokenizer", "write_rows"]


def one_read(conn: Connection) -> ContextManager[None]:
    """A block in which every full-text read of the same terms gives the first one's scores (one question: one
    snapshot of the scores, read once). SQLite reads its index directly: nothing to share."""
    return engine_of(conn).one_read()


def tokenizer(conn: Connection) -> Tokenizer:
    """Tokens as the full-text index makes them: on SQLite this connection's tokenizer, kept between questions;
    on PostgreSQL SQLite's tokenizer on a private in-memory database, the one the index was written with."""
    return engine_of(conn).tokenizer(conn)


# -- writing ------------------------------------------------------------------------------------------


def write_rows(conn: Connection, rows: list[Row]) -> None:
    """(Re)write the full-text rows of documents (inside the caller's transaction). On SQLite each change
    is logged for the sparse index (:mod:`kb_indexer.store.sparse`)."""
    engine_of(conn).write_rows(conn, rows)


def delete_rows(conn: Connection, doc_ids: list[int]) -> None:
    """Remove documents' full-text rows (deleting a document removes its row by itself)."""
    engine_of(conn).delete_rows(conn, doc_ids)


def clear(conn: Connection) -> None:
    """Remove every full-text row (an import that replaces everything)."""
    engine_of(conn).clear(conn)


# -- reading the stored text --------------------------------------------------------------------------


def body(conn: Connection, doc_id: int) -> str:
    """A document's indexed body ("" when it has no full-text row)."""
    return bodies(conn, [doc_id]).get(doc_id, "")


def bodies(conn: Connection, doc_ids: list[int]) -> dict[int, str]:
    """``{document id: body}`` of the documents that have a full-text row."""
    return engine_of(conn).bodies(conn, doc_ids) if doc_ids else {}


def heads(conn: Connection, doc_ids: list[int], max_chars: int) -> list[tuple[int, str, str, str]]:
    """``(id, filepath, title, the first max_chars characters of the body)`` of those of ``doc_ids`` that are
    documents, in one statement."""
    return engine_of(conn).heads(conn, doc_ids, max_chars) if doc_ids else []


def titled_texts(conn: Connection, every: int = 1) -> list[tuple[str, str, str]]:
    """``(filepath, title, body)`` of the indexed documents whose id is a multiple of ``every`` (1: all)."""
    return engine_of(conn).titled_texts(conn, every)


# -- ranking -------------------------------------------------------------------------------------------


def ranked(conn: Connection, query: TextQuery, limit: int, weights: tuple[float, ...], tokens: int,
           max_chars: int, snippet_rows: int | None = None) -> list[tuple[int, float, str | None]]:
    """The best ``limit`` documents, best first, as ``(document id, bm25, snippet or None)``; snippets only
    for the first ``snippet_rows`` (None: all; the others' come later if needed)."""
    return engine_of(conn).ranked(conn, query, limit, weights, tokens, max_chars, snippet_rows)


def scores_of(conn: Connection, query: TextQuery, doc_ids: list[int], weights: tuple[float, ...]) -> dict[int, float]:
    """bm25 of the given documents that match (one look-up each on SQLite: for a few documents)."""
    return engine_of(conn).scores_of(conn, query, doc_ids, weights)


def all_scores(conn: Connection, query: TextQuery, weights: tuple[float, ...]) -> dict[int, float]:
    """bm25 of every matching document, in one pass."""
    return engine_of(conn).all_scores(conn, query, weights)


def phrase_sql(weights: tuple[float, ...]) -> str:
    """SQLite: ``(rowid, bm25)`` of every document matching one string literal (the parameter), for the
    sparse index's phrases (:func:`kb_indexer.search.sparse.score`; the sparse index is SQLite's only)."""
    return _phrase_sql(weights)


def phrase_scores(conn: Connection, sql: str, literal: str) -> list[tuple[int, float]]:
    """Run a :func:`phrase_sql` statement for one string literal."""
    return [(r[0], r[1]) for r in conn.execute(sql, (literal,))]


def count_matching(conn: Connection, query: TextQuery, cap: int | None = None) -> int:
    """How many documents match ``query``; counting stops at ``cap``."""
    return engine_of(conn).count_matching(conn, query, cap)


def count_each(conn: Connection, queries: list[TextQuery], cap: int) -> list[int]:
    """How many documents match each of ``queries`` (each one term); counting stops at ``cap``. On PostgreSQL
    the terms of one token are counted in one statement (one round trip for a question's terms)."""
    return engine_of(conn).count_each(conn, queries, cap)


def count_found(conn: Connection, query: TextQuery | None, doc_ids: list[int]) -> int:
    """How many indexed documents match ``query`` or are among ``doc_ids`` (found another way)."""
    return engine_of(conn).count_found(conn, query, doc_ids)


def snippets(conn: Connection, query: TextQuery, doc_ids: list[int], tokens: int,
             max_chars: int) -> dict[int, str | None]:
    """FTS5's passage around the matches of each given document that matches (``**bold**``), or None where
    the caller makes one from the body (see the module docstring)."""
    return engine_of(conn).snippets(conn, query, doc_ids, tokens, max_chars)
