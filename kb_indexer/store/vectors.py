"""Embedding vectors in the index (tables of migration ``m090_embeddings``).

* ``embedding_models``: one row per (backend, model), with the vectors' dimension; vectors of two
  models never mix (a query reads one model's only, and a model's vectors all have its dimension).
* ``embedding_docs`` / ``embedding_chunks``: per model and document, the hash of the text the
  vectors were made from and one unit float32 vector per chunk.
* ``embedding_matrix``: all of one model's vectors packed in one contiguous BLOB (rows ordered by
  document, then chunk) with the matching document ids. A cold query reads this one row instead of
  one row per chunk. It is valid while its ``generation`` equals the model's (triggers bump it on
  every change); :func:`load_matrix` rebuilds a stale one and stores it again when it can.
* A copy of the packed vectors in a file beside the index (``<index>.vectors/``), which a query maps
  into memory instead of copying 90 MB out of SQLite at 10k documents. Its name holds the model id,
  the generation, the dimension and a checksum of the packed document ids, so a stale or foreign file
  is never used (it is only ever a cache of the current BLOB: written atomically after the BLOB was
  read, older ones of the model removed; when the folder cannot be written, the BLOB is used).
* On a PostgreSQL server with pgvector (:mod:`kb_indexer.store.pg.vectors`) each chunk's vector is also a
  pgvector ``vector`` with an HNSW index per model: :func:`nearest` and :func:`best_cosines` answer on the
  server and no matrix is packed or read. Elsewhere :func:`nearest` returns None and the caller reads the
  matrix (:func:`load_matrix`). This module is where that is decided.

numpy is imported only by the functions that build or read matrices.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kb_indexer.errors import KbError
from kb_indexer.safe_write import atomic_file
from kb_indexer.store.connection import file_identity, transaction
from kb_indexer.store.errors import OperationalError
from kb_indexer.store.dbapi import Connection, Row
from kb_indexer.store.engine import is_postgres
from kb_indexer.store.engines import engine_of


class MixedModelError(KbError):
    """Vectors of another dimension for a model whose vectors are stored (they would not compare)."""

    code = "embedding_mismatch"


@dataclass(frozen=True)
class EmbeddingModel:
    id: int
    backend: str
    model: str
    dim: int
    generation: int

    @property
    def key(self) -> tuple[str, str]:
        return self.backend, self.model


def _model(row: Row | tuple[Any, ...] | None) -> EmbeddingModel | None:
    return None if row is None else EmbeddingModel(*tuple(row)[:5])


_COLS = "id, backend, model, dim, generation"


def find_model(conn: Connection, backend: str, model: str) -> EmbeddingModel | None:
    return _model(conn.execute(f"SELECT {_COLS} FROM embedding_models WHERE backend = ? AND model = ?",
                               (backend, model)).fetchone())


def latest_model(conn: Connection) -> EmbeddingModel | None:
    """The model whose vectors were written last (the default model of queries and `embed`)."""
    return models(conn)[0]


def models(conn: Connection) -> tuple[EmbeddingModel | None, dict[tuple[str, str], EmbeddingModel]]:
    """(:func:`latest_model`, every model by ``(backend, model)``) in one statement (a query needs both before
    it knows whether vectors take part: one round trip on a server instead of two)."""
    rows = conn.execute(f"SELECT {_COLS}, EXISTS (SELECT 1 FROM embedding_docs d WHERE d.model_id = m.id) "
                        "FROM embedding_models m ORDER BY updated_at DESC, id DESC").fetchall()
    found = [(EmbeddingModel(*tuple(r)[:5]), bool(tuple(r)[5])) for r in rows]
    return next((m for m, used in found if used), None), {m.key: m for m, _ in found}


def ensure_model(conn: Connection, backend: str, model: str, dim: int) -> EmbeddingModel:
    """The model's row, created with ``dim``; a stored model of another dimension is refused."""
    found = find_model(conn, backend, model)
    if found is None:
        conn.execute("INSERT INTO embedding_models (backend, model, dim) VALUES (?, ?, ?)", (backend, model, dim))
        return find_model(conn, backend, model)  # type: ignore[return-value]
    if found.dim != dim:
        raise MixedModelError(f"{backend} model {model!r} now answers with {dim}-dimensional vectors, but the "
                              f"index holds {found.dim}-dimensional ones for it; run `kbindex embed --all` "
                              "with --embed-model naming the model you mean", details={"stored_dim": found.dim,
                                                                                         "got_dim": dim})
    return found


def source_hashes(conn: Connection, model_id: int) -> dict[int, str]:
    return {r[0]: r[1] for r in conn.execute(
        "SELECT document_id, source_hash FROM embedding_docs WHERE model_id = ?", (model_id,))}


def replace_document(conn: Connection, model: EmbeddingModel, doc_id: int, source_hash: str,
                     vectors: Any, truncated: bool = False) -> None:
    """The document's vectors for ``model`` (an (n, dim) float32 array; n may be 0), replacing any."""
    if len(vectors) and vectors.shape[1] != model.dim:
        raise MixedModelError(f"{vectors.shape[1]}-dimensional vectors for {model.backend} {model.model!r}, "
                              f"whose vectors are {model.dim}-dimensional")
    conn.execute("DELETE FROM embedding_docs WHERE model_id = ? AND document_id = ?", (model.id, doc_id))
    conn.execute("INSERT INTO embedding_docs (model_id, document_id, source_hash, chunks, truncated) "
                 "VALUES (?, ?, ?, ?, ?)", (model.id, doc_id, source_hash, len(vectors), int(truncated)))
    pg = _pgvector(conn)
    if pg is not None:
        pg.insert_chunks(conn, model.id, doc_id, vectors)
    else:
        conn.executemany("INSERT INTO embedding_chunks (model_id, document_id, chunk_no, vector) VALUES (?, ?, ?, ?)",
                         [(model.id, doc_id, i, v.astype("<f4").tobytes()) for i, v in enumerate(vectors)])
    conn.execute("UPDATE embedding_models SET updated_at = strftime('%Y-%m-%dT%H:%M:%f', 'now') WHERE id = ?",
                 (model.id,))


# -- the engine's own vector search (pgvector) ------------------------------------------------


def _pg() -> Any:
    from kb_indexer.store.pg import vectors  # lazy: psycopg, for the PostgreSQL engine only

    return vectors


def _pgvector(conn: Connection) -> Any | None:
    """:mod:`kb_indexer.store.pg.vectors` on a PostgreSQL server with pgvector; None elsewhere."""
    if not is_postgres(conn):
        return None
    pg = _pg()
    return pg if pg.enabled(conn) else None


def adopt_engine_search(conn: Connection) -> None:
    """Before vectors are written (``embed``): on a PostgreSQL server whose pgvector was unavailable when the
    index was made, try again in a transaction of its own, so an extension installed since is used from this
    run on (nothing to do on SQLite, or when pgvector is already in use)."""
    if not is_postgres(conn):
        return
    pg = _pg()
    if pg.unavailable(conn):
        with transaction(conn):
            pg.retry(conn)


def nearest(conn: Connection, model: EmbeddingModel, query: Any,
            depth: int) -> tuple[dict[int, float], dict[str, int]] | None:
    """The ``depth`` documents whose best chunk is nearest the unit vector ``query``, with that cosine, and
    the model's ``chunks`` and ``documents`` counts, when the engine searches vectors itself (pgvector);
    None when the caller scores the matrix."""
    pg = _pgvector(conn)
    if pg is None:
        return None
    chunks, documents = conn.execute("SELECT coalesce(sum(chunks), 0), count(*) FROM embedding_docs "
                                     "WHERE model_id = ? AND chunks > 0", (model.id,)).fetchone()
    return pg.nearest(conn, model.id, model.dim, query, depth), {"chunks": int(chunks), "documents": int(documents)}


def best_cosines(conn: Connection, model: EmbeddingModel, query: Any, doc_ids: list[int]) -> dict[int, float]:
    """The cosine of each given document's best chunk with ``query`` (with :func:`nearest`'s engine)."""
    return _pg().best_cosines(conn, model.id, query, doc_ids)  # type: ignore[no-any-return]


def vector_search(conn: Connection) -> dict[str, Any]:
    """Which vector search the index answers with (``db-stats``, ``doctor``)."""
    return engine_of(conn).vector_search(conn)


# -- the packed matrix --------------------------------------------------------------------


def _build(conn: Connection, model: EmbeddingModel) -> tuple[Any, Any]:
    import numpy as np  # lazy: numpy, only for an index with vectors

    rows = conn.execute("SELECT document_id, vector FROM embedding_chunks WHERE model_id = ? "
                        "ORDER BY document_id, chunk_no", (model.id,)).fetchall()
    doc_ids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
    matrix = np.frombuffer(b"".join(r[1] for r in rows), dtype="<f4").reshape(len(rows), model.dim)
    return doc_ids, matrix


def pack(conn: Connection, model: EmbeddingModel) -> tuple[Any, Any]:
    """Rebuild the model's packed matrix from its chunk rows and store it (inside the caller's transaction
    if there is one); returns (document ids, matrix)."""
    current = conn.execute("SELECT generation FROM embedding_models WHERE id = ?", (model.id,)).fetchone()[0]
    doc_ids, matrix = _build(conn, model)
    conn.execute("INSERT INTO embedding_matrix (model_id, generation, rows, doc_ids, vectors) VALUES (?, ?, ?, ?, ?) "
                 "ON CONFLICT(model_id) DO UPDATE SET generation = excluded.generation, rows = excluded.rows, "
                 "doc_ids = excluded.doc_ids, vectors = excluded.vectors",
                 (model.id, current, len(doc_ids), doc_ids.tobytes(), matrix.tobytes()))
    return doc_ids, matrix


def ensure_packed(conn: Connection, model: EmbeddingModel) -> None:
    """Repack the model's matrix unless the stored one is current; on pgvector, create the model's HNSW
    index instead (the first time the model has vectors)."""
    pg = _pgvector(conn)
    if pg is not None:
        if pg.has_vectors(conn, model.id):
            pg.ensure_index(conn, model.id, model.dim)
        return
    current = conn.execute("SELECT 1 FROM embedding_matrix x JOIN embedding_models m ON m.id = x.model_id "
                           "WHERE x.model_id = ? AND x.generation = m.generation", (model.id,)).fetchone()
    if current is None:
        pack(conn, model)


def load_matrix(conn: Connection, model: EmbeddingModel) -> tuple[Any, Any, bool]:
    """(document id per row, (rows, dim) float32 unit vectors, whether it had to be rebuilt).

    The packed matrix when it is current: memory-mapped from its file beside the index (see the module
    docstring), else one read of the BLOB (which then writes that file). Otherwise the chunk rows are
    read and packed again (stored for the next query when the index is writable; a read-only or busy
    index just answers).
    """
    import numpy as np  # lazy: numpy, only for an index with vectors

    key = _cache_key(conn, model)
    if key is not None and key in _MAPPED:
        return (*_MAPPED[key], False)
    row = conn.execute("SELECT x.generation, x.doc_ids FROM embedding_matrix x JOIN embedding_models m "
                       "ON m.id = x.model_id WHERE x.model_id = ? AND x.generation = m.generation",
                       (model.id,)).fetchone()
    if row is not None:
        doc_ids = np.frombuffer(row[1], dtype=np.int64)
        path = _sidecar(conn, model, row[0], row[1])
        if path is not None and _size(path) == len(doc_ids) * model.dim * 4:
            matrix: np.ndarray[Any, np.dtype[Any]] = np.memmap(path, dtype="<f4", mode="r",
                                                               shape=(len(doc_ids), model.dim))
            if key is not None:
                _MAPPED.clear()   # one index's one model at a time: a long-lived process keeps no stale maps
                _MAPPED[key] = (doc_ids, matrix)
            return doc_ids, matrix, False
        blob = conn.execute("SELECT vectors FROM embedding_matrix WHERE model_id = ?", (model.id,)).fetchone()[0]
        matrix = np.frombuffer(blob, dtype="<f4").reshape(len(doc_ids), model.dim)
        _write_sidecar(path, matrix)
        return doc_ids, matrix, False
    try:
        with transaction(conn):
            doc_ids, matrix = pack(conn, model)
    except OperationalError:   # read-only, locked past the busy timeout: answer without storing
        doc_ids, matrix = _build(conn, model)
    return doc_ids, matrix, True


# A long-lived process (the MCP server, chat, a benchmark) maps a model's vectors file once: the key names the
# index file (path and inode), the model and its current generation, row count and last write.
_MAPPED: dict[tuple[Any, ...], tuple[Any, Any]] = {}


def _cache_key(conn: Connection, model: EmbeddingModel) -> tuple[Any, ...] | None:
    identity = file_identity(conn)
    row = conn.execute("SELECT x.generation, x.rows, m.updated_at FROM embedding_matrix x JOIN embedding_models m "
                       "ON m.id = x.model_id WHERE x.model_id = ? AND x.generation = m.generation",
                       (model.id,)).fetchone()
    if identity is None or row is None:
        return None
    return (*identity, model.id, model.dim, *tuple(row))


def _sidecar(conn: Connection, model: EmbeddingModel, generation: int, doc_ids: bytes) -> Path | None:
    """The file that may hold this exact packed matrix (None for an in-memory index or a server: a server's
    vectors stay on the server)."""
    path = engine_of(conn).db_file(conn)
    if not path:
        return None
    name = f"model{model.id}-gen{generation}-dim{model.dim}-{zlib.crc32(doc_ids):08x}.f32"
    return Path(path + ".vectors") / name


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return -1


def _write_sidecar(path: Path | None, matrix: Any) -> None:
    """Write the packed matrix's file atomically and remove the model's older ones; a folder that cannot
    be written (read-only index, full disk) only means the next query reads the BLOB again."""
    if path is None:
        return
    try:
        path.parent.mkdir(exist_ok=True)
        with atomic_file(path) as fh:
            matrix.astype("<f4", copy=False).tofile(fh)
        prefix = path.name.split("-gen", 1)[0] + "-gen"
        for old in path.parent.glob(prefix + "*.f32"):
            if old != path:
                old.unlink(missing_ok=True)
    except OSError:
        pass


# -- reporting ----------------------------------------------------------------------------


def coverage(conn: Connection) -> list[dict[str, Any]]:
    """Per model: documents with vectors, without (in the index but not embedded, or embedded with no
    text), stale (embedded from an older version of the document), chunks."""
    total = conn.execute("SELECT count(*) FROM documents").fetchone()[0]
    out = []
    for m in conn.execute(f"SELECT {_COLS}, updated_at FROM embedding_models ORDER BY updated_at DESC, id DESC"):
        embedded, with_vectors, chunks, stale = conn.execute(
            "SELECT count(*), coalesce(sum(CASE WHEN e.chunks > 0 THEN 1 ELSE 0 END), 0), coalesce(sum(e.chunks), 0), "
            "coalesce(sum(CASE WHEN e.source_hash NOT LIKE coalesce(d.content_hash, '') || ':%' THEN 1 ELSE 0 END), 0) "
            "FROM embedding_docs e JOIN documents d ON d.id = e.document_id WHERE e.model_id = ?",
            (m[0],)).fetchone()
        out.append({"backend": m[1], "model": m[2], "dim": m[3], "documents": total,
                    "with_vectors": with_vectors, "without_vectors": total - with_vectors,
                    "stale": stale, "chunks": chunks,
                    "coverage": round(with_vectors / total, 4) if total else 0.0, "updated_at": m[5]})
    return out


def documents_without_vectors(conn: Connection, model_id: int, limit: int = 20,
                              with_vectors: int | None = None) -> tuple[int, list[str]]:
    """How many documents have no vector of the model, and the first ``limit`` of their paths;
    ``with_vectors``: how many documents the model's current matrix holds, when the caller read it."""
    # Two counts, not a probe per document: embedding_docs rows go with their documents (foreign keys).
    if with_vectors is not None:
        n = conn.execute("SELECT count(*) FROM documents").fetchone()[0] - with_vectors
    else:
        n = conn.execute("SELECT (SELECT count(*) FROM documents) - (SELECT count(*) FROM embedding_docs "
                         "WHERE model_id = ? AND chunks > 0)", (model_id,)).fetchone()[0]
    if n <= 0:
        return 0, []
    where = ("FROM documents d WHERE NOT EXISTS (SELECT 1 FROM embedding_docs e WHERE e.model_id = ? AND "
             "e.document_id = d.id AND e.chunks > 0)")
    paths = [r[0] for r in conn.execute(f"SELECT d.filepath {where} ORDER BY d.filepath LIMIT ?", (model_id, limit))]
    return n, paths
