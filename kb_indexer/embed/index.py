"""``kbindex embed``: the documents' chunk vectors for one embedding model, incremental and resumable.

1. The model: the configured one (``--embed-model``...), else the one the index's newest vectors
   were made with, else the backend's default. Its vectors keep its dimension: a server answering
   with another dimension for the same model name is refused (``embedding_mismatch``).
2. What to embed: each document whose ``source_hash`` for the model (the document's content hash
   and :data:`~kb_indexer.index.chunks.CHUNKER_VERSION`) differs from the stored one, or that has
   none; every document with ``--all``. A model of its own never sees another model's vectors.
3. Documents are chunked (:mod:`kb_indexer.index.chunks`), their chunks embedded ``batch`` texts
   per request, and each request's documents are written in their own transaction: a run that is
   killed keeps what it wrote, and the next run goes on from there.
4. At the end the model's packed matrix is rebuilt (one BLOB a cold query reads in one go).
"""

from __future__ import annotations

import hashlib
import json
import time
from typing import Any, Callable

import numpy as np

from kb_indexer.index.chunks import CHUNKER_VERSION, chunk_text
from kb_indexer.llm.base import LLMError
from kb_indexer.llm.config import EmbedOptions
from kb_indexer.llm.embedding import EmbedClient
from kb_indexer.store import fulltext, transaction
from kb_indexer.store.connection import exclusive
from kb_indexer.store import vectors as store
from kb_indexer.store.dbapi import Connection

Progress = Callable[[int, int], None]


def source_hash(content_hash: str | None, title: str = "", body: str = "") -> str:
    """What a document's vectors were made from: its content hash (or its text's) and the chunker version."""
    base = content_hash or "text-" + hashlib.sha1(f"{title}\0{body}".encode("utf-8", "replace")).hexdigest()
    return f"{base}:c{CHUNKER_VERSION}"


def client_for(conn: Connection, opts: EmbedOptions | None, **kwargs: Any) -> EmbedClient:
    """An embedding client for the configured model, defaulting to the index's newest model."""
    latest, by_key = store.models(conn)
    client = EmbedClient.from_options(opts, latest.key if latest else None, **kwargs)
    known = by_key.get((client.backend_name, client.model)) if client.config.model else None
    if known is not None:
        client.dim = known.dim
    return client


def _todo(conn: Connection, model: store.EmbeddingModel | None, everything: bool) -> tuple[list[int], int]:
    """Ids of the documents to embed, and how many documents the index holds."""
    stored = store.source_hashes(conn, model.id) if model else {}
    docs = conn.execute("SELECT id, content_hash FROM documents ORDER BY id").fetchall()
    todo = [d for d, h in docs if everything or h is None or stored.get(d) != source_hash(h)]
    return todo, len(docs)


def _texts(conn: Connection, doc_ids: list[int]) -> list[tuple[int, str, list[str], bool]]:
    """(id, source hash, chunks, truncated) per document."""
    rows = conn.execute("SELECT id, content_hash, title FROM documents WHERE id IN (SELECT value FROM json_each(?)) "
                        "ORDER BY id", (json.dumps(doc_ids),)).fetchall()
    bodies = fulltext.bodies(conn, doc_ids)
    out = []
    for doc_id, content_hash, title in rows:
        body = bodies.get(doc_id)
        chunks, truncated = chunk_text(title or "", body or "")
        out.append((doc_id, source_hash(content_hash, title or "", body or ""), chunks, truncated))
    return out


class _Batches:
    """Chunks stream into full requests across documents; a document is stored (one transaction per
    request) as soon as all its chunks have vectors, so a killed run keeps what was stored."""

    def __init__(self, conn: Connection, client: EmbedClient, model: store.EmbeddingModel | None,
                 progress: Progress | None = None, total: int = 0):
        self.conn, self.client, self.model = conn, client, model
        self.docs: list[tuple[int, str, list[str], bool]] = []   # waiting for vectors, in order
        self.texts: list[str] = []                                # their chunks not yet sent
        self.vectors: list[np.ndarray[Any, Any]] = []             # vectors not yet stored
        self.done = self.chunks = 0
        self.truncated: list[int] = []
        self.progress, self.total = progress, total

    def add(self, docs: list[tuple[int, str, list[str], bool]]) -> None:
        self.docs += docs
        self.texts += [c for d in docs for c in d[2]]

    def send(self, n: int) -> None:
        if n:
            self.vectors.append(self.client.embed(self.texts[:n]))
            del self.texts[:n]
        self._store()

    def _store(self) -> None:
        if self.model is None and not self.vectors:   # no dimension known yet: wait for the first vectors
            return
        have = (np.concatenate(self.vectors) if self.vectors
                else np.empty((0, self.model.dim if self.model else 0), dtype=np.float32))
        available = len(have)
        at, ready = 0, 0
        while ready < len(self.docs) and at + len(self.docs[ready][2]) <= available:
            at += len(self.docs[ready][2])
            ready += 1
        if not ready:
            return
        with transaction(self.conn):
            if self.model is None:
                self.model = store.ensure_model(self.conn, self.client.backend_name, self.client.model,
                                                int(have.shape[1]))
            pos = 0
            for doc_id, src, chunks, cut in self.docs[:ready]:
                store.replace_document(self.conn, self.model, doc_id, src, have[pos:pos + len(chunks)], cut)
                pos += len(chunks)
                if cut:
                    self.truncated.append(doc_id)
        self.chunks += at
        self.done += ready
        del self.docs[:ready]
        self.vectors = [have[at:]] if at < available else []
        if self.progress is not None:
            self.progress(self.done, self.total)


def embed_documents(conn: Connection, client: EmbedClient, *, everything: bool = False,
                    progress: Progress | None = None) -> dict[str, Any]:
    """Embed what changed (everything with ``everything``); see the module docstring. Two embeds never
    interleave, and an ``import`` (which replaces the documents) waits for one (:func:`exclusive`)."""
    with exclusive(conn, "embed"):
        return _embed_documents(conn, client, everything, progress)


def _embed_documents(conn: Connection, client: EmbedClient, everything: bool,
                     progress: Progress | None) -> dict[str, Any]:
    started = time.monotonic()
    if client.config.model is None:       # an OpenAI-compatible server's first model: ask it now
        ensure = getattr(client._calls.backend, "_ensure_model", None)
        if ensure is not None:
            client._calls.call(ensure)
    store.adopt_engine_search(conn)
    model = store.find_model(conn, client.backend_name, client.model)
    if model is not None:
        client.dim = model.dim
    todo, total = _todo(conn, model, everything)
    if progress is not None:
        progress(0, len(todo))
    state = _Batches(conn, client, model, progress, len(todo))
    try:
        for doc_id in todo:
            state.add(_texts(conn, [doc_id]))
            while len(state.texts) >= client.batch_size:    # every request but the last is full
                state.send(client.batch_size)
        if state.texts or state.docs:
            state.send(len(state.texts))
    except LLMError as exc:
        done = state.done
        exc.details = {**(exc.details or {}), "embedded_before_error": done, "to_embed": len(todo)}
        if done:
            exc.message += (f" ({done} of {len(todo)} documents were embedded before the error and are kept; "
                            "run `kbindex embed` again to go on)")
        raise
    model = state.model
    if model is not None:
        with transaction(conn):
            store.ensure_packed(conn, model)
    return _summary(conn, client, model, total, len(todo), state.done, state.chunks, state.truncated, started)


def _summary(conn: Connection, client: EmbedClient, model: store.EmbeddingModel | None, total: int,
             todo: int, done: int, chunks: int, truncated: list[int], started: float) -> dict[str, Any]:
    cov = next((c for c in store.coverage(conn) if model and (c["backend"], c["model"]) == model.key), None)
    paths = [r[0] for r in conn.execute("SELECT filepath FROM documents WHERE id IN (SELECT value FROM json_each(?)) "
                                        "ORDER BY filepath LIMIT 20", (json.dumps(truncated),))]
    return {"backend": client.backend_name, "model": client.model, "encoder": client.encoder,
            "dim": model.dim if model else client.dim, "documents": total, "embedded": done,
            "unchanged": total - todo, "chunks": chunks, "requests": client.requests, "truncated": len(truncated),
            "truncated_files": paths,
            "seconds": round(time.monotonic() - started, 2), "coverage": cov}
