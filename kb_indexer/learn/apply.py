"""Applying learned items and undoing them (associations at query time: :mod:`kb_indexer.learn.boosts`)."""

from __future__ import annotations

import itertools
import json
from typing import Any

from kb_indexer.errors import UsageError, ValidationError
from kb_indexer.learn import policy, wording
from kb_indexer.learn.boosts import association_boosts as association_boosts  # the query path's entry (api.py)
from kb_indexer.learn.learner import analyse, inactive, load_events
from kb_indexer.learn.requests import is_request
from kb_indexer.learn.report import describe, section_counts, section_of
from kb_indexer.store.connection import exclusive, inserted_id, transaction
from kb_indexer.store.documents import KeywordIds, refresh_fts_keywords
from kb_indexer.store.provenance import is_tombstoned, set_learned_feedback
from kb_indexer.store.similarities import relation_keys, upsert_similarity
from kb_indexer.store.dbapi import Connection, Row

KINDS = ("association", "keyword", "similarity", "score")
_DETAIL_SKIP = {"key", "kind", "feedback_ids", "action", "below_policy", "needs_review"}


def _detail(item: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in item.items() if k not in _DETAIL_SKIP}


def _existing(conn: Connection) -> dict[str, Row]:
    return {r["key"]: r for r in conn.execute("SELECT * FROM learned_items")}


def plan(conn: Connection, items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """What to write so that the index holds what the feedback justifies.

    Reconciles on every run: an item whose stored details did not change is still written again when
    the index no longer reflects it (a sync dropped its tag or relation). Removed items are never
    re-learned, nor are rejected ones; a relation a person deleted (tombstone) is never re-created.
    """
    have = _existing(conn)
    out = []
    with_terms: set[int] | None = None   # the associations whose terms are stored: read once, when needed
    for item in _with_stored_items(items, have):
        row = have.get(item["key"])
        if row is not None and row["status"] in ("removed", "rejected"):
            continue
        if row is None and inactive(item):
            continue
        if not inactive(item) and _held_by_a_person(conn, item):
            continue
        if row is not None and _unchanged(row, item):
            if item["kind"] == "association" and not inactive(item):
                if with_terms is None:
                    with_terms = {r[0] for r in conn.execute("SELECT DISTINCT learned_id FROM learned_terms")}
                if row["id"] in with_terms:
                    continue
            elif _holds(conn, item, row):
                continue
        action = "create" if row is None else "update" if not _unchanged(row, item) else "restore"
        out.append(dict(item, action=action))
    return out


def _unchanged(row: Row, item: dict[str, Any]) -> bool:
    return bool(json.loads(row["detail"]) == _detail(item) and json.loads(row["feedback_ids"]) == item["feedback_ids"])


def _with_stored_items(items: list[dict[str, Any]], have: dict[str, Row]) -> list[dict[str, Any]]:
    """The derived items, plus the active learned items no current feedback derives (their feedback
    was cleared: what was learned from it stays, and is reconciled like the rest)."""
    derived = {i["key"] for i in items}
    extra = []
    for key, row in have.items():
        if key not in derived and row["status"] == "active" and not is_request(key):
            extra.append(dict(json.loads(row["detail"]), kind=row["kind"], key=key,
                              feedback_ids=json.loads(row["feedback_ids"])))
    return items + extra


def _held_by_a_person(conn: Connection, item: dict[str, Any]) -> bool:
    """A person's tag or relation already says it (learning does not overwrite it), or a person
    deleted the relation (tombstone)."""
    if item["kind"] == "keyword":
        return _person_tag(conn, item["document_id"], item["keyword"])
    if item["kind"] == "similarity":
        rk = relation_keys(conn, KeywordIds(conn), item["keyword1"], item["keyword2"], item["type"])
        return _person_relation(conn, item) or (rk is not None and is_tombstoned(conn, *rk))
    return False


def _holds(conn: Connection, item: dict[str, Any], row: Row) -> bool:
    """Whether the index reflects a stored, unchanged learned item."""
    kind = item["kind"]
    if kind == "score" or inactive(item):
        return True  # a score set since (by a person or a file) is theirs; it is not re-adjusted
    if kind == "keyword":
        return conn.execute("SELECT 1 FROM document_keywords dk JOIN keywords k ON k.id = dk.keyword_id "
                            "WHERE dk.document_id = ? AND k.keyword = ?",
                            (item["document_id"], item["keyword"])).fetchone() is not None
    return _relation_row(conn, item) is not None


def _person_tag(conn: Connection, doc_id: int, keyword: str) -> bool:
    return conn.execute("SELECT 1 FROM document_keywords dk JOIN keywords k ON k.id = dk.keyword_id "
                        "WHERE dk.document_id = ? AND k.keyword = ? AND dk.source != 'learned'",
                        (doc_id, keyword)).fetchone() is not None


def _relation_row(conn: Connection, item: dict[str, Any]) -> Row | None:
    ids = KeywordIds(conn)
    a, b = ids.get(item["keyword1"]), ids.get(item["keyword2"])
    if a is None or b is None:
        return None
    row: Row | None = conn.execute(
        "SELECT * FROM keyword_similarities WHERE keyword_id_1 = ? AND keyword_id_2 = ? AND similarity_type = ?",
        (min(a, b), max(a, b), item["type"])).fetchone()
    return row


def _person_relation(conn: Connection, item: dict[str, Any]) -> bool:
    row = _relation_row(conn, item)
    return row is not None and row["origin_kind"] != "learned"


def _upsert_item(conn: Connection, item: dict[str, Any], **cols: Any) -> int:
    """Write a learned item's row; it is active (applied) unless ``status`` says otherwise (pending)."""
    cols.setdefault("status", "active")
    row = conn.execute("SELECT id FROM learned_items WHERE key = ?", (item["key"],)).fetchone()
    detail, fb = json.dumps(_detail(item), sort_keys=True), json.dumps(item["feedback_ids"])
    if row:
        sets = ", ".join(f"{c} = ?" for c in cols)
        conn.execute(f"UPDATE learned_items SET detail = ?, feedback_ids = ?, "
                     f"updated_at = strftime('%Y-%m-%dT%H:%M:%S', 'now'){', ' + sets if sets else ''} WHERE id = ?",
                     (detail, fb, *cols.values(), row[0]))
        lid: int = row[0]
    else:
        names = ["key", "kind", "detail", "feedback_ids", *cols]
        lid = inserted_id(conn.execute(f"INSERT INTO learned_items ({', '.join(names)}) VALUES "
                                       f"({', '.join('?' * len(names))}) RETURNING id",
                                       (item["key"], item["kind"], detail, fb, *cols.values())))
    set_learned_feedback(conn, lid, item["feedback_ids"])
    return lid


def apply_items(conn: Connection, items: list[dict[str, Any]]) -> None:
    """Write planned items (inside the caller's transaction), in order; each run of associations (most items)
    in a few statements."""
    ids = KeywordIds(conn)
    for associations, run in itertools.groupby(items, key=lambda i: i["kind"] == "association"):
        if associations:
            _apply_associations(conn, ids, list(run))
            continue
        for item in run:
            _apply_one(conn, ids, item)


def _apply_associations(conn: Connection, ids: KeywordIds, items: list[dict[str, Any]]) -> None:
    """Association items written as :func:`_upsert_item` and their terms would be one by one, in as many
    statements whatever their number (on PostgreSQL each statement is a round trip: a team's learn wrote
    thousands); every table gets its rows in the same order, so the ids are the same."""
    keys = [i["key"] for i in items]
    if len(set(keys)) < len(keys):   # never derived twice; if so, one by one as before
        for item in items:
            _apply_one(conn, ids, item)
        return
    known = _ids_by_key(conn, keys)
    cols = [(json.dumps(_detail(i), sort_keys=True), json.dumps(i["feedback_ids"]), i["document_id"], i["weight"],
             len(i["terms"])) for i in items]
    conn.executemany("UPDATE learned_items SET detail = ?, feedback_ids = ?, updated_at = "
                     "strftime('%Y-%m-%dT%H:%M:%S', 'now'), document_id = ?, weight = ?, size = ?, status = 'active' "
                     "WHERE id = ?",
                     [(*c, known[i["key"]]) for i, c in zip(items, cols) if i["key"] in known])
    conn.executemany("INSERT INTO learned_items (key, kind, detail, feedback_ids, document_id, weight, size) "
                     "VALUES (?, ?, ?, ?, ?, ?, ?)",
                     [(i["key"], i["kind"], *c) for i, c in zip(items, cols) if i["key"] not in known])
    known.update(_ids_by_key(conn, [k for k in keys if k not in known]))
    lids = [known[k] for k in keys]
    every = json.dumps(lids)
    conn.execute("DELETE FROM learned_feedback WHERE learned_id IN (SELECT value FROM json_each(?))", (every,))
    conn.executemany("INSERT OR IGNORE INTO learned_feedback (learned_id, feedback_id) VALUES (?, ?)",
                     [(lid, int(f)) for lid, i in zip(lids, items) for f in i["feedback_ids"]])
    conn.execute("DELETE FROM learned_terms WHERE learned_id IN (SELECT value FROM json_each(?))", (every,))
    conn.executemany("INSERT INTO learned_terms (learned_id, term) VALUES (?, ?)",
                     [(lid, t) for lid, i in zip(lids, items) for t in i["terms"]])


def _ids_by_key(conn: Connection, keys: list[str]) -> dict[str, int]:
    if not keys:
        return {}
    return {r[0]: int(r[1]) for r in conn.execute(
        "SELECT key, id FROM learned_items WHERE key IN (SELECT value FROM json_each(?))", (json.dumps(keys),))}


def _apply_one(conn: Connection, ids: KeywordIds, item: dict[str, Any]) -> None:
    """Write one planned item."""
    kind = item["kind"]
    if kind == "association":
        lid = _upsert_item(conn, item, document_id=item["document_id"], weight=item["weight"],
                           size=len(item["terms"]))
        conn.execute("DELETE FROM learned_terms WHERE learned_id = ?", (lid,))
        conn.executemany("INSERT INTO learned_terms (learned_id, term) VALUES (?, ?)",
                         [(lid, t) for t in item["terms"]])
    elif kind == "keyword":
        _apply_keyword(conn, ids, item)
    elif kind == "similarity":
        _apply_similarity(conn, ids, item)
    elif kind == "score":
        _apply_score(conn, item)


def _apply_keyword(conn: Connection, ids: KeywordIds, item: dict[str, Any]) -> None:
    lid = _upsert_item(conn, item, document_id=item["document_id"], weight=item["weight"])
    if inactive(item):  # withdrawn: the learned tag goes, a person's tag stays
        drop_learned_tag(conn, lid, item["document_id"])
    else:
        kid = ids.ensure(item["keyword"])
        conn.execute("INSERT INTO document_keywords (document_id, keyword_id, source, weight, learned_id) "
                     "VALUES (?, ?, 'learned', ?, ?) ON CONFLICT(document_id, keyword_id) DO UPDATE SET "
                     "weight = excluded.weight, learned_id = excluded.learned_id WHERE document_keywords.source = 'learned'",
                     (item["document_id"], kid, item["weight"], lid))
    refresh_fts_keywords(conn, item["document_id"])


def drop_learned_tag(conn: Connection, learned_id: int, doc_id: int | None) -> None:
    """Delete a learned tag. Its document's keywords file may list the same keyword (written by `enrich`, which
    leaves a learned tag in place): the document is read again by the next sync, which gives it back."""
    gone = conn.execute("DELETE FROM document_keywords WHERE learned_id = ? AND source = 'learned'",
                        (learned_id,)).rowcount
    if gone and doc_id is not None:
        conn.execute("UPDATE documents SET content_hash = NULL, stat_sig = NULL WHERE id = ? "
                     "AND keywords_file IS NOT NULL", (doc_id,))


def _apply_similarity(conn: Connection, ids: KeywordIds, item: dict[str, Any]) -> None:
    if inactive(item):
        row = conn.execute("SELECT similarity_id FROM learned_items WHERE key = ?", (item["key"],)).fetchone()
        if row and row[0] is not None:
            conn.execute("DELETE FROM keyword_similarities WHERE id = ? AND origin_kind = 'learned'", (row[0],))
        _upsert_item(conn, item, similarity_id=None, weight=0.0)
        return
    context = f"Learned from feedback: {item['reason']}"
    lid = _upsert_item(conn, item, weight=item["score"])
    sid, _ = upsert_similarity(conn, ids, item["keyword1"], item["keyword2"], item["type"], context,
                               item["score"], False, "learned", learned_id=lid)
    conn.execute("UPDATE learned_items SET similarity_id = ? WHERE id = ?", (sid, lid))


def _apply_score(conn: Connection, item: dict[str, Any]) -> None:
    rel = conn.execute("SELECT score FROM keyword_similarities WHERE id = ?", (item["similarity_id"],)).fetchone()
    if rel is None:
        return
    prev = conn.execute("SELECT previous_score, weight FROM learned_items WHERE key = ?", (item["key"],)).fetchone()
    if prev is not None and prev[1] is not None and abs(rel[0] - prev[1]) > 1e-9:
        base = rel[0]  # a person (or a re-synced file) set the score since: adjust from theirs
    else:
        base = prev[0] if prev and prev[0] is not None else rel[0]
    new = round(max(0.0, min(1.0, base + item["delta"])), 4)
    conn.execute("UPDATE keyword_similarities SET score = ? WHERE id = ?", (new, item["similarity_id"]))
    _upsert_item(conn, item, similarity_id=item["similarity_id"], previous_score=base, weight=new)


def learn(conn: Connection, dry_run: bool = False, reprocess: bool = False) -> dict[str, Any]:
    """Analyse unprocessed feedback (all feedback with ``reprocess``) and apply what it justifies.

    Reading, analysing, applying and marking happen in one write transaction, so feedback that
    another process records meanwhile is neither lost nor marked processed unseen (only the analysed rows
    are marked). Two learns never interleave (:func:`exclusive`: on PostgreSQL, from any host).
    """
    if dry_run:
        return _learn(conn, dry_run=True, reprocess=reprocess)
    with exclusive(conn, "learn"), transaction(conn):
        return _learn(conn, dry_run=False, reprocess=reprocess)


def learn_now(conn: Connection) -> dict[str, Any]:
    """``learn`` inside the caller's transaction, under the learn lock the caller holds."""
    return _learn(conn, dry_run=False, reprocess=False)


def _learn(conn: Connection, *, dry_run: bool, reprocess: bool) -> dict[str, Any]:
    where = "" if reprocess else " WHERE processed = 0"
    analysed_rows = conn.execute(f"SELECT id, query_id FROM query_feedback{where}").fetchall()
    total = conn.execute("SELECT COUNT(*) FROM query_feedback").fetchone()[0]
    result: dict[str, Any] = {"feedback_analyzed": len(analysed_rows), "feedback_total": total, "dry_run": dry_run,
                              "queries": len({r["query_id"] for r in analysed_rows}),
                              "suggestions": [], "applied": 0, "marked_processed": 0}
    rules = policy.read(conn)
    derived = analyse(conn, load_events(conn), learning_policy=rules)
    todo = plan(conn, derived)
    mode = rules["mode"]
    result["below_policy"] = sum(1 for i in derived if i.get("below_policy"))
    held, todo_now = _held(conn, todo, flagged_only=mode != "review")
    result["suggestions"] = [_public(conn, i) for i in todo_now + held]
    result["summary"] = _summary(todo_now + held)
    result["sections"] = section_counts(todo_now + held)
    result["mode"] = mode
    result["held_for_review"] = len(held)
    if dry_run:
        return result
    hold(conn, held)
    apply_items(conn, todo_now)
    ids = [r["id"] for r in analysed_rows]
    n = 0
    for start in range(0, len(ids), 500):
        chunk = ids[start:start + 500]
        n += conn.execute(f"UPDATE query_feedback SET processed = 1 WHERE processed = 0 AND id IN "
                          f"({','.join('?' * len(chunk))})", chunk).rowcount
    result["applied"] = len(todo_now)
    result["marked_processed"] = n
    return result


def _held(conn: Connection, todo: list[dict[str, Any]],
          flagged_only: bool = False) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Under the review policy: the new items (held as pending; one already pending and unchanged is not
    proposed again), and the changes to approved items (applied as under auto: they were approved). With
    ``flagged_only`` (under auto), only the items the learner flagged ``needs_review`` are held."""
    have = _existing(conn)
    held, now = [], []
    for item in todo:
        row = have.get(item["key"])
        if flagged_only and not item.get("needs_review"):
            now.append(item)   # under auto, as before the policy (a pending item whose support came: applied)
        elif row is not None and row["status"] == "active":
            now.append(item)
        elif row is not None and row["status"] == "pending" and inactive(item):
            held.append(dict(item, action="hold"))   # its support went: it stays pending, asking for nothing
        elif not inactive(item) and not (row is not None and _unchanged(row, item)):
            held.append(dict(item, action="hold"))
    return held, now


def hold(conn: Connection, items: list[dict[str, Any]]) -> None:
    """Record items as pending: their rows only, so that nothing reads them for ranking until approved."""
    for item in items:
        weight = item.get("weight", item.get("score"))
        _upsert_item(conn, item, status="pending", document_id=item.get("document_id"), weight=weight,
                     similarity_id=item.get("similarity_id"))


_NEEDS = {"association": ("document_id", "terms", "weight"), "keyword": ("document_id", "keyword", "weight"),
          "similarity": ("keyword1", "keyword2", "type", "score"), "score": ("similarity_id", "delta")}


def stored_item(row: Row) -> dict[str, Any]:
    """A learned item as the learner derived it, from its stored row (``invalid_input`` for a row written outside
    kbindex that lacks what applying it needs: nothing is applied)."""
    try:
        detail = json.loads(row["detail"] or "{}")
        feedback_ids = json.loads(row["feedback_ids"] or "[]")
    except ValueError:
        detail, feedback_ids = None, None
    if not isinstance(detail, dict) or not isinstance(feedback_ids, list):
        raise ValidationError(f"learned item {row['id']} is not readable (written outside kbindex?); remove it")
    if detail.get("document_id") is None and row["document_id"] is not None:
        detail["document_id"] = row["document_id"]
    lacks = [k for k in _NEEDS.get(row["kind"], ()) if detail.get(k) is None] if not detail.get("request") else []
    if lacks:
        raise ValidationError(f"learned item {row['id']} lacks {', '.join(lacks)} (written outside kbindex?); "
                              "remove it with `kbindex learned remove`")
    return dict(detail, kind=row["kind"], key=row["key"], feedback_ids=feedback_ids)


def _public(conn: Connection, item: dict[str, Any]) -> dict[str, Any]:
    """A suggestion as ``learn`` reports it: the item, with its section and a readable line."""
    out = {k: v for k, v in item.items() if k != "document_id"}
    out["section"] = section_of(item)
    out["description"] = describe(conn, item)
    return out


def _summary(items: list[dict[str, Any]]) -> dict[str, int]:
    out = {"associations": 0, "keywords": 0, "similarities": 0, "score_adjustments": 0}
    names = {"association": "associations", "keyword": "keywords", "similarity": "similarities",
             "score": "score_adjustments"}
    for i in items:
        out[names[i["kind"]]] += 1
    out["total"] = len(items)
    return out


STATUSES = ("active", "pending", "rejected", "removed")


def learned_list(conn: Connection, kind: str | None = None, include_removed: bool = False,
                 status: str | None = None) -> dict[str, Any]:
    """The active learned items (``include_removed``: every item; ``status``: those of that status)."""
    if kind is not None and kind not in KINDS:
        raise UsageError(f"--kind must be one of: {', '.join(KINDS)}; got {kind!r}")
    if status is not None and status not in STATUSES:
        raise UsageError(f"status must be one of: {', '.join(STATUSES)}; got {status!r}")
    sql = "SELECT * FROM learned_items WHERE 1 = 1"
    args: list[Any] = []
    if kind:
        sql += " AND kind = ?"
        args.append(kind)
    if status is not None:
        sql += " AND status = ?"
        args.append(status)
    elif not include_removed:
        sql += " AND status = 'active'"
    items = []
    for r in conn.execute(sql + " ORDER BY id", args).fetchall():
        d = json.loads(r["detail"])
        feedback_ids = json.loads(r["feedback_ids"])
        asked = wording.questions(conn, feedback_ids)
        items.append({"id": r["id"], "kind": r["kind"], "status": r["status"], "key": r["key"],
                      "weight": r["weight"], "summary": wording.summary(conn, r["kind"], d, r["weight"], asked),
                      "questions": asked[:wording.MAX_QUESTIONS], "reason": d.get("reason"), "detail": d,
                      "feedback_ids": feedback_ids, "askers": wording.askers(conn, feedback_ids),
                      "updated_at": r["updated_at"],
                      **{c: r[c] for c in ("removed_by", "removed_at", "decided_by", "decided_at")}})
    return {"learned": items, "count": len(items)}
