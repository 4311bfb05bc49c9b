"""What kb_indexer.store.export reads of a PostgreSQL schema (SQLite: sqlite_master, PRAGMA table_info), and
what an import with explicit ids needs there (deferred foreign keys, identity sequences moved past them)."""

from __future__ import annotations

from typing import Any

from kb_indexer.errors import ReadOnlyError
from kb_indexer.store.pg.connection import PgConnection

#: The insertion-order column the migrations give tables without an integer id (not a column of an export).
ROWID = "rowid"


def tables(conn: PgConnection) -> list[str]:
    """kbindex's tables in creation order (parents before children, as in SQLite's sqlite_master)."""
    return [r[0] for r in conn.raw.execute(
        "SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
        "WHERE c.relkind = 'r' AND n.nspname = current_schema() ORDER BY c.oid")]


def columns(conn: PgConnection, table: str) -> list[dict[str, Any]]:
    """Like SQLite's ``PRAGMA table_info``: name, notnull, dflt_value, pk, type (the hidden rowid left out)."""
    rows = conn.raw.execute(
        "SELECT a.attname, a.attnotnull, pg_get_expr(d.adbin, d.adrelid), "
        "COALESCE(a.attnum = ANY(i.indkey), false), a.attidentity, format_type(a.atttypid, a.atttypmod) "
        "FROM pg_attribute a LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum "
        "LEFT JOIN pg_index i ON i.indrelid = a.attrelid AND i.indisprimary "
        "WHERE a.attrelid = %s::regclass AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum",
        (table,)).fetchall()
    return [{"name": r[0], "notnull": int(r[1]), "dflt_value": r[2] or ("identity" if r[4] else None),
             "pk": int(r[3]), "type": r[5]} for r in rows if r[0] != ROWID]


def order_column(conn: PgConnection, table: str) -> str:
    """What orders a table's rows as SQLite's rowid does: its integer id, else the hidden rowid."""
    names = {c["name"] for c in columns(conn, table)}
    return "id" if "id" in names else ROWID


def defer_foreign_keys(conn: PgConnection) -> None:
    conn.raw.execute("SET CONSTRAINTS ALL DEFERRED")


def check_foreign_keys(conn: PgConnection) -> None:
    """Check the deferred foreign keys now (a PgIntegrityError when a row refers to a missing one)."""
    conn.execute("SET CONSTRAINTS ALL IMMEDIATE")


def move_identities(conn: PgConnection, table: str) -> None:
    """After rows with explicit ids: the table's id sequence continues past the largest."""
    if order_column(conn, table) == "id":
        conn.raw.execute(f"SELECT setval(pg_get_serial_sequence('\"{table}\"', 'id'), "
                         f'COALESCE((SELECT max(id) FROM "{table}"), 0) + 1, false)')


def check_may_move_identities(conn: PgConnection, tables: list[str]) -> None:
    """Before an import writes anything: the role may move the id sequences of ``tables`` (``setval`` needs
    UPDATE on a sequence; the index's owner has it, a member's role as docs/teams.md grants it does not),
    else ``read_only`` saying whose an import is."""
    denied = [r[0] for r in conn.raw.execute(
        "SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
        "JOIN pg_attribute a ON a.attrelid = c.oid AND a.attname = 'id' AND NOT a.attisdropped "
        "CROSS JOIN LATERAL pg_get_serial_sequence(quote_ident(c.relname), 'id') AS s(name) "
        "WHERE n.nspname = current_schema() AND c.relname = ANY(%s) AND s.name IS NOT NULL "
        "AND NOT has_sequence_privilege(s.name, 'UPDATE') ORDER BY c.oid", (tables,))]
    if denied:
        raise ReadOnlyError(
            f"This database role may not import into {conn.target}: an import replaces every row and moves the "
            f"tables' id sequences past the imported ids, which needs UPDATE on the id sequences of "
            f"{', '.join(denied[:3])}{f' and {len(denied) - 3} more tables' if len(denied) > 3 else ''}. Nothing "
            "was written. Run the import as the role that owns the index (docs/teams.md, Roles).")
