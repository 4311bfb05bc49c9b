"""Cranfield collection helpers shared by the benchmarks: loading, writing it as a knowledge base
(indexed by the real `sync`), and graded nDCG / recall.

nDCG@10 uses graded gains 2^rel - 1 (the collection's README); Recall@100 counts every judged
document (all have rel >= 1).
"""

from __future__ import annotations

import json
import math
import time
from pathlib import Path

from bench.data import data_dir

REPO = Path(__file__).resolve().parent.parent
DEFAULT_DATA = data_dir("cranfield")


def load(data: Path = DEFAULT_DATA):
    """(corpus, queries that have judgements, qrels {query id: {doc id: grade}})."""
    corpus = [json.loads(line) for line in (data / "corpus.jsonl").open(encoding="utf-8") if line.strip()]
    queries = [json.loads(line) for line in (data / "queries.jsonl").open(encoding="utf-8") if line.strip()]
    qrels: dict[str, dict[str, int]] = {}
    with (data / "qrels.tsv").open(encoding="utf-8") as f:
        next(f)
        for line in f:
            qid, did, score = line.split("\t")
            if int(score) > 0:
                qrels.setdefault(qid, {})[did] = int(score)
    queries = [q for q in queries if q["_id"] in qrels]
    return corpus, queries, qrels


def doc_id(filepath: str) -> str:
    """The Cranfield id of a document written by :func:`build_kb` (``<id>.md``)."""
    return filepath[:-3]


def ndcg_at(ranked: list[str], rels: dict[str, int], k: int = 10) -> float:
    dcg = sum((2 ** rels.get(d, 0) - 1) / math.log2(i + 2) for i, d in enumerate(ranked[:k]))
    ideal = sorted(rels.values(), reverse=True)[:k]
    idcg = sum((2 ** r - 1) / math.log2(i + 2) for i, r in enumerate(ideal))
    return dcg / idcg if idcg else 0.0


def recall_at(ranked: list[str], rels: dict[str, int], k: int = 100) -> float:
    return len(set(ranked[:k]) & set(rels)) / len(rels) if rels else 0.0


def build_kb(corpus, root: Path):
    """Write each document as ``<id>.md`` (``# title`` + text), init an index and run the real sync.

    Returns (KnowledgeBase, documents added, sync seconds). A ``root`` that already holds a built index
    (``--keep`` of an earlier run, embedded or not) is opened as it is: (KnowledgeBase, 0, 0.0).
    """
    from kb_indexer.api import KnowledgeBase

    kb_dir = root / "knowledge-base"
    if (root / "kbindex.db").is_file() and kb_dir.is_dir():
        return KnowledgeBase.open(root / "kbindex.db", kb_dir), 0, 0.0
    kb_dir.mkdir(parents=True)
    for doc in corpus:
        title = " ".join(doc.get("title", "").split()) or f"Document {doc['_id']}"
        (kb_dir / f"{doc['_id']}.md").write_text(f"# {title}\n\n{doc.get('text', '')}\n", encoding="utf-8")
    kb, _ = KnowledgeBase.init(root / "kbindex.db", kb_dir)
    t = time.perf_counter()
    res = kb.sync()
    secs = time.perf_counter() - t
    if res["errors"]:
        raise SystemExit(f"sync errors: {res['errors'][:3]}")
    return kb, res["added"], secs
