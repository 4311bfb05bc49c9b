"""The SQLite dialect the features write, translated into PostgreSQL: the one table of rewrite rules.

Each distinct SQL string is translated once (:func:`translate` is cached). The rules, in order:

* ``BEGIN IMMEDIATE`` is ``BEGIN`` (PostgreSQL locks rows, not the database);
* ``strftime('%Y-%m-%dT%H:%M:%S', 'now')`` (and its ``%f`` / ``%fZ`` forms) is the statement's UTC time in
  the same text form, so stored timestamps are byte-identical on both engines;
* ``min(a, b)`` / ``max(a, b)`` (SQLite's scalar forms, two or more arguments) are ``LEAST`` / ``GREATEST``;
* ``x IN (SELECT value FROM json_each(?))`` (a JSON array parameter) reads the array's elements as text,
  cast to ``bigint`` when ``x`` is an id column (``id``, ``..._id``, ``..._id_1``): PostgreSQL does not
  compare integers with text; it is ``x = ANY(ARRAY(...))`` (the same rows): the planner takes a JSON array
  for 100 elements in ``IN`` (a hash of the whole table: a sequential scan of 5,000 keywords for the two a
  question names, 1.4 ms server time) but for 10 in ``= ANY`` of an array (the column's index: 0.1 ms);
  ``NOT IN`` stays;
* ``(a IN (SELECT value FROM json_each(?)) OR b IN (SELECT value FROM json_each(?)))`` on id columns (rows
  touching any of some ids from either side) is ``(a = ANY(ARRAY(...)) OR b = ANY(ARRAY(...)))``: PostgreSQL
  filters an OR of two IN subqueries row by row over the whole table, but scans the two columns' indexes for
  an OR of two arrays (keyword relations of two keywords at 10,000 relations: 4.2 -> 2.1 ms server CPU);
* ``SELECT value FROM json_each(?) WHERE value IN (SELECT id ...)`` (a JSON array of ids filtered by a
  subquery of ids) reads the elements as ``bigint`` likewise;
* ``substr(x, 1, length(x) - n)`` (all but the last n characters; SQLite gives '' for a shorter x where
  PostgreSQL would fail) is ``left(x, -n)``;
* ``INSERT OR IGNORE INTO ...`` is ``INSERT INTO ... ON CONFLICT DO NOTHING``;
* parameters: ``?`` is ``%s``, ``:name`` is ``%(name)s``, and a literal ``%`` is ``%%`` (psycopg's format).

What would be fragile to translate (``INSERT OR REPLACE``, ``lastrowid``) is written portably in the
features instead (``ON CONFLICT ... DO UPDATE``, ``RETURNING id``).
"""

from __future__ import annotations

import re
from functools import lru_cache

_TIME_FORMATS = {
    "%Y-%m-%dT%H:%M:%S": 'YYYY-MM-DD"T"HH24:MI:SS',
    "%Y-%m-%dT%H:%M:%f": 'YYYY-MM-DD"T"HH24:MI:SS.MS',
    "%Y-%m-%dT%H:%M:%fZ": 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"',
}
_STRFTIME = re.compile(r"strftime\('([^']*)',\s*'now'\)", re.IGNORECASE)
_JSON_IN = re.compile(r"([\w.]+)(\s+IN\s+)\(SELECT value FROM json_each\((\?|:\w+)\)\)", re.IGNORECASE)
_JSON_EITHER = re.compile(r"\(([\w.]+) IN \(SELECT value FROM json_each\((\?|:\w+)\)\) OR ([\w.]+) IN "
                          r"\(SELECT value FROM json_each\((\?|:\w+)\)\)\)", re.IGNORECASE)
_JSON_IDS = re.compile(r"SELECT value FROM json_each\((\?|:\w+)\) WHERE value IN \(SELECT ([\w.]+)\b",
                       re.IGNORECASE)
_ID_COLUMN = re.compile(r"(?:^|[._])id(?:_\d+)?$", re.IGNORECASE)
_ALL_BUT_LAST = re.compile(r"substr\(([\w.]+), 1, length\(\1\) - (\d+)\)", re.IGNORECASE)
_MIN_MAX = re.compile(r"\b(min|max)\(", re.IGNORECASE)
_INSERT_OR_IGNORE = re.compile(r"^\s*INSERT\s+OR\s+IGNORE\s+INTO\b", re.IGNORECASE)
_RETURNING = re.compile(r"\s+RETURNING\s", re.IGNORECASE)


@lru_cache(maxsize=1024)
def translate(sql: str) -> str:
    """``sql`` (SQLite's dialect, ``?`` / ``:name`` parameters) as PostgreSQL with psycopg placeholders."""
    if sql.strip().upper() == "BEGIN IMMEDIATE":
        return "BEGIN"
    sql = _STRFTIME.sub(_timestamp, sql)
    sql = _JSON_EITHER.sub(_json_either, sql)
    sql = _JSON_IN.sub(_json_in, sql)
    sql = _JSON_IDS.sub(_json_ids, sql)
    sql = _ALL_BUT_LAST.sub(r"left(\1, -\2)", sql)
    sql = _least_greatest(sql)
    sql = _on_conflict_do_nothing(sql)
    return placeholders(sql)


def _timestamp(match: re.Match[str]) -> str:
    fmt = _TIME_FORMATS.get(match.group(1))
    if fmt is None:
        raise ValueError(f"no PostgreSQL form of strftime format {match.group(1)!r}")
    return f"to_char(statement_timestamp() AT TIME ZONE 'UTC', '{fmt}')"


def _json_in(match: re.Match[str]) -> str:
    column, op, param = match.groups()
    value = "value::bigint" if _ID_COLUMN.search(column) else "value"
    elements = f"(SELECT {value} FROM json_array_elements_text(({param})::json) AS j(value))"
    if column.upper() == "NOT":   # ``x NOT IN (...)``: the regular expression took NOT for the column
        return f"{column}{op}{elements}"
    return f"{column} = ANY(ARRAY{elements})"


def _json_either(match: re.Match[str]) -> str:
    first, p1, second, p2 = match.groups()
    if not (_ID_COLUMN.search(first) and _ID_COLUMN.search(second)):
        return match.group(0)
    ids = "ARRAY(SELECT value::bigint FROM json_array_elements_text(({})::json) AS j(value))"
    return f"({first} = ANY({ids.format(p1)}) OR {second} = ANY({ids.format(p2)}))"


def _json_ids(match: re.Match[str]) -> str:
    param, column = match.groups()
    if not _ID_COLUMN.search(column) and column.lower() != "rowid":
        return match.group(0)
    return (f"SELECT value FROM (SELECT value::bigint AS value FROM json_array_elements_text(({param})::json) "
            f"AS j(value)) AS ids WHERE value IN (SELECT {column}")


def _least_greatest(sql: str) -> str:
    """``min(a, b)`` / ``max(a, b)`` as ``LEAST`` / ``GREATEST`` (the one-argument aggregates stay)."""
    out, pos = [], 0
    for match in _MIN_MAX.finditer(sql):
        if match.start() < pos:
            continue
        end, commas = _closing(sql, match.end())
        if commas:
            out.append(sql[pos:match.start()])
            out.append("LEAST(" if match.group(1).lower() == "min" else "GREATEST(")
            out.append(_least_greatest(sql[match.end():end]))
            pos = end
    out.append(sql[pos:])
    return "".join(out)


def _closing(sql: str, start: int) -> tuple[int, int]:
    """(index of the ``)`` closing the parenthesis opened before ``start``, top-level commas inside it)."""
    depth, commas, quoted = 1, 0, False
    for i in range(start, len(sql)):
        ch = sql[i]
        if ch == "'":
            quoted = not quoted
        elif quoted:
            continue
        elif ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth == 0:
                return i, commas
        elif ch == "," and depth == 1:
            commas += 1
    raise ValueError(f"unbalanced parentheses in SQL: {sql!r}")


def _on_conflict_do_nothing(sql: str) -> str:
    if not _INSERT_OR_IGNORE.match(sql):
        return sql
    sql = _INSERT_OR_IGNORE.sub("INSERT INTO", sql, count=1)
    returning = _RETURNING.search(sql)
    if returning:
        return f"{sql[:returning.start()]} ON CONFLICT DO NOTHING{sql[returning.start():]}"
    return f"{sql.rstrip().rstrip(';')} ON CONFLICT DO NOTHING"


def placeholders(sql: str) -> str:
    """``?`` as ``%s``, ``:name`` as ``%(name)s``, ``%`` as ``%%``; quoted text keeps its ``?`` and ``:``."""
    out: list[str] = []
    i, n = 0, len(sql)
    while i < n:
        ch = sql[i]
        if ch in "'\"":
            end = sql.find(ch, i + 1)
            end = n - 1 if end < 0 else end
            out.append(sql[i:end + 1].replace("%", "%%"))
            i = end + 1
            continue
        if ch == "?":
            out.append("%s")
        elif ch == "%":
            out.append("%%")
        elif ch == ":" and i + 1 < n and sql[i + 1] == ":":
            out.append("::")
            i += 1
        elif ch == ":" and i + 1 < n and (sql[i + 1].isalpha() or sql[i + 1] == "_"):
            j = i + 1
            while j < n and (sql[j].isalnum() or sql[j] == "_"):
                j += 1
            out.append(f"%({sql[i + 1:j]})s")
            i = j
            continue
        else:
            out.append(ch)
        i += 1
    return "".join(out)
