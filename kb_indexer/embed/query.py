"""The question's side of semantic and hybrid search: which vectors to use and how to embed the question.

:func:`dense_source` is what the API hands :func:`kb_indexer.search.query.run_query`: the index's
vectors of the configured embedding model (``--embed-backend/--embed-model``, ``KBINDEX_EMBED_*``;
by default the model of the index's newest vectors) and a function that embeds the question with
that model. Nothing is imported or contacted until a query actually embeds (an index without vectors
costs one small query). A question's vector is cached in the LLM cache, so asking again needs no
backend. The question gets at most ``QUERY_TIMEOUT`` seconds (and one retry): a query falls back
to lexical search rather than keep an agent waiting.
"""

from __future__ import annotations

from typing import Any, Callable

from kb_indexer.llm.config import EmbedOptions, embed_configured, resolve_embed
from kb_indexer.search.semantic import DenseSource
from kb_indexer.store import vectors as store
from kb_indexer.store.errors import OperationalError
from kb_indexer.store.dbapi import Connection

QUERY_TIMEOUT = 15.0
QUERY_RETRIES = 1


def dense_source(conn: Connection, opts: EmbedOptions | None) -> DenseSource:
    latest, by_key = store.models(conn)
    configured = embed_configured(opts) or bool(opts and opts.model)
    config = resolve_embed(opts, latest.key if latest else None)   # an unknown --embed-backend is a usage error
    source = DenseSource(backend=config.backend, model_name=config.model, configured=configured)
    if not config.enabled:
        source.unavailable = config.backend_error or "embeddings are switched off (embedding backend none)"
        return source
    if config.model is None and latest is not None and latest.backend == config.backend:
        config.model = latest.model
    model = by_key.get((config.backend, config.model)) if config.model else None
    if model is None:
        have = f"; the index has vectors of {latest.backend} {latest.model!r}" if latest else ""
        source.unavailable = (f"no vectors of {config.backend} {config.model or '(server default)'!r} in the "
                              f"index (run `kbindex embed`){have}")
        return source
    source.model, source.model_name = model, model.model
    config.timeout = min(config.timeout, QUERY_TIMEOUT)
    config.retries = min(config.retries, QUERY_RETRIES)
    source.embed = _embedder(conn, config, model, source)
    return source


def _embedder(conn: Connection, config: Any, model: store.EmbeddingModel,
              source: DenseSource) -> Callable[[str], Any]:
    """Embeds a question (its vector from the LLM cache when it has one), saying in ``source.encoder`` what did."""
    def embed(question: str) -> Any:
        # lazy: hashlib (OpenSSL) and numpy, only when a question is embedded (a query without vectors never is)
        from kb_indexer.llm import cache as llm_cache, embedding

        key = llm_cache.cache_key(config.backend, model.model, "embed_query",
                                  llm_cache.digest({"text": question}), f"dim{model.dim}")
        hit = llm_cache.get(conn, key)
        if isinstance(hit, list) and len(hit) == model.dim:
            source.encoder = "cache"
            return embedding.as_vector(hit)
        client = embedding.EmbedClient(config, expect_dim=model.dim, for_queries=True)
        try:
            vector = client.embed([question or " "])[0]
        finally:
            source.encoder = client.encoder
            client.close()
        try:
            llm_cache.put(conn, key, backend=config.backend, model=model.model, task="embed_query",
                          prompt_hash=llm_cache.digest({"text": question}), schema_hash=f"dim{model.dim}",
                          response=[round(float(x), 7) for x in vector])
        except OperationalError:   # a read-only or busy index still answers
            pass
        return vector

    return embed
