"""Markdown reading: front matter, title, first paragraph, body text."""

from __future__ import annotations

import os
import re
import stat
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

from kb_indexer.beneath import open_beneath
from kb_indexer.errors import ValidationError
from kb_indexer.front_matter import FrontMatterError, load_front_matter, split_front_matter
from kb_indexer.limits import max_doc_bytes

SUMMARY_MAX = 400
_HEADING = re.compile(r"^#{1,6}\s")
_FENCE = re.compile(r"^(```|~~~)")
# Inline patterns bound what one match may span, so hostile input (a line of 100k unclosed ``*`` or ``[``)
# costs linear time: a longer code span, emphasis or link is left as plain text.
_SPAN = 1000
_CODE_SPAN = re.compile(r"(`{1,16})(.{1,%d}?)\1" % _SPAN)
# Emphasis markers around a run of text, at word boundaries: **x**, __x__, *x*, _x_ (***x*** too). Markers
# inside words (parse_args, snake_case_name, 2*3) are text.
_EMPHASIS = re.compile(r"(?<![\w*])(\*{1,3}|_{1,3})(?!\s|\1)(.{1,%d}?)(?<=\S)\1(?![\w*])" % _SPAN)
_LINK = re.compile(r"!?\[([^\]]{0,%d})\]\([^)]{0,%d}\)" % (_SPAN, _SPAN))
# Only this much of a heading line or of the first paragraph is turned into the title or summary.
_PLAIN_INPUT_MAX = 8 * 1024


@dataclass
class ParsedMarkdown:
    front_matter: dict[str, Any] = field(default_factory=dict)
    title: str | None = None
    summary: str | None = None
    body: str = ""
    front_matter_error: str | None = None


def _read_regular(path: Path, name: str, limit: int, root: Path | None) -> bytes:
    """At most ``limit + 1`` bytes of a regular file. Opened non-blocking and checked before reading, so a
    FIFO, device or socket named like a document is refused instead of blocking forever. With ``root``:
    opened from the root one component at a time (:func:`kb_indexer.beneath.open_beneath`), so a folder or
    file swapped for a symlink leading outside the root after a check is refused, never read."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    fd = os.open(path, flags) if root is None else open_beneath(root, path, flags, name)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise ValidationError(f"{name} is not a regular file (a FIFO, device, socket or folder); "
                                  "only regular files are read")
        chunks, left = [], limit + 1
        while left > 0 and (chunk := os.read(fd, min(left, 1 << 20))):
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


@contextmanager
def opened_file(path: Path, name: str | None = None) -> Iterator[int]:
    """A regular file opened for reading (its descriptor: an export read in pieces), refused as
    :func:`read_text_file` refuses it (not found, not a regular file, not readable)."""
    name = name or str(path)
    with _reading_errors(name):
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise ValidationError(f"{name} is not a regular file (a FIFO, device, socket or folder); "
                                  "only regular files are read")
        yield fd
    finally:
        os.close(fd)


def _read_bytes(path: Path, name: str, limit: int, root: Path | None = None) -> bytes:
    with _reading_errors(name):
        data = _read_regular(path, name, limit, root)
    return data


@contextmanager
def _reading_errors(name: str) -> Iterator[None]:
    """The errors of opening or reading a file as the user is told them."""
    try:
        yield
    except FileNotFoundError:
        raise ValidationError(f"File not found: {name}", code="not_found") from None
    except IsADirectoryError:
        raise ValidationError(f"Not a file: {name}") from None
    except OSError as exc:  # permissions, a symlink loop, a name too long
        raise ValidationError(f"Cannot read {name}: {exc.strerror or exc}") from None
    except ValueError as exc:  # a NUL in the path
        raise ValidationError(f"Cannot read {name}: {exc}") from None


def _decode(data: bytes, name: str, cut: bool = False) -> str:
    if b"\x00" in data:
        raise ValidationError(f"{name} looks like a binary file (it contains NUL bytes); only UTF-8 text is indexed")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        if cut and exc.start >= len(data) - 3 and exc.reason == "unexpected end of data":
            return data[: exc.start].decode("utf-8-sig")  # the size limit cut a character in two
        raise ValidationError(f"{name} is not valid UTF-8 (byte {exc.start}); only UTF-8 text is indexed") from None


def read_text_file(path: Path, display: str | None = None, *, limit: int | None = None,
                   root: Path | None = None) -> tuple[str, bytes]:
    """Read a UTF-8 text file (a keywords file, similarities.json, an export); binary and non-UTF-8 files
    and files over ``limit`` bytes (when given) are refused clearly. ``root``: the knowledge base the file
    must stay in (see :func:`_read_regular`)."""
    name = display or str(path)
    data = _read_bytes(path, name, limit if limit is not None else 1 << 62, root)
    if limit is not None and len(data) > limit:
        raise ValidationError(f"{name} is larger than {limit} bytes, the limit for this kind of file "
                              "(docs/limits-and-guarantees.md)")
    return _decode(data, name), data


def read_document_text(path: Path, display: str | None = None, *,
                       root: Path | None = None) -> tuple[str, bytes, str | None]:
    """Read a markdown document: ``(text, bytes read, warning)``. A document over the size limit is read
    up to the limit (never more is loaded) and indexed with a warning rather than refused. ``root``: the
    knowledge base the document must stay in (see :func:`_read_regular`)."""
    name = display or str(path)
    limit = max_doc_bytes()
    data = _read_bytes(path, name, limit, root)
    if len(data) <= limit:
        return _decode(data, name), data, None
    data = data[:limit]
    return _decode(data, name, cut=True), data, (
        f"{name} is larger than {limit} bytes; only its first {limit} bytes are indexed "
        "(set KBINDEX_MAX_DOC_BYTES to raise the limit)")


def _unemphasise(text: str) -> str:
    for _ in range(3):  # nested: **bold _and_ em**
        new = _EMPHASIS.sub(r"\2", text)
        if new == text:
            break
        text = new
    return text


def _plain(text: str) -> str:
    """Inline markdown to plain text: links keep their text, code spans their content (verbatim), and only
    real emphasis markers go."""
    text = _LINK.sub(r"\1", text)
    out, pos = [], 0
    for m in _CODE_SPAN.finditer(text):
        out.append(_unemphasise(text[pos:m.start()]))
        out.append(m.group(2).strip() or m.group(2))
        pos = m.end()
    out.append(_unemphasise(text[pos:]))
    return "".join(out).strip()


def _h1_text(line: str) -> str | None:
    """The text of a level-1 heading line (``# Title``, ``# Title #``), or None. A closing run of ``#``
    counts only after whitespace: "# C#" is about C#."""
    if len(line) < 3 or line[0] != "#" or not line[1].isspace():
        return None
    text = line[2:].strip()
    bare = text.rstrip("#")
    if bare != text and bare and bare[-1].isspace():
        text = bare.rstrip()
    return text or None


def _read_front_matter(text: str, out: ParsedMarkdown) -> str:
    """Fill ``out``'s front matter (or its error); the markdown after it."""
    try:
        block, body = split_front_matter(text)
    except FrontMatterError as exc:  # not closed: all of it is markdown
        out.front_matter_error = f"{exc}; the document is read without front matter"
        return text
    if block is not None:
        try:
            out.front_matter, out.front_matter_error = _checked(load_front_matter(block))
        except FrontMatterError as exc:
            out.front_matter_error = f"{exc}; the document is read without front matter"
    return body


def without_code_blocks(text: str) -> str:
    """``text`` without its fenced code blocks (fences included): its prose. A block closes at a bare fence of
    the same kind (a ``~~~`` or ```` ```python ```` line inside a ````` block is code); an unclosed one runs to
    the end."""
    out: list[str] = []
    fence: str | None = None
    for line in text.splitlines():
        m = _FENCE.match(line.strip())
        if fence is None and m:
            fence = m.group(1)
        elif fence is not None:   # closed by a bare fence of the same kind (```python opens, never closes)
            fence = None if m and line.strip() == fence else fence
        else:
            out.append(line)
    return "\n".join(out)


def parse_markdown(text: str) -> ParsedMarkdown:
    """Front matter (see :mod:`kb_indexer.front_matter`), title, summary and body. A block that cannot be
    read, or a key kbindex reads with a value of the wrong type, is ``front_matter_error``: the document is
    read without it (or without that key), never guessed."""
    out = ParsedMarkdown()
    body = _read_front_matter(text, out)
    out.body = body.strip()
    in_fence = False
    para: list[str] = []
    done = False
    for line in body.splitlines():
        s = line.strip()
        if _FENCE.match(s):
            in_fence = not in_fence
            done = done or bool(para)
            continue
        if in_fence:
            continue
        h1 = _h1_text(s) if out.title is None else None
        if h1:
            out.title = _plain(h1[:_PLAIN_INPUT_MAX])
            done = done or bool(para)
            continue
        if done:
            if out.title is not None:
                break
            continue
        if _HEADING.match(s) or s.startswith(("<!--", "|", ">")) or s.startswith("!["):
            done = bool(para)
            continue
        if not s:
            done = bool(para)
            continue
        para.append(s)
    if para:
        summary = _plain(" ".join(para)[:_PLAIN_INPUT_MAX])
        if len(summary) > SUMMARY_MAX:
            summary = summary[:SUMMARY_MAX].rsplit(" ", 1)[0] + "…"
        out.summary = summary
    return out


_TEXT_KEYS = ("title", "summary", "description")
_KEYWORD_KEYS = ("keywords", "tags")


def _checked(fm: dict[str, Any]) -> tuple[dict[str, Any], str | None]:
    """The front matter (scalars as text: see :func:`load_front_matter`) without the keys kbindex reads
    whose value has the wrong type, and what was wrong."""
    wrong = [k for k in _TEXT_KEYS if fm.get(k) is not None and not isinstance(fm[k], str)]
    wrong += [k for k in _KEYWORD_KEYS if fm.get(k) is not None and not _keywords_value(fm[k])]
    if not wrong:
        return fm, None
    problems = "; ".join(
        f"'{k}' must be {'text' if k in _TEXT_KEYS else 'a list of keywords or comma-separated text'}, "
        f"not {'a mapping' if isinstance(fm[k], dict) else 'a list'}" for k in wrong)
    return {k: v for k, v in fm.items() if k not in wrong}, f"front matter: {problems} (ignored)"


def _keywords_value(value: Any) -> bool:
    """Text, or a list of text (nested lists too; empty items are skipped)."""
    if isinstance(value, list):
        return all(v is None or isinstance(v, str) or (isinstance(v, list) and _keywords_value(v)) for v in value)
    return isinstance(value, str)


def _flat(value: list[Any]) -> list[Any]:
    """A keywords list's items, nested lists flattened."""
    return [item for v in value for item in (_flat(v) if isinstance(v, list) else [v])]


def front_matter_text(front_matter: dict[str, Any], key: str) -> str | None:
    """A text field of checked front matter (``title``, ``summary``, ``description``), stripped; None when
    absent or empty."""
    value = front_matter.get(key)
    return value.strip() or None if isinstance(value, str) else None


def front_matter_summary(front_matter: dict[str, Any]) -> str | None:
    """``summary``, else ``description``."""
    return front_matter_text(front_matter, "summary") or front_matter_text(front_matter, "description")


def front_matter_keywords(front_matter: dict[str, Any]) -> list[str]:
    """``keywords`` (else ``tags``) of checked front matter: a list, or comma-separated text."""
    for key in _KEYWORD_KEYS:
        value = front_matter.get(key)
        if isinstance(value, list):
            return [t for t in (v.strip() for v in _flat(value) if v is not None) if t]
        if isinstance(value, str):
            return [t.strip() for t in value.split(",") if t.strip()]
    return []
