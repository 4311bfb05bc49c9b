"""The one way features get embeddings: :class:`EmbedClient`.

``EmbedClient.embed(texts)`` splits the texts into batches (``batch_size`` texts per request), and
for each batch:

1. calls the backend's ``embed`` with the call policy of the chat calls
   (:meth:`kb_indexer.llm.structured.LLMClient.call`): a deadline of the LLM timeout per batch,
   retries with backoff on 429 / 5xx / connection errors, every failure an ``LLMError``;
2. checks the answer: one vector per text, every vector of the same length (and of the length
   this client saw first, or was told to expect), finite numbers, not all zero; anything else is
   an :class:`~kb_indexer.llm.base.LLMBadResponse` naming what was wrong;
3. L2-normalises the vectors (float32), so that a dot product is the cosine similarity.
"""

from __future__ import annotations

import time
from typing import Any, Callable

import numpy as np

from kb_indexer.llm.base import LLMBadResponse, LLMError
from kb_indexer.llm.config import EmbedOptions, resolve_embed
from kb_indexer.llm.settings import LLMConfig
from kb_indexer.llm.structured import LLMClient

DEFAULT_BATCH = 32
BATCH_LIMITS = {"gemini": 100}    # the most texts one request of that backend may carry

Progress = Callable[[int, int], None]


def as_vector(values: list[float]) -> np.ndarray:
    """A stored vector (a JSON list) as the float32 array :meth:`EmbedClient.embed` gives."""
    return np.asarray(values, dtype=np.float32)


class EmbedClient:
    """An embedding backend with its settings, batching, retries and answer checks."""

    def __init__(self, config: LLMConfig, *, backend: Any = None, batch_size: int | None = None,
                 expect_dim: int | None = None, sleep: Callable[[float], None] = time.sleep,
                 for_queries: bool = False):
        if config.backend_error:   # an unknown backend named by the environment or .env
            raise LLMError(config.backend_error, code="llm_config")
        if not config.enabled:
            raise LLMError("embeddings are switched off (embedding backend 'none')", code="llm_disabled")
        self.config = config
        self._calls = LLMClient(config, backend=backend, sleep=sleep)
        #: the texts are questions: a backend may encode them differently (local: numpy, no torch)
        self.for_queries = for_queries
        #: which encoder the backend ran, when it says (local: ``numpy`` or ``sentence-transformers``)
        self.encoder: str | None = None
        limit = BATCH_LIMITS.get(config.backend, 10_000)
        self.batch_size = max(1, min(batch_size or DEFAULT_BATCH, limit))
        self.dim = expect_dim
        self.requests = 0

    @classmethod
    def from_options(cls, opts: EmbedOptions | None = None, stored: tuple[str, str] | None = None,
                     **kwargs: Any) -> "EmbedClient":
        return cls(resolve_embed(opts, stored), **kwargs)

    @property
    def backend_name(self) -> str:
        return self.config.backend

    @property
    def model(self) -> str:
        """The model that answers (an OpenAI-compatible server's first model when none is configured)."""
        return self._calls.model or f"server-default@{self.config.base_url}"

    def describe(self) -> dict[str, Any]:
        out = {"backend": self.config.backend, "model": self.model}
        return out | {"encoder": self.encoder} if self.encoder else out

    def close(self) -> None:
        self._calls.close()

    def embed(self, texts: list[str], progress: Progress | None = None) -> np.ndarray:
        """A ``(len(texts), dim)`` float32 array of unit vectors, in the order of ``texts``."""
        if not texts:
            return np.zeros((0, self.dim or 0), dtype=np.float32)
        parts = []
        for start in range(0, len(texts), self.batch_size):
            batch = [t if t.strip() else "." for t in texts[start:start + self.batch_size]]
            def ask(left: float, b: list[str] = batch) -> list[list[float]]:
                return self._ask(b, left)
            raw, _ = self._calls.call(ask)
            self.requests += 1
            parts.append(self._check(raw, len(batch)))
            if progress is not None:
                progress(min(start + len(batch), len(texts)), len(texts))
        matrix: np.ndarray = np.concatenate(parts, axis=0)
        return matrix

    def _ask(self, batch: list[str], left: float) -> list[list[float]]:
        backend = self._calls.backend
        if self.for_queries and hasattr(backend, "for_queries"):
            backend.for_queries = True
        raw: list[list[float]] = backend.embed(batch, timeout=left)
        encoder = getattr(backend, "encoder_name", None)
        self.encoder = encoder if isinstance(encoder, str) else None
        return raw

    def embed_one(self, text: str) -> np.ndarray:
        row: np.ndarray = self.embed([text])[0]
        return row

    def _check(self, raw: Any, n: int) -> np.ndarray:
        who = f"{self.config.backend} ({self.model})"
        if not isinstance(raw, (list, tuple, np.ndarray)) or len(raw) != n:
            got = len(raw) if isinstance(raw, (list, tuple, np.ndarray)) else type(raw).__name__
            raise LLMBadResponse(f"{who} sent {got} embeddings for {n} texts")
        lengths = {len(v) if isinstance(v, (list, tuple, np.ndarray)) else -1 for v in raw}
        if len(lengths) != 1 or -1 in lengths or 0 in lengths:
            raise LLMBadResponse(f"{who} sent embeddings of different or no lengths: {sorted(lengths)[:5]}")
        try:
            vectors = np.asarray(raw, dtype=np.float32)
        except (TypeError, ValueError):
            raise LLMBadResponse(f"{who} sent embeddings that are not lists of numbers") from None
        dim = vectors.shape[1]
        if self.dim is not None and dim != self.dim:
            raise LLMBadResponse(f"{who} sent {dim}-dimensional embeddings, expected {self.dim} "
                                 "(the dimension of this model's vectors in the index)")
        if not np.isfinite(vectors).all():
            raise LLMBadResponse(f"{who} sent embeddings with NaN or infinite values")
        norms = np.linalg.norm(vectors, axis=1)
        if (norms == 0).any():
            raise LLMBadResponse(f"{who} sent an all-zero embedding")
        self.dim = dim
        unit: np.ndarray = vectors / norms[:, None]
        return unit
