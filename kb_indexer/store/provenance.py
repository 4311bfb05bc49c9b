"""Provenance as explicit columns: where a relation came from, and what a person deleted.

``keyword_similarities.origin_kind`` is one of ``file`` (a similarities.json file, named in
``origin_file``), ``person`` (``relate``), ``import`` (``import-similarities``) or ``learned`` (with
``learned_id``, the learned item; the feedback rows it rests on are in ``learned_feedback``).
The older ``origin`` text ('file:<path>', 'manual', 'import', 'learned') is still written for display
and exports, but no code parses it except :func:`backfill`, which fills the columns of rows written by
an older kbindex (migration m050 and ``import`` of an older export).

``similarity_tombstones`` marks a relation a person deleted (``unrelate``): neither a sync re-reading
a similarities file nor ``learn`` creates it again; ``relate`` or ``import-similarities`` (a person's
explicit act) lifts the mark.
"""

from __future__ import annotations

from kb_indexer.store.dbapi import Connection
from kb_indexer.store.engine import is_postgres


KINDS = ("file", "person", "import", "learned")
_ORIGIN_TEXT = {"person": "manual", "import": "import", "learned": "learned"}


def origin_text(kind: str, file: str | None = None) -> str:
    """The display form of an origin (the ``origin`` column)."""
    if kind not in KINDS:
        raise ValueError(f"unknown origin kind {kind!r}")
    return f"file:{file}" if kind == "file" else _ORIGIN_TEXT[kind]


def backfill(conn: Connection) -> None:
    """Fill the explicit columns of rows that only have the old strings (older indexes and exports)."""
    conn.execute(
        "UPDATE keyword_similarities SET "
        "origin_kind = CASE WHEN origin LIKE 'file:%' THEN 'file' WHEN origin = 'import' THEN 'import' "
        "WHEN origin = 'learned' THEN 'learned' ELSE 'person' END, "
        "origin_file = CASE WHEN origin LIKE 'file:%' THEN substr(origin, 6) END "
        "WHERE origin_kind IS NULL")
    conn.execute(
        "UPDATE keyword_similarities SET learned_id = (SELECT li.id FROM learned_items li WHERE "
        "li.similarity_id = keyword_similarities.id AND li.kind = 'similarity' AND li.status = 'active') "
        "WHERE origin_kind = 'learned' AND learned_id IS NULL")
    conn.execute(_PG_FEEDBACK_ROWS if is_postgres(conn) else
        "INSERT OR IGNORE INTO learned_feedback (learned_id, feedback_id) "
        "SELECT li.id, j.value FROM learned_items li, json_each(li.feedback_ids) j "
        "WHERE json_valid(li.feedback_ids) AND typeof(j.value) = 'integer'")


# The same on PostgreSQL: the integer elements of each learned item's feedback_ids (a JSON array).
_PG_FEEDBACK_ROWS = (
    "INSERT INTO learned_feedback (learned_id, feedback_id) "
    "SELECT li.id, (j.value #>> '{}')::bigint FROM learned_items li "
    "CROSS JOIN LATERAL json_array_elements(CASE WHEN json_typeof(kb_json(li.feedback_ids)) = 'array' "
    "THEN kb_json(li.feedback_ids) ELSE '[]'::json END) WITH ORDINALITY AS j(value, n) "
    "WHERE json_typeof(j.value) = 'number' AND (j.value #>> '{}') ~ '^-?[0-9]+$' ORDER BY li.id, j.n "
    "ON CONFLICT DO NOTHING")


def undo_deleted_learned_relations(conn: Connection) -> None:
    """Upgrade step: an active learned relation whose relation row is gone was deleted before this
    migration, by a person (``unrelate``) or with a file that had taken it over. The old ``learn`` did
    not bring it back while its evidence stayed the same; the item is undone (status 'removed') so
    that ``learn``, which now reconciles every run, does not restore it either."""
    conn.execute("UPDATE learned_items SET status = 'removed' WHERE kind = 'similarity' AND status = 'active' "
                 "AND similarity_id IS NULL AND weight > 0")


def is_tombstoned(conn: Connection, k1: int, k2: int, sim_type: str | None) -> bool:
    """Whether a person deleted the relation of the two keywords of this type (None: of any type)."""
    a, b = min(k1, k2), max(k1, k2)
    if sim_type is None:
        return conn.execute("SELECT 1 FROM similarity_tombstones WHERE keyword_id_1 = ? AND keyword_id_2 = ?",
                            (a, b)).fetchone() is not None
    return conn.execute("SELECT 1 FROM similarity_tombstones WHERE keyword_id_1 = ? AND keyword_id_2 = ? AND "
                        "similarity_type = ?", (a, b, sim_type)).fetchone() is not None


def bury(conn: Connection, k1: int, k2: int, sim_type: str) -> None:
    a, b = min(k1, k2), max(k1, k2)
    lift(conn, a, b, sim_type)  # a new row (its deleted_at now), as INSERT OR REPLACE gave
    conn.execute("INSERT INTO similarity_tombstones (keyword_id_1, keyword_id_2, similarity_type, author) "
                 "VALUES (?, ?, ?, kb_asker())", (a, b, sim_type))


def lift(conn: Connection, k1: int, k2: int, sim_type: str) -> None:
    a, b = min(k1, k2), max(k1, k2)
    conn.execute("DELETE FROM similarity_tombstones WHERE keyword_id_1 = ? AND keyword_id_2 = ? AND "
                 "similarity_type = ?", (a, b, sim_type))


def set_learned_feedback(conn: Connection, learned_id: int, feedback_ids: list[int]) -> None:
    conn.execute("DELETE FROM learned_feedback WHERE learned_id = ?", (learned_id,))
    conn.executemany("INSERT OR IGNORE INTO learned_feedback (learned_id, feedback_id) VALUES (?, ?)",
                     [(learned_id, int(f)) for f in feedback_ids])
