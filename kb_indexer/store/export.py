"""Export everything to JSON and import it back (round-trips exactly)."""

from __future__ import annotations

import sqlite3
from typing import Any

from kb_indexer import __version__
from kb_indexer.errors import ValidationError
from kb_indexer.store.connection import transaction
from kb_indexer.store.documents import get_body, write_fts
from kb_indexer.text import normalize_keyword

FORMAT = "kbindex-export"
FORMAT_VERSION = 1
# Not exported: bookkeeping, derived full-text rows (rebuilt from documents.body), caches.
_EXCLUDED = {"_migrations", "meta", "llm_cache", "sqlite_sequence"}


def export_tables(conn: sqlite3.Connection) -> list[str]:
    """User tables in creation order (parents before children)."""
    names = [r[0] for r in conn.execute(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY rowid")]
    return [n for n in names if n not in _EXCLUDED and not n.startswith("documents_fts")]


def _columns(conn: sqlite3.Connection, table: str) -> list[dict[str, Any]]:
    return [dict(r) for r in conn.execute(f'PRAGMA table_info("{table}")')]


def export_all(conn: sqlite3.Connection) -> dict[str, Any]:
    out: dict[str, Any] = {"format": FORMAT, "format_version": FORMAT_VERSION, "kbindex_version": __version__,
                           "migrations": [r[0] for r in conn.execute("SELECT name FROM _migrations ORDER BY rowid")],
                           "tables": {}}
    for table in export_tables(conn):
        rows = [dict(r) for r in conn.execute(f'SELECT * FROM "{table}" ORDER BY rowid')]
        if table == "documents":
            for row in rows:
                row["body"] = get_body(conn, row["id"])
        out["tables"][table] = rows
    return out


def _check_keyword(row: dict[str, Any], i: int) -> None:
    """Keywords are looked up in their normalised form: a row holding another form would never be found."""
    value = row.get("keyword")
    if not isinstance(value, str) or not value:
        raise ValidationError(f"Export table 'keywords' row {i}: 'keyword' must be a non-empty string")
    norm = normalize_keyword(value)
    if value != norm:
        raise ValidationError(f"Export table 'keywords' row {i}: keyword {value!r} is not normalised "
                              f"(expected {norm!r}; the display form belongs in 'display')")


def import_all(conn: sqlite3.Connection, data: Any, *, force: bool = False, kb_root=None) -> dict[str, int]:
    """Replace the index content with an export. Validated first; all or nothing."""
    if not isinstance(data, dict) or data.get("format") != FORMAT or not isinstance(data.get("tables"), dict):
        raise ValidationError(f"Not a kbindex export (expected an object with \"format\": \"{FORMAT}\" and \"tables\")")
    if data.get("format_version") != FORMAT_VERSION:
        raise ValidationError(f"Unsupported export format_version {data.get('format_version')!r}; "
                              f"this kbindex reads version {FORMAT_VERSION}")
    known = export_tables(conn)
    tables = data["tables"]
    unknown = sorted(set(tables) - set(known))
    if unknown:
        raise ValidationError(f"Export has tables this kbindex does not know: {', '.join(unknown)}")
    plan: list[tuple[str, list[str], list[dict[str, Any]]]] = []
    for table in known:
        rows = tables.get(table, [])
        if not isinstance(rows, list) or not all(isinstance(r, dict) for r in rows):
            raise ValidationError(f"Export table {table!r} must be a list of objects")
        cols = _columns(conn, table)
        names = [c["name"] for c in cols]
        allowed = set(names) | ({"body"} if table == "documents" else set())
        # Primary keys (ids) are required too: other rows (and history, learned items) refer to them.
        required = {c["name"] for c in cols if (c["notnull"] and c["dflt_value"] is None) or c["pk"]}
        for i, row in enumerate(rows):
            extra = set(row) - allowed
            if extra:
                raise ValidationError(f"Export table {table!r} row {i} has unknown columns: {', '.join(sorted(extra))}")
            missing = required - set(row)
            if missing:
                raise ValidationError(f"Export table {table!r} row {i} lacks: {', '.join(sorted(missing))}")
            if table == "keywords":
                _check_keyword(row, i)
        plan.append((table, names, rows))
    counts: dict[str, int] = {}
    with transaction(conn):
        if not force and conn.execute("SELECT EXISTS (SELECT 1 FROM documents) OR EXISTS "
                                      "(SELECT 1 FROM keywords) OR EXISTS (SELECT 1 FROM queries)").fetchone()[0]:
            raise ValidationError("The index is not empty; import replaces everything. Pass --force to do so.",
                                  code="not_empty")
        conn.execute("PRAGMA defer_foreign_keys = ON")
        for table in reversed(known):
            conn.execute(f'DELETE FROM "{table}"')
        conn.execute("DELETE FROM documents_fts")
        for table, names, rows in plan:
            for row in rows:
                present = [n for n in names if n in row]
                try:
                    conn.execute(
                        f'INSERT INTO "{table}" ({", ".join(present)}) VALUES ({", ".join("?" * len(present))})',
                        [row[n] for n in present])
                except sqlite3.Error as exc:
                    raise ValidationError(f"Export table {table!r}: bad row {row.get('id', '?')}: {exc}") from None
            counts[table] = len(rows)
        from kb_indexer.store.provenance import backfill
        backfill(conn)  # an export from before m050 has only the old origin strings
        for row in tables.get("documents", []):
            write_fts(conn, row["id"], title=row.get("title") or "", summary=row.get("summary") or "",
                      body=row.get("body") or "")
        # The next sync re-reads the similarities files and re-checks every rejected file...
        conn.execute("DELETE FROM meta WHERE key LIKE 'similarities_hash:%' OR key LIKE 'similarities_rejected:%' "
                     "OR key = 'rejected_files'")
        if kb_root is not None:  # ...except files whose entries are exactly what the export recorded
            from kb_indexer.index.similarity_sync import adopt_unchanged_files
            adopt_unchanged_files(conn, kb_root)
        bad = conn.execute("PRAGMA foreign_key_check").fetchall()
        if bad:
            raise ValidationError(f"Export is inconsistent: {len(bad)} rows reference missing rows "
                                  f"(first in table {bad[0][0]!r})")
    return counts
