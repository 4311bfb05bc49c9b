"""A person's `relate` and `unrelate`, applied at once or, on a team's index under the ``review`` learning policy
or one that asks for two askers or more (PostgreSQL's default), held for a curator: a member's change of a relation then waits in the review queue as a pending item (kind
``similarity``, key ``request:...``) and changes no expansion until `learned approve` applies it, as the person's
relation it asked for (the approver recorded as ``decided_by``, the member in the item's detail)."""

from __future__ import annotations

import json
import os
from typing import Any

from kb_indexer.errors import NotFoundError
from kb_indexer.learn import policy
from kb_indexer.store.connection import inserted_id, transaction
from kb_indexer.store.dbapi import Connection, Row
from kb_indexer.store.documents import KeywordIds
from kb_indexer.store.provenance import lift, set_learned_feedback
from kb_indexer.store.similarities import delete_similarity, upsert_similarity
from kb_indexer.store.team import current_asker, role

PREFIX = "request:"   # the key of a held relate/unrelate (never derived by `learn`, never reconciled by it)


def is_request(key: str) -> bool:
    return key.startswith(PREFIX)


def _held(conn: Connection) -> bool:
    """Whether this connection's relation changes wait for review: a member's, under the review policy or where
    the policy asks for two askers or more (one member's word alone changes no one's expansions)."""
    if role(conn) != "member":
        return False
    rules = policy.read(conn)
    return rules["mode"] == "review" or int(rules["min_askers"]) >= 2


def relate(conn: Connection, keyword1: str, keyword2: str, sim_type: str, context: str, score: float,
           directional: bool) -> dict[str, Any]:
    out = {"keyword1": keyword1, "keyword2": keyword2, "type": sim_type, "context": context, "score": float(score),
           "directional": directional}
    with transaction(conn):
        if _held(conn):
            return {"action": "held_for_review", "id": None, **out,
                    "learned_id": _hold(conn, dict(out, request="relate"))}
        sid, created = _relate(conn, out)
    return {"action": "created" if created else "updated", "id": sid, **out}


def unrelate(conn: Connection, keyword1: str, keyword2: str, sim_type: str | None) -> dict[str, Any]:
    out = {"keyword1": keyword1, "keyword2": keyword2, "type": sim_type}
    with transaction(conn):
        if _held(conn):
            return {"action": "held_for_review", **out, "removed": 0,
                    "learned_id": _hold(conn, dict(out, request="unrelate"))}
        n = delete_similarity(conn, keyword1, keyword2, sim_type)
    return {"action": "removed", **out, "removed": n}


def _relate(conn: Connection, r: dict[str, Any]) -> tuple[int, bool]:
    ids = KeywordIds(conn)
    sid, created = upsert_similarity(conn, ids, r["keyword1"], r["keyword2"], r["type"], r["context"], r["score"],
                                     r["directional"], "person")
    id1, id2 = ids.get(r["keyword1"]), ids.get(r["keyword2"])   # both exist: upsert_similarity made them
    assert id1 is not None and id2 is not None
    lift(conn, id1, id2, r["type"])  # a person's relation again
    return sid, created


def _hold(conn: Connection, detail: dict[str, Any]) -> int:
    verb = "relate" if detail["request"] == "relate" else "unrelate"
    who = current_asker(conn)
    detail.update(requested_by=who, reason=f"{who} asked to {verb} \"{detail['keyword1']}\" and "
                                           f"\"{detail['keyword2']}\" ({detail['type'] or 'every type'})")
    lid = inserted_id(conn.execute(
        "INSERT INTO learned_items (key, kind, detail, feedback_ids, weight, status) "
        "VALUES (?, 'similarity', ?, '[]', ?, 'pending') RETURNING id",
        (PREFIX + os.urandom(16).hex(), json.dumps(detail, sort_keys=True), detail.get("score", 0.0))))
    set_learned_feedback(conn, lid, [])
    return lid


def apply_request(conn: Connection, row: Row) -> None:
    """Apply an approved request (inside the caller's transaction), as its member's command would have."""
    detail = json.loads(row["detail"])
    if detail.get("request") == "unrelate":
        try:
            delete_similarity(conn, detail["keyword1"], detail["keyword2"], detail.get("type"))
        except NotFoundError:
            pass   # a keyword went meanwhile: so did the relation
    else:
        _relate(conn, detail)
