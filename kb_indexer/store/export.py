"""Export everything to JSON and import it back (round-trips exactly)."""

from __future__ import annotations

import json
import math
import os
import re
from typing import Any, Callable, Iterable, Iterator

from kb_indexer import __version__, jsonstream
from kb_indexer.errors import ValidationError
from kb_indexer.jsonfile import StreamedList
from kb_indexer.limits import MAX_ID, MAX_KEYWORD_CHARS
from kb_indexer.store import fulltext, meta
from kb_indexer.store.connection import exclusive, read_snapshot, savepoint, transaction
from kb_indexer.store.documents import get_body, write_fts
from kb_indexer.store.provenance import backfill
from kb_indexer.text import normalize_keyword
from kb_indexer.store.engines import engine_of
from kb_indexer.store.errors import DatabaseError
from kb_indexer.store.dbapi import Connection

FORMAT = "kbindex-export"
FORMAT_VERSION = 1
# Not exported: bookkeeping, derived full-text rows (rebuilt from documents.body), caches, and skills with
# their sessions (derived from the skill folders: `skills sync` rebuilds them; an import leaves them as they are),
# conversation sessions (`kbindex context`: per conversation, reset by design), and embeddings (derived from
# the documents: `kbindex embed` rebuilds them), and the sparse full-text index with its change log (derived
# from the full-text rows: the next `sync` rebuilds it).
_EXCLUDED = {"_migrations", "meta", "llm_cache", "sqlite_sequence", "fulltext_log"}
_EXCLUDED_PREFIXES = ("documents_fts", "documents_text", "text_postings", "text_totals", "skill", "context_",
                      "embedding_", "sparse_")


def export_tables(conn: Connection) -> list[str]:
    """User tables in creation order (parents before children)."""
    names = engine_of(conn).tables(conn)
    return [n for n in names if n not in _EXCLUDED and not n.startswith(_EXCLUDED_PREFIXES)]


def _columns(conn: Connection, table: str) -> list[dict[str, Any]]:
    return engine_of(conn).columns(conn, table)


#: Rows read per statement on PostgreSQL (its cursor holds every row it returns; SQLite reads as it goes).
EXPORT_BATCH = 2000


def _rows(conn: Connection, table: str) -> Iterator[dict[str, Any]]:
    """The table's rows in insertion order (SQLite's rowid; on PostgreSQL the id or the hidden rowid), read
    as they are used: a batch at a time on PostgreSQL."""
    return engine_of(conn).rows(conn, table, EXPORT_BATCH)


def _table_rows(conn: Connection, table: str, counts: dict[str, int]) -> Iterator[dict[str, Any]]:
    """:func:`_rows`, each document with its body, counted in ``counts``."""
    counts[table] = 0
    for row in _rows(conn, table):
        if table == "documents":
            row["body"] = get_body(conn, row["id"])
        counts[table] += 1
        yield row


def _export(conn: Connection, counts: dict[str, int]) -> dict[str, Any]:
    """The export as an object whose tables are iterators of their rows (nothing read yet)."""
    return {"format": FORMAT, "format_version": FORMAT_VERSION, "kbindex_version": __version__,
            "migrations": [r[0] for r in conn.execute("SELECT name FROM _migrations ORDER BY rowid")],
            "tables": {table: _table_rows(conn, table, counts) for table in export_tables(conn)}}


def export_all(conn: Connection) -> dict[str, Any]:
    """The whole export as one object (what :func:`write_export` writes)."""
    with read_snapshot(conn):
        out = _export(conn, {})
        out["tables"] = {table: list(rows) for table, rows in out["tables"].items()}
    return out


def write_export(conn: Connection, out: jsonstream.Write) -> dict[str, int]:
    """Write the export's JSON text (the layout of :func:`kb_indexer.jsonstream.dumps`, a newline after it)
    to ``out`` as the rows are read, table by table: memory stays that of a batch of rows, whatever the
    index holds. All of it is read in one snapshot. Returns the rows written per table."""
    counts: dict[str, int] = {}
    with read_snapshot(conn):
        jsonstream.write(out, _export(conn, counts))
        out("\n")
    return counts


def export_counts(conn: Connection) -> dict[str, int]:
    """The rows an export holds, per table (counted, not read)."""
    with read_snapshot(conn):
        return {table: int(conn.execute(f'SELECT COUNT(*) FROM "{table}"').fetchone()[0])
                for table in export_tables(conn)}


# Longest stored path (characters) and path segment (UTF-8 bytes) an export may hold.
MAX_PATH_CHARS = 4096
MAX_SEGMENT_BYTES = 255
# Columns holding a path relative to the knowledge-base root (documents are read from there).
_KB_PATHS = {("documents", "filepath"), ("query_feedback", "filepath"), ("search_rules", "filepath")}
# Columns holding a path that may be absolute (`add --keywords FILE`, a similarities file reached by a
# symlink) but is otherwise held to the same rules.
_OTHER_PATHS = {("documents", "keywords_file"), ("similarity_files", "file"), ("similarity_file_entries", "file")}
_DRIVE = re.compile(r"^[A-Za-z]:")
# Columns kbindex reads as JSON, with the shape they must have: (container, type of each item or None).
_JSON_COLUMNS: dict[tuple[str, str], tuple[type, type | None]] = {
    ("query_attempts", "keywords"): (list, str), ("query_attempts", "top_results"): (list, dict),
    ("query_attempts", "expansions"): (list, dict), ("query_attempts", "options"): (dict, None),
    ("learned_items", "detail"): (dict, None), ("learned_items", "feedback_ids"): (list, int),
    ("search_rules", "terms"): (list, str)}
_NUMERIC_TYPES = ("INT", "REAL", "FLOA", "DOUB", "NUMERIC", "DECIMAL")
# Numbers kbindex computes with that cannot be negative (a question's size in terms).
_NOT_NEGATIVE = {("learned_items", "size")}
# The fields of a learned item's detail that kbindex reads (learned list, learn), by the kind of value they hold.
_DETAIL_FIELDS: dict[str, str] = {"terms": "a list of strings", "filepath": "a string", "keyword": "a string",
                                  "keyword1": "a string", "keyword2": "a string", "type": "a string",
                                  "reason": "a string", "delta": "a number", "similarity_id": "an integer"}


def _path_problem(value: Any, *, relative: bool) -> str | None:
    """Why ``value`` is not a clean stored path (None if it is one)."""
    if not isinstance(value, str) or not value:
        return "must be a non-empty string"
    if len(value) > MAX_PATH_CHARS:
        return f"is {len(value)} characters long (at most {MAX_PATH_CHARS})"
    if "\x00" in value:   # any other character a file name may have, sync indexes it: an export keeps it
        return "contains a NUL character"
    if "\\" in value and os.sep == "\\":   # a separator there; on POSIX a file name may hold one, and sync indexes it
        return "contains a backslash (stored paths use '/')"
    if _DRIVE.match(value):
        return "is a Windows drive path"
    if relative and value.startswith("/"):
        return "is absolute (stored paths are relative to the knowledge-base root)"
    parts = value.split("/")[1:] if value.startswith("/") else value.split("/")
    if any(p in ("", ".", "..") for p in parts):
        return "has an empty, '.' or '..' segment (it could lead outside the knowledge-base root)"
    try:
        if any(len(p.encode("utf-8")) > MAX_SEGMENT_BYTES for p in parts):
            return f"has a segment longer than {MAX_SEGMENT_BYTES} bytes"
    except UnicodeEncodeError:
        return "is not valid Unicode (a lone surrogate)"
    return None


def _value_problem(value: Any) -> str | None:
    """Why ``value`` cannot be a column value (None if it can)."""
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, int):
        return None if -MAX_ID - 1 <= value <= MAX_ID else "is an integer outside the 64-bit range"
    if isinstance(value, float):
        return None if math.isfinite(value) else "is not a finite number"
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return "is not valid Unicode (a lone surrogate)"
        return None
    return f"must be a string, number or null, not {type(value).__name__}"


def _json_problem(value: Any, shape: tuple[type, type | None]) -> str | None:
    """Why ``value`` is not the JSON text of ``shape`` (None if it is, or is null)."""
    if value is None:
        return None
    container, item = shape
    try:
        data = json.loads(value) if isinstance(value, str) else None
    except ValueError:
        data = None
    if not isinstance(data, container):
        return f"must be the JSON text of {'a list' if container is list else 'an object'}"
    if item is not None and isinstance(data, list) and not all(isinstance(x, item) and not isinstance(x, bool)
                                                               for x in data):
        return f"must list only {item.__name__} values"
    return None


def _detail_problem(value: str) -> str | None:
    """Why a learned item's detail (the JSON text of an object) holds a field kbindex cannot read."""
    detail = json.loads(value)
    for name, kind in _DETAIL_FIELDS.items():
        v = detail.get(name)
        ok = v is None or (
            isinstance(v, list) and all(isinstance(x, str) for x in v) if kind == "a list of strings" else
            isinstance(v, str) if kind == "a string" else
            isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) if kind == "a number" else
            isinstance(v, int) and not isinstance(v, bool))
        if not ok:
            return f"field {name!r} must be {kind}"
    return None


def _check_row(table: str, row: dict[str, Any], i: int, numeric: set[str]) -> None:
    """Every value storable and of its column's kind (a number in a numeric column, the JSON kbindex reads
    in a JSON column), every path a clean path inside the knowledge base; refused before any write."""
    for col, value in row.items():
        problem = _value_problem(value)
        if problem is None and col in numeric and isinstance(value, str):
            problem = "must be a number (or null)"
        if problem is None and (table, col) in _NOT_NEGATIVE and isinstance(value, (int, float)) and value < 0:
            problem = "must be 0 or more"
        if problem is None and (table, col) in _JSON_COLUMNS:
            problem = _json_problem(value, _JSON_COLUMNS[(table, col)])
            if problem is None and (table, col) == ("learned_items", "detail") and value is not None:
                problem = _detail_problem(value)
        if problem is None and (table, col) in _KB_PATHS | _OTHER_PATHS and value is not None:
            problem = _path_problem(value, relative=(table, col) in _KB_PATHS)
        if problem:
            raise ValidationError(f"Export table {table!r} row {i}: {col!r} {problem}: {str(value)[:80]!r}")
    if table == "keywords":
        _check_keyword(row, i)


def _check_keyword(row: dict[str, Any], i: int) -> None:
    """Keywords are looked up in their normalised form: a row holding another form would never be found."""
    value = row.get("keyword")
    if not isinstance(value, str) or not value:
        raise ValidationError(f"Export table 'keywords' row {i}: 'keyword' must be a non-empty string")
    if len(value) > MAX_KEYWORD_CHARS:
        raise ValidationError(f"Export table 'keywords' row {i}: keyword is {len(value)} characters long; "
                              f"at most {MAX_KEYWORD_CHARS} are allowed")
    norm = normalize_keyword(value)
    if value != norm:
        raise ValidationError(f"Export table 'keywords' row {i}: keyword {value!r} is not normalised "
                              f"(expected {norm!r}; the display form belongs in 'display')")


_Plan = list[tuple[str, list[str], Iterable[dict[str, Any]]]]


def import_all(conn: Connection, data: Any, *, force: bool = False,
               after_load: Callable[[Connection], None] | None = None) -> dict[str, int]:
    """Replace the index content with an export. Validated first; all or nothing. ``data``: the parsed
    export, or one read by :func:`kb_indexer.jsonfile.read_object` whose tables stay in the file (read
    again for each step: one row in memory at a time).

    ``after_load(conn)`` runs inside the import's transaction once the rows are in (the API passes the
    index layer's step that keeps unchanged similarities files synced: store does not import index).
    """
    known, plan = _validated(conn, data)
    engine_of(conn).before_import(conn, [table for table, _, _ in plan])
    # Every row is replaced: not while a sync, a learn or an embed runs (on PostgreSQL, read committed, a learn
    # saw the imported documents' new ids mid-run and wrote learned items for ids gone: a foreign-key failure)
    with exclusive(conn, "sync"), exclusive(conn, "learn"), exclusive(conn, "embed"), transaction(conn):
        if not force and conn.execute("SELECT EXISTS (SELECT 1 FROM documents) OR EXISTS "
                                      "(SELECT 1 FROM keywords) OR EXISTS (SELECT 1 FROM queries)").fetchone()[0]:
            raise ValidationError("The index is not empty; import replaces everything. Pass --force to do so.",
                                  code="not_empty")
        _defer_foreign_keys(conn)
        for table in reversed(known):
            conn.execute(f'DELETE FROM "{table}"')
        fulltext.clear(conn)
        counts = {table: _insert_rows(conn, table, names, rows) for table, names, rows in plan}
        backfill(conn)  # an export from before m050 has only the old origin strings
        for row in data["tables"].get("documents", []):
            write_fts(conn, row["id"], title=row.get("title") or "", summary=row.get("summary") or "",
                      body=row.get("body") or "")
        # The next sync re-reads the similarities files and re-checks every rejected file...
        meta.delete_prefixes(conn, "similarities_hash:", "similarities_rejected:", "similarities_seen:")
        meta.delete(conn, "rejected_files")
        if after_load is not None:  # ...except files whose entries are exactly what the export recorded
            after_load(conn)
        _check_foreign_keys(conn, [table for table, _, _ in plan])
    return counts


def _defer_foreign_keys(conn: Connection) -> None:
    engine_of(conn).defer_foreign_keys(conn)


def _check_foreign_keys(conn: Connection, tables: list[str]) -> None:
    """Every row refers to rows that exist (checked before the import commits); on PostgreSQL the id
    sequences continue past the imported ids."""
    problem = engine_of(conn).foreign_key_problem(conn, tables)
    if problem:
        raise ValidationError(f"Export is inconsistent: {problem}")


def _validated(conn: Connection, data: Any) -> tuple[list[str], _Plan]:
    """The export's tables in dependency order and, for each, its columns and rows; every check that
    needs no write is done here, before the transaction."""
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
    plan: _Plan = []
    for table in known:
        rows = tables.get(table, [])
        if not _objects(rows):
            raise ValidationError(f"Export table {table!r} must be a list of objects")
        plan.append((table, _checked_rows(conn, table, rows), rows))
    return known, plan


def _objects(rows: Any) -> bool:
    """Whether ``rows`` is a list of objects (a list in an export file: as its reading found it)."""
    if isinstance(rows, StreamedList):
        return rows.all_objects
    return isinstance(rows, list) and all(isinstance(r, dict) for r in rows)


def _checked_rows(conn: Connection, table: str, rows: Iterable[dict[str, Any]]) -> list[str]:
    """The table's column names, once every row has only known columns and every required one."""
    cols = _columns(conn, table)
    names = [c["name"] for c in cols]
    allowed = set(names) | ({"body"} if table == "documents" else set())
    # Primary keys (ids) are required too: other rows (and history, learned items) refer to them.
    required = {c["name"] for c in cols if (c["notnull"] and c["dflt_value"] is None) or c["pk"]}
    numeric = {c["name"] for c in cols if any(t in str(c.get("type") or "").upper() for t in _NUMERIC_TYPES)}
    for i, row in enumerate(rows):
        extra = set(row) - allowed
        if extra:
            raise ValidationError(f"Export table {table!r} row {i} has unknown columns: {', '.join(sorted(extra))}")
        missing = required - set(row)
        if missing:
            raise ValidationError(f"Export table {table!r} row {i} lacks: {', '.join(sorted(missing))}")
        _check_row(table, row, i, numeric)
    return names


#: Rows inserted per statement batch by an import.
IMPORT_BATCH = 500


def _insert_rows(conn: Connection, table: str, names: list[str], rows: Iterable[dict[str, Any]]) -> int:
    """Insert the rows, those with the same columns a batch at a time; returns how many."""
    count, columns = 0, None
    batch: list[dict[str, Any]] = []
    for count, row in enumerate(rows, 1):
        present = [n for n in names if n in row]
        if present != columns or len(batch) == IMPORT_BATCH:
            _insert_batch(conn, table, columns or [], batch)
            columns, batch = present, []
        batch.append(row)
    _insert_batch(conn, table, columns or [], batch)
    return count


def _insert_batch(conn: Connection, table: str, columns: list[str], rows: list[dict[str, Any]]) -> None:
    """One ``executemany`` (in a savepoint); when it fails, the rows one by one, naming the one refused."""
    if not rows:
        return
    sql = f'INSERT INTO "{table}" ({", ".join(columns)}) VALUES ({", ".join("?" * len(columns))})'
    try:
        with savepoint(conn):
            conn.executemany(sql, [[row[n] for n in columns] for row in rows])
        return
    except DatabaseError:
        pass
    for row in rows:
        try:
            conn.execute(sql, [row[n] for n in columns])
        except DatabaseError as exc:
            raise ValidationError(f"Export table {table!r}: bad row {row.get('id', '?')}: {exc}") from None
