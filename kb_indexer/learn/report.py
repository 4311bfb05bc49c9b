"""What ``learn`` tells a person: each suggestion in the design's sections, as one readable line.

The sections follow the design's learning algorithm:

* ``keyword_gap``: a user keyword missing from the helpful documents related to the document keyword
  best associated with it (a ``similarity`` item derived from a gap; it carries ``against``);
* ``keyword_augmentation``: a user keyword added to the document it found (``keyword``);
* ``pattern_recognition``: two user keywords used together in successful queries (a ``similarity``
  item without ``against``);
* ``similarity_scoring``: a relation's score raised or lowered by expansion success (``score``);
* ``associations``: question terms linked to a helpful document (``association``; kbindex's own).

This module is the one place that names the sections and words the lines; the CLI prints them and the
JSON carries them (``section``, ``description`` per suggestion, ``sections`` counts).
"""

from __future__ import annotations

from typing import Any
from kb_indexer.store.dbapi import Connection, Row

#: Section key -> heading, in the order they are printed.
SECTIONS = {
    "keyword_gap": "Keyword Gap Analysis",
    "keyword_augmentation": "Keyword Augmentation",
    "pattern_recognition": "Pattern Recognition",
    "similarity_scoring": "Similarity Scoring",
    "associations": "Question Associations",
}
#: How a section's count reads in the summary (singular, plural).
_COUNT_WORDS = {
    "keyword_gap": ("similarity suggestion from keyword gaps", "similarity suggestions from keyword gaps"),
    "keyword_augmentation": ("keyword augmentation suggestion", "keyword augmentation suggestions"),
    "pattern_recognition": ("pattern-based suggestion", "pattern-based suggestions"),
    "similarity_scoring": ("score adjustment", "score adjustments"),
    "associations": ("question association", "question associations"),
}


def section_of(item: dict[str, Any]) -> str:
    kind = item["kind"]
    if kind == "similarity":
        return "keyword_gap" if "against" in item else "pattern_recognition"
    return {"keyword": "keyword_augmentation", "score": "similarity_scoring", "association": "associations"}[kind]


def describe(conn: Connection, item: dict[str, Any]) -> str:
    """One line saying what the suggestion does, e.g. ``Add similarity: "Monte Carlo" ↔ "MCTS"
    (related_concept, score 0.7)``."""
    kind = item["kind"]
    names = _Displays(conn)
    if kind == "similarity":
        pair = f'"{names(item["keyword1"])}" ↔ "{names(item["keyword2"])}"'
        if not item.get("score"):
            return f"Withdraw similarity: {pair} ({item.get('type', 'related_concept')})"
        return f"Add similarity: {pair} ({item.get('type', 'related_concept')}, score {_num(item['score'])})"
    if kind == "keyword":
        if not item.get("weight"):
            return f'Withdraw keyword "{names(item["keyword"])}" from {item["filepath"]}'
        return f'Add keyword "{names(item["keyword"])}" to {item["filepath"]} (weight {_num(item["weight"])})'
    if kind == "association":
        terms = " ".join(item.get("terms") or [])
        weight = item.get("weight") or 0
        if not weight:
            return f'Withdraw the link from question terms "{terms}" to {item["filepath"]}'
        verb = "Lift" if weight > 0 else "Lower"
        return f'{verb} {item["filepath"]} for questions with terms "{terms}" (weight {weight:+g})'
    return _describe_score(conn, item)


def _describe_score(conn: Connection, item: dict[str, Any]) -> str:
    rel = _relation(conn, item.get("similarity_id"))
    what = (f'"{rel["k1"]}" {"→" if rel["directional"] else "↔"} "{rel["k2"]}" ({rel["similarity_type"]})'
            if rel else f"relation {item.get('similarity_id')}")
    delta = item.get("delta") or 0
    if not delta:
        return f"Restore the score of {what}"
    now = f" (currently {_num(rel['score'])})" if rel else ""
    return f"{'Raise' if delta > 0 else 'Lower'} the score of {what} by {_num(abs(delta))}{now}"


def section_counts(items: list[dict[str, Any]]) -> dict[str, int]:
    counts = dict.fromkeys(SECTIONS, 0)
    for item in items:
        counts[section_of(item)] += 1
    return counts


def count_line(section: str, n: int) -> str:
    one, many = _COUNT_WORDS[section]
    return f"{n} {one if n == 1 else many}"


def _num(x: float) -> str:
    return f"{x:g}"


def _relation(conn: Connection, sid: int | None) -> Row | None:
    if sid is None:
        return None
    row: Row | None = conn.execute(
        "SELECT s.similarity_type, s.score, s.directional, "
        "CASE WHEN s.directional = 1 AND s.source_keyword_id = s.keyword_id_2 THEN k2.display ELSE k1.display END AS k1, "
        "CASE WHEN s.directional = 1 AND s.source_keyword_id = s.keyword_id_2 THEN k1.display ELSE k2.display END AS k2 "
        "FROM keyword_similarities s JOIN keywords k1 ON k1.id = s.keyword_id_1 "
        "JOIN keywords k2 ON k2.id = s.keyword_id_2 WHERE s.id = ?", (sid,)).fetchone()
    return row


class _Displays:
    """A keyword as the index spells it (``MCTS``, not ``mcts``); as given when the index does not know it."""

    def __init__(self, conn: Connection):
        self.conn = conn

    def __call__(self, keyword: str) -> str:
        row = self.conn.execute("SELECT display FROM keywords WHERE keyword = ?", (keyword,)).fetchone()
        return row[0] if row and row[0] else keyword
