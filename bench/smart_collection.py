#!/usr/bin/env python3
"""Convert a classic SMART-format test collection (CISI, CACM) into the BEIR layout
that ``bench/ir_eval.py --data DIR`` reads (``corpus.jsonl``, ``queries.jsonl``,
``qrels.tsv``), so retrieval figures can be checked on collections nobody tuned on.

    python3 bench/smart_collection.py --docs CISI.ALL --queries CISI.QRY \
        --qrels CISI.REL --out /tmp/cisi
    python3 bench/smart_collection.py --docs cacm.all --queries query.text \
        --qrels qrels.text --out /tmp/cacm
    python3 bench/smart_collection.py --format npl --docs doc-text \
        --queries query-text --qrels qrels --out /tmp/npl

Fields kept: ``.T`` (title) and ``.W`` (abstract) of each document, ``.W`` of
each query; the ``.I`` numbers are the ids (leading zeros dropped, as the
relevance files use them). Judgements are binary (score 1); queries without a
judgement are left out of ``queries.jsonl``. ``--format npl`` reads the Glasgow
NPL (Vaswani) layout instead: records of an id line and text ended by a line
``/`` (or queries as ``id;text`` lines), no titles, and judgements either as
``query doc`` pairs or in TREC form ``query 0 doc rel``. Where the files came from: CISI from
the public repository Shakiba-Alipour/Information-Retrieval-on-CISI, CACM from
kavinsan/Information-Retrieval-Project (the standard Glasgow distribution), NPL's
documents from IoannaT/XML-Document-Parsing-TermFrequencyAnalyzer (``doc-text``)
and its queries and judgements from isaranto/collaborative-search (``query-text``,
``qrels.nocr``). The data is not part of this repository.
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

_FIELD = re.compile(r"^\.([A-Z])\s*(.*)$")


def records(path: Path) -> list[dict[str, str]]:
    """Each ``.I`` record of a SMART file as {field letter: text}, with ``I`` the id."""
    out: list[dict[str, str]] = []
    field = ""
    for line in path.read_text(encoding="latin-1").splitlines():
        m = _FIELD.match(line)
        if m and m.group(1) == "I":
            out.append({"I": str(int(m.group(2).split()[0]))})
            field = ""
        elif m and out:
            field = m.group(1)
            out[-1].setdefault(field, "")
            out[-1][field] += " " + m.group(2)
        elif out and field:
            out[-1][field] += " " + line
    return [{k: " ".join(v.split()) for k, v in r.items()} for r in out]


def npl_records(path: Path) -> list[dict[str, str]]:
    """NPL-style records as {"I": id, "W": text}: an id line, text, a line ``/``; or ``id;text`` lines."""
    out: list[dict[str, str]] = []
    lines: list[str] = []
    for line in path.read_text(encoding="latin-1").splitlines():
        head, sep, rest = line.partition(";")
        if sep and head.strip().isdigit() and not lines:
            out.append({"I": str(int(head)), "W": " ".join(rest.split())})
        elif line.strip() == "/":
            if lines:
                out.append({"I": str(int(lines[0])), "W": " ".join(" ".join(lines[1:]).split())})
            lines = []
        elif line.strip() or lines:
            lines.append(line.strip())
    return out


def judgements(path: Path) -> list[tuple[str, str]]:
    pairs = []
    for line in path.read_text(encoding="latin-1").splitlines():
        parts = line.split()
        if len(parts) == 4 and parts[1] == "0" and parts[3] != "0":   # TREC: query 0 doc rel
            pairs.append((str(int(parts[0])), str(int(parts[2]))))
        elif len(parts) >= 2 and not (len(parts) == 4 and parts[1] == "0"):
            pairs.append((str(int(parts[0])), str(int(parts[1]))))
    return sorted(set(pairs), key=lambda p: (int(p[0]), int(p[1])))


def convert(docs: Path, queries: Path, qrels: Path, out: Path, fmt: str = "smart") -> dict[str, int]:
    out.mkdir(parents=True, exist_ok=True)
    read = npl_records if fmt == "npl" else records
    corpus = [{"_id": r["I"], "title": r.get("T", ""), "text": r.get("W", "")}
              for r in read(docs)]
    pairs = judgements(qrels)
    judged = {q for q, _ in pairs}
    qs = [{"_id": r["I"], "text": r.get("W", "")} for r in read(queries)
          if r["I"] in judged and r.get("W")]
    with (out / "corpus.jsonl").open("w", encoding="utf-8") as f:
        for d in corpus:
            f.write(json.dumps(d) + "\n")
    with (out / "queries.jsonl").open("w", encoding="utf-8") as f:
        for q in qs:
            f.write(json.dumps(q) + "\n")
    kept = {q["_id"] for q in qs}
    with (out / "qrels.tsv").open("w", encoding="utf-8") as f:
        f.write("query-id\tcorpus-id\tscore\n")
        n = 0
        for q, d in pairs:
            if q in kept:
                f.write(f"{q}\t{d}\t1\n")
                n += 1
    return {"documents": len(corpus), "queries": len(qs), "judgements": n}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--docs", type=Path, required=True)
    ap.add_argument("--queries", type=Path, required=True)
    ap.add_argument("--qrels", type=Path, required=True)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--format", choices=("smart", "npl"), default="smart")
    a = ap.parse_args()
    print(json.dumps(convert(a.docs, a.queries, a.qrels, a.out, a.format)))


if __name__ == "__main__":
    main()
