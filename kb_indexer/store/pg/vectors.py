"""Vector search on PostgreSQL with pgvector (the ``vector`` extension), when the server has it.

Migration ``m003_pgvector`` tries ``CREATE EXTENSION IF NOT EXISTS vector``; it records the outcome in
``meta`` (``pgvector``: the extension's version, or ``unavailable: <why>``) and, with the extension, adds
an untyped ``vector`` column ``vec`` to ``embedding_chunks`` (beside the float32 BYTEA every engine keeps;
an index upgraded with vectors already stored gets them copied there).
Models differ in dimension, so each model gets a partial expression index of its own when its first
``embed`` run ends::

    CREATE INDEX ... USING hnsw ((vec::vector(DIM)) vector_ip_ops) WHERE model_id = N

Chunk vectors are unit length, so the inner product is their cosine (what the numpy path computes). A
query asks the index for the best chunks (``hnsw.ef_search`` at pgvector's largest, 1000, so a model of at
most 1000 chunks is in practice answered exactly) and keeps each document's best: the server never sends the matrix.
Without the extension, :mod:`kb_indexer.store.vectors` reads the packed matrix as on SQLite.
"""

from __future__ import annotations

import struct
from typing import Any

import psycopg

from kb_indexer.store import meta
from kb_indexer.store.pg.connection import PgConnection

META_KEY = "pgvector"
#: ``hnsw.ef_search`` of every query: pgvector's largest. HNSW answers at most that many rows, and its recall
#: grows with it: on 20k random unit vectors of 384 dimensions (the hard case), top-10 recall measured 0.82
#: at 400 and 0.97 at 1000, for 16 vs 42 ms a query (PostgreSQL 16, pgvector 0.6.2, 2 shared cores).
EF_SEARCH = 1000
#: Chunks asked of the index per document wanted (a document may have several among the best).
CHUNKS_PER_DOCUMENT = 4


def create(conn: PgConnection) -> str:
    """In the migration's transaction: the extension and the ``vec`` column when the server allows it.
    Returns what is recorded in meta (the extension's version, or ``unavailable: <why>``)."""
    raw = conn.raw
    raw.execute("SAVEPOINT kb_pgvector")
    try:
        raw.execute("CREATE EXTENSION IF NOT EXISTS vector")
    except psycopg.Error as exc:
        raw.execute("ROLLBACK TO SAVEPOINT kb_pgvector")
        why = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        state = f"unavailable: {why}"
    else:
        raw.execute("RELEASE SAVEPOINT kb_pgvector")
        raw.execute("ALTER TABLE embedding_chunks ADD COLUMN IF NOT EXISTS vec vector")
        row = raw.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'").fetchone()
        state = str(row[0]) if row else "unknown version"
        _backfill(conn)
    meta.put(conn, META_KEY, state)
    return state


def retry(conn: PgConnection) -> str | None:
    """In a writer's transaction (``embed``): an index whose ``m003_pgvector`` found the extension
    unavailable tries again, since a server's administrator may have installed it (or granted the right
    to) since ``init``; with it, the stored vectors are copied into pgvector and each model gets its index.
    Returns the state now recorded (None before the migration ran)."""
    return create(conn) if unavailable(conn) else state(conn)


def _backfill(conn: PgConnection) -> None:
    """An index upgraded to pgvector: its stored chunks get their ``vector`` and each model its index."""
    models = conn.raw.execute("SELECT DISTINCT m.id, m.dim FROM embedding_models m "
                              "JOIN embedding_chunks c ON c.model_id = m.id").fetchall()
    for model_id, dim in models:
        rows = conn.raw.execute("SELECT document_id, chunk_no, vector FROM embedding_chunks WHERE model_id = %s",
                                (model_id,)).fetchall()
        with conn.raw.cursor() as cur:
            cur.executemany("UPDATE embedding_chunks SET vec = %s::vector WHERE model_id = %s AND document_id = %s "
                            "AND chunk_no = %s", [(_from_bytes(bytes(r[2])), model_id,
                                                   r[0], r[1]) for r in rows])
        ensure_index(conn, model_id, dim)


def state(conn: PgConnection) -> str | None:
    """The recorded outcome of ``m003_pgvector`` (None before it ran)."""
    return meta.get(conn, META_KEY)


def unavailable(conn: PgConnection) -> bool:
    """Whether ``m003_pgvector`` recorded that the server would not create the extension."""
    found = state(conn)
    return found is not None and found.startswith("unavailable")


def enabled(conn: PgConnection) -> bool:
    found = state(conn)
    return found is not None and not found.startswith("unavailable")


def describe(conn: PgConnection) -> dict[str, Any]:
    """What ``db-stats`` and ``doctor`` report: which vector search the server answers with."""
    found = state(conn)
    if found is not None and not found.startswith("unavailable"):
        return {"engine": "pgvector", "pgvector": found, "index": "hnsw", "note": None}
    return {"engine": "numpy", "pgvector": None, "index": None,
            "note": f"pgvector {found or 'not checked'}: semantic search reads every vector into the process"}


def literal(vector: Any) -> str:
    """A float32 vector (numpy, or a list) as pgvector's text form (exact: a float32 survives float64 text
    and back)."""
    values = vector.astype("<f4").tolist() if hasattr(vector, "astype") else [float(x) for x in vector]
    return "[" + ",".join(map(repr, values)) + "]"


def _from_bytes(data: bytes) -> str:
    """A stored float32 BYTEA vector as pgvector's text form."""
    return literal(struct.unpack(f"<{len(data) // 4}f", data))


def insert_chunks(conn: PgConnection, model_id: int, doc_id: int, vectors: Any) -> None:
    """The document's chunk rows: the float32 bytes and the same vector as pgvector's ``vector``."""
    with conn.raw.cursor() as cur:
        cur.executemany("INSERT INTO embedding_chunks (model_id, document_id, chunk_no, vector, vec) "
                        "VALUES (%s, %s, %s, %s, %s::vector)",
                        [(model_id, doc_id, i, v.astype("<f4").tobytes(), literal(v))
                         for i, v in enumerate(vectors)])


def index_name(model_id: int) -> str:
    return f"embedding_chunks_hnsw_m{int(model_id)}"


def ensure_index(conn: PgConnection, model_id: int, dim: int) -> None:
    """The model's HNSW index (built from the rows there are; later rows are added as they come), and fresh
    statistics of the table (an embed run changes many rows: without them the planner may not pick it)."""
    conn.raw.execute(f"CREATE INDEX IF NOT EXISTS {index_name(model_id)} ON embedding_chunks USING hnsw "
                     f"((vec::vector({int(dim)})) vector_ip_ops) WHERE model_id = {int(model_id)}")
    conn.raw.execute("ANALYZE embedding_chunks")


def nearest_sql(model_id: int, dim: int) -> str:
    """The top-documents query for one model; parameters: the question's vector twice, how many chunks
    the index returns, how many documents. The model id and dimension are literals so that the planner
    matches the model's partial index."""
    typed, q = f"vec::vector({int(dim)})", f"%s::vector({int(dim)})"
    return (f"SELECT document_id, max(sim) AS best FROM (SELECT document_id, -({typed} <#> {q}) AS sim "
            f"FROM embedding_chunks WHERE model_id = {int(model_id)} ORDER BY {typed} <#> {q} LIMIT %s) c "
            "GROUP BY document_id ORDER BY best DESC, document_id LIMIT %s")


def nearest(conn: PgConnection, model_id: int, dim: int, query: Any, depth: int) -> dict[int, float]:
    """The ``depth`` documents whose best chunk is nearest ``query`` (a unit vector), with that cosine.

    HNSW is approximate; with ``ef_search`` at :data:`EF_SEARCH` a model of at most that many chunks is
    in practice answered exactly.
    """
    chunks = min(EF_SEARCH, max(depth, 1) * CHUNKS_PER_DOCUMENT)
    text = literal(query)
    conn.raw.execute(f"SET hnsw.ef_search = {EF_SEARCH}")
    rows = conn.raw.execute(nearest_sql(model_id, dim), (text, text, chunks, depth)).fetchall()
    return {int(r[0]): float(r[1]) for r in rows}


def best_cosines(conn: PgConnection, model_id: int, query: Any, doc_ids: list[int]) -> dict[int, float]:
    """The cosine of each given document's best chunk with ``query`` (documents without vectors left out)."""
    if not doc_ids:
        return {}
    rows = conn.raw.execute(
        "SELECT document_id, max(-(vec <#> %s::vector)) FROM embedding_chunks WHERE model_id = %s "
        "AND document_id = ANY(%s) GROUP BY document_id", (literal(query), model_id, list(doc_ids))).fetchall()
    return {int(r[0]): float(r[1]) for r in rows}


def has_vectors(conn: PgConnection, model_id: int) -> bool:
    return conn.raw.execute("SELECT 1 FROM embedding_chunks WHERE model_id = %s LIMIT 1",
                            (model_id,)).fetchone() is not None
