"""A BERT sentence-transformers model (all-MiniLM-L6-v2) in numpy: the same vectors without torch.

Questions and documents alike: loading torch and sentence-transformers costs seconds and hundreds of MB
(a question), and torch itself several GB on disk (``kbindex embed``). :class:`NumpyBert` reads the model
folder sentence-transformers reads and computes what its modules (``modules.json``) compute:

1. ``Transformer``: the text, stripped, is split into WordPiece tokens by ``tokenizer.json`` (the
   ``tokenizers`` library), ``[CLS] ... [SEP]``, truncated on the right to ``max_seq_length`` tokens
   (``sentence_bert_config.json``: 256 word pieces for all-MiniLM-L6-v2, special tokens included; the
   padding and the 128 of truncation written in ``tokenizer.json`` are the ones sentence-transformers
   overrides too); then the BERT encoder (``config.json``: absolute positions, post-layer-norm, GELU with
   the exact ``erf``), in float32;
2. ``Pooling``: the mean of the token vectors under the attention mask;
3. ``Normalize``: L2 normalisation.

A batch is packed, not padded: its texts' tokens are the rows of one matrix, the products of every layer
run on all of them at once, and attention runs per text over its own rows. That is what sentence-transformers'
padded batch computes under its attention mask (a padded position gets no weight and is not pooled),
without computing the padding. The feed-forward runs in blocks of :data:`ROWS` tokens, so its wide
activations stay in the CPU's cache (GELU's passes over them cost as much as the products otherwise).

Threads: BLAS always runs on one thread. A question's products are small, and OpenBLAS's threads
waiting on a busy CPU made one question take a second instead of tens of milliseconds; for a batch of
documents OpenBLAS on two threads was 4.5x slower than on one on the loaded 2-core machine
(``bench/embed_throughput.py --modes numpy-1,numpy-blas``). A batch of documents is instead split across
``threads`` Python threads (:func:`in_threads`; the caller gives one per core), each computing its own
texts: numpy releases the GIL in its products and element-wise loops.

The weights are a read-only memory map of ``model.safetensors`` (no copy: the pages of the 30,522
word vectors that a question never uses are never read). :func:`unsupported` says why a folder is not
such a model (then the caller loads sentence-transformers as before).
"""

from __future__ import annotations

import importlib.util
import json
import math
import os
import threading
from pathlib import Path
from typing import Any, Callable, TypeVar

import numpy as np

TRANSFORMER, POOLING, NORMALIZE = ("sentence_transformers.models." + name
                                   for name in ("Transformer", "Pooling", "Normalize"))
#: the pooling flags of ``1_Pooling/config.json``: only the mean is supported
POOLING_MODES = ("pooling_mode_cls_token", "pooling_mode_max_tokens", "pooling_mode_mean_sqrt_len_tokens",
                 "pooling_mode_weightedmean_tokens", "pooling_mode_lasttoken")
#: what the encoder needs besides numpy (the extra local): WordPiece, and BLAS kept to one thread
NEEDS = ("tokenizers", "threadpoolctl")
FILES = ("modules.json", "config.json", "sentence_bert_config.json", "tokenizer.json", "model.safetensors")
T = TypeVar("T")
R = TypeVar("R")


def cores() -> int:
    """The CPU cores this process may run on (the threads of a batch of documents)."""
    affinity = getattr(os, "sched_getaffinity", None)
    return len(affinity(0)) if affinity is not None else (os.cpu_count() or 1)


def in_threads(work: Callable[[T], R], items: list[T], threads: int) -> list[R]:
    """``[work(item) for item in items]`` on up to ``threads`` threads (this one among them), in order; the
    first exception of any thread is raised. numpy releases the GIL in its products and element-wise loops."""
    results: list[Any] = [None] * len(items)
    errors: list[BaseException] = []
    threads = max(1, min(threads, len(items)))

    def run(first: int) -> None:
        try:
            for i in range(first, len(items), threads):
                results[i] = work(items[i])
        except BaseException as exc:  # handed to the calling thread
            errors.append(exc)

    helpers = [threading.Thread(target=run, args=(k,), daemon=True) for k in range(1, threads)]
    for helper in helpers:
        helper.start()
    run(0)
    for helper in helpers:
        helper.join()
    if errors:
        raise errors[0]
    return results


def _read_json(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def _modules_problem(folder: Path) -> str | None:
    modules = _read_json(folder / "modules.json")
    kinds = [(m.get("type"), m.get("path", "")) for m in modules] if isinstance(modules, list) else []
    if not kinds or kinds[0] != (TRANSFORMER, "") or len(kinds) < 2 or kinds[1][0] != POOLING:
        return "modules.json is not a Transformer followed by a Pooling"
    if len(kinds) > 3 or (len(kinds) == 3 and kinds[2][0] != NORMALIZE):
        return "modules.json has modules after Pooling other than Normalize"
    pooling = _read_json(folder / kinds[1][1] / "config.json")
    if not pooling.get("pooling_mode_mean_tokens") or any(pooling.get(mode) for mode in POOLING_MODES):
        return "the pooling is not the mean of the tokens"
    return None


def _bert_problem(folder: Path) -> str | None:
    config = _read_json(folder / "config.json")
    if config.get("model_type") != "bert" or config.get("architectures", ["BertModel"]) != ["BertModel"]:
        return "config.json is not a BertModel"
    if config.get("hidden_act") != "gelu" or config.get("position_embedding_type", "absolute") != "absolute":
        return "config.json asks for an activation or position embedding other than gelu / absolute"
    if config["hidden_size"] % config["num_attention_heads"]:
        return "config.json's hidden size is not a multiple of its attention heads"
    st_config = _read_json(folder / "sentence_bert_config.json")
    if set(st_config) - {"max_seq_length", "do_lower_case"}:
        return "sentence_bert_config.json has settings this encoder does not follow"
    if not 2 <= int(st_config.get("max_seq_length") or 0) <= config["max_position_embeddings"]:
        return "sentence_bert_config.json's max_seq_length is missing or longer than the model's positions"
    return None


def unsupported(folder: str | Path) -> str | None:
    """Why ``folder`` is not a model :class:`NumpyBert` computes exactly, or cannot be computed here (a
    package of :data:`NEEDS` is missing); ``None`` when it is."""
    missing_packages = [name for name in NEEDS if importlib.util.find_spec(name) is None]
    if missing_packages:
        return f"{' and '.join(missing_packages)} not installed"
    root = Path(folder)
    missing = [name for name in FILES if not (root / name).is_file()]
    if missing:
        return f"no {', '.join(missing)}"
    try:
        return _modules_problem(root) or _bert_problem(root)
    except (OSError, ValueError, TypeError, KeyError, AttributeError) as exc:
        return f"unreadable configuration: {type(exc).__name__}: {str(exc)[:120]}"


def read_safetensors(path: Path) -> dict[str, np.ndarray]:
    """The float32 tensors of a safetensors file as read-only views of one memory map."""
    raw = np.memmap(path, dtype=np.uint8, mode="r").view(np.ndarray)   # plain arrays over the map
    size = int(raw[:8].view("<u8")[0])
    header = json.loads(bytes(raw[8:8 + size]).decode("utf-8"))
    start = 8 + size
    out = {}
    for name, entry in header.items():
        if name == "__metadata__" or entry.get("dtype") != "F32":
            continue
        begin, end = (start + int(x) for x in entry["data_offsets"])
        shape = tuple(int(n) for n in entry["shape"])
        if not start <= begin <= end <= raw.size or end - begin != 4 * math.prod(shape) or begin % 4:
            raise ValueError(f"{path.name}: tensor {name} lies outside the file or is misaligned")
        out[name] = raw[begin:end].view("<f4").reshape(shape)
    return out


#: ``erfc(a) = poly(t) exp(-a^2)``, ``t = 1 / (1 + p a)``, to within 1.5e-7 (Abramowitz and Stegun 7.1.26):
#: below float32's own rounding of GELU
_ERF_P = 0.3275911
_ERF_POLY = (1.061405429, -1.453152027, 1.421413741, -0.284496736, 0.254829592)
#: token rows per block of the feed-forward: its 1,536-wide activations of a block stay in the CPU's cache
ROWS = 256


def gelu_(h: np.ndarray) -> np.ndarray:
    """GELU with the exact ``erf`` (BERT's ``gelu``, ``h * Phi(h)``), in place on the float32 array ``h``,
    which it returns: ``max(h, 0) - |h| Phi(-|h|)``, with ``Phi(-|h|) = erfc(|h| / sqrt(2)) / 2``."""
    a = np.abs(h)
    t = a * np.float32(_ERF_P / math.sqrt(2))
    t += np.float32(1.0)
    np.reciprocal(t, out=t)
    y = t * np.float32(_ERF_POLY[0] / 2)
    for coefficient in _ERF_POLY[1:]:
        y += np.float32(coefficient / 2)
        y *= t
    np.square(h, out=t)
    t *= np.float32(-0.5)
    np.exp(t, out=t)
    y *= t                                     # Phi(-|h|)
    y *= a
    np.maximum(h, np.float32(0.0), out=h)
    h -= y
    return h


def _layer_norm(x: np.ndarray, weight: np.ndarray, bias: np.ndarray, eps: float) -> np.ndarray:
    """LayerNorm over the last axis, in place on the float32 array ``x``, which it returns."""
    x -= x.mean(axis=-1, keepdims=True)
    var = np.einsum("ij,ij->i", x, x)[:, None]
    var *= np.float32(1 / x.shape[-1])
    var += np.float32(eps)
    np.sqrt(var, out=var)
    x /= var
    x *= weight
    x += bias
    return x


class NumpyBert:
    """A sentence-transformers BERT model with mean pooling, computed in numpy (see the module's text)."""

    def __init__(self, folder: str | Path):
        # lazy: the extra local (see NEEDS), only when a text is embedded
        import threadpoolctl, tokenizers  # noqa: E401


        root = Path(folder)
        problem = unsupported(root)
        if problem:
            raise ValueError(f"not a BERT mean-pooling model: {problem}")
        config = _read_json(root / "config.json")
        st_config = _read_json(root / "sentence_bert_config.json")
        self.heads, self.eps = int(config["num_attention_heads"]), float(config["layer_norm_eps"])
        self.layers = int(config["num_hidden_layers"])
        self.lower = bool(st_config.get("do_lower_case"))
        self._limits = threadpoolctl.threadpool_limits
        self.tokenizer = tokenizers.Tokenizer.from_file(str(root / "tokenizer.json"))
        self.tokenizer.no_padding()
        self.tokenizer.enable_truncation(max_length=int(st_config["max_seq_length"]))
        weights = read_safetensors(root / "model.safetensors")
        self.w = {name.removeprefix("bert."): tensor for name, tensor in weights.items()}
        missing = [name for name in self._names() if name not in self.w]
        if missing:
            raise ValueError(f"model.safetensors lacks {missing[0]} (and {len(missing) - 1} more)")

    def _names(self) -> list[str]:
        parts = ["attention.self.query", "attention.self.key", "attention.self.value", "attention.output.dense",
                 "intermediate.dense", "output.dense"]
        names = [f"embeddings.{n}.weight" for n in ("word_embeddings", "position_embeddings",
                                                    "token_type_embeddings", "LayerNorm")]
        names.append("embeddings.LayerNorm.bias")
        for i in range(self.layers):
            names += [f"encoder.layer.{i}.{p}.{kind}" for p in parts for kind in ("weight", "bias")]
            names += [f"encoder.layer.{i}.{p}.LayerNorm.{kind}" for p in ("attention.output", "output")
                      for kind in ("weight", "bias")]
        return names

    def _linear(self, x: np.ndarray, name: str) -> np.ndarray:
        out: np.ndarray = x @ self.w[name + ".weight"].T
        out += self.w[name + ".bias"]
        return out

    def _norm(self, x: np.ndarray, name: str) -> np.ndarray:
        return _layer_norm(x, self.w[name + ".weight"], self.w[name + ".bias"], self.eps)

    def _attention(self, x: np.ndarray, spans: list[tuple[int, int]], prefix: str) -> np.ndarray:
        """Self-attention of each text's own tokens (rows ``spans`` of ``x``): a text never sees another's,
        which is what the attention mask of a padded batch does, without computing the padding."""
        width = x.shape[1]
        head = width // self.heads
        q, k, v = (self._linear(x, f"{prefix}.attention.self.{name}") for name in ("query", "key", "value"))
        q *= np.float32(1 / math.sqrt(head))
        context = np.empty_like(x)
        for begin, end in spans:
            n = end - begin
            qh, kh, vh = (m[begin:end].reshape(n, self.heads, head).transpose(1, 0, 2) for m in (q, k, v))
            scores = qh @ kh.transpose(0, 2, 1)            # (heads, tokens, tokens)
            scores -= scores.max(axis=-1, keepdims=True)
            np.exp(scores, out=scores)
            scores /= scores.sum(axis=-1, keepdims=True)
            context[begin:end] = (scores @ vh).transpose(1, 0, 2).reshape(n, width)
        return self._linear(context, f"{prefix}.attention.output.dense")

    def _feed_forward(self, x: np.ndarray, prefix: str) -> np.ndarray:
        inner_w, inner_b = self.w[f"{prefix}.intermediate.dense.weight"], self.w[f"{prefix}.intermediate.dense.bias"]
        out_w = self.w[f"{prefix}.output.dense.weight"]
        out = np.empty_like(x)
        for begin in range(0, len(x), ROWS):
            inner = x[begin:begin + ROWS] @ inner_w.T
            inner += inner_b
            np.matmul(gelu_(inner), out_w.T, out=out[begin:begin + ROWS])
        out += self.w[f"{prefix}.output.dense.bias"]
        return out

    def forward(self, ids: list[list[int]]) -> tuple[np.ndarray, list[tuple[int, int]]]:
        """The last hidden states of the texts' token ``ids``, packed: ``(tokens, width)`` rows, the rows of
        text ``i`` being ``spans[i]`` (no padding: each text is computed at its own length)."""
        w = self.w
        ends = np.cumsum([len(row) for row in ids])
        spans = [(int(end) - len(row), int(end)) for row, end in zip(ids, ends)]
        positions = np.concatenate([np.arange(len(row)) for row in ids])
        x = (w["embeddings.word_embeddings.weight"][np.concatenate(ids)]
             + w["embeddings.position_embeddings.weight"][positions]
             + w["embeddings.token_type_embeddings.weight"][0])
        x = self._norm(x, "embeddings.LayerNorm")
        for i in range(self.layers):
            prefix = f"encoder.layer.{i}"
            x = self._norm(x + self._attention(x, spans, prefix), f"{prefix}.attention.output.LayerNorm")
            x = self._norm(x + self._feed_forward(x, prefix), f"{prefix}.output.LayerNorm")
        return x, spans

    def _pooled(self, ids: list[list[int]]) -> np.ndarray:
        """The mean of each text's token vectors (before normalisation)."""
        hidden, spans = self.forward(ids)
        starts = np.array([begin for begin, _ in spans])
        counts = np.array([end - begin for begin, end in spans], dtype=np.float32)
        pooled: np.ndarray = np.add.reduceat(hidden, starts, axis=0) / counts[:, None]
        return pooled

    def encode(self, texts: list[str], batch_size: int = 32, normalize_embeddings: bool = True,
               threads: int = 1, **_ignored: Any) -> np.ndarray:
        """``(len(texts), width)`` float32 sentence vectors, like ``SentenceTransformer.encode``, in the order
        of ``texts``: at most ``batch_size`` texts per forward pass, on ``threads`` threads (each its own
        texts; BLAS on one thread in each, see the module's text)."""
        prepared = [t.strip().lower() if self.lower else t.strip() for t in texts]
        ids = [enc.ids for enc in self.tokenizer.encode_batch(prepared)]
        step = max(1, min(batch_size, -(-len(ids) // max(1, threads))))
        batches = [ids[start:start + step] for start in range(0, len(ids), step)]
        with self._limits(limits=1, user_api="blas"):
            parts = in_threads(self._pooled, batches, threads)
        width = self.w["embeddings.word_embeddings.weight"].shape[1]
        out = np.concatenate(parts) if parts else np.zeros((0, width), dtype=np.float32)
        if normalize_embeddings:
            out /= np.maximum(np.linalg.norm(out, axis=1, keepdims=True), np.float32(1e-12))
        return out
