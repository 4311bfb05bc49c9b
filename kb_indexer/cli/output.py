"""Output: results on stdout (JSON or a table), everything else on stderr.

Human-readable output (tables, markdown, text, warnings) goes through this module, which makes it
terminal-safe (:func:`kb_indexer.text.terminal_safe`): an escape sequence in a title, keyword, path,
snippet or message is dropped, never sent to the terminal. JSON is printed as is (``json.dumps`` escapes
every control character).
"""

from __future__ import annotations

import os
import sys
from contextlib import contextmanager
from enum import Enum
from typing import TYPE_CHECKING, Any, Callable, Iterator, Mapping, Sequence

from kb_indexer import jsonstream
from kb_indexer.notices import warn as _warn
from kb_indexer.safe_write import user_file, write_user_file
from kb_indexer.text import terminal_safe

if TYPE_CHECKING:
    from rich.console import Console
    from rich.text import Text


class Format(str, Enum):
    json = "json"
    table = "table"


def dumps(data: Any) -> str:
    return jsonstream.dumps(data)   # NaN is not JSON: an error, not output


def emit_json(data: Any) -> None:
    sys.stdout.write(dumps(data) + "\n")
    sys.stdout.flush()


@contextmanager
def json_out(path: str | os.PathLike[str] | None = None) -> Iterator[jsonstream.Write]:
    """A sink for JSON text written piece by piece (:func:`kb_indexer.jsonstream.write`), in blocks: stdout,
    or with ``path`` the file written atomically at the end of the block (``write_failed`` if it cannot be)."""
    if path is None:
        sink = jsonstream.Buffered(sys.stdout.write)
        yield sink
        sink.flush()
        sys.stdout.flush()
        return
    with user_file(path) as fh:
        sink = jsonstream.Buffered(lambda text: fh.write(text.encode("utf-8")))
        yield sink
        sink.flush()


def emit_json_streamed(data: Any) -> None:
    """:func:`emit_json` of a value whose lists may be iterators: written as their items are read."""
    with json_out() as out:
        jsonstream.write(out, data)
        out("\n")


def write_file(path: str | os.PathLike[str], text: str) -> None:
    """Write ``text`` to ``path`` atomically (:func:`kb_indexer.safe_write.write_user_file`)."""
    write_user_file(path, text)


def echo(text: str, *, err: bool = False) -> None:
    """Human-readable text, terminal-safe, on stdout (``err``: stderr), written as given (no newline added)."""
    stream = sys.stderr if err else sys.stdout
    stream.write(terminal_safe(text))
    stream.flush()


def warn(message: str) -> None:
    """A terminal-safe warning on stderr (:func:`kb_indexer.notices.warn`, shared with the lower layers)."""
    _warn(message)


def counted(n: int, one: str, many: str | None = None) -> str:
    """``n`` and the noun that fits it: ``1 feedback entry``, ``2 feedback entries``, ``0 directories``."""
    return f"{n} {one if n == 1 else (many or one + 's')}"


def warn_shown(count: int, total: int, what: str = "documents") -> None:
    """A table that shows fewer results than were found says so (the JSON has ``total``)."""
    warn(f"showing {count} of {total} {what} (--limit 0 for all)")


def report_documents(result: Mapping[str, Any]) -> None:
    """(enrich, sync --enrich) Failed documents, LLM failures and generated text dropped per document; a missing LLM backend once."""
    for d in result.get("documents") or []:
        if d["action"] == "failed":
            warn(f"skipped {d['filepath']}: {d['error']}")
        elif (d.get("fallback") or "").startswith("LLM failed"):
            warn(f"{d['filepath']}: statistical keywords ({d['fallback']})")
        if d.get("replaced_invalid"):
            warn(f"{d['filepath']}: the generated parts of its invalid keywords file were replaced "
                 f"({d['replaced_invalid']})")
        for problem in d.get("dropped") or []:
            warn(f"{d['filepath']}: dropped a generated {problem}")
    reason = (result.get("llm") or {}).get("reason")
    if reason and reason != "--no-llm" and result.get("methods", {}).get("statistical"):
        warn(f"{reason}: statistical keywords (--no-llm says so without this warning)")


def table_width() -> int:
    """The columns a table on stdout gets: the terminal's, or 240 when piped."""
    return _console().width


def _console(stderr: bool = False) -> Console:
    from rich.console import Console  # lazy: rich, only for table output (a JSON run never imports it)
    stream = sys.stderr if stderr else sys.stdout
    # Piped output is not squeezed into 80 columns: paths and keywords stay whole.
    return Console(stderr=stderr, soft_wrap=False, width=None if stream.isatty() else 240)


def _str(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, (list, tuple)):
        return ", ".join(_str(v) for v in value)
    if isinstance(value, dict):   # a part that is not there is left out (db-stats' "pgvector=, index=" of SQLite)
        return ", ".join(f"{k}={_str(v)}" for k, v in value.items() if v is not None)
    if isinstance(value, float):   # 3 significant digits, but a large number whole (14500, not 1.45e+04)
        short = f"{value:.3g}"
        return f"{value:.0f}" if "e+" in short else short
    return str(value)


def _cell(value: Any) -> Text:
    """A table cell as plain, terminal-safe text: user data (titles, paths, keywords, messages) is never
    Rich markup (``[bold]``, ``[/]``), emoji codes (``:smile:``) or an escape sequence."""
    from rich.text import Text  # lazy: rich, only for table output


    return Text(terminal_safe(_str(value)))


def emit(data: Any, fmt: Format | str, *, rows: str | None = None, columns: Sequence[str] = (),
         title: str | None = None, render: Callable[[Any], None] | None = None) -> None:
    """Print ``data`` as JSON, or as a table of ``data[rows]`` (or key/value pairs)."""
    if Format(fmt) is Format.json:
        emit_json(data)
        return
    if render is not None:
        render(data)
        return
    from rich.table import Table  # lazy: rich, only for table output

    console = _console()
    if rows is not None:
        items = data.get(rows) or []
        table = Table(title=title, show_lines=False)
        cols = list(columns) or (list(items[0].keys()) if items else [])
        for c in cols:
            table.add_column(_cell(c), overflow="fold")
        for item in items:
            table.add_row(*[_cell(item.get(c)) for c in cols])
        console.print(table)
        extra = {k: v for k, v in data.items() if k != rows and v is not None and not isinstance(v, (list, dict))}
        if extra:
            console.print(_cell("  ".join(f"{k}: {_str(v)}" for k, v in extra.items())))
        return
    table = Table(title=title, show_header=False)
    table.add_column("key", style="bold")
    table.add_column("value", overflow="fold")
    for k, v in data.items():
        table.add_row(_cell(k), _cell(v))
    console.print(table)
