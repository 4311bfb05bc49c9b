"""Recording every ``kbindex query`` in ``queries`` / ``query_attempts``.

A *query* is a distinct ``(question, context)`` pair (context ``''`` when none
was given); each run of it adds an *attempt*. A query with keywords and no question (``query -k RL``) is
a query of its own each time: two of them with other keywords are not one question asked twice. Attempt columns:

- ``keywords``: JSON list of the user keywords of the attempt, as given with
  ``--keywords``, else the known keywords found in the question
  (``options.keywords_from`` says which);
- ``expand_depth``, ``threshold``, ``method`` (the method actually used),
  ``result_count`` (results returned);
- ``top_results``: JSON list of the first 10 results, each
  ``{"filepath", "score", "matched_keywords", "sources"}``;
- ``expansions``: JSON list, one entry per expanded keyword:
  ``{"user_keyword", "keyword", "weight", "hops", "via", "relation_id",
  "similarity_type", "relation_score", "path": [relation ids],
  "context_match"?}`` -- which user keyword reached which keyword through
  which relation(s), so learning can adjust similarity scores;
- ``options`` (migration ``m020_retrieval``): JSON object with the query's
  options (:meth:`kb_indexer.search.options.QueryOptions.to_dict`; rows
  written before it hold only ``types``, ``weights``, ``limit`` and
  ``context_threshold``) plus ``method_requested``, ``keywords_from`` and
  ``identifiers``; :func:`recorded_options` reads them back for ``refine``.

Recording is one transaction per query (the caller's), like every write. On PostgreSQL it is one round trip
(:func:`_record_on_server`) and commits without waiting for the server's disk (``synchronous_commit = off``,
for this transaction only): a crash of the server may lose the attempts of its last moments (at most
3 × ``wal_writer_delay``, 600 ms by default), never a half-written one, and never an attempt that feedback
was later given on (feedback commits synchronously, and that flushes every earlier commit).
"""

from __future__ import annotations

import json
from typing import Any

from kb_indexer.store.connection import inserted_id, one_at_a_time, round_trips, together, transaction
from kb_indexer.text import now_iso
from kb_indexer.store.dbapi import Connection

TOP_RESULTS = 10


#: The recorded query a question is asked again on: the same question and context; a query with no question
#: (keywords only) is never asked again.
_SAME_QUESTION = "question = ? AND question <> '' AND context = ?"


def _one_question(conn: Connection, question: str, ctx: str) -> None:
    one_at_a_time(conn, f"query\x1f{question}\x1f{ctx}")


def get_or_create_query(conn: Connection, question: str, context: str | None) -> int:
    """The id of the ``(question, context)`` query, created if new (always, for no question: keywords
    only); marks it attempted now. Inside the caller's transaction; two processes asking the same question
    at once make one query."""
    ctx = context or ""
    now = now_iso()
    _one_question(conn, question, ctx)
    row = conn.execute(f"SELECT id FROM queries WHERE {_SAME_QUESTION} ORDER BY id LIMIT 1",
                       (question, ctx)).fetchone()
    if row is not None:
        conn.execute("UPDATE queries SET last_attempted_at = ? WHERE id = ?", (now, row[0]))
        query_id: int = row[0]
        return query_id
    cur = conn.execute("INSERT INTO queries (question, context, created_at, last_attempted_at, asker) "
                       "VALUES (?, ?, ?, ?, kb_asker()) RETURNING id", (question, ctx, now, now))
    return inserted_id(cur)


def top_results(results: list[dict[str, Any]], n: int = TOP_RESULTS) -> list[dict[str, Any]]:
    return [{"filepath": r["filepath"], "score": r["relevance_score"], "matched_keywords": r["matched_keywords"],
             "sources": r["sources"]} for r in results[:n]]


#: The attempt's asker is the SQL function kb_asker() (kb_indexer.store.team): the last column, not a parameter.
_ATTEMPT_COLUMNS = ("query_id, keywords, expand_depth, threshold, method, result_count, top_results, expansions, "
                    "options, created_at, asker")


def _attempt_values(keywords: list[str], expand_depth: int, threshold: float, method: str,
                    results: list[dict[str, Any]], expansions: list[dict[str, Any]],
                    options: dict[str, Any] | None = None) -> tuple[Any, ...]:
    """An attempt's columns after ``query_id``."""
    return (_json(keywords), expand_depth, threshold, method, len(results), _json(top_results(results)),
            _json(expansions), _json(options or {}), now_iso())


def add_attempt(conn: Connection, query_id: int, **attempt: Any) -> int:
    cur = conn.execute(f"INSERT INTO query_attempts ({_ATTEMPT_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, "
                       "kb_asker()) RETURNING id", (query_id, *_attempt_values(**attempt)))
    return inserted_id(cur)


# get_or_create_query and add_attempt in one statement (PostgreSQL: data-modifying WITH), after the question's
# lock: the query found is marked attempted, or one is created, and the attempt is written on it.
_RECORD_SQL = (
    f"WITH found AS (SELECT id FROM queries WHERE {_SAME_QUESTION} ORDER BY id LIMIT 1), "
    "touched AS (UPDATE queries SET last_attempted_at = ? WHERE id = (SELECT id FROM found) RETURNING id), "
    "created AS (INSERT INTO queries (question, context, created_at, last_attempted_at, asker) "
    "SELECT ?, ?, ?, ?, kb_asker() "
    "WHERE NOT EXISTS (SELECT 1 FROM found) RETURNING id), "
    "q AS (SELECT id FROM touched UNION ALL SELECT id FROM created) "
    f"INSERT INTO query_attempts ({_ATTEMPT_COLUMNS}) SELECT id, ?, ?, ?, ?, ?, ?, ?, ?, ?, kb_asker() FROM q "
    "RETURNING query_id, id")


def _record_on_server(conn: Connection, question: str, ctx: str, attempt: dict[str, Any]) -> tuple[int, int]:
    """:func:`record` of a new attempt on PostgreSQL: its five statements sent together (one round trip),
    committed without waiting for the disk (see the module docstring)."""
    now = now_iso()
    values = (question, ctx, now, question, ctx, now, now, *_attempt_values(**attempt))
    with together(conn, write=True):   # outside a transaction (record's test): one pipelined round trip
        conn.execute("SET LOCAL synchronous_commit = off")
        _one_question(conn, question, ctx)
        cur = conn.execute(_RECORD_SQL, values)
    qid, aid = cur.fetchone()
    return int(qid), int(aid)


def record(conn: Connection, question: str, context: str | None, *, query_id: int | None = None,
           **attempt: Any) -> tuple[int, int]:
    """Record one attempt (creating its query if needed, or on ``query_id`` for ``refine``) in one
    transaction; returns (query_id, attempt_id)."""
    if query_id is None and round_trips(conn) and not conn.in_transaction:
        return _record_on_server(conn, question, context or "", attempt)
    with transaction(conn):
        if query_id is None:
            qid = get_or_create_query(conn, question, context)
        else:
            qid = query_id
            conn.execute("UPDATE queries SET last_attempted_at = ? WHERE id = ?", (now_iso(), qid))
        aid = add_attempt(conn, qid, **attempt)
    return qid, aid


def get_attempt(conn: Connection, attempt_id: int) -> dict[str, Any] | None:
    """One attempt with its JSON columns decoded (None if there is no such attempt)."""
    r = conn.execute("SELECT a.*, q.question, q.context FROM query_attempts a JOIN queries q ON q.id = a.query_id "
                     "WHERE a.id = ?", (attempt_id,)).fetchone()
    if r is None:
        return None
    return {"attempt_id": r["id"], "query_id": r["query_id"], "question": r["question"], "context": r["context"] or None,
            "keywords": _load(r["keywords"], []), "expand_depth": r["expand_depth"], "threshold": r["threshold"],
            "method": r["method"], "result_count": r["result_count"], "top_results": _load(r["top_results"], []),
            "expansions": _load(r["expansions"], []), "options": _load(r["options"], {}),
            "created_at": r["created_at"], "asker": r["asker"]}


def recorded_options(conn: Connection, query_id: int) -> dict[str, Any]:
    """The options the query's latest attempt ran with (the query options by name; the ``expand_depth``,
    ``threshold`` and requested-method columns of older rows fill in what their ``options`` lack)."""
    r = conn.execute("SELECT a.expand_depth, a.threshold, a.options, q.context FROM query_attempts a "
                     "JOIN queries q ON q.id = a.query_id WHERE a.query_id = ? ORDER BY a.id DESC LIMIT 1",
                     (query_id,)).fetchone()
    if r is None:
        return {}
    stored = _load(r["options"], {})
    stored = stored if isinstance(stored, dict) else {}
    out: dict[str, Any] = {"expand_depth": r["expand_depth"], "min_weight": r["threshold"],
                           "method": stored.get("method_requested") or "auto"}
    out.update(stored)
    out["context"] = r["context"] or None
    return out


def attempts_for(conn: Connection, query_id: int) -> list[dict[str, Any]]:
    ids = [r[0] for r in conn.execute("SELECT id FROM query_attempts WHERE query_id = ? ORDER BY id", (query_id,))]
    return [a for a in (get_attempt(conn, i) for i in ids) if a is not None]


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _load(text: str | None, default: Any) -> Any:
    if not text:
        return default
    try:
        return json.loads(text)
    except ValueError:
        return default
