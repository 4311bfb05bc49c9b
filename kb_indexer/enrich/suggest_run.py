"""Running the suggestion sources (:mod:`kb_indexer.enrich.suggest`), the LLM groups, and ``--apply``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from kb_indexer.enrich import suggest as s
from kb_indexer.index.files import validate_similarities_data
from kb_indexer.safe_write import write_user_file
from kb_indexer.llm.base import LLMError, Message
from kb_indexer.store import fulltext
from kb_indexer.store.connection import inserted_id
from kb_indexer.store.documents import KeywordIds
from kb_indexer.store.similarities import upsert_similarity
from kb_indexer.text import normalize_keyword
from kb_indexer.store.dbapi import Connection

TASK = "suggest_similarities"
LLM_TYPES = ("synonym", "abbreviation", "broader", "narrower")
SYSTEM = (
    "You relate the keywords of a knowledge base so that a search for one also finds documents tagged "
    "with another. From the list given, name pairs that are synonyms, an abbreviation and its long form, "
    "or where one is a broader term of the other (type broader: keyword1 is broader than keyword2; "
    "narrower: keyword1 is narrower). Use only keywords from the list, exactly as written. For each pair "
    "write one sentence of context saying in which domain the relation holds, and a score from 0 to 1 "
    "(1: always interchangeable). Leave out pairs that are merely related; an empty list is fine.")


def llm_schema() -> dict[str, Any]:
    string = {"type": "string", "minLength": 1}
    item = {"type": "object", "properties": {
        "keyword1": string, "keyword2": string, "type": {"type": "string", "enum": list(LLM_TYPES)},
        "context": string, "score": {"type": "number", "minimum": 0, "maximum": 1}},
        "required": ["keyword1", "keyword2", "type", "context", "score"], "additionalProperties": False}
    return {"type": "object", "properties": {"relations": {"type": "array", "items": item, "maxItems": 30}},
            "required": ["relations"], "additionalProperties": False}


def from_llm(client: Any, conn: Connection) -> tuple[list[dict[str, Any]], list[str]]:
    """Relations the LLM proposes among the most used keywords, in groups; (suggestions, errors)."""
    top = [r[0] for r in conn.execute(
        "SELECT k.display FROM keywords k JOIN document_keywords dk ON dk.keyword_id = k.id "
        "GROUP BY k.id ORDER BY count(*) DESC, k.keyword LIMIT ?", (s.LLM_KEYWORDS,))]
    out, errors = [], []
    for start in range(0, len(top), s.LLM_GROUP):
        group = top[start:start + s.LLM_GROUP]
        names = {normalize_keyword(k) for k in group}

        def check(data: Any, names: set[str] = names) -> list[str]:
            return [f"{r['keyword1']!r} / {r['keyword2']!r}: use two different keywords from the list"
                    for r in data["relations"] if normalize_keyword(r["keyword1"]) not in names
                    or normalize_keyword(r["keyword2"]) not in names
                    or normalize_keyword(r["keyword1"]) == normalize_keyword(r["keyword2"])]
        msgs = [Message("system", SYSTEM), Message("user", "Keywords:\n" + "\n".join(f"- {k}" for k in group))]
        try:
            result = client.structured(TASK, msgs, llm_schema(), max_tokens=1500, check=check)
        except LLMError as exc:
            errors.append(exc.message)
            continue
        for r in result.data["relations"]:
            out.append(s.suggestion(r["keyword1"], r["keyword2"], r["type"], " ".join(r["context"].split()),
                                    float(r["score"]), "llm", {"model": result.model, "group": start // s.LLM_GROUP}))
    return out, errors


def gather(conn: Connection, client: Any, min_score: float) -> tuple[list[dict[str, Any]], list[str]]:
    docs = [(fp, f"{title}\n\n{body}") for fp, title, body in fulltext.titled_texts(conn)]
    keywords = dict(conn.execute("SELECT keyword, display FROM keywords k WHERE EXISTS "
                                 "(SELECT 1 FROM document_keywords dk WHERE dk.keyword_id = k.id)"))
    found = s.from_patterns(docs) + s.from_initials(keywords) + s.from_cooccurrence(conn)
    errors: list[str] = []
    if client is not None:
        more, errors = from_llm(client, conn)
        found += more
    return s.combine(found, s.known_pairs(conn), min_score), errors


def apply(conn: Connection, suggestions: list[dict[str, Any]]) -> list[int]:
    """Import as learned items (inside the caller's transaction); ones undone before are skipped."""
    ids = KeywordIds(conn)
    applied = []
    for sug in suggestions:
        a, b = sorted((normalize_keyword(sug["keyword1"]), normalize_keyword(sug["keyword2"])))
        key = f"suggestion:{a}|{b}|{sug['type']}"
        row = conn.execute("SELECT id, status FROM learned_items WHERE key = ?", (key,)).fetchone()
        if row is not None and row[1] == "removed":
            sug["applied"] = False
            continue
        detail = json.dumps({"keyword1": sug["keyword1"], "keyword2": sug["keyword2"], "type": sug["type"],
                             "score": sug["score"], "reason": f"suggested ({s.evidence_text(sug)})",
                             "context": sug["context"], "source": sug["source"]}, sort_keys=True)
        if row is None:
            lid = inserted_id(conn.execute("INSERT INTO learned_items (key, kind, detail, weight) "
                                           "VALUES (?, 'similarity', ?, ?) RETURNING id", (key, detail, sug["score"])))
        else:
            lid = row[0]
        sid, _ = upsert_similarity(conn, ids, sug["keyword1"], sug["keyword2"], sug["type"], sug["context"],
                                   sug["score"], False, "learned", learned_id=lid)
        conn.execute("UPDATE learned_items SET similarity_id = ? WHERE id = ?", (sid, lid))
        sug["applied"], sug["learned_id"] = True, lid
        applied.append(lid)
    return applied


def write_output(path: Path, suggestions: list[dict[str, Any]]) -> str:
    data = s.similarities_file(suggestions)
    validate_similarities_data(data, str(path))
    write_user_file(path.expanduser(), json.dumps(data, indent=2, ensure_ascii=False) + "\n")
    return str(path)
