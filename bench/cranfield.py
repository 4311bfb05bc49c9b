"""Cranfield collection helpers shared by the benchmarks: loading, indexing through the real
code path (markdown files + `sync`), and graded nDCG / recall."""

from __future__ import annotations

import json
import math
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DEFAULT_DATA = REPO.parent / "shared" / "data" / "cranfield"


def load(data_dir: Path = DEFAULT_DATA):
    corpus = [json.loads(line) for line in (data_dir / "corpus.jsonl").read_text().splitlines() if line.strip()]
    queries = [json.loads(line) for line in (data_dir / "queries.jsonl").read_text().splitlines() if line.strip()]
    qrels: dict[str, dict[str, int]] = defaultdict(dict)
    for i, line in enumerate((data_dir / "qrels.tsv").read_text().splitlines()):
        if i == 0 or not line.strip():
            continue
        q, d, s = line.split("\t")
        qrels[q][d] = int(s)
    return corpus, queries, dict(qrels)


def doc_path(doc_id: str) -> str:
    return f"doc-{int(doc_id):04d}.md"


def path_doc(path: str) -> str:
    return str(int(path[4:8]))


def write_kb(corpus: list[dict], kb_dir: Path) -> None:
    """Each document becomes a markdown file: `# title` and the abstract (no keywords file)."""
    kb_dir.mkdir(parents=True, exist_ok=True)
    for d in corpus:
        title = (d.get("title") or "").strip().rstrip(" .") or f"Document {d['_id']}"
        (kb_dir / doc_path(d["_id"])).write_text(f"# {title}\n\n{d['text']}\n", encoding="utf-8")


def ndcg_at(ranked: list[str], rels: dict[str, int], k: int = 10) -> float:
    dcg = sum((2 ** rels.get(d, 0) - 1) / math.log2(i + 2) for i, d in enumerate(ranked[:k]))
    ideal = sorted(rels.values(), reverse=True)[:k]
    idcg = sum((2 ** r - 1) / math.log2(i + 2) for i, r in enumerate(ideal))
    return dcg / idcg if idcg else 0.0


def recall_at(ranked: list[str], rels: dict[str, int], k: int = 100) -> float:
    relevant = {d for d, r in rels.items() if r > 0}
    return len(relevant & set(ranked[:k])) / len(relevant) if relevant else 0.0
