"""A BERT sentence-transformers model (all-MiniLM-L6-v2) in numpy: the same vectors without torch.

A question costs one short forward pass; loading torch and sentence-transformers for it cost seconds
and hundreds of MB. :class:`NumpyBert` reads the model folder sentence-transformers reads and computes
what its modules (``modules.json``) compute:

1. ``Transformer``: the text, stripped, is split into WordPiece tokens by ``tokenizer.json`` (the
   ``tokenizers`` library), ``[CLS] ... [SEP]``, truncated on the right to ``max_seq_length`` tokens
   (``sentence_bert_config.json``; the padding and truncation written in ``tokenizer.json`` are the
   ones sentence-transformers overrides too); then the BERT encoder (``config.json``: absolute
   positions, post-layer-norm, GELU with the exact ``erf``), in float32;
2. ``Pooling``: the mean of the token vectors under the attention mask;
3. ``Normalize``: L2 normalisation.

The weights are a read-only memory map of ``model.safetensors`` (no copy: the pages of the 30,522
word vectors that a question never uses are never read). :func:`unsupported` says why a folder is not
such a model (then the caller loads sentence-transformers as before).
"""

from __future__ import annotations

import importlib.util
import json
import math
from pathlib import Path
from typing import Any

import numpy as np

TRANSFORMER, POOLING, NORMALIZE = ("sentence_transformers.models." + name
                                   for name in ("Transformer", "Pooling", "Normalize"))
#: the pooling flags of ``1_Pooling/config.json``: only the mean is supported
POOLING_MODES = ("pooling_mode_cls_token", "pooling_mode_max_tokens", "pooling_mode_mean_sqrt_len_tokens",
                 "pooling_mode_weightedmean_tokens", "pooling_mode_lasttoken")
#: what the encoder needs besides numpy (the extra local): WordPiece, and BLAS kept to one thread
NEEDS = ("tokenizers", "threadpoolctl")
FILES = ("modules.json", "config.json", "sentence_bert_config.json", "tokenizer.json", "model.safetensors")


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
    raw = np.memmap(path, dtype=np.uint8, mode="r")
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


def _erf(x: np.ndarray) -> np.ndarray:
    """``erf`` to within 1.5e-7 (Abramowitz and Stegun 7.1.26), below float32's own rounding of GELU."""
    a = np.abs(x)
    t = 1.0 / (1.0 + 0.3275911 * a)
    poly = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429))))
    y: np.ndarray = np.copysign(1.0 - poly * np.exp(-a * a), x)
    return y


def _gelu(x: np.ndarray) -> np.ndarray:
    out: np.ndarray = (0.5 * x * (1.0 + _erf(x * np.float32(1 / math.sqrt(2))))).astype(np.float32, copy=False)
    return out


def _layer_norm(x: np.ndarray, weight: np.ndarray, bias: np.ndarray, eps: float) -> np.ndarray:
    mean = x.mean(axis=-1, keepdims=True)
    centred = x - mean
    var = (centred * centred).mean(axis=-1, keepdims=True)
    out: np.ndarray = centred / np.sqrt(var + np.float32(eps)) * weight + bias
    return out


class NumpyBert:
    """A sentence-transformers BERT model with mean pooling, computed in numpy (see the module's text)."""

    def __init__(self, folder: str | Path):
        # lazy: the extra local (see NEEDS), only when a question is embedded
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
        out: np.ndarray = x @ self.w[name + ".weight"].T + self.w[name + ".bias"]
        return out

    def _norm(self, x: np.ndarray, name: str) -> np.ndarray:
        return _layer_norm(x, self.w[name + ".weight"], self.w[name + ".bias"], self.eps)

    def _attention(self, x: np.ndarray, mask_bias: np.ndarray, prefix: str) -> np.ndarray:
        batch, length, width = x.shape
        head = width // self.heads
        def split(name: str) -> np.ndarray:
            projected = self._linear(x, f"{prefix}.attention.self.{name}")
            heads: np.ndarray = projected.reshape(batch, length, self.heads, head).transpose(0, 2, 1, 3)
            return heads
        q, k, v = split("query"), split("key"), split("value")
        scores = q @ k.transpose(0, 1, 3, 2) * np.float32(1 / math.sqrt(head)) + mask_bias
        scores = np.exp(scores - scores.max(axis=-1, keepdims=True))
        scores /= scores.sum(axis=-1, keepdims=True)
        context = (scores @ v).transpose(0, 2, 1, 3).reshape(batch, length, width)
        return self._linear(context, f"{prefix}.attention.output.dense")

    def forward(self, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        """The last hidden states ``(batch, length, width)`` of token ``ids`` under the attention ``mask``."""
        w = self.w
        x = (w["embeddings.word_embeddings.weight"][ids] + w["embeddings.position_embeddings.weight"][:ids.shape[1]]
             + w["embeddings.token_type_embeddings.weight"][0])
        x = self._norm(x, "embeddings.LayerNorm")
        mask_bias = ((1.0 - mask[:, None, None, :]) * np.finfo(np.float32).min).astype(np.float32)
        for i in range(self.layers):
            prefix = f"encoder.layer.{i}"
            x = self._norm(x + self._attention(x, mask_bias, prefix), f"{prefix}.attention.output.LayerNorm")
            inner = _gelu(self._linear(x, f"{prefix}.intermediate.dense"))
            x = self._norm(x + self._linear(inner, f"{prefix}.output.dense"), f"{prefix}.output.LayerNorm")
        return x

    def _batch(self, texts: list[str]) -> np.ndarray:
        encodings = self.tokenizer.encode_batch([t.strip().lower() if self.lower else t.strip() for t in texts])
        length = max(len(e.ids) for e in encodings)
        ids = np.zeros((len(texts), length), dtype=np.int64)
        mask = np.zeros((len(texts), length), dtype=np.float32)
        for row, enc in enumerate(encodings):
            ids[row, :len(enc.ids)] = enc.ids
            mask[row, :len(enc.ids)] = 1.0
        hidden = self.forward(ids, mask)
        summed = (hidden * mask[:, :, None]).sum(axis=1)
        pooled: np.ndarray = summed / np.maximum(mask.sum(axis=1, keepdims=True), np.float32(1e-9))
        return pooled

    def encode(self, texts: list[str], batch_size: int = 32, normalize_embeddings: bool = True,
               **_ignored: Any) -> np.ndarray:
        """``(len(texts), width)`` float32 sentence vectors, like ``SentenceTransformer.encode``: texts of
        similar length are batched together (less padding), the rows come back in the order of ``texts``."""
        order = sorted(range(len(texts)), key=lambda i: -len(texts[i]))
        out = np.zeros((len(texts), self.w["embeddings.word_embeddings.weight"].shape[1]), dtype=np.float32)
        # BLAS on one thread: a question's products are small, and OpenBLAS's threads waiting on a busy
        # CPU made one question take a second instead of tens of milliseconds (measured, 2 loaded cores)
        with self._limits(limits=1, user_api="blas"):
            for start in range(0, len(order), max(1, batch_size)):
                chunk = order[start:start + batch_size]
                out[chunk] = self._batch([texts[i] for i in chunk])
        if normalize_embeddings:
            out /= np.maximum(np.linalg.norm(out, axis=1, keepdims=True), np.float32(1e-12))
        return out
