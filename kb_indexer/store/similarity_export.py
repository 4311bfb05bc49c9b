"""The relations in the editable ``similarities.json`` format (``kbindex export-similarities``).

Which relations (see kb_indexer.store.provenance for how provenance is stored):

* by default, the relations a person would keep in the editable file: those read from a
  similarities file (``origin_kind`` ``file``), written with ``relate`` (``person``) or brought in by
  ``import-similarities`` (``import``), with the score a person or a file gave them (a score that
  ``learn`` adjusted is written as it was before the adjustment);
* with ``learned``, every relation as the index uses it now: learned relations too, and scores as
  ``learn`` adjusted them.

Each entry has exactly the file format's fields: ``keyword1``, ``keyword2``, ``type``, ``context``,
``score``, ``directional``. A directional relation reads keyword1 → keyword2. Entries come in the
order the relations were created. A non-directional pair is written so that importing the file into
an empty index and exporting again gives the same file: a keyword already written by an earlier
entry comes first (``import-similarities`` creates keywords in file order), else the older keyword.
"""

from __future__ import annotations

import json
from typing import Any
from kb_indexer.store.dbapi import Connection

EDITABLE_KINDS = ("file", "person", "import")

_SQL = """
SELECT s.id, s.keyword_id_1, s.keyword_id_2, s.similarity_type, s.context, s.score, s.directional,
       s.source_keyword_id, s.origin_kind, k1.display AS d1, k2.display AS d2,
       (SELECT li.previous_score FROM learned_items li
         WHERE li.kind = 'score' AND li.status = 'active' AND li.similarity_id = s.id
           AND li.previous_score IS NOT NULL AND abs(s.score - li.weight) < 1e-9) AS unadjusted
FROM keyword_similarities s
JOIN keywords k1 ON k1.id = s.keyword_id_1
JOIN keywords k2 ON k2.id = s.keyword_id_2
ORDER BY s.id
"""


def editable_similarities(conn: Connection, learned: bool = False) -> list[dict[str, Any]]:
    """The relations as ``similarities.json`` entries (see the module docstring)."""
    seen: dict[int, int] = {}  # keyword id -> order of first appearance in the output
    out = []
    for r in conn.execute(_SQL):
        kind = r["origin_kind"] or "person"
        if not learned and kind not in EDITABLE_KINDS:
            continue
        first, second = (r["keyword_id_1"], r["d1"]), (r["keyword_id_2"], r["d2"])
        if r["directional"]:
            if r["source_keyword_id"] == r["keyword_id_2"]:
                first, second = second, first
        elif _rank(seen, second[0]) < _rank(seen, first[0]):
            first, second = second, first
        for kid, _ in (first, second):
            seen.setdefault(kid, len(seen))
        score = r["score"] if learned or r["unadjusted"] is None else r["unadjusted"]
        out.append({"keyword1": first[1], "keyword2": second[1], "type": r["similarity_type"],
                    "context": r["context"], "score": float(score), "directional": bool(r["directional"])})
    return out


def _rank(seen: dict[int, int], keyword_id: int) -> tuple[int, int]:
    """Written earlier first; keywords not written yet after them, older (smaller id) first."""
    return (0, seen[keyword_id]) if keyword_id in seen else (1, keyword_id)


def dumps_similarities(entries: list[dict[str, Any]]) -> str:
    """The file text, one entry per line as in the bundled ``similarities.json`` (diffs stay readable)."""
    if not entries:
        return '{"similarities": []}\n'
    lines = ",\n".join("  " + json.dumps(e, ensure_ascii=False) for e in entries)
    return '{"similarities": [\n' + lines + "\n]}\n"
